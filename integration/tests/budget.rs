//! The budget per launch (feature `cuda`): a fenced kernel's thread counts the backward branches
//! it takes against the budget its guest's host gives (`LaunchLimits::max_back_edges_per_thread`),
//! and one that would take a branch past it stops there, without a fault; the guest's call
//! answers `QuotaExceeded` naming the budget, and the context and every other tenant go on.
//!
//! Covered, in both pointer modes, through `LaunchHost::call` (the host function): kernels that
//! never end (their loop's exit is a value the guest wrote), with and without `bar.sync`; the
//! budget's edge (a loop of `n` turns runs with a budget of `n - 1` branches and stops at
//! `n - 2`, leaving the kernel, or leaving the loop where a warp's shuffle follows it); a block whose threads meet at `bar.sync` after loops of different lengths, some of
//! which the budget stops (the others go on past the barrier without them); another tenant's
//! launches, with correct results, while a guest's kernel spins through its budget. No
//! deadline is set on these devices, and none would stop a kernel: only the budget does.
//!
//! The tests run on any device: the emulated driver in CI, and `scripts/gpu-check.sh` runs the
//! first on a GPU.
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

use kernel_args::{AbiError, Detail, LaunchCall, LaunchHost, LaunchLimits, Quota, QuotaError};
use kernel_args_core::ArgvBuilder;
use kernel_args_cuda::{CudaDevice, CudaLauncher, PointerModeChoice, Sandbox};
use support::{VECTOR_ADD, registry};

const SPIN: i64 = 50;
const SPIN_SYNC: i64 = 51;
const COUNT_TO: i64 = 52;
const LOPSIDED: i64 = 53;
const COUNT_THEN_SHUFFLE: i64 = 54;

/// Threads in the one block each kernel runs.
const THREADS: usize = 64;

/// Where the guest's argv lies in its memory (`out` is at 0).
const ARGV_AT: usize = 1024;

/// The fixture kernels and the five loops of `support::loops_ptx`, each fenced and declared.
fn loops_registry() -> kernel_args_cuda::KernelRegistry {
    let mut r = registry();
    let ptx = support::loops_ptx();
    for (id, entry) in [
        (SPIN, "spin"),
        (SPIN_SYNC, "spin_sync"),
        (COUNT_TO, "count_to"),
        (LOPSIDED, "lopsided"),
        (COUNT_THEN_SHUFFLE, "count_then_shuffle"),
    ] {
        let sandbox = Sandbox::fenced(&support::loop_declaration(entry)).unwrap();
        r.register(id, &ptx, entry, sandbox).unwrap();
    }
    r
}

/// A guest's host on `device` whose kernels' threads may take `budget` backward branches.
fn guest(device: &Arc<CudaDevice>, budget: u32) -> LaunchHost<CudaLauncher> {
    let limits = LaunchLimits { max_back_edges_per_thread: budget, ..LaunchLimits::DEFAULT };
    LaunchHost::new(device.launcher()).with_limits(limits)
}

/// The guest's call of `kernel(out, x)` over one block of [`THREADS`]: its answer and `out`.
fn call(host: &mut LaunchHost<CudaLauncher>, kernel: i64, x: u32) -> (i32, Vec<u32>) {
    let mut memory = vec![0u8; 4096];
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 4 * THREADS as u32).unwrap().u32(x).unwrap();
    let argv = argv.finish();
    memory[ARGV_AT..ARGV_AT + argv.len()].copy_from_slice(argv);
    let call = LaunchCall {
        args_ptr: ARGV_AT as i32,
        args_len: argv.len() as i32,
        ..LaunchCall::new(kernel, [1, 1, 1], [THREADS as i32, 1, 1])
    };
    let code = host.call(Some(&mut memory), &call);
    let out = memory[..4 * THREADS].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    (code, out)
}

