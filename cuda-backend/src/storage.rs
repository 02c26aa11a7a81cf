//! The `void**` parameter array that `cuLaunchKernel` reads, built without allocating.
//!
//! `cuLaunchKernel` takes `kernelParams`, an array of `N` pointers, pointer `i` addressing the
//! value of the kernel's parameter `i` in the host's native byte order. The driver copies each
//! value (as many bytes as the kernel's parameter declares) when the launch is enqueued, so
//! the array and the values need to live only for the call.
//!
//! [`KernelParamStorage`] holds the values: one 8-byte, 8-aligned [`ParamSlot`] per argument
//! in a fixed-capacity array (the capacity `N` is a const generic, [`MAX_KERNEL_ARGS`] by
//! default, like the core parser's). A host keeps one storage and fills it in place for every
//! launch with [`KernelParamStorage::fill`], from the launch's checked arguments: only the slots
//! in use are written, and nothing of the capacity's size is zeroed or copied per launch (see
//! `docs/performance.md`). A pointer argument's slot holds the device-visible address the launch
//! will use, which `fill`'s caller gives for each window: its host pointer into guest memory in
//! direct mode, the device buffer it was staged into in staged mode.
//!
//! The storage holds no pointer into itself, so it can be moved freely. The `void**` array is
//! made only where it is used, in the frame of [`KernelParamStorage::with_params`] (or
//! [`with_padded_params`](KernelParamStorage::with_padded_params), for a kernel whose
//! parameter count is unknown), which borrows the storage mutably while its closure runs:
//! while a table exists the storage can be neither moved nor changed, so no pointer in the
//! table can dangle. The table writes only the entries in use (the rest of its array stays
//! uninitialised, never read), so making it costs one pointer per parameter.
//!
//! ```
//! use kernel_args_core::{GuestMemory, GuestRange, LoweredArgSnapshot};
//! use kernel_args_cuda::{KernelParamStorage, StorageError};
//!
//! let args = [LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 0, len: 16 }), LoweredArgSnapshot::U32(4)];
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
//! assert_eq!(storage.arg_sizes(), &[8, 4]);
//! let n = storage.with_params(|table| {
//!     let kernel_params = table.as_mut_ptr(); // what cuLaunchKernel takes
//!     assert!(!kernel_params.is_null());
//!     table.len()
//! });
//! assert_eq!(n, 2);
//!
//! // Staged: the device address each window was copied to.
//! storage.fill(&args, |_, _| Ok::<u64, StorageError>(0x7f00_0000_1000))?;
//! assert_eq!(storage.value_bytes(0), Some(&0x7f00_0000_1000u64.to_ne_bytes()[..]));
//! # Ok::<(), StorageError>(())
//! ```

// One of the crate's two modules with `unsafe` (see the crate docs).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use kernel_args::{AbiError, HostError};
use kernel_args_core::{Arg, GuestRange, LoweredArgSnapshot, MAX_KERNEL_ARGS};

/// The most bytes of parameters a CUDA kernel can take (CUDA 12.1 and later; 4 KiB before).
pub const MAX_PARAM_BYTES: usize = 32_764;

/// Zeroed, 8-aligned memory as large as any kernel's whole parameter list, for the padding of
/// [`KernelParamStorage::with_padded_params`]. The driver only reads it.
static ZERO_PARAMS: [u64; MAX_PARAM_BYTES.div_ceil(8)] = [0; MAX_PARAM_BYTES.div_ceil(8)];

/// Bytes in one parameter slot: the widest argument (an `i64`, `u64`, `f64` or a device
/// address).
pub const SLOT_SIZE: usize = 8;

/// One parameter's value in native byte order, 8-byte aligned, zero-padded past the value.
///
/// Every argument type of the wire format is at most 8 bytes with an alignment of at most 8,
/// so one slot size and alignment fits them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C, align(8))]
pub struct ParamSlot([u8; SLOT_SIZE]);

impl ParamSlot {
    /// A slot holding a 4-byte value, zero-padded.
    #[inline]
    fn four([a, b, c, d]: [u8; 4]) -> ParamSlot {
        ParamSlot([a, b, c, d, 0, 0, 0, 0])
    }

    /// The slot's bytes (the value first, then zero padding).
    pub fn bytes(&self) -> &[u8; SLOT_SIZE] {
        &self.0
    }
}

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
                 guest memory borrowed with GuestMemory::exclusive; staged mode a device buffer per window)"
            ),
        }
    }
}

impl std::error::Error for StorageError {}

