//! The kernel corpus through a CUDA driver library: the one `KARGS_CUDA_DRIVER` names (the
//! emulated driver in CI, `.ci/steps/40-cuda.sh`), else the system's `libcuda.so.1` (a GPU:
//! `scripts/gpu-check.sh` bundles this test). Every fenced entry with a launch of its own
//! (`common::corpus::cases`: 38 of the 39, not `printf`'s, whose `vprintf` the emulated driver
//! does not run) computes the
//! same bytes fenced as unfenced, in both of the fence's forms: clamped, its buffers in one arena
//! that is its fence (a staged launch's layout), and aligned, that arena rounded up to a power of
//! two at an aligned address (`CudaOptions::aligned_fence`); and leaves the flag clear; a failing `assert`, fenced,
//! stops its thread, sets the flag's trap byte and faults nothing. Without a driver or a device
//! the test skips.
//!
//! On a GPU this is where the fence meets ptxas and the hardware on kernels nvcc wrote; its
//! results there are recorded in `docs/gpu-validation.md`.

#![allow(unsafe_code)] // the emulated driver's C entry points, each call with its `// SAFETY:`

mod common;

use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::ptr;
use std::time::{Duration, Instant};

use common::corpus::*;
use common::{floats, hidden_params};
use kernel_args_cuda::fence::{FLAG_TRAPPED, fence_ptx};

type CuResult = c_int;
type Handle = *mut c_void;

/// The driver entry points the test calls, from the library it opened (kept open for the
/// process: a driver library is never unloaded).
struct Driver {
    init: unsafe extern "C" fn(c_uint) -> CuResult,
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    retain: unsafe extern "C" fn(*mut Handle, c_int) -> CuResult,
    push: unsafe extern "C" fn(Handle) -> CuResult,
    load: unsafe extern "C" fn(*mut Handle, *const c_void, c_uint, *mut c_int, *mut *mut c_void) -> CuResult,
    get_function: unsafe extern "C" fn(*mut Handle, Handle, *const c_char) -> CuResult,
    unload: unsafe extern "C" fn(Handle) -> CuResult,
    alloc: unsafe extern "C" fn(*mut u64, usize) -> CuResult,
    free: unsafe extern "C" fn(u64) -> CuResult,
    htod: unsafe extern "C" fn(u64, *const c_void, usize, Handle) -> CuResult,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, usize, Handle) -> CuResult,
    launch: unsafe extern "C" fn(
        Handle,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Handle,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult,
    synchronize: unsafe extern "C" fn(Handle) -> CuResult,
}

/// `name`'s address in `library`, as the function type `T`.
///
/// # Safety
///
/// `T` is a function pointer type matching the symbol's C signature.
unsafe fn symbol<T: Copy>(library: *mut c_void, name: &str) -> Result<T, String> {
    let c_name = CString::new(name).unwrap();
    // SAFETY: a live library handle and a NUL-terminated name.
    let address = unsafe { libc::dlsym(library, c_name.as_ptr()) };
    if address.is_null() {
        return Err(format!("the driver library has no {name}"));
    }
    assert_eq!(size_of::<T>(), size_of::<*mut c_void>());
    // SAFETY: a function's address, as a function pointer of its signature (the contract).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&address) })
}

