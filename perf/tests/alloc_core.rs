//! Proves that parsing, rejecting and encoding never touch the heap.
//!
//! A counting global allocator counts the allocations made by the current thread (the test
//! harness runs tests on several threads and allocates for its own bookkeeping, which must not
//! be counted). Every argv from 0 to [`MAX_KERNEL_ARGS`] mixed arguments is parsed (a few of
//! them under Miri), as well as the largest valid buffer and buffers that fail early, late and
//! on each cap.

// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use kernel_args_core::{
    ErrorCode, GuestMemory, LoweredArgSnapshot, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES, ParsedArgv,
    RecordReader, encode_argv, parse_argv, parse_argv_into,
};
use kernel_args_testkit::argvs;

/// Runs `f` and returns its result with the number of heap allocations (reallocations
/// included) it made on this thread. `allocation-counter` installs the counting global
/// allocator for this test binary (core forbids `unsafe`, so it is not written here).
fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let mut result = None;
    let info = allocation_counter::measure(|| result = Some(std::hint::black_box(f())));
    (result.expect("measure runs its closure"), info.count_total)
}

#[test]
fn the_counter_sees_allocations() {
    // Without this, a counter that never counts would make every other test pass.
    let (v, n) = allocations_during(|| Vec::<u8>::with_capacity(64));
    assert_eq!(n, 1);
    drop(v);
    let (_, n) = allocations_during(|| format!("{}", 12345).len());
    assert!(n >= 1);
}

#[test]
fn parsing_every_size_up_to_the_cap_allocates_nothing() {
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    let guest = GuestMemory::exclusive(&mut memory);
    for n in argvs::sizes() {
        let buf = argvs::encode(&argvs::mixed(n));
        let (parsed, allocs) = allocations_during(|| parse_argv::<MAX_KERNEL_ARGS>(&buf, &guest));
        let parsed = parsed.unwrap_or_else(|e| panic!("{n} args: {e}"));
        assert_eq!(parsed.len(), n);
        assert_eq!(allocs, 0, "parse_argv of {n} mixed args allocated");

        let mut out: ParsedArgv = ParsedArgv::new();
        let (result, allocs) = allocations_during(|| parse_argv_into(&buf, &guest, &mut out));
        result.unwrap();
        assert_eq!((out.len(), allocs), (n, 0), "parse_argv_into of {n} mixed args");

        // Into the other sink the core provides: pointer-free snapshots (the host's record).
        let mut snapshots: heapless::Vec<LoweredArgSnapshot, MAX_KERNEL_ARGS> = heapless::Vec::new();
        let (result, allocs) = allocations_during(|| parse_argv_into(&buf, &guest, &mut snapshots));
        result.unwrap();
        assert_eq!((snapshots.len(), allocs), (n, 0), "parse_argv_into snapshots of {n} mixed args");

        let (count, allocs) = allocations_during(|| {
            RecordReader::new(&buf, &guest).map(|reader| reader.filter(Result::is_ok).count())
        });
        assert_eq!((count, allocs), (Ok(n), 0), "RecordReader over {n} mixed args");
    }
}

#[test]
fn parsing_the_largest_valid_buffer_allocates_nothing() {
    let buf = argvs::largest_valid();
    let guest = GuestMemory::length_only(argvs::MEMORY_LEN as u64);
    let (parsed, allocs) = allocations_during(|| parse_argv::<MAX_KERNEL_ARGS>(&buf, &guest));
    assert_eq!((parsed.map(|p| p.len()), allocs), (Ok(MAX_KERNEL_ARGS), 0));
    let memory = vec![0u8; argvs::MEMORY_LEN];
    let guest = GuestMemory::shared(&memory);
    let (parsed, allocs) = allocations_during(|| parse_argv::<MAX_KERNEL_ARGS>(&buf, &guest));
    assert_eq!((parsed.map(|p| p.len()), allocs), (Ok(MAX_KERNEL_ARGS), 0));
}

#[test]
fn rejecting_allocates_nothing_and_neither_does_the_error() {
    let guest = GuestMemory::length_only(argvs::MEMORY_LEN as u64);
    let too_many = argvs::encode(&argvs::mixed(MAX_KERNEL_ARGS))
        .into_iter()
        .chain([0x05, 0, 0, 0, 0])
        .collect::<Vec<u8>>();
    let too_long = vec![0x05; MAX_KERNEL_ARGS_BYTES + 1];
    let cases = [
        (argvs::early_error(), ErrorCode::InvalidArgs, 0),
        (argvs::late_error(), ErrorCode::InvalidPointer, MAX_KERNEL_ARGS - 1),
        (too_many, ErrorCode::KernelArgsUnsupported, MAX_KERNEL_ARGS),
        (too_long, ErrorCode::KernelArgsUnsupported, 0),
        (vec![0x02, 1, 2, 3], ErrorCode::InvalidArgs, 0),
    ];
    for (buf, code, index) in cases {
        let (err, allocs) = allocations_during(|| parse_argv::<MAX_KERNEL_ARGS>(&buf, &guest).unwrap_err());
        assert_eq!((err.code(), err.index(), allocs), (code, index, 0), "{err}");
        // The error's parts are plain values: reading them does not allocate either.
        let (_, allocs) = allocations_during(|| (err.kind(), err.offset(), err.code().code()));
        assert_eq!(allocs, 0);
    }
}

#[test]
fn encoding_every_size_up_to_the_cap_allocates_nothing() {
    let mut out = [0u8; MAX_KERNEL_ARGS_BYTES];
    for n in argvs::sizes() {
        let args: Vec<LoweredArgSnapshot> = argvs::mixed(n);
        let expected = argvs::encode(&args);
        let (len, allocs) = allocations_during(|| encode_argv(&args, &mut out));
        assert_eq!((len, allocs), (Ok(expected.len()), 0), "{n} args");
        assert_eq!(&out[..expected.len()], &expected[..]);
    }
}
