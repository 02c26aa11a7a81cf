//! The entry points through `api` (what the exported symbols forward to), as a launcher calls
//! them: devices, contexts, modules, the fixture kernels, launch checks, the sticky error,
//! fault injection, counts. Tests run in parallel in one process, so each one that launches
//! or counts adds a device of its own (tests on device 0 only read it).

use std::ffi::{CString, c_int, c_void};
use std::ptr;

use kernel_args_cuda_emulator::DEVICE_NAME;
use kernel_args_cuda_emulator::POISON;
use kernel_args_cuda_emulator::api::{
    self, EmulatedDriver, device_attribute as dev_attr, function_attribute as fn_attr,
};
use kernel_args_cuda_emulator::control;
use kernel_args_cuda_emulator::result::*;

mod common;

use common::*;

#[test]
fn device_queries() {
    assert_eq!(api::init(1), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(api::init(0), CUDA_SUCCESS);
    let mut version = 0;
    // SAFETY: `version` is writable.
    assert_eq!(unsafe { api::driver_get_version(EmulatedDriver::Cuda12_8, &mut version) }, CUDA_SUCCESS);
    assert_eq!(version, 12080);
    // SAFETY: as above.
    assert_eq!(unsafe { api::driver_get_version(EmulatedDriver::Cuda13_2, &mut version) }, CUDA_SUCCESS);
    assert_eq!(version, 13020);
    // SAFETY: as above.
    assert_eq!(unsafe { api::driver_get_version(EmulatedDriver::Cuda12_2, &mut version) }, CUDA_SUCCESS);
    assert_eq!(version, 12020);
    let mut count = 0;
    // SAFETY: `count` is writable.
    assert_eq!(unsafe { api::device_get_count(&mut count) }, CUDA_SUCCESS);
    assert!(count >= 1);
    let mut device = -1;
    // SAFETY: `device` is writable.
    assert_eq!(unsafe { api::device_get(&mut device, 0) }, CUDA_SUCCESS);
    assert_eq!(device, 0);
    // SAFETY: as above.
    assert_eq!(unsafe { api::device_get(&mut device, -1) }, CUDA_ERROR_INVALID_DEVICE);
    // SAFETY: as above.
    assert_eq!(unsafe { api::device_get(&mut device, i32::MAX) }, CUDA_ERROR_INVALID_DEVICE);
    // SAFETY: a null out-parameter is refused before any write.
    assert_eq!(unsafe { api::device_get(ptr::null_mut(), 0) }, CUDA_ERROR_INVALID_VALUE);

    let attribute = |attribute: c_int, device: c_int| {
        let mut value = -1;
        // SAFETY: `value` is writable.
        let code = unsafe { api::device_get_attribute(&mut value, attribute, device) };
        (code == CUDA_SUCCESS).then_some(value).ok_or(code)
    };
    let expected = [
        (dev_attr::MAX_THREADS_PER_BLOCK, 1024),
        (dev_attr::MAX_BLOCK_DIM_X, 1024),
        (dev_attr::MAX_BLOCK_DIM_Y, 1024),
        (dev_attr::MAX_BLOCK_DIM_Z, 64),
        (dev_attr::MAX_GRID_DIM_X, 2_147_483_647),
        (dev_attr::MAX_GRID_DIM_Y, 65535),
        (dev_attr::MAX_GRID_DIM_Z, 65535),
        (dev_attr::MAX_SHARED_MEMORY_PER_BLOCK, 49152),
        (dev_attr::WARP_SIZE, 32),
        (dev_attr::MULTIPROCESSOR_COUNT, 1),
        (dev_attr::COMPUTE_CAPABILITY_MAJOR, 9),
        (dev_attr::COMPUTE_CAPABILITY_MINOR, 0),
        (dev_attr::PAGEABLE_MEMORY_ACCESS, 1),
        (dev_attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232_448),
        (dev_attr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 1),
    ];
    for (which, value) in expected {
        assert_eq!(attribute(which, 0), Ok(value), "attribute {which}");
    }
    assert_eq!(attribute(9, 0), Err(CUDA_ERROR_INVALID_VALUE));
    assert_eq!(attribute(dev_attr::WARP_SIZE, 4096), Err(CUDA_ERROR_INVALID_DEVICE));

    let turing = control::add_device(1, 0, 7, 5, 65536);
    assert_eq!(attribute(dev_attr::COMPUTE_CAPABILITY_MAJOR, turing), Ok(7));
    assert_eq!(attribute(dev_attr::COMPUTE_CAPABILITY_MINOR, turing), Ok(5));
    assert_eq!(attribute(dev_attr::PAGEABLE_MEMORY_ACCESS, turing), Ok(1));
    assert_eq!(attribute(dev_attr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, turing), Ok(0));
    assert_eq!(attribute(dev_attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, turing), Ok(65536));
    assert_eq!(control::add_device(1, 1, -1, 0, 0), -1);

    let mut name = [0x55u8; 100];
    // SAFETY: `name` is writable for its length.
    assert_eq!(unsafe { api::device_get_name(name.as_mut_ptr().cast(), 100, 0) }, CUDA_SUCCESS);
    let end = name.iter().position(|&b| b == 0).unwrap();
    assert_eq!(&name[..end], DEVICE_NAME.as_bytes());
    assert_eq!(DEVICE_NAME, "kernel-args emulated CUDA device (CPU, not a GPU)");
    // SAFETY: writable for 8 bytes.
    assert_eq!(unsafe { api::device_get_name(name.as_mut_ptr().cast(), 8, 0) }, CUDA_SUCCESS);
    assert_eq!(&name[..8], b"kernel-\0");
    // SAFETY: a length of 0 is refused before any write.
    assert_eq!(unsafe { api::device_get_name(name.as_mut_ptr().cast(), 0, 0) }, CUDA_ERROR_INVALID_VALUE);
}

#[test]
fn primary_contexts_are_retained_released_and_reset() {
    assert_eq!(api::init(0), CUDA_SUCCESS);
    let ordinal = control::add_device(1, 1, 9, 0, 232_448);
    assert_eq!(api::device_primary_ctx_release(ordinal), CUDA_ERROR_INVALID_CONTEXT);
    let first = retain(ordinal).unwrap();
    assert!(!first.is_null());
    assert_eq!(retain(ordinal), Ok(first));
    assert_eq!(control::live(ordinal, 0), 2);
    assert_eq!(api::device_primary_ctx_release(ordinal), CUDA_SUCCESS);
    assert_eq!(control::live(ordinal, 0), 1);

    // A reset destroys the context and keeps the count; the old handle is dead.
    assert_eq!(api::ctx_push_current(first), CUDA_SUCCESS);
    let module = load(VECTOR_ADD);
    let dptr = alloc(64).unwrap();
    assert_eq!(control::live(ordinal, 1), 1);
    assert_eq!(api::device_primary_ctx_reset(ordinal), CUDA_SUCCESS);
    assert_eq!(control::live(ordinal, 0), 1);
    assert_eq!(control::live(ordinal, 1), 0);
    assert_eq!(control::live(ordinal, 3), 0);
    assert_eq!(api::module_unload(module), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(api::mem_free(dptr), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(api::ctx_push_current(first), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(pop(), Ok(first));

    let second = retain(ordinal).unwrap();
    assert_ne!(second, first);
    assert_eq!(control::live(ordinal, 0), 2);
    assert_eq!(api::ctx_push_current(second), CUDA_SUCCESS);
    assert_eq!(api::module_unload(module), CUDA_ERROR_INVALID_HANDLE, "the module died with the old context");
    assert_eq!(pop(), Ok(second));
    assert_eq!(pop(), Err(CUDA_ERROR_INVALID_CONTEXT));
    // SAFETY: a null out-parameter is allowed.
    assert_eq!(unsafe { api::ctx_pop_current(ptr::null_mut()) }, CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(api::device_primary_ctx_release(ordinal), CUDA_SUCCESS);
    assert_eq!(api::device_primary_ctx_release(ordinal), CUDA_SUCCESS);
    assert_eq!(control::live(ordinal, 0), 0);
    assert_eq!(api::ctx_push_current(second), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(api::device_primary_ctx_release(ordinal), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(api::device_primary_ctx_reset(4096), CUDA_ERROR_INVALID_DEVICE);
}

#[test]
fn calls_without_a_current_context_are_invalid_context() {
    assert_eq!(api::init(0), CUDA_SUCCESS);
    // This test's thread never pushes a context.
    assert_eq!(alloc(16), Err(CUDA_ERROR_INVALID_CONTEXT));
    assert_eq!(api::stream_synchronize(ptr::null_mut()), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(load_on(EmulatedDriver::Cuda12_8, VECTOR_ADD).unwrap_err().0, CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(api::ctx_push_current(ptr::null_mut()), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(api::ctx_push_current(ptr::without_provenance_mut(0x1234_5678)), CUDA_ERROR_INVALID_CONTEXT);
}

#[test]
fn the_fixtures_report_their_parameter_layout() {
    let _session = session();
    let vector_add = load(VECTOR_ADD);
    for name in ["vector_add", "_Z18vector_add_mangledPKfS0_Pfj"] {
        let f = function(vector_add, name).unwrap();
        assert_eq!(param_layout(f), [(0, 8), (8, 8), (16, 8), (24, 4)]);
        assert_eq!(function(vector_add, name), Ok(f), "the same handle every time");
    }
    assert_eq!(function(vector_add, "vector_ad"), Err(CUDA_ERROR_NOT_FOUND));
    let scalars = load(SCALARS);
    let every = function(scalars, "every_scalar").unwrap();
    let sizes: Vec<usize> = param_layout(every).iter().map(|p| p.1).collect();
    assert_eq!(sizes, [4, 8, 4, 8, 4, 8, 8]);
    let narrow = function(scalars, "narrow_scalars").unwrap();
    assert_eq!(param_layout(narrow), [(0, 1), (1, 1), (2, 2), (4, 2), (8, 8)]);
    let affine = function(load(STRUCT_PARAM), "affine").unwrap();
    assert_eq!(param_layout(affine), [(0, 24), (24, 8), (32, 8)]);

    let (mut offset, mut size) = (7, 7);
    // SAFETY: both writable.
    assert_eq!(
        unsafe { api::func_get_param_info(affine, 3, &mut offset, &mut size) },
        CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!((offset, size), (7, 7));
    // SAFETY: `offset` is writable; the size may be null.
    assert_eq!(unsafe { api::func_get_param_info(affine, 1, &mut offset, ptr::null_mut()) }, CUDA_SUCCESS);
    assert_eq!(offset, 24);
    assert_eq!(func_attribute(affine, fn_attr::MAX_THREADS_PER_BLOCK), Ok(1024));
    assert_eq!(func_attribute(affine, fn_attr::SHARED_SIZE_BYTES), Ok(0));
    assert_eq!(func_attribute(affine, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES), Ok(49152));
    assert_eq!(func_attribute(affine, 2), Err(CUDA_ERROR_INVALID_VALUE));

    assert_eq!(api::module_unload(scalars), CUDA_SUCCESS);
    assert_eq!(func_attribute(every, fn_attr::SHARED_SIZE_BYTES), Err(CUDA_ERROR_INVALID_HANDLE));
    assert_eq!(api::module_unload(scalars), CUDA_ERROR_INVALID_HANDLE);
    assert_eq!(function(scalars, "every_scalar"), Err(CUDA_ERROR_INVALID_HANDLE));
}

#[test]
fn malformed_ptx_is_refused_with_the_line_in_the_log() {
    let _session = session();
    let (code, log, written) =
        load_on(EmulatedDriver::Cuda12_8, ".version 7.8\n.target sm_52\n.address_size 64\nthis is not ptx")
            .unwrap_err();
    assert_eq!(code, CUDA_ERROR_INVALID_PTX);
    assert_eq!(
        log,
        "ptxas application ptx input, line 4; fatal   : Parsing error: expected a directive, a variable or a \
         function, found `this`"
    );
    assert_eq!(written, log.len());
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_8, "").unwrap_err();
    assert_eq!(
        (code, log.as_str()),
        (
            CUDA_ERROR_INVALID_PTX,
            "ptxas application ptx input, line 1; fatal   : Missing .version directive at start of file"
        )
    );

    // A log buffer shorter than the message: truncated, NUL-terminated.
    let image = CString::new("junk").unwrap();
    let mut log = [0xffu8; 10];
    let mut options = [6 as c_int, 3, 5];
    let mut values =
        [ptr::without_provenance_mut(log.len()), ptr::null_mut(), log.as_mut_ptr().cast::<c_void>()];
    let mut module = ptr::null_mut();
    // SAFETY: NUL-terminated image, three options (one ignored) with their values, the log
    // writable for its size.
    let code = unsafe {
        api::module_load_data_ex(
            EmulatedDriver::Cuda12_8,
            &mut module,
            image.as_ptr().cast(),
            3,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    assert_eq!(code, CUDA_ERROR_INVALID_PTX);
    assert_eq!(&log, b"ptxas app\0");
    assert_eq!(values[0].addr(), 9);
    assert!(module.is_null());
    // Options without their arrays.
    // SAFETY: the null arrays are refused before they are read.
    let code = unsafe {
        api::module_load_data_ex(
            EmulatedDriver::Cuda12_8,
            &mut module,
            image.as_ptr().cast(),
            1,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!(code, CUDA_ERROR_INVALID_VALUE);

    // A PTX ISA newer than the driver's.
    let newer = VECTOR_ADD.replace(".version 7.8", ".version 8.5");
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_2, &newer).unwrap_err();
    assert_eq!(code, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    assert_eq!(
        log,
        "ptxas application ptx input, line 9; fatal   : Unsupported .version 8.5; current version is '8.2'"
    );
    assert!(load_on(EmulatedDriver::Cuda12_8, &newer).is_ok());
    // 8.8 is CUDA 12.9's: a 12.8 driver refuses it, a 13.2 one takes it.
    let newer = VECTOR_ADD.replace(".version 7.8", ".version 8.8");
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_8, &newer).unwrap_err();
    assert_eq!(code, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    assert!(log.ends_with("Unsupported .version 8.8; current version is '8.7'"), "{log}");
    assert!(load_on(EmulatedDriver::Cuda13_2, &newer).is_ok());
    assert_eq!(control::live(_session.ordinal, 1), 2);
}

#[test]
fn vector_add_through_device_memory_and_host_memory() {
    let session = session();
    let module = load(VECTOR_ADD);
    let n = 1000u32;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let s = stream();
    for name in ["vector_add", "_Z18vector_add_mangledPKfS0_Pfj"] {
        let f = function(module, name).unwrap();
        // Staged: device buffers.
        let bytes = 4 * n as usize;
        let (da, db, dout) = (alloc(bytes).unwrap(), alloc(bytes).unwrap(), alloc(bytes).unwrap());
        assert_eq!(upload(da, &floats(a.iter().copied())), CUDA_SUCCESS);
        assert_eq!(upload(db, &floats(b.iter().copied())), CUDA_SUCCESS);
        let grid = n.div_ceil(128);
        assert_eq!(
            launch_with(f, [grid, 1, 1], [128, 1, 1], 0, &mut vector_add_params(da, db, dout, n)),
            CUDA_SUCCESS
        );
        assert_eq!(api::stream_synchronize(s), CUDA_SUCCESS);
        let mut out = vec![0u8; bytes];
        assert_eq!(download(dout, &mut out), CUDA_SUCCESS);
        assert_eq!(out, floats((0..n as usize).map(|i| a[i] + b[i])));
        for d in [da, db, dout] {
            assert_eq!(api::mem_free(d), CUDA_SUCCESS);
        }
        // Direct: host pointers, on a device with pageable memory access.
        let mut host_out = vec![f32::NAN; n as usize];
        let params = &mut vector_add_params(
            a.as_ptr().expose_provenance() as u64,
            b.as_ptr().expose_provenance() as u64,
            host_out.as_mut_ptr().expose_provenance() as u64,
            n - 1,
        );
        assert_eq!(launch_with(f, [grid, 1, 1], [128, 1, 1], 0, params), CUDA_SUCCESS);
        for i in 0..n as usize - 1 {
            assert_eq!(host_out[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}");
        }
        assert!(host_out[n as usize - 1].is_nan(), "i < n only");
    }
    assert_eq!(api::stream_destroy(s), CUDA_SUCCESS);
    assert_eq!(control::sticky_error(session.ordinal), 0);
}

/// `cuMemHostAlloc` with `DEVICEMAP`: host memory a kernel writes at the address
/// `cuMemHostGetDevicePointer` gives, on a device without pageable memory access too, and the
/// host reads where it is; what is not such an allocation is refused.
#[test]
fn mapped_host_memory_is_written_by_the_kernel_and_read_in_place() {
    let session = session_on(false, 232_448);
    let module = load(VECTOR_ADD);
    let f = function(module, "vector_add").unwrap();
    let n = 64u32;
    let bytes = 4 * n as usize;
    let mut host: *mut c_void = ptr::null_mut();
    // SAFETY: `host` is writable for a pointer.
    assert_eq!(unsafe { api::mem_host_alloc(&mut host, bytes, 0x02) }, CUDA_SUCCESS);
    assert!(!host.is_null());
    let mut device = 0u64;
    // SAFETY: `device` is writable.
    assert_eq!(unsafe { api::mem_host_get_device_pointer(&mut device, host, 0) }, CUDA_SUCCESS);
    assert_eq!(device, host.expose_provenance() as u64, "unified addressing: the same address");
    let (da, db) = (alloc(bytes).unwrap(), alloc(bytes).unwrap());
    assert_eq!(upload(da, &floats((0..n).map(|i| i as f32))), CUDA_SUCCESS);
    assert_eq!(upload(db, &floats((0..n).map(|i| 2.0 * i as f32))), CUDA_SUCCESS);
    assert_eq!(
        launch_with(f, [1, 1, 1], [64, 1, 1], 0, &mut vector_add_params(da, db, device, n)),
        CUDA_SUCCESS
    );
    assert_eq!(api::stream_synchronize(ptr::null_mut()), CUDA_SUCCESS);
    // SAFETY: `host` holds `bytes` bytes the kernel wrote, and it has finished.
    let written = unsafe { std::slice::from_raw_parts(host.cast::<u8>(), bytes) };
    assert_eq!(written, floats((0..n).map(|i| 3.0 * i as f32)).as_slice());
    assert_eq!(control::sticky_error(session.ordinal), 0);
    // Not mapped, not an allocation's start, flags: refused.
    let mut unmapped: *mut c_void = ptr::null_mut();
    // SAFETY: as above.
    assert_eq!(unsafe { api::mem_host_alloc(&mut unmapped, 16, 0) }, CUDA_SUCCESS);
    // SAFETY: as above.
    assert_eq!(
        unsafe { api::mem_host_get_device_pointer(&mut device, unmapped, 0) },
        CUDA_ERROR_INVALID_VALUE
    );
    let inside = host.cast::<u8>().wrapping_add(4).cast::<c_void>();
    // SAFETY: as above.
    assert_eq!(unsafe { api::mem_host_get_device_pointer(&mut device, inside, 0) }, CUDA_ERROR_INVALID_VALUE);
    // SAFETY: as above.
    assert_eq!(unsafe { api::mem_host_get_device_pointer(&mut device, host, 1) }, CUDA_ERROR_INVALID_VALUE);
    let mut other: *mut c_void = ptr::null_mut();
    // SAFETY: as above.
    assert_eq!(unsafe { api::mem_host_alloc(&mut other, 16, 0x08) }, CUDA_ERROR_INVALID_VALUE);
    assert_eq!(api::mem_free_host(inside), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(api::mem_free(device), CUDA_ERROR_INVALID_VALUE, "cuMemFree frees no host allocation");
    assert_eq!(api::mem_free_host(host), CUDA_SUCCESS);
    assert_eq!(api::mem_free_host(host), CUDA_ERROR_INVALID_VALUE, "freed already");
    assert_eq!(api::mem_free_host(unmapped), CUDA_SUCCESS);
    for d in [da, db] {
        assert_eq!(api::mem_free(d), CUDA_SUCCESS);
    }
}

#[test]
fn scalar_and_struct_kernels_compute_what_their_sources_say() {
    let _session = session();
    let scalars = load(SCALARS);
    let out = alloc(64).unwrap();

    let every = function(scalars, "every_scalar").unwrap();
    let mut params = vec![
        (-7i32).to_le_bytes().to_vec(),
        (1i64 << 60 | 1).to_le_bytes().to_vec(),
        1.5f32.to_le_bytes().to_vec(),
        f64::from_bits(0x7ff0_0000_0000_0001).to_le_bytes().to_vec(),
        u32::MAX.to_le_bytes().to_vec(),
        u64::MAX.to_le_bytes().to_vec(),
        out.to_le_bytes().to_vec(),
    ];
    assert_eq!(launch_with(every, [2, 1, 1], [32, 2, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = [0u8; 48];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    let got: Vec<u64> = bytes.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let want = [
        (-7f64).to_bits(),
        ((1i64 << 60 | 1) as f64).to_bits(),
        1.5f64.to_bits(),
        0x7ff0_0000_0000_0001,
        f64::from(u32::MAX).to_bits(),
        (u64::MAX as f64).to_bits(),
    ];
    assert_eq!(got, want);

    let narrow = function(scalars, "narrow_scalars").unwrap();
    let mut params = vec![
        vec![0x80],
        vec![0xff],
        (-2i16).to_le_bytes().to_vec(),
        65535u16.to_le_bytes().to_vec(),
        out.to_le_bytes().to_vec(),
    ];
    assert_eq!(launch_with(narrow, [1, 1, 1], [1, 1, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = [0u8; 16];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    let got: Vec<i32> = bytes.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, [-128, 255, -2, 65535]);

    let affine = function(load(STRUCT_PARAM), "affine").unwrap();
    let input: Vec<f32> = (0..40).map(|i| i as f32 / 3.0).collect();
    let (din, dout) = (alloc(160).unwrap(), alloc(320).unwrap());
    assert_eq!(upload(din, &floats(input.iter().copied())), CUDA_SUCCESS);
    let mut p = [0u8; 24];
    p[0..4].copy_from_slice(&1.1f32.to_le_bytes());
    p[8..16].copy_from_slice(&0.125f64.to_le_bytes());
    p[16..20].copy_from_slice(&33i32.to_le_bytes());
    let mut params = vec![p.to_vec(), din.to_le_bytes().to_vec(), dout.to_le_bytes().to_vec()];
    assert_eq!(launch_with(affine, [2, 1, 1], [32, 1, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = [0u8; 320];
    assert_eq!(download(dout, &mut bytes), CUDA_SUCCESS);
    for (i, chunk) in bytes.chunks(8).enumerate() {
        let got = f64::from_le_bytes(chunk.try_into().unwrap());
        // Past `count`, the allocation's poison: nothing cleared it.
        let want =
            if i < 33 { f64::from(input[i] * 1.1f32) + 0.125 } else { f64::from_le_bytes([POISON; 8]) };
        assert_eq!(got.to_bits(), want.to_bits(), "element {i}");
    }
}

#[test]
fn launches_are_checked_as_the_driver_checks_them() {
    let _session = session();
    let module = load(VECTOR_ADD);
    let f = function(module, "vector_add").unwrap();
    let d = alloc(4096).unwrap();
    let ok = |grid: [u32; 3], block: [u32; 3], shared: u32| {
        launch_with(f, grid, block, shared, &mut vector_add_params(d, d, d, 0))
    };
    assert_eq!(ok([1, 1, 1], [1, 1, 1], 0), CUDA_SUCCESS);
    assert_eq!(ok([4096, 2, 2], [8, 4, 2], 0), CUDA_SUCCESS, "every thread runs; n = 0 writes nothing");
    for (grid, block) in [
        ([0, 1, 1], [1, 1, 1]),
        ([1, 0, 1], [1, 1, 1]),
        ([1, 1, 1], [1, 1, 0]),
        ([1, 1, 1], [1025, 1, 1]),
        ([1, 1, 1], [1, 1025, 1]),
        ([1, 1, 1], [1, 1, 65]),
        ([1, 1, 1], [32, 32, 2]),
        ([2_147_483_648, 1, 1], [1, 1, 1]),
        ([1, 65536, 1], [1, 1, 1]),
        ([1, 1, 65536], [1, 1, 1]),
    ] {
        assert_eq!(ok(grid, block, 0), CUDA_ERROR_INVALID_VALUE, "{grid:?} {block:?}");
    }
    assert_eq!(ok([1, 1, 1], [1024, 1, 1], 49152), CUDA_SUCCESS);
    assert_eq!(ok([1, 1, 1], [1024, 1, 1], 49153), CUDA_ERROR_INVALID_VALUE);

    let mut params = vector_add_params(d, d, d, 0);
    let mut table: Vec<*mut c_void> = params.iter_mut().map(|p| p.as_mut_ptr().cast()).collect();
    let mut extra = [ptr::null_mut::<c_void>()];
    // SAFETY: a valid table; `extra` is refused before it is read.
    let code = unsafe {
        api::launch_kernel(f, 1, 1, 1, 1, 1, 1, 0, ptr::null_mut(), table.as_mut_ptr(), extra.as_mut_ptr())
    };
    assert_eq!(code, CUDA_ERROR_INVALID_VALUE);
    // SAFETY: a null table is refused for a kernel with parameters.
    let code = unsafe {
        api::launch_kernel(f, 1, 1, 1, 1, 1, 1, 0, ptr::null_mut(), ptr::null_mut(), ptr::null_mut())
    };
    assert_eq!(code, CUDA_ERROR_INVALID_VALUE);
    table[2] = ptr::null_mut();
    // SAFETY: a valid table but for a null entry, which is refused.
    let code = unsafe {
        api::launch_kernel(f, 1, 1, 1, 1, 1, 1, 0, ptr::null_mut(), table.as_mut_ptr(), ptr::null_mut())
    };
    assert_eq!(code, CUDA_ERROR_INVALID_VALUE);
    // SAFETY: a valid table; the stream is refused.
    let code = unsafe {
        api::launch_kernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            ptr::without_provenance_mut(0x99_9999),
            table.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    assert_eq!(code, CUDA_ERROR_INVALID_HANDLE);
    assert_eq!(launch_with(ptr::null_mut(), [1, 1, 1], [1, 1, 1], 0, &mut []), CUDA_ERROR_INVALID_HANDLE);

    // An instruction the interpreter does not run refuses the module at load, naming its line.
    let texture =
        SHARED_KERNEL.replace("\tret;", "\t.reg .f32 %f<5>;\n\t.reg .b32 %r<2>;\n\ttex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];\n\tret;");
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_8, &texture).unwrap_err();
    assert_eq!(code, CUDA_ERROR_NOT_SUPPORTED);
    assert!(log.contains("line 11") && log.contains("tex.1d.v4.f32.s32"), "{log}");
    // A register nobody declared: not PTX (ptxas refuses it too).
    let undeclared = SHARED_KERNEL.replace("\tret;", "\tmov.u32 %r1, 0;\n\tret;");
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_8, &undeclared).unwrap_err();
    assert_eq!(code, CUDA_ERROR_INVALID_PTX);
    assert!(log.contains("line 9") && log.contains("`%r1` is not declared"), "{log}");
    // A kernel that only returns runs.
    let tiled = function(load(SHARED_KERNEL), "tiled").unwrap();
    assert_eq!(launch_with(tiled, [1, 1, 1], [1, 1, 1], 0, &mut [d.to_le_bytes().to_vec()]), CUDA_SUCCESS);
}

#[test]
fn dynamic_shared_memory_past_48_kib_needs_the_opt_in() {
    let _session = session_on(true, 65536);
    let f = function(load(VECTOR_ADD), "vector_add").unwrap();
    let d = alloc(16).unwrap();
    let launch = |shared| launch_with(f, [1, 1, 1], [4, 1, 1], shared, &mut vector_add_params(d, d, d, 4));
    assert_eq!(launch(49152), CUDA_SUCCESS);
    assert_eq!(launch(49153), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(
        api::func_set_attribute(f, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES, 65537),
        CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(
        api::func_set_attribute(f, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES, -1),
        CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(api::func_set_attribute(f, fn_attr::SHARED_SIZE_BYTES, 0), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(api::func_set_attribute(f, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536), CUDA_SUCCESS);
    assert_eq!(func_attribute(f, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES), Ok(65536));
    assert_eq!(launch(65536), CUDA_SUCCESS);
    assert_eq!(launch(65537), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(api::func_set_attribute(f, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES, 1000), CUDA_SUCCESS);
    assert_eq!(launch(1001), CUDA_ERROR_INVALID_VALUE);

    // Static shared memory counts against both limits.
    let tiled = function(load(SHARED_KERNEL), "tiled").unwrap();
    assert_eq!(func_attribute(tiled, fn_attr::SHARED_SIZE_BYTES), Ok(4096));
    assert_eq!(func_attribute(tiled, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES), Ok(49152 - 4096));
    assert_eq!(
        api::func_set_attribute(tiled, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536 - 4096),
        CUDA_SUCCESS
    );
    assert_eq!(
        api::func_set_attribute(tiled, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536 - 4095),
        CUDA_ERROR_INVALID_VALUE
    );
}

#[test]
fn handles_of_other_contexts_are_refused() {
    let first = session();
    let module = load(VECTOR_ADD);
    let f = function(module, "vector_add").unwrap();
    let s = stream();
    let d = alloc(64).unwrap();
    let second = session();
    assert_eq!(function(module, "vector_add"), Err(CUDA_ERROR_INVALID_HANDLE));
    assert_eq!(func_attribute(f, fn_attr::SHARED_SIZE_BYTES), Err(CUDA_ERROR_INVALID_HANDLE));
    assert_eq!(api::stream_synchronize(s), CUDA_ERROR_INVALID_HANDLE);
    assert_eq!(api::stream_destroy(s), CUDA_ERROR_INVALID_HANDLE);
    assert_eq!(api::module_unload(module), CUDA_ERROR_INVALID_HANDLE);
    assert_eq!(api::mem_free(d), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(upload(d, &[0; 4]), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(
        launch_with(f, [1, 1, 1], [1, 1, 1], 0, &mut vector_add_params(d, d, d, 1)),
        CUDA_ERROR_INVALID_HANDLE
    );
    drop(second);
    // Back in the first context: everything works, within bounds.
    assert_eq!(upload(d, &[1; 64]), CUDA_SUCCESS);
    assert_eq!(upload(d + 60, &[1; 5]), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(download(d + 1, &mut [0; 64]), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(upload(d + 64, &[]), CUDA_SUCCESS, "0 bytes copy nothing");
    assert_eq!(api::mem_free(d + 4), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(alloc(0), Err(CUDA_ERROR_INVALID_VALUE));
    assert_eq!(alloc(usize::MAX), Err(CUDA_ERROR_OUT_OF_MEMORY));
    assert_eq!(api::stream_destroy(ptr::null_mut()), CUDA_ERROR_INVALID_HANDLE);
    assert_eq!(api::stream_destroy(s), CUDA_SUCCESS);
    assert_eq!(api::stream_destroy(s), CUDA_ERROR_INVALID_HANDLE);
    assert_eq!(api::mem_free(d), CUDA_SUCCESS);
    assert_eq!(api::mem_free(d), CUDA_ERROR_INVALID_VALUE);
    drop(first);
}

#[test]
fn an_illegal_access_makes_the_context_sticky_until_it_is_reset() {
    let session = session_on(false, 232_448);
    let ordinal = session.ordinal;
    let module = load(VECTOR_ADD);
    let f = function(module, "vector_add").unwrap();
    let s = stream();
    let d = alloc(64).unwrap();
    let kept = alloc(16).unwrap();
    // Without pageable memory access a host pointer is an illegal address.
    let host = [0f32; 16];
    let host_addr = host.as_ptr().expose_provenance() as u64;
    let launched = control::stat(0);
    assert_eq!(
        launch_with(f, [1, 1, 1], [16, 1, 1], 0, &mut vector_add_params(host_addr, d, d, 16)),
        CUDA_SUCCESS
    );
    assert!(control::stat(0) > launched);
    assert_eq!(control::sticky_error(ordinal), CUDA_ERROR_ILLEGAL_ADDRESS);

    let mut bytes = [0u8; 4];
    let mut value = 0;
    let mut count = 0;
    let mut new_stream = ptr::null_mut();
    let sticky = [
        ("cuStreamSynchronize", api::stream_synchronize(s)),
        ("cuMemcpyHtoDAsync_v2", upload(d, &bytes)),
        ("cuMemcpyDtoHAsync_v2", download(d, &mut bytes)),
        ("cuMemAlloc_v2", alloc(4).unwrap_err()),
        ("cuMemFree_v2", api::mem_free(kept)),
        ("cuModuleLoadDataEx", load_on(EmulatedDriver::Cuda12_8, VECTOR_ADD).unwrap_err().0),
        ("cuModuleGetFunction", function(module, "vector_add").unwrap_err()),
        // SAFETY: `count` is writable.
        ("cuFuncGetParamCount", unsafe { api::func_get_param_count(f, &mut count) }),
        // SAFETY: `value` is writable.
        ("cuFuncGetAttribute", unsafe { api::func_get_attribute(&mut value, 1, f) }),
        ("cuFuncSetAttribute", api::func_set_attribute(f, fn_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES, 0)),
        // SAFETY: `new_stream` is writable.
        ("cuStreamCreate", unsafe { api::stream_create(&mut new_stream, 0) }),
        ("cuStreamDestroy_v2", api::stream_destroy(s)),
        ("cuLaunchKernel", launch_with(f, [1, 1, 1], [1, 1, 1], 0, &mut vector_add_params(d, d, d, 1))),
        ("cuModuleUnload", api::module_unload(module)),
    ];
    for (entry, code) in sticky {
        assert_eq!(code, CUDA_ERROR_ILLEGAL_ADDRESS, "{entry}");
    }
    assert!(new_stream.is_null());
    // Context management still works.
    assert_eq!(pop(), Ok(session.context));
    assert_eq!(api::ctx_push_current(session.context), CUDA_SUCCESS);
    assert_eq!(retain(ordinal), Ok(session.context));
    assert_eq!(api::device_primary_ctx_release(ordinal), CUDA_SUCCESS);
    assert_eq!(control::live(ordinal, 3), 2);

    // The reset clears it: a fresh context, nothing left of the old one.
    assert_eq!(api::device_primary_ctx_reset(ordinal), CUDA_SUCCESS);
    assert_eq!(control::sticky_error(ordinal), 0);
    assert_eq!(control::live(ordinal, 3), 0);
    assert_eq!(api::stream_synchronize(s), CUDA_ERROR_INVALID_CONTEXT);
    assert_eq!(pop(), Ok(session.context));
    let fresh = retain(ordinal).unwrap();
    assert_eq!(api::ctx_push_current(fresh), CUDA_SUCCESS);
    assert_eq!(control::live(ordinal, 0), 2);
    let f = function(load(VECTOR_ADD), "vector_add").unwrap();
    let d = alloc(64).unwrap();
    assert_eq!(launch_with(f, [1, 1, 1], [16, 1, 1], 0, &mut vector_add_params(d, d, d, 16)), CUDA_SUCCESS);
    assert_eq!(api::stream_synchronize(ptr::null_mut()), CUDA_SUCCESS);
    // One float past the end of the 64-byte allocation is still its shared page: no fault, as
    // on a GPU, but the store there is recorded.
    let crossings = control::crossings(ordinal);
    assert_eq!(launch_with(f, [1, 1, 1], [17, 1, 1], 0, &mut vector_add_params(d, d, d, 17)), CUDA_SUCCESS);
    assert_eq!(api::stream_synchronize(ptr::null_mut()), CUDA_SUCCESS);
    assert_eq!(control::crossings(ordinal), crossings + 1);
    // A null pointer is outside every mapping.
    assert_eq!(launch_with(f, [1, 1, 1], [16, 1, 1], 0, &mut vector_add_params(0, d, d, 16)), CUDA_SUCCESS);
    assert_eq!(api::stream_synchronize(ptr::null_mut()), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(api::device_primary_ctx_release(ordinal), CUDA_SUCCESS);
    drop(session);
    assert_eq!(control::live(ordinal, 0), 0);
    assert_eq!(control::sticky_error(ordinal), 0, "destroyed with its context");
}

#[test]
fn injected_failures_have_no_effect() {
    let session = session();
    let ordinal = session.ordinal;
    control::clear_faults();
    let name = |s: &str| CString::new(s).unwrap();
    let alloc_name = name("cuMemAlloc_v2");
    // SAFETY: NUL-terminated names.
    unsafe {
        control::fail_call(alloc_name.as_ptr(), 2, 9999);
    }
    // SAFETY: as above.
    unsafe { control::fail_call(alloc_name.as_ptr(), 3, i32::MAX) };
    // SAFETY: as above.
    unsafe { control::fail_call(name("cuModuleLoadDataEx").as_ptr(), 1, -1) };
    // SAFETY: as above.
    unsafe { control::fail_call(name("cuLaunchKernel").as_ptr(), 1, 701) };
    // SAFETY: as above; an unknown name arms nothing.
    unsafe { control::fail_call(name("cuMemAlloc").as_ptr(), 1, 2) };

    let first = alloc(16).unwrap();
    let mut dptr = 0xdead;
    // SAFETY: `dptr` is writable.
    assert_eq!(unsafe { api::mem_alloc(&mut dptr, 16) }, 9999);
    assert_eq!(dptr, 0xdead, "no out-parameter written");
    // SAFETY: as above.
    assert_eq!(unsafe { api::mem_alloc(&mut dptr, 16) }, i32::MAX);
    assert_eq!(control::live(ordinal, 3), 1, "nothing allocated");
    assert_ne!(alloc(16).unwrap(), first);
    // SAFETY: a NUL-terminated name.
    assert_eq!(unsafe { control::call_count(alloc_name.as_ptr()) }, 4);

    let (code, module, log, written) = load_raw(EmulatedDriver::Cuda12_8, VECTOR_ADD);
    assert_eq!((code, module, log, written), (-1, ptr::null_mut(), [0xff; 256], 256), "no log, no module");
    assert_eq!(control::live(ordinal, 1), 0);
    let f = function(load(VECTOR_ADD), "vector_add").unwrap();
    let d = alloc(64).unwrap();
    let launched = control::stat(0);
    assert_eq!(launch_with(f, [1, 1, 1], [16, 1, 1], 0, &mut vector_add_params(0, 0, 0, 16)), 701);
    assert_eq!(control::stat(0), launched, "an injected failure launches nothing");
    assert_eq!(launch_with(f, [1, 1, 1], [16, 1, 1], 0, &mut vector_add_params(d, d, d, 16)), CUDA_SUCCESS);
    assert!(control::stat(0) > launched);
    assert!(control::stat(2) >= 16);
    // The one effect: a sticky code is the context's from then on, as a real fault's is.
    // SAFETY: a NUL-terminated name.
    unsafe { control::fail_call(name("cuStreamSynchronize").as_ptr(), 1, 226) };
    assert_eq!(api::stream_synchronize(ptr::null_mut()), 226);
    assert_eq!(control::sticky_error(ordinal), 226);
    assert_eq!(api::device_primary_ctx_reset(ordinal), CUDA_SUCCESS);
    assert_eq!(control::sticky_error(ordinal), 0);

    control::clear_faults();
    // SAFETY: a NUL-terminated name.
    assert_eq!(unsafe { control::call_count(alloc_name.as_ptr()) }, 0);
    // SAFETY: null names arm and count nothing.
    unsafe { control::fail_call(ptr::null(), 1, 1) };
    // SAFETY: as above.
    assert_eq!(unsafe { control::call_count(ptr::null()) }, 0);
}

#[test]
fn releasing_the_context_frees_everything_in_it() {
    let session = session_on(false, 232_448);
    let ordinal = session.ordinal;
    let module = load(VECTOR_ADD);
    let _ = load(SCALARS);
    let _streams = [stream(), stream()];
    let _memory = [alloc(100).unwrap(), alloc(28).unwrap(), alloc(4096).unwrap()];
    let f = function(module, "vector_add").unwrap();
    let d = alloc(64).unwrap();
    assert_eq!(launch_with(f, [1, 1, 1], [16, 1, 1], 0, &mut vector_add_params(d, d, d, 16)), CUDA_SUCCESS);
    assert_eq!(
        (0..5).map(|what| control::live(ordinal, what)).collect::<Vec<_>>(),
        [1, 2, 2, 4, 100 + 28 + 4096 + 64]
    );
    assert_eq!(control::live(ordinal, 5), -1);
    assert_eq!(control::live(-1, 0), -1);
    drop(session);
    assert_eq!((0..5).map(|what| control::live(ordinal, what)).collect::<Vec<_>>(), [0; 5]);
}

#[test]
fn modules_are_compiled_for_the_device_and_entries_bound_their_blocks() {
    let session = session(); // compute capability 9.0
    // A `.target` above the device's compute capability is refused, as the JIT refuses it.
    let (code, log, _) =
        load_on(EmulatedDriver::Cuda12_8, &VECTOR_ADD.replacen(".target sm_52", ".target sm_100", 1))
            .unwrap_err();
    assert_eq!(code, CUDA_ERROR_INVALID_PTX);
    assert!(log.contains("SM version specified by .target (sm_100)"), "{log}");
    for target in ["sm_90", "sm_90a", "sm_80"] {
        assert!(
            load_on(EmulatedDriver::Cuda12_8, &VECTOR_ADD.replacen("sm_52", target, 1)).is_ok(),
            "{target}"
        );
    }

    // `.maxntid` and `.reqntid` bound the block; the function's attribute says the bound.
    let bounded = |directive: &str| {
        // The directive between vector_add's parameter list and its body (its first entry).
        let at = VECTOR_ADD.find(")\n{").expect("vector_add's parameter list ends with `)` then `{`");
        let ptx = format!("{}) {directive}\n{{{}", &VECTOR_ADD[..at], &VECTOR_ADD[at + 3..]);
        function(load(&ptx), "vector_add").unwrap()
    };
    let max = bounded(".maxntid 128, 1, 1");
    assert_eq!(func_attribute(max, fn_attr::MAX_THREADS_PER_BLOCK), Ok(128));
    let n = 64u32;
    let (da, db, dout) = (alloc(256).unwrap(), alloc(256).unwrap(), alloc(256).unwrap());
    let params = || vector_add_params(da, db, dout, n);
    assert_eq!(launch_with(max, [1, 1, 1], [256, 1, 1], 0, &mut params()), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(launch_with(max, [1, 1, 1], [64, 2, 1], 0, &mut params()), CUDA_SUCCESS);
    let required = bounded(".reqntid 64, 2");
    assert_eq!(func_attribute(required, fn_attr::MAX_THREADS_PER_BLOCK), Ok(128));
    assert_eq!(launch_with(required, [1, 1, 1], [128, 1, 1], 0, &mut params()), CUDA_ERROR_INVALID_VALUE);
    assert_eq!(launch_with(required, [1, 1, 1], [64, 2, 1], 0, &mut params()), CUDA_SUCCESS);
    let unbounded = function(load(VECTOR_ADD), "vector_add").unwrap();
    assert_eq!(func_attribute(unbounded, fn_attr::MAX_THREADS_PER_BLOCK), Ok(1024));
    assert_eq!(api::stream_synchronize(stream()), CUDA_SUCCESS);
    assert_eq!(control::sticky_error(session.ordinal), 0);
}

#[test]
fn stream_work_runs_after_the_call_and_a_fault_waits_for_the_synchronisation() {
    let session = session();
    let ordinal = session.ordinal;
    let s = stream();
    let f = function(load(VECTOR_ADD), "vector_add").unwrap();
    let d = alloc(64).unwrap();
    let source = floats((0..16).map(|i| i as f32));
    // Page-locked host memory (`cuMemHostAlloc`), which a copy from the device leaves before
    // it runs; into pageable memory the call waits for the copy (below).
    let page_locked = |len: usize| {
        let mut host: *mut c_void = ptr::null_mut();
        // SAFETY: `host` is writable for one pointer.
        assert_eq!(unsafe { api::mem_host_alloc(&mut host, len, 0) }, CUDA_SUCCESS);
        // SAFETY: a live allocation of `len` bytes, freed only at the end of this test, which
        // nothing else touches.
        unsafe { std::slice::from_raw_parts_mut(host.cast::<u8>(), len) }
    };
    let back = page_locked(64);
    back.fill(0);
    // A slow device: each queued operation waits 20 ms before it runs. (Library-wide: the
    // other tests of this file only wait longer.)
    control::set_delay(20_000);
    // SAFETY: `source` and `back` live, unmoved, until the stream is synchronised below.
    unsafe {
        assert_eq!(api::memcpy_htod_async(d, source.as_ptr().cast(), 64, s), CUDA_SUCCESS);
        assert_eq!(api::memcpy_dtoh_async(back.as_mut_ptr().cast(), d, 64, s), CUDA_SUCCESS);
    }
    // The calls returned with the work queued: nothing was copied yet.
    assert_eq!(back, [0u8; 64]);
    assert_eq!(api::stream_synchronize(s), CUDA_SUCCESS);
    assert_eq!(back, source.as_slice());
    // Into pageable memory the copy has run when the call returns, as a GPU's does.
    let mut pageable = vec![0u8; 64];
    // SAFETY: `pageable` lives, unmoved, until the stream is synchronised below.
    assert_eq!(unsafe { api::memcpy_dtoh_async(pageable.as_mut_ptr().cast(), d, 64, s) }, CUDA_SUCCESS);
    assert_eq!(pageable, source);
    assert_eq!(api::stream_synchronize(s), CUDA_SUCCESS);
    // A kernel that stores through a null pointer: the launch succeeds, the fault comes with
    // the synchronisation, and the copy queued after the kernel never runs.
    let mut params = vector_add_params(d, d, 0, 16);
    let mut table: Vec<*mut c_void> = params.iter_mut().map(|p| p.as_mut_ptr().cast()).collect();
    let after = page_locked(64);
    after.fill(0);
    // SAFETY: one pointer per parameter, of its size; `after` lives until the synchronisation.
    unsafe {
        let code = api::launch_kernel(f, 1, 1, 1, 16, 1, 1, 0, s, table.as_mut_ptr(), ptr::null_mut());
        assert_eq!(code, CUDA_SUCCESS);
        assert_eq!(api::memcpy_dtoh_async(after.as_mut_ptr().cast(), d, 64, s), CUDA_SUCCESS);
    }
    assert_eq!(control::sticky_error(ordinal), 0, "the kernel has not run yet");
    assert_eq!(api::stream_synchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    control::set_delay(0);
    assert_eq!(after, [0u8; 64], "work queued after the fault was dropped");
    assert_eq!(control::sticky_error(ordinal), CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(api::device_primary_ctx_reset(ordinal), CUDA_SUCCESS);
}

#[test]
fn the_ptx_itself_runs_vector_add_and_counts_its_instructions() {
    let _session = session();
    let f = function(load(VECTOR_ADD), "vector_add").unwrap();
    let (a, b, out) = (alloc(1024).unwrap(), alloc(1024).unwrap(), alloc(1024).unwrap());
    assert_eq!(upload(a, &floats((0..256).map(|i| i as f32))), CUDA_SUCCESS);
    assert_eq!(upload(b, &floats((0..256).map(|i| 0.25 * i as f32))), CUDA_SUCCESS);
    assert_eq!(
        launch_with(f, [1, 1, 1], [256, 1, 1], 0, &mut vector_add_params(a, b, out, 200)),
        CUDA_SUCCESS
    );
    let mut bytes = vec![0u8; 1024];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    let got = f32s(&bytes);
    for (i, &value) in got.iter().enumerate().take(200) {
        assert_eq!(value, 1.25 * i as f32, "element {i}");
    }
    assert!(got[200..].iter().all(|v| v.to_bits() == u32::from_le_bytes([POISON; 4])), "past n: untouched");
    // nvcc's PTX, counted by hand: 22 instructions for a thread with i < n (ld.param x4,
    // mov x3, mad, setp, bra, then cvta, mul.wide, add, cvta, add, ld x2, add.f32, cvta, add,
    // st, ret), 11 for one past n (to the branch, then ret).
    assert_eq!(instructions(f), 200 * 22 + 56 * 11);
}

#[test]
fn a_grid_stride_loop_covers_every_element() {
    let _session = session();
    let f = function(load(GRID_STRIDE), "saxpy_grid_stride").unwrap();
    let n = 1000u32;
    let (x, y) = (alloc(4000).unwrap(), alloc(4000).unwrap());
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let ys: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    assert_eq!(upload(x, &floats(xs.iter().copied())), CUDA_SUCCESS);
    assert_eq!(upload(y, &floats(ys.iter().copied())), CUDA_SUCCESS);
    // 2 blocks of 64 threads: each thread strides over about 8 elements.
    let mut params = vec![
        1.5f32.to_le_bytes().to_vec(),
        x.to_le_bytes().to_vec(),
        y.to_le_bytes().to_vec(),
        n.to_le_bytes().to_vec(),
    ];
    assert_eq!(launch_with(f, [2, 1, 1], [64, 1, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = vec![0u8; 4000];
    assert_eq!(download(y, &mut bytes), CUDA_SUCCESS);
    for (i, got) in f32s(&bytes).into_iter().enumerate() {
        // fma.rn.f32: one rounding.
        assert_eq!(got.to_bits(), 1.5f32.mul_add(xs[i], ys[i]).to_bits(), "element {i}");
    }
    // The kernel's cost as a number (docs/performance.md): a change in its PTX or in the
    // interpreter's counting shows here.
    assert_eq!(instructions(f), 11920, "saxpy_grid_stride, n = 1000, 2 x 64 threads");
}

#[test]
fn a_shared_memory_reduction_synchronises_its_block() {
    let _session = session();
    let f = function(load(BLOCK_SUM), "block_sum").unwrap();
    let n = 1000u32;
    let values: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let (input, out) = (alloc(4000).unwrap(), alloc(16).unwrap());
    assert_eq!(upload(input, &floats(values.iter().copied())), CUDA_SUCCESS);
    let mut params = vec![input.to_le_bytes().to_vec(), out.to_le_bytes().to_vec(), n.to_le_bytes().to_vec()];
    assert_eq!(launch_with(f, [4, 1, 1], [256, 1, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = vec![0u8; 16];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    // Small integers: exact in f32 whatever the order of the additions.
    let want: Vec<f32> = values.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(f32s(&bytes), want);
    // The kernel's cost as a number (docs/performance.md): a change in its PTX or in the
    // interpreter's counting shows here.
    assert_eq!(instructions(f), 80796, "block_sum, n = 1000, 4 x 256 threads");
}

#[test]
fn a_two_dimensional_kernel_sees_its_rows_and_columns() {
    let _session = session();
    let f = function(load(TRANSPOSE), "transpose").unwrap();
    let (rows, cols) = (37u32, 53u32);
    let len = (rows * cols) as usize;
    let (input, out) = (alloc(4 * len).unwrap(), alloc(4 * len).unwrap());
    assert_eq!(upload(input, &floats((0..len).map(|i| i as f32))), CUDA_SUCCESS);
    let mut params = vec![
        input.to_le_bytes().to_vec(),
        out.to_le_bytes().to_vec(),
        rows.to_le_bytes().to_vec(),
        cols.to_le_bytes().to_vec(),
    ];
    let grid = [cols.div_ceil(16), rows.div_ceil(8), 1];
    assert_eq!(launch_with(f, grid, [16, 8, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = vec![0u8; 4 * len];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    let got = f32s(&bytes);
    for r in 0..rows as usize {
        for c in 0..cols as usize {
            assert_eq!(got[c * rows as usize + r], (r * cols as usize + c) as f32, "({r}, {c})");
        }
    }
    // The kernel's cost as a number (docs/performance.md): a change in its PTX or in the
    // interpreter's counting shows here.
    assert_eq!(instructions(f), 63130, "transpose, 37 x 53, 4 x 5 blocks of 16 x 8");
}

#[test]
fn atomics_lose_no_update_across_kernels_running_at_once() {
    let _session = session();
    let f = function(load(HISTOGRAM), "histogram").unwrap();
    let n = 20_000u32;
    let data: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(37) % 251) as u8).collect();
    let (d, bins) = (alloc(n as usize).unwrap(), alloc(1024).unwrap());
    assert_eq!(upload(d, &data), CUDA_SUCCESS);
    assert_eq!(upload(bins, &[0u8; 1024]), CUDA_SUCCESS);
    // The same histogram on two streams at once, into the same bins.
    let (s1, s2) = (stream(), stream());
    for s in [s1, s2] {
        let mut params = [d.to_le_bytes().to_vec(), bins.to_le_bytes().to_vec(), n.to_le_bytes().to_vec()];
        let mut table: Vec<*mut c_void> = params.iter_mut().map(|p| p.as_mut_ptr().cast()).collect();
        // SAFETY: one pointer per parameter, of its size; the kernel parameters are copied by
        // the call.
        let code = unsafe {
            api::launch_kernel(f, n.div_ceil(128), 1, 1, 128, 1, 1, 0, s, table.as_mut_ptr(), ptr::null_mut())
        };
        assert_eq!(code, CUDA_SUCCESS);
    }
    assert_eq!(api::stream_synchronize(s1), CUDA_SUCCESS);
    assert_eq!(api::stream_synchronize(s2), CUDA_SUCCESS);
    let mut bytes = vec![0u8; 1024];
    assert_eq!(download(bins, &mut bytes), CUDA_SUCCESS);
    let mut want = [0u32; 256];
    for &b in &data {
        want[usize::from(b)] += 2;
    }
    assert_eq!(u32s(&bytes), want);
    // The kernel's cost as a number (docs/performance.md): a change in its PTX or in the
    // interpreter's counting shows here.
    assert_eq!(instructions(f), 721920, "histogram, n = 20000, twice 157 x 128 threads");
    assert_eq!(api::stream_destroy(s1), CUDA_SUCCESS);
    assert_eq!(api::stream_destroy(s2), CUDA_SUCCESS);
}

#[test]
fn each_thread_has_its_own_local_memory() {
    let _session = session();
    let f = function(load(LOCAL_ARRAY), "local_array").unwrap();
    let idx: Vec<i32> = (0..64).map(|t| (t * 5 + 3) % 11).collect();
    let (d_idx, out) = (alloc(256).unwrap(), alloc(256).unwrap());
    let bytes: Vec<u8> = idx.iter().flat_map(|i| i.to_le_bytes()).collect();
    assert_eq!(upload(d_idx, &bytes), CUDA_SUCCESS);
    let mut params = vec![d_idx.to_le_bytes().to_vec(), out.to_le_bytes().to_vec()];
    assert_eq!(launch_with(f, [1, 1, 1], [64, 1, 1], 0, &mut params), CUDA_SUCCESS);
    let mut got = vec![0u8; 256];
    assert_eq!(download(out, &mut got), CUDA_SUCCESS);
    let want: Vec<f32> = idx.iter().map(|i| (i & 7) as f32 * 1.5).collect();
    assert_eq!(f32s(&got), want);
}

/// A module with `.global` variables (a `__device__` variable, a table): each launch reads and
/// writes them where the module's load placed them, at `[name]`, `[name+offset]` and through
/// `mov.u64 %rd, name`, and writes their address out.
const MODULE_GLOBALS: &str = ".version 7.8\n.target sm_90\n.address_size 64\n\
    .global .align 4 .u32 counter = 40;\n.global .align 8 .u64 zeroed;\n\
    .global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n\
    .visible .entry bump(.param .u64 out)\n{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<5>;\n\
    \tld.param.u64 %rd1, [out];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
    \tatom.global.add.u32 %r1, [counter], 1;\n\tmov.u64 %rd3, table;\n\tld.global.u8 %r2, [%rd3+5];\n\
    \tld.global.u32 %r3, [table+4];\n\tld.global.u64 %rd4, [zeroed];\n\
    \tst.global.u32 [%rd2], %r1;\n\tst.global.u32 [%rd2+4], %r2;\n\tst.global.u32 [%rd2+8], %r3;\n\
    \tst.global.u64 [%rd2+16], %rd4;\n\tst.global.u64 [%rd2+24], %rd3;\n\tret;\n}\n";

/// A module's `.global` variables are one allocation its load makes, initialized (zeros where a
/// variable has no initializer): they keep their values from launch to launch, die with the
/// module (a load again starts from the initializers), are not the embedder's to free, and are
/// not counted among the context's allocations. A `.extern .global` variable, defined in a
/// module the emulated driver does not link, is refused by name.
#[test]
fn module_globals_persist_across_launches_and_die_with_the_module() {
    let session = session();
    let out = alloc(32).unwrap();
    let allocations = control::live(session.ordinal, 3);
    let module = load(MODULE_GLOBALS);
    assert_eq!(control::live(session.ordinal, 3), allocations, "the module's, not the embedder's");
    let bump = function(module, "bump").unwrap();
    let run = |f: api::CUfunction| {
        assert_eq!(launch_with(f, [1, 1, 1], [1, 1, 1], 0, &mut [out.to_le_bytes().to_vec()]), CUDA_SUCCESS);
        let mut bytes = [0u8; 32];
        assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let address = u64::from_le_bytes(bytes[24..32].try_into().unwrap());
        (word(0), word(4), word(8), u64::from_le_bytes(bytes[16..24].try_into().unwrap()), address)
    };
    let (counter, byte, word, zeroed, table) = run(bump);
    assert_eq!((counter, byte, word, zeroed), (40, 6, u32::from_le_bytes([5, 6, 7, 8]), 0));
    assert_eq!(run(bump).0, 41, "kept from the launch before");
    assert_eq!(api::mem_free(table), CUDA_ERROR_INVALID_VALUE, "the module's to free");
    assert_eq!(api::module_unload(module), CUDA_SUCCESS);
    let again = function(load(MODULE_GLOBALS), "bump").unwrap();
    assert_eq!(run(again).0, 40, "a new module starts from the initializers");

    let declared =
        MODULE_GLOBALS.replace(".global .align 8 .u64 zeroed;", ".extern .global .align 8 .u64 zeroed;");
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_8, &declared).unwrap_err();
    assert_eq!(code, CUDA_ERROR_NOT_SUPPORTED);
    assert!(log.contains("line 5") && log.ends_with("the .extern .global variable `zeroed`"), "{log}");
}

/// A module whose entry calls a `.func` twice (two call sequences, each its own block with
/// parameters of the same names, as nvcc writes them), and whose `.func` calls another; a
/// guarded call; and a device assert.
const CALLS: &str = ".version 7.8\n.target sm_90\n.address_size 64\n\
    .extern .func __assertfail(.param .b64 m);\n\
    .func (.param .b32 r) twice(.param .b32 x)\n{\n\t.reg .b32 %r<3>;\n\tld.param.b32 %r1, [x];\n\
    \tshl.b32 %r2, %r1, 1;\n\tst.param.b32 [r], %r2;\n\tret;\n}\n\
    .func (.param .b32 r) plus_twice(.param .b32 a, .param .b32 b)\n{\n\t.reg .b32 %r<5>;\n\
    \tld.param.b32 %r1, [a];\n\tld.param.b32 %r2, [b];\n\
    \t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r2;\n\t.param .b32 retval0;\n\
    \tcall.uni (retval0), twice, (param0);\n\tld.param.b32 %r3, [retval0+0];\n\t}\n\
    \tadd.s32 %r4, %r1, %r3;\n\tst.param.b32 [r], %r4;\n\tret;\n}\n\
    .visible .entry calls(.param .u64 out, .param .u32 fail)\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<8>;\n\
    \t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [out];\n\tld.param.u32 %r7, [fail];\n\
    \tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd2, %r1, 8;\n\tadd.s64 %rd3, %rd1, %rd2;\n\
    \t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r1;\n\t.param .b32 retval0;\n\
    \tcall.uni (retval0), twice, (param0);\n\tld.param.b32 %r2, [retval0+0];\n\t}\n\
    \t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r2;\n\t.param .b32 param1;\n\
    \tst.param.b32 [param1+0], %r1;\n\t.param .b32 retval0;\n\
    \tcall.uni (retval0), plus_twice, (param0, param1);\n\tld.param.b32 %r3, [retval0+0];\n\t}\n\
    \tst.global.v2.u32 [%rd3], {%r2, %r3};\n\tsetp.eq.u32 %p1, %r7, %r1;\n\
    \t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n\
    \t@%p1 call.uni __assertfail, (param0);\n\t}\n\tret;\n}\n";

/// Calls run as a GPU runs them: arguments in, the callee's body, return values out, back to
/// the instruction after the call, in each thread; a `.func` calls another. A failed
/// device-side `assert` (`__assertfail`) stops the kernel with `CUDA_ERROR_ASSERT`, sticky. A
/// call of a function the module does not define (`vprintf`) or a recursive one is refused at
/// the load, naming the line.
#[test]
fn calls_run_in_each_thread_and_a_failed_assert_is_a_device_assert() {
    let session = session();
    let out = alloc(8 * 64).unwrap();
    let f = function(load(CALLS), "calls").unwrap();
    let params = |fail: u32| vec![out.to_le_bytes().to_vec(), fail.to_le_bytes().to_vec()];
    assert_eq!(launch_with(f, [1, 1, 1], [64, 1, 1], 0, &mut params(u32::MAX)), CUDA_SUCCESS);
    let mut bytes = vec![0u8; 8 * 64];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    let words = u32s(&bytes);
    for t in 0..64u32 {
        // twice(t), then plus_twice(twice(t), t) = 2t + 2t.
        assert_eq!(&words[2 * t as usize..2 * t as usize + 2], [2 * t, 4 * t], "thread {t}");
    }
    let printf = CALLS.replace("__assertfail", "vprintf");
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_8, &printf).unwrap_err();
    assert_eq!(code, CUDA_ERROR_NOT_SUPPORTED);
    assert!(log.ends_with("(a call of `vprintf`: no body in the module)"), "{log}");
    let recursive = CALLS.replace(
        "call.uni (retval0), twice, (param0);\n\tld.param.b32 %r3",
        "call.uni (retval0), plus_twice, (param0);\n\tld.param.b32 %r3",
    );
    let (code, log, _) = load_on(EmulatedDriver::Cuda12_8, &recursive).unwrap_err();
    assert_eq!(code, CUDA_ERROR_NOT_SUPPORTED);
    assert!(log.contains("line 22") && log.ends_with("a call of `plus_twice`: recursive"), "{log}");
    assert_eq!(control::sticky_error(session.ordinal), 0);
    // Thread 5's assert fails.
    assert_eq!(launch_with(f, [1, 1, 1], [64, 1, 1], 0, &mut params(5)), CUDA_SUCCESS);
    assert_eq!(control::sticky_error(session.ordinal), CUDA_ERROR_ASSERT);
}

/// A chain of 2000 `.func`s, each calling the next, loads and runs (the decoder walks the calls
/// with a stack of its own); the last one has no `ret` and returns at the end of its body.
#[test]
fn a_long_chain_of_calls_loads_and_a_body_without_ret_returns() {
    let _session = session();
    let depth = 2000;
    let mut ptx =
        String::from(".version 7.8\n.target sm_90\n.address_size 64\n.global .align 4 .u32 hits;\n");
    ptx.push_str(&format!(
        ".func f{}()\n{{\n\t.reg .b32 %r<2>;\n\tatom.global.add.u32 %r1, [hits], 1;\n}}\n",
        depth - 1
    ));
    for k in (0..depth - 1).rev() {
        ptx.push_str(&format!(".func f{k}()\n{{\n\tcall.uni f{}, ();\n\tret;\n}}\n", k + 1));
    }
    ptx.push_str(
        ".visible .entry chain(.param .u64 out)\n{\n\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n\
         \tcall.uni f0, ();\n\tcall.uni f0, ();\n\tld.param.u64 %rd1, [out];\n\tld.global.u32 %r1, [hits];\n\
         \tst.global.u32 [%rd1], %r1;\n\tret;\n}\n",
    );
    let f = function(load(&ptx), "chain").unwrap();
    let out = alloc(4).unwrap();
    assert_eq!(launch_with(f, [1, 1, 1], [1, 1, 1], 0, &mut [out.to_le_bytes().to_vec()]), CUDA_SUCCESS);
    let mut bytes = [0u8; 4];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    assert_eq!(u32::from_le_bytes(bytes), 2, "the chain's end reached twice");
}
