//! The launch deadline (feature `cuda`): what `CudaOptions::launch_deadline` does, on any
//! device. CUDA has no call that stops a running kernel (on an H200, driver 580,
//! `cuDevicePrimaryCtxReset` and `cuCtxDestroy` returned only once the kernel had ended;
//! `scripts/gpu-probe.c`), so the deadline stops nothing: a launch that ends past it answers
//! `QuotaExceeded` naming the launch-time quota, with the kernel's results in guest memory,
//! and nothing else on the device is touched. What ends a fenced kernel that never would is its
//! threads' budget of backward branches, deadline or not.
//!
//! Covered: every launch past a deadline of zero, in both pointer modes, its results right and
//! another device on the same context untouched; a kernel that never ends, ended by its budget
//! on a device with a deadline; (emulated driver) a stalled stream (the device waits before
//! each queued operation) that makes a launch end past its deadline. The tests run one at a
//! time: the stall is a setting of the whole emulated driver. `scripts/gpu-check.sh` runs the
//! first two on a GPU.
// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod support;

use std::time::{Duration, Instant};

use kernel_args::{AbiError, Detail, HostError, LaunchLimits, LaunchShape, PointerMode, Quota, QuotaError};
use kernel_args_core::{ArgvBuilder, GuestMemory};
use kernel_args_cuda::{CudaLauncher, CudaOptions, PointerModeChoice, Sandbox};
use support::{VECTOR_ADD, registry};

/// `spin` of `support::loops_ptx` (64 threads counting turns for as long as the guest's `x`
/// is not zero), fenced.
const SPIN: i64 = 40;

/// The deadline of the devices that are not meant to overrun it.
const DEADLINE: Duration = Duration::from_millis(300);

/// The fenced spin's budget on a GPU: 2²⁵ backward branches a thread, about 0.5 s on an H200
/// (2³⁰ took 16 s there), past [`DEADLINE`]; on the emulated driver, 2¹², which it interprets
/// in well under a second.
fn spin_budget(emulated: bool) -> u32 {
    if emulated { 1 << 12 } else { 1 << 25 }
}

/// Launches vector_add over 256 elements and checks every sum, whatever the launch answered
/// (a launch past its deadline ran to its end); returns that answer.
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
    let f = |i: usize| f32::from_le_bytes(memory[4 * i..4 * i + 4].try_into().unwrap());
    for i in 0..256 {
        assert_eq!(f(512 + i), f(i) + f(256 + i), "element {i} ({result:?})");
    }
    result.map(drop)
}

/// The answer of a launch that ended past a deadline of `limit`.
fn assert_overran(what: &str, result: Result<(), HostError>, limit: Duration) {
    let e = result.expect_err(what);
    assert_eq!(e.code(), AbiError::QuotaExceeded, "{what}: {e}");
    let limit = u64::try_from(limit.as_millis()).unwrap();
    match e.detail() {
        &Detail::Quota(QuotaError { quota: Quota::LaunchTime, requested, limit: l }) => {
            assert_eq!(l, limit, "{what}");
            assert!(requested > limit, "{what}: {requested} ms, not past the deadline");
        }
        other => panic!("{what}: {other:?}"),
    }
    assert!(e.to_string().contains("milliseconds one launch runs would be"), "{what}: {e}");
}

/// The tests of this file one at a time: the stall below is a setting of the whole emulated
/// driver.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_launch_past_its_deadline_ran_to_its_end_and_touched_nothing_else() {
    let test = "a_launch_past_its_deadline_ran_to_its_end_and_touched_nothing_else";
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for mode in [PointerModeChoice::Staged, PointerModeChoice::Direct] {
        // Every launch ends past a deadline of zero.
        let options = CudaOptions { launch_deadline: Some(Duration::ZERO), ..support::options(mode) };
        let Some(late) = support::open_with(test, registry(), options) else { continue };
        // A device without a deadline on the same ordinal, so on the same context.
        let Some(other) = support::open_with(test, registry(), support::options(mode)) else { continue };
        let (mut late_launcher, mut other_launcher) = (late.launcher(), other.launcher());
        vector_add(&mut other_launcher, VECTOR_ADD).unwrap();
        let before = late.overruns();
        for turn in 0..3 {
            let what = format!("{mode:?}, launch {turn}");
            assert_overran(&what, vector_add(&mut late_launcher, VECTOR_ADD), Duration::ZERO);
            vector_add(&mut other_launcher, VECTOR_ADD)
                .unwrap_or_else(|e| panic!("{what}: the other device: {e}"));
        }
        assert_eq!(late.overruns() - before, 3, "{mode:?}");
        assert_eq!(other.overruns(), late.overruns(), "{mode:?}: one context, one count");
        support::say(format!("{test}: {mode:?}: 3 launches past a deadline of zero, each complete"));
    }
}

