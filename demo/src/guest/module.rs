//! [`GuestModule`]: a guest module compiled for one [`Runtime`], instantiated as a [`Guest`] on
//! that runtime's binding.

use std::fmt;

use kernel_args::guest::GUEST_WASM;
use kernel_args::wasmi_host::wasmi;
#[cfg(feature = "wasmtime")]
use kernel_args::wasmtime_host::wasmtime;
use kernel_args::{LaunchHost, Launcher};

use super::bindings::WasmiGuest;
#[cfg(feature = "wasmtime")]
use super::bindings::WasmtimeGuest;
use super::runner::{Guest, GuestError, Runtime};

/// A guest module compiled and validated for one [`Runtime`], to be instantiated any number of
/// times (compiling is the slow part on wasmtime). Cheap to clone.
///
/// ```
/// use kernel_args_demo::guest::{Guest, GuestModule, Runtime, demo_dry_run};
/// use kernel_args::{AbiError, LaunchHost};
///
/// for &runtime in Runtime::ALL {
///     let module = GuestModule::demo(runtime)?;
///     let mut guest = module.instantiate(LaunchHost::new(demo_dry_run()))?;
///     assert_eq!(guest.run_vector_add(100)?, AbiError::NotAvailable.code(), "{runtime}");
///     assert_eq!(guest.host().last_launch().unwrap().snapshot().args().len(), 4);
///     assert_eq!(guest.first_mismatch(100)?, Some(0), "nothing ran");
///     assert!(guest.first_mismatch(-1).is_err());
/// }
/// # Ok::<(), kernel_args_demo::guest::GuestError>(())
/// ```
#[derive(Clone)]
pub struct GuestModule {
    compiled: Compiled,
}

#[derive(Clone)]
enum Compiled {
    #[cfg(feature = "wasmtime")]
    Wasmtime(wasmtime::Engine, wasmtime::Module),
    Wasmi(wasmi::Engine, wasmi::Module),
}

impl GuestModule {
    /// Compiles (and validates) `wasm` for `runtime` on a default engine.
    ///
    /// # Errors
    ///
    /// The runtime's, when the module is not valid wasm.
    pub fn new(runtime: Runtime, wasm: &[u8]) -> Result<GuestModule, GuestError> {
        let compile_error =
            |e: &dyn fmt::Display| GuestError::new(runtime, format!("compiling the guest: {e}"));
        let compiled = match runtime {
            #[cfg(feature = "wasmtime")]
            Runtime::Wasmtime => {
                let engine = wasmtime::Engine::default();
                let module =
                    wasmtime::Module::new(&engine, wasm).map_err(|e| compile_error(&format!("{e:#}")))?;
                Compiled::Wasmtime(engine, module)
            }
            #[cfg(not(feature = "wasmtime"))]
            Runtime::Wasmtime => {
                return Err(GuestError::new(
                    runtime,
                    "this build has no wasmtime: it needs kernel-args-demo's `wasmtime` feature \
                     (from a clone: cargo run -p kernel-args-demo --features wasmtime)",
                ));
            }
            Runtime::Wasmi => {
                let engine = wasmi::Engine::default();
                let module = wasmi::Module::new(&engine, wasm).map_err(|e| compile_error(&e))?;
                Compiled::Wasmi(engine, module)
            }
        };
        Ok(GuestModule { compiled })
    }

    /// The bundled demo guest ([`GUEST_WASM`]) compiled for `runtime`.
    ///
    /// # Errors
    ///
    /// As [`new`](GuestModule::new).
    pub fn demo(runtime: Runtime) -> Result<GuestModule, GuestError> {
        GuestModule::new(runtime, GUEST_WASM)
    }

    /// The runtime the module is compiled for.
    pub fn runtime(&self) -> Runtime {
        match self.compiled {
            #[cfg(feature = "wasmtime")]
            Compiled::Wasmtime(..) => Runtime::Wasmtime,
            Compiled::Wasmi(..) => Runtime::Wasmi,
        }
    }

    /// Instantiates the module in a store of its own whose data is `host`, with
    /// `wasi_cuda_launch` served by `host` (the runtime's `add_to_linker`). The module may
    /// import nothing else; a module that exports no memory can still be run (its
    /// [`Guest::memory`] is empty, and the host answers its launches with `InvalidPointer`).
    ///
    /// # Errors
    ///
    /// The runtime's, when instantiation fails: another import, a trapping start function.
    pub fn instantiate<L: Launcher + 'static>(
        &self,
        host: LaunchHost<L>,
    ) -> Result<Box<dyn Guest<L>>, GuestError> {
        let instantiate_error =
            |runtime, e: &dyn fmt::Display| GuestError::new(runtime, format!("instantiating the guest: {e}"));
        match &self.compiled {
            #[cfg(feature = "wasmtime")]
            Compiled::Wasmtime(engine, module) => match WasmtimeGuest::instantiate(engine, module, host) {
                Ok(guest) => Ok(Box::new(guest)),
                Err(e) => Err(instantiate_error(Runtime::Wasmtime, &format!("{e:#}"))),
            },
            Compiled::Wasmi(engine, module) => match WasmiGuest::instantiate(engine, module, host) {
                Ok(guest) => Ok(Box::new(guest)),
                Err(e) => Err(instantiate_error(Runtime::Wasmi, &e)),
            },
        }
    }
}

impl fmt::Debug for GuestModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuestModule").field("runtime", &self.runtime()).finish_non_exhaustive()
    }
}
