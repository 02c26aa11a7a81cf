//! Fenced kernels on the emulated driver (`kernel_args_cuda::fence`): each nvcc-compiled fixture
//! computes the same bytes fenced as unfenced, with the fence around one arena that holds all
//! its buffers (a staged launch's layout) and around a host buffer (a direct launch's guest
//! memory); and a kernel handed addresses outside its fence (past its window, into a neighbour's
//! buffer, an atomic past the end) writes nothing outside, does not fault, and sets the flag.
//! The instructions each kernel executes, fenced and unfenced, are asserted: the fence's cost
//! (docs/performance.md). And the bounds proofs (`fence_declared_ptx`) are run against the
//! driver: a proven access never leaves its window.

mod common;

use common::*;
use kernel_args::Declaration;
use kernel_args_cuda::fence::{FencedModule, MIN_FENCE_LEN, fence_declared_ptx, fence_ptx};
use kernel_args_cuda_emulator::memory::POISON;
use kernel_args_cuda_emulator::result::*;
use kernel_args_cuda_emulator::{api, control};

/// Where each buffer of a kernel's launch lies in its arena: 256-byte aligned, back to back.
fn layout(sizes: &[usize]) -> (Vec<usize>, usize) {
    let mut at = 0;
    let offsets = sizes
        .iter()
        .map(|&size| {
            let offset = at;
            at += size.next_multiple_of(256);
            offset
        })
        .collect();
    (offsets, at.max(MIN_FENCE_LEN as usize))
}

/// One fixture launch: its kernel, shape, buffers (initial bytes) and parameters (given the
/// buffers' addresses).
struct Case {
    name: &'static str,
    ptx: &'static str,
    entry: &'static str,
    /// What the kernel does with its parameters (docs/declarations.md).
    declaration: &'static str,
    grid: [u32; 3],
    block: [u32; 3],
    buffers: Vec<Vec<u8>>,
    params: fn(&[u64]) -> Vec<Vec<u8>>,
}

fn cases() -> Vec<Case> {
    let histogram_data: Vec<u8> = (0..20_000u32).map(|i| (i.wrapping_mul(37) % 251) as u8).collect();
    vec![
        Case {
            name: "vector_add",
            ptx: VECTOR_ADD,
            entry: "vector_add",
            declaration: "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)",
            grid: [1, 1, 1],
            block: [256, 1, 1],
            buffers: vec![
                floats((0..256).map(|i| i as f32)),
                floats((0..256).map(|i| 0.25 * i as f32)),
                vec![0; 1024],
            ],
            params: |b| vector_add_params(b[0], b[1], b[2], 200),
        },
        Case {
            name: "saxpy_grid_stride",
            ptx: GRID_STRIDE,
            entry: "saxpy_grid_stride",
            declaration: "saxpy(a: f32, x: &[f32; n], y: &mut [f32; n], n: u32)",
            grid: [2, 1, 1],
            block: [64, 1, 1],
            buffers: vec![
                floats((0..1000).map(|i| i as f32 * 0.5)),
                floats((0..1000).map(|i| 3.0 - i as f32)),
            ],
            params: |b| {
                vec![
                    1.5f32.to_le_bytes().to_vec(),
                    b[0].to_le_bytes().to_vec(),
                    b[1].to_le_bytes().to_vec(),
                    1000u32.to_le_bytes().to_vec(),
                ]
            },
        },
        Case {
            name: "block_sum",
            ptx: BLOCK_SUM,
            entry: "block_sum",
            declaration: "block_sum(input: &[f32; n], out: &mut [f32; grid.x], n: u32)",
            grid: [4, 1, 1],
            block: [256, 1, 1],
            buffers: vec![floats((0..1000).map(|i| (i % 7) as f32)), vec![0; 16]],
            params: |b| {
                vec![b[0].to_le_bytes().to_vec(), b[1].to_le_bytes().to_vec(), 1000u32.to_le_bytes().to_vec()]
            },
        },
        Case {
            name: "transpose",
            ptx: TRANSPOSE,
            entry: "transpose",
            declaration: "transpose(input: &[f32; rows * cols], out: &mut [f32; rows * cols], rows: u32, cols: u32)",
            grid: [4, 5, 1],
            block: [16, 8, 1],
            buffers: vec![floats((0..37 * 53).map(|i| i as f32)), vec![0; 4 * 37 * 53]],
            params: |b| {
                vec![
                    b[0].to_le_bytes().to_vec(),
                    b[1].to_le_bytes().to_vec(),
                    37u32.to_le_bytes().to_vec(),
                    53u32.to_le_bytes().to_vec(),
                ]
            },
        },
        Case {
            name: "histogram",
            ptx: HISTOGRAM,
            entry: "histogram",
            declaration: "histogram(data: &[u8; n], bins: &mut [u32; 256], n: u32)",
            grid: [157, 1, 1],
            block: [128, 1, 1],
            buffers: vec![histogram_data, vec![0; 1024]],
            params: |b| {
                vec![
                    b[0].to_le_bytes().to_vec(),
                    b[1].to_le_bytes().to_vec(),
                    20_000u32.to_le_bytes().to_vec(),
                ]
            },
        },
        Case {
            name: "local_array",
            ptx: LOCAL_ARRAY,
            entry: "local_array",
            declaration: "local_array(idx: &[i32; block.x], out: &mut [f32; block.x])",
            grid: [1, 1, 1],
            block: [64, 1, 1],
            buffers: vec![(0..64i32).flat_map(|t| ((t * 5 + 3) % 11).to_le_bytes()).collect(), vec![0; 256]],
            params: |b| vec![b[0].to_le_bytes().to_vec(), b[1].to_le_bytes().to_vec()],
        },
    ]
}

