//! Conveniences for std hosts and tools: parse into a [`Vec`], encode into a `Vec<u8>`.
//!
//! The core's [`parse_argv`](kernel_args_core::parse_argv) fills a fixed-capacity vector,
//! which is what a host function should use; these are for tools and tests that would
//! rather not name a capacity. The rules, caps and errors are the core's, unchanged.
//!
//! ```
//! use kernel_args::{encode_argv_vec, parse_argv_vec};
//! use kernel_args_core::{GuestMemory, LoweredArgSnapshot};
//!
//! let args = [LoweredArgSnapshot::I32(-7), LoweredArgSnapshot::from(1.5f32)];
//! let bytes = encode_argv_vec(&args)?;
//! assert_eq!(bytes.len(), 10);
//! let parsed = parse_argv_vec(&bytes, &GuestMemory::length_only(0))?;
//! assert_eq!(parsed.iter().map(|a| a.snapshot()).collect::<Vec<_>>(), args);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use kernel_args_core::{
    Arg, ArgvError, AsGuestRange, EncodeError, GuestMemory, LoweredArg, LoweredArgSnapshot, RecordReader,
    encode_argv, encoded_len,
};

use crate::limits::MAX_KERNEL_ARGS_BYTES;

/// Parses an argv buffer into a `Vec`, bounds-checking every pointer window against `memory`.
/// Same rules and errors as [`parse_argv`](kernel_args_core::parse_argv) with the full
/// [`MAX_KERNEL_ARGS`](crate::limits::MAX_KERNEL_ARGS) cap.
pub fn parse_argv_vec<'m>(buf: &[u8], memory: &GuestMemory<'m>) -> Result<Vec<LoweredArg<'m>>, ArgvError> {
    RecordReader::new(buf, memory)?.map(|record| record.map(|r| r.arg)).collect()
}

/// Parses an argv buffer into pointer-free snapshots (windows as guest offset and length).
pub fn parse_snapshots(buf: &[u8], memory: &GuestMemory<'_>) -> Result<Vec<LoweredArgSnapshot>, ArgvError> {
    RecordReader::new(buf, memory)?.map(|record| record.map(|r| r.arg.snapshot())).collect()
}

/// Encodes `args` (parsed arguments or snapshots) into a new `Vec<u8>`. Fails as
/// [`encode_argv`] does when the arguments exceed the caps; never for lack of room.
pub fn encode_argv_vec<W: AsGuestRange>(args: &[Arg<W>]) -> Result<Vec<u8>, EncodeError> {
    // The encoder checks the caps before the room, so a buffer capped at the byte limit
    // reports an oversized argv as `TooManyBytes`, not `BufferTooSmall`.
    let mut out = vec![0u8; encoded_len(args).min(MAX_KERNEL_ARGS_BYTES)];
    let len = encode_argv(args, &mut out)?;
    out.truncate(len);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use kernel_args_core::{ErrorCode, GuestRange, MAX_KERNEL_ARGS};

    use super::*;

    #[test]
    fn round_trip_through_vecs() {
        let args = vec![
            LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 16, len: 48 }),
            LoweredArgSnapshot::U64(u64::MAX),
            LoweredArgSnapshot::from(-0.0f64),
            LoweredArgSnapshot::I64(i64::MIN),
        ];
        let bytes = encode_argv_vec(&args).unwrap();
        assert_eq!(bytes.len(), 9 + 9 + 9 + 9);
        let mut memory = vec![0u8; 64];
        let guest = GuestMemory::exclusive(&mut memory);
        let parsed = parse_argv_vec(&bytes, &guest).unwrap();
        assert_eq!(encode_argv_vec(&parsed).unwrap(), bytes, "parsed args encode to the same bytes");
        assert_eq!(parse_snapshots(&bytes, &guest).unwrap(), args);
    }

    #[test]
    fn empty() {
        assert_eq!(encode_argv_vec::<GuestRange>(&[]).unwrap(), Vec::<u8>::new());
        assert!(parse_argv_vec(&[], &GuestMemory::length_only(0)).unwrap().is_empty());
    }

    #[test]
    fn errors_are_the_cores() {
        let memory = GuestMemory::length_only(32);
        let err = parse_snapshots(&[0x07, 30, 0, 0, 0, 4, 0, 0, 0], &memory).unwrap_err();
        assert_eq!((err.code(), err.index(), err.offset()), (ErrorCode::InvalidPointer, 0, 0));
        let too_many = [0x05, 0, 0, 0, 0].repeat(MAX_KERNEL_ARGS + 1);
        assert_eq!(parse_snapshots(&too_many, &memory).unwrap_err().code(), ErrorCode::KernelArgsUnsupported);

        let args = vec![LoweredArgSnapshot::U32(0); MAX_KERNEL_ARGS + 1];
        assert_eq!(
            encode_argv_vec(&args).unwrap_err(),
            EncodeError::TooManyArgs { index: MAX_KERNEL_ARGS, max: MAX_KERNEL_ARGS }
        );
    }
}
