//! The check and the launch are one (feature `cuda`, on the emulated driver or a GPU's): a
//! launcher runs the registration its request was checked against, never what a registration
//! made meanwhile put under the same id.
//!
//! Two kernels share id 1 in turn: `mark` writing `0xA` to `out[0]`, declared with `n: u32`,
//! and `mark` writing `0xB`, declared with `n: i32`; an argv with a `u32` fits only the first
//! declaration, one with an `i32` only the second. So a call that succeeded was checked against
//! the kernel whose marker it must leave, and any other marker is a launch of a module other
//! than the one checked.
//!
//! - **Deterministic:** a request checked against `0xA` (`LaunchRequest::check`, which asks the
//!   launcher what is registered, as the host function does), the kernel registered again as
//!   `0xB` at the point where the launcher used to look it up again, then the request launched:
//!   `0xA`, in both pointer modes; the next check is against `0xB`.
//! - **Threads:** one thread registers the two in turn, as fast as it can, while calling threads
//!   run guests (each its own `LaunchHost` and launcher) through `LaunchHost::call` with both
//!   argvs, for two seconds in each pointer mode: zero markers other than the argv's.

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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kernel_args::{GuestTrust, LaunchArgs, LaunchCall, LaunchHost, LaunchRequest, LaunchShape, Launcher};
use kernel_args_core::{ArgvBuilder, GuestMemory};
use kernel_args_cuda::{CudaDevice, KernelRegistry, PointerModeChoice, Sandbox};

const MODES: [PointerModeChoice; 2] = [PointerModeChoice::Direct, PointerModeChoice::Staged];

/// `mark`, which writes `marker` to `out[0]`.
fn mark(marker: u32) -> String {
    format!(
        ".version 7.8\n.target sm_52\n.address_size 64\n.visible .entry mark(\n\t.param .u64 mark_param_0,\n\
         \t.param .u32 mark_param_1\n)\n{{\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [mark_param_0];\n\
         \tcvta.to.global.u64 %rd2, %rd1;\n\tst.global.u32 [%rd2], {marker};\n\tret;\n}}\n"
    )
}

const UNSIGNED: &str = "mark(out: &mut [u32; 1], n: u32)";
const SIGNED: &str = "mark(out: &mut [u32; 1], n: i32)";

/// Registers kernel 1 as the unsigned `0xA` or the signed `0xB`.
fn register(device: &CudaDevice, signed: bool) {
    if signed {
        device.registry().register(1, &mark(0xB), "mark", Sandbox::fenced(SIGNED).unwrap()).unwrap();
    } else {
        device.registry().register(1, &mark(0xA), "mark", Sandbox::fenced(UNSIGNED).unwrap()).unwrap();
    }
}

/// The argv: `out` at guest offset 0 (4 bytes), then `n` as an `i32` or a `u32`.
fn argv(signed: bool) -> Vec<u8> {
    let mut buf = [0u8; 32];
    let mut argv = ArgvBuilder::new(&mut buf);
    argv.ptr(0, 4).unwrap();
    if signed {
        argv.i32(7).unwrap();
    } else {
        argv.u32(7).unwrap();
    }
    argv.finish().to_vec()
}

fn device(test: &str, mode: PointerModeChoice) -> Option<Arc<CudaDevice>> {
    let mut registry = KernelRegistry::new();
    registry.register(1, &mark(0xA), "mark", Sandbox::fenced(UNSIGNED).unwrap()).unwrap();
    support::open_with(test, registry, support::options(mode))
}

