//! The source of `tests/vectors/argv.json`: every vector, written out by hand.
//!
//! Accepted vectors are lists of typed values; their expected arguments follow from the list
//! (record offsets are the running sum of wire sizes). Rejected vectors state their expected
//! kind, record index and byte offset literally, worked out from the rules, not computed by any
//! parser. The committed JSON is the artifact; the `vectors_file` test fails when it differs
//! from what this module generates, and `UPDATE_VECTORS=1` rewrites it.

use kernel_args_testkit::model::{self, Value};

use crate::vectors::{Expect, ExpectedArg, ExpectedError, ExpectedValue, Vector, VectorFile, to_hex};

/// One 64 KiB wasm page: the memory length of most vectors.
const PAGE: u64 = 65536;
/// The largest wasm32 memory, 4 GiB.
const GIB4: u64 = 1 << 32;

const fn ptr(guest_offset: u32, len: u32) -> Value {
    Value::Ptr { guest_offset, len }
}

/// The hex of `values`, one space between records.
fn records_hex(values: &[Value]) -> String {
    values.iter().map(|v| to_hex(&v.to_wire())).collect::<Vec<_>>().join(" ")
}

/// Raw bytes as hex in groups of 16 bytes.
fn raw_hex(bytes: &[u8]) -> String {
    bytes.chunks(16).map(to_hex).collect::<Vec<_>>().join(" ")
}

/// The arguments `values` decode to, at their running offsets.
fn expected_args(values: &[Value]) -> Vec<ExpectedArg> {
    let mut offset = 0;
    values
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let arg = ExpectedArg { index, offset, value: ExpectedValue::from_value(v) };
            offset += v.to_wire().len();
            arg
        })
        .collect()
}

struct Gen(Vec<Vector>);

impl Gen {
    /// An accepted vector: `values` encoded, decoding to themselves.
    fn ok(&mut self, name: &str, description: &str, mem_len: u64, values: &[Value]) {
        self.0.push(Vector {
            name: name.to_owned(),
            description: description.to_owned(),
            hex: records_hex(values),
            mem_len,
            expect: Expect::Args(expected_args(values)),
        });
    }

    /// A rejected vector with hex `hex` and the error stated literally.
    #[allow(clippy::too_many_arguments)]
    fn err(
        &mut self,
        name: &str,
        description: &str,
        mem_len: u64,
        hex: String,
        kind: &str,
        index: usize,
        offset: usize,
    ) {
        let (code, code_name) = model::abi_for_kind(kind).unwrap_or_else(|| panic!("unknown kind {kind}"));
        self.0.push(Vector {
            name: name.to_owned(),
            description: description.to_owned(),
            hex,
            mem_len,
            expect: Expect::Error(ExpectedError {
                code,
                name: code_name.to_owned(),
                kind: kind.to_owned(),
                index,
                offset,
            }),
        });
    }
}

/// `n` `u32` records holding `0..n`.
fn u32_run(n: u32) -> Vec<Value> {
    (0..n).map(Value::U32).collect()
}

/// `n` records cycling through every type, with pointers inside a 64 KiB memory.
fn mixed_run(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let k = i as u32;
            match i % 7 {
                0 => Value::I32(-(k as i32) * 1000 - 1),
                1 => Value::I64(i64::MIN + i as i64),
                2 => Value::F32((k as f32 * 0.25 - 3.0).to_bits()),
                3 => Value::F64((-(k as f64) / 3.0).to_bits()),
                4 => Value::U32(u32::MAX - k),
                5 => Value::U64(u64::MAX / (i as u64 + 1)),
                _ => ptr(k * 256, 256),
            }
        })
        .collect()
}

/// Every vector, in the order of the file.
pub fn vector_file() -> VectorFile {
    let mut g = Gen(Vec::new());
    accepted(&mut g);
    caps(&mut g);
    unknown_tags(&mut g);
    truncation(&mut g);
    windows(&mut g);
    precedence(&mut g);
    VectorFile {
        version: 1,
        description: "Conformance vectors for the wasi-cuda kernel-argument (argv) wire format; \
                      see tests/vectors/README.md for the schema and docs/wire-format.md for the rules."
            .to_owned(),
        vectors: g.0,
    }
}

