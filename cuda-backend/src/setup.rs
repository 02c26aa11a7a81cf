//! The embedder's errors: what refuses a kernel's registration or a device's opening. They are
//! the embedder's (or the machine's) to fix, so they are their own type, never an ABI code a
//! guest is answered with; a guest's launch of a kernel that could not be registered is
//! `InvalidKernel`, like any unknown id.

use std::fmt;

use kernel_args::DriverParams;

use crate::fence::FenceError;
use crate::signature::PtxParseError;

/// Why registering a kernel or opening a device was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetupError {
    /// Kernel `id` cannot be registered, for `problem`.
    Kernel {
        /// The kernel id it was to be registered as.
        id: i64,
        /// What is wrong with it.
        problem: KernelProblem,
    },
    /// The driver library cannot be loaded, lacks an entry point this crate needs, or refused
    /// to initialise (no kernel driver, a link stub instead of a driver).
    Driver {
        /// The library's path or name, as given.
        library: String,
        /// What went wrong, in the loader's or the driver's words.
        reason: String,
    },
    /// The driver reports no device of this ordinal.
    NoDevice {
        /// The ordinal asked for.
        ordinal: u32,
        /// How many devices the driver reports.
        count: i32,
    },
    /// A driver call made while opening the device failed.
    Call {
        /// The driver function, as `cuda.h` names it.
        call: &'static str,
        /// The `CUresult` it returned.
        code: i32,
        /// Its `cuda.h` name, where this crate's table knows the code.
        name: Option<&'static str>,
    },
    /// Direct pointers were forced on a device that cannot read pageable host memory (the
    /// kernel would fault).
    DirectUnsupported {
        /// The device's ordinal.
        ordinal: u32,
        /// The device's name.
        device: String,
    },
}

/// What is wrong with a kernel an embedder registers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelProblem {
    /// The PTX text has a NUL byte at this byte offset (`cuModuleLoadData` reads a C string).
    NulInPtx {
        /// Where the NUL byte is.
        position: usize,
    },
    /// The entry name is empty.
    EmptyEntry,
    /// The entry name has a NUL byte.
    NulInEntry,
    /// The PTX's parameter lists cannot be read, so the declaration cannot be checked against
    /// them.
    PtxUnreadable(PtxParseError),
    /// The PTX declares no entry of this name.
    NoEntry {
        /// The entry name asked for.
        entry: String,
    },
    /// The declaration and the PTX entry have different numbers of parameters.
    ParamCount {
        /// Parameters the declaration has.
        declared: usize,
        /// Parameters the PTX entry has.
        ptx: usize,
        /// The entry's name.
        entry: String,
    },
    /// A parameter's size or alignment differs between the declaration and the PTX entry.
    ParamLayout {
        /// The parameter's 0-based index.
        index: usize,
        /// Its name in the declaration.
        name: String,
        /// Size and alignment by the declaration.
        declared: (usize, usize),
        /// Size and alignment by the PTX.
        ptx: (usize, usize),
        /// Its name in the PTX.
        ptx_name: String,
    },
    /// No kernel is registered with this id (what `CudaDevice::verify` says of an unknown id).
    NotRegistered,
    /// The driver refused the kernel's module or entry, or the device cannot load it now.
    Load(String),
    /// The PTX uses what the fence cannot cover (a call, a texture, a tensor-core load, ...),
    /// named by its line; register it with
    /// [`Sandbox::Unfenced`](crate::Sandbox::Unfenced) only for kernels trusted as the host is.
    Fence(FenceError),
    /// The driver's parameter list (`cuFuncGetParamInfo`) differs from the declaration (with
    /// the fence's four hidden parameters after it, for a fenced kernel).
    DriverParams(DriverParams),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Kernel { id, problem } => write!(f, "kernel {id}: {problem}"),
            SetupError::Driver { library, reason } => {
                write!(f, "the CUDA driver library {library} cannot be used: {reason}")
            }
            SetupError::NoDevice { ordinal, count } => {
                write!(f, "no CUDA device {ordinal}: the driver reports {count}")
            }
            SetupError::Call { call, code, name: Some(name) } => write!(f, "{call} failed: {name} ({code})"),
            SetupError::Call { call, code, name: None } => {
                write!(f, "{call} failed: CUDA error {code} (not in this host's table: a newer driver)")
            }
            SetupError::DirectUnsupported { ordinal, device } => write!(
                f,
                "direct pointers need CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, which device {ordinal} \
                 ({device}) does not report"
            ),
        }
    }
}

impl fmt::Display for KernelProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelProblem::NulInPtx { position } => write!(f, "PTX has a NUL byte at {position}"),
            KernelProblem::EmptyEntry => f.write_str("empty entry name"),
            KernelProblem::NulInEntry => f.write_str("entry name has a NUL byte"),
            KernelProblem::PtxUnreadable(e) => {
                write!(f, "the PTX's parameter lists cannot be read to check the declaration: {e}")
            }
            KernelProblem::NoEntry { entry } => write!(f, "the PTX declares no entry {entry}"),
            KernelProblem::ParamCount { declared, ptx, entry } => {
                write!(f, "the declaration has {declared} parameters, the PTX entry {entry} has {ptx}")
            }
            KernelProblem::ParamLayout { index, name, declared, ptx, ptx_name } => write!(
                f,
                "parameter {index} ({name}) is {} bytes aligned to {} by the declaration, {} bytes aligned to {} \
                 by the PTX ({ptx_name})",
                declared.0, declared.1, ptx.0, ptx.1
            ),
            KernelProblem::Fence(e) => write!(f, "the fence cannot cover it: {e}"),
            KernelProblem::NotRegistered => f.write_str("no kernel is registered with this id"),
            KernelProblem::Load(reason) => write!(f, "its module cannot be loaded: {reason}"),
            KernelProblem::DriverParams(params) => write!(f, "{params}"),
        }
    }
}

impl std::error::Error for SetupError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_kernel_and_the_call() {
        let e = SetupError::Kernel { id: 7, problem: KernelProblem::NulInPtx { position: 3 } };
        assert_eq!(e.to_string(), "kernel 7: PTX has a NUL byte at 3");
        let e = SetupError::Call { call: "cuInit", code: 100, name: Some("CUDA_ERROR_NO_DEVICE") };
        assert_eq!(e.to_string(), "cuInit failed: CUDA_ERROR_NO_DEVICE (100)");
        let e = SetupError::Call { call: "cuInit", code: 4242, name: None };
        assert!(e.to_string().contains("4242"));
        let e = SetupError::NoDevice { ordinal: 1, count: 1 };
        assert_eq!(e.to_string(), "no CUDA device 1: the driver reports 1");
    }
}
