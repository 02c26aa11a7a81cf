//! The C types. Here `kargs_arg` (one parsed argument) and its conversions; `error.rs` has
//! `kargs_error`, the enums that name an error's kind, a launch dimension, a quota and a
//! function, and the conversions between them and the Rust errors; `host.rs` has the host's
//! structs (`kargs_host`, `kargs_call`, `kargs_kernel`, `kargs_launch`, `kargs_declaration`,
//! `kargs_in_flight`). Safe code: the only `unsafe` of the crate is in `ffi`.

use kernel_args::limits::{MAX_DECLARATION_BYTES, MAX_EXTENT_BYTES, MAX_NAME_BYTES};
use kernel_args::{
    AbiError, Bound, DeclarationError, Detail, Dimension, Element, Expected, HostError, Mismatch,
    MismatchKind, Name, Problem, Quota, QuotaError, RegionError, ShapeError, Text,
};
use kernel_args_core::{
    ArgTag, ArgvError, ErrorKind, LoweredArg, MAX_GUEST_MEMORY_BYTES, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES,
};

mod error;
mod host;
#[cfg(test)]
mod tests;

pub(crate) use self::error::{Decoded, write_null_message};
pub use self::error::{
    KARGS_ERROR_TEXT_MAX, KargsDimension, KargsError, KargsErrorKind, KargsFunction, KargsQuota,
};
pub use self::host::{
    KARGS_DECLARATION_SIZE, KargsCall, KargsDeclaration, KargsHost, KargsInFlight, KargsKernel, KargsLaunch,
    KargsLaunchFn,
};

/// One parsed kernel argument, as `kargs_parse` writes it into the caller's array.
///
/// Every field is written for every argument: the fields that do not apply to its type are 0
/// (NULL for `host_ptr`). The argument's record index is its index in the array.
///
/// Layout: 32 bytes on 64-bit and on 32-bit targets (8-byte aligned, `bits` first, so that
/// the struct has no padding before its last field).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KargsArg {
    /// The value of a scalar argument (tags 0x01 to 0x06), as a native `uint64_t` holding the
    /// bits the wire carries (little-endian on the wire, decoded):
    ///
    /// - `KARGS_TAG_I32`: the `int32_t`, sign-extended to 64 bits: `(int32_t)bits` and
    ///   `(int64_t)bits` are both the value;
    /// - `KARGS_TAG_I64`: the `int64_t` in two's complement: `(int64_t)bits` is the value;
    /// - `KARGS_TAG_F32`: the 32 IEEE-754 bits of the float, zero-extended (never converted:
    ///   NaN payloads and -0.0 are kept); `(uint32_t)bits` are the float's bits;
    /// - `KARGS_TAG_F64`: the 64 IEEE-754 bits of the double;
    /// - `KARGS_TAG_U32`: the `uint32_t`, zero-extended;
    /// - `KARGS_TAG_U64`: the `uint64_t`;
    /// - `KARGS_TAG_PTR`: 0.
    ///
    /// On a little-endian host `&arg.bits` points at the value's own bytes (4 or 8), as
    /// `cuLaunchKernel`'s parameter array wants them.
    pub bits: u64,
    /// `KARGS_TAG_PTR`: `memory + guest_offset`, the host address of the window's first byte
    /// (for a zero-length window at the end of memory, one past its last byte); NULL when
    /// `kargs_parse` was given a NULL `memory` (then only the window of offset 0 and length 0
    /// exists). NULL for every other tag. Valid as long as the caller's memory is, for
    /// `len` bytes.
    pub host_ptr: *mut u8,
    /// The byte offset in argv at which the argument's record (its tag byte) starts.
    pub byte_offset: u32,
    /// `KARGS_TAG_PTR`: the window's start in guest memory. 0 for every other tag.
    pub guest_offset: u32,
    /// `KARGS_TAG_PTR`: the window's length in bytes; `guest_offset + len <= memory_len`,
    /// computed without overflow. 0 for every other tag.
    pub len: u32,
    /// The record's wire tag: `KARGS_TAG_I32` (0x01) to `KARGS_TAG_PTR` (0x07). 0 only in an
    /// entry that `kargs_parse` reset after an error.
    pub tag: u8,
}

