//! Stack high-water mark by stack painting, measured on the target.
//!
//! [`measure`] paints [`PAINTED_BYTES`] of the free stack below its own frame with a pattern
//! word, runs the operation, then scans up from the bottom of the painted region for the first
//! word that is no longer the pattern: everything from there up to `measure`'s stack pointer
//! was written by the operation (its frames, the locals of everything it called, and its
//! return address and saved registers), so that distance is the stack the operation needs
//! when called from here.
//!
//! ```ignore
//! let (parsed, bytes) = stack::measure(|| parse_argv::<128>(argv, &memory).map(|a| a.len()));
//! ```
//!
//! Reading the result:
//!
//! - it is exact to the word (4 bytes), and counts only what was **written**: a frame slot
//!   that is reserved but never stored to, below the deepest stored word, is not seen (frames
//!   are contiguous, so this can only hide unused space at the very bottom);
//! - an operation that stays within [`RED_ZONE`] bytes reads as [`RED_ZONE`] (the bytes just
//!   below `measure`'s frame are left unpainted, see there);
//! - [`PAINTED_BYTES`] or more means the operation went below the painted region: a lower
//!   bound ([`Measured::saturated`]).
//!
//! Nothing else may write to the stack while the operation runs: this firmware enables no
//! interrupt source, and a fault ends it. This module and the allocator in `heap` hold the crate's only `unsafe` blocks.

#![allow(unsafe_code)]

use core::sync::atomic::{Ordering, compiler_fence};

/// Bytes of stack below `measure`'s frame that are painted: the deepest use it can measure.
pub const PAINTED_BYTES: usize = 64 * 1024;

/// Bytes just below `measure`'s stack pointer that are not painted. Unoptimised builds call
/// `write_volatile` and `read_volatile` as functions, whose frames land right there while the
/// paint is laid and read; leaving this gap keeps them from overwriting the paint (or the
/// paint from overwriting them). An operation that uses less reads as this much.
pub const RED_ZONE: usize = 64;

/// The paint: a word the measured code is unlikely to store ("KARG").
const PATTERN: u32 = 0x4b41_5247;

/// The result of a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// Bytes of stack the operation used, from `measure`'s stack pointer down to the lowest
    /// word it wrote (at least [`RED_ZONE`]).
    pub bytes: usize,
    /// `true` when the operation reached the bottom of the painted region: `bytes` is then a
    /// lower bound.
    pub saturated: bool,
}

/// Runs `f` and returns its result with the bytes of stack it used (see the [module
/// docs](self) for how to read them).
///
/// # Panics
///
/// When the painted region would reach below the end of the statically allocated RAM (the
/// linker's `_stack_end`): the stack is then too small to measure in.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let (r, m) = measure_detailed(f);
    (r, m.bytes)
}

/// [`measure`], also telling whether the measurement saturated.
///
/// # Panics
///
/// As [`measure`].
#[inline(never)]
pub fn measure_detailed<R>(f: impl FnOnce() -> R) -> (R, Measured) {
    // All of this function's frame is allocated by its prologue, so the stack pointer read
    // here is its lowest address for as long as the function runs; `f` runs below it.
    let top = cortex_m::register::msp::read() as usize & !3;
    let painted_top = top - RED_ZONE;
    let bottom = painted_top - PAINTED_BYTES;
    assert!(bottom >= stack_end(), "stack painting: the stack is too small to paint");

    let words = (bottom..painted_top).step_by(4);
    for addr in words.clone() {
        // SAFETY: `addr` is word-aligned and in `[bottom, painted_top)`: RAM between the end of
        // the statically allocated data (`_stack_end`, asserted above) and this function's
        // frame, so no static and no live stack object is there, and no other code runs while
        // we write it (this firmware enables no interrupt source, and a fault ends it). Writing
        // a free stack word is allowed; the volatile store keeps the compiler from dropping it
        // as a dead store.
        unsafe { (addr as *mut u32).write_volatile(PATTERN) };
    }
    // Keep the paint before the operation and the scan after it.
    compiler_fence(Ordering::SeqCst);
    let r = call(f);
    compiler_fence(Ordering::SeqCst);

    let mut lowest = painted_top;
    for addr in words {
        // SAFETY: as above: a word-aligned address of free stack below this function's frame
        // (the frames `f` used there are gone); reading it is a plain load.
        if unsafe { (addr as *const u32).read_volatile() } != PATTERN {
            lowest = addr;
            break;
        }
    }
    (r, Measured { bytes: top - lowest, saturated: lowest == bottom })
}

/// Calls `f` in a frame of its own below `measure_detailed`'s: were `f` inlined into
/// `measure_detailed`, its locals would live in that frame, above the stack pointer the
/// measurement starts from, and go uncounted.
#[inline(never)]
fn call<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// The lowest address the stack may use: the end of the statically allocated RAM
/// (`.data`, `.bss`, `.uninit`), where cortex-m-rt's `link.x` places `_stack_end`.
fn stack_end() -> usize {
    unsafe extern "C" {
        /// Defined by cortex-m-rt's `link.x`; only its address is used.
        static _stack_end: u8;
    }
    // Taking the address of an extern static reads nothing: it is safe.
    (&raw const _stack_end) as usize
}
