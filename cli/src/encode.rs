//! `kargs encode`: typed arguments to an argv buffer, printed as lowercase hex (or, with
//! `--json`, as one object with the hex and the arguments in `kargs decode --json`'s shape).
//!
//! Each argument is `TYPE:VALUE`:
//!
//! | form              | value                                                                  |
//! |-------------------|------------------------------------------------------------------------|
//! | `i32:-7`, `i64:…` | an integer, optionally `-`: decimal, or `0x` and hex digits (`-0x10`)   |
//! | `u32:42`, `u64:…` | a decimal integer or `0x` and hex digits                               |
//! | `f32:1.5`, `f64:…`| a decimal (`1.5`, `-0`, `1e-3`, `inf`, `-inf`, `NaN`), or `0x` and the raw IEEE-754 bits (up to 8 / 16 hex digits); a finite decimal past the type's range, or one that is not zero but rounds to zero, is refused: infinity and NaN only when spelled |
//! | `ptr:64:128`      | guest offset, then byte length, each a `u32` (decimal or `0x` hex)      |
//!
//! The arguments come from the command line, or from stdin (separated by whitespace) for `-` or
//! when there are none and stdin is not a terminal. No argument at all is a usage error.
//!
//! A malformed argument is a usage error (exit 2) naming the argument. Arguments beyond the
//! host's caps (128 records, 4096 bytes) cannot be encoded: exit 1, like a rejected decode.
//! The encoding itself is the core's [`ArgvBuilder`], so `kargs decode` accepts every buffer
//! `kargs encode` prints (given a memory large enough for its windows).

use clap::Args;
use kernel_args_core::{
    ArgTag, ArgvBuilder, EncodeError, F32Bits, F64Bits, GuestRange, LoweredArgSnapshot, MAX_KERNEL_ARGS_BYTES,
};
use serde::Serialize;

use crate::json::{JsonArg, json_line};
use crate::style::Paint;
use crate::{Output, Status, hex, input, number};

/// `kargs encode [--json] ARG...`
#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    /// Arguments as TYPE:VALUE, TYPE one of the seven wire types: i32, i64, u32, u64 (decimal or
    /// 0x hex; i32 and i64 may be negative), f32, f64 (a decimal, or 0x and the raw IEEE-754
    /// bits), ptr (ptr:OFFSET:LEN, a window of guest memory). For example i32:-7 u64:42 f32:1.5
    /// f64:0x3ff8000000000000 ptr:64:128. `-`, or none with stdin a pipe or a file, reads them
    /// from stdin.
    #[arg(value_name = "ARG")]
    args: Vec<String>,

    /// Print one JSON object (the hex, its length and the arguments) instead of the hex.
    #[arg(long)]
    json: bool,
}

/// `kargs encode --json`'s object.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum JsonEncoded {
    /// `{"ok":true,"hex":"...","len":N,"args":[...]}`
    Encoded { ok: bool, hex: String, len: usize, args: Vec<JsonArg> },
    /// `{"ok":false,"error":{"kind":"too_many_records","index":128,"message":"..."}}`
    Refused { ok: bool, error: JsonEncodeError },
}

/// Why the arguments could not be encoded: over the record cap or the byte cap.
#[derive(Debug, Serialize)]
struct JsonEncodeError {
    kind: &'static str,
    index: usize,
    message: String,
}

/// Runs `kargs encode`; a refusal's `error:` is coloured with `paint`.
pub(crate) fn run(args: &EncodeArgs, paint: Paint) -> Output {
    let from_stdin = match input::stdin_text(&args.args, "ARG") {
        Ok(text) => text,
        Err(message) => return Output::usage(message),
    };
    let texts: Vec<&str> = match &from_stdin {
        Some(text) => text.split_whitespace().collect(),
        None => args.args.iter().map(String::as_str).collect(),
    };
    if texts.is_empty() {
        return Output::usage(
            "no arguments to encode: give them as TYPE:VALUE (kargs encode i32:-7 ptr:64:128), or `-` or a \
             pipe to read them from stdin",
        );
    }
    let mut parsed = Vec::with_capacity(texts.len());
    for (index, text) in texts.iter().enumerate() {
        match parse_arg(text) {
            Ok(arg) => parsed.push(arg),
            Err(message) => return Output::usage(format!("argument {index} `{text}`: {message}")),
        }
    }
    let mut buf = [0u8; MAX_KERNEL_ARGS_BYTES];
    let mut builder = ArgvBuilder::new(&mut buf);
    for arg in &parsed {
        if let Err(e) = builder.push(arg) {
            if args.json {
                let error =
                    JsonEncodeError { kind: refusal_kind(&e), index: e.index(), message: e.to_string() };
                return Output::stdout(
                    json_line(&JsonEncoded::Refused { ok: false, error }),
                    Status::Rejected,
                );
            }
            return Output::stderr(
                format!("{}: cannot encode: {e}\n", paint.error("error")),
                Status::Rejected,
            );
        }
    }
    let bytes = builder.finish();
    if args.json {
        let mut offset = 0;
        let json_args = parsed
            .iter()
            .enumerate()
            .map(|(index, arg)| {
                let json = JsonArg::new(index, offset, arg);
                offset += arg.tag().wire_size();
                json
            })
            .collect();
        let encoded =
            JsonEncoded::Encoded { ok: true, hex: hex::encode(bytes), len: bytes.len(), args: json_args };
        return Output::stdout(json_line(&encoded), Status::Accepted);
    }
    let mut text = hex::encode(bytes);
    text.push('\n');
    Output::stdout(text, Status::Accepted)
}