impl From<StorageError> for HostError {
    fn from(e: StorageError) -> HostError {
        let code = match e {
            // The host's cap, like the parser's record cap.
            StorageError::TooManyArgs { .. } => AbiError::KernelArgsUnsupported,
            // A host-side mistake, not the guest's.
            StorageError::Unplaced { .. } => AbiError::Internal,
        };
        HostError::msg(code, e.to_string())
    }
}

/// The size in bytes of the value the kernel receives for `arg`: 4 for `i32`, `u32`, `f32`;
/// 8 for `i64`, `u64`, `f64` and for a pointer (a 64-bit device address).
pub(crate) fn arg_size<W>(arg: &Arg<W>) -> usize {
    match arg {
        Arg::I32(_) | Arg::U32(_) | Arg::F32(_) => 4,
        Arg::I64(_) | Arg::U64(_) | Arg::F64(_) | Arg::Ptr(_) => 8,
    }
}

/// The slot and value size of `arg`, a pointer's slot holding the address `address` gives for
/// its window: the one place an argument's native bytes are made.
#[inline(always)]
fn slot_of<W, E>(arg: &Arg<W>, address: impl FnOnce(&W) -> Result<u64, E>) -> Result<(ParamSlot, u8), E> {
    Ok(match arg {
        Arg::I32(v) => (ParamSlot::four(v.to_ne_bytes()), 4),
        Arg::I64(v) => (ParamSlot(v.to_ne_bytes()), 8),
        Arg::F32(v) => (ParamSlot::four(v.0.to_ne_bytes()), 4),
        Arg::F64(v) => (ParamSlot(v.0.to_ne_bytes()), 8),
        Arg::U32(v) => (ParamSlot::four(v.to_ne_bytes()), 4),
        Arg::U64(v) => (ParamSlot(v.to_ne_bytes()), 8),
        Arg::Ptr(window) => (ParamSlot(address(window)?.to_ne_bytes()), 8),
    })
}

/// The values of a launch's parameters, one [`ParamSlot`] each, with capacity `N`.
///
/// Make one with [`new`](Self::new), keep it, and [`fill`](Self::fill) it in place for every
/// launch from the launch's checked arguments. Only the slots in use are written, and a failed
/// fill leaves the storage empty. Hand the table of [`with_params`](Self::with_params) (or
/// [`with_padded_params`](Self::with_padded_params)) to `cuLaunchKernel`. The storage owns no
/// heap memory and holds no pointer (so it is `Send` and `Sync` without any `unsafe impl`).
#[derive(Debug, Clone)]
pub struct KernelParamStorage<const N: usize = MAX_KERNEL_ARGS> {
    slots: [ParamSlot; N],
    /// The value size of each slot in use (4 or 8).
    sizes: [u8; N],
    len: usize,
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
        KernelParamStorage { slots: [ParamSlot([0; SLOT_SIZE]); N], sizes: [0; N], len: 0 }
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

    /// The value size in bytes of each stored parameter, in order.
    pub fn arg_sizes(&self) -> &[u8] {
        self.sizes.get(..self.len).unwrap_or(&[])
    }

    /// The value bytes of parameter `index` (without the slot's padding), or `None` past the
    /// end.
    pub fn value_bytes(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let size = usize::from(*self.sizes.get(index)?);
        self.slots.get(index)?.0.get(..size)
    }

