//! `fence`: the sandbox's pipeline (`kernel_args_cuda::fence::fence_ptx`: the front end, the
//! rewriter, the printer and the checker) on any text, and what it accepts run on the emulated
//! driver (which first decodes the text as written, calls and module variables included). It never panics; a refusal names a line and says why; a fenced module parses again
//! to the module that was printed, passes the checker again, carries the hidden parameters and
//! cannot be fenced twice (its names are reserved); its aligned form passes the checker too.
//! Each fenced entry the emulator runs, in both forms (only
//! instructions the emulator interprets) is launched on one block of 32 threads with parameters
//! from the input's bytes (where they meet the entry's proofs, as a launcher requires; the
//! proofs' hidden addresses computed as a launcher computes them; the least dynamic shared
//! memory a launcher gives), its fence between two guards and a budget of [`BUDGET`] backward
//! branches a thread, so that every loop ends: it never faults (a hang of warp instructions
//! that never gather is not a fault: the budget bounds loops, not barriers), and nothing
//! outside the fence changes.
#![no_main]

use kernel_args_cuda::fence::{FENCE_PARAMS, FenceRefusal, check, fence_ptx, proofs_in};
use kernel_args_cuda_emulator::{
    DeviceMemory, Fault, KernelParams, LaunchShape, POISON, compile, module_globals, read_ptx,
};
use libfuzzer_sys::fuzz_target;

/// The fence's length (where the module needs no longer: `FencedModule::fence_min_len`) and
/// the guards' on each side, in one allocation.
const FENCE: usize = 4096;
const GUARD: usize = 4096;

/// Each thread's budget of backward branches.
const BUDGET: u64 = 64;

fuzz_target!(|data: &[u8]| {
    let Ok(ptx) = std::str::from_utf8(data) else { return };
    decode_as_written(ptx);
    let fenced = match fence_ptx(ptx) {
        Err(e) => {
            assert!(!e.to_string().is_empty());
            if !matches!(e.reason, FenceRefusal::Unchecked(_)) {
                assert!(
                    e.line <= ptx.lines().count().max(1) + 1,
                    "line {} of {}",
                    e.line,
                    ptx.lines().count()
                );
            }
            return;
        }
        Ok(fenced) => fenced,
    };
    let text = fenced.ptx();
    let module = kernel_args_ptx::parse(text).expect("a fenced module parses");
    assert_eq!(module.to_string(), text, "the printed module is a fixed point of the printer");
    let report = check(text).expect("a fenced module passes the checker");
    assert_eq!(report.clamped, fenced.accesses());
    assert_eq!(report.proven, fenced.proven());
    assert_eq!(report.counted, fenced.counted_branches());
    assert_eq!(report.leaving, fenced.leaving_branches());
    assert!(fenced.entries().iter().all(|e| module.entry(e).is_some()));
    if !fenced.entries().is_empty() {
        assert!(FENCE_PARAMS.iter().all(|p| text.contains(p)));
        let again = fence_ptx(text).map_err(|e| e.reason);
        assert_eq!(again, Err(FenceRefusal::ReservedName), "a fenced module is not fenced twice");
    }
    let aligned = fenced.aligned_ptx();
    let report = check(aligned).expect("the aligned form passes the checker");
    assert_eq!(report.clamped, fenced.accesses());
    assert_eq!(report.proven, fenced.proven());
    // What the launcher gives is at least what the checker's proofs rest on.
    assert_eq!(report.fragment_base, fenced.base_align() == 32);
    assert!(report.fence_min_len <= fenced.fence_min_len());
    // On the emulated driver: what the checker accepted stays inside its fence, in both forms
    // (the aligned form on a fence it is not made for too: it is inside on any fence).
    let fence = FENCE.max(usize::try_from(fenced.fence_min_len()).expect("at most 64 KiB"));
    for text in [text, aligned] {
        run(data, text, fenced.dynamic_shared_min(), fence);
    }
});