#[test]
fn a_kernel_that_never_ends_is_ended_by_its_budget_not_by_the_deadline() {
    let test = "a_kernel_that_never_ends_is_ended_by_its_budget_not_by_the_deadline";
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let emulated = CudaOptions::from_env().driver_library.is_some();
    let budget = spin_budget(emulated);
    for mode in [PointerModeChoice::Staged, PointerModeChoice::Direct] {
        let mut registry = registry();
        let declaration = Sandbox::fenced(&support::loop_declaration("spin")).unwrap();
        registry.register(SPIN, &support::loops_ptx(), "spin", declaration).unwrap();
        let options = CudaOptions { launch_deadline: Some(DEADLINE), ..support::options(mode) };
        let Some(device) = support::open_with(test, registry, options) else { continue };
        let mut launcher = device.launcher();
        vector_add(&mut launcher, VECTOR_ADD).unwrap();

        let mut memory = vec![0u8; 4096];
        let mut buf = [0u8; 64];
        let mut argv = ArgvBuilder::new(&mut buf);
        argv.ptr(0, 4 * 64).unwrap().u32(1).unwrap();
        let argv = argv.finish();
        let started = Instant::now();
        let result = {
            let guest = GuestMemory::exclusive(&mut memory);
            let shape = LaunchShape { grid: [1, 1, 1], block: [64, 1, 1], shared_mem_bytes: 0 };
            let limits = LaunchLimits { max_back_edges_per_thread: budget, ..LaunchLimits::DEFAULT };
            support::launch_limited(
                &mut launcher,
                SPIN,
                shape,
                &support::checked(argv, &guest),
                &guest,
                limits,
            )
        };
        let took = started.elapsed();
        let e = result.expect_err("the kernel never ends by itself");
        let limit = u64::from(budget);
        assert!(
            matches!(
                e.detail(),
                &Detail::Quota(QuotaError { quota: Quota::BackEdgesPerThread, requested, limit: l })
                    if requested == limit + 1 && l == limit
            ),
            "{mode:?}: {e}"
        );
        // Every thread counted its turns up to the budget: it ran to the budget's end.
        for t in 0..64 {
            let count = u32::from_le_bytes(memory[4 * t..4 * t + 4].try_into().unwrap());
            assert_eq!(count, budget + 1, "{mode:?}: thread {t}");
        }
        support::say(format!(
            "{test}: {mode:?}: ended by its budget of {budget} after {took:?} (deadline {DEADLINE:?})"
        ));
        vector_add(&mut launcher, VECTOR_ADD).unwrap_or_else(|e| panic!("{test}: {mode:?}: after it: {e}"));
    }
}

#[test]
fn a_stalled_stream_ends_a_launch_past_its_deadline() {
    let test = "a_stalled_stream_ends_a_launch_past_its_deadline";
    let Some((emulator, _)) = support::emulator(test) else { return };
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for mode in [PointerMode::Direct, PointerMode::Staged] {
        let options =
            CudaOptions { launch_deadline: Some(DEADLINE), ..support::options(support::forced(mode)) };
        let device = support::open_with(test, registry(), options).unwrap();
        let mut launcher = device.launcher();
        emulator.set_delay(DEADLINE * 2);
        let result = vector_add(&mut launcher, VECTOR_ADD);
        emulator.set_delay(Duration::ZERO);
        assert_overran(&format!("{mode:?}, a stalled stream"), result, DEADLINE);
        vector_add(&mut launcher, VECTOR_ADD).unwrap();
    }
}
