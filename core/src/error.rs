//! The error table: what went wrong, where, and which wasi-cuda ABI code it maps to. The
//! table itself is [`ErrorKind`]'s documentation.

use core::fmt;

use crate::wire::ArgTag;

/// The wasi-cuda ABI error codes that argv parsing can produce.
///
/// The values are the ABI's and are stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(i32)]
pub enum ErrorCode {
    /// `-2`: a pointer window lies outside the caller's linear memory.
    InvalidPointer = -2,
    /// `-9`: the buffer is malformed (unknown tag, truncated record).
    InvalidArgs = -9,
    /// `-10`: the buffer is well formed but exceeds a cap the host enforces.
    KernelArgsUnsupported = -10,
}

impl ErrorCode {
    /// The ABI's numeric code.
    #[inline]
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The ABI's name for the code (`"InvalidArgs"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::InvalidPointer => "InvalidPointer",
            ErrorCode::InvalidArgs => "InvalidArgs",
            ErrorCode::KernelArgsUnsupported => "KernelArgsUnsupported",
        }
    }

    /// The code for an ABI number, if argv parsing can produce it.
    pub const fn from_code(code: i32) -> Option<ErrorCode> {
        match code {
            -2 => Some(ErrorCode::InvalidPointer),
            -9 => Some(ErrorCode::InvalidArgs),
            -10 => Some(ErrorCode::KernelArgsUnsupported),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name(), self.code())
    }
}

/// What exactly was wrong with a buffer: the error table.
///
/// | `ErrorKind`            | [`ErrorCode`]                 | code  | where                                   |
/// |------------------------|-------------------------------|-------|-----------------------------------------|
/// | `BufferTooLong`        | `KernelArgsUnsupported`       | `-10` | record 0, byte 0 (nothing was read)     |
/// | `TooManyRecords`       | `KernelArgsUnsupported`       | `-10` | the first record past the cap           |
/// | `UnknownTag`           | `InvalidArgs`                 | `-9`  | the record whose tag byte is unknown    |
/// | `TruncatedRecord`      | `InvalidArgs`                 | `-9`  | the record whose value is cut short     |
/// | `WindowOutOfBounds`    | `InvalidPointer`              | `-2`  | the pointer record                      |
///
/// "Where" is always a record index (0-based, counting records in buffer order) and the byte
/// offset at which that record starts. Every value is `Copy`; nothing here allocates. The
/// other wasi-cuda codes (launch failures, bad dimensions, ...) belong to the host and live in
/// the std adapter's `AbiError`, into which [`ArgvError`] converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorKind {
    /// The buffer is longer than the byte cap ([`MAX_KERNEL_ARGS_BYTES`](crate::MAX_KERNEL_ARGS_BYTES)); nothing was read.
    BufferTooLong {
        /// The buffer's length in bytes.
        len: usize,
        /// The cap it exceeds.
        max: usize,
    },
    /// A record starts after the output already holds `max` records.
    TooManyRecords {
        /// The record cap in force: the parser's capacity, at most [`MAX_KERNEL_ARGS`](crate::MAX_KERNEL_ARGS).
        max: usize,
    },
    /// The tag byte is not one of the seven defined tags.
    UnknownTag {
        /// The offending byte.
        tag: u8,
    },
    /// Fewer value bytes remain in the buffer than the tag needs.
    TruncatedRecord {
        /// The record's (valid) tag.
        tag: ArgTag,
        /// Value bytes the tag needs.
        needed: usize,
        /// Value bytes left in the buffer after the tag byte.
        present: usize,
    },
    /// The pointer window `[guest_offset, guest_offset + len)` does not lie inside guest memory.
    WindowOutOfBounds {
        /// The window's start in guest memory.
        guest_offset: u32,
        /// The window's length in bytes.
        len: u32,
        /// The guest memory's length in bytes.
        memory_len: u64,
    },
}

impl ErrorKind {
    /// The ABI code this kind maps to. This match is the single source of that mapping.
    pub const fn code(&self) -> ErrorCode {
        match self {
            ErrorKind::BufferTooLong { .. } | ErrorKind::TooManyRecords { .. } => {
                ErrorCode::KernelArgsUnsupported
            }
            ErrorKind::UnknownTag { .. } | ErrorKind::TruncatedRecord { .. } => ErrorCode::InvalidArgs,
            ErrorKind::WindowOutOfBounds { .. } => ErrorCode::InvalidPointer,
        }
    }

    /// A stable snake_case name for the kind, used in JSON output and conformance vectors.
    pub const fn name(&self) -> &'static str {
        match self {
            ErrorKind::BufferTooLong { .. } => "buffer_too_long",
            ErrorKind::TooManyRecords { .. } => "too_many_records",
            ErrorKind::UnknownTag { .. } => "unknown_tag",
            ErrorKind::TruncatedRecord { .. } => "truncated_record",
            ErrorKind::WindowOutOfBounds { .. } => "window_out_of_bounds",
        }
    }
}

