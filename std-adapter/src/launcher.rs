//! The seam between the host function and whatever runs the kernel: [`Launcher`], the
//! [`LaunchRequest`] it receives, and what it answers.
//!
//! The host function has checked everything a guest controls before a launcher sees a request:
//! the argument region, the launch shape and the whole argv, parsed once into the launch's
//! pointer-free record. A request carries those checked arguments ([`LoweredArgSnapshot`]s:
//! scalars, and windows as guest offset and length), the shape, the kernel id and the guest
//! memory. [`LaunchRequest::window`] turns a pointer argument's window into its host pointer, in
//! one compare against the memory it was checked against; a launcher needs nothing else to place
//! arguments where its device reads them.

use kernel_args_core::{GuestMemory, GuestRange, GuestWindow};

use crate::args::LaunchArgs;

use crate::checks::LaunchShape;
use crate::declaration::Declaration;
use crate::error::{AbiError, HostError};

/// One checked launch, ready for a [`Launcher`].
///
/// From the host function ([`LaunchHost::call`](crate::LaunchHost::call)), `args` passed every
/// rule of the wire format against `memory`: each window lies inside it. Pointer windows borrow
/// guest memory exclusively for the call (`'m`), so a launcher may let the device read and write
/// guest memory, but cannot keep a pointer past the call.
///
/// ```
/// use kernel_args::{LaunchArgs, LaunchRequest, LaunchShape};
/// use kernel_args_core::{GuestMemory, GuestRange, LoweredArgSnapshot};
///
/// let mut memory = vec![0u8; 64];
/// let guest = GuestMemory::exclusive(&mut memory);
/// let args = [LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 16, len: 32 }), LoweredArgSnapshot::U32(8)];
/// let args = LaunchArgs::from_slice(&args).expect("two arguments");
/// let shape = LaunchShape { grid: [1, 1, 1], block: [8, 1, 1], shared_mem_bytes: 0 };
/// let request = LaunchRequest::new(1, shape, &args, &guest);
///
/// let (index, range) = request.args.pointers().next().expect("one pointer");
/// let window = request.window(range)?;
/// assert_eq!(index, 0);
/// assert_eq!(window.len(), 32);
/// assert!(window.host_ptr_mut().is_some(), "exclusive memory: the device may write");
/// # Ok::<(), kernel_args::HostError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LaunchRequest<'a, 'm> {
    /// The guest's kernel handle.
    pub kernel_id: i64,
    /// The checked launch shape.
    pub shape: LaunchShape,
    /// The checked arguments, in argv order; windows as guest offset and length.
    pub args: &'a LaunchArgs,
    /// Guest memory, which the windows were checked against and point into; borrowed
    /// exclusively for `'m` by the host function.
    pub memory: &'a GuestMemory<'m>,
}

impl<'a, 'm> LaunchRequest<'a, 'm> {
    /// A request for `kernel_id` with `shape`, whose arguments are `args` over `memory`.
    pub fn new(
        kernel_id: i64,
        shape: LaunchShape,
        args: &'a LaunchArgs,
        memory: &'a GuestMemory<'m>,
    ) -> Self {
        LaunchRequest { kernel_id, shape, args, memory }
    }

    /// The window `range` of guest memory with its host pointer, checked against the memory in
    /// one compare. A window of one of this request's arguments always passes, when the request
    /// comes from the host function.
    ///
    /// # Errors
    ///
    /// `Internal` when `range` does not lie in the memory: a request made by hand, never the
    /// guest's doing.
    #[inline]
    pub fn window(&self, range: GuestRange) -> Result<GuestWindow<'m>, HostError> {
        self.memory
            .window(range.guest_offset, range.len)
            .ok_or(HostError::fixed(AbiError::Internal, "a request's window lies outside its guest memory"))
    }

    /// The pointer-free copy of this request (copies the arguments; never allocates).
    pub fn snapshot(&self) -> LaunchSnapshot {
        LaunchSnapshot { kernel_id: self.kernel_id, shape: self.shape, args: self.args.clone() }
    }
}

/// How pointer arguments reached the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PointerMode {
    /// The device was handed host pointers into guest memory (it can access pageable host
    /// memory).
    Direct,
    /// Each window was copied to device memory before the launch and back after it.
    Staged,
    /// No pointer reached any device: a launcher that places nothing (a dry run, a launcher
    /// that forwards the pointer-free record elsewhere).
    None,
}

/// Whether the arguments were checked against the kernel's parameter list, and against what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SignatureCheck {
    /// Checked against the parameter list parsed from the module's PTX.
    Ptx,
    /// Checked against the driver's `cuFuncGetParamInfo`.
    Driver,
    /// No signature was known, so no check was made.
    Skipped,
}

/// What a successful launch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchOutcome {
    /// How pointer arguments were handed to the device.
    pub pointer_mode: PointerMode,
    /// Which signature check was made.
    pub signature: SignatureCheck,
}

impl LaunchOutcome {
    /// The outcome of a launcher that reaches no device: no pointer placed, no parameter list
    /// checked.
    pub const NO_DEVICE: LaunchOutcome =
        LaunchOutcome { pointer_mode: PointerMode::None, signature: SignatureCheck::Skipped };
}

