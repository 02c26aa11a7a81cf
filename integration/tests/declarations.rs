//! The four ways a guest reached memory outside its windows through a registered, correct kernel,
//! each closed by the kernel's declaration, through the whole pipeline (`LaunchHost::call`, the
//! declaration check, `CudaLauncher`) on the emulated driver (feature `cuda`), in both pointer
//! modes:
//!
//! 1. a raw integer where the kernel takes a pointer (a host address outside guest memory);
//! 2. a count larger than the windows;
//! 3. a window misaligned for its elements (and, staged, windows that merge keep their
//!    alignment);
//! 4. a kernel nobody knows the parameters of: refused for an untrusted guest; for a trusted
//!    one, an oversized by-value parameter reads its argument and then only zeros.
//!
//! Each hole is also shown open where the declaration is not there to close it (the same kernel
//! registered undeclared, on a host that trusts its guest), so that a test of a closed hole
//! cannot pass for another reason.
//!
//! With any other driver (a GPU's) these tests print `SKIPPED` and return.

// Test code may unwrap, index and panic: a panic here is a failing test, not a broken contract.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod support;

use std::sync::Arc;

use kernel_args::{AbiError, Detail, GuestTrust, LaunchCall, LaunchHost, MismatchKind};
use kernel_args_core::ArgvBuilder;
use kernel_args_cuda::{CudaDevice, CudaLauncher, CudaOptions, KernelRegistry, PointerModeChoice, Sandbox};
use kernel_args_cuda_emulator::client::DeviceConfig;
use support::{VECTOR_ADD, VECTOR_ADD_DECLARATION, VECTOR_ADD_PTX};

/// vector_add registered without a declaration: the holes stay open for it.
const UNDECLARED: i64 = 20;

/// Guest memory: an argv area, then `a`, `b`, `out` of `N` floats each, then a sentinel area.
const N: usize = 64;
const A: usize = 256;
const B: usize = A + 4 * N;
const OUT: usize = B + 4 * N;
const SENTINEL: usize = OUT + 4 * N;
const MEMORY: usize = SENTINEL + 4 * N;
const FILL: f32 = -1.5;

fn fresh_memory() -> Vec<u8> {
    let mut memory = vec![0u8; MEMORY];
    for i in 0..N {
        memory[A + 4 * i..A + 4 * i + 4].copy_from_slice(&(i as f32).to_le_bytes());
        memory[B + 4 * i..B + 4 * i + 4].copy_from_slice(&(2.0 * i as f32).to_le_bytes());
    }
    for at in (OUT..MEMORY).step_by(4) {
        memory[at..at + 4].copy_from_slice(&FILL.to_le_bytes());
    }
    memory
}

fn f32_at(memory: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(memory[at..at + 4].try_into().unwrap())
}

/// A device of its own on the emulated driver (`KARGS_CUDA_DRIVER`) in `mode`, with vector_add
/// declared as `VECTOR_ADD` and undeclared as [`UNDECLARED`]; `None` (skipped) with another
/// driver.
fn device(test: &str, mode: PointerModeChoice) -> Option<Arc<CudaDevice>> {
    let (emulator, path) = support::emulator(test)?;
    let ordinal = emulator.add_device(DeviceConfig::default());
    let mut registry = KernelRegistry::new();
    registry
        .register(VECTOR_ADD, VECTOR_ADD_PTX, "vector_add", Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap())
        .unwrap();
    registry.register(UNDECLARED, VECTOR_ADD_PTX, "vector_add", Sandbox::Undeclared).unwrap();
    let options = CudaOptions {
        device_ordinal: ordinal,
        pointer_mode: mode,
        driver_library: Some(path),
        ..CudaOptions::default()
    };
    Some(CudaDevice::open(registry, options).unwrap())
}

/// Writes `argv` at offset 0 of `memory` and makes the call of `kernel` over it: one block per
/// 64 threads of `n`.
fn call_with(memory: &mut [u8], kernel: i64, argv: &[u8], n: u32) -> LaunchCall {
    memory[..argv.len()].copy_from_slice(argv);
    LaunchCall {
        args_len: argv.len() as i32,
        ..LaunchCall::new(kernel, [n.div_ceil(64).max(1) as i32, 1, 1], [64, 1, 1])
    }
}