/// The three hidden parameters: the fence's base and length, and the flag's address.
fn fence_params(base: u64, len: u64, flag: u64) -> Vec<Vec<u8>> {
    vec![base.to_le_bytes().to_vec(), len.to_le_bytes().to_vec(), flag.to_le_bytes().to_vec()]
}

fn read_u32(address: u64) -> u32 {
    let mut bytes = [0u8; 4];
    assert_eq!(download(address, &mut bytes), CUDA_SUCCESS);
    u32::from_le_bytes(bytes)
}

/// Runs `case` in a fresh arena, fenced (around the arena, with a zeroed flag) or not: the
/// arena's bytes afterwards, the flag, and the instructions executed.
fn run(case: &Case, fenced: Option<&FencedModule>) -> (Vec<u8>, u32, u64) {
    let sizes: Vec<usize> = case.buffers.iter().map(Vec::len).collect();
    let (offsets, len) = layout(&sizes);
    let arena = alloc(len).unwrap();
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    for (buffer, &offset) in case.buffers.iter().zip(&offsets) {
        assert_eq!(upload(arena + offset as u64, buffer), CUDA_SUCCESS);
    }
    let addresses: Vec<u64> = offsets.iter().map(|&o| arena + o as u64).collect();
    let mut params = (case.params)(&addresses);
    let f = match fenced {
        Some(module) => {
            params.extend(fence_params(arena, len as u64, flag));
            function(load(module.ptx()), case.entry).unwrap()
        }
        None => function(load(case.ptx), case.entry).unwrap(),
    };
    assert_eq!(launch_with(f, case.grid, case.block, 0, &mut params), CUDA_SUCCESS, "{}", case.name);
    let mut bytes = vec![0u8; len];
    assert_eq!(download(arena, &mut bytes), CUDA_SUCCESS);
    (bytes, read_u32(flag), instructions(f))
}

