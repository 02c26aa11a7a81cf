//! CUDA driver result codes, kept as integers, and their mapping to the ABI's error codes.
//!
//! The driver returns `CUresult`, a C enum. This crate never turns it into a Rust enum: cust
//! 0.3.2's raw bindings declare `CUresult` as a `#[repr(i32)]` Rust enum generated from the
//! CUDA 11.4 headers, so a code that a newer driver returns and 11.4 did not know (46
//! `CUDA_ERROR_DEVICE_UNAVAILABLE`, 225 `CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC`, 912
//! `CUDA_ERROR_INVALID_CLUSTER_SIZE`, ...) would be an invalid enum value the moment a function
//! declared to return it came back: undefined behaviour, before any `match` could catch it.
//! The launcher therefore declares every driver function it calls with an `i32` return type
//! (see `driver`), and this module names and maps the codes: the driver layer returns its
//! own [`CuError`], and the ABI's [`HostError`] and the embedder's [`SetupError`] are made from it
//! here, above that layer.
//!
//! The names are this crate's own table (from `cuda.h` of CUDA 12.x). Nothing here calls the
//! driver: cust's `Display` for its error calls `cuGetErrorString`, which is exactly what must
//! not run when the driver is missing or a stub.

use kernel_args::{AbiError, Detail, DriverFailure, HostError};

use crate::driver::sys::{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_FOUND};
use crate::driver::{CuError, LoadError};
use crate::setup::SetupError;

impl CuError {
    /// The host error for this failure in `phase` (see [`driver_error`]).
    pub fn at(self, phase: Phase) -> HostError {
        driver_error(self.call, self.code, phase)
    }

    /// The embedder's error for this failure while opening a device.
    pub fn setup(self) -> SetupError {
        SetupError::Call { call: self.call, code: self.code, name: cu_error_name(self.code) }
    }
}

impl From<LoadError> for SetupError {
    fn from(e: LoadError) -> SetupError {
        let (library, reason) = match e {
            LoadError::Open { library, reason } => (library, format!("it could not be loaded: {reason}")),
            LoadError::Missing { library, symbol } => {
                (library, format!("it has no {symbol}: driver too old"))
            }
            LoadError::Call { library, error } => (library, error.setup().to_string()),
        };
        SetupError::Driver { library, reason }
    }
}

