//! One thin function per driver call: it passes its arguments to the entry point of
//! [`sys::Api`](super::sys::Api) and returns the driver's `CUresult` as a `Result` with the
//! driver's own error, [`CuError`] (which call, which code). No function here keeps state,
//! retries or decides what a failure means; the ABI's and the embedder's errors are made from a
//! [`CuError`] above the driver layer (`cu_error.rs`).
//!
//! A function is `unsafe` where an argument can make the call undefined behaviour (a handle
//! that is no longer live, a pointer the driver reads or writes, memory an asynchronous copy
//! still uses after the call returns); its `# Safety` section says what the caller
//! guarantees. A function whose every argument is a value the driver checks is safe.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::ptr;

use cust::sys::{CUdevice, CUjit_option};

use super::sys::{Api, CUDA_SUCCESS, CuResult, Handle, MEMHOSTALLOC_DEVICEMAP, STREAM_NON_BLOCKING};

/// A driver call that did not return `CUDA_SUCCESS`: which call, and the code it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CuError {
    /// The driver function, as `cuda.h` names it.
    pub call: &'static str,
    /// The `CUresult` it returned (any `int`: codes newer than this crate's table too).
    pub code: i32,
}

/// `Ok(())` for `CUDA_SUCCESS`, else the [`CuError`] of `call`.
fn check(call: &'static str, code: CuResult) -> Result<(), CuError> {
    if code == CUDA_SUCCESS { Ok(()) } else { Err(CuError { call, code }) }
}

/// Bytes of the JIT's error log kept for a refused module.
const JIT_LOG_BYTES: usize = 4096;

/// `cuInit(0)`.
pub(crate) fn init(api: &Api) -> Result<(), CuError> {
    // SAFETY: `cuInit` takes a flags value (must be 0) and no pointer.
    check("cuInit", unsafe { (api.init)(0) })
}

/// `cuDriverGetVersion`.
pub(crate) fn driver_get_version(api: &Api) -> Result<i32, CuError> {
    let mut version: c_int = 0;
    // SAFETY: `version` is a writable `int` for the call.
    check("cuDriverGetVersion", unsafe { (api.driver_get_version)(&mut version) })?;
    Ok(version)
}

/// `cuDeviceGetCount`.
pub(crate) fn device_get_count(api: &Api) -> Result<i32, CuError> {
    let mut count: c_int = 0;
    // SAFETY: `count` is a writable `int`.
    check("cuDeviceGetCount", unsafe { (api.device_get_count)(&mut count) })?;
    Ok(count)
}

/// `cuDeviceGet`.
pub(crate) fn device_get(api: &Api, ordinal: i32) -> Result<CUdevice, CuError> {
    let mut device: CUdevice = 0;
    // SAFETY: `device` is writable; the driver checks the ordinal.
    check("cuDeviceGet", unsafe { (api.device_get)(&mut device, ordinal) })?;
    Ok(device)
}

/// `cuDeviceGetAttribute`, with the attribute as its `cuda.h` number.
pub(crate) fn device_get_attribute(api: &Api, attribute: c_int, device: CUdevice) -> Result<i32, CuError> {
    let mut value: c_int = 0;
    // SAFETY: `value` is writable; the driver checks the attribute and the device.
    check("cuDeviceGetAttribute", unsafe { (api.device_get_attribute)(&mut value, attribute, device) })?;
    Ok(value)
}

/// `cuDeviceGetName`, as the bytes before the NUL.
pub(crate) fn device_get_name(api: &Api, device: CUdevice) -> Result<Vec<u8>, CuError> {
    let mut name = [0 as c_char; 256];
    // SAFETY: `name` is writable for the length passed; the driver checks the device.
    check("cuDeviceGetName", unsafe { (api.device_get_name)(name.as_mut_ptr(), 256, device) })?;
    // `c_char` is `i8` or `u8` by platform: take the bytes as they are.
    Ok(name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect())
}

/// `cuDevicePrimaryCtxRetain`.
pub(crate) fn primary_ctx_retain(api: &Api, device: CUdevice) -> Result<Handle, CuError> {
    let mut context: *mut c_void = ptr::null_mut();
    // SAFETY: `context` is writable; the driver checks the device.
    check("cuDevicePrimaryCtxRetain", unsafe { (api.primary_ctx_retain)(&mut context, device) })?;
    Ok(Handle::from_raw(context))
}

