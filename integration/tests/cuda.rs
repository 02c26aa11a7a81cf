//! The CUDA launch path against a driver (feature `cuda`): the same tests run against the
//! emulated driver in every CI run (`KARGS_CUDA_DRIVER` names it, `KARGS_CUDA_REQUIRE_DEVICE=1`
//! turns a skip into a failure) and against a GPU's real driver through
//! `scripts/gpu-check.sh` (docs/gpu-validation.md).
//!
//! Where the driver sees no device, the tests that need one print `SKIPPED <test>: <reason>`
//! to stderr (past the harness's capture, so a skip is never silent) and return; the no-device
//! tests assert `NotAvailable` there.
// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod support;

use std::path::PathBuf;

use kernel_args::{
    AbiError, Bound, Detail, Dimension, HostError, LaunchOutcome, LaunchShape, PointerMode, ShapeError,
};
use kernel_args_core::{ArgvBuilder, GuestMemory};
use kernel_args_cuda::{
    CudaDevice, CudaLauncher, CudaOptions, KernelProblem, PointerModeChoice, Sandbox, SetupError,
};
use support::{
    AFFINE, EVERY_SCALAR, VECTOR_ADD, VECTOR_ADD_MANGLED, VECTOR_ADD_UNFENCED, options, registry, say,
};

/// A launcher in `mode` on the device from the environment, or `None` (with the reason
/// printed) where there is no device or it cannot run in that mode.
fn launcher(test: &str, mode: PointerModeChoice) -> Option<CudaLauncher> {
    support::open(test, options(mode)).map(|device| device.launcher())
}

fn shape(n: u32) -> LaunchShape {
    LaunchShape { grid: [n.div_ceil(256).max(1), 1, 1], block: [256, 1, 1], shared_mem_bytes: 0 }
}

fn f32_at(memory: &[u8], offset: usize, i: usize) -> f32 {
    let at = offset + 4 * i;
    f32::from_le_bytes(memory[at..at + 4].try_into().unwrap())
}

