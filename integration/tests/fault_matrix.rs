//! The fault matrix (feature `cuda`, emulated driver): every driver entry point the launch path
//! calls is made to fail in turn, once with a code of its own and once with each of three codes
//! no `cuda.h` has (9999, `i32::MAX`, -1), in a whole device's life: open the device, launch
//! twice (staged, 64 KiB of dynamic shared memory, a launch deadline, so that every entry
//! point is called), drop
//! the launcher and the device.
//!
//! For every failure it checks that nothing panics, that the guest sees the ABI code the table
//! in `docs/RISKS.md` documents (this test writes the table and fails where the document
//! differs; `KARGS_BLESS=1` rewrites it), that every code unknown to the table behaves like
//! 9999, that a launch that failed before its copy-back left guest memory unchanged byte for
//! byte, and that once the device is dropped the driver's live handles and allocations are back
//! where they were (the one exception, a refused release of the context itself, is in the
//! table). CI runs it under AddressSanitizer too (`.ci/steps/55-cuda-asan.sh`).
// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kernel_args::{AbiError, Detail, DeviceLost, HostError, LaunchShape};
use kernel_args_core::{ArgvBuilder, GuestMemory};
use kernel_args_cuda::{CudaDevice, CudaOptions, PointerModeChoice, SetupError};
use kernel_args_cuda_emulator::client::{DeviceConfig, Emulator};
use support::{VECTOR_ADD, registry};

/// Each entry point the launch path calls, the code it is made to fail with first, and when
/// the launch path calls it.
const ENTRY_POINTS: &[(&str, i32, &str)] = &[
    ("cuInit", 100, "loading the driver"),
    ("cuDriverGetVersion", 1, "loading the driver"),
    ("cuDeviceGetCount", 100, "opening the device"),
    ("cuDeviceGet", 101, "opening the device"),
    ("cuDeviceGetName", 1, "opening the device"),
    ("cuDeviceGetAttribute", 1, "opening the device"),
    ("cuDevicePrimaryCtxRetain", 2, "opening the device"),
    ("cuCtxPushCurrent_v2", 201, "each launch"),
    ("cuStreamCreate", 2, "a launcher's first launch"),
    ("cuModuleLoadDataEx", 218, "a kernel's first launch"),
    ("cuModuleGetFunction", 500, "a kernel's first launch"),
    ("cuFuncGetParamCount", 801, "a kernel's first launch"),
    ("cuFuncGetParamInfo", 1, "a kernel's first launch"),
    ("cuFuncGetAttribute", 1, "a kernel's first launch"),
    ("cuFuncSetAttribute", 1, "the first launch past 48 KiB of shared memory"),
    ("cuMemAlloc_v2", 2, "a staged launch that needs a larger buffer"),
    ("cuMemHostAlloc", 2, "a launcher's first fenced launch"),
    ("cuMemHostGetDevicePointer_v2", 1, "a launcher's first fenced launch"),
    ("cuMemcpyHtoDAsync_v2", 1, "each staged launch"),
    ("cuStreamSynchronize", 700, "each launch"),
    ("cuLaunchKernel", 701, "each launch"),
    ("cuMemcpyDtoHAsync_v2", 1, "each staged launch"),
    ("cuCtxPopCurrent_v2", 201, "each launch"),
    ("cuMemFree_v2", 1, "dropping a launcher"),
    ("cuMemFreeHost", 1, "dropping a launcher"),
    ("cuStreamDestroy_v2", 400, "dropping a launcher"),
    ("cuModuleUnload", 400, "dropping the device"),
    ("cuDevicePrimaryCtxRelease_v2", 201, "dropping the device"),
    ("cuDevicePrimaryCtxReset_v2", 2, "the launch after a kernel fault"),
];

/// `cuda.h`'s names of the codes the matrix injects first.
fn name(code: i32) -> &'static str {
    match code {
        1 => "CUDA_ERROR_INVALID_VALUE",
        2 => "CUDA_ERROR_OUT_OF_MEMORY",
        100 => "CUDA_ERROR_NO_DEVICE",
        101 => "CUDA_ERROR_INVALID_DEVICE",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        218 => "CUDA_ERROR_INVALID_PTX",
        400 => "CUDA_ERROR_INVALID_HANDLE",
        500 => "CUDA_ERROR_NOT_FOUND",
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
        701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        _ => "?",
    }
}