fn accepted(g: &mut Gen) {
    g.ok("empty_buffer", "An empty buffer is a valid argv with no arguments.", PAGE, &[]);
    g.ok(
        "one_of_each_type",
        "One record of every tag, 0x01 to 0x07, in tag order.",
        PAGE,
        &[
            Value::I32(-7),
            Value::I64(-7),
            Value::F32(1.5f32.to_bits()),
            Value::F64(1.5f64.to_bits()),
            Value::U32(42),
            Value::U64(42),
            ptr(64, 128),
        ],
    );
    g.ok(
        "i32_extremes",
        "i32 minimum, maximum, -1 and 0: little-endian two's complement.",
        PAGE,
        &[Value::I32(i32::MIN), Value::I32(i32::MAX), Value::I32(-1), Value::I32(0)],
    );
    g.ok(
        "i64_extremes",
        "i64 minimum, maximum, -1 and 0; JSON integers must hold them exactly.",
        PAGE,
        &[Value::I64(i64::MIN), Value::I64(i64::MAX), Value::I64(-1), Value::I64(0)],
    );
    g.ok(
        "u32_extremes",
        "u32 0, maximum, and 0x80000000 (not negative).",
        PAGE,
        &[Value::U32(0), Value::U32(u32::MAX), Value::U32(0x8000_0000)],
    );
    g.ok(
        "u64_extremes",
        "u64 0, maximum, 2^63 and 2^53 + 1 (not exact as a double): JSON integers must hold them exactly.",
        PAGE,
        &[Value::U64(0), Value::U64(u64::MAX), Value::U64(1 << 63), Value::U64((1 << 53) + 1)],
    );
    g.ok(
        "f32_special_values",
        "f32 +0, -0, +inf, -inf, the smallest subnormal, the largest finite, 1.0: compared by raw bits.",
        PAGE,
        &[
            Value::F32(0x0000_0000),
            Value::F32(0x8000_0000),
            Value::F32(0x7f80_0000),
            Value::F32(0xff80_0000),
            Value::F32(0x0000_0001),
            Value::F32(0x7f7f_ffff),
            Value::F32(0x3f80_0000),
        ],
    );
    g.ok(
        "f32_nan_payloads",
        "f32 NaNs keep their bits: quiet, quiet with payload 1, signalling (payload 1 and 0x200000), \
         negative quiet, negative signalling with the largest payload, all-ones.",
        PAGE,
        &[
            Value::F32(0x7fc0_0000),
            Value::F32(0x7fc0_0001),
            Value::F32(0x7f80_0001),
            Value::F32(0x7fa0_0000),
            Value::F32(0xffc0_0000),
            Value::F32(0xffbf_ffff),
            Value::F32(0xffff_ffff),
        ],
    );
    g.ok(
        "f64_special_values",
        "f64 +0, -0, +inf, -inf, the smallest subnormal, the largest finite, 1.0: compared by raw bits.",
        PAGE,
        &[
            Value::F64(0),
            Value::F64(0x8000_0000_0000_0000),
            Value::F64(0x7ff0_0000_0000_0000),
            Value::F64(0xfff0_0000_0000_0000),
            Value::F64(1),
            Value::F64(0x7fef_ffff_ffff_ffff),
            Value::F64(0x3ff0_0000_0000_0000),
        ],
    );
    g.ok(
        "f64_nan_payloads",
        "f64 NaNs keep their bits: quiet, quiet with payload 1, signalling (payload 1 and 2^50), \
         negative quiet, negative signalling with the largest payload, all-ones.",
        PAGE,
        &[
            Value::F64(0x7ff8_0000_0000_0000),
            Value::F64(0x7ff8_0000_0000_0001),
            Value::F64(0x7ff0_0000_0000_0001),
            Value::F64(0x7ff4_0000_0000_0000),
            Value::F64(0xfff8_0000_0000_0000),
            Value::F64(0xfff7_ffff_ffff_ffff),
            Value::F64(u64::MAX),
        ],
    );
    g.ok(
        "scalars_need_no_memory",
        "Only pointer windows are checked against memory: scalars are accepted with mem_len 0.",
        0,
        &[Value::I32(1), Value::U64(2), Value::F32(0x4040_0000)],
    );
    g.ok(
        "long_valid_mix",
        "Sixty records cycling through all seven types, pointers inside one 64 KiB page.",
        PAGE,
        &mixed_run(60),
    );
    g.ok(
        "long_valid_mix_at_record_cap",
        "128 records cycling through all seven types: at the record cap, accepted.",
        PAGE,
        &mixed_run(128),
    );
    g.ok(
        "largest_valid_buffer",
        "128 nine-byte records (1152 bytes) is the longest buffer that can be accepted.",
        PAGE,
        &(0..128u64).map(|i| if i % 2 == 0 { Value::U64(i) } else { ptr(i as u32, 1) }).collect::<Vec<_>>(),
    );
}

