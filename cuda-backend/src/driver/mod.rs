//! The CUDA driver layer: the one module that calls the driver, in three layers as cudarc
//! has them.
//!
//! - [`sys`]: the driver's entry points with `cuda.h`'s prototypes ([`sys::Api`], looked up at
//!   run time), the constants this crate passes, and the opaque handle type;
//! - [`result`]: one thin function per call, returning the driver's own error, [`CuError`]
//!   (which call, which code); `unsafe` where an argument can make the call undefined
//!   behaviour;
//! - this module: the RAII handles that own what those calls make. The driver library
//!   ([`Driver`], loaded at run time and never unloaded), a device ([`Device`]), its primary
//!   context ([`PrimaryContext`], retained on creation and released on drop) made current for a
//!   scope ([`Current`], popped on drop), a kernel ([`Kernel`]: a module loaded from PTX with its
//!   entry function, unloaded on drop), a stream ([`Stream`], destroyed on drop) and the work
//!   enqueued on it ([`Queue`], only inside [`Stream::scope`], which synchronises before it
//!   returns), a device buffer ([`DeviceBuffer`], freed on drop) and a word of host memory the
//!   device writes ([`MappedFlag`], freed on drop).
//!
//! Nothing here is launch policy (what is copied, the fence's flag, what a failure means to a
//! guest): the launcher composes these handles in safe code, and the ABI's and the embedder's
//! errors are made from a [`CuError`] above this layer (`cu_error.rs`). Every other module
//! of the crate denies `unsafe_code`; this one and the parameter table
//! ([`storage`](crate::storage)) hold the crate's `unsafe`.
//!
//! ## Why not cust's wrappers
//!
//! cust 0.3.2 returns the driver's `CUresult` through cust_raw's `#[repr(i32)]` Rust enum of
//! the CUDA 11.4 headers, so a code that a newer driver returns and 11.4 lacked would be
//! undefined behaviour before any `match` could see it (see `cu_error.rs`);
//! its `Drop`s do the same, and its `Display` asks the driver for the message. Linking
//! `libcuda` would also make a binary that cannot start where the library is missing, where
//! the ABI wants a clean `NotAvailable`. So cust supplies only the handle and attribute
//! types; the functions are looked up with `dlsym` (through `libloading`), declared with
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
//! (Rust never dereferences them), so the handles keep them as their exposed addresses,
//! which makes every type here `Send` and `Sync` without an `unsafe impl`. What the types do
//! guarantee is lifetime: a [`Current`] borrows its context, a function is reachable only
//! through the [`Kernel`] that owns its module, an operation that needs a current context
//! takes the [`Current`] that proves one, and memory an asynchronous copy or a kernel uses is
//! borrowed for longer than the [`Stream::scope`] that synchronises it.
//!
//! A resource's `Drop` makes its own context current around the call that frees it. A context
//! that has been reset ([`PrimaryContext::reset`]) destroyed everything made in it: such
//! resources are given up with [`Kernel::abandon`], [`Stream::abandon`],
//! [`DeviceBuffer::abandon`] and [`MappedFlag::abandon`] instead of dropped.

// One of the crate's two modules with `unsafe` (see the crate docs).
#![allow(unsafe_code)]

pub(crate) mod result;
pub(crate) mod sys;

use std::collections::HashMap;
use std::ffi::{CStr, OsStr, OsString, c_int};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::{Mutex, PoisonError};

use cust::sys::{CUdevice, CUdevice_attribute, CUfunction_attribute};
use kernel_args_core::GuestWindow;
use libloading::Library;

pub use self::result::CuError;
use self::sys::{Api, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE, Handle};
use crate::storage::KernelParams;

/// The driver library's name on Linux.
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// Why [`Driver::load`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The library could not be loaded (the loader's words).
    Open {
        /// The library's path or name, as given.
        library: String,
        /// The loader's error.
        reason: String,
    },
    /// The library lacks an entry point this crate needs.
    Missing {
        /// The library's path or name, as given.
        library: String,
        /// The missing symbol.
        symbol: &'static str,
    },
    /// `cuInit` or `cuDriverGetVersion` failed (no device, no kernel driver, a stub library).
    Call {
        /// The library's path or name, as given.
        library: String,
        /// The failed call.
        error: CuError,
    },
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
type Loaded = HashMap<OsString, Result<&'static Driver, LoadError>>;

