//! Fenced kernels through the whole pipeline (`LaunchHost::call`, the declaration check,
//! `CudaLauncher`) on the emulated driver (feature `cuda`), in both pointer modes:
//!
//! - every fixture kernel computes the same bytes fenced (`Sandbox::Fenced`) and
//!   unfenced (`Sandbox::Unfenced`), on the emulated CUDA 12.8, 13.2 and 12.2 drivers (each
//!   counts the fenced entry's hidden parameters its own way);
//! - the kernels broken on purpose (`cuda-backend/kernels/broken/`), each launched by an
//!   untrusted guest with arguments its declaration accepts, are caught: the launch answers
//!   `LaunchFailed` naming the fence, nothing outside the fence changed (host memory around the
//!   guest's in direct mode; the emulator's record of accesses across allocations in staged
//!   mode), nothing faulted, and the next launch of a correct kernel succeeds;
//! - the attack kernels (`cuda-backend/kernels/attacks/`: a guard or a `.loc` spelled so that a
//!   text scanner missed the store, `ldu`, a bypassed guard, shared and local overruns, a
//!   generic pointer into shared memory, a trap), launched the same way, are caught alike, and
//!   the ones the fence refuses are refused at registration by name;
//! - the same kernels unfenced reach outside (a guard changed, the secret read, a crossing was
//!   recorded, or the context faulted), so that a test of the fence cannot pass for another
//!   reason;
//! - a fenced kernel whose driver reports a parameter list without the fence's parameters is
//!   refused, on each driver.
//!
//! With a GPU's driver (`scripts/gpu-check.sh`) the fixtures and the broken kernels run fenced
//! on the GPU, without the emulator's record of accesses; the unfenced broken kernels run only
//! on the emulated driver (elsewhere that test prints `SKIPPED` and returns).

// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod support;

use std::path::PathBuf;
use std::sync::Arc;

use kernel_args::{AbiError, Detail, FenceReport, FenceSpan, LaunchCall, LaunchHost, PointerMode};
use kernel_args_core::ArgvBuilder;
use kernel_args_cuda::{CudaDevice, CudaOptions, KernelRegistry, PointerModeChoice, Sandbox};
use kernel_args_cuda_emulator::client::{DeviceConfig, Emulator};
use support::{VECTOR_ADD_DECLARATION, VECTOR_ADD_PTX};

const MODES: [PointerModeChoice; 2] = [PointerModeChoice::Direct, PointerModeChoice::Staged];

/// Added to a kernel's id for its unfenced registration.
const UNFENCED: i64 = 1000;

/// The bytes kept for the argv in guest memory.
const ARGV_BYTES: usize = 64;

/// Bytes of host memory on each side of the guest's, and what they hold.
const GUARD: usize = 4096;
const GUARD_BYTE: u8 = 0xa5;

/// Where an emulated driver lies, given the one `KARGS_CUDA_DRIVER` names.
type Beside = fn(&std::path::Path) -> PathBuf;