/// The `kind` of an encoding refusal.
fn refusal_kind(e: &EncodeError) -> &'static str {
    match e {
        EncodeError::TooManyArgs { .. } => "too_many_records",
        _ => "too_long",
    }
}

/// One `TYPE:VALUE` argument; the error says what is wrong with it.
fn parse_arg(text: &str) -> Result<LoweredArgSnapshot, String> {
    let (ty, value) = text.split_once(':').ok_or_else(|| {
        "expected TYPE:VALUE, with TYPE one of i32, i64, f32, f64, u32, u64, ptr (ptr:OFFSET:LEN)".to_owned()
    })?;
    let tag = ArgTag::from_name(ty)
        .ok_or_else(|| format!("unknown type `{ty}`: expected one of i32, i64, f32, f64, u32, u64, ptr"))?;
    Ok(match tag {
        ArgTag::I32 => LoweredArgSnapshot::I32(signed(value, "i32")?),
        ArgTag::I64 => LoweredArgSnapshot::I64(signed(value, "i64")?),
        ArgTag::U32 => LoweredArgSnapshot::U32(unsigned(value, "u32")?),
        ArgTag::U64 => LoweredArgSnapshot::U64(unsigned(value, "u64")?),
        ArgTag::F32 => LoweredArgSnapshot::F32(match value.strip_prefix("0x") {
            Some(digits) => F32Bits(raw_bits(digits, "f32")?),
            None => F32Bits::from_f32(decimal(value, "f32", "3.4028235e38")?),
        }),
        ArgTag::F64 => LoweredArgSnapshot::F64(match value.strip_prefix("0x") {
            Some(digits) => F64Bits(raw_bits(digits, "f64")?),
            None => F64Bits::from_f64(decimal(value, "f64", "1.7976931348623157e308")?),
        }),
        ArgTag::Ptr => {
            let (offset, len) = value
                .split_once(':')
                .ok_or_else(|| format!("`ptr:{value}`: expected ptr:OFFSET:LEN, for example ptr:64:128"))?;
            LoweredArgSnapshot::Ptr(GuestRange {
                guest_offset: unsigned(offset, "pointer offset (u32)")?,
                len: unsigned(len, "pointer length (u32)")?,
            })
        }
    })
}

/// An integer of a signed type: decimal or `0x` hex, optionally `-`.
fn signed<T: TryFrom<i64>>(value: &str, what: &str) -> Result<T, String> {
    number::signed(value).and_then(|v| T::try_from(v).ok()).ok_or_else(|| {
        format!("`{value}` is not an {what} (decimal or 0x hex, optionally -){}", range_hint(what))
    })
}

/// A decimal or `0x` hex integer of an unsigned type.
fn unsigned<T: TryFrom<u64>>(value: &str, what: &str) -> Result<T, String> {
    number::unsigned(value).and_then(|v| T::try_from(v).ok()).ok_or_else(|| {
        format!("`{value}` is not a {what} (decimal, or 0x and hex digits){}", range_hint(what))
    })
}

/// A decimal float (Rust's syntax: `1.5`, `-0`, `1e-3`, `inf`, `NaN`) that the type holds: a
/// finite decimal that would round to infinity, or a non-zero one that would round to zero, is
/// refused rather than stored as something else.
fn decimal<T: std::str::FromStr + Into<f64> + Copy>(
    value: &str,
    what: &str,
    largest: &str,
) -> Result<T, String> {
    let parsed: T = value.parse().map_err(|_| {
        format!("`{value}` is not a decimal {what}; give a decimal (1.5, -0, 1e-3, inf, NaN) or 0x and the raw bits")
    })?;
    let wide: f64 = parsed.into();
    let unsigned_text = value.trim_start_matches(['-', '+']).to_ascii_lowercase();
    let spelled_special = matches!(unsigned_text.as_str(), "inf" | "infinity" | "nan");
    if wide.is_infinite() && !spelled_special {
        return Err(format!(
            "`{value}` is out of the range of an {what} (its largest finite value is {largest}); write inf or -inf for infinity"
        ));
    }
    let mantissa = unsigned_text.split('e').next().unwrap_or_default();
    if wide == 0.0 && mantissa.chars().any(|c| ('1'..='9').contains(&c)) {
        return Err(format!("`{value}` is not zero but rounds to zero in an {what}; write 0 for zero"));
    }
    Ok(parsed)
}

