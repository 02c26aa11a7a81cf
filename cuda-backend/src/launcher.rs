//! The CUDA launcher: a [`Launcher`] that runs registered PTX kernels on a CUDA device.
//!
//! [`CudaLauncher::new`] loads the driver library (`libcuda.so.1`, at run time), picks the
//! device, retains its primary context and makes a stream; anything missing (the library, a
//! device, a working kernel driver) is a clean `NotAvailable`, never a panic. Each
//! [`launch`](Launcher::launch):
//!
//! 1. loads the kernel's module from its PTX on first use (`cuModuleLoadDataEx`; a refused
//!    PTX is `MalformedPtx`, with the JIT's error log in the message; a missing entry is
//!    `InvalidKernel`);
//! 2. parses the request's argv (checked by the host function already) into its parameter
//!    storage, and checks the argument sizes against the kernel's parameters: the driver's
//!    `cuFuncGetParamInfo` where the driver has it (CUDA 12.4+), else the PTX's `.entry`
//!    declaration, else no check ([`SignatureCheck::Skipped`]); a mismatch is `InvalidArgs`
//!    naming the argument and both sizes;
//! 3. hands pointer arguments to the device in the launcher's [`PointerMode`]:
//!    - **direct** (chosen where the device reports `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`,
//!      i.e. HMM or ATS): the kernel gets the host pointers into guest memory, and the argv
//!      is parsed straight into the parameter slots in one pass
//!      ([`KernelParamStorage::parse_direct`]);
//!    - **staged** (everywhere else): each window is copied into device memory before the
//!      launch and back after it, and the kernel gets the device addresses. Overlapping (or
//!      touching) windows are staged as one buffer ([`StagingPlan`]), so that aliasing
//!      arguments alias on the device too and the copy back cannot let one window's stale
//!      bytes overwrite another's results. The argv is parsed into a [`ParsedArgv`], and the
//!      storage built from it once the device addresses are known
//!      ([`KernelParamStorage::build`]);
//! 4. makes the storage's `void**` table in place, calls `cuLaunchKernel` on the launcher's
//!    stream, copies staged windows back and synchronises.
//!
//! GPU writes reach guest memory only through
//! [`GuestWindow::host_ptr_mut`](kernel_args_core::GuestWindow::host_ptr_mut), which exists only
//! for memory borrowed with [`GuestMemory::exclusive`](kernel_args_core::GuestMemory::exclusive):
//! a `&mut` borrow held for the whole launch. A request whose windows are not writable is
//! refused (`Internal`: the host's mistake, not the guest's).
//!
//! Driver errors are mapped by [`cu_error`](crate::cu_error), from the integer code, without
//! asking the driver for a message. A kernel fault (e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`) is
//! sticky in CUDA: the context is unusable afterwards, and every later launch of this launcher
//! fails with `LaunchFailed`.
//!
//! A `CudaLauncher` holds raw driver handles and is neither `Send` nor `Sync`.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::ptr;

use cust::sys::{
    CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUfunction, CUjit_option, CUmodule, CUstream,
};
use kernel_args::{
    AbiError, Detail, HostError, LaunchOutcome, LaunchRequest, Launcher, PointerMode, SignatureCheck,
};
use kernel_args_core::{Arg, GuestRange, LoweredArg, ParsedArgv};

use crate::cu_error::{CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS, Phase, check};
use crate::driver::Driver;
use crate::registry::KernelRegistry;
use crate::signature::{check_arg_sizes, check_param_sizes};
use crate::staging::StagingPlan;
use crate::storage::{KernelParamStorage, ParamTable, PointerPlacement, StorageError};

/// How the launcher hands pointer arguments to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PointerModeChoice {
    /// Direct where the device reports pageable memory access, staged otherwise.
    #[default]
    Auto,
    /// Always this mode. Forcing [`PointerMode::Direct`] on a device without pageable memory
    /// access is refused when the launcher is made (the kernel would fault).
    Force(PointerMode),
}

