//! The JSON shapes `kargs decode --json` prints; the conformance vectors use the same shapes,
//! and `kargs-demo --json` (demo/, which compiles this file too) uses its argument and error
//! shapes.
//!
//! ```text
//! {"ok":true,"args":[{"index":0,"offset":0,"type":"i32","value":-7}, ...]}
//! {"ok":false,"error":{"code":-9,"name":"InvalidArgs","kind":"unknown_tag","index":3,"offset":14,"message":"..."}}
//! ```
//!
//! With `--signature`, an accepted argv also carries the declaration's verdict, and `ok` is
//! `false` when the declaration refuses it; a launch shape the host refuses is an error with no
//! argv behind it:
//!
//! ```text
//! {"ok":true,"args":[...],"signature":{"kernel":"vector_add","ok":true}}
//! {"ok":false,"args":[...],"signature":{"kernel":"vector_add","ok":false},"error":{"code":-9,"name":"InvalidArgs","kind":"window_too_short","index":2,"offset":18,"message":"..."}}
//! {"ok":false,"error":{"code":-8,"name":"InvalidDimensions","kind":"launch_shape","message":"grid.x is 0, must be at least 1"}}
//! ```
//!
//! A usage error (a malformed option, bad hex) under `--json` is an object too, on stdout, with
//! exit status 2 and clap's diagnostic on stderr as without `--json`:
//!
//! ```text
//! {"ok":false,"error":{"kind":"usage","message":"invalid value 'x' for '--mem-len <N>': ..."}}
//! ```
//!
//! Whatever refused it, a refusal's error is at `.error`.
//!
//! Integers are JSON integers (exact over the whole `i64` and `u64` ranges). Floats carry
//! `bits`, the raw IEEE-754 bits as `0x` and 8 or 16 lowercase hex digits, which is the exact
//! value, and `value`, Rust's shortest round-trip spelling of it (`"1.5"`, `"-0.0"`, `"1e-45"`,
//! `"inf"`, `"-inf"`, `"NaN"`), which is for people. Pointers carry `guest_offset` and `len`.

use kernel_args::{AbiError, Mismatch, MismatchKind};
use kernel_args_core::{Arg, ArgvError, LoweredArgSnapshot, Record};
use serde::Serialize;

use crate::value;

/// The whole output: accepted with its arguments, or rejected with its first error.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Decoded {
    /// `{"ok":true,"args":[...]}`
    Accepted {
        /// Always `true`.
        ok: bool,
        /// The arguments in buffer order.
        args: Vec<JsonArg>,
    },
    /// `{"ok":false,"error":{...}}`
    Rejected {
        /// Always `false`.
        ok: bool,
        /// The first error.
        error: JsonError,
    },
    /// `{"ok":...,"args":[...],"signature":{...}[,"error":{...}]}`: accepted on the wire, then
    /// checked against a declaration.
    Checked {
        /// Whether the declaration accepts the arguments.
        ok: bool,
        /// The arguments in buffer order.
        args: Vec<JsonArg>,
        /// Which declaration, and its verdict.
        signature: JsonSignature,
        /// Why the declaration refuses the arguments.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<JsonError>,
    },
}

/// A declaration's verdict on an accepted argv (its reason, if it refuses, is the output's `error`).
#[derive(Debug, Serialize)]
pub(crate) struct JsonSignature {
    kernel: String,
    ok: bool,
}

/// `{"ok":false,"error":{"kind":"usage","message":"..."}}`.
#[derive(Debug, Serialize)]
struct JsonUsage<'a> {
    ok: bool,
    error: UsageError<'a>,
}

/// A usage error: no ABI code, only what was wrong with the command line or its input.
#[derive(Debug, Serialize)]
struct UsageError<'a> {
    kind: &'static str,
    message: &'a str,
}

/// The line `--json` prints for a usage error.
pub(crate) fn usage_line(message: &str) -> String {
    json_line(&JsonUsage { ok: false, error: UsageError { kind: "usage", message } })
}

/// One line of JSON. Serializing these plain structs cannot fail; the fallback keeps the output
/// valid JSON.
pub(crate) fn json_line<T: Serialize>(value: &T) -> String {
    let mut line = serde_json::to_string(value)
        .unwrap_or_else(|e| format!("{{\"ok\":false,\"internal_error\":{:?}}}", e.to_string()));
    line.push('\n');
    line
}

/// One argument: where it was found, then its typed value.
#[derive(Debug, Serialize)]
pub(crate) struct JsonArg {
    index: usize,
    offset: usize,
    #[serde(flatten)]
    value: JsonValue,
}

/// An argument's type and value; `type` is the wire type's name.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum JsonValue {
    I32 { value: i32 },
    I64 { value: i64 },
    F32 { bits: String, value: String },
    F64 { bits: String, value: String },
    U32 { value: u32 },
    U64 { value: u64 },
    Ptr { guest_offset: u32, len: u32 },
}

/// An error: the ABI `code`, its `name` and a `message` for people. An argv error (`kargs
/// decode`) also says what kind it is and where: `kind` (`ErrorKind::name`), `index` and
/// `offset`; an error with no argv error behind it (`kargs-demo`'s launch outcome) leaves those
/// three out. `name` is `null` for a code that is not one of the ABI's.
#[derive(Debug, Serialize)]
pub(crate) struct JsonError {
    code: i32,
    name: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<usize>,
    message: String,
}

