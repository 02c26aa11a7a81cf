//! Parsed arguments: [`LoweredArg`] (with its checked window) and the pointer-free
//! [`LoweredArgSnapshot`].
//!
//! Both are the one generic enum [`Arg`], differing only in what a pointer argument holds.
//! Floats are kept as their raw IEEE-754 bits ([`F32Bits`], [`F64Bits`]) so that NaN payloads
//! survive a round trip and values compare exactly.

use core::fmt;

use crate::memory::{GuestRange, GuestWindow};
use crate::wire::ArgTag;

/// A 32-bit float kept as its raw bits; equality and hashing compare bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct F32Bits(pub u32);

impl F32Bits {
    /// The bits of `value`.
    #[inline]
    pub const fn from_f32(value: f32) -> F32Bits {
        F32Bits(value.to_bits())
    }

    /// The float these bits encode.
    #[inline]
    pub const fn to_f32(self) -> f32 {
        f32::from_bits(self.0)
    }
}

impl fmt::Debug for F32Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({:#010x})", self.to_f32(), self.0)
    }
}

/// A 64-bit float kept as its raw bits; equality and hashing compare bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct F64Bits(pub u64);

impl F64Bits {
    /// The bits of `value`.
    #[inline]
    pub const fn from_f64(value: f64) -> F64Bits {
        F64Bits(value.to_bits())
    }

    /// The float these bits encode.
    #[inline]
    pub const fn to_f64(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl fmt::Debug for F64Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({:#018x})", self.to_f64(), self.0)
    }
}

/// One kernel argument; `W` is what a pointer argument holds.
///
/// Use it through its two aliases: [`LoweredArg`] (parsed, with a checked [`GuestWindow`]) and
/// [`LoweredArgSnapshot`] (pointer-free, with a [`GuestRange`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Arg<W> {
    /// `i32` (tag `0x01`).
    I32(i32),
    /// `i64` (tag `0x02`).
    I64(i64),
    /// `f32` (tag `0x03`).
    F32(F32Bits),
    /// `f64` (tag `0x04`).
    F64(F64Bits),
    /// `u32` (tag `0x05`).
    U32(u32),
    /// `u64` (tag `0x06`).
    U64(u64),
    /// A pointer window into guest memory (tag `0x07`).
    Ptr(W),
}

/// A single fully parsed and bounds-checked kernel argument.
///
/// A pointer argument's [`GuestWindow`] lives no longer than the borrow of guest memory it was
/// checked against.
pub type LoweredArg<'m> = Arg<GuestWindow<'m>>;

/// The pointer-free, `Copy + Send + Sync` view of a [`LoweredArg`]; also what a guest encodes.
pub type LoweredArgSnapshot = Arg<GuestRange>;

impl<W> Arg<W> {
    /// The argument's wire tag.
    #[inline]
    pub const fn tag(&self) -> ArgTag {
        match self {
            Arg::I32(_) => ArgTag::I32,
            Arg::I64(_) => ArgTag::I64,
            Arg::F32(_) => ArgTag::F32,
            Arg::F64(_) => ArgTag::F64,
            Arg::U32(_) => ArgTag::U32,
            Arg::U64(_) => ArgTag::U64,
            Arg::Ptr(_) => ArgTag::Ptr,
        }
    }

    /// The same argument with its pointer payload mapped through `f`.
    #[inline]
    fn map_ptr<V>(self, f: impl FnOnce(W) -> V) -> Arg<V> {
        match self {
            Arg::I32(v) => Arg::I32(v),
            Arg::I64(v) => Arg::I64(v),
            Arg::F32(v) => Arg::F32(v),
            Arg::F64(v) => Arg::F64(v),
            Arg::U32(v) => Arg::U32(v),
            Arg::U64(v) => Arg::U64(v),
            Arg::Ptr(w) => Arg::Ptr(f(w)),
        }
    }
}

/// Something that names a window in guest memory: a checked [`GuestWindow`] or a bare
/// [`GuestRange`]. Lets the encoder take either kind of argument list.
pub trait AsGuestRange {
    /// The window's guest offset and length.
    fn guest_range(&self) -> GuestRange;
}

impl AsGuestRange for GuestRange {
    #[inline]
    fn guest_range(&self) -> GuestRange {
        *self
    }
}

impl AsGuestRange for GuestWindow<'_> {
    #[inline]
    fn guest_range(&self) -> GuestRange {
        self.range()
    }
}

impl<W: AsGuestRange + Copy> Arg<W> {
    /// The pointer-free snapshot of this argument.
    #[inline]
    pub fn snapshot(&self) -> LoweredArgSnapshot {
        self.map_ptr(|w| w.guest_range())
    }
}

impl From<&LoweredArg<'_>> for LoweredArgSnapshot {
    #[inline]
    fn from(arg: &LoweredArg<'_>) -> LoweredArgSnapshot {
        arg.snapshot()
    }
}

impl From<LoweredArg<'_>> for LoweredArgSnapshot {
    #[inline]
    fn from(arg: LoweredArg<'_>) -> LoweredArgSnapshot {
        arg.snapshot()
    }
}

impl From<i32> for LoweredArgSnapshot {
    fn from(v: i32) -> Self {
        Arg::I32(v)
    }
}
impl From<i64> for LoweredArgSnapshot {
    fn from(v: i64) -> Self {
        Arg::I64(v)
    }
}
impl From<f32> for LoweredArgSnapshot {
    fn from(v: f32) -> Self {
        Arg::F32(F32Bits::from_f32(v))
    }
}
impl From<f64> for LoweredArgSnapshot {
    fn from(v: f64) -> Self {
        Arg::F64(F64Bits::from_f64(v))
    }
}
impl From<u32> for LoweredArgSnapshot {
    fn from(v: u32) -> Self {
        Arg::U32(v)
    }
}
impl From<u64> for LoweredArgSnapshot {
    fn from(v: u64) -> Self {
        Arg::U64(v)
    }
}
impl From<GuestRange> for LoweredArgSnapshot {
    fn from(v: GuestRange) -> Self {
        Arg::Ptr(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_copy<T: Send + Sync + Copy>() {}

    #[test]
    fn snapshot_is_send_sync_copy() {
        assert_send_sync_copy::<LoweredArgSnapshot>();
    }

    #[test]
    fn floats_compare_by_bits() {
        let quiet = F32Bits(0x7fc0_0000);
        let payload = F32Bits(0x7fc0_0001);
        assert_ne!(LoweredArgSnapshot::F32(quiet), LoweredArgSnapshot::F32(payload));
        assert_eq!(LoweredArgSnapshot::F32(payload), LoweredArgSnapshot::F32(F32Bits(0x7fc0_0001)));
        assert_ne!(LoweredArgSnapshot::from(0.0f64), LoweredArgSnapshot::from(-0.0f64));
        assert_eq!(F64Bits::from_f64(1.5).to_f64(), 1.5);
    }
}
