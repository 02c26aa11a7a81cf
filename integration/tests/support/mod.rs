//! What the CUDA tests share: the fixture kernels' registry, opening a device from the
//! environment, and reporting a skip.
//!
//! The driver library comes from `KARGS_CUDA_DRIVER` ([`CudaOptions::from_env`]): the emulated
//! driver of `cuda-emulator/` in CI, the system's `libcuda.so.1` where it is unset (a GPU
//! machine). Where the driver reports no device a test prints `SKIPPED <test>: <reason>` and
//! returns; with `KARGS_CUDA_REQUIRE_DEVICE=1` (set by CI) it fails instead, so that a run in
//! which a launch test did not launch cannot pass.

#![allow(dead_code)] // each test file uses its own part

use std::path::PathBuf;
use std::sync::Arc;

use kernel_args::{LaunchArgs, PointerMode};
use kernel_args_core::{GuestMemory, parse_argv_into};
use kernel_args_cuda::{
    CudaDevice, CudaOptions, DRIVER_ENV, KernelRegistry, PointerModeChoice, Sandbox, SetupError,
};
use kernel_args_cuda_emulator::client::Emulator;

pub const VECTOR_ADD: i64 = 1;
pub const VECTOR_ADD_MANGLED: i64 = 2;
pub const EVERY_SCALAR: i64 = 3;
pub const AFFINE: i64 = 4;
/// vector_add registered unfenced (`Sandbox::Unfenced`), beside the fenced [`VECTOR_ADD`].
pub const VECTOR_ADD_UNFENCED: i64 = 5;
/// vector_add registered without a declaration (trusted guests only): a launch reaches the
/// launcher's own checks of the parameter sizes with arguments no declaration accepts.
pub const VECTOR_ADD_UNDECLARED: i64 = 7;

pub const VECTOR_ADD_PTX: &str = include_str!("../../../cuda-backend/kernels/vector_add.ptx");

pub const VECTOR_ADD_DECLARATION: &str = kernel_args_cuda::kernels::VECTOR_ADD_DECLARATION;
pub const EVERY_SCALAR_DECLARATION: &str =
    "every_scalar(a: i32, b: i64, c: f32, d: f64, e: u32, f: u64, out: &out [f64; 6])";

/// The fixture kernels: each declared and fenced, but `affine`, whose by-value struct no
/// declaration spells (registered undeclared: trusted guests only), and vector_add once more
/// unfenced and once more undeclared.
pub fn registry() -> KernelRegistry {
    let mut r = KernelRegistry::new();
    r.register(VECTOR_ADD, VECTOR_ADD_PTX, "vector_add", Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap())
        .unwrap();
    r.register(
        VECTOR_ADD_MANGLED,
        VECTOR_ADD_PTX,
        "_Z18vector_add_mangledPKfS0_Pfj",
        Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap(),
    )
    .unwrap();
    r.register(
        EVERY_SCALAR,
        include_str!("../../../cuda-backend/kernels/scalars.ptx"),
        "every_scalar",
        Sandbox::fenced(EVERY_SCALAR_DECLARATION).unwrap(),
    )
    .unwrap();
    r.register(
        AFFINE,
        include_str!("../../../cuda-backend/kernels/struct_param.ptx"),
        "affine",
        Sandbox::Undeclared,
    )
    .unwrap();
    r.register(
        VECTOR_ADD_UNFENCED,
        VECTOR_ADD_PTX,
        "vector_add",
        Sandbox::unfenced(VECTOR_ADD_DECLARATION).unwrap(),
    )
    .unwrap();
    r.register(VECTOR_ADD_UNDECLARED, VECTOR_ADD_PTX, "vector_add", Sandbox::Undeclared).unwrap();
    r
}

/// Writes one line to stderr directly, past the harness's capture (the test kit's).
pub fn say(line: String) {
    kernel_args_testkit::device::say(&line);
}

/// Reports that `test` cannot run here, or fails it where CI requires a device (the test kit's).
pub fn skip(test: &str, reason: &dyn std::fmt::Display) {
    kernel_args_testkit::device::skip(test, reason);
}

