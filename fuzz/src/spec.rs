//! An independent, plainly written model of the argv specification, for the `differential`
//! target.
//!
//! It shares nothing with `kernel-args-core` but the numbers the specification states: its own
//! tag table, its own byte reading and its own window arithmetic (in `u128`). It is written to
//! be read against `docs/wire-format.md` and the issue text, not to be fast:
//!
//! 1. a buffer longer than 4096 bytes is refused before any byte is read (`-10`);
//! 2. records are read in order; a record that starts when the record cap is already reached is
//!    refused (`-10`); the cap is 128, or the host's smaller output capacity;
//! 3. an unknown tag byte: `-9`;
//! 4. fewer value bytes left than the tag needs: `-9`;
//! 5. a pointer window `[offset, offset + len)` that does not lie inside guest memory: `-2`.
//!
//! Every error names the record's index and the byte at which the record starts (both 0 for
//! rule 1).

/// The record cap the specification states.
pub const SPEC_MAX_RECORDS: usize = 128;
/// The byte cap the specification states.
pub const SPEC_MAX_BYTES: usize = 4096;

/// The specification's tag table: tag byte, type name, value bytes after the tag.
pub const SPEC_TAGS: [(u8, &str, usize); 7] = [
    (0x01, "i32", 4),
    (0x02, "i64", 8),
    (0x03, "f32", 4),
    (0x04, "f64", 8),
    (0x05, "u32", 4),
    (0x06, "u64", 8),
    (0x07, "ptr", 8),
];

/// One argument as the model reads it. Floats are raw bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecValue {
    /// Tag 0x01.
    I32(i32),
    /// Tag 0x02.
    I64(i64),
    /// Tag 0x03, raw bits.
    F32(u32),
    /// Tag 0x04, raw bits.
    F64(u64),
    /// Tag 0x05.
    U32(u32),
    /// Tag 0x06.
    U64(u64),
    /// Tag 0x07: a window in guest memory.
    Ptr {
        /// Start of the window.
        offset: u32,
        /// Length of the window.
        len: u32,
    },
}

/// Why the model refused a buffer, with the details the core's error kinds carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecKind {
    /// Rule 1.
    BufferTooLong {
        /// The buffer's length.
        len: usize,
        /// The byte cap.
        max: usize,
    },
    /// Rule 2.
    TooManyRecords {
        /// The record cap in force.
        max: usize,
    },
    /// Rule 3.
    UnknownTag {
        /// The tag byte.
        tag: u8,
    },
    /// Rule 4.
    TruncatedRecord {
        /// The (known) tag byte.
        tag: u8,
        /// Value bytes the tag needs.
        needed: usize,
        /// Value bytes left after the tag byte.
        present: usize,
    },
    /// Rule 5.
    WindowOutOfBounds {
        /// Start of the window.
        offset: u32,
        /// Length of the window.
        len: u32,
        /// Length of guest memory.
        memory_len: u64,
    },
}

impl SpecKind {
    /// The ABI code the specification assigns.
    pub fn code(&self) -> i32 {
        match self {
            SpecKind::BufferTooLong { .. } => -10,
            SpecKind::TooManyRecords { .. } => -10,
            SpecKind::UnknownTag { .. } => -9,
            SpecKind::TruncatedRecord { .. } => -9,
            SpecKind::WindowOutOfBounds { .. } => -2,
        }
    }

    /// The kind's name in the conformance vectors.
    pub fn name(&self) -> &'static str {
        match self {
            SpecKind::BufferTooLong { .. } => "buffer_too_long",
            SpecKind::TooManyRecords { .. } => "too_many_records",
            SpecKind::UnknownTag { .. } => "unknown_tag",
            SpecKind::TruncatedRecord { .. } => "truncated_record",
            SpecKind::WindowOutOfBounds { .. } => "window_out_of_bounds",
        }
    }
}

/// A refusal: what, and which record (index, starting byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecError {
    /// What was wrong.
    pub kind: SpecKind,
    /// The record's 0-based index.
    pub index: usize,
    /// The byte at which the record starts.
    pub offset: usize,
}

fn le_u32(bytes: &[u8]) -> u32 {
    let mut v: u32 = 0;
    for (i, b) in bytes.iter().take(4).enumerate() {
        v |= (*b as u32) << (8 * i);
    }
    v
}

fn le_u64(bytes: &[u8]) -> u64 {
    let mut v: u64 = 0;
    for (i, b) in bytes.iter().take(8).enumerate() {
        v |= (*b as u64) << (8 * i);
    }
    v
}

