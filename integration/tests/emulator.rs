//! The launch path against the emulated driver's devices, faults and counts (feature `cuda`):
//! what only an emulator can set up or observe. Each test adds a device of its own, so tests
//! running in parallel never share a context, a fault or a count; faults are injected on the
//! test's own thread.
//!
//! With any other driver (a GPU's) these tests print `SKIPPED` and return.
// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod support;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use kernel_args::{
    AbiError, Bound, Detail, Dimension, GuestTrust, HostError, LaunchCall, LaunchHost, LaunchLimits,
    LaunchOutcome, LaunchShape, PointerMode, Quota, QuotaError, ShapeError, SignatureCheck,
};
use kernel_args_core::{ArgvBuilder, GuestMemory};
use kernel_args_cuda::{
    CudaDevice, CudaLauncher, CudaOptions, KernelRegistry, PointerModeChoice, Sandbox, SetupError,
};
use kernel_args_cuda_emulator::client::{DeviceConfig, Emulator, Live, Stat};
use support::{VECTOR_ADD, VECTOR_ADD_PTX, registry, say};

/// A device without pageable memory access: every launch stages its windows.
const STAGED_ONLY: DeviceConfig =
    DeviceConfig { pageable_memory_access: false, uses_host_page_tables: false, ..DEFAULT };
const DEFAULT: DeviceConfig = DeviceConfig {
    pageable_memory_access: true,
    uses_host_page_tables: true,
    compute_capability: (9, 0),
    shared_memory_optin: 232_448,
};

/// The emulator, a fresh device with `config` on it, and the options that open it.
fn fresh(test: &str, config: DeviceConfig) -> Option<(&'static Emulator, u32, CudaOptions)> {
    let (emulator, path) = support::emulator(test)?;
    emulator.clear_faults();
    let ordinal = emulator.add_device(config);
    let options =
        CudaOptions { device_ordinal: ordinal, driver_library: Some(path), ..CudaOptions::default() };
    Some((emulator, ordinal, options))
}

fn open(options: CudaOptions) -> Arc<CudaDevice> {
    CudaDevice::open(registry(), options).unwrap()
}

fn f32_at(memory: &[u8], i: usize) -> f32 {
    f32::from_le_bytes(memory[4 * i..4 * i + 4].try_into().unwrap())
}

