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
//! launch: only the slots in use are written, and nothing of the capacity's size is zeroed or
//! copied per launch (see `docs/performance.md`). A pointer argument's slot holds the
//! device-visible address the launch will use, and there is one way to fill the storage for
//! each way a device reaches guest memory:
//!
//! - **direct** (the device reads pageable host memory): the window's host pointer into guest
//!   memory. [`KernelParamStorage::parse_direct`] parses the argv bytes straight into the
//!   slots, in one pass; or the storage is itself the core parser's [`ArgSink`], for a host
//!   whose own pass over the argv fills it (the host function's, through
//!   `kernel_args::Launcher::parse_recorded`), checked afterwards with
//!   [`direct_error`](KernelParamStorage::direct_error). Both are the same path: the same
//!   slots, the same refusals.
//! - **staged** (each window is copied to a device buffer first):
//!   [`KernelParamStorage::build_staged`] builds the slots from the parsed arguments and the
//!   device address of each staged window.
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
//! use kernel_args_core::{ArgvBuilder, GuestMemory, ParsedArgv, parse_argv};
//! use kernel_args_cuda::KernelParamStorage;
//!
//! let mut buf = [0u8; 32];
//! let mut argv = ArgvBuilder::new(&mut buf);
//! argv.ptr(0, 16)?.u32(4)?;
//! let argv = argv.finish();
//!
//! let mut memory = vec![0u8; 64];
//! let guest = GuestMemory::exclusive(&mut memory);
//! let mut storage = KernelParamStorage::<16>::new(); // kept across launches
//!
//! // Direct: one pass from the argv bytes to the slots, the pointer as a host pointer.
//! storage.parse_direct(argv, &guest).expect("valid argv");
//! assert_eq!(storage.arg_sizes(), &[8, 4]);
//! let n = storage.with_params(|table| {
//!     let kernel_params = table.as_mut_ptr(); // what cuLaunchKernel takes
//!     assert!(!kernel_params.is_null());
//!     table.len()
//! });
//! assert_eq!(n, 2);
//!
//! // Staged: the parsed arguments, and the device address each window was copied to.
//! let args: ParsedArgv = parse_argv(argv, &guest).expect("valid argv");
//! storage.build_staged(&args, &[0x7f00_0000_1000]).expect("fits");
//! assert_eq!(storage.value_bytes(0), Some(&0x7f00_0000_1000u64.to_ne_bytes()[..]));
//! # Ok::<(), kernel_args_core::EncodeError>(())
//! ```

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use kernel_args::{AbiError, HostError};
use kernel_args_core::{
    Arg, ArgSink, ArgvError, GuestMemory, LoweredArg, MAX_KERNEL_ARGS, SinkFull, parse_argv_into,
};

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

/// Why a parameter storage could not be filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageError {
    /// More arguments than the storage's capacity.
    TooManyArgs {
        /// The storage's capacity `N`.
        capacity: usize,
        /// The number of arguments given.
        got: usize,
    },
    /// Pointer argument `index` has no writable host pointer: its guest memory was not borrowed
    /// with [`GuestMemory::exclusive`](kernel_args_core::GuestMemory::exclusive).
    NotWritable {
        /// The argument's 0-based index.
        index: usize,
    },
    /// [`KernelParamStorage::build_staged`] was given fewer device addresses than there are
    /// pointer arguments; `index` is the first argument without one.
    MissingDeviceAddress {
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
            StorageError::NotWritable { index } => write!(
                f,
                "argument {index}: the pointer window has no writable host pointer \
                 (guest memory must be borrowed with GuestMemory::exclusive for a launch)"
            ),
            StorageError::MissingDeviceAddress { index } => {
                write!(f, "argument {index}: no staged device address for this pointer argument")
            }
        }
    }
}

impl std::error::Error for StorageError {}

impl From<StorageError> for HostError {
    fn from(e: StorageError) -> HostError {
        let code = match e {
            // The host's cap, like the parser's record cap.
            StorageError::TooManyArgs { .. } => AbiError::KernelArgsUnsupported,
            // Host-side mistakes, not the guest's.
            StorageError::NotWritable { .. } | StorageError::MissingDeviceAddress { .. } => {
                AbiError::Internal
            }
        };
        HostError::msg(code, e.to_string())
    }
}

