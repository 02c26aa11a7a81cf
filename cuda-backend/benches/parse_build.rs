//! Benchmarks of the `void**` parameter storage and of parse + build end to end, against a
//! heap-allocating reference and an unchecked floor (`kernel_args_testkit::reference`, in
//! `testkit/src/reference.rs`).
//!
//! Groups (each benchmark's parameter is the number of arguments, its throughput the argv's
//! length in bytes; inputs, guest memory and output buffers are made outside the timed part):
//!
//! - `build/staged`: [`KernelParamStorage::build_staged`] into a storage the host keeps, from
//!   already parsed arguments and a device address per pointer (a staged launch's last step),
//!   plus the `void**` table ([`KernelParamStorage::with_params`]);
//! - `parse_build/{ours,heap,floor}`: from the argv bytes to the `void**` table; `ours` is the
//!   one-pass [`KernelParamStorage::parse_direct`] the CUDA launcher runs in direct mode;
//! - `host_call/{one_pass,two_pass}`: the std adapter's whole `LaunchHost::call` (region and
//!   shape checks, argv copy, the argv parsed into the launch's record, dispatch) with a
//!   launcher doing what `CudaLauncher` does in direct mode before `cuLaunchKernel` (the
//!   arguments into its parameter storage, the writable and size checks, the `void**` table):
//!   `one_pass` offers its storage as the host's argv sink, as `CudaLauncher` does, so the
//!   host's one pass fills record and slots together; `two_pass` offers none and parses the
//!   request again into its storage (`kernel_args_testkit::reference::ours::host`).
//!
//! After the run it prints, for every size measured, the two ratios the performance goals are
//! stated in (heap ÷ ours, goal ≥ 5 at 16 arguments; ours ÷ floor, goal ≤ 1.5), and the host
//! call's two passes against its one, from criterion's median estimates of this run.
//! `scripts/bench-table.py` makes the table of all groups.

// Bench code may unwrap, index and panic: a panic here is a failed run, not a broken contract.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, Throughput};
use kernel_args_core::{Arg, GuestMemory, MAX_KERNEL_ARGS, ParsedArgv, parse_argv_into};
use kernel_args_cuda::KernelParamStorage;
use kernel_args_testkit::argvs::{self, bench_inputs as inputs};
use kernel_args_testkit::reference::floor::{self, FloorTable};
use kernel_args_testkit::reference::heap;
use kernel_args_testkit::reference::ours::host::{self, DirectLauncher};
use kernel_args_testkit::reference::ours::ours;

fn build(c: &mut Criterion) {
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    let guest = GuestMemory::exclusive(&mut memory);
    let mut group = c.benchmark_group("build");
    let mut storage: Box<KernelParamStorage> = Box::default();
    for (id, n, buf) in inputs() {
        let mut args: ParsedArgv = ParsedArgv::new();
        parse_argv_into(&buf, &guest, &mut args).unwrap();
        let pointers = args.iter().filter(|a| matches!(a, Arg::Ptr(_))).count() as u64;
        let device: Vec<u64> = (0..pointers).map(|i| 0x7f00_0000_0000 + (i << 12)).collect();
        group.throughput(Throughput::Bytes(buf.len() as u64));
        // In place, into a storage the host keeps: what a staged launch costs after staging.
        group.bench_with_input(BenchmarkId::new(format!("staged/{id}"), n), &args, |b, args| {
            b.iter(|| {
                storage.build_staged(black_box(args), black_box(&device)).unwrap();
                storage.with_params(|table| black_box(table.as_mut_ptr()));
            })
        });
    }
    group.finish();
}

