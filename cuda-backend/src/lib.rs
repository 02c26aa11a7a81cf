//! # kernel-args-cuda
//!
//! The CUDA side of the wasi-cuda kernel-argument ABI: it turns the parsed, bounds-checked
//! arguments of a launch ([`LoweredArg`](kernel_args_core::LoweredArg)) into the `void**`
//! array `cuLaunchKernel` reads, checks them against the kernel's parameter list, and (with
//! the `cuda` feature) launches the kernel through the CUDA driver.
//!
//! ## Where to find what
//!
//! - the allocation-free `void**` storage: [`storage`] ([`build_kernel_param_storage`],
//!   [`KernelParamStorage`], [`ParamTable`]);
//! - the PTX `.entry` parameter-list parser and the size check: [`signature`];
//! - the driver launch path (feature `cuda`): `launcher` (`CudaLauncher`, `KernelRegistry`),
//!   over the run-time-loaded driver table in `driver`.
//!
//! ## Unsafe
//!
//! This is the only crate of the workspace with `unsafe`: raw pointers are what the CUDA
//! driver takes. Every block carries a `// SAFETY:` comment and does one unsafe thing
//! (`clippy::undocumented_unsafe_blocks` and `clippy::multiple_unsafe_ops_per_block` are
//! denied). The storage and its tests run under Miri:
//! `cargo +nightly miri test -p kernel-args-cuda` (without the `cuda` feature, which calls
//! into the driver).

#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::multiple_unsafe_ops_per_block)]

pub mod signature;
pub mod storage;

pub use signature::{
    KernelSignature, PtxParam, PtxParseError, PtxType, check_param_sizes, find_entry, parse_ptx_entries,
};
pub use storage::{
    KernelParamStorage, ParamSlot, ParamTable, PointerPlacement, SLOT_SIZE, StorageError, arg_size,
    build_kernel_param_storage,
};
