//! A test that needs a CUDA device (a GPU, or the emulated driver) opens it through
//! [`or_skip`]: where there is none it prints `SKIPPED <test>: <reason>` past the test
//! harness's capture and returns `None`, so the suite passes on a machine without one, unless
//! `KARGS_CUDA_REQUIRE_DEVICE=1` ([`REQUIRE_DEVICE_ENV`]) is set (as CI sets it against the
//! emulated driver), which makes a skip a failure. CI's CUDA step also fails on any `SKIPPED`
//! line in its log.
//!
//! Generic over the device and its error, so that the test kit depends on `kernel-args-core`
//! alone.

use std::fmt::Display;
use std::io::Write as _;

/// The environment variable that turns a skip into a failure (`1`).
pub const REQUIRE_DEVICE_ENV: &str = "KARGS_CUDA_REQUIRE_DEVICE";

/// Writes `line` to standard error, which the test harness does not capture.
pub fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Says that `test` cannot run, and why: `SKIPPED <test>: <reason>`.
///
/// # Panics
///
/// Under `KARGS_CUDA_REQUIRE_DEVICE=1`: a test that must run cannot.
pub fn skip(test: &str, reason: &dyn Display) {
    if std::env::var_os(REQUIRE_DEVICE_ENV).is_some_and(|v| v == "1") {
        panic!("{test}: {REQUIRE_DEVICE_ENV}=1, but it cannot run: {reason}");
    }
    say(&format!("SKIPPED {test}: {reason}"));
}

/// The device `opened`, or `None` after a [`skip`] where its error is one of a machine without
/// a device (`absent`: no driver, no device of that ordinal, a mode the device lacks).
///
/// # Panics
///
/// For any other error (the test's own setup is wrong), and as [`skip`].
pub fn or_skip<D, E: Display>(
    test: &str,
    opened: Result<D, E>,
    absent: impl FnOnce(&E) -> bool,
) -> Option<D> {
    match opened {
        Ok(device) => Some(device),
        Err(e) if absent(&e) => {
            skip(test, &e);
            None
        }
        Err(e) => panic!("{test}: device setup failed with {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_passed_on_and_a_setup_error_is_a_failure() {
        assert_eq!(or_skip("t", Ok::<u8, String>(7), |_| true), Some(7));
        let wrong =
            std::panic::catch_unwind(|| or_skip("t", Err::<u8, _>("bad kernel".to_owned()), |_| false));
        assert!(wrong.is_err());
    }
}