/// Guest memory with `a` at 0, `b` after it and `out` after that (each `n` floats); `a` and
/// `b` filled with values whose sums are exact in f32, `out` with a sentinel.
/// (At least the shortest fence and a multiple of 16 bytes, as a wasm memory is: in direct mode
/// a fenced kernel's fence is the guest memory.)
fn vector_memory(n: usize) -> Vec<u8> {
    let mut memory =
        vec![0u8; (3 * 4 * n).max(kernel_args_cuda::fence::MIN_FENCE_LEN as usize).next_multiple_of(16)];
    for i in 0..n {
        let a = i as f32 * 0.5 - 1000.0;
        let b = (i % 977) as f32 * 0.25;
        memory[4 * i..4 * i + 4].copy_from_slice(&a.to_le_bytes());
        memory[4 * (n + i)..4 * (n + i) + 4].copy_from_slice(&b.to_le_bytes());
        memory[4 * (2 * n + i)..4 * (2 * n + i) + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    }
    memory
}

/// Launches `kernel` with argv `(a, b, out, n)` where the windows are given as guest offsets.
fn launch_vector_add(
    launcher: &mut CudaLauncher,
    kernel: i64,
    memory: &mut [u8],
    windows: [u32; 3],
    n: u32,
) -> Result<LaunchOutcome, HostError> {
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(windows[0], 4 * n)
        .unwrap()
        .ptr(windows[1], 4 * n)
        .unwrap()
        .ptr(windows[2], 4 * n)
        .unwrap()
        .u32(n)
        .unwrap();
    let argv = argv.finish();
    let guest = GuestMemory::exclusive(memory);
    support::launch(launcher, kernel, shape(n), &support::checked(argv, &guest), &guest)
}

fn vector_add_in(test: &str, mode: PointerMode) {
    let Some(device) = support::open(test, options(support::forced(mode))) else { return };
    let mut launcher = device.launcher();
    // Not a multiple of the block size, so the bounds check in the kernel matters.
    let n = (1usize << 20) + 3;
    // Fenced (the default), fenced under its mangled name, unfenced.
    for kernel in [VECTOR_ADD, VECTOR_ADD_MANGLED, VECTOR_ADD_UNFENCED] {
        let mut memory = vector_memory(n);
        let reference: Vec<f32> = (0..n).map(|i| f32_at(&memory, 0, i) + f32_at(&memory, 4 * n, i)).collect();
        let windows = [0, (4 * n) as u32, (8 * n) as u32];
        let outcome = launch_vector_add(&mut launcher, kernel, &mut memory, windows, n as u32).unwrap();
        assert_eq!(outcome.pointer_mode, mode);
        assert_ne!(outcome.signature, kernel_args::SignatureCheck::Skipped);
        for (i, want) in reference.iter().enumerate() {
            let got = f32_at(&memory, 8 * n, i);
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{test}: kernel {kernel}, element {i}: {got} != {want}"
            );
        }
    }
    // The fence's cost in wall-clock, printed, never asserted: each kernel's module is loaded
    // already, so a launch is the copies (staged), the kernel and the synchronisation. The fastest of three launches each, interleaved.
    let mut memory = vector_memory(n);
    let windows = [0, (4 * n) as u32, (8 * n) as u32];
    let kernels = [VECTOR_ADD, VECTOR_ADD_UNFENCED];
    let mut best = [std::time::Duration::MAX; 2];
    for _ in 0..3 {
        for (slot, &kernel) in kernels.iter().enumerate() {
            let start = std::time::Instant::now();
            launch_vector_add(&mut launcher, kernel, &mut memory, windows, n as u32).unwrap();
            best[slot] = best[slot].min(start.elapsed());
        }
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let ratio = |d: std::time::Duration| d.as_secs_f64() / best[1].as_secs_f64();
    say(format!(
        "{test}: {n} elements checked against the CPU, three times (fenced, fenced by its mangled name, \
         unfenced); one launch on {}: fenced {:.3} ms ({:.2}), unfenced {:.3} ms (fastest of 3)",
        device.info().name,
        ms(best[0]),
        ratio(best[0]),
        ms(best[1]),
    ));
}

#[test]
fn vector_add_staged() {
    vector_add_in("vector_add_staged", PointerMode::Staged);
}

#[test]
fn vector_add_direct() {
    vector_add_in("vector_add_direct", PointerMode::Direct);
}

#[test]
fn aliasing_windows_are_staged_as_one_buffer() {
    let test = "aliasing_windows_are_staged_as_one_buffer";
    let Some(mut launcher) = launcher(test, PointerModeChoice::Staged) else { return };
    // out = a (in place): a[i] += b[i]; the two windows must be one device buffer.
    let n = 4099usize;
    let mut memory = vector_memory(n);
    let reference: Vec<f32> = (0..n).map(|i| f32_at(&memory, 0, i) + f32_at(&memory, 4 * n, i)).collect();
    launch_vector_add(&mut launcher, VECTOR_ADD, &mut memory, [0, (4 * n) as u32, 0], n as u32).unwrap();
    for (i, want) in reference.iter().enumerate() {
        assert_eq!(f32_at(&memory, 0, i).to_bits(), want.to_bits(), "element {i}");
    }
    // Partly overlapping windows: b's window is 32 floats from `b0`, out's 32 floats from
    // `b0 + 64`, so the two share 64 bytes. The kernel (n = 16) reads b[0..16) and writes
    // out[0..16), i.e. the shared bytes: staged as two buffers, copying b's window back after
    // out's would put b's stale bytes over the results.
    let mut memory = vector_memory(n);
    let b0 = (4 * n) as u32;
    let a: Vec<f32> = (0..16).map(|i| f32_at(&memory, 0, i)).collect();
    let b: Vec<f32> = (0..16).map(|i| f32_at(&memory, b0 as usize, i)).collect();
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 64).unwrap().ptr(b0, 128).unwrap().ptr(b0 + 64, 128).unwrap().u32(16).unwrap();
    let argv = argv.finish();
    {
        let guest = GuestMemory::exclusive(&mut memory);
        let args = support::checked(argv, &guest);
        support::launch(&mut launcher, VECTOR_ADD, shape(16), &args, &guest).unwrap();
    }
    for i in 0..16 {
        let got = f32_at(&memory, b0 as usize + 64, i);
        assert_eq!(got.to_bits(), (a[i] + b[i]).to_bits(), "overlap element {i}");
        assert_eq!(f32_at(&memory, b0 as usize, i).to_bits(), b[i].to_bits(), "b[{i}] is only read");
    }
}

