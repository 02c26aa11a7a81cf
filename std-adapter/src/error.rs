//! The wasi-cuda ABI error table, and the host's error type that keeps the detail.
//!
//! | code | [`AbiError`]            | meaning                                                   |
//! |------|-------------------------|-----------------------------------------------------------|
//! | `-1` | `NotAvailable`          | the capability is disabled or no CUDA device is present   |
//! | `-2` | `InvalidPointer`        | a guest pointer or region lies outside linear memory      |
//! | `-3` | `InvalidKernel`         | unknown kernel id, or the module has no such entry        |
//! | `-4` | `MalformedPtx`          | the driver refused the kernel's PTX                       |
//! | `-5` | `LaunchFailed`          | the driver refused or failed the launch                   |
//! | `-6` | `QuotaExceeded`         | a host resource quota was exceeded                        |
//! | `-7` | `Internal`              | a host-side fault that is not the guest's doing           |
//! | `-8` | `InvalidDimensions`     | grid, block or shared-memory shape out of range           |
//! | `-9` | `InvalidArgs`           | the argv buffer is malformed or mismatches the kernel     |
//! | `-10`| `KernelArgsUnsupported` | the argv exceeds a cap the host enforces                  |
//!
//! A successful call returns `0`. The order of the variants is the order of the WIT
//! `abi-error` enum in `wit/wasi-cuda.wit`, which a test checks.

use core::fmt;

use kernel_args_core::{ArgvError, ErrorCode};

use crate::checks::{RegionError, ShapeError};
use crate::declaration::Mismatch;
use crate::quota::QuotaError;

/// The wasi-cuda ABI error codes. The discriminants are the stable codes the host function
/// returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(i32)]
pub enum AbiError {
    /// `-1`: the capability is disabled or no CUDA device is present.
    NotAvailable = -1,
    /// `-2`: a guest pointer or region lies outside linear memory.
    InvalidPointer = -2,
    /// `-3`: unknown kernel id, or the module has no such entry point.
    InvalidKernel = -3,
    /// `-4`: the driver refused the kernel's PTX.
    MalformedPtx = -4,
    /// `-5`: the driver refused or failed the launch.
    LaunchFailed = -5,
    /// `-6`: a host resource quota was exceeded.
    QuotaExceeded = -6,
    /// `-7`: a host-side fault that is not the guest's doing.
    Internal = -7,
    /// `-8`: grid, block or shared-memory shape out of range.
    InvalidDimensions = -8,
    /// `-9`: the argv buffer is malformed or does not match the kernel's parameters.
    InvalidArgs = -9,
    /// `-10`: the argv exceeds a cap the host enforces.
    KernelArgsUnsupported = -10,
}

impl AbiError {
    /// Every code, in ABI order (`-1` down to `-10`).
    pub const ALL: [AbiError; 10] = [
        AbiError::NotAvailable,
        AbiError::InvalidPointer,
        AbiError::InvalidKernel,
        AbiError::MalformedPtx,
        AbiError::LaunchFailed,
        AbiError::QuotaExceeded,
        AbiError::Internal,
        AbiError::InvalidDimensions,
        AbiError::InvalidArgs,
        AbiError::KernelArgsUnsupported,
    ];

    /// The stable numeric code.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The ABI name (`"InvalidArgs"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            AbiError::NotAvailable => "NotAvailable",
            AbiError::InvalidPointer => "InvalidPointer",
            AbiError::InvalidKernel => "InvalidKernel",
            AbiError::MalformedPtx => "MalformedPtx",
            AbiError::LaunchFailed => "LaunchFailed",
            AbiError::QuotaExceeded => "QuotaExceeded",
            AbiError::Internal => "Internal",
            AbiError::InvalidDimensions => "InvalidDimensions",
            AbiError::InvalidArgs => "InvalidArgs",
            AbiError::KernelArgsUnsupported => "KernelArgsUnsupported",
        }
    }
}

impl fmt::Display for AbiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name(), self.code())
    }
}

impl core::error::Error for AbiError {}

