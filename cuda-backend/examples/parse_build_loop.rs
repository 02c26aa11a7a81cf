//! Runs one of the parse + build implementations of `benches/parse_build.rs` (ours, the heap
//! reference, the unchecked floor), or one of its two host calls, in a loop, for counting
//! instructions, which unlike wall-clock time do not depend on the machine's load:
//!
//! ```text
//! cargo build --release -p kernel-args-cuda --example parse_build_loop
//! valgrind --tool=callgrind target/release/examples/parse_build_loop ours 16 0
//! valgrind --tool=callgrind target/release/examples/parse_build_loop ours 16 10000
//! ```
//!
//! The difference of the two totals divided by the iterations is the instructions per
//! parse + build (or host call). `scripts/callgrind-parse-build.sh` does this for all five.
//! Arguments: `ours|heap|floor|host_one_pass|host_two_pass`, the number of mixed arguments (or
//! `largest`), the iterations; or `sizes` alone, to print the stack sizes of the parsed argv and
//! the storage. `host_one_pass` is `LaunchHost::call` with a launcher whose parameter storage the
//! host's own pass fills (`Launcher::parse_recorded`: the argv parsed once), `host_two_pass` with
//! one that parses the request itself (twice); both do what `CudaLauncher` does in direct mode
//! before `cuLaunchKernel`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::hint::black_box;

use kernel_args_core::{GuestMemory, MAX_KERNEL_ARGS, ParsedArgv};
use kernel_args_cuda::KernelParamStorage;
use kernel_args_testkit::argvs;
use kernel_args_testkit::reference::floor::{self, FloorTable};
use kernel_args_testkit::reference::heap;
use kernel_args_testkit::reference::ours::host::{self, DirectLauncher};
use kernel_args_testkit::reference::ours::ours;

/// Prints the stack size of what a launch keeps on the stack (reported in
/// `docs/performance.md`).
fn print_sizes() {
    use std::mem::size_of;
    println!("LoweredArg                    {:>5} bytes", size_of::<kernel_args_core::LoweredArg<'_>>());
    println!("ParsedArgv<'_, 128>           {:>5} bytes", size_of::<ParsedArgv<'_, 128>>());
    println!("ParsedArgv<'_, 16>            {:>5} bytes", size_of::<ParsedArgv<'_, 16>>());
    println!("KernelParamStorage<128>       {:>5} bytes", size_of::<KernelParamStorage<128>>());
    println!("KernelParamStorage<16>        {:>5} bytes", size_of::<KernelParamStorage<16>>());
    println!("ParamTable<'_, 128>           {:>5} bytes", size_of::<kernel_args_cuda::ParamTable<'_, 128>>());
    println!("ParamTable<'_, 16>            {:>5} bytes", size_of::<kernel_args_cuda::ParamTable<'_, 16>>());
    println!("LoweredArgSnapshot            {:>5} bytes", size_of::<kernel_args_core::LoweredArgSnapshot>());
    println!("LaunchSnapshot (the record)   {:>5} bytes", size_of::<kernel_args::LaunchSnapshot>());
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("sizes") {
        return print_sizes();
    }
    let usage = "usage: parse_build_loop ours|heap|floor|host_one_pass|host_two_pass N|largest ITERATIONS";
    let [_, which, size, iterations] = argv.as_slice() else { panic!("{usage}") };
    let buf = match size.as_str() {
        "largest" => argvs::largest_valid(),
        n => argvs::encode(&argvs::mixed(n.parse().expect(usage))),
    };
    let iterations: u64 = iterations.parse().expect(usage);
    let mut memory = vec![0u8; argvs::MEMORY_LEN];
    match which.as_str() {
        "ours" => {
            let guest = GuestMemory::exclusive(&mut memory);
            let mut storage: Box<KernelParamStorage> = Box::default();
            for _ in 0..iterations {
                black_box(ours(black_box(&buf), black_box(&guest), &mut storage));
            }
        }
        "host_one_pass" | "host_two_pass" => {
            let launcher = if which == "host_one_pass" {
                DirectLauncher::one_pass()
            } else {
                DirectLauncher::two_pass()
            };
            let (mut host, call) = host::setup(launcher, &mut memory, &buf);
            assert_eq!(host::call(&mut host, &mut memory, &call), 0, "{:?}", host.last_error());
            for _ in 0..iterations {
                black_box(host::call(&mut host, black_box(&mut memory), black_box(&call)));
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
            for _ in 0..iterations {
                // SAFETY: `buf` is a valid argv of at most 128 records inside `memory`.
                unsafe { floor::decode(black_box(&buf), black_box(base), &mut table) };
                black_box(&table.ptrs);
            }
        }
        _ => panic!("{usage}"),
    }
}
