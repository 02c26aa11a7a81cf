//! # kernel-args-firmware
//!
//! `kernel-args-core` and the `no_std` host pipeline of `kernel-args` on a microcontroller:
//! firmware for the Cortex-M4 of QEMU's `mps2-an386` board (`thumbv7em-none-eabihf`), with its
//! output and exit status carried by semihosting.
//! This library holds what the binaries share:
//!
//! - [`vectors`]: every conformance vector of `tests/vectors/argv.json`, embedded at build time,
//!   checked on the target as strictly as `tests/tests/conformance.rs` checks them on the host;
//! - [`stack`]: the stack high-water mark of an operation, by stack painting (the crate's only
//!   `unsafe` blocks with [`heap`]'s allocator);
//! - [`argvs`]: the mixed argvs the measurements parse, built with `ArgvBuilder` on the target;
//! - [`heap`]: the heap wasmi needs, counting allocations (the pipeline makes none);
//! - [`link`]: the launcher that forwards a checked launch's pointer-free record over a link
//!   (here the semihosting console), and the link's receiving end.
//!
//! The binaries: `kernel-args-firmware` (`src/main.rs`: the vectors, the `no_std` host
//! pipeline, the demo guest on wasmi and the measurements, what `cargo run --release` runs),
//! `count` (the marked 16-argument parse whose instructions `scripts/firmware-instructions.sh`
//! counts), and `baseline`, `parser` and `pipeline` (the footprint binaries of
//! `scripts/firmware-size.sh`).

#![no_std]
#![deny(unsafe_code)]

pub mod argvs;
pub mod heap;
pub mod link;
pub mod stack;
pub mod vectors;

use cortex_m_semihosting::debug;

/// Ends the firmware: QEMU exits with status 0 when `ok`, 1 otherwise (semihosting
/// `SYS_EXIT`, `ApplicationExit` or `RunTimeErrorUnknown`).
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    // Only reached without a semihosting host (on real hardware without a debugger).
    loop {
        cortex_m::asm::wfi();
    }
}
