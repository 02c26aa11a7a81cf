//! # kernel-args-testkit
//!
//! What the tests, benchmarks and fuzz targets of kernel-args share, written once:
//!
//! - [`model`]: the independent specification model of the argv parser (`docs/wire-format.md`
//!   written as plainly as possible, sharing no code with `kernel-args-core`), and the core's
//!   results in its terms (`From` impls on [`model::Value`] and [`model::Rejection`]). The
//!   conformance tests (`kernel-args-conformance`) and the `differential` fuzz target (`fuzz/`)
//!   hold the core to it;
//! - [`argvs`]: the argument lists and buffers the zero-allocation tests and the benchmarks
//!   run (mixed argvs of every size up to the record cap, the largest valid buffer, an early
//!   and a late error);
//! - [`reference`](mod@reference): what the parse + build benchmark (`cuda-backend/benches/parse_build.rs`)
//!   and its instruction-count loop (`cuda-backend/examples/parse_build_loop.rs`, run by
//!   `scripts/callgrind-parse-build.sh`) measure: a heap-allocating reference, an unchecked
//!   floor, and ours.
//!
//! It depends on the crates it tests (`kernel-args-core`, and for [`reference`](mod@reference)
//! `kernel-args-cuda` and `kernel-args`, without the CUDA driver path or wasmtime); those
//! crates' integration tests, benchmarks and examples take it as a dev-dependency. Their unit
//! tests in `src/` cannot use it (they are another build of the crate, so its types differ).

pub mod argvs;
mod from_core;
pub mod model;
pub mod reference;
