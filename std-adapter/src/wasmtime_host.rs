//! The `wasi_cuda_launch` host function on a [`wasmtime::Linker`] (feature `wasmtime`).
//!
//! The guest imports, from module [`IMPORT_MODULE`] (`wasi:cuda/host@0.2.0`):
//!
//! ```text
//! wasi_cuda_launch(kernel_id: i64,
//!                  grid_x: i32, grid_y: i32, grid_z: i32,
//!                  block_x: i32, block_y: i32, block_z: i32,
//!                  shared_mem: i32, args_ptr: i32, args_len: i32) -> i32
//! ```
//!
//! and gets `0` or a negative [`AbiError`](crate::AbiError) code. It is the hand-lowered form
//! of `launch` in `wit/wasi-cuda.wit`. The function never traps: every failure, including a
//! module that exports no linear memory named [`MEMORY_EXPORT`] (answered with
//! `InvalidPointer`), is an ABI code, with the detail in
//! [`LaunchHost::last_error`](crate::LaunchHost::last_error).
//!
//! ```
//! use kernel_args::wasmtime_host::add_to_linker;
//! use kernel_args::{DryRunLauncher, LaunchHost};
//! use wasmtime::{Engine, Linker, Store};
//!
//! let engine = Engine::default();
//! let mut linker: Linker<LaunchHost<DryRunLauncher>> = Linker::new(&engine);
//! add_to_linker(&mut linker, |host| host)?;
//! let mut store = Store::new(&engine, LaunchHost::new(DryRunLauncher::new()));
//! // instantiate a guest with `linker.instantiate(&mut store, &module)`, call its exports,
//! // then look at `store.data().last_launch()`.
//! # let _ = &mut store;
//! # Ok::<(), wasmtime::Error>(())
//! ```

use wasmtime::Linker;

/// The wasmtime this crate is built against (48). [`add_to_linker`] takes this version's
/// `Linker`: an embedder on another major version of wasmtime has another `Linker` type, and
/// the call does not compile. Depend on the same major version, or use this re-export.
pub use ::wasmtime;

#[cfg(doc)]
use crate::host::MEMORY_EXPORT;
use crate::host::{IMPORT_MODULE, LAUNCH_IMPORT, LaunchHost};
use crate::launcher::Launcher;

/// Registers `wasi_cuda_launch` under [`IMPORT_MODULE`] on `linker`. `get` finds the
/// [`LaunchHost`] in the store's data (`|host| host` when the data is the host itself).
pub fn add_to_linker<T, L>(
    linker: &mut Linker<T>,
    get: impl Fn(&mut T) -> &mut LaunchHost<L> + Send + Sync + Copy + 'static,
) -> wasmtime::Result<()>
where
    T: 'static,
    L: Launcher + 'static,
{
    linker.func_wrap(IMPORT_MODULE, LAUNCH_IMPORT, crate::host::host_function!(wasmtime, get))?;
    Ok(())
}
