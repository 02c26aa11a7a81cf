//! Round trips through the encoder and the parser.
//!
//! - encode → parse gives back the same arguments (floats compared by their bits, NaN
//!   payloads included), through [`encode_argv`] and through the [`ArgvBuilder`];
//! - for every buffer the parser accepts, parse → encode gives back the same bytes;
//! - the encoder refuses exactly what the parser would refuse for its shape (the caps).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    missing_docs
)]

use kernel_args_core::{
    Arg, ArgvBuilder, EncodeError, F32Bits, F64Bits, GuestMemory, GuestRange, LoweredArgSnapshot,
    MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES, ParsedArgv, encode_argv, encoded_len, parse_argv,
};
use proptest::prelude::*;

/// The largest memory a wasm32 guest can have: every window fits a 4 GiB memory as long as
/// its end does not pass 2^32.
const MEM: u64 = 1 << 32;

fn arg() -> impl Strategy<Value = LoweredArgSnapshot> {
    prop_oneof![
        any::<i32>().prop_map(Arg::I32),
        any::<i64>().prop_map(Arg::I64),
        any::<u32>().prop_map(|b| Arg::F32(F32Bits(b))),
        any::<u64>().prop_map(|b| Arg::F64(F64Bits(b))),
        any::<u32>().prop_map(Arg::U32),
        any::<u64>().prop_map(Arg::U64),
        any::<u32>().prop_flat_map(|guest_offset| {
            (0..=u32::MAX - guest_offset).prop_map(move |len| Arg::Ptr(GuestRange { guest_offset, len }))
        }),
    ]
}

fn parse_snapshots(buf: &[u8], memory: &GuestMemory<'_>) -> Vec<LoweredArgSnapshot> {
    let args: ParsedArgv = parse_argv(buf, memory).unwrap();
    args.iter().map(LoweredArgSnapshot::from).collect()
}

fn build(args: &[LoweredArgSnapshot], out: &mut [u8]) -> Result<usize, EncodeError> {
    let mut builder = ArgvBuilder::new(out);
    for a in args {
        match *a {
            Arg::I32(v) => builder.i32(v)?,
            Arg::I64(v) => builder.i64(v)?,
            Arg::F32(v) => builder.f32_bits(v)?,
            Arg::F64(v) => builder.f64_bits(v)?,
            Arg::U32(v) => builder.u32(v)?,
            Arg::U64(v) => builder.u64(v)?,
            Arg::Ptr(r) => builder.ptr(r.guest_offset, r.len)?,
        };
    }
    Ok(builder.len())
}

/// 1024 cases natively. Under Miri, which runs each case thousands of times slower and
/// isolates the file system, a few cases and no failure file (proptest writes one next to the
/// source, which needs `getcwd`).
fn config() -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() }
    } else {
        ProptestConfig::with_cases(1024)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn encode_then_parse_gives_the_same_arguments(args in prop::collection::vec(arg(), 0..=MAX_KERNEL_ARGS)) {
        let memory = GuestMemory::length_only(MEM);
        let mut out = [0u8; MAX_KERNEL_ARGS_BYTES];
        let n = encode_argv(&args, &mut out).unwrap();
        prop_assert_eq!(n, encoded_len(&args));
        prop_assert_eq!(parse_snapshots(&out[..n], &memory), args.clone());

        // The typed builder writes the same bytes.
        let mut built = [0u8; MAX_KERNEL_ARGS_BYTES];
        let m = build(&args, &mut built).unwrap();
        prop_assert_eq!(&built[..m], &out[..n]);
    }

    #[test]
    fn floats_survive_bit_for_bit(f in any::<u32>(), d in any::<u64>()) {
        let args = [Arg::F32(F32Bits(f)), Arg::F64(F64Bits(d))];
        let mut out = [0u8; 14];
        let n = encode_argv::<GuestRange>(&args, &mut out).unwrap();
        let got = parse_snapshots(&out[..n], &GuestMemory::length_only(0));
        prop_assert_eq!(got, args.to_vec());
    }

    #[test]
    fn accepted_buffers_encode_back_to_the_same_bytes(
        buf in prop::collection::vec(prop_oneof![4 => 1u8..=7, 1 => any::<u8>()], 0..600),
        mem in prop_oneof![Just(0u64), Just(65536), Just(MEM), any::<u32>().prop_map(u64::from)],
    ) {
        let memory = GuestMemory::length_only(mem);
        let parsed: Result<ParsedArgv, _> = parse_argv(&buf, &memory);
        if let Ok(args) = parsed {
            let mut out = [0u8; MAX_KERNEL_ARGS_BYTES];
            let n = encode_argv(&args, &mut out).unwrap();
            prop_assert_eq!(&out[..n], &buf[..]);
        }
    }

    #[test]
    fn a_short_output_buffer_is_refused_at_the_first_record_that_does_not_fit(
        args in prop::collection::vec(arg(), 1..20),
        cut in any::<prop::sample::Index>(),
    ) {
        let total = encoded_len(&args);
        let available = cut.index(total);
        let mut out = vec![0u8; available];
        let err = encode_argv(&args, &mut out).unwrap_err();
        let EncodeError::BufferTooSmall { index, needed, available: a } = err else {
            panic!("{err:?}");
        };
        prop_assert_eq!(a, available);
        prop_assert_eq!(needed, encoded_len(&args[..=index]));
        prop_assert!(encoded_len(&args[..index]) <= available && available < needed);
    }
}

#[test]
fn the_encoder_stops_at_the_record_cap() {
    let args = [LoweredArgSnapshot::U32(0); MAX_KERNEL_ARGS + 1];
    let mut out = [0u8; MAX_KERNEL_ARGS_BYTES];
    let err = encode_argv(&args, &mut out).unwrap_err();
    assert_eq!(err, EncodeError::TooManyArgs { index: MAX_KERNEL_ARGS, max: MAX_KERNEL_ARGS });
    let n = encode_argv(&args[..MAX_KERNEL_ARGS], &mut out).unwrap();
    let memory = GuestMemory::length_only(0);
    assert_eq!(parse_snapshots(&out[..n], &memory).len(), MAX_KERNEL_ARGS);
}

#[test]
fn the_builder_refuses_without_writing() {
    let mut out = [0xaau8; 7];
    let mut builder = ArgvBuilder::new(&mut out);
    builder.u32(1).unwrap();
    assert_eq!(
        builder.u64(2).unwrap_err(),
        EncodeError::BufferTooSmall { index: 1, needed: 14, available: 7 }
    );
    assert_eq!(builder.count(), 1);
    assert_eq!(builder.finish(), &[0x05, 1, 0, 0, 0]);
    assert_eq!(out[5..], [0xaa, 0xaa], "nothing past the last whole record is touched");
}
