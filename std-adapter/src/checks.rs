//! The checks the host makes before the parser sees a byte: the argument region and the
//! launch shape.
//!
//! Both take the values exactly as a guest passes them to `wasi_cuda_launch` (`i32`), so
//! that no conversion can happen before the check.
//!
//! ```
//! use kernel_args::{ArgsRegion, Dimension, LaunchLimits, RegionError, check_args_region, check_launch_shape};
//!
//! // 32 bytes at offset 1024 of a 64 KiB memory.
//! let region = check_args_region(1024, 32, 65_536)?;
//! assert_eq!(region.range(), 1024..1056);
//! // A region that ends one byte past the memory is refused before anything is read.
//! assert_eq!(
//!     check_args_region(65_520, 17, 65_536),
//!     Err(RegionError::PastMemory { args_ptr: 65_520, args_len: 17, memory_len: 65_536 })
//! );
//!
//! let shape = check_launch_shape([4, 1, 1], [256, 1, 1], 0, &LaunchLimits::default())?;
//! assert_eq!(shape.block, [256, 1, 1]);
//! let err = check_launch_shape([4, 1, 1], [256, 1, 65], 0, &LaunchLimits::default()).unwrap_err();
//! assert_eq!(err.dimension, Dimension::BlockZ);
//! assert_eq!(err.to_string(), "block.z is 65, must be at most 64");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use core::ops::Range;

use crate::limits::{
    DEFAULT_MAX_BACK_EDGES_PER_THREAD, DEFAULT_MAX_SHARED_MEM_BYTES, DEFAULT_MAX_STAGING_BYTES,
    DEFAULT_MAX_THREADS_PER_LAUNCH, MAX_BLOCK_X, MAX_BLOCK_Y, MAX_BLOCK_Z, MAX_GRID_X, MAX_GRID_Y,
    MAX_GRID_Z, MAX_THREADS_PER_BLOCK, MIN_DIM,
};

/// The guest's argument buffer: a checked region of its linear memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArgsRegion {
    start: usize,
    len: usize,
}

impl ArgsRegion {
    /// Byte offset of the region in guest memory.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Length of the region in bytes (0: no arguments, nothing is read).
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when the guest passed no arguments.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region as a range of guest-memory offsets, for slicing the memory it was checked
    /// against (`start + len` was checked not to overflow).
    pub fn range(&self) -> Range<usize> {
        self.start..self.start.saturating_add(self.len)
    }
}

/// Why the argument region was refused. Every case maps to
/// [`AbiError::InvalidPointer`](crate::AbiError::InvalidPointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RegionError {
    /// `args_ptr` is negative.
    NegativePointer {
        /// The pointer the guest passed.
        args_ptr: i32,
    },
    /// `args_len` is negative.
    NegativeLength {
        /// The length the guest passed.
        args_len: i32,
    },
    /// `args_ptr + args_len` does not fit in an `i32`.
    EndOverflows {
        /// The pointer the guest passed.
        args_ptr: i32,
        /// The length the guest passed.
        args_len: i32,
    },
    /// The region ends past the end of guest memory.
    PastMemory {
        /// The pointer the guest passed.
        args_ptr: i32,
        /// The length the guest passed.
        args_len: i32,
        /// The guest memory's length in bytes.
        memory_len: u64,
    },
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RegionError::NegativePointer { args_ptr } => write!(f, "args_ptr {args_ptr} is negative"),
            RegionError::NegativeLength { args_len } => write!(f, "args_len {args_len} is negative"),
            RegionError::EndOverflows { args_ptr, args_len } => {
                write!(f, "args region {args_ptr} + {args_len} overflows a 32-bit offset")
            }
            RegionError::PastMemory { args_ptr, args_len, memory_len } => write!(
                f,
                "args region [{args_ptr}, {}) ends past the {memory_len}-byte guest memory",
                i64::from(args_ptr).saturating_add(i64::from(args_len))
            ),
        }
    }
}

impl core::error::Error for RegionError {}

