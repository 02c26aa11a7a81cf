//! Every conformance vector against `kernel-args-core`: the arguments (types, values, float
//! bits, windows, record indices and offsets) or the error (code, name, kind, index, offset),
//! through both the record reader and `parse_argv`.

use kernel_args_conformance::vectors::{
    Expect, ExpectedArg, ExpectedError, ExpectedValue, Vector, argv_vectors,
};
use kernel_args_core::{
    Arg, ArgvError, GuestMemory, LoweredArgSnapshot, MAX_KERNEL_ARGS, ParsedArgv, RecordReader, encode_argv,
    parse_argv,
};

fn value(arg: &LoweredArgSnapshot) -> ExpectedValue {
    match *arg {
        Arg::I32(value) => ExpectedValue::I32 { value },
        Arg::I64(value) => ExpectedValue::I64 { value },
        Arg::F32(bits) => {
            ExpectedValue::F32 { bits: format!("{:#010x}", bits.0), value: format!("{:?}", bits.to_f32()) }
        }
        Arg::F64(bits) => {
            ExpectedValue::F64 { bits: format!("{:#018x}", bits.0), value: format!("{:?}", bits.to_f64()) }
        }
        Arg::U32(value) => ExpectedValue::U32 { value },
        Arg::U64(value) => ExpectedValue::U64 { value },
        Arg::Ptr(range) => ExpectedValue::Ptr { guest_offset: range.guest_offset, len: range.len },
    }
}

fn error(e: &ArgvError) -> ExpectedError {
    ExpectedError {
        code: e.code().code(),
        name: e.code().name().to_owned(),
        kind: e.kind().name().to_owned(),
        index: e.index(),
        offset: e.offset(),
    }
}

/// The core's answer through the record reader, which knows where each record starts.
fn through_reader(bytes: &[u8], memory: &GuestMemory<'_>) -> Expect {
    let reader = match RecordReader::new(bytes, memory) {
        Ok(reader) => reader,
        Err(e) => return Expect::Error(error(&e)),
    };
    let mut args = Vec::new();
    for record in reader {
        match record {
            Ok(r) => {
                args.push(ExpectedArg { index: r.index, offset: r.offset, value: value(&r.arg.snapshot()) })
            }
            Err(e) => return Expect::Error(error(&e)),
        }
    }
    Expect::Args(args)
}

fn check(v: &Vector) {
    let bytes = v.bytes().unwrap();
    let memory = GuestMemory::length_only(v.mem_len);
    assert_eq!(through_reader(&bytes, &memory), v.expect, "vector {} (reader)", v.name);

    let parsed: Result<ParsedArgv, _> = parse_argv(&bytes, &memory);
    match (&parsed, &v.expect) {
        (Ok(args), Expect::Args(expected)) => {
            let got: Vec<ExpectedValue> = args.iter().map(|a| value(&a.snapshot())).collect();
            let want: Vec<ExpectedValue> = expected.iter().map(|a| a.value.clone()).collect();
            assert_eq!(got, want, "vector {} (parse_argv)", v.name);
            // Accepted buffers encode back to the same bytes.
            let mut out = [0u8; 4096];
            let n = encode_argv(args, &mut out).unwrap();
            assert_eq!(&out[..n], &bytes[..], "vector {} (encode_argv)", v.name);
        }
        (Err(e), Expect::Error(expected)) => {
            assert_eq!(&error(e), expected, "vector {} (parse_argv)", v.name)
        }
        _ => panic!("vector {}: parse_argv gave {parsed:?}, expected {:?}", v.name, v.expect),
    }
}

#[test]
fn every_vector_against_the_core() {
    let file = argv_vectors().unwrap();
    for v in &file.vectors {
        check(v);
    }
}

#[test]
fn windows_behave_the_same_against_real_memory() {
    // length_only is what the vectors use; a real borrowed memory must agree for small sizes.
    for v in argv_vectors().unwrap().vectors.iter().filter(|v| v.mem_len <= 1 << 16) {
        let bytes = v.bytes().unwrap();
        let mut memory = vec![0u8; usize::try_from(v.mem_len).unwrap()];
        let guest = GuestMemory::exclusive(&mut memory);
        assert_eq!(through_reader(&bytes, &guest), v.expect, "vector {} (exclusive memory)", v.name);
    }
}

#[test]
fn a_smaller_capacity_only_lowers_the_record_cap() {
    // With capacity 4, every accepted vector of more than 4 records fails at record 4.
    for v in argv_vectors().unwrap().vectors {
        let Expect::Args(args) = &v.expect else { continue };
        let bytes = v.bytes().unwrap();
        let memory = GuestMemory::length_only(v.mem_len);
        let result = parse_argv::<4>(&bytes, &memory);
        if args.len() <= 4 {
            assert_eq!(result.map(|a| a.len()).ok(), Some(args.len()), "vector {}", v.name);
        } else {
            let e = result.unwrap_err();
            assert_eq!((e.kind().name(), e.index(), e.offset()), ("too_many_records", 4, args[4].offset));
        }
    }
    assert_eq!(MAX_KERNEL_ARGS, 128);
}

/// The worked examples of `docs/wire-format.md`, byte for byte, so the spec cannot drift.
#[test]
fn worked_examples_of_the_wire_format_doc() {
    let hex = |s: &str| kernel_args_conformance::vectors::parse_hex(s).unwrap();
    let valid = hex("01f9ffffff030000c03f062a000000000000000740000000800000000400000000000004c0");
    let memory = GuestMemory::length_only(256);
    let Expect::Args(args) = through_reader(&valid, &memory) else { panic!("the valid example is rejected") };
    let at: Vec<(usize, usize)> = args.iter().map(|a| (a.index, a.offset)).collect();
    assert_eq!(at, [(0, 0), (1, 5), (2, 10), (3, 19), (4, 28)]);
    assert_eq!(args[4].value, ExpectedValue::F64 { bits: "0xc004000000000000".into(), value: "-2.5".into() });

    let err = |buf: &[u8], mem: u64| match through_reader(buf, &GuestMemory::length_only(mem)) {
        Expect::Error(e) => (e.kind, e.code, e.index, e.offset),
        Expect::Args(_) => panic!("accepted"),
    };
    assert_eq!(err(&hex("05 01000000 05 20000000 ff 00"), 256), ("unknown_tag".into(), -9, 2, 10));
    let window = hex("07 40000000 80000000 07 f00f0000 20000000");
    assert_eq!(err(&window, 4096), ("window_out_of_bounds".into(), -2, 1, 9));
    let accepted =
        |h: &str| matches!(through_reader(&hex(h), &GuestMemory::length_only(4096)), Expect::Args(_));
    assert!(accepted("07 f00f0000 10000000"), "[4080, +16) ends exactly at 4096");
    assert!(accepted("07 00100000 00000000"), "zero-length window at 4096");
    assert!(!accepted("07 01100000 00000000"), "zero-length window at 4097");
    let mut cap = hex(&"0500000000".repeat(128));
    cap.push(0xff);
    assert_eq!(err(&cap, 256), ("too_many_records".into(), -10, 128, 640));
    cap.resize(4097, 0xff);
    assert_eq!(err(&cap, 256), ("buffer_too_long".into(), -10, 0, 0));
    assert_eq!(err(&hex("07 ffffffff 0100"), 256), ("truncated_record".into(), -9, 0, 0));
}