/// The emulator and the device's ordinal on it, where the test runs on the emulated driver.
type Emulated = Option<(&'static Emulator, u32)>;

/// A device with `kernels` registered (each fenced as its id, unfenced as its id plus
/// [`UNFENCED`]), in `mode`: on the emulated driver, a device of its own on the driver `library`
/// names (`None`: the one `KARGS_CUDA_DRIVER` names), with the emulator; with another driver
/// (a GPU's), the device from the environment (`library` must be `None`). `None` (the skip
/// reported) where there is no device or it cannot run in `mode`.
fn device(
    test: &str,
    mode: PointerModeChoice,
    kernels: &[(i64, &str, &str, &str)],
    library: Option<Beside>,
) -> Option<(Emulated, Arc<CudaDevice>)> {
    device_with(test, mode, kernels, library, false)
}

/// [`device`], with [`CudaOptions::aligned_fence`] as `aligned`.
fn device_with(
    test: &str,
    mode: PointerModeChoice,
    kernels: &[(i64, &str, &str, &str)],
    library: Option<Beside>,
    aligned: bool,
) -> Option<(Emulated, Arc<CudaDevice>)> {
    let mut registry = KernelRegistry::new();
    for &(id, ptx, entry, declaration) in kernels {
        registry.register(id, ptx, entry, Sandbox::fenced(declaration).unwrap()).unwrap();
        registry.register(id + UNFENCED, ptx, entry, Sandbox::unfenced(declaration).unwrap()).unwrap();
        assert!(registry.get(id).unwrap().fenced(), "{entry}");
    }
    if !support::emulated() {
        assert!(library.is_none(), "{test}: another emulated driver, without the emulator");
        let options = CudaOptions { aligned_fence: aligned, ..support::options(mode) };
        return support::open_with(test, registry, options).map(|device| (None, device));
    }
    let (_, path) = support::emulator(test)?;
    let path = library.map_or(path.clone(), |other| other(&path));
    let emulator = Emulator::load(&path).unwrap();
    emulator.clear_faults();
    // Staged on a device that cannot reach host memory at all (as staged mode is for): an
    // unfenced kernel's stray address there faults, where the emulator, which cannot tell
    // mapped host memory from unmapped, would otherwise follow it into the host.
    let config = match mode {
        PointerModeChoice::Staged => DeviceConfig {
            pageable_memory_access: false,
            uses_host_page_tables: false,
            ..DeviceConfig::default()
        },
        _ => DeviceConfig::default(),
    };
    let ordinal = emulator.add_device(config);
    let options = CudaOptions {
        device_ordinal: ordinal,
        pointer_mode: mode,
        driver_library: Some(path),
        aligned_fence: aligned,
        ..CudaOptions::default()
    };
    Some((Some((emulator, ordinal)), CudaDevice::open(registry, options).unwrap()))
}

fn floats(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

/// Guest memory of `len` bytes inside a host buffer, between two guards, starting at a host
/// address aligned to 64 (as a wasm memory starts on a page).
struct Memory {
    host: Vec<u8>,
    start: usize,
    len: usize,
}

impl Memory {
    fn new(len: usize) -> Memory {
        let mut host = vec![GUARD_BYTE; GUARD + 64 + len + GUARD];
        let start =
            GUARD + (host[GUARD..].as_ptr().addr().next_multiple_of(64) - host[GUARD..].as_ptr().addr());
        host[start..start + len].fill(0);
        Memory { host, start, len }
    }

    fn guest(&mut self) -> &mut [u8] {
        &mut self.host[self.start..self.start + self.len]
    }

    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.guest()[at..at + bytes.len()].copy_from_slice(bytes);
    }

    fn guards_intact(&self) -> bool {
        self.host[..self.start].iter().chain(&self.host[self.start + self.len..]).all(|&b| b == GUARD_BYTE)
    }

    /// Calls kernel `id` with `argv`, written at guest offset `at`, on `host`: the ABI code.
    fn call(
        &mut self,
        host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>,
        id: i64,
        (grid, block): ([i32; 3], [i32; 3]),
        argv: &[u8],
        at: usize,
    ) -> i32 {
        assert!(argv.len() <= ARGV_BYTES);
        self.put(at, argv);
        let call = LaunchCall {
            args_ptr: at as i32,
            args_len: argv.len() as i32,
            ..LaunchCall::new(id, grid, block)
        };
        host.call(Some(self.guest()), &call)
    }
}

fn argv(build: impl FnOnce(&mut ArgvBuilder<'_>)) -> Vec<u8> {
    let mut buf = [0u8; ARGV_BYTES];
    let mut builder = ArgvBuilder::new(&mut buf);
    build(&mut builder);
    builder.finish().to_vec()
}

/// One fixture launch: its kernel, declaration, shape, buffers (at 256-byte steps from guest
/// offset 0) and argv (given each buffer's offset and length).
struct Fixture {
    entry: &'static str,
    ptx: &'static str,
    declaration: &'static str,
    grid: [i32; 3],
    block: [i32; 3],
    buffers: Vec<Vec<u8>>,
    argv: fn(&[(u32, u32)]) -> Vec<u8>,
}

fn fixtures() -> Vec<Fixture> {
    let k = |name: &str| -> &'static str {
        match name {
            "grid_stride" => include_str!("../../cuda-backend/kernels/grid_stride.ptx"),
            "block_sum" => include_str!("../../cuda-backend/kernels/block_sum.ptx"),
            "transpose" => include_str!("../../cuda-backend/kernels/transpose.ptx"),
            "histogram" => include_str!("../../cuda-backend/kernels/histogram.ptx"),
            "local_array" => include_str!("../../cuda-backend/kernels/local_array.ptx"),
            _ => unreachable!(),
        }
    };
    vec![
        Fixture {
            entry: "vector_add",
            ptx: VECTOR_ADD_PTX,
            declaration: VECTOR_ADD_DECLARATION,
            grid: [1, 1, 1],
            block: [256, 1, 1],
            buffers: vec![
                floats((0..200).map(|i| i as f32)),
                floats((0..200).map(|i| 0.25 * i as f32)),
                vec![0; 800],
            ],
            argv: |w| {
                argv(|a| {
                    _ = a
                        .ptr(w[0].0, w[0].1)
                        .unwrap()
                        .ptr(w[1].0, w[1].1)
                        .unwrap()
                        .ptr(w[2].0, w[2].1)
                        .unwrap()
                        .u32(200)
                })
            },
        },
        Fixture {
            entry: "saxpy_grid_stride",
            ptx: k("grid_stride"),
            declaration: "saxpy(a: f32, x: &[f32; n], y: &mut [f32; n], n: u32)",
            grid: [2, 1, 1],
            block: [64, 1, 1],
            buffers: vec![
                floats((0..1000).map(|i| i as f32 * 0.5)),
                floats((0..1000).map(|i| 3.0 - i as f32)),
            ],
            argv: |w| {
                argv(|a| {
                    _ = a
                        .f32(1.5)
                        .unwrap()
                        .ptr(w[0].0, w[0].1)
                        .unwrap()
                        .ptr(w[1].0, w[1].1)
                        .unwrap()
                        .u32(1000)
                })
            },
        },
        Fixture {
            entry: "block_sum",
            ptx: k("block_sum"),
            declaration: "block_sum(input: &[f32; n], out: &mut [f32; grid.x], n: u32)",
            grid: [4, 1, 1],
            block: [256, 1, 1],
            buffers: vec![floats((0..1000).map(|i| (i % 7) as f32)), vec![0; 16]],
            argv: |w| argv(|a| _ = a.ptr(w[0].0, w[0].1).unwrap().ptr(w[1].0, w[1].1).unwrap().u32(1000)),
        },
        Fixture {
            entry: "transpose",
            ptx: k("transpose"),
            declaration: "transpose(input: &[f32; rows * cols], out: &mut [f32; rows * cols], rows: u32, cols: u32)",
            grid: [4, 5, 1],
            block: [16, 8, 1],
            buffers: vec![floats((0..37 * 53).map(|i| i as f32)), vec![0; 4 * 37 * 53]],
            argv: |w| {
                argv(|a| {
                    _ = a.ptr(w[0].0, w[0].1).unwrap().ptr(w[1].0, w[1].1).unwrap().u32(37).unwrap().u32(53)
                })
            },
        },
        Fixture {
            entry: "histogram",
            ptx: k("histogram"),
            declaration: "histogram(data: &[u8; n], bins: &mut [u32; 256], n: u32)",
            grid: [157, 1, 1],
            block: [128, 1, 1],
            buffers: vec![(0..20_000u32).map(|i| (i.wrapping_mul(37) % 251) as u8).collect(), vec![0; 1024]],
            argv: |w| argv(|a| _ = a.ptr(w[0].0, w[0].1).unwrap().ptr(w[1].0, w[1].1).unwrap().u32(20_000)),
        },
        Fixture {
            entry: "local_array",
            ptx: k("local_array"),
            declaration: "local_array(idx: &[i32; block.x], out: &mut [f32; block.x])",
            grid: [1, 1, 1],
            block: [64, 1, 1],
            buffers: vec![(0..64i32).flat_map(|t| ((t * 5 + 3) % 11).to_le_bytes()).collect(), vec![0; 256]],
            argv: |w| argv(|a| _ = a.ptr(w[0].0, w[0].1).unwrap().ptr(w[1].0, w[1].1)),
        },
    ]
}

/// Runs `fixture` as kernel `id` on `host` over fresh guest memory: the guest memory after it.
fn run_fixture(host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>, fixture: &Fixture, id: i64) -> Vec<u8> {
    let mut windows = Vec::new();
    let mut at = 0;
    for buffer in &fixture.buffers {
        windows.push((at as u32, buffer.len() as u32));
        at += buffer.len().next_multiple_of(256);
    }
    let mut memory = Memory::new(at + ARGV_BYTES);
    for (buffer, &(offset, _)) in fixture.buffers.iter().zip(&windows) {
        memory.put(offset as usize, buffer);
    }
    let code = memory.call(host, id, (fixture.grid, fixture.block), &(fixture.argv)(&windows), at);
    assert_eq!(code, 0, "{} (kernel {id}): {:?}", fixture.entry, host.last_error_message());
    assert!(memory.guards_intact(), "{}", fixture.entry);
    memory.guest().to_vec()
}

#[test]
fn fixtures_compute_the_same_bytes_fenced_and_unfenced_in_both_modes() {
    let test = "fixtures_compute_the_same_bytes_fenced_and_unfenced_in_both_modes";
    let fixtures = fixtures();
    let kernels: Vec<(i64, &str, &str, &str)> =
        fixtures.iter().enumerate().map(|(i, f)| (i as i64 + 1, f.ptx, f.entry, f.declaration)).collect();
    let drivers: Vec<(&str, Option<Beside>)> = if support::emulated() {
        vec![("12.8", None), ("13.2", Some(support::emulator_13_2)), ("12.2", Some(support::emulator_12_2))]
    } else {
        vec![("the system's", None)]
    };
    for &(driver, library) in &drivers {
        for mode in MODES {
            let Some((emulated, device)) = device(test, mode, &kernels, library) else { continue };
            let mut host = LaunchHost::new(device.launcher());
            for (i, fixture) in fixtures.iter().enumerate() {
                let id = i as i64 + 1;
                let fenced = run_fixture(&mut host, fixture, id);
                let unfenced = run_fixture(&mut host, fixture, id + UNFENCED);
                let what = format!("{driver} {mode:?} {}", fixture.entry);
                assert!(fenced == unfenced, "{what}: fenced and unfenced bytes differ");
                if let Some((emulator, ordinal)) = emulated {
                    assert_eq!(emulator.crossings(ordinal), 0, "{driver} {mode:?} {}", fixture.entry);
                }
            }
            support::say(format!(
                "{test}: {mode:?}: 6 fixtures on {} (driver {driver}): the same bytes fenced and unfenced",
                device.info().name
            ));
        }
    }
}

/// A kernel broken on purpose, launched by an untrusted guest with arguments its declaration
/// accepts, laid out so that its bug reaches past the guest's memory (direct) and the launch's
/// staging arena (staged).
struct Broken {
    entry: &'static str,
    ptx: &'static str,
    declaration: &'static str,
    threads: i32,
    /// Guest memory's length, the argv included.
    memory: usize,
    /// Where the argv lies in it.
    argv_at: usize,
    /// Fills guest memory, and gives the argv; `secret` is the host address of memory outside
    /// the guest's.
    setup: fn(&mut Memory, secret: u64) -> Vec<u8>,
}

fn broken() -> Vec<Broken> {
    vec![
        // a and out (64 floats each) touch, out ending guest memory; thread 64 writes out[64].
        Broken {
            entry: "index_past",
            ptx: include_str!("../../cuda-backend/kernels/broken/index_past.ptx"),
            declaration: "index_past(a: &[f32; n], out: &mut [f32; n], n: u32)",
            threads: 128,
            memory: ARGV_BYTES + 512,
            argv_at: 0,
            setup: |_, _| argv(|a| _ = a.ptr(64, 256).unwrap().ptr(320, 256).unwrap().u32(64)),
        },
        // out at guest offset 0; thread 0 writes out[-1].
        Broken {
            entry: "negative_index",
            ptx: include_str!("../../cuda-backend/kernels/broken/negative_index.ptx"),
            declaration: "negative_index(out: &mut [f32; n], n: i32)",
            threads: 32,
            memory: 256 + ARGV_BYTES,
            argv_at: 256,
            setup: |_, _| argv(|a| _ = a.ptr(0, 128).unwrap().i32(32)),
        },
        // A host address as a u64 scalar, which the declaration lets through as a number.
        Broken {
            entry: "pointer_from_scalar",
            ptx: include_str!("../../cuda-backend/kernels/broken/pointer_from_scalar.ptx"),
            declaration: "pointer_from_scalar(address: u64, value: f32)",
            threads: 32,
            memory: 256 + ARGV_BYTES,
            argv_at: 256,
            setup: |_, secret| argv(|a| _ = a.u64(secret).unwrap().f32(1.5)),
        },
        // A table of host addresses in guest memory, each dereferenced by a generic store.
        Broken {
            entry: "generic_pointer",
            ptx: include_str!("../../cuda-backend/kernels/broken/generic_pointer.ptx"),
            declaration: "generic_pointer(table: &[u64; block.x], value: f32)",
            threads: 32,
            memory: 256 + ARGV_BYTES,
            argv_at: 256,
            setup: |memory, secret| {
                let table: Vec<u8> = (0..32u64).flat_map(|t| (secret + 4 * t).to_le_bytes()).collect();
                memory.put(0, &table);
                argv(|a| _ = a.ptr(0, 256).unwrap().f32(2.5))
            },
        },
        // Four counters 16 bytes apart, ending guest memory; threads 4 and up add past them.
        Broken {
            entry: "atomic_past_end",
            ptx: include_str!("../../cuda-backend/kernels/broken/atomic_past_end.ptx"),
            declaration: "atomic_past_end(counters: &mut [u32; 4 * stride], stride: u32)",
            threads: 32,
            memory: ARGV_BYTES + 256,
            argv_at: 0,
            setup: |_, _| argv(|a| _ = a.ptr(256, 64).unwrap().u32(4)),
        },
        // A float4 store at bytes 64..80 of an 18-float window that ends guest memory. The
        // memory is a multiple of 16 bytes long (as a fence must be), so the window starts 8
        // bytes past a multiple of 16 and the store, which straddles the end, is misaligned too.
        Broken {
            entry: "vector_straddle",
            ptx: include_str!("../../cuda-backend/kernels/broken/vector_straddle.ptx"),
            declaration: "vector_straddle(out: &mut [f32; 18], index: i32)",
            threads: 1,
            memory: ARGV_BYTES + 208,
            argv_at: 0,
            setup: |_, _| argv(|a| _ = a.ptr(200, 72).unwrap().i32(4)),
        },
    ]
}

/// The attack kernels (`cuda-backend/kernels/attacks/`) the fence accepts, each
/// `(out: &mut [u32; 64], n: u32)` with `out` all of guest memory but the argv, launched with
/// the `n` that takes it outside (and `wmma_load`, whose stored fragment runs past memory).
fn attacks() -> Vec<Broken> {
    fn attack(entry: &'static str, ptx: &'static str, declaration: &'static str, threads: i32) -> Broken {
        Broken {
            entry,
            ptx,
            declaration,
            threads,
            memory: 256 + ARGV_BYTES,
            argv_at: 256,
            setup: |_, _| Vec::new(),
        }
    }
    let with_n = |mut b: Broken, setup: fn(&mut Memory, u64) -> Vec<u8>| {
        b.setup = setup;
        b
    };
    vec![
        with_n(
            attack(
                "guard_spaced",
                include_str!("../../cuda-backend/kernels/attacks/guard_spaced.ptx"),
                "guard_spaced(out: &mut [u32; 64], n: u32)",
                32,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(1000)),
        ),
        with_n(
            attack(
                "loc_then_store",
                include_str!("../../cuda-backend/kernels/attacks/loc_then_store.ptx"),
                "loc_then_store(out: &mut [u32; 64], n: u32)",
                32,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(1000)),
        ),
        with_n(
            attack(
                "ldu_read",
                include_str!("../../cuda-backend/kernels/attacks/ldu_read.ptx"),
                "ldu_read(out: &mut [u32; 64], n: u32)",
                32,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(1000)),
        ),
        with_n(
            attack(
                "guard_bypass",
                include_str!("../../cuda-backend/kernels/attacks/guard_bypass.ptx"),
                "guard_bypass(out: &mut [u32; 64], n: u32)",
                128,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(1000)),
        ),
        with_n(
            attack(
                "shared_overrun",
                include_str!("../../cuda-backend/kernels/attacks/shared_overrun.ptx"),
                "shared_overrun(out: &mut [u32; 64], n: u32)",
                32,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(4096)),
        ),
        with_n(
            attack(
                "local_overrun",
                include_str!("../../cuda-backend/kernels/attacks/local_overrun.ptx"),
                "local_overrun(out: &mut [u32; 64], n: u32)",
                32,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(1000)),
        ),
        with_n(
            attack(
                "generic_shared",
                include_str!("../../cuda-backend/kernels/attacks/generic_shared.ptx"),
                "generic_shared(out: &mut [u32; 64], n: u32)",
                32,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(900)),
        ),
        // One warp's 16x16 tensor-core tile: 512 bytes loaded from `a` and `b` and 1 KiB of D
        // stored from `out`, each 256 bytes long, back to back in 1 KiB of guest memory (the
        // shortest fence the module's fragments need): D's store runs past it.
        Broken {
            entry: "wmma_load",
            ptx: include_str!("../../cuda-backend/kernels/attacks/wmma_load.ptx"),
            declaration: "wmma_load(a: &[u16; 128], b: &[u16; 128], out: &mut [f32; 64])",
            threads: 32,
            memory: 1024 + ARGV_BYTES,
            argv_at: 1024,
            setup: |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().ptr(256, 256).unwrap().ptr(512, 256).unwrap()),
        },
        // A fragment loaded from a shared tile 2048 elements (4 KiB) past its start: past the
        // block's shared memory.
        Broken {
            entry: "wmma_shared_overrun",
            ptx: include_str!("../../cuda-backend/kernels/attacks/wmma_shared_overrun.ptx"),
            declaration: "wmma_shared_overrun(a: &[u16; 256], out: &mut [f32; 256], skew: i32)",
            threads: 32,
            memory: 1536 + ARGV_BYTES,
            argv_at: 1536,
            setup: |_, _| argv(|a| _ = a.ptr(0, 512).unwrap().ptr(512, 1024).unwrap().i32(2048)),
        },
        with_n(
            attack(
                "trap_on",
                include_str!("../../cuda-backend/kernels/attacks/trap.ptx"),
                "trap_on(out: &mut [u32; 64], n: u32)",
                32,
            ),
            |_, _| argv(|a| _ = a.ptr(0, 256).unwrap().u32(100)),
        ),
    ]
}