/// Checks the guest's `args_ptr`/`args_len` against a memory of `memory_len` bytes.
///
/// In order: a negative pointer, a negative length, an end that overflows `i32`, an end past
/// `memory_len` are each refused. The rule is the same for every length: a zero-length region
/// reads nothing, but its pointer must still lie inside the memory (at most `memory_len`), as
/// for a zero-length pointer window. `(0, 0)` is always accepted.
pub fn check_args_region(args_ptr: i32, args_len: i32, memory_len: u64) -> Result<ArgsRegion, RegionError> {
    if args_ptr < 0 {
        return Err(RegionError::NegativePointer { args_ptr });
    }
    if args_len < 0 {
        return Err(RegionError::NegativeLength { args_len });
    }
    let Some(end) = args_ptr.checked_add(args_len) else {
        return Err(RegionError::EndOverflows { args_ptr, args_len });
    };
    let past = RegionError::PastMemory { args_ptr, args_len, memory_len };
    // `end` is non-negative here, so the conversions cannot fail; a failure is still refused.
    if u64::try_from(end).map_err(|_| past)? > memory_len {
        return Err(past);
    }
    let start = usize::try_from(args_ptr).map_err(|_| past)?;
    let len = usize::try_from(args_len).map_err(|_| past)?;
    Ok(ArgsRegion { start, len })
}

/// Grid and block dimensions and dynamic shared memory of a launch, as the guest gave them
/// (already checked by the host function when a launcher sees them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchShape {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

/// Configurable launch limits: the shared-memory cap, which varies between devices, and the
/// quotas one launch is held to ([`Quota`](crate::Quota)); every other limit is a constant in
/// [`limits`](crate::limits). Build one from [`LaunchLimits::DEFAULT`] with the fields to
/// change: `LaunchLimits { max_threads_per_launch: 1 << 24, ..LaunchLimits::DEFAULT }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchLimits {
    /// The most dynamic shared memory per block a launch may ask for, in bytes.
    pub max_shared_mem_bytes: u32,
    /// The most threads one launch may run (`grid × block`); more is
    /// [`QuotaExceeded`](crate::AbiError::QuotaExceeded), before the argv is read.
    pub max_threads_per_launch: u64,
    /// The most bytes of device memory one launch's windows may be copied into, for a launcher
    /// that copies them (the CUDA backend's staged mode), which reads it from
    /// [`LaunchRequest::limits`](crate::LaunchRequest::limits); more is
    /// [`QuotaExceeded`](crate::AbiError::QuotaExceeded), before anything is allocated.
    pub max_staging_bytes: u64,
    /// The most backward branches (loop iterations) one thread of a fenced kernel may take,
    /// for a launcher whose kernels count them (the CUDA backend's fence), which reads it from
    /// [`LaunchRequest::limits`](crate::LaunchRequest::limits): a thread that would take one
    /// more stops, and the launch is [`QuotaExceeded`](crate::AbiError::QuotaExceeded)
    /// ([`Quota::BackEdgesPerThread`](crate::Quota::BackEdgesPerThread)).
    pub max_back_edges_per_thread: u32,
}

impl LaunchLimits {
    /// The defaults: [`DEFAULT_MAX_SHARED_MEM_BYTES`], [`DEFAULT_MAX_THREADS_PER_LAUNCH`],
    /// [`DEFAULT_MAX_STAGING_BYTES`], [`DEFAULT_MAX_BACK_EDGES_PER_THREAD`].
    pub const DEFAULT: LaunchLimits = LaunchLimits {
        max_shared_mem_bytes: DEFAULT_MAX_SHARED_MEM_BYTES,
        max_threads_per_launch: DEFAULT_MAX_THREADS_PER_LAUNCH,
        max_staging_bytes: DEFAULT_MAX_STAGING_BYTES,
        max_back_edges_per_thread: DEFAULT_MAX_BACK_EDGES_PER_THREAD,
    };
}

