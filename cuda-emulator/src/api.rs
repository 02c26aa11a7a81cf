//! The driver entry points' implementations, with `cuda.h`'s prototypes: what each exported
//! `cuXxx` symbol of `export_driver_api!` forwards to.
//!
//! Every function here is one entry point. It counts the call, waits if a hold is armed for it
//! and answers an armed failure first (`src/faults.rs`), then checks as the driver
//! does — `cuInit` done, the
//! calling thread's current context alive and without a sticky error, handles of that
//! context, arguments in range — and only then changes anything or writes an out-parameter. A
//! panic inside is caught and answered `CUDA_ERROR_UNKNOWN`: nothing unwinds into C.
//!
//! ## Streams run asynchronously
//!
//! `cuMemcpyHtoDAsync_v2`, `cuMemcpyDtoHAsync_v2` and `cuLaunchKernel` on a created stream check
//! their arguments and queue the work, which the stream's worker runs after the call has
//! returned (`src/stream.rs`), except that a copy into pageable host memory returns once it
//! has run, as a GPU's does; `cuStreamSynchronize` waits for it and reports a kernel
//! fault as the context's sticky error. On a default stream (0, 1, 2) the work runs before the
//! call returns.
//!
//! ## Where the emulator differs from the driver
//!
//! - A null entry in `kernelParams` (for a parameter the kernel has) is
//!   `CUDA_ERROR_INVALID_VALUE`; the driver would read through it and crash the process.
//! - `cuLaunchKernel` with `extra` non-null is `CUDA_ERROR_INVALID_VALUE` (not supported).
//! - `cuModuleLoadDataEx` takes PTX text only, read by [`read_ptx`](crate::read_ptx) (`src/ptx.rs`); it honours the
//!   error-log options and ignores the others. A `.version` newer than the emulated driver's
//!   PTX ISA (8.2 for CUDA 12.2, 8.7 for 12.8, 9.2 for 13.2) is `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::time::Instant;

use crate::exec::{self, KernelParams, LaunchShape, Program};
use crate::faults::{self, EntryPoint};
use crate::memory::Fault;
use crate::ptx::{self, PtxEntry, PtxError};
use crate::result::{
    CUDA_ERROR_ASSERT, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_TIMEOUT,
    CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_UNKNOWN,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_SUCCESS, CuResult,
};
use crate::state::{self, DEVICE_NAME, State};
use crate::stream;

/// `CUdevice`: a device ordinal.
pub type CUdevice = c_int;
/// `CUcontext`: an opaque handle.
pub type CUcontext = *mut c_void;
/// `CUmodule`: an opaque handle.
pub type CUmodule = *mut c_void;
/// `CUfunction`: an opaque handle.
pub type CUfunction = *mut c_void;
/// `CUstream`: an opaque handle (null: the default stream).
pub type CUstream = *mut c_void;
/// `CUdeviceptr`: a device address.
pub type CUdeviceptr = u64;

/// Which CUDA driver a library emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmulatedDriver {
    /// CUDA 12.2 (driver 535, Debian's `libcuda1`): before `cuFuncGetParamInfo` (12.4).
    Cuda12_2,
    /// CUDA 12.8 (driver 570, as H200 machines ship): `cuFuncGetParamInfo` (12.4), no
    /// `cuFuncGetParamCount` (13.2).
    Cuda12_8,
    /// CUDA 13.2: `cuFuncGetParamInfo` and `cuFuncGetParamCount`.
    Cuda13_2,
}

impl EmulatedDriver {
    /// What `cuDriverGetVersion` reports.
    pub const fn version(self) -> c_int {
        match self {
            EmulatedDriver::Cuda12_2 => 12020,
            EmulatedDriver::Cuda12_8 => 12080,
            EmulatedDriver::Cuda13_2 => 13020,
        }
    }

    /// The newest PTX ISA version the driver's JIT compiles.
    pub const fn max_ptx_isa(self) -> (u32, u32) {
        match self {
            EmulatedDriver::Cuda12_2 => (8, 2),
            EmulatedDriver::Cuda12_8 => (8, 7),
            EmulatedDriver::Cuda13_2 => (9, 2),
        }
    }
}

/// `CU_DEVICE_ATTRIBUTE_*` values the emulator answers.
pub mod device_attribute {
    use std::ffi::c_int;

    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK` (1024).
    pub const MAX_THREADS_PER_BLOCK: c_int = 1;
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X` (1024).
    pub const MAX_BLOCK_DIM_X: c_int = 2;
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y` (1024).
    pub const MAX_BLOCK_DIM_Y: c_int = 3;
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z` (64).
    pub const MAX_BLOCK_DIM_Z: c_int = 4;
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X` (2³¹ − 1).
    pub const MAX_GRID_DIM_X: c_int = 5;
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y` (65535).
    pub const MAX_GRID_DIM_Y: c_int = 6;
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z` (65535).
    pub const MAX_GRID_DIM_Z: c_int = 7;
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK` (48 KiB).
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
    /// `CU_DEVICE_ATTRIBUTE_WARP_SIZE` (32).
    pub const WARP_SIZE: c_int = 10;
    /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT` (1).
    pub const MULTIPROCESSOR_COUNT: c_int = 16;
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 76;
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`.
    pub const PAGEABLE_MEMORY_ACCESS: c_int = 88;
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
    pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES`.
    pub const PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: c_int = 100;
}

/// `CU_FUNC_ATTRIBUTE_*` values the emulator answers.
pub mod function_attribute {
    use std::ffi::c_int;

    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` (1024).
    pub const MAX_THREADS_PER_BLOCK: c_int = 0;
    /// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: the kernel's static shared memory.
    pub const SHARED_SIZE_BYTES: c_int = 1;
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: the most dynamic shared memory a
    /// launch may ask for (48 KiB − static by default; raised with `cuFuncSetAttribute` up to
    /// the device's opt-in maximum − static).
    pub const MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
}

