//! The CUDA launch path: a device shared by every launcher of a process ([`CudaDevice`]) and
//! the [`Launcher`] that runs registered PTX kernels on it ([`CudaLauncher`]).
//!
//! ```no_run
//! use kernel_args::{DryRunLauncher, LaunchHost, Launcher};
//! use kernel_args_cuda::{CudaDevice, CudaOptions, KernelRegistry, kernels};
//!
//! let mut registry = KernelRegistry::new();
//! registry.register(1, kernels::VECTOR_ADD_PTX, kernels::VECTOR_ADD_ENTRY)?;
//! // The driver library comes from KARGS_CUDA_DRIVER where it is set, else libcuda.so.1.
//! let launcher: Box<dyn Launcher + Send> = match CudaDevice::open(registry, CudaOptions::from_env()) {
//!     Ok(device) => Box::new(device.launcher()), // one per guest; `Send`, so any thread
//!     Err(e) => { eprintln!("dry run: {e}"); Box::new(DryRunLauncher::new()) }
//! };
//! let host = LaunchHost::new(launcher);
//! # Ok::<(), kernel_args::HostError>(())
//! ```
//!
//! ## The device
//!
//! [`CudaDevice::open`] loads the driver library (at run time; see [`CudaOptions`]), picks the
//! device and retains its primary context once. It is `Send + Sync` and shared (`Arc`) by all
//! launchers of the process: each registered kernel's module is loaded once per device, on
//! its first launch, and kept. A module that fails to compile (`MalformedPtx`) or lacks its
//! entry (`InvalidKernel`) is remembered too, so a guest that repeats such a launch gets the
//! same answer without the PTX being compiled again.
//!
//! ## A launch
//!
//! Each [`CudaLauncher`] (made by [`CudaDevice::launcher`], one per guest) has its own stream,
//! parameter storage and staging buffers, and is `Send`: a `LaunchHost<CudaLauncher>` lives in
//! a `wasmtime::Store` on any thread. A [`launch`](Launcher::launch):
//!
//! 1. finds the kernel's module (loading it on first use; the JIT's error log goes into the
//!    `MalformedPtx` message), and its parameter sizes: from the driver
//!    (`cuFuncGetParamCount` and `cuFuncGetParamInfo`) where it can say, cross-checked with
//!    the PTX's `.entry` declaration where the driver gives no count, else from the PTX alone,
//!    else none ([`SignatureCheck::Skipped`], and the `void**` table is padded with pointers
//!    to zeros);
//! 2. opts the kernel in to more than 48 KiB of dynamic shared memory when the launch asks
//!    for it (`cuFuncSetAttribute`), and refuses with `InvalidDimensions` more than the
//!    device's opt-in limit less the kernel's static shared memory;
//! 3. takes the arguments into its parameter storage and checks their sizes against the
//!    kernel's (a mismatch is `InvalidArgs` naming the argument and both sizes). In direct
//!    mode the host function's own pass over the argv fills the storage
//!    ([`Launcher::parse_recorded`]), so a call through the host function parses the argv once;
//!    a request made otherwise is parsed here;
//! 4. hands pointer arguments to the device in the device's [`PointerMode`]:
//!    - **direct**: the kernel gets host pointers into guest memory, and the argv is parsed
//!      straight into the parameter slots in one pass
//!      ([`KernelParamStorage::parse_direct`]). `Auto` picks it where the device reads
//!      pageable memory through the host's page tables
//!      (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES`: ATS, as on Grace
//!      Hopper). Under HMM (pageable access without the host's page tables) `Auto` stages:
//!      HMM migrates the pages a kernel touches into device memory, and a wasm memory may be a
//!      copy-on-write file mapping that HMM cannot migrate; `Force(Direct)` still allows it
//!      there (see `docs/RISKS.md`);
//!    - **staged**: each window is copied into device memory before the launch and back
//!      after it, and the kernel gets the device addresses
//!      ([`KernelParamStorage::build_staged`]). Overlapping (or touching) windows
//!      are staged as one buffer (the crate's staging plan), so aliasing arguments alias on the device
//!      too. The buffers are kept by the launcher and reused (no `cuMemAlloc`/`cuMemFree` per
//!      launch), except those over [`MAX_KEPT_STAGING_BYTES`], freed after their launch;
//! 5. launches on the launcher's stream, copies staged windows back and synchronises: when
//!    `launch` returns, nothing on the device can touch guest memory any more.
//!
//! GPU writes reach guest memory only through windows of memory borrowed with
//! [`GuestMemory::exclusive`](kernel_args_core::GuestMemory::exclusive); a request whose
//! windows are not writable is refused (`Internal`: the host's mistake, not the guest's).
//! Driver errors are mapped from the integer code (the crate's `cu_error` table), never by
//! asking the driver.
//!
//! ## Kernel faults and recovery
//!
//! A fault in a kernel (`CUDA_ERROR_ILLEGAL_ADDRESS` and the driver's other sticky errors) is
//! sticky: the context is unusable afterwards, for every launcher sharing it. The launch that
//! meets it (the faulting one, and any other launch in flight in the context at the time)
//! answers `LaunchFailed`. The next launch on the device then recovers: it waits until no
//! launch is in flight, gives up every module, stream and buffer of the old context, resets
//! the primary context (`cuDevicePrimaryCtxReset`), and goes on in the fresh one, where the
//! modules are loaded again on their next use. If the driver refuses the reset, the device is
//! lost: every later launch answers `LaunchFailed` with the reason. (CUDA documents its sticky
//! errors as needing a new process; the reset is what the driver offers short of that.)