/// Codes no driver's table has.
const UNKNOWN: [i32; 3] = [9999, i32::MAX, -1];

/// What a device's life came to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Life {
    /// Opening the device (`Ok`, or the kind of setup error the embedder gets), then each
    /// launch (`Ok`, or the ABI code the guest gets).
    open: Result<(), &'static str>,
    steps: Vec<Result<(), AbiError>>,
    /// The driver's live counts after everything was dropped, less those before.
    left: [i64; 5],
    /// Whether the failing call was made at all.
    hit: bool,
}

impl Life {
    fn describe(&self) -> String {
        let answer = |step: &Result<(), AbiError>| match step {
            Ok(()) => "0".to_owned(),
            Err(e) => format!("{} {}", e.name(), e.code()),
        };
        let mut out = match self.open {
            Err(kind) => format!("open: SetupError::{kind}"),
            Ok(()) => self.steps.iter().map(answer).collect::<Vec<_>>().join(", then "),
        };
        if self.left != [0; 5] {
            let _ = write!(out, "; left: {} context retain", self.left[0]);
        }
        out
    }
}

fn shape() -> LaunchShape {
    LaunchShape { grid: [2, 1, 1], block: [128, 1, 1], shared_mem_bytes: 64 * 1024 }
}

/// `a`, `b`, `out` of 256 floats each.
fn memory() -> Vec<u8> {
    (0..3 * 256u32).flat_map(|i| (i as f32).to_le_bytes()).collect()
}

/// Opens a fresh device of the emulator at `library`, launches vector_add twice (staged) and
/// drops everything, with `code` injected into the `nth` call of `entry` (and, for the reset,
/// a sticky fault first).
fn life(emulator: &Emulator, library: &Path, entry: &str, nth: u64, code: i32) -> Life {
    emulator.clear_faults();
    let ordinal = emulator.add_device(DeviceConfig::default());
    let before = emulator.live_all(ordinal);
    if entry == "cuDevicePrimaryCtxReset_v2" {
        emulator.fail_call("cuStreamSynchronize", 1, 700);
    }
    emulator.fail_call(entry, nth, code);
    let options = CudaOptions {
        device_ordinal: ordinal,
        pointer_mode: PointerModeChoice::Staged,
        driver_library: Some(library.to_owned()),
        // A deadline no launch here comes near: each launch measures itself against it.
        launch_deadline: Some(std::time::Duration::from_secs(600)),
        aligned_fence: false,
    };
    let mut steps = Vec::new();
    let mut open = Ok(());
    match CudaDevice::open(registry(), options) {
        Err(e) => {
            open = Err(match e {
                SetupError::Driver { .. } => "Driver",
                SetupError::NoDevice { .. } => "NoDevice",
                SetupError::Call { .. } => "Call",
                SetupError::DirectUnsupported { .. } => "DirectUnsupported",
                SetupError::Kernel { .. } => "Kernel",
                _ => "other",
            })
        }
        Ok(device) => {
            let mut launcher = device.launcher();
            for turn in 0..2 {
                let mut buf = [0u8; 64];
                let mut argv = ArgvBuilder::new(&mut buf);
                argv.ptr(0, 1024)
                    .unwrap()
                    .ptr(1024, 1024)
                    .unwrap()
                    .ptr(2048, 1024)
                    .unwrap()
                    .u32(256)
                    .unwrap();
                let argv = argv.finish();
                let mut memory = memory();
                let result = {
                    let guest = GuestMemory::exclusive(&mut memory);
                    support::launch(
                        &mut launcher,
                        VECTOR_ADD,
                        shape(),
                        &support::checked(argv, &guest),
                        &guest,
                    )
                };
                check_memory(entry, &memory, &result);
                // The reset after the first launch's fault refused: the device is lost, typed.
                if entry == "cuDevicePrimaryCtxReset_v2" && turn == 1 {
                    let e = result.as_ref().expect_err("a device whose reset failed");
                    let lost = DeviceLost { ordinal, call: "cuDevicePrimaryCtxReset", code };
                    assert_eq!(e.detail(), &Detail::DeviceLost(lost), "{e}");
                }
                steps.push(result.map(|_| ()).map_err(|e| e.code()));
            }
            drop(launcher);
            drop(device);
        }
    }
    let after = emulator.live_all(ordinal);
    let hit = emulator.call_count(entry) >= nth;
    emulator.clear_faults();
    let left = std::array::from_fn(|i| after[i] - before[i]);
    Life { open, steps, left, hit }
}

