//! `kargs encode`: typed arguments to an argv buffer, printed as lowercase hex.
//!
//! Each argument is `TYPE:VALUE`:
//!
//! | form              | value                                                                  |
//! |-------------------|------------------------------------------------------------------------|
//! | `i32:-7`, `i64:…` | a decimal integer, optionally signed                                   |
//! | `u32:42`, `u64:…` | a decimal integer or `0x` and hex digits                               |
//! | `f32:1.5`, `f64:…`| a decimal (`1.5`, `-0`, `1e-3`, `inf`, `-inf`, `NaN`), or `0x` and the raw IEEE-754 bits (up to 8 / 16 hex digits) |
//! | `ptr:64:128`      | guest offset, then byte length, each a `u32` (decimal or `0x` hex)      |
//!
//! A malformed argument is a usage error (exit 2) naming the argument. Arguments beyond the
//! host's caps (128 records, 4096 bytes) cannot be encoded: exit 1, like a rejected decode.
//! The encoding itself is the core's [`ArgvBuilder`], so `kargs decode` accepts every buffer
//! `kargs encode` prints (given a memory large enough for its windows).

use clap::Args;
use kernel_args_core::{
    ArgTag, ArgvBuilder, F32Bits, F64Bits, GuestRange, LoweredArgSnapshot, MAX_KERNEL_ARGS_BYTES,
};

use crate::{Output, Status, hex};

/// `kargs encode ARG...`
#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    /// Arguments as TYPE:VALUE, for example i32:-7 u64:42 f32:1.5 f64:0x3ff8000000000000 ptr:64:128.
    /// Floats take a decimal or 0x and their raw bits; unsigned integers take decimal or 0x hex.
    #[arg(value_name = "ARG", value_parser = parse_arg)]
    args: Vec<LoweredArgSnapshot>,
}

/// Runs `kargs encode`.
pub(crate) fn run(args: &EncodeArgs) -> Output {
    let mut buf = [0u8; MAX_KERNEL_ARGS_BYTES];
    let mut builder = ArgvBuilder::new(&mut buf);
    for arg in &args.args {
        if let Err(e) = builder.push(arg) {
            return Output {
                stdout: String::new(),
                stderr: format!("error: cannot encode: {e}\n"),
                status: Status::Rejected,
            };
        }
    }
    let mut text = hex::encode(builder.finish());
    text.push('\n');
    Output::stdout(text, Status::Accepted)
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
            None => F32Bits::from_f32(decimal(value, "f32")?),
        }),
        ArgTag::F64 => LoweredArgSnapshot::F64(match value.strip_prefix("0x") {
            Some(digits) => F64Bits(raw_bits(digits, "f64")?),
            None => F64Bits::from_f64(decimal(value, "f64")?),
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

/// A decimal integer of a signed type.
fn signed<T: std::str::FromStr>(value: &str, what: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("`{value}` is not a decimal {what}{}", range_hint(what)))
}

/// A decimal or `0x` hex integer of an unsigned type.
fn unsigned<T: TryFrom<u64>>(value: &str, what: &str) -> Result<T, String> {
    let parsed = match value.strip_prefix("0x") {
        Some(digits) if !digits.is_empty() && !digits.starts_with('+') => {
            u64::from_str_radix(digits, 16).ok()
        }
        Some(_) => None,
        None if !value.starts_with('+') => value.parse::<u64>().ok(),
        None => None,
    };
    parsed.and_then(|v| T::try_from(v).ok()).ok_or_else(|| {
        format!("`{value}` is not a {what} (decimal, or 0x and hex digits){}", range_hint(what))
    })
}

/// A decimal float (Rust's syntax: `1.5`, `-0`, `1e-3`, `inf`, `NaN`).
fn decimal<T: std::str::FromStr>(value: &str, what: &str) -> Result<T, String> {
    value.parse().map_err(|_| {
        format!("`{value}` is not a decimal {what}; give a decimal (1.5, -0, 1e-3, inf, NaN) or 0x and the raw bits")
    })
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
            ("i32:2147483648", "not a decimal i32"),
            ("i32:0x10", "not a decimal i32"),
            ("u32:-1", "not a u32"),
            ("u32:4294967296", "in 0..=4294967295"),
            ("u64:0x", "not a u64"),
            ("u32:+1", "not a u32"),
            ("f32:abc", "not a decimal f32"),
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