impl JsonArg {
    /// Argument `index`, whose record starts at byte `offset`.
    pub(crate) fn new(index: usize, offset: usize, arg: &LoweredArgSnapshot) -> JsonArg {
        let value = match *arg {
            Arg::I32(value) => JsonValue::I32 { value },
            Arg::I64(value) => JsonValue::I64 { value },
            Arg::F32(bits) => JsonValue::F32 { bits: value::f32_bits(bits), value: value::f32_value(bits) },
            Arg::F64(bits) => JsonValue::F64 { bits: value::f64_bits(bits), value: value::f64_value(bits) },
            Arg::U32(value) => JsonValue::U32 { value },
            Arg::U64(value) => JsonValue::U64 { value },
            Arg::Ptr(range) => JsonValue::Ptr { guest_offset: range.guest_offset, len: range.len },
        };
        JsonArg { index, offset, value }
    }
}

impl From<&Record<'_>> for JsonArg {
    fn from(record: &Record<'_>) -> JsonArg {
        JsonArg::new(record.index, record.offset, &record.arg.snapshot())
    }
}

impl From<&ArgvError> for JsonError {
    fn from(error: &ArgvError) -> JsonError {
        JsonError {
            code: error.code().code(),
            name: Some(error.code().name()),
            kind: Some(error.kind().name()),
            index: Some(error.index()),
            offset: Some(error.offset()),
            message: error.to_string(),
        }
    }
}

impl JsonError {
    /// An ABI `code` (named where it is one of the ABI's) with the host's `message`, and no argv
    /// error behind it: how `kargs-demo` (demo/, which compiles this file too) reports a launch.
    #[allow(dead_code)] // in kargs itself, only its test
    pub(crate) fn abi(code: i32, message: &str) -> JsonError {
        JsonError {
            code,
            name: AbiError::try_from(code).map(AbiError::name).ok(),
            kind: None,
            index: None,
            offset: None,
            message: message.to_owned(),
        }
    }
}

impl Decoded {
    /// The output for a walk that read `records` and then stopped at `error`, if any.
    pub(crate) fn new(records: &[Record<'_>], error: Option<&ArgvError>) -> Decoded {
        match error {
            None => Decoded::Accepted { ok: true, args: records.iter().map(JsonArg::from).collect() },
            Some(error) => Decoded::Rejected { ok: false, error: JsonError::from(error) },
        }
    }

    /// An accepted argv with the verdict of kernel `kernel`'s declaration: `mismatch`, or none.
    pub(crate) fn with_signature(self, kernel: &str, mismatch: Option<&Mismatch>) -> Decoded {
        let Decoded::Accepted { args, .. } = self else { return self };
        let error = mismatch.map(|m| JsonError {
            code: AbiError::InvalidArgs.code(),
            name: Some(AbiError::InvalidArgs.name()),
            kind: Some(match m.kind {
                MismatchKind::Count { .. } => "count",
                MismatchKind::Type { .. } => "type",
                MismatchKind::Misaligned { .. } => "misaligned",
                MismatchKind::WindowTooShort { .. } => "window_too_short",
                MismatchKind::Overflow { .. } => "out_of_range",
                MismatchKind::Negative { .. } => "negative",
            }),
            index: Some(m.record),
            offset: Some(m.offset),
            message: m.to_string(),
        });
        let ok = error.is_none();
        Decoded::Checked { ok, args, signature: JsonSignature { kernel: kernel.to_owned(), ok }, error }
    }

    /// A launch the host refuses before it reads the argv: `code`, of `kind` (`launch_shape`,
    /// `quota`), with the error's message.
    pub(crate) fn launch_refused(
        code: AbiError,
        kind: &'static str,
        error: &dyn std::fmt::Display,
    ) -> Decoded {
        Decoded::Rejected {
            ok: false,
            error: JsonError {
                code: code.code(),
                name: Some(code.name()),
                kind: Some(kind),
                index: None,
                offset: None,
                message: error.to_string(),
            },
        }
    }

    /// One line of JSON.
    pub(crate) fn to_line(&self) -> String {
        json_line(self)
    }
}

#[cfg(test)]
mod tests {
    use kernel_args_core::ErrorKind;

    use super::*;

    #[test]
    fn an_argv_error_has_its_kind_and_place() {
        let error = ArgvError::new(ErrorKind::UnknownTag { tag: 0xff }, 3, 15);
        assert_eq!(
            serde_json::to_string(&JsonError::from(&error)).unwrap(),
            "{\"code\":-9,\"name\":\"InvalidArgs\",\"kind\":\"unknown_tag\",\"index\":3,\"offset\":15,\
             \"message\":\"unknown tag 0xff at byte 15 (record 3)\"}"
        );
    }

    #[test]
    fn an_abi_error_has_its_code_name_and_message_only() {
        assert_eq!(
            serde_json::to_string(&JsonError::abi(-3, "no kernel")).unwrap(),
            "{\"code\":-3,\"name\":\"InvalidKernel\",\"message\":\"no kernel\"}"
        );
        assert_eq!(
            serde_json::to_string(&JsonError::abi(7, "guest answered 7")).unwrap(),
            "{\"code\":7,\"name\":null,\"message\":\"guest answered 7\"}"
        );
    }
}
