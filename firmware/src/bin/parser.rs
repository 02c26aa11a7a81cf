//! The parser's footprint, for `scripts/firmware-size.sh`: the `baseline` binary plus one
//! `parse_argv` (into a `ParsedArgv` of the default capacity, 128) of an argv the compiler
//! cannot see (`black_box`), so that none of the parser is folded away. It exits 0 when the
//! argv is accepted with its 7 arguments.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

use core::hint::black_box;

use cortex_m_rt::entry;
use kernel_args_core::{GuestMemory, ParsedArgv, parse_argv};
use panic_semihosting as _;

/// One record of every type (i32, i64, f32, f64, u32, u64, ptr): the conformance vector
/// `one_of_each_type`.
static ARGV: [u8; 51] = [
    0x01, 0xf9, 0xff, 0xff, 0xff, // i32 -7
    0x02, 0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // i64 -7
    0x03, 0x00, 0x00, 0xc0, 0x3f, // f32 1.5
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, // f64 1.5
    0x05, 0x2a, 0x00, 0x00, 0x00, // u32 42
    0x06, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // u64 42
    0x07, 0x40, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, // ptr [64, +128)
];

#[entry]
fn main() -> ! {
    let argv: &[u8] = black_box(&ARGV);
    let memory = GuestMemory::length_only(black_box(1 << 16));
    let parsed: Result<ParsedArgv, _> = parse_argv(argv, &memory);
    kernel_args_firmware::exit(matches!(black_box(&parsed), Ok(args) if args.len() == 7))
}