#![deny(unsafe_code)]

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};

use cust::sys::{CUdevice_attribute, CUfunction_attribute};
use kernel_args::{
    AbiError, Bound, Detail, Dimension, HostError, LaunchOutcome, LaunchRequest, LaunchSnapshot, Launcher,
    PointerMode, ShapeError, SignatureCheck,
};
use kernel_args_core::{Arg, GuestRange, GuestWindow, ParsedArgv};

use crate::cu_error::{Phase, is_sticky};
use crate::driver::{
    CuError, Current, DRIVER_LIBRARY, DeviceBuffer, Driver, Kernel, KernelLoadError, PrimaryContext, Stream,
    Transfer,
};
use crate::registry::{KernelEntry, KernelRegistry};
use crate::signature::{check_arg_sizes, check_param_sizes};
use crate::staging::StagingPlan;
use crate::storage::KernelParamStorage;

/// The environment variable [`CudaOptions::from_env`] reads the driver library's path from.
pub const DRIVER_ENV: &str = "KARGS_CUDA_DRIVER";

/// Staging buffers larger than this are freed after their launch rather than kept for the
/// next one, so that one large launch does not hold device memory for a launcher's life.
pub const MAX_KEPT_STAGING_BYTES: usize = 64 << 20;

/// How the launcher hands pointer arguments to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PointerModeChoice {
    /// Direct where the device reads pageable memory through the host's page tables (ATS),
    /// staged otherwise (HMM included).
    #[default]
    Auto,
    /// Always this mode. Forcing [`PointerMode::Direct`] on a device without pageable memory
    /// access is refused when the device is opened (the kernel would fault).
    Force(PointerMode),
}

/// What [`CudaDevice::open`] sets up.
#[derive(Debug, Clone, Default)]
pub struct CudaOptions {
    /// The device's ordinal (0 for the first).
    pub device_ordinal: u32,
    /// How pointer arguments reach the device.
    pub pointer_mode: PointerModeChoice,
    /// The driver library to load instead of the system's `libcuda.so.1`: an unusual install
    /// (Jetson's `/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1`), or the emulated driver of
    /// `cuda-emulator/`. Each library is loaded once per process and never unloaded.
    pub driver_library: Option<PathBuf>,
}

impl CudaOptions {
    /// The defaults, with [`driver_library`](Self::driver_library) from the environment
    /// variable `KARGS_CUDA_DRIVER` ([`DRIVER_ENV`]) where it is set and not empty. This is
    /// how tools such as `kargs` pick their driver.
    pub fn from_env() -> CudaOptions {
        let driver_library = std::env::var_os(DRIVER_ENV).filter(|p| !p.is_empty()).map(PathBuf::from);
        CudaOptions { driver_library, ..CudaOptions::default() }
    }
}

