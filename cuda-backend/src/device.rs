//! One CUDA device, shared by every launcher of a process: [`CudaDevice`] and [`CudaOptions`].

use std::collections::HashMap;
use std::ffi::OsStr;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};
use std::time::Duration;

use cust::sys::CUdevice_attribute;
use kernel_args::{AbiError, Detail, DeviceLost, HostError, PointerMode};

use crate::cu_error::{Phase, is_sticky};
use crate::driver::{CuError, Current, DRIVER_LIBRARY, Driver, PrimaryContext};
use crate::modules::{KernelSlot, Kernels, abandon, load};
use crate::registry::{KernelEntry, KernelRegistry};
use crate::setup::{KernelProblem, SetupError};

/// The environment variable [`CudaOptions::from_env`] reads the driver library's path from.
pub const DRIVER_ENV: &str = "KARGS_CUDA_DRIVER";

/// How the launcher hands pointer arguments to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PointerModeChoice {
    /// Direct where the device reads pageable memory through the host's page tables (ATS),
    /// staged otherwise (HMM included).
    #[default]
    Auto,
    /// Always direct ([`PointerMode::Direct`]); refused when the device is opened if it has no
    /// pageable memory access (the kernel would fault).
    Direct,
    /// Always staged ([`PointerMode::Staged`]).
    Staged,
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
    /// The longest one launch may take, from the moment its launcher has the context until its
    /// kernel and copies have finished. A launch that ends later answers `QuotaExceeded`
    /// ([`Quota::LaunchTime`](kernel_args::Quota::LaunchTime)) once it has ended, with what the
    /// kernel wrote in guest memory; nothing else on the device is touched. **The deadline
    /// does not stop a kernel:** CUDA has no call that does. On an H200 (driver 580),
    /// `cuDevicePrimaryCtxReset` and `cuCtxDestroy` issued while a kernel ran returned only
    /// when it had ended, and only the end of the process stopped it (`docs/gpu-validation.md`).
    /// What ends a fenced kernel that never would is its threads' budget of backward branches
    /// ([`LaunchLimits::max_back_edges_per_thread`](kernel_args::LaunchLimits)); nothing
    /// ends an unfenced one (see `docs/RISKS.md`). `None` (the default): no deadline.
    pub launch_deadline: Option<Duration>,
    /// Staged mode only (ignored in direct mode): fenced kernels load the fence's **aligned
    /// form** ([`FencedModule::aligned_ptx`](crate::fence::FencedModule::aligned_ptx)), and
    /// each staged launch's fence is its arena's length rounded up to a power of two, at an
    /// address aligned to that length (the arena allocated twice as long). A global access
    /// then costs one `and` and an `or` where the clamp takes a `min`, an `and`, a 64-bit add
    /// and the flag's note (on the kernel corpus, docs/performance.md). The price is the
    /// reports: a stray access lands inside and is not reported, where the default fence
    /// reports it as reaching outside (traps and the budget are reported either way); and the
    /// arena takes up to four times the bytes staged. `false` (the default): the clamped form.
    pub aligned_fence: bool,
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
    /// Whether the driver has `cuFuncGetParamCount` (CUDA 13.2+). Without it (drivers up to
    /// 580 among them) the launcher asks `cuFuncGetParamInfo` for parameters until the driver
    /// answers `CUDA_ERROR_INVALID_VALUE`.
    pub param_count: bool,
}

/// A device's primary context.
#[derive(Debug)]
pub(crate) struct ContextState {
    pub(crate) primary: PrimaryContext,
    /// Counts the contexts: a reset makes the next. Launchers' streams and buffers, and each
    /// device's modules, belong to the generation they were made in.
    pub(crate) generation: u64,
    /// Set when a reset failed: the device cannot be used any more.
    pub(crate) lost: Option<HostError>,
}

/// A device's primary context as the process shares it. A reset after a sticky fault is
/// process-wide (`cuDevicePrimaryCtxReset` destroys everything made in the context, whoever
/// made it), so every [`CudaDevice`] of one driver library and ordinal holds the same one: a
/// fault through one fails the launches in flight on all, the next launch on any replaces the
/// context once, and each device then loads its modules again.
#[derive(Debug)]
pub(crate) struct SharedContext {
    pub(crate) state: RwLock<ContextState>,
    /// The generation whose context met a sticky error (0: none).
    pub(crate) poisoned: AtomicU64,
    /// How many launches ended past their device's deadline.
    pub(crate) overruns: AtomicU64,
}