/// The pointer modes a test runs in: each of them, forced (where the device cannot take
/// direct pointers, that mode skips with the reason printed).
const MODES: [PointerModeChoice; 2] = [PointerModeChoice::Staged, PointerModeChoice::Direct];

#[test]
fn every_scalar_reaches_the_kernel_bit_exact() {
    for mode in MODES {
        every_scalar_in(mode);
    }
}

fn every_scalar_in(mode: PointerModeChoice) {
    let test = "every_scalar_reaches_the_kernel_bit_exact";
    let Some(mut launcher) = launcher(test, mode) else { return };
    // The shortest fence: in direct mode the fence is the guest's memory.
    let mut memory = vec![0u8; 256];
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.i32(-123_456).unwrap().i64(-(1 << 40)).unwrap().f32(1.25).unwrap().f64(-2.5e-300).unwrap();
    argv.u32(4_000_000_000).unwrap().u64(1 << 52).unwrap().ptr(8, 48).unwrap();
    let argv = argv.finish();
    {
        let guest = GuestMemory::exclusive(&mut memory);
        let args = support::checked(argv, &guest);
        support::launch(&mut launcher, EVERY_SCALAR, shape(1), &args, &guest).unwrap();
    }
    let out: Vec<f64> =
        (0..6).map(|i| f64::from_le_bytes(memory[8 + 8 * i..16 + 8 * i].try_into().unwrap())).collect();
    assert_eq!(out, [-123_456.0, -(2f64.powi(40)), 1.25, -2.5e-300, 4_000_000_000.0, 2f64.powi(52)]);
}

#[test]
fn signature_mismatches_are_rejected_before_the_launch() {
    for mode in MODES {
        signature_mismatches_in(mode);
    }
}

fn signature_mismatches_in(mode: PointerModeChoice) {
    let test = "signature_mismatches_are_rejected_before_the_launch";
    let Some(mut launcher) = launcher(test, mode) else { return };
    let mut memory = vector_memory(16);
    let untouched = memory.clone();
    {
        let guest = GuestMemory::exclusive(&mut memory);
        let mut buf = [0u8; 64];

        // vector_add without a declaration (a trusted guest's), so that the launcher's own check
        // of the parameter sizes is what refuses: n as a u64, argument 3 is 8 bytes, the
        // kernel's parameter 3 is 4.
        let mut argv = ArgvBuilder::new(&mut buf);
        argv.ptr(0, 64).unwrap().ptr(64, 64).unwrap().ptr(128, 64).unwrap().u64(16).unwrap();
        let argv = argv.finish();
        let undeclared = support::VECTOR_ADD_UNDECLARED;
        let err =
            support::launch(&mut launcher, undeclared, shape(16), &support::checked(argv, &guest), &guest)
                .unwrap_err();
        assert_eq!(err.code(), AbiError::InvalidArgs);
        assert_eq!(err.detail(), &Detail::ParamSize { index: 3, expected: 4, got: 8 });
        // Declared, the declaration refuses it first.
        let err =
            support::launch(&mut launcher, VECTOR_ADD, shape(16), &support::checked(argv, &guest), &guest)
                .unwrap_err();
        assert_eq!(err.code(), AbiError::InvalidArgs);
        assert!(matches!(err.detail(), Detail::Declaration(_)), "{err}");

        // Three arguments for four parameters (the first three records: 3 pointers of 9 bytes).
        let err = support::launch(
            &mut launcher,
            undeclared,
            shape(16),
            &support::checked(&argv[..27], &guest),
            &guest,
        )
        .unwrap_err();
        assert_eq!(err.detail(), &Detail::ParamCount { expected: 4, got: 3 });

        // A by-value struct cannot be passed as a u64.
        let mut argv = ArgvBuilder::new(&mut buf);
        argv.u64(0).unwrap().ptr(0, 64).unwrap().ptr(64, 128).unwrap();
        let argv = argv.finish();
        let err = support::launch(&mut launcher, AFFINE, shape(16), &support::checked(argv, &guest), &guest)
            .unwrap_err();
        assert_eq!(err.detail(), &Detail::ParamSize { index: 0, expected: 24, got: 8 });
    }
    assert_eq!(memory, untouched, "a refused launch must not touch guest memory");
}

