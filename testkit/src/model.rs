//! An independent, plainly written specification model of the argv parser.
//!
//! This is the wire format and the rules of `docs/wire-format.md`, written as directly as
//! possible, sharing no code with `kernel-args-core` (this module does not use it): its own tag
//! table, its own byte decoding, its own bounds arithmetic (in `u128`). It is written to be read
//! against the specification, not to be fast. The exhaustive sweep and the property tests of
//! `kernel-args-conformance` and the `differential` fuzz target hold the core to it, and the
//! conformance vectors are checked against both.
//!
//! The rules, in order of precedence (the first that applies decides):
//!
//! 1. a buffer longer than 4096 bytes is refused before any byte is read (`-10`);
//! 2. when a record starts and the record cap is already reached: too many records (`-10`).
//!    The cap is 128, or a host's smaller output capacity ([`parse_with_capacity`]);
//! 3. a tag byte outside `0x01..=0x07`: unknown tag (`-9`);
//! 4. fewer value bytes left than the tag needs: truncated record (`-9`);
//! 5. a pointer window `[offset, offset + len)` not inside `[0, mem_len]`: out of bounds (`-2`).
//!
//! Every rejection names the offending record's index and the byte at which it starts (both 0
//! for rule 1), and carries the details the specification's error table lists.
//!
//! ```
//! use kernel_args_testkit::model::{self, Failure, Value};
//!
//! let args = model::parse(&[0x05, 42, 0, 0, 0], 0).unwrap();
//! assert_eq!(args[0].value, Value::U32(42));
//! let err = model::parse(&[0x05, 42, 0, 0, 0, 0xff], 0).unwrap_err();
//! assert_eq!((err.failure, err.index, err.offset), (Failure::UnknownTag { tag: 0xff }, 1, 5));
//! // A host whose output holds one record: the cap is 1.
//! let err = model::parse_with_capacity(&[0x05, 42, 0, 0, 0, 0xff], 0, 1).unwrap_err();
//! assert_eq!((err.failure, err.index, err.offset), (Failure::TooManyRecords { max: 1 }, 1, 5));
//! ```

/// The record cap: at most this many records per buffer.
pub const MAX_RECORDS: usize = 128;

/// The byte cap: a longer buffer is refused before it is read.
pub const MAX_BYTES: usize = 4096;

/// One row of the tag table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagSpec {
    /// The tag byte.
    pub byte: u8,
    /// The type's name (`"i32"`, ..., `"ptr"`).
    pub name: &'static str,
    /// Value bytes after the tag byte.
    pub value_bytes: usize,
}

/// The tag table, exactly as in the specification.
pub const TAGS: [TagSpec; 7] = [
    TagSpec { byte: 0x01, name: "i32", value_bytes: 4 },
    TagSpec { byte: 0x02, name: "i64", value_bytes: 8 },
    TagSpec { byte: 0x03, name: "f32", value_bytes: 4 },
    TagSpec { byte: 0x04, name: "f64", value_bytes: 8 },
    TagSpec { byte: 0x05, name: "u32", value_bytes: 4 },
    TagSpec { byte: 0x06, name: "u64", value_bytes: 8 },
    TagSpec { byte: 0x07, name: "ptr", value_bytes: 8 },
];

/// The table row for a tag byte, if the byte is a tag.
pub fn tag_spec(byte: u8) -> Option<TagSpec> {
    TAGS.iter().copied().find(|t| t.byte == byte)
}

/// A decoded value; floats are their raw bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Tag `0x01`.
    I32(i32),
    /// Tag `0x02`.
    I64(i64),
    /// Tag `0x03`, raw IEEE-754 bits.
    F32(u32),
    /// Tag `0x04`, raw IEEE-754 bits.
    F64(u64),
    /// Tag `0x05`.
    U32(u32),
    /// Tag `0x06`.
    U64(u64),
    /// Tag `0x07`: a window of `len` bytes at `guest_offset`.
    Ptr {
        /// Start of the window in guest memory.
        guest_offset: u32,
        /// Length of the window in bytes.
        len: u32,
    },
}

impl Value {
    /// The tag byte of this value's type.
    pub fn tag(&self) -> u8 {
        match self {
            Value::I32(_) => 0x01,
            Value::I64(_) => 0x02,
            Value::F32(_) => 0x03,
            Value::F64(_) => 0x04,
            Value::U32(_) => 0x05,
            Value::U64(_) => 0x06,
            Value::Ptr { .. } => 0x07,
        }
    }

