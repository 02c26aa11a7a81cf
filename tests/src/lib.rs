//! # kernel-args-conformance
//!
//! What holds `kernel-args-core` and the `kargs` binary to the wire format of
//! `docs/wire-format.md`:
//!
//! - [`model`]: an independent, plainly written specification model of the parser;
//! - [`vectors`]: the schema and loader of the language-neutral conformance vectors in
//!   `tests/vectors/argv.json`;
//! - [`generate`]: the hand-written source of those vectors.
//!
//! The tests in `tests/tests/` run the vectors against the core, compare the core with the
//! model on every buffer of up to 3 bytes and on random buffers, and check that the committed
//! vector file is the generated one (`UPDATE_VECTORS=1` rewrites it). `cli/tests/vectors.rs`
//! runs the same vectors through the `kargs` binary.

pub mod generate;
pub mod model;
pub mod vectors;