/// Why [`KernelParamStorage::parse_direct`] refused a buffer: the guest's argv broke a rule
/// of the wire format, or the host's memory borrow cannot give the kernel a pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The argv broke a rule of the wire format: what and where, as the core parser says.
    Argv(ArgvError),
    /// The argv is valid but cannot be stored ([`StorageError::NotWritable`] for a pointer
    /// into memory not borrowed with `GuestMemory::exclusive`).
    Storage(StorageError),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Argv(e) => e.fmt(f),
            ParseError::Storage(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ParseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ParseError::Argv(e) => Some(e),
            ParseError::Storage(e) => Some(e),
        }
    }
}

impl From<ParseError> for HostError {
    fn from(e: ParseError) -> HostError {
        match e {
            // The guest's codes (-2, -9, -10) with the record and byte.
            ParseError::Argv(e) => HostError::from(e),
            ParseError::Storage(e) => HostError::from(e),
        }
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

/// The direct placement of a pointer argument: its window's writable host pointer.
#[inline(always)]
fn direct_address(window: &kernel_args_core::GuestWindow<'_>) -> Option<u64> {
    // The device will use the address as a pointer (direct mode: the kernel dereferences it),
    // so its provenance is exposed, not dropped. A `usize` address always fits `u64` on the
    // hosts CUDA supports.
    window.host_ptr_mut().map(|host| host.expose_provenance() as u64)
}

/// The values of a launch's parameters, one [`ParamSlot`] each, with capacity `N`.
///
/// Make one with [`new`](Self::new), keep it, and fill it in place for every launch: with
/// [`parse_direct`](Self::parse_direct) (or as an [`ArgSink`]) where the device is handed host
/// pointers, with [`build_staged`](Self::build_staged) where the windows were staged into
/// device buffers. Only the slots in use are written, and a failed fill leaves the storage
/// empty. Hand the table of [`with_params`](Self::with_params) (or
/// [`with_padded_params`](Self::with_padded_params)) to `cuLaunchKernel`. The storage owns no
/// heap memory and holds no pointer (so it is `Send` and `Sync` without any `unsafe impl`).
#[derive(Debug, Clone)]
pub struct KernelParamStorage<const N: usize = MAX_KERNEL_ARGS> {
    slots: [ParamSlot; N],
    /// The value size of each slot in use (4 or 8).
    sizes: [u8; N],
    len: usize,
    /// Filled as an [`ArgSink`]: the first pointer argument without a writable host pointer.
    not_writable: Option<usize>,
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
        KernelParamStorage {
            slots: [ParamSlot([0; SLOT_SIZE]); N],
            sizes: [0; N],
            len: 0,
            not_writable: None,
        }
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

    /// Builds the slots in place for a staged launch: `args` as parsed, each pointer argument
    /// as the next address of `addresses` (the device buffer its window was staged into, in
    /// argument order). Scalars are stored in native byte order (floats as their exact bits).
    /// Only the slots in use are written. On error the storage is left empty, so no parameter
    /// of an earlier launch survives.
    ///
    /// # Errors
    ///
    /// [`StorageError::TooManyArgs`] past the capacity `N`;
    /// [`StorageError::MissingDeviceAddress`] for the first pointer argument past the end of
    /// `addresses`.
    #[inline]
    pub fn build_staged(&mut self, args: &[LoweredArg<'_>], addresses: &[u64]) -> Result<(), StorageError> {
        self.len = 0;
        self.not_writable = None;
        if args.len() > N {
            return Err(StorageError::TooManyArgs { capacity: N, got: args.len() });
        }
        let mut addresses = addresses.iter();
        // One pass over the arguments and the slots together: `args.len() <= N`, so the zip
        // visits every argument, and no slot index is checked (or can fail) per argument.
        let slots = self.slots.iter_mut().zip(self.sizes.iter_mut());
        for (index, (arg, (slot, size))) in args.iter().zip(slots).enumerate() {
            let (value, width) = slot_of(arg, |_| {
                addresses.next().copied().ok_or(StorageError::MissingDeviceAddress { index })
            })?;
            *slot = value;
            *size = width;
        }
        self.len = args.len();
        Ok(())
    }

    /// Parses `argv` against `memory` straight into the slots, in one pass, for a direct
    /// launch: each record is read, checked by the core parser's rules ([`parse_argv_into`])
    /// and stored as its parameter value, scalars in native byte order (floats as their exact
    /// bits), pointer arguments as their windows' writable host pointers
    /// ([`GuestWindow::host_ptr_mut`](kernel_args_core::GuestWindow::host_ptr_mut)). No list
    /// of [`LoweredArg`]s is made; this is what the CUDA launcher does in direct mode when the
    /// host function has not filled the storage already.
    ///
    /// The record cap is `min(N, MAX_KERNEL_ARGS)`. On error the storage is left empty.
    ///
    /// # Errors
    ///
    /// [`ParseError::Argv`] with the core parser's error (kind, record, byte) for a buffer it
    /// refuses; [`ParseError::Storage`] with [`StorageError::NotWritable`] (the first such
    /// argument) for a valid buffer with a pointer into memory not borrowed with
    /// [`GuestMemory::exclusive`]. The argv's own errors come first.
    ///
    /// ```
    /// use kernel_args_core::{ArgvBuilder, GuestMemory};
    /// use kernel_args_cuda::KernelParamStorage;
    ///
    /// let mut buf = [0u8; 32];
    /// let mut argv = ArgvBuilder::new(&mut buf);
    /// argv.ptr(16, 32)?.f32(0.5)?;
    /// let argv = argv.finish();
    ///
    /// let mut memory = vec![0u8; 64];
    /// let base = memory.as_mut_ptr().addr() as u64;
    /// let guest = GuestMemory::exclusive(&mut memory);
    /// let mut storage = KernelParamStorage::<16>::new();
    /// storage.parse_direct(argv, &guest).expect("valid argv");
    /// assert_eq!(storage.arg_sizes(), &[8, 4]);
    /// assert_eq!(storage.value_bytes(0), Some(&(base + 16).to_ne_bytes()[..]));
    /// let n = storage.with_params(|table| table.len()); // hand the table to cuLaunchKernel
    /// assert_eq!(n, 2);
    ///
    /// let err = storage.parse_direct(&[0x05, 1, 0], &guest).unwrap_err();
    /// assert_eq!(err.to_string(), "truncated u32 record at byte 0 (record 0): needs 4 value bytes, 2 present");
    /// assert!(storage.is_empty());
    /// # Ok::<(), kernel_args_core::EncodeError>(())
    /// ```
    #[inline]
    pub fn parse_direct(&mut self, argv: &[u8], memory: &GuestMemory<'_>) -> Result<(), ParseError> {
        let KernelParamStorage { slots, sizes, len, not_writable } = self;
        *not_writable = None;
        // The count lives in the sink (a register) while parsing, and is stored once.
        *len = 0;
        let mut sink = DirectSink { slots, sizes, len: 0, not_writable: None };
        parse_argv_into(argv, memory, &mut sink).map_err(ParseError::Argv)?;
        if let Some(index) = sink.not_writable {
            return Err(ParseError::Storage(StorageError::NotWritable { index }));
        }
        *len = sink.len;
        Ok(())
    }

    /// After the storage was filled as an [`ArgSink`]: [`StorageError::NotWritable`] for the
    /// first pointer argument without a writable host pointer (its slot holds 0 and must not
    /// reach a kernel).
    pub fn direct_error(&self) -> Result<(), StorageError> {
        match self.not_writable {
            Some(index) => Err(StorageError::NotWritable { index }),
            None => Ok(()),
        }
    }
}

/// The storage as the core parser's [`ArgSink`] inside
/// [`KernelParamStorage::parse_direct`], placing pointers direct: each argument is written to
/// the next slot as the parser accepts it, the count kept in a register.
struct DirectSink<'s, const N: usize> {
    slots: &'s mut [ParamSlot; N],
    sizes: &'s mut [u8; N],
    /// Slots written.
    len: usize,
    /// The first pointer argument without a writable host pointer (its slot holds 0, and
    /// [`KernelParamStorage::parse_direct`] refuses the whole buffer after parsing).
    not_writable: Option<usize>,
}

impl<'m, const N: usize> ArgSink<'m> for DirectSink<'_, N> {
    #[inline]
    fn capacity(&self) -> usize {
        N
    }

    #[inline]
    fn clear(&mut self) {
        self.len = 0;
        self.not_writable = None;
    }

    #[inline(always)]
    fn push(&mut self, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
        self.len = store_direct(self.slots, self.sizes, self.len, &arg, &mut self.not_writable)?;
        Ok(())
    }
}

/// Stores `arg` as parameter `index`, placing a pointer direct (a pointer without a writable
/// host pointer is stored as 0 and its index kept in `not_writable`, the first such); the
/// number of parameters stored after it.
#[inline(always)]
fn store_direct<const N: usize>(
    slots: &mut [ParamSlot; N],
    sizes: &mut [u8; N],
    index: usize,
    arg: &LoweredArg<'_>,
    not_writable: &mut Option<usize>,
) -> Result<usize, SinkFull> {
    let (Some(slot), Some(size)) = (slots.get_mut(index), sizes.get_mut(index)) else {
        return Err(SinkFull);
    };
    let stored = slot_of(arg, |window| {
        Ok::<_, core::convert::Infallible>(direct_address(window).unwrap_or_else(|| {
            not_writable.get_or_insert(index);
            0
        }))
    });
    let Ok((value, width)) = stored;
    (*slot, *size) = (value, width);
    Ok(index.saturating_add(1))
}

/// The storage as a sink of its own, placing pointers direct, for a host that parses the
/// argv for other reasons too (the host function's one pass, `kernel_args::Launcher::parse_recorded`):
/// what [`parse_direct`](KernelParamStorage::parse_direct) does, with the not-writable check
/// left to [`direct_error`](KernelParamStorage::direct_error).
impl<'m, const N: usize> ArgSink<'m> for KernelParamStorage<N> {
    #[inline]
    fn capacity(&self) -> usize {
        N
    }

