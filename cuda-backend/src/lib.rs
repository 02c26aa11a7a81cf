//! # kernel-args-cuda
//!
//! The CUDA side of the wasi-cuda kernel-argument ABI: it turns the parsed, bounds-checked
//! arguments of a launch ([`LoweredArg`](kernel_args_core::LoweredArg)) into the `void**`
//! array `cuLaunchKernel` reads, checks them against the kernel's parameter list, and (with
//! the `cuda` feature) launches the kernel through the CUDA driver.
//!
//! ## Where to find what
//!
//! - the allocation-free `void**` storage: [`storage`] ([`KernelParamStorage`], filled in
//!   place by [`parse_direct`](KernelParamStorage::parse_direct) or
//!   [`build_staged`](KernelParamStorage::build_staged); its [`ParamTable`]);
//! - the PTX `.entry` parameter-list parser and the size check: [`signature`];
//! - the kernel registry (kernel id → PTX and entry): [`registry`]; the bundled PTX of the
//!   demo guest's `vector_add`: [`kernels`];
//! - the staging plan for devices without pageable memory access (overlapping windows share
//!   one buffer): `staging`, internal to the launch path;
//! - driver result codes and their ABI mapping: `cu_error` (the table of `cuda.h`'s names
//!   that every driver error message uses);
//! - the launch path (feature `cuda`): `launcher` (`CudaDevice`, shared by every launcher of
//!   a process, and `CudaLauncher`, one per guest), over the driver layer `driver` (the one
//!   module that calls the driver, loaded at run time from `libcuda.so.1` or the library that
//!   `CudaOptions::driver_library` or `KARGS_CUDA_DRIVER` names).
//!
//! ## Features
//!
//! - `cuda`: the launch path, through cust 0.3.2's raw driver types. Building it needs
//!   `CUDA_LIBRARY_PATH` for cust's build script; where CUDA is not installed,
//!   `scripts/cuda-link-stub.sh` makes a stand-in (see its comments). The binary does not
//!   link the driver: it loads the driver library when a device is opened, so it starts
//!   anywhere and reports `NotAvailable` where there is no driver or no device. The tests run
//!   it against the emulated driver of `cuda-emulator/` (`scripts/cuda-emulator.sh`).
//!
//! ## Unsafe
//!
//! Raw pointers are what the CUDA driver takes, so this crate has `unsafe`, in two modules:
//! the parameter table ([`storage`]) and the driver layer (`driver`). Every other module is
//! `#![deny(unsafe_code)]`. Every block carries a `// SAFETY:` comment and does one unsafe
//! thing (`clippy::undocumented_unsafe_blocks` and `clippy::multiple_unsafe_ops_per_block`
//! are denied). The storage and its tests run under Miri:
//! `cargo +nightly miri test -p kernel-args-cuda` (without the `cuda` feature, which calls
//! into a C library, where Miri cannot follow); the launch path's tests run under
//! AddressSanitizer in CI (`.ci/steps/55-cuda-asan.sh`).

#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(clippy::undocumented_unsafe_blocks, clippy::multiple_unsafe_ops_per_block)]

#[cfg(feature = "cuda")]
mod cu_error;
#[cfg(feature = "cuda")]
mod driver;
pub mod kernels;
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub mod launcher;
pub mod registry;
pub mod signature;
// The staging plan is internal to the launch path; the `fuzzing` feature exposes it to the
// `staging_plan` fuzz target.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod staging;
#[cfg(not(feature = "fuzzing"))]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod staging;
pub mod storage;

#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use driver::DRIVER_LIBRARY;
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use launcher::{
    CudaDevice, CudaLauncher, CudaOptions, DRIVER_ENV, DeviceInfo, MAX_KEPT_STAGING_BYTES, PointerModeChoice,
};
pub use registry::{KernelEntry, KernelRegistry};

pub use signature::{KernelSignature, PtxParam, PtxParseError, PtxType};
pub use storage::{
    KernelParamStorage, MAX_PARAM_BYTES, ParamSlot, ParamTable, ParseError, SLOT_SIZE, StorageError,
};
