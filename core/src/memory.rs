//! Guest linear memory as the parser sees it, and the pointer windows checked against it
//! (see [`GuestMemory`]).

use core::marker::PhantomData;

/// The access a [`GuestMemory`] grants to the host pointers of its windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Access {
    /// Only the length is known: windows carry no host pointer (inspection, dry runs).
    LengthOnly,
    /// Built from a shared borrow: host pointers may be read through, never written.
    ReadOnly,
    /// Built from an exclusive borrow: host pointers may be read and written (a GPU writing
    /// results back into guest memory needs this).
    ReadWrite,
}

/// The guest's linear memory, borrowed for `'m`, against which pointer windows are checked.
///
/// A [`GuestMemory`] borrows the guest's linear memory for `'m` (or, for inspection tools,
/// only states its length). Every [`GuestWindow`] the parser produces carries that lifetime, so
/// growing, freeing or otherwise touching the memory while a parsed argument lives is a compile
/// error:
///
/// ```compile_fail,E0499
/// use kernel_args_core::{GuestMemory, ParsedArgv, parse_argv};
///
/// let mut memory = vec![0u8; 256];
/// let guest = GuestMemory::exclusive(&mut memory);
/// let args: ParsedArgv = parse_argv(&[0x07, 0, 0, 0, 0, 16, 0, 0, 0], &guest).unwrap();
/// memory.resize(1 << 20, 0); // error: `memory` is still borrowed by `args`
/// drop(args);
/// ```
///
/// Windows hold raw host pointers and are therefore neither `Send` nor `Sync`; the
/// pointer-free [`GuestRange`] (and [`LoweredArgSnapshot`](crate::LoweredArgSnapshot)) is what
/// crosses threads and reaches embedders. This crate never dereferences a host pointer.
///
/// `Debug` shows the length and the access, never the host address.
pub struct GuestMemory<'m> {
    /// Start of the memory; null for [`Access::LengthOnly`].
    base: *mut u8,
    len: u64,
    access: Access,
    // Holds the borrow the memory was given with (exclusive for `ReadWrite`) for all of `'m`.
    _borrow: PhantomData<&'m mut [u8]>,
}

impl<'m> GuestMemory<'m> {
    /// Borrows `memory` exclusively for `'m`: windows carry read-write host pointers.
    ///
    /// Hosts that let a device write results back into guest memory must use this
    /// constructor, so that no other borrow of the memory exists while the launch runs.
    pub fn exclusive(memory: &'m mut [u8]) -> GuestMemory<'m> {
        GuestMemory {
            len: slice_len(memory.len()),
            base: memory.as_mut_ptr(),
            access: Access::ReadWrite,
            _borrow: PhantomData,
        }
    }

    /// Borrows `memory` shared for `'m`: windows carry read-only host pointers.
    pub fn shared(memory: &'m [u8]) -> GuestMemory<'m> {
        GuestMemory {
            len: slice_len(memory.len()),
            base: memory.as_ptr().cast_mut(),
            access: Access::ReadOnly,
            _borrow: PhantomData,
        }
    }

    /// The access this memory grants to the host pointers of its windows.
    #[inline]
    pub fn access(&self) -> Access {
        self.access
    }

    /// The memory's length in bytes.
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `true` when the memory has no bytes (only zero-length windows at offset 0 fit).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks the window `[guest_offset, guest_offset + len)` and, when it lies inside the
    /// memory, returns it with its host pointer. The end is computed in `u64`, which cannot
    /// overflow; a zero-length window at `guest_offset == len()` is inside.
    #[inline]
    pub fn window(&self, guest_offset: u32, len: u32) -> Option<GuestWindow<'m>> {
        let end = u64::from(guest_offset).checked_add(u64::from(len))?;
        if end > self.len {
            return None;
        }
        let host = if self.base.is_null() {
            core::ptr::null_mut()
        } else {
            // In bounds of the borrowed allocation, so the offset fits `usize` and `wrapping_add`
            // yields an in-bounds pointer with the base's provenance.
            self.base.wrapping_add(usize::try_from(guest_offset).ok()?)
        };
        Some(GuestWindow {
            range: GuestRange { guest_offset, len },
            host,
            access: self.access,
            _borrow: PhantomData,
        })
    }
}

impl GuestMemory<'static> {
    /// A memory of which only the length is known, for inspection tools and dry runs: windows
    /// are checked against `len` but carry no host pointer.
    pub fn length_only(len: u64) -> GuestMemory<'static> {
        GuestMemory { base: core::ptr::null_mut(), len, access: Access::LengthOnly, _borrow: PhantomData }
    }
}

/// `usize` to `u64` never loses bits on any supported target (16-bit `usize` is not supported
/// by this crate's dependencies, and no target has a `usize` wider than 64 bits).
#[inline]
fn slice_len(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// A pointer argument's window in guest memory, without any host pointer: what a guest sends
/// and what may cross threads. Not by itself checked against any memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GuestRange {
    /// Byte offset of the window's start in guest memory.
    pub guest_offset: u32,
    /// Byte length of the window.
    pub len: u32,
}