/// The code is not one of the ABI's ten error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnknownAbiCode(pub i32);

impl fmt::Display for UnknownAbiCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not a wasi-cuda ABI error code", self.0)
    }
}

impl core::error::Error for UnknownAbiCode {}

impl TryFrom<i32> for AbiError {
    type Error = UnknownAbiCode;

    fn try_from(code: i32) -> Result<AbiError, UnknownAbiCode> {
        AbiError::ALL.into_iter().find(|e| e.code() == code).ok_or(UnknownAbiCode(code))
    }
}

impl From<ErrorCode> for AbiError {
    fn from(code: ErrorCode) -> AbiError {
        match code {
            ErrorCode::InvalidPointer => AbiError::InvalidPointer,
            ErrorCode::InvalidArgs => AbiError::InvalidArgs,
            ErrorCode::KernelArgsUnsupported => AbiError::KernelArgsUnsupported,
        }
    }
}

impl From<ArgvError> for AbiError {
    fn from(e: ArgvError) -> AbiError {
        e.code().into()
    }
}

/// What exactly went wrong, beyond the ABI code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Detail {
    /// The core parser rejected the argv buffer; the error names the record and byte.
    Argv(ArgvError),
    /// The kernel declares `expected` parameters but the argv has `got` arguments.
    ParamCount {
        /// Parameters the kernel declares.
        expected: usize,
        /// Arguments the guest passed.
        got: usize,
    },
    /// Argument `index` is `got` bytes but the kernel's parameter `index` is `expected` bytes.
    ParamSize {
        /// The argument's 0-based index.
        index: usize,
        /// The kernel parameter's size in bytes.
        expected: usize,
        /// The argument's size in bytes (8 for a pointer: a device address).
        got: usize,
    },
    /// The arguments do not fit the kernel's declaration: what, and where (record, byte,
    /// parameter).
    Declaration(Mismatch),
    /// No kernel is registered with this id.
    UnknownKernel {
        /// The guest's kernel id.
        kernel_id: i64,
    },
    /// The kernel is registered without a declaration, and the host does not trust its guest.
    Undeclared {
        /// The guest's kernel id.
        kernel_id: i64,
    },
    /// Anything else, in words fixed at compile time, with the code it is answered with: what
    /// a launcher without an allocator reports.
    Static {
        /// The ABI code.
        code: AbiError,
        /// What went wrong.
        text: &'static str,
    },
    /// Anything else, in words made at run time, with the code it is answered with
    /// (feature `std`).
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    Message {
        /// The ABI code.
        code: AbiError,
        /// What went wrong.
        text: String,
    },
    /// The argument region (`args_ptr`, `args_len`) was refused before parsing.
    Region(RegionError),
    /// The launch shape is out of range: which quantity, its value, the bound.
    Shape(ShapeError),
    /// A quota would be exceeded: which, what the launch would take, the limit.
    Quota(QuotaError),
    /// A fenced kernel reached outside its fence or stopped at a trap: what its launcher read
    /// from the fence's flag after it ran.
    Fenced(FenceReport),
    /// A fenced kernel was not launched: the fence it would have had is not one the fence
    /// clamps into (conditions on the embedder's side, such as a guest memory too short)
    /// (feature `std`, as the CUDA launcher that answers it is).
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    FenceUnavailable(FenceUnavailable),
    /// The device can run nothing more in this process: a kernel's fault left its driver
    /// unusable, and the driver refused a fresh context. Every later launch on the device
    /// answers this; only a new process runs kernels on it again (what a GPU does: see the
    /// repository's `docs/RISKS.md`). An embedder that sees it restarts the process.
    DeviceLost(DeviceLost),
    /// A call into the device's driver failed: which call, the driver's own code (and its
    /// name where the host knows it), and the ABI code the host answers it with.
    Driver(DriverFailure),
    /// The driver's parameter list for the kernel differs from its declaration, so it is not
    /// launched (feature `std`).
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    DriverParams {
        /// The guest's kernel id.
        kernel_id: i64,
        /// The two lists.
        params: DriverParams,
    },
    /// The driver refused to load a kernel's module, and its JIT said why (feature `std`).
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    JitRefused {
        /// The load call that failed (`cuModuleLoadDataEx`) and its code.
        failure: DriverFailure,
        /// The JIT's error log, as the driver wrote it.
        log: String,
    },
    /// The wasi-cuda capability is disabled for this guest.
    CapabilityDisabled,
    /// The calling module exports no linear memory named `memory`, so no pointer can be
    /// resolved.
    NoExportedMemory,
    /// No CUDA device is present: the launch was recorded by a dry run, not run.
    NoDevice,
    /// The launcher panicked; the host caught it so the guest sees an error code, not a trap.
    LauncherPanicked,
}

