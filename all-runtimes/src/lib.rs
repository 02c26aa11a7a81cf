//! Empty on purpose: this workspace member exists for its dependency on `kernel-args-demo` with
//! the `wasmtime` feature (see its `Cargo.toml`), so that `cargo test --workspace` tests the
//! demo and the end-to-end guest runs on wasmtime as well as on wasmi.
