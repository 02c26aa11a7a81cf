//! # kernel-args-cuda
//!
//! The CUDA side of the wasi-cuda kernel-argument ABI: it turns the parsed, bounds-checked
//! arguments of a launch ([`LoweredArg`](kernel_args_core::LoweredArg)) into the `void**`
//! array `cuLaunchKernel` reads, checks them against the kernel's parameter list, and (with
//! the `cuda` feature) launches the kernel through the CUDA driver.
//!
//! ## Where to find what
//!
//! - the allocation-free `void**` storage: [`KernelParamStorage`] (`src/storage.rs`), filled in
//!   place from a launch's checked arguments by [`KernelParamStorage::fill`], and its
//!   [`ParamTable`];
//! - the PTX `.entry` parameter lists (read by the project's one PTX front end,
//!   `kernel-args-ptx`) and the size check: [`KernelSignature`] (`src/signature.rs`);
//! - the kernel sandbox: [`fence`] (`src/fence/`, no `unsafe`), which reads a module through the
//!   front end, rewrites every access from an allowlist so that it stays inside its window (the
//!   fence given at launch, the block's shared memory, the thread's local memory), prints the
//!   module, and has a separate checker verify what it printed;
//! - the kernel registry (kernel id → PTX, entry and declaration, the declaration checked
//!   against the PTX, the PTX fenced unless registered unfenced): [`KernelRegistry`]
//!   (`src/registry.rs`); the bundled PTX of the demo
//!   guest's `vector_add`: [`kernels`];
//! - the embedder's errors (registration, device open, options): [`SetupError`]
//!   (`src/setup.rs`);
//! - the staging plan for devices without pageable memory access (every window of a launch in
//!   one arena, overlapping windows in one region of it): `src/staging.rs`, internal to the
//!   launch path;
//! - driver result codes and their ABI mapping: `src/cu_error.rs` (the table of `cuda.h`'s
//!   names that every driver error message uses);
//! - the launch path (feature `cuda`), its modules in one direction, each using only those
//!   before it: the driver layer `src/driver/` (the one module that calls the driver, in
//!   cudarc's three layers: `sys.rs`, the entry points; `result.rs`, one thin function per call;
//!   `mod.rs`, the RAII handles; the driver is loaded at run time from `libcuda.so.1` or the
//!   library that `CudaOptions::driver_library` or `KARGS_CUDA_DRIVER` names), the module cache
//!   (`src/modules.rs`: each kernel's module, loaded on its first launch), `CudaDevice`
//!   (`src/device.rs`: the driver, the primary context, recovery after a kernel fault; shared by
//!   every launcher of a process) and `CudaLauncher` (`src/launcher.rs`: one per guest, one path
//!   per pointer mode, and the launch policy: the fence's flag, the copies back).
//!
//! ## Features
//!
//! - `cuda`: the launch path, through cust 0.3.2's raw driver types. Building it needs
//!   `CUDA_LIBRARY_PATH` (a directory with `lib64/libcuda.so`) for cust's build script, which
//!   otherwise stops with `Could not find a cuda installation`; where CUDA is not installed, the
//!   repository's `scripts/cuda-link-stub.sh` makes a stand-in (see its comments). These docs
//!   with the `cuda` items build without it: `DOCS_RS=1 cargo doc -p kernel-args-cuda --features
//!   cuda --no-deps` (cust's build script looks for nothing under `DOCS_RS`). The binary does not
//!   link the driver: it loads the driver library when a device is opened, so it starts
//!   anywhere and reports `NotAvailable` where there is no driver or no device. The tests run
//!   it against the emulated driver of `cuda-emulator/` (`scripts/cuda-emulator.sh`).
//!
//! ## Unsafe
//!
//! Raw pointers are what the CUDA driver takes, so this crate has `unsafe`, in two modules:
//! the parameter table (`src/storage.rs`) and the driver layer (`src/driver/`). The crate
//! denies `unsafe_code` (the workspace's lints); those two modules allow it, each block with a
//! `// SAFETY:` comment and one unsafe operation (`clippy::undocumented_unsafe_blocks` and
//! `clippy::multiple_unsafe_ops_per_block` are denied). The storage and its tests run under
//! Miri: `cargo +nightly miri test -p kernel-args-cuda` (without the `cuda` feature, which
//! calls into a C library, where Miri cannot follow); the launch path's tests run under
//! AddressSanitizer in CI (`.ci/steps/55-cuda-asan.sh`).

#![cfg_attr(docsrs, feature(doc_cfg))]
// Tests may compute without checks (clippy.toml lets them unwrap, panic and index): a panic
// there is a failing test, not a broken contract.
#![cfg_attr(test, allow(clippy::arithmetic_side_effects))]

#[cfg(feature = "cuda")]
mod cu_error;
#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod driver;
pub mod fence;
pub mod kernels;
#[cfg(feature = "cuda")]
mod launcher;
#[cfg(feature = "cuda")]
mod modules;
mod registry;
mod setup;
mod signature;
// The staging plan is internal to the launch path; the `fuzzing` feature exposes it to the
// `staging_plan` fuzz target.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod staging;
#[cfg(not(feature = "fuzzing"))]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod staging;
mod storage;

#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use device::{CudaDevice, CudaOptions, DRIVER_ENV, DeviceInfo, DeviceRegistry, PointerModeChoice};
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use driver::DRIVER_LIBRARY;
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use launcher::{CudaLauncher, MAX_KEPT_PRINTS, MAX_KEPT_STAGING_BYTES, STAGING_ALIGN};
pub use registry::{KernelEntry, KernelRegistry, Sandbox};
pub use setup::{KernelProblem, SetupError};
pub use signature::{KernelSignature, PtxParam, PtxParseError, PtxType, check_param_sizes};
pub use storage::{
    KernelParamStorage, MAX_KERNEL_PARAMS, MAX_PARAM_BYTES, PaddedTable, PaddingScratch, ParamTable,
    SLOT_SIZE, StorageError,
};

/// The README's code, run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
