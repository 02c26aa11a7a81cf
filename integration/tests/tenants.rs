//! Many tenants on one device (kargs feature `cuda`): wasm guests in many wasmtime stores, on
//! many threads, launching through launchers that share one `CudaDevice`.
//!
//! - **Load:** 8 threads × 4 stores × 10,000 launches of the bundled guest's `vector_add`
//!   through `wasi_cuda_launch`, half the threads on a device in direct mode and half staged (all
//!   staged on a device without pageable memory access, such as an H200 without HMM).
//!   Each store has its own element count and its own data in every launch, laid out by the
//!   host in the guest's memory; every output element is checked, so a tenant that saw another's
//!   arguments or data fails the test. The two devices share the ordinal's one context. A ninth
//!   thread (on the emulated driver only: on a GPU a kernel's fault ends CUDA for the whole
//!   process, `docs/RISKS.md`) runs a tenant whose kernel faults (a store through a null
//!   pointer) 20 times during the run: the others' launches may fail only while the context is
//!   being replaced (each such failure names the fault, and is retried), and every output is still right. At the end every
//!   launcher and the devices are dropped and the driver's live handles and allocations are back
//!   where they were, and the emulated driver's record shows that no kernel store crossed an
//!   allocation (no tenant wrote into another's buffers); resident memory is sampled through
//!   the run and must stay flat across its last 90 %.
//! - **Cost:** one store alone, 10,000 launches: launches per second and the host's share of
//!   each launch (everything but the kernel's own run), printed for `docs/performance.md`; the
//!   emulated driver runs stream work inline for it, so that its hand-offs between threads
//!   are not counted as the host's.
//! - **Async:** the guest instantiated with `instantiate_async` and called with `call_async`
//!   on another thread than the one that made its store.
//!
//! The driver is the one `KARGS_CUDA_DRIVER` names. The counts need the emulated driver; with
//! another (a GPU's) the load still runs and the counts are skipped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kernel_args::MEMORY_EXPORT;
use kernel_args::guest::{CAPACITY, GUEST_WASM, VECTOR_ADD_KERNEL_ID, exports};
use kernel_args::wasmtime_host::{add_to_linker, wasmtime};
use kernel_args::{AbiError, GuestTrust, LaunchHost, PointerMode};
use kernel_args_core::ArgvBuilder;
use kernel_args_cuda::{
    CudaDevice, CudaLauncher, CudaOptions, KernelRegistry, PointerModeChoice, Sandbox, SetupError, kernels,
};
use kernel_args_cuda_emulator::client::{Emulator, Stat};
use kernel_args_demo::guest::{Guest as _, WasmtimeGuest};

const THREADS: usize = 8;
const STORES_PER_THREAD: usize = 4;
const LAUNCHES_PER_STORE: u32 = 10_000;
/// vector_add registered without a declaration, for the faulting tenant (a trusted guest, so
/// that it can hand the kernel a raw null pointer for `out`).
const FAULTY_KERNEL: i64 = 99;
/// How often the faulting tenant's kernel faults during the load.
const FAULTS: u64 = 20;

/// The launch statistics read the whole driver: one test of this file at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn say(line: String) {
    kernel_args_testkit::device::say(&line);
}

/// The device in `mode`; where direct pointers are asked for and the device cannot take them
/// (a GPU without pageable memory access, such as an H200 without HMM), the device in staged
/// mode, said so, so that the test still runs its launches on that device.
fn device(test: &str, mode: PointerMode) -> Option<Arc<CudaDevice>> {
    if mode == PointerMode::Direct {
        match open(PointerMode::Direct) {
            Err(e @ SetupError::DirectUnsupported { .. }) => {
                say(format!("{test}: direct pointers: {e}; its direct tenants run staged"));
            }
            opened => return or_skip(test, opened),
        }
    }
    or_skip(test, open(PointerMode::Staged))
}

