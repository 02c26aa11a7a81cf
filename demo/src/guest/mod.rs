//! The runner `kargs-demo` and the end-to-end tests drive a guest with: the bundled demo guest
//! (`kernel_args::guest::GUEST_WASM`), or any module with its interface
//! (`kernel_args::guest::exports`, such as the C guest), the same way on wasmtime and on wasmi.
//!
//! A [`GuestModule`] is a module compiled for one [`Runtime`]; each instance is a [`Guest`],
//! with the host function and a `kernel_args::LaunchHost` (any launcher) in its store.
//! `WasmtimeGuest` (with the `wasmtime` feature) and [`WasmiGuest`] are its two implementations,
//! for a host that wants its runtime's own typed calls too, written once (`bindings.rs`). The
//! modules go one way: `runner.rs` (the trait, the runtime, the error) knows no runtime's API,
//! `bindings.rs` implements the trait on each, and `module.rs` compiles and instantiates.

mod bindings;
mod module;
mod runner;

use kernel_args::guest::{VECTOR_ADD_DECLARATION, VECTOR_ADD_KERNEL_ID};
use kernel_args::{Declaration, DryRunLauncher, KernelTable};

pub use bindings::WasmiGuest;
#[cfg(feature = "wasmtime")]
pub use bindings::WasmtimeGuest;
pub use module::GuestModule;
pub use runner::{Guest, GuestError, Runtime};

/// The demo guest's kernels: its `vector_add` (`VECTOR_ADD_KERNEL_ID`) with its declaration, as
/// a CUDA launcher registers it.
pub fn demo_kernels() -> KernelTable {
    let mut kernels = KernelTable::new();
    // The bundled declaration parses and a new table has room for it (the tests run this).
    if let Ok(declaration) = Declaration::parse(VECTOR_ADD_DECLARATION) {
        let _ = kernels.declare(VECTOR_ADD_KERNEL_ID, declaration);
    }
    kernels
}

/// A dry run that knows the demo guest's kernel ([`demo_kernels`]).
pub fn demo_dry_run() -> DryRunLauncher {
    DryRunLauncher::with_kernels(demo_kernels())
}
