//! Benchmarks of the lowering, from a guest's argv bytes to the `void**` table `cuLaunchKernel`
//! reads, against a heap-allocating reference and an unchecked decoder (`reference.rs` beside
//! this file), and of the host call around it.
//!
//! Groups (each benchmark's parameter is the number of arguments, its throughput the argv's
//! length in bytes; inputs, guest memory and output buffers are made outside the timed part):
//!
//! - `fill/staged`: [`KernelParamStorage::fill`] from checked arguments, a device address per
//!   pointer (a staged launch's last step), plus the `void**` table;
//! - `lower/{ours,heap,floor}`: from the argv bytes to the `void**` table; `ours` is what a
//!   direct-mode launch does per call (the host function's parse into its record, the CUDA
//!   launcher's fill and table: `reference::ours::lower`);
//! - `host_call/{declared,undeclared}`: the std adapter's whole `LaunchHost::call` (region and
//!   shape checks, the parse into the record, the kernel's declaration, dispatch) with a launcher
//!   doing what `CudaLauncher` does in direct mode before `cuLaunchKernel` (the size check, the
//!   fill, the table); `declared` checks every call against the kernel's declaration,
//!   `undeclared` (a trusted guest) does not, so their ratio is the declaration check's cost.
//!
//! After the run it prints, for every size measured, the ratios the performance goals are
//! stated in (heap ÷ ours, goal ≥ 5 at 16 arguments; ours ÷ floor, goal ≤ 1.5 at 16 and 128;
//! declared ÷ undeclared, goal ≤ 1.15),
//! from criterion's median estimates of this run. `scripts/bench-table.py` makes the table of
//! all groups.
//!
//! Run as `parse_build loop WHICH N ITERATIONS` (WHICH: `ours`, `heap`, `floor`, `host` or
//! `host_undeclared`; N a number of mixed arguments or `largest`) it runs that one in a loop
//! instead, for counting instructions with callgrind (`scripts/callgrind-parse-build.sh`); as
//! `parse_build sizes` it prints the sizes of the types a host keeps per launch.

// Bench code may unwrap, index and panic: a panic here is a failed run, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    missing_docs
)]
// The unchecked decoder, whose point is to read records and write slots without a check (each
// block with its `// SAFETY:`, a few raw-pointer steps to a block).
#![allow(unsafe_code, clippy::multiple_unsafe_ops_per_block)]

mod reference;

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, Throughput};
use kernel_args_core::{GuestMemory, MAX_KERNEL_ARGS, parse_argv_into};
use kernel_args_cuda::{KernelParamStorage, StorageError};
use kernel_args_testkit::argvs::{self, bench_inputs as inputs};
use reference::floor::{self, FloorTable};
use reference::heap;
use reference::ours::{self, Record};

/// `buf` followed by 8 zero bytes, which the unchecked decoder may read past its last record.
fn padded(buf: &[u8]) -> Vec<u8> {
    let mut padded = buf.to_vec();
    padded.extend_from_slice(&[0; 8]);
    padded
}

fn fill(c: &mut Criterion) {
    let mut group = c.benchmark_group("fill");
    let mut storage: Box<KernelParamStorage> = Box::default();
    for (id, n, buf) in inputs() {
        let mut record = Record::new();
        parse_argv_into(&buf, &GuestMemory::length_only(argvs::MEMORY_LEN as u64), &mut record).unwrap();
        group.throughput(Throughput::Bytes(buf.len() as u64));
        // In place, into a storage the host keeps: what a staged launch costs after staging.
        group.bench_with_input(BenchmarkId::new(format!("staged/{id}"), n), &record, |b, record| {
            b.iter(|| {
                storage
                    .fill(black_box(record), |i, _| {
                        Ok::<u64, StorageError>(0x7f00_0000_0000 + ((i as u64) << 12))
                    })
                    .unwrap();
                storage.with_params(|table| black_box(table.as_mut_ptr()));
            })
        });
    }
    group.finish();
}

fn lower(c: &mut Criterion) {
    let mut memory = ours::memory();
    for (id, n, buf) in inputs() {
        let mut group = c.benchmark_group("lower");
        group.throughput(Throughput::Bytes(buf.len() as u64));
        {
            let guest = GuestMemory::exclusive(&mut memory);
            let mut record = Record::new();
            let mut storage: Box<KernelParamStorage> = Box::default();
            assert_eq!(ours::lower(&buf, &guest, &mut record, &mut storage), n);
            group.bench_with_input(BenchmarkId::new(format!("ours/{id}"), n), &buf, |b, buf| {
                b.iter(|| ours::lower(black_box(buf), black_box(&guest), &mut record, &mut storage))
            });
        }
        assert_eq!(heap::parse_build(&buf, &mut memory).unwrap().slots.len(), n);
        group.bench_with_input(BenchmarkId::new(format!("heap/{id}"), n), &buf, |b, buf| {
            b.iter(|| heap::parse_build(black_box(buf), black_box(&mut memory)))
        });
        let base = memory.as_mut_ptr();
        let mut table = Box::new(FloorTable::<MAX_KERNEL_ARGS>::new());
        let padded = padded(&buf);
        let unpadded = &padded[..buf.len()];
        // SAFETY: as below.
        unsafe { floor::decode(unpadded, base, &mut table) };
        assert_eq!(table.len, n);
        group.bench_with_input(BenchmarkId::new(format!("floor/{id}"), n), &unpadded, |b, buf| {
            b.iter(|| {
                // SAFETY: `buf` is a valid argv of at most 128 records whose windows lie in
                // `memory` (checked by `ours` above), followed by 8 zero bytes.
                unsafe { floor::decode(black_box(buf), black_box(base), &mut table) };
                black_box(&table.ptrs);
            })
        });
        group.finish();
    }
}

