//! The encoder: arguments to wire bytes, into a caller's buffer, without allocating.
//!
//! [`encode_argv`] is the inverse of [`parse_argv`](crate::parse_argv): for every buffer the
//! parser accepts, parsing then encoding gives back exactly the same bytes. [`ArgvBuilder`] is
//! the typed form for guest code, usable from a `no_std` wasm32 guest:
//!
//! ```
//! use kernel_args_core::ArgvBuilder;
//!
//! let a = [1.0f32; 4];
//! let mut buf = [0u8; 64];
//! let mut argv = ArgvBuilder::new(&mut buf);
//! argv.ptr(64, 16)?.f32(2.5)?.u32(a.len() as u32)?;
//! assert_eq!(argv.count(), 3);
//! assert_eq!(argv.finish(), &[
//!     0x07, 64, 0, 0, 0, 16, 0, 0, 0,   // ptr { offset 64, len 16 }
//!     0x03, 0x00, 0x00, 0x20, 0x40,     // f32 2.5
//!     0x05, 4, 0, 0, 0,                 // u32 4
//! ]);
//! # Ok::<(), kernel_args_core::EncodeError>(())
//! ```
//!
//! The encoder enforces the same caps as the parser ([`MAX_KERNEL_ARGS`],
//! [`MAX_KERNEL_ARGS_BYTES`]), so it never produces a buffer a host would refuse for its shape.

use zerocopy::{Immutable, IntoBytes, Unaligned, little_endian as le};

use crate::arg::{Arg, AsGuestRange, F32Bits, F64Bits};
use crate::error::EncodeError;
use crate::limits::{MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES};
use crate::memory::GuestRange;
use crate::wire::{ArgTag, PtrValue, RecordLayout};

/// Encodes `args` into `out` and returns the number of bytes written.
///
/// Works for parsed arguments ([`LoweredArg`](crate::LoweredArg)) and snapshots alike. On error
/// `out` holds the records before the failing one, and nothing after them is touched.
///
/// ```
/// use kernel_args_core::{LoweredArgSnapshot, encode_argv, EncodeError};
///
/// let args = [LoweredArgSnapshot::I32(-7), LoweredArgSnapshot::U64(42)];
/// let mut out = [0u8; 14];
/// assert_eq!(encode_argv(&args, &mut out), Ok(14));
/// assert_eq!(out[..5], [0x01, 0xf9, 0xff, 0xff, 0xff]);
/// let err = encode_argv(&args, &mut [0u8; 10]).unwrap_err();
/// assert_eq!(err, EncodeError::BufferTooSmall { index: 1, needed: 14, available: 10 });
/// ```
pub fn encode_argv<W: AsGuestRange>(args: &[Arg<W>], out: &mut [u8]) -> Result<usize, EncodeError> {
    let mut builder = ArgvBuilder::new(out);
    for arg in args {
        builder.push(arg)?;
    }
    Ok(builder.len())
}

/// The number of bytes `args` take on the wire (saturating; a list that large is refused by
/// the caps anyway).
pub fn encoded_len<W>(args: &[Arg<W>]) -> usize {
    args.iter().fold(0usize, |n, a| n.saturating_add(a.tag().wire_size()))
}

/// A typed argv writer over a caller's buffer.
///
/// Each method appends one record and returns `&mut Self` for chaining, or an [`EncodeError`]
/// (naming the argument's index) without writing anything.
#[derive(Debug)]
pub struct ArgvBuilder<'b> {
    out: &'b mut [u8],
    /// Bytes written. INVARIANT: `len <= out.len()` and `len <= MAX_KERNEL_ARGS_BYTES`.
    len: usize,
    count: usize,
}

#[cfg(feature = "defmt")]
impl defmt::Format for ArgvBuilder<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "ArgvBuilder {{ len: {=usize}, count: {=usize} }}", self.len, self.count)
    }
}

impl<'b> ArgvBuilder<'b> {
    /// A builder that writes into `out`, starting at its first byte.
    pub fn new(out: &'b mut [u8]) -> ArgvBuilder<'b> {
        ArgvBuilder { out, len: 0, count: 0 }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records written so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        self.out.get(..self.len).unwrap_or_default()
    }

    /// Ends the builder, returning the encoded argv (borrowed from the caller's buffer).
    pub fn finish(self) -> &'b [u8] {
        let ArgvBuilder { out, len, .. } = self;
        out.get(..len).unwrap_or_default()
    }

