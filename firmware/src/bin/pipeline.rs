//! The host pipeline's footprint, for `scripts/firmware-size.sh`: the `baseline` binary plus
//! the kernel's declaration parsed at registration, and one `wasi_cuda_launch` call through
//! `kernel_args::LaunchHost` without std (capability gate, region and shape checks, the argv
//! parsed into the launch's record, the check against the declaration, dispatch) to the dry-run
//! launcher, over a guest memory, call and declaration the compiler cannot see (`black_box`). Without wasmi: the firmware a host that gets its calls some other way
//! (an RPC, a native API) would carry. It exits 0 when the call answers `NotAvailable` with the
//! argv's 7 arguments recorded.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

use core::hint::black_box;

use cortex_m_rt::entry;
use kernel_args::{Declaration, DryRunLauncher, KernelTable, LaunchCall, LaunchHost};
use panic_semihosting as _;

/// The conformance vector `one_of_each_type`, at offset 0 of the guest memory.
const ARGV: [u8; 51] = [
    0x01, 0xf9, 0xff, 0xff, 0xff, // i32 -7
    0x02, 0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // i64 -7
    0x03, 0x00, 0x00, 0xc0, 0x3f, // f32 1.5
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, // f64 1.5
    0x05, 0x2a, 0x00, 0x00, 0x00, // u32 42
    0x06, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // u64 42
    0x07, 0x40, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, // ptr [64, +128)
];

/// Kernel 1: what [`ARGV`] fits.
const DECLARATION: &str = "k(a: i32, b: i64, c: f32, d: f64, e: u32, f: u64, p: &mut [u8; e + 86])";

#[entry]
fn main() -> ! {
    let mut memory = [0u8; 256];
    if let Some(dst) = memory.get_mut(..ARGV.len()) {
        dst.copy_from_slice(&ARGV);
    }
    let call = LaunchCall { args_len: 51, ..LaunchCall::new(1, [1, 1, 1], [32, 1, 1]) };
    let mut kernels = KernelTable::new();
    let declared = Declaration::parse(black_box(DECLARATION)).map(|d| kernels.declare(1, d).is_ok());
    let mut host = LaunchHost::new(DryRunLauncher::with_kernels(kernels));
    let code = host.call(Some(black_box(&mut memory[..])), black_box(&call));
    let recorded = host.last_launch().map_or(0, |r| r.snapshot().args().len());
    kernel_args_firmware::exit(declared == Ok(true) && black_box(code) == -1 && black_box(recorded) == 7)
}