#[test]
fn every_fixture_computes_the_same_bytes_fenced() {
    let _session = session();
    let mut costs = Vec::new();
    for case in cases() {
        let fenced = fence_ptx(case.ptx).unwrap();
        let (plain, _, plain_count) = run(&case, None);
        let (with_fence, flag, fenced_count) = run(&case, Some(&fenced));
        assert!(plain == with_fence, "{}: fenced and unfenced differ", case.name);
        assert_eq!(flag, 0, "{}: no access left the fence", case.name);
        costs.push((case.name, plain_count, fenced_count));
        // Fenced as `KernelRegistry::register` fences it, with its declaration: every access of
        // the fixtures is proven inside its window, so the kernel runs as it was.
        let declaration = Declaration::parse(case.declaration).unwrap();
        let declared = fence_declared_ptx(case.ptx, case.entry, &declaration).unwrap();
        assert!(declared.proven() > 0, "{}", case.name);
        let (with_proofs, flag, declared_count) = run(&case, Some(&declared));
        assert!(plain == with_proofs, "{}: with proofs and unfenced differ", case.name);
        assert_eq!((flag, declared_count), (0, plain_count), "{}: the same instructions", case.name);
    }
    // The fence's cost in executed PTX instructions (docs/performance.md).
    for (name, plain, fenced) in &costs {
        eprintln!(
            "fence cost: {name}: {plain} -> {fenced} instructions ({:.2}x)",
            *fenced as f64 / *plain as f64
        );
    }
    let counts: Vec<(&str, u64, u64)> = costs;
    assert_eq!(
        counts,
        [
            ("vector_add", 5016, 10152),
            ("saxpy_grid_stride", 11920, 30688),
            ("block_sum", 80796, 92964),
            ("transpose", 63130, 102022),
            ("histogram", 360960, 721632),
            ("local_array", 1728, 2880),
        ]
    );
}

