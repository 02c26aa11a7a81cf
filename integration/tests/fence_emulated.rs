//! Fenced kernels on the emulated driver (`kernel_args_cuda::fence`): each nvcc-compiled fixture
//! computes the same bytes fenced as unfenced, with the fence around one arena that holds all
//! its buffers (a staged launch's layout) and around a host buffer (a direct launch's guest
//! memory); and a kernel handed addresses outside its fence (past its window, into a neighbour's
//! buffer, an atomic past the end) writes nothing outside, does not fault, and sets the flag.
//! The instructions each kernel executes, fenced and unfenced, are asserted: the fence's cost
//! (docs/performance.md). The attack kernels (`cuda-backend/kernels/attacks/`: each a way an
//! earlier fence let a kernel out) stay inside or are refused; random kernels with loads and
//! stores in every state space at random addresses, straight-line and branching, never reach
//! outside their windows or fault; random `wmma` fragments at random offsets with random
//! strides in fences of random lengths stay inside, set the flag exactly where a model of the
//! fragment's clamp says, and otherwise store what they store unfenced; and random loop nests
//! with a random budget stop each thread exactly where a model of the budget says.

#![allow(unsafe_code)] // the emulated driver's C entry points, each call with its `// SAFETY:`

mod common;

use common::*;
use kernel_args_cuda::fence::{FLAG_REACHED_OUT, FLAG_TRAPPED, FencedModule, fence_ptx};
use kernel_args_cuda_emulator::POISON;
use kernel_args_cuda_emulator::result::*;
use kernel_args_cuda_emulator::{api, control};

/// One fixture launch: its kernel, shape, buffers (initial bytes) and parameters (given the
/// buffers' addresses).
struct Case {
    name: &'static str,
    ptx: &'static str,
    entry: &'static str,
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
            grid: [1, 1, 1],
            block: [64, 1, 1],
            buffers: vec![(0..64i32).flat_map(|t| ((t * 5 + 3) % 11).to_le_bytes()).collect(), vec![0; 256]],
            params: |b| vec![b[0].to_le_bytes().to_vec(), b[1].to_le_bytes().to_vec()],
        },
    ]
}

fn read_u32(address: u64) -> u32 {
    let mut bytes = [0u8; 4];
    assert_eq!(download(address, &mut bytes), CUDA_SUCCESS);
    u32::from_le_bytes(bytes)
}

/// Runs `case` in a fresh arena, fenced (around the arena, with a zeroed flag) or not: the
/// arena's bytes afterwards and the flag.
fn run(case: &Case, fenced: Option<&FencedModule>) -> (Vec<u8>, u32) {
    let sizes: Vec<usize> = case.buffers.iter().map(Vec::len).collect();
    let (offsets, len) = layout(&sizes);
    let arena = alloc(len).unwrap();
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    for (buffer, &offset) in case.buffers.iter().zip(&offsets) {
        assert_eq!(upload(arena + offset as u64, buffer), CUDA_SUCCESS);
    }
    // A fenced kernel's pointers are offsets into its fence; an unfenced one's are addresses.
    let start = if fenced.is_some() { 0 } else { arena };
    let addresses: Vec<u64> = offsets.iter().map(|&o| start + o as u64).collect();
    let mut params = (case.params)(&addresses);
    let f = match fenced {
        Some(module) => {
            let hidden = fenced_params(module.ptx(), case.entry, &params, arena, len as u64, flag);
            params.extend(hidden);
            function(load(module.ptx()), case.entry).unwrap()
        }
        None => function(load(case.ptx), case.entry).unwrap(),
    };
    assert_eq!(launch_with(f, case.grid, case.block, 0, &mut params), CUDA_SUCCESS, "{}", case.name);
    let mut bytes = vec![0u8; len];
    assert_eq!(download(arena, &mut bytes), CUDA_SUCCESS);
    (bytes, read_u32(flag))
}

#[test]
fn every_fixture_computes_the_same_bytes_fenced() {
    let _session = session();
    for case in cases() {
        let fenced = fence_ptx(case.ptx).unwrap();
        let (plain, _) = run(&case, None);
        let (with_fence, flag) = run(&case, Some(&fenced));
        assert!(plain == with_fence, "{}: fenced and unfenced differ", case.name);
        assert_eq!(flag, 0, "{}: no access left the fence", case.name);
    }
}