impl Driver {
    /// Opens the driver library and makes device 0's primary context current on this thread.
    fn open() -> Result<Driver, String> {
        let path = std::env::var("KARGS_CUDA_DRIVER").ok().filter(|p| !p.is_empty());
        let path = path.unwrap_or_else(|| "libcuda.so.1".to_owned());
        let c_path = CString::new(path.clone()).unwrap();
        // SAFETY: a NUL-terminated path; the library is kept loaded for the process.
        let library = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW) };
        if library.is_null() {
            return Err(format!("no driver library {path}"));
        }
        // SAFETY: each type is the entry point's signature in `cuda.h`.
        let driver = unsafe {
            Driver {
                init: symbol(library, "cuInit")?,
                device_get: symbol(library, "cuDeviceGet")?,
                retain: symbol(library, "cuDevicePrimaryCtxRetain")?,
                push: symbol(library, "cuCtxPushCurrent_v2")?,
                load: symbol(library, "cuModuleLoadDataEx")?,
                get_function: symbol(library, "cuModuleGetFunction")?,
                unload: symbol(library, "cuModuleUnload")?,
                alloc: symbol(library, "cuMemAlloc_v2")?,
                free: symbol(library, "cuMemFree_v2")?,
                htod: symbol(library, "cuMemcpyHtoDAsync_v2")?,
                dtoh: symbol(library, "cuMemcpyDtoHAsync_v2")?,
                launch: symbol(library, "cuLaunchKernel")?,
                synchronize: symbol(library, "cuStreamSynchronize")?,
            }
        };
        let (mut device, mut context) = (0, ptr::null_mut());
        // SAFETY: the entry points as `cuda.h` declares them, with writable out-parameters.
        unsafe {
            match (driver.init)(0) {
                0 => {}
                code => return Err(format!("{path}: cuInit answered {code} (no device)")),
            }
            check("cuDeviceGet", (driver.device_get)(&mut device, 0))?;
            check("cuDevicePrimaryCtxRetain", (driver.retain)(&mut context, device))?;
            check("cuCtxPushCurrent", (driver.push)(context))?;
        }
        Ok(driver)
    }

    /// Loads `ptx`; `None` where the driver refuses the module.
    fn module(&self, ptx: &str) -> Option<Handle> {
        let image = CString::new(ptx).unwrap();
        let mut module = ptr::null_mut();
        // SAFETY: a NUL-terminated image and no options.
        let code =
            unsafe { (self.load)(&mut module, image.as_ptr().cast(), 0, ptr::null_mut(), ptr::null_mut()) };
        (code == 0).then_some(module)
    }

    /// Runs `entry` of `module` on `case`'s buffers, laid out in one arena, with the fence's
    /// hidden parameters when `fenced` (the arena is the fence; the default budget): the
    /// launch's code, the arena's bytes afterwards and the flag.
    fn run(&self, module: Handle, case: &Case, fenced: bool) -> (CuResult, Vec<u8>, u32) {
        let form = if fenced { Form::Clamped } else { Form::Unfenced };
        let (result, bytes, flag, _) = self.run_timed(module, case, form, 0);
        (result, bytes, flag)
    }

    /// [`run`](Self::run), and where `repeats` is not 0, the launch repeated afterwards in 3
    /// batches of `repeats` launches back to back, each batch timed from its first launch to the
    /// synchronisation after its last: the fastest batch's time per launch (the bytes and the
    /// flag are then those after every launch).
    fn run_timed(
        &self,
        module: Handle,
        case: &Case,
        form: Form,
        repeats: u32,
    ) -> (CuResult, Vec<u8>, u32, Option<Duration>) {
        let fenced = form != Form::Unfenced;
        let name = CString::new(case.entry).unwrap();
        let mut function = ptr::null_mut();
        let Arena { offsets, buffers_at, variables, len } = arena(case);
        // The fence: the arena, or (aligned) its length rounded up to a power of two at an
        // address aligned to it, in an allocation twice as long, as `CudaLauncher` makes it.
        let fence_len = if form == Form::Aligned { len.max(256).next_power_of_two() } else { len };
        let whole_len = if form == Form::Aligned { 2 * fence_len } else { len };
        let (mut whole, mut flag) = (0u64, 0u64);
        // The arena's bytes: a fenced module's variables, then (as uploaded) the buffers.
        let mut bytes = vec![0u8; len];
        if fenced {
            bytes[..variables.len()].copy_from_slice(&variables);
        }
        let mut flag_bytes = [0u8; 4];
        let mut fastest: Option<Duration> = None;
        // SAFETY: the entry points as `cuda.h` declares them: writable out-parameters, host
        // buffers as long as the copies, one parameter pointer per kernel parameter of its size
        // (the corpus's cases and the fence's four hidden ones), the legacy stream (null),
        // synchronised before the host buffers are read or dropped.
        let result = unsafe {
            let get = (self.get_function)(&mut function, module, name.as_ptr());
            assert_eq!(get, 0, "{}: cuModuleGetFunction", case.entry);
            assert_eq!((self.alloc)(&mut whole, whole_len), 0);
            let arena = if form == Form::Aligned { whole.next_multiple_of(fence_len as u64) } else { whole };
            assert_eq!((self.alloc)(&mut flag, 4), 0);
            assert_eq!((self.htod)(arena, bytes.as_ptr().cast(), len, ptr::null_mut()), 0);
            assert_eq!((self.htod)(flag, flag_bytes.as_ptr().cast(), 4, ptr::null_mut()), 0);
            for (buffer, &offset) in case.buffers.iter().zip(&offsets) {
                let copied =
                    (self.htod)(arena + offset as u64, buffer.as_ptr().cast(), buffer.len(), ptr::null_mut());
                assert_eq!(copied, 0);
            }
            // A fenced kernel's pointers are offsets into its fence (the arena).
            let start = if fenced { 0 } else { arena };
            let mut params: Vec<Vec<u8>> = case.params.iter().map(|p| p.bytes(start, &offsets)).collect();
            if fenced {
                let budget = kernel_args::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD;
                let fenced_module = fence_ptx(common::corpus::module(case.module)).unwrap();
                let hidden = hidden_params(
                    fenced_module.ptx(),
                    case.entry,
                    &params,
                    (arena, fence_len as u64, flag, budget),
                );
                params.extend(hidden.expect("the case's arguments meet the entry's proofs"));
            }
            let mut table: Vec<*mut c_void> = params.iter_mut().map(|p| p.as_mut_ptr().cast()).collect();
            let table = table.as_mut_ptr();
            let [gx, gy, gz] = case.grid;
            let [bx, by, bz] = case.block;
            let launch = || {
                (self.launch)(
                    function,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    case.shared,
                    ptr::null_mut(),
                    table,
                    ptr::null_mut(),
                )
            };
            let mut result = match launch() {
                0 => (self.synchronize)(ptr::null_mut()),
                launched => launched,
            };
            for _ in 0..if repeats == 0 { 0 } else { 3 } {
                if result != 0 {
                    break;
                }
                let started = Instant::now();
                for _ in 0..repeats {
                    result = launch();
                    if result != 0 {
                        break;
                    }
                }
                if result == 0 {
                    result = (self.synchronize)(ptr::null_mut());
                }
                let each = started.elapsed() / repeats;
                fastest = Some(fastest.map_or(each, |f| f.min(each)));
            }
            if result == 0 {
                assert_eq!((self.dtoh)(bytes.as_mut_ptr().cast(), arena, len, ptr::null_mut()), 0);
                assert_eq!((self.dtoh)(flag_bytes.as_mut_ptr().cast(), flag, 4, ptr::null_mut()), 0);
                assert_eq!((self.synchronize)(ptr::null_mut()), 0);
                assert_eq!((self.free)(whole), 0);
                assert_eq!((self.free)(flag), 0);
            }
            result
        };
        // The buffers' bytes (a fenced module's variables before them are the fence's).
        (result, bytes.split_off(buffers_at), u32::from_le_bytes(flag_bytes), fastest)
    }
}

