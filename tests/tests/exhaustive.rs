//! Every buffer of 0 to 3 bytes (1 + 256 + 65 536 + 16 777 216 = 16 843 009 buffers) through
//! `kernel-args-core` and the specification model: the same accept/reject, code, kind, index,
//! offset and detail (the unknown byte; the tag, bytes needed and present) for each.
//!
//! No record is shorter than 5 bytes, so every non-empty buffer here is rejected: this sweep
//! pins down rule 3 against rule 4 for every tag byte and every cut, exhaustively.

use kernel_args_conformance::model::{self, Failure};
use kernel_args_core::{ArgvError, ErrorKind, GuestMemory, ParsedArgv, parse_argv};

/// The core's error in the model's terms.
fn as_model(e: &ArgvError, mem_len: u64) -> model::Rejection {
    let failure = match e.kind() {
        ErrorKind::BufferTooLong { len, .. } => Failure::BufferTooLong { len },
        ErrorKind::TooManyRecords { .. } => Failure::TooManyRecords,
        ErrorKind::UnknownTag { tag } => Failure::UnknownTag { tag },
        ErrorKind::TruncatedRecord { tag, needed, present } => {
            Failure::TruncatedRecord { tag: tag.byte(), needed, present }
        }
        ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => {
            assert_eq!(memory_len, mem_len);
            Failure::WindowOutOfBounds { guest_offset, len, mem_len }
        }
    };
    assert_eq!(e.kind().name(), failure.kind());
    assert_eq!((e.code().code(), e.code().name()), (failure.code(), failure.code_name()));
    model::Rejection { failure, index: e.index(), offset: e.offset() }
}

fn compare(buf: &[u8], memory: &GuestMemory<'_>) {
    let core: Result<ParsedArgv, ArgvError> = parse_argv(buf, memory);
    let model = model::parse(buf, memory.len());
    match (core, model) {
        (Ok(core), Ok(model)) => assert!(core.is_empty() && model.is_empty(), "{buf:02x?}"),
        (Err(core), Err(model)) => assert_eq!(as_model(&core, memory.len()), model, "{buf:02x?}"),
        (core, model) => panic!("{buf:02x?}: core {core:?}, model {model:?}"),
    }
}

#[test]
#[cfg_attr(miri, ignore = "16.8M cases: too slow under Miri")]
fn every_buffer_of_up_to_three_bytes() {
    let memory = GuestMemory::length_only(65536);
    let mut count = 0u64;
    compare(&[], &memory);
    count += 1;
    for a in 0..=255u8 {
        compare(&[a], &memory);
        count += 1;
        for b in 0..=255u8 {
            compare(&[a, b], &memory);
            count += 1;
            for c in 0..=255u8 {
                compare(&[a, b, c], &memory);
                count += 1;
            }
        }
    }
    assert_eq!(count, 1 + 256 + 65_536 + 16_777_216);
}
