//! The kernel corpus (`cuda-backend/kernels/corpus/`: kernels written the way CUDA users write
//! them, compiled by nvcc 11.8 for sm_90) on the emulated driver: every entry the fence accepts
//! and the emulator runs (38 of 39: not `printf`'s, which it does not load, listed with the
//! first thing it does not run; a module's `__device__` variables are at the start of the
//! fence, before its buffers) computes the same bytes fenced as unfenced, with the fence around one
//! arena that holds all its buffers (a staged launch's layout), and leaves the flag clear. What
//! the fence refuses is listed by name, so a change in what it accepts changes this test. A
//! failing device-side `assert` stops its thread and sets the flag; the launch succeeds and the
//! context goes on. Every entry runs with the default budget of backward branches, and the
//! most any of its threads takes at these sizes is measured. These are the emulator's results,
//! not a GPU's; `corpus_driver.rs` runs the same launches through a driver library, a GPU's
//! included. The cases live in `common/corpus.rs`, which both share.

#![allow(unsafe_code)] // the emulated driver's C entry points, each call with its `// SAFETY:`

mod common;

use common::corpus::*;
use common::*;
use kernel_args_cuda::fence::{
    FLAG_BUDGET, FLAG_REACHED_OUT, FLAG_TRAPPED, FenceRefusal, MIN_FENCE_LEN, fence_ptx,
};
use kernel_args_cuda_emulator::api::EmulatedDriver;
use kernel_args_cuda_emulator::result::*;

/// Runs `case` from `ptx` (fenced when `fenced`, around its arena, with a zeroed flag): the
/// launch's result, the arena's bytes afterwards and the flag.
fn run(case: &Case, ptx: &str, fenced: bool) -> (CuResult, Vec<u8>, u32) {
    let (result, bytes, flag, _) = run_counted(case, ptx, fenced);
    (result, bytes, flag)
}

/// [`run`], with the PTX instructions the launch executed.
fn run_counted(case: &Case, ptx: &str, fenced: bool) -> (CuResult, Vec<u8>, u32, u64) {
    run_with(case, ptx, fenced.then_some(kernel_args::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD))
}

/// [`run_counted`], fenced with a budget of `budget` backward branches a thread where given.
fn run_with(case: &Case, ptx: &str, budget: Option<u32>) -> (CuResult, Vec<u8>, u32, u64) {
    run_in(case, ptx, budget, false)
}

/// Runs `case` from `ptx`, fenced with a budget of `budget` where given: around its arena, or
/// with `aligned` as a launcher with `CudaOptions::aligned_fence` runs the aligned form, the
/// arena's length rounded up to a power of two, at an address aligned to it inside an
/// allocation twice as long. The buffers' bytes afterwards (from the first buffer's start, as
/// `layout` places them), the flag and the instructions executed.
fn run_in(case: &Case, ptx: &str, budget: Option<u32>, aligned: bool) -> (CuResult, Vec<u8>, u32, u64) {
    let Arena { offsets, buffers_at, variables, len } = common::corpus::arena(case);
    // At least the shortest fence the module's clamps rest on, as a launcher gives it.
    let shortest = match budget {
        Some(_) => kernel_args_cuda::fence::check(ptx).map_or(0, |r| r.fence_min_len as usize),
        None => 0,
    };
    let fence = if aligned {
        len.max(shortest).max(MIN_FENCE_LEN as usize).next_power_of_two()
    } else {
        len.max(shortest).next_multiple_of(16)
    };
    // Fresh either way (the emulator's poison between the buffers).
    let whole = alloc(if aligned { 2 * fence } else { fence }).unwrap();
    let arena = if aligned { whole.next_multiple_of(fence as u64) } else { whole };
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    if budget.is_some() && !variables.is_empty() {
        assert_eq!(upload(arena, &variables), CUDA_SUCCESS);
    }
    for (buffer, &offset) in case.buffers.iter().zip(&offsets) {
        assert_eq!(upload(arena + offset as u64, buffer), CUDA_SUCCESS);
    }
    // A fenced kernel's pointers are offsets into its fence (the arena); an unfenced one's are
    // addresses.
    let start = if budget.is_some() { 0 } else { arena };
    let mut params: Vec<Vec<u8>> = case.params.iter().map(|p| p.bytes(start, &offsets)).collect();
    if let Some(budget) = budget {
        let hidden = hidden_params(ptx, case.entry, &params, (arena, fence as u64, flag, budget));
        params.extend(hidden.expect("the case's arguments meet the entry's proofs"));
    }
    let f = function(load(ptx), case.entry).unwrap();
    let result = launch_with(f, case.grid, case.block, case.shared, &mut params);
    // The buffers' bytes (a fenced module's variables before them are the fence's).
    let mut bytes = vec![0u8; len - buffers_at];
    assert_eq!(download(arena + buffers_at as u64, &mut bytes), CUDA_SUCCESS);
    let mut flag_bytes = [0u8; 4];
    assert_eq!(download(flag, &mut flag_bytes), CUDA_SUCCESS);
    (result, bytes, u32::from_le_bytes(flag_bytes), instructions(f))
}