/// The primary contexts the process has open: the driver library (by its loaded driver's
/// address) and the ordinal of each, and the context while a device holds it.
type OpenContexts = Vec<(usize, i32, Weak<SharedContext>)>;
static OPEN_CONTEXTS: Mutex<OpenContexts> = Mutex::new(Vec::new());

/// One CUDA device, shared by every launcher of a process: [`CudaDevice`] (the driver, the
/// primary context, each registered kernel's module) and how it is opened ([`CudaOptions`]).
///
/// ```no_run
/// use kernel_args::{DryRunLauncher, LaunchHost, Launcher};
/// use kernel_args_cuda::{CudaDevice, CudaOptions, KernelRegistry, Sandbox, kernels};
///
/// let mut registry = KernelRegistry::new();
/// registry.register(1, kernels::VECTOR_ADD_PTX, kernels::VECTOR_ADD_ENTRY, Sandbox::fenced(kernels::VECTOR_ADD_DECLARATION)?)?;
/// // The driver library comes from KARGS_CUDA_DRIVER where it is set, else libcuda.so.1.
/// let launcher: Box<dyn Launcher + Send> = match CudaDevice::open(registry, CudaOptions::from_env()) {
///     Ok(device) => Box::new(device.launcher()), // one per guest; `Send`, so any thread
///     Err(e) => { eprintln!("dry run: {e}"); Box::new(DryRunLauncher::new()) }
/// };
/// let host = LaunchHost::new(launcher);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`CudaDevice::open`] loads the driver library (at run time; see [`CudaOptions`]), picks the
/// device and retains its primary context once; what goes wrong there is a [`SetupError`], the
/// embedder's to handle. The device is `Send + Sync` and shared (`Arc`) by all launchers of the
/// process: each registered kernel's module is loaded once per device, on its first launch, and
/// kept. A module that fails to compile (`MalformedPtx`) or lacks its entry (`InvalidKernel`) is
/// remembered too, so a guest that repeats such a launch gets the same answer without the PTX
/// being compiled again. When a declared kernel's module loads, its declaration is checked
/// against the driver's parameter list (`cuFuncGetParamInfo`, where the driver has it): a
/// disagreement makes every launch of it `InvalidKernel`, and [`CudaDevice::verify`] gives the
/// embedder the [`SetupError`] up front.
///
/// ## Kernel faults and recovery
///
/// A fault in a kernel (`CUDA_ERROR_ILLEGAL_ADDRESS` and the driver's other sticky errors) is
/// sticky: the context is unusable afterwards, for every launcher sharing it. The launch that
/// meets it (the faulting one, and any other launch in flight in the context at the time)
/// answers `LaunchFailed`. The next launch on the device then recovers: it waits until no
/// launch is in flight, gives up every module, stream and buffer of the old context, resets
/// the primary context (`cuDevicePrimaryCtxReset`), and goes on in the fresh one, where the
/// modules are loaded again on their next use. If the driver refuses the reset or the fresh
/// context, the device is lost: every later launch answers `LaunchFailed` with
/// [`Detail::DeviceLost`](kernel_args::Detail::DeviceLost). **On a GPU it is lost:** on an H200
/// (driver 580) the reset succeeded and `cuDevicePrimaryCtxRetain` then answered the fault's
/// 700, as CUDA documents for its sticky errors (only a new process runs kernels again;
/// `docs/gpu-validation.md`). The recovery runs to its end on the emulated driver only. A host
/// serving guests it does not trust registers their kernels fenced: a fenced kernel does not
/// fault.
///
/// The reset is process-wide, so devices opened on the same driver library and ordinal share
/// one primary context: a fault through one fails the launches in flight on all of them, and
/// the next launch on any replaces the context once for all. Open one device per ordinal and
/// share it (`Arc`) where one registry serves; another CUDA library using the same primary
/// context in the process would lose its modules and buffers to the reset.
#[derive(Debug)]
pub struct CudaDevice {
    pub(crate) info: DeviceInfo,
    pub(crate) pointer_mode: PointerMode,
    /// [`CudaOptions::aligned_fence`], in staged mode.
    pub(crate) aligned_fence: bool,
    /// [`CudaOptions::launch_deadline`].
    pub(crate) launch_deadline: Option<Duration>,
    registry: RwLock<KernelRegistry>,
    /// Counts the registrations since the device was opened: a launcher's cached entry of an
    /// older count is looked up again.
    pub(crate) registrations: AtomicU64,
    /// The primary context, shared with every other device of this driver library and ordinal.
    pub(crate) context: Arc<SharedContext>,
    /// Each registered kernel's module (or why it cannot be loaded), loaded in this generation
    /// of the context.
    kernels: Mutex<Kernels>,
}

