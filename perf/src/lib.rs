//! # kernel-args-perf
//!
//! The speed and memory checks of the published crates, in one place (not published: they use
//! the workspace's test kit, `testkit/`):
//!
//! - `tests/alloc_core.rs`: parsing, rejecting and encoding never touch the heap
//!   (`kernel-args-core`);
//! - `tests/alloc_adapter.rs`: the host function's launch path allocates nothing
//!   (`kernel-args`);
//! - `tests/alloc_cuda.rs`: filling the `void**` parameter storage and the launch path up to the
//!   driver call allocate nothing (`kernel-args-cuda`);
//! - `benches/parse.rs`: the parser, its rejections and the encoder (criterion);
//! - `benches/parse_build/`: parsing and building the parameter storage, against a
//!   heap-allocating reference and an unchecked decoder (criterion; `sizes` prints the
//!   storage's sizes).
//!
//! `cargo test -p kernel-args-perf` runs the allocation tests; `cargo bench -p
//! kernel-args-perf` the benchmarks. docs/performance.md has the results.
