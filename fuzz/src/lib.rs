//! Shared pieces of the kernel-args fuzz targets (see `README.md` for how to run them).
//!
//! - [`ArgvInput`]: the raw input layout of the byte-level targets (`parse_argv`,
//!   `differential`): an 8-byte little-endian guest memory length, then the argv buffer. The
//!   seed corpora and `seeds.py` write this layout.
//! - [`FuzzArg`]: a fuzz-local argument type with a derived `arbitrary::Arbitrary`, mapped to
//!   the core's [`LoweredArgSnapshot`], for the structured targets.
//! - [`check`]: the properties every accepted or refused parse must have, shared by targets.
//!
//! The independent specification model the `differential` target checks the core against is
//! `kernel_args_testkit::model` (`testkit/src/model.rs`), shared with the conformance tests.

// The fuzz crate checks the core by panicking when a property fails: that is how libFuzzer
// learns of a bug.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

pub mod check;

use arbitrary::Arbitrary;
use kernel_args_core::{Arg, F32Bits, F64Bits, GuestRange, LoweredArgSnapshot, MAX_GUEST_MEMORY_BYTES};

/// Bytes of the memory-length header that opens a byte-level input.
pub const MEMORY_LEN_HEADER: usize = 8;

/// A byte-level input: a guest memory length and an argv buffer.
#[derive(Debug, Clone, Copy)]
pub struct ArgvInput<'a> {
    /// Guest memory length, at most [`MAX_GUEST_MEMORY_BYTES`].
    pub memory_len: u64,
    /// The argv buffer, every remaining byte.
    pub argv: &'a [u8],
}

impl<'a> ArgvInput<'a> {
    /// Splits `data` into its header and argv; `None` when the header is incomplete.
    ///
    /// The header's `u64` is reduced modulo `MAX_GUEST_MEMORY_BYTES + 1`, so every value up to
    /// and including 4 GiB is reachable and written back unchanged by the seed script.
    pub fn split(data: &'a [u8]) -> Option<ArgvInput<'a>> {
        let (header, argv) = data.split_first_chunk::<MEMORY_LEN_HEADER>()?;
        let memory_len = u64::from_le_bytes(*header) % (MAX_GUEST_MEMORY_BYTES + 1);
        Some(ArgvInput { memory_len, argv })
    }
}

/// One argument, as `arbitrary` generates it for the structured targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum FuzzArg {
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// An `f32`, as raw bits (every NaN payload included).
    F32(u32),
    /// An `f64`, as raw bits.
    F64(u64),
    /// A `u32`.
    U32(u32),
    /// A `u64`.
    U64(u64),
    /// A pointer window.
    Ptr {
        /// Start of the window in guest memory.
        guest_offset: u32,
        /// Length of the window.
        len: u32,
    },
}

impl FuzzArg {
    /// The core's pointer-free argument for this one.
    pub fn snapshot(self) -> LoweredArgSnapshot {
        match self {
            FuzzArg::I32(v) => Arg::I32(v),
            FuzzArg::I64(v) => Arg::I64(v),
            FuzzArg::F32(v) => Arg::F32(F32Bits(v)),
            FuzzArg::F64(v) => Arg::F64(F64Bits(v)),
            FuzzArg::U32(v) => Arg::U32(v),
            FuzzArg::U64(v) => Arg::U64(v),
            FuzzArg::Ptr { guest_offset, len } => Arg::Ptr(GuestRange { guest_offset, len }),
        }
    }

    /// Bytes of this argument's record on the wire (tag included), from the specification.
    pub fn wire_size(self) -> usize {
        match self {
            FuzzArg::I32(_) | FuzzArg::F32(_) | FuzzArg::U32(_) => 5,
            FuzzArg::I64(_) | FuzzArg::F64(_) | FuzzArg::U64(_) | FuzzArg::Ptr { .. } => 9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_little_endian_and_reduced() {
        let mut data = vec![0u8; 8];
        data[..8].copy_from_slice(&(1u64 << 32).to_le_bytes());
        data.extend_from_slice(&[0x05, 1, 0, 0, 0]);
        let input = ArgvInput::split(&data).unwrap();
        assert_eq!((input.memory_len, input.argv.len()), (1 << 32, 5));
        let data = u64::MAX.to_le_bytes();
        assert_eq!(ArgvInput::split(&data).unwrap().memory_len, u64::MAX % ((1 << 32) + 1));
        assert!(ArgvInput::split(&[0; 7]).is_none());
    }
}