/// `cuDevicePrimaryCtxRelease`.
///
/// # Safety
///
/// Once per successful [`primary_ctx_retain`] of `device`: a release the caller does not own
/// would destroy a context others still use.
pub(crate) unsafe fn primary_ctx_release(api: &Api, device: CUdevice) -> Result<(), CuError> {
    // SAFETY: the caller owns the retain this gives back.
    check("cuDevicePrimaryCtxRelease", unsafe { (api.primary_ctx_release)(device) })
}

/// `cuDevicePrimaryCtxReset`: destroys the context and everything made in it, and stops what
/// runs in it (CUDA's only way to end a kernel).
///
/// # Safety
///
/// Nothing made in the context may be used or freed afterwards: the reset destroys it all.
pub(crate) unsafe fn primary_ctx_reset(api: &Api, device: CUdevice) -> Result<(), CuError> {
    // SAFETY: the caller has ended all work in the context and gives up what was made in it.
    check("cuDevicePrimaryCtxReset", unsafe { (api.primary_ctx_reset)(device) })
}

/// `cuCtxPushCurrent`.
///
/// # Safety
///
/// `context` is a context the driver gave out and that is still retained.
pub(crate) unsafe fn ctx_push_current(api: &Api, context: Handle) -> Result<(), CuError> {
    // SAFETY: the caller guarantees a live context handle.
    check("cuCtxPushCurrent", unsafe { (api.ctx_push_current)(context.raw()) })
}

/// `cuCtxPopCurrent`; the popped context is not returned.
pub(crate) fn ctx_pop_current(api: &Api) -> Result<(), CuError> {
    let mut popped: *mut c_void = ptr::null_mut();
    // SAFETY: `popped` is writable; with no context current the driver answers an error.
    check("cuCtxPopCurrent", unsafe { (api.ctx_pop_current)(&mut popped) })
}

/// `cuModuleLoadDataEx` of NUL-terminated PTX, with the JIT's error log, in the current
/// context. `Err` carries the failed call and the log, trimmed (may be empty).
pub(crate) fn module_load_data(api: &Api, ptx: &CStr) -> Result<Handle, (CuError, String)> {
    let mut module: *mut c_void = ptr::null_mut();
    let mut log = [0u8; JIT_LOG_BYTES];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER as c_int,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES as c_int,
    ];
    // The size option's value is the size itself, carried in the pointer.
    let mut values = [log.as_mut_ptr().cast::<c_void>(), ptr::without_provenance_mut(JIT_LOG_BYTES)];
    // SAFETY: `module` is writable; the image is NUL-terminated PTX text that lives for the
    // call; two options with their two values, the log buffer writable for the size given.
    // Without a current context the driver answers an error.
    let code = unsafe {
        (api.module_load_data_ex)(
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
        return Err((error, log));
    }
    Ok(Handle::from_raw(module))
}

/// `cuModuleUnload`.
///
/// # Safety
///
/// `module` is loaded, in the current context, unloaded once here, and no kernel of it runs or
/// is used afterwards.
pub(crate) unsafe fn module_unload(api: &Api, module: Handle) -> Result<(), CuError> {
    // SAFETY: the caller guarantees a live module nothing uses any more.
    check("cuModuleUnload", unsafe { (api.module_unload)(module.raw()) })
}

/// `cuModuleGetFunction`.
///
/// # Safety
///
/// `module` is loaded; the function returned lives only as long as it.
pub(crate) unsafe fn module_get_function(api: &Api, module: Handle, name: &CStr) -> Result<Handle, CuError> {
    let mut function: *mut c_void = ptr::null_mut();
    // SAFETY: `function` is writable; the caller guarantees a live module; the name is
    // NUL-terminated.
    let code = unsafe { (api.module_get_function)(&mut function, module.raw(), name.as_ptr()) };
    check("cuModuleGetFunction", code)?;
    Ok(Handle::from_raw(function))
}