/// The `cuda.h` name of a driver result code, or `None` for a code this table does not know
/// (a newer driver's).
pub fn cu_error_name(code: i32) -> Option<&'static str> {
    Some(match code {
        0 => "CUDA_SUCCESS",
        1 => "CUDA_ERROR_INVALID_VALUE",
        2 => "CUDA_ERROR_OUT_OF_MEMORY",
        3 => "CUDA_ERROR_NOT_INITIALIZED",
        4 => "CUDA_ERROR_DEINITIALIZED",
        5 => "CUDA_ERROR_PROFILER_DISABLED",
        6 => "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
        7 => "CUDA_ERROR_PROFILER_ALREADY_STARTED",
        8 => "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
        34 => "CUDA_ERROR_STUB_LIBRARY",
        46 => "CUDA_ERROR_DEVICE_UNAVAILABLE",
        100 => "CUDA_ERROR_NO_DEVICE",
        101 => "CUDA_ERROR_INVALID_DEVICE",
        102 => "CUDA_ERROR_DEVICE_NOT_LICENSED",
        200 => "CUDA_ERROR_INVALID_IMAGE",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        202 => "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
        205 => "CUDA_ERROR_MAP_FAILED",
        206 => "CUDA_ERROR_UNMAP_FAILED",
        207 => "CUDA_ERROR_ARRAY_IS_MAPPED",
        208 => "CUDA_ERROR_ALREADY_MAPPED",
        209 => "CUDA_ERROR_NO_BINARY_FOR_GPU",
        210 => "CUDA_ERROR_ALREADY_ACQUIRED",
        211 => "CUDA_ERROR_NOT_MAPPED",
        212 => "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
        213 => "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
        214 => "CUDA_ERROR_ECC_UNCORRECTABLE",
        215 => "CUDA_ERROR_UNSUPPORTED_LIMIT",
        216 => "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
        217 => "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        218 => "CUDA_ERROR_INVALID_PTX",
        219 => "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
        220 => "CUDA_ERROR_NVLINK_UNCORRECTABLE",
        221 => "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
        222 => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        223 => "CUDA_ERROR_JIT_COMPILATION_DISABLED",
        224 => "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
        225 => "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
        226 => "CUDA_ERROR_CONTAINED",
        300 => "CUDA_ERROR_INVALID_SOURCE",
        301 => "CUDA_ERROR_FILE_NOT_FOUND",
        302 => "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
        303 => "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
        304 => "CUDA_ERROR_OPERATING_SYSTEM",
        400 => "CUDA_ERROR_INVALID_HANDLE",
        401 => "CUDA_ERROR_ILLEGAL_STATE",
        402 => "CUDA_ERROR_LOSSY_QUERY",
        500 => "CUDA_ERROR_NOT_FOUND",
        600 => "CUDA_ERROR_NOT_READY",
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
        701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        702 => "CUDA_ERROR_LAUNCH_TIMEOUT",
        703 => "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
        704 => "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
        705 => "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
        708 => "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
        709 => "CUDA_ERROR_CONTEXT_IS_DESTROYED",
        710 => "CUDA_ERROR_ASSERT",
        711 => "CUDA_ERROR_TOO_MANY_PEERS",
        712 => "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        713 => "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        714 => "CUDA_ERROR_HARDWARE_STACK_ERROR",
        715 => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        716 => "CUDA_ERROR_MISALIGNED_ADDRESS",
        717 => "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        718 => "CUDA_ERROR_INVALID_PC",
        719 => "CUDA_ERROR_LAUNCH_FAILED",
        720 => "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
        721 => "CUDA_ERROR_TENSOR_MEMORY_LEAK",
        800 => "CUDA_ERROR_NOT_PERMITTED",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        802 => "CUDA_ERROR_SYSTEM_NOT_READY",
        803 => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        804 => "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
        805 => "CUDA_ERROR_MPS_CONNECTION_FAILED",
        806 => "CUDA_ERROR_MPS_RPC_FAILURE",
        807 => "CUDA_ERROR_MPS_SERVER_NOT_READY",
        808 => "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
        809 => "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
        810 => "CUDA_ERROR_MPS_CLIENT_TERMINATED",
        811 => "CUDA_ERROR_CDP_NOT_SUPPORTED",
        812 => "CUDA_ERROR_CDP_VERSION_MISMATCH",
        900 => "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        901 => "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
        902 => "CUDA_ERROR_STREAM_CAPTURE_MERGE",
        903 => "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
        904 => "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
        905 => "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
        906 => "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
        907 => "CUDA_ERROR_CAPTURED_EVENT",
        908 => "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
        909 => "CUDA_ERROR_TIMEOUT",
        910 => "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
        911 => "CUDA_ERROR_EXTERNAL_DEVICE",
        912 => "CUDA_ERROR_INVALID_CLUSTER_SIZE",
        913 => "CUDA_ERROR_FUNCTION_NOT_LOADED",
        914 => "CUDA_ERROR_INVALID_RESOURCE_TYPE",
        915 => "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
        999 => "CUDA_ERROR_UNKNOWN",
        _ => return None,
    })
}

/// What the host was doing when a driver call failed; decides the ABI code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Loading a module from PTX.
    ModuleLoad,
    /// Looking up the kernel's entry in its module.
    GetFunction,
    /// Staging, launching, synchronising.
    Launch,
}

/// Whether `code` is one of the driver's sticky errors: a fault during a kernel's execution
/// that leaves the context unusable, so that every later call in it returns the same code
/// (`cuda.h`: "the context cannot be used, so it must be destroyed").
pub fn is_sticky(code: i32) -> bool {
    matches!(code, 214 | 220 | 226 | 700 | 702 | 710 | 714 | 715 | 716 | 717 | 718 | 719 | 721 | 810)
}

