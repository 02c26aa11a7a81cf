//! The `void**` parameter array that `cuLaunchKernel` reads, built without allocating.
//!
//! `cuLaunchKernel` takes `kernelParams`, an array of `N` pointers, pointer `i` addressing the
//! value of the kernel's parameter `i` in the host's native byte order. The driver copies each
//! value (as many bytes as the kernel's parameter declares) when the launch is enqueued, so
//! the array and the values need to live only for the call.
//!
//! [`KernelParamStorage`] holds the values: one 8-byte, 8-aligned slot per argument (a `u64`
//! whose native bytes are the value's, zero-padded past a 4-byte value) in a fixed-capacity
//! array (the capacity `N` is a const generic, [`MAX_KERNEL_ARGS`] by default, like the core
//! parser's). A host keeps one storage and fills it in place for every
//! launch with [`KernelParamStorage::fill`], from the launch's checked arguments: only the slots
//! in use are written, and nothing of the capacity's size is zeroed or copied per launch (see
//! `docs/performance.md`). A pointer argument's slot holds the device-visible address the launch
//! will use, which `fill`'s caller gives for each window: its host pointer into guest memory in
//! direct mode, the device buffer it was staged into in staged mode; for a fenced kernel, the
//! window's offset into its fence instead (`crate::fence`).
//!
//! The storage also keeps the `void**` array, as the addresses of its own slots (it holds no
//! pointer, so it is `Send` and `Sync` and can be moved freely): [`KernelParamStorage::with_params`]
//! makes it the first time and again whenever the storage has moved since, and otherwise only
//! lends it, so a launch writes no table entry. It lends it borrowed with the whole storage
//! for as long as its closure runs: while a table is in use the storage can be neither moved
//! nor changed, so no entry can dangle.
//!
//! A kernel whose parameter list nobody knows (no declaration, a PTX the parser cannot read, a
//! driver without `cuFuncGetParamInfo`: launched only for a trusted guest) gets
//! [`with_padded_params`](KernelParamStorage::with_padded_params) instead: a table as long as
//! any kernel's parameter list ([`MAX_KERNEL_PARAMS`] entries) in a [`PaddingScratch`], each
//! argument's entry pointing at its value followed by zeros to [`MAX_PARAM_BYTES`], every other
//! entry at zeros as long, so however many parameters the kernel has and however large each
//! is, the driver reads from each entry only that argument's value and zeros, never another
//! argument and never memory outside the scratch.
//!
//! ```
//! use kernel_args::LaunchArgs;
//! use kernel_args_core::{GuestMemory, GuestRange, LoweredArgSnapshot};
//! use kernel_args_cuda::{KernelParamStorage, StorageError};
//!
//! let args = [LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 0, len: 16 }), LoweredArgSnapshot::U32(4)];
//! let args = LaunchArgs::from_slice(&args).expect("at most MAX_KERNEL_ARGS arguments");
//! let mut memory = vec![0u8; 64];
//! let guest = GuestMemory::exclusive(&mut memory);
//! let mut storage = KernelParamStorage::<16>::new(); // kept across launches
//!
//! // Direct: each window's writable host pointer.
//! storage.fill(&args, |index, range| {
//!     let window = guest.window(range.guest_offset, range.len).ok_or(StorageError::Unplaced { index })?;
//!     let host = window.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
//!     Ok::<u64, StorageError>(host.expose_provenance() as u64)
//! })?;
//! assert_eq!(storage.slot(1), Some(&[4, 0, 0, 0, 0, 0, 0, 0])); // a u32 4, zero-padded
//! let n = storage.with_params(|table| {
//!     let kernel_params = table.as_mut_ptr(); // what cuLaunchKernel takes
//!     assert!(!kernel_params.is_null());
//!     table.len()
//! });
//! assert_eq!(n, 2);
//!
//! // Staged: the device address each window was copied to.
//! storage.fill(&args, |_, _| Ok::<u64, StorageError>(0x7f00_0000_1000))?;
//! assert_eq!(storage.slot(0), Some(&0x7f00_0000_1000u64.to_ne_bytes()));
//! # Ok::<(), StorageError>(())
//! ```

// One of the crate's two modules with `unsafe` (see the crate docs).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;

use kernel_args::LaunchArgs;
use kernel_args::{AbiError, HostError};
use kernel_args_core::{ArgTag, GuestRange, MAX_KERNEL_ARGS};
use zerocopy::IntoBytes;

/// The most bytes of parameters a CUDA kernel can take (CUDA 12.1 and later; 4 KiB before).
pub const MAX_PARAM_BYTES: usize = 32_764;