impl Driver {
    /// The driver library at `path` (a file name such as [`DRIVER_LIBRARY`] is looked up as
    /// `dlopen` does), loaded and initialised (`cuInit(0)`) on first use, once per process.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] when the library cannot be loaded, lacks a required function, or
    /// `cuInit` or `cuDriverGetVersion` fails; the same error on every later call for that
    /// path.
    pub fn load(path: &OsStr) -> Result<&'static Driver, LoadError> {
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

    fn open(path: &OsStr) -> Result<Driver, LoadError> {
        let library_name = || path.to_string_lossy().into_owned();
        // SAFETY: loading runs the library's initialisers; a CUDA driver library is made to be
        // loaded at run time (the CUDA runtime loads libcuda this way). A missing file is an
        // `Err`.
        let library = unsafe { Library::new(path) }
            .map_err(|e| LoadError::Open { library: library_name(), reason: e.to_string() })?;
        let library = ManuallyDrop::new(library);
        // SAFETY: the library is kept in the `Driver` with the table, never unloaded.
        let api = unsafe { Api::resolve(&library) }
            .map_err(|symbol| LoadError::Missing { library: library_name(), symbol })?;
        let call = |error| LoadError::Call { library: library_name(), error };
        result::init(&api).map_err(call)?;
        let version = result::driver_get_version(&api).map_err(call)?;
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
        result::device_get_count(&self.api)
    }

    /// `cuDeviceGet`: the device of `ordinal`.
    pub fn device(&'static self, ordinal: i32) -> Result<Device, CuError> {
        Ok(Device { driver: self, raw: result::device_get(&self.api, ordinal)? })
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
        result::device_get_attribute(&self.driver.api, attribute as c_int, self.raw)
    }

    /// `cuDeviceGetName`.
    pub fn name(&self) -> Result<String, CuError> {
        let bytes = result::device_get_name(&self.driver.api, self.raw)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `cuDevicePrimaryCtxRetain`: the device's primary context, released on drop.
    pub fn retain_primary_context(&self) -> Result<PrimaryContext, CuError> {
        let context = result::primary_ctx_retain(&self.driver.api, self.raw)?;
        Ok(PrimaryContext { device: *self, context, resets: 0 })
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
        let (api, raw) = (&self.device.driver.api, self.device.raw);
        // SAFETY: the caller has ended all work in the context (this method's contract), and
        // what was made in it is abandoned, never freed.
        unsafe { result::primary_ctx_reset(api, raw) }?;
        // A reset does not release the retain this value holds: retain the fresh context to
        // learn its handle, then give that extra retain back.
        let fresh = result::primary_ctx_retain(api, raw)?;
        self.context = fresh;
        self.resets = self.resets.wrapping_add(1);
        // SAFETY: gives back the retain just made.
        unsafe { result::primary_ctx_release(api, raw) }
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: gives back the retain this value made (and kept across resets); nothing is
        // left to undo if the driver refuses.
        let _ = unsafe { result::primary_ctx_release(&self.device.driver.api, self.device.raw) };
    }
}

/// Pushes `context` onto this thread's stack of current contexts.
fn push(driver: &Driver, context: Handle) -> Result<(), CuError> {
    // SAFETY: `context` is the handle a `PrimaryContext` holds while it keeps its retain, or
    // the context a resource was made in and that the resource's owner still retains.
    unsafe { result::ctx_push_current(&driver.api, context) }
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
        // Called after a successful push on this thread; a failure leaves nothing to undo.
        let _ = result::ctx_pop_current(&self.driver().api);
    }
}

/// Makes `context` current around `f` (for the `Drop`s of resources, which hold no
/// [`Current`]); `f` is skipped when the push fails.
fn with_context(driver: &Driver, context: Handle, f: impl FnOnce()) {
    if push(driver, context).is_ok() {
        f();
        let _ = result::ctx_pop_current(&driver.api);
    }
}

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
    made_in: MadeIn,
    module: Handle,
    function: Handle,
}

