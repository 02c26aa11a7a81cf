//! The JSON shapes `kargs decode --json` prints; the conformance vectors use the same shapes.
//!
//! ```text
//! {"ok":true,"args":[{"index":0,"offset":0,"type":"i32","value":-7}, ...]}
//! {"ok":false,"error":{"code":-9,"name":"InvalidArgs","kind":"unknown_tag","index":3,"offset":14,"message":"..."}}
//! ```
//!
//! Integers are JSON integers (exact over the whole `i64` and `u64` ranges). Floats carry
//! `bits`, the raw IEEE-754 bits as `0x` and 8 or 16 lowercase hex digits, which is the exact
//! value, and `value`, Rust's shortest round-trip spelling of it (`"1.5"`, `"-0.0"`, `"1e-45"`,
//! `"inf"`, `"-inf"`, `"NaN"`), which is for people. Pointers carry `guest_offset` and `len`.

use kernel_args_core::{Arg, ArgvError, F32Bits, F64Bits, LoweredArgSnapshot, Record};
use serde::Serialize;

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

/// A rejection: the ABI code and name, the kind (`ErrorKind::name`), where, and a message.
#[derive(Debug, Serialize)]
pub(crate) struct JsonError {
    code: i32,
    name: &'static str,
    kind: &'static str,
    index: usize,
    offset: usize,
    message: String,
}

/// `0x` and the 8 hex digits of an `f32`'s bits.
pub(crate) fn f32_bits(bits: F32Bits) -> String {
    format!("{:#010x}", bits.0)
}

/// `0x` and the 16 hex digits of an `f64`'s bits.
pub(crate) fn f64_bits(bits: F64Bits) -> String {
    format!("{:#018x}", bits.0)
}

/// The shortest decimal that reads back as the same `f32` (`"NaN"` for every NaN).
pub(crate) fn f32_value(bits: F32Bits) -> String {
    format!("{:?}", bits.to_f32())
}

/// The shortest decimal that reads back as the same `f64` (`"NaN"` for every NaN).
pub(crate) fn f64_value(bits: F64Bits) -> String {
    format!("{:?}", bits.to_f64())
}

impl JsonArg {
    /// Argument `index`, whose record starts at byte `offset`.
    pub(crate) fn new(index: usize, offset: usize, arg: &LoweredArgSnapshot) -> JsonArg {
        let value = match *arg {
            Arg::I32(value) => JsonValue::I32 { value },
            Arg::I64(value) => JsonValue::I64 { value },
            Arg::F32(bits) => JsonValue::F32 { bits: f32_bits(bits), value: f32_value(bits) },
            Arg::F64(bits) => JsonValue::F64 { bits: f64_bits(bits), value: f64_value(bits) },
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
            name: error.code().name(),
            kind: error.kind().name(),
            index: error.index(),
            offset: error.offset(),
            message: error.to_string(),
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

    /// One line of JSON.
    pub(crate) fn to_line(&self) -> String {
        // Serializing these plain structs cannot fail; the fallback keeps the output valid JSON.
        let mut line = serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"ok\":false,\"internal_error\":{:?}}}", e.to_string()));
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_spellings() {
        assert_eq!(f32_bits(F32Bits::from_f32(1.5)), "0x3fc00000");
        assert_eq!(f32_bits(F32Bits(1)), "0x00000001");
        assert_eq!(f64_bits(F64Bits::from_f64(1.5)), "0x3ff8000000000000");
        assert_eq!(f64_bits(F64Bits(0)), "0x0000000000000000");
        assert_eq!(f32_value(F32Bits::from_f32(1.5)), "1.5");
        assert_eq!(f32_value(F32Bits(0x8000_0000)), "-0.0");
        assert_eq!(f32_value(F32Bits(0xff80_0000)), "-inf");
        assert_eq!(f32_value(F32Bits(0x7fa0_0001)), "NaN");
        assert_eq!(f32_value(F32Bits(1)), "1e-45");
        assert_eq!(f64_value(F64Bits::from_f64(f64::MAX)), "1.7976931348623157e308");
        assert_eq!(f64_value(F64Bits(0x7ff0_0000_0000_0000)), "inf");
    }
}