/// What [`CudaLauncher::new`] sets up.
#[derive(Debug, Clone, Default)]
pub struct CudaOptions {
    /// The device's ordinal (0 for the first).
    pub device_ordinal: u32,
    /// How pointer arguments reach the device.
    pub pointer_mode: PointerModeChoice,
    /// A driver library to load instead of the system's `libcuda.so.1` (tests, unusual
    /// installs). Loaded for this launcher and never unloaded.
    pub driver_library: Option<PathBuf>,
}

/// The device a launcher runs on.
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
    /// Whether the driver has `cuFuncGetParamInfo` (CUDA 12.4+).
    pub param_info: bool,
}

/// A kernel whose module is loaded.
#[derive(Debug)]
struct LoadedKernel {
    module: CUmodule,
    function: CUfunction,
    /// The kernel's parameter sizes, from the driver (`cuFuncGetParamInfo`) where it has it,
    /// else from the PTX; `None` when neither knows them.
    param_sizes: Option<Vec<usize>>,
    /// Where `param_sizes` came from ([`SignatureCheck::Skipped`] when `None`).
    signature: SignatureCheck,
}

/// Runs registered PTX kernels on one CUDA device. See the [module docs](self).
#[derive(Debug)]
pub struct CudaLauncher {
    driver: &'static Driver,
    device: CUdevice,
    /// The device's primary context, retained by this launcher.
    context: CUcontext,
    /// Null until made (and if making it failed).
    stream: CUstream,
    info: DeviceInfo,
    pointer_mode: PointerMode,
    registry: KernelRegistry,
    loaded: HashMap<i64, LoadedKernel>,
    /// Rebuilt in place for every launch (boxed: it is 1 KiB and more).
    storage: Box<KernelParamStorage>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").field("version", &self.version).finish_non_exhaustive()
    }
}

/// The launcher's context made current for a scope; popped on drop.
struct Current<'d> {
    driver: &'d Driver,
}

impl<'d> Current<'d> {
    fn push(driver: &'d Driver, context: CUcontext, phase: Phase) -> Result<Current<'d>, HostError> {
        // SAFETY: `context` is a primary context this launcher retained and still holds.
        let code = unsafe { (driver.ctx_push_current)(context) };
        check("cuCtxPushCurrent", code, phase)?;
        Ok(Current { driver })
    }
}

impl Drop for Current<'_> {
    fn drop(&mut self) {
        let mut popped: CUcontext = ptr::null_mut();
        // SAFETY: a context was pushed by `push` on this thread; `popped` is writable. A failure
        // leaves nothing to undo.
        let _ = unsafe { (self.driver.ctx_pop_current)(&mut popped) };
    }
}

/// Reads an integer device attribute.
fn attribute(driver: &Driver, device: CUdevice, attr: CUdevice_attribute) -> Result<i32, HostError> {
    let mut value: c_int = 0;
    // SAFETY: `value` is writable; `attr` is a valid attribute number (from cust's table of
    // cuda.h) passed as the C enum's `int`; `device` came from `cuDeviceGet`.
    let code = unsafe { (driver.device_get_attribute)(&mut value, attr as c_int, device) };
    check("cuDeviceGetAttribute", code, Phase::Setup)?;
    Ok(value)
}