/// Skips the test (`None`, said) where no device can be opened.
fn or_skip(test: &str, opened: Result<Arc<CudaDevice>, SetupError>) -> Option<Arc<CudaDevice>> {
    let no_device = |e: &SetupError| {
        matches!(
            e,
            SetupError::Driver { .. } | SetupError::NoDevice { .. } | SetupError::DirectUnsupported { .. }
        )
    };
    kernel_args_testkit::device::or_skip(test, opened, no_device)
}

/// A device with the bundled guest's fenced `vector_add`, in `mode`, on the driver the
/// environment names.
fn open(mode: PointerMode) -> Result<Arc<CudaDevice>, SetupError> {
    let mut registry = KernelRegistry::new();
    registry
        .register(
            VECTOR_ADD_KERNEL_ID,
            kernels::VECTOR_ADD_PTX,
            kernels::VECTOR_ADD_ENTRY,
            Sandbox::fenced(kernels::VECTOR_ADD_DECLARATION).unwrap(),
        )
        .unwrap();
    let pointer_mode =
        if mode == PointerMode::Direct { PointerModeChoice::Direct } else { PointerModeChoice::Staged };
    let options = CudaOptions { pointer_mode, ..CudaOptions::from_env() };
    CudaDevice::open(registry, options)
}

/// The emulated driver, where `KARGS_CUDA_DRIVER` names it.
fn emulator() -> Option<&'static Emulator> {
    CudaOptions::from_env().driver_library.and_then(|path| Emulator::load(&path).ok())
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// A guest in its own store, with the guest offsets of its `a`, `b` and `out` arrays and an
/// argv written into the last 64 bytes of `out`, which no launch of n <= 64 touches.
struct Placed {
    guest: WasmtimeGuest<CudaLauncher>,
    windows: [u32; 3],
    argv_at: i32,
    argv_len: i32,
}

impl Placed {
    /// `build` writes the argv, given the guest offsets of `a`, `b` and `out`.
    fn new(host: LaunchHost<CudaLauncher>, build: impl FnOnce(&mut ArgvBuilder<'_>, [u32; 3])) -> Placed {
        let mut guest = WasmtimeGuest::new(host).unwrap();
        let windows = [exports::A_PTR, exports::B_PTR, exports::OUT_PTR]
            .map(|name| guest.call::<(), i32>(name, ()).unwrap() as u32);
        let argv_at = windows[2] + 4 * (CAPACITY as u32) - 64;
        let mut buf = [0u8; 64];
        let mut argv = ArgvBuilder::new(&mut buf);
        build(&mut argv, windows);
        let argv = argv.finish();
        guest.memory_mut()[argv_at as usize..argv_at as usize + argv.len()].copy_from_slice(argv);
        Placed { guest, windows, argv_at: argv_at as i32, argv_len: argv.len() as i32 }
    }
}

/// One tenant: a guest in its own store, with its own element count and data.
struct Tenant {
    guest: WasmtimeGuest<CudaLauncher>,
    id: u32,
    n: u32,
    a: usize,
    b: usize,
    out: usize,
    argv_at: i32,
    argv_len: i32,
    /// Launches that failed because another tenant's kernel faulted while they were in
    /// flight (each retried).
    failed: u64,
}

impl Tenant {
    fn new(device: &Arc<CudaDevice>, id: u32) -> Tenant {
        let n = 16 + id % 48;
        let placed = Placed::new(LaunchHost::new(device.launcher()), |argv, [a, b, out]| {
            argv.ptr(a, 4 * n).unwrap().ptr(b, 4 * n).unwrap().ptr(out, 4 * n).unwrap().u32(n).unwrap();
        });
        let Placed { guest, windows: [a, b, out], argv_at, argv_len } = placed;
        Tenant { id, n, a: a as usize, b: b as usize, out: out as usize, argv_at, argv_len, guest, failed: 0 }
    }

