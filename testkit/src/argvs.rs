//! The argvs the zero-allocation tests (core, std-adapter, cuda-backend) and the benchmarks
//! (core's parser, cuda-backend's parse + build and its instruction-count loop) run: mixed
//! argvs of every size up to the record cap, and the largest buffer the parser can accept.
//!
//! ```
//! use kernel_args_testkit::argvs;
//!
//! let buf = argvs::encode(&argvs::mixed(16));
//! assert_eq!(argvs::largest_valid().len(), argvs::LARGEST_VALID_LEN);
//! # assert!(!buf.is_empty());
//! ```

use kernel_args_core::MAX_RECORD_SIZE;
use kernel_args_core::{
    ArgTag, F32Bits, F64Bits, GuestRange, LoweredArgSnapshot, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES,
    encode_argv,
};

/// Guest memory length every pointer window below fits in (1 MiB).
pub const MEMORY_LEN: usize = 1 << 20;

/// The byte length of a pointer window in the generated lists.
const WINDOW_LEN: u32 = 4096;

/// The largest buffer the parser can accept: the record cap times the largest record
/// (128 × 9 = 1152 bytes). The 4096-byte cap can only be reached by a buffer that breaks the
/// record cap, which is refused.
pub const LARGEST_VALID_LEN: usize = MAX_KERNEL_ARGS * MAX_RECORD_SIZE;

/// The argv sizes the allocation tests run: every size from 0 to the record cap natively; under
/// Miri (which looks for undefined behaviour, at a small fraction of native speed) the edges and
/// a few sizes between, so the CI's Miri step stays short.
pub fn sizes() -> Vec<usize> {
    if cfg!(miri) {
        vec![0, 1, 2, 7, 16, MAX_KERNEL_ARGS - 1, MAX_KERNEL_ARGS]
    } else {
        (0..=MAX_KERNEL_ARGS).collect()
    }
}

/// The `i`-th argument of a list of type `tag`, with a value that depends on `i`.
pub fn arg(tag: ArgTag, i: usize) -> LoweredArgSnapshot {
    let n = i as u64;
    match tag {
        ArgTag::I32 => LoweredArgSnapshot::I32(-(i as i32) - 1),
        ArgTag::I64 => LoweredArgSnapshot::I64(i64::MIN + n as i64),
        ArgTag::F32 => LoweredArgSnapshot::F32(F32Bits::from_f32(i as f32 * 0.5)),
        ArgTag::F64 => LoweredArgSnapshot::F64(F64Bits::from_f64(i as f64 * -0.25)),
        ArgTag::U32 => LoweredArgSnapshot::U32(u32::MAX - i as u32),
        ArgTag::U64 => LoweredArgSnapshot::U64(n << 32 | n),
        ArgTag::Ptr => {
            let slots = (MEMORY_LEN as u32) / WINDOW_LEN;
            let guest_offset = (i as u32 % slots) * WINDOW_LEN;
            LoweredArgSnapshot::Ptr(GuestRange { guest_offset, len: WINDOW_LEN })
        }
    }
}

/// `n` arguments cycling through every type (i32, i64, f32, f64, u32, u64, ptr, ...).
pub fn mixed(n: usize) -> Vec<LoweredArgSnapshot> {
    (0..n).map(|i| arg(ArgTag::ALL[i % ArgTag::ALL.len()], i)).collect()
}

/// `n` arguments cycling through the 9-byte types only (i64, f64, u64, ptr).
pub fn wide(n: usize) -> Vec<LoweredArgSnapshot> {
    const WIDE: [ArgTag; 4] = [ArgTag::I64, ArgTag::F64, ArgTag::U64, ArgTag::Ptr];
    (0..n).map(|i| arg(WIDE[i % WIDE.len()], i)).collect()
}

/// The text of a kernel declaration (`docs/declarations.md`) that `args` fit exactly: parameter
/// `i` is `a{i}`, a scalar of the argument's type or, for a window, `&mut [u8; len]` with the
/// window's length (so every window passes the declaration's check, as a correct guest's do).
/// Parse it with `kernel_args::Declaration::parse`.
///
/// ```
/// use kernel_args_testkit::argvs;
///
/// assert_eq!(argvs::declaration(&argvs::mixed(8)),
///            "k(a0: i32, a1: i64, a2: f32, a3: f64, a4: u32, a5: u64, a6: &mut [u8; 4096], a7: i32)");
/// ```
pub fn declaration(args: &[LoweredArgSnapshot]) -> String {
    let params: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, arg)| match arg {
            LoweredArgSnapshot::Ptr(window) => format!("a{i}: &mut [u8; {}]", window.len),
            other => format!("a{i}: {}", other.tag().name()),
        })
        .collect();
    format!("k({})", params.join(", "))
}

/// The wire bytes of `args`.
pub fn encode(args: &[LoweredArgSnapshot]) -> Vec<u8> {
    let mut out = vec![0u8; MAX_KERNEL_ARGS_BYTES];
    let len = encode_argv(args, &mut out).expect("the generated lists respect the caps");
    out.truncate(len);
    out
}

/// The largest valid buffer: [`MAX_KERNEL_ARGS`] 9-byte records.
pub fn largest_valid() -> Vec<u8> {
    let buf = encode(&wide(MAX_KERNEL_ARGS));
    assert_eq!(buf.len(), LARGEST_VALID_LEN);
    buf
}

/// A buffer whose first record has an unknown tag (the earliest error after the length cap):
/// the largest valid buffer with its first tag byte replaced.
pub fn early_error() -> Vec<u8> {
    let mut buf = largest_valid();
    buf[0] = 0xff;
    buf
}

/// A buffer whose last record is a pointer window one byte past the end of guest memory (the
/// latest error: every record before it is read and checked).
pub fn late_error() -> Vec<u8> {
    let mut args = wide(MAX_KERNEL_ARGS);
    let last = args.last_mut().expect("non-empty");
    *last = LoweredArgSnapshot::Ptr(GuestRange {
        guest_offset: MEMORY_LEN as u32 - WINDOW_LEN + 1,
        len: WINDOW_LEN,
    });
    encode(&args)
}

/// The mixed-argument counts every benchmark group measures.
pub const BENCH_SIZES: [usize; 4] = [1, 4, 16, 128];

/// `(id, argument count, buffer)` for each of [`BENCH_SIZES`] and the largest valid buffer.
pub fn bench_inputs() -> Vec<(&'static str, usize, Vec<u8>)> {
    let mut inputs: Vec<_> = BENCH_SIZES.iter().map(|&n| ("mixed", n, encode(&mixed(n)))).collect();
    inputs.push(("largest", MAX_KERNEL_ARGS, largest_valid()));
    inputs
}
