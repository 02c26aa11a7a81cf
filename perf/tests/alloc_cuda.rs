//! Proves that the launch path allocates nothing on the heap, up to the driver call: parsing,
//! filling the `void**` parameter storage from the checked arguments (direct and staged) and
//! making its table, and the std adapter's host function (argument-region check, shape check,
//! parse, dispatch) up to and through a [`Launcher`] that fills its storage (a fenced kernel's
//! hidden parameters too) and makes the table as `CudaLauncher` does in direct mode.
//!
//! The counting global allocator below counts the allocations (and reallocations) of the
//! current thread only, so the test harness's own threads and bookkeeping are never counted,
//! and it can be read at any moment: the recording launcher reads it at the instant the host
//! function calls it. (The counter needs `unsafe` to implement `GlobalAlloc`: the one
//! `unsafe` of this crate, allowed in this file only.) Every argv from 0 to
//! `MAX_KERNEL_ARGS` mixed arguments is run, and the largest valid buffer.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
// The counting allocator implements `GlobalAlloc`, an unsafe trait (each block with its
// `// SAFETY:`).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use kernel_args::{
    Declaration, HostError, KernelTable, LaunchArgs, LaunchCall, LaunchHost, LaunchOutcome, LaunchRequest,
    Launcher, Registered,
};
use kernel_args_core::{GuestMemory, GuestRange, MAX_KERNEL_ARGS, parse_argv_into};
use kernel_args_cuda::{KernelParamStorage, PaddingScratch, StorageError};
use kernel_args_testkit::argvs;

/// `System`, counting every allocation made by the calling thread.
struct CountingAllocator;

thread_local! {
    /// Allocations made by this thread so far. A `const`-initialised `Cell` without a
    /// destructor: reading or bumping it never allocates, so the allocator may use it.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the allocator may run while this thread's locals are being torn down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

/// This thread's allocations so far.
fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards its arguments unchanged to `System`, so the memory handed out
// and its layout contract are `System`'s; counting touches only a thread-local `Cell`.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `alloc` is passed through to `System`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: `ptr` was allocated by this allocator, that is by `System`, with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, that is by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `f`, returning its result and the allocations it made on this thread.
fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = allocations();
    let result = black_box(f());
    (result, allocations() - before)
}

/// The argvs every test runs: each mixed size `0..=MAX_KERNEL_ARGS` (a few under Miri), then
/// the largest valid buffer.
fn argvs() -> impl Iterator<Item = (String, usize, Vec<u8>)> {
    argvs::sizes()
        .into_iter()
        .map(|n| (format!("{n} mixed args"), n, argvs::encode(&argvs::mixed(n))))
        .chain([("the largest valid buffer".to_string(), MAX_KERNEL_ARGS, argvs::largest_valid())])
}

#[test]
fn the_counter_sees_allocations() {
    // Without this, a counter that never counts would make every other test pass.
    let (v, n) = allocations_during(|| Vec::<u8>::with_capacity(64));
    assert_eq!(n, 1);
    let (_, n) = allocations_during(|| {
        let mut v = v;
        v.reserve(1 << 20);
        v
    });
    assert_eq!(n, 1, "a reallocation counts");
}

/// Direct placement as `CudaLauncher` makes it: each window's writable host pointer.
fn direct(guest: &GuestMemory<'_>, index: usize, range: GuestRange) -> Result<u64, StorageError> {
    let window = guest.window(range.guest_offset, range.len).ok_or(StorageError::Unplaced { index })?;
    let host = window.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
    Ok(host.expose_provenance() as u64)
}