    fn launch(&mut self, round: u32) {
        let (n, id) = (self.n, self.id);
        let memory = self.guest.memory_mut();
        for i in 0..n {
            let (a, b) = inputs(id, round, i);
            let (at_a, at_b) = (self.a + 4 * i as usize, self.b + 4 * i as usize);
            memory[at_a..at_a + 4].copy_from_slice(&a.to_le_bytes());
            memory[at_b..at_b + 4].copy_from_slice(&b.to_le_bytes());
        }
        loop {
            let code: i32 = self
                .guest
                .call(
                    exports::LAUNCH_RAW,
                    (VECTOR_ADD_KERNEL_ID, 1, 1, 1, 64, 1, 1, 0, self.argv_at, self.argv_len),
                )
                .unwrap();
            if code == 0 {
                break;
            }
            // Only a launch in flight when another tenant's kernel faulted may fail, naming the
            // fault; it is retried in the fresh context.
            let message = self.guest.host().last_error_message().unwrap_or_default();
            assert!(
                code == AbiError::LaunchFailed.code() && message.contains("CUDA_ERROR_ILLEGAL_ADDRESS (700)"),
                "tenant {} round {round}: {code}: {message}",
                self.id
            );
            self.failed += 1;
        }
        let memory = self.guest.memory();
        for i in 0..n {
            let (a, b) = inputs(id, round, i);
            let at = self.out + 4 * i as usize;
            let got = f32::from_le_bytes(memory[at..at + 4].try_into().unwrap());
            assert_eq!(got.to_bits(), (a + b).to_bits(), "tenant {} round {round} element {i}", self.id);
        }
    }
}

/// The tenant whose kernel faults: a trusted guest that launches vector_add (registered
/// undeclared) with a null `out`.
struct Faulty {
    guest: WasmtimeGuest<CudaLauncher>,
    argv_at: i32,
    argv_len: i32,
}

impl Faulty {
    fn new(device: &Arc<CudaDevice>) -> Faulty {
        let mut host = LaunchHost::new(device.launcher());
        host.set_trust(GuestTrust::Trusted);
        let placed = Placed::new(host, |argv, [a, b, _]| {
            argv.ptr(a, 64).unwrap().ptr(b, 64).unwrap().u64(0).unwrap().u32(16).unwrap();
        });
        Faulty { guest: placed.guest, argv_at: placed.argv_at, argv_len: placed.argv_len }
    }

