//! The watchdog (feature `cuda`, emulated driver): a launch that has not finished by the
//! device's deadline (`CudaOptions::launch_deadline`) is stopped by resetting the device's
//! context, answers `QuotaExceeded` naming the launch-time quota, fails the launches in flight
//! on the device, and the next launches, of every tenant, run on a fresh context with correct
//! results.
//!
//! Covered: kernels that never end (their loop's exit is a value the guest wrote), with and
//! without `bar.sync`, fenced and unfenced, in both pointer modes; another tenant's launch in
//! flight when the context is reset; a stalled stream (the emulated device waits before each
//! queued operation) that holds a launch past its deadline. The tests run one at a time, so
//! that the stall (a setting of the whole emulated driver) touches no other test's launches.
//! The first test runs on any device, and `scripts/gpu-check.sh` runs it on a GPU.
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
use std::time::{Duration, Instant};

use kernel_args::{AbiError, Detail, HostError, LaunchLimits, LaunchShape, PointerMode, Quota, QuotaError};
use kernel_args_core::{ArgvBuilder, GuestMemory};
use kernel_args_cuda::{CudaDevice, CudaLauncher, CudaOptions, PointerModeChoice, Sandbox};
use kernel_args_cuda_emulator::client::{DeviceConfig, Emulator};
use support::{VECTOR_ADD, VECTOR_ADD_UNFENCED, registry};

/// `spin` of `support::loops_ptx` (64 threads counting turns for as long as the guest's `x`
/// is not zero), fenced; `spin_sync` (the same, meeting at `bar.sync` on every turn),
/// registered unfenced (the case only the watchdog bounds).
const SPIN: i64 = 40;
const SPIN_SYNC_UNFENCED: i64 = 41;

/// The deadline every device here is opened with.
const DEADLINE: Duration = Duration::from_millis(300);

/// A launch that returns at all returns well within this; one that hung would not return.
const RETURNED_WITHIN: Duration = Duration::from_secs(60);

/// A fresh emulated device (its ordinal, and what it has live before it is opened), opened with
/// the spinning kernels and the watchdog's deadline.
fn open(
    emulator: &Emulator,
    library: &std::path::Path,
    mode: PointerMode,
) -> (u32, [i64; 5], Arc<CudaDevice>) {
    let ordinal = emulator.add_device(DeviceConfig::DEFAULT);
    let before = emulator.live_all(ordinal);
    let mut registry = registry();
    let ptx = support::loops_ptx();
    registry
        .register(SPIN, &ptx, "spin", Sandbox::fenced(&support::loop_declaration("spin")).unwrap())
        .unwrap();
    registry
        .register(
            SPIN_SYNC_UNFENCED,
            &ptx,
            "spin_sync",
            Sandbox::unfenced(&support::loop_declaration("spin_sync")).unwrap(),
        )
        .unwrap();
    let options = CudaOptions {
        device_ordinal: ordinal,
        pointer_mode: support::forced(mode),
        driver_library: Some(library.to_owned()),
        launch_deadline: Some(DEADLINE),
    };
    let device = CudaDevice::open(registry, options).unwrap();
    assert_eq!(device.pointer_mode(), mode);
    (ordinal, before, device)
}

/// Launches a spinning kernel (`x` = 1) over one block of 64 threads, with the largest budget
/// a fenced kernel's thread can have (2³² − 1 backward branches), so that the watchdog, not the
/// budget, stops it.
fn spin(launcher: &mut CudaLauncher, kernel: i64) -> Result<kernel_args::LaunchOutcome, HostError> {
    let mut memory = vec![0u8; 4096];
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 4 * 64).unwrap().u32(1).unwrap();
    let argv = argv.finish();
    let guest = GuestMemory::exclusive(&mut memory);
    let shape = LaunchShape { grid: [1, 1, 1], block: [64, 1, 1], shared_mem_bytes: 0 };
    let limits = LaunchLimits { max_back_edges_per_thread: u32::MAX, ..LaunchLimits::DEFAULT };
    support::launch_limited(launcher, kernel, shape, &support::checked(argv, &guest), &guest, limits)
}

/// Launches vector_add over 256 elements and checks every sum.
fn vector_add(launcher: &mut CudaLauncher, kernel: i64) -> Result<(), HostError> {
    let mut memory: Vec<u8> = (0..3 * 256u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let mut buf = [0u8; 128];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 1024).unwrap().ptr(1024, 1024).unwrap().ptr(2048, 1024).unwrap().u32(256).unwrap();
    let argv = argv.finish();
    let result = {
        let guest = GuestMemory::exclusive(&mut memory);
        let shape = LaunchShape { grid: [2, 1, 1], block: [128, 1, 1], shared_mem_bytes: 0 };
        support::launch(launcher, kernel, shape, &support::checked(argv, &guest), &guest)
    };
    result?;
    let f = |i: usize| f32::from_le_bytes(memory[4 * i..4 * i + 4].try_into().unwrap());
    for i in 0..256 {
        assert_eq!(f(512 + i), f(i) + f(256 + i), "element {i}");
    }
    Ok(())
}

/// The error of a launch the watchdog stopped: the launch-time quota, with what it ran.
fn assert_overran(what: &str, result: Result<kernel_args::LaunchOutcome, HostError>) {
    let e = result.expect_err(what);
    assert_eq!(e.code(), AbiError::QuotaExceeded, "{what}: {e}");
    let limit = u64::try_from(DEADLINE.as_millis()).unwrap();
    match e.detail() {
        &Detail::Quota(QuotaError { quota: Quota::LaunchTime, requested, limit: l }) => {
            assert_eq!(l, limit, "{what}");
            assert!(requested >= limit, "{what}: stopped after {requested} ms, before the deadline");
        }
        other => panic!("{what}: {other:?}"),
    }
    assert!(e.to_string().contains("milliseconds one launch runs would be"), "{what}: {e}");
}

