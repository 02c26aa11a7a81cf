//! What the emulator's API tests share: a device of the test's own with its context current,
//! loading the fixture kernels, device memory, and launching with a parameter table. The
//! fence's tests on the emulator's API (`integration/tests/common/`) include it as it is.

#![allow(dead_code)] // each test file uses its own part

use std::ffi::{CString, c_int, c_void};
use std::ptr;

use kernel_args_cuda_emulator::api::{self, CUcontext, CUfunction, CUmodule, CUstream, EmulatedDriver};
use kernel_args_cuda_emulator::control;
use kernel_args_cuda_emulator::result::*;

pub const VECTOR_ADD: &str = include_str!("../../../cuda-backend/kernels/vector_add.ptx");
pub const SCALARS: &str = include_str!("../../../cuda-backend/kernels/scalars.ptx");
pub const STRUCT_PARAM: &str = include_str!("../../../cuda-backend/kernels/struct_param.ptx");

/// A kernel with 4 KiB of static shared memory that only returns.
pub const SHARED_KERNEL: &str = ".version 7.8\n.target sm_52\n.address_size 64\n.visible .entry tiled(\n\
    \t.param .u64 tiled_param_0\n)\n{\n\t.shared .align 4 .b8 tile[4096];\n\tret;\n}\n";

/// A device of the test's own, its primary context retained and current on this thread;
/// popped and released on drop.
pub struct Session {
    pub ordinal: c_int,
    pub context: CUcontext,
}

pub fn session_on(pageable: bool, optin: c_int) -> Session {
    assert_eq!(api::init(0), CUDA_SUCCESS);
    let ordinal = control::add_device(c_int::from(pageable), c_int::from(pageable), 9, 0, optin);
    assert!(ordinal > 0);
    let context = retain(ordinal).unwrap();
    assert_eq!(api::ctx_push_current(context), CUDA_SUCCESS);
    Session { ordinal, context }
}

pub fn session() -> Session {
    session_on(true, 232_448)
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = pop();
        let _ = api::device_primary_ctx_release(self.ordinal);
    }
}

pub fn retain(ordinal: c_int) -> Result<CUcontext, CuResult> {
    let mut context = ptr::null_mut();
    // SAFETY: `context` is writable.
    match unsafe { api::device_primary_ctx_retain(&mut context, ordinal) } {
        CUDA_SUCCESS => Ok(context),
        code => Err(code),
    }
}

pub fn pop() -> Result<CUcontext, CuResult> {
    let mut context = ptr::null_mut();
    // SAFETY: `context` is writable.
    match unsafe { api::ctx_pop_current(&mut context) } {
        CUDA_SUCCESS => Ok(context),
        code => Err(code),
    }
}

