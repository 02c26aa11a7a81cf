//! The argvs the measurements parse: `n` arguments cycling through every type (`i32`, `i64`,
//! `f32`, `f64`, `u32`, `u64`, `ptr`, ...), with the same values as the host's "mixed" argvs
//! (`testkit/src/argvs.rs`, which the host benchmarks and callgrind counts use), encoded on the
//! target with [`ArgvBuilder`].

use core::fmt::Write as _;

use kernel_args::limits::MAX_DECLARATION_BYTES;
use kernel_args_core::MAX_RECORD_SIZE;
use kernel_args_core::{ArgTag, ArgvBuilder, EncodeError, MAX_KERNEL_ARGS};

/// Guest memory length every pointer window of a mixed argv fits in (1 MiB).
pub const MEMORY_LEN: u64 = 1 << 20;

/// Byte length of each pointer window.
const WINDOW_LEN: u32 = 4096;

/// A buffer that holds any mixed argv: at most [`MAX_KERNEL_ARGS`] records of at most
/// [`MAX_RECORD_SIZE`] bytes.
pub type ArgvBuf = [u8; MAX_KERNEL_ARGS * MAX_RECORD_SIZE];

/// Encodes the mixed argv of `n` arguments into `buf` and returns its bytes.
///
/// Fails only when `n` exceeds [`MAX_KERNEL_ARGS`].
pub fn mixed(n: usize, buf: &mut ArgvBuf) -> Result<&[u8], EncodeError> {
    let mut argv = ArgvBuilder::new(buf);
    for (i, tag) in ArgTag::ALL.iter().copied().cycle().take(n).enumerate() {
        // The casts mirror testkit's values; `i` is below 128, so none of them wraps.
        let small = i as u32;
        match tag {
            ArgTag::I32 => argv.i32(-(small as i32) - 1)?,
            ArgTag::I64 => argv.i64(i64::MIN + i64::from(small))?,
            ArgTag::F32 => argv.f32(small as f32 * 0.5)?,
            ArgTag::F64 => argv.f64(f64::from(small) * -0.25)?,
            ArgTag::U32 => argv.u32(u32::MAX - small)?,
            ArgTag::U64 => argv.u64(u64::from(small) << 32 | u64::from(small))?,
            ArgTag::Ptr => {
                let slots = MEMORY_LEN as u32 / WINDOW_LEN;
                argv.ptr(small % slots * WINDOW_LEN, WINDOW_LEN)?
            }
        };
    }
    Ok(argv.finish())
}

/// The declaration the mixed argv of `n` arguments fits exactly, as the host's test kit writes
/// it (`testkit/src/argvs.rs`): parameter `i` is `a{i}`, a scalar of its type or, for a window,
/// `&mut [u8; 4096]`. `None` when it does not fit [`MAX_DECLARATION_BYTES`].
pub fn declaration(n: usize) -> Option<heapless::String<MAX_DECLARATION_BYTES>> {
    let mut text = heapless::String::new();
    text.push_str("k(").ok()?;
    for (i, tag) in ArgTag::ALL.iter().copied().cycle().take(n).enumerate() {
        if i > 0 {
            text.push_str(", ").ok()?;
        }
        match tag {
            ArgTag::Ptr => write!(text, "a{i}: &mut [u8; {WINDOW_LEN}]").ok()?,
            scalar => write!(text, "a{i}: {}", scalar.name()).ok()?,
        }
    }
    text.push(')').ok()?;
    Some(text)
}
