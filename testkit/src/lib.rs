//! # kernel-args-testkit
//!
//! What the tests, benchmarks and fuzz targets of kernel-args share, written once:
//!
//! - [`model`]: the independent specification model of the argv parser (`docs/wire-format.md`
//!   written as plainly as possible, sharing no code with `kernel-args-core`), and the core's
//!   results in its terms (`From` impls on [`model::Value`] and [`model::Rejection`]). The
//!   conformance tests (`kernel-args-conformance`) and the `differential` fuzz target (`fuzz/`)
//!   hold the core to it;
//! - [`declarations`]: the independent model of kernel declarations (`docs/declarations.md`):
//!   a declaration as a value, its text, and the check's rules in `u128` arithmetic, which the
//!   property test and the `declaration` fuzz target hold `kernel_args::Declaration` to;
//! - [`argvs`]: the argument lists and buffers the zero-allocation tests and the benchmarks
//!   run (mixed argvs of every size up to the record cap, the largest valid buffer, an early
//!   and a late error);
//! - [`device`]: opening a CUDA device in a test, or skipping it (`SKIPPED <test>: <reason>`)
//!   where the machine has none, unless `KARGS_CUDA_REQUIRE_DEVICE=1` makes that a failure;
//! - [`kargs`]: the path of the `kargs` binary the workspace built, for the tests of the
//!   unpublished crates that run it (cargo gives `CARGO_BIN_EXE_kargs` to `kernel-args-cli`'s
//!   own tests only).
//!
//! It depends on `kernel-args-core` alone, so any crate of the workspace takes it as a
//! dev-dependency without a cycle: their integration tests, benchmarks and examples use it.
//! The core's own unit tests in `src/` cannot (they are another build of the crate, so its
//! types differ). The benchmark references (a heap-allocating reference, an unchecked decoder)
//! live with the benchmark that measures against them, `perf/benches/parse_build/`.

pub mod argvs;
pub mod declarations;
pub mod device;
mod from_core;
pub mod kargs;
pub mod model;