fn argv(build: impl FnOnce(&mut ArgvBuilder<'_>)) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let mut builder = ArgvBuilder::new(&mut buf);
    build(&mut builder);
    builder.finish().to_vec()
}

const MODES: [PointerModeChoice; 2] = [PointerModeChoice::Direct, PointerModeChoice::Staged];

#[test]
fn a_raw_integer_where_the_kernel_takes_a_pointer_is_refused() {
    let test = "a_raw_integer_where_the_kernel_takes_a_pointer_is_refused";
    // A host buffer outside guest memory, which the guest must never read.
    let secret = vec![1000.0f32; N];
    let address = secret.as_ptr().addr() as u64;
    for mode in MODES {
        let Some(device) = device(test, mode) else { return };
        let raw = argv(|a| {
            a.u64(address).unwrap().ptr(B as u32, 4 * N as u32).unwrap();
            a.ptr(OUT as u32, 4 * N as u32).unwrap().u32(N as u32).unwrap();
        });
        let mut memory = fresh_memory();
        let mut host = LaunchHost::new(device.launcher());
        let call = call_with(&mut memory, VECTOR_ADD, &raw, N as u32);
        assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidArgs.code(), "{mode:?}");
        assert_eq!(
            host.last_error_message().unwrap(),
            "InvalidArgs -9: record 0 at byte 0: a: the kernel takes &[f32; n], the argv has u64"
        );
        assert!((0..N).all(|i| f32_at(&memory, OUT + 4 * i) == FILL), "{mode:?}: out was written");
    }
    // Without the declaration (a trusted guest, the kernel undeclared), in direct mode the
    // kernel reads the host buffer into the guest's memory: the hole the declaration closes.
    let Some(device) = device(test, PointerModeChoice::Direct) else { return };
    let raw = argv(|a| {
        a.u64(address).unwrap().ptr(B as u32, 4 * N as u32).unwrap();
        a.ptr(OUT as u32, 4 * N as u32).unwrap().u32(N as u32).unwrap();
    });
    let mut memory = fresh_memory();
    let mut trusted = LaunchHost::new(device.launcher());
    trusted.set_trust(GuestTrust::Trusted);
    let call = call_with(&mut memory, UNDECLARED, &raw, N as u32);
    assert_eq!(trusted.call(Some(&mut memory), &call), 0);
    assert_eq!(f32_at(&memory, OUT + 4), 1002.0, "the secret reached the guest");
    drop(secret);
}

#[test]
fn a_count_past_the_windows_is_refused_and_memory_past_them_untouched() {
    let test = "a_count_past_the_windows_is_refused_and_memory_past_them_untouched";
    // Windows of 16 bytes, and a count of 1 << 20 elements.
    let big = argv(|a| {
        a.ptr(A as u32, 16)
            .unwrap()
            .ptr(B as u32, 16)
            .unwrap()
            .ptr(OUT as u32, 16)
            .unwrap()
            .u32(1 << 20)
            .unwrap();
    });
    for mode in MODES {
        let Some(device) = device(test, mode) else { return };
        let mut memory = fresh_memory();
        let mut host = LaunchHost::new(device.launcher());
        let call = call_with(&mut memory, VECTOR_ADD, &big, 1 << 20);
        let before = memory.clone();
        assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidArgs.code(), "{mode:?}");
        let Detail::Declaration(m) = host.last_error().unwrap().detail() else { panic!("{mode:?}") };
        assert_eq!((m.record, m.offset, m.param.as_str()), (0, 0, "a"));
        assert!(matches!(m.kind, MismatchKind::WindowTooShort { len: 16, bytes: 4_194_304, .. }));
        assert_eq!(
            host.last_error_message().unwrap(),
            "InvalidArgs -9: record 0 at byte 0: a: 16-byte window, the kernel touches n * 4 = 4194304 bytes"
        );
        assert!(memory == before, "{mode:?}: guest memory changed");
    }
    // Without the declaration, a count of 32 over 16-byte windows writes past `out`, into the
    // guest's memory beyond the window (in both modes: staged copies back what the kernel wrote
    // past the window only where windows merge, so direct shows it).
    let Some(device) = device(test, PointerModeChoice::Direct) else { return };
    let past = argv(|a| {
        a.ptr(A as u32, 16).unwrap().ptr(B as u32, 16).unwrap().ptr(OUT as u32, 16).unwrap().u32(32).unwrap();
    });
    let mut memory = fresh_memory();
    let mut trusted = LaunchHost::new(device.launcher());
    trusted.set_trust(GuestTrust::Trusted);
    let call = call_with(&mut memory, UNDECLARED, &past, 32);
    assert_eq!(trusted.call(Some(&mut memory), &call), 0);
    assert_eq!(f32_at(&memory, OUT + 4 * 20), 60.0, "the kernel wrote past the 16-byte window");
}

