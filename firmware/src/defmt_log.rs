//! defmt's global logger for the main firmware: each defmt frame is written, through
//! semihosting, to a file on the host, [`LOG_FILE`] (relative to QEMU's working directory), kept
//! apart from the text the firmware prints, so that the host tool (`defmt-print -e <elf>`) can
//! decode it (.ci/steps/27-firmware.sh).
//!
//! The logger runs inside a critical section (single core, `cortex-m`'s implementation), so a
//! frame is never interleaved with another; it opens the file on its first frame. Its `unsafe`
//! is what the foreign interfaces need: the semihosting calls, defmt's `Logger` contract, and the
//! encoder's state, which only the holder of the critical section touches.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicBool, Ordering};

use cortex_m_semihosting::syscall;

/// The host file the frames go to (created or truncated on the first frame).
pub const LOG_FILE: &str = "target/kargs-firmware.defmt\0";

/// The semihosting `SYS_OPEN` mode "wb": write, create or truncate, binary.
const OPEN_WRITE_BINARY: usize = 5;

#[defmt::global_logger]
struct SemihostingFile;

/// Whether a frame is being written (re-entry is a bug).
static TAKEN: AtomicBool = AtomicBool::new(false);
/// The interrupt state to restore when the frame ends.
static mut RESTORE: critical_section::RestoreState = critical_section::RestoreState::invalid();
/// The frame encoder.
static mut ENCODER: defmt::Encoder = defmt::Encoder::new();
/// The host file's handle: -1 until the first frame opens it, -2 when it could not be opened.
static mut FILE: isize = -1;

// SAFETY: `acquire` enters a critical section and refuses re-entry, so the encoder and the file
// handle are used by one frame at a time, and `release` leaves the section `acquire` entered.
unsafe impl defmt::Logger for SemihostingFile {
    fn acquire() {
        // SAFETY: paired with the `release` in `release`, which defmt calls after this frame.
        let restore = unsafe { critical_section::acquire() };
        if TAKEN.swap(true, Ordering::Relaxed) {
            // A frame logged while another is being written (from an interrupt, say): none here.
            // SAFETY: the section just entered.
            unsafe { critical_section::release(restore) };
            return;
        }
        let encoder = &raw mut ENCODER;
        // SAFETY: inside the critical section, and no other frame is open (`TAKEN`).
        unsafe {
            RESTORE = restore;
            (*encoder).start_frame(write_to_host);
        }
    }

    unsafe fn flush() {}

    unsafe fn release() {
        let encoder = &raw mut ENCODER;
        // SAFETY: defmt calls `release` once after `acquire`, inside its critical section.
        unsafe {
            (*encoder).end_frame(write_to_host);
            TAKEN.store(false, Ordering::Relaxed);
            critical_section::release(RESTORE);
        }
    }

    unsafe fn write(bytes: &[u8]) {
        let encoder = &raw mut ENCODER;
        // SAFETY: between `acquire` and `release`, inside the critical section.
        unsafe { (*encoder).write(bytes, write_to_host) };
    }
}

/// Writes encoded bytes to the host file, opening it first if needed. A host without the file
/// (semihosting refused it) loses the log, never the firmware's run.
fn write_to_host(bytes: &[u8]) {
    let file = &raw mut FILE;
    // SAFETY: called only by the encoder, inside the logger's critical section.
    let file = unsafe { &mut *file };
    if *file == -1 {
        // SAFETY: semihosting `SYS_OPEN` with a NUL-terminated name, its length without the NUL,
        // and a valid mode; QEMU runs with semihosting enabled (firmware/.cargo/config.toml).
        let handle = unsafe { syscall!(OPEN, LOG_FILE.as_ptr(), OPEN_WRITE_BINARY, LOG_FILE.len() - 1) };
        *file = if handle == usize::MAX { -2 } else { handle as isize };
    }
    if *file >= 0 {
        let mut rest = bytes;
        while !rest.is_empty() {
            // SAFETY: semihosting `SYS_WRITE` of `rest`, readable for its length, to an open handle.
            let left = unsafe { syscall!(WRITE, *file as usize, rest.as_ptr(), rest.len()) };
            match rest.get(rest.len().saturating_sub(left)..) {
                Some(unwritten) if left != 0 && left < rest.len() => rest = unwritten,
                _ => break,
            }
        }
    }
}