impl CudaDevice {
    /// Loads the driver and opens the device `options` names, for the kernels of `registry`.
    ///
    /// # Errors
    ///
    /// A [`SetupError`]: no driver library ([`SetupError::Driver`]), no device of that ordinal
    /// ([`SetupError::NoDevice`]), a driver call that failed ([`SetupError::Call`]), or
    /// [`PointerMode::Direct`] forced on a device without pageable memory access
    /// ([`SetupError::DirectUnsupported`]).
    pub fn open(registry: KernelRegistry, options: CudaOptions) -> Result<Arc<CudaDevice>, SetupError> {
        let setup = CuError::setup;
        let library = options.driver_library.as_deref().map_or(OsStr::new(DRIVER_LIBRARY), |p| p.as_os_str());
        let driver = Driver::load(library)?;
        let count = driver.device_count().map_err(setup)?;
        let ordinal = i32::try_from(options.device_ordinal).unwrap_or(i32::MAX);
        if ordinal >= count {
            return Err(SetupError::NoDevice { ordinal: options.device_ordinal, count });
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
            param_count: driver.has_param_count(),
        };
        let pointer_mode = match options.pointer_mode {
            PointerModeChoice::Auto if info.pageable_memory_access && info.uses_host_page_tables => {
                PointerMode::Direct
            }
            PointerModeChoice::Auto | PointerModeChoice::Staged => PointerMode::Staged,
            PointerModeChoice::Direct if !info.pageable_memory_access => {
                return Err(SetupError::DirectUnsupported { ordinal: info.ordinal, device: info.name });
            }
            PointerModeChoice::Direct => PointerMode::Direct,
        };
        // One primary context per driver library and ordinal in the process: a device opened
        // where another is open shares its context (and its generation count).
        let key = (std::ptr::from_ref::<Driver>(driver).addr(), ordinal);
        let mut open = OPEN_CONTEXTS.lock().unwrap_or_else(PoisonError::into_inner);
        open.retain(|(_, _, context)| context.strong_count() > 0);
        let shared = open.iter().find(|(d, o, _)| (*d, *o) == key).and_then(|(_, _, c)| c.upgrade());
        let context = match shared {
            Some(context) => context,
            None => {
                let primary = device.retain_primary_context().map_err(setup)?;
                let context = Arc::new(SharedContext {
                    state: RwLock::new(ContextState { primary, generation: 1, lost: None }),
                    poisoned: AtomicU64::new(0),
                    overruns: AtomicU64::new(0),
                });
                open.push((key.0, key.1, Arc::downgrade(&context)));
                context
            }
        };
        drop(open);
        let generation = context.state.read().unwrap_or_else(PoisonError::into_inner).generation;
        Ok(Arc::new(CudaDevice {
            info,
            pointer_mode,
            aligned_fence: options.aligned_fence && pointer_mode != PointerMode::Direct,
            launch_deadline: options.launch_deadline,
            registry: RwLock::new(registry),
            registrations: AtomicU64::new(0),
            context,
            kernels: Mutex::new(Kernels { generation, slots: HashMap::new() }),
        }))
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The pointer mode every launch uses.
    pub fn pointer_mode(&self) -> PointerMode {
        self.pointer_mode
    }

    /// How many launches ended past their device's deadline ([`CudaOptions::launch_deadline`]),
    /// over every device sharing this one's context: each answered the launch-time quota.
    pub fn overruns(&self) -> u64 {
        self.context.overruns.load(Ordering::Acquire)
    }

    /// The device's registry, held for writing until the handle is dropped: kernels are
    /// registered and replaced through it with [`KernelRegistry::register`]
    /// (`device.registry().register(id, ptx, entry, sandbox)`), and read with its other methods.
    /// When a handle that was written through is dropped, every launcher looks its kernels up
    /// again, and a replaced kernel's module (or the failure remembered for it) is dropped: it
    /// unloads once no launch uses it. Launches and [`verify`](Self::verify) wait while a
    /// handle is held (on the thread that holds it, they would wait forever), so hold it for
    /// the registrations only: `device.registry().register(...)` drops it at the statement's
    /// end.
    pub fn registry(&self) -> DeviceRegistry<'_> {
        let registry = self.registry.write().unwrap_or_else(PoisonError::into_inner);
        DeviceRegistry {
            device: self,
            registry: Some(registry),
            written: false,
            spare: KernelRegistry::new(),
        }
    }