/// `CU_JIT_ERROR_LOG_BUFFER`: the option value is a `char*`.
const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
/// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`: the option value is the size, carried in the pointer.
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

/// The device limits every emulated device has.
const MAX_THREADS_PER_BLOCK: u32 = 1024;
const MAX_BLOCK_DIM: [u32; 3] = [1024, 1024, 64];
const MAX_GRID_DIM: [u32; 3] = [2_147_483_647, 65535, 65535];
const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 48 * 1024;

/// Runs one entry point: counts the call, answers an armed failure, else runs `body`; a panic
/// is `CUDA_ERROR_UNKNOWN`.
fn entry_point(entry: EntryPoint, body: impl FnOnce() -> Result<(), CuResult>) -> CuResult {
    entry_point_then(entry, || {}, body)
}

/// [`entry_point`], with `on_failure` run before an armed failure is answered: the one thing a
/// failing call still does (a synchronisation still waits for the work before it reports).
fn entry_point_then(
    entry: EntryPoint,
    on_failure: impl FnOnce(),
    body: impl FnOnce() -> Result<(), CuResult>,
) -> CuResult {
    let run = AssertUnwindSafe(|| match faults::on_call(entry) {
        Some(code) => {
            on_failure();
            // An injected sticky code is a fault like any other: the context keeps it.
            if crate::result::STICKY.contains(&code)
                && let Some(context) = state::current_context()
            {
                state::lock().poison(context, code);
            }
            code
        }
        None => body().err().unwrap_or(CUDA_SUCCESS),
    });
    catch_unwind(run).unwrap_or(CUDA_ERROR_UNKNOWN)
}

/// A required out-parameter: null is `CUDA_ERROR_INVALID_VALUE`.
fn required<T>(out: *mut T) -> Result<NonNull<T>, CuResult> {
    NonNull::new(out).ok_or(CUDA_ERROR_INVALID_VALUE)
}

/// The handle's id (its address).
fn id(handle: *mut c_void) -> usize {
    handle.addr()
}

/// The handle for id `id`: a token, never dereferenced.
fn token(id: usize) -> *mut c_void {
    ptr::without_provenance_mut(id)
}

/// Locks the state and finds the calling thread's context (see [`State::current`]).
fn in_current_context() -> Result<(std::sync::MutexGuard<'static, State>, usize), CuResult> {
    let current = state::current_context();
    let state = state::lock();
    let context = state.current(current)?;
    Ok((state, context))
}

/// Locks the state, which must be initialised.
fn initialized() -> Result<std::sync::MutexGuard<'static, State>, CuResult> {
    let state = state::lock();
    state.require_initialized()?;
    Ok(state)
}

/// `CUresult cuInit(unsigned int Flags)`: `Flags` must be 0.
pub fn init(flags: c_uint) -> CuResult {
    entry_point(EntryPoint::Init, || {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        state::lock().initialized = true;
        Ok(())
    })
}

/// `CUresult cuDriverGetVersion(int *driverVersion)`: `driver`'s version (before `cuInit`
/// too).
///
/// # Safety
///
/// `driver_version` is null or valid for writing an `int`.
pub unsafe fn driver_get_version(driver: EmulatedDriver, driver_version: *mut c_int) -> CuResult {
    entry_point(EntryPoint::DriverGetVersion, || {
        let out = required(driver_version)?;
        // SAFETY: non-null, and writable for an `int` (this function's contract).
        unsafe { out.write(driver.version()) };
        Ok(())
    })
}

/// `CUresult cuDeviceGetCount(int *count)`.
///
/// # Safety
///
/// `count` is null or valid for writing an `int`.
pub unsafe fn device_get_count(count: *mut c_int) -> CuResult {
    entry_point(EntryPoint::DeviceGetCount, || {
        let devices = initialized()?.devices.len();
        let out = required(count)?;
        // SAFETY: non-null, and writable for an `int` (this function's contract).
        unsafe { out.write(c_int::try_from(devices).unwrap_or(c_int::MAX)) };
        Ok(())
    })
}

/// `CUresult cuDeviceGet(CUdevice *device, int ordinal)`.
///
/// # Safety
///
/// `device` is null or valid for writing a `CUdevice`.
pub unsafe fn device_get(device: *mut CUdevice, ordinal: c_int) -> CuResult {
    entry_point(EntryPoint::DeviceGet, || {
        initialized()?.device(ordinal)?;
        let out = required(device)?;
        // SAFETY: non-null, and writable for a `CUdevice` (this function's contract).
        unsafe { out.write(ordinal) };
        Ok(())
    })
}

/// `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`: the
/// attributes of [`device_attribute`]; any other is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
///
/// `pi` is null or valid for writing an `int`.
pub unsafe fn device_get_attribute(pi: *mut c_int, attrib: c_int, dev: CUdevice) -> CuResult {
    use device_attribute as a;
    entry_point(EntryPoint::DeviceGetAttribute, || {
        let config = initialized()?.device(dev)?.config;
        let value = match attrib {
            a::MAX_THREADS_PER_BLOCK => 1024,
            a::MAX_BLOCK_DIM_X | a::MAX_BLOCK_DIM_Y => 1024,
            a::MAX_BLOCK_DIM_Z => 64,
            a::MAX_GRID_DIM_X => 2_147_483_647,
            a::MAX_GRID_DIM_Y | a::MAX_GRID_DIM_Z => 65535,
            a::MAX_SHARED_MEMORY_PER_BLOCK => MAX_SHARED_MEMORY_PER_BLOCK,
            a::WARP_SIZE => 32,
            a::MULTIPROCESSOR_COUNT => 1,
            a::COMPUTE_CAPABILITY_MAJOR => config.compute_capability.0,
            a::COMPUTE_CAPABILITY_MINOR => config.compute_capability.1,
            a::PAGEABLE_MEMORY_ACCESS => c_int::from(config.pageable_memory_access),
            a::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => config.shared_memory_optin,
            a::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES => c_int::from(config.uses_host_page_tables),
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        };
        let out = required(pi)?;
        // SAFETY: non-null, and writable for an `int` (this function's contract).
        unsafe { out.write(value) };
        Ok(())
    })
}