#[test]
fn bad_ptx_and_unknown_kernels() {
    for mode in MODES {
        bad_ptx_and_unknown_kernels_in(mode);
    }
}

fn bad_ptx_and_unknown_kernels_in(mode: PointerModeChoice) {
    let test = "bad_ptx_and_unknown_kernels";
    let Some(device) = support::open(test, options(mode)) else { return };
    device
        .registry()
        .register(
            10,
            ".version 7.8\n.target sm_52\n.address_size 64\nthis is not ptx",
            "k",
            Sandbox::Undeclared,
        )
        .unwrap();
    device.registry().register(11, support::VECTOR_ADD_PTX, "no_such_entry", Sandbox::Undeclared).unwrap();
    let mut launcher = device.launcher();
    let mut memory = [0u8; 8];
    let guest = GuestMemory::exclusive(&mut memory);
    let mut launch = |kernel_id| {
        support::launch(&mut launcher, kernel_id, shape(1), &kernel_args::LaunchArgs::new(), &guest)
            .unwrap_err()
    };
    let err = launch(10);
    assert_eq!(err.code(), AbiError::MalformedPtx, "{err}");
    assert!(err.to_string().contains("cuModuleLoadDataEx failed"), "{err}");
    assert!(err.to_string().contains("JIT log: "), "the JIT's log names the line: {err}");
    match err.detail() {
        kernel_args::Detail::JitRefused { failure, log } => {
            assert_eq!((failure.call, failure.abi), ("cuModuleLoadDataEx", AbiError::MalformedPtx), "{err}");
            assert!(log.contains("line 4"), "the JIT's log names the line: {log}");
        }
        other => panic!("not the JIT's refusal: {other:?}"),
    }
    say(format!("{test}: {err}"));
    // The refusal is remembered: the same answer, without compiling the PTX again.
    assert_eq!(launch(10), err);
    assert_eq!(launch(11).code(), AbiError::InvalidKernel);
    assert_eq!(launch(12).code(), AbiError::InvalidKernel);
    // What CudaDevice::verify tells the embedder of each, before any guest launches.
    let problem = |id| match device.verify(id) {
        Err(SetupError::Kernel { id: got, problem }) if got == id => Some(problem),
        other => panic!("kernel {id}: {other:?}"),
    };
    assert!(matches!(problem(10), Some(KernelProblem::Load(_))));
    assert!(matches!(problem(11), Some(KernelProblem::Load(_))));
    assert!(matches!(problem(12), Some(KernelProblem::NotRegistered)));
    assert_eq!(device.verify(12).unwrap_err().to_string(), "kernel 12: no kernel is registered with this id");
    device.verify(support::VECTOR_ADD).unwrap();
    // Registering the kernel again forgets the refusal.
    device
        .registry()
        .register(
            10,
            support::VECTOR_ADD_PTX,
            "vector_add",
            Sandbox::fenced(support::VECTOR_ADD_DECLARATION).unwrap(),
        )
        .unwrap();
    // The handle reads the registry too: kernel 10 is the fenced vector_add now.
    assert!(device.registry().get(10).is_some_and(|entry| entry.fenced()));
    device.verify(10).unwrap();
    let mut memory = vector_memory(4);
    launch_vector_add(&mut device.launcher(), 10, &mut memory, [0, 16, 32], 4).unwrap();
}

