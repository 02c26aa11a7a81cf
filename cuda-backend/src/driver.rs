//! The CUDA driver layer: the one module that calls the driver.
//!
//! Everything the launcher needs from `libcuda` is here as safe, typed functions and RAII
//! handles: the driver library ([`Driver`], loaded at run time and never unloaded), a device
//! ([`Device`]), its primary context ([`PrimaryContext`], retained on creation and released on
//! drop) made current for a scope ([`Current`], popped on drop), a kernel ([`Kernel`]: a
//! module loaded from PTX with its entry function, unloaded on drop), a stream ([`Stream`],
//! destroyed on drop), a device buffer ([`DeviceBuffer`], freed on drop) and a word of host
//! memory the device writes ([`MappedFlag`], freed on drop). Every other module
//! of the crate denies `unsafe_code`; this one and the parameter table
//! ([`storage`](crate::storage)) hold the crate's `unsafe`.
//!
//! ## Why not cust's wrappers
//!
//! cust 0.3.2 returns the driver's `CUresult` through cust_raw's `#[repr(i32)]` Rust enum of
//! the CUDA 11.4 headers, so a code that a newer driver returns and 11.4 lacked would be
//! undefined behaviour before any `match` could see it (see [`cu_error`](crate::cu_error));
//! its `Drop`s do the same, and its `Display` asks the driver for the message. Linking
//! `libcuda` would also make a binary that cannot start where the library is missing, where
//! the ABI wants a clean `NotAvailable`. So cust supplies only the handle and attribute
//! types; the functions are looked up here with `dlsym` (through `libloading`), declared with
//! the prototypes of `cuda.h`, each returning the `CUresult` as a plain `i32`. Where `cuda.h`
//! maps a name to a `_v2` symbol, the `_v2` symbol is the one looked up.
//!
//! ## Which library
//!
//! [`Driver::load`] takes a path: the system's `libcuda.so.1` ([`DRIVER_LIBRARY`]) by default,
//! or another library (Jetson's `tegra` directory, a driver in an unusual place, the emulated
//! driver of `cuda-emulator/` in the tests). Each library is loaded and initialised
//! (`cuInit`) once per process, and never unloaded: libcuda starts threads in `cuInit` and does
//! not support `dlclose`.
//!
//! ## Handles and threads
//!
//! The driver API is thread-safe: its handles may be used from any thread. They are opaque
//! (Rust never dereferences them), so this module keeps them as their exposed addresses,
//! which makes every type here `Send` and `Sync` without an `unsafe impl`. What the types do
//! guarantee is lifetime: a [`Current`] borrows its context, a function is reachable only
//! through the [`Kernel`] that owns its module, and an operation that needs a current context
//! takes the [`Current`] that proves one.
//!
//! A resource's `Drop` makes its own context current around the call that frees it. A context
//! that has been reset ([`PrimaryContext::reset`]) destroyed everything made in it: such
//! resources are given up with [`Kernel::abandon`], [`Stream::abandon`],
//! [`DeviceBuffer::abandon`] and [`MappedFlag::abandon`] instead of dropped.

// One of the crate's two modules with `unsafe` (see the crate docs).
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{CStr, OsStr, OsString, c_char, c_int, c_uint, c_void};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::{Mutex, PoisonError};

use cust::sys::{CUdevice, CUdevice_attribute, CUfunction_attribute, CUjit_option};
use kernel_args::{HostError, LaunchShape};
use kernel_args_core::GuestWindow;
use libloading::Library;

use crate::cu_error::{
    CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS, Phase, cu_error_name, driver_error,
};
use crate::setup::SetupError;
use crate::storage::KernelParams;

/// The driver library's name on Linux.
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// A `CUresult`, as the C `int` it is.
type CuResult = c_int;

/// An opaque driver handle (`CUcontext`, `CUmodule`, `CUfunction`, `CUstream`), kept as its
/// exposed address; never null once made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Handle(usize);

impl Handle {
    /// The handle the driver wrote into `raw`.
    fn from_raw(raw: *mut c_void) -> Handle {
        Handle(raw.expose_provenance())
    }

    /// The handle as the pointer the driver takes.
    fn raw(self) -> *mut c_void {
        ptr::with_exposed_provenance_mut(self.0)
    }
}

/// A driver call that did not return `CUDA_SUCCESS`: which call, and the code it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CuError {
    /// The driver function, as `cuda.h` names it.
    pub call: &'static str,
    /// The `CUresult` it returned (any `int`: codes newer than this crate's table too).
    pub code: i32,
}

impl CuError {
    /// The host error for this failure in `phase` (see [`cu_error`](crate::cu_error)).
    pub fn at(self, phase: Phase) -> HostError {
        driver_error(self.call, self.code, phase)
    }

    /// The embedder's error for this failure while opening a device.
    pub fn setup(self) -> SetupError {
        SetupError::Call { call: self.call, code: self.code, name: cu_error_name(self.code) }
    }
}

/// `Ok(())` for `CUDA_SUCCESS`, else the [`CuError`] of `call`.
fn check(call: &'static str, code: CuResult) -> Result<(), CuError> {
    if code == CUDA_SUCCESS { Ok(()) } else { Err(CuError { call, code }) }
}

