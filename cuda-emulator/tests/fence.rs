//! Fenced kernels on the emulated driver (`kernel_args_cuda::fence`): each nvcc-compiled fixture
//! computes the same bytes fenced as unfenced, with the fence around one arena that holds all
//! its buffers (a staged launch's layout) and around a host buffer (a direct launch's guest
//! memory); and a kernel handed addresses outside its fence (past its window, into a neighbour's
//! buffer, an atomic past the end) writes nothing outside, does not fault, and sets the flag.
//! The instructions each kernel executes, fenced and unfenced, are asserted: the fence's cost
//! (docs/performance.md).

mod common;

use common::*;
use kernel_args_cuda::fence::{FencedModule, MIN_FENCE_LEN, fence_ptx};
use kernel_args_cuda_emulator::control;
use kernel_args_cuda_emulator::memory::POISON;
use kernel_args_cuda_emulator::result::*;

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
