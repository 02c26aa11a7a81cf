//! The seam between the host function and whatever runs the kernel: [`Launcher`], the
//! [`LaunchRequest`] it receives, and what it answers.
//!
//! The host function has checked everything a guest controls before a launcher sees a request:
//! the argument region, the launch shape and the whole argv, parsed once into the launch's
//! pointer-free record, and the argv against the declaration of the kernel as the launcher has it
//! registered at that moment. A request carries those checked arguments
//! ([`LoweredArgSnapshot`]s: scalars, and windows as guest offset and length), the shape, the
//! kernel id, the registration the check used and the guest memory.
//! [`LaunchRequest::window`] turns a pointer argument's window into its host pointer, in one
//! compare against the memory it was checked against; a launcher needs nothing else to place
//! arguments where its device reads them.
//!
//! **A request is a checked request.** Only the host function ([`LaunchHost::call`]) and the
//! checking constructor [`LaunchRequest::check`] make one, each after the same checks; a
//! launcher launches the registration the request names ([`LaunchRequest::registration`]),
//! never what is registered under its id by the time it runs, so a kernel registered again
//! while a call is checked affects the next call only.
//!
//! [`LaunchHost::call`]: crate::LaunchHost::call

use kernel_args_core::{GuestMemory, GuestRange, GuestWindow};

use crate::args::LaunchArgs;

use crate::checks::LaunchShape;
use crate::declaration::Declaration;
use crate::error::{AbiError, HostError};

/// One checked launch, ready for a [`Launcher`].
///
/// `args` passed every rule of the wire format against `memory` (each window lies inside it),
/// and the declaration of the kernel registered as [`registration`](Self::registration) (or the
/// kernel has none, and the guest is trusted). Pointer windows borrow guest memory exclusively
/// for the call (`'m`), so a launcher may let the device read and write guest memory, but
/// cannot keep a pointer past the call.
///
/// Nothing outside this crate builds a request but through its checks: the host function, or
/// [`check`](Self::check).
///
/// ```
/// use kernel_args::{Declaration, DryRunLauncher, GuestTrust, LaunchArgs, LaunchRequest, LaunchShape};
/// use kernel_args_core::{GuestMemory, GuestRange, LoweredArgSnapshot};
///
/// let mut launcher = DryRunLauncher::new();
/// launcher.kernels_mut().declare(1, Declaration::parse("scale(x: &mut [f32; n], n: u32)")?)?;
///
/// let mut memory = vec![0u8; 64];
/// let guest = GuestMemory::exclusive(&mut memory);
/// let args = [LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 16, len: 32 }), LoweredArgSnapshot::U32(8)];
/// let args = LaunchArgs::from_slice(&args).expect("two arguments");
/// let shape = LaunchShape { grid: [1, 1, 1], block: [8, 1, 1], shared_mem_bytes: 0 };
/// let request = LaunchRequest::check(&mut launcher, 1, shape, &args, &guest, GuestTrust::Untrusted)?;
///
/// let (index, range) = request.args.pointers().next().expect("one pointer");
/// let window = request.window(range)?;
/// assert_eq!(index, 0);
/// assert_eq!(window.len(), 32);
/// assert!(window.host_ptr_mut().is_some(), "exclusive memory: the device may write");
///
/// // Nine elements do not fit the 32 bytes the declaration checks the window against.
/// let args = [LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 16, len: 32 }), LoweredArgSnapshot::U32(9)];
/// let args = LaunchArgs::from_slice(&args).expect("two arguments");
/// let err = LaunchRequest::check(&mut launcher, 1, shape, &args, &guest, GuestTrust::Untrusted).unwrap_err();
/// assert_eq!(err.code(), kernel_args::AbiError::InvalidArgs);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A request cannot be written by hand:
///
/// ```compile_fail
/// # use kernel_args::{LaunchArgs, LaunchRequest, LaunchShape};
/// # use kernel_args_core::GuestMemory;
/// # let mut memory = vec![0u8; 64];
/// # let guest = GuestMemory::exclusive(&mut memory);
/// # let args = LaunchArgs::new();
/// # let shape = LaunchShape { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
/// let request = LaunchRequest { kernel_id: 1, shape, args: &args, memory: &guest, registration: 0 };
/// ```
///
/// ```compile_fail
/// # use kernel_args::{LaunchArgs, LaunchRequest, LaunchShape};
/// # use kernel_args_core::GuestMemory;
/// # let mut memory = vec![0u8; 64];
/// # let guest = GuestMemory::exclusive(&mut memory);
/// # let args = LaunchArgs::new();
/// # let shape = LaunchShape { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
/// let request = LaunchRequest::new(1, shape, &args, &guest);
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
    /// The registration the arguments were checked against.
    registration: u64,
    /// The limits the host checked the launch against; a launcher holds what only it can
    /// measure to them ([`LaunchLimits::max_staging_bytes`](crate::LaunchLimits),
    /// `max_back_edges_per_thread`).
    limits: crate::LaunchLimits,
}

