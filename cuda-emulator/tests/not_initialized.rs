//! Before `cuInit`: its own process, so no other test has initialised the library.

use std::ffi::c_int;
use std::ptr;

use kernel_args_cuda_emulator::api::{self, EmulatedDriver};
use kernel_args_cuda_emulator::result::{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_INITIALIZED, CUDA_SUCCESS};

#[test]
fn every_entry_point_but_the_version_needs_cu_init() {
    let mut value: c_int = 0;
    let mut handle = ptr::null_mut();
    let mut dptr = 0;
    // SAFETY: every out-parameter is writable.
    let codes = unsafe {
        [
            api::device_get_count(&mut value),
            api::device_get(&mut value, 0),
            api::device_get_attribute(&mut value, 1, 0),
            api::device_primary_ctx_retain(&mut handle, 0),
            api::device_primary_ctx_release(0),
            api::device_primary_ctx_reset(0),
            api::ctx_push_current(ptr::without_provenance_mut(0x1000)),
            api::ctx_pop_current(&mut handle),
            api::mem_alloc(&mut dptr, 16),
            api::stream_synchronize(ptr::null_mut()),
            api::module_unload(ptr::null_mut()),
        ]
    };
    assert_eq!(codes, [CUDA_ERROR_NOT_INITIALIZED; 11]);
    assert!(handle.is_null());
    assert_eq!(dptr, 0);
    // SAFETY: `value` is writable.
    assert_eq!(unsafe { api::driver_get_version(EmulatedDriver::Cuda12_8, &mut value) }, CUDA_SUCCESS);
    assert_eq!(value, 12080);
    assert_eq!(api::init(2), CUDA_ERROR_INVALID_VALUE);
    // SAFETY: as above.
    assert_eq!(unsafe { api::device_get_count(&mut value) }, CUDA_ERROR_NOT_INITIALIZED);
    assert_eq!(api::init(0), CUDA_SUCCESS);
    // SAFETY: as above.
    assert_eq!(unsafe { api::device_get_count(&mut value) }, CUDA_SUCCESS);
    assert_eq!(value, 1);
}