/// vector_add with its bounds check off by one (`i <= n`, which no proof covers), fenced around
/// `a`, `b` and `out` in one arena, handed `n` past the windows and an `out` that is a
/// neighbour's buffer: the kernel runs to the end without a fault, every store lands inside the
/// fence, the neighbour's buffer is untouched, the flag says that an access was moved (its index
/// is a ranged proof's: a pointer whose elements up to the index do not fit in the fence, whole,
/// in 64 bits, has its index confined, and one that does not fit at all goes to the fence's
/// base), and the next, correct launch computes the right answer with the flag clear. vector_add
/// as written (`i < n`) is proven by its check: those arguments are refused before the launch.
#[test]
fn accesses_outside_the_fence_land_inside_it_and_set_the_flag() {
    let session = session();
    let off_by_one = vector_add_off_by_one();
    let fenced = fence_ptx(&off_by_one).unwrap();
    let proven = fence_ptx(VECTOR_ADD).unwrap();
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
    // The pointers as the fenced kernel takes them: offsets into its fence.
    let at = |address: u64| address.wrapping_sub(arena);
    let hostile = [
        ("an index past the window", at(a), at(b), at(out), 1024u32),
        ("a neighbour's buffer as out", at(a), at(b), at(neighbour), 256),
        ("a pointer made from a number", at(a), at(b), 0x7000_0000_0000, 256),
        ("a pointer below the fence", at(a).wrapping_sub(4096), at(b), at(out), 256),
    ];
    // Whether some thread's access of 4 bytes at `ptr + 4 i` (i below n) is moved: it is not
    // inside the fence, or not aligned.
    let moved =
        |ptr: u64, n: u32| !ptr.is_multiple_of(4) || u128::from(ptr) + 4 * u128::from(n) > len as u128;
    for (what, a_ptr, b_ptr, out_ptr, n) in hostile {
        // The off-by-one check lets thread `n` through too.
        let noted = moved(a_ptr, n + 1) || moved(b_ptr, n + 1) || moved(out_ptr, n + 1);
        assert!(noted, "{what}: every case is moved, whatever the addresses");
        let params = vector_add_params(a_ptr, b_ptr, out_ptr, n);
        let budget = kernel_args::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD;
        let refused = hidden_params(proven.ptx(), "vector_add", &params, (arena, len as u64, flag, budget));
        assert_eq!(refused, None, "{what}: vector_add's proofs refuse the arguments");
        assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
        let mut params = vector_add_params(a_ptr, b_ptr, out_ptr, n);
        let hidden = fenced_params(fenced.ptx(), "vector_add", &params, arena, len as u64, flag);
        params.extend(hidden);
        let blocks = (n + 1).div_ceil(256);
        assert_eq!(launch_with(f, [blocks, 1, 1], [256, 1, 1], 0, &mut params), CUDA_SUCCESS, "{what}");
        assert_eq!(read_u32(flag), u32::from(noted), "{what}: the flag says whether an access was moved");
        assert_eq!(control::sticky_error(session.ordinal), 0, "{what}: no fault");
        let mut bytes = vec![0u8; 4096];
        assert_eq!(download(neighbour, &mut bytes), CUDA_SUCCESS);
        assert!(bytes.iter().all(|&b| b == POISON), "{what}: the neighbour's buffer is untouched");
        assert_eq!(control::crossings(session.ordinal), 0, "{what}: no store crossed an allocation");
    }
    // The next launch, with correct arguments, is right and leaves the flag clear. Its inputs
    // are uploaded again: a redirected access may land anywhere inside the fence (an address
    // 4 GiB or more from it by its low 32 bits), the kernel's own buffers included.
    assert_eq!(upload(a, &floats((0..256).map(|i| i as f32))), CUDA_SUCCESS);
    assert_eq!(upload(b, &floats((0..256).map(|i| 2.0 * i as f32))), CUDA_SUCCESS);
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    let mut params = vector_add_params(at(a), at(b), at(out), 256);
    let hidden = fenced_params(fenced.ptx(), "vector_add", &params, arena, len as u64, flag);
    params.extend(hidden);
    assert_eq!(launch_with(f, [1, 1, 1], [256, 1, 1], 0, &mut params), CUDA_SUCCESS);
    let mut bytes = vec![0u8; 1024];
    assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
    assert_eq!(f32s(&bytes), (0..256).map(|i| 3.0 * i as f32).collect::<Vec<_>>());
    assert_eq!(read_u32(flag), 0);
}

/// vector_add with its bounds check off by one, `i <= n` (`setp.gt.u32`): a kernel whose
/// accesses no indexed proof covers (a ranged one confines them).
fn vector_add_off_by_one() -> String {
    let text = VECTOR_ADD.replace("setp.ge.u32", "setp.gt.u32");
    assert_ne!(text, VECTOR_ADD);
    text
}

/// A warp that stages a 16x16 `f16` tile in shared memory and multiplies it by itself with
/// `wmma` fragments loaded from there, A at `skew` bytes into the tile (written by hand: nvcc
/// writes this form for a `__shared__` tile); A through a generic address where `generic`.
fn shared_tile_kernel(generic: bool) -> String {
    let a_load = if generic {
        "\tcvta.shared.u64 %rd7, %rd7;\n\twmma.load.a.sync.aligned.row.m16n16k16.f16"
    } else {
        "\twmma.load.a.sync.aligned.row.m16n16k16.shared.f16"
    };
    let a = "{%r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14}";
    let b = "{%r15, %r16, %r17, %r18, %r19, %r20, %r21, %r22}";
    let d = "{%f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9}";
    format!(
        ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry tile_square(\n\t.param .u64 a,\n\
         \t.param .u64 out,\n\t.param .u64 skew\n)\n{{\n\t.shared .align 32 .b8 tile[512];\n\t.reg .b64 %rd<9>;\n\
         \t.reg .b32 %r<23>;\n\t.reg .f32 %f<10>;\n\tld.param.u64 %rd1, [a];\n\tld.param.u64 %rd2, [out];\n\
         \tld.param.u64 %rd8, [skew];\n\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 16;\n\tadd.s64 %rd4, %rd1, %rd3;\n\
         \tld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd4];\n\tmov.u64 %rd5, tile;\n\tadd.s64 %rd6, %rd5, %rd3;\n\
         \tst.shared.v4.u32 [%rd6], {{%r2, %r3, %r4, %r5}};\n\tbar.sync 0;\n\tadd.s64 %rd7, %rd5, %rd8;\n\tmov.u32 %r6, 16;\n\
         {a_load} {a}, [%rd7], %r6;\n\
         \twmma.load.b.sync.aligned.col.m16n16k16.shared.f16 {b}, [%rd5], %r6;\n\tmov.f32 %f1, 0f00000000;\n\
         \twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {d}, {a}, {b}, {{%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1}};\n\
         \twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd2], {d}, %r6;\n\tret;\n}}\n"
    )
}

/// A `wmma` tile in shared memory, fenced, its A fragment through a shared or a generic
/// address: at its place, the same bytes as unfenced with the flag clear; loaded from 4 KiB
/// past the tile, clamped into the shared window (no fault, the flag set), where unfenced it
/// faults.
#[test]
fn a_shared_fragment_stays_in_the_shared_window() {
    for generic in [false, true] {
        shared_fragment(generic);
    }
}