#[test]
fn a_misaligned_window_is_refused_and_merged_windows_keep_their_alignment() {
    let test = "a_misaligned_window_is_refused_and_merged_windows_keep_their_alignment";
    for mode in MODES {
        let Some(device) = device(test, mode) else { return };
        let mut host = LaunchHost::new(device.launcher());
        // `b` one byte into its buffer: misaligned for f32.
        let odd = argv(|a| {
            a.ptr(A as u32, 64)
                .unwrap()
                .ptr(B as u32 + 1, 64)
                .unwrap()
                .ptr(OUT as u32, 64)
                .unwrap()
                .u32(16)
                .unwrap();
        });
        let mut memory = fresh_memory();
        let call = call_with(&mut memory, VECTOR_ADD, &odd, 16);
        let before = memory.clone();
        assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidArgs.code(), "{mode:?}");
        assert_eq!(
            host.last_error_message().unwrap(),
            "InvalidArgs -9: record 1 at byte 9: b: window at guest offset 513 is not aligned for f32 (4 bytes)"
        );
        assert!(memory == before, "{mode:?}: guest memory changed");
        // Windows that touch (so a staged launch merges them into one buffer) starting 4 bytes
        // past a 256-byte boundary: each stays aligned on the device, and the sums are right.
        let n = 16u32;
        let (a, b, out) = (A as u32 + 4, A as u32 + 4 + 4 * n, A as u32 + 4 + 8 * n);
        let touching = argv(|x| {
            x.ptr(a, 4 * n).unwrap().ptr(b, 4 * n).unwrap().ptr(out, 4 * n).unwrap().u32(n).unwrap();
        });
        let mut memory = fresh_memory();
        let call = call_with(&mut memory, VECTOR_ADD, &touching, n);
        assert_eq!(host.call(Some(&mut memory), &call), 0, "{mode:?}: {:?}", host.last_error());
        for i in 0..n as usize {
            let sum = f32_at(&memory, a as usize + 4 * i) + f32_at(&memory, b as usize + 4 * i);
            assert_eq!(f32_at(&memory, out as usize + 4 * i), sum, "{mode:?}: element {i}");
        }
    }
}

/// struct_param.ptx (`affine(Affine s, const float *in, double *out)`, `s` a 24-byte struct
/// whose `count` is at byte 16) with a second entry the launcher's PTX parser cannot read: the
/// registry knows no parameter list, and neither does the CUDA 12.2 driver.
fn affine_nobody_can_describe() -> String {
    format!(
        "{}\n.visible .entry vec4_param(\n\t.param .v4 .f32 vec4_param_0\n)\n{{\n\tret;\n}}\n",
        include_str!("../../cuda-backend/kernels/struct_param.ptx")
    )
}

#[test]
fn a_kernel_nobody_can_describe_is_refused_and_reads_only_zeros_when_trusted() {
    let test = "a_kernel_nobody_can_describe_is_refused_and_reads_only_zeros_when_trusted";
    let Some((_, path)) = support::emulator(test) else { return };
    for mode in MODES {
        let mut registry = KernelRegistry::new();
        registry.register(7, &affine_nobody_can_describe(), "affine", Sandbox::Undeclared).unwrap();
        assert!(registry.get(7).unwrap().signature().is_none());
        // Device 0 of the CUDA 12.2 emulated driver, which has no cuFuncGetParamInfo.
        let options = CudaOptions {
            device_ordinal: 0,
            pointer_mode: mode,
            driver_library: Some(support::emulator_12_2(&path)),
            ..CudaOptions::default()
        };
        let device = CudaDevice::open(registry, options).unwrap();
        assert!(!device.info().param_info, "the 12.2 driver cannot describe parameters");
        // `s` passed as one u64 (8 of its 24 bytes), then `in` and `out`.
        let args = argv(|a| {
            a.u64(0x4000_0000_3f80_0000).unwrap().ptr(A as u32, 64).unwrap().ptr(OUT as u32, 128).unwrap();
        });
        let mut memory = fresh_memory();
        let call = call_with(&mut memory, 7, &args, 16);
        let before = memory.clone();
        // An untrusted guest: no declaration, no launch.
        let mut host: LaunchHost<CudaLauncher> = LaunchHost::new(device.launcher());
        assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidKernel.code());
        assert_eq!(host.last_error().unwrap().detail(), &Detail::Undeclared { kernel_id: 7 });
        // A trusted one: the launch runs with the padded table, and the struct's bytes past the
        // u64 are zeros (not `in`'s and `out`'s addresses), so its count is 0 and nothing is
        // written.
        let mut trusted = LaunchHost::new(device.launcher());
        trusted.set_trust(GuestTrust::Trusted);
        assert_eq!(trusted.call(Some(&mut memory), &call), 0, "{mode:?}: {:?}", trusted.last_error());
        assert!(memory == before, "{mode:?}: the kernel read something other than zeros past its argument");
    }
}