/// The guard's bytes as a word: what `ldu_read` copies into the guest when its read escapes.
const GUARD_WORD: u32 = u32::from_le_bytes([GUARD_BYTE; 4]);

/// One good vector_add on `host` (kernel 1), checked.
fn correct_launch(host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>) {
    let n = 100;
    let mut memory = Memory::new(3 * 512 + ARGV_BYTES);
    memory.put(0, &floats((0..n).map(|i| i as f32)));
    memory.put(512, &floats((0..n).map(|i| 2.0 * i as f32)));
    let argv =
        argv(|a| _ = a.ptr(0, 400).unwrap().ptr(512, 400).unwrap().ptr(1024, 400).unwrap().u32(n as u32));
    let code = memory.call(host, 1, ([1, 1, 1], [128, 1, 1]), &argv, 1536);
    assert_eq!(code, 0, "{:?}", host.last_error_message());
    let out = &memory.guest()[1024..1424];
    assert_eq!(out, floats((0..n).map(|i| 3.0 * i as f32)).as_slice());
}

/// What one broken launch came to: the ABI code, the message, whether the host memory around
/// the guest's and the secret are as they were, the crossings recorded, the sticky error.
#[derive(Debug)]
struct Outcome {
    code: i32,
    message: Option<String>,
    /// What the launcher read from the fence's flag, where the launch answered with it.
    report: Option<FenceReport>,
    intact: bool,
    /// The guest's first word after the launch (what `ldu_read` copies there).
    first: u32,
    crossings: u64,
    sticky: i32,
}

fn run_broken(
    emulated: Emulated,
    host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>,
    kernel: &Broken,
    id: i64,
) -> Outcome {
    let secret = vec![GUARD_BYTE; 256];
    let mut memory = Memory::new(kernel.memory);
    let argv = (kernel.setup)(&mut memory, secret.as_ptr().addr() as u64);
    if let Some((emulator, ordinal)) = emulated {
        emulator.clear_crossings(ordinal);
    }
    let code = memory.call(host, id, ([1, 1, 1], [kernel.threads, 1, 1]), &argv, kernel.argv_at);
    let intact = memory.guards_intact() && secret.iter().all(|&b| b == GUARD_BYTE);
    let first = u32::from_le_bytes(memory.guest()[..4].try_into().unwrap());
    let report = match host.last_error().map(|e| e.detail()) {
        Some(Detail::Fenced(report)) => Some(*report),
        _ => None,
    };
    Outcome {
        code,
        message: host.last_error_message(),
        report,
        intact,
        first,
        crossings: emulated.map_or(0, |(emulator, ordinal)| emulator.crossings(ordinal)),
        sticky: emulated.map_or(0, |(emulator, ordinal)| emulator.sticky_error(ordinal)),
    }
}

#[test]
fn kernels_broken_on_purpose_are_caught_and_the_next_launch_succeeds() {
    let test = "kernels_broken_on_purpose_are_caught_and_the_next_launch_succeeds";
    let broken = broken();
    let mut kernels: Vec<(i64, &str, &str, &str)> =
        vec![(1, VECTOR_ADD_PTX, "vector_add", VECTOR_ADD_DECLARATION)];
    kernels.extend(broken.iter().enumerate().map(|(i, b)| (i as i64 + 2, b.ptx, b.entry, b.declaration)));
    for mode in MODES {
        let Some((emulated, device)) = device(test, mode, &kernels, None) else { continue };
        // One launcher for all: each fence is its launch's arena, however long the kept arena.
        let mut host = LaunchHost::new(device.launcher());
        let mut example = None;
        for (i, kernel) in broken.iter().enumerate() {
            // On a GPU, a fault would answer LaunchFailed with the driver's error instead of the
            // fence's message; the emulator also records accesses across its allocations.
            let outcome = run_broken(emulated, &mut host, kernel, i as i64 + 2);
            example = example.or(outcome.message.clone());
            let what = format!("{mode:?} {}: {outcome:?}", kernel.entry);
            assert_eq!(outcome.code, AbiError::LaunchFailed.code(), "{what}");
            assert!(outcome.message.as_deref().unwrap().contains("reached outside its fence"), "{what}");
            assert!(outcome.intact, "{what}: host memory outside the guest's changed");
            assert_eq!((outcome.crossings, outcome.sticky), (0, 0), "{what}");
            correct_launch(&mut host);
        }
        support::say(format!(
            "{test}: {mode:?}: 6 broken kernels caught on {}; the first: {}",
            device.info().name,
            example.unwrap()
        ));
    }
}