/// The modules the emulated driver loads as nvcc wrote them; the others, with the first thing
/// it does not run (a GPU runs them all).
#[test]
fn which_modules_the_emulator_loads() {
    let _session = session();
    let mut loads = Vec::new();
    for (name, ptx) in CORPUS {
        match load_on(EmulatedDriver::Cuda12_8, ptx) {
            Ok(_) => loads.push((*name, String::new())),
            Err((code, log, _)) => {
                assert_eq!(code, CUDA_ERROR_NOT_SUPPORTED, "{name}");
                let what = log.rsplit("does not run this: ").next().unwrap_or_default();
                loads.push((*name, what.to_owned()));
            }
        }
    }
    let refused: Vec<(&str, &str)> =
        loads.iter().filter(|(_, why)| !why.is_empty()).map(|(n, why)| (*n, why.as_str())).collect();
    let expected = [(
        "printf",
        "`call.uni (retval0), vprintf, (param0, param1)` (a call of `vprintf`: no body in the module)",
    )];
    assert_eq!(refused, expected);
}

#[test]
fn what_the_fence_accepts_and_refuses_by_name() {
    let mut verdicts: Vec<(&str, Result<usize, FenceRefusal>)> = Vec::new();
    for (name, ptx) in CORPUS {
        verdicts.push((name, fence_ptx(ptx).map(|m| m.entries().len()).map_err(|e| e.reason)));
    }
    assert_eq!(
        verdicts,
        [
            ("assert", Ok(1)),
            ("cp_async", Ok(1)),
            ("device_variable", Ok(1)),
            ("elementwise", Ok(8)),
            ("gather", Ok(5)),
            ("lookup", Ok(2)),
            ("math", Ok(2)),
            ("noinline", Ok(1)),
            ("printf", Ok(1)),
            ("reduce", Ok(7)),
            ("std_headers", Ok(2)),
            ("tiled", Ok(5)),
            ("wmma", Ok(1)),
            ("wmma_shared", Ok(2)),
        ]
    );
}