    #[inline]
    fn clear(&mut self) {
        self.len = 0;
        self.not_writable = None;
    }

    #[inline]
    fn push(&mut self, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
        self.len = store_direct(&mut self.slots, &mut self.sizes, self.len, &arg, &mut self.not_writable)?;
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

    use kernel_args_core::{
        F32Bits, F64Bits, GuestMemory, GuestRange, LoweredArgSnapshot, ParsedArgv, encode_argv, parse_argv,
    };

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

    #[test]
    fn direct_slots_hold_native_bytes_and_host_pointers() {
        let argv = every_type();
        let mut buf = [0u8; 128];
        let mut memory = vec![0u8; 64];
        let base = memory.as_mut_ptr().addr() as u64;
        let guest = GuestMemory::exclusive(&mut memory);
        let n = encode_argv(&argv, &mut buf).unwrap();

        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.parse_direct(&buf[..n], &guest).unwrap();
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
        let mut buf = [0u8; 128];
        let mut memory = vec![0u8; 64];
        let guest = GuestMemory::exclusive(&mut memory);
        let n = encode_argv(&argv, &mut buf).unwrap();
        let args: ParsedArgv = parse_argv(&buf[..n], &guest).unwrap();
        let device = [0x7f00_0000_1000u64, 0x7f00_0000_2000, 0x7f00_0000_3000];
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.build_staged(&args, &device).unwrap();
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
        let mut memory = vec![0u8; 8];
        let guest = GuestMemory::exclusive(&mut memory);
        let argv: [LoweredArgSnapshot; 2] = [Arg::U32(0x0102_0304), Arg::F64(F64Bits::from_f64(1.5))];
        let mut buf = [0u8; 32];
        let n = encode_argv(&argv, &mut buf).unwrap();
        let mut storage = KernelParamStorage::<4>::new();
        storage.parse_direct(&buf[..n], &guest).unwrap();
        assert_eq!(storage.capacity(), 4);
        assert_eq!(storage.value_bytes(0), Some(&0x0102_0304u32.to_ne_bytes()[..]));
        assert_eq!(storage.value_bytes(1), Some(&1.5f64.to_ne_bytes()[..]));
        assert_eq!(storage.value_bytes(2), None);
        assert_eq!(storage.slots[0].bytes()[4..], [0, 0, 0, 0], "padding is zero");
    }

    #[test]
    fn in_place_fills_replace_and_fail_empty() {
        let mut memory = vec![0u8; 16];
        let guest = GuestMemory::exclusive(&mut memory);
        let mut buf = [0u8; 64];
        let argv: [LoweredArgSnapshot; 3] =
            [Arg::I64(-1), Arg::U32(7), Arg::Ptr(GuestRange { guest_offset: 0, len: 8 })];
        let n = encode_argv(&argv, &mut buf).unwrap();
        let args: ParsedArgv = parse_argv(&buf[..n], &guest).unwrap();
        let mut storage = KernelParamStorage::<4>::default();
        storage.build_staged(&args, &[0xabc]).unwrap();
        assert_eq!(storage.arg_sizes(), &[8, 4, 8]);
        assert_eq!(storage.value_bytes(2), Some(&0xabcu64.to_ne_bytes()[..]));
        // A direct fill of fewer arguments replaces the staged one...
        storage.parse_direct(&[0x05, 7, 0, 0, 0], &guest).unwrap();
        assert_eq!((storage.len(), storage.value_bytes(0)), (1, Some(&7u32.to_ne_bytes()[..])));
        assert_eq!(storage.with_params(|table| table.pointers().len()), 1);
        // ...and a staged one the direct one.
        storage.parse_direct(&buf[..n], &guest).unwrap();
        storage.build_staged(&args[1..2], &[]).unwrap();
        assert_eq!((storage.len(), storage.value_bytes(0)), (1, Some(&7u32.to_ne_bytes()[..])));
        let err = storage.build_staged(&args, &[]).unwrap_err();
        assert_eq!(err, StorageError::MissingDeviceAddress { index: 2 });
        assert!(storage.is_empty(), "a failed build leaves no part of the arguments");
        assert!(storage.with_params(|table| table.is_empty()));
    }

    #[test]
    fn storage_is_send_and_sync_without_unsafe_impls() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<KernelParamStorage>();
    }