    /// Appends any argument, parsed or snapshot.
    pub fn push<W: AsGuestRange>(&mut self, arg: &Arg<W>) -> Result<&mut Self, EncodeError> {
        match arg {
            Arg::I32(v) => self.i32(*v),
            Arg::I64(v) => self.i64(*v),
            Arg::F32(v) => self.f32_bits(*v),
            Arg::F64(v) => self.f64_bits(*v),
            Arg::U32(v) => self.u32(*v),
            Arg::U64(v) => self.u64(*v),
            Arg::Ptr(w) => {
                let GuestRange { guest_offset, len } = w.guest_range();
                self.ptr(guest_offset, len)
            }
        }
    }

    /// Appends an `i32`.
    pub fn i32(&mut self, v: i32) -> Result<&mut Self, EncodeError> {
        self.record(ArgTag::I32, le::I32::new(v))
    }

    /// Appends an `i64`.
    pub fn i64(&mut self, v: i64) -> Result<&mut Self, EncodeError> {
        self.record(ArgTag::I64, le::I64::new(v))
    }

    /// Appends an `f32`.
    pub fn f32(&mut self, v: f32) -> Result<&mut Self, EncodeError> {
        self.f32_bits(F32Bits::from_f32(v))
    }

    /// Appends an `f32` given as raw bits (any NaN payload is kept).
    pub fn f32_bits(&mut self, v: F32Bits) -> Result<&mut Self, EncodeError> {
        self.record(ArgTag::F32, le::U32::new(v.0))
    }

    /// Appends an `f64`.
    pub fn f64(&mut self, v: f64) -> Result<&mut Self, EncodeError> {
        self.f64_bits(F64Bits::from_f64(v))
    }

    /// Appends an `f64` given as raw bits (any NaN payload is kept).
    pub fn f64_bits(&mut self, v: F64Bits) -> Result<&mut Self, EncodeError> {
        self.record(ArgTag::F64, le::U64::new(v.0))
    }

    /// Appends a `u32`.
    pub fn u32(&mut self, v: u32) -> Result<&mut Self, EncodeError> {
        self.record(ArgTag::U32, le::U32::new(v))
    }

    /// Appends a `u64`.
    pub fn u64(&mut self, v: u64) -> Result<&mut Self, EncodeError> {
        self.record(ArgTag::U64, le::U64::new(v))
    }

    /// Appends a pointer window: `len` bytes at `guest_offset` in the guest's memory.
    pub fn ptr(&mut self, guest_offset: u32, len: u32) -> Result<&mut Self, EncodeError> {
        self.record(
            ArgTag::Ptr,
            PtrValue { guest_offset: le::U32::new(guest_offset), len: le::U32::new(len) },
        )
    }

    /// Appends a pointer window covering `data`, for guest code: on wasm32 a slice's address is
    /// its offset in linear memory. Fails with [`EncodeError::AddressOutOfRange`] where the
    /// address or the byte length does not fit in 32 bits (a 64-bit host).
    pub fn slice<T>(&mut self, data: &[T]) -> Result<&mut Self, EncodeError> {
        let index = self.count;
        let offset =
            u32::try_from(data.as_ptr().addr()).map_err(|_| EncodeError::AddressOutOfRange { index })?;
        let len = u32::try_from(core::mem::size_of_val(data))
            .map_err(|_| EncodeError::AddressOutOfRange { index })?;
        self.ptr(offset, len)
    }

    fn record<V: IntoBytes + Immutable + Unaligned>(
        &mut self,
        tag: ArgTag,
        value: V,
    ) -> Result<&mut Self, EncodeError> {
        let index = self.count;
        if index >= MAX_KERNEL_ARGS {
            return Err(EncodeError::TooManyArgs { index, max: MAX_KERNEL_ARGS });
        }
        let end = self.len.saturating_add(tag.wire_size());
        if end > MAX_KERNEL_ARGS_BYTES {
            return Err(EncodeError::TooManyBytes { index, len: end, max: MAX_KERNEL_ARGS_BYTES });
        }
        let too_small = EncodeError::BufferTooSmall { index, needed: end, available: self.out.len() };
        let dst = self.out.get_mut(self.len..end).ok_or(too_small)?;
        RecordLayout { tag: tag.byte(), value }.write_to(dst).map_err(|_| too_small)?;
        self.len = end;
        self.count = index.saturating_add(1);
        Ok(self)
    }
}
