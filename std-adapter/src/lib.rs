//! # kernel-args
//!
//! The host half of the wasi-cuda kernel-argument ABI: everything a host needs to answer
//! `wasi_cuda_launch`, on top of the `no_std` parser in `kernel-args-core`.
//!
//! A wasm guest asks the host to launch a GPU kernel by passing a kernel id, a launch shape
//! and its kernel parameters as one buffer of tagged records in its linear memory
//! (`args_ptr`, `args_len`; the format is [`kernel_args_core::wire`]). This crate checks all
//! of it before anything runs, and hands a bounds-checked [`LaunchRequest`] to a [`Launcher`]:
//!
//! 1. capability gate → `NotAvailable`;
//! 2. argument region ([`check_args_region`]) → `InvalidPointer`;
//! 3. launch shape ([`check_launch_shape`], limits in [`limits`]) → `InvalidDimensions`;
//! 4. parse (the core parser, no heap, into the launch's record) → `InvalidArgs`,
//!    `InvalidPointer`, `KernelArgsUnsupported`;
//! 5. dispatch through the [`Launcher`] trait: [`DryRunLauncher`] here, the CUDA backend in
//!    `kernel-args-cuda`.
//!
//! ```
//! use kernel_args::{AbiError, DryRunLauncher, LaunchCall, LaunchHost};
//! use kernel_args_core::ArgvBuilder;
//!
//! // The guest's linear memory: an argv at offset 0 naming two 16-byte buffers.
//! let mut memory = vec![0u8; 1024];
//! let mut argv = ArgvBuilder::new(&mut memory[..64]);
//! argv.ptr(256, 16)?.ptr(512, 16)?.u32(4)?;
//! let args_len = argv.len() as i32;
//!
//! let mut host = LaunchHost::new(DryRunLauncher::new());
//! let call = LaunchCall { args_len, ..LaunchCall::new(1, [1, 1, 1], [4, 1, 1]) };
//! // No GPU here: the dry run records the launch and answers NotAvailable.
//! assert_eq!(host.call(Some(&mut memory), &call), AbiError::NotAvailable.code());
//! assert_eq!(host.last_launch().unwrap().snapshot().args().len(), 3);
//!
//! // A block of 2048 threads is refused before the argv is even parsed.
//! let call = LaunchCall { block: [2048, 1, 1], ..call };
//! assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidDimensions.code());
//! assert!(host.last_launch().is_none());
//! assert_eq!(
//!     host.last_error_message().unwrap(),
//!     "InvalidDimensions -8: block.x is 2048, must be at most 1024"
//! );
//! # Ok::<(), kernel_args_core::EncodeError>(())
//! ```
//!
//! The pipeline (the error table, the checks and their limits, the host call, the
//! [`Launcher`] trait, the dry run, the pointer-free record) builds with neither `std` nor
//! `alloc` (`default-features = false`) for `thumbv7em-none-eabihf` and
//! `wasm32-unknown-unknown`, with and without `defmt`, and allocates nothing per call. The
//! `std` feature adds only what needs std: catching a panicking launcher, owned messages,
//! `Vec` conveniences, `Box<dyn Launcher>`, the wasmtime binding.
//!
//! ## Where to find what
//!
//! - the ABI error table and the host's error type: [`error`];
//! - every limit: [`limits`]; the region and shape checks: [`checks`];
//! - the launcher seam: [`launcher`]; the dry run: [`dry_run`];
//! - the runtime-independent host call, its recorded state and the import names: [`host`];
//! - the wasmtime host function (feature `wasmtime`): `wasmtime_host`;
//! - the wasmi host function (feature `wasmi`, with or without std): `wasmi_host`;
//! - the bundled demo guest, and a runner that runs it (or any guest with its interface) the
//!   same way on wasmtime and on wasmi (feature `demo-guest`): `guest`;
//! - `Vec` conveniences for std tools (feature `std`): `argv`;
//! - the WIT contract: `wit/wasi-cuda.wit` in this crate (a test checks it against [`AbiError`]).
//!
//! ## Features
//!
//! - `std` (default): see above. Without it the crate is `#![no_std]` and needs no allocator.
//! - `wasmtime` (default, implies `std`): `wasmtime_host::add_to_linker` registers the host
//!   function on a `wasmtime::Linker`.
//! - `wasmi`: `wasmi_host::add_to_linker` registers it on a `wasmi::Linker`, with or without
//!   `std`.
//! - `defmt`: `defmt::Format` on the pipeline's types, for embedded hosts.
//! - `demo-guest` (default): bundles the `no_std` vector_add guest (source in `guest/`, built
//!   for `wasm32-unknown-unknown` by `scripts/build-guest.sh`; the committed module is checked
//!   against a fresh build in CI) as `guest::GUEST_WASM`; with `wasmtime`, or `wasmi` and
//!   `std`, `guest::GuestModule` and the `guest::Guest` trait run it on either runtime.

#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod argv;
pub mod checks;
pub mod dry_run;
pub mod error;
#[cfg(feature = "demo-guest")]
#[cfg_attr(docsrs, doc(cfg(feature = "demo-guest")))]
pub mod guest;
pub mod host;
pub mod launcher;
pub mod limits;
#[cfg(feature = "wasmi")]
#[cfg_attr(docsrs, doc(cfg(feature = "wasmi")))]
pub mod wasmi_host;
#[cfg(feature = "wasmtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "wasmtime")))]
pub mod wasmtime_host;

#[cfg(feature = "std")]
pub use argv::{encode_argv_vec, parse_argv_vec, parse_snapshots};
pub use checks::{
    ArgsRegion, Bound, Dimension, LaunchLimits, LaunchShape, RegionError, ShapeError, check_args_region,
    check_launch_shape,
};
pub use dry_run::DryRunLauncher;
pub use error::{AbiError, Detail, HostError, UnknownAbiCode};
pub use host::{IMPORT_MODULE, LAUNCH_IMPORT, LaunchCall, LaunchHost, LaunchRecord, MEMORY_EXPORT};
pub use launcher::{LaunchOutcome, LaunchRequest, LaunchSnapshot, Launcher, PointerMode, SignatureCheck};
