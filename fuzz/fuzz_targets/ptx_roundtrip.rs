//! `ptx_roundtrip`: the PTX front end (`kernel_args_ptx`) on any text. It never panics; a
//! refusal names a line and column of the text; an accepted module prints text that parses to an
//! equal module, and printing that gives the same text again; every function's registers resolve
//! or are refused without a panic.
#![no_main]

use kernel_args_ptx::{flatten, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse(text) {
        Err(e) => {
            assert!(e.line >= 1 && e.line as usize <= text.lines().count().max(1) + 1, "line {}", e.line);
            assert!(e.column >= 1);
            assert!(!e.to_string().is_empty());
        }
        Ok(module) => {
            let printed = module.to_string();
            let again = parse(&printed)
                .unwrap_or_else(|e| panic!("the printed module does not parse: {e}\n{printed}"));
            assert_eq!(again, module, "the printed module parses to another module:\n{printed}");
            assert_eq!(again.to_string(), printed, "printing is a fixed point");
            for function in module.functions() {
                let _ = flatten(function);
            }
        }
    }
});