impl CudaLauncher {
    /// Loads the driver and sets up the device `options` name, for the kernels of `registry`.
    ///
    /// # Errors
    ///
    /// `NotAvailable` when there is no driver library, no device (or no device of that
    /// ordinal), the driver cannot initialise, or [`PointerMode::Direct`] is forced on a
    /// device without pageable memory access.
    pub fn new(registry: KernelRegistry, options: CudaOptions) -> Result<CudaLauncher, HostError> {
        let driver: &'static Driver = match &options.driver_library {
            None => Driver::get()?,
            // Never dropped: libcuda does not support being unloaded.
            Some(path) => Box::leak(Box::new(Driver::load(path.as_os_str())?)),
        };
        let mut count: c_int = 0;
        // SAFETY: `count` is writable; the driver is initialised.
        let code = unsafe { (driver.device_get_count)(&mut count) };
        check("cuDeviceGetCount", code, Phase::Setup)?;
        if count <= 0 {
            return Err(HostError::msg(AbiError::NotAvailable, "the CUDA driver reports no device"));
        }
        let ordinal = c_int::try_from(options.device_ordinal).unwrap_or(c_int::MAX);
        if ordinal >= count {
            return Err(HostError::msg(
                AbiError::NotAvailable,
                format!("no CUDA device {ordinal}: the driver reports {count}"),
            ));
        }
        let mut device: CUdevice = 0;
        // SAFETY: `device` is writable; `0 <= ordinal < count`.
        let code = unsafe { (driver.device_get)(&mut device, ordinal) };
        check("cuDeviceGet", code, Phase::Setup)?;

