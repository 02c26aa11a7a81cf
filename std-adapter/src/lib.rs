//! # kernel-args
//!
//! The host half of the wasi-cuda kernel-argument ABI: everything a host needs to answer
//! `wasi_cuda_launch`, on top of the `no_std` parser in `kernel-args-core`.
//!
//! A wasm guest asks the host to launch a GPU kernel by passing a kernel id, a launch shape
//! and its kernel parameters as one buffer of tagged records in its linear memory
//! (`args_ptr`, `args_len`; the format is `docs/wire-format.md`). This crate checks all
//! of it before anything runs, and hands a bounds-checked [`LaunchRequest`] to a [`Launcher`].
//! [`LaunchHost::call`] runs the host call's steps, which its documentation lists (the one
//! place they are written): the capability, the guest's memory, the argument region
//! ([`check_args_region`]), the launch shape ([`check_launch_shape`]) and the threads quota, the
//! byte cap, the parse (the core parser, no heap), the kernel ([`Launcher::registered`]), its
//! [`Declaration`], the launches in flight, then the [`Launcher`] ([`DryRunLauncher`] here, the
//! CUDA backend in `kernel-args-cuda`) and the record of the call. The first that fails decides
//! the guest's ABI code.
//!
//! ```
//! use kernel_args::{AbiError, Declaration, DryRunLauncher, LaunchCall, LaunchHost};
//! use kernel_args_core::ArgvBuilder;
//!
//! // The guest's linear memory: an argv at offset 0 naming two 16-byte buffers.
//! let mut memory = vec![0u8; 1024];
//! let mut argv = ArgvBuilder::new(&mut memory[..64]);
//! argv.ptr(256, 16)?.ptr(512, 16)?.u32(4)?;
//! let args_len = argv.len() as i32;
//!
//! // Kernel 1, and what it does with its parameters.
//! let mut dry_run = DryRunLauncher::new();
//! dry_run.kernels_mut().declare(1, Declaration::parse("copy(src: &[f32; n], dst: &mut [f32; n], n: u32)")?)?;
//! let mut host = LaunchHost::new(dry_run);
//! let call = LaunchCall { args_len, ..LaunchCall::new(1, [1, 1, 1], [4, 1, 1]) };
//! // No GPU here: the dry run records the launch and answers NotAvailable.
//! assert_eq!(host.call(Some(&mut memory), &call), AbiError::NotAvailable.code());
//! assert_eq!(host.last_launch().unwrap().snapshot().args().len(), 3);
//!
//! // A count past the windows is refused before any launcher runs.
//! memory[19..23].copy_from_slice(&5u32.to_le_bytes());
//! assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidArgs.code());
//! memory[19..23].copy_from_slice(&4u32.to_le_bytes());
//!
//! // A block of 2048 threads is refused before the argv is even parsed.
//! let call = LaunchCall { block: [2048, 1, 1], ..call };
//! assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidDimensions.code());
//! assert!(host.last_launch().is_none());
//! assert_eq!(
//!     host.last_error().unwrap().to_string(),
//!     "InvalidDimensions -8: block.x is 2048, must be at most 1024"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
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
//! Every item is at the crate root but for the limits ([`limits`]) and the two runtime
//! bindings (`wasmtime_host`, `wasmi_host`), each a module of its own:
//!
//! - the ABI error table and the host's error type: [`AbiError`], [`HostError`], [`Detail`]
//!   (`src/error.rs`);
//! - every limit: [`limits`]; the region and shape checks: [`check_args_region`],
//!   [`check_launch_shape`] (`src/checks.rs`);
//! - the host call, in the order the pipeline runs it: [`LaunchHost::call`] (`src/host.rs`,
//!   whose documentation lists the steps);
//! - kernel declarations, their grammar's parser and the check of a launch against them:
//!   [`Declaration`] (`src/declaration/`: the parsed form, `grammar.rs`, `check.rs`, `errors.rs`;
//!   the grammar is `docs/declarations.md`);
//! - the quotas (threads and staging bytes per launch, launches in flight per guest and per
//!   device), their defaults and the shared in-flight count: [`Quota`], [`InFlight`]
//!   (`src/quota.rs`);
//! - the launcher seam: [`Launcher`], [`LaunchRequest`], [`KernelTable`], and whether a kernel
//!   without a declaration launches, [`GuestTrust`] (`src/launcher.rs`);
//!   the dry run: [`DryRunLauncher`];
//! - the wasmtime host function (feature `wasmtime`): `wasmtime_host::add_to_linker`; the wasmi
//!   one (feature `wasmi`, with or without std): `wasmi_host::add_to_linker`; both register the
//!   same function ([`LaunchHost::call`] behind the import [`IMPORT_MODULE`]/[`LAUNCH_IMPORT`]);
//! - the bundled demo guest's module and interface (feature `demo-guest`): `guest`;
//! - the WIT contract: `wit/wasi-cuda.wit` in this crate (a test checks it against [`AbiError`]).
//!
//! ## Features
//!
//! The default is `std` alone: no wasm runtime is built that the host did not ask for. One
//! dependency line per kind of host:
//!
//! ```toml
//! # A wasmtime host (a server):
//! kernel-args = { version = "0.1", features = ["wasmtime"] }
//! # A wasmi host with std:
//! kernel-args = { version = "0.1", features = ["wasmi"] }
//! # A no_std firmware host (wasmi needs only `alloc`; without `wasmi`, neither std nor alloc):
//! kernel-args = { version = "0.1", default-features = false, features = ["wasmi"] }
//! ```
//!
//! A C host links `libkargs` (`kernel-args-capi`) and includes `include/kargs.h` instead.
//!
//! - `std` (default): catching a panicking launcher, owned messages (`HostError::msg`,
//!   `LaunchHost::last_error_message`), `Box<dyn Launcher>`. Without it the crate is
//!   `#![no_std]` and needs no allocator.
//! - `wasmtime` (implies `std`): `wasmtime_host::add_to_linker` registers the host
//!   function on a `wasmtime::Linker`. The binding is built against the `wasmtime` this crate
//!   depends on (re-exported as `kernel_args::wasmtime_host::wasmtime`): the embedder's wasmtime
//!   must be the same major version.
//! - `wasmi`: `wasmi_host::add_to_linker` registers it on a `wasmi::Linker`, with or without
//!   `std` (re-exported as `kernel_args::wasmi_host::wasmi`; the same version coupling).
//! - `defmt`: `defmt::Format` on the pipeline's types, for embedded hosts.
//! - `demo-guest`: the `no_std` vector_add guest's module (`guest::GUEST_WASM`, built
//!   from `guest/` for `wasm32-unknown-unknown` by `scripts/build-guest.sh`; CI checks the
//!   committed module against a fresh build) and its interface (kernel id, exports). The runner
//!   that drives it on either runtime is the repository's `kernel-args-demo` (not published).