impl Detail {
    /// The ABI code this detail is answered with: each detail has exactly one.
    pub fn code(&self) -> AbiError {
        match self {
            Detail::Argv(e) => e.code().into(),
            Detail::ParamCount { .. } | Detail::ParamSize { .. } | Detail::Declaration(_) => {
                AbiError::InvalidArgs
            }
            Detail::UnknownKernel { .. } | Detail::Undeclared { .. } => AbiError::InvalidKernel,
            Detail::Static { code, .. } => *code,
            #[cfg(feature = "std")]
            Detail::Message { code, .. } => *code,
            Detail::Region(_) | Detail::NoExportedMemory => AbiError::InvalidPointer,
            Detail::Shape(_) => AbiError::InvalidDimensions,
            Detail::Quota(_) => AbiError::QuotaExceeded,
            Detail::Fenced(_) | Detail::DeviceLost(_) => AbiError::LaunchFailed,
            #[cfg(feature = "std")]
            Detail::FenceUnavailable(f) => match f.problem {
                FenceProblem::ProofFails { .. } => AbiError::InvalidArgs,
                FenceProblem::TooManyThreadsX { .. } => AbiError::InvalidDimensions,
                _ => AbiError::LaunchFailed,
            },
            #[cfg(feature = "std")]
            Detail::DriverParams { .. } => AbiError::InvalidKernel,
            Detail::Driver(failure) => failure.abi,
            #[cfg(feature = "std")]
            Detail::JitRefused { failure, .. } => failure.abi,
            Detail::CapabilityDisabled | Detail::NoDevice => AbiError::NotAvailable,
            Detail::LauncherPanicked => AbiError::Internal,
        }
    }
}

/// Where a fenced kernel's global accesses are clamped: its fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FenceSpan {
    /// The guest's whole linear memory (direct pointers).
    GuestMemory,
    /// The launch's staging arena, the one device buffer every staged window lies in.
    StagingArena,
}

impl fmt::Display for FenceSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FenceSpan::GuestMemory => "the guest's linear memory",
            FenceSpan::StagingArena => "the launch's staging arena",
        })
    }
}

/// A failed driver call ([`Detail::Driver`]), kept as integers: the code is the driver's own
/// (for CUDA a `CUresult`, any `int`, newer ones included), never turned into an enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DriverFailure {
    /// The ABI code the host answers this failure with (it depends on what the call was for:
    /// a module's load that the driver refuses as malformed is `MalformedPtx`, a launch's
    /// failure `LaunchFailed`).
    pub abi: AbiError,
    /// The driver function, as the driver's API names it (`cuLaunchKernel`).
    pub call: &'static str,
    /// What it returned.
    pub code: i32,
    /// The code's name in the host's table (`CUDA_ERROR_ILLEGAL_ADDRESS`), where it has one;
    /// `None` for a code newer than the table.
    pub name: Option<&'static str>,
    /// A sentence on what to do about it, where the host has one (a driver older than the PTX).
    pub hint: Option<&'static str>,
}

impl fmt::Display for DriverFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "{} failed: {name} ({})", self.call, self.code)?,
            None => write!(
                f,
                "{} failed: CUDA error {} (not in this host's table: a newer driver)",
                self.call, self.code
            )?,
        }
        match self.hint {
            Some(hint) => write!(f, " ({hint})"),
            None => Ok(()),
        }
    }
}

