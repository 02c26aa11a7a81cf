//! The wire format in code: the tags ([`ArgTag`], whose docs carry the table) and each
//! record's byte layout. The prose version with worked examples is `docs/wire-format.md`.
//!
//! Each record's layout is a `#[repr(C)]` [`RecordLayout`] of a tag byte and an unaligned
//! little-endian value type from [`zerocopy::little_endian`]; every size in this crate is
//! derived from those layouts, never written as a number. The layouts are this crate's own
//! (`pub(crate)`): what users see of the format is [`ArgTag`] and its sizes.

use core::mem::size_of;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, little_endian as le};

/// Tag byte identifying a single kernel-argument record's type: the wire format.
///
/// A record is one tag byte, then the value in little-endian order, with no padding between
/// records:
///
/// | tag    | type  | value bytes                                | wire size (incl. tag) |
/// |--------|-------|--------------------------------------------|-----------------------|
/// | `0x01` | `i32` | 4                                          | 5                     |
/// | `0x02` | `i64` | 8                                          | 9                     |
/// | `0x03` | `f32` | 4 (IEEE-754 bits)                          | 5                     |
/// | `0x04` | `f64` | 8 (IEEE-754 bits)                          | 9                     |
/// | `0x05` | `u32` | 4                                          | 5                     |
/// | `0x06` | `u64` | 8                                          | 9                     |
/// | `0x07` | `ptr` | 4 (guest offset, `u32`) + 4 (length, `u32`) | 9                     |
///
/// Every other tag byte (`0x00`, `0x08..=0xFF`) is invalid. The discriminants are the wire
/// values and are frozen ABI; the prose specification with worked examples is
/// `docs/wire-format.md`.
///
/// ```
/// use kernel_args_core::{ArgTag, MAX_RECORD_SIZE};
///
/// assert_eq!(ArgTag::from_byte(0x07), Some(ArgTag::Ptr));
/// assert_eq!((ArgTag::Ptr.value_size(), ArgTag::Ptr.wire_size()), (8, 9));
/// assert_eq!(ArgTag::from_byte(0x08), None);
/// assert_eq!(MAX_RECORD_SIZE, 9);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum ArgTag {
    /// `0x01`: a signed 32-bit integer.
    I32 = 0x01,
    /// `0x02`: a signed 64-bit integer.
    I64 = 0x02,
    /// `0x03`: a 32-bit IEEE-754 float, carried as its raw bits.
    F32 = 0x03,
    /// `0x04`: a 64-bit IEEE-754 float, carried as its raw bits.
    F64 = 0x04,
    /// `0x05`: an unsigned 32-bit integer.
    U32 = 0x05,
    /// `0x06`: an unsigned 64-bit integer.
    U64 = 0x06,
    /// `0x07`: a pointer window into guest memory: `u32` offset, then `u32` byte length.
    Ptr = 0x07,
}

/// One record on the wire: the tag byte followed by the little-endian value `V`.
///
/// `V` is one of the value layouts below; all of them are [`Unaligned`], so the record has no
/// padding and `size_of::<RecordLayout<V>>()` is exactly the record's wire size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct RecordLayout<V> {
    /// The tag byte ([`ArgTag`] as `u8`).
    pub(crate) tag: u8,
    /// The value, little-endian.
    pub(crate) value: V,
}

/// The value layout of a [`ArgTag::Ptr`] record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct PtrValue {
    /// Byte offset of the window's start in guest linear memory.
    pub(crate) guest_offset: le::U32,
    /// Byte length of the window the kernel may access.
    pub(crate) len: le::U32,
}

/// Value layout of an `i32` record.
pub(crate) type I32Value = le::I32;
/// Value layout of an `i64` record.
pub(crate) type I64Value = le::I64;
/// Value layout of an `f32` record: the raw IEEE-754 bits, so NaN payloads survive.
pub(crate) type F32Value = le::U32;
/// Value layout of an `f64` record: the raw IEEE-754 bits, so NaN payloads survive.
pub(crate) type F64Value = le::U64;
/// Value layout of a `u32` record.
pub(crate) type U32Value = le::U32;
/// Value layout of a `u64` record.
pub(crate) type U64Value = le::U64;

impl ArgTag {
    /// Every tag, in wire-value order.
    pub const ALL: [ArgTag; 7] =
        [ArgTag::I32, ArgTag::I64, ArgTag::F32, ArgTag::F64, ArgTag::U32, ArgTag::U64, ArgTag::Ptr];

