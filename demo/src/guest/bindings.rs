//! The two runtime bindings of the [`Guest`] trait, [`WasmiGuest`] and `WasmtimeGuest` (with
//! the `wasmtime` feature), written once: wasmi's and wasmtime's embedding APIs have the same
//! shape (an engine, a linker, a store holding the host state, typed calls), so one macro
//! writes both, and only what differs is named where each is made.

use kernel_args::guest::{GUEST_WASM, exports};
use kernel_args::{LaunchCall, LaunchHost, LaunchParams, Launcher, MEMORY_EXPORT};

use super::runner::{Guest, GuestError, Runtime};

/// Writes the binding `$name` on the runtime `$rt` (the crate, as kernel-args re-exports it,
/// with its `add_to_linker` in `$host`), whose linker instantiates with `$instantiate`.
macro_rules! binding {
    (
        $name:ident, $runtime:ident, $rt:ident = $rt_path:path, $host:path,
        instantiate: $instantiate:ident, compiles: $compiles:literal, start: $start:literal
    ) => {
        use $rt_path as $rt;

        #[doc = concat!(
            "A guest with the demo interface instantiated on ", stringify!($rt), ", with a [`LaunchHost`] ",
            "as its store's data. Driven through the [`Guest`] trait, or with [`call`](", stringify!($name),
            "::call) for an export of any signature.\n\n",
            "```\n",
            "use kernel_args_demo::guest::{Guest, ", stringify!($name), ", demo_dry_run};\n",
            "use kernel_args::{AbiError, LaunchHost};\n\n",
            "let mut guest = ", stringify!($name), "::new(LaunchHost::new(demo_dry_run()))?;\n",
            "assert_eq!(guest.run_vector_add(100)?, AbiError::NotAvailable.code());\n",
            "assert_eq!(guest.host().last_launch().unwrap().snapshot().args().len(), 4);\n",
            "assert_eq!(guest.call::<(), i32>(\"capacity\", ())?, 4096);\n",
            "# Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())\n",
            "```"
        )]
        pub struct $name<L: 'static> {
            store: $rt::Store<LaunchHost<L>>,
            instance: $rt::Instance,
            memory: Option<$rt::Memory>,
        }

        impl<L: Launcher + 'static> $name<L> {
            #[doc = concat!(
                $compiles, " [`GUEST_WASM`] with a default engine and instantiates it with ",
                "`wasi_cuda_launch` served by `host`.\n\n# Errors\n\n", stringify!($rt),
                "'s, when the module cannot be compiled or instantiated."
            )]
            pub fn new(host: LaunchHost<L>) -> Result<$name<L>, $rt::Error> {
                let engine = $rt::Engine::default();
                let module = $rt::Module::new(&engine, GUEST_WASM)?;
                $name::instantiate(&engine, &module, host)
            }

            #[doc = concat!(
                "Instantiates `module` (made with `engine`) in a new store whose data is `host`, with ",
                "`wasi_cuda_launch` served by `host`", $start, ".\n\n# Errors\n\n", stringify!($rt),
                "'s, when instantiation fails (an import other than `wasi_cuda_launch`, a trapping ",
                "start function)."
            )]
            pub fn instantiate(
                engine: &$rt::Engine,
                module: &$rt::Module,
                host: LaunchHost<L>,
            ) -> Result<$name<L>, $rt::Error> {
                use $host as host_binding;
                let mut linker = $rt::Linker::new(engine);
                host_binding::add_to_linker(&mut linker, |host: &mut LaunchHost<L>| host)?;
                let mut store = $rt::Store::new(engine, host);
                let instance = linker.$instantiate(&mut store, module)?;
                let memory = instance.get_memory(&mut store, MEMORY_EXPORT);
                Ok($name { store, instance, memory })
            }

            #[doc = concat!(
                "Calls the export `name` with ", stringify!($rt), "'s typed calls (see [`exports`] for ",
                "the demo interface's signatures).\n\n# Errors\n\n", stringify!($rt),
                "'s: a trap, no such export, another signature."
            )]
            pub fn call<P: $rt::WasmParams, R: $rt::WasmResults>(
                &mut self,
                name: &str,
                params: P,
            ) -> Result<R, $rt::Error> {
                let func = self.instance.get_typed_func::<P, R>(&mut self.store, name)?;
                func.call(&mut self.store, params)
            }

            /// [`call`](Self::call), its error a [`GuestError`] naming the export.
            fn call_named<P: $rt::WasmParams, R: $rt::WasmResults>(
                &mut self,
                name: &str,
                params: P,
            ) -> Result<R, GuestError> {
                self.call(name, params).map_err(|e| GuestError::new(Runtime::$runtime, format!("{name}: {e:#}")))
            }
        }

        impl<L: Launcher + 'static> Guest<L> for $name<L> {
            fn runtime(&self) -> Runtime {
                Runtime::$runtime
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

        impl<L: 'static> std::fmt::Debug for $name<L> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let memory_bytes = self.memory.map(|memory| memory.data_size(&self.store));
                f.debug_struct(stringify!($name)).field("memory_bytes", &memory_bytes).finish_non_exhaustive()
            }
        }
    };
}

mod on_wasmi {
    use super::*;
    binding!(
        WasmiGuest, Wasmi, wasmi = kernel_args::wasmi_host::wasmi, kernel_args::wasmi_host,
        instantiate: instantiate_and_start, compiles: "Validates", start: ", and runs its start function if it has one"
    );
}
pub use on_wasmi::WasmiGuest;

#[cfg(feature = "wasmtime")]
mod on_wasmtime {
    use super::*;
    binding!(
        WasmtimeGuest, Wasmtime, wasmtime = kernel_args::wasmtime_host::wasmtime, kernel_args::wasmtime_host,
        instantiate: instantiate, compiles: "Compiles", start: " (its start function runs as part of instantiation)"
    );
}
#[cfg(feature = "wasmtime")]
pub use on_wasmtime::WasmtimeGuest;