/// A device lost for the process ([`Detail::DeviceLost`]): which, and the driver call that
/// refused to go on, with its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceLost {
    /// The device's ordinal.
    pub ordinal: u32,
    /// The driver function that failed while the device was being recovered, as the driver's
    /// API names it (`cuDevicePrimaryCtxRetain`).
    pub call: &'static str,
    /// What it returned (for CUDA, the `CUresult`: 700 after an illegal address).
    pub code: i32,
}

impl fmt::Display for DeviceLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "device {} is lost for this process: after a kernel's fault, {} failed with code {}; no launch on \
             it succeeds until the process is restarted",
            self.ordinal, self.call, self.code
        )
    }
}

/// What a fenced kernel did that its launch answers `LaunchFailed` for, as the launcher read it
/// from the fence's flag after the kernel ran (at least one of the two). Nothing outside the
/// fence was touched; what the kernel wrote inside it is unspecified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FenceReport {
    /// The guest's kernel id.
    pub kernel_id: i64,
    /// A thread's access was outside its window, and was redirected inside it.
    pub reached_out: bool,
    /// A thread stopped at a `trap`, `brkpt` or failed device-side `assert`; the others ran on.
    pub trapped: bool,
    /// What the fence is.
    pub fence: FenceSpan,
    /// The fence's length in bytes.
    pub fence_len: u64,
}

impl fmt::Display for FenceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel {} ", self.kernel_id)?;
        if self.reached_out {
            write!(
                f,
                "reached outside its fence ({}, {} bytes): those accesses were redirected inside it",
                self.fence, self.fence_len
            )?;
        }
        if self.reached_out && self.trapped {
            f.write_str(", and ")?;
        }
        if self.trapped {
            f.write_str(
                "stopped at a trap, brkpt or failed device-side assert: each thread that reached one stopped \
                 there, and the others ran on",
            )?;
        }
        f.write_str("; what the kernel wrote is unspecified")
    }
}

/// A kernel's parameter sizes as the driver reports them (`cuFuncGetParamInfo`, or the loaded
/// PTX where the driver cannot say) against its declaration's, with a fenced kernel's hidden
/// parameters after the declared ones (`Detail::DriverParams`, feature `std`).
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DriverParams {
    /// Parameter sizes in bytes by the declaration.
    pub declared: Vec<usize>,
    /// Parameter sizes in bytes by the driver.
    pub driver: Vec<usize>,
}

#[cfg(feature = "std")]
impl fmt::Display for DriverParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the driver's parameter sizes {:?} differ from the declaration's {:?}",
            self.driver, self.declared
        )
    }
}

/// Why a fenced kernel was not launched (`Detail::FenceUnavailable`, feature `std`): the fence
/// it would have had (the guest's memory in direct mode, the staging arena in staged mode) is
/// not one the fence clamps into. Nothing was launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FenceUnavailable {
    /// The guest's kernel id.
    pub kernel_id: i64,
    /// What is wrong with the fence.
    pub problem: FenceProblem,
}