/// The guest's call of vector_add over 256 elements, every sum checked.
fn vector_add(host: &mut LaunchHost<CudaLauncher>) {
    let mut memory: Vec<u8> = (0..3 * 256u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    memory.resize(4096, 0);
    let mut buf = [0u8; 128];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 1024).unwrap().ptr(1024, 1024).unwrap().ptr(2048, 1024).unwrap().u32(256).unwrap();
    let argv = argv.finish();
    memory[3072..3072 + argv.len()].copy_from_slice(argv);
    let call = LaunchCall {
        args_ptr: 3072,
        args_len: argv.len() as i32,
        ..LaunchCall::new(VECTOR_ADD, [2, 1, 1], [128, 1, 1])
    };
    let code = host.call(Some(&mut memory), &call);
    assert_eq!(code, 0, "vector_add: {:?}", host.last_error());
    let f = |i: usize| f32::from_le_bytes(memory[4 * i..4 * i + 4].try_into().unwrap());
    for i in 0..256 {
        assert_eq!(f(512 + i), f(i) + f(256 + i), "element {i}");
    }
}

/// The guest's last error is the budget's quota, at `budget`.
fn assert_spent(what: &str, host: &LaunchHost<CudaLauncher>, code: i32, budget: u32) {
    let e = host.last_error().unwrap_or_else(|| panic!("{what}: no error, code {code}"));
    assert_eq!(code, AbiError::QuotaExceeded.code(), "{what}: {e}");
    let limit = u64::from(budget);
    assert_eq!(
        e.detail(),
        &Detail::Quota(QuotaError { quota: Quota::BackEdgesPerThread, requested: limit + 1, limit }),
        "{what}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "QuotaExceeded -6: backward branches (loop iterations) one thread takes would be {}, the quota \
             is {budget}",
            limit + 1
        ),
        "{what}"
    );
}

/// The devices of this test, one per pointer mode this machine has (the skips reported).
fn devices(test: &str) -> Vec<Arc<CudaDevice>> {
    [PointerModeChoice::Staged, PointerModeChoice::Direct]
        .into_iter()
        .filter_map(|mode| support::open_with(test, loops_registry(), support::options(mode)))
        .collect()
}

/// On any device: kernels that never end, with and without a barrier, stop at their budget
/// with every thread's count where the budget put it; the device needs no recovery, and the
/// guest's and another tenant's next launches run with correct results.
#[test]
fn a_kernel_that_never_ends_stops_at_its_budget_and_the_device_goes_on() {
    let test = "a_kernel_that_never_ends_stops_at_its_budget_and_the_device_goes_on";
    for device in devices(test) {
        let mode = device.pointer_mode();
        let mut other = guest(&device, LaunchLimits::DEFAULT.max_back_edges_per_thread);
        vector_add(&mut other);
        for (kernel, budget) in [(SPIN, 1000), (SPIN_SYNC, 1000), (SPIN, 0), (SPIN_SYNC, 77_777)] {
            let what = format!("{mode:?}, kernel {kernel}, budget {budget}");
            let mut tenant = guest(&device, budget);
            let (code, out) = call(&mut tenant, kernel, 1);
            assert_spent(&what, &tenant, code, budget);
            // Each thread took `budget` branches back, so ran the loop's body once more.
            assert_eq!(out, vec![budget + 1; THREADS], "{what}");
            // The same kernel with its loop's exit taken runs (no backward branch is taken).
            assert_eq!(
                call(&mut tenant, kernel, 0),
                (0, vec![1; THREADS]),
                "{what}: {:?}",
                tenant.last_error()
            );
            vector_add(&mut other);
            vector_add(&mut tenant);
        }
        assert_eq!(device.overruns(), 0, "{mode:?}: nothing was reset");
        support::say(format!("{test}: {mode:?}: stopped at the budget, no reset"));
    }
}