#[test]
fn dynamic_shared_memory_past_48_kib_is_opted_in_up_to_the_device_limit() {
    for mode in MODES {
        dynamic_shared_memory_in(mode);
    }
}

fn dynamic_shared_memory_in(mode: PointerModeChoice) {
    let test = "dynamic_shared_memory_past_48_kib_is_opted_in_up_to_the_device_limit";
    let Some(mut launcher) = launcher(test, mode) else { return };
    let info = launcher.device().info().clone();
    let n = 1000usize;
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    let len = (4 * n) as u32;
    argv.ptr(0, len).unwrap().ptr(len, len).unwrap().ptr(2 * len, len).unwrap().u32(n as u32).unwrap();
    let argv = argv.finish();
    let mut launch = |memory: &mut [u8], shared_mem_bytes: u32| {
        let guest = GuestMemory::exclusive(memory);
        let shape = LaunchShape { shared_mem_bytes, ..shape(n as u32) };
        support::launch(&mut launcher, VECTOR_ADD, shape, &support::checked(argv, &guest), &guest)
    };
    // vector_add declares no static shared memory, so it may have all the device offers.
    let most = info.shared_memory_per_block_optin;
    assert!(most > info.shared_memory_per_block, "{info:?}");
    for shared in [info.shared_memory_per_block, info.shared_memory_per_block + 1, 64 * 1024, most] {
        let mut memory = vector_memory(n);
        launch(&mut memory, shared).unwrap_or_else(|e| panic!("{shared} bytes of shared memory: {e}"));
        for i in 0..n {
            let want = f32_at(&memory, 0, i) + f32_at(&memory, 4 * n, i);
            assert_eq!(f32_at(&memory, 8 * n, i).to_bits(), want.to_bits(), "element {i}");
        }
    }
    let mut memory = vector_memory(n);
    let untouched = memory.clone();
    let err = launch(&mut memory, most + 1).unwrap_err();
    let bound = ShapeError {
        dimension: Dimension::SharedMem,
        value: i64::from(most + 1),
        bound: Bound::AtMost(u64::from(most)),
    };
    assert_eq!(err, HostError::new(Detail::Shape(bound)));
    assert_eq!(memory, untouched);
}

#[test]
fn no_device_is_not_available() {
    // The system's driver library, whatever KARGS_CUDA_DRIVER says: on a machine without a GPU
    // it is missing or answers CUDA_ERROR_NO_DEVICE.
    let options = CudaOptions {
        driver_library: Some(PathBuf::from(kernel_args_cuda::DRIVER_LIBRARY)),
        ..CudaOptions::default()
    };
    match CudaDevice::open(registry(), options) {
        Ok(device) => support::skip(
            "no_device_is_not_available",
            &format!("a device is present ({}), so the no-device path cannot be taken", device.info().name),
        ),
        Err(e) => {
            assert!(matches!(e, SetupError::Driver { .. } | SetupError::NoDevice { count: 0, .. }), "{e}");
            say(format!("no_device_is_not_available: {e}"));
        }
    }
}

#[test]
fn missing_driver_library_is_not_available() {
    let options = CudaOptions {
        driver_library: Some(PathBuf::from("/nonexistent/kernel-args/libcuda.so.1")),
        ..CudaOptions::default()
    };
    let err = CudaDevice::open(registry(), options).unwrap_err();
    assert!(matches!(err, SetupError::Driver { .. }), "{err}");
    assert!(err.to_string().contains("could not be loaded"), "{err}");
}

#[test]
fn a_device_that_does_not_exist_is_not_available() {
    let options = CudaOptions { device_ordinal: 4096, ..CudaOptions::from_env() };
    let err = CudaDevice::open(registry(), options).unwrap_err();
    // A driver with devices names the missing ordinal; one without any (a machine without a
    // GPU) refuses at cuInit already.
    let no_driver_device =
        matches!(err, SetupError::Driver { .. }) && err.to_string().contains("CUDA_ERROR_NO_DEVICE");
    assert!(matches!(err, SetupError::NoDevice { ordinal: 4096, .. }) || no_driver_device, "{err}");
}