    /// The type's name.
    pub fn type_name(&self) -> &'static str {
        match tag_spec(self.tag()) {
            Some(spec) => spec.name,
            None => unreachable!("every Value has a tag in TAGS"),
        }
    }

    /// The record's bytes: the tag, then the value in little-endian order.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut out = vec![self.tag()];
        match *self {
            Value::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Value::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Value::F32(bits) | Value::U32(bits) => out.extend_from_slice(&bits.to_le_bytes()),
            Value::F64(bits) | Value::U64(bits) => out.extend_from_slice(&bits.to_le_bytes()),
            Value::Ptr { guest_offset, len } => {
                out.extend_from_slice(&guest_offset.to_le_bytes());
                out.extend_from_slice(&len.to_le_bytes());
            }
        }
        out
    }
}

/// The bytes of a whole argv: every value's record, in order, no padding.
pub fn encode(values: &[Value]) -> Vec<u8> {
    values.iter().flat_map(Value::to_wire).collect()
}

/// One accepted argument and where its record starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    /// 0-based record index.
    pub index: usize,
    /// Byte offset of the record's tag byte.
    pub offset: usize,
    /// The value.
    pub value: Value,
}

/// What was wrong with a rejected buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Rule 1: the buffer is longer than [`MAX_BYTES`].
    BufferTooLong {
        /// The buffer's length.
        len: usize,
        /// The byte cap, [`MAX_BYTES`].
        max: usize,
    },
    /// Rule 2: a record starts when the record cap is reached.
    TooManyRecords {
        /// The record cap in force: [`MAX_RECORDS`], or a smaller output capacity.
        max: usize,
    },
    /// Rule 3: the tag byte is not in [`TAGS`].
    UnknownTag {
        /// The byte.
        tag: u8,
    },
    /// Rule 4: the value is cut short by the end of the buffer.
    TruncatedRecord {
        /// The tag byte.
        tag: u8,
        /// Value bytes the tag needs.
        needed: usize,
        /// Value bytes left after the tag byte.
        present: usize,
    },
    /// Rule 5: the pointer window is not inside guest memory.
    WindowOutOfBounds {
        /// Start of the window.
        guest_offset: u32,
        /// Length of the window.
        len: u32,
        /// The guest memory's length.
        mem_len: u64,
    },
}

impl Failure {
    /// The stable snake_case name of the failure.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::BufferTooLong { .. } => "buffer_too_long",
            Failure::TooManyRecords { .. } => "too_many_records",
            Failure::UnknownTag { .. } => "unknown_tag",
            Failure::TruncatedRecord { .. } => "truncated_record",
            Failure::WindowOutOfBounds { .. } => "window_out_of_bounds",
        }
    }

    /// The wasi-cuda ABI code.
    pub fn code(&self) -> i32 {
        abi_for_kind(self.kind()).map_or(0, |(code, _)| code)
    }

    /// The wasi-cuda ABI code's name.
    pub fn code_name(&self) -> &'static str {
        abi_for_kind(self.kind()).map_or("", |(_, name)| name)
    }
}

/// The ABI code and its name for a failure kind, as the error table gives them.
pub fn abi_for_kind(kind: &str) -> Option<(i32, &'static str)> {
    match kind {
        "buffer_too_long" | "too_many_records" => Some((-10, "KernelArgsUnsupported")),
        "unknown_tag" | "truncated_record" => Some((-9, "InvalidArgs")),
        "window_out_of_bounds" => Some((-2, "InvalidPointer")),
        _ => None,
    }
}

/// A rejected buffer: what, and where (the offending record's index and first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection {
    /// What was wrong.
    pub failure: Failure,
    /// The offending record's index (0 for a buffer that is too long).
    pub index: usize,
    /// The offending record's first byte (0 for a buffer that is too long).
    pub offset: usize,
}

/// Parses `buf` against a guest memory of `mem_len` bytes, by the five rules, with the
/// specification's record cap ([`MAX_RECORDS`]).
pub fn parse(buf: &[u8], mem_len: u64) -> Result<Vec<Arg>, Rejection> {
    parse_with_capacity(buf, mem_len, MAX_RECORDS)
}