/// How a launch is fenced: not at all, with the clamped form around its arena, or with the
/// aligned form around its arena rounded up to a power of two (`CudaOptions::aligned_fence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Unfenced,
    Clamped,
    Aligned,
}

/// `Ok` for `CUDA_SUCCESS`, else what `call` answered.
fn check(call: &str, code: CuResult) -> Result<(), String> {
    if code == 0 { Ok(()) } else { Err(format!("{call} answered {code}")) }
}

#[test]
fn every_fenced_corpus_entry_computes_the_same_bytes_through_the_driver() {
    let test = "every_fenced_corpus_entry_computes_the_same_bytes_through_the_driver";
    let driver = match Driver::open() {
        Ok(driver) => driver,
        Err(reason) => return kernel_args_testkit::device::skip(test, &reason),
    };
    let cases = cases();
    let mut compared = Vec::new();
    for case in &cases {
        let ptx = module(case.module);
        let fenced = fence_ptx(ptx).unwrap();
        let (Some(plain_module), Some(fenced_module), Some(aligned_module)) =
            (driver.module(ptx), driver.module(fenced.ptx()), driver.module(fenced.aligned_ptx()))
        else {
            panic!("{}: the driver does not load its module in each form", case.entry);
        };
        let (plain_result, plain, _) = driver.run(plain_module, case, false);
        let (fenced_result, with_fence, flag) = driver.run(fenced_module, case, true);
        let (aligned_result, aligned, aligned_flag, _) =
            driver.run_timed(aligned_module, case, Form::Aligned, 0);
        assert_eq!((plain_result, fenced_result, aligned_result), (0, 0, 0), "{}", case.entry);
        assert!(plain == with_fence, "{}: fenced and unfenced differ", case.entry);
        assert!(plain == aligned, "{}: aligned and unfenced differ", case.entry);
        assert_eq!((flag, aligned_flag), (0, 0), "{}: nothing left the fence", case.entry);
        // SAFETY: modules this test loaded, used by no launch any more.
        unsafe {
            assert_eq!((driver.unload)(plain_module), 0);
            assert_eq!((driver.unload)(fenced_module), 0);
            assert_eq!((driver.unload)(aligned_module), 0);
        }
        compared.push(case.entry);
    }
    // Every entry with a launch here runs on the emulated driver and on a GPU.
    assert_eq!(compared.len(), 38, "{compared:?}");
    kernel_args_testkit::device::say(&format!(
        "{test}: {} entries computed the same bytes fenced (both forms) and unfenced",
        compared.len()
    ));

    // A failing assert, fenced: the thread stops, the flag's trap byte is set, nothing faults.
    let Some(fenced_assert) = driver.module(fence_ptx(module("assert")).unwrap().ptx()) else {
        return kernel_args_testkit::device::say(&format!("{test}: the fenced assert module does not load"));
    };
    let inputs: Vec<i32> = (0..100).map(|i| if i == 40 { -1 } else { i }).collect();
    let failing = case(
        "assert",
        "checked_copy",
        1,
        128,
        vec![ints(inputs), vec![0xee; 400]],
        &[P::Buf(0), P::Buf(1), P::I32(100)],
    );
    let (result, bytes, flag) = driver.run(fenced_assert, &failing, true);
    assert_eq!((result, flag), (0, FLAG_TRAPPED));
    for (i, chunk) in bytes[512..912].chunks(4).enumerate() {
        let expected = if i == 40 { [0xee; 4] } else { (i as i32).to_le_bytes() };
        assert_eq!(chunk, expected, "element {i}");
    }
    kernel_args_testkit::device::say(&format!(
        "{test}: a failing assert, fenced, set the trap byte and faulted nothing"
    ));
}