/// Declares the driver's function table once: each entry's field, the `cuda.h` symbol it is
/// looked up as, and the prototype it is called with. Required entries must be present;
/// optional ones (newer than some drivers) are `None` where the library lacks them.
macro_rules! driver_table {
    (
        required { $( $field:ident = $symbol:literal : fn($($arg:ty),* $(,)?); )* }
        optional { $( $ofield:ident = $osymbol:literal : fn($($oarg:ty),* $(,)?); )* }
    ) => {
        /// The driver's entry points, with `cuda.h`'s prototypes.
        struct Api {
            $( $field: unsafe extern "C" fn($($arg),*) -> CuResult, )*
            $( $ofield: Option<unsafe extern "C" fn($($oarg),*) -> CuResult>, )*
        }

        impl Api {
            /// Looks every entry point up in `library`; `Err` names a missing required one.
            fn resolve(library: &Library) -> Result<Api, &'static str> {
                Ok(Api {
                    $(
                        // SAFETY: the table above is the one place each symbol's name and
                        // prototype are written, side by side, copied from cuda.h; the library
                        // is never unloaded (it is kept in `Driver` for the process's life), so
                        // the pointer stays valid.
                        $field: unsafe { symbol(library, concat!($symbol, "\0")) }.ok_or($symbol)?,
                    )*
                    $(
                        // SAFETY: as for the required entries; a driver too old to have the
                        // symbol gives `None`.
                        $ofield: unsafe { symbol(library, concat!($osymbol, "\0")) },
                    )*
                })
            }
        }
    };
}

driver_table! {
    required {
        init = "cuInit": fn(c_uint);
        driver_get_version = "cuDriverGetVersion": fn(*mut c_int);
        device_get_count = "cuDeviceGetCount": fn(*mut c_int);
        device_get = "cuDeviceGet": fn(*mut CUdevice, c_int);
        // The attribute is the C enum `CUdevice_attribute`, an `int`.
        device_get_attribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, CUdevice);
        device_get_name = "cuDeviceGetName": fn(*mut c_char, c_int, CUdevice);
        primary_ctx_retain = "cuDevicePrimaryCtxRetain": fn(*mut *mut c_void, CUdevice);
        primary_ctx_release = "cuDevicePrimaryCtxRelease_v2": fn(CUdevice);
        primary_ctx_reset = "cuDevicePrimaryCtxReset_v2": fn(CUdevice);
        ctx_push_current = "cuCtxPushCurrent_v2": fn(*mut c_void);
        ctx_pop_current = "cuCtxPopCurrent_v2": fn(*mut *mut c_void);
        // (module, image, numOptions, options (`CUjit_option`, an `int`), optionValues)
        module_load_data_ex = "cuModuleLoadDataEx":
            fn(*mut *mut c_void, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
        module_unload = "cuModuleUnload": fn(*mut c_void);
        module_get_function = "cuModuleGetFunction": fn(*mut *mut c_void, *mut c_void, *const c_char);
        // (value, attribute (`CUfunction_attribute`, an `int`), function)
        func_get_attribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, *mut c_void);
        // (function, attribute, value)
        func_set_attribute = "cuFuncSetAttribute": fn(*mut c_void, c_int, c_int);
        stream_create = "cuStreamCreate": fn(*mut *mut c_void, c_uint);
        stream_destroy = "cuStreamDestroy_v2": fn(*mut c_void);
        stream_synchronize = "cuStreamSynchronize": fn(*mut c_void);
        // (dptr, bytesize)
        mem_alloc = "cuMemAlloc_v2": fn(*mut u64, usize);
        mem_free = "cuMemFree_v2": fn(u64);
        // (pp, bytesize, Flags)
        mem_host_alloc = "cuMemHostAlloc": fn(*mut *mut c_void, usize, c_uint);
        // (pdptr, p, Flags)
        mem_host_get_device_pointer = "cuMemHostGetDevicePointer_v2": fn(*mut u64, *mut c_void, c_uint);
        mem_free_host = "cuMemFreeHost": fn(*mut c_void);
        // (dst, src, bytes, stream)
        memcpy_htod_async = "cuMemcpyHtoDAsync_v2": fn(u64, *const c_void, usize, *mut c_void);
        memcpy_dtoh_async = "cuMemcpyDtoHAsync_v2": fn(*mut c_void, u64, usize, *mut c_void);
        // (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
        //  hStream, kernelParams, extra)
        launch_kernel = "cuLaunchKernel": fn(
            *mut c_void, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, *mut c_void,
            *mut *mut c_void, *mut *mut c_void,
        );
    }
    optional {
        // CUDA 12.4: (func, paramIndex, paramOffset, paramSize).
        func_get_param_info = "cuFuncGetParamInfo": fn(*mut c_void, usize, *mut usize, *mut usize);
        // Newer drivers: (func, paramCount).
        func_get_param_count = "cuFuncGetParamCount": fn(*mut c_void, *mut usize);
    }
}

/// Looks `name` (NUL-terminated) up in `library` as a `T`; `None` when it is missing.
///
/// # Safety
///
/// `T` must be the `unsafe extern "C" fn` type of `name`'s C prototype, and `library` must
/// stay loaded for as long as the returned pointer is used.
unsafe fn symbol<T: Copy>(library: &Library, name: &'static str) -> Option<T> {
    // SAFETY: the caller guarantees that `T` is the symbol's prototype and that the library
    // outlives the pointer.
    let found = unsafe { library.get::<T>(name.as_bytes()) };
    found.ok().map(|s| *s)
}

