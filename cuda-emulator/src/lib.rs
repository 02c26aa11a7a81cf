//! # kernel-args-cuda-emulator
//!
//! An emulated CUDA driver, for tests: a shared library that the CUDA launcher
//! (`kernel-args-cuda` with feature `cuda`) loads with `dlopen` in place of `libcuda.so.1`. It
//! exports every driver entry point the launcher calls, with the driver's semantics, and runs
//! the kernels' own PTX (decoded at load, interpreted thread by thread), so that the real
//! launch path —
//! module load, signature check, staging, the `void**` hand-off, synchronisation, error
//! mapping, fault recovery — runs in every CI run without a GPU. Every device it emulates is
//! named "kernel-args emulated CUDA device (CPU, not a GPU)", so that nothing mistakes it for
//! a GPU; a library starts with one (ordinal 0: pageable memory access through the host's page
//! tables, compute capability 9.0, 227 KiB of opt-in shared memory), and tests add others.
//!
//! This crate is the logic; the libraries are three `cdylib` packages that each expand
//! [`export_driver_api!`] once, one for each driver as it ships:
//!
//! | package | library | `export_driver_api!` | `cuDriverGetVersion` | `cuFuncGetParamInfo` (12.4) | `cuFuncGetParamCount` (13.2) |
//! |---|---|---|---|---|---|
//! | `kernel-args-cuda-emulator-driver` | `libkargs_emulated_cuda.so` (the default) | `cuda_12_8` | 12080 | yes | no |
//! | `kernel-args-cuda-emulator-driver-13-2` | `libkargs_emulated_cuda_13_2.so` | `cuda_13_2` | 13020 | yes | yes |
//! | `kernel-args-cuda-emulator-driver-12-2` | `libkargs_emulated_cuda_12_2.so` | `cuda_12_2` | 12020 | no | no |
//!
//! The default is a 12.8 driver because that is what GPU machines run (every H200 driver from
//! 550 to 580 lacks `cuFuncGetParamCount`): the launcher's usual path there, probing
//! `cuFuncGetParamInfo` until `CUDA_ERROR_INVALID_VALUE`, is the one the launch tests take.
//!
//! Each loaded library has its own state: devices, contexts, memory, counters.
//!
//! ## The public API
//!
//! The driver's entry points ([`api`]), its `CUresult` codes ([`result`]), the control API for
//! tests ([`control`]), a client that loads a built library and calls that control API
//! ([`client`]), [`export_driver_api!`], and at the root the interpreter for tests and fuzzers
//! that run a kernel without the C ABI: [`read_ptx`], [`compile`] (refusing with a typed
//! [`Unsupported`]), [`Program::run`] over a [`DeviceMemory`]'s [`KernelMemory`]. Everything else
//! is the crate's own.
//!
//! ## Where to find what
//!
//! - the entry points' implementations, and where the emulator differs from the driver:
//!   [`api`]; the `CUresult` codes: [`result`];
//! - devices, primary contexts, handles (reused once freed, as a driver reuses them), the
//!   sticky error (every code `cuda.h` documents as sticky, injected ones included:
//!   [`result::STICKY`]): `src/state.rs`;
//! - device memory and the checked accessor every kernel access goes through: `src/memory.rs`
//!   (small allocations share 2 MiB mappings, so an overrun into a neighbour does not fault,
//!   as on a GPU, and is recorded as a crossing instead; new memory holds a poison pattern,
//!   not zeros; freed addresses are handed out again; an access outside every mapping of the
//!   context is the sticky `CUDA_ERROR_ILLEGAL_ADDRESS` (700), one at an address that is not a
//!   multiple of its size the sticky `CUDA_ERROR_MISALIGNED_ADDRESS` (716), as on a GPU);
//! - the PTX reader standing in for ptxas (what is malformed; `.maxntid` and `.reqntid`, which
//!   bound a launch's block): `src/ptx.rs`; a module whose `.target` is above the device's
//!   compute capability is refused at load, as the JIT refuses it ([`api`]);
//! - streams: a worker per stream runs its queued copies and kernels after the call that queued
//!   them, kernels of different streams at once; the slow-device and inline settings:
//!   `src/stream.rs`;
//! - the kernels: each `.entry`'s PTX, decoded when its module loads (an instruction the
//!   interpreter does not run refuses the module, naming the line and, typed, what of it:
//!   [`Unsupported`], `src/exec/error.rs`) and interpreted with separate parameter, global,
//!   shared, local and register state, `bar.sync`, warp shuffles, votes and barriers
//!   (`shfl.sync`, `vote.sync`, `bar.warp.sync`, executed by a warp's threads together),
//!   tensor-core fragments (`wmma` of the
//!   half-precision shapes: each lane loads and stores its own elements, the warp multiplies
//!   together), `cp.async` (complete when issued) and real atomics, each launch counting
//!   the instructions it executed: `src/exec/`;
//! - the control API for tests (`kargs_emu_*`): [`control`]; per-thread fault injection, held
//!   calls and call counts: `src/faults.rs`; a client that loads a built library and calls its
//!   control API, for the launcher's tests: [`client`].
//!
//! ## Unsafe
//!
//! Only where the C ABI needs it: reading and writing the caller's pointers, the memory
//! accesses of kernels and copies, reserving device memory, and (in [`client`]) loading a
//! library and calling it. Every block carries a `// SAFETY:` comment and does one unsafe
//! thing; the exported functions' contract is `cuda.h`'s. No panic crosses the C ABI: each entry point catches one and answers
//! `CUDA_ERROR_UNKNOWN` (999).

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks, clippy::multiple_unsafe_ops_per_block)]