/// The most parameters a kernel can have: each takes at least one byte of the
/// [`MAX_PARAM_BYTES`] of the parameter space.
pub const MAX_KERNEL_PARAMS: usize = MAX_PARAM_BYTES;

/// 8-byte words between two values of a padded table: each value is followed by zeros to at
/// least [`MAX_PARAM_BYTES`].
const PADDED_STRIDE_WORDS: usize = MAX_PARAM_BYTES.div_ceil(8);

/// Zeros as long as any parameter: what a padded table's entries past the arguments address.
/// The driver only reads it.
static ZERO_PARAMS: [u64; PADDED_STRIDE_WORDS] = [0; PADDED_STRIDE_WORDS];

// The padded table stores each pointer as a `u64` (so the scratch holding it is `Send`), which
// the driver reads as a `void*`: the same size and alignment on every host CUDA supports.
const _: () = assert!(
    core::mem::size_of::<u64>() == core::mem::size_of::<*mut c_void>()
        && core::mem::align_of::<u64>() == core::mem::align_of::<*mut c_void>()
);

/// Bytes in one parameter slot: the widest argument (an `i64`, `u64`, `f64` or a device
/// address).
pub const SLOT_SIZE: usize = 8;

/// Why a parameter storage could not be filled: the host's mistakes, never the guest's (the
/// guest's argv was checked before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageError {
    /// More arguments than the storage's capacity.
    TooManyArgs {
        /// The storage's capacity `N`.
        capacity: usize,
        /// The number of arguments given.
        got: usize,
    },
    /// Pointer argument `index` has no device-visible address: in direct mode its guest memory
    /// was not borrowed with [`GuestMemory::exclusive`](kernel_args_core::GuestMemory::exclusive)
    /// (or the window is not in it); in staged mode no device buffer was given for it.
    Unplaced {
        /// The argument's 0-based index.
        index: usize,
    },
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            StorageError::TooManyArgs { capacity, got } => {
                write!(f, "{got} kernel arguments exceed the parameter storage's capacity of {capacity}")
            }
            StorageError::Unplaced { index } => write!(
                f,
                "argument {index}: the pointer window has no device-visible address (direct mode needs \
                 guest memory borrowed with GuestMemory::exclusive; staged mode a place in the staging arena)"
            ),
        }
    }
}

impl std::error::Error for StorageError {}

impl From<StorageError> for HostError {
    fn from(e: StorageError) -> HostError {
        // Both are the host's own mistakes, never the guest's: the launcher's storage holds the
        // parser's record cap and the fence's hidden parameters, and it places every window
        // before it fills the storage. Nothing in them is for a guest to branch on.
        HostError::msg(AbiError::Internal, e.to_string())
    }
}

/// The size in bytes of the value the kernel receives for an argument with tag byte `tag`: 4 for
/// `i32`, `u32`, `f32` (the odd tags but the pointer's); 8 for `i64`, `u64`, `f64` and for a
/// pointer (a 64-bit device address).
#[inline(always)]
pub(crate) const fn slot_size(tag: u8) -> u8 {
    if tag & 1 != 0 && tag != ArgTag::Ptr.byte() { 4 } else { 8 }
}

/// The values of a launch's parameters, one 8-byte slot each, with capacity `N`.
///
/// Make one with [`new`](Self::new), keep it, and [`fill`](Self::fill) it in place for every
/// launch from the launch's checked arguments. Only the slots in use are written, and a failed
/// fill leaves the storage empty. Hand the table of [`with_params`](Self::with_params) (or
/// [`with_padded_params`](Self::with_padded_params), for a kernel whose parameters nobody
/// knows) to `cuLaunchKernel`. The storage owns no
/// heap memory and holds no pointer (so it is `Send` and `Sync` without any `unsafe impl`).
#[derive(Debug, Clone)]
pub struct KernelParamStorage<const N: usize = MAX_KERNEL_ARGS> {
    /// Each parameter's slot: a word whose native bytes are the value's, zero-padded past a
    /// 4-byte value.
    slots: [u64; N],
    len: usize,
    /// The `void**` table [`with_params`](Self::with_params) hands out, as addresses (so the
    /// storage holds no pointer): entry `i` is the address of `slots[i]` when the slots lie at
    /// `table_base`.
    ///
    /// INVARIANT: `table_base == 0` (no table yet), or `table[i] == table_base + 8 * i` for
    /// every `i`. The table is a function of `table_base` alone, so a copy of the storage (a
    /// move, a clone) carries a table that is right wherever `table_base` says it is.
    table: [u64; N],
    table_base: u64,
}

