//! The bundled demo guest (feature `demo-guest`): a `no_std` Rust module, built from
//! `std-adapter/guest/` for `wasm32-unknown-unknown` and committed beside this crate's manifest
//! (`scripts/build-guest.sh` rebuilds it; CI checks it is what the source builds), that
//! launches a `vector_add` kernel through `wasi_cuda_launch` with an argv built by
//! `kernel-args-core`'s [`ArgvBuilder`](kernel_args_core::ArgvBuilder).
//!
//! The kernel it launches is
//! `vector_add(const float *a, const float *b, float *out, unsigned n)`, `out[i] = a[i] + b[i]`,
//! with `a[i] = i` and `b[i] = 2i + 1`. Its exports ([`exports`]) drive it from a host:
//! one good launch, one deliberately bad launch per host check, and accessors to read the
//! buffers back.
//!
//! ```
//! # #[cfg(feature = "wasmtime")] {
//! use kernel_args::guest::{GUEST_WASM, VECTOR_ADD_KERNEL_ID, exports};
//! use kernel_args::wasmtime_host::add_to_linker;
//! use kernel_args::{DryRunLauncher, LaunchHost};
//! use kernel_args_core::LoweredArgSnapshot;
//! use wasmtime::{Engine, Linker, Module, Store};
//!
//! let engine = Engine::default();
//! let module = Module::new(&engine, GUEST_WASM)?;
//! let mut linker = Linker::new(&engine);
//! add_to_linker(&mut linker, |host: &mut LaunchHost<DryRunLauncher>| host)?;
//! let mut store = Store::new(&engine, LaunchHost::new(DryRunLauncher::new()));
//! let instance = linker.instantiate(&mut store, &module)?;
//! let run = instance.get_typed_func::<i32, i32>(&mut store, exports::RUN_VECTOR_ADD)?;
//! assert_eq!(run.call(&mut store, 1000)?, -1, "dry run: no CUDA device");
//! let launch = store.data().last_launch().unwrap().snapshot();
//! assert_eq!(launch.kernel_id(), VECTOR_ADD_KERNEL_ID);
//! assert_eq!(launch.shape().grid, [4, 1, 1]);
//! assert_eq!(launch.args()[3], LoweredArgSnapshot::U32(1000));
//! # }
//! # Ok::<(), wasmtime::Error>(())
//! ```

/// The guest module's bytes (wasm32-unknown-unknown, release build).
pub const GUEST_WASM: &[u8] = include_bytes!("../kernel_args_demo_guest.wasm");

/// The kernel id the guest launches `vector_add` with.
pub const VECTOR_ADD_KERNEL_ID: i64 = 1;

/// Threads per block of the guest's vector_add launch (grid x is `ceil(n / 256)`).
pub const THREADS_PER_BLOCK: u32 = 256;

/// Elements in each of the guest's `a`, `b` and `out` buffers.
pub const CAPACITY: usize = 4096;

/// Guest code (not an ABI code): the element count is negative or above [`CAPACITY`].
pub const ERR_BAD_COUNT: i32 = -100;

/// Guest code (not an ABI code): the guest could not encode its argv.
pub const ERR_ENCODE: i32 = -101;

/// The guest's exports, by name. Signatures in wasm types.
pub mod exports {
    /// `(n: i32) -> i32`: fills `a` and `b` for `n` elements and launches vector_add.
    pub const RUN_VECTOR_ADD: &str = "run_vector_add";
    /// `(n: i32) -> i32`: the first index where `out != a + b` (bitwise), or `-1`.
    pub const FIRST_MISMATCH: &str = "first_mismatch";
    /// `(i: i32) -> f32`: `out[i]` (NaN out of range; a NaN sentinel where nothing wrote).
    pub const OUT_AT: &str = "out_at";
    /// `() -> i32`: offset of `a` in linear memory.
    pub const A_PTR: &str = "a_ptr";
    /// `() -> i32`: offset of `b` in linear memory.
    pub const B_PTR: &str = "b_ptr";
    /// `() -> i32`: offset of `out` in linear memory.
    pub const OUT_PTR: &str = "out_ptr";
    /// `() -> i32`: elements per buffer.
    pub const CAPACITY: &str = "capacity";
    /// `() -> i32`: offset of the guest's copy of the last argv it sent.
    pub const LAST_ARGV_PTR: &str = "last_argv_ptr";
    /// `() -> i32`: length of the last argv it sent.
    pub const LAST_ARGV_LEN: &str = "last_argv_len";
    /// `(i64, i32 × 9) -> i32`: calls `wasi_cuda_launch` with exactly these values.
    pub const LAUNCH_RAW: &str = "launch_raw";
    /// `() -> i32`: a vector_add argv whose `out` window starts at the end of memory (→ -2).
    pub const SEND_PTR_PAST_MEMORY: &str = "send_ptr_past_memory";
    /// `() -> i32`: the vector_add argv plus a record with tag `0xff` (→ -9).
    pub const SEND_UNKNOWN_TAG: &str = "send_unknown_tag";
    /// `() -> i32`: 129 `u32` records (→ -10).
    pub const SEND_TOO_MANY_ARGS: &str = "send_too_many_args";
    /// `() -> i32`: an args region that runs 24 bytes past the end of memory (→ -2).
    pub const SEND_ARGS_REGION_PAST_MEMORY: &str = "send_args_region_past_memory";
    /// `() -> i32`: a valid argv with a 2048-thread block (→ -8).
    pub const SEND_BAD_DIMENSIONS: &str = "send_bad_dimensions";
}