/// The raw bits of a float: 1 to 8 (`f32`) or 16 (`f64`) hex digits after `0x`.
fn raw_bits<T: TryFrom<u64>>(digits: &str, what: &str) -> Result<T, String> {
    let width = std::mem::size_of::<T>() * 2;
    let ok = !digits.is_empty() && digits.len() <= width && digits.chars().all(|c| c.is_ascii_hexdigit());
    ok.then(|| u64::from_str_radix(digits, 16).ok()).flatten().and_then(|v| T::try_from(v).ok()).ok_or_else(
        || format!("`0x{digits}` is not the raw bits of an {what}: expected 1 to {width} hex digits"),
    )
}

fn range_hint(what: &str) -> &'static str {
    match what {
        "i32" => " in -2147483648..=2147483647",
        "i64" => " in -9223372036854775808..=9223372036854775807",
        "u32" | "pointer offset (u32)" | "pointer length (u32)" => " in 0..=4294967295",
        "u64" => " in 0..=18446744073709551615",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses() {
        assert_eq!(parse_arg("i32:-7"), Ok(LoweredArgSnapshot::I32(-7)));
        assert_eq!(parse_arg("i64:-9223372036854775808"), Ok(LoweredArgSnapshot::I64(i64::MIN)));
        assert_eq!(parse_arg("u32:0xffffffff"), Ok(LoweredArgSnapshot::U32(u32::MAX)));
        assert_eq!(parse_arg("u64:18446744073709551615"), Ok(LoweredArgSnapshot::U64(u64::MAX)));
        assert_eq!(parse_arg("f32:1.5"), Ok(LoweredArgSnapshot::F32(F32Bits(0x3fc0_0000))));
        assert_eq!(parse_arg("f32:0x7fa00001"), Ok(LoweredArgSnapshot::F32(F32Bits(0x7fa0_0001))));
        assert_eq!(parse_arg("f32:-0"), Ok(LoweredArgSnapshot::F32(F32Bits(0x8000_0000))));
        assert_eq!(parse_arg("f64:0x3ff8000000000000"), Ok(LoweredArgSnapshot::F64(F64Bits(0x3ff8 << 48))));
        assert_eq!(parse_arg("f64:-inf"), Ok(LoweredArgSnapshot::F64(F64Bits(0xfff0 << 48))));
        assert_eq!(parse_arg("f32:Infinity"), Ok(LoweredArgSnapshot::F32(F32Bits(0x7f80_0000))));
        assert_eq!(parse_arg("f32:3.4028235e38"), Ok(LoweredArgSnapshot::F32(F32Bits(0x7f7f_ffff))));
        assert_eq!(parse_arg("f32:1e-45"), Ok(LoweredArgSnapshot::F32(F32Bits(1))));
        assert_eq!(parse_arg("f64:0e5"), Ok(LoweredArgSnapshot::F64(F64Bits(0))));
        assert_eq!(parse_arg("i32:-0x10"), Ok(LoweredArgSnapshot::I32(-16)));
        assert_eq!(parse_arg("i64:0x7fffffffffffffff"), Ok(LoweredArgSnapshot::I64(i64::MAX)));
        assert_eq!(
            parse_arg("ptr:64:0x80"),
            Ok(LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 64, len: 128 }))
        );
    }

    #[test]
    fn malformed_arguments_say_why() {
        for (text, needle) in [
            ("i32", "expected TYPE:VALUE"),
            ("i16:1", "unknown type `i16`"),
            ("i32:2147483648", "not an i32"),
            ("i32:0x80000000", "not an i32"),
            ("i32:1.5", "not an i32"),
            ("u32:-1", "not a u32"),
            ("u32:4294967296", "in 0..=4294967295"),
            ("u64:0x", "not a u64"),
            ("u32:+1", "not a u32"),
            ("f32:abc", "not a decimal f32"),
            ("f32:1e40", "out of the range of an f32"),
            ("f64:-1e400", "write inf or -inf"),
            ("f32:1e-50", "rounds to zero"),
            ("f32:0x100000000", "expected 1 to 8 hex digits"),
            ("f64:0x", "expected 1 to 16 hex digits"),
            ("f64:0x+1", "expected 1 to 16 hex digits"),
            ("ptr:64", "expected ptr:OFFSET:LEN"),
            ("ptr:64:-1", "pointer length"),
        ] {
            let err = parse_arg(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
