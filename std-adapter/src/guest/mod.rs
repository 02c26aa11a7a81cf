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
//! The runner that drives it the same way on wasmtime and on wasmi (`kargs-demo --runtime`,
//! and the end-to-end tests of both bindings) is the repository's `kernel-args-demo` (not
//! published); by hand, on wasmtime:
//!
//! ```
//! # #[cfg(feature = "wasmtime")]
//! # fn main() -> wasmtime::Result<()> {
//! use kernel_args::guest::{GUEST_WASM, VECTOR_ADD_DECLARATION, VECTOR_ADD_KERNEL_ID, exports};
//! use kernel_args::wasmtime_host::add_to_linker;
//! use kernel_args::{Declaration, DryRunLauncher, LaunchHost};
//! use kernel_args_core::LoweredArgSnapshot;
//! use wasmtime::{Engine, Linker, Module, Store};
//!
//! let engine = Engine::default();
//! let module = Module::new(&engine, GUEST_WASM)?;
//! let mut linker = Linker::new(&engine);
//! add_to_linker(&mut linker, |host: &mut LaunchHost<DryRunLauncher>| host)?;
//! let mut dry_run = DryRunLauncher::new();
//! let declaration = Declaration::parse(VECTOR_ADD_DECLARATION).expect("it parses");
//! dry_run.kernels_mut().declare(VECTOR_ADD_KERNEL_ID, declaration).expect("room for it");
//! let mut store = Store::new(&engine, LaunchHost::new(dry_run));
//! let instance = linker.instantiate(&mut store, &module)?;
//! let run = instance.get_typed_func::<i32, i32>(&mut store, exports::RUN_VECTOR_ADD)?;
//! assert_eq!(run.call(&mut store, 1000)?, -1, "dry run: no CUDA device");
//! let launch = store.data().last_launch().unwrap().snapshot();
//! assert_eq!(launch.kernel_id(), VECTOR_ADD_KERNEL_ID);
//! assert_eq!(launch.shape().grid, [4, 1, 1]);
//! assert_eq!(launch.args().get(3), Some(LoweredArgSnapshot::U32(1000)));
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "wasmtime"))]
//! # fn main() {}
//! ```

/// The guest module's bytes (wasm32-unknown-unknown, release build).
pub const GUEST_WASM: &[u8] = include_bytes!("../../kernel_args_demo_guest.wasm");

/// The kernel id the guest launches `vector_add` with.
pub const VECTOR_ADD_KERNEL_ID: i64 = 1;

/// The declaration of the kernel the guest launches (`docs/declarations.md`): `out[i] = a[i] +
/// b[i]` for `i < n`, reading `n` floats of `a` and `b` and writing `n` of `out`.
pub const VECTOR_ADD_DECLARATION: &str = "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)";

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
    /// [`LaunchParams`](crate::LaunchParams)` -> i32`: calls `wasi_cuda_launch` with exactly
    /// these values.
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