impl GuestRange {
    /// The window's end (`guest_offset + len`), computed without overflow.
    #[inline]
    pub fn end(&self) -> u64 {
        u64::from(self.guest_offset).saturating_add(u64::from(self.len))
    }
}

/// A bounds-checked pointer window: its guest range plus the host pointer to its first byte.
///
/// Produced only by [`GuestMemory::window`] (and so by the parser), which guarantees
/// `guest_offset + len <= memory.len()`. The lifetime `'m` is the borrow of guest memory it
/// was checked against. `Debug` shows the window (guest offset, length, access), never the host
/// address.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct GuestWindow<'m> {
    range: GuestRange,
    host: *mut u8,
    access: Access,
    _borrow: PhantomData<&'m mut [u8]>,
}

impl<'m> GuestWindow<'m> {
    /// The window's guest range (offset and length).
    #[inline]
    pub fn range(&self) -> GuestRange {
        self.range
    }

    /// Byte offset of the window's start in guest memory.
    #[inline]
    pub fn guest_offset(&self) -> u32 {
        self.range.guest_offset
    }

    /// Byte length of the window.
    #[inline]
    pub fn len(&self) -> u32 {
        self.range.len
    }

    /// `true` for a zero-length window.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.range.len == 0
    }

    /// The access its memory granted.
    #[inline]
    pub fn access(&self) -> Access {
        self.access
    }

    /// Host pointer to the window's first byte, valid for reads of `len()` bytes while `'m`
    /// lasts; `None` for a [`GuestMemory::length_only`] memory.
    #[inline]
    pub fn host_ptr(&self) -> Option<*const u8> {
        (!self.host.is_null()).then_some(self.host.cast_const())
    }

    /// Host pointer valid for reads and writes of `len()` bytes while `'m` lasts; `Some` only
    /// when the memory was borrowed with [`GuestMemory::exclusive`].
    #[inline]
    pub fn host_ptr_mut(&self) -> Option<*mut u8> {
        (self.access == Access::ReadWrite && !self.host.is_null()).then_some(self.host)
    }
}

impl core::fmt::Debug for GuestMemory<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GuestMemory").field("len", &self.len).field("access", &self.access).finish()
    }
}

impl core::fmt::Debug for GuestWindow<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GuestWindow")
            .field("guest_offset", &self.range.guest_offset)
            .field("len", &self.range.len)
            .field("access", &self.access)
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for GuestMemory<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "GuestMemory {{ len: {=u64}, access: {} }}", self.len, self.access)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for GuestWindow<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "GuestWindow {{ guest_offset: {=u32}, len: {=u32} }}",
            self.range.guest_offset,
            self.range.len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bounds() {
        let mut bytes = [0u8; 16];
        let mem = GuestMemory::exclusive(&mut bytes);
        assert!(mem.window(0, 16).is_some(), "whole memory");
        assert!(mem.window(16, 0).is_some(), "zero-length at the end");
        assert!(mem.window(17, 0).is_none(), "zero-length past the end");
        assert!(mem.window(8, 9).is_none(), "one byte past the end");
        assert!(mem.window(u32::MAX, u32::MAX).is_none(), "end beyond u32");
    }

    #[test]
    fn debug_shows_the_window_not_the_address() {
        let mut bytes = [0u8; 16];
        let mem = GuestMemory::exclusive(&mut bytes);
        let w = mem.window(4, 8).unwrap();
        let mut s = heapless::String::<128>::new();
        core::fmt::write(&mut s, format_args!("{w:?} {mem:?}")).unwrap();
        assert_eq!(
            s,
            "GuestWindow { guest_offset: 4, len: 8, access: ReadWrite } GuestMemory { len: 16, access: ReadWrite }"
        );
    }

    #[test]
    fn host_pointers_follow_the_access_mode() {
        let mut bytes = [0u8; 8];
        let base = bytes.as_mut_ptr();
        {
            let mem = GuestMemory::exclusive(&mut bytes);
            let w = mem.window(3, 2).unwrap();
            assert_eq!(w.host_ptr_mut(), Some(base.wrapping_add(3)));
            assert_eq!(w.host_ptr(), Some(base.wrapping_add(3).cast_const()));
        }
        let mem = GuestMemory::shared(&bytes);
        let w = mem.window(3, 2).unwrap();
        assert_eq!(w.host_ptr(), Some(base.wrapping_add(3).cast_const()));
        assert_eq!(w.host_ptr_mut(), None, "a shared borrow never yields a writable pointer");

        let mem = GuestMemory::length_only(1 << 32);
        let w = mem.window(u32::MAX, 1).unwrap();
        assert_eq!((w.host_ptr(), w.host_ptr_mut()), (None, None));
        assert_eq!(w.range(), GuestRange { guest_offset: u32::MAX, len: 1 });
        assert_eq!(w.range().end(), 1 << 32);
    }
}