/// `cuFuncGetParamCount`, where the driver has it (`None` where it does not).
///
/// # Safety
///
/// `function` belongs to a loaded module.
pub(crate) unsafe fn func_get_param_count(api: &Api, function: Handle) -> Option<Result<usize, CuError>> {
    let count_fn = api.func_get_param_count?;
    let mut count = 0usize;
    // SAFETY: the caller guarantees a live function; `count` is writable.
    let code = unsafe { count_fn(function.raw(), &mut count) };
    Some(check("cuFuncGetParamCount", code).map(|()| count))
}

/// `cuFuncGetParamInfo`'s size of parameter `index`, where the driver has the call (`None`
/// where it does not).
///
/// # Safety
///
/// `function` belongs to a loaded module.
pub(crate) unsafe fn func_get_param_size(
    api: &Api,
    function: Handle,
    index: usize,
) -> Option<Result<usize, CuError>> {
    let info = api.func_get_param_info?;
    let (mut offset, mut size) = (0usize, 0usize);
    // SAFETY: the caller guarantees a live function; `offset` and `size` are writable.
    let code = unsafe { info(function.raw(), index, &mut offset, &mut size) };
    Some(check("cuFuncGetParamInfo", code).map(|()| size))
}

/// `cuFuncGetAttribute`, with the attribute as its `cuda.h` number.
///
/// # Safety
///
/// `function` belongs to a loaded module.
pub(crate) unsafe fn func_get_attribute(
    api: &Api,
    function: Handle,
    attribute: c_int,
) -> Result<i32, CuError> {
    let mut value: c_int = 0;
    // SAFETY: `value` is writable; the caller guarantees a live function; the driver checks
    // the attribute.
    check("cuFuncGetAttribute", unsafe { (api.func_get_attribute)(&mut value, attribute, function.raw()) })?;
    Ok(value)
}

/// `cuFuncSetAttribute`, with the attribute as its `cuda.h` number.
///
/// # Safety
///
/// `function` belongs to a loaded module.
pub(crate) unsafe fn func_set_attribute(
    api: &Api,
    function: Handle,
    attribute: c_int,
    value: i32,
) -> Result<(), CuError> {
    // SAFETY: the caller guarantees a live function; the driver checks attribute and value.
    check("cuFuncSetAttribute", unsafe { (api.func_set_attribute)(function.raw(), attribute, value) })
}

/// `cuStreamCreate`, non-blocking, in the current context.
pub(crate) fn stream_create(api: &Api) -> Result<Handle, CuError> {
    let mut stream: *mut c_void = ptr::null_mut();
    // SAFETY: `stream` is writable; without a current context the driver answers an error.
    check("cuStreamCreate", unsafe { (api.stream_create)(&mut stream, STREAM_NON_BLOCKING) })?;
    Ok(Handle::from_raw(stream))
}

/// `cuStreamDestroy`.
///
/// # Safety
///
/// `stream` is live, destroyed once here, and nothing uses it afterwards.
pub(crate) unsafe fn stream_destroy(api: &Api, stream: Handle) -> Result<(), CuError> {
    // SAFETY: the caller guarantees a live stream nothing uses any more.
    check("cuStreamDestroy", unsafe { (api.stream_destroy)(stream.raw()) })
}

/// `cuStreamSynchronize`.
///
/// # Safety
///
/// `stream` is live.
pub(crate) unsafe fn stream_synchronize(api: &Api, stream: Handle) -> Result<(), CuError> {
    // SAFETY: the caller guarantees a live stream.
    check("cuStreamSynchronize", unsafe { (api.stream_synchronize)(stream.raw()) })
}

/// `cuMemAlloc` of `len` bytes in the current context.
pub(crate) fn mem_alloc(api: &Api, len: usize) -> Result<u64, CuError> {
    let mut address = 0u64;
    // SAFETY: `address` is writable; without a current context the driver answers an error.
    check("cuMemAlloc", unsafe { (api.mem_alloc)(&mut address, len) })?;
    Ok(address)
}

/// `cuMemFree`.
///
/// # Safety
///
/// `address` was allocated by [`mem_alloc`], is freed once here, and no copy or kernel that
/// uses it is still running.
pub(crate) unsafe fn mem_free(api: &Api, address: u64) -> Result<(), CuError> {
    // SAFETY: the caller guarantees an allocation nothing uses any more.
    check("cuMemFree", unsafe { (api.mem_free)(address) })
}

