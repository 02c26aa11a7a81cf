//! Every buffer of 0 to 3 bytes (1 + 256 + 65 536 + 16 777 216 = 16 843 009 buffers) through
//! `kernel-args-core` and the specification model: the same accept/reject, code, kind, index,
//! offset and detail (the unknown byte; the tag, bytes needed and present) for each.
//!
//! No record is shorter than 5 bytes, so every non-empty buffer here is rejected: this sweep
//! pins down rule 3 against rule 4 for every tag byte and every cut, exhaustively.

mod common;

use common::core_rejection;
use kernel_args_core::{ArgvError, GuestMemory, ParsedArgv, parse_argv};
use kernel_args_testkit::model;

fn compare(buf: &[u8], memory: &GuestMemory<'_>) {
    let core: Result<ParsedArgv, ArgvError> = parse_argv(buf, memory);
    let model = model::parse(buf, memory.len());
    match (core, model) {
        (Ok(core), Ok(model)) => assert!(core.is_empty() && model.is_empty(), "{buf:02x?}"),
        (Err(core), Err(model)) => assert_eq!(core_rejection(&core), model, "{buf:02x?}"),
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