    /// Drops the loaded modules (and remembered failures) of registrations the registry no
    /// longer holds, after the registry changed.
    fn evict(&self, current: &HashMap<i64, u64>) {
        self.registrations.fetch_add(1, Ordering::AcqRel);
        // After the registry changed, so a module loaded from the old entry meanwhile goes too.
        let state = self.context.state.read().unwrap_or_else(PoisonError::into_inner);
        let evicted: Vec<Arc<KernelSlot>> = {
            let mut kernels = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
            let slots = kernels.of(state.generation);
            let gone: Vec<(i64, u64)> =
                slots.keys().filter(|(id, r)| current.get(id) != Some(r)).copied().collect();
            gone.iter().filter_map(|key| slots.remove(key)).collect()
        };
        // Unloaded here (its `Drop` makes the context current), while the context cannot be
        // reset under it; a launch still running with one keeps it until it ends.
        drop(evicted);
        drop(state);
    }

    /// Kernel `id` as registered now, shared.
    pub(crate) fn entry(&self, id: i64) -> Option<Arc<KernelEntry>> {
        self.registry.read().unwrap_or_else(PoisonError::into_inner).shared(id)
    }

    /// Loads kernel `id`'s module now (it is loaded on its first launch otherwise) and checks
    /// its declaration against the driver's parameter list, so that the embedder learns of a
    /// kernel the driver refuses before any guest launches it.
    ///
    /// # Errors
    ///
    /// [`SetupError::Kernel`] for an unknown id ([`KernelProblem::NotRegistered`]), a module the driver refuses
    /// ([`KernelProblem::Load`]) or a driver parameter list that differs from the declaration
    /// ([`KernelProblem::DriverParams`]).
    pub fn verify(&self, id: i64) -> Result<(), SetupError> {
        let refuse = |problem| SetupError::Kernel { id, problem };
        let entry = self.entry(id).ok_or_else(|| refuse(KernelProblem::NotRegistered))?;
        let state = self.usable_context().map_err(|e| refuse(KernelProblem::Load(e.to_string())))?;
        let current =
            state.primary.push().map_err(|e| refuse(KernelProblem::Load(e.at(Phase::Launch).to_string())))?;
        let slot = self
            .kernel(&state, &current, id, &entry)
            .map_err(|e| refuse(KernelProblem::Load(e.to_string())))?;
        match slot.as_ref() {
            Ok(_) => Ok(()),
            Err(failure) => Err(refuse(failure.problem.clone())),
        }
    }