    /// Calls `f` with the `void**` table for `cuLaunchKernel`, made in this call's frame from a
    /// mutable borrow: while `f` runs the storage cannot move or change, so every pointer in
    /// the table stays valid, and the table (its `N` pointers) is never returned or copied.
    /// Writes one pointer per parameter in use; the rest of the table is left uninitialised.
    /// The table, and any pointer taken from it, is valid only inside `f`.
    #[inline]
    pub fn with_params<R>(&mut self, f: impl FnOnce(&mut ParamTable<'_, N>) -> R) -> R {
        let mut table = ParamTable {
            ptrs: [const { MaybeUninit::<*mut c_void>::uninit() }; N],
            len: self.len,
            _storage: PhantomData,
        };
        let base = self.slots.as_mut_ptr();
        for (i, p) in table.ptrs.iter_mut().enumerate().take(self.len) {
            // `i < len <= N`: in bounds of `slots`, so the pointer is in bounds and keeps the
            // provenance of the whole array (derived once from `as_mut_ptr`).
            p.write(base.wrapping_add(i).cast::<c_void>());
        }
        f(&mut table)
    }

    /// As [`with_params`](Self::with_params), for a kernel whose parameter count is not known:
    /// every entry past the arguments, up to the capacity `N`, points at zeroed memory as
    /// large as any kernel's parameter list. If the kernel has more parameters than the guest
    /// passed, the driver then copies zeros for them instead of dereferencing stray stack
    /// memory (a kernel with more than `N` parameters would still read past the table: this
    /// is why the launcher checks the count wherever the PTX or the driver tells it).
    #[inline]
    pub fn with_padded_params<R>(&mut self, f: impl FnOnce(&mut ParamTable<'_, N>) -> R) -> R {
        self.with_params(|table| {
            let zeros = core::ptr::from_ref(&ZERO_PARAMS).cast_mut().cast::<c_void>();
            for p in table.ptrs.iter_mut().skip(table.len) {
                p.write(zeros);
            }
            f(table)
        })
    }

    /// Fills the slots in place from a launch's checked arguments: scalars in native byte order
    /// (floats as their exact bits), each pointer argument as the address `place` gives for its
    /// window (called with the argument's index and window, in argument order): the window's
    /// host pointer in direct mode, the device address it was staged to in staged mode. Only the
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
        args: &[LoweredArgSnapshot],
        mut place: impl FnMut(usize, GuestRange) -> Result<u64, E>,
    ) -> Result<(), E> {
        self.len = 0;
        if args.len() > N {
            return Err(StorageError::TooManyArgs { capacity: N, got: args.len() }.into());
        }
        // One pass over the arguments and the slots together: `args.len() <= N`, so the zip
        // visits every argument, and no slot index is checked (or can fail) per argument.
        let slots = self.slots.iter_mut().zip(self.sizes.iter_mut());
        for (index, (arg, (slot, size))) in args.iter().zip(slots).enumerate() {
            (*slot, *size) = slot_of(arg, |range| place(index, *range))?;
        }
        self.len = args.len();
        Ok(())
    }
}

/// The `void**` array `cuLaunchKernel` reads, borrowed from a [`KernelParamStorage`] inside
/// [`with_params`](KernelParamStorage::with_params) or
/// [`with_padded_params`](KernelParamStorage::with_padded_params).
///
/// Pointer `i` addresses the value of parameter `i`. Take [`as_mut_ptr`](ParamTable::as_mut_ptr)
/// right at the launch call: it points into this table, so it must not outlive it.
///
/// INVARIANT: `len <= N`, and `ptrs[..len]` are initialised (by
/// [`KernelParamStorage::with_params`], the only maker; `with_padded_params` initialises all
/// `N`).
pub struct ParamTable<'s, const N: usize = MAX_KERNEL_ARGS> {
    ptrs: [MaybeUninit<*mut c_void>; N],
    len: usize,
    /// The pointers address the storage's slots, borrowed mutably with it.
    _storage: PhantomData<&'s mut [ParamSlot; N]>,
}

impl<const N: usize> fmt::Debug for ParamTable<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamTable").field("pointers", &self.pointers()).finish()
    }
}

impl<const N: usize> ParamTable<'_, N> {
    /// Number of parameter pointers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` for a kernel without parameters.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `void**` for `cuLaunchKernel`'s `kernelParams`: `len()` initialised pointers, each
    /// to an 8-aligned slot holding the parameter's value (the driver reads exactly as many as
    /// the kernel has parameters, which the signature check makes `len()`). Valid while `self`
    /// is neither moved nor dropped.
    pub fn as_mut_ptr(&mut self) -> *mut *mut c_void {
        // `MaybeUninit<T>` has `T`'s layout, so the array is an array of `*mut c_void`.
        self.ptrs.as_mut_ptr().cast::<*mut c_void>()
    }

    /// The parameter pointers, for inspection.
    pub fn pointers(&self) -> &[*mut c_void] {
        let init = self.ptrs.get(..self.len).unwrap_or(&[]);
        // SAFETY: by the type's invariant the first `len` entries are initialised, and
        // `MaybeUninit<T>` has the layout of `T`, so they can be read as `[*mut c_void]`.
        unsafe { &*(core::ptr::from_ref(init) as *const [*mut c_void]) }
    }
}

#[cfg(test)]
mod tests {
    use core::mem::align_of;

    use kernel_args_core::{F32Bits, F64Bits, GuestMemory, GuestRange, LoweredArgSnapshot};

    use super::*;

