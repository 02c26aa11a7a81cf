//! # kernel-args
//!
//! The std side of the wasi-cuda kernel-argument ABI (work in progress: see the issue).

pub mod error;
pub mod launcher;

pub use error::{AbiError, Detail, HostError, UnknownAbiCode};
pub use launcher::{LaunchOutcome, LaunchRequest, LaunchShape, Launcher, PointerMode, SignatureCheck};
