//! The launcher `kargs-demo` runs the guest with: the dry run, or with its `cuda` feature
//! the CUDA device that `CudaOptions::from_env()` finds, falling back to the dry run (with the
//! reason) where there is none.

use kernel_args::Launcher;

/// The launcher the demo runs the guest with, and a line that says what it is.
pub(super) struct LauncherChoice {
    /// Runs (or records) the launch.
    pub(super) launcher: Box<dyn Launcher>,
    /// Printed after `launcher: `.
    pub(super) description: String,
}

/// The dry run, with the guest's kernel declared as the CUDA launcher registers it.
fn dry_run() -> Box<dyn Launcher> {
    Box::new(kernel_args_demo::guest::demo_dry_run())
}

/// Without the `cuda` feature: the dry run.
#[cfg(not(feature = "cuda"))]
pub(super) fn choose_launcher() -> LauncherChoice {
    LauncherChoice {
        launcher: dry_run(),
        description:
            "dry run: this kargs-demo is built without the `cuda` feature, so it launches on no machine \
                      (from a clone: eval \"$(scripts/cuda-link-stub.sh)\" && \
                      cargo run -p kernel-args-demo --features cuda)"
                .to_owned(),
    }
}

/// With the `cuda` feature: the CUDA launcher, with the guest's `vector_add` registered, where
/// the driver reports a device (the system's libcuda, or the driver library named by
/// `KARGS_CUDA_DRIVER`: the emulated driver of `cuda-emulator/` in CI); otherwise the dry run,
/// with the reason `CudaDevice::open` gave in the description.
#[cfg(feature = "cuda")]
pub(super) fn choose_launcher() -> LauncherChoice {
    use kernel_args::guest::{VECTOR_ADD_DECLARATION, VECTOR_ADD_KERNEL_ID};
    use kernel_args_cuda::{CudaDevice, CudaOptions, DRIVER_ENV, KernelRegistry, Sandbox, kernels};

    let options = CudaOptions::from_env();
    let library = match &options.driver_library {
        Some(path) => format!(", driver library {} (from {DRIVER_ENV})", path.display()),
        None => String::new(),
    };
    let mut registry = KernelRegistry::new();
    let device = Sandbox::fenced(VECTOR_ADD_DECLARATION).map_err(|e| e.to_string()).and_then(|sandbox| {
        registry
            .register(VECTOR_ADD_KERNEL_ID, kernels::VECTOR_ADD_PTX, kernels::VECTOR_ADD_ENTRY, sandbox)
            .and_then(|()| CudaDevice::open(registry, options))
            .map_err(|e| e.to_string())
    });
    match device {
        Ok(device) => {
            let info = device.info();
            let description = format!(
                "CUDA device {} {} (compute capability {}.{}, driver {}{library}), {:?} pointers",
                info.ordinal,
                info.name,
                info.compute_capability.0,
                info.compute_capability.1,
                info.driver_version,
                device.pointer_mode()
            );
            LauncherChoice { launcher: Box::new(device.launcher()), description }
        }
        Err(e) => LauncherChoice {
            launcher: dry_run(),
            description: format!("dry run: this machine has no CUDA device kargs-demo can use ({e})"),
        },
    }
}