/// vector_add, fenced around `a`, `b` and `out` in one arena, handed `n` past the windows and
/// an `out` that is a neighbour's buffer: the kernel runs to the end without a fault, every
/// store lands inside the fence, the neighbour's buffer is untouched, the flag is set, and the
/// next, correct launch computes the right answer with the flag clear.
#[test]
fn accesses_outside_the_fence_land_inside_it_and_set_the_flag() {
    let session = session();
    let fenced = fence_ptx(VECTOR_ADD).unwrap();
    let f = function(load(fenced.ptx()), "vector_add").unwrap();
    let (offsets, len) = layout(&[1024, 1024, 1024]);
    let arena = alloc(len).unwrap();
    let neighbour = alloc(4096).unwrap();
    let flag = alloc(4).unwrap();
    let a = arena + offsets[0] as u64;
    let b = arena + offsets[1] as u64;
    let out = arena + offsets[2] as u64;
    assert_eq!(upload(a, &floats((0..256).map(|i| i as f32))), CUDA_SUCCESS);
    assert_eq!(upload(b, &floats((0..256).map(|i| 2.0 * i as f32))), CUDA_SUCCESS);
    let hostile = [
        ("an index past the window", a, b, out, 1024u32),
        ("a neighbour's buffer as out", a, b, neighbour, 256),
        ("a pointer made from a number", a, b, 0x7000_0000_0000, 256),
        ("a pointer below the fence", a - 4096, b, out, 256),
    ];
    for (what, a_ptr, b_ptr, out_ptr, n) in hostile {
        assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
        let mut params = vector_add_params(a_ptr, b_ptr, out_ptr, n);
        params.extend(fence_params(arena, len as u64, flag));
        let blocks = n.div_ceil(256);
        assert_eq!(launch_with(f, [blocks, 1, 1], [256, 1, 1], 0, &mut params), CUDA_SUCCESS, "{what}");
        assert_eq!(read_u32(flag), 1, "{what}: the flag is set");
        assert_eq!(control::sticky_error(session.ordinal), 0, "{what}: no fault");
        let mut bytes = vec![0u8; 4096];
        assert_eq!(download(neighbour, &mut bytes), CUDA_SUCCESS);
        assert!(bytes.iter().all(|&b| b == POISON), "{what}: the neighbour's buffer is untouched");
        assert_eq!(control::crossings(session.ordinal), 0, "{what}: no store crossed an allocation");
    }
    // The next launch, with correct arguments, is right and leaves the flag clear.
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    let mut params = vector_add_params(a, b, out, 256);
    params.extend(fence_params(arena, len as u64, flag));
    assert_eq!(launch_with(f, [1, 1, 1], [256, 1, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = vec![0u8; 1024];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    assert_eq!(f32s(&bytes), (0..256).map(|i| 3.0 * i as f32).collect::<Vec<_>>());
    assert_eq!(read_u32(flag), 0);
}

/// histogram's atomics, fenced, with `bins` at the fence's last 16 bytes: every increment past
/// the end lands inside the fence (no fault, nothing outside), and the flag is set.
#[test]
fn an_atomic_past_the_end_stays_inside() {
    let session = session();
    let fenced = fence_ptx(HISTOGRAM).unwrap();
    let f = function(load(fenced.ptx()), "histogram").unwrap();
    let n = 4096u32;
    let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let (offsets, len) = layout(&[n as usize, 16]);
    let arena = alloc(len + 4096).unwrap();
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    assert_eq!(upload(arena, &data), CUDA_SUCCESS);
    let bins = arena + offsets[1] as u64;
    assert_eq!(upload(bins, &[0; 16]), CUDA_SUCCESS);
    // The fence ends 16 bytes past `bins`: the kernel's 256 bins do not fit.
    let fence_len = offsets[1] as u64 + 16;
    let mut params =
        vec![arena.to_le_bytes().to_vec(), bins.to_le_bytes().to_vec(), n.to_le_bytes().to_vec()];
    params.extend(fence_params(arena, fence_len, flag));
    assert_eq!(launch_with(f, [n / 128, 1, 1], [128, 1, 1], 0, &mut params), CUDA_SUCCESS);
    assert_eq!(read_u32(flag), 1);
    assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
    let mut past = vec![0u8; len + 4096 - fence_len as usize];
    assert_eq!(download(arena + fence_len, &mut past), CUDA_SUCCESS);
    assert!(past.iter().all(|&b| b == POISON), "nothing past the fence changed");
    // Every increment happened, inside: the four bins the fence holds.
    let mut inside = [0u8; 16];
    assert_eq!(download(bins, &mut inside), CUDA_SUCCESS);
    assert_eq!(u32s(&inside).iter().sum::<u32>(), n);
}

/// Direct mode's fence: a host buffer standing for a guest's linear memory, with memory on
/// either side; vector_add handed an `out` past the linear memory writes nothing outside it.
#[test]
fn a_fence_around_host_memory_keeps_the_kernel_inside_it() {
    let session = session();
    let fenced = fence_ptx(VECTOR_ADD).unwrap();
    let f = function(load(fenced.ptx()), "vector_add").unwrap();
    const PAGE: usize = 65536;
    let mut host = vec![0x5au8; 3 * PAGE];
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    let base = host.as_mut_ptr() as u64 + PAGE as u64;
    // a at 0, b at 1024, out just past the linear memory's end.
    let (a, b, out) = (base, base + 1024, base + PAGE as u64);
    let mut params = vector_add_params(a, b, out, 256);
    params.extend(fence_params(base, PAGE as u64, flag));
    assert_eq!(launch_with(f, [1, 1, 1], [256, 1, 1], 0, &mut params), CUDA_SUCCESS);
    assert_eq!(read_u32(flag), 1);
    assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
    assert!(host[..PAGE].iter().all(|&b| b == 0x5a), "below the linear memory: untouched");
    assert!(host[2 * PAGE..].iter().all(|&b| b == 0x5a), "above it: untouched");
}

/// One access of a random straight-line kernel: its instruction and width, and the byte it
/// reaches from the fence's base for thread 0 (each thread adds `tid * stride`).
#[derive(Debug, Clone)]
struct Access {
    op: &'static str,
    width: i64,
    offset: i64,
    immediate: i64,
}

/// The access forms the property test draws from: (instruction with `ADDR` for the address,
/// width).
const FORMS: [(&str, i64); 8] = [
    ("ld.global.u8 %r1, ADDR", 1),
    ("st.global.u16 ADDR, %rs1", 2),
    ("ld.global.f32 %f1, ADDR", 4),
    ("st.global.u32 ADDR, %r2", 4),
    ("atom.global.add.u32 %r3, ADDR, 1", 4),
    ("red.global.add.u64 ADDR, %rd9", 8),
    ("st.global.v2.f32 ADDR, {%f2, %f3}", 8),
    ("st.global.v4.f32 ADDR, {%f2, %f3, %f4, %f5}", 16),
];

/// A kernel of `accesses` in a straight line, each through its own register: the fence's base
/// (the parameter) plus its offset plus `tid * stride`, with its immediate in the address.
fn straight_line(accesses: &[Access], stride: i64) -> String {
    let mut body = String::new();
    for (i, a) in accesses.iter().enumerate() {
        let address = if a.immediate == 0 {
            format!("[%rd{}]", 20 + i)
        } else {
            format!("[%rd{}+{}]", 20 + i, a.immediate)
        };
        body.push_str(&format!(
            "\tadd.s64 %rd{r}, %rd1, {offset};\n\tadd.s64 %rd{r}, %rd{r}, %rd2;\n\t{op};\n",
            r = 20 + i,
            offset = a.offset,
            op = a.op.replace("ADDR", &address),
        ));
    }
    format!(
        ".version 7.8\n.target sm_52\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{{\n\
         \t.reg .b16 %rs<2>;\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<6>;\n\t.reg .b64 %rd<64>;\n\
         \tld.param.u64 %rd1, [k_param_0];\n\tmov.u32 %r4, %tid.x;\n\tmul.wide.u32 %rd2, %r4, {stride};\n\
         \tmov.u16 %rs1, 7;\n\tmov.u32 %r2, 9;\n\tmov.u64 %rd9, 11;\n\tmov.f32 %f2, 0f3F800000;\n\
         \tmov.f32 %f3, 0f40000000;\n\tmov.f32 %f4, 0f40400000;\n\tmov.f32 %f5, 0f40800000;\n{body}\tret;\n}}\n"
    )
}

/// A kernel broken on purpose (`cuda-backend/kernels/broken/`, nvcc 11.8), launched so that its
/// bug reaches past the fence: its entry, threads, the fence's length, and its parameters given
/// the fence's base (which may also write what the kernel reads).
struct Broken {
    entry: &'static str,
    ptx: &'static str,
    threads: u32,
    fence_len: u64,
    params: fn(u64) -> Vec<Vec<u8>>,
}

fn broken() -> Vec<Broken> {
    vec![
        // out (64 floats) ends at the fence's end; thread 64 writes out[64].
        Broken {
            entry: "index_past",
            ptx: include_str!("../../cuda-backend/kernels/broken/index_past.ptx"),
            threads: 128,
            fence_len: 512,
            params: |base| {
                vec![
                    base.to_le_bytes().to_vec(),
                    (base + 256).to_le_bytes().to_vec(),
                    64u32.to_le_bytes().to_vec(),
                ]
            },
        },
        // out at the fence's start; thread 0 writes out[-1].
        Broken {
            entry: "negative_index",
            ptx: include_str!("../../cuda-backend/kernels/broken/negative_index.ptx"),
            threads: 32,
            fence_len: 128,
            params: |base| vec![base.to_le_bytes().to_vec(), 32i32.to_le_bytes().to_vec()],
        },
        // An address 16 bytes before the fence's end; threads 4 and up write past it.
        Broken {
            entry: "pointer_from_scalar",
            ptx: include_str!("../../cuda-backend/kernels/broken/pointer_from_scalar.ptx"),
            threads: 32,
            fence_len: 64,
            params: |base| vec![(base + 48).to_le_bytes().to_vec(), 1.5f32.to_le_bytes().to_vec()],
        },
        // A table of pointers in the fence: half into it, half below it (a generic store).
        Broken {
            entry: "generic_pointer",
            ptx: include_str!("../../cuda-backend/kernels/broken/generic_pointer.ptx"),
            threads: 32,
            fence_len: 512,
            params: |base| {
                let table: Vec<u8> = (0..32u64)
                    .flat_map(|t| if t < 16 { base + 256 + 4 * t } else { base - 1024 + 4 * t }.to_le_bytes())
                    .collect();
                assert_eq!(upload(base, &table), CUDA_SUCCESS);
                vec![base.to_le_bytes().to_vec(), 2.5f32.to_le_bytes().to_vec()]
            },
        },
        // Four counters at the fence's end, 16 bytes apart; threads 4 and up add past it.
        Broken {
            entry: "atomic_past_end",
            ptx: include_str!("../../cuda-backend/kernels/broken/atomic_past_end.ptx"),
            threads: 32,
            fence_len: 128,
            params: |base| vec![(base + 64).to_le_bytes().to_vec(), 4u32.to_le_bytes().to_vec()],
        },
        // A float4 store at bytes 64..80 of a fence 72 bytes long.
        Broken {
            entry: "vector_straddle",
            ptx: include_str!("../../cuda-backend/kernels/broken/vector_straddle.ptx"),
            threads: 1,
            fence_len: 72,
            params: |base| vec![base.to_le_bytes().to_vec(), 4i32.to_le_bytes().to_vec()],
        },
    ]
}

/// Guard bytes on each side of a broken kernel's fence, inside the same allocation.
const BROKEN_GUARD: u64 = 4096;

/// Runs `kernel` fenced or not, its fence (zeroed) between two guards: whether the guards are
/// untouched, the flag, and the context's sticky error.
fn run_broken(ordinal: i32, kernel: &Broken, fenced: bool) -> (bool, u32, i32) {
    let whole = alloc((2 * BROKEN_GUARD + kernel.fence_len) as usize).unwrap();
    let base = whole + BROKEN_GUARD;
    assert_eq!(upload(base, &vec![0; kernel.fence_len as usize]), CUDA_SUCCESS);
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    let mut params = (kernel.params)(base);
    let ptx = if fenced {
        params.extend(fence_params(base, kernel.fence_len, flag));
        fence_ptx(kernel.ptx).unwrap().ptx().to_owned()
    } else {
        kernel.ptx.to_owned()
    };
    let f = function(load(&ptx), kernel.entry).unwrap();
    let launched = launch_with(f, [1, 1, 1], [kernel.threads, 1, 1], 0, &mut params);
    let sticky = control::sticky_error(ordinal);
    if launched != CUDA_SUCCESS || sticky != 0 {
        return (false, 0, sticky.max(launched));
    }
    let flagged = read_u32(flag);
    let mut guards = vec![0u8; BROKEN_GUARD as usize];
    assert_eq!(download(whole, &mut guards), CUDA_SUCCESS);
    let mut above = vec![0u8; BROKEN_GUARD as usize];
    assert_eq!(download(base + kernel.fence_len, &mut above), CUDA_SUCCESS);
    let intact = guards.iter().chain(&above).all(|&b| b == POISON);
    (intact, flagged, control::sticky_error(ordinal))
}

/// Each broken kernel, fenced: no fault, nothing outside the fence changed, the flag set; and
/// then a correct kernel on the same context computes the right answer.
#[test]
fn kernels_broken_on_purpose_are_caught() {
    let session = session();
    for kernel in broken() {
        let (intact, flag, sticky) = run_broken(session.ordinal, &kernel, true);
        assert_eq!(
            (intact, flag, sticky),
            (true, 1, 0),
            "{}: guards untouched, flagged, no fault",
            kernel.entry
        );
        assert_eq!(control::crossings(session.ordinal), 0, "{}", kernel.entry);
    }
    let (plain, flag, _) = run(&cases().remove(0), Some(&fence_ptx(VECTOR_ADD).unwrap()));
    assert_eq!(flag, 0);
    assert_eq!(f32s(&plain[2048..2048 + 800]), (0..200).map(|i| 1.25 * i as f32).collect::<Vec<_>>());
}

/// The same launches unfenced reach outside: a guard changed, or the context faulted. (Each on
/// a device of its own, since a fault is sticky.)
#[test]
fn unfenced_the_broken_kernels_reach_outside() {
    for kernel in broken() {
        let session = session();
        let (intact, _, sticky) = run_broken(session.ordinal, &kernel, false);
        assert!(!intact || sticky != 0, "{}: unfenced, it reached nothing outside", kernel.entry);
        if sticky != 0 {
            assert_eq!(api::device_primary_ctx_reset(session.ordinal), CUDA_SUCCESS);
        }
    }
}

/// A vector_add variant (the bounds proofs' test family, `cuda-backend/src/fence/bounds.rs`):
/// its guard's comparison, whether the branch is negated, the index's scale, and `out`'s element
/// and extent; with its declaration.
fn vector_add_variant(
    cmp: &str,
    negated: bool,
    scale: u64,
    element: &str,
    extent: &str,
) -> (String, Declaration) {
    let ptx = VECTOR_ADD.replacen("setp.ge.u32", &format!("setp.{cmp}.u32"), 1).replacen(
        "mul.wide.u32 \t%rd5, %r1, 4",
        &format!("mul.wide.u32 \t%rd5, %r1, {scale}"),
        1,
    );
    let ptx = if negated { ptx.replacen("@%p1 bra", "@!%p1 bra", 1) } else { ptx };
    let declaration =
        format!("vector_add(a: &[f32; n], b: &[f32; n], out: &mut [{element}; {extent}], n: u32)");
    (ptx, Declaration::parse(&declaration).unwrap())
}

/// Bytes of each large allocation (its own mapping, in whole pages) a window ends.
const LARGE: usize = 2 << 20;

/// Runs `ptx`'s vector_add with `a`, `b` (`n` floats each) and `out` (`out_len` bytes) each
/// ending a large allocation that unmapped memory follows, so that any access past a window
/// faults; fenced around `out`'s allocation (a fence for the accesses left fenced). The
/// context's sticky error afterwards (0: nothing faulted).
fn run_at_the_edge(ordinal: i32, ptx: &str, n: u32, out_len: usize, grid: u32, block: u32) -> i32 {
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    // a, hole, b, hole, out, hole: the holes freed once all are placed.
    let blocks: Vec<u64> = (0..6).map(|_| alloc(LARGE).unwrap()).collect();
    for hole in [blocks[1], blocks[3], blocks[5]] {
        assert_eq!(api::mem_free(hole), CUDA_SUCCESS);
    }
    let window_len = 4 * n as usize;
    let a = blocks[0] + (LARGE - window_len) as u64;
    let b = blocks[2] + (LARGE - window_len) as u64;
    let out = blocks[4] + (LARGE - out_len) as u64;
    let mut params = vector_add_params(a, b, out, n);
    params.extend(fence_params(blocks[4], LARGE as u64, flag));
    let f = function(load(ptx), "vector_add").unwrap();
    let launched = launch_with(f, [grid, 1, 1], [block, 1, 1], 0, &mut params);
    let sticky = control::sticky_error(ordinal);
    for used in [blocks[0], blocks[2], blocks[4], flag] {
        let _ = api::mem_free(used);
    }
    if launched != CUDA_SUCCESS { launched } else { sticky }
}

/// The layout of the property test below catches an overrun: vector_add with `i <= n` as its
/// guard, unfenced, faults on its load past `a`'s window.
#[test]
fn an_access_past_a_window_at_the_edge_faults() {
    let session = session();
    let (ptx, _) = vector_add_variant("gt", false, 4, "f32", "n");
    assert_ne!(run_at_the_edge(session.ordinal, &ptx, 16, 64, 1, 32), 0);
    assert_eq!(api::device_primary_ctx_reset(session.ordinal), CUDA_SUCCESS);
}

mod property {
    use proptest::prelude::*;

    use super::*;

    /// Guard bytes on each side of the fence, inside the same allocation.
    const GUARD: i64 = 8192;
    const FENCE: i64 = 4096;
    const THREADS: u32 = 8;

    fn access() -> impl Strategy<Value = Access> {
        let offset = prop_oneof![
            6 => 0..FENCE,
            2 => -GUARD..FENCE + GUARD,
            1 => prop_oneof![Just(i64::MIN / 2), Just(i64::MAX / 2), Just(-1), any::<i32>().prop_map(i64::from)],
        ];
        (0..FORMS.len(), offset, prop_oneof![3 => Just(0i64), 1 => -64i64..64]).prop_map(
            |(form, offset, immediate)| {
                let (op, width) = FORMS[form];
                Access { op, width, offset, immediate }
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// vector_add variants whose accesses the bounds proofs prove (some or all), launched
        /// with arguments their declaration accepts and every window ending where unmapped
        /// memory begins: no proven access leaves its window, so nothing faults.
        #[test]
        fn proven_accesses_stay_inside_their_windows(
            cmp in 0..4usize,
            negated: bool,
            scale in 0..4u32,
            element in 0..4usize,
            extent in 0..5usize,
            n in 0..300u32,
            grid in 1..4u32,
            block in 1..160u32,
        ) {
            let cmp = ["ge", "gt", "lt", "le"][cmp];
            let scale = 1u64 << scale;
            let (element, size) = [("u8", 1), ("u16", 2), ("f32", 4), ("f64", 8)][element];
            let (extent, count) = [
                ("n", n as usize),
                ("16", 16),
                ("grid.x", grid as usize),
                ("grid.x * block.x", (grid * block) as usize),
                ("n * 2", 2 * n as usize),
            ][extent];
            let (ptx, declaration) = vector_add_variant(cmp, negated, scale, element, extent);
            let module = fence_declared_ptx(&ptx, "vector_add", &declaration).unwrap();
            prop_assume!(module.proven() > 0);
            let session = session();
            let sticky = run_at_the_edge(session.ordinal, module.ptx(), n, count * size, grid, block);
            if sticky != 0 {
                let _ = api::device_primary_ctx_reset(session.ordinal);
            }
            prop_assert_eq!(sticky, 0, "{} {} proven, and it faulted", cmp, module.proven());
        }

        /// Random straight-line kernels of global loads, stores and atomics at random addresses,
        /// fenced: whatever the addresses, nothing outside the fence changes, nothing faults,
        /// and the flag is set exactly when some thread's access was outside the fence or not
        /// aligned to its width.
        #[test]
        fn random_accesses_never_leave_the_fence(
            accesses in prop::collection::vec(access(), 1..12),
            stride in prop_oneof![Just(0i64), Just(4), Just(16), 1i64..600],
        ) {
            let session = session();
            let fenced = fence_ptx(&straight_line(&accesses, stride)).unwrap();
            let f = function(load(fenced.ptx()), "k").unwrap();
            let total = (GUARD + FENCE + GUARD) as usize;
            let whole = alloc(total).unwrap();
            let base = whole + GUARD as u64;
            let flag = alloc(4).unwrap();
            assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
            let mut params = vec![base.to_le_bytes().to_vec()];
            params.extend(fence_params(base, FENCE as u64, flag));
            prop_assert_eq!(launch_with(f, [1, 1, 1], [THREADS, 1, 1], 0, &mut params), CUDA_SUCCESS);
            let flagged = read_u32(flag);
            prop_assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
            let mut bytes = vec![0u8; total];
            prop_assert_eq!(download(whole, &mut bytes), CUDA_SUCCESS);
            let (below, rest) = bytes.split_at(GUARD as usize);
            let above = &rest[FENCE as usize..];
            prop_assert!(below.iter().chain(above).all(|&b| b == POISON), "the guards are untouched");
            let outside = accesses.iter().any(|a| {
                (0..i64::from(THREADS)).any(|t| {
                    let o = a.offset.wrapping_add(a.immediate).wrapping_add(t * stride);
                    o < 0 || o > FENCE - a.width || o % a.width != 0
                })
            });
            prop_assert_eq!(flagged, u32::from(outside));
        }
    }
}