/// What is wrong with a fence ([`FenceUnavailable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum FenceProblem {
    /// The guest's memory starts at a host address not aligned to `align` bytes (direct mode:
    /// the fence clamps each access to a multiple of its width from the base).
    MisalignedMemory {
        /// The alignment the fence needs.
        align: u64,
    },
    /// The guest's memory is shorter than the shortest fence (direct mode).
    MemoryTooShort {
        /// The memory's length in bytes.
        len: u64,
        /// The shortest fence, in bytes.
        min: u64,
    },
    /// The fence's length is outside the fence's bounds (its limits are 32-bit registers).
    OutOfBounds {
        /// The fence's length in bytes.
        len: u64,
        /// The shortest fence, in bytes.
        min: u64,
        /// The longest fence, in bytes.
        max: u64,
    },
    /// The fence's length is not a multiple of `multiple` bytes (the aligned form's masks and
    /// the clamps' alignment rest on it). In direct mode the fence is the guest's memory; a wasm
    /// memory is a whole number of 64 KiB pages.
    NotMultiple {
        /// The fence's length in bytes.
        len: u64,
        /// What it must be a multiple of, in bytes.
        multiple: u64,
    },
    /// The launch's arguments do not meet a proof the fence leaves some of the kernel's
    /// accesses unclamped on (`kernel_args_cuda::fence::Proof`, an indexed one): from pointer
    /// parameter `pointer` (its `offset` in the fence), `count` elements of `size` bytes,
    /// `count` being parameter `bound`'s value, end past the fence, or the offset is not a
    /// multiple of `size`. The guest's `n` is more than its buffer holds.
    ProofFails {
        /// The pointer parameter's index.
        pointer: u32,
        /// Its offset in the fence, in bytes.
        offset: u64,
        /// The count parameter's index.
        bound: u32,
        /// Its value (more than 0: a count of 0 or less needs nothing).
        count: u64,
        /// The element's size in bytes.
        size: u64,
        /// The fence's length in bytes.
        fence_len: u64,
    },
    /// A launch of a kernel with such a proof has more threads in x (its grid's `x` times its
    /// block's) than the proof allows, so that each thread's index is a non-negative `int`.
    TooManyThreadsX {
        /// The launch's threads in x.
        threads: u64,
        /// The most allowed.
        max: u64,
    },
}

impl fmt::Display for FenceUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel {} is fenced, and ", self.kernel_id)?;
        match self.problem {
            FenceProblem::MisalignedMemory { align } => {
                write!(f, "the guest's memory starts at a host address not aligned to {align} bytes")
            }
            FenceProblem::MemoryTooShort { len, min } => {
                write!(f, "the guest's memory of {len} bytes is shorter than the shortest fence, {min} bytes")
            }
            FenceProblem::OutOfBounds { len, min, max } => write!(
                f,
                "its fence of {len} bytes is not between the shortest fence, {min} bytes, and the longest, {max} \
                 bytes"
            ),
            FenceProblem::NotMultiple { len, multiple } => {
                write!(f, "its fence of {len} bytes is not a multiple of {multiple} bytes")
            }
            FenceProblem::ProofFails { pointer, offset, bound, count, size, fence_len } => {
                if offset.checked_rem(size).is_some_and(|r| r != 0) {
                    write!(f, "parameter {pointer} (offset {offset}) is not a multiple of {size} bytes")
                } else {
                    write!(
                        f,
                        "parameter {bound} ({count}) elements of {size} bytes from parameter {pointer} \
                         (offset {offset}) end past its fence of {fence_len} bytes"
                    )
                }
            }
            FenceProblem::TooManyThreadsX { threads, max } => {
                write!(f, "the launch's {threads} threads in x are more than its bounds checks allow, {max}")
            }
        }
    }
}

/// An error from a host call: the [`Detail`] the host keeps for logs and tools, and the
/// [`AbiError`] code the guest sees, which the detail decides ([`Detail::code`]), so the two
/// can never disagree. `source()` yields the typed cause where there is one: the core's
/// [`ArgvError`], a [`RegionError`], a [`ShapeError`], a [`QuotaError`] or a declaration's
/// [`Mismatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    detail: Detail,
}

impl HostError {
    /// The error of `detail`.
    pub fn new(detail: Detail) -> HostError {
        HostError { detail }
    }

    /// An error answered with `code`, described in fixed words ([`Detail::Static`]). Never
    /// allocates.
    pub const fn fixed(code: AbiError, text: &'static str) -> HostError {
        HostError { detail: Detail::Static { code, text } }
    }

    /// An error answered with `code`, described in words made at run time
    /// ([`Detail::Message`], feature `std`).
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    pub fn msg(code: AbiError, text: impl Into<String>) -> HostError {
        HostError { detail: Detail::Message { code, text: text.into() } }
    }

    /// The ABI code the guest sees.
    pub fn code(&self) -> AbiError {
        self.detail.code()
    }

    /// What exactly went wrong.
    pub fn detail(&self) -> &Detail {
        &self.detail
    }
}

