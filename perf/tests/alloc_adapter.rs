//! Proves that the host function's launch path allocates nothing on the heap: the argument
//! region check, the launch-shape check, the parse and the dispatch to the [`Launcher`], for
//! every argv from 0 to `MAX_KERNEL_ARGS` mixed arguments and the largest valid buffer; and
//! that refusing a call (bad region, bad shape, bad argv) allocates nothing either.
//!
//! `allocation-counter` installs a global allocator that counts the allocations of the current
//! thread only (this crate forbids `unsafe`, so none is written here). It is read around the
//! whole [`LaunchHost::call`]; the launcher used here allocates nothing and the host does no
//! work after the launcher returns `Ok`, so a total of zero is zero up to the launcher. (The
//! count at the very moment the launcher is called is asserted by
//! `perf/tests/alloc_cuda.rs`, whose own counting allocator can be read mid-call.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::hint::black_box;

use kernel_args::{
    AbiError, Declaration, HostError, KernelTable, LaunchCall, LaunchHost, LaunchOutcome, LaunchRequest,
    Launcher, Registered,
};
use kernel_args_core::{LoweredArgSnapshot, MAX_KERNEL_ARGS};
use kernel_args_testkit::argvs;

/// Runs `f` and returns its result with the heap allocations it made on this thread.
fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let mut result = None;
    let info = allocation_counter::measure(|| result = Some(black_box(f())));
    (result.expect("measure runs its closure"), info.count_total)
}

/// Counts its calls and the arguments it was handed; allocates nothing. Its kernel 3 is declared
/// for the argv of the current case (`argvs::declaration`), so the host checks every argument.
#[derive(Default)]
struct CountingLauncher {
    kernels: KernelTable,
    calls: usize,
    args: usize,
}

impl CountingLauncher {
    fn declare_for(&mut self, args: &[LoweredArgSnapshot]) {
        let declaration = Declaration::parse(&argvs::declaration(args)).unwrap();
        self.kernels.declare(3, declaration).unwrap();
    }
}

impl Launcher for CountingLauncher {
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        self.kernels.get(kernel_id)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        self.calls += 1;
        // Every window turned into its host pointer, as a launcher that places them does.
        for (_, range) in request.args.pointers() {
            black_box(request.window(range)?.host_ptr_mut());
        }
        self.args = black_box(request.args).len();
        Ok(LaunchOutcome::NO_DEVICE)
    }
}

/// A call whose argv is `buf`, placed at the end of guest memory (past the pointer windows).
fn place(memory: &mut [u8], buf: &[u8]) -> LaunchCall {
    let args_ptr = memory.len() - buf.len();
    memory[args_ptr..].copy_from_slice(buf);
    LaunchCall {
        args_ptr: args_ptr as i32,
        args_len: buf.len() as i32,
        ..LaunchCall::new(3, [8, 1, 1], [256, 1, 1])
    }
}

#[test]
fn the_counter_sees_allocations() {
    // Without this, a counter that never counts would make every other test pass.
    let (_, n) = allocations_during(|| Vec::<u8>::with_capacity(64));
    assert_eq!(n, 1);
}

#[test]
fn a_launch_allocates_nothing_up_to_the_launcher() {
    let mut host = LaunchHost::new(CountingLauncher::default());
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    let argvs = argvs::sizes()
        .into_iter()
        .map(|n| (format!("{n} mixed args"), argvs::mixed(n)))
        .chain([("the largest valid buffer".to_string(), argvs::wide(MAX_KERNEL_ARGS))]);
    for (what, args) in argvs {
        host.launcher_mut().declare_for(&args);
        let call = place(&mut memory, &argvs::encode(&args));
        let calls = host.launcher().calls;
        let (code, allocs) = allocations_during(|| host.call(Some(&mut memory), &call));
        assert_eq!(code, 0, "{what}: {:?}", host.last_error());
        assert_eq!(allocs, 0, "{what}: allocations in the host function");
        assert_eq!(host.launcher().calls, calls + 1, "{what}: the launcher was called");
        assert_eq!(host.launcher().args, args.len(), "{what}");
        let launch = host.last_launch().expect("recorded");
        assert_eq!(launch.snapshot().args(), &args[..], "{what}: the launcher saw the guest's arguments");
    }
}

#[test]
fn refusing_a_call_allocates_nothing() {
    let mut host = LaunchHost::new(CountingLauncher::default());
    host.launcher_mut().declare_for(&argvs::mixed(16));
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    let good = place(&mut memory, &argvs::encode(&argvs::mixed(16)));
    let cases = [
        (
            "region past memory",
            LaunchCall { args_ptr: argvs::MEMORY_LEN as i32, ..good },
            AbiError::InvalidPointer,
        ),
        ("negative length", LaunchCall { args_len: -1, ..good }, AbiError::InvalidPointer),
        ("zero block", LaunchCall { block: [0, 1, 1], ..good }, AbiError::InvalidDimensions),
        ("unknown kernel", LaunchCall { kernel_id: 9, ..good }, AbiError::InvalidKernel),
    ];
    for (what, call, code) in cases {
        let (got, allocs) = allocations_during(|| host.call(Some(&mut memory), &call));
        assert_eq!((got, allocs), (code.code(), 0), "{what}");
    }
    for (what, buf, code) in [
        ("early: unknown tag", argvs::early_error(), AbiError::InvalidArgs),
        ("late: window out of bounds", argvs::late_error(), AbiError::InvalidPointer),
    ] {
        let call = place(&mut memory, &buf);
        let (got, allocs) = allocations_during(|| host.call(Some(&mut memory), &call));
        assert_eq!((got, allocs), (code.code(), 0), "{what}");
    }
    assert_eq!(host.launcher().calls, 0, "no refused call reached the launcher");
}