    /// One launch whose kernel stores through address 0.
    fn fault(&mut self) {
        let code: i32 = self
            .guest
            .call(exports::LAUNCH_RAW, (FAULTY_KERNEL, 1, 1, 1, 64, 1, 1, 0, self.argv_at, self.argv_len))
            .unwrap();
        let message = self.guest.host().last_error_message().unwrap_or_default();
        assert_eq!(code, AbiError::LaunchFailed.code(), "{message}");
        assert!(message.contains("CUDA_ERROR_ILLEGAL_ADDRESS (700)"), "{message}");
    }
}

/// Tenant `id`'s inputs for launch `round`, element `i`: exact in f32, and different from every
/// other tenant's and round's.
fn inputs(id: u32, round: u32, i: u32) -> (f32, f32) {
    ((id * 4096 + i) as f32, (round % 8192) as f32 * 0.5 + i as f32)
}

#[test]
fn many_tenants_on_many_threads_share_one_device() {
    let test = "many_tenants_on_many_threads_share_one_device";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(direct) = device(test, PointerMode::Direct) else { return };
    let Some(staged) = device(test, PointerMode::Staged) else { return };
    let ordinal = direct.info().ordinal;
    let emulator = emulator();
    let live_before = emulator.map(|e| e.live_all(ordinal));
    let crossings_before = emulator.map(|e| e.crossings(ordinal));
    direct
        .registry()
        .register(FAULTY_KERNEL, kernels::VECTOR_ADD_PTX, kernels::VECTOR_ADD_ENTRY, Sandbox::Undeclared)
        .unwrap();
    let mut faulty = Faulty::new(&direct);

    // The stores are made here and moved to the threads that run them.
    let mut groups: Vec<Vec<Tenant>> = (0..THREADS)
        .map(|t| {
            let device = if t % 2 == 0 { &direct } else { &staged };
            (0..STORES_PER_THREAD).map(|s| Tenant::new(device, (t * STORES_PER_THREAD + s) as u32)).collect()
        })
        .collect();
    drop((direct, staged));
    let total = (THREADS * STORES_PER_THREAD) as u64 * u64::from(LAUNCHES_PER_STORE);
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    // The faulting tenant: one fault at every 1/FAULTS of the launches, on the emulated driver
    // only. On a GPU a kernel's fault left the device lost for the whole process
    // (cuDevicePrimaryCtxRetain answered 700 after the reset; docs/gpu-validation.md), so
    // there the load runs without it.
    let faults = if emulator.is_some() { FAULTS } else { 0 };
    if faults == 0 {
        say(format!("{test}: no faulting tenant: on this driver a kernel's fault is not recovered"));
    }
    let faulting = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            for k in 0..faults {
                while done.load(Ordering::Relaxed) < total * k / FAULTS + total / (2 * FAULTS) {
                    std::thread::sleep(Duration::from_micros(200));
                }
                faulty.fault();
            }
            faulty
        })
    };
    let threads: Vec<_> = groups
        .drain(..)
        .map(|mut tenants| {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                for round in 0..LAUNCHES_PER_STORE {
                    for tenant in &mut tenants {
                        tenant.launch(round);
                    }
                    done.fetch_add(tenants.len() as u64, Ordering::Relaxed);
                }
                tenants
            })
        })
        .collect();
    // Resident memory at every 5 % of the launches.
    let mut samples: Vec<(u64, u64)> = Vec::new();
    let mut next = total / 20;
    while threads.iter().any(|t| !t.is_finished()) {
        let now = done.load(Ordering::Relaxed);
        if now >= next {
            samples.push((now, resident_bytes()));
            next += total / 20;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let tenants: Vec<Tenant> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let faulty = faulting.join().unwrap();
    // Each fault fails at most the launch each other thread had in flight.
    let failed: u64 = tenants.iter().map(|t| t.failed).sum();
    say(format!(
        "{test}: {faults} kernel faults by one tenant; {failed} launches of the others failed while the \
         context was replaced (retried), every output right"
    ));
    assert!(failed <= faults * THREADS as u64, "{failed} failed launches for {faults} faults");
    samples.push((total, resident_bytes()));
    assert_eq!(done.load(Ordering::Relaxed), total);
    let rate = total as f64 / elapsed.as_secs_f64();
    say(format!(
        "{test}: {total} launches by {} tenants on {THREADS} threads in {:.2} s: {rate:.0} launches/s",
        tenants.len(),
        elapsed.as_secs_f64()
    ));
    let late: Vec<u64> = samples.iter().filter(|(at, _)| *at >= total / 10).map(|&(_, rss)| rss).collect();
    let (low, high) = (late.iter().min().copied().unwrap_or(0), late.iter().max().copied().unwrap_or(0));
    say(format!(
        "{test}: resident memory over the last 90 %: {:.1} to {:.1} MiB in {} samples",
        low as f64 / 1048576.0,
        high as f64 / 1048576.0,
        late.len()
    ));
    assert!(late.len() >= 10, "{samples:?}");
    assert!(high - low <= 8 << 20, "resident memory grew by {} bytes: {samples:?}", high - low);

    drop((tenants, faulty));
    if let (Some(emulator), Some(before)) = (emulator, live_before) {
        // Everything the tenants made is gone; the devices' context was retained by them alone.
        assert_eq!(emulator.live_all(ordinal)[1..], before[1..]);
        assert_eq!(emulator.live_all(ordinal)[0], 0);
        // No kernel store landed outside the allocation its pointer came from.
        assert_eq!(Some(emulator.crossings(ordinal)), crossings_before, "a kernel wrote outside its buffers");
    }
}

#[test]
fn one_tenant_launch_rate_and_host_share() {
    let test = "one_tenant_launch_rate_and_host_share";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for mode in [PointerMode::Direct, PointerMode::Staged] {
        let Some(device) = device(test, mode) else { return };
        if device.pointer_mode() != mode {
            continue; // direct pointers unsupported: the staged turn measures this device
        }
        let mut tenant = Tenant::new(&device, 7);
        tenant.launch(0);
        // The host's own cost: the emulated driver runs stream work on the calling thread, not
        // handed to its workers (which is not a GPU's cost either).
        if let Some(emulator) = emulator() {
            emulator.set_inline(true);
        }
        let kernel_before = emulator().map(|e| (e.stat(Stat::KernelNanos), e.stat(Stat::KernelsRun)));
        let started = Instant::now();
        for round in 1..=LAUNCHES_PER_STORE {
            tenant.launch(round);
        }
        let elapsed = started.elapsed();
        if let Some(emulator) = emulator() {
            emulator.set_inline(false);
        }
        let per_launch = elapsed.as_nanos() as f64 / f64::from(LAUNCHES_PER_STORE);
        let mut line = format!(
            "{test}: {mode:?}: {} launches of n = {} in {:.3} s: {:.0} launches/s, {:.1} us each",
            LAUNCHES_PER_STORE,
            tenant.n,
            elapsed.as_secs_f64(),
            1e9 / per_launch,
            per_launch / 1e3
        );
        if let (Some(emulator), Some((nanos, runs))) = (emulator(), kernel_before) {
            let kernel = (emulator.stat(Stat::KernelNanos) - nanos) as f64;
            assert_eq!(emulator.stat(Stat::KernelsRun) - runs, u64::from(LAUNCHES_PER_STORE));
            let kernel_per_launch = kernel / f64::from(LAUNCHES_PER_STORE);
            line += &format!(
                "; the emulated kernel {:.2} us of each, the host (guest call, checks, parse, launcher, driver) {:.1} %",
                kernel_per_launch / 1e3,
                100.0 * (1.0 - kernel_per_launch / per_launch)
            );
        }
        say(line);
    }
}

#[test]
fn a_guest_in_an_async_store_launches_from_another_thread() {
    let test = "a_guest_in_an_async_store_launches_from_another_thread";
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = device(test, PointerMode::Direct) else { return };
    let device_mode = device.pointer_mode();
    // wasmtime's `async` feature (on in kernel-args) lets every store run guests with
    // `call_async`; no `Config` switch is needed.
    let engine = wasmtime::Engine::default();
    let module = wasmtime::Module::new(&engine, GUEST_WASM).unwrap();
    let mut linker = wasmtime::Linker::new(&engine);
    add_to_linker(&mut linker, |host: &mut LaunchHost<CudaLauncher>| host).unwrap();
    let store = wasmtime::Store::new(&engine, LaunchHost::new(device.launcher()));
    // The store moves to another thread, which runs the guest to completion there.
    let worker = std::thread::spawn(move || {
        let mut store = store;
        pollster::block_on(async {
            let instance = linker.instantiate_async(&mut store, &module).await.unwrap();
            let run = instance.get_typed_func::<i32, i32>(&mut store, exports::RUN_VECTOR_ADD).unwrap();
            let mismatch = instance.get_typed_func::<i32, i32>(&mut store, exports::FIRST_MISMATCH).unwrap();
            for n in [1, 255, 256, 1000] {
                assert_eq!(
                    run.call_async(&mut store, n).await.unwrap(),
                    0,
                    "{:?}",
                    store.data().last_error_message()
                );
                assert_eq!(mismatch.call_async(&mut store, n).await.unwrap(), -1, "n = {n}");
            }
            assert!(instance.get_memory(&mut store, MEMORY_EXPORT).is_some());
            store.data().last_launch().unwrap().result().unwrap()
        })
    });
    let outcome = worker.join().unwrap();
    assert_eq!(outcome.pointer_mode, device_mode);
    say(format!("{test}: 4 launches from an async store on a worker thread, every element checked"));
}