#[test]
fn unfenced_the_broken_kernels_reach_outside() {
    let test = "unfenced_the_broken_kernels_reach_outside";
    let broken = broken();
    let mut kernels: Vec<(i64, &str, &str, &str)> =
        vec![(1, VECTOR_ADD_PTX, "vector_add", VECTOR_ADD_DECLARATION)];
    kernels.extend(broken.iter().enumerate().map(|(i, b)| (i as i64 + 2, b.ptx, b.entry, b.declaration)));
    // Unfenced, the kernels may scribble on the host's memory or a GPU's: the emulated driver only.
    if support::emulator(test).is_none() {
        return;
    }
    for mode in MODES {
        let Some((emulated, device)) = device(test, mode, &kernels, None) else { return };
        for (i, kernel) in broken.iter().enumerate() {
            // A launcher of its own, whose arena is as long as this launch's windows: an
            // earlier, longer launch's arena would hold the overrun.
            let mut host = LaunchHost::new(device.launcher());
            let outcome = run_broken(emulated, &mut host, kernel, i as i64 + 2 + UNFENCED);
            let reached = !outcome.intact || outcome.crossings > 0 || outcome.sticky != 0;
            assert!(reached, "{mode:?} {}: unfenced, it reached nothing outside: {outcome:?}", kernel.entry);
            // A fault is sticky: the next launch replaces the context.
            correct_launch(&mut host);
        }
    }
}

/// Host memory aligned to 64 bytes.
#[repr(align(64))]
struct Aligned([u8; 512]);

/// 4 KiB of host memory aligned to 64 bytes.
#[repr(align(64))]
struct AlignedKib([u8; 4096]);

/// A kernel whose `wmma` fragments have a constant stride is clamped with each whole fragment
/// as one access (`wmma_load`: D's 16 lines of 64 bytes, 64 bytes apart, 1 KiB from its
/// address), so it needs a fence at least that long (`KernelEntry::fence_min_len`): in direct
/// mode guest memory shorter is refused before the launch, a staged launch's arena is made that
/// long, and either way a correct launch runs.
#[test]
fn a_module_whose_fragments_need_a_longer_fence_is_given_one_or_refused() {
    let test = "a_module_whose_fragments_need_a_longer_fence_is_given_one_or_refused";
    let declaration = "wmma_load(a: &[u16; 128], b: &[u16; 128], out: &mut [f32; 64])";
    let kernels =
        [(1, include_str!("../../cuda-backend/kernels/attacks/wmma_load.ptx"), "wmma_load", declaration)];
    for mode in MODES {
        let Some((_, device)) = device(test, mode, &kernels, None) else { continue };
        assert_eq!(device.registry().get(1).map(|k| k.fence_min_len()), Some(1024));
        let mut launcher = device.launcher();
        // Guest memory of `len` bytes, aligned to 64: A and B all ones at its start, D stored
        // over them (each window 256 bytes at 0), so each of D's first elements is 16.
        let mut run = |len: usize| {
            let mut host = AlignedKib([0; 4096]);
            let memory = &mut host.0[..len];
            let one = half::f16::from_f32(1.0).to_le_bytes();
            for i in 0..128 {
                memory[2 * i..2 * i + 2].copy_from_slice(&one);
            }
            let argv = argv(|a| _ = a.ptr(0, 256).unwrap().ptr(0, 256).unwrap().ptr(0, 256).unwrap());
            let guest = kernel_args_core::GuestMemory::exclusive(memory);
            let args = support::checked(&argv, &guest);
            let shape = kernel_args::LaunchShape { grid: [1, 1, 1], block: [32, 1, 1], shared_mem_bytes: 0 };
            let result = support::launch(&mut launcher, 1, shape, &args, &guest).map(|_| ());
            result.map(|()| f32::from_le_bytes(host.0[..4].try_into().unwrap()))
        };
        let short = run(1008);
        match mode {
            PointerModeChoice::Direct => {
                let typed = |e: &kernel_args::HostError| match e.detail() {
                    Detail::FenceUnavailable(u) => Some((u.kernel_id, u.problem)),
                    _ => None,
                };
                assert_eq!(
                    short.as_ref().err().and_then(typed),
                    Some((1, kernel_args::FenceProblem::MemoryTooShort { len: 1008, min: 1024 }))
                );
            }
            _ => assert_eq!(short.map_err(|e| e.to_string()), Ok(16.0), "{mode:?}"),
        }
        assert_eq!(run(1024).map_err(|e| e.to_string()), Ok(16.0), "{mode:?}");
    }
}

/// A kernel that loads or stores a `wmma` fragment needs guest memory aligned to 32 in direct
/// mode (the fence clamps a fragment's address to a multiple of 32 from the base, and a GPU
/// faults on a fragment that is not aligned to 32); aligned so, a correct launch runs.
#[test]
fn a_fenced_fragment_needs_guest_memory_aligned_to_thirty_two() {
    let test = "a_fenced_fragment_needs_guest_memory_aligned_to_thirty_two";
    let declaration = "wmma_load(a: &[u16; 256], b: &[u16; 256], out: &mut [f32; 256])";
    let kernels =
        [(1, include_str!("../../cuda-backend/kernels/attacks/wmma_load.ptx"), "wmma_load", declaration)];
    let Some((_, device)) = device(test, PointerModeChoice::Direct, &kernels, None) else { return };
    assert_eq!(device.registry().get(1).map(|k| k.fence_base_align()), Some(32));
    let mut launcher = device.launcher();
    // Guest memory of 2 KiB at `at` bytes into 64-aligned host memory: A, B, then D.
    let mut run = |at: usize| {
        let mut host = AlignedKib([0; 4096]);
        let memory = &mut host.0[at..at + 2048];
        // A and B all ones: each of D's elements is 16.
        let one = half::f16::from_f32(1.0).to_le_bytes();
        for i in 0..512 {
            memory[2 * i..2 * i + 2].copy_from_slice(&one);
        }
        let argv = argv(|a| _ = a.ptr(0, 512).unwrap().ptr(512, 512).unwrap().ptr(1024, 1024).unwrap());
        let guest = kernel_args_core::GuestMemory::exclusive(memory);
        let args = support::checked(&argv, &guest);
        let shape = kernel_args::LaunchShape { grid: [1, 1, 1], block: [32, 1, 1], shared_mem_bytes: 0 };
        let result = support::launch(&mut launcher, 1, shape, &args, &guest).map(|_| ());
        result.map(|()| f32::from_le_bytes(host.0[at + 1024..at + 1028].try_into().unwrap()))
    };
    let typed = |e: &kernel_args::HostError| match e.detail() {
        Detail::FenceUnavailable(u) => Some((u.kernel_id, u.problem)),
        _ => None,
    };
    let misaligned = run(16);
    assert_eq!(
        misaligned.as_ref().err().and_then(typed),
        Some((1, kernel_args::FenceProblem::MisalignedMemory { align: 32 }))
    );
    assert_eq!(run(32).map_err(|e| e.to_string()), Ok(16.0));
}