/// `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`: [`DEVICE_NAME`],
/// NUL-terminated, truncated to `len` bytes with its NUL.
///
/// # Safety
///
/// `name` is null or valid for writing `len` bytes.
pub unsafe fn device_get_name(name: *mut c_char, len: c_int, dev: CUdevice) -> CuResult {
    entry_point(EntryPoint::DeviceGetName, || {
        initialized()?.device(dev)?;
        let out = required(name.cast::<u8>())?;
        let len = usize::try_from(len).ok().filter(|&len| len > 0).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let text = DEVICE_NAME.as_bytes();
        let copied = text.len().min(len - 1);
        // SAFETY: `out` is writable for `len` bytes (this function's contract) and
        // `copied < len`; `text` is a separate, static string.
        unsafe { ptr::copy_nonoverlapping(text.as_ptr(), out.as_ptr(), copied) };
        // SAFETY: `copied < len`: inside the same buffer.
        let end = unsafe { out.add(copied) };
        // SAFETY: byte `copied` of the buffer, writable.
        unsafe { end.write(0) };
        Ok(())
    })
}

/// `CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)`.
///
/// # Safety
///
/// `pctx` is null or valid for writing a `CUcontext`.
pub unsafe fn device_primary_ctx_retain(pctx: *mut CUcontext, dev: CUdevice) -> CuResult {
    entry_point(EntryPoint::DevicePrimaryCtxRetain, || {
        let mut state = initialized()?;
        state.device(dev)?;
        let out = required(pctx)?;
        let context = state.retain_primary(dev)?;
        drop(state);
        // SAFETY: non-null, and writable for a `CUcontext` (this function's contract).
        unsafe { out.write(token(context)) };
        Ok(())
    })
}

/// `CUresult cuDevicePrimaryCtxRelease(CUdevice dev)` (the `_v2` symbol).
pub fn device_primary_ctx_release(dev: CUdevice) -> CuResult {
    entry_point(EntryPoint::DevicePrimaryCtxRelease, || initialized()?.release_primary(dev))
}

/// `CUresult cuDevicePrimaryCtxReset(CUdevice dev)` (the `_v2` symbol).
pub fn device_primary_ctx_reset(dev: CUdevice) -> CuResult {
    entry_point(EntryPoint::DevicePrimaryCtxReset, || initialized()?.reset_primary(dev))
}

/// `CUresult cuCtxPushCurrent(CUcontext ctx)` (the `_v2` symbol): `ctx` must be alive.
pub fn ctx_push_current(ctx: CUcontext) -> CuResult {
    entry_point(EntryPoint::CtxPushCurrent, || {
        if !initialized()?.contexts.contains_key(&id(ctx)) {
            return Err(CUDA_ERROR_INVALID_CONTEXT);
        }
        state::push_current(id(ctx));
        Ok(())
    })
}

/// `CUresult cuCtxPopCurrent(CUcontext *pctx)` (the `_v2` symbol): `pctx` may be null.
///
/// # Safety
///
/// `pctx` is null or valid for writing a `CUcontext`.
pub unsafe fn ctx_pop_current(pctx: *mut CUcontext) -> CuResult {
    entry_point(EntryPoint::CtxPopCurrent, || {
        drop(initialized()?);
        let context = state::pop_current().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if let Some(out) = NonNull::new(pctx) {
            // SAFETY: non-null, and writable for a `CUcontext` (this function's contract).
            unsafe { out.write(token(context)) };
        }
        Ok(())
    })
}

/// Where the JIT's error log goes, from `cuModuleLoadDataEx`'s options.
struct ErrorLog {
    /// `CU_JIT_ERROR_LOG_BUFFER`'s value.
    buffer: *mut u8,
    /// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`'s value.
    capacity: usize,
    /// Where that value sits in `optionValues`: the number of log bytes written goes back
    /// there.
    size_slot: Option<NonNull<*mut c_void>>,
}

impl ErrorLog {
    /// Reads the error-log options; others are ignored.
    ///
    /// # Safety
    ///
    /// `options` and `values` are valid for reading `count` elements, `values` for writing
    /// them too; the log buffer is writable for the size given.
    unsafe fn from_options(
        count: c_uint,
        options: *mut c_int,
        values: *mut *mut c_void,
    ) -> Result<ErrorLog, CuResult> {
        let mut log = ErrorLog { buffer: ptr::null_mut(), capacity: 0, size_slot: None };
        let count = usize::try_from(count).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
        if count == 0 {
            return Ok(log);
        }
        let (Some(options), Some(values)) = (NonNull::new(options), NonNull::new(values)) else {
            return Err(CUDA_ERROR_INVALID_VALUE);
        };
        for i in 0..count {
            // SAFETY: `i < count`, and `options` holds `count` `int`s (this function's
            // contract): inside the array.
            let option = unsafe { options.add(i) };
            // SAFETY: one of the `count` readable `int`s.
            let option = unsafe { option.read() };
            // SAFETY: the same for `values`.
            let slot = unsafe { values.add(i) };
            // SAFETY: `slot` is one of the `count` readable values.
            let value = unsafe { slot.read() };
            match option {
                CU_JIT_ERROR_LOG_BUFFER => log.buffer = value.cast(),
                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES => {
                    log.capacity = value.addr();
                    log.size_slot = Some(slot);
                }
                _ => {}
            }
        }
        Ok(log)
    }

