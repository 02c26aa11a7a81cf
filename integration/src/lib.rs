//! # kernel-args-integration
//!
//! The tests of kernel-args that need the workspace, in one place (not published: they drive
//! the emulated CUDA driver of `cuda-emulator/` or read the repository's docs):
//!
//! - with the `cuda` feature, the CUDA launch path (`kernel-args-cuda`) against the driver
//!   library `KARGS_CUDA_DRIVER` names: `tests/cuda.rs` (launches in both pointer modes and
//!   their errors), `tests/declarations.rs` (the declared signature against the PTX),
//!   `tests/emulator.rs` (what the emulated driver checks and records), `tests/fault_matrix.rs`
//!   (every driver failure at every call) and `tests/tenants.rs` (many tenants on one device,
//!   the launch rate, an async store);
//! - `tests/docs.rs`: every command of the docs is run by CI as written, or says why not, and
//!   the READMEs' `kargs` commands run.
//!
//! `cargo test -p kernel-args-integration --features cuda` runs the launch tests (CI:
//! `.ci/steps/40-cuda.sh`); docs/gpu-validation.md runs them against a GPU.
