//! The instruction-count firmware of `scripts/firmware-instructions.sh`.
//!
//! Builds the mixed 16-argument argv, then runs three marked regions, each opened by a call
//! to [`kargs_mark_begin`] and closed by a call to [`kargs_mark_end`]:
//!
//! 1. an empty region: what the markers themselves cost (the calibration);
//! 2. one `parse_argv` of the 16 arguments, returning a `ParsedArgv` (capacity 128, the
//!    default) by value;
//! 3. one `parse_argv_into` of the same arguments into a `ParsedArgv` the caller keeps (what a
//!    launcher that keeps its storage across launches does).
//!
//! The script runs it under QEMU with one guest instruction per translation block and the
//! execution log on, finds the markers' addresses in the ELF, and counts the instructions
//! executed from the entry of `kargs_mark_begin` to the entry of `kargs_mark_end`. Then it
//! checks that the parse was accepted with 16 arguments and exits 0, or 1 if not.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

use core::hint::black_box;

use cortex_m_rt::entry;
use kernel_args_core::{ArgvError, GuestMemory, ParsedArgv, parse_argv, parse_argv_into};
use kernel_args_firmware::{argvs, exit};
use panic_semihosting as _;

/// Arguments in the measured parse.
const ARGS: usize = 16;

#[entry]
fn main() -> ! {
    let mut buf = [0u8; core::mem::size_of::<argvs::ArgvBuf>()];
    let Ok(argv) = argvs::mixed(ARGS, &mut buf) else { exit(false) };
    let memory = GuestMemory::length_only(argvs::MEMORY_LEN);

    // 1. The empty region.
    kargs_mark_begin();
    kargs_mark_end();

    // 2. The parse. black_box keeps the compiler from specialising it for this argv; `parse`
    // is a call of its own so nothing of it can move outside the markers.
    let (argv, memory) = (black_box(argv), black_box(&memory));
    kargs_mark_begin();
    let parsed = parse(argv, memory);
    kargs_mark_end();
    let by_value = matches!(black_box(&parsed), Ok(args) if args.len() == ARGS);

    // 3. The parse into the caller's sink.
    let mut sink = ParsedArgv::new();
    let sink = black_box(&mut sink);
    kargs_mark_begin();
    let into = parse_into(argv, memory, sink);
    kargs_mark_end();
    let into = black_box(into).is_ok() && sink.len() == ARGS;

    exit(by_value && into)
}

/// The measured operation of region 2: one `parse_argv` at the default capacity.
#[inline(never)]
fn parse<'m>(argv: &[u8], memory: &GuestMemory<'m>) -> Result<ParsedArgv<'m>, ArgvError> {
    parse_argv(argv, memory)
}

/// The measured operation of region 3: one `parse_argv_into` into the caller's sink.
#[inline(never)]
fn parse_into<'m>(argv: &[u8], memory: &GuestMemory<'m>, out: &mut ParsedArgv<'m>) -> Result<(), ArgvError> {
    parse_argv_into(argv, memory, out)
}

/// Opens a marked region; found by name in the ELF. Its body is an optimisation barrier
/// (`black_box` is opaque to the compiler), so no memory access moves across the call.
// SAFETY: no other symbol of the image is named `kargs_mark_begin`.
#[allow(unsafe_code)] // `no_mangle`: the script finds the marker by this exact name
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kargs_mark_begin() {
    black_box(0x6265_6769_u32); // "begi": a body of its own, so the two markers are never merged
}

/// Closes a marked region; see [`kargs_mark_begin`].
// SAFETY: no other symbol of the image is named `kargs_mark_end`.
#[allow(unsafe_code)] // as above
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kargs_mark_end() {
    black_box(0x656e_6421_u32); // "end!"
}