/// A rejected argv buffer: what was wrong ([`ErrorKind`]) and where (record index, byte offset).
///
/// `Display` gives a one-line message naming both, for example
/// `unknown tag 0xff at byte 14 (record 3)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArgvError {
    kind: ErrorKind,
    index: usize,
    offset: usize,
}

impl ArgvError {
    /// An error of `kind` for the record with `index` that starts at byte `offset`.
    pub const fn new(kind: ErrorKind, index: usize, offset: usize) -> ArgvError {
        ArgvError { kind, index, offset }
    }

    /// What was wrong.
    #[inline]
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The offending record's 0-based index (0 for [`ErrorKind::BufferTooLong`]).
    #[inline]
    pub const fn index(&self) -> usize {
        self.index
    }

    /// The byte offset at which the offending record starts (0 for
    /// [`ErrorKind::BufferTooLong`]).
    #[inline]
    pub const fn offset(&self) -> usize {
        self.offset
    }

    /// The wasi-cuda ABI code for this error.
    #[inline]
    pub const fn code(&self) -> ErrorCode {
        self.kind.code()
    }
}

impl fmt::Display for ArgvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (index, offset) = (self.index, self.offset);
        match self.kind {
            ErrorKind::BufferTooLong { len, max } => {
                write!(f, "argv buffer is {len} bytes, over the cap of {max} bytes")
            }
            ErrorKind::TooManyRecords { max } => {
                write!(f, "too many records: record {index} at byte {offset} is past the cap of {max}")
            }
            ErrorKind::UnknownTag { tag } => {
                write!(f, "unknown tag {tag:#04x} at byte {offset} (record {index})")
            }
            ErrorKind::TruncatedRecord { tag, needed, present } => write!(
                f,
                "truncated {tag} record at byte {offset} (record {index}): \
                 needs {needed} value bytes, {present} present"
            ),
            ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => write!(
                f,
                "pointer window at guest offset {guest_offset} of {len} bytes \
                 at byte {offset} (record {index}) is outside guest memory of {memory_len} bytes"
            ),
        }
    }
}

impl core::error::Error for ArgvError {}

/// Why [`encode_argv`](crate::encode_argv) or the [`ArgvBuilder`](crate::ArgvBuilder) refused
/// an argument. Nothing is written past the last whole record when this is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EncodeError {
    /// The output buffer has no room for the record with this index.
    BufferTooSmall {
        /// The argument's 0-based index.
        index: usize,
        /// Bytes the output needs to hold every record up to and including this one.
        needed: usize,
        /// The output buffer's length.
        available: usize,
    },
    /// Encoding this argument would exceed [`MAX_KERNEL_ARGS`](crate::MAX_KERNEL_ARGS) records; a host would refuse it.
    TooManyArgs {
        /// The argument's 0-based index.
        index: usize,
        /// The record cap.
        max: usize,
    },
    /// Encoding this argument would exceed [`MAX_KERNEL_ARGS_BYTES`](crate::MAX_KERNEL_ARGS_BYTES); a host would refuse it.
    TooManyBytes {
        /// The argument's 0-based index.
        index: usize,
        /// The buffer length this record would reach.
        len: usize,
        /// The byte cap.
        max: usize,
    },
    /// A slice passed to [`ArgvBuilder::slice`](crate::ArgvBuilder::slice) does not fit a
    /// 32-bit guest address space (only possible when encoding on a 64-bit host).
    AddressOutOfRange {
        /// The argument's 0-based index.
        index: usize,
    },
}

impl EncodeError {
    /// The index of the argument that could not be encoded.
    pub const fn index(&self) -> usize {
        match *self {
            EncodeError::BufferTooSmall { index, .. }
            | EncodeError::TooManyArgs { index, .. }
            | EncodeError::TooManyBytes { index, .. }
            | EncodeError::AddressOutOfRange { index } => index,
        }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeError::BufferTooSmall { index, needed, available } => write!(
                f,
                "output buffer too small for argument {index}: needs {needed} bytes, has {available}"
            ),
            EncodeError::TooManyArgs { index, max } => {
                write!(f, "argument {index} is past the cap of {max} arguments")
            }
            EncodeError::TooManyBytes { index, len, max } => {
                write!(f, "argument {index} would make the buffer {len} bytes, over the cap of {max}")
            }
            EncodeError::AddressOutOfRange { index } => {
                write!(f, "argument {index}: slice address or length does not fit in 32 bits")
            }
        }
    }
}

impl core::error::Error for EncodeError {}