/// Runs a checked launch request: the dry run here, the CUDA backend in `kernel-args-cuda`, or
/// an embedder's own.
///
/// A launcher knows its kernels: [`registered`](Launcher::registered) says whether a kernel id
/// names one and what it declares, which the host checks every launch against before
/// [`launch`](Launcher::launch) is called. A launcher that forwards each launch elsewhere (a
/// queue, a link to another machine) needs only the pointer-free part of the request:
///
/// ```
/// use kernel_args::{Declaration, HostError, KernelTable, LaunchOutcome, LaunchRequest, LaunchSnapshot, Launcher, Registered};
///
/// /// Queues each launch, pointer-free, for a worker that owns the device.
/// struct Queue {
///     kernels: KernelTable,
///     queued: Vec<LaunchSnapshot>,
/// }
///
/// impl Launcher for Queue {
///     fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
///         self.kernels.get(kernel_id)
///     }
///
///     fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
///         self.queued.push(request.snapshot());
///         Ok(LaunchOutcome::NO_DEVICE)
///     }
/// }
///
/// let mut kernels = KernelTable::new();
/// kernels.declare(1, Declaration::parse("scale(x: &mut [f32; n], n: u32, by: f32)")?)?;
/// let queue = Queue { kernels, queued: Vec::new() };
/// # let _ = queue;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Launcher {
    /// Kernel `kernel_id` as this launcher has it registered: its declaration, or
    /// [`Registered::Undeclared`] for a kernel registered without one; `None` when no kernel has
    /// this id (the guest gets `InvalidKernel`). Called by the host function for every call that
    /// passed the argv checks, before [`launch`](Launcher::launch); nothing may be launched here.
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>>;

    /// Launches the kernel and waits for it; an `Err` carries the ABI code the guest will see.
    /// Called only for a request whose arguments fit the kernel's declaration (or, for an
    /// undeclared kernel, on a host that trusts its guest).
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError>;
}

/// How a launcher has a kernel registered ([`Launcher::registered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered<'a> {
    /// With its declaration: every launch is checked against it.
    Declared(&'a Declaration),
    /// Without a declaration: only a host that trusts its guest launches it
    /// ([`GuestTrust::Trusted`](crate::GuestTrust::Trusted)); any other answers `InvalidKernel`.
    Undeclared,
}

impl<L: Launcher + ?Sized> Launcher for &mut L {
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        (**self).registered(kernel_id)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        (**self).launch(request)
    }
}

#[cfg(feature = "std")]
impl<L: Launcher + ?Sized> Launcher for Box<L> {
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        (**self).registered(kernel_id)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        (**self).launch(request)
    }
}

/// Kernel ids and their declarations, in fixed capacity (`N` kernels; no allocation): what a
/// launcher without a registry of its own answers [`Launcher::registered`] from (the dry run,
/// a forwarding launcher).
#[derive(Debug, Clone, Default)]
pub struct KernelTable<const N: usize = 8> {
    kernels: heapless::Vec<(i64, Option<Declaration>), N>,
}

/// The table holds `N` kernels already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TableFull {
    /// The table's capacity.
    pub capacity: usize,
}

impl core::fmt::Display for TableFull {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "the kernel table holds its {} kernels already", self.capacity)
    }
}

impl core::error::Error for TableFull {}

impl<const N: usize> KernelTable<N> {
    /// An empty table.
    pub const fn new() -> Self {
        KernelTable { kernels: heapless::Vec::new() }
    }

    /// Registers (or replaces) kernel `id` with its declaration.
    ///
    /// # Errors
    ///
    /// [`TableFull`] when `id` is new and the table holds `N` kernels.
    pub fn declare(&mut self, id: i64, declaration: Declaration) -> Result<(), TableFull> {
        self.insert(id, Some(declaration))
    }

    /// Registers (or replaces) kernel `id` without a declaration: launchable only by a guest the
    /// host trusts ([`GuestTrust::Trusted`](crate::GuestTrust::Trusted)).
    ///
    /// # Errors
    ///
    /// As [`declare`](Self::declare).
    pub fn register_undeclared(&mut self, id: i64) -> Result<(), TableFull> {
        self.insert(id, None)
    }

    fn insert(&mut self, id: i64, declaration: Option<Declaration>) -> Result<(), TableFull> {
        match self.kernels.iter_mut().find(|(k, _)| *k == id) {
            Some(entry) => entry.1 = declaration,
            None => self.kernels.push((id, declaration)).map_err(|_| TableFull { capacity: N })?,
        }
        Ok(())
    }

    /// Kernel `id`, as [`Launcher::registered`] answers.
    pub fn get(&self, id: i64) -> Option<Registered<'_>> {
        self.kernels.iter().find(|(k, _)| *k == id).map(|(_, d)| match d {
            Some(d) => Registered::Declared(d),
            None => Registered::Undeclared,
        })
    }

    /// The number of kernels registered.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// `true` when no kernel is registered.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }
}

/// The pointer-free copy of a launch: kernel id, shape and argument snapshots (pointer
/// arguments as guest offset and length). `Send + Sync`; holds its arguments inline, so it never
/// allocates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchSnapshot {
    pub(crate) kernel_id: i64,
    pub(crate) shape: LaunchShape,
    pub(crate) args: LaunchArgs,
}

impl LaunchSnapshot {
    /// No launch: kernel 0, an all-zero shape, no arguments.
    pub(crate) const EMPTY: LaunchSnapshot = LaunchSnapshot {
        kernel_id: 0,
        shape: LaunchShape { grid: [0; 3], block: [0; 3], shared_mem_bytes: 0 },
        args: LaunchArgs::new(),
    };

    /// The guest's kernel handle.
    pub fn kernel_id(&self) -> i64 {
        self.kernel_id
    }

    /// The checked launch shape.
    pub fn shape(&self) -> LaunchShape {
        self.shape
    }

    /// The arguments, pointer-free, in argv order.
    pub fn args(&self) -> &LaunchArgs {
        &self.args
    }
}
