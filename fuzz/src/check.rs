//! The properties every parse must have, checked with panics (a failed property is a crash
//! libFuzzer keeps).

use kernel_args_core::{
    Access, Arg, ArgvError, ErrorCode, ErrorKind, GuestMemory, LoweredArgSnapshot, MAX_KERNEL_ARGS,
    MAX_KERNEL_ARGS_BYTES, ParsedArgv, RecordReader, encode_argv, parse_argv, parse_argv_into,
};

/// What a parse returned, pointer-free, for comparing parses against each other.
pub type Outcome = Result<Vec<LoweredArgSnapshot>, ArgvError>;

/// Where a real guest memory lies in host memory, for checking host pointers.
#[derive(Debug, Clone, Copy)]
pub struct HostSpan {
    /// Address of the first byte.
    pub base: usize,
    /// Length in bytes.
    pub len: usize,
}

/// Parses `argv` against `memory` with capacity `N` and checks, panicking on a violation:
///
/// - a refusal carries one of the three argv codes, agrees with its kind, and names a record
///   that exists (index within the cap, offset inside the buffer);
/// - an accepted buffer has at most `min(N, 128)` records, every window lies inside memory and
///   its host pointer (when `span` says where the memory is) points inside it, at the window's
///   offset, with the memory's access;
/// - re-encoding an accepted result gives exactly `argv`;
/// - the record reader and `parse_argv_into` (over a stale vector) agree with `parse_argv`.
pub fn check_parse<const N: usize>(argv: &[u8], memory: &GuestMemory<'_>, span: Option<HostSpan>) -> Outcome {
    let cap = N.min(MAX_KERNEL_ARGS);
    let parsed: Result<ParsedArgv<'_, N>, ArgvError> = parse_argv(argv, memory);
    match &parsed {
        Err(e) => check_error(e, argv, cap),
        Ok(args) => check_accepted(args, argv, memory, span, cap),
    }
    check_reader_agrees(argv, memory, cap, &parsed);

    // A vector already holding arguments from an earlier parse ends up equal to a fresh parse,
    // or empty on error: nothing stale survives.
    let mut stale: ParsedArgv<'_, N> = heapless::Vec::new();
    if let Some(w) = memory.window(0, 0) {
        let _ = stale.push(Arg::Ptr(w));
    }
    let into = parse_argv_into(argv, memory, &mut stale);
    match (&parsed, into) {
        (Ok(args), Ok(())) => assert_eq!(args.as_slice(), stale.as_slice()),
        (Err(a), Err(b)) => {
            assert_eq!(*a, b);
            assert!(stale.is_empty(), "parse_argv_into left {} stale arguments", stale.len());
        }
        (a, b) => panic!("parse_argv {a:?} but parse_argv_into {b:?}"),
    }

    parsed.map(|args| args.iter().map(LoweredArgSnapshot::from).collect())
}

fn check_error(e: &ArgvError, argv: &[u8], cap: usize) {
    let code = e.code();
    assert!(matches!(code.code(), -2 | -9 | -10), "code {} is not one of the argv codes", code.code());
    assert_eq!(ErrorCode::from_code(code.code()), Some(code));
    assert_eq!(e.kind().code(), code);
    assert!(!e.to_string().is_empty());
    match e.kind() {
        ErrorKind::BufferTooLong { len, max } => {
            assert_eq!((len, max, e.index(), e.offset()), (argv.len(), MAX_KERNEL_ARGS_BYTES, 0, 0));
            assert!(argv.len() > MAX_KERNEL_ARGS_BYTES);
        }
        kind => {
            assert!(argv.len() <= MAX_KERNEL_ARGS_BYTES, "{kind:?} for an over-long buffer");
            assert!(e.offset() < argv.len(), "error offset {} past the buffer", e.offset());
            assert!(e.index() <= cap, "error index {} past the cap {cap}", e.index());
            if let ErrorKind::TooManyRecords { max } = kind {
                assert_eq!((max, e.index()), (cap, cap));
            }
        }
    }
}

fn check_accepted<const N: usize>(
    args: &ParsedArgv<'_, N>,
    argv: &[u8],
    memory: &GuestMemory<'_>,
    span: Option<HostSpan>,
    cap: usize,
) {
    assert!(args.len() <= cap);
    for arg in args {
        let Arg::Ptr(w) = arg else { continue };
        let range = w.range();
        assert!(range.end() <= memory.len(), "accepted window {range:?} outside {} bytes", memory.len());
        assert_eq!(w.access(), memory.access());
        match (span, w.host_ptr()) {
            (Some(span), Some(p)) => {
                let start = p.addr();
                let offset = usize::try_from(range.guest_offset).unwrap();
                let len = usize::try_from(range.len).unwrap();
                assert_eq!(start, span.base + offset, "host pointer not at the window's offset");
                assert!(start + len <= span.base + span.len, "host window leaves guest memory");
                assert_eq!(w.host_ptr_mut().is_some(), memory.access() == Access::ReadWrite);
            }
            (None, None) => assert_eq!(memory.access(), Access::LengthOnly),
            (span, p) => panic!("memory {span:?} but host pointer {p:?}"),
        }
    }
    let mut out = [0u8; MAX_KERNEL_ARGS_BYTES];
    let n = encode_argv(args, &mut out).expect("an accepted argv re-encodes");
    assert_eq!(&out[..n], argv, "re-encoding differs from the input");
}

fn check_reader_agrees<const N: usize>(
    argv: &[u8],
    memory: &GuestMemory<'_>,
    cap: usize,
    parsed: &Result<ParsedArgv<'_, N>, ArgvError>,
) {
    let reader = match RecordReader::new(argv, memory) {
        Ok(r) => r.with_max_records(N),
        Err(e) => {
            assert_eq!(parsed.as_ref().err(), Some(&e));
            return;
        }
    };
    assert_eq!(reader.max_records(), cap);
    let mut expected_offset = 0;
    let mut got = Vec::new();
    let mut error = None;
    for (i, record) in reader.enumerate() {
        match record {
            Ok(r) => {
                assert_eq!((r.index, r.offset), (i, expected_offset));
                expected_offset += r.arg.tag().wire_size();
                got.push(r.arg);
            }
            Err(e) => {
                assert!(error.is_none(), "the reader yielded after an error");
                error = Some(e);
            }
        }
    }
    match parsed {
        Ok(args) => {
            assert_eq!(error, None);
            assert_eq!(args.as_slice(), got.as_slice());
            assert_eq!(expected_offset, argv.len());
        }
        Err(e) => assert_eq!(error.as_ref(), Some(e)),
    }
}