fn parse_build(c: &mut Criterion) {
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    for (id, n, buf) in inputs() {
        let mut group = c.benchmark_group("parse_build");
        group.throughput(Throughput::Bytes(buf.len() as u64));
        {
            let guest = GuestMemory::exclusive(&mut memory);
            let mut storage: Box<KernelParamStorage> = Box::default();
            assert_eq!(ours(&buf, &guest, &mut storage), n);
            group.bench_with_input(BenchmarkId::new(format!("ours/{id}"), n), &buf, |b, buf| {
                b.iter(|| ours(black_box(buf), black_box(&guest), &mut storage))
            });
        }
        assert_eq!(heap::parse_build(&buf, &mut memory).unwrap().slots.len(), n);
        group.bench_with_input(BenchmarkId::new(format!("heap/{id}"), n), &buf, |b, buf| {
            b.iter(|| heap::parse_build(black_box(buf), black_box(&mut memory)))
        });
        let base = memory.as_mut_ptr();
        let mut table = Box::new(FloorTable::<MAX_KERNEL_ARGS>::new());
        // SAFETY: as below.
        unsafe { floor::decode(&buf, base, &mut table) };
        assert_eq!(table.len, n);
        group.bench_with_input(BenchmarkId::new(format!("floor/{id}"), n), &buf, |b, buf| {
            b.iter(|| {
                // SAFETY: `buf` is a valid argv of at most 128 records whose windows lie in
                // `memory` (checked by `ours` above).
                unsafe { floor::decode(black_box(buf), black_box(base), &mut table) };
                black_box(&table.ptrs);
            })
        });
        group.finish();
    }
}

fn host_call(c: &mut Criterion) {
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    let mut group = c.benchmark_group("host_call");
    for (id, n, buf) in inputs() {
        group.throughput(Throughput::Bytes(buf.len() as u64));
        for (passes, launcher) in
            [("one_pass", DirectLauncher::one_pass()), ("two_pass", DirectLauncher::two_pass())]
        {
            let (mut host, call) = host::setup(launcher, &mut memory, &buf);
            assert_eq!(host::call(&mut host, &mut memory, &call), 0, "{:?}", host.last_error());
            assert_eq!(host.last_launch().unwrap().snapshot().args().len(), n);
            group.bench_function(BenchmarkId::new(format!("{passes}/{id}"), n), |b| {
                b.iter(|| host::call(&mut host, black_box(&mut memory), black_box(&call)))
            });
        }
    }
    group.finish();
}

/// Where criterion writes its estimates (the rule criterion itself follows, without asking
/// cargo): `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else the workspace's
/// `target/criterion`.
fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("criterion")
}

/// Criterion's median estimate, in nanoseconds, of `group/function/parameter` in this run.
fn median_ns(home: &Path, bench: &str) -> Option<f64> {
    let path = home.join(bench).join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn print_ratios(home: &Path) {
    println!("\nparse + build: ratios of criterion's median estimates (this run)");
    println!(
        "{:>10} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "args", "ours ns", "heap ns", "floor ns", "heap/ours", "ours/floor"
    );
    for (id, n, _) in inputs() {
        let get = |which: &str| median_ns(home, &format!("parse_build/{which}_{id}/{n}"));
        let (Some(ours), Some(heap), Some(floor)) = (get("ours"), get("heap"), get("floor")) else {
            continue; // filtered out of this run
        };
        let label = format!("{id} {n}");
        println!(
            "{label:>10} {ours:>12.1} {heap:>12.1} {floor:>12.1} {:>12.2} {:>12.2}",
            heap / ours,
            ours / floor
        );
    }
    println!("goals at 16 mixed arguments: heap/ours >= 5, ours/floor <= 1.5");

    println!("\nhost call up to cuLaunchKernel: the argv parsed once or twice (this run)");
    println!("{:>10} {:>14} {:>14} {:>12}", "args", "one pass ns", "two passes ns", "two/one");
    for (id, n, _) in inputs() {
        let get = |passes: &str| median_ns(home, &format!("host_call/{passes}_{id}/{n}"));
        let (Some(one), Some(two)) = (get("one_pass"), get("two_pass")) else {
            continue; // filtered out of this run
        };
        let label = format!("{id} {n}");
        println!("{label:>10} {one:>14.1} {two:>14.1} {:>12.2}", two / one);
    }
}

fn main() {
    let home = criterion_home();
    let mut c = Criterion::default().output_directory(&home).configure_from_args();
    build(&mut c);
    parse_build(&mut c);
    host_call(&mut c);
    c.final_summary();
    print_ratios(&home);
}