/// Launches at sizes worth timing: `scale` 1 for a GPU (16 Mi elements, 1024² and 4096²
/// matrices), smaller on the emulated driver. Whether the result is the same bit for bit on
/// every run: not where floats are summed by atomics in whatever order the threads come.
fn large_cases(scale: usize) -> Vec<(Case, bool)> {
    use P::*;
    let n = (1 << 24) / scale;
    let grid = |threads: usize, block: usize| u32::try_from(threads.div_ceil(block)).unwrap();
    let pattern = |count: usize| floats((0..count).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.125));
    let side = 4096 / scale.isqrt();
    let m = 1024 / scale.isqrt();
    let mut cases = vec![
        (
            case(
                "elementwise",
                "vector_add",
                grid(n, 256),
                256,
                vec![pattern(n), pattern(n), vec![0; 4 * n]],
                &[Buf(0), Buf(1), Buf(2), I32(n as i32)],
            ),
            true,
        ),
        (
            case(
                "elementwise",
                "saxpy_grid_stride",
                1056,
                256,
                vec![pattern(n), pattern(n)],
                &[I32(n as i32), F32(1.5), Buf(0), Buf(1)],
            ),
            true,
        ),
        (
            case(
                "elementwise",
                "scale_float4",
                grid(n / 4, 256),
                256,
                vec![pattern(n), vec![0; 4 * n]],
                &[Buf(0), Buf(1), F32(-2.0), I32((n / 4) as i32)],
            ),
            true,
        ),
        (
            case(
                "gather",
                "gather",
                grid(n, 256),
                256,
                vec![pattern(n / 16), ints((0..n).map(|i| (i * 7919 % (n / 16)) as i32)), vec![0; 4 * n]],
                &[Buf(0), Buf(1), Buf(2), I32(n as i32)],
            ),
            true,
        ),
        (
            case(
                "reduce",
                "block_reduce_sum",
                grid(n, 512),
                256,
                vec![pattern(n), vec![0; 4 * n.div_ceil(512)]],
                &[Buf(0), Buf(1), I32(n as i32)],
            ),
            true,
        ),
        (
            case(
                "reduce",
                "dot_product",
                1056,
                256,
                vec![pattern(n), pattern(n), vec![0; 4]],
                &[Buf(0), Buf(1), Buf(2), I32(n as i32)],
            ),
            false,
        ),
        (
            case(
                "reduce",
                "histogram_shared",
                1056,
                256,
                vec![(0..4 * n).map(|i| (i * 37 % 251) as u8).collect(), vec![0; 1024]],
                &[Buf(0), Buf(1), I32((4 * n) as i32)],
            ),
            true,
        ),
    ];
    let mut matmul = case(
        "tiled",
        "matmul_tiled",
        1,
        16,
        vec![pattern(m * m), pattern(m * m), vec![0; 4 * m * m]],
        &[Buf(0), Buf(1), Buf(2), I32(m as i32), I32(m as i32), I32(m as i32)],
    );
    (matmul.grid, matmul.block) = ([grid(m, 16), grid(m, 16), 1], [16, 16, 1]);
    let mut transpose = case(
        "tiled",
        "transpose_padded",
        1,
        32,
        vec![pattern(side * side), vec![0; 4 * side * side]],
        &[Buf(0), Buf(1), I32(side as i32), I32(side as i32)],
    );
    (transpose.grid, transpose.block) = ([grid(side, 32), grid(side, 32), 1], [32, 8, 1]);
    let mut stencil = case(
        "tiled",
        "stencil5",
        1,
        16,
        vec![pattern(side * side), vec![0; 4 * side * side]],
        &[Buf(0), Buf(1), I32(side as i32), I32(side as i32)],
    );
    (stencil.grid, stencil.block) = ([grid(side, 16), grid(side, 16), 1], [16, 16, 1]);
    let mut bias = case(
        "elementwise",
        "add_bias_2d",
        1,
        32,
        vec![pattern(side * side), pattern(side)],
        &[Buf(0), Buf(1), I32(side as i32), I32(side as i32), I32(side as i32)],
    );
    (bias.grid, bias.block) = ([grid(side, 32), grid(side, 16), 1], [32, 16, 1]);
    cases.extend([(matmul, true), (transpose, true), (stencil, true), (bias, true)]);
    cases
}

