//! What the test files that compare the core with the specification model share.

use kernel_args_conformance::model::{self, Failure};
use kernel_args_core::{ArgvError, ErrorKind};

/// The core's error in the model's terms (the window's memory length included, so comparing
/// rejections also compares it), after checking that the core's kind name and ABI code agree
/// with the model's for that failure.
pub fn core_rejection(e: &ArgvError) -> model::Rejection {
    let failure = match e.kind() {
        ErrorKind::BufferTooLong { len, .. } => Failure::BufferTooLong { len },
        ErrorKind::TooManyRecords { .. } => Failure::TooManyRecords,
        ErrorKind::UnknownTag { tag } => Failure::UnknownTag { tag },
        ErrorKind::TruncatedRecord { tag, needed, present } => {
            Failure::TruncatedRecord { tag: tag.byte(), needed, present }
        }
        ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => {
            Failure::WindowOutOfBounds { guest_offset, len, mem_len: memory_len }
        }
    };
    assert_eq!(e.kind().name(), failure.kind());
    assert_eq!((e.code().code(), e.code().name()), (failure.code(), failure.code_name()));
    model::Rejection { failure, index: e.index(), offset: e.offset() }
}