impl Default for LaunchLimits {
    fn default() -> LaunchLimits {
        LaunchLimits::DEFAULT
    }
}

/// One quantity of a launch shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Dimension {
    /// Blocks in x.
    GridX,
    /// Blocks in y.
    GridY,
    /// Blocks in z.
    GridZ,
    /// Threads per block in x.
    BlockX,
    /// Threads per block in y.
    BlockY,
    /// Threads per block in z.
    BlockZ,
    /// `block.x * block.y * block.z`.
    ThreadsPerBlock,
    /// Dynamic shared memory per block, in bytes.
    SharedMem,
}

impl Dimension {
    /// The name used in messages (`"grid.x"`, `"threads per block"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Dimension::GridX => "grid.x",
            Dimension::GridY => "grid.y",
            Dimension::GridZ => "grid.z",
            Dimension::BlockX => "block.x",
            Dimension::BlockY => "block.y",
            Dimension::BlockZ => "block.z",
            Dimension::ThreadsPerBlock => "threads per block",
            Dimension::SharedMem => "shared memory bytes",
        }
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The bound a refused value broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Bound {
    /// The value must be at least this.
    AtLeast(u64),
    /// The value must be at most this.
    AtMost(u64),
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::AtLeast(n) => write!(f, "at least {n}"),
            Bound::AtMost(n) => write!(f, "at most {n}"),
        }
    }
}

/// A launch shape out of range: which quantity, its value, and the bound it broke. Maps to
/// [`AbiError::InvalidDimensions`](crate::AbiError::InvalidDimensions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ShapeError {
    /// The quantity that is out of range.
    pub dimension: Dimension,
    /// Its value (for [`Dimension::ThreadsPerBlock`], the product of the block dimensions).
    pub value: i64,
    /// The bound it broke.
    pub bound: Bound,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}, must be {}", self.dimension, self.value, self.bound)
    }
}

impl core::error::Error for ShapeError {}

/// Checks a launch shape as the guest passed it and returns it as a [`LaunchShape`].
///
/// Checked in this order, the first failure deciding: grid x, y, z, then block x, y, z (each
/// between [`MIN_DIM`] and its maximum), then threads per block, then shared memory (not
/// negative, at most `limits.max_shared_mem_bytes`).
pub fn check_launch_shape(
    grid: [i32; 3],
    block: [i32; 3],
    shared_mem: i32,
    limits: &LaunchLimits,
) -> Result<LaunchShape, ShapeError> {
    let [gx, gy, gz] = grid;
    let [bx, by, bz] = block;
    let grid = [
        dim(Dimension::GridX, gx, MIN_DIM, MAX_GRID_X)?,
        dim(Dimension::GridY, gy, MIN_DIM, MAX_GRID_Y)?,
        dim(Dimension::GridZ, gz, MIN_DIM, MAX_GRID_Z)?,
    ];
    let block = [
        dim(Dimension::BlockX, bx, MIN_DIM, MAX_BLOCK_X)?,
        dim(Dimension::BlockY, by, MIN_DIM, MAX_BLOCK_Y)?,
        dim(Dimension::BlockZ, bz, MIN_DIM, MAX_BLOCK_Z)?,
    ];
    // Each factor is at most 1024, so the product fits easily in a u64.
    let threads = block.iter().fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
    if threads > u64::from(MAX_THREADS_PER_BLOCK) {
        return Err(ShapeError {
            dimension: Dimension::ThreadsPerBlock,
            value: i64::try_from(threads).unwrap_or(i64::MAX),
            bound: Bound::AtMost(u64::from(MAX_THREADS_PER_BLOCK)),
        });
    }
    let shared_mem_bytes = dim(Dimension::SharedMem, shared_mem, 0, limits.max_shared_mem_bytes)?;
    Ok(LaunchShape { grid, block, shared_mem_bytes })
}

