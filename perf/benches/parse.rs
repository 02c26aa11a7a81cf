//! Benchmarks of core's parser, its rejections and its encoder.
//!
//! Every benchmark's parameter is the number of arguments; the throughput is the buffer's
//! length in bytes, so criterion reports bytes per second, and `scripts/bench-table.py` turns
//! the estimates into a table with the time per argument. Inputs and guest memory are built
//! before the timed closure; the closure only parses (or encodes).
//!
//! The storage-building and end-to-end benchmarks, with the heap-allocating reference and the
//! unchecked floor, are `benches/parse_build/`.

// Bench code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kernel_args_core::{
    GuestMemory, LoweredArgSnapshot, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES, ParsedArgv, encode_argv,
    parse_argv, parse_argv_into,
};
use kernel_args_testkit::argvs::{self, BENCH_SIZES as SIZES, bench_inputs as inputs};

fn parse(c: &mut Criterion) {
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    let guest = GuestMemory::exclusive(&mut memory);
    let mut group = c.benchmark_group("parse");
    for (id, n, buf) in inputs() {
        group.throughput(Throughput::Bytes(buf.len() as u64));
        group.bench_with_input(BenchmarkId::new(id, n), &buf, |b, buf| {
            b.iter(|| parse_argv::<MAX_KERNEL_ARGS>(black_box(buf), black_box(&guest)))
        });
    }
    group.finish();

    // The same into a caller's long-lived vector, as the std adapter's host function parses:
    // no 3 KiB result is moved out of the call.
    let mut group = c.benchmark_group("parse_into");
    let mut out: ParsedArgv = ParsedArgv::new();
    for (id, n, buf) in inputs() {
        group.throughput(Throughput::Bytes(buf.len() as u64));
        group.bench_with_input(BenchmarkId::new(id, n), &buf, |b, buf| {
            b.iter(|| {
                let result = parse_argv_into(black_box(buf), black_box(&guest), &mut out);
                black_box(&out);
                result
            })
        });
    }
    group.finish();
}

fn reject(c: &mut Criterion) {
    let guest = GuestMemory::length_only(argvs::MEMORY_LEN as u64);
    let too_long = vec![0x05; MAX_KERNEL_ARGS_BYTES + 1];
    // (id, records read before the error is found, buffer)
    let cases = [
        ("too_long", 0, too_long),
        ("early_unknown_tag", 1, argvs::early_error()),
        ("late_window_out_of_bounds", MAX_KERNEL_ARGS, argvs::late_error()),
    ];
    // Into a caller's vector, as hosts parse: `parse_argv` would also move its 3 KiB result
    // (an `Err` included) out of the call, which is not the parser's work.
    let mut out: ParsedArgv<'_> = ParsedArgv::new();
    let mut group = c.benchmark_group("reject");
    for (id, n, buf) in cases {
        assert!(parse_argv_into(&buf, &guest, &mut out).is_err(), "{id} must be refused");
        group.throughput(Throughput::Bytes(buf.len() as u64));
        group.bench_with_input(BenchmarkId::new(id, n), &buf, |b, buf| {
            b.iter(|| parse_argv_into(black_box(buf), black_box(&guest), &mut out))
        });
    }
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut out = [0u8; MAX_KERNEL_ARGS_BYTES];
    let mut lists: Vec<(&str, usize, Vec<LoweredArgSnapshot>)> =
        SIZES.iter().map(|&n| ("mixed", n, argvs::mixed(n))).collect();
    lists.push(("largest", MAX_KERNEL_ARGS, argvs::wide(MAX_KERNEL_ARGS)));
    let mut group = c.benchmark_group("encode");
    for (id, n, args) in lists {
        group.throughput(Throughput::Bytes(argvs::encode(&args).len() as u64));
        group.bench_with_input(BenchmarkId::new(id, n), &args, |b, args| {
            b.iter(|| encode_argv(black_box(args), black_box(&mut out)))
        });
    }
    group.finish();
}

criterion_group!(benches, parse, reject, encode);
criterion_main!(benches);