    /// Writes `message` (truncated, NUL-terminated) to the buffer and the number of message
    /// bytes written (without the NUL) back into the size option.
    ///
    /// # Safety
    ///
    /// As for [`ErrorLog::from_options`].
    unsafe fn write(&self, message: &str) {
        let mut written = 0;
        if !self.buffer.is_null() && self.capacity > 0 {
            written = message.len().min(self.capacity - 1);
            // SAFETY: the buffer is writable for `capacity` bytes (this function's contract)
            // and `written < capacity`; `message` is Rust memory, not the buffer.
            unsafe { ptr::copy_nonoverlapping(message.as_ptr(), self.buffer, written) };
            // SAFETY: `written < capacity`: inside the same buffer.
            let end = unsafe { self.buffer.add(written) };
            // SAFETY: byte `written` of the buffer, writable.
            unsafe { end.write(0) };
        }
        if let Some(slot) = self.size_slot {
            // SAFETY: one of the option values, writable (this function's contract).
            unsafe { slot.write(ptr::without_provenance_mut(written)) };
        }
    }
}

/// `CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
/// CUjit_option *options, void **optionValues)`: `image` is NUL-terminated PTX text. Of the
/// options, `CU_JIT_ERROR_LOG_BUFFER` and `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES` are honoured:
/// the log gets ptxas's message for refused PTX (empty on success) and the size option's
/// value becomes the number of message bytes written (without the NUL).
///
/// # Safety
///
/// `module` is null or writable for a `CUmodule`; `image` is null or a NUL-terminated string;
/// `options` and `option_values` are valid for `num_options` elements (or null when it is 0),
/// `option_values` writable; a log buffer is writable for the size given.
pub unsafe fn module_load_data_ex(
    driver: EmulatedDriver,
    module: *mut CUmodule,
    image: *const c_void,
    num_options: c_uint,
    options: *mut c_int,
    option_values: *mut *mut c_void,
) -> CuResult {
    entry_point(EntryPoint::ModuleLoadDataEx, || {
        drop(in_current_context()?);
        let out = required(module)?;
        if image.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the option arrays and the log buffer are as this function's contract says.
        let log = unsafe { ErrorLog::from_options(num_options, options, option_values) }?;
        // SAFETY: non-null, and NUL-terminated (this function's contract).
        let text = unsafe { CStr::from_ptr(image.cast::<c_char>()) }.to_string_lossy();
        let read = ptx::read_ptx(&text).map_err(|error| (CUDA_ERROR_INVALID_PTX, error)).and_then(|module| {
            let (major, minor) = driver.max_ptx_isa();
            if module.version > (major, minor) {
                let (v_major, v_minor) = module.version;
                let message =
                    format!("Unsupported .version {v_major}.{v_minor}; current version is '{major}.{minor}'");
                return Err((
                    CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                    PtxError::fatal(module.version_line, message),
                ));
            }
            Ok(module)
        });
        // The module's `.global` variables laid out: one it cannot place refuses the module.
        let read = read.and_then(|module| {
            let globals = exec::module_globals(&module)
                .map_err(|unsupported| (CUDA_ERROR_NOT_SUPPORTED, PtxError::from(unsupported)))?;
            Ok((module, globals))
        });
        let (ptx, globals) = match read {
            Ok(read) => read,
            Err((code, error)) => {
                // SAFETY: as above.
                unsafe { log.write(&error.to_string()) };
                return Err(code);
            }
        };
        // Their memory, allocated in the context as a GPU's loader does, and initialized.
        let (state, context) = in_current_context()?;
        drop(state);
        let base = if globals.image.is_empty() {
            None
        } else {
            Some(state::memory_mut().alloc_module(context, &globals.image)?)
        };
        let release = || {
            if let Some(base) = base {
                state::memory_mut().free_module(context, base);
            }
        };
        let addresses = base.map(|base| globals.addresses(base)).unwrap_or_default();
        // Every kernel decoded for the interpreter: an instruction it does not run refuses the
        // module here, naming the line, rather than a wrong result at a launch.
        let programs = ptx.entries.iter().map(|entry| exec::compile(&ptx, entry, &addresses)).collect();
        let programs: Vec<_> = match programs {
            Ok(programs) => programs,
            Err(unsupported) => {
                release();
                // SAFETY: as above.
                unsafe { log.write(&PtxError::from(unsupported).to_string()) };
                return Err(CUDA_ERROR_NOT_SUPPORTED);
            }
        };
        // The context may have gone while the PTX was read: look again.
        let (state, context) = match in_current_context() {
            Ok(current) => current,
            Err(code) => {
                release();
                return Err(code);
            }
        };
        // The JIT compiles for the device: a `.target` above its compute capability is refused.
        let device = state.context_device(context).map_or((0, 0), |device| device.compute_capability);
        if let Some(target) = ptx.targets.iter().find_map(|t| sm_version(t)).filter(|&sm| sm > device) {
            drop(state);
            release();
            let message = format!(
                "ptxas fatal: SM version specified by .target (sm_{}{}) is higher than the device's \
                 compute capability {}.{}",
                target.0, target.1, device.0, device.1
            );
            // SAFETY: as above.
            unsafe { log.write(&message) };
            return Err(CUDA_ERROR_INVALID_PTX);
        }
        let mut state = state;
        let handle = state.load_module(context, ptx, programs, base);
        drop(state);
        // SAFETY: as above.
        unsafe { log.write("") };
        // SAFETY: non-null, and writable for a `CUmodule` (this function's contract).
        unsafe { out.write(token(handle)) };
        Ok(())
    })
}