/// `cuMemHostAlloc` of `len` bytes with `CU_MEMHOSTALLOC_DEVICEMAP`, in the current context:
/// page-locked host memory the device reaches. The address is returned with its provenance
/// exposed.
pub(crate) fn mem_host_alloc_mapped(api: &Api, len: usize) -> Result<usize, CuError> {
    let mut host: *mut c_void = ptr::null_mut();
    // SAFETY: `host` is writable for a pointer; without a current context the driver answers
    // an error.
    check("cuMemHostAlloc", unsafe { (api.mem_host_alloc)(&mut host, len, MEMHOSTALLOC_DEVICEMAP) })?;
    Ok(host.expose_provenance())
}

/// `cuMemHostGetDevicePointer`: the device address of mapped host memory.
///
/// # Safety
///
/// `host` starts a live allocation of [`mem_host_alloc_mapped`].
pub(crate) unsafe fn mem_host_get_device_pointer(api: &Api, host: usize) -> Result<u64, CuError> {
    let mut device = 0u64;
    // SAFETY: `device` is writable; the caller guarantees a live mapped allocation.
    let code =
        unsafe { (api.mem_host_get_device_pointer)(&mut device, ptr::with_exposed_provenance_mut(host), 0) };
    check("cuMemHostGetDevicePointer", code)?;
    Ok(device)
}

/// `cuMemFreeHost`.
///
/// # Safety
///
/// `host` was allocated by [`mem_host_alloc_mapped`], is freed once here, and no kernel that
/// writes it is still running.
pub(crate) unsafe fn mem_free_host(api: &Api, host: usize) -> Result<(), CuError> {
    // SAFETY: the caller guarantees an allocation nothing uses any more.
    check("cuMemFreeHost", unsafe { (api.mem_free_host)(ptr::with_exposed_provenance_mut(host)) })
}

/// `cuMemcpyHtoDAsync`: enqueues a copy of `len` bytes from `src` to device address `dst`.
///
/// # Safety
///
/// `src` is readable for `len` bytes until the stream is synchronised; `dst` is device memory
/// of the stream's context, `len` bytes long from there, live until then; `stream` is live.
pub(crate) unsafe fn memcpy_htod_async(
    api: &Api,
    dst: u64,
    src: *const u8,
    len: usize,
    stream: Handle,
) -> Result<(), CuError> {
    // SAFETY: the caller guarantees both ends for as long as the copy may run.
    check("cuMemcpyHtoDAsync", unsafe {
        (api.memcpy_htod_async)(dst, src.cast::<c_void>(), len, stream.raw())
    })
}

/// `cuMemcpyDtoHAsync`: enqueues a copy of `len` bytes from device address `src` to `dst`.
///
/// # Safety
///
/// `dst` is writable for `len` bytes, and nothing else reads or writes them, until the stream
/// is synchronised; `src` is device memory of the stream's context, `len` bytes long from
/// there, live until then; `stream` is live.
pub(crate) unsafe fn memcpy_dtoh_async(
    api: &Api,
    dst: *mut u8,
    src: u64,
    len: usize,
    stream: Handle,
) -> Result<(), CuError> {
    // SAFETY: the caller guarantees both ends for as long as the copy may run.
    check("cuMemcpyDtoHAsync", unsafe {
        (api.memcpy_dtoh_async)(dst.cast::<c_void>(), src, len, stream.raw())
    })
}

/// `cuLaunchKernel` without `extra`: enqueues `function` on `stream`.
///
/// # Safety
///
/// `function` belongs to a module loaded in the current context, which stays loaded until the
/// stream is synchronised; `params` is the `void**` table of the function's parameters, each
/// pointer to a readable value of the parameter's size (the driver copies them during the
/// call); every address among those values that the kernel dereferences is memory the kernel
/// may read and write until the stream is synchronised; `stream` is live, of the current
/// context.
pub(crate) unsafe fn launch_kernel(
    api: &Api,
    function: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem_bytes: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
) -> Result<(), CuError> {
    let [gx, gy, gz] = grid;
    let [bx, by, bz] = block;
    // SAFETY: the caller guarantees the function, the table, the memory the kernel reaches and
    // the stream; `extra` is null.
    let code = unsafe {
        (api.launch_kernel)(
            function.raw(),
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            shared_mem_bytes,
            stream.raw(),
            params,
            ptr::null_mut(),
        )
    };
    check("cuLaunchKernel", code)
}