#[test]
fn a_fenced_launch_needs_the_shortest_fence_of_guest_memory_aligned_to_sixteen() {
    let test = "a_fenced_launch_needs_the_shortest_fence_of_guest_memory_aligned_to_sixteen";
    // ... and a multiple of 16 bytes long.
    let kernels = [(1, VECTOR_ADD_PTX, "vector_add", VECTOR_ADD_DECLARATION)];
    for mode in MODES {
        let Some((_, device)) = device(test, mode, &kernels, None) else { continue };
        let mut launcher = device.launcher();
        // Guest memory of `len` bytes at `at` bytes into aligned host memory: one float each
        // for a, b and out, added.
        let mut run = |at: usize, len: usize| {
            let mut host = Aligned([0; 512]);
            let memory = &mut host.0[at..at + len];
            memory[..4].copy_from_slice(&1.0f32.to_le_bytes());
            memory[4..8].copy_from_slice(&2.0f32.to_le_bytes());
            let argv = argv(|a| _ = a.ptr(0, 4).unwrap().ptr(4, 4).unwrap().ptr(8, 4).unwrap().u32(1));
            let guest = kernel_args_core::GuestMemory::exclusive(memory);
            let args = support::checked(&argv, &guest);
            let shape = kernel_args::LaunchShape { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
            let result = support::launch(&mut launcher, 1, shape, &args, &guest).map(|_| ());
            result.map(|()| f32::from_le_bytes(host.0[at + 8..at + 12].try_into().unwrap()))
        };
        let (short, misaligned, ragged, right) = (run(0, 255), run(4, 256), run(16, 264), run(16, 256));
        assert_eq!(right, Ok(3.0), "{mode:?}");
        match mode {
            // The fence is guest memory: shorter than the shortest fence (the most one clamp
            // covers), or not aligned to the widest access.
            PointerModeChoice::Direct => {
                // Typed, for an embedder to branch on; and said as the Display says it.
                let typed = |e: &kernel_args::HostError| match e.detail() {
                    Detail::FenceUnavailable(u) => Some((u.kernel_id, u.problem)),
                    _ => None,
                };
                assert_eq!(
                    short.as_ref().err().and_then(typed),
                    Some((1, kernel_args::FenceProblem::MemoryTooShort { len: 255, min: 256 }))
                );
                assert_eq!(
                    misaligned.as_ref().err().and_then(typed),
                    Some((1, kernel_args::FenceProblem::MisalignedMemory { align: 16 }))
                );
                assert_eq!(
                    ragged.as_ref().err().and_then(typed),
                    Some((1, kernel_args::FenceProblem::NotMultiple { len: 264, multiple: 16 }))
                );
                assert_eq!(
                    ragged.unwrap_err().to_string(),
                    "LaunchFailed -5: kernel 1 is fenced, and its fence of 264 bytes is not a multiple of 16 bytes"
                );
                assert_eq!(
                    short.unwrap_err().to_string(),
                    "LaunchFailed -5: kernel 1 is fenced, and the guest's memory of 255 bytes is shorter than \
                     the shortest fence, 256 bytes"
                );
                assert_eq!(
                    misaligned.unwrap_err().to_string(),
                    "LaunchFailed -5: kernel 1 is fenced, and the guest's memory starts at a host address not \
                     aligned to 16 bytes"
                );
            }
            // The arena is made long enough, and aligned.
            _ => assert_eq!((short, misaligned, ragged), (Ok(3.0), Ok(3.0), Ok(3.0))),
        }
    }
}

#[test]
fn the_attacks_are_caught_and_the_next_launch_succeeds() {
    let test = "the_attacks_are_caught_and_the_next_launch_succeeds";
    let attacks = attacks();
    let mut kernels: Vec<(i64, &str, &str, &str)> =
        vec![(1, VECTOR_ADD_PTX, "vector_add", VECTOR_ADD_DECLARATION)];
    kernels.extend(attacks.iter().enumerate().map(|(i, b)| (i as i64 + 2, b.ptx, b.entry, b.declaration)));
    for mode in MODES {
        let Some((emulated, device)) = device(test, mode, &kernels, None) else { continue };
        let mut host = LaunchHost::new(device.launcher());
        for (i, kernel) in attacks.iter().enumerate() {
            let outcome = run_broken(emulated, &mut host, kernel, i as i64 + 2);
            let what = format!("{mode:?} {}: {outcome:?}", kernel.entry);
            assert_eq!(outcome.code, AbiError::LaunchFailed.code(), "{what}");
            // The detail says which: a trap stopped threads, or accesses were redirected; and
            // what the fence was.
            let trap = kernel.entry == "trap_on";
            let report = outcome.report.unwrap_or_else(|| panic!("{what}: no fence report"));
            assert_eq!(
                (report.kernel_id, report.reached_out, report.trapped),
                (i as i64 + 2, !trap, trap),
                "{what}"
            );
            let span = if device.pointer_mode() == PointerMode::Direct {
                FenceSpan::GuestMemory
            } else {
                FenceSpan::StagingArena
            };
            assert_eq!(report.fence, span, "{what}");
            let said = if trap {
                "stopped at a trap, brkpt or failed device-side assert"
            } else {
                "reached outside its fence"
            };
            let message = outcome.message.as_deref().unwrap();
            assert!(message.contains(said), "{what}");
            assert_eq!(message.matches("; what the kernel wrote").count(), 1, "{what}");
            assert!(outcome.intact, "{what}: host memory outside the guest's changed");
            assert_ne!(outcome.first, GUARD_WORD, "{what}: the guard was read");
            assert_eq!((outcome.crossings, outcome.sticky), (0, 0), "{what}");
            correct_launch(&mut host);
        }
        support::say(format!("{test}: {mode:?}: {} attacks caught on {}", attacks.len(), device.info().name));
    }
}

#[test]
fn unfenced_the_attacks_reach_outside() {
    let test = "unfenced_the_attacks_reach_outside";
    let attacks = attacks();
    let mut kernels: Vec<(i64, &str, &str, &str)> =
        vec![(1, VECTOR_ADD_PTX, "vector_add", VECTOR_ADD_DECLARATION)];
    kernels.extend(attacks.iter().enumerate().map(|(i, b)| (i as i64 + 2, b.ptx, b.entry, b.declaration)));
    // Unfenced, the kernels may scribble on the host's memory or a GPU's: the emulated driver only.
    if support::emulator(test).is_none() {
        return;
    }
    for mode in MODES {
        let Some((emulated, device)) = device(test, mode, &kernels, None) else { return };
        for (i, kernel) in attacks.iter().enumerate() {
            let mut host = LaunchHost::new(device.launcher());
            let outcome = run_broken(emulated, &mut host, kernel, i as i64 + 2 + UNFENCED);
            // `ldu_read` copies what it read to `out[0]`, zeroed, where nothing else writes:
            // anything else came from outside (the guard in direct mode, another allocation in
            // staged mode).
            let read = kernel.entry == "ldu_read" && outcome.first != 0;
            let reached = !outcome.intact || outcome.crossings > 0 || outcome.sticky != 0 || read;
            assert!(reached, "{mode:?} {}: unfenced, it reached nothing outside: {outcome:?}", kernel.entry);
            correct_launch(&mut host);
        }
    }
}

/// The attacks the fence refuses: refused at registration, by name, with their line.
#[test]
fn the_attacks_the_fence_cannot_cover_are_refused_at_registration() {
    use kernel_args_cuda::KernelProblem;
    use kernel_args_cuda::fence::FenceRefusal;
    for (ptx, entry, reason) in [
        (
            include_str!("../../cuda-backend/kernels/attacks/pragma_comment.ptx"),
            "pragma_comment",
            FenceRefusal::Pragma,
        ),
        (
            include_str!("../../cuda-backend/kernels/attacks/pragma_block_comment.ptx"),
            "pragma_block_comment",
            FenceRefusal::Pragma,
        ),
    ] {
        let mut registry = KernelRegistry::new();
        let err = registry
            .register(
                1,
                ptx,
                entry,
                Sandbox::fenced(&format!("{entry}(out: &mut [u32; 64], n: u32)")).unwrap(),
            )
            .unwrap_err();
        match err {
            kernel_args_cuda::SetupError::Kernel { problem: KernelProblem::Fence(e), .. } => {
                assert_eq!(e.reason, reason, "{entry}: {e}");
                assert!(e.statement.starts_with(".pragma"), "{entry}: {e}");
            }
            other => panic!("{entry}: {other}"),
        }
        assert!(registry.get(1).is_none());
    }
}

/// A fenced kernel whose driver reports a parameter list without the fence's four is refused
/// at its first launch, on a driver that counts its parameters and on one asked until it
/// refuses (the 12.2 driver reports none: the loaded text's list is checked, which the fence
/// wrote).
#[test]
fn a_fenced_kernel_whose_driver_lacks_the_hidden_parameters_is_refused() {
    let test = "a_fenced_kernel_whose_driver_lacks_the_hidden_parameters_is_refused";
    let kernels = [(1, VECTOR_ADD_PTX, "vector_add", VECTOR_ADD_DECLARATION)];
    let Some((Some((emulator, _)), device)) = device(test, PointerModeChoice::Direct, &kernels, None) else {
        return;
    };
    // The driver does not count the parameters (13.2's count fails; 12.8 has none) and answers
    // for four, then refuses: the hidden four are missing.
    emulator.fail_call("cuFuncGetParamCount", 1, 801);
    emulator.fail_call("cuFuncGetParamInfo", 5, 1);
    let mut host = LaunchHost::new(device.launcher());
    let mut memory = Memory::new(3 * 512 + ARGV_BYTES);
    let argv = argv(|a| _ = a.ptr(0, 400).unwrap().ptr(512, 400).unwrap().ptr(1024, 400).unwrap().u32(100));
    let code = memory.call(&mut host, 1, ([1, 1, 1], [128, 1, 1]), &argv, 1536);
    emulator.clear_faults();
    if !device.info().param_info {
        // The 12.2 driver is never asked: the loaded text's list, which the fence wrote, holds.
        assert_eq!(code, 0, "{:?}", host.last_error_message());
        return;
    }
    assert_eq!(code, AbiError::InvalidKernel.code());
    let message = host.last_error_message().unwrap();
    assert!(
        message.contains(
            // The guest's four, then three indexed proofs' addresses and the fence's four.
            "the driver's parameter sizes [8, 8, 8, 4] differ from the declaration's [8, 8, 8, 4, 8, 8, 8, 8, 8, 8, \
             8]"
        ),
        "{message}"
    );
    support::say(format!("{test}: {message}"));
}

/// A kernel that writes its two pointer parameters, as it was given them, into `out`.
const LEAK_PTX: &str = ".version 7.8\n.target sm_52\n.address_size 64\n\
    .visible .entry leak(\n\t.param .u64 leak_param_0,\n\t.param .u64 leak_param_1\n)\n{\n\
    \t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [leak_param_0];\n\tld.param.u64 %rd2, [leak_param_1];\n\
    \tcvta.to.global.u64 %rd3, %rd1;\n\tst.global.u64 [%rd3], %rd1;\n\tst.global.u64 [%rd3+8], %rd2;\n\tret;\n}\n";

/// No fenced launch, in either mode, copies a host or device address into guest memory: a
/// fenced kernel's pointer parameters are offsets (in direct mode the guest's own pointers, in
/// staged mode offsets in the arena), and the fence's base, the one address it is given, is a
/// parameter its code cannot name (`__kargs_*` is reserved: the fence refuses such a module,
/// `fence::tests`). The same kernel registered unfenced (trusted by the embedder) writes the
/// addresses it was given: in direct mode, where the guest's memory lies in the host process.
#[test]
fn no_fenced_launch_copies_a_host_address_into_guest_memory() {
    let test = "no_fenced_launch_copies_a_host_address_into_guest_memory";
    let kernels = [(1, LEAK_PTX, "leak", "leak(out: &mut [u64; 2], other: &[u8; 16])")];
    let (out, other) = (64u32, 320u32);
    for mode in MODES {
        let Some((_, device)) = device(test, mode, &kernels, None) else { continue };
        let pointer_mode = device.pointer_mode();
        let mut host = LaunchHost::new(device.launcher());
        let argv = argv(|a| _ = a.ptr(out, 16).unwrap().ptr(other, 16));
        let written = |memory: &mut Memory| -> [u64; 2] {
            let bytes = &memory.guest()[out as usize..out as usize + 16];
            [0, 8].map(|at| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()))
        };
        let mut memory = Memory::new(1024);
        let code = memory.call(&mut host, 1, ([1, 1, 1], [1, 1, 1]), &argv, 512);
        assert_eq!(code, 0, "{mode:?}: {:?}", host.last_error_message());
        let fenced = written(&mut memory);
        match pointer_mode {
            // The guest's own pointers, as it wrote them in its argv.
            PointerMode::Direct => assert_eq!(fenced, [u64::from(out), u64::from(other)], "{mode:?}"),
            // Offsets in the arena, which for two 16-byte windows is far shorter than 64 KiB.
            _ => assert!(
                fenced.iter().all(|&at| at < 1 << 16) && fenced[0] != fenced[1],
                "{mode:?}: {fenced:x?}"
            ),
        }
        assert!(memory.guards_intact(), "{mode:?}");
        // Unfenced, the kernel is given the addresses themselves.
        let mut memory = Memory::new(1024);
        let code = memory.call(&mut host, 1 + UNFENCED, ([1, 1, 1], [1, 1, 1]), &argv, 512);
        assert_eq!(code, 0, "{mode:?}: {:?}", host.last_error_message());
        let host_out = memory.guest()[out as usize..].as_ptr() as u64;
        let unfenced = written(&mut memory);
        match pointer_mode {
            PointerMode::Direct => assert_eq!(unfenced[0], host_out, "{mode:?}: the host address of `out`"),
            _ => {
                assert!(unfenced.iter().all(|&at| at >= 1 << 16), "{mode:?}: device addresses {unfenced:x?}")
            }
        }
    }
}

