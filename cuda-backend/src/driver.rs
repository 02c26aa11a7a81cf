//! The CUDA driver's function table, loaded from `libcuda.so.1` at run time.
//!
//! Why not cust's wrappers (`Context`, `Module`, `Stream`, `DeviceBuffer`): every one of them
//! returns the driver's `CUresult` through cust_raw's `#[repr(i32)]` Rust enum of the CUDA 11.4
//! headers, so a code that a newer driver returns and 11.4 lacked is undefined behaviour
//! before cust's `_ => UnknownError` arm can see it (see [`cu_error`](crate::cu_error)); their
//! `Drop`s do the same, and cust's `Display` asks the driver for the message. And linking
//! `libcuda` makes a binary that cannot even start on a machine without the driver library,
//! where the ABI wants a clean `NotAvailable`.
//!
//! So the backend uses cust for what is sound: the raw handle and value types of the driver
//! API (`cust::sys::{CUcontext, CUdevice, CUdeviceptr, CUfunction, CUmodule, CUstream}`, the
//! device-attribute numbers), and its build configuration. The functions are looked up with
//! `dlsym` (through `libloading`) and declared here with the prototypes of `cuda.h`, each
//! returning the `CUresult` as a plain `i32`. Where `cuda.h` maps a name to a `_v2` symbol,
//! the `_v2` symbol is the one looked up. `cuFuncGetParamInfo` (CUDA 12.4) is optional: an
//! older driver simply lacks the symbol.
//!
//! The library is loaded once per process and never unloaded: libcuda starts threads in
//! `cuInit` and does not support `dlclose`.

use std::ffi::{OsStr, c_char, c_int, c_uint, c_void};
use std::mem::ManuallyDrop;
use std::sync::OnceLock;

use cust::sys::{CUcontext, CUdevice, CUdeviceptr, CUfunction, CUmodule, CUstream};
use kernel_args::{AbiError, HostError};
use libloading::Library;

use crate::cu_error::{Phase, check};

/// The driver library's name on Linux.
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// A `CUresult`, as the C `int` it is.
pub(crate) type CuResult = c_int;

/// The driver entry points the launcher calls, with `cuda.h`'s prototypes.
pub(crate) struct Driver {
    /// Kept loaded for the life of the process (never dropped, never `dlclose`d).
    _library: ManuallyDrop<Library>,
    /// `CUresult cuInit(unsigned int Flags)`.
    pub init: unsafe extern "C" fn(c_uint) -> CuResult,
    /// `CUresult cuDriverGetVersion(int *driverVersion)`.
    pub driver_get_version: unsafe extern "C" fn(*mut c_int) -> CuResult,
    /// `CUresult cuDeviceGetCount(int *count)`.
    pub device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    /// `CUresult cuDeviceGet(CUdevice *device, int ordinal)`.
    pub device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> CuResult,
    /// `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`.
    pub device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CuResult,
    /// `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`.
    pub device_get_name: unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> CuResult,
    /// `CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)`.
    pub primary_ctx_retain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CuResult,
    /// `CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)`.
    pub primary_ctx_release: unsafe extern "C" fn(CUdevice) -> CuResult,
    /// `CUresult cuCtxPushCurrent_v2(CUcontext ctx)`.
    pub ctx_push_current: unsafe extern "C" fn(CUcontext) -> CuResult,
    /// `CUresult cuCtxPopCurrent_v2(CUcontext *pctx)`.
    pub ctx_pop_current: unsafe extern "C" fn(*mut CUcontext) -> CuResult,
    /// `CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int
    /// numOptions, CUjit_option *options, void **optionValues)` (the option enum is a C `int`).
    pub module_load_data_ex:
        unsafe extern "C" fn(*mut CUmodule, *const c_void, c_uint, *mut c_int, *mut *mut c_void) -> CuResult,
    /// `CUresult cuModuleUnload(CUmodule hmod)`.
    pub module_unload: unsafe extern "C" fn(CUmodule) -> CuResult,
    /// `CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)`.
    pub module_get_function: unsafe extern "C" fn(*mut CUfunction, CUmodule, *const c_char) -> CuResult,
    /// `CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)`.
    pub stream_create: unsafe extern "C" fn(*mut CUstream, c_uint) -> CuResult,
    /// `CUresult cuStreamDestroy_v2(CUstream hStream)`.
    pub stream_destroy: unsafe extern "C" fn(CUstream) -> CuResult,
    /// `CUresult cuStreamSynchronize(CUstream hStream)`.
    pub stream_synchronize: unsafe extern "C" fn(CUstream) -> CuResult,
    /// `CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)`.
    pub mem_alloc: unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CuResult,
    /// `CUresult cuMemFree_v2(CUdeviceptr dptr)`.
    pub mem_free: unsafe extern "C" fn(CUdeviceptr) -> CuResult,
    /// `CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)`.
    pub memcpy_htod_async: unsafe extern "C" fn(CUdeviceptr, *const c_void, usize, CUstream) -> CuResult,
    /// `CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)`.
    pub memcpy_dtoh_async: unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize, CUstream) -> CuResult,
    /// `CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, gridDimY, gridDimZ,
    /// blockDimX, blockDimY, blockDimZ, sharedMemBytes, CUstream hStream,
    /// void **kernelParams, void **extra)`.
    #[allow(clippy::type_complexity)]
    pub launch_kernel: unsafe extern "C" fn(
        CUfunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        CUstream,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult,
    /// `CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
    /// size_t *paramSize)`: CUDA 12.4 and later, `None` on older drivers.
    pub func_get_param_info:
        Option<unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> CuResult>,
    /// `cuDriverGetVersion`'s answer (e.g. 12020 for CUDA 12.2).
    pub version: i32,
}