/// A loop of `n` turns takes `n - 1` branches back: a budget of `n - 1` runs it, `n - 2` stops
/// it with every thread one turn short. Where a warp's shuffle follows the loop (which waits for
/// no other thread), a thread whose budget ran out leaves the loop rather than the kernel, and
/// runs on: it shuffles with the others and stores what it counted.
#[test]
fn the_budget_allows_exactly_its_backward_branches() {
    let test = "the_budget_allows_exactly_its_backward_branches";
    for device in devices(test) {
        let mode = device.pointer_mode();
        for n in [1u32, 2, 3, 500] {
            let what = format!("{mode:?}, n {n}");
            let mut enough = guest(&device, n - 1);
            assert_eq!(
                call(&mut enough, COUNT_TO, n),
                (0, vec![n; THREADS]),
                "{what}: {:?}",
                enough.last_error()
            );
            if n >= 2 {
                let mut short = guest(&device, n - 2);
                let (code, out) = call(&mut short, COUNT_TO, n);
                assert_spent(&what, &short, code, n - 2);
                // Stopped before its store: `out` is as the guest left it.
                assert_eq!(out, vec![0; THREADS], "{what}");
                let (code, out) = call(&mut short, COUNT_THEN_SHUFFLE, n);
                assert_spent(&what, &short, code, n - 2);
                assert_eq!(out, vec![n - 1; THREADS], "{what}: left the loop, then stored");
            }
            assert_eq!(call(&mut enough, COUNT_THEN_SHUFFLE, n), (0, vec![n; THREADS]), "{what}");
        }
    }
}

/// A block whose threads run loops of different lengths before meeting at `bar.sync`: the
/// threads the budget stops have exited, and the others go on past the barrier without them
/// (as a CTA barrier without a thread count does for exited threads on sm_70 and later, and in
/// the emulator); no deadlock, no fault.
#[test]
fn a_thread_the_budget_stops_leaves_its_blocks_barrier() {
    let test = "a_thread_the_budget_stops_leaves_its_blocks_barrier";
    for device in devices(test) {
        let mode = device.pointer_mode();
        let (k, budget) = (10u32, 300u32);
        let mut tenant = guest(&device, budget);
        let (code, out) = call(&mut tenant, LOPSIDED, k);
        assert_spent(&format!("{mode:?}"), &tenant, code, budget);
        for (t, &value) in out.iter().enumerate() {
            let turns = t as u32 * k;
            let expected = if turns <= budget { turns } else { 0 };
            assert_eq!(value, expected, "{mode:?}: thread {t}");
        }
        // With the budget of the longest loop, every thread passes the barrier.
        let mut enough = guest(&device, (THREADS as u32 - 1) * k);
        let expected: Vec<u32> = (0..THREADS as u32).map(|t| t * k).collect();
        assert_eq!(call(&mut enough, LOPSIDED, k), (0, expected), "{mode:?}: {:?}", enough.last_error());
        assert_eq!(device.overruns(), 0);
    }
}

/// Another tenant's launches run, with correct results, while a guest's kernel spins through
/// its budget on the same device.
#[test]
fn other_tenants_launch_while_a_guest_spends_its_budget() {
    let test = "other_tenants_launch_while_a_guest_spends_its_budget";
    for device in devices(test) {
        let mode = device.pointer_mode();
        let budget = 50_000;
        let (mut spinner, mut other) = (guest(&device, budget), guest(&device, budget));
        let ((code, out), launched) = std::thread::scope(|s| {
            let spinning = s.spawn(|| call(&mut spinner, SPIN_SYNC, 1));
            let mut launched = 0;
            while !spinning.is_finished() || launched < 4 {
                vector_add(&mut other);
                launched += 1;
            }
            (spinning.join().unwrap(), launched)
        });
        assert_spent(&format!("{mode:?}"), &spinner, code, budget);
        assert_eq!(out, vec![budget + 1; THREADS]);
        support::say(format!(
            "{test}: {mode:?}: {launched} launches of another tenant beside the spinning one"
        ));
    }
}