/// `argv` checked as the host function checks it before a launcher sees it: parsed against the
/// memory's length into the pointer-free arguments a request carries.
/// Launches kernel `kernel_id` of `launcher` with `args` over `guest`, as an embedder without a
/// `LaunchHost` does: the request checked first (`LaunchRequest::check`, for a guest trusted with
/// the undeclared kernels), then launched.
pub fn launch(
    launcher: &mut kernel_args_cuda::CudaLauncher,
    kernel_id: i64,
    shape: kernel_args::LaunchShape,
    args: &LaunchArgs,
    guest: &GuestMemory<'_>,
) -> Result<kernel_args::LaunchOutcome, kernel_args::HostError> {
    launch_limited(launcher, kernel_id, shape, args, guest, kernel_args::LaunchLimits::DEFAULT)
}

/// [`launch`], with the request's `limits` (the quotas the launcher holds it to).
pub fn launch_limited(
    launcher: &mut kernel_args_cuda::CudaLauncher,
    kernel_id: i64,
    shape: kernel_args::LaunchShape,
    args: &LaunchArgs,
    guest: &GuestMemory<'_>,
    limits: kernel_args::LaunchLimits,
) -> Result<kernel_args::LaunchOutcome, kernel_args::HostError> {
    let request = kernel_args::LaunchRequest::check(
        launcher,
        kernel_id,
        shape,
        args,
        guest,
        kernel_args::GuestTrust::Trusted,
    )?
    .with_limits(limits);
    kernel_args::Launcher::launch(launcher, &request)
}

pub fn checked(argv: &[u8], guest: &GuestMemory<'_>) -> LaunchArgs {
    let mut args = LaunchArgs::new();
    parse_argv_into(argv, &GuestMemory::length_only(guest.len()), &mut args).expect("a valid argv");
    args
}

/// The choice that forces `mode`.
pub fn forced(mode: PointerMode) -> PointerModeChoice {
    match mode {
        PointerMode::Direct => PointerModeChoice::Direct,
        _ => PointerModeChoice::Staged,
    }
}

/// The options from the environment, with `mode`.
pub fn options(mode: PointerModeChoice) -> CudaOptions {
    CudaOptions { pointer_mode: mode, ..CudaOptions::from_env() }
}

/// The device `options` name with the fixture kernels, or `None` (the skip reported) where
/// the driver has none or it cannot run in that mode.
pub fn open(test: &str, options: CudaOptions) -> Option<Arc<CudaDevice>> {
    open_with(test, registry(), options)
}

/// The device `options` name with `registry`'s kernels, or `None` (the skip reported) where
/// the driver has none or it cannot run in that mode.
pub fn open_with(test: &str, registry: KernelRegistry, options: CudaOptions) -> Option<Arc<CudaDevice>> {
    let device = kernel_args_testkit::device::or_skip(test, CudaDevice::open(registry, options), no_device)?;
    let d = device.info();
    say(format!(
        "{test}: device {} {} (sm_{}{}), driver {}, pageable memory access {} (host page tables {}), \
         cuFuncGetParamInfo {}, mode {:?}",
        d.ordinal,
        d.name,
        d.compute_capability.0,
        d.compute_capability.1,
        d.driver_version,
        d.pageable_memory_access,
        d.uses_host_page_tables,
        d.param_info,
        device.pointer_mode()
    ));
    Some(device)
}

/// Whether `e` is an error of a machine without the device a test needs (no driver, no device
/// of that ordinal, direct pointers on a device without pageable memory access).
pub fn no_device(e: &SetupError) -> bool {
    matches!(
        e,
        SetupError::Driver { .. } | SetupError::NoDevice { .. } | SetupError::DirectUnsupported { .. }
    )
}

/// The emulated driver that `KARGS_CUDA_DRIVER` names, for the tests that set its devices up,
/// inject faults and count its handles; `None` (the skip reported) with any other driver.
pub fn emulator(test: &str) -> Option<(&'static Emulator, PathBuf)> {
    let Some(path) = CudaOptions::from_env().driver_library else {
        skip(test, &format!("{DRIVER_ENV} is not set: this test needs the emulated driver"));
        return None;
    };
    match Emulator::load(&path) {
        Ok(emulator) => Some((emulator, path)),
        Err(e) => {
            skip(test, &format!("{} is not the emulated driver: {e}", path.display()));
            None
        }
    }
}