/// `InvalidArgs -9: ` and the detail.
impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.detail)
    }
}

/// What went wrong, in words, without the ABI code.
impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::Argv(e) => write!(f, "{e}"),
            Detail::ParamCount { expected, got } => {
                write!(f, "kernel takes {expected} parameters, argv has {got} arguments")
            }
            Detail::ParamSize { index, expected, got } => {
                write!(f, "argument {index} is {got} bytes but kernel parameter {index} is {expected} bytes")
            }
            Detail::Declaration(e) => write!(f, "{e}"),
            Detail::UnknownKernel { kernel_id } => write!(f, "no kernel is registered with id {kernel_id}"),
            Detail::Undeclared { kernel_id } => write!(
                f,
                "kernel {kernel_id} is registered without a declaration: only a trusted guest may launch it"
            ),
            Detail::Static { text, .. } => f.write_str(text),
            #[cfg(feature = "std")]
            Detail::Message { text, .. } => f.write_str(text),
            Detail::Region(e) => write!(f, "{e}"),
            Detail::Shape(e) => write!(f, "{e}"),
            Detail::Quota(e) => write!(f, "{e}"),
            Detail::Fenced(report) => write!(f, "{report}"),
            #[cfg(feature = "std")]
            Detail::FenceUnavailable(e) => write!(f, "{e}"),
            #[cfg(feature = "std")]
            Detail::DriverParams { kernel_id, params } => write!(f, "kernel {kernel_id}: {params}"),
            Detail::DeviceLost(lost) => write!(f, "{lost}"),
            Detail::Driver(failure) => write!(f, "{failure}"),
            #[cfg(feature = "std")]
            Detail::JitRefused { failure, log } => write!(f, "{failure}; JIT log: {log}"),
            Detail::CapabilityDisabled => f.write_str("the wasi-cuda capability is disabled for this guest"),
            Detail::NoExportedMemory => f.write_str("the guest exports no linear memory named `memory`"),
            Detail::NoDevice => f.write_str("no CUDA device: dry run, the launch was recorded but not run"),
            Detail::LauncherPanicked => f.write_str("the launcher panicked"),
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for HostError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", defmt::Display2Format(self));
    }
}