    /// The tag for a wire byte, or `None` for an unknown byte (`0x00`, `0x08..=0xFF`).
    #[inline]
    pub const fn from_byte(byte: u8) -> Option<ArgTag> {
        Some(match byte {
            0x01 => ArgTag::I32,
            0x02 => ArgTag::I64,
            0x03 => ArgTag::F32,
            0x04 => ArgTag::F64,
            0x05 => ArgTag::U32,
            0x06 => ArgTag::U64,
            0x07 => ArgTag::Ptr,
            _ => return None,
        })
    }

    /// The tag's wire byte.
    #[inline]
    pub const fn byte(self) -> u8 {
        self as u8
    }

    /// Number of value bytes that follow the tag byte.
    #[inline]
    pub const fn value_size(self) -> usize {
        match self {
            ArgTag::I32 => size_of::<I32Value>(),
            ArgTag::I64 => size_of::<I64Value>(),
            ArgTag::F32 => size_of::<F32Value>(),
            ArgTag::F64 => size_of::<F64Value>(),
            ArgTag::U32 => size_of::<U32Value>(),
            ArgTag::U64 => size_of::<U64Value>(),
            ArgTag::Ptr => size_of::<PtrValue>(),
        }
    }

    /// The record's whole size on the wire, tag byte included.
    #[inline]
    pub const fn wire_size(self) -> usize {
        match self {
            ArgTag::I32 => size_of::<RecordLayout<I32Value>>(),
            ArgTag::I64 => size_of::<RecordLayout<I64Value>>(),
            ArgTag::F32 => size_of::<RecordLayout<F32Value>>(),
            ArgTag::F64 => size_of::<RecordLayout<F64Value>>(),
            ArgTag::U32 => size_of::<RecordLayout<U32Value>>(),
            ArgTag::U64 => size_of::<RecordLayout<U64Value>>(),
            ArgTag::Ptr => size_of::<RecordLayout<PtrValue>>(),
        }
    }

    /// The type's name as this project spells it everywhere (`"i32"`, ..., `"ptr"`).
    #[inline]
    pub const fn name(self) -> &'static str {
        match self {
            ArgTag::I32 => "i32",
            ArgTag::I64 => "i64",
            ArgTag::F32 => "f32",
            ArgTag::F64 => "f64",
            ArgTag::U32 => "u32",
            ArgTag::U64 => "u64",
            ArgTag::Ptr => "ptr",
        }
    }

    /// The tag for a type name as returned by [`ArgTag::name`].
    pub fn from_name(name: &str) -> Option<ArgTag> {
        ArgTag::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl core::fmt::Display for ArgTag {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_spec_table() {
        let expected = [
            (0x01, 4, 5),
            (0x02, 8, 9),
            (0x03, 4, 5),
            (0x04, 8, 9),
            (0x05, 4, 5),
            (0x06, 8, 9),
            (0x07, 8, 9),
        ];
        for (tag, (byte, value, wire)) in ArgTag::ALL.into_iter().zip(expected) {
            assert_eq!(tag.byte(), byte);
            assert_eq!(tag.value_size(), value, "{tag}");
            assert_eq!(tag.wire_size(), wire, "{tag}");
            assert_eq!(ArgTag::from_byte(byte), Some(tag));
            assert_eq!(ArgTag::from_name(tag.name()), Some(tag));
        }
        assert_eq!(crate::MAX_RECORD_SIZE, 9);
    }

    #[test]
    fn every_other_byte_is_unknown() {
        let known = (0u8..=255).filter(|b| ArgTag::from_byte(*b).is_some()).count();
        assert_eq!(known, 7);
        assert_eq!(ArgTag::from_byte(0x00), None);
        assert_eq!(ArgTag::from_byte(0x08), None);
        assert_eq!(ArgTag::from_byte(0xFF), None);
    }

    #[test]
    fn record_layout_is_tag_then_little_endian_value() {
        let rec = RecordLayout { tag: ArgTag::U32.byte(), value: U32Value::new(0x0403_0201) };
        assert_eq!(rec.as_bytes(), &[0x05, 0x01, 0x02, 0x03, 0x04]);
        let ptr = RecordLayout {
            tag: ArgTag::Ptr.byte(),
            value: PtrValue { guest_offset: le::U32::new(0x10), len: le::U32::new(0x0100) },
        };
        assert_eq!(ptr.as_bytes(), &[0x07, 0x10, 0, 0, 0, 0x00, 0x01, 0, 0]);
    }
}
