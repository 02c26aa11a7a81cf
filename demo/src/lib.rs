//! # kernel-args-demo
//!
//! The guest runner ([`guest`]) that `kargs-demo` and the workspace's end-to-end tests run a
//! wasm guest with: the bundled demo guest (`kernel_args::guest::GUEST_WASM`) or any module
//! with its interface, on wasmi or (feature `wasmtime`) on wasmtime, through the real
//! `wasi_cuda_launch` host function. The demo itself is the binary `kargs-demo`
//! (`cargo run -p kernel-args-demo -- --help`).
//!
//! Not published, and not a stable API: it is the demo's and the tests' harness, kept out of
//! the published crates, so that `kernel-args` carries the host function alone and `kargs`
//! decodes and encodes without a wasm runtime.

#![forbid(unsafe_code)]

pub mod guest;