impl Kernel {
    /// Loads the module of `ptx` into the current context (`cuModuleLoadDataEx`, with the
    /// JIT's error log) and looks up `entry` in it.
    pub fn load(current: &Current<'_>, ptx: &CStr, entry: &CStr) -> Result<Kernel, KernelLoadError> {
        let driver = current.driver();
        let module = result::module_load_data(&driver.api, ptx)
            .map_err(|(error, log)| KernelLoadError::Module { error, log })?;
        // From here on, `Drop` unloads the module. The function is the module's handle until
        // the entry is found, and never used before.
        let mut kernel = Kernel { driver, made_in: current.made_in(), module, function: module };
        // SAFETY: the module was just loaded; the function is kept only in `kernel`, which
        // unloads the module when it drops.
        kernel.function = unsafe { result::module_get_function(&driver.api, module, entry) }
            .map_err(KernelLoadError::Entry)?;
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
        let api = &self.driver.api;
        api.func_get_param_info?;
        // SAFETY: the function's module lives as long as `self`.
        let count = unsafe { result::func_get_param_count(api, self.function) }
            .and_then(Result::ok)
            .filter(|&count| count <= MAX_PARAMS);
        let mut sizes = Vec::new();
        for index in 0..count.unwrap_or(MAX_PARAMS) {
            // SAFETY: the function's module lives as long as `self`.
            match unsafe { result::func_get_param_size(api, self.function, index) }? {
                Ok(size) => sizes.push(size),
                // Past the last parameter, when the count is not known; at index 0 it cannot be
                // told from a function the driver cannot describe.
                Err(e) if e.code == CUDA_ERROR_INVALID_VALUE && count.is_none() && index > 0 => {
                    return Some((sizes, false));
                }
                Err(_) => return None,
            }
        }
        count.map(|_| (sizes, true))
    }

    /// `cuFuncGetAttribute`.
    pub fn attribute(&self, current: &Current<'_>, attribute: CUfunction_attribute) -> Result<i32, CuError> {
        current.check(self.made_in, "cuFuncGetAttribute")?;
        // SAFETY: the function's module lives as long as `self`.
        unsafe { result::func_get_attribute(&self.driver.api, self.function, attribute as c_int) }
    }

    /// `cuFuncSetAttribute`.
    pub fn set_attribute(
        &self,
        current: &Current<'_>,
        attribute: CUfunction_attribute,
        value: i32,
    ) -> Result<(), CuError> {
        current.check(self.made_in, "cuFuncSetAttribute")?;
        // SAFETY: the function's module lives as long as `self`.
        unsafe { result::func_set_attribute(&self.driver.api, self.function, attribute as c_int, value) }
    }

    /// Gives the kernel up without unloading it: its context was reset, which unloaded it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let (driver, module) = (self.driver, self.module);
        with_context(driver, self.made_in.context, || {
            // SAFETY: the module was loaded by `load` in this context and is unloaded once,
            // here; its function is reachable only through `self`, and every launch of it was
            // in a `Stream::scope` that borrowed `self` and synchronised.
            let _ = unsafe { result::module_unload(&driver.api, module) };
        });
    }
}

/// A launch's grid, block and dynamic shared memory, as `cuLaunchKernel` takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

/// A stream, destroyed on drop. Work is enqueued on it only inside [`Stream::scope`].
#[derive(Debug)]
pub struct Stream {
    driver: &'static Driver,
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

    /// `Ok` when the transfer can copy its window in ([`Queue::upload`]): the window has a host
    /// pointer and fits its buffer; else `CUDA_ERROR_INVALID_VALUE` for `cuMemcpyHtoDAsync`.
    pub fn check_upload(&self) -> Result<(), CuError> {
        self.upload_ends().map(drop)
    }

    /// `Ok` when the transfer can copy its buffer back ([`Queue::download`]): the window has a
    /// writable host pointer and fits its buffer; else `CUDA_ERROR_INVALID_VALUE` for
    /// `cuMemcpyDtoHAsync`.
    pub fn check_download(&self) -> Result<(), CuError> {
        self.download_ends().map(drop)
    }

    /// The window's host pointer and the device address of its copy, for an upload.
    fn upload_ends(&self) -> Result<(*const u8, u64), CuError> {
        self.window
            .host_ptr()
            .zip(self.device())
            .ok_or(CuError { call: "cuMemcpyHtoDAsync", code: CUDA_ERROR_INVALID_VALUE })
    }

    /// The window's writable host pointer and the device address of its copy, for a download.
    fn download_ends(&self) -> Result<(*mut u8, u64), CuError> {
        self.window
            .host_ptr_mut()
            .zip(self.device())
            .ok_or(CuError { call: "cuMemcpyDtoHAsync", code: CUDA_ERROR_INVALID_VALUE })
    }
}

impl Stream {
    /// `cuStreamCreate` in the current context, non-blocking.
    pub fn new(current: &Current<'_>) -> Result<Stream, CuError> {
        let driver = current.driver();
        let stream = result::stream_create(&driver.api)?;
        Ok(Stream { driver, made_in: current.made_in(), stream })
    }