/// `value` as a `u32` if `min <= value <= max`, compared in `i64` so no bound can wrap.
fn dim(dimension: Dimension, value: i32, min: u32, max: u32) -> Result<u32, ShapeError> {
    let wide = i64::from(value);
    let refuse = |bound| ShapeError { dimension, value: wide, bound };
    if wide < i64::from(min) {
        return Err(refuse(Bound::AtLeast(u64::from(min))));
    }
    if wide > i64::from(max) {
        return Err(refuse(Bound::AtMost(u64::from(max))));
    }
    // Not negative here (`min` is unsigned), so the conversion succeeds.
    u32::try_from(value).map_err(|_| refuse(Bound::AtLeast(u64::from(min))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK_GRID: [i32; 3] = [1, 1, 1];
    const OK_BLOCK: [i32; 3] = [1, 1, 1];

    fn region(ptr: i32, len: i32, mem: u64) -> Result<(usize, usize), RegionError> {
        check_args_region(ptr, len, mem).map(|r| (r.start(), r.len()))
    }

    #[test]
    fn region_inside_and_at_the_end() {
        assert_eq!(region(0, 0, 0), Ok((0, 0)), "no args in an empty memory");
        assert_eq!(region(0, 0, 65_536), Ok((0, 0)));
        assert_eq!(region(0, 65_536, 65_536), Ok((0, 65_536)), "the whole memory");
        assert_eq!(region(65_535, 1, 65_536), Ok((65_535, 1)), "last byte");
        assert_eq!(region(65_536, 0, 65_536), Ok((65_536, 0)), "zero length at the end");
        assert_eq!(region(i32::MAX, 0, 1 << 32), Ok((i32::MAX as usize, 0)));
        assert_eq!(region(0, i32::MAX, 1 << 32), Ok((0, i32::MAX as usize)));
        let r = check_args_region(16, 8, 64).unwrap();
        assert_eq!(r.range(), 16..24);
        assert!(!r.is_empty());
        assert!(check_args_region(16, 0, 64).unwrap().is_empty());
    }

    #[test]
    fn region_negative_values() {
        assert_eq!(region(-1, 0, 65_536), Err(RegionError::NegativePointer { args_ptr: -1 }));
        assert_eq!(region(i32::MIN, 4, 65_536), Err(RegionError::NegativePointer { args_ptr: i32::MIN }));
        assert_eq!(region(0, -1, 65_536), Err(RegionError::NegativeLength { args_len: -1 }));
        assert_eq!(region(0, i32::MIN, 65_536), Err(RegionError::NegativeLength { args_len: i32::MIN }));
        // The pointer is judged first.
        assert_eq!(region(-5, -5, 65_536), Err(RegionError::NegativePointer { args_ptr: -5 }));
    }

    #[test]
    fn region_end_overflow() {
        assert_eq!(
            region(i32::MAX, 1, 1 << 32),
            Err(RegionError::EndOverflows { args_ptr: i32::MAX, args_len: 1 })
        );
        assert_eq!(
            region(1, i32::MAX, 1 << 32),
            Err(RegionError::EndOverflows { args_ptr: 1, args_len: i32::MAX })
        );
        assert_eq!(region(i32::MAX - 1, 1, 1 << 32), Ok((i32::MAX as usize - 1, 1)), "end == i32::MAX fits");
    }

    #[test]
    fn region_past_memory() {
        let past = |p, l, m| Err(RegionError::PastMemory { args_ptr: p, args_len: l, memory_len: m });
        assert_eq!(region(65_536, 1, 65_536), past(65_536, 1, 65_536), "one byte past");
        assert_eq!(region(65_535, 2, 65_536), past(65_535, 2, 65_536), "straddles the end");
        assert_eq!(region(65_537, 0, 65_536), past(65_537, 0, 65_536), "zero length past the end");
        assert_eq!(region(0, 1, 0), past(0, 1, 0), "any byte of an empty memory");
        assert_eq!(region(0, 65_537, 65_536), past(0, 65_537, 65_536));
    }

    #[test]
    fn region_errors_say_what() {
        assert_eq!(
            RegionError::PastMemory { args_ptr: 100, args_len: 8, memory_len: 64 }.to_string(),
            "args region [100, 108) ends past the 64-byte guest memory"
        );
        assert_eq!(RegionError::NegativePointer { args_ptr: -4 }.to_string(), "args_ptr -4 is negative");
        assert_eq!(
            RegionError::EndOverflows { args_ptr: i32::MAX, args_len: 1 }.to_string(),
            "args region 2147483647 + 1 overflows a 32-bit offset"
        );
    }

    fn shape_err(grid: [i32; 3], block: [i32; 3], shm: i32) -> ShapeError {
        check_launch_shape(grid, block, shm, &LaunchLimits::default()).unwrap_err()
    }

    fn at_most(dimension: Dimension, value: i64, max: u32) -> ShapeError {
        ShapeError { dimension, value, bound: Bound::AtMost(u64::from(max)) }
    }

    fn at_least(dimension: Dimension, value: i64, min: u32) -> ShapeError {
        ShapeError { dimension, value, bound: Bound::AtLeast(u64::from(min)) }
    }

    #[test]
    fn shape_minimum_and_maximum_accepted() {
        let s = check_launch_shape(OK_GRID, OK_BLOCK, 0, &LaunchLimits::default()).unwrap();
        assert_eq!(s, LaunchShape { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 });
        let max_grid = [MAX_GRID_X as i32, MAX_GRID_Y as i32, MAX_GRID_Z as i32];
        let s = check_launch_shape(
            max_grid,
            [1024, 1, 1],
            DEFAULT_MAX_SHARED_MEM_BYTES as i32,
            &LaunchLimits::DEFAULT,
        )
        .unwrap();
        assert_eq!(s.grid, [MAX_GRID_X, MAX_GRID_Y, MAX_GRID_Z]);
        assert_eq!(s.shared_mem_bytes, 232_448);
        for block in [[1024, 1, 1], [1, 1024, 1], [16, 1, 64], [32, 32, 1], [4, 4, 64]] {
            assert!(check_launch_shape(OK_GRID, block, 0, &LaunchLimits::DEFAULT).is_ok(), "{block:?}");
        }
    }

    #[test]
    fn shape_zero_and_negative_dimensions() {
        let cases = [
            (Dimension::GridX, 0usize),
            (Dimension::GridY, 1),
            (Dimension::GridZ, 2),
            (Dimension::BlockX, 3),
            (Dimension::BlockY, 4),
            (Dimension::BlockZ, 5),
        ];
        for (dimension, i) in cases {
            for bad in [0, -1, i32::MIN] {
                let mut dims = [1i32; 6];
                dims[i] = bad;
                let err = shape_err([dims[0], dims[1], dims[2]], [dims[3], dims[4], dims[5]], 0);
                assert_eq!(err, at_least(dimension, i64::from(bad), 1), "{dimension} = {bad}");
            }
        }
    }

    #[test]
    fn shape_each_maximum_plus_one() {
        assert_eq!(shape_err([1, 65_536, 1], OK_BLOCK, 0), at_most(Dimension::GridY, 65_536, MAX_GRID_Y));
        assert_eq!(shape_err([1, 1, 65_536], OK_BLOCK, 0), at_most(Dimension::GridZ, 65_536, MAX_GRID_Z));
        assert_eq!(shape_err(OK_GRID, [1025, 1, 1], 0), at_most(Dimension::BlockX, 1025, MAX_BLOCK_X));
        assert_eq!(shape_err(OK_GRID, [1, 1025, 1], 0), at_most(Dimension::BlockY, 1025, MAX_BLOCK_Y));
        assert_eq!(shape_err(OK_GRID, [1, 1, 65], 0), at_most(Dimension::BlockZ, 65, MAX_BLOCK_Z));
        // grid.x's limit is i32::MAX, so every positive i32 is in range; the check still
        // exists for the day the ABI widens.
        assert!(check_launch_shape([i32::MAX, 1, 1], OK_BLOCK, 0, &LaunchLimits::DEFAULT).is_ok());
        assert_eq!(
            dim(Dimension::GridX, i32::MAX, 1, MAX_GRID_X - 1).unwrap_err().bound,
            Bound::AtMost(2_147_483_646)
        );
    }

    #[test]
    fn shape_threads_per_block() {
        assert!(check_launch_shape(OK_GRID, [33, 31, 1], 0, &LaunchLimits::DEFAULT).is_ok(), "1023 threads");
        assert!(check_launch_shape(OK_GRID, [32, 32, 1], 0, &LaunchLimits::DEFAULT).is_ok(), "1024 threads");
        assert_eq!(
            shape_err(OK_GRID, [1024, 2, 1], 0),
            at_most(Dimension::ThreadsPerBlock, 2048, MAX_THREADS_PER_BLOCK)
        );
        assert_eq!(
            shape_err(OK_GRID, [1024, 1024, 64], 0),
            at_most(Dimension::ThreadsPerBlock, 1 << 26, MAX_THREADS_PER_BLOCK)
        );
        assert_eq!(
            shape_err(OK_GRID, [41, 25, 1], 0),
            at_most(Dimension::ThreadsPerBlock, 1025, MAX_THREADS_PER_BLOCK),
            "one thread too many"
        );
    }

    #[test]
    fn shape_shared_memory() {
        let cap = DEFAULT_MAX_SHARED_MEM_BYTES;
        assert_eq!(shape_err(OK_GRID, OK_BLOCK, -1), at_least(Dimension::SharedMem, -1, 0));
        assert_eq!(
            shape_err(OK_GRID, OK_BLOCK, i32::MIN),
            at_least(Dimension::SharedMem, i64::from(i32::MIN), 0)
        );
        assert_eq!(
            shape_err(OK_GRID, OK_BLOCK, cap as i32 + 1),
            at_most(Dimension::SharedMem, i64::from(cap) + 1, cap)
        );
        assert_eq!(
            shape_err(OK_GRID, OK_BLOCK, i32::MAX),
            at_most(Dimension::SharedMem, i64::from(i32::MAX), cap)
        );
        let small = LaunchLimits { max_shared_mem_bytes: 48 * 1024, ..LaunchLimits::DEFAULT };
        assert_eq!(check_launch_shape(OK_GRID, OK_BLOCK, 49_152, &small).unwrap().shared_mem_bytes, 49_152);
        assert_eq!(
            check_launch_shape(OK_GRID, OK_BLOCK, 49_153, &small).unwrap_err(),
            at_most(Dimension::SharedMem, 49_153, 49_152)
        );
        let none = LaunchLimits { max_shared_mem_bytes: 0, ..LaunchLimits::DEFAULT };
        assert!(check_launch_shape(OK_GRID, OK_BLOCK, 0, &none).is_ok());
        assert!(check_launch_shape(OK_GRID, OK_BLOCK, 1, &none).is_err());
    }

    #[test]
    fn shape_order_first_failure_decides() {
        // Everything is wrong: grid.x is reported.
        assert_eq!(shape_err([0, 0, 0], [0, 0, 0], -1).dimension, Dimension::GridX);
        // Block dimensions come before threads per block and shared memory.
        assert_eq!(shape_err(OK_GRID, [2048, 2, 1], -1).dimension, Dimension::BlockX);
        assert_eq!(shape_err(OK_GRID, [1024, 2, 1], -1).dimension, Dimension::ThreadsPerBlock);
    }

    #[test]
    fn shape_errors_say_what() {
        assert_eq!(shape_err(OK_GRID, [2048, 1, 1], 0).to_string(), "block.x is 2048, must be at most 1024");
        assert_eq!(shape_err([0, 1, 1], OK_BLOCK, 0).to_string(), "grid.x is 0, must be at least 1");
        assert_eq!(
            shape_err(OK_GRID, OK_BLOCK, -8).to_string(),
            "shared memory bytes is -8, must be at least 0"
        );
    }
}