/// With [`CudaOptions::aligned_fence`] (staged mode: the fence's aligned form, each fence its
/// arena rounded up to a power of two at an aligned address): the fixtures compute the same
/// bytes as unfenced; each broken kernel and attack stays inside (host memory as it was, no
/// crossing, no fault) and the next launch succeeds. The aligned form confines without
/// reporting: every stray access (global, shared, local, generic) lands inside unreported, and
/// only a trap is reported, as in the clamped form.
#[test]
fn with_the_aligned_fence_the_same_bytes_and_every_kernel_inside() {
    let test = "with_the_aligned_fence_the_same_bytes_and_every_kernel_inside";
    let fixtures = fixtures();
    let kernels: Vec<(i64, &str, &str, &str)> =
        fixtures.iter().enumerate().map(|(i, f)| (i as i64 + 1, f.ptx, f.entry, f.declaration)).collect();
    let Some((emulated, device)) = device_with(test, PointerModeChoice::Staged, &kernels, None, true) else {
        return;
    };
    let mut host = LaunchHost::new(device.launcher());
    for (i, fixture) in fixtures.iter().enumerate() {
        let id = i as i64 + 1;
        let fenced = run_fixture(&mut host, fixture, id);
        let unfenced = run_fixture(&mut host, fixture, id + UNFENCED);
        assert!(fenced == unfenced, "{}: fenced and unfenced bytes differ", fixture.entry);
        if let Some((emulator, ordinal)) = emulated {
            assert_eq!(emulator.crossings(ordinal), 0, "{}", fixture.entry);
        }
    }
    let (broken, attacks) = (broken(), attacks());
    let mut kernels: Vec<(i64, &str, &str, &str)> =
        vec![(1, VECTOR_ADD_PTX, "vector_add", VECTOR_ADD_DECLARATION)];
    kernels.extend(
        broken.iter().chain(&attacks).enumerate().map(|(i, b)| (i as i64 + 2, b.ptx, b.entry, b.declaration)),
    );
    let Some((emulated, device)) = device_with(test, PointerModeChoice::Staged, &kernels, None, true) else {
        return;
    };
    let mut host = LaunchHost::new(device.launcher());
    let mut unreported = Vec::new();
    for (i, kernel) in broken.iter().chain(&attacks).enumerate() {
        let outcome = run_broken(emulated, &mut host, kernel, i as i64 + 2);
        let what = format!("{}: {outcome:?}", kernel.entry);
        assert!(outcome.intact, "{what}: host memory outside the guest's changed");
        assert_eq!((outcome.crossings, outcome.sticky), (0, 0), "{what}");
        match outcome.code {
            0 => unreported.push(kernel.entry),
            code => assert_eq!(code, AbiError::LaunchFailed.code(), "{what}"),
        }
        correct_launch(&mut host);
    }
    let trapped: Vec<&str> =
        broken.iter().chain(&attacks).map(|k| k.entry).filter(|entry| !unreported.contains(entry)).collect();
    assert_eq!(trapped, ["trap_on"], "only the trap is reported: {unreported:?}");
    support::say(format!(
        "{test}: 6 fixtures the same bytes; {} broken kernels and attacks inside, not reported but the trap: {unreported:?}",
        broken.len() + attacks.len()
    ));
}

/// Each pointer mode, and staged mode with the aligned fence too (`CudaOptions::aligned_fence`).
const FORMS: [(PointerModeChoice, bool); 3] = [
    (PointerModeChoice::Staged, false),
    (PointerModeChoice::Staged, true),
    (PointerModeChoice::Direct, false),
];

/// The corpus's `__device__` variable: `count_launch` returns `launches_seen` and adds one.
const DEVICE_VARIABLE_PTX: &str = include_str!("../../cuda-backend/kernels/corpus/device_variable.ptx");
const DEVICE_VARIABLE_DECLARATION: &str = "count_launch(out: &mut [u64; 1])";

/// A fenced module's `__device__` variable lives at the start of the staged fence, in both
/// forms of the fence: the launcher copies it in and back at each launch, so it persists from
/// one launch to the next as on a GPU, and each launcher (each guest) and each registration
/// has its own. On a direct-mode device, whose fence is the guest's own memory, such a kernel
/// is staged: the same counts, and the outcome says `Staged`.
#[test]
fn a_device_variable_lives_in_the_fence_and_persists_per_launcher() {
    let test = "a_device_variable_lives_in_the_fence_and_persists_per_launcher";
    let kernels = [(1, DEVICE_VARIABLE_PTX, "count_launch", DEVICE_VARIABLE_DECLARATION)];
    for (mode, aligned) in FORMS {
        let Some((_, device)) = device_with(test, mode, &kernels, None, aligned) else { continue };
        // Each launch (two blocks of 32 threads; one thread adds) into a fresh guest memory.
        let launches = |host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>, n: usize| -> Vec<u64> {
            (0..n)
                .map(|_| {
                    let mut memory = Memory::new(512);
                    memory.put(0, &u64::MAX.to_le_bytes());
                    let code = memory.call(host, 1, ([2, 1, 1], [32, 1, 1]), &argv(|a| _ = a.ptr(0, 8)), 256);
                    assert_eq!(code, 0, "{mode:?} aligned {aligned}: {:?}", host.last_error_message());
                    let outcome = host.last_launch().and_then(|l| l.result().ok());
                    assert_eq!(outcome.map(|o| o.pointer_mode), Some(PointerMode::Staged), "{mode:?}");
                    assert!(memory.guards_intact());
                    u64::from_le_bytes(memory.guest()[..8].try_into().unwrap())
                })
                .collect()
        };
        let mut first = LaunchHost::new(device.launcher());
        assert_eq!(launches(&mut first, 3), [0, 1, 2], "aligned {aligned}");
        let mut second = LaunchHost::new(device.launcher());
        assert_eq!(launches(&mut second, 2), [0, 1], "another launcher's own");
        assert_eq!(launches(&mut first, 1), [3], "aligned {aligned}");
        // Registered again: a new module, its variable as the PTX has it.
        device
            .registry()
            .register(
                1,
                DEVICE_VARIABLE_PTX,
                "count_launch",
                Sandbox::fenced(DEVICE_VARIABLE_DECLARATION).unwrap(),
            )
            .unwrap();
        assert_eq!(launches(&mut first, 2), [0, 1], "aligned {aligned}");
    }
}