impl<'a, 'm> LaunchRequest<'a, 'm> {
    /// A request the host function checked (the kernel's registration found and its
    /// declaration's check passed, or an undeclared kernel for a trusted guest).
    pub(crate) fn from_checked(
        kernel_id: i64,
        shape: LaunchShape,
        args: &'a LaunchArgs,
        memory: &'a GuestMemory<'m>,
        registration: u64,
        limits: crate::LaunchLimits,
    ) -> Self {
        LaunchRequest { kernel_id, shape, args, memory, registration, limits }
    }

    /// The limits the host checked the launch against (the quotas a launcher holds it to among
    /// them).
    pub fn limits(&self) -> &crate::LaunchLimits {
        &self.limits
    }

    /// The request for kernel `kernel_id` of `launcher`, checked as the host function checks a
    /// guest's call (for an embedder that drives a launcher without a
    /// [`LaunchHost`](crate::LaunchHost)): the shape within the limits every device accepts
    /// ([`check_launch_shape`](crate::check_launch_shape) with the default
    /// [`LaunchLimits`](crate::LaunchLimits)), every window inside `memory`, the kernel
    /// registered with `launcher` ([`Launcher::registered`]), and `args` against its
    /// declaration ([`Declaration::check`]); a kernel without a declaration only when `trust`
    /// is [`GuestTrust::Trusted`](GuestTrust::Trusted). The request names the
    /// registration it was checked against, which `launcher` then launches.
    ///
    /// # Errors
    ///
    /// The [`HostError`] the host function would answer the guest: `InvalidDimensions`,
    /// `QuotaExceeded` (threads per launch, at the default quota), `InvalidPointer`,
    /// `InvalidKernel` or `InvalidArgs`.
    pub fn check<L: Launcher + ?Sized>(
        launcher: &mut L,
        kernel_id: i64,
        shape: LaunchShape,
        args: &'a LaunchArgs,
        memory: &'a GuestMemory<'m>,
        trust: GuestTrust,
    ) -> Result<Self, HostError> {
        let signed = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        crate::check_launch_shape(
            shape.grid.map(signed),
            shape.block.map(signed),
            signed(shape.shared_mem_bytes),
            &crate::LaunchLimits::DEFAULT,
        )?;
        crate::check_threads_per_launch(&shape, &crate::LaunchLimits::DEFAULT)?;
        for (_, range) in args.pointers() {
            if memory.window(range.guest_offset, range.len).is_none() {
                return Err(HostError::fixed(AbiError::InvalidPointer, "a window lies outside guest memory"));
            }
        }
        let registration = check_registered(launcher, kernel_id, args, &shape, trust)?;
        Ok(LaunchRequest {
            kernel_id,
            shape,
            args,
            memory,
            registration,
            limits: crate::LaunchLimits::DEFAULT,
        })
    }

