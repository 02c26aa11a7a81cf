//! Random buffers through `kernel-args-core` and the specification model: the same arguments
//! (record index, offset, value, float bits, window) or the same error, detail included.
//!
//! Uniformly random bytes are almost always an unknown tag at byte 0, so most cases are built
//! from valid records (with random values and windows near the memory's end), then damaged:
//! a byte overwritten, the tail cut, junk appended, or the record count pushed past the cap.

mod common;

use common::core_rejection;
use kernel_args_core::{GuestMemory, ParsedArgv, RecordReader, encode_argv, parse_argv};
use kernel_args_testkit::model::{self, Value};
use proptest::prelude::*;

fn core_parse(buf: &[u8], mem_len: u64) -> Result<Vec<model::Arg>, model::Rejection> {
    let memory = GuestMemory::length_only(mem_len);
    let reader = RecordReader::new(buf, &memory).map_err(|e| core_rejection(&e))?;
    reader
        .map(|r| {
            r.map(|r| model::Arg { index: r.index, offset: r.offset, value: Value::from(r.arg.snapshot()) })
                .map_err(|e| core_rejection(&e))
        })
        .collect()
}

/// A random value; with `in_bounds`, every window lies inside a memory of `mem_len` bytes.
fn value(mem_len: u64, in_bounds: bool) -> BoxedStrategy<Value> {
    let top = u32::try_from(mem_len).unwrap_or(u32::MAX);
    let scalars = prop_oneof![
        any::<i32>().prop_map(Value::I32),
        any::<i64>().prop_map(Value::I64),
        any::<u32>().prop_map(Value::F32),
        any::<u64>().prop_map(Value::F64),
        any::<u32>().prop_map(Value::U32),
        any::<u64>().prop_map(Value::U64),
    ];
    // A window inside: any start up to the end, any length up to the end (the last byte and
    // the zero-length window at the end included).
    let inside = (0..=top).prop_flat_map(move |guest_offset| {
        let room = u32::try_from(mem_len - u64::from(guest_offset)).unwrap_or(u32::MAX);
        prop_oneof![Just(room), Just(0), 0..=room].prop_map(move |len| Value::Ptr { guest_offset, len })
    });
    if in_bounds {
        prop_oneof![3 => scalars, 1 => inside].boxed()
    } else {
        // Windows ending a few bytes either side of the memory's end, or anywhere at all.
        let near_end = (0u32..8, 0u32..8).prop_map(move |(back, len)| Value::Ptr {
            guest_offset: u32::try_from(mem_len.saturating_sub(u64::from(back))).unwrap_or(u32::MAX),
            len,
        });
        let anywhere =
            (any::<u32>(), any::<u32>()).prop_map(|(guest_offset, len)| Value::Ptr { guest_offset, len });
        prop_oneof![6 => scalars, 2 => inside, 1 => near_end, 1 => anywhere].boxed()
    }
}

fn mem_len() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), Just(1), Just(65536), Just(1 << 32), 0u64..=(1 << 32)]
}

/// Valid records, then a damage.
fn buffer() -> impl Strategy<Value = (Vec<u8>, u64)> {
    (mem_len(), any::<bool>()).prop_flat_map(|(mem, in_bounds)| {
        (
            prop::collection::vec(value(mem, in_bounds), 0..140),
            0usize..5,
            any::<prop::sample::Index>(),
            any::<u8>(),
            prop::collection::vec(any::<u8>(), 0..12),
        )
            .prop_map(move |(values, damage, at, byte, junk)| {
                let mut buf = model::encode(&values);
                match damage {
                    0 => {}
                    1 if !buf.is_empty() => {
                        let i = at.index(buf.len());
                        buf[i] = byte;
                    }
                    2 if !buf.is_empty() => buf.truncate(at.index(buf.len())),
                    3 => buf.extend_from_slice(&junk),
                    _ => {
                        // Past the byte cap, sometimes by exactly one byte.
                        let target = if byte % 2 == 0 { 4097 } else { 4096 + usize::from(byte) };
                        buf.resize(target.max(buf.len()), junk.first().copied().unwrap_or(0));
                    }
                }
                (buf, mem)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn structured_buffers_match_the_model((buf, mem) in buffer()) {
        prop_assert_eq!(core_parse(&buf, mem), model::parse(&buf, mem));
    }

    #[test]
    fn valid_records_are_accepted_by_both(
        (values, mem) in mem_len().prop_flat_map(|mem| (prop::collection::vec(value(mem, true), 0..=128), Just(mem)))
    ) {
        let buf = model::encode(&values);
        let parsed = core_parse(&buf, mem).map(|args| args.into_iter().map(|a| a.value).collect::<Vec<_>>());
        prop_assert_eq!(parsed, Ok(values));
    }

    #[test]
    fn random_bytes_match_the_model(buf in prop::collection::vec(any::<u8>(), 0..64), mem in mem_len()) {
        prop_assert_eq!(core_parse(&buf, mem), model::parse(&buf, mem));
    }

    #[test]
    fn random_tag_bytes_match_the_model(
        tags in prop::collection::vec(0u8..=9, 0..400),
        mem in mem_len(),
    ) {
        // Mostly small bytes: many records start, some valid, some truncated or unknown.
        prop_assert_eq!(core_parse(&tags, mem), model::parse(&tags, mem));
    }

    #[test]
    fn accepted_buffers_encode_back_to_the_same_bytes((buf, mem) in buffer()) {
        let memory = GuestMemory::length_only(mem);
        let parsed: Result<ParsedArgv, _> = parse_argv(&buf, &memory);
        if let Ok(args) = parsed {
            let mut out = [0u8; 4096];
            let n = encode_argv(&args, &mut out).unwrap();
            prop_assert_eq!(&out[..n], &buf[..]);
        }
    }
}