/// The device a [`CudaDevice`] runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's ordinal.
    pub ordinal: u32,
    /// The device's name (`"NVIDIA H200"`, ...).
    pub name: String,
    /// Compute capability, major and minor.
    pub compute_capability: (i32, i32),
    /// `cuDriverGetVersion` (e.g. 12040 for CUDA 12.4).
    pub driver_version: i32,
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`: the device can read and write pageable
    /// host memory, so host pointers can be handed to kernels directly.
    pub pageable_memory_access: bool,
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES`: that access goes
    /// through the host's page tables (ATS) rather than by migrating pages (HMM).
    pub uses_host_page_tables: bool,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`: shared memory per block without
    /// opting in (48 KiB).
    pub shared_memory_per_block: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: the most shared memory per
    /// block a kernel can opt in to.
    pub shared_memory_per_block_optin: u32,
    /// Whether the driver has `cuFuncGetParamInfo` (CUDA 12.4+).
    pub param_info: bool,
}

/// A kernel's module, loaded in one context, and what the launcher needs to know of it.
#[derive(Debug)]
struct LoadedKernel {
    kernel: Kernel,
    /// The parameter sizes, where the driver or the PTX knows them.
    param_sizes: Option<Vec<usize>>,
    /// Where `param_sizes` came from ([`SignatureCheck::Skipped`] exactly when `None`).
    signature: SignatureCheck,
    /// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`.
    static_shared: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` as last set.
    dynamic_shared_limit: AtomicU32,
}

/// A kernel id's module, or why it cannot be loaded (kept only for `MalformedPtx` and
/// `InvalidKernel`, which depend on the registered kernel alone).
type KernelSlot = Result<LoadedKernel, HostError>;

/// The device's context and everything loaded in it.
#[derive(Debug)]
struct ContextState {
    primary: PrimaryContext,
    /// Counts the contexts: a reset makes the next. Launchers' streams and buffers belong to
    /// the generation they were made in.
    generation: u64,
    kernels: Mutex<HashMap<i64, Arc<KernelSlot>>>,
    /// Set when a reset failed: the device cannot be used any more.
    lost: Option<HostError>,
}

/// One CUDA device, shared by every launcher of a process. See the [module docs](self).
#[derive(Debug)]
pub struct CudaDevice {
    info: DeviceInfo,
    pointer_mode: PointerMode,
    registry: RwLock<KernelRegistry>,
    context: RwLock<ContextState>,
    /// The generation whose context met a sticky error (0: none).
    poisoned: AtomicU64,
}

impl CudaDevice {
    /// Loads the driver and opens the device `options` names, for the kernels of `registry`.
    ///
    /// # Errors
    ///
    /// `NotAvailable` when there is no driver library, no device (or no device of that
    /// ordinal), the driver cannot initialise, or [`PointerMode::Direct`] is forced on a
    /// device without pageable memory access.
    pub fn open(registry: KernelRegistry, options: CudaOptions) -> Result<Arc<CudaDevice>, HostError> {
        let setup = |e: CuError| e.at(Phase::Setup);
        let library = options.driver_library.as_deref().map_or(OsStr::new(DRIVER_LIBRARY), |p| p.as_os_str());
        let driver = Driver::load(library)?;
        let count = driver.device_count().map_err(setup)?;
        if count <= 0 {
            return Err(HostError::msg(AbiError::NotAvailable, "the CUDA driver reports no device"));
        }
        let ordinal = i32::try_from(options.device_ordinal).unwrap_or(i32::MAX);
        if ordinal >= count {
            return Err(HostError::msg(
                AbiError::NotAvailable,
                format!("no CUDA device {ordinal}: the driver reports {count}"),
            ));
        }
        let device = driver.device(ordinal).map_err(setup)?;
        let attribute = |a| device.attribute(a).map_err(setup);
        let unsigned = |v: i32| u32::try_from(v).unwrap_or(0);
        use CUdevice_attribute as A;
        let info = DeviceInfo {
            ordinal: options.device_ordinal,
            name: device.name().map_err(setup)?,
            compute_capability: (
                attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            driver_version: driver.version(),
            pageable_memory_access: attribute(A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)? != 0,
            uses_host_page_tables: attribute(
                A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
            )? != 0,
            shared_memory_per_block: unsigned(attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?),
            shared_memory_per_block_optin: unsigned(attribute(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?),
            param_info: driver.has_param_info(),
        };
        let pointer_mode = match options.pointer_mode {
            PointerModeChoice::Auto if info.pageable_memory_access && info.uses_host_page_tables => {
                PointerMode::Direct
            }
            PointerModeChoice::Auto => PointerMode::Staged,
            PointerModeChoice::Force(PointerMode::Direct) if !info.pageable_memory_access => {
                return Err(HostError::msg(
                    AbiError::NotAvailable,
                    format!(
                        "direct pointers need CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, which device {} ({}) \
                         does not report",
                        info.ordinal, info.name
                    ),
                ));
            }
            PointerModeChoice::Force(mode) => mode,
        };
        let primary = device.retain_primary_context().map_err(setup)?;
        Ok(Arc::new(CudaDevice {
            info,
            pointer_mode,
            registry: RwLock::new(registry),
            context: RwLock::new(ContextState {
                primary,
                generation: 1,
                kernels: Mutex::new(HashMap::new()),
                lost: None,
            }),
            poisoned: AtomicU64::new(0),
        }))
    }

    /// A launcher on this device, with its own stream (made on its first launch), parameter
    /// storage and staging buffers.
    pub fn launcher(self: &Arc<CudaDevice>) -> CudaLauncher {
        CudaLauncher { device: Arc::clone(self), resources: None, storage: Box::default() }
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The pointer mode every launch uses.
    pub fn pointer_mode(&self) -> PointerMode {
        self.pointer_mode
    }

    /// Registers (or replaces) kernel `id`; a replaced kernel's module is unloaded once no
    /// launch uses it, and a remembered failure is forgotten.
    ///
    /// # Errors
    ///
    /// As [`KernelRegistry::register`].
    pub fn register(&self, id: i64, ptx: &str, entry: &str) -> Result<(), HostError> {
        self.registry.write().unwrap_or_else(PoisonError::into_inner).register(id, ptx, entry)?;
        // After the registry changed, so a module loaded from the old entry meanwhile goes too.
        let state = self.context.read().unwrap_or_else(PoisonError::into_inner);
        let evicted = state.kernels.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        // Unloaded here (its `Drop` makes the context current), while the context cannot be
        // reset under it.
        drop(evicted);
        drop(state);
        Ok(())
    }

    /// The context, recovered first if a kernel fault poisoned it; held (shared) for a whole
    /// launch, so that a recovery waits for the launches in flight.
    fn usable_context(&self) -> Result<RwLockReadGuard<'_, ContextState>, HostError> {
        let state = self.context.read().unwrap_or_else(PoisonError::into_inner);
        let state = if self.poisoned.load(Ordering::Acquire) == state.generation {
            drop(state);
            self.recover();
            self.context.read().unwrap_or_else(PoisonError::into_inner)
        } else {
            state
        };
        match &state.lost {
            Some(lost) => Err(lost.clone()),
            None => Ok(state),
        }
    }

    /// Replaces a poisoned context by a fresh one, once no launch is in flight.
    fn recover(&self) {
        let mut state = self.context.write().unwrap_or_else(PoisonError::into_inner);
        if self.poisoned.load(Ordering::Acquire) != state.generation || state.lost.is_some() {
            return; // another thread recovered it first
        }
        // The reset unloads every module: give them up rather than unload them again.
        let kernels = std::mem::take(state.kernels.get_mut().unwrap_or_else(PoisonError::into_inner));
        for (_, slot) in kernels {
            match Arc::try_unwrap(slot) {
                Ok(Ok(loaded)) => loaded.kernel.abandon(),
                Ok(Err(_)) => {}
                // Not reachable (every launch, which holds the slots it uses, has ended), but a
                // slot still held elsewhere must not unload a module of the new context.
                Err(shared) => std::mem::forget(shared),
            }
        }
        match state.primary.reset() {
            Ok(()) => state.generation = state.generation.saturating_add(1),
            Err(e) => {
                let message = format!(
                    "CUDA device {} ({}) is lost: a kernel fault left its context unusable and {} failed \
                     with code {}",
                    self.info.ordinal, self.info.name, e.call, e.code
                );
                state.lost = Some(HostError::msg(AbiError::LaunchFailed, message));
            }
        }
    }

    /// The host error for `e` in `phase`; a sticky error marks `generation`'s context for
    /// recovery.
    fn fail(&self, generation: u64, e: CuError, phase: Phase) -> HostError {
        if is_sticky(e.code) {
            self.poisoned.store(generation, Ordering::Release);
        }
        e.at(phase)
    }

    /// Kernel `id`'s module in the current context, loaded on first use.
    fn kernel(
        &self,
        state: &ContextState,
        current: &Current<'_>,
        id: i64,
    ) -> Result<Arc<KernelSlot>, HostError> {
        let mut kernels = state.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = kernels.get(&id) {
            return Ok(Arc::clone(slot));
        }
        let registry = self.registry.read().unwrap_or_else(PoisonError::into_inner);
        let entry = registry.get(id).ok_or_else(|| {
            HostError::msg(AbiError::InvalidKernel, format!("no kernel is registered with id {id}"))
        })?;
        let slot = self.load(state.generation, current, entry);
        if let Err(e) = &slot
            && !matches!(e.code(), AbiError::MalformedPtx | AbiError::InvalidKernel)
        {
            return Err(e.clone()); // a failure of the moment: try again next time
        }
        let slot = Arc::new(slot);
        kernels.insert(id, Arc::clone(&slot));
        Ok(slot)
    }

    fn load(&self, generation: u64, current: &Current<'_>, entry: &KernelEntry) -> KernelSlot {
        let fail = |e, phase| self.fail(generation, e, phase);
        let kernel = Kernel::load(current, entry.ptx(), entry.entry()).map_err(|e| match e {
            KernelLoadError::Module { error, log } => {
                let e = fail(error, Phase::ModuleLoad);
                match e.detail() {
                    Detail::Message { text: m, .. } if !log.is_empty() => {
                        HostError::msg(e.code(), format!("{m}; JIT log: {log}"))
                    }
                    _ => e,
                }
            }
            KernelLoadError::Entry(error) => fail(error, Phase::GetFunction),
        })?;
        let ptx_sizes = entry.signature().map(|s| s.param_sizes());
        let (param_sizes, signature) = match (kernel.driver_param_sizes(), ptx_sizes) {
            // The driver counted the parameters: its answer is the loaded function's.
            (Some((sizes, true)), _) => (Some(sizes), SignatureCheck::Driver),
            // Counted by asking until the driver refused: where the PTX says otherwise, the
            // PTX the module was loaded from wins.
            (Some((sizes, false)), Some(ptx)) if sizes != ptx => (Some(ptx), SignatureCheck::Ptx),
            (Some((sizes, false)), _) => (Some(sizes), SignatureCheck::Driver),
            (None, Some(ptx)) => (Some(ptx), SignatureCheck::Ptx),
            (None, None) => (None, SignatureCheck::Skipped),
        };
        let attribute = |a| {
            let value = kernel.attribute(current, a).map_err(|e| fail(e, Phase::Launch))?;
            Ok::<u32, HostError>(u32::try_from(value).unwrap_or(0))
        };
        let static_shared = attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        let dynamic_shared =
            attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        Ok(LoadedKernel {
            kernel,
            param_sizes,
            signature,
            static_shared,
            dynamic_shared_limit: AtomicU32::new(dynamic_shared),
        })
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        let state = self.context.get_mut().unwrap_or_else(PoisonError::into_inner);
        let kernels = std::mem::take(state.kernels.get_mut().unwrap_or_else(PoisonError::into_inner));
        if state.lost.is_some() || self.poisoned.load(Ordering::Acquire) == state.generation {
            // The context is unusable: releasing it (below) destroys what is in it.
            for (_, slot) in kernels {
                if let Ok(Ok(loaded)) = Arc::try_unwrap(slot) {
                    loaded.kernel.abandon();
                }
            }
        } else {
            drop(kernels); // each module unloads itself
        }
        // `primary` is released when the state drops, after the modules.
    }
}

/// A launcher's own driver resources, made in one generation of the device's context.
#[derive(Debug)]
struct Resources {
    generation: u64,
    stream: Stream,
    /// Staging buffers, kept for the next staged launch.
    buffers: Vec<DeviceBuffer>,
}

impl Resources {
    fn abandon(self) {
        self.stream.abandon();
        self.buffers.into_iter().for_each(DeviceBuffer::abandon);
    }
}

/// Runs registered PTX kernels on a [`CudaDevice`]. `Send`; one per guest. See the
/// [module docs](self).
#[derive(Debug)]
pub struct CudaLauncher {
    device: Arc<CudaDevice>,
    resources: Option<Resources>,
    /// Rebuilt in place for every launch (boxed: it is 1 KiB and more).
    storage: Box<KernelParamStorage>,
}

impl CudaLauncher {
    /// The device this launcher runs on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.device
    }
}

impl Launcher for CudaLauncher {
    /// In direct mode, the host function's one pass over the argv fills the parameter slots
    /// and its record together, and the launch uses the slots as they are.
    fn parse_recorded(
        &mut self,
        request: &LaunchRequest<'_, '_>,
        record: &mut LaunchSnapshot,
    ) -> Option<Result<(), HostError>> {
        match self.device.pointer_mode {
            PointerMode::Direct => Some(request.parse_recorded(record, &mut *self.storage)),
            // The slots need the staged windows' device addresses: parsed at the launch.
            PointerMode::Staged => None,
        }
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        let device = &*self.device;
        let state = device.usable_context()?;
        let generation = state.generation;
        let fail = |e, phase| device.fail(generation, e, phase);
        let current = state.primary.push().map_err(|e| fail(e, Phase::Launch))?;

        // The stream and buffers of this context (those of a reset one died with it).
        if self.resources.as_ref().is_some_and(|r| r.generation != generation)
            && let Some(stale) = self.resources.take()
        {
            stale.abandon();
        }
        let resources = match &mut self.resources {
            Some(resources) => resources,
            None => {
                let stream = Stream::new(&current).map_err(|e| fail(e, Phase::Launch))?;
                self.resources.insert(Resources { generation, stream, buffers: Vec::new() })
            }
        };

        let slot = device.kernel(&state, &current, request.kernel_id)?;
        let kernel = slot.as_ref().as_ref().map_err(Clone::clone)?;

        let shared = request.shape.shared_mem_bytes;
        if shared > kernel.dynamic_shared_limit.load(Ordering::Acquire) {
            let most = device.info.shared_memory_per_block_optin.saturating_sub(kernel.static_shared);
            if shared > most {
                let refused = ShapeError {
                    dimension: Dimension::SharedMem,
                    value: i64::from(shared),
                    bound: Bound::AtMost(u64::from(most)),
                };
                return Err(HostError::new(Detail::Shape(refused)));
            }
            // Opt in to all the kernel may have, once, so concurrent launches never lower it.
            let attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            let value = i32::try_from(most).unwrap_or(i32::MAX);
            kernel.kernel.set_attribute(&current, attribute, value).map_err(|e| fail(e, Phase::Launch))?;
            kernel.dynamic_shared_limit.fetch_max(most, Ordering::AcqRel);
        }

        let param_sizes = kernel.param_sizes.as_deref();
        let shape = request.shape;
        let stream = &resources.stream;
        let storage = &mut *self.storage;
        let launched = match device.pointer_mode {
            // One pass from the argv bytes to the parameter slots, pointers as host pointers:
            // the host function's (see `parse_recorded`), or this one.
            PointerMode::Direct => {
                if request.in_sink() {
                    storage.direct_error()?;
                } else {
                    storage.parse_direct(request.argv, request.memory)?;
                }
                if let Some(sizes) = param_sizes {
                    check_arg_sizes(sizes, storage.arg_sizes())?;
                }
                match kernel.signature {
                    SignatureCheck::Skipped => storage.with_padded_params(|table| {
                        stream.launch(&current, &kernel.kernel, &shape, table, &[])
                    }),
                    SignatureCheck::Ptx | SignatureCheck::Driver => storage
                        .with_params(|table| stream.launch(&current, &kernel.kernel, &shape, table, &[])),
                }
            }
            // The windows are copied to the device before their device addresses, and so the
            // slots, are known: parse, check, stage, then build.
            PointerMode::Staged => {
                let args: ParsedArgv<'_> = request.args()?;
                if let Some(sizes) = param_sizes {
                    check_param_sizes(sizes, &args)?;
                }
                let windows: Vec<GuestRange> = args
                    .iter()
                    .filter_map(|a| if let Arg::Ptr(w) = a { Some(w.range()) } else { None })
                    .collect();
                let plan = StagingPlan::new(&windows);
                let regions = plan
                    .regions()
                    .iter()
                    .map(|&(start, end)| region_window(request, start, end))
                    .collect::<Result<Vec<GuestWindow<'_>>, HostError>>()?;
                let buffers = &mut resources.buffers;
                for (i, region) in regions.iter().enumerate() {
                    let len = region.len() as usize;
                    match buffers.get_mut(i) {
                        Some(kept) if kept.len() >= len => {}
                        slot => {
                            let fresh =
                                DeviceBuffer::alloc(&current, len).map_err(|e| fail(e, Phase::Launch))?;
                            match slot {
                                Some(kept) => *kept = fresh,
                                None => buffers.push(fresh),
                            }
                        }
                    }
                }
                let transfers: Vec<Transfer<'_, '_>> = regions
                    .iter()
                    .zip(buffers.iter())
                    .map(|(window, buffer)| Transfer { window, buffer })
                    .collect();
                stream.upload(&current, &transfers).map_err(|e| fail(e, Phase::Launch))?;
                let addresses: Vec<u64> = plan
                    .placements()
                    .iter()
                    .map(|&(r, offset)| buffers.get(r).map_or(0, |b| b.address().saturating_add(offset)))
                    .collect();
                storage.build_staged(&args, &addresses)?;
                let launched = match kernel.signature {
                    SignatureCheck::Skipped => storage.with_padded_params(|table| {
                        stream.launch(&current, &kernel.kernel, &shape, table, &transfers)
                    }),
                    SignatureCheck::Ptx | SignatureCheck::Driver => storage.with_params(|table| {
                        stream.launch(&current, &kernel.kernel, &shape, table, &transfers)
                    }),
                };
                drop(transfers);
                // Keep the buffers for the next launch, but not a large one.
                buffers.retain(|b| b.len() <= MAX_KEPT_STAGING_BYTES);
                launched
            }
        };
        launched.map_err(|e| fail(e, Phase::Launch))?;
        drop(current);
        drop(state);
        Ok(LaunchOutcome { pointer_mode: device.pointer_mode, signature: kernel.signature })
    }
}

/// The guest memory window of the staging region `[start, end)`: the union of windows the
/// argv's parser checked, so it lies inside guest memory.
fn region_window<'m>(
    request: &LaunchRequest<'_, 'm>,
    start: u64,
    end: u64,
) -> Result<GuestWindow<'m>, HostError> {
    let window = u32::try_from(start)
        .ok()
        .zip(u32::try_from(end.saturating_sub(start)).ok())
        .and_then(|(offset, len)| request.memory.window(offset, len));
    window.ok_or_else(|| {
        HostError::msg(
            AbiError::Internal,
            format!("staging region [{start}, {end}) is not a window of guest memory"),
        )
    })
}

impl Drop for CudaLauncher {
    fn drop(&mut self) {
        let Some(resources) = self.resources.take() else { return };
        // Shared, so that the context cannot be reset while the stream and buffers are freed.
        let state = self.device.context.read().unwrap_or_else(PoisonError::into_inner);
        let usable = state.lost.is_none() && self.device.poisoned.load(Ordering::Acquire) != state.generation;
        if usable && resources.generation == state.generation {
            drop(resources); // each frees itself in its context
        } else {
            resources.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}

    #[test]
    fn the_device_is_shared_and_launchers_move_between_threads() {
        assert_send_sync::<CudaDevice>();
        assert_send_sync::<Arc<CudaDevice>>();
        assert_send::<CudaLauncher>();
        assert_send::<kernel_args::LaunchHost<CudaLauncher>>();
    }
}