/// `a` (floats 0..n), `b` (n..2n), `out` (2n..3n, NaN), with exact sums.
fn vectors(n: usize) -> Vec<u8> {
    // At least the shortest fence: in direct mode a fenced kernel's fence is the guest memory.
    let mut memory = vec![0u8; (12 * n).max(kernel_args_cuda::fence::MIN_FENCE_LEN as usize)];
    for i in 0..n {
        memory[4 * i..4 * i + 4].copy_from_slice(&(i as f32).to_le_bytes());
        memory[4 * (n + i)..4 * (n + i) + 4].copy_from_slice(&(0.5 * i as f32 + 3.0).to_le_bytes());
        memory[4 * (2 * n + i)..4 * (2 * n + i) + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    }
    memory
}

fn check_sums(memory: &[u8], n: usize) {
    for i in 0..n {
        let want = f32_at(memory, i) + f32_at(memory, n + i);
        assert_eq!(f32_at(memory, 2 * n + i).to_bits(), want.to_bits(), "element {i}");
    }
}

/// vector_add over `n` elements whose windows are `window` floats long (a window shorter than
/// `n` makes the kernel read past it).
fn vector_add(
    launcher: &mut CudaLauncher,
    kernel_id: i64,
    memory: &mut [u8],
    n: usize,
    window: usize,
    shared_mem_bytes: u32,
) -> Result<LaunchOutcome, HostError> {
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    let (len, at) = ((4 * window) as u32, |k: usize| (4 * k * n) as u32);
    argv.ptr(at(0), len).unwrap().ptr(at(1), len).unwrap().ptr(at(2), len).unwrap().u32(n as u32).unwrap();
    let shape = LaunchShape { grid: [(n as u32).div_ceil(128), 1, 1], block: [128, 1, 1], shared_mem_bytes };
    launch(launcher, kernel_id, memory, argv.finish(), shape)
}

/// `argv` launched as the host function hands it over: parsed against `memory`, borrowed
/// exclusively for the launch.
fn launch(
    launcher: &mut CudaLauncher,
    kernel_id: i64,
    memory: &mut [u8],
    argv: &[u8],
    shape: LaunchShape,
) -> Result<LaunchOutcome, HostError> {
    let guest = GuestMemory::exclusive(memory);
    support::launch(launcher, kernel_id, shape, &support::checked(argv, &guest), &guest)
}

fn good_launch(launcher: &mut CudaLauncher, n: usize) -> LaunchOutcome {
    let mut memory = vectors(n);
    let outcome = vector_add(launcher, VECTOR_ADD, &mut memory, n, n, 0).unwrap();
    check_sums(&memory, n);
    outcome
}

/// The kernel id of vector_add registered without a declaration (trusted guests only), so that
/// a launch can hand it a raw `u64` where it takes a pointer.
const VECTOR_ADD_UNDECLARED: i64 = 100;

/// vector_add declared with its `a` as bytes (`&[u8; 4 * n]`): a window of `a` at any offset
/// passes the declaration's check, and the kernel's float loads through it may be misaligned.
const VECTOR_ADD_A_BYTES: i64 = 101;

/// The fixture kernels, and vector_add once more without a declaration.
fn registry_with_undeclared() -> KernelRegistry {
    let mut r = registry();
    r.register(VECTOR_ADD_UNDECLARED, VECTOR_ADD_PTX, "vector_add", Sandbox::Undeclared).unwrap();
    r
}

/// vector_add over `n` elements with `out` a null pointer: the kernel stores through address 0,
/// which faults on a GPU as on the emulator (CUDA_ERROR_ILLEGAL_ADDRESS, sticky), unlike a
/// small overrun, which on a GPU lands in a neighbouring allocation on the same page.
fn null_store(launcher: &mut CudaLauncher, n: usize) -> HostError {
    let mut memory = vectors(n);
    let before = memory.clone();
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    let len = (4 * n) as u32;
    argv.ptr(0, len).unwrap().ptr(len, len).unwrap().u64(0).unwrap().u32(n as u32).unwrap();
    let shape =
        LaunchShape { grid: [(n as u32).div_ceil(128), 1, 1], block: [128, 1, 1], shared_mem_bytes: 0 };
    let err = launch(launcher, VECTOR_ADD_UNDECLARED, &mut memory, argv.finish(), shape).unwrap_err();
    assert_eq!(memory, before, "nothing was copied back from a faulted launch");
    err
}

#[test]
fn auto_picks_direct_under_ats_only() {
    let test = "auto_picks_direct_under_ats_only";
    let hmm = DeviceConfig { uses_host_page_tables: false, ..DEFAULT };
    for (config, auto, direct_allowed) in [
        (DEFAULT, PointerMode::Direct, true),
        (hmm, PointerMode::Staged, true),
        (STAGED_ONLY, PointerMode::Staged, false),
    ] {
        let Some((_, ordinal, options)) = fresh(test, config) else { return };
        let device = open(options.clone());
        let info = device.info();
        assert_eq!(info.ordinal, ordinal);
        assert_eq!(
            (info.pageable_memory_access, info.uses_host_page_tables),
            (config.pageable_memory_access, config.uses_host_page_tables)
        );
        assert!(info.name.contains("emulated") && info.name.contains("not a GPU"), "{}", info.name);
        assert_eq!(device.pointer_mode(), auto, "{config:?}");
        assert_eq!(good_launch(&mut device.launcher(), 300).pointer_mode, auto);
        let forced = CudaOptions { pointer_mode: PointerModeChoice::Direct, ..options };
        match CudaDevice::open(registry(), forced) {
            Ok(device) => {
                assert!(direct_allowed, "{config:?}");
                assert_eq!(good_launch(&mut device.launcher(), 300).pointer_mode, PointerMode::Direct);
            }
            Err(e) => {
                assert!(!direct_allowed, "{config:?}: {e}");
                assert!(matches!(e, SetupError::DirectUnsupported { .. }), "{e}");
            }
        }
    }
}

/// vector_add's PTX with a second entry whose `.v4` parameter the launcher's PTX parser does not
/// read, so the registry knows no signature for the module's entries.
fn ptx_the_parser_cannot_read() -> String {
    format!(
        "{VECTOR_ADD_PTX}\n.visible .entry vec4_param(\n\t.param .v4 .f32 vec4_param_0\n)\n{{\n\tret;\n}}\n"
    )
}

#[test]
fn the_signature_comes_from_the_driver_else_the_ptx_else_none() {
    let test = "the_signature_comes_from_the_driver_else_the_ptx_else_none";
    let Some((emulator, _, options)) = fresh(test, DEFAULT) else { return };
    // Each driver as it ships (whichever KARGS_CUDA_DRIVER names, its siblings are beside it): 12.8 (the default library; the H200's drivers) describes
    // parameters but does not count them, so the launcher probes cuFuncGetParamInfo; 13.2
    // counts them. Both give the driver's signature.
    for (library, version, counts) in [
        (kernel_args_cuda_emulator::client::LIBRARY, 12080, false),
        (kernel_args_cuda_emulator::client::LIBRARY_13_2, 13020, true),
    ] {
        let path = options.driver_library.as_deref().unwrap().with_file_name(library);
        let device = open(CudaOptions { driver_library: Some(path), ..CudaOptions::default() });
        assert_eq!(device.info().driver_version, version, "{library}");
        assert!(device.info().param_info, "{library}");
        assert_eq!(device.info().param_count, counts, "{library}");
        assert_eq!(good_launch(&mut device.launcher(), 100).signature, SignatureCheck::Driver, "{library}");
    }

    // The CUDA 12.2 driver has no cuFuncGetParamInfo: the PTX's declaration is checked.
    let old = CudaOptions {
        driver_library: Some(support::emulator_12_2(options.driver_library.as_deref().unwrap())),
        ..CudaOptions::default()
    };
    let device = open(old.clone());
    assert!(!device.info().param_info);
    assert_eq!(device.info().driver_version, 12020);
    let mut launcher = device.launcher();
    assert_eq!(good_launch(&mut launcher, 100).signature, SignatureCheck::Ptx);
    // ...and a mismatch is refused before the launch, naming the argument (vector_add without
    // a declaration, whose arguments only the PTX's parameter list checks).
    let mut memory = vectors(16);
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 64).unwrap().ptr(64, 64).unwrap().ptr(128, 64).unwrap().u64(16).unwrap();
    let shape = LaunchShape { grid: [1, 1, 1], block: [16, 1, 1], shared_mem_bytes: 0 };
    let undeclared = support::VECTOR_ADD_UNDECLARED;
    let err = launch(&mut launcher, undeclared, &mut memory, argv.finish(), shape).unwrap_err();
    assert_eq!(err.detail(), &Detail::ParamSize { index: 3, expected: 4, got: 8 });

    // Neither knows: no check, and the padded table still gives the kernel its arguments.
    let mut unreadable = KernelRegistry::new();
    unreadable
        .register(VECTOR_ADD, &ptx_the_parser_cannot_read(), "vector_add", Sandbox::Undeclared)
        .unwrap();
    assert!(unreadable.get(VECTOR_ADD).unwrap().signature().is_none());
    let device = CudaDevice::open(unreadable, old).unwrap();
    assert_eq!(good_launch(&mut device.launcher(), 100).signature, SignatureCheck::Skipped);
    let _ = emulator;
}