/// Loads `ptx` with a 256-byte error log (0xff-filled): the code, the module, the log and the
/// size option's value after the call.
pub fn load_raw(driver: EmulatedDriver, ptx: &str) -> (CuResult, CUmodule, [u8; 256], usize) {
    let image = CString::new(ptx).unwrap();
    let mut log = [0xffu8; 256];
    let mut options = [5 as c_int, 6];
    let mut values = [log.as_mut_ptr().cast::<c_void>(), ptr::without_provenance_mut(log.len())];
    let mut module = ptr::null_mut();
    // SAFETY: NUL-terminated image, two options with their values, the log writable for its size.
    let code = unsafe {
        api::module_load_data_ex(
            driver,
            &mut module,
            image.as_ptr().cast(),
            2,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    (code, module, log, values[1].addr())
}

/// Loads `ptx`: the module, or the code and the log with the byte count written back.
pub fn load_on(driver: EmulatedDriver, ptx: &str) -> Result<CUmodule, (CuResult, String, usize)> {
    let (code, module, log, written) = load_raw(driver, ptx);
    if matches!(code, CUDA_ERROR_INVALID_CONTEXT | CUDA_ERROR_ILLEGAL_ADDRESS) {
        // Refused before the PTX is read: nothing written.
        assert_eq!((log, written), ([0xff; 256], 256));
        return Err((code, String::new(), written));
    }
    let end = log.iter().position(|&b| b == 0).unwrap();
    assert_eq!(end, written, "the size written back is the log's length");
    if code == CUDA_SUCCESS {
        assert_eq!(written, 0);
        Ok(module)
    } else {
        Err((code, String::from_utf8(log[..end].to_vec()).unwrap(), written))
    }
}

pub fn load(ptx: &str) -> CUmodule {
    load_on(EmulatedDriver::Cuda12_8, ptx).unwrap()
}

pub fn function(module: CUmodule, name: &str) -> Result<CUfunction, CuResult> {
    let name = CString::new(name).unwrap();
    let mut function = ptr::null_mut();
    // SAFETY: `function` is writable, `name` NUL-terminated.
    match unsafe { api::module_get_function(&mut function, module, name.as_ptr()) } {
        CUDA_SUCCESS => Ok(function),
        code => Err(code),
    }
}

pub fn param_layout(function: CUfunction) -> Vec<(usize, usize)> {
    let mut count = 0;
    // SAFETY: `count` is writable.
    assert_eq!(unsafe { api::func_get_param_count(function, &mut count) }, CUDA_SUCCESS);
    (0..count)
        .map(|i| {
            let (mut offset, mut size) = (0, 0);
            // SAFETY: both writable.
            assert_eq!(
                unsafe { api::func_get_param_info(function, i, &mut offset, &mut size) },
                CUDA_SUCCESS
            );
            (offset, size)
        })
        .collect()
}

pub fn func_attribute(function: CUfunction, attribute: c_int) -> Result<c_int, CuResult> {
    let mut value = -1;
    // SAFETY: `value` is writable.
    match unsafe { api::func_get_attribute(&mut value, attribute, function) } {
        CUDA_SUCCESS => Ok(value),
        code => Err(code),
    }
}

pub fn alloc(bytes: usize) -> Result<u64, CuResult> {
    let mut dptr = 0;
    // SAFETY: `dptr` is writable.
    match unsafe { api::mem_alloc(&mut dptr, bytes) } {
        CUDA_SUCCESS => Ok(dptr),
        code => Err(code),
    }
}

pub fn upload(dst: u64, bytes: &[u8]) -> CuResult {
    // SAFETY: `bytes` is readable for its length.
    unsafe { api::memcpy_htod_async(dst, bytes.as_ptr().cast(), bytes.len(), ptr::null_mut()) }
}

pub fn download(src: u64, bytes: &mut [u8]) -> CuResult {
    // SAFETY: `bytes` is writable for its length.
    unsafe { api::memcpy_dtoh_async(bytes.as_mut_ptr().cast(), src, bytes.len(), ptr::null_mut()) }
}

pub fn stream() -> CUstream {
    let mut stream = ptr::null_mut();
    // SAFETY: `stream` is writable.
    assert_eq!(unsafe { api::stream_create(&mut stream, 1) }, CUDA_SUCCESS);
    stream
}

/// Launches `function` with one parameter per element of `params`, each pointing at its bytes.
pub fn launch_with(
    function: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    params: &mut [Vec<u8>],
) -> CuResult {
    let mut table: Vec<*mut c_void> = params.iter_mut().map(|p| p.as_mut_ptr().cast()).collect();
    let table = if table.is_empty() { ptr::null_mut() } else { table.as_mut_ptr() };
    // SAFETY: one readable pointer per parameter, each as long as the kernel's parameter (the
    // tests pass the declared sizes); kernel pointers are device memory or live host memory.
    unsafe {
        api::launch_kernel(
            function,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared,
            ptr::null_mut(),
            table,
            ptr::null_mut(),
        )
    }
}

pub fn floats(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

pub fn vector_add_params(a: u64, b: u64, out: u64, n: u32) -> Vec<Vec<u8>> {
    vec![
        a.to_le_bytes().to_vec(),
        b.to_le_bytes().to_vec(),
        out.to_le_bytes().to_vec(),
        n.to_le_bytes().to_vec(),
    ]
}

pub const GRID_STRIDE: &str = include_str!("../../../cuda-backend/kernels/grid_stride.ptx");
pub const BLOCK_SUM: &str = include_str!("../../../cuda-backend/kernels/block_sum.ptx");
pub const TRANSPOSE: &str = include_str!("../../../cuda-backend/kernels/transpose.ptx");
pub const HISTOGRAM: &str = include_str!("../../../cuda-backend/kernels/histogram.ptx");
pub const LOCAL_ARRAY: &str = include_str!("../../../cuda-backend/kernels/local_array.ptx");

pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The instructions `f`'s launches executed so far.
pub fn instructions(f: CUfunction) -> u64 {
    control::function_instructions(f)
}