fn shared_fragment(generic: bool) {
    let session = session();
    let ptx = shared_tile_kernel(generic);
    let fenced = fence_ptx(&ptx).unwrap();
    assert_eq!(fenced.accesses(), 5);
    let ones: Vec<u8> =
        (0..256).flat_map(|i| half::f16::from_f32((i % 5) as f32 - 2.0).to_le_bytes()).collect();
    let launch = |module: &str, skew: u64, fenced: bool| {
        let (offsets, len) = layout(&[512, 1024]);
        let arena = alloc(len).unwrap();
        let flag = alloc(4).unwrap();
        assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
        assert_eq!(upload(arena, &ones), CUDA_SUCCESS);
        let start = if fenced { 0 } else { arena };
        let mut params: Vec<Vec<u8>> =
            offsets.iter().map(|&o| (start + o as u64).to_le_bytes().to_vec()).collect();
        params.push(skew.to_le_bytes().to_vec());
        if fenced {
            let hidden = fenced_params(module, "tile_square", &params, arena, len as u64, flag);
            params.extend(hidden);
        }
        let f = function(load(module), "tile_square").unwrap();
        // A fault shows at the launch or at the next call that waits for it.
        let mut bytes = vec![0u8; len];
        match launch_with(f, [1, 1, 1], [32, 1, 1], 0, &mut params) {
            CUDA_SUCCESS => match download(arena, &mut bytes) {
                CUDA_SUCCESS => (CUDA_SUCCESS, bytes, read_u32(flag)),
                fault => (fault, bytes, 0),
            },
            fault => (fault, bytes, 0),
        }
    };
    let (result, plain, _) = launch(&ptx, 0, false);
    assert_eq!(result, CUDA_SUCCESS);
    let (result, with_fence, flag) = launch(fenced.ptx(), 0, true);
    assert_eq!((result, flag), (CUDA_SUCCESS, 0));
    assert!(plain == with_fence, "fenced and unfenced differ");
    // D = A x A^T over the tile's own values: element (0, 0) is the sum of A's first row squared.
    let first: f32 = (0..16).map(|k| ((k % 5) as f32 - 2.0).powi(2)).sum();
    assert_eq!(f32::from_le_bytes(with_fence[512..516].try_into().unwrap()), first);
    let (result, _, flag) = launch(fenced.ptx(), 4096, true);
    assert_eq!((result, flag), (CUDA_SUCCESS, FLAG_REACHED_OUT));
    assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
    // Unfenced, the fragment 4 KiB past the tile is past the block's shared memory.
    let (result, _, _) = launch(&ptx, 4096, false);
    assert_ne!(result, CUDA_SUCCESS);
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
    // The fenced kernel's pointers are offsets into its fence: the data at 0, the bins after.
    let mut params = vec![
        0u64.to_le_bytes().to_vec(),
        (offsets[1] as u64).to_le_bytes().to_vec(),
        n.to_le_bytes().to_vec(),
    ];
    let hidden = fenced_params(fenced.ptx(), "histogram", &params, arena, fence_len, flag);
    params.extend(hidden);
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
/// either side; vector_add (its check off by one, so that no proof refuses the launch) handed
/// an `out` past the linear memory writes nothing outside it.
#[test]
fn a_fence_around_host_memory_keeps_the_kernel_inside_it() {
    let session = session();
    let fenced = fence_ptx(&vector_add_off_by_one()).unwrap();
    let f = function(load(fenced.ptx()), "vector_add").unwrap();
    const PAGE: usize = 65536;
    let mut host = vec![0x5au8; 3 * PAGE];
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    let base = host.as_mut_ptr() as u64 + PAGE as u64;
    // a at 0, b at 1024, out just past the linear memory's end: offsets in it, as a fenced
    // kernel takes its pointers.
    let (a, b, out) = (0, 1024, PAGE as u64);
    let mut params = vector_add_params(a, b, out, 256);
    let hidden = fenced_params(fenced.ptx(), "vector_add", &params, base, PAGE as u64, flag);
    params.extend(hidden);
    assert_eq!(launch_with(f, [1, 1, 1], [256, 1, 1], 0, &mut params), CUDA_SUCCESS);
    assert_eq!(read_u32(flag), 1);
    assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
    assert!(host[..PAGE].iter().all(|&b| b == 0x5a), "below the linear memory: untouched");
    assert!(host[2 * PAGE..].iter().all(|&b| b == 0x5a), "above it: untouched");
}

/// The windows of the random kernels below: the fence (the parameter `g`), the block's shared
/// `sh`, the thread's local `lo`, the module's constant `co`; and their lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Window {
    Global,
    Shared,
    Local,
    Const,
}

impl Window {
    fn len(self) -> i64 {
        match self {
            Window::Global => FENCE,
            Window::Shared => 256,
            Window::Local => 64,
            Window::Const => 64,
        }
    }
}

/// The global fence of the random kernels.
const FENCE: i64 = 4096;

/// One access of a random kernel: its form, and the byte it reaches from its window's start
/// for thread 0 (each thread adds `tid * stride`), the part of that in the address's immediate,
/// and the threads that branch around it (`Some(p)`: those whose `tid & 1` is `p`).
#[derive(Debug, Clone)]
struct Access {
    form: usize,
    offset: i64,
    immediate: i64,
    skip: Option<u32>,
}

/// The access forms: the window, how the base register is made from the window's start
/// (`BASE` is the register), the instruction (`ADDR` the address), the width.
const FORMS: [(Window, &str, &str, i64); 20] = [
    (Window::Global, "mov.u64 BASE, %rd1", "ld.global.u8 %r1, ADDR", 1),
    (Window::Global, "mov.u64 BASE, %rd1", "st.global.u16 ADDR, %rs1", 2),
    (Window::Global, "mov.u64 BASE, %rd1", "ld.global.f32 %f1, ADDR", 4),
    (Window::Global, "mov.u64 BASE, %rd1", "atom.global.add.u32 %r3, ADDR, 1", 4),
    (Window::Global, "mov.u64 BASE, %rd1", "red.global.add.u64 ADDR, %rd9", 8),
    (Window::Global, "mov.u64 BASE, %rd1", "st.global.v4.f32 ADDR, {%f2, %f3, %f4, %f5}", 16),
    (Window::Shared, "mov.u64 BASE, sh", "st.shared.u8 ADDR, %rs1", 1),
    (Window::Shared, "mov.u64 BASE, sh", "ld.shared.u32 %r1, ADDR", 4),
    (Window::Shared, "mov.u64 BASE, sh", "atom.shared.add.u32 %r3, ADDR, 1", 4),
    (Window::Shared, "mov.u64 BASE, sh", "st.shared.v2.f32 ADDR, {%f2, %f3}", 8),
    (Window::Local, "mov.u64 BASE, lo", "ld.local.u16 %rs2, ADDR", 2),
    (Window::Local, "mov.u64 BASE, lo", "st.local.v4.f32 ADDR, {%f2, %f3, %f4, %f5}", 16),
    (Window::Const, "mov.u64 BASE, co", "ld.const.u32 %r1, ADDR", 4),
    (Window::Const, "mov.u64 BASE, co", "ld.const.v2.f32 {%f1, %f2}, ADDR", 8),
    (Window::Global, "mov.u64 BASE, %rd1", "ld.u32 %r1, ADDR", 4),
    (Window::Global, "mov.u64 BASE, %rd1", "atom.add.u64 %rd8, ADDR, 1", 8),
    (Window::Shared, "mov.u64 BASE, sh;\n\tcvta.shared.u64 BASE, BASE", "st.u32 ADDR, %r2", 4),
    (Window::Shared, "mov.u64 BASE, sh;\n\tcvta.shared.u64 BASE, BASE", "atom.add.u32 %r3, ADDR, 1", 4),
    (Window::Local, "mov.u64 BASE, lo;\n\tcvta.local.u64 BASE, BASE", "st.v2.f32 ADDR, {%f2, %f3}", 8),
    (Window::Local, "mov.u64 BASE, lo;\n\tcvta.local.u64 BASE, BASE", "ld.u8 %r1, ADDR", 1),
];