    /// Runs `enqueue` with a [`Queue`] on this stream, then waits for the stream before
    /// returning, on every path: after an error, and when `enqueue` panics. Everything a queued
    /// copy or kernel touches is borrowed for `'q`, which outlives this call, so nothing on the
    /// device can touch it once this returns.
    ///
    /// The wait is `cuStreamSynchronize`. Nothing bounds it but the work itself: CUDA has no
    /// call that stops a running kernel. On an H200 (driver 580), `cuDevicePrimaryCtxReset`
    /// and `cuCtxDestroy` issued while a kernel ran returned only once it had ended
    /// (`scripts/gpu-probe.c`, `docs/gpu-validation.md`).
    ///
    /// # Errors
    ///
    /// The first failed call: `enqueue`'s error, else the wait's (a kernel's fault is reported
    /// there). Where `current` is not the stream's context, every call on the
    /// queue answers `CUDA_ERROR_INVALID_CONTEXT` without calling the driver, and nothing is
    /// waited for.
    pub fn scope<'q, T>(
        &'q self,
        current: &Current<'_>,
        enqueue: impl FnOnce(&Queue<'q>) -> Result<T, CuError>,
    ) -> Result<T, CuError> {
        let usable = current.made_in() == self.made_in;
        let queue = Queue { stream: self, usable, _this_thread: PhantomData };
        if !usable {
            return enqueue(&queue);
        }
        /// Synchronises the stream when dropped: also when `enqueue` unwinds.
        struct Synchronise<'s>(&'s Stream);
        impl Drop for Synchronise<'_> {
            fn drop(&mut self) {
                let _ = self.0.synchronize();
            }
        }
        let guard = Synchronise(self);
        let enqueued = enqueue(&queue);
        std::mem::forget(guard);
        let waited = self.synchronize();
        enqueued.and_then(|value| waited.map(|()| value))
    }

    /// `cuStreamSynchronize`.
    fn synchronize(&self) -> Result<(), CuError> {
        // SAFETY: the stream is live (destroyed only by `Drop`, which `&self` excludes).
        unsafe { result::stream_synchronize(&self.driver.api, self.stream) }
    }

    /// Gives the stream up without destroying it: its context was reset, which destroyed it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let (driver, stream) = (self.driver, self.stream);
        with_context(driver, self.made_in.context, || {
            // SAFETY: the stream was made by `new` in this context and is destroyed once,
            // here; every scope on it synchronised before returning, so it is idle.
            let _ = unsafe { result::stream_destroy(&driver.api, stream) };
        });
    }
}

/// Work enqueued on a [`Stream`], within one [`Stream::scope`]: every copy's memory and every
/// kernel is borrowed for `'q`, which outlives the scope, and the scope synchronises the
/// stream before it ends. Not `Send`: its context is current on this thread.
#[derive(Debug)]
pub struct Queue<'q> {
    stream: &'q Stream,
    /// Whether the scope's current context is the stream's.
    usable: bool,
    _this_thread: PhantomData<*const ()>,
}