fn host_call(c: &mut Criterion) {
    let mut memory = ours::memory();
    let mut group = c.benchmark_group("host_call");
    for (id, n, buf) in inputs() {
        group.throughput(Throughput::Bytes(buf.len() as u64));
        for (which, declared) in [("declared", true), ("undeclared", false)] {
            let (mut host, call) = ours::setup(&mut memory, &buf, declared);
            assert_eq!(ours::call(&mut host, &mut memory, &call), 0, "{:?}", host.last_error());
            assert_eq!(host.last_launch().unwrap().snapshot().args().len(), n);
            group.bench_function(BenchmarkId::new(format!("{which}/{id}"), n), |b| {
                b.iter(|| ours::call(&mut host, black_box(&mut memory), black_box(&call)))
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
    println!("\nlowering, argv bytes to void** table: ratios of criterion's median estimates (this run)");
    println!(
        "{:>10} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "args", "ours ns", "heap ns", "floor ns", "heap/ours", "ours/floor"
    );
    for (id, n, _) in inputs() {
        let get = |which: &str| median_ns(home, &format!("lower/{which}_{id}/{n}"));
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
    println!("goals: heap/ours >= 5 at 16 mixed arguments; ours/floor <= 1.5 at 16 and 128");

    println!("\nhost call: with the declaration check, and without (this run)");
    println!("{:>10} {:>14} {:>14} {:>12}", "args", "declared ns", "undeclared ns", "ratio");
    for (id, n, _) in inputs() {
        let get = |which: &str| median_ns(home, &format!("host_call/{which}_{id}/{n}"));
        let (Some(declared), Some(undeclared)) = (get("declared"), get("undeclared")) else { continue };
        let label = format!("{id} {n}");
        println!("{label:>10} {declared:>14.1} {undeclared:>14.1} {:>12.2}", declared / undeclared);
    }
    println!("goal at 16 mixed arguments: declared/undeclared <= 1.15");
}

/// `loop WHICH N ITERATIONS`: one implementation in a loop, for callgrind.
fn run_loop(args: &[String]) {
    let usage = "usage: parse_build loop ours|heap|floor|host|host_undeclared N|largest ITERATIONS";
    let [which, size, iterations] = args else { panic!("{usage}") };
    let buf = match size.as_str() {
        "largest" => argvs::largest_valid(),
        n => argvs::encode(&argvs::mixed(n.parse().expect(usage))),
    };
    let iterations: u64 = iterations.parse().expect(usage);
    let mut memory = ours::memory();
    match which.as_str() {
        "ours" => {
            let guest = GuestMemory::exclusive(&mut memory);
            let (mut record, mut storage) = (Record::new(), Box::<KernelParamStorage>::default());
            for _ in 0..iterations {
                black_box(ours::lower(black_box(&buf), black_box(&guest), &mut record, &mut storage));
            }
        }
        "heap" => {
            for _ in 0..iterations {
                black_box(heap::parse_build(black_box(&buf), black_box(&mut memory)).unwrap());
            }
        }
        "floor" => {
            let base = memory.as_mut_ptr();
            let mut table = Box::new(FloorTable::<MAX_KERNEL_ARGS>::new());
            let padded = padded(&buf);
            for _ in 0..iterations {
                // SAFETY: a valid argv of at most 128 records whose windows lie in `memory`,
                // followed by 8 zero bytes.
                unsafe { floor::decode(black_box(&padded[..buf.len()]), black_box(base), &mut table) };
                black_box(&table.ptrs);
            }
        }
        "host" | "host_undeclared" => {
            let (mut host, call) = ours::setup(&mut memory, &buf, which == "host");
            for _ in 0..iterations {
                assert_eq!(ours::call(&mut host, black_box(&mut memory), black_box(&call)), 0);
            }
        }
        _ => panic!("{usage}"),
    }
}

/// `sizes`: the sizes of the types a host keeps or puts on its stack per launch.
fn print_sizes() {
    use std::mem::size_of;
    let rows: [(&str, usize); 9] = [
        ("LoweredArg<'_>", size_of::<kernel_args_core::LoweredArg<'_>>()),
        ("LoweredArgSnapshot", size_of::<kernel_args_core::LoweredArgSnapshot>()),
        ("ParsedArgv<'_, 128>", size_of::<kernel_args_core::ParsedArgv<'_, 128>>()),
        ("LaunchArgs", size_of::<kernel_args::LaunchArgs>()),
        ("LaunchSnapshot", size_of::<kernel_args::LaunchSnapshot>()),
        ("KernelParamStorage<128>", size_of::<KernelParamStorage<128>>()),
        ("ParamTable<'_, 128>", size_of::<kernel_args_cuda::ParamTable<'_, 128>>()),
        ("Declaration", size_of::<kernel_args::Declaration>()),
        ("Mismatch", size_of::<kernel_args::Mismatch>()),
    ];
    for (name, bytes) in rows {
        println!("{name:<28} {bytes:>6}");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("loop") => return run_loop(&args[1..]),
        Some("sizes") => return print_sizes(),
        _ => {}
    }
    let home = criterion_home();
    let mut c = Criterion::default().output_directory(&home).configure_from_args();
    fill(&mut c);
    lower(&mut c);
    host_call(&mut c);
    c.final_summary();
    print_ratios(&home);
}