fn caps(g: &mut Gen) {
    g.ok("records_at_cap_128", "Exactly 128 records: accepted.", PAGE, &u32_run(128));
    g.err(
        "records_past_cap_129",
        "129 valid records: the 129th (index 128, byte 640) starts past the cap.",
        PAGE,
        records_hex(&u32_run(129)),
        "too_many_records",
        128,
        640,
    );
    g.err(
        "bytes_at_cap_4096_unknown_tag",
        "4096 bytes is not over the byte cap, so the records are read: 0xff at byte 0 is an unknown tag.",
        PAGE,
        raw_hex(&[0xff; 4096]),
        "unknown_tag",
        0,
        0,
    );
    let mut at_cap = model::encode(&vec![Value::U64(7); 128]);
    at_cap.resize(4096, 0);
    g.err(
        "bytes_at_cap_4096_too_many_records",
        "4096 bytes: 128 u64 records (1152 bytes), then zeros; the byte cap is not exceeded, \
         the record at byte 1152 is past the record cap.",
        PAGE,
        raw_hex(&at_cap),
        "too_many_records",
        128,
        1152,
    );
    g.err(
        "bytes_past_cap_4097_zeros",
        "4097 zero bytes: over the byte cap, refused before any byte is read (not an unknown tag 0x00).",
        PAGE,
        raw_hex(&[0x00; 4097]),
        "buffer_too_long",
        0,
        0,
    );
    g.err(
        "bytes_past_cap_4097_ff",
        "4097 bytes of 0xff: over the byte cap, index 0 and offset 0.",
        PAGE,
        raw_hex(&[0xff; 4097]),
        "buffer_too_long",
        0,
        0,
    );
}

fn unknown_tags(g: &mut Gen) {
    g.err("unknown_tag_0x00", "0x00 is not a tag (no zero padding).", PAGE, "00".into(), "unknown_tag", 0, 0);
    g.err(
        "unknown_tag_0x08",
        "0x08, the first byte after the last tag, alone: an unknown tag, not a truncated record.",
        PAGE,
        "08".into(),
        "unknown_tag",
        0,
        0,
    );
    g.err(
        "unknown_tag_0xff",
        "0xff with four bytes after it: still an unknown tag.",
        PAGE,
        "ff 00000000".into(),
        "unknown_tag",
        0,
        0,
    );
    g.err(
        "unknown_tag_0x80_after_records",
        "An i32 (5 bytes) and a u64 (9 bytes), then 0x80 at byte 14: record 2.",
        PAGE,
        format!("{} 80", records_hex(&[Value::I32(1), Value::U64(2)])),
        "unknown_tag",
        2,
        14,
    );
    g.err(
        "trailing_zero_byte",
        "Valid records followed by one 0x00: there is no padding, so it is an unknown tag at record 3.",
        PAGE,
        format!("{} 00", records_hex(&[Value::U32(1), Value::U32(2), Value::U32(3)])),
        "unknown_tag",
        3,
        15,
    );
    g.err(
        "unknown_tag_at_record_127",
        "127 valid records, then 0xff at record 127: below the cap, so an unknown tag.",
        PAGE,
        format!("{} ff", records_hex(&u32_run(127))),
        "unknown_tag",
        127,
        635,
    );
}