#[test]
fn parse_and_fill_allocate_nothing() {
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    let memory_len = memory.len() as u64;
    let guest = GuestMemory::exclusive(&mut memory);
    let mut args = LaunchArgs::new();
    let mut storage: Box<KernelParamStorage> = Box::default();
    // The padded table's scratch grows on a launch with more arguments than any before and is
    // kept, as a launcher keeps it: grown here to the most arguments below.
    let mut padding = PaddingScratch::default();
    for (_, _, buf) in argvs() {
        parse_argv_into(&buf, &GuestMemory::length_only(memory_len), &mut args).unwrap();
        storage.fill(&args, |index, range| direct(&guest, index, range)).unwrap();
        storage.with_padded_params(&mut padding, |_| ());
    }
    for (what, n, buf) in argvs() {
        let (len, allocs) = allocations_during(|| {
            parse_argv_into(&buf, &GuestMemory::length_only(memory_len), &mut args).unwrap();
            storage.fill(&args, |index, range| direct(&guest, index, range)).unwrap();
            storage.with_params(|table| {
                black_box(table.as_mut_ptr());
                table.len()
            })
        });
        assert_eq!((len, allocs), (n, 0), "parse + direct fill + with_params, {what}");

        let (len, allocs) = allocations_during(|| {
            let mut storage: KernelParamStorage = KernelParamStorage::new();
            storage.fill(&args, |index, range| direct(&guest, index, range)).unwrap();
            storage.with_padded_params(&mut padding, |table| {
                black_box(table.as_mut_ptr());
                table.len()
            })
        });
        assert_eq!((len, allocs), (n, 0), "a fresh storage on the stack + with_padded_params, {what}");

        let (len, allocs) = allocations_during(|| {
            storage
                .fill(&args, |index, _| Ok::<u64, StorageError>(0x7f00_0000_0000 + ((index as u64) << 12)))
                .unwrap();
            storage.with_params(|table| {
                black_box(table.as_mut_ptr());
                table.len()
            })
        });
        assert_eq!((len, allocs), (n, 0), "staged fill in place, {what}");
    }
}

/// A launcher that records the allocation count at the moment it is called, then fills its
/// parameter storage from the request, appends a fenced kernel's four hidden parameters (the
/// guest memory's base and length, a flag's address, the budget) and makes its `void**` table exactly as
/// the CUDA launcher does in direct mode before `cuLaunchKernel`, and records the count again.
struct RecordingLauncher {
    kernels: KernelTable,
    storage: Box<KernelParamStorage<{ MAX_KERNEL_ARGS + 4 }>>,
    at_call: Option<u64>,
    after_build: Option<u64>,
    args: usize,
}

impl Launcher for RecordingLauncher {
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        self.kernels.get(kernel_id)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        self.at_call = Some(allocations());
        self.storage.fill(request.args, |index, range| {
            let host = request.window(range)?.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
            Ok::<u64, HostError>(host.expose_provenance() as u64)
        })?;
        let base = request.memory.window(0, 0).and_then(|w| w.host_ptr_mut()).expect("exclusive memory");
        let budget = u64::from(request.limits().max_back_edges_per_thread);
        self.storage.append(&[
            base.expose_provenance() as u64,
            request.memory.len(),
            0x7f00_0000_0000,
            budget,
        ])?;
        self.args = self.storage.with_params(|table| {
            black_box(table.as_mut_ptr());
            table.len()
        }) - 4;
        self.after_build = Some(allocations());
        Ok(LaunchOutcome::NO_DEVICE)
    }
}

#[test]
fn the_host_function_allocates_nothing_up_to_the_launcher() {
    let launcher = RecordingLauncher {
        kernels: KernelTable::new(),
        storage: Box::default(),
        at_call: None,
        after_build: None,
        args: 0,
    };
    let mut host = LaunchHost::new(launcher);
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    // The argv sits at the end of guest memory, past every pointer window but the last.
    for (what, n, buf) in argvs() {
        // Kernel 7 declared for this argv (parsed outside the measured call).
        let mut record = LaunchArgs::new();
        parse_argv_into(&buf, &GuestMemory::length_only(argvs::MEMORY_LEN as u64), &mut record).unwrap();
        let declaration =
            Declaration::parse(&argvs::declaration(&record.iter().collect::<Vec<_>>())).unwrap();
        host.launcher_mut().kernels.declare(7, declaration).unwrap();
        let args_ptr = argvs::MEMORY_LEN - buf.len();
        memory[args_ptr..].copy_from_slice(&buf);
        let call = LaunchCall {
            args_ptr: args_ptr as i32,
            args_len: buf.len() as i32,
            ..LaunchCall::new(7, [4, 2, 1], [128, 1, 1])
        };
        let before = allocations();
        let code = host.call(Some(&mut memory), &call);
        let total = allocations() - before;
        assert_eq!(code, 0, "{what}: {:?}", host.last_error());
        let launcher = host.launcher_mut();
        assert_eq!(launcher.args, n, "{what}: the launcher saw every argument");
        let at_call = launcher.at_call.take().expect("the launcher was called") - before;
        let after_build = launcher.after_build.take().expect("the storage was built") - before;
        assert_eq!(at_call, 0, "{what}: allocations before the launcher was called");
        assert_eq!(after_build, 0, "{what}: allocations up to the void** table");
        assert_eq!(total, 0, "{what}: allocations in the whole call");
    }
}