/// The compute capability a `.target` names (`sm_90` and `sm_90a` are 9.0), or `None` for
/// another target option (`texmode_independent`, `debug`, ...).
fn sm_version(target: &str) -> Option<(i32, i32)> {
    let digits = target.strip_prefix("sm_")?.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let number: i32 = digits.parse().ok()?;
    Some((number / 10, number % 10))
}

/// `CUresult cuModuleUnload(CUmodule hmod)`: the module's functions die with it.
pub fn module_unload(hmod: CUmodule) -> CuResult {
    entry_point(EntryPoint::ModuleUnload, || {
        let (mut state, context) = in_current_context()?;
        state.unload_module(context, id(hmod))
    })
}

/// `CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)`:
/// `CUDA_ERROR_NOT_FOUND` when the module has no `.entry` of that name.
///
/// # Safety
///
/// `hfunc` is null or writable for a `CUfunction`; `name` is null or NUL-terminated.
pub unsafe fn module_get_function(hfunc: *mut CUfunction, hmod: CUmodule, name: *const c_char) -> CuResult {
    entry_point(EntryPoint::ModuleGetFunction, || {
        let (state, context) = in_current_context()?;
        let out = required(hfunc)?;
        if name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-null, and NUL-terminated (this function's contract).
        let name = unsafe { CStr::from_ptr(name) };
        let function = state.function_handle(context, id(hmod), name.to_bytes())?;
        drop(state);
        // SAFETY: non-null, and writable for a `CUfunction` (this function's contract).
        unsafe { out.write(token(function)) };
        Ok(())
    })
}

/// `CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
/// size_t *paramSize)` (CUDA 12.4): the parameter's offset and size in the PTX layout;
/// `paramSize` may be null; an index past the last parameter is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
///
/// `param_offset` is null or writable for a `size_t`; so is `param_size`.
pub unsafe fn func_get_param_info(
    func: CUfunction,
    param_index: usize,
    param_offset: *mut usize,
    param_size: *mut usize,
) -> CuResult {
    entry_point(EntryPoint::FuncGetParamInfo, || {
        let (state, context) = in_current_context()?;
        let function = state.function(context, id(func))?;
        let offset_out = required(param_offset)?;
        let param = function.entry.params.get(param_index).copied().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        drop(state);
        // SAFETY: non-null, and writable for a `size_t` (this function's contract).
        unsafe { offset_out.write(param.offset) };
        if let Some(size_out) = NonNull::new(param_size) {
            // SAFETY: the same for `param_size`.
            unsafe { size_out.write(param.size) };
        }
        Ok(())
    })
}

/// `CUresult cuFuncGetParamCount(CUfunction func, size_t *paramCount)` (CUDA 13.2).
///
/// # Safety
///
/// `param_count` is null or writable for a `size_t`.
pub unsafe fn func_get_param_count(func: CUfunction, param_count: *mut usize) -> CuResult {
    entry_point(EntryPoint::FuncGetParamCount, || {
        let (state, context) = in_current_context()?;
        let count = state.function(context, id(func))?.entry.params.len();
        drop(state);
        let out = required(param_count)?;
        // SAFETY: non-null, and writable for a `size_t` (this function's contract).
        unsafe { out.write(count) };
        Ok(())
    })
}

/// `CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)`: the
/// attributes of [`function_attribute`]; any other is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
///
/// `pi` is null or writable for an `int`.
pub unsafe fn func_get_attribute(pi: *mut c_int, attrib: c_int, hfunc: CUfunction) -> CuResult {
    use function_attribute as a;
    entry_point(EntryPoint::FuncGetAttribute, || {
        let (state, context) = in_current_context()?;
        let function = state.function(context, id(hfunc))?;
        let bytes = match attrib {
            // What the device allows, or less where the entry declares `.maxntid` or `.reqntid`.
            a::MAX_THREADS_PER_BLOCK => function.entry.max_threads.map_or(1024, |m| m.min(1024) as usize),
            a::SHARED_SIZE_BYTES => function.entry.static_shared_bytes,
            a::MAX_DYNAMIC_SHARED_SIZE_BYTES => function.max_dynamic_shared_bytes,
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        };
        drop(state);
        let out = required(pi)?;
        // SAFETY: non-null, and writable for an `int` (this function's contract).
        unsafe { out.write(c_int::try_from(bytes).unwrap_or(c_int::MAX)) };
        Ok(())
    })
}

/// `CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)`:
/// only `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`, from 0 to the device's opt-in
/// maximum − the kernel's static shared memory.
pub fn func_set_attribute(hfunc: CUfunction, attrib: c_int, value: c_int) -> CuResult {
    entry_point(EntryPoint::FuncSetAttribute, || {
        let (mut state, context) = in_current_context()?;
        let optin = state.context_device(context).map_or(0, |device| device.shared_memory_optin);
        let function = state.function_mut(context, id(hfunc))?;
        if attrib != function_attribute::MAX_DYNAMIC_SHARED_SIZE_BYTES {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let limit = usize::try_from(optin).unwrap_or(0).saturating_sub(function.entry.static_shared_bytes);
        let value = usize::try_from(value).ok().filter(|&v| v <= limit).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        function.max_dynamic_shared_bytes = value;
        Ok(())
    })
}

/// `CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)`: `Flags` is
/// `CU_STREAM_DEFAULT` (0) or `CU_STREAM_NON_BLOCKING` (1).
///
/// # Safety
///
/// `ph_stream` is null or writable for a `CUstream`.
pub unsafe fn stream_create(ph_stream: *mut CUstream, flags: c_uint) -> CuResult {
    entry_point(EntryPoint::StreamCreate, || {
        let (mut state, context) = in_current_context()?;
        let out = required(ph_stream)?;
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let stream = state.create_stream(context)?;
        drop(state);
        // SAFETY: non-null, and writable for a `CUstream` (this function's contract).
        unsafe { out.write(token(stream)) };
        Ok(())
    })
}

/// `CUresult cuStreamDestroy(CUstream hStream)` (the `_v2` symbol).
pub fn stream_destroy(h_stream: CUstream) -> CuResult {
    entry_point(EntryPoint::StreamDestroy, || {
        let (mut state, context) = in_current_context()?;
        state.destroy_stream(context, id(h_stream))
    })
}

/// `CUresult cuStreamSynchronize(CUstream hStream)`: waits until the stream's queued work has
/// run, then answers the context's sticky error if its work (or anything else) gave it one.
pub fn stream_synchronize(h_stream: CUstream) -> CuResult {
    // A synchronisation that fails still returns only once the stream's work has run, as the
    // driver's does (it reports errors of the work it waited for): an injected failure too.
    let wait = || {
        let queue = state::current_context()
            .and_then(|context| state::lock().stream_queue(context, id(h_stream)).ok());
        if let Some(Some(queue)) = queue {
            queue.wait_idle();
        }
    };
    entry_point_then(EntryPoint::StreamSynchronize, wait, || {
        let (state, context) = in_current_context()?;
        let queue = state.stream_queue(context, id(h_stream))?;
        drop(state);
        if let Some(queue) = queue {
            queue.wait_idle();
        }
        in_current_context().map(drop)
    })
}

/// `CUresult cuStreamQuery(CUstream hStream)`: `CUDA_SUCCESS` once the stream's queued work has
/// run (or the context's sticky error, as `cuStreamSynchronize` answers it),
/// `CUDA_ERROR_NOT_READY` while some of it has not; it never waits.
pub fn stream_query(h_stream: CUstream) -> CuResult {
    entry_point(EntryPoint::StreamQuery, || {
        let (state, context) = in_current_context()?;
        let queue = state.stream_queue(context, id(h_stream))?;
        drop(state);
        if queue.is_some_and(|queue| !queue.is_idle()) {
            return Err(CUDA_ERROR_NOT_READY);
        }
        in_current_context().map(drop)
    })
}

/// `CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)` (the `_v2` symbol): poisoned, not zeroed,
/// 256-byte aligned device memory (see [`DeviceMemory`](crate::DeviceMemory)).
///
/// # Safety
///
/// `dptr` is null or writable for a `CUdeviceptr`.
pub unsafe fn mem_alloc(dptr: *mut CUdeviceptr, bytesize: usize) -> CuResult {
    entry_point(EntryPoint::MemAlloc, || {
        let (state, context) = in_current_context()?;
        drop(state);
        let out = required(dptr)?;
        let addr = state::memory_mut().alloc(context, bytesize)?;
        // SAFETY: non-null, and writable for a `CUdeviceptr` (this function's contract).
        unsafe { out.write(addr as u64) };
        Ok(())
    })
}

/// `CUresult cuMemFree(CUdeviceptr dptr)` (the `_v2` symbol): `dptr` must start a live
/// allocation of the current context.
pub fn mem_free(dptr: CUdeviceptr) -> CuResult {
    entry_point(EntryPoint::MemFree, || {
        let (state, context) = in_current_context()?;
        drop(state);
        state::memory_mut().free(context, dptr)
    })
}

/// `CU_MEMHOSTALLOC_PORTABLE`, `CU_MEMHOSTALLOC_DEVICEMAP`, `CU_MEMHOSTALLOC_WRITECOMBINED`.
const MEMHOSTALLOC_FLAGS: c_uint = 0x01 | 0x02 | 0x04;

/// `CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)`: page-locked host
/// memory of the current context, which the device reaches at the same address where `Flags`
/// has `CU_MEMHOSTALLOC_DEVICEMAP` (0x02), as unified addressing gives on a 64-bit host. The
/// emulator's device memory is host memory already, so the allocation is one of the context's
/// device allocations, filled with [`POISON`](crate::memory::POISON), that the host reads and
/// writes through the returned pointer. Flags other than `PORTABLE`, `DEVICEMAP` and
/// `WRITECOMBINED` are `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
///
/// `pp` is null or writable for a pointer.
pub unsafe fn mem_host_alloc(pp: *mut *mut c_void, bytesize: usize, flags: c_uint) -> CuResult {
    entry_point(EntryPoint::MemHostAlloc, || {
        let (state, context) = in_current_context()?;
        drop(state);
        let out = required(pp)?;
        if flags & !MEMHOSTALLOC_FLAGS != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let addr = state::memory_mut().alloc_host(context, bytesize, flags & 0x02 != 0)?;
        // SAFETY: non-null, and writable for a pointer (this function's contract).
        unsafe { out.write(ptr::with_exposed_provenance_mut(addr)) };
        Ok(())
    })
}

/// `CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)` (the
/// `_v2` symbol): the device address of `p`, the start of a live mapped allocation of
/// [`mem_host_alloc`] (the same address); `Flags` must be 0.
///
/// # Safety
///
/// `pdptr` is null or writable for a `CUdeviceptr`.
pub unsafe fn mem_host_get_device_pointer(
    pdptr: *mut CUdeviceptr,
    p: *mut c_void,
    flags: c_uint,
) -> CuResult {
    entry_point(EntryPoint::MemHostGetDevicePointer, || {
        let (state, _) = in_current_context()?;
        drop(state);
        let out = required(pdptr)?;
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let addr = state::memory().host_device_pointer(p.expose_provenance())?;
        // SAFETY: non-null, and writable for a `CUdeviceptr` (this function's contract).
        unsafe { out.write(addr) };
        Ok(())
    })
}

/// `CUresult cuMemFreeHost(void *p)`: `p` must start a live allocation of [`mem_host_alloc`]
/// (of any context).
pub fn mem_free_host(p: *mut c_void) -> CuResult {
    entry_point(EntryPoint::MemFreeHost, || state::memory_mut().free_host(p.expose_provenance()))
}

/// `CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
/// CUstream hStream)` (the `_v2` symbol): queued on the stream (at once on a default stream),
/// reading the host bytes when it runs. The device range must lie inside one live allocation
/// of the current context; 0 bytes copy nothing.
///
/// # Safety
///
/// `src_host` is readable for `byte_count` bytes.
pub unsafe fn memcpy_htod_async(
    dst_device: CUdeviceptr,
    src_host: *const c_void,
    byte_count: usize,
    h_stream: CUstream,
) -> CuResult {
    entry_point(EntryPoint::MemcpyHtoDAsync, || {
        let (state, context) = in_current_context()?;
        let queue = state.stream_queue(context, id(h_stream))?;
        drop(state);
        if byte_count == 0 {
            return Ok(());
        }
        if src_host.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        state::memory().device_range(context, dst_device, byte_count)?;
        let src = src_host.expose_provenance();
        let copy = move || {
            if !state::lock().usable(context) {
                return; // dropped unrun, as a device drops a faulted context's work
            }
            // SAFETY: readable for `byte_count` bytes until the stream is synchronised (this
            // function's contract, which `cuda.h` gives async copies).
            let _ = unsafe {
                state::memory().copy_to_device(
                    context,
                    dst_device,
                    ptr::with_exposed_provenance(src),
                    byte_count,
                )
            };
        };
        match queue {
            Some(queue) => queue.push(Box::new(copy)),
            None => copy(),
        }
        Ok(())
    })
}

/// `CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
/// CUstream hStream)` (the `_v2` symbol): queued as [`memcpy_htod_async`] is, writing the host
/// bytes when it runs. Into page-locked memory (a `cuMemHostAlloc` allocation) the call returns
/// at once; into pageable memory it returns only once the copy has run, after everything queued
/// before it (a kernel that never ends holds it for ever), as the CUDA driver API documents for
/// this call and as a GPU does.
///
/// # Safety
///
/// `dst_host` is writable for `byte_count` bytes.
pub unsafe fn memcpy_dtoh_async(
    dst_host: *mut c_void,
    src_device: CUdeviceptr,
    byte_count: usize,
    h_stream: CUstream,
) -> CuResult {
    entry_point(EntryPoint::MemcpyDtoHAsync, || {
        let (state, context) = in_current_context()?;
        let queue = state.stream_queue(context, id(h_stream))?;
        drop(state);
        if byte_count == 0 {
            return Ok(());
        }
        if dst_host.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        state::memory().device_range(context, src_device, byte_count)?;
        let dst = dst_host.expose_provenance();
        let copy = move || {
            if !state::lock().usable(context) {
                return;
            }
            // SAFETY: writable for `byte_count` bytes until the stream is synchronised (this
            // function's contract).
            let _ = unsafe {
                state::memory().copy_from_device(
                    context,
                    ptr::with_exposed_provenance_mut(dst),
                    src_device,
                    byte_count,
                )
            };
        };
        let page_locked = state::memory().is_page_locked(dst, byte_count);
        match queue {
            Some(queue) if page_locked => queue.push(Box::new(copy)),
            Some(queue) => {
                // Pageable: the call waits for the copy (run, or dropped with its stream).
                let (done, ran) = std::sync::mpsc::channel::<()>();
                queue.push(Box::new(move || {
                    copy();
                    let _ = done.send(());
                }));
                let _ = ran.recv();
            }
            None => copy(),
        }
        Ok(())
    })
}

/// Whether a launch shape is one the device accepts.
fn shape_fits(shape: LaunchShape) -> bool {
    let dims = shape.grid.iter().chain(&shape.block);
    let threads = shape.block.iter().map(|&d| u64::from(d)).product::<u64>();
    dims.clone().all(|&d| d > 0)
        && shape.block.iter().zip(MAX_BLOCK_DIM).all(|(&d, max)| d <= max)
        && shape.grid.iter().zip(MAX_GRID_DIM).all(|(&d, max)| d <= max)
        && threads <= u64::from(MAX_THREADS_PER_BLOCK)
}

/// `CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, gridDimY, gridDimZ, blockDimX,
/// blockDimY, blockDimZ, sharedMemBytes, CUstream hStream, void **kernelParams, void
/// **extra)`.
///
/// Refused with `CUDA_ERROR_INVALID_VALUE`, as the driver refuses them: a dimension of 0,
/// block dimensions over 1024 × 1024 × 64 or over 1024 threads, a block of more threads than
/// the entry's `.maxntid` or other than its `.reqntid`, grid dimensions over
/// (2³¹ − 1) × 65535 × 65535, `sharedMemBytes` over the function's
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` (48 KiB − static unless raised),
/// `extra` non-null, `kernelParams` null for a kernel with parameters (or a null entry in it).
/// The kernel is its PTX, interpreted ([`Program::run`](crate::Program::run)).
///
/// Then it copies exactly `size_i` bytes from each `kernelParams[i]` (the sizes of the
/// `.entry` declaration; never more entries than the kernel has parameters) and runs the CPU
/// kernel over every thread of the grid before returning. An access outside every mapping of
/// the context stops the kernel and gives the context the sticky `CUDA_ERROR_ILLEGAL_ADDRESS`,
/// and one at an address that is not a multiple of its size the sticky
/// `CUDA_ERROR_MISALIGNED_ADDRESS`; the launch itself still returns `CUDA_SUCCESS`, as on a
/// device. A store that lands outside the allocation its pointer came from but inside a
/// mapping (a neighbour on a shared page) does not fault, as on a GPU: it is added to the
/// record of crossings ([`memory::Crossing`](crate::memory::Crossing)).
///
/// # Safety
///
/// `kernel_params` is null or holds one pointer per kernel parameter, each readable for the
/// parameter's size; kernel pointer arguments to host memory are valid for what the kernel
/// accesses (see [`DeviceMemory`](crate::DeviceMemory)).
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch_kernel(
    f: CUfunction,
    grid_dim_x: c_uint,
    grid_dim_y: c_uint,
    grid_dim_z: c_uint,
    block_dim_x: c_uint,
    block_dim_y: c_uint,
    block_dim_z: c_uint,
    shared_mem_bytes: c_uint,
    h_stream: CUstream,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    entry_point(EntryPoint::LaunchKernel, || {
        let (mut guard, context) = in_current_context()?;
        let shape = LaunchShape {
            grid: [grid_dim_x, grid_dim_y, grid_dim_z],
            block: [block_dim_x, block_dim_y, block_dim_z],
        };
        let state = &mut *guard;
        let function = state.function(context, id(f))?;
        let queue = state.stream_queue(context, id(h_stream))?;
        let shared_fits =
            usize::try_from(shared_mem_bytes).is_ok_and(|s| s <= function.max_dynamic_shared_bytes);
        if !shape_fits(shape) || !shared_fits || !extra.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let entry = &function.entry;
        // The entry's own bounds: `.maxntid` (the most threads) and `.reqntid` (the exact block).
        let threads = shape.block.iter().map(|&d| u64::from(d)).product::<u64>();
        if entry.max_threads.is_some_and(|max| threads > max)
            || entry.required_block.is_some_and(|block| block != shape.block)
        {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut buffer = vec![0u8; entry.param_buffer_bytes()];
        if !entry.params.is_empty() {
            let table = NonNull::new(kernel_params).ok_or(CUDA_ERROR_INVALID_VALUE)?;
            for (i, param) in entry.params.iter().enumerate() {
                // SAFETY: `i` is below the kernel's parameter count, and the table holds one
                // pointer per parameter (this function's contract): inside the table.
                let slot = unsafe { table.add(i) };
                // SAFETY: one of the table's readable pointers.
                let slot = unsafe { slot.read() };
                let source = NonNull::new(slot.cast::<u8>()).ok_or(CUDA_ERROR_INVALID_VALUE)?;
                let target =
                    buffer.get_mut(param.offset..param.offset + param.size).ok_or(CUDA_ERROR_UNKNOWN)?;
                // SAFETY: `source` is readable for the parameter's size (this function's
                // contract); `target` is exactly that many bytes of the local buffer.
                unsafe { ptr::copy_nonoverlapping(source.as_ptr(), target.as_mut_ptr(), param.size) };
            }
        }
        let program = Arc::clone(&function.program);
        let dynamic_shared = shared_mem_bytes as usize;
        let pageable = state.context_device(context).is_some_and(|device| device.pageable_memory_access);
        // The parameters were copied above, as the driver copies them at the call: the caller's
        // table may change as soon as the call returns.
        let run = KernelRun {
            program,
            function: id(f),
            shape,
            buffer,
            entry: entry.clone(),
            context,
            pageable,
            dynamic_shared,
        };
        drop(guard);
        match queue {
            Some(queue) => queue.push(Box::new(move || run.run())),
            None => run.run(),
        }
        Ok(())
    })
}

/// A launched kernel, as queued: everything it runs with.
struct KernelRun {
    program: Arc<Program>,
    /// The function's handle, for its instruction count.
    function: usize,
    shape: LaunchShape,
    dynamic_shared: usize,
    buffer: Vec<u8>,
    entry: PtxEntry,
    context: usize,
    pageable: bool,
}

impl KernelRun {
    /// Runs the kernel over its grid, unless its context is gone or has a sticky error; a fault
    /// gives the context its sticky error. Holds device memory shared while the kernel runs
    /// (kernels of other streams run at the same time), the library state only before and
    /// after.
    fn run(self) {
        let (device, stop) = {
            let state = state::lock();
            if !state.usable(self.context) {
                return; // dropped unrun, as a device drops a faulted context's work
            }
            let Some(stop) = state.contexts.get(&self.context).map(|c| Arc::clone(&c.stop)) else { return };
            (state.context_index(self.context), stop)
        };
        let running = stream::kernel_running();
        let memory = state::memory();
        let view = memory.kernel_view(self.context, self.pageable).stopped_by(stop);
        let started = Instant::now();
        let outcome = self.program.run(
            self.shape,
            &KernelParams { buffer: &self.buffer, entry: &self.entry },
            &view,
            self.dynamic_shared,
        );
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let crossings = view.crossings();
        memory
            .crossings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(crossings.into_iter().map(|crossing| (device, crossing)));
        drop((memory, running));
        let mut state = state::lock();
        let stats = &mut state.stats;
        stats.kernels_launched = stats.kernels_launched.saturating_add(1);
        stats.kernel_nanos = stats.kernel_nanos.saturating_add(nanos);
        stats.threads = stats.threads.saturating_add(outcome.threads);
        stats.instructions = stats.instructions.saturating_add(outcome.instructions);
        if let Some(function) = state.functions.get_mut(&self.function)
            && Arc::ptr_eq(&function.program, &self.program)
        {
            function.instructions = function.instructions.saturating_add(outcome.instructions);
        }
        match outcome.fault {
            Some(Fault::IllegalAddress) => state.poison(self.context, CUDA_ERROR_ILLEGAL_ADDRESS),
            Some(Fault::Misaligned) => state.poison(self.context, CUDA_ERROR_MISALIGNED_ADDRESS),
            Some(Fault::Trap) => state.poison(self.context, CUDA_ERROR_LAUNCH_FAILED),
            Some(Fault::Assert) => state.poison(self.context, CUDA_ERROR_ASSERT),
            Some(Fault::Hang) => state.poison(self.context, CUDA_ERROR_LAUNCH_TIMEOUT),
            // Its context was destroyed under it: there is nothing left to poison.
            Some(Fault::Stopped) | None => {}
        }
    }
}
