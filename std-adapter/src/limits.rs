//! Every limit the host enforces beyond the wire format's, in one place: the launch-shape
//! limits checked by [`check_launch_shape`](crate::check_launch_shape), and the sizes of a
//! kernel [`Declaration`](crate::Declaration). The argv caps are `kernel-args-core`'s
//! (`MAX_KERNEL_ARGS`, `MAX_KERNEL_ARGS_BYTES`), enforced by its parser; a declaration has at
//! most `MAX_KERNEL_ARGS` parameters too.
//!
//! The shape limits are those of every CUDA device of compute capability 5.0 and later, so a
//! shape the host accepts is one the driver can launch on any of them (a smaller device may
//! still refuse it with `LaunchFailed`). Only the shared-memory cap is configurable
//! ([`LaunchLimits`](crate::LaunchLimits)), because it is the one that differs between devices.
//! The quotas' defaults are here too; the quotas themselves are [`Quota`](crate::Quota).

/// Every grid and block dimension is at least 1: a zero dimension launches nothing, and a
/// negative one is a guest bug.
pub const MIN_DIM: u32 = 1;

/// Largest grid x dimension: 2³¹ − 1 blocks.
pub const MAX_GRID_X: u32 = (1 << 31) - 1;

/// Largest grid y dimension.
pub const MAX_GRID_Y: u32 = 65_535;

/// Largest grid z dimension.
pub const MAX_GRID_Z: u32 = 65_535;

/// Largest block x dimension.
pub const MAX_BLOCK_X: u32 = 1024;

/// Largest block y dimension.
pub const MAX_BLOCK_Y: u32 = 1024;

/// Largest block z dimension.
pub const MAX_BLOCK_Z: u32 = 64;

/// Largest number of threads in one block (`block.x * block.y * block.z`).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// Default cap on dynamic shared memory per block: 227 KiB, the most a current GPU
/// (compute capability 9.0) lets one block opt into.
pub const DEFAULT_MAX_SHARED_MEM_BYTES: u32 = 227 * 1024;

/// Default quota on threads per launch (`grid × block`): 2³², which a launch of 4,194,304 blocks
/// of 1024 threads reaches. Every shape the corpus and the examples launch is far below it; an
/// embedder serving many guests sets its own ([`LaunchLimits`](crate::LaunchLimits)).
pub const DEFAULT_MAX_THREADS_PER_LAUNCH: u64 = 1 << 32;

/// Default quota on the device memory one launch's windows are copied into in staged mode:
/// 1 GiB.
pub const DEFAULT_MAX_STAGING_BYTES: u64 = 1 << 30;

/// Default budget of one thread of a fenced kernel: the backward branches (loop iterations) it
/// may take, 2²⁴ (16,777,216). A thread of a grid-stride loop over 2³¹ elements launched as one
/// thread would take 2³¹; the corpus's kernels at the sizes its tests launch take at most a few
/// thousand, and a kernel launched with one thread per element takes a handful.
pub const DEFAULT_MAX_BACK_EDGES_PER_THREAD: u32 = 1 << 24;

/// The longest declaration, in bytes: enough for `MAX_KERNEL_ARGS` parameters of 16 bytes each.
pub const MAX_DECLARATION_BYTES: usize = 2048;

/// The longest name (of a kernel or a parameter) in a declaration, in bytes.
pub const MAX_NAME_BYTES: usize = 32;

/// The longest extent (the count in `&[T; count]`) in a declaration, in bytes.
pub const MAX_EXTENT_BYTES: usize = 64;

/// The most operations (operands and operators) all the extents of one declaration have
/// together: `rows * cols` is three.
pub const MAX_EXTENT_OPS: usize = 256;

/// The deepest an extent's parentheses nest.
pub const MAX_EXTENT_DEPTH: usize = 8;