#[test]
fn a_driver_that_cannot_describe_the_kernel_does_not_override_the_ptx() {
    let test = "a_driver_that_cannot_describe_the_kernel_does_not_override_the_ptx";
    let Some((emulator, _, options)) = fresh(test, DEFAULT) else { return };
    // No count, and CUDA_ERROR_INVALID_VALUE for parameter 0: not "no parameters".
    emulator.fail_call("cuFuncGetParamCount", 1, 801);
    emulator.fail_call("cuFuncGetParamInfo", 1, 1);
    let device = open(options.clone());
    assert_eq!(good_launch(&mut device.launcher(), 64).signature, SignatureCheck::Ptx);
    drop(device);
    // No count, and the driver stops answering after two parameters: for the unfenced kernel,
    // the PTX's four win; the fenced one, whose list must end in the fence's four, is refused.
    emulator.clear_faults();
    emulator.fail_call("cuFuncGetParamCount", 1, 801);
    emulator.fail_call("cuFuncGetParamInfo", 3, 1);
    let device = open(options);
    let mut launcher = device.launcher();
    let mut memory = vectors(64);
    let outcome = vector_add(&mut launcher, support::VECTOR_ADD_UNFENCED, &mut memory, 64, 64, 0).unwrap();
    check_sums(&memory, 64);
    assert_eq!(outcome.signature, SignatureCheck::Ptx);
    emulator.clear_faults();
    emulator.fail_call("cuFuncGetParamCount", 1, 801);
    emulator.fail_call("cuFuncGetParamInfo", 3, 1);
    let fenced = vector_add(&mut launcher, VECTOR_ADD, &mut vectors(64), 64, 64, 0);
    if device.info().param_info {
        let err = fenced.unwrap_err();
        assert_eq!(err.code(), AbiError::InvalidKernel, "{err}");
        assert!(err.to_string().contains("the driver's parameter sizes [8, 8] differ"), "{err}");
        let Detail::DriverParams { params, .. } = err.detail() else { panic!("{err:?}") };
        assert_eq!(params.driver, [8, 8], "{err}");
    } else {
        // A driver without cuFuncGetParamInfo (CUDA 12.2) is never asked: the loaded text's
        // list, which ends in the fence's four, is what the launch is checked against.
        assert_eq!(fenced.unwrap().signature, SignatureCheck::Ptx);
    }
    emulator.clear_faults();
}