/// The emulator's load of `ptx` as written, unfenced: its `.global` variables laid out and
/// each entry decoded with the `.func`s it calls (refused or not, never a panic). Not run:
/// unfenced, nothing bounds its loops.
fn decode_as_written(ptx: &str) {
    let Ok(loaded) = read_ptx(ptx) else { return };
    let Ok(globals) = module_globals(&loaded) else { return };
    let addresses = globals.addresses(0x7000_0000_0000);
    for entry in &loaded.entries {
        let _ = compile(&loaded, entry, &addresses);
    }
}

/// Runs each entry of the fenced module `text` the emulator interprets on one block of 32
/// threads, its fence of `fence` bytes between two guards, with `dynamic` bytes of dynamic
/// shared memory (the least a launcher gives the module): no fault, no guard byte changed, no
/// crossing.
fn run(data: &[u8], text: &str, dynamic: u32, fence: usize) {
    let Ok(loaded) = read_ptx(text) else { return };
    let mut memory = DeviceMemory::new();
    for entry in &loaded.entries {
        let Ok(program) = compile(&loaded, entry, &Default::default()) else { continue };
        let Ok(whole) = memory.alloc(1, GUARD + fence + GUARD) else { return };
        let Ok(flag) = memory.alloc(1, 4) else { return };
        let view = memory.kernel_view(1, false);
        for i in 0..(GUARD + fence + GUARD) as u64 {
            view.store(whole as u64, i, [POISON]).expect("the allocation");
        }
        let base = (whole + GUARD) as u64;
        // The guest's parameters from the input's bytes; the fence's four after them: each
        // thread's budget is `BUDGET` backward branches, so every loop ends.
        let mut buffer = vec![0u8; entry.param_buffer_bytes()];
        for (i, byte) in buffer.iter_mut().enumerate() {
            *byte = data.get(i % data.len().max(1)).copied().unwrap_or(0);
        }
        // Each proof's pointer's address before them, as a launcher gives it: a launch whose
        // arguments do not meet a proof is refused, and not run.
        let proofs = proofs_in(text, &entry.name);
        let mut hidden: Vec<u64> = Vec::new();
        let mut met = 0;
        for proof in &proofs {
            let word = |index: usize| {
                let mut w = [0u8; 8];
                if let Some(p) = entry.params.get(index) {
                    let n = p.size.min(8);
                    w[..n].copy_from_slice(&buffer[p.offset..p.offset + n]);
                }
                w
            };
            match proof.hidden_values(base, fence as u64, word) {
                Ok(values) => {
                    hidden.extend(values.words());
                    met += 1;
                }
                Err(_) => break,
            }
        }
        if met < proofs.len() {
            memory.free_context(1);
            continue;
        }
        hidden.extend([base, fence as u64, flag as u64, BUDGET]);
        let count = entry.params.len();
        if count < hidden.len() {
            continue;
        }
        for (param, value) in entry.params[count - hidden.len()..].iter().zip(hidden) {
            buffer[param.offset..param.offset + 8].copy_from_slice(&value.to_le_bytes());
        }
        let shape = LaunchShape { grid: [1, 1, 1], block: [32, 1, 1] };
        let outcome = program.run(shape, &KernelParams { buffer: &buffer, entry }, &view, dynamic as usize);
        // Warp-synchronous instructions that never gather hang a GPU (the emulator ends the
        // launch as a display GPU's driver watchdog would): the fence bounds memory, not time (docs/RISKS.md).
        assert!(
            matches!(outcome.fault, None | Some(Fault::Hang)),
            "a fenced kernel faulted: {}: {:?}",
            entry.name,
            outcome.fault
        );
        for i in (0..GUARD).chain(GUARD + fence..GUARD + fence + GUARD) {
            assert_eq!(
                view.load::<1>(whole as u64 + i as u64).expect("the allocation")[0],
                POISON,
                "a guard byte changed"
            );
        }
        assert!(view.crossings().is_empty(), "a store crossed the fence's allocation");
        memory.free_context(1);
    }
}