/// A kernel of `accesses`, each through its own register: its window's start plus its offset
/// plus `tid * stride`, with its immediate in the address; an access threads skip is behind a
/// branch.
fn random_kernel(accesses: &[Access], stride: i64) -> String {
    let mut body = String::new();
    for (i, a) in accesses.iter().enumerate() {
        let (_, base, op, _) = FORMS[a.form];
        let r = format!("%rd{}", 20 + i);
        let address = if a.immediate == 0 { format!("[{r}]") } else { format!("[{r}+{}]", a.immediate) };
        if let Some(parity) = a.skip {
            body.push_str(&format!("\t@%p{} bra $L_skip{i};\n", 1 + parity));
        }
        body.push_str(&format!(
            "\t{base};\n\tadd.s64 {r}, {r}, {offset};\n\tadd.s64 {r}, {r}, %rd2;\n\t{op};\n",
            base = base.replace("BASE", &r),
            offset = a.offset - a.immediate,
            op = op.replace("ADDR", &address),
        ));
        if a.skip.is_some() {
            body.push_str(&format!("$L_skip{i}:\n"));
        }
    }
    format!(
        ".version 7.8\n.target sm_52\n.address_size 64\n\
         .const .align 16 .b8 co[64] = {{1, 2, 3, 4, 5, 6, 7, 8}};\n\
         .visible .entry k(\n\t.param .u64 k_param_0\n)\n{{\n\
         \t.reg .b16 %rs<4>;\n\t.reg .b32 %r<10>;\n\t.reg .f32 %f<6>;\n\t.reg .b64 %rd<64>;\n\t.reg .pred %p<4>;\n\
         \t.shared .align 16 .b8 sh[256];\n\t.local .align 16 .b8 lo[64];\n\
         \tld.param.u64 %rd1, [k_param_0];\n\tmov.u32 %r4, %tid.x;\n\tmul.wide.u32 %rd2, %r4, {stride};\n\
         \tand.b32 %r5, %r4, 1;\n\tsetp.eq.u32 %p1, %r5, 0;\n\tsetp.eq.u32 %p2, %r5, 1;\n\
         \tmov.u16 %rs1, 7;\n\tmov.u32 %r2, 9;\n\tmov.u64 %rd9, 11;\n\tmov.f32 %f2, 0f3F800000;\n\
         \tmov.f32 %f3, 0f40000000;\n\tmov.f32 %f4, 0f40400000;\n\tmov.f32 %f5, 0f40800000;\n{body}\tret;\n}}\n"
    )
}

/// A kernel broken on purpose (`cuda-backend/kernels/broken/`, nvcc 11.8), launched so that its
/// bug reaches past the fence: its entry, threads, the fence's length, and its parameters given
/// the fence's base (where they may write what the kernel reads) and the fence's start as the
/// kernel sees it (its base unfenced, 0 fenced: a fenced kernel's pointers are offsets).
struct Broken {
    entry: &'static str,
    ptx: &'static str,
    threads: u32,
    fence_len: u64,
    params: fn(u64, u64) -> Vec<Vec<u8>>,
}