        let pageable =
            attribute(driver, device, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)?;
        let major =
            attribute(driver, device, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor =
            attribute(driver, device, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let mut name = [0 as c_char; 256];
        // SAFETY: `name` is writable for its whole length, which is passed.
        let code = unsafe { (driver.device_get_name)(name.as_mut_ptr(), 256, device) };
        check("cuDeviceGetName", code, Phase::Setup)?;
        let name: Vec<u8> = name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        let info = DeviceInfo {
            ordinal: options.device_ordinal,
            name: String::from_utf8_lossy(&name).into_owned(),
            compute_capability: (major, minor),
            driver_version: driver.version,
            pageable_memory_access: pageable != 0,
            param_info: driver.func_get_param_info.is_some(),
        };
        let pointer_mode = match options.pointer_mode {
            PointerModeChoice::Auto if info.pageable_memory_access => PointerMode::Direct,
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

        let mut context: CUcontext = ptr::null_mut();
        // SAFETY: `context` is writable; `device` came from `cuDeviceGet`.
        let code = unsafe { (driver.primary_ctx_retain)(&mut context, device) };
        check("cuDevicePrimaryCtxRetain", code, Phase::Setup)?;
        // From here on, `Drop` releases what was made.
        let mut launcher = CudaLauncher {
            driver,
            device,
            context,
            stream: ptr::null_mut(),
            info,
            pointer_mode,
            registry,
            loaded: HashMap::new(),
            storage: Box::default(),
        };
        {
            let _current = Current::push(driver, context, Phase::Setup)?;
            let mut stream: CUstream = ptr::null_mut();
            // SAFETY: `stream` is writable; flag 1 is CU_STREAM_NON_BLOCKING; a context is
            // current.
            let code = unsafe { (driver.stream_create)(&mut stream, 1) };
            check("cuStreamCreate", code, Phase::Setup)?;
            launcher.stream = stream;
        }
        Ok(launcher)
    }

    /// The device this launcher runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    /// The pointer mode every launch uses.
    pub fn pointer_mode(&self) -> PointerMode {
        self.pointer_mode
    }

    /// Registers (or replaces) kernel `id`; a replaced kernel's module is unloaded.
    ///
    /// # Errors
    ///
    /// As [`KernelRegistry::register`].
    pub fn register(&mut self, id: i64, ptx: &str, entry: &str) -> Result<(), HostError> {
        self.registry.register(id, ptx, entry)?;
        if let Some(old) = self.loaded.remove(&id)
            && let Ok(_current) = Current::push(self.driver, self.context, Phase::Launch)
        {
            // SAFETY: the module was loaded by this launcher and nothing refers to it now.
            let _ = unsafe { (self.driver.module_unload)(old.module) };
        }
        Ok(())
    }

    /// Loads kernel `id`'s module on first use (a context must be current).
    fn ensure_loaded(&mut self, id: i64) -> Result<(), HostError> {
        if self.loaded.contains_key(&id) {
            return Ok(());
        }
        let kernel = self.registry.get(id).ok_or_else(|| {
            HostError::msg(AbiError::InvalidKernel, format!("no kernel is registered with id {id}"))
        })?;
        let driver = self.driver;
        let mut module: CUmodule = ptr::null_mut();
        // The JIT's error log goes into the MalformedPtx message: it names the PTX line.
        let mut log = [0u8; JIT_LOG_BYTES];
        let mut options = [
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER as c_int,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES as c_int,
        ];
        // The size option's value is the size itself, carried in the pointer.
        let mut values = [log.as_mut_ptr().cast::<c_void>(), ptr::without_provenance_mut(JIT_LOG_BYTES)];
        // SAFETY: `module` is writable; the image is NUL-terminated PTX text that lives for the
        // call; two options with their two values, the log buffer writable for the size given;
        // a context is current.
        let code = unsafe {
            (driver.module_load_data_ex)(
                &mut module,
                kernel.ptx().as_ptr().cast::<c_void>(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Err(e) = check("cuModuleLoadDataEx", code, Phase::ModuleLoad) {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let jit = String::from_utf8_lossy(log.get(..end).unwrap_or(&[])).trim().to_owned();
            return Err(match e.detail() {
                Detail::Message(m) if !jit.is_empty() => {
                    HostError::msg(e.code(), format!("{m}; JIT log: {jit}"))
                }
                _ => e,
            });
        }
        let mut function: CUfunction = ptr::null_mut();
        // SAFETY: `function` is writable; `module` was just loaded; the name is NUL-terminated.
        let code = unsafe { (driver.module_get_function)(&mut function, module, kernel.entry().as_ptr()) };
        if let Err(e) = check("cuModuleGetFunction", code, Phase::GetFunction) {
            // SAFETY: `module` was loaded above and nothing else refers to it.
            let _ = unsafe { (driver.module_unload)(module) };
            return Err(e);
        }
        let (param_sizes, signature) = match driver_param_sizes(driver, function) {
            Some(sizes) => (Some(sizes), SignatureCheck::Driver),
            None => match kernel.signature() {
                Some(signature) => (Some(signature.param_sizes()), SignatureCheck::Ptx),
                None => (None, SignatureCheck::Skipped),
            },
        };
        self.loaded.insert(id, LoadedKernel { module, function, param_sizes, signature });
        Ok(())
    }
}

/// Bytes of the JIT's error log kept for a refused module.
const JIT_LOG_BYTES: usize = 4096;

/// The most parameters `cuFuncGetParamInfo` is asked about: a kernel's parameters take at
/// most 32 764 bytes, so no kernel has more.
const MAX_PARAM_QUERIES: usize = 32_768;

/// The kernel's parameter sizes from `cuFuncGetParamInfo`, or `None` when the driver lacks it
/// or answers anything but success and, past the last parameter, `CUDA_ERROR_INVALID_VALUE`.
fn driver_param_sizes(driver: &Driver, function: CUfunction) -> Option<Vec<usize>> {
    let query = driver.func_get_param_info?;
    let mut sizes = Vec::new();
    for index in 0..MAX_PARAM_QUERIES {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: `function` is a loaded kernel; `offset` and `size` are writable.
        let code = unsafe { query(function, index, &mut offset, &mut size) };
        match code {
            CUDA_SUCCESS => sizes.push(size),
            CUDA_ERROR_INVALID_VALUE => return Some(sizes),
            _ => return None,
        }
    }
    None
}

/// One device buffer holding one or more overlapping guest windows (see [`StagingPlan`]).
struct Region {
    /// Guest offset of the region's first byte.
    start: u64,
    /// Guest offset one past its last byte.
    end: u64,
    /// Host pointer to the first byte (writable: from an exclusive borrow).
    host: *mut u8,
    /// The device buffer (at least one byte, so zero-length windows get a real address).
    device: CUdeviceptr,
}

impl Region {
    fn len(&self) -> usize {
        // Both ends lie inside guest memory, which is in the host's address space.
        usize::try_from(self.end.saturating_sub(self.start)).unwrap_or(usize::MAX)
    }
}

/// The device buffers of a staged launch, freed on drop.
struct Staging<'d> {
    driver: &'d Driver,
    stream: CUstream,
    regions: Vec<Region>,
    /// The device address of each pointer argument, in argument order.
    addresses: Vec<u64>,
}

impl<'d> Staging<'d> {
    /// Allocates one device buffer per group of overlapping windows and enqueues the copies
    /// in. A context must be current.
    fn stage_in(
        driver: &'d Driver,
        stream: CUstream,
        args: &[LoweredArg<'_>],
    ) -> Result<Staging<'d>, HostError> {
        let mut windows: Vec<(GuestRange, *mut u8)> = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            if let Arg::Ptr(w) = arg {
                let host = w.host_ptr_mut().ok_or(StorageError::NotWritable { index })?;
                windows.push((w.range(), host));
            }
        }
        let ranges: Vec<GuestRange> = windows.iter().map(|(range, _)| *range).collect();
        let plan = StagingPlan::new(&ranges);
        let mut staging = Staging { driver, stream, regions: Vec::new(), addresses: Vec::new() };
        for &(start, end) in plan.regions() {
            // The region's first byte is the start of the window with the lowest offset in it;
            // the region is the union of checked windows, so it lies inside guest memory.
            let host =
                windows.iter().find(|(range, _)| u64::from(range.guest_offset) == start).map(|&(_, h)| h);
            let host =
                host.ok_or_else(|| HostError::msg(AbiError::Internal, "staging region without a window"))?;
            staging.regions.push(Region { start, end, host, device: 0 });
        }
        for region in &mut staging.regions {
            let mut device: CUdeviceptr = 0;
            // SAFETY: `device` is writable; the size is at least 1; a context is current.
            let code = unsafe { (driver.mem_alloc)(&mut device, region.len().max(1)) };
            check("cuMemAlloc", code, Phase::Launch)?;
            region.device = device;
            if region.len() > 0 {
                // SAFETY: `region.host` points at `len()` readable bytes of guest memory (the
                // union of checked windows), borrowed exclusively for the launch; the device
                // buffer has `len()` bytes; the stream belongs to the current context.
                let code = unsafe {
                    (driver.memcpy_htod_async)(device, region.host.cast_const().cast(), region.len(), stream)
                };
                check("cuMemcpyHtoDAsync", code, Phase::Launch)?;
            }
        }
        for &(r, offset) in plan.placements() {
            let device = staging.regions.get(r).map_or(0, |region| region.device);
            staging.addresses.push(device.saturating_add(offset));
        }
        Ok(staging)
    }

    /// Enqueues the copies back into guest memory.
    fn stage_out(&self) -> Result<(), HostError> {
        for region in self.regions.iter().filter(|r| r.len() > 0) {
            // SAFETY: `region.host` points at `len()` writable bytes of guest memory, borrowed
            // exclusively (a `&mut`) until the launch returns, after the stream is synchronised;
            // the device buffer has `len()` bytes.
            let code = unsafe {
                (self.driver.memcpy_dtoh_async)(region.host.cast(), region.device, region.len(), self.stream)
            };
            check("cuMemcpyDtoHAsync", code, Phase::Launch)?;
        }
        Ok(())
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        // Nothing may still be copying into or out of the buffers (an error path may leave
        // work queued); the result is ignored because there is nothing left to undo.
        // SAFETY: the stream belongs to the current context.
        let _ = unsafe { (self.driver.stream_synchronize)(self.stream) };
        for region in self.regions.iter().filter(|r| r.device != 0) {
            // SAFETY: the buffer was allocated by `stage_in` and is no longer used.
            let _ = unsafe { (self.driver.mem_free)(region.device) };
        }
    }
}

impl Launcher for CudaLauncher {
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        let driver = self.driver;
        let (context, stream, pointer_mode) = (self.context, self.stream, self.pointer_mode);
        let _current = Current::push(driver, context, Phase::Launch)?;
        self.ensure_loaded(request.kernel_id)?;
        let kernel = self
            .loaded
            .get(&request.kernel_id)
            .ok_or_else(|| HostError::msg(AbiError::Internal, "kernel cache lost an entry"))?;
        // `signature` is `Skipped` exactly when no parameter sizes are known.
        let (function, param_sizes, signature) =
            (kernel.function, kernel.param_sizes.as_deref(), kernel.signature);

        let staging = match pointer_mode {
            // One pass from the argv bytes to the parameter slots, pointers as host pointers.
            PointerMode::Direct => {
                self.storage.parse_direct(request.argv, request.memory)?;
                if let Some(sizes) = param_sizes {
                    check_arg_sizes(sizes, self.storage.arg_sizes())?;
                }
                None
            }
            // The windows are read (and copied to the device) before their device addresses,
            // and so the slots, are known: parse, check, stage, then build.
            PointerMode::Staged => {
                let args: ParsedArgv<'_> = request.args()?;
                if let Some(sizes) = param_sizes {
                    check_param_sizes(sizes, &args)?;
                }
                let staging = Staging::stage_in(driver, stream, &args)?;
                self.storage.build(&args, PointerPlacement::Staged(&staging.addresses))?;
                Some(staging)
            }
        };
        // With the count checked the driver reads exactly the arguments' entries; without, the
        // padded table gives any extra parameters zeros.
        let shape = request.shape;
        let launch = |table: &mut ParamTable<'_>| {
            // SAFETY: `function` is a loaded kernel whose parameter sizes were checked where
            // known; `table` holds one pointer per argument to an 8-aligned slot with its value
            // (padded with pointers to zeros when the count is unknown), and lives (with the
            // storage it borrows) until after the call, which copies the values; pointer values
            // are host addresses of exclusively borrowed guest memory (direct mode, on a device
            // with pageable memory access) or device buffers (staged); `extra` is null.
            unsafe {
                (driver.launch_kernel)(
                    function,
                    shape.grid[0],
                    shape.grid[1],
                    shape.grid[2],
                    shape.block[0],
                    shape.block[1],
                    shape.block[2],
                    shape.shared_mem_bytes,
                    stream,
                    table.as_mut_ptr(),
                    ptr::null_mut(),
                )
            }
        };
        let code = match signature {
            SignatureCheck::Skipped => launch(&mut self.storage.params_padded()),
            // The table is made in place, not returned by value.
            SignatureCheck::Ptx | SignatureCheck::Driver => self.storage.with_params(launch),
        };
        check("cuLaunchKernel", code, Phase::Launch)?;
        if let Some(staging) = &staging {
            staging.stage_out()?;
        }
        // SAFETY: the stream belongs to the current context.
        let code = unsafe { (driver.stream_synchronize)(stream) };
        check("cuStreamSynchronize", code, Phase::Launch)?;
        drop(staging);
        Ok(LaunchOutcome { pointer_mode, signature })
    }
}

impl Drop for CudaLauncher {
    fn drop(&mut self) {
        let driver = self.driver;
        if let Ok(_current) = Current::push(driver, self.context, Phase::Launch) {
            for (_, kernel) in self.loaded.drain() {
                // SAFETY: the module was loaded by this launcher; no launch is running.
                let _ = unsafe { (driver.module_unload)(kernel.module) };
            }
            if !self.stream.is_null() {
                // SAFETY: the stream was made by this launcher and is idle (launches synchronise).
                let _ = unsafe { (driver.stream_destroy)(self.stream) };
            }
        }
        // SAFETY: this launcher retained the device's primary context once in `new`.
        let _ = unsafe { (driver.primary_ctx_release)(self.device) };
    }
}
