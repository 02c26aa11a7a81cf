//! What the fence's tests on the emulator's API share (`fence_emulated.rs`, `corpus.rs`,
//! `corpus_driver.rs`): the emulator's API kit, which its own API tests use first
//! (`cuda-emulator/tests/common/`, included here as it is), the layout of a launch's arena,
//! the fence's hidden parameters, and the corpus's cases (`corpus.rs`).

#![allow(dead_code)] // each test file uses its own part

#[path = "../../../cuda-emulator/tests/common/mod.rs"]
mod api;
pub mod corpus;

pub use api::*;

/// Where each buffer of a launch lies in its arena: 256-byte aligned, back to back; and the
/// arena's length (at least the shortest fence).
pub fn layout(sizes: &[usize]) -> (Vec<usize>, usize) {
    let mut at = 0;
    let offsets = sizes
        .iter()
        .map(|&size| {
            let offset = at;
            at += size.next_multiple_of(256);
            offset
        })
        .collect();
    (offsets, at.max(kernel_args_cuda::fence::MIN_FENCE_LEN as usize))
}

/// The fence's four hidden parameters: its base and length, the flag's address, and each
/// thread's budget of backward branches (the launcher's default).
pub fn fence_params(base: u64, len: u64, flag: u64) -> Vec<Vec<u8>> {
    fence_params_with(base, len, flag, kernel_args::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD)
}

/// [`fence_params`] with a budget of `budget` backward branches per thread.
pub fn fence_params_with(base: u64, len: u64, flag: u64, budget: u32) -> Vec<Vec<u8>> {
    [base, len, flag, u64::from(budget)].map(|v| v.to_le_bytes().to_vec()).to_vec()
}

/// The hidden parameters of a launch of entry `entry` of the fenced module `ptx` (its text, in
/// either form) with the guest's `params` (each its bytes; pointers as offsets into the fence)
/// on a fence at `base` of `len` bytes: each proof's pointer's address
/// (`kernel_args_cuda::fence::Proof`), as a launcher gives it, then the fence's four. `None`
/// where the arguments do not meet a proof: a launcher refuses such a launch.
pub fn hidden_params(
    ptx: &str,
    entry: &str,
    params: &[Vec<u8>],
    (base, len, flag, budget): (u64, u64, u64, u32),
) -> Option<Vec<Vec<u8>>> {
    let word = |i: usize| {
        let mut w = [0u8; 8];
        if let Some(p) = params.get(i) {
            let n = p.len().min(8);
            w[..n].copy_from_slice(&p[..n]);
        }
        w
    };
    let mut out = Vec::new();
    for proof in kernel_args_cuda::fence::proofs_in(ptx, entry) {
        let values = proof.hidden_values(base, len, word).ok()?;
        out.extend(values.words().map(|w| w.to_le_bytes().to_vec()));
    }
    out.extend(fence_params_with(base, len, flag, budget));
    Some(out)
}

/// [`hidden_params`] with the default budget, for a launch whose arguments meet the entry's
/// proofs.
pub fn fenced_params(
    ptx: &str,
    entry: &str,
    params: &[Vec<u8>],
    base: u64,
    len: u64,
    flag: u64,
) -> Vec<Vec<u8>> {
    let budget = kernel_args::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD;
    hidden_params(ptx, entry, params, (base, len, flag, budget))
        .expect("the arguments meet the entry's proofs")
}
