//! The wasm guest's vector_add through the CUDA launcher (kernel-args-demo's feature `cuda`): wasmtime and
//! wasmi each run the bundled no_std guest, whose `wasi_cuda_launch` goes through the host
//! function's checks and the parser to the CUDA launcher, in the staged and in the direct
//! pointer mode; every element the kernel wrote is compared with the CPU's `a[i] + b[i]`, in the
//! guest and here.
//!
//! The driver is the one `KARGS_CUDA_DRIVER` names (the emulated driver in CI), else the
//! system's; on a GPU these run through `scripts/gpu-check.sh` (docs/gpu-validation.md). Where
//! there is no device the tests print `SKIPPED <test>: <reason>` (past the harness's capture)
//! and return, or fail where `KARGS_CUDA_REQUIRE_DEVICE=1` (CI).

use std::sync::Arc;

use kernel_args::guest::{CAPACITY, THREADS_PER_BLOCK, VECTOR_ADD_KERNEL_ID};
use kernel_args::{LaunchHost, PointerMode, SignatureCheck};
use kernel_args_cuda::{
    CudaDevice, CudaOptions, KernelRegistry, PointerModeChoice, Sandbox, SetupError, kernels,
};
use kernel_args_demo::guest::{GuestModule, Runtime};

fn say(line: String) {
    kernel_args_testkit::device::say(&line);
}

fn registry() -> KernelRegistry {
    let mut registry = KernelRegistry::new();
    registry
        .register(
            VECTOR_ADD_KERNEL_ID,
            kernels::VECTOR_ADD_PTX,
            kernels::VECTOR_ADD_ENTRY,
            Sandbox::fenced(kernels::VECTOR_ADD_DECLARATION).unwrap(),
        )
        .unwrap();
    registry
}

fn gpu(test: &str, mode: PointerMode) -> Option<Arc<CudaDevice>> {
    let pointer_mode =
        if mode == PointerMode::Direct { PointerModeChoice::Direct } else { PointerModeChoice::Staged };
    let options = CudaOptions { pointer_mode, ..CudaOptions::from_env() };
    let no_device = |e: &SetupError| {
        matches!(
            e,
            SetupError::Driver { .. } | SetupError::NoDevice { .. } | SetupError::DirectUnsupported { .. }
        )
    };
    let device =
        kernel_args_testkit::device::or_skip(test, CudaDevice::open(registry(), options), no_device)?;
    say(format!("{test}: device {} ({:?})", device.info().name, device.pointer_mode()));
    Some(device)
}

fn vector_add_from_the_guest(test: &str, mode: PointerMode) {
    let Some(device) = gpu(test, mode) else { return };
    let capacity = CAPACITY as i32;
    // Every runtime (kargs's `demo` feature builds both), each guest with its own launcher on
    // the one device.
    for &runtime in Runtime::ALL {
        let module = GuestModule::demo(runtime).unwrap();
        let mut guest = module.instantiate(LaunchHost::new(device.launcher())).unwrap();
        // One element, a partial block, exactly one block, one past it, and the whole buffers.
        let block = THREADS_PER_BLOCK as i32;
        for n in [1, block - 1, block, block + 1, capacity] {
            let code = guest.run_vector_add(n).unwrap();
            let error = guest.host().last_error_message();
            assert_eq!(code, 0, "{test} on {runtime}: n = {n}: the guest got {code} ({error:?})");
            let outcome = guest.host().last_launch().unwrap().result().unwrap();
            assert_eq!(outcome.pointer_mode, mode);
            assert_ne!(outcome.signature, SignatureCheck::Skipped);
            // The guest's own check (bit for bit), then ours from outside, element by element.
            assert_eq!(guest.first_mismatch(n).unwrap(), None, "{test} on {runtime}: n = {n}");
            for i in 0..n {
                let want = i as f32 + (2 * i + 1) as f32;
                let got = guest.out(i).unwrap();
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{test} on {runtime}: n = {n}, element {i}: {got} != {want}"
                );
            }
        }
        say(format!(
            "{test}: vector_add from the wasm guest on {runtime}, every element checked, n up to {capacity}"
        ));
    }
}

#[test]
fn guest_vector_add_staged() {
    vector_add_from_the_guest("guest_vector_add_staged", PointerMode::Staged);
}

#[test]
fn guest_vector_add_direct() {
    vector_add_from_the_guest("guest_vector_add_direct", PointerMode::Direct);
}

/// `kargs-demo --json` on each runtime, through the CUDA launcher: the same launch, launched,
/// every element right (the demo checks them; exit 0), only the runtime differs.
#[test]
fn the_demo_launches_the_same_on_both_runtimes() {
    let test = "the_demo_launches_the_same_on_both_runtimes";
    if gpu(test, PointerMode::Staged).is_none() {
        return;
    }
    let demo = |runtime: Runtime| {
        // The kargs-demo that cargo built, or the one `KARGS_DEMO_BIN` names (the GPU bundle's,
        // on a machine where cargo's path does not exist).
        let demo =
            std::env::var_os("KARGS_DEMO_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_kargs-demo").into());
        let out = std::process::Command::new(demo)
            .args(["--json", "--n", "4096", "--runtime", runtime.name()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{test} on {runtime}: {stderr}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (mut wasmtime, mut wasmi) = (demo(Runtime::Wasmtime), demo(Runtime::Wasmi));
    assert_eq!((wasmtime["runtime"].as_str(), wasmi["runtime"].as_str()), (Some("wasmtime"), Some("wasmi")));
    assert_eq!(wasmi["outcome"]["result"], "launched", "{wasmi}");
    assert_eq!(wasmi["outcome"]["last"], "12286.0", "out[4095] = 4095 + 8191: {wasmi}");
    assert!(wasmi["launcher"].as_str().unwrap().starts_with("CUDA device "), "{wasmi}");
    wasmtime["runtime"] = serde_json::Value::Null;
    wasmi["runtime"] = serde_json::Value::Null;
    assert_eq!(wasmtime, wasmi);
    say(format!("{test}: kargs-demo launched 4096 elements on wasmtime and on wasmi, the same"));
}

/// The guest's declaration of its kernel and the CUDA backend's bundled one are one text: the
/// demo registers the guest's with the backend's PTX.
#[test]
fn the_guest_and_the_cuda_backend_declare_vector_add_alike() {
    assert_eq!(kernel_args::guest::VECTOR_ADD_DECLARATION, kernel_args_cuda::kernels::VECTOR_ADD_DECLARATION);
}