impl<const N: usize> Default for KernelParamStorage<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> KernelParamStorage<N> {
    /// An empty storage, to be filled in place for each launch. This is the one place its
    /// `N`-sized arrays are zeroed.
    pub const fn new() -> Self {
        KernelParamStorage { slots: [0; N], len: 0, table: [0; N], table_base: 0 }
    }

    /// Number of parameters stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` for a kernel without parameters.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The capacity `N`.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// The slot of parameter `index`, or `None` past the end: its [`SLOT_SIZE`] bytes, the
    /// value's native bytes first (4 of them for an `i32`, `u32` or `f32`, 8 otherwise), then
    /// zeros.
    pub fn slot(&self, index: usize) -> Option<&[u8; SLOT_SIZE]> {
        self.slots.get(..self.len)?.get(index)?.as_bytes().try_into().ok()
    }

    /// Calls `f` with the `void**` table for `cuLaunchKernel`: entry `i` the address of
    /// parameter `i`'s slot. The storage keeps the table (made the first time and again after
    /// the storage has moved, so a launch writes no entry), and lends it borrowed with the
    /// whole storage: while `f` runs the storage can neither move nor change, so every entry
    /// stays valid. The table, and any pointer taken from it, is valid only inside `f`.
    #[inline]
    pub fn with_params<R>(&mut self, f: impl FnOnce(&mut ParamTable<'_, N>) -> R) -> R {
        // Exposed on every call, so the driver (or a test) may turn an entry back into a
        // pointer to the slots as they are borrowed now.
        let base = self.slots.as_mut_ptr().expose_provenance() as u64;
        if self.table_base != base {
            let mut address = base;
            for entry in &mut self.table {
                *entry = address;
                address = address.wrapping_add(SLOT_SIZE as u64);
            }
            self.table_base = base;
        }
        f(&mut ParamTable { table: &mut self.table, len: self.len })
    }

    /// Calls `f` with a `void**` table for a kernel whose parameter list is not known (count
    /// and sizes), made in `scratch`: [`MAX_KERNEL_PARAMS`] entries; argument `i`'s entry points
    /// at its value followed by zeros to [`MAX_PARAM_BYTES`], every other entry at zeros as
    /// long. Whatever the kernel's parameters are, the driver reads from each entry only that
    /// argument's value and zeros. The scratch grows to 32 KiB per argument (4 MiB for
    /// `MAX_KERNEL_ARGS`) and the table is 256 KiB: this is the trusted-guest path only. The
    /// table, and any pointer taken from it, is valid only inside `f`.
    pub fn with_padded_params<R>(
        &self,
        scratch: &mut PaddingScratch,
        f: impl FnOnce(&mut PaddedTable<'_>) -> R,
    ) -> R {
        let PaddingScratch { values, table } = scratch;
        let len = self.len;
        let words = len.saturating_mul(PADDED_STRIDE_WORDS);
        if values.len() < words {
            values.resize(words, 0);
        }
        if table.len() != MAX_KERNEL_PARAMS {
            *table = vec![0; MAX_KERNEL_PARAMS];
        }
        // Each stride's first word: this launch's value, or 0 past the arguments (the other
        // words of every stride are never written).
        for (i, stride) in values.chunks_mut(PADDED_STRIDE_WORDS).enumerate() {
            if let Some(word) = stride.first_mut() {
                *word = match self.slots.get(i) {
                    Some(slot) if i < len => *slot,
                    _ => 0,
                };
            }
        }
        let base = values.as_mut_ptr();
        let zeros = core::ptr::from_ref(&ZERO_PARAMS).expose_provenance() as u64;
        for (i, entry) in table.iter_mut().enumerate() {
            *entry = if i < len {
                // `i * stride < len * stride <= values.len()`: in bounds, with the provenance
                // of the whole vector; its address is what the driver reads.
                base.wrapping_add(i.saturating_mul(PADDED_STRIDE_WORDS)).expose_provenance() as u64
            } else {
                zeros
            };
        }
        f(&mut PaddedTable { table, len, _values: PhantomData })
    }

    /// Fills the slots in place from a launch's checked arguments: scalars in native byte order
    /// (floats as their exact bits), each pointer argument as the address `place` gives for its
    /// window (called with the argument's index and window, in argument order): the window's
    /// host pointer in direct mode, the device address it was staged to in staged mode (a fenced
    /// kernel's offset into its fence in either). Only the
    /// slots in use are written. On error the storage is left empty, so no parameter of an
    /// earlier launch survives.
    ///
    /// # Errors
    ///
    /// [`StorageError::TooManyArgs`] past the capacity `N`; `place`'s error, for the first
    /// window it cannot place.
    #[inline]
    pub fn fill<E: From<StorageError>>(
        &mut self,
        args: &LaunchArgs,
        mut place: impl FnMut(usize, GuestRange) -> Result<u64, E>,
    ) -> Result<(), E> {
        self.len = 0;
        let len = args.len();
        let Some(slots) = self.slots.get_mut(..len) else {
            return Err(StorageError::TooManyArgs { capacity: N, got: len }.into());
        };
        // Each slot's value from the argument's bits (zero-extended to 64: on a little-endian
        // host the slot's native bytes as they are, so the run is one copy); then each
        // pointer's slot, which held its window, from `place`.
        if cfg!(target_endian = "little") {
            slots.copy_from_slice(args.bits());
        } else {
            for ((slot, &tag), &bits) in slots.iter_mut().zip(args.tag_bytes()).zip(args.bits()) {
                *slot = if slot_size(tag) == 4 {
                    let [a, b, c, d] = (bits as u32).to_ne_bytes();
                    u64::from_ne_bytes([a, b, c, d, 0, 0, 0, 0])
                } else {
                    bits
                };
            }
        }
        for (index, window) in args.pointers() {
            if let Some(slot) = slots.get_mut(index) {
                *slot = place(index, window)?;
            }
        }
        self.len = len;
        Ok(())
    }

    /// Appends `values` after the filled arguments, one 8-byte slot each: the hidden
    /// parameters a fenced kernel takes after its own (the fence's base, length and flag
    /// address). Call it after [`fill`](Self::fill); the next `fill` replaces them too.
    ///
    /// # Errors
    ///
    /// [`StorageError::TooManyArgs`] when they do not fit the capacity `N`; the storage is left
    /// empty, as a failed `fill` leaves it.
    pub fn append(&mut self, values: &[u64]) -> Result<(), StorageError> {
        let len = self.len;
        let end = len.saturating_add(values.len());
        match self.slots.get_mut(len..end) {
            Some(slots) => {
                slots.copy_from_slice(values);
                self.len = end;
                Ok(())
            }
            None => {
                self.len = 0;
                Err(StorageError::TooManyArgs { capacity: N, got: end })
            }
        }
    }
}

/// Where [`KernelParamStorage::with_padded_params`] makes its table: each value followed by
/// zeros (32 KiB per argument) and [`MAX_KERNEL_PARAMS`] entries (256 KiB), allocated on the
/// first padded launch and kept. `Send`: it holds addresses as integers.
#[derive(Debug, Default)]
pub struct PaddingScratch {
    values: Vec<u64>,
    table: Vec<u64>,
}

/// The `void**` array for a kernel whose parameter list is not known, made in a
/// [`PaddingScratch`] by [`KernelParamStorage::with_padded_params`].
///
/// INVARIANT: `table` has [`MAX_KERNEL_PARAMS`] entries, each the address of a value in the
/// scratch's values followed by zeros to at least [`MAX_PARAM_BYTES`] bytes, or of the zeros of
/// `ZERO_PARAMS`.
pub struct PaddedTable<'s> {
    table: &'s mut [u64],
    len: usize,
    /// The entries address the scratch's values, borrowed mutably with it.
    _values: PhantomData<&'s mut [u64]>,
}

impl fmt::Debug for PaddedTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PaddedTable").field("args", &self.len).field("entries", &self.table.len()).finish()
    }
}

