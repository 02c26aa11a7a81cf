//! `roundtrip`: structured argument lists → encode → parse → the same list.
//!
//! `arbitrary` builds a list of fuzz-local arguments (`FuzzArg`) and a memory length. The list
//! is encoded twice (`encode_argv` and the typed `ArgvBuilder`), which must agree byte for byte
//! and in length with the specification's record sizes; lists past the caps must be refused
//! with the first offending index. Parsing the bytes must give back the same list (floats by
//! bits) when every window fits the memory, and otherwise refuse the first window that does
//! not, naming its index and byte offset.
#![no_main]

use arbitrary::Arbitrary;
use kernel_args_core::{
    ArgvBuilder, EncodeError, ErrorKind, GuestMemory, LoweredArgSnapshot, MAX_GUEST_MEMORY_BYTES,
    MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES, ParsedArgv, encode_argv, encoded_len, parse_argv,
};
use kernel_args_fuzz::FuzzArg;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    memory_len: u64,
    args: Vec<FuzzArg>,
}

fuzz_target!(|input: Input| {
    let memory_len = input.memory_len % (MAX_GUEST_MEMORY_BYTES + 1);
    let snapshots: Vec<LoweredArgSnapshot> = input.args.iter().map(|a| a.snapshot()).collect();

    // Where, if anywhere, the caps stop the list: the first argument past 128 records or
    // 4096 bytes.
    let mut total = 0;
    let mut refused = None;
    for (i, a) in input.args.iter().enumerate() {
        total += a.wire_size();
        if i >= MAX_KERNEL_ARGS || total > MAX_KERNEL_ARGS_BYTES {
            refused = Some(i);
            break;
        }
    }
    assert_eq!(encoded_len(&snapshots), input.args.iter().map(|a| a.wire_size()).sum::<usize>());

    let mut out = vec![0u8; MAX_KERNEL_ARGS_BYTES + 16];
    let encoded = encode_argv(&snapshots, &mut out);
    let mut typed = vec![0u8; MAX_KERNEL_ARGS_BYTES + 16];
    let mut builder = ArgvBuilder::new(&mut typed);
    let mut typed_err = None;
    for a in &input.args {
        let r = match *a {
            FuzzArg::I32(v) => builder.i32(v),
            FuzzArg::I64(v) => builder.i64(v),
            FuzzArg::F32(v) => builder.f32_bits(kernel_args_core::F32Bits(v)),
            FuzzArg::F64(v) => builder.f64_bits(kernel_args_core::F64Bits(v)),
            FuzzArg::U32(v) => builder.u32(v),
            FuzzArg::U64(v) => builder.u64(v),
            FuzzArg::Ptr { guest_offset, len } => builder.ptr(guest_offset, len),
        };
        if let Err(e) = r {
            typed_err = Some(e);
            break;
        }
    }
    let n = match (refused, encoded) {
        (Some(i), Err(e)) => {
            assert_eq!(e.index(), i);
            assert!(matches!(e, EncodeError::TooManyArgs { .. } | EncodeError::TooManyBytes { .. }), "{e:?}");
            assert_eq!(typed_err, Some(e), "the builder and encode_argv refuse differently");
            return;
        }
        (None, Ok(n)) => n,
        (refused, encoded) => panic!("expected refusal at {refused:?}, encode_argv gave {encoded:?}"),
    };
    assert_eq!(typed_err, None);
    assert_eq!(builder.count(), input.args.len());
    let argv = &out[..n];
    assert_eq!(builder.finish(), argv, "the builder and encode_argv disagree");
    assert_eq!(n, encoded_len(&snapshots));

    let first_bad = input.args.iter().position(|a| match *a {
        FuzzArg::Ptr { guest_offset, len } => u64::from(guest_offset) + u64::from(len) > memory_len,
        _ => false,
    });
    let memory = GuestMemory::length_only(memory_len);
    let parsed: Result<ParsedArgv, _> = parse_argv(argv, &memory);
    match (first_bad, parsed) {
        (None, Ok(args)) => {
            let back: Vec<LoweredArgSnapshot> = args.iter().map(LoweredArgSnapshot::from).collect();
            assert_eq!(back, snapshots, "the round trip changed the arguments");
        }
        (Some(i), Err(e)) => {
            let offset: usize = input.args[..i].iter().map(|a| a.wire_size()).sum();
            assert_eq!((e.index(), e.offset()), (i, offset));
            assert!(
                matches!(e.kind(), ErrorKind::WindowOutOfBounds { memory_len: m, .. } if m == memory_len)
            );
        }
        (first_bad, parsed) => panic!("first bad window {first_bad:?}, parse gave {parsed:?}"),
    }
});