#[test]
fn every_entry_the_emulator_runs_computes_the_same_bytes_fenced() {
    let _session = session();
    let cases = cases();
    assert_eq!(cases.len(), 38);
    let mut counts = Vec::new();
    for case in &cases {
        let ptx = module(case.module);
        let fenced = fence_ptx(ptx).unwrap();
        let (plain_result, plain, _, plain_count) = run_counted(case, ptx, false);
        let (fenced_result, with_fence, flag, fenced_count) = run_counted(case, fenced.ptx(), true);
        counts.push((case.entry, plain_count, fenced_count));
        assert_eq!((plain_result, fenced_result), (CUDA_SUCCESS, CUDA_SUCCESS), "{}", case.entry);
        assert!(plain == with_fence, "{}: fenced and unfenced differ", case.entry);
        assert_eq!(flag, 0, "{}: nothing left the fence", case.entry);
        // The kernel wrote something: the arena is not what was uploaded.
        let uploaded: Vec<u8> = {
            let sizes: Vec<usize> = case.buffers.iter().map(Vec::len).collect();
            let (offsets, len) = layout(&sizes);
            let mut bytes = vec![0u8; len];
            for (b, &o) in case.buffers.iter().zip(&offsets) {
                bytes[o..o + b.len()].copy_from_slice(b);
            }
            bytes
        };
        assert!(plain != uploaded, "{}: the launch changed nothing", case.entry);
    }
    // The PTX instructions each launch executed, unfenced and fenced (docs/performance.md).
    for (entry, plain, fenced) in &counts {
        eprintln!("| `{entry}` | {plain} | {fenced} | {:.2} |", *fenced as f64 / *plain as f64);
    }
    assert_eq!(counts, EXECUTED);
}

/// Every entry the emulated driver runs computes the same bytes in the fence's aligned form as
/// unfenced, with the flag clear and no store across an allocation (the PTX instructions
/// executed in each form are printed).
#[test]
fn every_entry_computes_the_same_bytes_in_the_aligned_form() {
    let session = session();
    for case in &cases() {
        let ptx = module(case.module);
        let fenced = fence_ptx(ptx).unwrap();
        let (plain_result, plain, _, _) = run_counted(case, ptx, false);
        let (_, _, _, clamped_count) = run_counted(case, fenced.ptx(), true);
        let budget = Some(kernel_args::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD);
        let (result, aligned, flag, aligned_count) = run_in(case, fenced.aligned_ptx(), budget, true);
        assert_eq!((plain_result, result), (CUDA_SUCCESS, CUDA_SUCCESS), "{}", case.entry);
        assert!(plain == aligned, "{}: aligned and unfenced differ", case.entry);
        assert_eq!(flag, 0, "{}: nothing left the fence", case.entry);
        assert_eq!(kernel_args_cuda_emulator::control::crossings(session.ordinal), 0, "{}", case.entry);
        eprintln!("| `{}` | {clamped_count} | {aligned_count} |", case.entry);
    }
}

/// The tensor-core entry computes each warp's product, fenced (small whole numbers: every sum
/// is exact, on the emulator and on a GPU's tensor cores). A launch of more warps than its
/// buffers hold tiles, or a stride that reaches past the fence, is clamped whole: the fragments
/// land inside the fence, the flag says so, and nothing is stored across an allocation, where
/// the same launch unfenced stores past its arena.
#[test]
fn the_tensor_core_entry_multiplies_and_its_fragments_stay_in_the_fence() {
    let session = session();
    let cases = cases();
    let case = cases.iter().find(|c| c.entry == "wmma_gemm_16").unwrap();
    let ptx = module("wmma");
    let fenced = fence_ptx(ptx).unwrap();
    let (result, bytes, flag) = run(case, fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    let (offsets, _) = layout(&case.buffers.iter().map(Vec::len).collect::<Vec<_>>());
    let half = |b: &[u8], i: usize| half::f16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32();
    let (a, b) = (&case.buffers[0], &case.buffers[1]);
    for tile in 0..2 {
        for r in 0..16 {
            for c in 0..16 {
                // A row-major, B column-major, D row-major, each tile 256 elements on.
                let want: f32 = (0..16)
                    .map(|k| half(a, tile * 256 + r * 16 + k) * half(b, tile * 256 + c * 16 + k))
                    .sum();
                let at = offsets[2] + 4 * (tile * 256 + r * 16 + c);
                let got = f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
                assert_eq!(got, want, "tile {tile}, D[{r}][{c}]");
            }
        }
    }
    // Four warps, four tiles, buffers for two.
    let past = || {
        let mut past = case_like(case);
        past.block = [128, 1, 1];
        past.params[3] = P::I32(4);
        past
    };
    let (result, _, flag) = run(&past(), fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, FLAG_REACHED_OUT));
    assert_eq!(kernel_args_cuda_emulator::control::crossings(session.ordinal), 0);
    // A stride of 2^20 elements: each fragment's last row 30 MiB past its first.
    let wide = ptx.replace("mov.u32 \t%r8, 16;", "mov.u32 \t%r8, 1048576;");
    assert_ne!(wide, ptx);
    let (result, _, flag) = run(case, fence_ptx(&wide).unwrap().ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, FLAG_REACHED_OUT));
    assert_eq!(kernel_args_cuda_emulator::control::crossings(session.ordinal), 0);
    // Unfenced, the third and fourth warps' tiles of D are stored past the arena.
    let (result, _, _) = run(&past(), ptx, false);
    assert_eq!(result, CUDA_SUCCESS);
    assert!(kernel_args_cuda_emulator::control::crossings(session.ordinal) > 0);
}

