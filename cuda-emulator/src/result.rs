//! The `CUresult` codes the emulator returns, with `cuda.h`'s names and values.
//!
//! A `CUresult` crosses the C ABI as a plain C `int`, so it is an [`i32`] here too: the
//! launcher reads it the same way from the real driver, which may return codes its headers
//! lack.

/// A `CUresult`: `0` for success, else an error code.
pub type CuResult = i32;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CuResult = 0;
/// `CUDA_ERROR_INVALID_VALUE`: an argument is out of range (also: a null out-parameter).
pub const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
/// `CUDA_ERROR_OUT_OF_MEMORY`: the device's address range has no room for an allocation.
pub const CUDA_ERROR_OUT_OF_MEMORY: CuResult = 2;
/// `CUDA_ERROR_NOT_INITIALIZED`: `cuInit` has not succeeded yet.
pub const CUDA_ERROR_NOT_INITIALIZED: CuResult = 3;
/// `CUDA_ERROR_INVALID_DEVICE`: no device with that ordinal.
pub const CUDA_ERROR_INVALID_DEVICE: CuResult = 101;
/// `CUDA_ERROR_INVALID_CONTEXT`: no current context, or a context that does not exist (any
/// more).
pub const CUDA_ERROR_INVALID_CONTEXT: CuResult = 201;
/// `CUDA_ERROR_INVALID_PTX`: the PTX of `cuModuleLoadDataEx` does not compile.
pub const CUDA_ERROR_INVALID_PTX: CuResult = 218;
/// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`: the PTX's `.version` is newer than the driver's.
pub const CUDA_ERROR_UNSUPPORTED_PTX_VERSION: CuResult = 222;
/// `CUDA_ERROR_INVALID_HANDLE`: a module, function or stream handle that does not exist (any
/// more) or belongs to another context than the current one.
pub const CUDA_ERROR_INVALID_HANDLE: CuResult = 400;
/// `CUDA_ERROR_NOT_FOUND`: the module has no `.entry` of that name.
pub const CUDA_ERROR_NOT_FOUND: CuResult = 500;
/// `CUDA_ERROR_ILLEGAL_ADDRESS`: a kernel accessed memory it may not; sticky, the context is
/// unusable until it is reset or destroyed.
pub const CUDA_ERROR_ILLEGAL_ADDRESS: CuResult = 700;
/// `CUDA_ERROR_MISALIGNED_ADDRESS`: a kernel's load or store at an address that is not a
/// multiple of its size; sticky, like [`CUDA_ERROR_ILLEGAL_ADDRESS`].
pub const CUDA_ERROR_MISALIGNED_ADDRESS: CuResult = 716;
/// A kernel stopped by `trap` (sticky).
pub const CUDA_ERROR_LAUNCH_FAILED: CuResult = 719;
/// A kernel stopped by a failed device-side `assert` (sticky).
pub const CUDA_ERROR_ASSERT: CuResult = 710;
/// `CUDA_ERROR_NOT_READY`: `cuStreamQuery` on a stream whose work has not all run.
pub const CUDA_ERROR_NOT_READY: CuResult = 600;
/// `CUDA_ERROR_LAUNCH_TIMEOUT`: a kernel ran too long (sticky).
pub const CUDA_ERROR_LAUNCH_TIMEOUT: CuResult = 702;
/// `CUDA_ERROR_NOT_SUPPORTED`: a module uses an instruction the emulator does not interpret
/// (refused at load, the log naming the line).
pub const CUDA_ERROR_NOT_SUPPORTED: CuResult = 801;
/// `CUDA_ERROR_UNKNOWN`: the emulator itself failed (a caught panic).
pub const CUDA_ERROR_UNKNOWN: CuResult = 999;

/// The codes `cuda.h` documents as leaving the context unusable ("the context cannot be used,
/// so it must be destroyed", or the process relaunched): uncorrectable ECC (214) and NVLink
/// (220) errors, a contained exception (226, `CUDA_ERROR_CONTAINED`), an illegal address
/// (700), a launch timeout (702), a device assert (710), the hardware stack, instruction,
/// alignment, address space and PC faults (714 to 718), a failed launch (719), a tensor memory
/// leak (721, `CUDA_ERROR_TENSOR_MEMORY_LEAK`) and an MPS client the server terminated (810,
/// `CUDA_ERROR_MPS_CLIENT_TERMINATED`). The emulator gives such a code to the context whenever
/// it answers one, injected failures included, so every later call in the context answers it.
pub const STICKY: &[CuResult] = &[214, 220, 226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810];