fn truncation(g: &mut Gen) {
    // (tag, value bytes present, record index of the cut record after a one-u32 prefix)
    let cuts: [(&str, &str, u8, usize); 7] = [
        ("truncated_i32", "an i32 with 3 of its 4 value bytes", 0x01, 3),
        ("truncated_i64", "an i64 with none of its 8 value bytes", 0x02, 0),
        ("truncated_f32", "an f32 with 2 of its 4 value bytes", 0x03, 2),
        ("truncated_f64", "an f64 with 7 of its 8 value bytes", 0x04, 7),
        ("truncated_u32", "a u32 with 1 of its 4 value bytes", 0x05, 1),
        ("truncated_u64", "a u64 with 4 of its 8 value bytes", 0x06, 4),
        ("truncated_ptr", "a ptr with its offset and 3 of its 4 length bytes", 0x07, 7),
    ];
    for (name, what, tag, present) in cuts {
        let value: Vec<u8> = (1..=present as u8).collect();
        g.err(
            name,
            &format!("A u32, then {what}: truncated record 1 at byte 5."),
            PAGE,
            format!("{} {:02x}{}", records_hex(&[Value::U32(9)]), tag, to_hex(&value)),
            "truncated_record",
            1,
            5,
        );
    }
    g.err(
        "truncated_ptr_tag_only",
        "A lone ptr tag: truncated at record 0.",
        PAGE,
        "07".into(),
        "truncated_record",
        0,
        0,
    );
    g.err(
        "trailing_partial_record",
        "There is no other trailing-bytes rule: a valid argv and one more byte 0x05 is a truncated u32.",
        PAGE,
        format!("{} 05", records_hex(&[Value::I32(-1), ptr(0, 4)])),
        "truncated_record",
        2,
        14,
    );
}