pub mod api;
pub mod client;
pub mod control;
mod exec;
mod faults;
mod memory;
mod ptx;
pub mod result;
mod state;
mod stream;

pub use exec::{
    DecodeError, Globals, KernelParams, LaunchShape, Needed, Outcome, Program, Role, Unsupported, compile,
    module_globals,
};
pub use memory::{Crossing, DeviceMemory, Fault, KernelMemory, POISON};
pub use ptx::{PtxEntry, PtxError, PtxModule, PtxParam, read_ptx};
pub use state::DEVICE_NAME;

/// Defines the exported C symbols of an emulated driver library, each forwarding to this
/// crate: the driver entry points (`cuInit`, ..., `cuLaunchKernel`) and the control API
/// (`kargs_emu_*`). The symbol table is declared here, once.
///
/// `export_driver_api!(cuda_13_2)` exports every entry point and reports version 13020;
/// `export_driver_api!(cuda_12_8)` reports 12080 and does not export `cuFuncGetParamCount`
/// (CUDA 13.2); `export_driver_api!(cuda_12_2)` reports 12020 and exports neither that nor
/// `cuFuncGetParamInfo` (CUDA 12.4). The launcher looks both up with `dlsym` and must find
/// them absent where the driver lacks them.
///
/// Expand it once, at the root of a `cdylib`:
///
/// ```no_run
/// kernel_args_cuda_emulator::export_driver_api!(cuda_12_8);
/// ```
#[macro_export]
macro_rules! export_driver_api {
    (cuda_13_2) => {
        $crate::export_driver_api!(@driver $crate::api::EmulatedDriver::Cuda13_2, yes, yes);
    };
    (cuda_12_8) => {
        $crate::export_driver_api!(@driver $crate::api::EmulatedDriver::Cuda12_8, yes, no);
    };
    (cuda_12_2) => {
        $crate::export_driver_api!(@driver $crate::api::EmulatedDriver::Cuda12_2, no, no);
    };

    // $param_info: exports cuFuncGetParamInfo (12.4); $param_count: cuFuncGetParamCount (13.2).
    (@driver $driver:expr, $param_info:ident, $param_count:ident) => {
        $crate::export_driver_api! { @exports
            /// `CUresult cuInit(unsigned int Flags)`.
            fn cuInit(flags: ::core::ffi::c_uint) -> $crate::result::CuResult = $crate::api::init[];
            /// `CUresult cuDriverGetVersion(int *driverVersion)`.
            unsafe fn cuDriverGetVersion(driver_version: *mut ::core::ffi::c_int) -> $crate::result::CuResult
                = $crate::api::driver_get_version[$driver];
            /// `CUresult cuDeviceGetCount(int *count)`.
            unsafe fn cuDeviceGetCount(count: *mut ::core::ffi::c_int) -> $crate::result::CuResult
                = $crate::api::device_get_count[];
            /// `CUresult cuDeviceGet(CUdevice *device, int ordinal)`.
            unsafe fn cuDeviceGet(device: *mut $crate::api::CUdevice, ordinal: ::core::ffi::c_int)
                -> $crate::result::CuResult = $crate::api::device_get[];
            /// `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`.
            unsafe fn cuDeviceGetAttribute(
                pi: *mut ::core::ffi::c_int,
                attrib: ::core::ffi::c_int,
                dev: $crate::api::CUdevice,
            ) -> $crate::result::CuResult = $crate::api::device_get_attribute[];
            /// `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`.
            unsafe fn cuDeviceGetName(
                name: *mut ::core::ffi::c_char,
                len: ::core::ffi::c_int,
                dev: $crate::api::CUdevice,
            ) -> $crate::result::CuResult = $crate::api::device_get_name[];
            /// `CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)`.
            unsafe fn cuDevicePrimaryCtxRetain(pctx: *mut $crate::api::CUcontext, dev: $crate::api::CUdevice)
                -> $crate::result::CuResult = $crate::api::device_primary_ctx_retain[];
            /// `CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)`.
            fn cuDevicePrimaryCtxRelease_v2(dev: $crate::api::CUdevice) -> $crate::result::CuResult
                = $crate::api::device_primary_ctx_release[];
            /// `CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)`.
            fn cuDevicePrimaryCtxReset_v2(dev: $crate::api::CUdevice) -> $crate::result::CuResult
                = $crate::api::device_primary_ctx_reset[];
            /// `CUresult cuCtxPushCurrent_v2(CUcontext ctx)`.
            fn cuCtxPushCurrent_v2(ctx: $crate::api::CUcontext) -> $crate::result::CuResult
                = $crate::api::ctx_push_current[];
            /// `CUresult cuCtxPopCurrent_v2(CUcontext *pctx)`.
            unsafe fn cuCtxPopCurrent_v2(pctx: *mut $crate::api::CUcontext) -> $crate::result::CuResult
                = $crate::api::ctx_pop_current[];
            /// `CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int
            /// numOptions, CUjit_option *options, void **optionValues)`.
            unsafe fn cuModuleLoadDataEx(
                module: *mut $crate::api::CUmodule,
                image: *const ::core::ffi::c_void,
                num_options: ::core::ffi::c_uint,
                options: *mut ::core::ffi::c_int,
                option_values: *mut *mut ::core::ffi::c_void,
            ) -> $crate::result::CuResult = $crate::api::module_load_data_ex[$driver];
            /// `CUresult cuModuleUnload(CUmodule hmod)`.
            fn cuModuleUnload(hmod: $crate::api::CUmodule) -> $crate::result::CuResult
                = $crate::api::module_unload[];
            /// `CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)`.
            unsafe fn cuModuleGetFunction(
                hfunc: *mut $crate::api::CUfunction,
                hmod: $crate::api::CUmodule,
                name: *const ::core::ffi::c_char,
            ) -> $crate::result::CuResult = $crate::api::module_get_function[];
            /// `CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)`.
            unsafe fn cuFuncGetAttribute(
                pi: *mut ::core::ffi::c_int,
                attrib: ::core::ffi::c_int,
                hfunc: $crate::api::CUfunction,
            ) -> $crate::result::CuResult = $crate::api::func_get_attribute[];
            /// `CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)`.
            fn cuFuncSetAttribute(
                hfunc: $crate::api::CUfunction,
                attrib: ::core::ffi::c_int,
                value: ::core::ffi::c_int,
            ) -> $crate::result::CuResult = $crate::api::func_set_attribute[];
            /// `CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)`.
            unsafe fn cuStreamCreate(ph_stream: *mut $crate::api::CUstream, flags: ::core::ffi::c_uint)
                -> $crate::result::CuResult = $crate::api::stream_create[];
            /// `CUresult cuStreamDestroy_v2(CUstream hStream)`.
            fn cuStreamDestroy_v2(h_stream: $crate::api::CUstream) -> $crate::result::CuResult
                = $crate::api::stream_destroy[];
            /// `CUresult cuStreamSynchronize(CUstream hStream)`.
            fn cuStreamSynchronize(h_stream: $crate::api::CUstream) -> $crate::result::CuResult
                = $crate::api::stream_synchronize[];
            /// `CUresult cuStreamQuery(CUstream hStream)`.
            fn cuStreamQuery(h_stream: $crate::api::CUstream) -> $crate::result::CuResult
                = $crate::api::stream_query[];
            /// `CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)`.
            unsafe fn cuMemAlloc_v2(dptr: *mut $crate::api::CUdeviceptr, bytesize: usize)
                -> $crate::result::CuResult = $crate::api::mem_alloc[];
            /// `CUresult cuMemFree_v2(CUdeviceptr dptr)`.
            fn cuMemFree_v2(dptr: $crate::api::CUdeviceptr) -> $crate::result::CuResult = $crate::api::mem_free[];
            /// `CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)`.
            unsafe fn cuMemHostAlloc(
                pp: *mut *mut ::core::ffi::c_void,
                bytesize: usize,
                flags: ::core::ffi::c_uint,
            ) -> $crate::result::CuResult = $crate::api::mem_host_alloc[];
            /// `CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)`.
            unsafe fn cuMemHostGetDevicePointer_v2(
                pdptr: *mut $crate::api::CUdeviceptr,
                p: *mut ::core::ffi::c_void,
                flags: ::core::ffi::c_uint,
            ) -> $crate::result::CuResult = $crate::api::mem_host_get_device_pointer[];
            /// `CUresult cuMemFreeHost(void *p)`.
            fn cuMemFreeHost(p: *mut ::core::ffi::c_void) -> $crate::result::CuResult
                = $crate::api::mem_free_host[];
            /// `CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
            /// size_t ByteCount, CUstream hStream)`.
            unsafe fn cuMemcpyHtoDAsync_v2(
                dst_device: $crate::api::CUdeviceptr,
                src_host: *const ::core::ffi::c_void,
                byte_count: usize,
                h_stream: $crate::api::CUstream,
            ) -> $crate::result::CuResult = $crate::api::memcpy_htod_async[];
            /// `CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
            /// size_t ByteCount, CUstream hStream)`.
            unsafe fn cuMemcpyDtoHAsync_v2(
                dst_host: *mut ::core::ffi::c_void,
                src_device: $crate::api::CUdeviceptr,
                byte_count: usize,
                h_stream: $crate::api::CUstream,
            ) -> $crate::result::CuResult = $crate::api::memcpy_dtoh_async[];
            /// `CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int
            /// gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
            /// unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
            /// void **kernelParams, void **extra)`.
            unsafe fn cuLaunchKernel(
                f: $crate::api::CUfunction,
                grid_dim_x: ::core::ffi::c_uint,
                grid_dim_y: ::core::ffi::c_uint,
                grid_dim_z: ::core::ffi::c_uint,
                block_dim_x: ::core::ffi::c_uint,
                block_dim_y: ::core::ffi::c_uint,
                block_dim_z: ::core::ffi::c_uint,
                shared_mem_bytes: ::core::ffi::c_uint,
                h_stream: $crate::api::CUstream,
                kernel_params: *mut *mut ::core::ffi::c_void,
                extra: *mut *mut ::core::ffi::c_void,
            ) -> $crate::result::CuResult = $crate::api::launch_kernel[];

            /// Control API: `int kargs_emu_add_device(int pageable_memory_access,
            /// int uses_host_page_tables, int cc_major, int cc_minor, int shared_memory_optin)`.
            fn kargs_emu_add_device(
                pageable_memory_access: ::core::ffi::c_int,
                uses_host_page_tables: ::core::ffi::c_int,
                cc_major: ::core::ffi::c_int,
                cc_minor: ::core::ffi::c_int,
                shared_memory_optin: ::core::ffi::c_int,
            ) -> ::core::ffi::c_int = $crate::control::add_device[];
            /// Control API: `void kargs_emu_fail_call(const char *name, unsigned long long nth,
            /// int code)`.
            unsafe fn kargs_emu_fail_call(
                name: *const ::core::ffi::c_char,
                nth: ::core::ffi::c_ulonglong,
                code: ::core::ffi::c_int,
            ) -> () = $crate::control::fail_call[];
            /// Control API: `void kargs_emu_clear_faults(void)`.
            fn kargs_emu_clear_faults() -> () = $crate::control::clear_faults[];
            /// Control API: `unsigned long long kargs_emu_call_count(const char *name)`.
            unsafe fn kargs_emu_call_count(name: *const ::core::ffi::c_char) -> ::core::ffi::c_ulonglong
                = $crate::control::call_count[];
            /// Control API: `void kargs_emu_hold_call(const char *name)`.
            unsafe fn kargs_emu_hold_call(name: *const ::core::ffi::c_char) -> () = $crate::control::hold_call[];
            /// Control API: `unsigned long long kargs_emu_held(void)`.
            fn kargs_emu_held() -> ::core::ffi::c_ulonglong = $crate::control::held[];
            /// Control API: `void kargs_emu_release_held(void)`.
            fn kargs_emu_release_held() -> () = $crate::control::release_held[];
            /// Control API: `long long kargs_emu_live(int ordinal, int what)`.
            fn kargs_emu_live(ordinal: ::core::ffi::c_int, what: ::core::ffi::c_int) -> ::core::ffi::c_longlong
                = $crate::control::live[];
            /// Control API: `int kargs_emu_sticky_error(int ordinal)`.
            fn kargs_emu_sticky_error(ordinal: ::core::ffi::c_int) -> ::core::ffi::c_int
                = $crate::control::sticky_error[];
            /// Control API: `unsigned long long kargs_emu_crossings(int ordinal)`.
            fn kargs_emu_crossings(ordinal: ::core::ffi::c_int) -> ::core::ffi::c_ulonglong
                = $crate::control::crossings[];
            /// Control API: `void kargs_emu_clear_crossings(int ordinal)`.
            fn kargs_emu_clear_crossings(ordinal: ::core::ffi::c_int) -> () = $crate::control::clear_crossings[];
            /// Control API: `void kargs_emu_set_delay(unsigned long long micros)`.
            fn kargs_emu_set_delay(micros: ::core::ffi::c_ulonglong) -> () = $crate::control::set_delay[];
            /// Control API: `void kargs_emu_set_inline(int inline)`.
            fn kargs_emu_set_inline(inline: ::core::ffi::c_int) -> () = $crate::control::set_inline[];
            /// Control API: `unsigned long long kargs_emu_function_instructions(CUfunction f)`.
            fn kargs_emu_function_instructions(f: $crate::api::CUfunction) -> ::core::ffi::c_ulonglong
                = $crate::control::function_instructions[];
            /// Control API: `unsigned long long kargs_emu_stat(int what)`.
            fn kargs_emu_stat(what: ::core::ffi::c_int) -> ::core::ffi::c_ulonglong = $crate::control::stat[];
        }
        $crate::export_driver_api! { @if $param_info
            /// `CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
            /// size_t *paramOffset, size_t *paramSize)` (CUDA 12.4).
            unsafe fn cuFuncGetParamInfo(
                func: $crate::api::CUfunction,
                param_index: usize,
                param_offset: *mut usize,
                param_size: *mut usize,
            ) -> $crate::result::CuResult = $crate::api::func_get_param_info[];
        }
        $crate::export_driver_api! { @if $param_count
            /// `CUresult cuFuncGetParamCount(CUfunction func, size_t *paramCount)` (CUDA 13.2).
            unsafe fn cuFuncGetParamCount(func: $crate::api::CUfunction, param_count: *mut usize)
                -> $crate::result::CuResult = $crate::api::func_get_param_count[];
        }
    };

    // Entry points only some drivers have.
    (@if yes $($exports:tt)*) => {
        $crate::export_driver_api! { @exports $($exports)* }
    };
    (@if no $($exports:tt)*) => {};

    // One export per row: `[unsafe] fn symbol(args) -> ret = implementation[leading args];`.
    (@exports) => {};
    (@exports
        $(#[$doc:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $imp:path[$($lead:expr),*];
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// None: every argument is a value. (`unsafe` as every C entry point of the library.)
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            $imp($($lead,)* $($arg),*)
        }
        $crate::export_driver_api! { @exports $($rest)* }
    };
    (@exports
        $(#[$doc:meta])*
        unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $imp:path[$($lead:expr),*];
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The caller keeps the prototype's contract (`cuda.h`'s, for a driver entry point):
        /// each pointer argument is null or valid for what is read or written through it.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: the implementation's contract is this function's, which the caller keeps.
            unsafe { $imp($($lead,)* $($arg),*) }
        }
        $crate::export_driver_api! { @exports $($rest)* }
    };
}
