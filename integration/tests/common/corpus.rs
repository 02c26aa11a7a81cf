//! The kernel corpus (`cuda-backend/kernels/corpus/`) and the launches its tests make of each
//! entry: what `tests/corpus.rs` runs on the emulator's API and `tests/corpus_driver.rs` on a
//! driver library (a GPU's, or the emulated one).

use super::{floats, layout};

macro_rules! corpus {
    ($($name:ident),*) => {
        pub const CORPUS: &[(&str, &str)] = &[$((
            stringify!($name),
            include_str!(concat!("../../../cuda-backend/kernels/corpus/", stringify!($name), ".ptx")),
        )),*];
    };
}
corpus!(
    assert,
    cp_async,
    device_variable,
    elementwise,
    gather,
    lookup,
    math,
    noinline,
    printf,
    reduce,
    std_headers,
    tiled,
    wmma,
    wmma_shared
);

pub fn module(name: &str) -> &'static str {
    CORPUS.iter().find(|(n, _)| *n == name).map(|(_, ptx)| *ptx).unwrap()
}

/// A kernel parameter: a buffer of the launch (by index) or a value.
#[derive(Clone, Copy)]
pub enum P {
    Buf(usize),
    U8(u8),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl P {
    /// The parameter's bytes, a buffer's being its address in an arena at `arena` whose
    /// buffers start at `offsets` (`arena` 0 for a fenced kernel, whose pointers are offsets
    /// into its fence).
    pub fn bytes(&self, arena: u64, offsets: &[usize]) -> Vec<u8> {
        match *self {
            P::Buf(i) => (arena + offsets[i] as u64).to_le_bytes().to_vec(),
            P::U8(v) => vec![v],
            P::I32(v) => v.to_le_bytes().to_vec(),
            P::I64(v) => v.to_le_bytes().to_vec(),
            P::F32(v) => v.to_le_bytes().to_vec(),
            P::F64(v) => v.to_le_bytes().to_vec(),
        }
    }
}

pub struct Case {
    pub module: &'static str,
    pub entry: &'static str,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub buffers: Vec<Vec<u8>>,
    pub params: Vec<P>,
}

/// A case's arena: its buffers after the fenced module's variables (the `__device__`
/// variables the fence places at the start of the fence; none in most modules), each 256-byte
/// aligned. A fenced launch finds the variables' bytes at the arena's start; an unfenced one
/// keeps its variables in its module and leaves that start alone.
pub struct Arena {
    /// Where each buffer starts.
    pub offsets: Vec<usize>,
    /// Where the first buffer starts: after the variables.
    pub buffers_at: usize,
    /// The fenced module's variables, initializers written in.
    pub variables: Vec<u8>,
    /// The arena's length.
    pub len: usize,
}

pub fn arena(case: &Case) -> Arena {
    // Each module's variables, fenced once for all the launches of a test binary.
    static VARIABLES: std::sync::OnceLock<Vec<(&str, Vec<u8>)>> = std::sync::OnceLock::new();
    let all = VARIABLES.get_or_init(|| {
        CORPUS
            .iter()
            .map(|(name, ptx)| (*name, kernel_args_cuda::fence::fence_ptx(ptx).unwrap().variables().to_vec()))
            .collect()
    });
    let variables = all.iter().find(|(name, _)| *name == case.module).map(|(_, v)| v.clone()).unwrap();
    let buffers_at = variables.len().next_multiple_of(256);
    let sizes: Vec<usize> = case.buffers.iter().map(Vec::len).collect();
    let (offsets, len) = layout(&sizes);
    Arena {
        offsets: offsets.iter().map(|o| o + buffers_at).collect(),
        buffers_at,
        variables,
        len: len + buffers_at,
    }
}

pub fn case(
    module: &'static str,
    entry: &'static str,
    grid: u32,
    block: u32,
    buffers: Vec<Vec<u8>>,
    params: &[P],
) -> Case {
    Case {
        module,
        entry,
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        shared: 0,
        buffers,
        params: params.to_vec(),
    }
}

pub fn ints(values: impl IntoIterator<Item = i32>) -> Vec<u8> {
    values.into_iter().flat_map(i32::to_le_bytes).collect()
}

pub fn doubles(values: impl IntoIterator<Item = f64>) -> Vec<u8> {
    values.into_iter().flat_map(f64::to_le_bytes).collect()
}

/// `f16`s, little-endian.
pub fn halves(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(|v| half::f16::from_f32(v).to_le_bytes()).collect()
}

/// Small whole numbers as `f16`, with a repeating pattern of signs: every product and sum of a
/// 16-element dot product of them is exact, on the emulator and on a GPU's tensor cores.
pub fn small_halves(n: usize, seed: usize) -> Vec<u8> {
    halves((0..n).map(|i| ((i * 7 + seed) % 9) as f32 - 4.0))
}

/// Floats with a repeating pattern of signs and sizes.
pub fn data(n: usize) -> Vec<u8> {
    floats((0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.125))
}

pub fn cases() -> Vec<Case> {
    use P::*;
    let n = 300;
    let mut cases = vec![
        case(
            "elementwise",
            "vector_add",
            2,
            256,
            vec![data(n), data(n), vec![0; 4 * n]],
            &[Buf(0), Buf(1), Buf(2), I32(n as i32)],
        ),
        case(
            "elementwise",
            "saxpy_grid_stride",
            2,
            64,
            vec![data(1000), data(1000)],
            &[I32(1000), F32(1.5), Buf(0), Buf(1)],
        ),
        case(
            "elementwise",
            "scale_float4",
            1,
            128,
            vec![data(400), vec![0; 1600]],
            &[Buf(0), Buf(1), F32(-2.0), I32(100)],
        ),
        case("elementwise", "relu_inplace", 2, 256, vec![data(500)], &[Buf(0), I64(500)]),
        case("elementwise", "fill_u8", 1, 256, vec![vec![1; 200]], &[Buf(0), U8(0xab), I64(150)]),
        case(
            "elementwise",
            "_Z5axpbyIfEvPKT_PS0_S0_S0_i",
            2,
            128,
            vec![data(n), data(n)],
            &[Buf(0), Buf(1), F32(0.5), F32(2.0), I32(n as i32)],
        ),
        case(
            "elementwise",
            "_Z5axpbyIdEvPKT_PS0_S0_S0_i",
            2,
            128,
            vec![doubles((0..n).map(|i| i as f64 * 0.5)), doubles((0..n).map(|i| 1.0 - i as f64))],
            &[Buf(0), Buf(1), F64(0.25), F64(-1.0), I32(n as i32)],
        ),
        case(
            "gather",
            "gather",
            1,
            256,
            vec![data(100), ints((0..200).map(|i| i * 7 % 100)), vec![0; 800]],
            &[Buf(0), Buf(1), Buf(2), I32(200)],
        ),
        case(
            "gather",
            "scatter_add",
            1,
            256,
            vec![data(200), ints((0..200).map(|i| i * 3 % 50)), vec![0; 200]],
            &[Buf(0), Buf(1), Buf(2), I32(200)],
        ),
        case(
            "gather",
            "spmv_csr",
            1,
            64,
            // 40 rows of 0 to 4 entries each.
            vec![
                ints((0..=40).map(|r: i32| (0..r).map(|k| k % 5).sum::<i32>())),
                ints((0..40 * 4).map(|j| j * 11 % 40)),
                data(160),
                data(40),
                vec![0; 160],
            ],
            &[I32(40), Buf(0), Buf(1), Buf(2), Buf(3), Buf(4)],
        ),
        case(
            "gather",
            "embedding_forward",
            2,
            128,
            vec![vec![0; 4 * 4 * 8 * 6], ints((0..8).map(|i| i * 5 % 10)), data(10 * 6), data(4 * 6)],
            &[Buf(0), Buf(1), Buf(2), Buf(3), I32(8), I32(4), I32(6)],
        ),
        case(
            "gather",
            "bincount",
            1,
            256,
            vec![ints((0..250).map(|i| i % 23 - 3)), vec![0; 80]],
            &[Buf(0), Buf(1), I32(250), I32(20)],
        ),
        case(
            "reduce",
            "block_reduce_sum",
            4,
            256,
            vec![data(2000), vec![0; 16]],
            &[Buf(0), Buf(1), I32(2000)],
        ),
        case(
            "reduce",
            "warp_reduce_atomic",
            2,
            128,
            vec![floats((0..1000).map(|i| (i % 9) as f32)), vec![0; 4]],
            &[Buf(0), Buf(1), I32(1000)],
        ),
        case(
            "reduce",
            "count_positive_ballot",
            2,
            128,
            vec![data(250), vec![0; 4]],
            &[Buf(0), Buf(1), I32(250)],
        ),
        case(
            "reduce",
            "any_nan",
            1,
            128,
            vec![floats((0..100).map(|i| if i == 77 { f32::NAN } else { 1.0 })), vec![0; 4]],
            &[Buf(0), Buf(1), I32(100)],
        ),
        case(
            "reduce",
            "histogram_shared",
            4,
            128,
            vec![(0..3000u32).map(|i| (i * 37 % 251) as u8).collect(), vec![0; 1024]],
            &[Buf(0), Buf(1), I32(3000)],
        ),
        case(
            "reduce",
            "dot_product",
            2,
            128,
            vec![
                floats((0..600).map(|i| (i % 5) as f32)),
                floats((0..600).map(|i| (i % 3) as f32)),
                vec![0; 4],
            ],
            &[Buf(0), Buf(1), Buf(2), I32(600)],
        ),
        case(
            "reduce",
            "max_int_atomic",
            2,
            128,
            vec![ints((0..200).map(|i| i * 7919 % 1000 - 500)), ints([i32::MIN])],
            &[Buf(0), Buf(1), I32(200)],
        ),
        case(
            "std_headers",
            "clamp_to_int16",
            1,
            128,
            vec![ints((0..100).map(|i| (i - 50) * 1000)), vec![0; 200]],
            &[Buf(0), Buf(1), I32(100)],
        ),
        case("std_headers", "minmax_pairs", 1, 64, vec![data(100), vec![0; 400]], &[Buf(0), Buf(1), I32(50)]),
        case("tiled", "conv1d_const", 1, 128, vec![data(100), vec![0; 400]], &[Buf(0), Buf(1), I32(100)]),
    ];
    let mut matmul = case(
        "tiled",
        "matmul_tiled",
        2,
        16,
        vec![data(20 * 24), data(24 * 30), vec![0; 4 * 20 * 30]],
        &[Buf(0), Buf(1), Buf(2), I32(20), I32(30), I32(24)],
    );
    (matmul.grid, matmul.block) = ([2, 2, 1], [16, 16, 1]);
    let mut transpose = case(
        "tiled",
        "transpose_padded",
        1,
        32,
        vec![data(37 * 45), vec![0; 4 * 37 * 45]],
        &[Buf(0), Buf(1), I32(37), I32(45)],
    );
    (transpose.grid, transpose.block) = ([2, 2, 1], [32, 8, 1]);
    let mut stencil = case(
        "tiled",
        "stencil5",
        1,
        16,
        vec![data(20 * 18), vec![0; 4 * 20 * 18]],
        &[Buf(0), Buf(1), I32(20), I32(18)],
    );
    (stencil.grid, stencil.block) = ([2, 2, 1], [16, 16, 1]);
    let mut scan =
        case("tiled", "scan_block", 3, 64, vec![ints(0..150), vec![0; 600]], &[Buf(0), Buf(1), I32(150)]);
    scan.shared = 64 * 4;
    let mut bias = case(
        "elementwise",
        "add_bias_2d",
        1,
        32,
        vec![data(20 * 32), data(30)],
        &[Buf(0), Buf(1), I32(20), I32(30), I32(32)],
    );
    (bias.grid, bias.block) = ([1, 2, 1], [32, 16, 1]);
    // Two warps, one 16x16x16 tile each.
    let tensor = case(
        "wmma",
        "wmma_gemm_16",
        1,
        64,
        vec![small_halves(512, 1), small_halves(512, 4), vec![0; 4 * 512]],
        &[Buf(0), Buf(1), Buf(2), I32(2)],
    );
    // C = A B over 32x32 matrices: four blocks of one warp, two 16-wide steps of k each.
    let mut tiled_tensor = case(
        "wmma_shared",
        "wmma_gemm_shared",
        1,
        32,
        vec![small_halves(32 * 32, 2), small_halves(32 * 32, 5), vec![0; 4 * 32 * 32]],
        &[Buf(0), Buf(1), Buf(2), I32(32), I32(32)],
    );
    tiled_tensor.grid = [2, 2, 1];
    // Its fragments through generic addresses, here into its shared copies.
    let either = case(
        "wmma_shared",
        "wmma_tile_either",
        1,
        32,
        vec![small_halves(256, 3), small_halves(256, 6), vec![0; 4 * 256]],
        &[Buf(0), Buf(1), Buf(2), I32(1)],
    );
    // 256 `int4`s staged through shared memory by `cp.async`, 128 a block, and written out
    // reversed in each block (whole blocks: a thread past the end would copy nothing, and
    // another would write out what it left in shared memory).
    let staged = case(
        "cp_async",
        "async_reverse",
        2,
        128,
        vec![ints(0..1024), vec![0; 16 * 256]],
        &[Buf(0), Buf(1), I32(256)],
    );
    cases.extend([matmul, transpose, stencil, scan, bias, tensor, tiled_tensor, either, staged]);
    // The module-scope tables in global memory, as nvcc wrote them (the fence moves them to
    // constant memory): `popcount_bytes`'s `nibble_bits`, and `sinf`'s `__cudart_i2opi_f`,
    // which its slow path (past 105615) reads.
    let byte_values: Vec<u8> = (0..=255).collect();
    let window_values = floats((0..64).map(|i| (i % 7) as f32));
    cases.extend([
        case(
            "lookup",
            "popcount_bytes",
            1,
            256,
            vec![byte_values, vec![0; 256]],
            &[Buf(0), Buf(1), I32(256)],
        ),
        case(
            "lookup",
            "weighted_window",
            1,
            64,
            vec![window_values, vec![0; 256]],
            &[Buf(0), Buf(1), I32(64)],
        ),
    ]);
    // Calls, as nvcc wrote them: a device-side `assert` that holds (its `__assertfail` never
    // called), and a `__noinline__` device function (the fence inlines both).
    cases.extend([
        case("assert", "checked_copy", 1, 128, vec![ints(0..100), vec![0; 400]], &[Buf(0), Buf(1), I32(100)]),
        case(
            "noinline",
            "smooth_noinline",
            2,
            256,
            vec![data(300), vec![0; 4 * 300]],
            &[Buf(0), Buf(1), I32(300)],
        ),
    ]);
    // A `__device__` variable, in the module's global memory unfenced and at the start of the
    // fence fenced: the first launch of a module finds it 0 and leaves it 1.
    cases.push(case("device_variable", "count_launch", 1, 64, vec![vec![0xee; 8]], &[Buf(0)]));
    let math_values = floats(MATH_VALUES.iter().copied());
    for entry in ["gelu_precise", "trig_pow"] {
        let n = MATH_VALUES.len();
        cases.push(case(
            "math",
            entry,
            1,
            128,
            vec![math_values.clone(), vec![0; 4 * n]],
            &[Buf(0), Buf(1), I32(n as i32)],
        ));
    }
    cases
}

/// The math entries' inputs: small values either side of 0, and large ones on `sinf`'s slow
/// path (past 105615), which reduces them through its table and the thread's local memory.
pub const MATH_VALUES: [f32; 24] = [
    -3.0, -2.5, -2.0, -1.5, -1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 2.0e5, 1.0e6,
    3.5e6, 123_456.78, 4.0e7, 1.0e9, 3.0e12, 7.0e20,
];