impl KargsArg {
    /// The all-zero entry: what an error leaves in the entries it had written.
    pub(crate) const ZERO: KargsArg = KargsArg {
        bits: 0,
        host_ptr: core::ptr::null_mut(),
        byte_offset: 0,
        guest_offset: 0,
        len: 0,
        tag: 0,
    };

    /// The entry for `arg`, whose record starts at `byte_offset`, checked against a memory
    /// whose first byte is at `base` (NULL: no host pointers).
    pub(crate) fn new(arg: LoweredArg<'_>, byte_offset: usize, base: *mut u8) -> KargsArg {
        let mut entry = KargsArg {
            tag: arg.tag().byte(),
            byte_offset: u32::try_from(byte_offset).unwrap_or(u32::MAX),
            ..KargsArg::ZERO
        };
        match arg {
            // Two's complement: sign-extended, then the same 64 bits as unsigned.
            LoweredArg::I32(v) => entry.bits = i64::from(v) as u64,
            LoweredArg::I64(v) => entry.bits = v as u64,
            LoweredArg::F32(v) => entry.bits = u64::from(v.0),
            LoweredArg::F64(v) => entry.bits = v.0,
            LoweredArg::U32(v) => entry.bits = u64::from(v),
            LoweredArg::U64(v) => entry.bits = v,
            LoweredArg::Ptr(window) => {
                entry.guest_offset = window.guest_offset();
                entry.len = window.len();
                if !base.is_null() {
                    // In bounds of the caller's memory: the parser checked
                    // `guest_offset + len <= memory_len`. `wrapping_add` is the safe way to
                    // offset a pointer; it is never dereferenced here.
                    entry.host_ptr = base.wrapping_add(to_usize(window.guest_offset()));
                }
            }
        }
        entry
    }
}

impl Default for KargsArg {
    /// The all-zero entry (tag 0, NULL `host_ptr`).
    fn default() -> KargsArg {
        KargsArg::ZERO
    }
}

/// `u32` to `usize`: lossless on every target this crate builds for.
const _: () = assert!(usize::BITS >= 32, "kernel-args-capi needs a usize of at least 32 bits");

// The sizes the header states, on every target this builds for (64-bit hosts, thumbv7em).
const _: () = assert!(size_of::<KargsArg>() == 32 && size_of::<KargsError>() == 176);

#[inline]
fn to_usize(v: u32) -> usize {
    // Lossless by the assertion above.
    v as usize
}

impl KargsArg {
    /// The argument an entry holds (its `host_ptr` dropped), or `None` for an entry with no
    /// valid tag.
    pub(crate) fn snapshot(&self) -> Option<kernel_args_core::LoweredArgSnapshot> {
        use kernel_args_core::{Arg, F32Bits, F64Bits, GuestRange};
        Some(match ArgTag::from_byte(self.tag)? {
            ArgTag::I32 => Arg::I32(self.bits as u32 as i32),
            ArgTag::I64 => Arg::I64(self.bits as i64),
            ArgTag::F32 => Arg::F32(F32Bits(self.bits as u32)),
            ArgTag::F64 => Arg::F64(F64Bits(self.bits)),
            ArgTag::U32 => Arg::U32(self.bits as u32),
            ArgTag::U64 => Arg::U64(self.bits),
            ArgTag::Ptr => Arg::Ptr(GuestRange { guest_offset: self.guest_offset, len: self.len }),
        })
    }

    /// The entry for a checked argument (`arg`, at `byte_offset`), its window at `host_ptr`.
    pub(crate) fn checked(
        arg: kernel_args_core::LoweredArgSnapshot,
        byte_offset: usize,
        host_ptr: *mut u8,
    ) -> KargsArg {
        use kernel_args_core::Arg;
        let mut entry = KargsArg {
            tag: arg.tag().byte(),
            byte_offset: u32::try_from(byte_offset).unwrap_or(u32::MAX),
            ..KargsArg::ZERO
        };
        match arg {
            Arg::I32(v) => entry.bits = i64::from(v) as u64,
            Arg::I64(v) => entry.bits = v as u64,
            Arg::F32(v) => entry.bits = u64::from(v.0),
            Arg::F64(v) => entry.bits = v.0,
            Arg::U32(v) => entry.bits = u64::from(v),
            Arg::U64(v) => entry.bits = v,
            Arg::Ptr(window) => {
                entry.guest_offset = window.guest_offset;
                entry.len = window.len;
                entry.host_ptr = host_ptr;
            }
        }
        entry
    }
}
