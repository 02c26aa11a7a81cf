//! The core's results in the model's terms, so that the two can be compared with `==`.
//!
//! This is the only place where the kit's [`model`](crate::model) meets `kernel-args-core`;
//! the model itself does not use the core.

use kernel_args_core::{Arg, ArgvError, ErrorKind, LoweredArgSnapshot};

use crate::model::{Failure, Rejection, Value};

/// The core's pointer-free argument as a model value (floats by bits, windows by offset and
/// length).
impl From<LoweredArgSnapshot> for Value {
    fn from(arg: LoweredArgSnapshot) -> Value {
        match arg {
            Arg::I32(v) => Value::I32(v),
            Arg::I64(v) => Value::I64(v),
            Arg::F32(bits) => Value::F32(bits.0),
            Arg::F64(bits) => Value::F64(bits.0),
            Arg::U32(v) => Value::U32(v),
            Arg::U64(v) => Value::U64(v),
            Arg::Ptr(r) => Value::Ptr { guest_offset: r.guest_offset, len: r.len },
        }
    }
}

/// The core's error as a model rejection: the kind with every detail (the caps and the
/// window's memory length included, so comparing rejections also compares them), the index
/// and the offset.
impl From<&ArgvError> for Rejection {
    fn from(e: &ArgvError) -> Rejection {
        let failure = match e.kind() {
            ErrorKind::BufferTooLong { len, max } => Failure::BufferTooLong { len, max },
            ErrorKind::TooManyRecords { max } => Failure::TooManyRecords { max },
            ErrorKind::UnknownTag { tag } => Failure::UnknownTag { tag },
            ErrorKind::TruncatedRecord { tag, needed, present } => {
                Failure::TruncatedRecord { tag: tag.byte(), needed, present }
            }
            ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => {
                Failure::WindowOutOfBounds { guest_offset, len, mem_len: memory_len }
            }
        };
        Rejection { failure, index: e.index(), offset: e.offset() }
    }
}