/// The corpus's device-side `printf`: thread 0 prints `first element %f of %d\n`, then a line
/// with a string literal, an unsigned, a hexadecimal, a long, a char and a double.
const PRINTF_PTX: &str = include_str!("../../cuda-backend/kernels/corpus/printf.ptx");
const PRINTF_DECLARATION: &str = "report_first(input: &[f32; n], n: i32)";

/// A fenced kernel's `printf` writes into its launch's print buffer, inside the fence, and
/// the launcher hands the embedder the text, formatted as C's `printf` formats it: once per
/// launch (the buffer is the launch's own), nothing where the kernel printed nothing.
#[test]
fn a_fenced_printf_reaches_the_embedder() {
    let test = "a_fenced_printf_reaches_the_embedder";
    let kernels = [(1, PRINTF_PTX, "report_first", PRINTF_DECLARATION)];
    // On a direct-mode device too, where the kernel (whose print buffer is a module variable) is
    // staged.
    for (mode, aligned) in FORMS {
        let Some((_, device)) = device_with(test, mode, &kernels, None, aligned) else {
            continue;
        };
        let mut host = LaunchHost::new(device.launcher());
        let run = |host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>, first: f32, n: i32| {
            let mut memory = Memory::new(512);
            memory.put(0, &floats([first, 2.0, 3.0, 4.0].into_iter()));
            let argv = argv(|a| _ = a.ptr(0, 4 * n.max(0) as u32).unwrap().i32(n));
            let code = memory.call(host, 1, ([2, 1, 1], [64, 1, 1]), &argv, 256);
            assert_eq!(code, 0, "{:?}", host.last_error_message());
            assert!(memory.guards_intact());
        };
        run(&mut host, 1.5, 4);
        run(&mut host, -0.25, 3);
        run(&mut host, 7.0, 0); // n = 0: nothing printed
        let printed = host.launcher_mut().take_printed();
        let texts: Vec<(i64, &str, bool)> =
            printed.iter().map(|(id, p)| (*id, p.text.as_str(), p.truncated)).collect();
        assert_eq!(
            texts,
            [
                (1, "first element 1.500000 of 4\nreport_first: n=4 (0x4), 16 bytes, 'e', 4.00e+00\n", false),
                (
                    1,
                    "first element -0.250000 of 3\nreport_first: n=3 (0x3), 12 bytes, 'd', 3.00e+00\n",
                    false
                )
            ],
            "{mode:?} aligned {aligned}"
        );
        assert!(host.launcher_mut().take_printed().is_empty(), "taken");
    }
    // Every thread printing: 1,280 records of 32 bytes and 1,280 of 64, of which the 16 KiB
    // buffer holds what fits; the rest is said to be lost, and nothing left the fence.
    let every_thread = PRINTF_PTX.replacen("@%p3 bra", "// @%p3 bra", 1);
    assert_ne!(every_thread, PRINTF_PTX);
    let kernels = [(1, every_thread.as_str(), "report_first", PRINTF_DECLARATION)];
    let Some((_, device)) = device(test, PointerModeChoice::Staged, &kernels, None) else { return };
    let mut host = LaunchHost::new(device.launcher());
    let mut memory = Memory::new(512);
    memory.put(0, &floats([0.5f32].into_iter()));
    let argv = argv(|a| _ = a.ptr(0, 4).unwrap().i32(1));
    let code = memory.call(&mut host, 1, ([2, 1, 1], [640, 1, 1]), &argv, 256);
    assert_eq!(code, 0, "{:?}", host.last_error_message());
    let printed = host.launcher_mut().take_printed();
    let [(1, printed)] = printed.as_slice() else { panic!("{printed:?}") };
    assert!(printed.truncated);
    let (first, second) = ("first element 0.500000 of 1", "report_first: n=1 (0x1), 4 bytes, 'b', 5.00e-01");
    assert!(printed.text.lines().all(|l| l == first || l == second), "{}", printed.text);
    let bytes: usize = printed.text.lines().map(|l| if l == first { 32 } else { 64 }).sum();
    assert!((16 * 1024 - 64..=16 * 1024).contains(&bytes), "{bytes} bytes of records kept");
}

/// The corpus's `vector_add` (`int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n)
/// out[i] = a[i] + b[i];`), declared with windows of 64 floats whatever `n` says.
const VECTOR_ADD_SIGNED_PTX: &str = include_str!("../../cuda-backend/kernels/corpus/elementwise.ptx");
const VECTOR_ADD_SIGNED_DECLARATION: &str =
    "vector_add(a: &[f32; 64], b: &[f32; 64], out: &mut [f32; 64], n: i32)";

/// A fenced entry whose accesses a bounds check of the kernel's proves (`fence::Proof`) runs
/// with them unclamped where the arguments meet the proof, in both modes and both forms of the
/// fence; a launch whose `n` is more than its buffers hold is refused before anything runs
/// (`InvalidArgs`, saying which parameters and the fence), where without the proof the fence
/// would have clamped it; and `n <= 0` runs and writes nothing.
#[test]
fn a_launch_whose_arguments_a_proof_does_not_cover_is_refused() {
    let test = "a_launch_whose_arguments_a_proof_does_not_cover_is_refused";
    let kernels = [(1, VECTOR_ADD_SIGNED_PTX, "vector_add", VECTOR_ADD_SIGNED_DECLARATION)];
    for (mode, aligned) in FORMS {
        let Some((_, device)) = device_with(test, mode, &kernels, None, aligned) else { continue };
        assert_eq!(device.registry().get(1).unwrap().proofs().len(), 3, "a, b and out");
        let mut host = LaunchHost::new(device.launcher());
        let a: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..64).map(|i| 0.5 * i as f32).collect();
        let launch = |host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>, n: i32| {
            let mut memory = Memory::new(1024);
            memory.put(0, &floats(a.iter().copied()));
            memory.put(256, &floats(b.iter().copied()));
            memory.put(512, &[0xee; 256]);
            let argv =
                argv(|w| _ = w.ptr(0, 256).unwrap().ptr(256, 256).unwrap().ptr(512, 256).unwrap().i32(n));
            let code = memory.call(host, 1, ([1, 1, 1], [64, 1, 1]), &argv, 800);
            assert!(memory.guards_intact(), "{mode:?} aligned {aligned}");
            (code, memory.guest()[512..768].to_vec())
        };
        let (code, out) = launch(&mut host, 64);
        assert_eq!(code, 0, "{mode:?} aligned {aligned}: {:?}", host.last_error_message());
        let sums: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_eq!(out, floats(sums.into_iter()), "{mode:?} aligned {aligned}");
        // `n` past the buffers: in staged mode past the arena of the three windows, in direct
        // mode past the guest's whole memory.
        let n = 1 << 20;
        let (code, out) = launch(&mut host, n);
        assert_eq!(code, AbiError::InvalidArgs.code(), "{mode:?} aligned {aligned}");
        assert_eq!(out, [0xee; 256], "nothing ran");
        let said = host.last_error_message().unwrap_or_default();
        assert!(said.contains(&format!("parameter 3 ({n}) elements of 4 bytes from parameter 0")), "{said}");
        let (code, out) = launch(&mut host, 0);
        assert_eq!((code, out), (0, vec![0xee; 256]), "{mode:?} aligned {aligned}: nothing to do");
        // And the next launch runs.
        assert_eq!(launch(&mut host, 64).0, 0);
    }
}