    #[test]
    fn padded_and_plain_tables_agree_on_the_arguments() {
        let argv = every_type();
        let mut buf = [0u8; 128];
        let mut memory = vec![0u8; 64];
        let guest = GuestMemory::exclusive(&mut memory);
        let n = encode_argv(&argv, &mut buf).unwrap();
        let args: ParsedArgv = parse_argv(&buf[..n], &guest).unwrap();
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.build_staged(&args, &[1, 2, 3]).unwrap();
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
        let mut memory = vec![0u8; 8];
        let guest = GuestMemory::exclusive(&mut memory);
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.parse_direct(&[0x05, 9, 0, 0, 0], &guest).unwrap();
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
    fn empty_argv_gives_an_empty_table() {
        let mut storage = KernelParamStorage::<0>::new();
        storage.parse_direct(&[], &GuestMemory::length_only(0)).unwrap();
        assert!(storage.is_empty());
        storage.with_params(|table| {
            assert!(table.is_empty());
            assert!(table.pointers().is_empty());
            let _ = table.as_mut_ptr();
        });
        storage.build_staged(&[], &[]).unwrap();
        assert!(storage.is_empty());
        assert!(storage.with_padded_params(|table| table.is_empty()));
    }

    #[test]
    fn capacity_is_enforced() {
        let mut memory = vec![0u8; 8];
        let guest = GuestMemory::exclusive(&mut memory);
        let argv: [LoweredArgSnapshot; 3] = [Arg::U32(1), Arg::U32(2), Arg::U32(3)];
        let mut buf = [0u8; 32];
        let n = encode_argv(&argv, &mut buf).unwrap();
        let args: ParsedArgv = parse_argv(&buf[..n], &guest).unwrap();
        let mut two = KernelParamStorage::<2>::new();
        let err = two.build_staged(&args, &[]).unwrap_err();
        assert_eq!(err, StorageError::TooManyArgs { capacity: 2, got: 3 });
        assert_eq!(HostError::from(err).code(), AbiError::KernelArgsUnsupported);
        assert!(two.is_empty());
        assert!(KernelParamStorage::<3>::new().build_staged(&args, &[]).is_ok());
    }

    #[test]
    fn staging_needs_no_writable_host_pointer() {
        let memory = vec![0u8; 16];
        let argv = [Arg::U32(1), Arg::Ptr(GuestRange { guest_offset: 0, len: 16 })];
        let mut buf = [0u8; 32];
        let n = encode_argv(&argv, &mut buf).unwrap();
        for guest in [GuestMemory::shared(&memory), GuestMemory::length_only(16)] {
            let args: ParsedArgv = parse_argv(&buf[..n], &guest).unwrap();
            // Staging does not read the host pointer, so it builds where direct cannot
            // (`parse_direct_needs_an_exclusive_borrow_for_pointers`).
            let mut storage = KernelParamStorage::<4>::new();
            storage.build_staged(&args, &[0x1000]).unwrap();
            assert_eq!(storage.value_bytes(1), Some(&0x1000u64.to_ne_bytes()[..]));
        }
    }

    #[test]
    fn staged_addresses_must_cover_every_pointer() {
        let mut memory = vec![0u8; 16];
        let guest = GuestMemory::exclusive(&mut memory);
        let argv = [
            Arg::Ptr(GuestRange { guest_offset: 0, len: 8 }),
            Arg::Ptr(GuestRange { guest_offset: 8, len: 8 }),
        ];
        let mut buf = [0u8; 32];
        let n = encode_argv(&argv, &mut buf).unwrap();
        let args: ParsedArgv = parse_argv(&buf[..n], &guest).unwrap();
        let mut storage = KernelParamStorage::<4>::new();
        let err = storage.build_staged(&args, &[0x1000]).unwrap_err();
        assert_eq!(err, StorageError::MissingDeviceAddress { index: 1 });
        let host = HostError::from(err);
        assert_eq!(host.code(), AbiError::Internal);
        assert!(host.to_string().contains("argument 1"), "{host}");
        assert!(storage.is_empty());
    }

    /// `buf` filled into a storage by `parse_direct` and by the parser with the storage as its
    /// sink, against the parser's own output: every slot holds its argument's native bytes, a
    /// pointer its window's host address (`base` + its offset); and a staged build handed those
    /// host addresses stores the same slots.
    fn assert_direct_stores_what_the_parser_accepts(buf: &[u8], guest: &GuestMemory<'_>, base: u64) {
        let args: ParsedArgv = parse_argv(buf, guest).unwrap();
        let mut direct: KernelParamStorage = KernelParamStorage::new();
        direct.parse_direct(buf, guest).unwrap();
        let mut sink: KernelParamStorage = KernelParamStorage::new();
        parse_argv_into(buf, guest, &mut sink).unwrap();
        sink.direct_error().unwrap();

        let mut hosts = Vec::new();
        assert_eq!((direct.len(), sink.len()), (args.len(), args.len()));
        for (i, arg) in args.iter().enumerate() {
            let arg = arg.snapshot();
            let host = match arg {
                Arg::Ptr(r) => base + u64::from(r.guest_offset),
                _ => 0,
            };
            if let Arg::Ptr(_) = arg {
                hosts.push(host);
            }
            let want = native_bytes(&arg, host);
            assert_eq!(direct.value_bytes(i), Some(&want[..]), "slot {i}");
            assert_eq!(sink.value_bytes(i), Some(&want[..]), "slot {i} filled as a sink");
        }
        let mut staged: KernelParamStorage = KernelParamStorage::new();
        staged.build_staged(&args, &hosts).unwrap();
        assert_eq!(staged.arg_sizes(), direct.arg_sizes());
        let len = args.len();
        assert_eq!(staged.slots[..len], direct.slots[..len]);
        assert_eq!(sink.slots[..len], direct.slots[..len]);
    }

    #[test]
    fn parse_direct_stores_what_the_parser_accepts() {
        let mut memory = vec![0u8; 64];
        let base = memory.as_mut_ptr().addr() as u64;
        let guest = GuestMemory::exclusive(&mut memory);
        let mut buf = [0u8; 128];
        let n = encode_argv(&every_type(), &mut buf).unwrap();
        assert_direct_stores_what_the_parser_accepts(&buf[..n], &guest, base);
        assert_direct_stores_what_the_parser_accepts(&[], &guest, base);

        // The whole capacity, every slot.
        let argv: Vec<LoweredArgSnapshot> = (0..MAX_KERNEL_ARGS as u32)
            .map(|i| match i % 4 {
                0 => Arg::Ptr(GuestRange { guest_offset: i % 64, len: 0 }),
                1 => Arg::F32(F32Bits(i)),
                2 => Arg::I64(-i64::from(i)),
                _ => Arg::U32(i),
            })
            .collect();
        let mut buf = vec![0u8; kernel_args_core::MAX_KERNEL_ARGS_BYTES];
        let n = encode_argv(&argv, &mut buf).unwrap();
        assert_direct_stores_what_the_parser_accepts(&buf[..n], &guest, base);
    }

    #[test]
    fn parse_direct_refuses_with_the_parsers_error_and_leaves_nothing() {
        let mut memory = vec![0u8; 64];
        let guest = GuestMemory::exclusive(&mut memory);
        let mut storage = KernelParamStorage::<4>::new();
        storage.parse_direct(&[0x05, 7, 0, 0, 0], &guest).unwrap();
        assert_eq!(storage.len(), 1);

        // A window past memory in record 1, byte 5: -2 with its place, and the earlier
        // storage is gone.
        let buf = [0x05, 7, 0, 0, 0, 0x07, 60, 0, 0, 0, 8, 0, 0, 0];
        let err = storage.parse_direct(&buf, &guest).unwrap_err();
        let ParseError::Argv(argv) = err else { panic!("argv error expected, got {err:?}") };
        assert_eq!((argv.index(), argv.offset()), (1, 5));
        assert_eq!(HostError::from(err).code(), AbiError::InvalidPointer);
        assert!(storage.is_empty() && storage.with_params(|table| table.is_empty()));
        // Filled as a sink: the same error, and nothing left either.
        storage.parse_direct(&buf[..5], &guest).unwrap();
        assert_eq!(parse_argv_into(&buf, &guest, &mut storage), Err(argv));
        assert!(storage.is_empty());

        // The capacity is the record cap: the fifth record start is -10.
        let five = [0x05, 1, 0, 0, 0].repeat(5);
        let err = storage.parse_direct(&five, &guest).unwrap_err();
        let ParseError::Argv(argv) = err else { panic!("argv error expected, got {err:?}") };
        assert_eq!((argv.index(), argv.offset()), (4, 20));
        assert_eq!(HostError::from(err).code(), AbiError::KernelArgsUnsupported);
        assert!(storage.is_empty());
        assert_eq!(parse_argv_into(&five, &guest, &mut storage), Err(argv));
        assert!(storage.is_empty());
        storage.parse_direct(&five[..20], &guest).unwrap();
        assert_eq!(storage.len(), 4);
    }

    #[test]
    fn parse_direct_needs_an_exclusive_borrow_for_pointers() {
        let memory = vec![0u8; 16];
        let argv = [
            Arg::U32(1),
            Arg::Ptr(GuestRange { guest_offset: 0, len: 16 }),
            Arg::Ptr(GuestRange { guest_offset: 4, len: 4 }),
        ];
        let mut buf = [0u8; 32];
        let n = encode_argv(&argv, &mut buf).unwrap();
        for guest in [GuestMemory::shared(&memory), GuestMemory::length_only(16)] {
            let mut storage = KernelParamStorage::<4>::new();
            let err = storage.parse_direct(&buf[..n], &guest).unwrap_err();
            // The first pointer argument is named.
            assert_eq!(err, ParseError::Storage(StorageError::NotWritable { index: 1 }));
            let host = HostError::from(err);
            assert_eq!(host.code(), AbiError::Internal);
            assert!(host.to_string().contains("argument 1"), "{host}");
            assert!(storage.is_empty());
            // Filled as a sink, the parse succeeds and `direct_error` names the same argument.
            parse_argv_into(&buf[..n], &guest, &mut storage).unwrap();
            assert_eq!(storage.direct_error(), Err(StorageError::NotWritable { index: 1 }));
            // Scalars alone need no borrow of any kind...
            storage.parse_direct(&buf[..5], &guest).unwrap();
            assert_eq!(storage.len(), 1);
            parse_argv_into(&buf[..5], &guest, &mut storage).unwrap();
            assert_eq!(storage.direct_error(), Ok(()));
            // ...and the guest's own error comes before the host's.
            let mut bad = buf;
            bad[n] = 0xee;
            let err = storage.parse_direct(&bad[..=n], &guest).unwrap_err();
            assert!(matches!(err, ParseError::Argv(e) if e.index() == 3), "{err:?}");
        }
    }

    #[test]
    fn a_full_storage_of_every_slot() {
        // The whole default capacity, read back through the table.
        let mut memory = vec![0u8; 8];
        let guest = GuestMemory::exclusive(&mut memory);
        let argv: Vec<LoweredArgSnapshot> = (0..MAX_KERNEL_ARGS as u64)
            .map(|i| if i % 2 == 0 { Arg::U64(i << 40 | i) } else { Arg::I32(-(i as i32)) })
            .collect();
        let mut buf = vec![0u8; kernel_args_core::MAX_KERNEL_ARGS_BYTES];
        let n = encode_argv(&argv, &mut buf).unwrap();
        let mut storage: KernelParamStorage = KernelParamStorage::new();
        storage.parse_direct(&buf[..n], &guest).unwrap();
        storage.with_params(|table| {
            assert_eq!(table.pointers().len(), MAX_KERNEL_ARGS);
            for (i, arg) in argv.iter().enumerate() {
                let want = native_bytes(arg, 0);
                assert_eq!(read_through_table(table, i, want.len()), want, "argument {i}");
            }
        });
    }
}
