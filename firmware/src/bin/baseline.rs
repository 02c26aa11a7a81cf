//! The footprint baseline of `scripts/firmware-size.sh`: cortex-m-rt's start-up and a
//! semihosting exit, nothing else. The parser's code size is the `parser` binary's flash minus
//! this one's.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

use cortex_m_rt::entry;
use panic_semihosting as _;

#[entry]
fn main() -> ! {
    kernel_args_firmware::exit(true)
}
