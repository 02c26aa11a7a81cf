//! [`WasmtimeGuest`]: a guest with the demo interface on wasmtime.

use kernel_args::wasmtime_host::wasmtime::{
    self, Engine, Instance, Linker, Memory, Module, Store, WasmParams, WasmResults,
};

use kernel_args::guest::{GUEST_WASM, exports};
use kernel_args::wasmtime_host::add_to_linker;
use kernel_args::{LaunchCall, LaunchHost, LaunchParams, Launcher, MEMORY_EXPORT};

use super::runner::{Guest, GuestError, Runtime};

/// A guest with the demo interface instantiated on wasmtime, with a [`LaunchHost`] as its
/// store's data. Driven through the [`Guest`] trait, or with
/// [`call`](WasmtimeGuest::call) for an export of any signature.
///
/// ```
/// use kernel_args_cli::guest::{Guest, WasmtimeGuest, demo_dry_run};
/// use kernel_args::{AbiError, LaunchHost};
///
/// let mut guest = WasmtimeGuest::new(LaunchHost::new(demo_dry_run()))?;
/// assert_eq!(guest.run_vector_add(100)?, AbiError::NotAvailable.code());
/// assert_eq!(guest.host().last_launch().unwrap().snapshot().args().len(), 4);
/// assert_eq!(guest.call::<(), i32>("capacity", ())?, 4096);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
pub struct WasmtimeGuest<L: 'static> {
    store: Store<LaunchHost<L>>,
    instance: Instance,
    memory: Option<Memory>,
}

impl<L: Launcher + 'static> WasmtimeGuest<L> {
    /// Compiles [`GUEST_WASM`] with a default engine and instantiates it with
    /// `wasi_cuda_launch` served by `host`.
    ///
    /// # Errors
    ///
    /// wasmtime's, when the module cannot be compiled or instantiated.
    pub fn new(host: LaunchHost<L>) -> wasmtime::Result<WasmtimeGuest<L>> {
        let engine = Engine::default();
        let module = Module::new(&engine, GUEST_WASM)?;
        WasmtimeGuest::instantiate(&engine, &module, host)
    }

    /// Instantiates `module` (compiled with `engine`) in a new store whose data is `host`,
    /// with `wasi_cuda_launch` served by `host`.
    ///
    /// # Errors
    ///
    /// wasmtime's, when instantiation fails (an import other than `wasi_cuda_launch`, a
    /// trapping start function).
    pub fn instantiate(
        engine: &Engine,
        module: &Module,
        host: LaunchHost<L>,
    ) -> wasmtime::Result<WasmtimeGuest<L>> {
        let mut linker = Linker::new(engine);
        add_to_linker(&mut linker, |host: &mut LaunchHost<L>| host)?;
        let mut store = Store::new(engine, host);
        let instance = linker.instantiate(&mut store, module)?;
        let memory = instance.get_memory(&mut store, MEMORY_EXPORT);
        Ok(WasmtimeGuest { store, instance, memory })
    }

    /// Calls the export `name` with wasmtime's typed calls (see [`exports`] for the demo
    /// interface's signatures).
    ///
    /// # Errors
    ///
    /// wasmtime's: a trap, no such export, another signature.
    pub fn call<P: WasmParams, R: WasmResults>(&mut self, name: &str, params: P) -> wasmtime::Result<R> {
        let func = self.instance.get_typed_func::<P, R>(&mut self.store, name)?;
        func.call(&mut self.store, params)
    }

    /// [`call`](WasmtimeGuest::call), its error a [`GuestError`] naming the export.
    fn call_named<P: WasmParams, R: WasmResults>(&mut self, name: &str, params: P) -> Result<R, GuestError> {
        self.call(name, params).map_err(|e| GuestError::new(Runtime::Wasmtime, format!("{name}: {e:#}")))
    }
}

impl<L: Launcher + 'static> Guest<L> for WasmtimeGuest<L> {
    fn runtime(&self) -> Runtime {
        Runtime::Wasmtime
    }

    fn call0(&mut self, name: &str) -> Result<i32, GuestError> {
        self.call_named(name, ())
    }

    fn call1(&mut self, name: &str, arg: i32) -> Result<i32, GuestError> {
        self.call_named(name, arg)
    }

    fn call1_f32(&mut self, name: &str, arg: i32) -> Result<f32, GuestError> {
        self.call_named(name, arg)
    }

    fn launch_raw(&mut self, call: &LaunchCall) -> Result<i32, GuestError> {
        self.call_named::<LaunchParams, i32>(exports::LAUNCH_RAW, call.params())
    }

    fn memory(&self) -> &[u8] {
        match self.memory {
            Some(memory) => memory.data(&self.store),
            None => &[],
        }
    }

    fn memory_mut(&mut self) -> &mut [u8] {
        match self.memory {
            Some(memory) => memory.data_mut(&mut self.store),
            None => &mut [],
        }
    }

    fn host(&self) -> &LaunchHost<L> {
        self.store.data()
    }

    fn host_mut(&mut self) -> &mut LaunchHost<L> {
        self.store.data_mut()
    }
}

impl<L: 'static> std::fmt::Debug for WasmtimeGuest<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let memory_bytes = self.memory.map(|memory| memory.data_size(&self.store));
        f.debug_struct("WasmtimeGuest").field("memory_bytes", &memory_bytes).finish_non_exhaustive()
    }
}
