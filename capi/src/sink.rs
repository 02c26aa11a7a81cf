//! The parser's sink over the caller's `kargs_arg` array. Safe code: `ffi` turns the C array
//! into the slice this writes.

use core::mem::MaybeUninit;

use kernel_args_core::{ArgSink, LoweredArg, SinkFull};

use crate::types::KargsArg;

/// Writes each argument the parser accepts straight into the next entry of the caller's array:
/// no copy, no allocation. Its capacity is the slice's length, which `ffi` caps at
/// `MAX_KERNEL_ARGS`, so the parser's record cap is the caller's capacity.
pub(crate) struct ArgArray<'a> {
    out: &'a mut [MaybeUninit<KargsArg>],
    /// Entries written. INVARIANT: `len <= out.len()`.
    len: usize,
    /// Byte offset in argv of the next record: the records are contiguous, so it is the sum of
    /// the wire sizes of the arguments so far.
    offset: usize,
    /// The caller's memory (NULL: no host pointers).
    base: *mut u8,
}

impl<'a> ArgArray<'a> {
    pub(crate) fn new(out: &'a mut [MaybeUninit<KargsArg>], base: *mut u8) -> Self {
        ArgArray { out, len: 0, offset: 0, base }
    }

    /// The number of entries written.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl<'m> ArgSink<'m> for ArgArray<'_> {
    fn capacity(&self) -> usize {
        self.out.len()
    }

    /// Resets every entry written so far to zeros: after an error no entry holds an argument
    /// (or a host pointer) of the refused buffer.
    fn clear(&mut self) {
        for slot in self.out.iter_mut().take(self.len) {
            slot.write(KargsArg::ZERO);
        }
        self.len = 0;
        self.offset = 0;
    }

    fn push(&mut self, _index: usize, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
        let slot = self.out.get_mut(self.len).ok_or(SinkFull)?;
        slot.write(KargsArg::new(arg, self.offset, self.base));
        // `len < out.len()` here, and `offset` stays below 4096 + 9: neither saturates.
        self.len = self.len.saturating_add(1);
        self.offset = self.offset.saturating_add(arg.tag().wire_size());
        Ok(())
    }
}