/// A loaded and initialised driver library, for the life of the process.
pub struct Driver {
    api: Api,
    /// `cuDriverGetVersion`'s answer (e.g. 12040 for CUDA 12.4).
    version: i32,
    /// Kept loaded for the life of the process (never `dlclose`d).
    _library: ManuallyDrop<Library>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").field("version", &self.version).finish_non_exhaustive()
    }
}

/// The drivers loaded so far, by path, with the outcome of loading each (a failure to load
/// or to initialise is the same on every later try).
type Loaded = HashMap<OsString, Result<&'static Driver, SetupError>>;

impl Driver {
    /// The driver library at `path` (a file name such as [`DRIVER_LIBRARY`] is looked up as
    /// `dlopen` does), loaded and initialised (`cuInit(0)`) on first use, once per process.
    ///
    /// # Errors
    ///
    /// [`SetupError::Driver`] when the library cannot be loaded, lacks a required function, or
    /// `cuInit` or `cuDriverGetVersion` fails (no device, no kernel driver, a stub library);
    /// the same error on every later call for that path.
    pub fn load(path: &OsStr) -> Result<&'static Driver, SetupError> {
        static LOADED: Mutex<Option<Loaded>> = Mutex::new(None);
        let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        let loaded = loaded.get_or_insert_with(HashMap::new);
        if let Some(outcome) = loaded.get(path) {
            return outcome.clone();
        }
        // Leaked on purpose: the driver lives as long as the process.
        let outcome = Driver::open(path).map(|driver| &*Box::leak(Box::new(driver)));
        loaded.insert(path.to_owned(), outcome.clone());
        outcome
    }

    fn open(path: &OsStr) -> Result<Driver, SetupError> {
        let refused =
            |reason: String| SetupError::Driver { library: path.to_string_lossy().into_owned(), reason };
        // SAFETY: loading runs the library's initialisers; a CUDA driver library is made to be
        // loaded at run time (the CUDA runtime loads libcuda this way). A missing file is an
        // `Err`.
        let library =
            unsafe { Library::new(path) }.map_err(|e| refused(format!("it could not be loaded: {e}")))?;
        let library = ManuallyDrop::new(library);
        let api = Api::resolve(&library)
            .map_err(|missing| refused(format!("it has no {missing}: driver too old")))?;
        // SAFETY: `cuInit` takes a flags value (must be 0) and no pointer.
        let code = unsafe { (api.init)(0) };
        check("cuInit", code).map_err(|e| refused(e.setup().to_string()))?;
        let mut version: c_int = 0;
        // SAFETY: `version` is a writable `int` for the call.
        let code = unsafe { (api.driver_get_version)(&mut version) };
        check("cuDriverGetVersion", code).map_err(|e| refused(e.setup().to_string()))?;
        Ok(Driver { api, version, _library: library })
    }

    /// `cuDriverGetVersion`: 1000 × major + 10 × minor (12040 for CUDA 12.4).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Whether the driver has `cuFuncGetParamInfo` (CUDA 12.4 and later).
    pub fn has_param_info(&self) -> bool {
        self.api.func_get_param_info.is_some()
    }

    /// Whether the driver exports `cuFuncGetParamCount` (CUDA 13.2).
    pub fn has_param_count(&self) -> bool {
        self.api.func_get_param_count.is_some()
    }

    /// `cuDeviceGetCount`.
    pub fn device_count(&self) -> Result<i32, CuError> {
        let mut count: c_int = 0;
        // SAFETY: `count` is a writable `int`; the driver is initialised.
        let code = unsafe { (self.api.device_get_count)(&mut count) };
        check("cuDeviceGetCount", code)?;
        Ok(count)
    }

    /// `cuDeviceGet`: the device of `ordinal`.
    pub fn device(&'static self, ordinal: i32) -> Result<Device, CuError> {
        let mut device: CUdevice = 0;
        // SAFETY: `device` is writable; the driver checks the ordinal.
        let code = unsafe { (self.api.device_get)(&mut device, ordinal) };
        check("cuDeviceGet", code)?;
        Ok(Device { driver: self, raw: device })
    }
}

/// A CUDA device of a [`Driver`].
#[derive(Debug, Clone, Copy)]
pub struct Device {
    driver: &'static Driver,
    raw: CUdevice,
}

impl Device {
    /// `cuDeviceGetAttribute`.
    pub fn attribute(&self, attribute: CUdevice_attribute) -> Result<i32, CuError> {
        let mut value: c_int = 0;
        // SAFETY: `value` is writable; the attribute is a number of cuda.h's enum (from cust's
        // table), passed as the C enum's `int`; `raw` came from `cuDeviceGet`.
        let code =
            unsafe { (self.driver.api.device_get_attribute)(&mut value, attribute as c_int, self.raw) };
        check("cuDeviceGetAttribute", code)?;
        Ok(value)
    }