/// The 64-bit form: `relu_inplace(float* x, long long n)` from the corpus, its accesses proven
/// by its own `i < n` of the thread's 64-bit index against the 8-byte `n` (`fence::Proof`,
/// `ProofKind::Indexed64`), runs where the arguments meet the proof, in both modes and both
/// forms; `n` past the buffer is refused before anything runs (`InvalidArgs`), and a negative
/// `n`, read as the kernel compares it, runs and writes nothing.
#[test]
fn a_launch_whose_64_bit_count_a_proof_does_not_cover_is_refused() {
    let test = "a_launch_whose_64_bit_count_a_proof_does_not_cover_is_refused";
    let kernels = [(1, VECTOR_ADD_SIGNED_PTX, "relu_inplace", "relu_inplace(x: &mut [f32; 64], n: i64)")];
    for (mode, aligned) in FORMS {
        let Some((_, device)) = device_with(test, mode, &kernels, None, aligned) else { continue };
        let proofs = device.registry().get(1).unwrap().proofs().to_vec();
        assert!(
            matches!(proofs.as_slice(), [p] if p.kind == kernel_args_cuda::fence::ProofKind::Indexed64 { bound: 1, signed: true }),
            "{proofs:?}"
        );
        let mut host = LaunchHost::new(device.launcher());
        let x: Vec<f32> = (0..64).map(|i| i as f32 - 32.0).collect();
        let launch = |host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>, n: i64| {
            let mut memory = Memory::new(512);
            memory.put(0, &floats(x.iter().copied()));
            let argv = argv(|w| _ = w.ptr(0, 256).unwrap().i64(n));
            let code = memory.call(host, 1, ([1, 1, 1], [64, 1, 1]), &argv, 300);
            assert!(memory.guards_intact(), "{mode:?} aligned {aligned}");
            (code, memory.guest()[..256].to_vec())
        };
        let (code, out) = launch(&mut host, 64);
        assert_eq!(code, 0, "{mode:?} aligned {aligned}: {:?}", host.last_error_message());
        assert_eq!(out, floats(x.iter().map(|v| v.max(0.0))), "{mode:?} aligned {aligned}");
        let n = 1i64 << 40;
        let (code, out) = launch(&mut host, n);
        assert_eq!(code, AbiError::InvalidArgs.code(), "{mode:?} aligned {aligned}");
        assert_eq!(out, floats(x.iter().copied()), "nothing ran");
        let said = host.last_error_message().unwrap_or_default();
        assert!(said.contains(&format!("parameter 1 ({n}) elements of 4 bytes from parameter 0")), "{said}");
        let (code, out) = launch(&mut host, -5);
        assert_eq!((code, out), (0, floats(x.iter().copied())), "{mode:?} aligned {aligned}: nothing to do");
    }
}

/// A grid-stride loop, `saxpy_grid_stride(int n, float alpha, const float* x, float* y)` from
/// the corpus: its accesses are an indexed proof's through the fence's walk of its own copy of
/// the index (`fence::StrideLoop`), in both modes and both forms. Sixteen threads walk 64
/// elements (four times round the loop) and compute what unfenced code does; `n` past the
/// buffers is refused before anything runs (`InvalidArgs`), as a straight bounds check's is; a
/// negative `n` runs and writes nothing; the next launch runs.
#[test]
fn a_grid_stride_loop_runs_walked_and_its_count_past_the_buffers_is_refused() {
    let test = "a_grid_stride_loop_runs_walked_and_its_count_past_the_buffers_is_refused";
    let declaration = "saxpy_grid_stride(n: i32, alpha: f32, x: &[f32; 64], y: &mut [f32; 64])";
    let kernels = [(1, VECTOR_ADD_SIGNED_PTX, "saxpy_grid_stride", declaration)];
    for (mode, aligned) in FORMS {
        let Some((_, device)) = device_with(test, mode, &kernels, None, aligned) else { continue };
        let proofs = device.registry().get(1).unwrap().proofs().to_vec();
        let walked = kernel_args_cuda::fence::ProofKind::Indexed { bound: 0, signed: true };
        assert!(
            matches!(proofs.as_slice(), [p, q] if p.kind == walked && q.kind == walked),
            "x and y, each an indexed proof's: {proofs:?}"
        );
        let mut host = LaunchHost::new(device.launcher());
        let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.5).collect();
        let y: Vec<f32> = (0..64).map(|i| 3.0 - i as f32).collect();
        let launch = |host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>, n: i32| {
            let mut memory = Memory::new(1024);
            memory.put(0, &floats(x.iter().copied()));
            memory.put(256, &floats(y.iter().copied()));
            let argv = argv(|w| _ = w.i32(n).unwrap().f32(1.5).unwrap().ptr(0, 256).unwrap().ptr(256, 256));
            let code = memory.call(host, 1, ([1, 1, 1], [16, 1, 1]), &argv, 800);
            assert!(memory.guards_intact(), "{mode:?} aligned {aligned}");
            (code, memory.guest()[256..512].to_vec())
        };
        let (code, out) = launch(&mut host, 64);
        assert_eq!(code, 0, "{mode:?} aligned {aligned}: {:?}", host.last_error_message());
        let expected: Vec<f32> = x.iter().zip(&y).map(|(a, b)| 1.5 * a + b).collect();
        assert_eq!(out, floats(expected.into_iter()), "{mode:?} aligned {aligned}");
        let n = 1 << 20;
        let (code, out) = launch(&mut host, n);
        assert_eq!(code, AbiError::InvalidArgs.code(), "{mode:?} aligned {aligned}");
        assert_eq!(out, floats(y.iter().copied()), "nothing ran");
        let said = host.last_error_message().unwrap_or_default();
        assert!(said.contains(&format!("parameter 0 ({n}) elements of 4 bytes from parameter 2")), "{said}");
        let (code, out) = launch(&mut host, -5);
        assert_eq!((code, out), (0, floats(y.iter().copied())), "{mode:?} aligned {aligned}: nothing to do");
        assert_eq!(launch(&mut host, 64).0, 0, "the next launch runs");
    }
}

/// An entry that stages each thread's value through an `.extern .shared` array:
/// `buf[tid] = tid + 1; __syncthreads(); out[tid] = buf[tid];`.
const STAGE_PTX: &str = ".version 7.8
.target sm_52
.address_size 64

.extern .shared .align 16 .b8 buf[];

.visible .entry stage(
	.param .u64 stage_param_0
)
{
	.reg .b32 %r<7>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [stage_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	add.s32 %r2, %r1, 1;
	shl.b32 %r3, %r1, 2;
	mov.u32 %r4, buf;
	add.s32 %r5, %r4, %r3;
	st.shared.u32 [%r5], %r2;
	bar.sync 0;
	ld.shared.u32 %r6, [%r5];
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd2, %rd3;
	st.global.u32 [%rd4], %r6;
	ret;
}
";

/// A fenced entry whose shared accesses into an `.extern .shared` array the fence confines by
/// the launch's dynamic shared memory (`fence::MIN_DYNAMIC_SHARED`) gets at least that much
/// from the launcher: launched asking for none, its four threads' values fit and come back, in
/// both modes and both forms, with nothing reported; a launch asking for more gets what it
/// asks. Unfenced, the same launch asking for none reaches past the block's shared memory and
/// faults.
#[test]
fn a_launch_asking_for_less_dynamic_shared_memory_than_the_fence_needs_gets_its_minimum() {
    let test = "a_launch_asking_for_less_dynamic_shared_memory_than_the_fence_needs_gets_its_minimum";
    let kernels = [(1, STAGE_PTX, "stage", "stage(out: &mut [u32; 8])")];
    for (mode, aligned) in FORMS {
        let Some((emulated, device)) = device_with(test, mode, &kernels, None, aligned) else { continue };
        let min = device.registry().get(1).unwrap().dynamic_shared_min();
        assert_eq!(min, kernel_args_cuda::fence::MIN_DYNAMIC_SHARED);
        assert_eq!(device.registry().get(1 + UNFENCED).unwrap().dynamic_shared_min(), 0);
        let mut host = LaunchHost::new(device.launcher());
        let launch =
            |host: &mut LaunchHost<kernel_args_cuda::CudaLauncher>, id: i64, threads: i32, shared: i32| {
                let mut memory = Memory::new(512);
                let argv = argv(|w| _ = w.ptr(0, 32).unwrap());
                memory.put(300, &argv);
                let call = LaunchCall {
                    shared_mem: shared,
                    args_ptr: 300,
                    args_len: argv.len() as i32,
                    ..LaunchCall::new(id, [1, 1, 1], [threads, 1, 1])
                };
                let code = host.call(Some(memory.guest()), &call);
                assert!(memory.guards_intact(), "{mode:?} aligned {aligned}");
                (code, memory.guest()[..32].to_vec())
            };
        // The first `n` threads' values, 1 to `n`, then the zeroes the guest left.
        let expected =
            |n: u32| (1..=8u32).flat_map(|v| if v <= n { v } else { 0 }.to_le_bytes()).collect::<Vec<u8>>();
        let (code, out) = launch(&mut host, 1, 4, 0);
        assert_eq!(code, 0, "{mode:?} aligned {aligned}: {:?}", host.last_error_message());
        assert_eq!(out, expected(4), "{mode:?} aligned {aligned}");
        let (code, out) = launch(&mut host, 1, 8, 32);
        assert_eq!(code, 0, "{mode:?} aligned {aligned}: {:?}", host.last_error_message());
        assert_eq!(out, expected(8), "{mode:?} aligned {aligned}");
        // Unfenced, asking for none: past the block's shared memory, a fault.
        if emulated.is_some() {
            let (code, _) = launch(&mut host, 1 + UNFENCED, 4, 0);
            assert_ne!(code, 0, "{mode:?} aligned {aligned}");
        }
    }
}