impl core::error::Error for HostError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match &self.detail {
            Detail::Argv(e) => Some(e),
            Detail::Region(e) => Some(e),
            Detail::Shape(e) => Some(e),
            Detail::Quota(e) => Some(e),
            Detail::Declaration(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ArgvError> for HostError {
    fn from(e: ArgvError) -> HostError {
        HostError::new(Detail::Argv(e))
    }
}

impl From<QuotaError> for HostError {
    fn from(e: QuotaError) -> HostError {
        HostError::new(Detail::Quota(e))
    }
}

impl From<RegionError> for HostError {
    fn from(e: RegionError) -> HostError {
        HostError::new(Detail::Region(e))
    }
}

impl From<Mismatch> for HostError {
    fn from(e: Mismatch) -> HostError {
        HostError::new(Detail::Declaration(e))
    }
}

impl From<ShapeError> for HostError {
    fn from(e: ShapeError) -> HostError {
        HostError::new(Detail::Shape(e))
    }
}

#[cfg(test)]
#[cfg(feature = "std")]
mod tests {
    use core::fmt::Write as _;

    use std::error::Error as _;

    use kernel_args_core::{ArgTag, ErrorKind};

    use super::*;
    use crate::checks::{Bound, Dimension};

    #[test]
    fn a_lost_device_is_launch_failed_and_says_to_restart_the_process() {
        let lost = DeviceLost { ordinal: 3, call: "cuDevicePrimaryCtxRetain", code: 700 };
        let e = HostError::new(Detail::DeviceLost(lost));
        assert_eq!(e.code(), AbiError::LaunchFailed);
        assert_eq!(
            e.to_string(),
            "LaunchFailed -5: device 3 is lost for this process: after a kernel's fault, \
             cuDevicePrimaryCtxRetain failed with code 700; no launch on it succeeds until the process is restarted"
        );
    }

    #[cfg(feature = "std")]
    #[test]
    fn an_unavailable_fence_is_launch_failed_and_says_what_is_wrong() {
        let cases = [
            (
                FenceProblem::MisalignedMemory { align: 16 },
                "the guest's memory starts at a host address not aligned to 16 bytes",
            ),
            (
                FenceProblem::MemoryTooShort { len: 255, min: 256 },
                "the guest's memory of 255 bytes is shorter than the shortest fence, 256 bytes",
            ),
            (
                FenceProblem::OutOfBounds { len: 1 << 33, min: 256, max: 1 << 32 },
                "its fence of 8589934592 bytes is not between the shortest fence, 256 bytes, and the longest, \
                 4294967296 bytes",
            ),
            (
                FenceProblem::NotMultiple { len: 65540, multiple: 16 },
                "its fence of 65540 bytes is not a multiple of 16 bytes",
            ),
        ];
        for (problem, said) in cases {
            let e = HostError::new(Detail::FenceUnavailable(FenceUnavailable { kernel_id: 3, problem }));
            assert_eq!(e.code(), AbiError::LaunchFailed);
            assert_eq!(e.detail().to_string(), format!("kernel 3 is fenced, and {said}"));
        }
    }

    #[test]
    fn arguments_a_proof_does_not_cover_are_invalid_and_say_which() {
        let proof = |offset, count| FenceProblem::ProofFails {
            pointer: 0,
            offset,
            bound: 3,
            count,
            size: 4,
            fence_len: 4096,
        };
        let past = proof(256, 1000);
        let misaligned = proof(258, 10);
        let wide = FenceProblem::TooManyThreadsX { threads: 1 << 32, max: 1 << 31 };
        let cases = [
            (
                past,
                AbiError::InvalidArgs,
                "parameter 3 (1000) elements of 4 bytes from parameter 0 (offset 256) end past its fence of 4096 bytes",
            ),
            (misaligned, AbiError::InvalidArgs, "parameter 0 (offset 258) is not a multiple of 4 bytes"),
            (
                wide,
                AbiError::InvalidDimensions,
                "the launch's 4294967296 threads in x are more than its bounds checks allow, 2147483648",
            ),
        ];
        for (problem, code, said) in cases {
            let e = HostError::new(Detail::FenceUnavailable(FenceUnavailable { kernel_id: 3, problem }));
            assert_eq!(e.code(), code);
            assert_eq!(e.detail().to_string(), format!("kernel 3 is fenced, and {said}"));
        }
    }

    #[test]
    fn a_fence_report_says_which_reasons_and_what_the_fence_was() {
        let report = FenceReport {
            kernel_id: 7,
            reached_out: true,
            trapped: false,
            fence: FenceSpan::GuestMemory,
            fence_len: 65_536,
        };
        let e = HostError::new(Detail::Fenced(report));
        assert_eq!(e.code(), AbiError::LaunchFailed);
        assert_eq!(
            e.to_string(),
            "LaunchFailed -5: kernel 7 reached outside its fence (the guest's linear memory, 65536 bytes): those \
             accesses were redirected inside it; what the kernel wrote is unspecified"
        );
        let both = FenceReport { trapped: true, fence: FenceSpan::StagingArena, fence_len: 256, ..report };
        assert_eq!(
            Detail::Fenced(both).to_string(),
            "kernel 7 reached outside its fence (the launch's staging arena, 256 bytes): those accesses were \
             redirected inside it, and stopped at a trap, brkpt or failed device-side assert: each thread that \
             reached one stopped there, and the others ran on; what the kernel wrote is unspecified"
        );
        let trapped = FenceReport { reached_out: false, trapped: true, ..report };
        assert_eq!(
            Detail::Fenced(trapped).to_string(),
            "kernel 7 stopped at a trap, brkpt or failed device-side assert: each thread that reached one stopped \
             there, and the others ran on; what the kernel wrote is unspecified"
        );
    }

    #[test]
    fn codes_names_and_round_trips() {
        for (i, e) in AbiError::ALL.into_iter().enumerate() {
            assert_eq!(e.code(), -(i as i32) - 1, "ALL is in ABI order");
            assert_eq!(AbiError::try_from(e.code()), Ok(e));
            assert_eq!(e.to_string(), format!("{} {}", e.name(), e.code()));
        }
        for code in [0, -11, 1, i32::MIN, i32::MAX] {
            assert_eq!(AbiError::try_from(code), Err(UnknownAbiCode(code)));
        }
        assert_eq!(UnknownAbiCode(-11).to_string(), "-11 is not a wasi-cuda ABI error code");
    }

    #[test]
    fn argv_errors_keep_their_detail() {
        let argv = ArgvError::new(ErrorKind::UnknownTag { tag: 0x42 }, 3, 17);
        let e = HostError::from(argv);
        assert_eq!(e.code(), AbiError::InvalidArgs);
        assert_eq!(e.to_string(), "InvalidArgs -9: unknown tag 0x42 at byte 17 (record 3)");
        let source = e.source().unwrap().downcast_ref::<ArgvError>().unwrap();
        assert_eq!((source.index(), source.offset()), (3, 17));
        assert_eq!(AbiError::from(argv), AbiError::InvalidArgs);
        let truncated =
            ArgvError::new(ErrorKind::TruncatedRecord { tag: ArgTag::U64, needed: 8, present: 2 }, 0, 0);
        assert_eq!(AbiError::from(truncated), AbiError::InvalidArgs);
    }

    #[test]
    fn typed_details_map_to_their_codes() {
        let region = HostError::from(RegionError::NegativeLength { args_len: -3 });
        assert_eq!(region.code(), AbiError::InvalidPointer);
        assert_eq!(region.to_string(), "InvalidPointer -2: args_len -3 is negative");
        assert!(region.source().unwrap().is::<RegionError>());

        let shape = ShapeError { dimension: Dimension::GridY, value: 70_000, bound: Bound::AtMost(65_535) };
        let e = HostError::from(shape);
        assert_eq!(e.code(), AbiError::InvalidDimensions);
        assert_eq!(e.detail(), &Detail::Shape(shape));
        assert_eq!(e.to_string(), "InvalidDimensions -8: grid.y is 70000, must be at most 65535");
        assert!(e.source().unwrap().is::<ShapeError>());

        let none = HostError::new(Detail::NoDevice);
        assert!(none.source().is_none());
        assert!(none.to_string().starts_with("NotAvailable -1: no CUDA device"));
        let msg = HostError::msg(AbiError::LaunchFailed, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
        assert_eq!(msg.to_string(), "LaunchFailed -5: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
        let fixed = HostError::fixed(AbiError::QuotaExceeded, "stream pool exhausted");
        assert_eq!(fixed.code(), AbiError::QuotaExceeded);
        assert_eq!(
            fixed.detail(),
            &Detail::Static { code: AbiError::QuotaExceeded, text: "stream pool exhausted" }
        );
        assert_eq!(fixed.to_string(), "QuotaExceeded -6: stream pool exhausted");
        let count = HostError::new(Detail::ParamCount { expected: 4, got: 3 });
        assert_eq!(count.code(), AbiError::InvalidArgs);
        assert_eq!(count.to_string(), "InvalidArgs -9: kernel takes 4 parameters, argv has 3 arguments");
    }

    #[test]
    fn messages_format_into_a_fixed_buffer() {
        // What a host without an allocator does: write the message with core::fmt into a
        // buffer of its own; a buffer too small is an error from `write!`, not a truncation.
        let e = HostError::from(ShapeError {
            dimension: Dimension::BlockX,
            value: 2048,
            bound: Bound::AtMost(1024),
        });
        let mut line: heapless::String<64> = heapless::String::new();
        write!(line, "{e}").unwrap();
        assert_eq!(line.as_str(), "InvalidDimensions -8: block.x is 2048, must be at most 1024");
        let mut short: heapless::String<16> = heapless::String::new();
        assert!(write!(short, "{e}").is_err());
    }
}