/// Parses `buf` as a host whose output holds `capacity` records: the same rules, with the
/// record cap `min(capacity, MAX_RECORDS)` (a host may enforce a smaller cap, never a larger
/// one).
pub fn parse_with_capacity(buf: &[u8], mem_len: u64, capacity: usize) -> Result<Vec<Arg>, Rejection> {
    if buf.len() > MAX_BYTES {
        let failure = Failure::BufferTooLong { len: buf.len(), max: MAX_BYTES };
        return Err(Rejection { failure, index: 0, offset: 0 });
    }
    let max_records = capacity.min(MAX_RECORDS);
    let mut args = Vec::new();
    let mut offset = 0;
    while offset < buf.len() {
        let index = args.len();
        let reject = |failure| Err(Rejection { failure, index, offset });
        if index == max_records {
            return reject(Failure::TooManyRecords { max: max_records });
        }
        let tag = buf[offset];
        let Some(spec) = tag_spec(tag) else {
            return reject(Failure::UnknownTag { tag });
        };
        let value_start = offset + 1;
        let present = buf.len() - value_start;
        if present < spec.value_bytes {
            return reject(Failure::TruncatedRecord { tag, needed: spec.value_bytes, present });
        }
        let v = &buf[value_start..value_start + spec.value_bytes];
        let value = match tag {
            0x01 => Value::I32(i32::from_le_bytes([v[0], v[1], v[2], v[3]])),
            0x02 => Value::I64(i64::from_le_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]])),
            0x03 => Value::F32(u32::from_le_bytes([v[0], v[1], v[2], v[3]])),
            0x04 => Value::F64(u64::from_le_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]])),
            0x05 => Value::U32(u32::from_le_bytes([v[0], v[1], v[2], v[3]])),
            0x06 => Value::U64(u64::from_le_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]])),
            _ => {
                let guest_offset = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                let len = u32::from_le_bytes([v[4], v[5], v[6], v[7]]);
                // u128: no overflow, whatever the operands.
                if u128::from(guest_offset) + u128::from(len) > u128::from(mem_len) {
                    return reject(Failure::WindowOutOfBounds { guest_offset, len, mem_len });
                }
                Value::Ptr { guest_offset, len }
            }
        };
        args.push(Arg { index, offset, value });
        offset = value_start + spec.value_bytes;
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_five_rules() {
        assert_eq!(
            parse(&[0xff; 4097], 0).unwrap_err().failure,
            Failure::BufferTooLong { len: 4097, max: 4096 }
        );
        let mut buf = encode(&[Value::U32(1); 128]);
        assert_eq!(parse(&buf, 0).unwrap().len(), 128);
        buf.push(0xff);
        let err = parse(&buf, 0).unwrap_err();
        assert_eq!((err.failure, err.index, err.offset), (Failure::TooManyRecords { max: 128 }, 128, 640));
        assert_eq!(parse(&[0x00], 0).unwrap_err().failure, Failure::UnknownTag { tag: 0 });
        let err = parse(&[0x02, 1, 2], 0).unwrap_err();
        assert_eq!(err.failure, Failure::TruncatedRecord { tag: 2, needed: 8, present: 2 });
        let ptr = encode(&[Value::Ptr { guest_offset: u32::MAX, len: u32::MAX }]);
        let err = parse(&ptr, 1 << 32).unwrap_err();
        assert_eq!(err.failure.code(), -2);
    }

    #[test]
    fn every_value_round_trips_through_the_wire() {
        let values = [
            Value::I32(-7),
            Value::I64(i64::MIN),
            Value::F32(0x7fa0_0001),
            Value::F64(u64::MAX),
            Value::U32(7),
            Value::U64(u64::MAX),
            Value::Ptr { guest_offset: 3, len: 4 },
        ];
        let parsed: Vec<Value> = parse(&encode(&values), 7).unwrap().into_iter().map(|a| a.value).collect();
        assert_eq!(parsed, values);
    }

    fn values(args: Vec<Arg>) -> Vec<Value> {
        args.into_iter().map(|a| a.value).collect()
    }

    #[test]
    fn model_reads_every_type() {
        let buf =
            [0x01, 0xf9, 0xff, 0xff, 0xff, 0x03, 0x00, 0x00, 0xc0, 0x3f, 0x07, 64, 0, 0, 0, 128, 0, 0, 0];
        let got = values(parse_with_capacity(&buf, 192, 128).unwrap());
        assert_eq!(
            got,
            [Value::I32(-7), Value::F32(1.5f32.to_bits()), Value::Ptr { guest_offset: 64, len: 128 }]
        );
    }

    #[test]
    fn model_rules_and_precedence() {
        let err = parse_with_capacity(&[0xff; 4097], 0, 128).unwrap_err();
        assert_eq!((err.failure.code(), err.index, err.offset), (-10, 0, 0));
        let err = parse_with_capacity(&[0x05, 1, 0, 0, 0, 0x05, 1, 0, 0, 0, 0xee], 0, 2).unwrap_err();
        assert_eq!(err, Rejection { failure: Failure::TooManyRecords { max: 2 }, index: 2, offset: 10 });
        let err = parse_with_capacity(&[0x05, 1, 0, 0, 0, 0x02, 1], 0, 128).unwrap_err();
        let failure = Failure::TruncatedRecord { tag: 2, needed: 8, present: 1 };
        assert_eq!(err, Rejection { failure, index: 1, offset: 5 });
        let err = parse_with_capacity(&[0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 1 << 32, 128);
        assert_eq!(err.unwrap_err().failure.code(), -2);
        assert!(parse_with_capacity(&[0x07, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0], 1 << 32, 128).is_ok());
        assert!(parse_with_capacity(&[], 0, 0).is_ok());
    }
}