    /// `cuDeviceGetName`.
    pub fn name(&self) -> Result<String, CuError> {
        let mut name = [0 as c_char; 256];
        // SAFETY: `name` is writable for the length passed.
        let code = unsafe { (self.driver.api.device_get_name)(name.as_mut_ptr(), 256, self.raw) };
        check("cuDeviceGetName", code)?;
        // `c_char` is `i8` or `u8` by platform: take the bytes as they are.
        let bytes: Vec<u8> = name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `cuDevicePrimaryCtxRetain`: the device's primary context, released on drop.
    pub fn retain_primary_context(&self) -> Result<PrimaryContext, CuError> {
        let context = self.retain()?;
        Ok(PrimaryContext { device: *self, context, resets: 0 })
    }

    fn retain(&self) -> Result<Handle, CuError> {
        let mut context: *mut c_void = ptr::null_mut();
        // SAFETY: `context` is writable; `raw` came from `cuDeviceGet`.
        let code = unsafe { (self.driver.api.primary_ctx_retain)(&mut context, self.raw) };
        check("cuDevicePrimaryCtxRetain", code)?;
        Ok(Handle::from_raw(context))
    }

    fn release(&self) -> Result<(), CuError> {
        // SAFETY: called once per successful retain of this device's primary context.
        let code = unsafe { (self.driver.api.primary_ctx_release)(self.raw) };
        check("cuDevicePrimaryCtxRelease", code)
    }
}

/// A device's primary context, retained once by this value and released when it drops.
#[derive(Debug)]
pub struct PrimaryContext {
    device: Device,
    context: Handle,
    /// How often it was reset: what was made before a reset is not of the context now, even
    /// where the driver gives the fresh context the old handle.
    resets: u64,
}

impl PrimaryContext {
    /// Makes the context current on this thread until the returned guard drops.
    pub fn push(&self) -> Result<Current<'_>, CuError> {
        push(self.device.driver, self.context)?;
        Ok(Current { context: self, _this_thread: PhantomData })
    }

    /// Recovers the context from a sticky error (`cuDevicePrimaryCtxReset`): everything made
    /// in it (modules, streams, device memory) is destroyed, and this value then holds the
    /// device's fresh primary context. Resources made in the old one must be
    /// [abandoned](Kernel::abandon), not dropped. Nothing may be running in the context.
    pub fn reset(&mut self) -> Result<(), CuError> {
        let driver = self.device.driver;
        // SAFETY: `raw` came from `cuDeviceGet`; the caller has ended all work in the context.
        let code = unsafe { (driver.api.primary_ctx_reset)(self.device.raw) };
        check("cuDevicePrimaryCtxReset", code)?;
        // A reset does not release the retain this value holds: retain the fresh context to
        // learn its handle, then give that extra retain back.
        let fresh = self.device.retain()?;
        self.context = fresh;
        self.resets = self.resets.wrapping_add(1);
        self.device.release()
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // Nothing is left to undo if the driver refuses.
        let _ = self.device.release();
    }
}

/// Pushes `context` onto this thread's stack of current contexts.
fn push(driver: &Driver, context: Handle) -> Result<(), CuError> {
    // SAFETY: `context` is a context handle the driver gave out; a stale one is refused by
    // the driver with an error code.
    let code = unsafe { (driver.api.ctx_push_current)(context.raw()) };
    check("cuCtxPushCurrent", code)
}

/// Pops this thread's current context.
fn pop(driver: &Driver) {
    let mut popped: *mut c_void = ptr::null_mut();
    // SAFETY: `popped` is writable. Called after a successful `push` on this thread; a
    // failure leaves nothing to undo.
    let _ = unsafe { (driver.api.ctx_pop_current)(&mut popped) };
}

/// A primary context made current on this thread; popped on drop. Operations that need a
/// current context take one as proof, and those on a stream or kernel check that it is their
/// context's.
///
/// Not `Send`: a context is current on one thread, and the pop on drop must run on the thread
/// that pushed it.
#[derive(Debug)]
pub struct Current<'c> {
    context: &'c PrimaryContext,
    _this_thread: PhantomData<*const ()>,
}

impl Current<'_> {
    /// `Ok` when `made_in` is the context this proof makes current; else
    /// `CUDA_ERROR_INVALID_CONTEXT` for `call`, which is then never made (a stream or kernel of
    /// a context that was reset since, or of another device).
    fn check(&self, made_in: MadeIn, call: &'static str) -> Result<(), CuError> {
        if self.made_in() == made_in {
            Ok(())
        } else {
            Err(CuError { call, code: CUDA_ERROR_INVALID_CONTEXT })
        }
    }

    /// What a stream or kernel made under this proof records of its context.
    fn made_in(&self) -> MadeIn {
        MadeIn { context: self.handle(), resets: self.context.resets }
    }

    fn driver(&self) -> &'static Driver {
        self.context.device.driver
    }

    fn handle(&self) -> Handle {
        self.context.context
    }
}

impl Drop for Current<'_> {
    fn drop(&mut self) {
        pop(self.driver());
    }
}

/// Makes `context` current around `f` (for the `Drop`s of resources, which hold no
/// [`Current`]); `f` is skipped when the push fails.
fn with_context(driver: &Driver, context: Handle, f: impl FnOnce()) {
    if push(driver, context).is_ok() {
        f();
        pop(driver);
    }
}

/// Bytes of the JIT's error log kept for a refused module.
const JIT_LOG_BYTES: usize = 4096;

/// Why [`Kernel::load`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelLoadError {
    /// `cuModuleLoadDataEx` refused the PTX; `log` is the JIT's error log (may be empty).
    Module {
        /// The failed call.
        error: CuError,
        /// The JIT compiler's error log, trimmed.
        log: String,
    },
    /// `cuModuleGetFunction` did not find the entry.
    Entry(CuError),
}

/// The context a stream or kernel was made in: its handle, and how often it had been reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MadeIn {
    context: Handle,
    resets: u64,
}