#[cfg(feature = "wasmtime")]
pub use runner::GuestRunner;

#[cfg(feature = "wasmtime")]
mod runner {
    use wasmtime::{Engine, Instance, Linker, Memory, Module, Store, WasmParams, WasmResults};

    use super::{GUEST_WASM, exports};
    use crate::host::LaunchHost;
    use crate::launcher::Launcher;
    use crate::host::MEMORY_EXPORT;
    use crate::wasmtime_host::add_to_linker;

    /// The demo guest instantiated on wasmtime with a [`LaunchHost`] as its store's data: what
    /// `kargs demo` and the GPU tests drive. Any [`Launcher`] plugs in.
    ///
    /// ```
    /// use kernel_args::guest::GuestRunner;
    /// use kernel_args::{AbiError, DryRunLauncher, LaunchHost};
    ///
    /// let mut guest = GuestRunner::new(LaunchHost::new(DryRunLauncher::new()))?;
    /// assert_eq!(guest.run_vector_add(100)?, AbiError::NotAvailable.code());
    /// assert_eq!(guest.host().last_launch().unwrap().snapshot().args().len(), 4);
    /// assert_eq!(guest.first_mismatch(100)?, Some(0), "nothing ran");
    /// assert!(guest.first_mismatch(-1).is_err());
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub struct GuestRunner<L: 'static> {
        store: Store<LaunchHost<L>>,
        instance: Instance,
        memory: Memory,
    }

    impl<L: Launcher + 'static> GuestRunner<L> {
        /// Compiles [`GUEST_WASM`] with a default engine and instantiates it with
        /// `wasi_cuda_launch` served by `host`.
        pub fn new(host: LaunchHost<L>) -> wasmtime::Result<GuestRunner<L>> {
            let engine = Engine::default();
            let module = Module::new(&engine, GUEST_WASM)?;
            let mut linker = Linker::new(&engine);
            add_to_linker(&mut linker, |host: &mut LaunchHost<L>| host)?;
            let mut store = Store::new(&engine, host);
            let instance = linker.instantiate(&mut store, &module)?;
            let memory = instance
                .get_memory(&mut store, MEMORY_EXPORT)
                .ok_or_else(|| wasmtime::Error::msg("the demo guest exports no memory"))?;
            Ok(GuestRunner { store, instance, memory })
        }

        /// Calls the guest export `name` (see [`exports`] for the signatures).
        pub fn call<P: WasmParams, R: WasmResults>(&mut self, name: &str, params: P) -> wasmtime::Result<R> {
            let func = self.instance.get_typed_func::<P, R>(&mut self.store, name)?;
            func.call(&mut self.store, params)
        }

        /// Fills `a` and `b` for `n` elements and launches vector_add; returns what the host
        /// answered the guest (`0`, an ABI code, or a guest code such as
        /// [`ERR_BAD_COUNT`](super::ERR_BAD_COUNT)).
        pub fn run_vector_add(&mut self, n: i32) -> wasmtime::Result<i32> {
            self.call(exports::RUN_VECTOR_ADD, n)
        }

        /// The first index below `n` where `out != a + b`, or `None` when every element is
        /// right (after a real launch: the kernel ran correctly). An `n` outside
        /// `0..=CAPACITY` is an error.
        pub fn first_mismatch(&mut self, n: i32) -> wasmtime::Result<Option<u32>> {
            let index: i32 = self.call(exports::FIRST_MISMATCH, n)?;
            match index {
                -1 => Ok(None),
                i => u32::try_from(i).map(Some).map_err(|_| {
                    wasmtime::Error::msg(format!("first_mismatch({n}) answered {i}: n is out of range"))
                }),
            }
        }

        /// `out[i]`.
        pub fn out(&mut self, i: i32) -> wasmtime::Result<f32> {
            self.call(exports::OUT_AT, i)
        }

        /// The guest's linear memory, as the host sees it.
        pub fn memory(&self) -> &[u8] {
            self.memory.data(&self.store)
        }

        /// The guest's linear memory, writable: a host that lays out a launch's data itself.
        pub fn memory_mut(&mut self) -> &mut [u8] {
            self.memory.data_mut(&mut self.store)
        }

        /// The host state: the last launch, the last error, the launcher.
        pub fn host(&self) -> &LaunchHost<L> {
            self.store.data()
        }
    }

    impl<L: 'static> std::fmt::Debug for GuestRunner<L> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("GuestRunner").field("memory_bytes", &self.memory.data_size(&self.store)).finish()
        }
    }
}