fn broken() -> Vec<Broken> {
    vec![
        // out (64 floats) ends at the fence's end; thread 64 writes out[64].
        Broken {
            entry: "index_past",
            ptx: include_str!("../../cuda-backend/kernels/broken/index_past.ptx"),
            threads: 128,
            fence_len: 512,
            params: |_, seen| {
                vec![
                    seen.to_le_bytes().to_vec(),
                    (seen + 256).to_le_bytes().to_vec(),
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
            params: |_, seen| vec![seen.to_le_bytes().to_vec(), 32i32.to_le_bytes().to_vec()],
        },
        // An address 16 bytes before the fence's end; threads 4 and up write past it.
        Broken {
            entry: "pointer_from_scalar",
            ptx: include_str!("../../cuda-backend/kernels/broken/pointer_from_scalar.ptx"),
            threads: 32,
            fence_len: 64,
            params: |_, seen| vec![(seen + 48).to_le_bytes().to_vec(), 1.5f32.to_le_bytes().to_vec()],
        },
        // A table of pointers in the fence: half into it, half below it (a generic store).
        Broken {
            entry: "generic_pointer",
            ptx: include_str!("../../cuda-backend/kernels/broken/generic_pointer.ptx"),
            threads: 32,
            fence_len: 512,
            params: |base, seen| {
                let table: Vec<u8> = (0..32u64)
                    .flat_map(|t| {
                        if t < 16 { seen + 256 + 4 * t } else { seen.wrapping_sub(1024) + 4 * t }
                            .to_le_bytes()
                    })
                    .collect();
                assert_eq!(upload(base, &table), CUDA_SUCCESS);
                vec![seen.to_le_bytes().to_vec(), 2.5f32.to_le_bytes().to_vec()]
            },
        },
        // Four counters at the fence's end, 16 bytes apart; threads 4 and up add past it.
        Broken {
            entry: "atomic_past_end",
            ptx: include_str!("../../cuda-backend/kernels/broken/atomic_past_end.ptx"),
            threads: 32,
            fence_len: 128,
            params: |_, seen| vec![(seen + 64).to_le_bytes().to_vec(), 4u32.to_le_bytes().to_vec()],
        },
        // A float4 store at bytes 64..80 of a fence 72 bytes long.
        Broken {
            entry: "vector_straddle",
            ptx: include_str!("../../cuda-backend/kernels/broken/vector_straddle.ptx"),
            threads: 1,
            fence_len: 72,
            params: |_, seen| vec![seen.to_le_bytes().to_vec(), 4i32.to_le_bytes().to_vec()],
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
    let mut params = (kernel.params)(base, if fenced { 0 } else { base });
    let ptx = if fenced {
        let text = fence_ptx(kernel.ptx).unwrap().ptx().to_owned();
        let hidden = fenced_params(&text, kernel.entry, &params, base, kernel.fence_len, flag);
        params.extend(hidden);
        text
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
    let (plain, flag) = run(&cases().remove(0), Some(&fence_ptx(VECTOR_ADD).unwrap()));
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

/// An attack kernel (`cuda-backend/kernels/attacks/`, each `(out: &mut [u32; 64], n: u32)`):
/// its entry, its block, and the `n` that takes it outside.
struct Attack {
    entry: &'static str,
    ptx: &'static str,
    block: u32,
    n: u32,
}

fn attacks() -> Vec<Attack> {
    let attack = |entry, ptx, block, n| Attack { entry, ptx, block, n };
    vec![
        attack("guard_spaced", include_str!("../../cuda-backend/kernels/attacks/guard_spaced.ptx"), 32, 1024),
        attack(
            "loc_then_store",
            include_str!("../../cuda-backend/kernels/attacks/loc_then_store.ptx"),
            32,
            1024,
        ),
        attack(
            "ldu_read",
            include_str!("../../cuda-backend/kernels/attacks/ldu_read.ptx"),
            32,
            ATTACK_SECRET_AT,
        ),
        attack(
            "guard_bypass",
            include_str!("../../cuda-backend/kernels/attacks/guard_bypass.ptx"),
            128,
            1000,
        ),
        attack(
            "shared_overrun",
            include_str!("../../cuda-backend/kernels/attacks/shared_overrun.ptx"),
            32,
            4096,
        ),
        attack(
            "local_overrun",
            include_str!("../../cuda-backend/kernels/attacks/local_overrun.ptx"),
            32,
            1000,
        ),
        attack(
            "generic_shared",
            include_str!("../../cuda-backend/kernels/attacks/generic_shared.ptx"),
            32,
            4096,
        ),
        attack("trap_on", include_str!("../../cuda-backend/kernels/attacks/trap.ptx"), 32, 100),
    ]
}

/// An attack's fence: `out`'s 64 words, between two guards of its allocation.
const ATTACK_FENCE: u64 = 256;
const ATTACK_GUARD: u64 = 16384;
/// Where, in words from `out`, the secret `ldu_read` reads lies: in the guard above the fence.
const ATTACK_SECRET_AT: u32 = 1000;
const SECRET: u32 = 0x5ec2_e700;

/// What an attack did: whether the guards are untouched (the secret in place), what `out[0]`
/// holds, the flag, and the context's sticky error.
struct Attacked {
    intact: bool,
    first: u32,
    flag: u32,
    sticky: i32,
}

/// Runs `attack`, fenced or not, with `out` (zeroed) between two guards and a secret in the
/// guard above.
fn run_attack(ordinal: i32, attack: &Attack, fenced: bool) -> Attacked {
    let whole = alloc((2 * ATTACK_GUARD + ATTACK_FENCE) as usize).unwrap();
    let out = whole + ATTACK_GUARD;
    assert_eq!(upload(out, &[0; ATTACK_FENCE as usize]), CUDA_SUCCESS);
    let secret_at = out + 4 * u64::from(ATTACK_SECRET_AT);
    assert_eq!(upload(secret_at, &SECRET.to_le_bytes()), CUDA_SUCCESS);
    let flag = alloc(4).unwrap();
    assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
    // Fenced, `out` is the fence's start: offset 0.
    let seen = if fenced { 0 } else { out };
    let mut params = vec![seen.to_le_bytes().to_vec(), attack.n.to_le_bytes().to_vec()];
    let ptx = if fenced {
        let text = fence_ptx(attack.ptx).unwrap().ptx().to_owned();
        params.extend(fenced_params(&text, attack.entry, &params, out, ATTACK_FENCE, flag));
        text
    } else {
        attack.ptx.to_owned()
    };
    let f = function(load(&ptx), attack.entry).unwrap();
    let launched = launch_with(f, [1, 1, 1], [attack.block, 1, 1], 0, &mut params);
    let sticky = control::sticky_error(ordinal);
    if launched != CUDA_SUCCESS || sticky != 0 {
        return Attacked { intact: false, first: 0, flag: 0, sticky: sticky.max(launched) };
    }
    let mut guards = vec![0u8; (2 * ATTACK_GUARD + ATTACK_FENCE) as usize];
    assert_eq!(download(whole, &mut guards), CUDA_SUCCESS);
    let secret = (secret_at - whole) as usize;
    let intact = guards.iter().enumerate().all(|(i, &b)| {
        let inside = (ATTACK_GUARD as usize..(ATTACK_GUARD + ATTACK_FENCE) as usize).contains(&i);
        let expected =
            if (secret..secret + 4).contains(&i) { SECRET.to_le_bytes()[i - secret] } else { POISON };
        inside || b == expected
    });
    let first = u32::from_le_bytes(guards[ATTACK_GUARD as usize..][..4].try_into().unwrap());
    Attacked { intact, first, flag: read_u32(flag), sticky: control::sticky_error(ordinal) }
}

/// Each attack kernel, fenced: no fault, nothing outside the fence changed, the secret not read,
/// the flag set; then a correct kernel on the same context computes the right answer.
#[test]
fn the_attacks_stay_inside_their_windows_fenced() {
    let session = session();
    for attack in attacks() {
        let a = run_attack(session.ordinal, &attack, true);
        // The flag's bytes: a thread stopped at a trap, or an access redirected inside.
        let bit = if attack.entry == "trap_on" { FLAG_TRAPPED } else { FLAG_REACHED_OUT };
        assert_eq!(
            (a.intact, a.flag, a.sticky),
            (true, bit, 0),
            "{}: guards untouched, flagged, no fault",
            attack.entry
        );
        assert_ne!(a.first, SECRET, "{}: the secret is not read", attack.entry);
        assert_eq!(control::crossings(session.ordinal), 0, "{}", attack.entry);
    }
    let (plain, flag) = run(&cases().remove(0), Some(&fence_ptx(VECTOR_ADD).unwrap()));
    assert_eq!(flag, 0);
    assert_eq!(f32s(&plain[2048..2048 + 800]), (0..200).map(|i| 1.25 * i as f32).collect::<Vec<_>>());
}

/// The same launches unfenced reach outside: a guard changed, the secret read, or the context
/// faulted (each on a device of its own, since a fault is sticky).
#[test]
fn unfenced_the_attacks_reach_outside_or_fault() {
    for attack in attacks() {
        let session = session();
        let a = run_attack(session.ordinal, &attack, false);
        assert!(
            !a.intact || a.first == SECRET || a.sticky != 0,
            "{}: unfenced, it reached nothing",
            attack.entry
        );
        if a.sticky != 0 {
            assert_eq!(api::device_primary_ctx_reset(session.ordinal), CUDA_SUCCESS);
        }
    }
    // The faults are a GPU's: shared and local overruns illegal addresses, the trap a launch
    // failure.
    for (entry, code) in [("shared_overrun", 700), ("local_overrun", 700), ("trap_on", 719)] {
        let session = session();
        let attack = attacks().into_iter().find(|a| a.entry == entry).unwrap();
        assert_eq!(run_attack(session.ordinal, &attack, false).sticky, code, "{entry}");
        assert_eq!(api::device_primary_ctx_reset(session.ordinal), CUDA_SUCCESS);
    }
}

mod property {
    use proptest::prelude::*;

    use super::*;

    /// Guard bytes on each side of the fence, inside the same allocation.
    const GUARD: i64 = 8192;
    const THREADS: u32 = 8;

    fn access() -> impl Strategy<Value = Access> {
        (0..FORMS.len())
            .prop_flat_map(|form| {
                let len = FORMS[form].0.len();
                let offset = prop_oneof![
                    6 => 0..len,
                    2 => -2 * len..3 * len,
                    1 => prop_oneof![Just(i64::MIN / 2), Just(i64::MAX / 2), Just(-1), any::<i32>().prop_map(i64::from)],
                ];
                let skip = prop_oneof![3 => Just(None), 1 => (0..2u32).prop_map(Some)];
                (Just(form), offset, prop_oneof![3 => Just(0i64), 1 => -64i64..64], skip)
            })
            .prop_map(|(form, offset, immediate, skip)| Access { form, offset, immediate, skip })
    }

    /// Whether a form's instruction addresses generically (no state space).
    fn generic(op: &str) -> bool {
        ![".global.", ".shared.", ".local.", ".const."].iter().any(|space| op.contains(space))
    }

    /// A loop of a random nest: thread `t` runs it `base + (t % 3) * extra` times (at least
    /// once, a do-while), each turn counting one unit of work and running its inner loops.
    #[derive(Debug, Clone)]
    struct Loop {
        base: u32,
        extra: u32,
        /// Its body holds an instruction that waits for other threads (a shuffle whose member
        /// mask is the thread alone), so a spent budget leaves the kernel there, not the loop.
        waits: bool,
        inner: Vec<Loop>,
    }

    fn nest() -> impl Strategy<Value = Vec<Loop>> {
        let leaf = (1u32..5, 0u32..3, any::<bool>()).prop_map(|(base, extra, waits)| Loop {
            base,
            extra,
            waits,
            inner: Vec::new(),
        });
        let nested = leaf.prop_recursive(2, 6, 3, |inner| {
            (1u32..5, 0u32..3, any::<bool>(), prop::collection::vec(inner, 1..3))
                .prop_map(|(base, extra, waits, inner)| Loop { base, extra, waits, inner })
        });
        prop::collection::vec(nested, 1..3)
    }

    /// The PTX of `loops`: each turn adds one to the thread's count and stores it to `out[t]`
    /// (and, in a loop that waits, shuffles with the thread alone as its member).
    fn nest_kernel(loops: &[Loop], tail: bool) -> String {
        fn emit(loops: &[Loop], next: &mut usize, body: &mut String) {
            for l in loops {
                let j = *next;
                *next += 1;
                let (i, trips) = (10 + 2 * j, 11 + 2 * j);
                body.push_str(&format!(
                    "\tmul.lo.u32 %r{trips}, %r1, {};\n\tadd.u32 %r{trips}, %r{trips}, {};\n\tmov.u32 %r{i}, 0;\n\
                     $L_{j}:\n\tadd.u32 %r2, %r2, 1;\n\tst.global.u32 [%rd3], %r2;\n{}",
                    l.extra,
                    l.base,
                    if l.waits { "\tshfl.sync.idx.b32 %r8, %r2, 0, 31, %r9;\n" } else { "" }
                ));
                emit(&l.inner, next, body);
                body.push_str(&format!(
                    "\tadd.u32 %r{i}, %r{i}, 1;\n\tsetp.lt.u32 %p{j}, %r{i}, %r{trips};\n\t@%p{j} bra $L_{j};\n"
                ));
            }
        }
        let (mut next, mut body) = (0, String::new());
        emit(loops, &mut next, &mut body);
        if tail {
            body.push_str("\tshfl.sync.idx.b32 %r8, %r2, 0, 31, %r9;\n");
        }
        format!(
            ".version 7.8\n.target sm_70\n.address_size 64\n.visible .entry k(.param .u64 out)\n{{\n\
             \t.reg .pred %p<{next}>;\n\t.reg .b32 %r<{}>;\n\t.reg .b64 %rd<4>;\n\
             \tld.param.u64 %rd1, [out];\n\tcvta.to.global.u64 %rd1, %rd1;\n\tmov.u32 %r0, %tid.x;\n\
             \tmul.wide.u32 %rd2, %r0, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\trem.u32 %r1, %r0, 3;\n\
             \tmov.u32 %r2, 0;\n\tmov.u32 %r9, %lanemask_eq;\n{body}\tret;\n}}\n",
            10 + 2 * next
        )
    }

    /// Whether `l` or a loop inside it waits for other threads.
    fn waits(l: &Loop) -> bool {
        l.waits || l.inner.iter().any(waits)
    }

    /// How many loops `l` is, its inner loops included.
    fn size(l: &Loop) -> usize {
        1 + l.inner.iter().map(size).sum::<usize>()
    }

    /// Whether each loop, in the order `nest_kernel` writes them, leaves the loop rather than
    /// the kernel on a spent budget: it waits for no other thread (its inner loops included),
    /// and a warp-synchronous instruction follows its branch (a later loop's shuffle, or the
    /// tail's), where the exit's divergence would cost.
    fn leaves(loops: &[Loop], tail: bool) -> Vec<bool> {
        fn walk(loops: &[Loop], out: &mut Vec<(bool, bool, usize)>) {
            for l in loops {
                let at = out.len();
                out.push((l.waits, waits(l), 0));
                walk(&l.inner, out);
                out[at].2 = out.len();
            }
        }
        let mut all = Vec::new();
        walk(loops, &mut all);
        all.iter().map(|&(_, waits, end)| !waits && (tail || all[end..].iter().any(|x| x.0))).collect()
    }

    /// What thread `t` counts running `loops` with `budget` backward branches, and whether its
    /// budget ran out: each turn counts one, and every turn but a loop's last takes a branch
    /// back. A branch it would take with its budget spent leaves the kernel where the loop (its
    /// inner loops included) waits for other threads, and otherwise leaves the loop: the thread
    /// runs on after it.
    fn model(loops: &[Loop], leaves: &[bool], t: u32, budget: u64) -> (u32, bool) {
        struct Thread<'a> {
            t: u32,
            budget: u64,
            leaves: &'a [bool],
            count: u32,
            taken: u64,
            spent: bool,
        }
        /// `loops` from the `first`-th loop on: false where the thread left the kernel.
        fn run(loops: &[Loop], first: usize, th: &mut Thread) -> bool {
            let mut j = first;
            for l in loops {
                let trips = l.base + (th.t % 3) * l.extra;
                for turn in 0..trips {
                    th.count += 1;
                    if !run(&l.inner, j + 1, th) {
                        return false;
                    }
                    if turn + 1 < trips {
                        if th.taken == th.budget {
                            th.spent = true;
                            if !th.leaves[j] {
                                return false;
                            }
                            break;
                        }
                        th.taken += 1;
                    }
                }
                j += size(l);
            }
            true
        }
        let mut th = Thread { t, budget, leaves, count: 0, taken: 0, spent: false };
        run(loops, 0, &mut th);
        (th.count, th.spent)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Random loop nests, some waiting for other threads, fenced, with a random budget:
        /// every thread's count is the model's, turn for turn (a thread that would take one
        /// backward branch past its budget leaves the kernel there if the loop waits, and the
        /// loop if not), a thread within its budget finishes, and the flag's budget byte says
        /// whether any thread ran out; nothing faults.
        #[test]
        fn a_thread_stops_exactly_at_its_budget(loops in nest(), tail in any::<bool>(), budget in 0u32..200) {
            let session = session();
            let fenced = fence_ptx(&nest_kernel(&loops, tail)).unwrap();
            let leaves = leaves(&loops, tail);
            prop_assert_eq!(fenced.leaving_branches(), leaves.iter().filter(|&&l| l).count());
            let f = function(load(fenced.ptx()), "k").unwrap();
            let out = alloc(256).unwrap();
            assert_eq!(upload(out, &[0; 256]), CUDA_SUCCESS);
            let flag = alloc(4).unwrap();
            assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
            // `out` is the fence's start: offset 0.
            let mut params = vec![0u64.to_le_bytes().to_vec()];
            let hidden = hidden_params(fenced.ptx(), "k", &params, (out, 256, flag, budget)).unwrap();
            params.extend(hidden);
            prop_assert_eq!(launch_with(f, [1, 1, 1], [THREADS, 1, 1], 0, &mut params), CUDA_SUCCESS);
            prop_assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
            let mut bytes = vec![0u8; 4 * THREADS as usize];
            prop_assert_eq!(download(out, &mut bytes), CUDA_SUCCESS);
            let mut stopped = false;
            for t in 0..THREADS {
                let (count, stop) = model(&loops, &leaves, t, u64::from(budget));
                stopped |= stop;
                let got = u32::from_le_bytes(bytes[4 * t as usize..][..4].try_into().unwrap());
                prop_assert_eq!(got, count, "thread {}", t);
            }
            let expected = if stopped { kernel_args_cuda::fence::FLAG_BUDGET } else { 0 };
            prop_assert_eq!(read_u32(flag), expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        /// Random kernels of loads, stores and atomics in every state space (global, shared,
        /// local, constant, and generic addresses into the fence, the shared window and the
        /// local window) at random addresses, straight-line and with branches around accesses,
        /// fenced: whatever the addresses, nothing outside the fence changes, nothing faults,
        /// and the flag says whether some thread's access was moved: outside its window or not
        /// aligned to its width in the offset's low 32 bits, the only bits the clamp reads. (A
        /// generic access 2 GiB or more from its window reaches whichever window its address
        /// resolves to, so whether it is noted depends on where the emulator puts the windows;
        /// such an access leaves the flag unconstrained, and the guards still hold.)
        #[test]
        fn random_accesses_never_leave_their_windows(
            accesses in prop::collection::vec(access(), 1..12),
            stride in prop_oneof![Just(0i64), Just(4), Just(16), 1i64..600],
        ) {
            let session = session();
            let fenced = fence_ptx(&random_kernel(&accesses, stride)).unwrap();
            let f = function(load(fenced.ptx()), "k").unwrap();
            let total = (GUARD + FENCE + GUARD) as usize;
            let whole = alloc(total).unwrap();
            let base = whole + GUARD as u64;
            let flag = alloc(4).unwrap();
            assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
            // The parameter `g` is the fence's start: offset 0.
            let mut params = vec![0u64.to_le_bytes().to_vec()];
            let hidden = fenced_params(fenced.ptx(), "k", &params, base, FENCE as u64, flag);
            params.extend(hidden);
            prop_assert_eq!(launch_with(f, [1, 1, 1], [THREADS, 1, 1], 0, &mut params), CUDA_SUCCESS);
            prop_assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
            let flagged = read_u32(flag);
            let mut bytes = vec![0u8; total];
            prop_assert_eq!(download(whole, &mut bytes), CUDA_SUCCESS);
            let (below, rest) = bytes.split_at(GUARD as usize);
            let above = &rest[FENCE as usize..];
            prop_assert!(below.iter().chain(above).all(|&b| b == POISON), "the guards are untouched");
            // Per access and thread: Some(moved), or None where the flag is not determined.
            let moved = |a: &Access, t: i64| -> Option<bool> {
                let (window, _, op, width) = FORMS[a.form];
                let o = a.offset.wrapping_add(t.wrapping_mul(stride));
                let off = |o: i64| o < 0 || o > window.len() - width || o % width != 0;
                if !generic(op) {
                    Some(off(i64::from(o as u32)))
                } else if !off(o) {
                    Some(false)
                } else if o.unsigned_abs() < 1 << 31 {
                    Some(true)
                } else {
                    None
                }
            };
            let each: Vec<Option<bool>> = accesses
                .iter()
                .flat_map(|a| {
                    (0..i64::from(THREADS)).filter(|t| a.skip != Some((*t & 1) as u32)).map(|t| moved(a, t))
                })
                .collect();
            if each.contains(&Some(true)) {
                prop_assert_eq!(flagged, 1);
            } else if each.iter().all(|m| *m == Some(false)) {
                prop_assert_eq!(flagged, 0);
            }
        }
    }

    /// A `wmma` fragment's geometry: shape (`m`, `n`) for an `f32` accumulator, and layout.
    #[derive(Debug, Clone, Copy)]
    struct Geometry {
        shape: (&'static str, u64, u64),
        row: bool,
    }

    impl Geometry {
        /// Lines, and each line's elements.
        fn lines(self) -> (u64, u64) {
            let (_, m, n) = self.shape;
            if self.row { (m, n) } else { (n, m) }
        }

        fn form(self) -> String {
            format!("{}.{}", if self.row { "row" } else { "col" }, self.shape.0)
        }
    }

    /// Offsets: on 16-byte steps (half of them a fragment's alignment), anywhere in the first
    /// 4 KiB, or anything.
    fn offset() -> impl Strategy<Value = u64> {
        prop_oneof![(0u64..256).prop_map(|i| i * 16), 0u64..4096, any::<u64>()]
    }

    /// Strides in elements: whole 16 bytes of `f32`s, 0, small, or anything.
    fn stride() -> impl Strategy<Value = u32> {
        prop_oneof![(0u32..64).prop_map(|i| i * 4), Just(0), 0u32..300, any::<u32>()]
    }

    fn geometry() -> impl Strategy<Value = Geometry> {
        let shapes =
            prop_oneof![Just(("m16n16k16", 16, 16)), Just(("m32n8k16", 32, 8)), Just(("m8n32k16", 8, 32))];
        (shapes, any::<bool>()).prop_map(|(shape, row)| Geometry { shape, row })
    }

    /// The fence's clamp of an `f32` fragment of `g` at offset `o` with stride `s` in a fence of
    /// `len` bytes, as the rewriter writes it: the offset and stride it runs at, and whether it
    /// was moved.
    fn clamp(g: Geometry, o: u64, s: u32, len: u64) -> (u64, u64, bool) {
        let (lines, along) = g.lines();
        let (line, span) = (along * 4, (lines - 1) * 4);
        let aligned = u64::from(s & !3);
        let stride = if aligned * span > len - line { 0 } else { aligned };
        let limit = len - line - stride * span;
        let u = o & 0xffff_ffff;
        let k = u.min(limit) & !31;
        (k, stride, k != u || stride != u64::from(s))
    }

    /// A warp loads an `f32` C fragment at parameter `c` with stride `cs` and stores it as D at
    /// `d` with stride `ds`.
    fn fragment_kernel(from: Geometry, to: Geometry) -> String {
        let regs = "{%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}";
        format!(
            ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k(\n\t.param .u64 c,\n\t.param .u32 cs,\n\
             \t.param .u64 d,\n\t.param .u32 ds\n)\n{{\n\t.reg .b64 %rd<3>;\n\t.reg .b32 %r<3>;\n\t.reg .f32 %f<9>;\n\
             \tld.param.u64 %rd1, [c];\n\tld.param.u32 %r1, [cs];\n\tld.param.u64 %rd2, [d];\n\tld.param.u32 %r2, [ds];\n\
             \twmma.load.c.sync.aligned.{}.global.f32 {regs}, [%rd1], %r1;\n\
             \twmma.store.d.sync.aligned.{}.global.f32 [%rd2], {regs}, %r2;\n\tret;\n}}\n",
            from.form(),
            to.form()
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// A warp's `wmma` fragments at random offsets with random strides in fences of random
        /// lengths, fenced: nothing outside the fence changes, nothing faults (a fragment's
        /// address aligned to 32 and its stride to 16 bytes, as a GPU needs), the flag says
        /// whether the fence moved a fragment or changed its stride (as a model of the clamp
        /// says), and an unmoved launch stores what the same kernel stores unfenced.
        #[test]
        fn random_fragments_never_leave_the_fence(
            from in geometry(),
            to in geometry(),
            c in offset(),
            d in offset(),
            cs in stride(),
            ds in stride(),
            len in prop_oneof![Just(256u64), Just(1024), Just(4096), (16u64..512).prop_map(|i| i * 16)],
        ) {
            let session = session();
            let ptx = fragment_kernel(from, to);
            let fenced = fence_ptx(&ptx).unwrap();
            prop_assert_eq!(fenced.base_align(), 32);
            let total = (2 * GUARD) as u64 + len;
            // Each launch in its own allocation, filled with a pattern: the fence at 256 bytes
            // past a multiple of 256 (the emulator's allocations are aligned to 256).
            let pattern: Vec<u8> = (0..total).map(|i| (i * 7 % 251) as u8).collect();
            let launch = |module: &str| {
                let whole = alloc(total as usize).unwrap();
                assert_eq!(upload(whole, &pattern), CUDA_SUCCESS);
                (whole, function(load(module), "k").unwrap())
            };
            let flag = alloc(4).unwrap();
            assert_eq!(upload(flag, &[0; 4]), CUDA_SUCCESS);
            let mut params = vec![c.to_le_bytes().to_vec(), cs.to_le_bytes().to_vec(), d.to_le_bytes().to_vec(), ds.to_le_bytes().to_vec()];
            let (whole, f) = launch(fenced.ptx());
            let base = whole + GUARD as u64;
            let hidden = fenced_params(fenced.ptx(), "k", &params, base, len, flag);
            params.extend(hidden);
            prop_assert_eq!(launch_with(f, [1, 1, 1], [32, 1, 1], 0, &mut params), CUDA_SUCCESS);
            prop_assert_eq!(control::sticky_error(session.ordinal), 0, "no fault");
            let mut bytes = vec![0u8; total as usize];
            prop_assert_eq!(download(whole, &mut bytes), CUDA_SUCCESS);
            let (below, rest) = bytes.split_at(GUARD as usize);
            let above = &rest[len as usize..];
            prop_assert!(below == &pattern[..GUARD as usize], "the guard below is untouched");
            prop_assert!(above == &pattern[(GUARD as u64 + len) as usize..], "the guard above is untouched");
            let (_, _, load_moved) = clamp(from, c, cs, len);
            let (_, _, store_moved) = clamp(to, d, ds, len);
            prop_assert_eq!(read_u32(flag), u32::from(load_moved || store_moved));
            if !load_moved && !store_moved {
                // Unfenced, in an allocation of its own, each offset from where the fence was:
                // the same bytes.
                let (other, f) = launch(&ptx);
                let at = other + GUARD as u64;
                let mut plain = vec![(at + c).to_le_bytes().to_vec(), cs.to_le_bytes().to_vec(), (at + d).to_le_bytes().to_vec(), ds.to_le_bytes().to_vec()];
                prop_assert_eq!(launch_with(f, [1, 1, 1], [32, 1, 1], 0, &mut plain), CUDA_SUCCESS);
                let mut unfenced = vec![0u8; total as usize];
                prop_assert_eq!(download(other, &mut unfenced), CUDA_SUCCESS);
                prop_assert!(unfenced == bytes, "fenced and unfenced differ");
            }
        }
    }
}
