//! # kernel-args-conformance
//!
//! What holds `kernel-args-core` and the `kargs` binary to the wire format of
//! `docs/wire-format.md`:
//!
//! - [`vectors`]: the schema and loader of the language-neutral conformance vectors in
//!   `tests/vectors/argv.json`;
//! - [`generate`]: the hand-written source of those vectors.
//!
//! The tests in `tests/tests/` run the vectors against the core, compare the core with the
//! independent specification model (`kernel_args_testkit::model`, in `testkit/`) on every
//! buffer of up to 3 bytes and on random buffers, check every vector against the model, and
//! check that the committed vector file is the generated one (`UPDATE_VECTORS=1` rewrites it).
//! `tests/tests/kargs_vectors.rs` runs the same vectors through the `kargs` binary.

pub mod generate;
pub mod vectors;
