//! The driver's entry points as `cuda.h` declares them, looked up at run time: the table
//! ([`Api`]), the constants this crate passes or tests for, and the opaque [`Handle`].
//!
//! Nothing here decides anything: [`result`](super::result) calls each entry point once and
//! turns its `CUresult` into a `Result`, and the handles of [`driver`](super) own what those
//! calls make.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::ptr;

use cust::sys::CUdevice;
use libloading::Library;

/// A `CUresult`, as the C `int` it is.
pub(crate) type CuResult = c_int;

/// `CUDA_SUCCESS`.
pub(crate) const CUDA_SUCCESS: i32 = 0;
/// `CUDA_ERROR_INVALID_VALUE`: also what `cuFuncGetParamInfo` returns past the last parameter.
pub(crate) const CUDA_ERROR_INVALID_VALUE: i32 = 1;
/// `CUDA_ERROR_INVALID_CONTEXT`: also what the launch path answers, without calling the driver,
/// for a stream or kernel used with another context's [`Current`](super::Current).
pub(crate) const CUDA_ERROR_INVALID_CONTEXT: i32 = 201;
/// `CUDA_ERROR_NOT_FOUND`: e.g. `cuModuleGetFunction` for an entry the module lacks.
pub(crate) const CUDA_ERROR_NOT_FOUND: i32 = 500;

/// `CU_MEMHOSTALLOC_DEVICEMAP`: host memory mapped into the device's address space.
pub(crate) const MEMHOSTALLOC_DEVICEMAP: c_uint = 0x02;
/// `CU_STREAM_NON_BLOCKING`: a stream that does not wait for the legacy default stream.
pub(crate) const STREAM_NON_BLOCKING: c_uint = 0x01;

/// An opaque driver handle (`CUcontext`, `CUmodule`, `CUfunction`, `CUstream`), kept as its
/// exposed address, so that every type holding one is `Send` and `Sync` without an `unsafe
/// impl` (Rust never dereferences it); never null once made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handle(usize);

impl Handle {
    /// The handle the driver wrote into `raw`.
    pub(crate) fn from_raw(raw: *mut c_void) -> Handle {
        Handle(raw.expose_provenance())
    }

    /// The handle as the pointer the driver takes.
    pub(crate) fn raw(self) -> *mut c_void {
        ptr::with_exposed_provenance_mut(self.0)
    }
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
        pub(crate) struct Api {
            $( pub(crate) $field: unsafe extern "C" fn($($arg),*) -> CuResult, )*
            $( pub(crate) $ofield: Option<unsafe extern "C" fn($($oarg),*) -> CuResult>, )*
        }

        impl Api {
            /// Looks every entry point up in `library`; `Err` names a missing required one.
            ///
            /// # Safety
            ///
            /// `library` must stay loaded for as long as the table is used.
            pub(crate) unsafe fn resolve(library: &Library) -> Result<Api, &'static str> {
                Ok(Api {
                    $(
                        // SAFETY: the table below is the one place each symbol's name and
                        // prototype are written, side by side, copied from cuda.h; the caller
                        // keeps the library loaded while the table is used.
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