/// Whether `KARGS_CUDA_DRIVER` names the emulated driver (no skip reported either way).
pub fn emulated() -> bool {
    CudaOptions::from_env().driver_library.is_some_and(|path| Emulator::load(&path).is_ok())
}

/// The emulated CUDA 13.2 driver beside the one `KARGS_CUDA_DRIVER` names (it has
/// `cuFuncGetParamCount` as well as `cuFuncGetParamInfo`).
pub fn emulator_13_2(path: &std::path::Path) -> PathBuf {
    path.with_file_name(kernel_args_cuda_emulator::client::LIBRARY_13_2)
}

/// The emulated CUDA 12.2 driver beside the one `KARGS_CUDA_DRIVER` names (it lacks
/// `cuFuncGetParamInfo`).
pub fn emulator_12_2(path: &std::path::Path) -> PathBuf {
    path.with_file_name(kernel_args_cuda_emulator::client::LIBRARY_12_2)
}

/// Kernels over one block, each thread `t` writing `out[t]` of `entry(out: &mut [u32; 64], x: u32)`:
///
/// - `spin`: counts turns into `out[t]` for as long as `x` is not zero;
/// - `spin_sync`: the same, the block meeting at `bar.sync` on every turn;
/// - `count_to`: `x` turns (`x - 1` backward branches), then `out[t] = x`;
/// - `count_then_shuffle`: `count_to` with a warp's `shfl.sync` between the loop and the store;
/// - `lopsided`: `t * x` turns (as many backward branches), then `bar.sync`, then
///   `out[t] = t * x`.
pub fn loops_ptx() -> String {
    let turn = "$L__loop:\n\tadd.s32 %r2, %r2, 1;\n";
    let again = "\tsetp.ne.s32 %p1, %r1, 0;\n\t@%p1 bra $L__loop;\n";
    let store = "\tst.global.u32 [%rd4], %r2;\n";
    let kernels = [
        ("spin", format!("{turn}{store}{again}")),
        ("spin_sync", format!("{turn}\tbar.sync 0;\n{store}{again}")),
        ("count_to", format!("{turn}\tsetp.lt.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__loop;\n{store}")),
        // `count_to` with a warp's shuffle after its loop.
        (
            "count_then_shuffle",
            format!(
                "{turn}\tsetp.lt.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__loop;\n\
                 \tshfl.sync.idx.b32 %r4, %r2, 0, 31, -1;\n{store}"
            ),
        ),
        (
            "lopsided",
            format!(
                "\tmul.lo.s32 %r4, %r3, %r1;\n$L__loop:\n\tsetp.ge.u32 %p1, %r2, %r4;\n\t@%p1 bra $L__done;\n\
                 \tadd.s32 %r2, %r2, 1;\n\tbra $L__loop;\n$L__done:\n\tbar.sync 0;\n{store}"
            ),
        ),
    ];
    let mut ptx = String::from(".version 7.0\n.target sm_70\n.address_size 64\n");
    for (name, body) in kernels {
        ptx.push_str(&format!(
            "\n.visible .entry {name}(\n\t.param .u64 {name}_param_0,\n\t.param .u32 {name}_param_1\n)\n{{\n\
             \t.reg .pred %p<2>;\n\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<5>;\n\
             \tld.param.u64 %rd1, [{name}_param_0];\n\tld.param.u32 %r1, [{name}_param_1];\n\
             \tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r3, %tid.x;\n\tmul.wide.u32 %rd3, %r3, 4;\n\
             \tadd.s64 %rd4, %rd2, %rd3;\n\tmov.u32 %r2, 0;\n{body}\tret;\n}}\n"
        ));
    }
    ptx
}

/// [`loops_ptx`]'s declaration of `entry`.
pub fn loop_declaration(entry: &str) -> String {
    format!("{entry}(out: &mut [u32; 64], x: u32)")
}
