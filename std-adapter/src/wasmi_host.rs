//! The `wasi_cuda_launch` host function on a [`wasmi::Linker`] (feature `wasmi`), with or
//! without std.
//!
//! wasmi is the interpreter firmware-style Rust hosts embed. The function is the one the
//! wasmtime binding registers (`wasmtime_host`, with the `wasmtime` feature): the same import ([`IMPORT_MODULE`], [`LAUNCH_IMPORT`]), the same signature, the
//! same answers, because both hand the call to [`LaunchHost::call`]. It never traps: a module
//! that exports no linear memory named [`MEMORY_EXPORT`] is answered with `InvalidPointer`.
//! It allocates nothing per call (wasmi itself needs `alloc` to load a module).
//!
//! ```
//! use kernel_args::wasmi_host::add_to_linker;
//! use kernel_args::{DryRunLauncher, LaunchHost};
//! use wasmi::{Engine, Linker, Store};
//!
//! let engine = Engine::default();
//! let mut linker: Linker<LaunchHost<DryRunLauncher>> = Linker::new(&engine);
//! add_to_linker(&mut linker, |host| host)?;
//! let mut store = Store::new(&engine, LaunchHost::new(DryRunLauncher::new()));
//! // instantiate a guest with `linker.instantiate_and_start(&mut store, &module)`, call its
//! // exports, then look at `store.data().last_launch()`.
//! # let _ = &mut store;
//! # Ok::<(), wasmi::Error>(())
//! ```

use wasmi::Linker;

/// The wasmi this crate is built against (2). [`add_to_linker`] takes this version's `Linker`:
/// an embedder on another major version of wasmi has another `Linker` type, and the call does
/// not compile. Depend on the same major version, or use this re-export.
pub use ::wasmi;

#[cfg(doc)]
use crate::host::MEMORY_EXPORT;
use crate::host::{IMPORT_MODULE, LAUNCH_IMPORT, LaunchHost};
use crate::launcher::Launcher;

/// Registers `wasi_cuda_launch` under [`IMPORT_MODULE`] on `linker`. `get` finds the
/// [`LaunchHost`] in the store's data (`|host| host` when the data is the host itself).
///
/// # Errors
///
/// wasmi's, when the linker already defines the import.
pub fn add_to_linker<T, L>(
    linker: &mut Linker<T>,
    get: impl Fn(&mut T) -> &mut LaunchHost<L> + Send + Sync + Copy + 'static,
) -> Result<(), wasmi::Error>
where
    T: 'static,
    L: Launcher + 'static,
{
    linker.func_wrap(IMPORT_MODULE, LAUNCH_IMPORT, crate::host::host_function!(wasmi, get))?;
    Ok(())
}
