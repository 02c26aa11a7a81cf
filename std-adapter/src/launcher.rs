//! The seam between the host function and whatever runs the kernel.
//!
//! The host function checks the argument region and the launch shape, parses the argv and
//! then hands a [`LaunchRequest`] to a [`Launcher`]: the dry-run launcher in this crate, or the
//! CUDA backend (`kernel-args-cuda`). A request borrows the parsed arguments, whose pointer
//! windows borrow guest memory exclusively for the duration of the call, so a launcher may let
//! the device read and write guest memory but cannot keep a pointer past the call.

use kernel_args_core::{LoweredArg, LoweredArgSnapshot};

use crate::error::{AbiError, HostError};
use crate::limits::MAX_KERNEL_ARGS;

/// Grid and block dimensions and dynamic shared memory of a launch, as the guest gave them
/// (already checked by the host function when a launcher sees them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchShape {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

/// One launch, ready for a [`Launcher`].
#[derive(Debug, Clone, Copy)]
pub struct LaunchRequest<'a, 'm> {
    /// The guest's kernel handle.
    pub kernel_id: i64,
    /// The checked launch shape.
    pub shape: LaunchShape,
    /// The parsed, bounds-checked arguments; pointer windows borrow guest memory for `'m`.
    pub args: &'a [LoweredArg<'m>],
}

/// How pointer arguments reached the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PointerMode {
    /// The device was handed host pointers into guest memory (it can access pageable host
    /// memory).
    Direct,
    /// Each window was copied to device memory before the launch and back after it.
    Staged,
}

/// Whether the arguments were checked against the kernel's parameter list, and against what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureCheck {
    /// Checked against the parameter list parsed from the module's PTX.
    Ptx,
    /// Checked against the driver's `cuFuncGetParamInfo`.
    Driver,
    /// No signature was known, so no check was made.
    Skipped,
}

/// What a successful launch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchOutcome {
    /// How pointer arguments were handed to the device.
    pub pointer_mode: PointerMode,
    /// Which signature check was made.
    pub signature: SignatureCheck,
}

/// Runs a checked launch request. Implemented by the dry-run launcher and the CUDA backend.
pub trait Launcher {
    /// Launches the kernel and waits for it; an `Err` carries the ABI code the guest will see.
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError>;
}

impl<L: Launcher + ?Sized> Launcher for &mut L {
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        (**self).launch(request)
    }
}

impl<L: Launcher + ?Sized> Launcher for Box<L> {
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        (**self).launch(request)
    }
}

/// The pointer-free copy of a [`LaunchRequest`]: kernel id, shape and argument snapshots
/// (pointer arguments as guest offset and length). `Send + Sync`; holds its arguments inline,
/// so taking one never allocates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LaunchSnapshot {
    kernel_id: i64,
    shape: LaunchShape,
    args: heapless::Vec<LoweredArgSnapshot, MAX_KERNEL_ARGS>,
}

impl LaunchSnapshot {
    /// Snapshots `request`. Fails with `KernelArgsUnsupported` when it holds more than
    /// [`MAX_KERNEL_ARGS`] arguments (a request built by the host function never does).
    pub fn capture(request: &LaunchRequest<'_, '_>) -> Result<LaunchSnapshot, HostError> {
        let mut args = heapless::Vec::new();
        for arg in request.args {
            args.push(arg.snapshot()).map_err(|_| {
                HostError::msg(
                    AbiError::KernelArgsUnsupported,
                    format!("{} arguments, at most {MAX_KERNEL_ARGS} can be snapshot", request.args.len()),
                )
            })?;
        }
        Ok(LaunchSnapshot { kernel_id: request.kernel_id, shape: request.shape, args })
    }

    /// The guest's kernel handle.
    pub fn kernel_id(&self) -> i64 {
        self.kernel_id
    }

    /// The checked launch shape.
    pub fn shape(&self) -> LaunchShape {
        self.shape
    }

    /// The arguments, pointer-free, in argv order.
    pub fn args(&self) -> &[LoweredArgSnapshot] {
        &self.args
    }
}
