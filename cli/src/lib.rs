//! # kernel-args-cli
//!
//! The library half of the `kargs` tool: the runner (`guest`) that `kargs demo` and the
//! workspace's end-to-end tests run the bundled wasm guest with, on wasmi (feature `demo`, a
//! default one) or on wasmtime (feature `wasmtime`). The tool itself is the binary `kargs`; see
//! its `--help`.

#![forbid(unsafe_code)]

#[cfg(feature = "demo")]
pub mod guest;