/// Looks up `name` (NUL-terminated) in `library` as a `T`.
///
/// # Safety
///
/// `T` must be the `unsafe extern "C" fn` type of `name`'s C prototype, and `library` must
/// stay loaded for as long as the returned pointer is used.
unsafe fn symbol<T: Copy>(library: &Library, name: &'static [u8]) -> Result<T, HostError> {
    // SAFETY: the caller guarantees that `T` is the symbol's prototype and that the library
    // outlives the pointer.
    let found = unsafe { library.get::<T>(name) };
    found.map(|s| *s).map_err(|_| {
        let name = String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name));
        HostError::msg(AbiError::NotAvailable, format!("{DRIVER_LIBRARY} has no {name}: driver too old"))
    })
}

impl Driver {
    /// The process's driver: loaded and initialised (`cuInit`) on first use.
    ///
    /// # Errors
    ///
    /// `NotAvailable` when the library is missing, lacks a required function, or `cuInit`
    /// fails (no device, no kernel driver, a stub library); the same error on every later call.
    pub fn get() -> Result<&'static Driver, HostError> {
        static DRIVER: OnceLock<Result<Driver, HostError>> = OnceLock::new();
        DRIVER.get_or_init(|| Driver::load(OsStr::new(DRIVER_LIBRARY))).as_ref().map_err(Clone::clone)
    }

    /// Loads the driver library at `path` and calls `cuInit(0)`. The library is never
    /// unloaded, even when this fails after loading it.
    pub fn load(path: &OsStr) -> Result<Driver, HostError> {
        // SAFETY: loading runs the library's initialisers; libcuda is made to be loaded at run
        // time (the CUDA runtime loads it this way). A missing file is an `Err`.
        let loaded = unsafe { Library::new(path) };
        let library = ManuallyDrop::new(loaded.map_err(|e| {
            HostError::msg(
                AbiError::NotAvailable,
                format!("the CUDA driver library {} could not be loaded: {e}", path.to_string_lossy()),
            )
        })?);
        let lib: &Library = &library;
        let mut driver = Driver {
            // Each field: the type is the prototype of the named symbol in cuda.h (copied in the
            // field's doc), and the library is never unloaded.
            // SAFETY: as just said.
            init: unsafe { symbol(lib, b"cuInit\0") }?,
            // SAFETY: as above.
            driver_get_version: unsafe { symbol(lib, b"cuDriverGetVersion\0") }?,
            // SAFETY: as above.
            device_get_count: unsafe { symbol(lib, b"cuDeviceGetCount\0") }?,
            // SAFETY: as above.
            device_get: unsafe { symbol(lib, b"cuDeviceGet\0") }?,
            // SAFETY: as above (the attribute enum is a C `int`).
            device_get_attribute: unsafe { symbol(lib, b"cuDeviceGetAttribute\0") }?,
            // SAFETY: as above.
            device_get_name: unsafe { symbol(lib, b"cuDeviceGetName\0") }?,
            // SAFETY: as above.
            primary_ctx_retain: unsafe { symbol(lib, b"cuDevicePrimaryCtxRetain\0") }?,
            // SAFETY: as above.
            primary_ctx_release: unsafe { symbol(lib, b"cuDevicePrimaryCtxRelease_v2\0") }?,
            // SAFETY: as above.
            ctx_push_current: unsafe { symbol(lib, b"cuCtxPushCurrent_v2\0") }?,
            // SAFETY: as above.
            ctx_pop_current: unsafe { symbol(lib, b"cuCtxPopCurrent_v2\0") }?,
            // SAFETY: as above.
            module_load_data_ex: unsafe { symbol(lib, b"cuModuleLoadDataEx\0") }?,
            // SAFETY: as above.
            module_unload: unsafe { symbol(lib, b"cuModuleUnload\0") }?,
            // SAFETY: as above.
            module_get_function: unsafe { symbol(lib, b"cuModuleGetFunction\0") }?,
            // SAFETY: as above.
            stream_create: unsafe { symbol(lib, b"cuStreamCreate\0") }?,
            // SAFETY: as above.
            stream_destroy: unsafe { symbol(lib, b"cuStreamDestroy_v2\0") }?,
            // SAFETY: as above.
            stream_synchronize: unsafe { symbol(lib, b"cuStreamSynchronize\0") }?,
            // SAFETY: as above.
            mem_alloc: unsafe { symbol(lib, b"cuMemAlloc_v2\0") }?,
            // SAFETY: as above.
            mem_free: unsafe { symbol(lib, b"cuMemFree_v2\0") }?,
            // SAFETY: as above.
            memcpy_htod_async: unsafe { symbol(lib, b"cuMemcpyHtoDAsync_v2\0") }?,
            // SAFETY: as above.
            memcpy_dtoh_async: unsafe { symbol(lib, b"cuMemcpyDtoHAsync_v2\0") }?,
            // SAFETY: as above.
            launch_kernel: unsafe { symbol(lib, b"cuLaunchKernel\0") }?,
            // SAFETY: as above; a driver older than 12.4 lacks it, which is not an error.
            func_get_param_info: unsafe { symbol(lib, b"cuFuncGetParamInfo\0") }.ok(),
            version: 0,
            _library: library,
        };
        // SAFETY: `cuInit` takes a flags value (must be 0) and no pointers.
        let code = unsafe { (driver.init)(0) };
        check("cuInit", code, Phase::Setup)?;
        let mut version: c_int = 0;
        // SAFETY: `version` is a valid, writable `int` for the call.
        let code = unsafe { (driver.driver_get_version)(&mut version) };
        check("cuDriverGetVersion", code, Phase::Setup)?;
        driver.version = version;
        Ok(driver)
    }
}