/// A module loaded from PTX and its entry function; the module is unloaded on drop.
#[derive(Debug)]
pub struct Kernel {
    driver: &'static Driver,
    context: Handle,
    made_in: MadeIn,
    module: Handle,
    function: Handle,
}

impl Kernel {
    /// Loads the module of `ptx` into the current context (`cuModuleLoadDataEx`, with the
    /// JIT's error log) and looks up `entry` in it.
    pub fn load(current: &Current<'_>, ptx: &CStr, entry: &CStr) -> Result<Kernel, KernelLoadError> {
        let driver = current.driver();
        let mut module: *mut c_void = ptr::null_mut();
        let mut log = [0u8; JIT_LOG_BYTES];
        let mut options = [
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER as c_int,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES as c_int,
        ];
        // The size option's value is the size itself, carried in the pointer.
        let mut values = [log.as_mut_ptr().cast::<c_void>(), ptr::without_provenance_mut(JIT_LOG_BYTES)];
        // SAFETY: `module` is writable; the image is NUL-terminated PTX text that lives for the
        // call; two options with their two values, the log buffer writable for the size given;
        // a context is current (`current`).
        let code = unsafe {
            (driver.api.module_load_data_ex)(
                &mut module,
                ptx.as_ptr().cast::<c_void>(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Err(error) = check("cuModuleLoadDataEx", code) {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let log = String::from_utf8_lossy(log.get(..end).unwrap_or(&[])).trim().to_owned();
            return Err(KernelLoadError::Module { error, log });
        }
        let module = Handle::from_raw(module);
        // From here on, `Drop` unloads the module.
        let mut kernel = Kernel {
            driver,
            context: current.handle(),
            made_in: current.made_in(),
            module,
            function: Handle(0),
        };
        let mut function: *mut c_void = ptr::null_mut();
        // SAFETY: `function` is writable; the module was just loaded in the current context;
        // the name is NUL-terminated.
        let code = unsafe { (driver.api.module_get_function)(&mut function, module.raw(), entry.as_ptr()) };
        check("cuModuleGetFunction", code).map_err(KernelLoadError::Entry)?;
        kernel.function = Handle::from_raw(function);
        Ok(kernel)
    }

    /// The kernel's parameter sizes from the driver, in order, and whether the driver counted
    /// them: `cuFuncGetParamCount` where the driver has it, then `cuFuncGetParamInfo` for each
    /// parameter; without a count, parameters are asked for until the driver answers
    /// `CUDA_ERROR_INVALID_VALUE` past the last one. `None` when the driver has no
    /// `cuFuncGetParamInfo` or answers anything else, and when it answers
    /// `CUDA_ERROR_INVALID_VALUE` for parameter 0 without a count, which cannot tell "no
    /// parameters" from "cannot describe this function".
    pub fn driver_param_sizes(&self) -> Option<(Vec<usize>, bool)> {
        /// A kernel's parameters take at most 32 764 bytes, so no kernel has more parameters.
        const MAX_PARAMS: usize = 32_768;
        let info = self.driver.api.func_get_param_info?;
        let count = self.driver.api.func_get_param_count.and_then(|count_fn| {
            let mut count = 0usize;
            // SAFETY: the function is loaded (its module lives as long as `self`); `count` is
            // writable.
            let code = unsafe { count_fn(self.function.raw(), &mut count) };
            (code == CUDA_SUCCESS && count <= MAX_PARAMS).then_some(count)
        });
        let mut sizes = Vec::new();
        for index in 0..count.unwrap_or(MAX_PARAMS) {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: the function is loaded (its module lives as long as `self`); `offset`
            // and `size` are writable.
            let code = unsafe { info(self.function.raw(), index, &mut offset, &mut size) };
            match code {
                CUDA_SUCCESS => sizes.push(size),
                // Past the last parameter, when the count is not known; at index 0 it cannot be
                // told from a function the driver cannot describe.
                CUDA_ERROR_INVALID_VALUE if count.is_none() && index > 0 => return Some((sizes, false)),
                _ => return None,
            }
        }
        count.map(|_| (sizes, true))
    }

    /// `cuFuncGetAttribute`.
    pub fn attribute(&self, current: &Current<'_>, attribute: CUfunction_attribute) -> Result<i32, CuError> {
        let _ = current;
        let mut value: c_int = 0;
        // SAFETY: `value` is writable; the function is loaded (its module lives as long as
        // `self`); the attribute is a number of cuda.h's enum passed as its `int`.
        let code = unsafe {
            (self.driver.api.func_get_attribute)(&mut value, attribute as c_int, self.function.raw())
        };
        check("cuFuncGetAttribute", code)?;
        Ok(value)
    }

    /// `cuFuncSetAttribute`.
    pub fn set_attribute(
        &self,
        current: &Current<'_>,
        attribute: CUfunction_attribute,
        value: i32,
    ) -> Result<(), CuError> {
        let _ = current;
        // SAFETY: the function is loaded (its module lives as long as `self`); the attribute
        // is a number of cuda.h's enum passed as its `int`.
        let code =
            unsafe { (self.driver.api.func_set_attribute)(self.function.raw(), attribute as c_int, value) };
        check("cuFuncSetAttribute", code)
    }

    /// Gives the kernel up without unloading it: its context was reset, which unloaded it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let (driver, module) = (self.driver, self.module);
        with_context(driver, self.context, || {
            // SAFETY: the module was loaded by `load` in this context and is unloaded once,
            // here; nothing refers to its function any more (it is reachable only through
            // `self`).
            let _ = unsafe { (driver.api.module_unload)(module.raw()) };
        });
    }
}

/// A stream, destroyed on drop.
#[derive(Debug)]
pub struct Stream {
    driver: &'static Driver,
    context: Handle,
    made_in: MadeIn,
    stream: Handle,
}

/// One staged window's copy: the guest memory window, the device buffer it is staged in, and
/// where in the buffer.
#[derive(Debug, Clone, Copy)]
pub struct Transfer<'a, 'm> {
    /// The guest memory, readable (copies in) or writable (copies out).
    pub window: &'a GuestWindow<'m>,
    /// The device buffer, at least `at` plus the window's length long.
    pub buffer: &'a DeviceBuffer,
    /// The byte offset in the buffer where the window's copy starts.
    pub at: usize,
}

impl Transfer<'_, '_> {
    /// The device address of the window's copy, when it fits its buffer.
    fn device(&self) -> Option<u64> {
        let end = self.at.checked_add(self.window.len() as usize)?;
        (end <= self.buffer.len).then(|| self.buffer.address.saturating_add(self.at as u64))
    }
}

impl Stream {
    /// `cuStreamCreate` in the current context, non-blocking.
    pub fn new(current: &Current<'_>) -> Result<Stream, CuError> {
        let driver = current.driver();
        let mut stream: *mut c_void = ptr::null_mut();
        // SAFETY: `stream` is writable; flag 1 is CU_STREAM_NON_BLOCKING; a context is current.
        let code = unsafe { (driver.api.stream_create)(&mut stream, 1) };
        check("cuStreamCreate", code)?;
        Ok(Stream {
            driver,
            context: current.handle(),
            made_in: current.made_in(),
            stream: Handle::from_raw(stream),
        })
    }

    /// `cuStreamSynchronize`.
    fn synchronize(&self) -> Result<(), CuError> {
        // SAFETY: the stream is live (destroyed only by `Drop`).
        let code = unsafe { (self.driver.api.stream_synchronize)(self.stream.raw()) };
        check("cuStreamSynchronize", code)
    }

    /// Copies each transfer's window into its buffer and waits for the copies
    /// (`cuMemcpyHtoDAsync`, then `cuStreamSynchronize`, which also runs on an error so that no
    /// copy still reads guest memory when this returns).
    ///
    /// # Errors
    ///
    /// The first failed call; a `current` that is not the stream's context is
    /// `CUDA_ERROR_INVALID_CONTEXT`, and a window without a host pointer or longer than its
    /// buffer `CUDA_ERROR_INVALID_VALUE`, both before anything is copied.
    pub fn upload(&self, current: &Current<'_>, transfers: &[Transfer<'_, '_>]) -> Result<(), CuError> {
        current.check(self.made_in, "cuMemcpyHtoDAsync")?;
        let refused = CuError { call: "cuMemcpyHtoDAsync", code: CUDA_ERROR_INVALID_VALUE };
        if transfers.iter().any(|t| t.window.host_ptr().is_none() || t.device().is_none()) {
            return Err(refused);
        }
        let mut result = Ok(());
        for t in transfers {
            let Some(host) = t.window.host_ptr().filter(|_| !t.window.is_empty()) else { continue };
            let Some(device) = t.device() else { continue };
            // SAFETY: `host` is the window's host pointer, readable for the window's length
            // for the window's lifetime (the core's `GuestWindow` contract), which lasts past
            // this call; the stream is synchronised below, before returning, so the copy never
            // reads guest memory afterwards; the buffer holds the window's length from `at`
            // (checked above) and belongs to this stream's context, which is current.
            let code = unsafe {
                (self.driver.api.memcpy_htod_async)(
                    device,
                    host.cast::<c_void>(),
                    t.window.len() as usize,
                    self.stream.raw(),
                )
            };
            result = check("cuMemcpyHtoDAsync", code);
            if result.is_err() {
                break;
            }
        }
        let synced = self.synchronize();
        result.and(synced)
    }

    /// Writes zeros over all of `buffer` and waits for it (`cuMemcpyHtoDAsync` from a zeroed
    /// host buffer, then `cuStreamSynchronize`, which also runs on an error): device memory
    /// fresh from `cuMemAlloc` holds whatever was there before, another tenant's bytes among
    /// them.
    ///
    /// # Errors
    ///
    /// The first failed call; a `current` that is not the stream's context is
    /// `CUDA_ERROR_INVALID_CONTEXT`.
    pub fn zero(&self, current: &Current<'_>, buffer: &DeviceBuffer) -> Result<(), CuError> {
        current.check(self.made_in, "cuMemcpyHtoDAsync")?;
        let zeros = vec![0u8; buffer.len];
        // SAFETY: `zeros` is `buffer.len` readable bytes that live until the end of this
        // function, which synchronises the stream before returning; the buffer holds that many
        // bytes and belongs to the current context.
        let code = unsafe {
            (self.driver.api.memcpy_htod_async)(
                buffer.address,
                zeros.as_ptr().cast::<c_void>(),
                buffer.len,
                self.stream.raw(),
            )
        };
        let result = check("cuMemcpyHtoDAsync", code);
        let synced = self.synchronize();
        result.and(synced)
    }

    /// Launches `kernel` with `params`, then copies each transfer's buffer back into its
    /// window, and waits for all of it (`cuLaunchKernel`, `cuMemcpyDtoHAsync` each,
    /// `cuStreamSynchronize`). Once anything is enqueued, the stream is synchronised before this
    /// returns, on every path: nothing the kernel or a copy does can reach guest memory, or
    /// this call's stack, after the call.
    ///
    /// # Errors
    ///
    /// The first failed call; a `current` that is not the stream's and the kernel's context is
    /// `CUDA_ERROR_INVALID_CONTEXT`, and a window without a writable host pointer or longer than
    /// its buffer `CUDA_ERROR_INVALID_VALUE`, both before the launch.
    pub fn launch(
        &self,
        current: &Current<'_>,
        kernel: &Kernel,
        shape: &LaunchShape,
        params: &mut impl KernelParams,
        copy_back: &[Transfer<'_, '_>],
    ) -> Result<(), CuError> {
        current.check(self.made_in, "cuLaunchKernel")?;
        current.check(kernel.made_in, "cuLaunchKernel")?;
        let refused = CuError { call: "cuMemcpyDtoHAsync", code: CUDA_ERROR_INVALID_VALUE };
        if copy_back.iter().any(|t| t.window.host_ptr_mut().is_none() || t.device().is_none()) {
            return Err(refused);
        }
        // SAFETY: the function is loaded (its module lives as long as `kernel`) in the current
        // context; `params` is a table made by `KernelParamStorage` (a `ParamTable`: one
        // initialised pointer per argument, each to an 8-aligned slot holding the value, for a
        // kernel whose count and sizes were checked against the arguments; or a `PaddedTable`:
        // `MAX_KERNEL_PARAMS` pointers, each to a value followed by `MAX_PARAM_BYTES` of its
        // scratch), alive through the call, during which the driver copies every value; the
        // pointer values in it are device buffers of this context or host pointers of guest
        // windows borrowed for longer than this call, which synchronises before returning;
        // `extra` is null.
        let code = unsafe {
            (self.driver.api.launch_kernel)(
                kernel.function.raw(),
                shape.grid[0],
                shape.grid[1],
                shape.grid[2],
                shape.block[0],
                shape.block[1],
                shape.block[2],
                shape.shared_mem_bytes,
                self.stream.raw(),
                params.kernel_params(),
                ptr::null_mut(),
            )
        };
        check("cuLaunchKernel", code)?;
        let mut result = Ok(());
        for t in copy_back {
            let Some(host) = t.window.host_ptr_mut().filter(|_| !t.window.is_empty()) else { continue };
            let Some(device) = t.device() else { continue };
            // SAFETY: `host` is the window's writable host pointer, valid for the window's
            // length for its lifetime (memory borrowed exclusively, the core's `GuestWindow`
            // contract), which lasts past this call; the stream is synchronised below before
            // returning; the buffer holds the window's length from `at` and belongs to the
            // current context.
            let code = unsafe {
                (self.driver.api.memcpy_dtoh_async)(
                    host.cast::<c_void>(),
                    device,
                    t.window.len() as usize,
                    self.stream.raw(),
                )
            };
            result = check("cuMemcpyDtoHAsync", code);
            if result.is_err() {
                break;
            }
        }
        let synced = self.synchronize();
        result.and(synced)
    }

    /// Gives the stream up without destroying it: its context was reset, which destroyed it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let (driver, stream) = (self.driver, self.stream);
        with_context(driver, self.context, || {
            // SAFETY: the stream was made by `new` in this context and is destroyed once,
            // here; every use of it synchronised before returning, so it is idle.
            let _ = unsafe { (driver.api.stream_destroy)(stream.raw()) };
        });
    }
}

/// Device memory (`cuMemAlloc`), freed on drop.
#[derive(Debug)]
pub struct DeviceBuffer {
    driver: &'static Driver,
    context: Handle,
    address: u64,
    len: usize,
}

impl DeviceBuffer {
    /// `cuMemAlloc` of `len` bytes (at least 1) in the current context.
    pub fn alloc(current: &Current<'_>, len: usize) -> Result<DeviceBuffer, CuError> {
        let driver = current.driver();
        let len = len.max(1);
        let mut address = 0u64;
        // SAFETY: `address` is writable; `len` is at least 1; a context is current.
        let code = unsafe { (driver.api.mem_alloc)(&mut address, len) };
        check("cuMemAlloc", code)?;
        Ok(DeviceBuffer { driver, context: current.handle(), address, len })
    }

