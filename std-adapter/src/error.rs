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

use std::fmt;

use kernel_args_core::{ArgvError, ErrorCode};

/// The wasi-cuda ABI error codes. The discriminants are the stable codes the host function
/// returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

impl std::error::Error for AbiError {}

/// The code is not one of the ABI's ten error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownAbiCode(pub i32);

impl fmt::Display for UnknownAbiCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not a wasi-cuda ABI error code", self.0)
    }
}

impl std::error::Error for UnknownAbiCode {}

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
    /// Anything else, in words.
    Message(String),
}

/// An error from a host call: the [`AbiError`] code the guest sees, plus the [`Detail`] the
/// host keeps for logs and tools. `source()` yields the core's [`ArgvError`] where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    code: AbiError,
    detail: Detail,
}

impl HostError {
    /// An error with `code` and `detail`.
    pub fn new(code: AbiError, detail: Detail) -> HostError {
        HostError { code, detail }
    }

    /// An error with `code` and a message.
    pub fn msg(code: AbiError, message: impl Into<String>) -> HostError {
        HostError { code, detail: Detail::Message(message.into()) }
    }

    /// The ABI code the guest sees.
    pub fn code(&self) -> AbiError {
        self.code
    }

    /// What exactly went wrong.
    pub fn detail(&self) -> &Detail {
        &self.detail
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.code)?;
        match &self.detail {
            Detail::Argv(e) => write!(f, "{e}"),
            Detail::ParamCount { expected, got } => {
                write!(f, "kernel takes {expected} parameters, argv has {got} arguments")
            }
            Detail::ParamSize { index, expected, got } => {
                write!(f, "argument {index} is {got} bytes but kernel parameter {index} is {expected} bytes")
            }
            Detail::Message(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.detail {
            Detail::Argv(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ArgvError> for HostError {
    fn from(e: ArgvError) -> HostError {
        HostError { code: e.code().into(), detail: Detail::Argv(e) }
    }
}
