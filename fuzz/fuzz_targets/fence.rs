//! `fence`: the PTX rewriter (`kernel_args_cuda::fence`) on any text. It never panics; a refusal
//! names a line of the text and says why; a fenced module carries the hidden parameters and
//! cannot be fenced twice (its names are reserved). That the fixtures' fenced entries parse
//! again, with their own parameters then the three hidden ones, is the rewriter's unit test.
//!
//! The same text is fenced for its first entry with a declaration, where the bounds proofs run
//! (`fence_declared_ptx`): it refuses exactly what `fence_ptx` refuses, and every access is
//! either proven or fenced.
#![no_main]

use kernel_args::Declaration;
use kernel_args_cuda::fence::{FENCE_PARAMS, FenceRefusal, fence_declared_ptx, fence_ptx};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(ptx) = std::str::from_utf8(data) else { return };
    let plain = fence_ptx(ptx);
    if let Some(entry) = ptx.split(".entry").nth(1).and_then(|rest| rest.split(['(', ' ', '\n']).find(|w| !w.is_empty())) {
        let declaration =
            Declaration::parse("k(a: &[f32; n], b: &mut [u8; grid.x * block.x], n: u32)").expect("a declaration");
        let declared = fence_declared_ptx(ptx, entry, &declaration);
        match (&plain, &declared) {
            (Ok(plain), Ok(declared)) => {
                assert_eq!(plain.accesses(), declared.accesses() + declared.proven(), "every access proven or fenced");
            }
            (Err(plain), Err(declared)) => assert_eq!(plain, declared),
            _ => panic!("fenced one way and refused the other: {plain:?} {declared:?}"),
        }
    }
    match plain {
        Err(e) => {
            assert!(e.line >= 1 && e.line <= ptx.lines().count().max(1) + 1, "line {} of {}", e.line, ptx.lines().count());
            assert!(!e.to_string().is_empty());
        }
        Ok(fenced) => {
            let text = fenced.ptx();
            assert!(text.len() >= ptx.len(), "the rewriter only adds and replaces");
            if !fenced.entries().is_empty() {
                assert!(FENCE_PARAMS.iter().all(|p| text.contains(p)));
                let again = fence_ptx(text).map_err(|e| e.reason);
                assert_eq!(again, Err(FenceRefusal::ReservedName), "a fenced module is not fenced twice");
            }
        }
    }
});