    /// Reads parameter `i` back through the raw `void**` table, as the driver does.
    fn read_through_table(table: &mut ParamTable<'_, MAX_KERNEL_ARGS>, i: usize, size: usize) -> Vec<u8> {
        let kernel_params = table.as_mut_ptr();
        assert!(i < table.len());
        // SAFETY: `i < len <= N`, so `kernel_params + i` is inside the table's pointer array.
        let slot_ptr = unsafe { kernel_params.add(i) };
        // SAFETY: `slot_ptr` is in bounds, aligned (it points into a `[*mut c_void; N]`) and
        // initialised by `with_params`.
        let param = unsafe { slot_ptr.read() };
        assert_eq!(param.addr() % align_of::<u64>(), 0, "slot {i} is not 8-aligned");
        // SAFETY: `param` points at an 8-byte slot of the storage borrowed by `table`, which
        // lives and is not written while the table exists; `size <= SLOT_SIZE`.
        let bytes = unsafe { core::slice::from_raw_parts(param.cast::<u8>(), size) };
        bytes.to_vec()
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
        storage.fill(&argv, direct(&guest)).unwrap();
        // Moving the storage before the table is made must not matter.
        let mut moved = Box::new(storage.clone());
        for storage in [&mut storage, &mut *moved] {
            assert_eq!(storage.len(), argv.len());
            let sizes = storage.arg_sizes().to_vec();
            storage.with_params(|table| {
                assert_eq!(table.len(), argv.len());
                for (i, arg) in argv.iter().enumerate() {
                    let device_address = match arg {
                        Arg::Ptr(r) => base + u64::from(r.guest_offset),
                        _ => 0,
                    };
                    let want = native_bytes(arg, device_address);
                    assert_eq!(usize::from(sizes[i]), want.len(), "argument {i} size");
                    assert_eq!(usize::from(sizes[i]), arg_size(arg));
                    assert_eq!(read_through_table(table, i, want.len()), want, "argument {i}");
                }
            });
        }
    }