#[test]
fn a_registration_made_after_the_check_waits_for_the_next_launch() {
    let test = "a_registration_made_after_the_check_waits_for_the_next_launch";
    for mode in MODES {
        let Some(device) = device(test, mode) else { continue };
        let mut launcher = device.launcher();
        let shape = LaunchShape { grid: [1, 1, 1], block: [1, 1, 1], shared_mem_bytes: 0 };
        let unsigned = argv(false);
        // The shortest fence: in direct mode the fence is the guest's memory.
        let mut memory = vec![0u8; 256];
        {
            let guest = GuestMemory::exclusive(&mut memory);
            let args = support::checked(&unsigned, &guest);
            let request =
                LaunchRequest::check(&mut launcher, 1, shape, &args, &guest, GuestTrust::Untrusted).unwrap();
            // Where the launcher looked the kernel up again: a registration of the other.
            register(&device, true);
            launcher.launch(&request).unwrap();
        }
        assert_eq!(
            u32::from_le_bytes(memory[..4].try_into().unwrap()),
            0xA,
            "{mode:?}: the kernel checked ran"
        );
        // The next check is against what is registered now.
        {
            let guest = GuestMemory::exclusive(&mut memory);
            let args = support::checked(&unsigned, &guest);
            let err = LaunchRequest::check(&mut launcher, 1, shape, &args, &guest, GuestTrust::Untrusted)
                .unwrap_err();
            assert_eq!(err.code(), kernel_args::AbiError::InvalidArgs, "{mode:?}: {err}");
            let args = support::checked(&argv(true), &guest);
            let request =
                LaunchRequest::check(&mut launcher, 1, shape, &args, &guest, GuestTrust::Untrusted).unwrap();
            launcher.launch(&request).unwrap();
        }
        assert_eq!(
            u32::from_le_bytes(memory[..4].try_into().unwrap()),
            0xB,
            "{mode:?}: the new registration"
        );
        // A request whose registration the launcher no longer has is refused, never launched as
        // another: checked against 0xB, then 0xA registered and asked for, then 0xB's request.
        {
            let guest = GuestMemory::exclusive(&mut memory);
            let args = support::checked(&argv(true), &guest);
            let request =
                LaunchRequest::check(&mut launcher, 1, shape, &args, &guest, GuestTrust::Untrusted).unwrap();
            register(&device, false);
            let _ = launcher.registered(1);
            let err = launcher.launch(&request).unwrap_err();
            assert_eq!(err.code(), kernel_args::AbiError::Internal, "{mode:?}: {err}");
            assert!(err.to_string().contains("registered again after this launch was checked"), "{err}");
        }
        let _ = LaunchArgs::new();
        support::say(format!("{test}: {mode:?}: the request checked against 0xA ran 0xA"));
    }
}

#[test]
fn replacing_a_kernel_while_guests_call_it_never_launches_another_than_the_checked() {
    let test = "replacing_a_kernel_while_guests_call_it_never_launches_another_than_the_checked";
    for mode in MODES {
        let Some(device) = device(test, mode) else { continue };
        let stop = Arc::new(AtomicBool::new(false));
        let registrations = Arc::new(AtomicU64::new(0));
        let registrar = {
            let (device, stop, registrations) =
                (Arc::clone(&device), Arc::clone(&stop), Arc::clone(&registrations));
            std::thread::spawn(move || {
                let mut signed = false;
                while !stop.load(Ordering::Acquire) {
                    signed = !signed;
                    register(&device, signed);
                    registrations.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let callers: Vec<_> = (0..3)
            .map(|t| {
                let device = Arc::clone(&device);
                std::thread::spawn(move || {
                    let mut host = LaunchHost::new(device.launcher());
                    let (mut launched, mut refused, mut wrong) = (0u64, 0u64, 0u64);
                    let deadline = Instant::now() + Duration::from_secs(2);
                    let mut signed = t % 2 == 0;
                    while Instant::now() < deadline {
                        signed = !signed;
                        let argv = argv(signed);
                        let mut memory = vec![0u8; 256];
                        memory[8..8 + argv.len()].copy_from_slice(&argv);
                        let call = LaunchCall {
                            args_ptr: 8,
                            args_len: argv.len() as i32,
                            ..LaunchCall::new(1, [1, 1, 1], [1, 1, 1])
                        };
                        match host.call(Some(&mut memory), &call) {
                            0 => {
                                launched += 1;
                                let marker = u32::from_le_bytes(memory[..4].try_into().unwrap());
                                if marker != if signed { 0xB } else { 0xA } {
                                    wrong += 1;
                                }
                            }
                            code => {
                                assert_eq!(
                                    code,
                                    kernel_args::AbiError::InvalidArgs.code(),
                                    "{:?}",
                                    host.last_error_message()
                                );
                                refused += 1;
                            }
                        }
                    }
                    (launched, refused, wrong)
                })
            })
            .collect();
        let results: Vec<(u64, u64, u64)> = callers.into_iter().map(|c| c.join().unwrap()).collect();
        stop.store(true, Ordering::Release);
        registrar.join().unwrap();
        let launched: u64 = results.iter().map(|r| r.0).sum();
        let refused: u64 = results.iter().map(|r| r.1).sum();
        let wrong: u64 = results.iter().map(|r| r.2).sum();
        let registered = registrations.load(Ordering::Relaxed);
        support::say(format!(
            "{test}: {mode:?}: {launched} launches and {refused} refusals by 3 callers over {registered} \
             registrations in 2 s: {wrong} ran a kernel other than the one checked"
        ));
        assert_eq!(wrong, 0, "{mode:?}");
        assert!(launched > 0 && registered > 1, "{mode:?}: the race was run");
    }
}