/// A kernel that writes through its read-only pointer too: thread t < 8 stores `0xdead` to
/// `src[t]` and `t + 1` to `dst[t]`.
const TOUCH_PTX: &str = ".version 7.8\n.target sm_52\n.address_size 64\n.visible .entry touch(\n\
    \t.param .u64 touch_param_0,\n\t.param .u64 touch_param_1\n)\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\
    \t.reg .b64 %rd<8>;\n\tld.param.u64 %rd1, [touch_param_0];\n\tld.param.u64 %rd2, [touch_param_1];\n\
    \tmov.u32 %r1, %tid.x;\n\tsetp.ge.u32 %p1, %r1, 8;\n\t@%p1 bra $L_done;\n\tcvta.to.global.u64 %rd3, %rd1;\n\
    \tcvta.to.global.u64 %rd4, %rd2;\n\tmul.wide.u32 %rd5, %r1, 4;\n\tadd.s64 %rd6, %rd3, %rd5;\n\
    \tadd.s64 %rd7, %rd4, %rd5;\n\tst.global.u32 [%rd6], 0xdead;\n\tadd.s32 %r2, %r1, 1;\n\
    \tst.global.u32 [%rd7], %r2;\n$L_done:\n\tret;\n}\n";

/// Staged: a window the declaration gives read-only access is never copied back, whether it
/// shares its staging region with a writable window that follows it, one that precedes it, or
/// one that overlaps it; the bytes of the writable window are, all of them.
#[test]
fn a_read_only_window_is_never_copied_back() {
    let test = "a_read_only_window_is_never_copied_back";
    let mut registry = kernel_args_cuda::KernelRegistry::new();
    registry
        .register(
            1,
            TOUCH_PTX,
            "touch",
            Sandbox::fenced("touch(src: &[u32; 8], dst: &mut [u32; 8])").unwrap(),
        )
        .unwrap();
    let Some(device) = support::open_with(test, registry, options(PointerModeChoice::Staged)) else { return };
    let mut launcher = device.launcher();
    let shape = LaunchShape { grid: [1, 1, 1], block: [32, 1, 1], shared_mem_bytes: 0 };
    // (src's offset, dst's offset): touching after, touching before, overlapping by half.
    for (src, dst) in [(0u32, 32u32), (32, 0), (0, 16)] {
        let mut memory: Vec<u8> = (0..96u8).collect();
        let before = memory.clone();
        let mut buf = [0u8; 32];
        let mut argv = ArgvBuilder::new(&mut buf);
        argv.ptr(src, 32).unwrap().ptr(dst, 32).unwrap();
        let argv = argv.finish().to_vec();
        {
            let guest = GuestMemory::exclusive(&mut memory);
            support::launch(&mut launcher, 1, shape, &support::checked(&argv, &guest), &guest).unwrap();
        }
        let (src, dst) = (src as usize, dst as usize);
        for i in 0..96 {
            let (in_src, in_dst) = ((src..src + 32).contains(&i), (dst..dst + 32).contains(&i));
            let dst_byte =
                ((i.wrapping_sub(dst) / 4) as u32).wrapping_add(1).to_le_bytes()[i.wrapping_sub(dst) % 4];
            let src_byte = 0xdeadu32.to_le_bytes()[i.wrapping_sub(src) % 4];
            match (in_src, in_dst) {
                (_, false) => assert_eq!(
                    memory[i], before[i],
                    "src at {src}, dst at {dst}: byte {i} is not copied back"
                ),
                (false, true) => {
                    assert_eq!(memory[i], dst_byte, "src at {src}, dst at {dst}: byte {i} is dst's")
                }
                // Both windows: the kernel's two stores race; the byte is dst's, copied back.
                (true, true) => assert!(memory[i] == dst_byte || memory[i] == src_byte, "byte {i}"),
            }
        }
    }
    support::say(format!(
        "{test}: read-only windows touching and overlapping a writable one: not copied back"
    ));
}