    #[test]
    fn staged_slots_hold_the_device_addresses_in_order() {
        let argv = every_type();
        let device = [0x7f00_0000_1000u64, 0x7f00_0000_2000, 0x7f00_0000_3000];
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        let mut placed = Vec::new();
        let mut place = staged(&device);
        storage
            .fill(&argv, |index, range| {
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
                assert_eq!(read_through_table(table, i, want.len()), want, "argument {i}");
            }
        });
    }

    #[test]
    fn value_bytes_and_padding() {
        let argv: [LoweredArgSnapshot; 2] = [Arg::U32(0x0102_0304), Arg::F64(F64Bits::from_f64(1.5))];
        let mut storage = KernelParamStorage::<4>::new();
        storage.fill(&argv, staged(&[])).unwrap();
        assert_eq!(storage.capacity(), 4);
        assert_eq!(storage.value_bytes(0), Some(&0x0102_0304u32.to_ne_bytes()[..]));
        assert_eq!(storage.value_bytes(1), Some(&1.5f64.to_ne_bytes()[..]));
        assert_eq!(storage.value_bytes(2), None);
        assert_eq!(storage.slots[0].bytes()[4..], [0, 0, 0, 0], "padding is zero");
    }

    #[test]
    fn fills_replace_and_fail_empty() {
        let argv: [LoweredArgSnapshot; 3] =
            [Arg::I64(-1), Arg::U32(7), Arg::Ptr(GuestRange { guest_offset: 0, len: 8 })];
        let mut storage = KernelParamStorage::<4>::default();
        storage.fill(&argv, staged(&[0xabc])).unwrap();
        assert_eq!(storage.arg_sizes(), &[8, 4, 8]);
        assert_eq!(storage.value_bytes(2), Some(&0xabcu64.to_ne_bytes()[..]));
        // A fill of fewer arguments replaces it...
        storage.fill(&argv[1..2], staged(&[])).unwrap();
        assert_eq!((storage.len(), storage.value_bytes(0)), (1, Some(&7u32.to_ne_bytes()[..])));
        assert_eq!(storage.with_params(|table| table.pointers().len()), 1);
        // ...and a failed one leaves nothing.
        let err = storage.fill(&argv, staged(&[])).unwrap_err();
        assert_eq!(err, StorageError::Unplaced { index: 2 });
        assert!(storage.is_empty(), "a failed fill leaves no part of the arguments");
        assert!(storage.with_params(|table| table.is_empty()));
        // The placement's own error type comes through.
        let err = storage
            .fill(&argv, |_, _| Err::<u64, HostError>(HostError::fixed(AbiError::Internal, "no buffer")))
            .unwrap_err();
        assert_eq!(err.to_string(), "Internal -7: no buffer");
        assert!(storage.is_empty());
    }

    #[test]
    fn storage_is_send_and_sync_without_unsafe_impls() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<KernelParamStorage>();
    }

    #[test]
    fn padded_and_plain_tables_agree_on_the_arguments() {
        let argv = every_type();
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.fill(&argv, staged(&[1, 2, 3])).unwrap();
        let read = |table: &mut ParamTable<'_>| {
            assert_eq!(table.len(), argv.len());
            let values: Vec<Vec<u8>> =
                (0..argv.len()).map(|i| read_through_table(table, i, arg_size(&argv[i]))).collect();
            let pointers: Vec<usize> = table.pointers().iter().map(|p| p.addr()).collect();
            (values, pointers)
        };
        let plain = storage.with_params(read);
        let padded = storage.with_padded_params(read);
        assert_eq!(plain, padded);
    }

    #[test]
    fn padded_tables_point_past_the_arguments_at_zeros() {
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.fill(&[Arg::U32(9)], staged(&[])).unwrap();
        storage.with_padded_params(|table| {
            assert_eq!(table.len(), 1);
            assert_eq!(read_through_table(table, 0, 4), 9u32.to_ne_bytes());
            let kernel_params = table.as_mut_ptr();
            for i in [1, MAX_KERNEL_ARGS - 1] {
                // SAFETY: `i < N`, inside the table's array.
                let entry = unsafe { kernel_params.add(i) };
                // SAFETY: padded tables initialise all `N` entries.
                let param = unsafe { entry.read() };
                assert_eq!(param.cast_const().cast::<u8>(), ZERO_PARAMS.as_ptr().cast::<u8>());
                // SAFETY: `ZERO_PARAMS` is a static of `MAX_PARAM_BYTES` or more bytes.
                let bytes =
                    unsafe { core::slice::from_raw_parts(param.cast_const().cast::<u8>(), MAX_PARAM_BYTES) };
                assert!(bytes.iter().all(|&b| b == 0));
            }
        });
    }

    #[test]
    fn no_arguments_give_an_empty_table() {
        let mut storage = KernelParamStorage::<0>::new();
        storage.fill(&[], staged(&[])).unwrap();
        assert!(storage.is_empty());
        storage.with_params(|table| {
            assert!(table.is_empty());
            assert!(table.pointers().is_empty());
            let _ = table.as_mut_ptr();
        });
        assert!(storage.with_padded_params(|table| table.is_empty()));
    }

    #[test]
    fn capacity_is_enforced() {
        let argv: [LoweredArgSnapshot; 3] = [Arg::U32(1), Arg::U32(2), Arg::U32(3)];
        let mut two = KernelParamStorage::<2>::new();
        let err = two.fill(&argv, staged(&[])).unwrap_err();
        assert_eq!(err, StorageError::TooManyArgs { capacity: 2, got: 3 });
        assert_eq!(HostError::from(err).code(), AbiError::KernelArgsUnsupported);
        assert!(two.is_empty());
        assert!(KernelParamStorage::<3>::new().fill(&argv, staged(&[])).is_ok());
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
            let err = storage.fill(&argv, direct(&guest)).unwrap_err();
            // The first pointer argument is named.
            assert_eq!(err, StorageError::Unplaced { index: 1 });
            let host = HostError::from(err);
            assert_eq!(host.code(), AbiError::Internal);
            assert!(host.to_string().contains("argument 1"), "{host}");
            assert!(storage.is_empty());
            // Scalars alone need no borrow of any kind; staging needs none either.
            storage.fill(&argv[..1], direct(&guest)).unwrap();
            assert_eq!(storage.len(), 1);
            storage.fill(&argv, staged(&[0x1000, 0x2000])).unwrap();
            assert_eq!(storage.value_bytes(2), Some(&0x2000u64.to_ne_bytes()[..]));
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
        storage.fill(&argv, direct(&guest)).unwrap();
        storage.with_params(|table| {
            assert_eq!(table.pointers().len(), MAX_KERNEL_ARGS);
            for (i, arg) in argv.iter().enumerate() {
                let host = match arg {
                    Arg::Ptr(r) => base + u64::from(r.guest_offset),
                    _ => 0,
                };
                let want = native_bytes(arg, host);
                assert_eq!(read_through_table(table, i, want.len()), want, "argument {i}");
            }
        });
    }
}