/// Parses `buf` by the specification against a guest memory of `memory_len` bytes, with an
/// output capacity of `capacity` records.
pub fn spec_parse(buf: &[u8], memory_len: u64, capacity: usize) -> Result<Vec<SpecValue>, SpecError> {
    if buf.len() > SPEC_MAX_BYTES {
        let kind = SpecKind::BufferTooLong { len: buf.len(), max: SPEC_MAX_BYTES };
        return Err(SpecError { kind, index: 0, offset: 0 });
    }
    let max_records = if capacity < SPEC_MAX_RECORDS { capacity } else { SPEC_MAX_RECORDS };
    let mut values = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let index = values.len();
        let fail = |kind| Err(SpecError { kind, index, offset: pos });
        if index == max_records {
            return fail(SpecKind::TooManyRecords { max: max_records });
        }
        let tag = buf[pos];
        let Some(&(_, _, size)) = SPEC_TAGS.iter().find(|(t, _, _)| *t == tag) else {
            return fail(SpecKind::UnknownTag { tag });
        };
        let value = &buf[pos + 1..];
        if value.len() < size {
            return fail(SpecKind::TruncatedRecord { tag, needed: size, present: value.len() });
        }
        let value = &value[..size];
        values.push(match tag {
            0x01 => SpecValue::I32(le_u32(value) as i32),
            0x02 => SpecValue::I64(le_u64(value) as i64),
            0x03 => SpecValue::F32(le_u32(value)),
            0x04 => SpecValue::F64(le_u64(value)),
            0x05 => SpecValue::U32(le_u32(value)),
            0x06 => SpecValue::U64(le_u64(value)),
            _ => {
                let offset = le_u32(&value[..4]);
                let len = le_u32(&value[4..]);
                if offset as u128 + len as u128 > memory_len as u128 {
                    return fail(SpecKind::WindowOutOfBounds { offset, len, memory_len });
                }
                SpecValue::Ptr { offset, len }
            }
        });
        pos += 1 + size;
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_reads_every_type() {
        let buf =
            [0x01, 0xf9, 0xff, 0xff, 0xff, 0x03, 0x00, 0x00, 0xc0, 0x3f, 0x07, 64, 0, 0, 0, 128, 0, 0, 0];
        let got = spec_parse(&buf, 192, 128).unwrap();
        assert_eq!(
            got,
            [SpecValue::I32(-7), SpecValue::F32(1.5f32.to_bits()), SpecValue::Ptr { offset: 64, len: 128 }]
        );
    }

    #[test]
    fn model_rules_and_precedence() {
        let err = spec_parse(&[0xff; 4097], 0, 128).unwrap_err();
        assert_eq!((err.kind.code(), err.index, err.offset), (-10, 0, 0));
        let err = spec_parse(&[0x05, 1, 0, 0, 0, 0x05, 1, 0, 0, 0, 0xee], 0, 2).unwrap_err();
        assert_eq!(err, SpecError { kind: SpecKind::TooManyRecords { max: 2 }, index: 2, offset: 10 });
        let err = spec_parse(&[0x05, 1, 0, 0, 0, 0x02, 1], 0, 128).unwrap_err();
        let kind = SpecKind::TruncatedRecord { tag: 2, needed: 8, present: 1 };
        assert_eq!(err, SpecError { kind, index: 1, offset: 5 });
        let err = spec_parse(&[0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 1 << 32, 128);
        assert_eq!(err.unwrap_err().kind.code(), -2);
        assert!(spec_parse(&[0x07, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0], 1 << 32, 128).is_ok());
        assert!(spec_parse(&[], 0, 0).is_ok());
    }
}

#[cfg(test)]
mod vectors {
    //! The model against the conformance vectors, so that the model the `differential` target
    //! trusts is itself checked against the project's written-out expectations.
    use super::*;
    use serde_json::Value;

    fn value_of(arg: &Value) -> SpecValue {
        let int = |k: &str| arg[k].as_i64().unwrap_or_else(|| panic!("{k} in {arg}"));
        let uint = |k: &str| arg[k].as_u64().unwrap_or_else(|| panic!("{k} in {arg}"));
        let bits = |arg: &Value| {
            let s = arg["bits"].as_str().unwrap();
            u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
        };
        match arg["type"].as_str().unwrap() {
            "i32" => SpecValue::I32(int("value") as i32),
            "i64" => SpecValue::I64(int("value")),
            "f32" => SpecValue::F32(bits(arg) as u32),
            "f64" => SpecValue::F64(bits(arg)),
            "u32" => SpecValue::U32(uint("value") as u32),
            "u64" => SpecValue::U64(uint("value")),
            "ptr" => SpecValue::Ptr { offset: uint("guest_offset") as u32, len: uint("len") as u32 },
            other => panic!("unknown type {other}"),
        }
    }

    #[test]
    fn model_agrees_with_every_conformance_vector() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/argv.json");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(doc["version"], 1);
        let vectors = doc["vectors"].as_array().unwrap();
        assert!(!vectors.is_empty());
        for v in vectors {
            let name = v["name"].as_str().unwrap();
            let hex: String = v["hex"].as_str().unwrap().split_whitespace().collect();
            let buf: Vec<u8> =
                (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            let got = spec_parse(&buf, v["mem_len"].as_u64().unwrap(), SPEC_MAX_RECORDS);
            match (&v["expect"]["args"], &v["expect"]["error"], got) {
                (Value::Array(args), Value::Null, Ok(values)) => {
                    let expected: Vec<SpecValue> = args.iter().map(value_of).collect();
                    assert_eq!(values, expected, "{name}");
                    let mut offset = 0;
                    for (i, (arg, value)) in args.iter().zip(&values).enumerate() {
                        assert_eq!(
                            (arg["index"].as_u64(), arg["offset"].as_u64()),
                            (Some(i as u64), Some(offset))
                        );
                        offset += match value {
                            SpecValue::I32(_) | SpecValue::F32(_) | SpecValue::U32(_) => 5,
                            _ => 9,
                        };
                    }
                }
                (Value::Null, error, Err(e)) => {
                    let expected = (
                        error["code"].as_i64().unwrap(),
                        error["kind"].as_str().unwrap(),
                        error["index"].as_u64().unwrap(),
                        error["offset"].as_u64().unwrap(),
                    );
                    let got = (i64::from(e.kind.code()), e.kind.name(), e.index as u64, e.offset as u64);
                    assert_eq!(got, expected, "{name}");
                }
                (_, _, got) => panic!("{name}: expected {}, model gave {got:?}", v["expect"]),
            }
        }
    }
}