/// The ABI code for driver result `code` returned in `phase`.
pub fn abi_code(phase: Phase, code: i32) -> AbiError {
    match phase {
        Phase::ModuleLoad => match code {
            // The host has no working JIT (221: not found, 223: disabled), or one older than
            // the PTX's `.version` (222: an old driver): nothing is wrong with the kernel, CUDA
            // just cannot run it here, now.
            221..=223 => AbiError::NotAvailable,
            // The image or PTX itself.
            200 | 209 | 218 | 300 | 302 | 303 => AbiError::MalformedPtx,
            _ => AbiError::LaunchFailed,
        },
        Phase::GetFunction => match code {
            CUDA_ERROR_NOT_FOUND | CUDA_ERROR_INVALID_VALUE => AbiError::InvalidKernel,
            _ => AbiError::LaunchFailed,
        },
        Phase::Launch => AbiError::LaunchFailed,
    }
}

/// The host error for driver result `code` of `call` in `phase`: [`Detail::Driver`], with the
/// mapped ABI code, the call, the code and its name (by this crate's table, never by asking the
/// driver).
pub fn driver_error(call: &'static str, code: i32, phase: Phase) -> HostError {
    let hint = (phase == Phase::ModuleLoad && code == 222).then_some(
        "the driver is older than the PTX's .version: update the driver, or register PTX of an older .version",
    );
    let failure = DriverFailure { abi: abi_code(phase, code), call, code, name: cu_error_name(code), hint };
    HostError::new(Detail::Driver(failure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_by_phase() {
        assert_eq!(abi_code(Phase::ModuleLoad, 218), AbiError::MalformedPtx);
        assert_eq!(abi_code(Phase::ModuleLoad, 222), AbiError::NotAvailable);
        assert_eq!(abi_code(Phase::ModuleLoad, 221), AbiError::NotAvailable);
        assert_eq!(abi_code(Phase::ModuleLoad, 223), AbiError::NotAvailable);
        assert_eq!(abi_code(Phase::ModuleLoad, 2), AbiError::LaunchFailed);
        assert_eq!(abi_code(Phase::GetFunction, CUDA_ERROR_NOT_FOUND), AbiError::InvalidKernel);
        assert_eq!(abi_code(Phase::Launch, 700), AbiError::LaunchFailed);
        assert!(is_sticky(700) && is_sticky(719) && !is_sticky(2) && !is_sticky(9999));
    }

    #[test]
    fn messages_name_the_call_and_the_code_without_the_driver() {
        let e = driver_error("cuModuleLoadDataEx", 218, Phase::ModuleLoad);
        assert_eq!(e.to_string(), "MalformedPtx -4: cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218)");
        // Typed: the embedder can branch on the call and the driver's code.
        let failure = DriverFailure {
            abi: AbiError::MalformedPtx,
            call: "cuModuleLoadDataEx",
            code: 218,
            name: Some("CUDA_ERROR_INVALID_PTX"),
            hint: None,
        };
        assert_eq!(e.detail(), &Detail::Driver(failure));
        let old = driver_error("cuModuleLoadDataEx", 222, Phase::ModuleLoad);
        assert_eq!(old.code(), AbiError::NotAvailable);
        assert!(old.to_string().ends_with("(222) (the driver is older than the PTX's .version: update the driver, or register PTX of an older .version)"), "{old}");
        // A code newer than any table: still an integer, still mapped, still printable.
        let e = driver_error("cuLaunchKernel", 4242, Phase::Launch);
        assert_eq!(e.code(), AbiError::LaunchFailed);
        assert!(e.to_string().contains("CUDA error 4242"), "{e}");
        assert_eq!(cu_error_name(i32::MIN), None);
        assert_eq!(cu_error_name(912), Some("CUDA_ERROR_INVALID_CLUSTER_SIZE"));
    }
}