#[test]
fn a_kernel_fault_fails_the_launch_and_the_next_launch_recovers() {
    let test = "a_kernel_fault_fails_the_launch_and_the_next_launch_recovers";
    for (config, mode) in [(DEFAULT, PointerModeChoice::Direct), (STAGED_ONLY, PointerModeChoice::Staged)] {
        let Some((emulator, ordinal, options)) = fresh(test, config) else { return };
        let device =
            CudaDevice::open(registry_with_undeclared(), CudaOptions { pointer_mode: mode, ..options })
                .unwrap();
        let mut launcher = device.launcher();
        good_launch(&mut launcher, 256);
        // The kernel stores through a null `out`.
        let err = null_store(&mut launcher, 256);
        assert_eq!(err.code(), AbiError::LaunchFailed, "{err}");
        assert!(err.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS (700)"), "{err}");
        assert_eq!(emulator.sticky_error(ordinal), 700, "the fault is sticky in the context");
        say(format!("{test} ({mode:?}): {err}"));
        // The next launch resets the context and runs in the fresh one.
        good_launch(&mut launcher, 256);
        assert_eq!(emulator.sticky_error(ordinal), 0);
        assert_eq!(emulator.live(ordinal, Live::Modules), 1, "the module was loaded again");
        good_launch(&mut device.launcher(), 256);
        drop((launcher, device));
        assert_eq!(emulator.live_all(ordinal), [0; 5]);
    }
}

#[test]
fn a_ptx_newer_than_the_driver_is_not_available_and_not_kept() {
    let test = "a_ptx_newer_than_the_driver_is_not_available_and_not_kept";
    // The 12.8 library (the default), whichever KARGS_CUDA_DRIVER names: PTX ISA 9.2 (CUDA
    // 13.2) is newer than its JIT, CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222).
    let Some((_, path)) = support::emulator(test) else { return };
    let library = path.with_file_name(kernel_args_cuda_emulator::client::LIBRARY);
    let emulator = Emulator::load(&library).unwrap();
    emulator.clear_faults();
    let ordinal = emulator.add_device(DEFAULT);
    let newer = support::VECTOR_ADD_PTX.replacen(".version 7.8", ".version 9.2", 1);
    let mut registry = KernelRegistry::new();
    registry
        .register(VECTOR_ADD, &newer, "vector_add", Sandbox::fenced(support::VECTOR_ADD_DECLARATION).unwrap())
        .unwrap();
    let options =
        CudaOptions { device_ordinal: ordinal, driver_library: Some(library), ..CudaOptions::default() };
    let device = CudaDevice::open(registry, options).unwrap();
    let mut launcher = device.launcher();
    let loads = emulator.call_count("cuModuleLoadDataEx");
    for attempt in 1..=2 {
        let mut memory = vectors(16);
        let err = vector_add(&mut launcher, VECTOR_ADD, &mut memory, 16, 16, 0).unwrap_err();
        // An old driver, not a bad kernel: the guest is told CUDA cannot run it here...
        assert_eq!(err.code(), AbiError::NotAvailable, "{err}");
        assert!(err.to_string().contains("CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"), "{err}");
        assert!(err.to_string().contains("older than the PTX's .version"), "{err}");
        // ...and the failure is not kept as the kernel's: each launch asks the driver again.
        assert_eq!(emulator.call_count("cuModuleLoadDataEx"), loads + attempt, "{err}");
    }
}

#[test]
fn an_overrun_does_not_fault_as_on_a_gpu_and_the_emulator_records_it() {
    let test = "an_overrun_does_not_fault_as_on_a_gpu_and_the_emulator_records_it";
    let Some((emulator, ordinal, options)) = fresh(test, STAGED_ONLY) else { return };
    let device = CudaDevice::open(registry_with_undeclared(), options).unwrap();
    let mut launcher = device.launcher();
    good_launch(&mut launcher, 64);
    assert_eq!(emulator.crossings(ordinal), 0, "a correct kernel writes only its own buffers");
    // n = 64 over 16-float windows (what a declaration refuses before any launcher), unfenced:
    // the staging arena is a small allocation on a shared page, so the kernel's stores past
    // `out`, the arena's last region, land in the page, not in a fault, as on a GPU. The
    // emulator records each one. (A new launcher: the first one's arena is long enough for
    // 64-float windows.)
    let mut launcher = device.launcher();
    let mut memory = vectors(64);
    let before = memory.clone();
    vector_add(&mut launcher, VECTOR_ADD_UNDECLARED, &mut memory, 64, 16, 0).unwrap();
    assert_eq!(emulator.sticky_error(ordinal), 0, "no fault");
    assert_eq!(emulator.crossings(ordinal), 48, "one record per store past the 16-float window");
    // Only the windows were copied back: guest memory past them is as it was.
    assert_eq!(memory[4 * 16..4 * 64], before[4 * 16..4 * 64]);
    emulator.clear_crossings(ordinal);
    assert_eq!(emulator.crossings(ordinal), 0);
}

#[test]
fn every_sticky_code_replaces_the_context() {
    let test = "every_sticky_code_replaces_the_context";
    // The codes cuda.h documents as leaving the context unusable, 226, 721 and 810 among them:
    // the emulator keeps each as the context's sticky error (as the driver does), and the
    // launcher must replace the context before the next launch, or that launch fails too.
    for &code in kernel_args_cuda_emulator::result::STICKY {
        let Some((emulator, ordinal, options)) = fresh(test, DEFAULT) else { return };
        let device = open(options);
        let mut launcher = device.launcher();
        good_launch(&mut launcher, 64);
        emulator.fail_call("cuStreamSynchronize", 1, code);
        let mut memory = vectors(64);
        let err = vector_add(&mut launcher, VECTOR_ADD, &mut memory, 64, 64, 0).unwrap_err();
        assert_eq!(err.code(), AbiError::LaunchFailed, "{code}: {err}");
        assert!(err.to_string().contains(&format!("({code})")), "{code}: {err}");
        assert_eq!(emulator.sticky_error(ordinal), code, "{code} is sticky in the context");
        good_launch(&mut launcher, 64);
        assert_eq!(emulator.sticky_error(ordinal), 0, "{code}: the context was replaced");
        drop((launcher, device));
        assert_eq!(emulator.live_all(ordinal), [0; 5], "{code}");
    }
}

#[test]
fn a_misaligned_access_faults_as_on_a_gpu_and_the_next_launch_recovers() {
    let test = "a_misaligned_access_faults_as_on_a_gpu_and_the_next_launch_recovers";
    for (config, mode) in [(DEFAULT, PointerModeChoice::Direct), (STAGED_ONLY, PointerModeChoice::Staged)] {
        let Some((emulator, ordinal, options)) = fresh(test, config) else { return };
        let mut registry = registry_with_undeclared();
        // vector_add declared with `a` as bytes, so that a window two bytes into its buffer
        // passes the declaration's check.
        let bytes = "vector_add(a: &[u8; 4 * n], b: &[f32; n], out: &mut [f32; n], n: u32)";
        registry
            .register(VECTOR_ADD_A_BYTES, VECTOR_ADD_PTX, "vector_add", Sandbox::fenced(bytes).unwrap())
            .unwrap();
        let device = CudaDevice::open(registry, CudaOptions { pointer_mode: mode, ..options }).unwrap();
        let mut launcher = device.launcher();
        good_launch(&mut launcher, 64);
        // `a` two bytes into its buffer: every f32 the kernel loads through it is misaligned,
        // in guest memory (direct) and in its staged arena, which keeps the guest offset's
        // alignment.
        let n = 16;
        let mut memory = vectors(n);
        let mut buf = [0u8; 64];
        let mut argv = ArgvBuilder::new(&mut buf);
        let len = (4 * n) as u32;
        argv.ptr(2, len - 4)
            .unwrap()
            .ptr(len, len)
            .unwrap()
            .ptr(2 * len, len)
            .unwrap()
            .u32(n as u32 - 1)
            .unwrap();
        let argv = argv.finish();
        let shape = LaunchShape { grid: [1, 1, 1], block: [128, 1, 1], shared_mem_bytes: 0 };
        // Fenced: the kernel's own bounds check proves its loads (an indexed proof), whose
        // condition is a pointer aligned to its element: the launch is refused before it runs,
        // saying which, and nothing faults.
        let err = launch(&mut launcher, VECTOR_ADD_A_BYTES, &mut memory, argv, shape).unwrap_err();
        assert_eq!(err.code(), AbiError::InvalidArgs, "{mode:?}: {err}");
        assert!(err.to_string().contains("is not a multiple of 4 bytes"), "{mode:?}: {err}");
        // Declared as floats, the window is refused before any launch.
        let err = launch(&mut launcher, VECTOR_ADD, &mut memory, argv, shape).unwrap_err();
        assert_eq!(err.code(), AbiError::InvalidArgs, "{mode:?}: {err}");
        assert_eq!(emulator.sticky_error(ordinal), 0, "{mode:?}: no fault");
        // Unfenced (registered without a declaration: a trusted guest's), it faults as on a GPU.
        {
            let kernel = VECTOR_ADD_UNDECLARED;
            let err = launch(&mut launcher, kernel, &mut memory, argv, shape).unwrap_err();
            assert_eq!(err.code(), AbiError::LaunchFailed, "{mode:?}: {err}");
            assert!(err.to_string().contains("CUDA_ERROR_MISALIGNED_ADDRESS (716)"), "{mode:?}: {err}");
            assert_eq!(emulator.sticky_error(ordinal), 716, "{mode:?}: the fault is sticky in the context");
            good_launch(&mut launcher, 64);
        }
        say(format!("{test}: {mode:?}: {err}"));
        good_launch(&mut launcher, 64);
        assert_eq!(emulator.sticky_error(ordinal), 0);
    }
}

#[test]
fn a_fault_fails_the_launches_in_flight_and_the_next_ones_succeed() {
    let test = "a_fault_fails_the_launches_in_flight_and_the_next_ones_succeed";
    let Some((emulator, ordinal, options)) = fresh(test, STAGED_ONLY) else { return };
    let device = CudaDevice::open(registry_with_undeclared(), options).unwrap();
    let mut tenant_a = device.launcher();
    let mut tenant_b = device.launcher();
    good_launch(&mut tenant_a, 64);
    good_launch(&mut tenant_b, 64);
    // Tenant B's launch is in flight: it waits inside its first stream synchronisation.
    let b = thread::spawn(move || {
        emulator.hold_call("cuStreamSynchronize");
        let mut memory = vectors(64);
        let result = vector_add(&mut tenant_b, VECTOR_ADD, &mut memory, 64, 64, 0);
        (tenant_b, result)
    });
    while emulator.held() == 0 {
        thread::sleep(Duration::from_millis(1));
    }
    // Tenant A's kernel faults in the context they share: it stores through a null pointer.
    let err = null_store(&mut tenant_a, 64);
    assert_eq!(err.code(), AbiError::LaunchFailed);
    emulator.release_held();
    let (mut tenant_b, in_flight) = b.join().unwrap();
    let err = in_flight.unwrap_err();
    assert_eq!(err.code(), AbiError::LaunchFailed, "{err}");
    assert!(err.to_string().contains("(700)"), "{err}");
    // Both go on in a fresh context.
    for _ in 0..3 {
        good_launch(&mut tenant_b, 64);
        good_launch(&mut tenant_a, 64);
    }
    assert_eq!(emulator.sticky_error(ordinal), 0);
    drop((tenant_a, tenant_b, device));
    assert_eq!(emulator.live_all(ordinal), [0; 5]);
}

#[test]
fn devices_on_one_ordinal_share_its_context_and_its_recovery() {
    let test = "devices_on_one_ordinal_share_its_context_and_its_recovery";
    let Some((emulator, ordinal, options)) = fresh(test, STAGED_ONLY) else { return };
    // Two devices on one ordinal (an embedder's two registries, say): one primary context.
    let a = CudaDevice::open(registry_with_undeclared(), options.clone()).unwrap();
    let b = open(options);
    let (mut on_a, mut on_b) = (a.launcher(), b.launcher());
    good_launch(&mut on_a, 64);
    good_launch(&mut on_b, 64);
    assert_eq!(emulator.live(ordinal, Live::Modules), 2, "each device loaded its module");
    // A kernel of A's faults; the context is reset once, by whichever launches next...
    assert!(null_store(&mut on_a, 64).to_string().contains("(700)"));
    let resets = emulator.call_count("cuDevicePrimaryCtxReset_v2");
    good_launch(&mut on_b, 64);
    assert_eq!(emulator.call_count("cuDevicePrimaryCtxReset_v2"), resets + 1);
    // ...and the other device goes on in the fresh context too, with its module loaded again.
    good_launch(&mut on_a, 64);
    assert_eq!(emulator.call_count("cuDevicePrimaryCtxReset_v2"), resets + 1, "one reset for both");
    assert_eq!(emulator.sticky_error(ordinal), 0);
    assert_eq!(emulator.live(ordinal, Live::Modules), 2);
    drop((on_a, a));
    good_launch(&mut on_b, 64);
    drop((on_b, b));
    assert_eq!(emulator.live_all(ordinal), [0; 5], "every module, stream and retain given back");
}

#[test]
fn a_missing_or_disabled_jit_is_not_available_and_not_remembered() {
    let test = "a_missing_or_disabled_jit_is_not_available_and_not_remembered";
    let Some((emulator, _, options)) = fresh(test, DEFAULT) else { return };
    let device = open(options);
    let mut launcher = device.launcher();
    for code in [221, 223] {
        emulator.fail_call("cuModuleLoadDataEx", 1, code);
        let mut memory = vectors(8);
        let err = vector_add(&mut launcher, VECTOR_ADD, &mut memory, 8, 8, 0).unwrap_err();
        assert_eq!(err.code(), AbiError::NotAvailable, "{err}");
        emulator.clear_faults();
    }
    good_launch(&mut launcher, 8);
}

#[test]
fn a_refused_module_is_compiled_once() {
    let test = "a_refused_module_is_compiled_once";
    let Some((emulator, _, options)) = fresh(test, DEFAULT) else { return };
    let device = open(options);
    device
        .registry()
        .register(
            9,
            ".version 7.8\n.target sm_52\n.address_size 64\nthis is not ptx",
            "k",
            Sandbox::Undeclared,
        )
        .unwrap();
    let mut launcher = device.launcher();
    let mut memory = [0u8; 4];
    let guest = GuestMemory::exclusive(&mut memory);
    let shape = LaunchShape { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
    let errors: Vec<HostError> = (0..5)
        .map(|_| {
            support::launch(&mut launcher, 9, shape, &kernel_args::LaunchArgs::new(), &guest).unwrap_err()
        })
        .collect();
    assert!(errors.iter().all(|e| e == &errors[0] && e.code() == AbiError::MalformedPtx), "{errors:?}");
    assert!(errors[0].to_string().contains("line 4"), "the JIT log names the line: {}", errors[0]);
    assert_eq!(emulator.call_count("cuModuleLoadDataEx"), 1);
}

/// The staging quota, set on the guest's host, holds in the launcher: a launch whose arena is
/// exactly the quota runs, one whose arena is a byte longer is refused with `QuotaExceeded`
/// before anything is allocated or copied, and the next launch within it runs.
#[test]
fn the_staging_quota_refuses_a_longer_arena_before_anything_is_allocated() {
    let test = "the_staging_quota_refuses_a_longer_arena_before_anything_is_allocated";
    let Some((emulator, _, options)) = fresh(test, STAGED_ONLY) else { return };
    let device = open(options);
    // a, b and out of `n` floats each, touching: one region of 12 n bytes, then the argv.
    let call = |host: &mut LaunchHost<CudaLauncher>, n: usize| {
        let mut memory = vectors(n);
        let args_ptr = memory.len();
        memory.resize(args_ptr + 64, 0);
        let len = (4 * n) as u32;
        let mut argv = ArgvBuilder::new(&mut memory[args_ptr..]);
        argv.ptr(0, len).unwrap().ptr(len, len).unwrap().ptr(2 * len, len).unwrap().u32(n as u32).unwrap();
        let args_len = argv.len() as i32;
        let call = LaunchCall {
            args_ptr: args_ptr as i32,
            args_len,
            ..LaunchCall::new(VECTOR_ADD, [1, 1, 1], [128, 1, 1])
        };
        let code = host.call(Some(&mut memory), &call);
        if code == 0 {
            check_sums(&memory, n);
        }
        code
    };
    let limits = LaunchLimits { max_staging_bytes: 1200, ..LaunchLimits::DEFAULT };
    let mut host = LaunchHost::new(device.launcher()).with_limits(limits);
    host.set_trust(GuestTrust::Trusted);
    assert_eq!(call(&mut host, 100), 0, "{:?}", host.last_error());
    let allocations = emulator.call_count("cuMemAlloc_v2");
    let copies = emulator.call_count("cuMemcpyHtoDAsync_v2");
    assert_eq!(call(&mut host, 101), AbiError::QuotaExceeded.code());
    assert_eq!(
        host.last_error().unwrap().detail(),
        &Detail::Quota(QuotaError { quota: Quota::StagingBytes, requested: 1212, limit: 1200 })
    );
    assert_eq!(
        host.last_error().unwrap().to_string(),
        "QuotaExceeded -6: staging bytes per launch would be 1212, the quota is 1200"
    );
    assert_eq!(emulator.call_count("cuMemAlloc_v2"), allocations, "nothing allocated");
    assert_eq!(emulator.call_count("cuMemcpyHtoDAsync_v2"), copies, "nothing copied");
    assert_eq!(call(&mut host, 99), 0, "{:?}", host.last_error());
}

#[test]
fn staging_buffers_are_kept_and_reused() {
    let test = "staging_buffers_are_kept_and_reused";
    let Some((emulator, ordinal, options)) = fresh(test, STAGED_ONLY) else { return };
    let device = open(options);
    let mut launcher = device.launcher();
    for _ in 0..20 {
        good_launch(&mut launcher, 500);
    }
    // The arena (a, b and out touch: one region), and the fence's flag (vector_add is fenced:
    // a word of mapped host memory), each allocated once.
    assert_eq!(emulator.call_count("cuMemAlloc_v2"), 1);
    assert_eq!(emulator.call_count("cuMemHostAlloc"), 1);
    assert_eq!(emulator.call_count("cuMemFree_v2"), 0);
    assert_eq!(emulator.live(ordinal, Live::Allocations), 2);
    // One copy back per launch (`out`): the flag is read where the kernel wrote it, no copy.
    assert_eq!(emulator.call_count("cuMemcpyDtoHAsync_v2"), 20);
    // Larger windows: the arena grows, once.
    for _ in 0..5 {
        good_launch(&mut launcher, 5000);
    }
    assert_eq!(emulator.call_count("cuMemAlloc_v2"), 2);
    assert_eq!(emulator.call_count("cuMemFree_v2"), 1);
    // Three windows apart from each other: three regions of the one arena, which is long
    // enough already.
    for _ in 0..5 {
        let n = 100;
        let mut memory = vec![0u8; 4 * 3 * 2 * n];
        let mut buf = [0u8; 64];
        let mut argv = ArgvBuilder::new(&mut buf);
        let len = (4 * n) as u32;
        argv.ptr(0, len)
            .unwrap()
            .ptr(2 * len, len)
            .unwrap()
            .ptr(4 * len, len)
            .unwrap()
            .u32(n as u32)
            .unwrap();
        let argv = argv.finish();
        let guest = GuestMemory::exclusive(&mut memory);
        let shape = LaunchShape { grid: [1, 1, 1], block: [128, 1, 1], shared_mem_bytes: 0 };
        support::launch(&mut launcher, VECTOR_ADD, shape, &support::checked(argv, &guest), &guest).unwrap();
    }
    assert_eq!(emulator.call_count("cuMemAlloc_v2"), 2);
    assert_eq!(emulator.live(ordinal, Live::Allocations), 2);
    // A launch larger than MAX_KEPT_STAGING_BYTES gets an arena of its own, freed after it
    // (windows of `big` floats each; the kernel adds the first 16).
    let big = kernel_args_cuda::MAX_KEPT_STAGING_BYTES / 12 + 1;
    let mut memory = vectors(big);
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    let len = (4 * big) as u32;
    argv.ptr(0, len).unwrap().ptr(len, len).unwrap().ptr(2 * len, len).unwrap().u32(16).unwrap();
    let argv = argv.finish();
    let guest = GuestMemory::exclusive(&mut memory);
    let shape = LaunchShape { grid: [1, 1, 1], block: [32, 1, 1], shared_mem_bytes: 0 };
    support::launch(&mut launcher, VECTOR_ADD, shape, &support::checked(argv, &guest), &guest).unwrap();
    for i in 0..16 {
        assert_eq!(
            f32_at(&memory, 2 * big + i),
            f32_at(&memory, i) + f32_at(&memory, big + i),
            "element {i}"
        );
    }
    assert_eq!(emulator.call_count("cuMemAlloc_v2"), 3);
    assert_eq!(emulator.call_count("cuMemFree_v2"), 3, "the short arena before it, and itself after");
    assert_eq!(emulator.live(ordinal, Live::Allocations), 1, "the flag");
    drop(launcher);
    assert_eq!(emulator.call_count("cuMemFreeHost"), 1, "the flag");
    assert_eq!(emulator.live(ordinal, Live::Allocations), 0);
    assert_eq!(emulator.live(ordinal, Live::Streams), 0);
}

#[test]
fn the_arena_holds_zeros_between_regions_and_zero_length_windows_launch() {
    let test = "the_arena_holds_zeros_between_regions_and_zero_length_windows_launch";
    let Some((_, _, options)) = fresh(test, STAGED_ONLY) else { return };
    let device = CudaDevice::open(registry_with_undeclared(), options).unwrap();
    let mut launcher = device.launcher();
    // a and b of 16 floats at guest offsets 0 and 256, out of 64 at 512: unfenced, with n = 64
    // the kernel reads a and b past their windows, into the arena's bytes between the regions,
    // which a fresh arena holds as zeros (cuMemAlloc's memory holds whatever was there: the
    // emulator's POISON, another tenant's bytes on a GPU).
    let mut memory = vec![0u8; 768];
    for i in 0..16 {
        memory[4 * i..4 * i + 4].copy_from_slice(&(i as f32 + 1.0).to_le_bytes());
        memory[256 + 4 * i..260 + 4 * i].copy_from_slice(&(2.0 * i as f32).to_le_bytes());
    }
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 64).unwrap().ptr(256, 64).unwrap().ptr(512, 256).unwrap().u32(64).unwrap();
    let argv = argv.finish();
    let shape = LaunchShape { grid: [1, 1, 1], block: [64, 1, 1], shared_mem_bytes: 0 };
    launch(&mut launcher, VECTOR_ADD_UNDECLARED, &mut memory, argv, shape).unwrap();
    for i in 0..64 {
        let want = if i < 16 { 3.0 * i as f32 + 1.0 } else { 0.0 };
        assert_eq!(f32_at(&memory, 128 + i), want, "out[{i}]");
    }
    // Windows of no bytes at a 256-byte boundary: regions of no bytes, still placed.
    let mut launcher = device.launcher();
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 0).unwrap().ptr(256, 0).unwrap().ptr(512, 0).unwrap().u32(0).unwrap();
    let argv = argv.finish();
    for kernel in [VECTOR_ADD, VECTOR_ADD_UNDECLARED] {
        launch(&mut launcher, kernel, &mut memory, argv, shape).unwrap();
    }
}