    /// The context, recovered first if a kernel fault poisoned it; held (shared) for a whole
    /// launch, so that a recovery waits for the launches in flight.
    pub(crate) fn usable_context(&self) -> Result<RwLockReadGuard<'_, ContextState>, HostError> {
        let state = self.context.state.read().unwrap_or_else(PoisonError::into_inner);
        let state = if self.context.poisoned.load(Ordering::Acquire) == state.generation {
            drop(state);
            self.recover();
            self.context.state.read().unwrap_or_else(PoisonError::into_inner)
        } else {
            state
        };
        match &state.lost {
            Some(lost) => Err(lost.clone()),
            None => Ok(state),
        }
    }

    /// Replaces a poisoned context by a fresh one, once no launch is in flight on any device
    /// sharing it. The reset destroys every module in it: each device gives its own up when it
    /// next looks at them ([`Kernels::of`]).
    fn recover(&self) {
        let mut state = self.context.state.write().unwrap_or_else(PoisonError::into_inner);
        if self.context.poisoned.load(Ordering::Acquire) != state.generation || state.lost.is_some() {
            return; // another thread recovered it first
        }
        // This device's modules now, while the lock is held (the others' at their next use).
        let generation = state.generation;
        abandon(std::mem::take(self.kernels.lock().unwrap_or_else(PoisonError::into_inner).of(generation)));
        match state.primary.reset() {
            Ok(()) => state.generation = state.generation.saturating_add(1),
            Err(e) => {
                let lost = DeviceLost { ordinal: self.info.ordinal, call: e.call, code: e.code };
                state.lost = Some(HostError::new(Detail::DeviceLost(lost)));
            }
        }
    }

    /// The host error for `e` in `phase`; a sticky error marks `generation`'s context for
    /// recovery.
    pub(crate) fn fail(&self, generation: u64, e: CuError, phase: Phase) -> HostError {
        if is_sticky(e.code) {
            self.context.poisoned.store(generation, Ordering::Release);
        }
        e.at(phase)
    }

    /// The module of kernel `id` as registered in `entry` (the registration a launch was
    /// checked against, whatever is registered as `id` now) in the current context, loaded on
    /// first use.
    pub(crate) fn kernel(
        &self,
        state: &ContextState,
        current: &Current<'_>,
        id: i64,
        entry: &Arc<KernelEntry>,
    ) -> Result<Arc<KernelSlot>, HostError> {
        let mut kernels = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        let kernels = kernels.of(state.generation);
        let key = (id, entry.registration());
        if let Some(slot) = kernels.get(&key) {
            return Ok(Arc::clone(slot));
        }
        let slot =
            load(|e, phase| self.fail(state.generation, e, phase), current, id, entry, self.aligned_fence);
        if let Err(failure) = &slot
            && !matches!(failure.guest.code(), AbiError::MalformedPtx | AbiError::InvalidKernel)
        {
            return Err(failure.guest.clone()); // a failure of the moment: try again next time
        }
        let slot = Arc::new(slot);
        // Kept only while it is the registration: one replaced meanwhile is loaded for this
        // launch alone.
        let current_registration = self.entry(id).map(|e| e.registration());
        if current_registration == Some(entry.registration()) {
            kernels.insert(key, Arc::clone(&slot));
        }
        Ok(slot)
    }
}

/// A [`CudaDevice`]'s kernel registry, held for writing ([`CudaDevice::registry`]): it derefs
/// to the [`KernelRegistry`], and when it was written through, dropping it makes the device's
/// launchers look their kernels up again and drops the modules of the kernels it replaced.
#[derive(Debug)]
pub struct DeviceRegistry<'a> {
    device: &'a CudaDevice,
    /// `Some` until the handle is dropped.
    registry: Option<RwLockWriteGuard<'a, KernelRegistry>>,
    /// Whether the registry was borrowed mutably (a registration may have changed it).
    written: bool,
    /// What the handle derefs to where `registry` is `None`, which it is only inside `drop`: an
    /// empty registry (it allocates nothing), so that no deref can panic.
    spare: KernelRegistry,
}

impl Deref for DeviceRegistry<'_> {
    type Target = KernelRegistry;

    fn deref(&self) -> &KernelRegistry {
        self.registry.as_deref().unwrap_or(&self.spare)
    }
}

impl DerefMut for DeviceRegistry<'_> {
    fn deref_mut(&mut self) -> &mut KernelRegistry {
        self.written = true;
        match &mut self.registry {
            Some(registry) => registry,
            None => &mut self.spare,
        }
    }
}

impl Drop for DeviceRegistry<'_> {
    fn drop(&mut self) {
        let Some(registry) = self.registry.take() else { return };
        if !self.written {
            return;
        }
        let current = registry.registrations();
        // The write lock is released before the module cache is locked: a launch takes the
        // registry's read lock, then the cache's.
        drop(registry);
        self.device.evict(&current);
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        let state = self.context.state.read().unwrap_or_else(PoisonError::into_inner);
        let kernels = self.kernels.get_mut().unwrap_or_else(PoisonError::into_inner);
        let current = kernels.generation == state.generation;
        let slots = std::mem::take(&mut kernels.slots);
        if !current
            || state.lost.is_some()
            || self.context.poisoned.load(Ordering::Acquire) == state.generation
        {
            // Made in a context that is gone, or in one that is unusable (releasing or
            // resetting it destroys what is in it).
            abandon(slots);
        } else {
            drop(slots); // each module unloads itself
        }
        drop(state);
        // The context is released when its last device drops, after the modules.
    }
}