    /// The request with `limits` for the quotas its launcher measures
    /// ([`LaunchLimits::max_staging_bytes`](crate::LaunchLimits), `max_back_edges_per_thread`);
    /// [`check`](Self::check) gives it the defaults.
    #[must_use]
    pub fn with_limits(mut self, limits: crate::LaunchLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The registration of the kernel the arguments were checked against
    /// ([`Registered::registration`]): what a launcher launches.
    pub fn registration(&self) -> u64 {
        self.registration
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
    /// Kernel `kernel_id` as this launcher has it registered now: its declaration (or none) and
    /// the registration's identity ([`Registered`]); `None` when no kernel has this id (the guest
    /// gets `InvalidKernel`). Called for every call that passed the argv checks, before
    /// [`launch`](Launcher::launch); nothing may be launched here.
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>>;

    /// Launches the kernel registered as the request's
    /// [`registration`](LaunchRequest::registration) (the one its arguments were checked
    /// against, even if the kernel has been registered again since) and waits for it; an `Err`
    /// carries the ABI code the guest will see.
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError>;
}

/// Whether a host trusts its guest with kernels registered without a declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GuestTrust {
    /// The default: a kernel without a declaration is refused (`InvalidKernel`), so the guest
    /// reaches only what declared kernels declare.
    #[default]
    Untrusted,
    /// For guests the embedder trusts as it trusts itself: a kernel registered without a
    /// declaration launches, its arguments checked only against the wire format and the
    /// kernel's parameter sizes, so such a guest can make a kernel read or write any memory the
    /// kernel can address. Declared kernels are checked against their declarations all the same.
    Trusted,
}

/// The checks of a kernel's registration that the host function and [`LaunchRequest::check`]
/// share: the kernel registered, and `args` against its declaration (an undeclared kernel only
/// for a trusted guest). The registration checked.
pub(crate) fn check_registered<L: Launcher + ?Sized>(
    launcher: &mut L,
    kernel_id: i64,
    args: &LaunchArgs,
    shape: &LaunchShape,
    trust: GuestTrust,
) -> Result<u64, HostError> {
    let registered = launcher
        .registered(kernel_id)
        .ok_or(HostError::new(crate::error::Detail::UnknownKernel { kernel_id }))?;
    match registered.declaration() {
        Some(declaration) => declaration.check(args, shape)?,
        None if trust == GuestTrust::Trusted => {}
        None => return Err(HostError::new(crate::error::Detail::Undeclared { kernel_id })),
    }
    Ok(registered.registration())
}

/// How a launcher has a kernel registered ([`Launcher::registered`]): its declaration, if it has
/// one, and the registration's identity, a number the launcher gives each registration (a
/// kernel registered again gets another), which a [`LaunchRequest`] carries to the launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered<'a> {
    declaration: Option<&'a Declaration>,
    registration: u64,
}

impl<'a> Registered<'a> {
    /// A kernel registered with its declaration: every launch is checked against it.
    pub const fn declared(declaration: &'a Declaration, registration: u64) -> Self {
        Registered { declaration: Some(declaration), registration }
    }

    /// A kernel registered without a declaration: only a host that trusts its guest launches it
    /// ([`GuestTrust::Trusted`](GuestTrust::Trusted)); any other answers `InvalidKernel`.
    pub const fn undeclared(registration: u64) -> Self {
        Registered { declaration: None, registration }
    }

    /// The declaration, where the kernel has one.
    pub const fn declaration(&self) -> Option<&'a Declaration> {
        self.declaration
    }

    /// The registration's identity.
    pub const fn registration(&self) -> u64 {
        self.registration
    }
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
    /// Each kernel's id, declaration and registration.
    kernels: heapless::Vec<(i64, Option<Declaration>, u64), N>,
    /// The registrations made so far: the next one's identity.
    registrations: u64,
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
        KernelTable { kernels: heapless::Vec::new(), registrations: 0 }
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
    /// host trusts ([`GuestTrust::Trusted`](GuestTrust::Trusted)).
    ///
    /// # Errors
    ///
    /// As [`declare`](Self::declare).
    pub fn register_undeclared(&mut self, id: i64) -> Result<(), TableFull> {
        self.insert(id, None)
    }

    fn insert(&mut self, id: i64, declaration: Option<Declaration>) -> Result<(), TableFull> {
        let registration = self.registrations.wrapping_add(1);
        match self.kernels.iter_mut().find(|(k, _, _)| *k == id) {
            Some(entry) => *entry = (id, declaration, registration),
            None => {
                self.kernels.push((id, declaration, registration)).map_err(|_| TableFull { capacity: N })?
            }
        }
        self.registrations = registration;
        Ok(())
    }

    /// Kernel `id`, as [`Launcher::registered`] answers.
    pub fn get(&self, id: i64) -> Option<Registered<'_>> {
        self.kernels.iter().find(|(k, _, _)| *k == id).map(|(_, d, registration)| match d {
            Some(d) => Registered::declared(d, *registration),
            None => Registered::undeclared(*registration),
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