#[test]
fn dynamic_shared_memory_past_48_kib_is_opted_in_once_and_capped_by_the_device() {
    let test = "dynamic_shared_memory_past_48_kib_is_opted_in_once_and_capped_by_the_device";
    // A device that offers 64 KiB per block, as compute capability 7.5 does.
    let turing = DeviceConfig { compute_capability: (7, 5), shared_memory_optin: 65_536, ..DEFAULT };
    let Some((emulator, _, options)) = fresh(test, turing) else { return };
    let device = open(options);
    let mut launcher = device.launcher();
    for shared in [0, 49_152, 60_000, 65_536, 50_000] {
        let mut memory = vectors(300);
        vector_add(&mut launcher, VECTOR_ADD, &mut memory, 300, 300, shared).unwrap();
        check_sums(&memory, 300);
    }
    assert_eq!(emulator.call_count("cuFuncSetAttribute"), 1, "one opt-in, to the device's limit");
    let mut memory = vectors(300);
    let err = vector_add(&mut launcher, VECTOR_ADD, &mut memory, 300, 300, 65_537).unwrap_err();
    let refused = ShapeError { dimension: Dimension::SharedMem, value: 65_537, bound: Bound::AtMost(65_536) };
    assert_eq!(err, HostError::new(Detail::Shape(refused)));
    assert_eq!(emulator.call_count("cuLaunchKernel"), 5);
}