/// The tensor-core entries that load their fragments from shared memory compute their
/// products, fenced: `wmma_gemm_shared`'s 32x32 product through two shared tiles per step of
/// `k`, and `wmma_tile_either`'s one tile through generic addresses into its shared copies or
/// into global memory (the same product either way).
#[test]
fn the_shared_tensor_core_entries_multiply() {
    let _session = session();
    let cases = cases();
    let fenced = fence_ptx(module("wmma_shared")).unwrap();
    let half = |b: &[u8], i: usize| half::f16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32();
    let f32_at = |b: &[u8], at: usize| f32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let gemm = cases.iter().find(|c| c.entry == "wmma_gemm_shared").unwrap();
    let (result, bytes, flag) = run(gemm, fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    let (offsets, _) = layout(&gemm.buffers.iter().map(Vec::len).collect::<Vec<_>>());
    let (a, b) = (&gemm.buffers[0], &gemm.buffers[1]);
    for r in 0..32 {
        for c in 0..32 {
            // A and B row-major, 32x32.
            let want: f32 = (0..32).map(|k| half(a, r * 32 + k) * half(b, k * 32 + c)).sum();
            assert_eq!(f32_at(&bytes, offsets[2] + 4 * (r * 32 + c)), want, "C[{r}][{c}]");
        }
    }
    let either = cases.iter().find(|c| c.entry == "wmma_tile_either").unwrap();
    let (offsets, _) = layout(&either.buffers.iter().map(Vec::len).collect::<Vec<_>>());
    let (a, b) = (&either.buffers[0], &either.buffers[1]);
    for from_shared in [1, 0] {
        let mut launch = case_like(either);
        launch.params[3] = P::I32(from_shared);
        let (result, bytes, flag) = run(&launch, fenced.ptx(), true);
        assert_eq!((result, flag), (CUDA_SUCCESS, 0), "from_shared {from_shared}");
        for r in 0..16 {
            for c in 0..16 {
                // A row-major, B column-major, 16x16.
                let want: f32 = (0..16).map(|k| half(a, r * 16 + k) * half(b, c * 16 + k)).sum();
                assert_eq!(f32_at(&bytes, offsets[2] + 4 * (r * 16 + c)), want, "{from_shared}: D[{r}][{c}]");
            }
        }
    }
}

/// A case with `case`'s launch and buffers.
fn case_like(case: &Case) -> Case {
    Case {
        module: case.module,
        entry: case.entry,
        grid: case.grid,
        block: case.block,
        shared: case.shared,
        buffers: case.buffers.clone(),
        params: case.params.clone(),
    }
}

/// What [`every_entry_the_emulator_runs_computes_the_same_bytes_fenced`] measures: each entry's
/// executed PTX instructions, unfenced and fenced.
const EXECUTED: &[(&str, u64, u64)] = &[
    ("vector_add", 8932, 18_288),
    ("saxpy_grid_stride", 11_920, 23_352),
    ("scale_float4", 2508, 4844),
    ("relu_inplace", 8632, 19_288),
    ("fill_u8", 3522, 7900),
    ("_Z5axpbyIfEvPKT_PS0_S0_S0_i", 5632, 11_008),
    ("_Z5axpbyIdEvPKT_PS0_S0_S0_i", 5632, 11_008),
    ("gather", 5016, 11_200),
    ("scatter_add", 5016, 11_200),
    ("spmv_csr", 2864, 6144),
    ("embedding_forward", 4944, 9168),
    ("bincount", 5684, 11_715),
    ("block_reduce_sum", 98_108, 171_556),
    ("warp_reduce_atomic", 18_280, 32_472),
    ("count_positive_ballot", 5370, 10_728),
    ("any_nan", 2807, 5411),
    ("histogram_shared", 57_648, 137_976),
    ("dot_product", 20_316, 33_956),
    ("max_int_atomic", 3760, 8232),
    ("clamp_to_int16", 2280, 4972),
    ("minmax_pairs", 1290, 3002),
    ("conv1d_const", 8720, 17_272),
    ("matmul_tiled", 196_696, 317_040),
    ("transpose_padded", 75_018, 128_540),
    ("stencil5", 29_888, 48_480),
    ("scan_block", 21_714, 47_040),
    ("add_bias_2d", 25_032, 44_624),
    ("wmma_gemm_16", 1728, 3712),
    ("wmma_gemm_shared", 60_288, 109_056),
    ("wmma_tile_either", 3008, 8928),
    ("async_reverse", 8448, 17_152),
    ("popcount_bytes", 7424, 17_152),
    ("weighted_window", 1958, 5263),
    ("checked_copy", 2380, 5516),
    ("smooth_noinline", 15_618, 26_314),
    ("count_launch", 452, 776),
    ("gelu_precise", 2081, 3825),
    ("trig_pow", 6743, 10_815),
];

/// The most backward branches one thread of each entry takes at the sizes these tests launch:
/// the smallest budget it runs with, found by bisection (one less stops a thread, which sets
/// the budget's byte of the flag). Every entry is far below the default budget.
#[test]
fn the_corpus_takes_far_less_than_the_default_budget() {
    let _session = session();
    let default = kernel_args::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD;
    let mut needed = Vec::new();
    for case in cases() {
        let fenced = fence_ptx(module(case.module)).unwrap();
        let spent = |budget: u32| {
            let (result, _, flag, _) = run_with(&case, fenced.ptx(), Some(budget));
            assert_eq!(result, CUDA_SUCCESS, "{}", case.entry);
            flag & FLAG_BUDGET != 0
        };
        assert!(!spent(default), "{}: stopped by the default budget", case.entry);
        let (mut low, mut high) = (0u32, 1u32 << 16);
        assert!(!spent(high), "{}: more than 2^16", case.entry);
        while low < high {
            let middle = low + (high - low) / 2;
            if spent(middle) { low = middle + 1 } else { high = middle }
        }
        needed.push((case.entry, low));
    }
    for (entry, budget) in &needed {
        eprintln!("| `{entry}` | {budget} |");
    }
    assert_eq!(needed, NEEDED);
    assert!(NEEDED.iter().all(|(_, b)| u64::from(*b) * 1000 < u64::from(default)));
}

/// What [`the_corpus_takes_far_less_than_the_default_budget`] measures.
const NEEDED: &[(&str, u32)] = &[
    ("vector_add", 0),
    ("saxpy_grid_stride", 7),
    ("scale_float4", 0),
    ("relu_inplace", 0),
    ("fill_u8", 0),
    ("_Z5axpbyIfEvPKT_PS0_S0_S0_i", 0),
    ("_Z5axpbyIdEvPKT_PS0_S0_S0_i", 0),
    ("gather", 0),
    ("scatter_add", 0),
    ("spmv_csr", 2),
    ("embedding_forward", 0),
    ("bincount", 0),
    ("block_reduce_sum", 7),
    ("warp_reduce_atomic", 3),
    ("count_positive_ballot", 0),
    ("any_nan", 0),
    ("histogram_shared", 7),
    ("dot_product", 2),
    ("max_int_atomic", 0),
    ("clamp_to_int16", 0),
    ("minmax_pairs", 0),
    ("conv1d_const", 0),
    ("matmul_tiled", 1),
    ("transpose_padded", 0),
    ("stencil5", 0),
    ("scan_block", 5),
    ("add_bias_2d", 0),
    ("wmma_gemm_16", 0),
    ("wmma_gemm_shared", 3),
    ("wmma_tile_either", 1),
    ("async_reverse", 0),
    ("popcount_bytes", 0),
    ("weighted_window", 0),
    ("checked_copy", 0),
    ("smooth_noinline", 0),
    ("count_launch", 0),
    ("gelu_precise", 0),
    ("trig_pow", 5),
];

#[test]
fn a_failing_assert_stops_its_thread_sets_the_flag_and_the_context_goes_on() {
    let _session = session();
    let ptx = fence_ptx(module("assert")).unwrap();
    assert_eq!(ptx.asserts(), 1);
    // Element 40 is negative: its thread stops before its copy; every other thread copies.
    let inputs: Vec<i32> = (0..100).map(|i| if i == 40 { -1 } else { i }).collect();
    let failing = case(
        "assert",
        "checked_copy",
        1,
        128,
        vec![ints(inputs.clone()), vec![0xee; 400]],
        &[P::Buf(0), P::Buf(1), P::I32(100)],
    );
    let (result, bytes, flag) = run(&failing, ptx.ptx(), true);
    // The flag's byte for a trap or assert, not the one for an access outside.
    assert_eq!((result, flag), (CUDA_SUCCESS, FLAG_TRAPPED));
    let out = &bytes[512..912];
    for (i, chunk) in out.chunks(4).enumerate() {
        let expected = if i == 40 { [0xee; 4] } else { (i as i32).to_le_bytes() };
        assert_eq!(chunk, expected, "element {i}");
    }
    // `n` past the arena: the proof the fence leaves `checked_copy`'s read of `in[i]` unclamped
    // on does not hold (384 elements of 4 bytes from offset 0 end past the arena's 1024 bytes),
    // so a launcher refuses the launch (`InvalidArgs`) and nothing runs.
    assert_eq!(kernel_args_cuda::fence::proofs_in(ptx.ptx(), "checked_copy").len(), 1);
    let past = [0u64.to_le_bytes().to_vec(), 512u64.to_le_bytes().to_vec(), 384i32.to_le_bytes().to_vec()];
    assert!(hidden_params(ptx.ptx(), "checked_copy", &past, (0, 1024, 0, 0)).is_none());
    assert!(
        hidden_params(
            ptx.ptx(),
            "checked_copy",
            &past[..2].iter().cloned().chain([100i32.to_le_bytes().to_vec()]).collect::<Vec<_>>(),
            (0, 1024, 0, 0)
        )
        .is_some()
    );
    // The next launch of the same module runs and leaves the flag clear.
    let passing = case(
        "assert",
        "checked_copy",
        1,
        128,
        vec![ints(0..100), vec![0; 400]],
        &[P::Buf(0), P::Buf(1), P::I32(100)],
    );
    let (result, bytes, flag) = run(&passing, ptx.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    assert_eq!(&bytes[512..912], &ints(0..100)[..]);
}

/// The lookup module's table, moved to constant memory by the fence, read as the kernel's
/// source says (the same-bytes tests hold it to the module as nvcc wrote it, the table in
/// global memory; this holds both to the source's arithmetic).
#[test]
fn a_table_moved_to_constant_memory_reads_what_the_source_says() {
    let _session = session();
    let fenced = fence_ptx(module("lookup")).unwrap();
    assert_eq!((fenced.tables(), fenced.dropped()), (1, 1));
    let input: Vec<u8> = (0..=255u8).collect();
    let popcount = case(
        "lookup",
        "popcount_bytes",
        1,
        256,
        vec![input.clone(), vec![0; 256]],
        &[P::Buf(0), P::Buf(1), P::I32(256)],
    );
    let (result, bytes, flag) = run(&popcount, fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    let expected: Vec<u8> = input.iter().map(|b| b.count_ones() as u8).collect();
    assert_eq!(&bytes[256..512], &expected[..]);
    let weights = [0.05f32, 0.1, 0.15, 0.2, 0.2, 0.15, 0.1, 0.05];
    let values: Vec<f32> = (0..64).map(|i| (i % 7) as f32).collect();
    let window = case(
        "lookup",
        "weighted_window",
        1,
        64,
        vec![floats(values.clone()), vec![0; 256]],
        &[P::Buf(0), P::Buf(1), P::I32(64)],
    );
    let (result, bytes, flag) = run(&window, fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    let out = f32s(&bytes[256..512]);
    for i in 0..=56 {
        let expected: f32 = (0..8).map(|k| weights[k] * values[i + k]).sum();
        assert!((out[i] - expected).abs() < 1e-5, "element {i}: {} against {expected}", out[i]);
    }
}

/// The math library without fast math, fenced, computes what the source says (the same-bytes
/// tests hold it to the module as nvcc wrote it, where `sinf`'s slow path reads its table,
/// `__cudart_i2opi_f`, from global memory, not from the constant memory the fence moves it to;
/// this holds both to the host's functions): `tanhf` inline, and `sinf` (its large arguments reduced through the table and the thread's local
/// memory), `powf` and `expf`, against the host's `f64` functions. The emulator computes
/// `ex2.approx` and `rcp.approx` exactly rounded where a GPU's may differ in the last bits, so
/// the bytes are held to a relative error, not to equality.
#[test]
fn the_math_library_fenced_computes_what_the_source_says() {
    let _session = session();
    let fenced = fence_ptx(module("math")).unwrap();
    assert_eq!(fenced.tables(), 1, "__cudart_i2opi_f in constant memory");
    let mut values: Vec<f32> = (0..96).map(|i| (i as f32 - 48.0) * 0.0625).collect();
    // Past 105615 `sinf` takes its slow path: the table and local memory.
    values.extend([2.0e5f32, 1.0e6, 3.5e6, 123_456.78, 4.0e7, 1.0e9, 3.0e12, 7.0e20]);
    let n = values.len();
    let out = layout(&[4 * n, 4 * n]).0[1];
    let close = |got: f32, want: f64, what: &str| {
        let tolerance = 2e-6 * want.abs().max(1.0);
        assert!((f64::from(got) - want).abs() <= tolerance, "{what}: {got} against {want}");
    };
    /// What the source computes, in `f64`.
    type Reference = fn(f64) -> f64;
    let references: [(&str, Reference); 2] = [
        ("gelu_precise", |x| 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())),
        ("trig_pow", |x| x.sin() + x.abs().powf(1.5) + (-x).exp()),
    ];
    for (entry, reference) in references {
        let launch = case(
            "math",
            entry,
            1,
            128,
            vec![floats(values.clone()), vec![0; 4 * n]],
            &[P::Buf(0), P::Buf(1), P::I32(n as i32)],
        );
        let (result, bytes, flag) = run(&launch, fenced.ptx(), true);
        assert_eq!((result, flag), (CUDA_SUCCESS, 0), "{entry}");
        for (&x, got) in values.iter().zip(f32s(&bytes[out..out + 4 * n])) {
            close(got, reference(f64::from(x)), &format!("{entry}({x})"));
        }
    }
}

/// The `__noinline__` device function, inlined by the fence into its caller, computes what its
/// source says: each element smoothed with its neighbours (the same-bytes tests hold it to the
/// module as nvcc wrote it, with its call; this holds both to the source's arithmetic); and an
/// `n` past the windows reaches outside, is redirected inside and sets the flag.
#[test]
fn a_device_function_inlined_by_the_fence_computes_what_the_source_says() {
    let _session = session();
    let fenced = fence_ptx(module("noinline")).unwrap();
    assert_eq!((fenced.inlined(), fenced.dropped()), (1, 1), "the call inlined, the .func dropped");
    assert!(!fenced.ptx().contains("call") && !fenced.ptx().contains(".func"));
    let n = 300usize;
    let values: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 * 0.5).collect();
    let smooth = case(
        "noinline",
        "smooth_noinline",
        2,
        256,
        vec![floats(values.clone()), vec![0; 4 * n]],
        &[P::Buf(0), P::Buf(1), P::I32(n as i32)],
    );
    let (result, bytes, flag) = run(&smooth, fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    let at = (4 * n).next_multiple_of(256); // `out`, after `in` (common::layout)
    let out = f32s(&bytes[at..at + 4 * n]);
    for i in 0..n {
        let left = if i > 0 { values[i - 1] } else { values[i] };
        let right = if i + 1 < n { values[i + 1] } else { values[i] };
        let expected = 0.25f32 * left + 0.5 * values[i] + 0.25 * right;
        assert_eq!(out[i], expected, "element {i}");
    }
    let mut past = smooth;
    past.params = vec![P::Buf(0), P::Buf(1), P::I32(4 * n as i32)];
    past.grid = [5, 1, 1];
    let (result, _, flag) = run(&past, fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, FLAG_REACHED_OUT));
}

/// The reductions through warp shuffles and votes compute what their source says (the
/// same-bytes test holds fenced to unfenced; this holds the emulator's `shfl.sync` and
/// `vote.sync` to the arithmetic), fenced.
#[test]
fn warp_shuffles_and_votes_compute_what_the_source_says() {
    let _session = session();
    let fenced = fence_ptx(module("reduce")).unwrap();
    let all = cases();
    let find = |entry: &str| all.iter().find(|c| c.entry == entry).unwrap();
    let word = |bytes: &[u8], at: usize| <[u8; 4]>::try_from(&bytes[at..at + 4]).unwrap();
    // warp_reduce_atomic: the sum of (i % 9) for i < 1000 (exact in f32).
    let (result, bytes, flag) = run(find("warp_reduce_atomic"), fenced.ptx(), true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    let expected: f32 = (0..1000).map(|i| (i % 9) as f32).sum();
    assert_eq!(f32::from_le_bytes(word(&bytes, 4096)), expected);
    // dot_product: the sum of (i % 5) * (i % 3) for i < 600.
    let (_, bytes, _) = run(find("dot_product"), fenced.ptx(), true);
    let expected: f32 = (0..600).map(|i| ((i % 5) * (i % 3)) as f32).sum();
    assert_eq!(f32::from_le_bytes(word(&bytes, 2 * 2560)), expected);
    // count_positive_ballot: how many of the 250 values are positive.
    let case = find("count_positive_ballot");
    let (_, bytes, _) = run(case, fenced.ptx(), true);
    let positive = f32s(&case.buffers[0]).iter().filter(|v| **v > 0.0).count() as u32;
    assert_eq!(u32::from_le_bytes(word(&bytes, 1024)), positive);
    // any_nan: element 77 is NaN.
    let (_, bytes, _) = run(find("any_nan"), fenced.ptx(), true);
    assert_eq!(u32::from_le_bytes(word(&bytes, 512)), 1);
    // block_reduce_sum: each block's partial sum of 512 inputs.
    let case = find("block_reduce_sum");
    let (_, bytes, _) = run(case, fenced.ptx(), true);
    let inputs = f32s(&case.buffers[0]);
    for block in 0..4 {
        let expected: f64 =
            inputs[block * 512..(block * 512 + 512).min(2000)].iter().map(|&v| f64::from(v)).sum();
        let got = f32::from_le_bytes(word(&bytes, 8192 + 4 * block));
        assert!((f64::from(got) - expected).abs() < 1e-3, "block {block}: {got} against {expected}");
    }
}