    /// The buffer's device address.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Gives the buffer up without freeing it: its context was reset, which freed it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let (driver, address) = (self.driver, self.address);
        with_context(driver, self.context, || {
            // SAFETY: the buffer was allocated by `alloc` in this context and is freed once,
            // here; every copy and launch that used it synchronised before returning.
            let _ = unsafe { (driver.api.mem_free)(address) };
        });
    }
}

/// `CU_MEMHOSTALLOC_DEVICEMAP`: host memory mapped into the device's address space.
const MEMHOSTALLOC_DEVICEMAP: c_uint = 0x02;

/// A 32-bit word of page-locked host memory mapped into the device's address space
/// (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`, `cuMemHostGetDevicePointer`), freed on
/// drop (`cuMemFreeHost`): a kernel writes it at [`address`](Self::address), and the host
/// reads it with no copy. The host clears it before a launch and reads it after the stream is
/// synchronised, so no access of the host's overlaps the kernel's.
#[derive(Debug)]
pub struct MappedFlag {
    driver: &'static Driver,
    context: Handle,
    /// The host address (provenance exposed, so that the type stays `Send`).
    host: usize,
    device: u64,
}

impl MappedFlag {
    /// Allocates the word in the current context.
    ///
    /// # Errors
    ///
    /// The failed call (`cuMemHostAlloc`, or `cuMemHostGetDevicePointer`, after which the
    /// memory is freed again).
    pub fn alloc(current: &Current<'_>) -> Result<MappedFlag, CuError> {
        let driver = current.driver();
        let mut host: *mut c_void = ptr::null_mut();
        // SAFETY: `host` is writable for a pointer; 4 bytes; a context is current.
        let code =
            unsafe { (driver.api.mem_host_alloc)(&mut host, size_of::<u32>(), MEMHOSTALLOC_DEVICEMAP) };
        check("cuMemHostAlloc", code)?;
        // Owned from here: an error below frees it.
        let mut flag =
            MappedFlag { driver, context: current.handle(), host: host.expose_provenance(), device: 0 };
        // SAFETY: `device` is writable; `host` starts a mapped allocation of the current context.
        let code = unsafe { (driver.api.mem_host_get_device_pointer)(&mut flag.device, host, 0) };
        check("cuMemHostGetDevicePointer", code)?;
        if !flag.host.is_multiple_of(std::mem::align_of::<u32>()) {
            return Err(CuError { call: "cuMemHostAlloc", code: CUDA_ERROR_INVALID_VALUE });
        }
        Ok(flag)
    }