#[test]
fn devices_and_launchers_release_everything() {
    let test = "devices_and_launchers_release_everything";
    let Some((emulator, ordinal, options)) = fresh(test, STAGED_ONLY) else { return };
    let device = open(options);
    let mut launchers: Vec<CudaLauncher> = (0..4).map(|_| device.launcher()).collect();
    for launcher in &mut launchers {
        good_launch(launcher, 100);
    }
    // One module, and per launcher a stream, a staging arena and the fence's flag.
    assert_eq!(emulator.live_all(ordinal)[..4], [1, 1, 4, 8]);
    drop(launchers);
    assert_eq!(emulator.live_all(ordinal)[..4], [1, 1, 0, 0]);
    drop(device);
    assert_eq!(emulator.live_all(ordinal), [0; 5]);
}

#[test]
fn on_a_slow_device_every_launch_still_returns_its_results() {
    let test = "on_a_slow_device_every_launch_still_returns_its_results";
    for (config, mode) in [(DEFAULT, PointerModeChoice::Direct), (STAGED_ONLY, PointerModeChoice::Staged)] {
        let Some((emulator, ordinal, options)) = fresh(test, config) else { return };
        let device = CudaDevice::open(registry(), CudaOptions { pointer_mode: mode, ..options }).unwrap();
        let mut launcher = device.launcher();
        // Every queued copy and kernel waits 5 ms before it runs: a launcher that read guest
        // memory, or returned, before the work it queued had finished would see stale outputs.
        emulator.set_delay(Duration::from_millis(5));
        for n in [2, 64, 300] {
            good_launch(&mut launcher, n);
        }
        emulator.set_delay(Duration::ZERO);
        drop((launcher, device));
        assert_eq!(emulator.live_all(ordinal), [0; 5], "{mode:?}");
    }
}

#[test]
fn kernels_of_two_launchers_run_at_the_same_time() {
    let test = "kernels_of_two_launchers_run_at_the_same_time";
    let Some((emulator, _, options)) = fresh(test, DEFAULT) else { return };
    let device = open(options);
    // Each launcher has its own stream, and each stream its worker: two guests' kernels overlap
    // as on a GPU. Large kernels, launched from two threads until two ran at once.
    let n = 1 << 18;
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let mut launcher = device.launcher();
            thread::spawn(move || {
                for _ in 0..100 {
                    good_launch(&mut launcher, n);
                    if emulator.stat(Stat::MostConcurrentKernels) >= 2 {
                        break;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(emulator.stat(Stat::MostConcurrentKernels) >= 2, "no two kernels ever ran at once");
    say(format!("{test}: at most {} kernels ran at once", emulator.stat(Stat::MostConcurrentKernels)));
}
