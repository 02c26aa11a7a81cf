//! Every limit of the wire format and the parser, in one place.
//!
//! The caps exist so that a malformed but in-bounds buffer cannot make the host pin
//! arbitrary memory or do unbounded work per launch. A buffer past either cap is refused
//! with [`ErrorCode::KernelArgsUnsupported`](crate::ErrorCode::KernelArgsUnsupported):
//! "the host won't accept this shape", distinct from malformed tags
//! ([`InvalidArgs`](crate::ErrorCode::InvalidArgs)) and out-of-bounds windows
//! ([`InvalidPointer`](crate::ErrorCode::InvalidPointer)).

use core::mem::size_of;

use crate::wire::{PtrValue, RecordLayout};

/// Hard cap on the number of argv records the host accepts per launch.
///
/// A parser whose output capacity `N` is smaller enforces `N` instead: a small host may choose
/// less, never more.
pub const MAX_KERNEL_ARGS: usize = 128;

/// Hard cap on the total wire-format buffer length (in bytes) the host will parse.
///
/// Checked before any byte of the buffer is read.
pub const MAX_KERNEL_ARGS_BYTES: usize = 4096;

/// The largest linear memory a wasm32 guest can have: 65 536 pages of 64 KiB (4 GiB).
///
/// Guest memories are described by a `u64` length so that this size is representable on every
/// host; pointer windows are checked in `u64` arithmetic, which cannot overflow for a `u32`
/// offset plus a `u32` length.
pub const MAX_GUEST_MEMORY_BYTES: u64 = 1 << 32;

/// The largest wire size of any record, tag byte included (an `i64`, `f64`, `u64` or `ptr`
/// record): 9. The longest buffer that passes both caps is
/// `MAX_KERNEL_ARGS * MAX_RECORD_SIZE` (1152) bytes.
pub const MAX_RECORD_SIZE: usize = size_of::<RecordLayout<PtrValue>>();