    /// The address a kernel writes the word at.
    pub fn address(&self) -> u64 {
        self.device
    }

    /// Sets the word to 0. Call it only while no kernel that may write it runs.
    pub fn clear(&self) {
        // SAFETY: `host` starts a live allocation of at least 4 bytes, aligned to 4 (checked in
        // `alloc`), which this value owns; no kernel writes it now (this method's contract),
        // and a volatile write is not elided or merged.
        unsafe { ptr::with_exposed_provenance_mut::<u32>(self.host).write_volatile(0) };
    }

    /// The word as the last kernel left it. Call it only after the kernel's stream is
    /// synchronised.
    pub fn read(&self) -> u32 {
        // SAFETY: as in `clear`; the kernel that wrote it has finished (this method's
        // contract), and a volatile read is not served from a stale copy.
        unsafe { ptr::with_exposed_provenance::<u32>(self.host).read_volatile() }
    }

    /// Gives the word up without freeing it: its context was reset, which freed it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for MappedFlag {
    fn drop(&mut self) {
        let (driver, host) = (self.driver, self.host);
        with_context(driver, self.context, || {
            // SAFETY: the word was allocated by `alloc` in this context and is freed once,
            // here; every launch that wrote it synchronised before returning.
            let _ = unsafe { (driver.api.mem_free_host)(ptr::with_exposed_provenance_mut(host)) };
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Send`-ness of `T`, decided at compile time by method resolution: the inherent-looking
    /// `IsSend` impl applies only when `T: Send`, else autoref falls back to `NotSend`.
    struct Probe<T>(PhantomData<T>);
    trait IsSend {
        fn is_send(&self) -> bool {
            true
        }
    }
    impl<T: Send> IsSend for Probe<T> {}
    trait NotSend {
        fn is_send(&self) -> bool {
            false
        }
    }
    impl<T> NotSend for &Probe<T> {}

    #[test]
    #[expect(
        clippy::needless_borrow,
        reason = "the borrow is the probe: for a T that is not Send, the method resolves on &Probe<T>"
    )]
    fn the_current_context_proof_stays_on_its_thread() {
        assert!(!(&Probe::<Current<'static>>(PhantomData)).is_send());
        // The probe itself tells the two apart.
        assert!((&Probe::<PrimaryContext>(PhantomData)).is_send());
    }

    /// A stream made in a context that was then reset, used with the fresh context's proof: the
    /// launch path answers CUDA_ERROR_INVALID_CONTEXT without calling the driver. Needs a
    /// driver: the emulated one, as `KARGS_CUDA_DRIVER` names it (40-cuda.sh).
    #[test]
    fn a_stream_refuses_another_contexts_proof() {
        let test = "a_stream_refuses_another_contexts_proof";
        let Some(path) = std::env::var_os("KARGS_CUDA_DRIVER").filter(|p| !p.is_empty()) else {
            println!("SKIPPED {test}: KARGS_CUDA_DRIVER is not set: this test needs a driver");
            return;
        };
        let driver = Driver::load(&path).unwrap();
        let device = driver.device(0).unwrap();
        let mut primary = device.retain_primary_context().unwrap();
        let stream = {
            let current = primary.push().unwrap();
            Stream::new(&current).unwrap()
        };
        primary.reset().unwrap();
        let current = primary.push().unwrap();
        let err = stream.upload(&current, &[]).unwrap_err();
        assert_eq!((err.call, err.code), ("cuMemcpyHtoDAsync", CUDA_ERROR_INVALID_CONTEXT));
        let fresh = Stream::new(&current).unwrap();
        assert_eq!(fresh.upload(&current, &[]), Ok(()));
        drop((fresh, current));
        // The reset destroyed the old stream.
        stream.abandon();
    }
}