impl PaddedTable<'_> {
    /// The number of arguments (the entries past them point at zeros).
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, as addresses: [`MAX_KERNEL_PARAMS`] of them.
    pub fn entries(&self) -> &[u64] {
        self.table
    }

    /// The `void**` for `cuLaunchKernel`'s `kernelParams`: [`MAX_KERNEL_PARAMS`] pointers.
    /// Valid while `self` is neither moved nor dropped.
    pub fn as_mut_ptr(&mut self) -> *mut *mut c_void {
        // `u64` has `*mut c_void`'s size and alignment (asserted above); the driver reads each
        // entry as a pointer.
        self.table.as_mut_ptr().cast::<*mut c_void>()
    }
}

/// A `void**` table for `cuLaunchKernel`: a [`ParamTable`] or a [`PaddedTable`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) trait KernelParams {
    /// The `kernelParams` pointer; valid while the table is neither moved nor dropped.
    fn kernel_params(&mut self) -> *mut *mut c_void;
}

impl<const N: usize> KernelParams for ParamTable<'_, N> {
    fn kernel_params(&mut self) -> *mut *mut c_void {
        self.as_mut_ptr()
    }
}

impl KernelParams for PaddedTable<'_> {
    fn kernel_params(&mut self) -> *mut *mut c_void {
        self.as_mut_ptr()
    }
}