#[cfg(test)]
mod vectors {
    //! The model against the conformance vectors, read here as plain JSON (not through
    //! `kernel-args-conformance`'s loader), so that the model the conformance tests and the
    //! `differential` fuzz target trust is itself checked against the project's written-out
    //! expectations.
    use super::*;
    use serde_json::Value as Json;

    fn value_of(arg: &Json) -> Value {
        let int = |k: &str| arg[k].as_i64().unwrap_or_else(|| panic!("{k} in {arg}"));
        let uint = |k: &str| arg[k].as_u64().unwrap_or_else(|| panic!("{k} in {arg}"));
        let bits = |arg: &Json| {
            let s = arg["bits"].as_str().unwrap();
            u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
        };
        match arg["type"].as_str().unwrap() {
            "i32" => Value::I32(int("value") as i32),
            "i64" => Value::I64(int("value")),
            "f32" => Value::F32(bits(arg) as u32),
            "f64" => Value::F64(bits(arg)),
            "u32" => Value::U32(uint("value") as u32),
            "u64" => Value::U64(uint("value")),
            "ptr" => Value::Ptr { guest_offset: uint("guest_offset") as u32, len: uint("len") as u32 },
            other => panic!("unknown type {other}"),
        }
    }

    #[test]
    fn model_agrees_with_every_conformance_vector() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/argv.json");
        let doc: Json = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(doc["version"], 1);
        let vectors = doc["vectors"].as_array().unwrap();
        assert!(!vectors.is_empty());
        for v in vectors {
            let name = v["name"].as_str().unwrap();
            let hex: String = v["hex"].as_str().unwrap().split_whitespace().collect();
            let buf: Vec<u8> =
                (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            let got = parse_with_capacity(&buf, v["mem_len"].as_u64().unwrap(), MAX_RECORDS);
            match (&v["expect"]["args"], &v["expect"]["error"], got) {
                (Json::Array(args), Json::Null, Ok(got)) => {
                    let expected: Vec<Value> = args.iter().map(value_of).collect();
                    let got: Vec<Value> = got.into_iter().map(|a| a.value).collect();
                    assert_eq!(got, expected, "{name}");
                    let mut offset = 0;
                    for (i, (arg, value)) in args.iter().zip(&got).enumerate() {
                        assert_eq!(
                            (arg["index"].as_u64(), arg["offset"].as_u64()),
                            (Some(i as u64), Some(offset))
                        );
                        offset += match value {
                            Value::I32(_) | Value::F32(_) | Value::U32(_) => 5,
                            _ => 9,
                        };
                    }
                }
                (Json::Null, error, Err(e)) => {
                    let expected = (
                        error["code"].as_i64().unwrap(),
                        error["kind"].as_str().unwrap(),
                        error["index"].as_u64().unwrap(),
                        error["offset"].as_u64().unwrap(),
                    );
                    let got =
                        (i64::from(e.failure.code()), e.failure.kind(), e.index as u64, e.offset as u64);
                    assert_eq!(got, expected, "{name}");
                }
                (_, _, got) => panic!("{name}: expected {}, model gave {got:?}", v["expect"]),
            }
        }
    }
}