fn windows(g: &mut Gen) {
    g.ok(
        "window_ends_at_memory_end",
        "[60, 100) in 100 bytes: ends exactly at the end.",
        100,
        &[ptr(60, 40)],
    );
    g.err(
        "window_one_byte_past_end",
        "[60, 101) in 100 bytes: one byte past the end.",
        100,
        records_hex(&[ptr(60, 41)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.ok(
        "zero_length_window_at_end",
        "A zero-length window at offset == mem_len is inside.",
        100,
        &[ptr(100, 0)],
    );
    g.err(
        "zero_length_window_past_end",
        "A zero-length window at mem_len + 1 is outside.",
        100,
        records_hex(&[ptr(101, 0)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.ok(
        "mem_len_0_zero_length_window",
        "In an empty memory, [0, 0) is the one window inside.",
        0,
        &[ptr(0, 0)],
    );
    g.err(
        "mem_len_0_one_byte_window",
        "In an empty memory, [0, 1) is outside.",
        0,
        records_hex(&[ptr(0, 1)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.err(
        "mem_len_0_zero_length_past_end",
        "In an empty memory, a zero-length window at offset 1 is outside.",
        0,
        records_hex(&[ptr(1, 0)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.ok("window_whole_page", "[0, 65536) covers a 64 KiB memory exactly.", PAGE, &[ptr(0, 65536)]);
    g.err(
        "window_past_default_page",
        "[65536, 65537) is one byte past a 64 KiB memory.",
        PAGE,
        records_hex(&[ptr(65536, 1)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.ok(
        "mem_len_4gib_windows_at_the_top",
        "In a 4 GiB memory: the last byte, a zero-length window at the largest offset, \
         [1, 2^32) ending exactly at the end, and [0, 2^32 - 1).",
        GIB4,
        &[ptr(u32::MAX, 1), ptr(u32::MAX, 0), ptr(1, u32::MAX), ptr(0, u32::MAX)],
    );
    g.err(
        "offset_plus_len_beyond_u32_max",
        "offset 2^32 - 1 and length 2^32 - 1 end at 2^33 - 2: beyond u32 and beyond even a 4 GiB memory.",
        GIB4,
        records_hex(&[ptr(u32::MAX, u32::MAX)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.err(
        "offset_plus_len_one_past_4gib",
        "[2, 2^32 + 1): one byte past a 4 GiB memory.",
        GIB4,
        records_hex(&[ptr(2, u32::MAX)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.err(
        "offset_plus_len_wraps_in_32_bits",
        "[0xffffff00, +0x200) wraps to 0x100 in 32-bit arithmetic, which would fit 64 KiB; \
         the true end is past it.",
        PAGE,
        records_hex(&[ptr(0xffff_ff00, 0x200)]),
        "window_out_of_bounds",
        0,
        0,
    );
    g.err(
        "bad_window_after_scalars",
        "Two scalars, then a window past the end at record 2, byte 10.",
        PAGE,
        records_hex(&[Value::U32(1), Value::F32(0), ptr(65000, 1000)]),
        "window_out_of_bounds",
        2,
        10,
    );
}

fn precedence(g: &mut Gen) {
    let cap = records_hex(&u32_run(128));
    g.err(
        "too_many_records_beats_unknown_tag",
        "128 records, then an unknown tag 0xff at record 128: the cap is checked first.",
        PAGE,
        format!("{cap} ff"),
        "too_many_records",
        128,
        640,
    );
    g.err(
        "too_many_records_beats_truncation",
        "128 records, then a truncated i64 at record 128: the cap is checked first.",
        PAGE,
        format!("{cap} 020102"),
        "too_many_records",
        128,
        640,
    );
    g.err(
        "too_many_records_beats_bad_window",
        "128 records, then a window past the end at record 128: the cap is checked first.",
        PAGE,
        format!("{cap} {}", records_hex(&[ptr(u32::MAX, u32::MAX)])),
        "too_many_records",
        128,
        640,
    );
    let mut long = model::encode(&u32_run(129));
    long.resize(4097, 0xff);
    g.err(
        "buffer_too_long_beats_everything",
        "129 records then 0xff up to 4097 bytes: over the byte cap beats the record cap and the unknown tag.",
        PAGE,
        raw_hex(&long),
        "buffer_too_long",
        0,
        0,
    );
    g.err(
        "unknown_tag_beats_truncation",
        "0x09 followed by nothing: the tag is unknown before any length can be needed.",
        PAGE,
        "09".into(),
        "unknown_tag",
        0,
        0,
    );
    g.err(
        "truncation_beats_window_check",
        "A ptr whose offset 0xffffffff is out of bounds, but whose length is cut short: truncated, not -2.",
        0,
        "07 ffffffff 0100".into(),
        "truncated_record",
        0,
        0,
    );
    g.err(
        "first_offending_record_wins_window_then_tag",
        "A window past the end at record 1, then an unknown tag at record 2: record 1 decides.",
        16,
        format!("{} ee", records_hex(&[Value::I32(0), ptr(8, 9)])),
        "window_out_of_bounds",
        1,
        5,
    );
    g.err(
        "first_offending_record_wins_tag_then_window",
        "An unknown tag at record 1 hides a bad window after it: record 1 decides.",
        16,
        format!("{} 00 {}", records_hex(&[Value::I32(0)]), records_hex(&[ptr(8, 9)])),
        "unknown_tag",
        1,
        5,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_args_follow_the_wire_sizes() {
        let args = expected_args(&[Value::I32(1), ptr(0, 0), Value::U32(2)]);
        let at: Vec<_> = args.iter().map(|a| (a.index, a.offset)).collect();
        assert_eq!(at, [(0, 0), (1, 5), (2, 14)]);
    }
}