/// The tests of this file one at a time: the stall below is a setting of the whole emulated
/// driver.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// On any device (a GPU, or the emulated driver's device 0): a kernel that does not end is
/// stopped at the deadline by the context's reset, and the next launch runs. This is what
/// `scripts/gpu-check.sh` runs on a GPU, where the reset's stopping a running kernel has not
/// been shown yet.
#[test]
fn a_kernel_past_the_deadline_is_stopped_on_any_device() {
    let test = "a_kernel_past_the_deadline_is_stopped_on_any_device";
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for mode in [PointerModeChoice::Staged, PointerModeChoice::Direct] {
        let mut registry = registry();
        registry
            .register(
                SPIN,
                &support::loops_ptx(),
                "spin",
                Sandbox::fenced(&support::loop_declaration("spin")).unwrap(),
            )
            .unwrap();
        let options = CudaOptions { launch_deadline: Some(DEADLINE), ..support::options(mode) };
        let Some(device) = support::open_with(test, registry, options) else { continue };
        let mut launcher = device.launcher();
        vector_add(&mut launcher, VECTOR_ADD).unwrap();
        let started = Instant::now();
        assert_overran(test, spin(&mut launcher, SPIN));
        support::say(format!("{test}: {mode:?}: stopped after {:?}", started.elapsed()));
        assert!(device.overruns() >= 1);
        vector_add(&mut launcher, VECTOR_ADD).unwrap_or_else(|e| panic!("{test}: after the reset: {e}"));
    }
}

#[test]
fn the_watchdog_stops_a_launch_past_its_deadline_and_the_device_recovers() {
    let test = "the_watchdog_stops_a_launch_past_its_deadline_and_the_device_recovers";
    let Some((emulator, library)) = support::emulator(test) else { return };
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);

    for mode in [PointerMode::Direct, PointerMode::Staged] {
        for kernel in [SPIN, SPIN_SYNC_UNFENCED] {
            let what = format!("{mode:?}, kernel {kernel}");
            let (ordinal, before, device) = open(emulator, &library, mode);
            let (mut tenant, mut other) = (device.launcher(), device.launcher());
            vector_add(&mut other, VECTOR_ADD).unwrap();

            let started = Instant::now();
            assert_overran(&what, spin(&mut tenant, kernel));
            assert_eq!(device.overruns(), 1, "{what}");
            assert!(started.elapsed() < RETURNED_WITHIN, "{what}: {:?}", started.elapsed());

            // Every tenant's next launch runs, on a fresh context, with correct results.
            vector_add(&mut other, VECTOR_ADD).unwrap_or_else(|e| panic!("{what}: the other tenant: {e}"));
            vector_add(&mut tenant, VECTOR_ADD_UNFENCED)
                .unwrap_or_else(|e| panic!("{what}: the tenant: {e}"));
            drop((tenant, other, device));
            // Nothing of the reset context is left, and nothing of the fresh one.
            assert_eq!(emulator.live_all(ordinal), before, "{what}: live handles and allocations");
        }
    }

    // Dropped right after an overrun, before any launch recovers the context: what was made in
    // the reset context is given up, and nothing of the device is left.
    let (ordinal, before, device) = open(emulator, &library, PointerMode::Staged);
    let mut launcher = device.launcher();
    vector_add(&mut launcher, VECTOR_ADD).unwrap();
    assert_overran("dropped after it", spin(&mut launcher, SPIN));
    drop((launcher, device));
    assert_eq!(emulator.live_all(ordinal), before, "dropped right after an overrun");

    // Another tenant's launch in flight when the context is reset fails, and does not hang; the
    // tenants' next launches run.
    let (_, _, device) = open(emulator, &library, PointerMode::Direct);
    let (mut first, mut second) = (device.launcher(), device.launcher());
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| spin(&mut first, SPIN));
        std::thread::sleep(DEADLINE / 3);
        let b = s.spawn(|| spin(&mut second, SPIN_SYNC_UNFENCED));
        (a.join().unwrap(), b.join().unwrap())
    });
    let stopped =
        [&a, &b].iter().filter(|r| r.as_ref().is_err_and(|e| e.code() == AbiError::QuotaExceeded)).count();
    assert!(stopped >= 1, "one launch overran: {a:?} {b:?}");
    support::say(format!("{test}: the launch stopped, and the one in flight: {a:?}; {b:?}"));
    for result in [&a, &b] {
        let e = result.as_ref().expect_err("neither launch ends by itself");
        match e.code() {
            AbiError::QuotaExceeded => {}
            AbiError::LaunchFailed => {
                assert!(
                    e.to_string().contains("another launch on this device ran past the host's deadline"),
                    "{e}"
                );
            }
            _ => panic!("{e}"),
        }
    }
    assert!(device.overruns() >= 1);
    vector_add(&mut first, VECTOR_ADD).unwrap();
    vector_add(&mut second, VECTOR_ADD).unwrap();
    drop((first, second, device));

    // A stalled stream: the device waits before each queued operation, past the deadline.
    for mode in [PointerMode::Direct, PointerMode::Staged] {
        let (_, _, device) = open(emulator, &library, mode);
        let mut launcher = device.launcher();
        emulator.set_delay(DEADLINE * 3);
        let e = vector_add(&mut launcher, VECTOR_ADD).expect_err("a stalled stream");
        emulator.set_delay(Duration::ZERO);
        assert_overran(&format!("{mode:?}, a stalled stream"), Err(e));
        vector_add(&mut launcher, VECTOR_ADD).unwrap();
    }
}