#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![forbid(unsafe_code)]
// Tests may compute without checks (clippy.toml lets them unwrap, panic and index): a panic
// there is a failing test, not a broken contract.
#![cfg_attr(test, allow(clippy::arithmetic_side_effects))]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod args;
mod checks;
mod declaration;
mod dry_run;
mod error;
#[cfg(feature = "demo-guest")]
#[cfg_attr(docsrs, doc(cfg(feature = "demo-guest")))]
pub mod guest;
mod host;
mod launcher;
pub mod limits;
mod quota;
#[cfg(feature = "wasmi")]
#[cfg_attr(docsrs, doc(cfg(feature = "wasmi")))]
pub mod wasmi_host;
#[cfg(feature = "wasmtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "wasmtime")))]
pub mod wasmtime_host;

pub use args::LaunchArgs;
pub use checks::{
    ArgsRegion, Bound, Dimension, LaunchLimits, LaunchShape, RegionError, ShapeError, check_args_region,
    check_launch_shape,
};
pub use declaration::{
    Declaration, DeclarationError, DeclaredParam, Element, Expected, Mismatch, MismatchKind, Name, ParamType,
    PointerAccess, Problem, Scalar, Text,
};
pub use dry_run::DryRunLauncher;
#[cfg(feature = "std")]
pub use error::DriverParams;
pub use error::{
    AbiError, Detail, DeviceLost, DriverFailure, FenceProblem, FenceReport, FenceSpan, FenceUnavailable,
    HostError, UnknownAbiCode,
};
pub use host::{
    IMPORT_MODULE, LAUNCH_IMPORT, LaunchCall, LaunchHost, LaunchParams, LaunchRecord, MEMORY_EXPORT,
};
pub use launcher::{
    GuestTrust, KernelTable, LaunchOutcome, LaunchRequest, LaunchSnapshot, Launcher, PointerMode, Registered,
    SignatureCheck, TableFull,
};
pub use quota::{InFlight, InFlightSlot, Quota, QuotaError, check_threads_per_launch};

/// The README's code, run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
