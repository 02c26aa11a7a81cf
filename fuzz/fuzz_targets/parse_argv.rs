//! `parse_argv`: arbitrary bytes against an arbitrary guest memory length.
//!
//! Input: 8 bytes of little-endian memory length, then the argv buffer (see `ArgvInput`).
//! The buffer is parsed against a length-only memory of that length (up to 4 GiB), and against
//! a real memory of `length % 4097` bytes, borrowed both exclusively and shared, with the full
//! and a small output capacity. Every parse must keep the properties of `check::check_parse`
//! (never a panic, only the three argv codes, windows inside memory, exact re-encoding), and
//! the real memories must give the same result as a length-only memory of the same length.
#![no_main]

use kernel_args_core::GuestMemory;
use kernel_args_fuzz::ArgvInput;
use kernel_args_fuzz::check::{HostSpan, check_parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(input) = ArgvInput::split(data) else { return };
    let _ = check_parse::<128>(input.argv, &GuestMemory::length_only(input.memory_len), None);

    let small_len = input.memory_len % 4097;
    let expected = check_parse::<128>(input.argv, &GuestMemory::length_only(small_len), None);
    let mut bytes = vec![0u8; usize::try_from(small_len).unwrap()];
    let span = HostSpan { base: bytes.as_ptr().addr(), len: bytes.len() };
    let exclusive = check_parse::<128>(input.argv, &GuestMemory::exclusive(&mut bytes), Some(span));
    assert_eq!(exclusive, expected, "an exclusive memory parses differently from its length");
    let shared = check_parse::<128>(input.argv, &GuestMemory::shared(&bytes), Some(span));
    assert_eq!(shared, expected, "a shared memory parses differently from its length");
    // A small host's capacity: the record cap drops to 3, nothing else changes.
    let _ = check_parse::<3>(input.argv, &GuestMemory::exclusive(&mut bytes), Some(span));
});