/// The fence's cost in time on launches large enough to time, fenced (clamped, and aligned as
/// `CudaOptions::aligned_fence` runs it) against unfenced: each
/// launch 3 times in batches of 20 back to back on a GPU, the fastest batch's time per launch
/// (the launches' own overhead amortised in the batch), printed as a table for
/// `docs/performance.md`; and the same bytes fenced and unfenced where the kernel is
/// deterministic. On the emulated driver the sizes are small and the times are a CPU's, not a
/// GPU's: there it checks the bytes and that the measurement runs. A measurement, not a timed
/// assertion: no time is asserted.
#[test]
fn the_fence_in_time_on_large_launches() {
    let test = "the_fence_in_time_on_large_launches";
    let driver = match Driver::open() {
        Ok(driver) => driver,
        Err(reason) => return kernel_args_testkit::device::skip(test, &reason),
    };
    let emulated = std::env::var("KARGS_CUDA_DRIVER").is_ok_and(|p| !p.is_empty());
    let (scale, repeats) = if emulated { (1024, 1) } else { (1, 20) };
    let say = |line: String| kernel_args_testkit::device::say(&line);
    say(format!(
        "{test}: {} | entry | threads | unfenced µs | fenced µs | fenced / unfenced | aligned µs | aligned / unfenced |",
        if emulated { "the emulated driver (a CPU's times, not a GPU's)" } else { "this driver's device" }
    ));
    let (mut ratios, mut aligned_ratios) = (Vec::new(), Vec::new());
    for (case, deterministic) in large_cases(scale) {
        let ptx = module(case.module);
        let fenced = fence_ptx(ptx).unwrap();
        let (Some(plain_module), Some(fenced_module), Some(aligned_module)) =
            (driver.module(ptx), driver.module(fenced.ptx()), driver.module(fenced.aligned_ptx()))
        else {
            panic!("{}: the module does not load", case.entry);
        };
        let (plain_result, plain, _, plain_time) =
            driver.run_timed(plain_module, &case, Form::Unfenced, repeats);
        let (fenced_result, with_fence, flag, fenced_time) =
            driver.run_timed(fenced_module, &case, Form::Clamped, repeats);
        let (aligned_result, aligned, aligned_flag, aligned_time) =
            driver.run_timed(aligned_module, &case, Form::Aligned, repeats);
        assert_eq!((plain_result, fenced_result, flag), (0, 0, 0), "{}", case.entry);
        assert_eq!((aligned_result, aligned_flag), (0, 0), "{}: aligned", case.entry);
        if deterministic {
            assert!(plain == with_fence, "{}: fenced and unfenced differ", case.entry);
            assert!(plain == aligned, "{}: aligned and unfenced differ", case.entry);
        }
        let (plain_time, fenced_time, aligned_time) =
            (plain_time.unwrap(), fenced_time.unwrap(), aligned_time.unwrap());
        let ratio = fenced_time.as_secs_f64() / plain_time.as_secs_f64();
        let aligned_ratio = aligned_time.as_secs_f64() / plain_time.as_secs_f64();
        ratios.push(ratio);
        aligned_ratios.push(aligned_ratio);
        let threads: u64 = case.grid.iter().chain(&case.block).map(|&d| u64::from(d)).product();
        say(format!(
            "{test}: | `{}` | {threads} | {:.1} | {:.1} | {ratio:.2} | {:.1} | {aligned_ratio:.2} |",
            case.entry,
            plain_time.as_secs_f64() * 1e6,
            fenced_time.as_secs_f64() * 1e6,
            aligned_time.as_secs_f64() * 1e6
        ));
        // SAFETY: modules this test loaded, used by no launch any more.
        unsafe {
            assert_eq!((driver.unload)(plain_module), 0);
            assert_eq!((driver.unload)(fenced_module), 0);
            assert_eq!((driver.unload)(aligned_module), 0);
        }
    }
    for (form, mut ratios) in [("fenced", ratios), ("aligned", aligned_ratios)] {
        ratios.sort_by(f64::total_cmp);
        say(format!(
            "{test}: {} entries, {form} / unfenced: median {:.2}, worst {:.2}",
            ratios.len(),
            ratios[ratios.len() / 2],
            ratios.last().copied().unwrap_or(0.0)
        ));
    }
}