impl<'q> Queue<'q> {
    /// `Ok` when the queue's context is current; else `CUDA_ERROR_INVALID_CONTEXT` for `call`.
    fn usable(&self, call: &'static str) -> Result<&'q Stream, CuError> {
        if self.usable { Ok(self.stream) } else { Err(CuError { call, code: CUDA_ERROR_INVALID_CONTEXT }) }
    }

    /// Enqueues the copy of a transfer's window into its buffer (`cuMemcpyHtoDAsync`).
    ///
    /// # Errors
    ///
    /// The driver's; [`Transfer::check_upload`]'s before calling it.
    pub fn upload(&self, transfer: &Transfer<'q, 'q>) -> Result<(), CuError> {
        let stream = self.usable("cuMemcpyHtoDAsync")?;
        let (host, device) = transfer.upload_ends()?;
        if transfer.window.is_empty() {
            return Ok(());
        }
        // SAFETY: `host` is the window's host pointer, readable for the window's length for
        // `'q` (the core's `GuestWindow` contract), which outlives the scope that synchronises
        // the stream; the buffer is borrowed for `'q` too, holds the window's length from `at`
        // (checked above) and belongs to this stream's context, which is current.
        unsafe {
            result::memcpy_htod_async(
                &stream.driver.api,
                device,
                host,
                transfer.window.len() as usize,
                stream.stream,
            )
        }
    }

    /// Enqueues the copy of `bytes` into `buffer` at offset `at` (`cuMemcpyHtoDAsync`).
    ///
    /// # Errors
    ///
    /// The driver's; `CUDA_ERROR_INVALID_VALUE` where `bytes` does not fit the buffer from `at`.
    pub fn upload_bytes(&self, bytes: &'q [u8], buffer: &'q DeviceBuffer, at: usize) -> Result<(), CuError> {
        let stream = self.usable("cuMemcpyHtoDAsync")?;
        if at.checked_add(bytes.len()).is_none_or(|end| end > buffer.len) {
            return Err(CuError { call: "cuMemcpyHtoDAsync", code: CUDA_ERROR_INVALID_VALUE });
        }
        let device = buffer.address.saturating_add(at as u64);
        // SAFETY: `bytes` is borrowed for `'q`, which outlives the scope that synchronises the
        // stream; the buffer is too, holds `bytes.len()` bytes from `at` (checked above) and
        // belongs to this stream's context, which is current.
        unsafe {
            result::memcpy_htod_async(&stream.driver.api, device, bytes.as_ptr(), bytes.len(), stream.stream)
        }
    }

    /// Enqueues the copy of a transfer's buffer back into its window (`cuMemcpyDtoHAsync`).
    ///
    /// # Errors
    ///
    /// The driver's; [`Transfer::check_download`]'s before calling it.
    pub fn download(&self, transfer: &Transfer<'q, 'q>) -> Result<(), CuError> {
        let stream = self.usable("cuMemcpyDtoHAsync")?;
        let (host, device) = transfer.download_ends()?;
        if transfer.window.is_empty() {
            return Ok(());
        }
        // SAFETY: `host` is the window's writable host pointer, valid for the window's length
        // for `'q` (memory borrowed exclusively, the core's `GuestWindow` contract), which
        // outlives the scope that synchronises the stream; the buffer is borrowed for `'q` too,
        // holds the window's length from `at` and belongs to the current context.
        unsafe {
            result::memcpy_dtoh_async(
                &stream.driver.api,
                host,
                device,
                transfer.window.len() as usize,
                stream.stream,
            )
        }
    }

    /// Enqueues `kernel` with `params` (`cuLaunchKernel`).
    ///
    /// # Errors
    ///
    /// The driver's; `CUDA_ERROR_INVALID_CONTEXT` for a kernel of another context than the
    /// stream's, without calling it.
    pub fn launch(
        &self,
        kernel: &'q Kernel,
        dims: &Dims,
        params: &mut impl KernelParams,
    ) -> Result<(), CuError> {
        let stream = self.usable("cuLaunchKernel")?;
        if kernel.made_in != stream.made_in {
            return Err(CuError { call: "cuLaunchKernel", code: CUDA_ERROR_INVALID_CONTEXT });
        }
        // SAFETY: the function's module is borrowed for `'q` (it stays loaded until the scope
        // has synchronised) and was loaded in the stream's context, which is current; `params`
        // is a table made by `KernelParamStorage` (a `ParamTable`: one initialised pointer per
        // argument, each to an 8-aligned slot holding the value, for a kernel whose count and
        // sizes were checked against the arguments; or a `PaddedTable`: `MAX_KERNEL_PARAMS`
        // pointers, each to a value followed by `MAX_PARAM_BYTES` of its scratch), alive
        // through the call, during which the driver copies every value; the pointer values in
        // it are device buffers of this context or host pointers of guest windows, which the
        // launcher borrows for the whole launch, longer than the scope that synchronises.
        unsafe {
            result::launch_kernel(
                &stream.driver.api,
                kernel.function,
                dims.grid,
                dims.block,
                dims.shared_mem_bytes,
                stream.stream,
                params.kernel_params(),
            )
        }
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
        let address = result::mem_alloc(&driver.api, len)?;
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
            // here; every copy and launch that used it borrowed it in a scope that synchronised.
            let _ = unsafe { result::mem_free(&driver.api, address) };
        });
    }
}

/// A 32-bit word of page-locked host memory mapped into the device's address space
/// (`cuMemHostAlloc` with `CU_MEMHOSTALLOC_DEVICEMAP`, `cuMemHostGetDevicePointer`), freed on
/// drop (`cuMemFreeHost`): a kernel writes it at [`address`](Self::address), and the host
/// reads it with no copy. The launcher clears it before a launch and reads it after the stream
/// is synchronised, so no access of the host's overlaps the kernel's.
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
        let host = result::mem_host_alloc_mapped(&driver.api, size_of::<u32>())?;
        // Owned from here: an error below frees it.
        let mut flag = MappedFlag { driver, context: current.handle(), host, device: 0 };
        // SAFETY: `host` starts a mapped allocation just made in the current context.
        flag.device = unsafe { result::mem_host_get_device_pointer(&driver.api, host) }?;
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
            let _ = unsafe { result::mem_free_host(&driver.api, host) };
        });
    }
}

#[cfg(test)]
mod tests;