/// The `void**` array `cuLaunchKernel` reads, borrowed from a [`KernelParamStorage`] inside
/// [`with_params`](KernelParamStorage::with_params).
///
/// Entry `i` is the address of parameter `i`'s slot, for `i` up to the storage's capacity (the
/// driver reads as many as the kernel has parameters, which the signature check makes
/// [`len`](Self::len)). Take [`as_mut_ptr`](ParamTable::as_mut_ptr) right at the launch call:
/// it points into the storage, so it must not outlive this table.
pub struct ParamTable<'s, const N: usize = MAX_KERNEL_ARGS> {
    /// The storage's table, borrowed (with the whole storage) for `'s`.
    table: &'s mut [u64; N],
    len: usize,
}

impl<const N: usize> fmt::Debug for ParamTable<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamTable").field("entries", &self.entries()).finish()
    }
}

impl<const N: usize> ParamTable<'_, N> {
    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` for a kernel without parameters.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `void**` for `cuLaunchKernel`'s `kernelParams`: pointers to 8-aligned slots, the
    /// first [`len`](Self::len) holding the parameters' values. Valid while `self` is neither
    /// moved nor dropped.
    pub fn as_mut_ptr(&mut self) -> *mut *mut c_void {
        // `u64` has `*mut c_void`'s size and alignment (asserted above); the driver reads each
        // entry as a pointer.
        self.table.as_mut_ptr().cast::<*mut c_void>()
    }

    /// The entries of the parameters, as addresses: [`len`](Self::len) of them.
    pub fn entries(&self) -> &[u64] {
        self.table.get(..self.len).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use core::mem::align_of;

    use kernel_args_core::{Arg, F32Bits, F64Bits, GuestMemory, GuestRange, LoweredArgSnapshot};

    use super::*;

    fn la(args: &[LoweredArgSnapshot]) -> LaunchArgs {
        LaunchArgs::from_slice(args).expect("at most MAX_KERNEL_ARGS arguments")
    }

    /// Reads parameter `i`'s slot back through the raw `void**` table, as the driver does.
    fn read_through_table(table: &mut ParamTable<'_, MAX_KERNEL_ARGS>, i: usize) -> [u8; SLOT_SIZE] {
        let kernel_params = table.as_mut_ptr();
        assert!(i < table.len());
        // SAFETY: `i < len <= N`, so `kernel_params + i` is inside the table's array of `N`
        // entries.
        let entry_ptr = unsafe { kernel_params.cast::<u64>().add(i) };
        // SAFETY: in bounds (above), aligned for `u64` (the table is a `[u64; N]`) and
        // initialised.
        let entry = unsafe { entry_ptr.read() };
        // The driver takes the entry as a `void*`; here the address is turned back into a
        // pointer with the provenance `with_params` exposed.
        let param = core::ptr::with_exposed_provenance::<[u8; SLOT_SIZE]>(entry as usize);
        assert_eq!(param.addr() % align_of::<u64>(), 0, "slot {i} is not 8-aligned");
        // SAFETY: `param` addresses an 8-byte slot of the storage borrowed by `table`, which
        // lives and is not written while the table exists.
        unsafe { param.read() }
    }

    /// `value` followed by zeros to a slot's size: what a slot holds.
    fn padded(value: &[u8]) -> [u8; SLOT_SIZE] {
        let mut slot = [0; SLOT_SIZE];
        slot[..value.len()].copy_from_slice(value);
        slot
    }

    /// What the kernel must read for `arg`: its native bytes, a pointer as `device_address`.
    fn native_bytes(arg: &LoweredArgSnapshot, device_address: u64) -> Vec<u8> {
        match *arg {
            Arg::I32(v) => v.to_ne_bytes().to_vec(),
            Arg::I64(v) => v.to_ne_bytes().to_vec(),
            Arg::F32(v) => v.to_f32().to_ne_bytes().to_vec(),
            Arg::F64(v) => v.to_f64().to_ne_bytes().to_vec(),
            Arg::U32(v) => v.to_ne_bytes().to_vec(),
            Arg::U64(v) => v.to_ne_bytes().to_vec(),
            Arg::Ptr(_) => device_address.to_ne_bytes().to_vec(),
        }
    }

    fn every_type() -> Vec<LoweredArgSnapshot> {
        vec![
            Arg::I32(-7),
            Arg::Ptr(GuestRange { guest_offset: 8, len: 32 }),
            Arg::I64(i64::MIN + 3),
            Arg::F32(F32Bits(0x7fc0_0001)), // a NaN with a payload: bits must survive
            Arg::F64(F64Bits::from_f64(-0.0)),
            Arg::U32(0xdead_beef),
            Arg::U64(u64::MAX - 1),
            Arg::Ptr(GuestRange { guest_offset: 40, len: 0 }),
            Arg::Ptr(GuestRange { guest_offset: 0, len: 64 }),
        ]
    }

    /// Direct placement, as the CUDA launcher makes it: the window's writable host pointer.
    fn direct<'a>(
        guest: &'a GuestMemory<'_>,
    ) -> impl FnMut(usize, GuestRange) -> Result<u64, StorageError> + 'a {
        |index, range| {
            let window =
                guest.window(range.guest_offset, range.len).ok_or(StorageError::Unplaced { index })?;
            let host = window.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
            Ok(host.expose_provenance() as u64)
        }
    }

    /// Staged placement: the next of `addresses`, in pointer order.
    fn staged(addresses: &[u64]) -> impl FnMut(usize, GuestRange) -> Result<u64, StorageError> + '_ {
        let mut next = addresses.iter();
        move |index, _| next.next().copied().ok_or(StorageError::Unplaced { index })
    }

    #[test]
    fn direct_slots_hold_native_bytes_and_host_pointers() {
        let argv = every_type();
        let mut memory = vec![0u8; 64];
        let base = memory.as_mut_ptr().addr() as u64;
        let guest = GuestMemory::exclusive(&mut memory);

        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.fill(&la(&argv), direct(&guest)).unwrap();
        let check = |storage: &mut KernelParamStorage| {
            assert_eq!(storage.len(), argv.len());
            storage.with_params(|table| {
                assert_eq!(table.len(), argv.len());
                for (i, arg) in argv.iter().enumerate() {
                    let device_address = match arg {
                        Arg::Ptr(r) => base + u64::from(r.guest_offset),
                        _ => 0,
                    };
                    let want = native_bytes(arg, device_address);
                    assert_eq!(
                        want.len(),
                        if matches!(arg, Arg::I32(_) | Arg::U32(_) | Arg::F32(_)) { 4 } else { 8 }
                    );
                    assert_eq!(read_through_table(table, i), padded(&want), "argument {i}");
                }
                table.entries().to_vec()
            })
        };
        let entries = check(&mut storage);
        // A moved copy's table addresses its own slots, though the copy carries the table made
        // for the original: the original, refilled with other values, is not what it reads.
        let mut moved = Box::new(storage.clone());
        storage.fill(&la(&[Arg::U64(u64::MAX); 9]), direct(&guest)).unwrap();
        let moved_entries = check(&mut moved);
        assert_ne!(entries, moved_entries);
        for entries in [&entries, &moved_entries] {
            assert!(entries.windows(2).all(|pair| pair[1] == pair[0] + SLOT_SIZE as u64));
        }
        assert_eq!(storage.with_params(|table| table.entries().to_vec()), entries, "kept in place");
    }

    #[test]
    fn staged_slots_hold_the_device_addresses_in_order() {
        let argv = every_type();
        let device = [0x7f00_0000_1000u64, 0x7f00_0000_2000, 0x7f00_0000_3000];
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        let mut placed = Vec::new();
        let mut place = staged(&device);
        storage
            .fill(&la(&argv), |index, range| {
                placed.push((index, range));
                place(index, range)
            })
            .unwrap();
        // `place` is called once per pointer argument, in argument order, with its window.
        assert_eq!(
            placed,
            [
                (1, GuestRange { guest_offset: 8, len: 32 }),
                (7, GuestRange { guest_offset: 40, len: 0 }),
                (8, GuestRange { guest_offset: 0, len: 64 })
            ]
        );
        storage.with_params(|table| {
            let mut next = device.iter();
            for (i, arg) in argv.iter().enumerate() {
                let device_address = match arg {
                    Arg::Ptr(_) => *next.next().unwrap(),
                    _ => 0,
                };
                let want = native_bytes(arg, device_address);
                assert_eq!(read_through_table(table, i), padded(&want), "argument {i}");
            }
        });
    }

    #[test]
    fn slots_and_padding() {
        let argv: [LoweredArgSnapshot; 2] = [Arg::U32(0x0102_0304), Arg::F64(F64Bits::from_f64(1.5))];
        let mut storage = KernelParamStorage::<4>::new();
        storage.fill(&la(&argv), staged(&[])).unwrap();
        assert_eq!(storage.capacity(), 4);
        assert_eq!(storage.slot(0), Some(&padded(&0x0102_0304u32.to_ne_bytes())), "zero-padded");
        assert_eq!(storage.slot(1), Some(&1.5f64.to_ne_bytes()));
        assert_eq!(storage.slot(2), None);
    }

    #[test]
    fn fills_replace_and_fail_empty() {
        let argv: [LoweredArgSnapshot; 3] =
            [Arg::I64(-1), Arg::U32(7), Arg::Ptr(GuestRange { guest_offset: 0, len: 8 })];
        let mut storage = KernelParamStorage::<4>::default();
        storage.fill(&la(&argv), staged(&[0xabc])).unwrap();
        assert_eq!(storage.len(), 3);
        assert_eq!(storage.slot(2), Some(&0xabcu64.to_ne_bytes()));
        // A fill of fewer arguments replaces it...
        storage.fill(&la(&argv[1..2]), staged(&[])).unwrap();
        assert_eq!((storage.len(), storage.slot(0)), (1, Some(&padded(&7u32.to_ne_bytes()))));
        assert_eq!(storage.slot(1), None, "the earlier fill's slots are not the storage's");
        assert_eq!(storage.with_params(|table| table.entries().len()), 1);
        // ...and a failed one leaves nothing.
        let err = storage.fill(&la(&argv), staged(&[])).unwrap_err();
        assert_eq!(err, StorageError::Unplaced { index: 2 });
        assert!(storage.is_empty(), "a failed fill leaves no part of the arguments");
        assert!(storage.with_params(|table| table.is_empty()));
        // The placement's own error type comes through.
        let err = storage
            .fill(&la(&argv), |_, _| Err::<u64, HostError>(HostError::fixed(AbiError::Internal, "no buffer")))
            .unwrap_err();
        assert_eq!(err.to_string(), "Internal -7: no buffer");
        assert!(storage.is_empty());
    }

    #[test]
    fn hidden_parameters_follow_the_arguments() {
        let argv: [LoweredArgSnapshot; 2] = [Arg::U32(7), Arg::Ptr(GuestRange { guest_offset: 0, len: 8 })];
        let mut storage = KernelParamStorage::<5>::default();
        storage.fill(&la(&argv), staged(&[0xabc])).unwrap();
        storage.append(&[1, 2, 3]).unwrap();
        assert_eq!(storage.len(), 5);
        assert_eq!(storage.slot(4), Some(&3u64.to_ne_bytes()));
        assert_eq!(storage.with_params(|table| table.entries().len()), 5);
        // One too many leaves nothing, as a failed fill does.
        let err = storage.append(&[4]).unwrap_err();
        assert_eq!(err, StorageError::TooManyArgs { capacity: 5, got: 6 });
        assert!(storage.is_empty());
        // A fill replaces the hidden slots too.
        storage.fill(&la(&argv), staged(&[0xabc])).unwrap();
        assert_eq!((storage.len(), storage.slot(2)), (2, None));
    }

    #[test]
    fn storage_is_send_and_sync_without_unsafe_impls() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<KernelParamStorage>();
    }

    /// The bytes the driver reads through padded entry `i` for a parameter of `size` bytes.
    fn read_padded(table: &mut PaddedTable<'_>, i: usize, size: usize) -> Vec<u8> {
        let kernel_params = table.as_mut_ptr();
        assert!(i < MAX_KERNEL_PARAMS && size <= MAX_PARAM_BYTES);
        // SAFETY: `i < MAX_KERNEL_PARAMS`, inside the table.
        let entry = unsafe { kernel_params.add(i) };
        // SAFETY: in bounds and aligned; every entry is written. Read as the address the table
        // stores (an integer whose provenance was exposed), as C reads a `void*`.
        let address = unsafe { entry.cast::<u64>().read() };
        let param = core::ptr::with_exposed_provenance::<u8>(address as usize);
        // SAFETY: by `PaddedTable`'s invariant the entry addresses a value followed by at
        // least `MAX_PARAM_BYTES` bytes of the scratch (or the static zeros), borrowed while
        // the table lives.
        let bytes = unsafe { core::slice::from_raw_parts(param, size) };
        bytes.to_vec()
    }

    #[test]
    fn padded_tables_give_the_values_then_only_zeros() {
        let argv = every_type();
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.fill(&la(&argv), staged(&[1, 2, 3])).unwrap();
        let mut scratch = PaddingScratch::default();
        storage.with_padded_params(&mut scratch, |table| {
            assert_eq!((table.len(), table.entries().len()), (argv.len(), MAX_KERNEL_PARAMS));
            for (i, arg) in argv.iter().enumerate() {
                let want = native_bytes(
                    arg,
                    match arg {
                        Arg::Ptr(r) => {
                            [1, 2, 3][[8, 40, 0].iter().position(|o| *o == r.guest_offset).unwrap()]
                        }
                        _ => 0,
                    },
                );
                assert_eq!(read_padded(table, i, want.len()), want, "argument {i}");
            }
            // A by-value parameter larger than its argument reads the argument, then only zeros
            // (never the next argument); past the arguments every entry reads only zeros, up to
            // the largest parameter, for the most parameters any kernel may have.
            for i in 0..argv.len() {
                let bytes = read_padded(table, i, MAX_PARAM_BYTES);
                assert!(bytes[8..].iter().all(|&b| b == 0), "argument {i} is followed by zeros");
            }
            for i in [argv.len(), argv.len() + 1, MAX_KERNEL_PARAMS - 1] {
                assert!(read_padded(table, i, MAX_PARAM_BYTES).iter().all(|&b| b == 0), "entry {i}");
            }
        });
        // A later padded launch of fewer arguments: the earlier values are gone.
        storage.fill(&la(&argv[..1]), staged(&[])).unwrap();
        storage.with_padded_params(&mut scratch, |table| {
            assert_eq!(read_padded(table, 0, 4), (-7i32).to_ne_bytes());
            assert!(read_padded(table, 0, 64)[4..].iter().all(|&b| b == 0), "no value of the earlier launch");
            assert!(read_padded(table, 1, MAX_PARAM_BYTES).iter().all(|&b| b == 0));
        });
    }

    #[test]
    fn no_arguments_give_an_empty_table() {
        let mut storage = KernelParamStorage::<0>::new();
        storage.fill(&la(&[]), staged(&[])).unwrap();
        assert!(storage.is_empty());
        storage.with_params(|table| {
            assert!(table.is_empty());
            assert!(table.entries().is_empty());
            let _ = table.as_mut_ptr();
        });
        assert!(storage.with_padded_params(&mut PaddingScratch::default(), |table| table.is_empty()));
    }

    #[test]
    fn capacity_is_enforced() {
        let argv: [LoweredArgSnapshot; 3] = [Arg::U32(1), Arg::U32(2), Arg::U32(3)];
        let mut two = KernelParamStorage::<2>::new();
        let err = two.fill(&la(&argv), staged(&[])).unwrap_err();
        assert_eq!(err, StorageError::TooManyArgs { capacity: 2, got: 3 });
        assert_eq!(HostError::from(err).code(), AbiError::Internal);
        assert!(two.is_empty());
        assert!(KernelParamStorage::<3>::new().fill(&la(&argv), staged(&[])).is_ok());
    }

    #[test]
    fn direct_placement_needs_an_exclusive_borrow() {
        let memory = vec![0u8; 16];
        let argv = [
            Arg::U32(1),
            Arg::Ptr(GuestRange { guest_offset: 0, len: 16 }),
            Arg::Ptr(GuestRange { guest_offset: 4, len: 4 }),
        ];
        for guest in [GuestMemory::shared(&memory), GuestMemory::length_only(16)] {
            let mut storage = KernelParamStorage::<4>::new();
            let err = storage.fill(&la(&argv), direct(&guest)).unwrap_err();
            // The first pointer argument is named.
            assert_eq!(err, StorageError::Unplaced { index: 1 });
            let host = HostError::from(err);
            assert_eq!(host.code(), AbiError::Internal);
            assert!(host.to_string().contains("argument 1"), "{host}");
            assert!(storage.is_empty());
            // Scalars alone need no borrow of any kind; staging needs none either.
            storage.fill(&la(&argv[..1]), direct(&guest)).unwrap();
            assert_eq!(storage.len(), 1);
            storage.fill(&la(&argv), staged(&[0x1000, 0x2000])).unwrap();
            assert_eq!(storage.slot(2), Some(&0x2000u64.to_ne_bytes()));
        }
    }

    #[test]
    fn a_full_storage_of_every_slot() {
        // The whole default capacity, read back through the table.
        let mut memory = vec![0u8; 64];
        let base = memory.as_mut_ptr().addr() as u64;
        let guest = GuestMemory::exclusive(&mut memory);
        let argv: Vec<LoweredArgSnapshot> = (0..MAX_KERNEL_ARGS as u32)
            .map(|i| match i % 5 {
                0 => Arg::Ptr(GuestRange { guest_offset: i % 64, len: 0 }),
                1 => Arg::F32(F32Bits(i)),
                2 => Arg::I64(-i64::from(i)),
                3 => Arg::U64(u64::from(i) << 40 | u64::from(i)),
                _ => Arg::I32(-(i as i32)),
            })
            .collect();
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.fill(&la(&argv), direct(&guest)).unwrap();
        storage.with_params(|table| {
            assert_eq!(table.entries().len(), MAX_KERNEL_ARGS);
            for (i, arg) in argv.iter().enumerate() {
                let host = match arg {
                    Arg::Ptr(r) => base + u64::from(r.guest_offset),
                    _ => 0,
                };
                let want = native_bytes(arg, host);
                assert_eq!(read_through_table(table, i), padded(&want), "argument {i}");
            }
        });
    }
}
