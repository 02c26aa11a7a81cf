//! [`WasmiGuest`]: a guest with the demo interface on wasmi.

use kernel_args::wasmi_host::wasmi::{
    self, Engine, Instance, Linker, Memory, Module, Store, WasmParams, WasmResults,
};

use kernel_args::guest::{GUEST_WASM, exports};
use kernel_args::wasmi_host::add_to_linker;
use kernel_args::{LaunchCall, LaunchHost, LaunchParams, Launcher, MEMORY_EXPORT};

use super::runner::{Guest, GuestError, Runtime};

/// A guest with the demo interface instantiated on wasmi, with a [`LaunchHost`] as its
/// store's data . Driven through the [`Guest`] trait, or with
/// [`call`](WasmiGuest::call) for an export of any signature.
///
/// ```
/// use kernel_args_cli::guest::{Guest, WasmiGuest, demo_dry_run};
/// use kernel_args::{AbiError, LaunchHost};
///
/// let mut guest = WasmiGuest::new(LaunchHost::new(demo_dry_run()))?;
/// assert_eq!(guest.run_vector_add(100)?, AbiError::NotAvailable.code());
/// assert_eq!(guest.host().last_launch().unwrap().snapshot().args().len(), 4);
/// assert_eq!(guest.call::<(), i32>("capacity", ())?, 4096);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
pub struct WasmiGuest<L: 'static> {
    store: Store<LaunchHost<L>>,
    instance: Instance,
    memory: Option<Memory>,
}

impl<L: Launcher + 'static> WasmiGuest<L> {
    /// Validates [`GUEST_WASM`] with a default engine and instantiates it with
    /// `wasi_cuda_launch` served by `host`.
    ///
    /// # Errors
    ///
    /// wasmi's, when the module cannot be validated or instantiated.
    pub fn new(host: LaunchHost<L>) -> Result<WasmiGuest<L>, wasmi::Error> {
        let engine = Engine::default();
        let module = Module::new(&engine, GUEST_WASM)?;
        WasmiGuest::instantiate(&engine, &module, host)
    }

    /// Instantiates `module` (validated with `engine`) in a new store whose data is `host`,
    /// with `wasi_cuda_launch` served by `host`, and runs its start function if it has one.
    ///
    /// # Errors
    ///
    /// wasmi's, when instantiation fails (an import other than `wasi_cuda_launch`, a trapping
    /// start function).
    pub fn instantiate(
        engine: &Engine,
        module: &Module,
        host: LaunchHost<L>,
    ) -> Result<WasmiGuest<L>, wasmi::Error> {
        let mut linker = Linker::new(engine);
        add_to_linker(&mut linker, |host: &mut LaunchHost<L>| host)?;
        let mut store = Store::new(engine, host);
        let instance = linker.instantiate_and_start(&mut store, module)?;
        let memory = instance.get_memory(&store, MEMORY_EXPORT);
        Ok(WasmiGuest { store, instance, memory })
    }

    /// Calls the export `name` with wasmi's typed calls (see [`exports`] for the demo
    /// interface's signatures).
    ///
    /// # Errors
    ///
    /// wasmi's: a trap, no such export, another signature.
    pub fn call<P: WasmParams, R: WasmResults>(&mut self, name: &str, params: P) -> Result<R, wasmi::Error> {
        let func = self.instance.get_typed_func::<P, R>(&self.store, name)?;
        func.call(&mut self.store, params)
    }

    /// [`call`](WasmiGuest::call), its error a [`GuestError`] naming the export.
    fn call_named<P: WasmParams, R: WasmResults>(&mut self, name: &str, params: P) -> Result<R, GuestError> {
        self.call(name, params).map_err(|e| GuestError::new(Runtime::Wasmi, format!("{name}: {e}")))
    }
}

impl<L: Launcher + 'static> Guest<L> for WasmiGuest<L> {
    fn runtime(&self) -> Runtime {
        Runtime::Wasmi
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

impl<L: 'static> std::fmt::Debug for WasmiGuest<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let memory_bytes = self.memory.map(|memory| memory.data_size(&self.store));
        f.debug_struct("WasmiGuest").field("memory_bytes", &memory_bytes).finish_non_exhaustive()
    }
}