/// A launch that succeeded computed every element; one that failed before its copy-back left
/// guest memory as it was.
fn check_memory(entry: &str, memory: &[u8], result: &Result<kernel_args::LaunchOutcome, HostError>) {
    let f = |i: usize| f32::from_le_bytes(memory[4 * i..4 * i + 4].try_into().unwrap());
    match result {
        Ok(_) => {
            for i in 0..256 {
                assert_eq!(f(512 + i), f(i) + f(256 + i), "{entry}: element {i}");
            }
        }
        // The copy back, or the wait after it, may have written some of it.
        Err(_) if matches!(entry, "cuMemcpyDtoHAsync_v2" | "cuStreamSynchronize") => {}
        Err(e) => assert_eq!(memory, self::memory().as_slice(), "{entry}: {e}: guest memory changed"),
    }
}

/// A path to `library` that the process has not loaded the driver from yet, so that loading it
/// calls `cuInit` and `cuDriverGetVersion` again (`dlopen` gives the same library).
fn fresh_path(library: &Path, n: usize) -> PathBuf {
    let dir = library.parent().unwrap_or(Path::new("."));
    let mut path = dir.to_owned();
    for _ in 0..=n {
        path.push(".");
    }
    path.join(library.file_name().unwrap_or_default())
}

#[test]
fn every_entry_point_failing_gives_its_documented_answer_and_leaves_nothing() {
    let test = "every_entry_point_failing_gives_its_documented_answer_and_leaves_nothing";
    let Some((_, default)) = support::emulator(test) else { return };
    // The CUDA 13.2 library beside it: it exports every entry point the launch path can call
    // (the default 12.8 one lacks cuFuncGetParamCount).
    let library = support::emulator_13_2(&default);
    let emulator = Emulator::load(&library).unwrap();
    // Where nothing fails: both launches run, nothing is left.
    let clean = life(emulator, &library, "none", 1, 0);
    assert_eq!(clean, Life { open: Ok(()), steps: vec![Ok(()), Ok(())], left: [0; 5], hit: false });

    let mut table = String::from(
        "| entry point | called on | fails with | the guest gets | any unknown code (9999, `i32::MAX`, -1) |\n\
         |---|---|---|---|---|\n",
    );
    let mut fresh = 0;
    for &(entry, known, when) in ENTRY_POINTS {
        let mut path = || {
            fresh += 1;
            if when == "loading the driver" { fresh_path(&library, fresh) } else { library.clone() }
        };
        let with_known = life(emulator, &path(), entry, 1, known);
        let with_unknown: Vec<Life> =
            UNKNOWN.iter().map(|&code| life(emulator, &path(), entry, 1, code)).collect();
        for (code, other) in UNKNOWN.iter().zip(&with_unknown) {
            assert_eq!(other, &with_unknown[0], "{entry}: code {code} differs from 9999");
        }
        // Only a refused release may leave anything behind: the retain the driver kept.
        for life in std::iter::once(&with_known).chain(&with_unknown) {
            assert!(life.hit, "{entry} was never called, so it never failed");
            let allowed = if entry == "cuDevicePrimaryCtxRelease_v2" { [1, 0, 0, 0, 0] } else { [0; 5] };
            assert!(life.left == [0; 5] || life.left == allowed, "{entry}: left {:?}", life.left);
        }
        let name = name(known);
        let _ = writeln!(
            table,
            "| `{entry}` | {when} | {name} ({known}) | {} | {} |",
            with_known.describe(),
            with_unknown[0].describe()
        );
    }
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/RISKS.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let (begin, end) = ("<!-- fault-matrix:begin -->\n", "<!-- fault-matrix:end -->");
    let (Some(b), Some(e)) = (doc.find(begin), doc.find(end)) else {
        panic!("docs/RISKS.md has no {begin:?} ... {end:?} section");
    };
    let documented = &doc[b + begin.len()..e];
    if documented != table {
        if std::env::var_os("KARGS_BLESS").is_some_and(|v| v == "1") {
            let updated = format!("{}{table}{}", &doc[..b + begin.len()], &doc[e..]);
            std::fs::write(&doc_path, updated).unwrap();
        } else {
            panic!("docs/RISKS.md's fault matrix differs from what the launch path does; it does:\n{table}");
        }
    }
    support::say(format!("{test}: {} entry points, each with 4 codes, as documented", ENTRY_POINTS.len()));
}
