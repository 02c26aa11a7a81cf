//! End to end on wasmtime with the C guest: `include/examples/vector_add.c`, built on
//! `include/kargs_guest.h` by `scripts/c-guest-check.sh`, runs the same checks as the Rust
//! guest in `guest_e2e.rs` (same exports, same answers, same argv bytes), and its interface
//! is the Rust guest's.
//!
//! The module is read from the path in `KARGS_C_GUEST_WASM`. Without it the tests print one
//! `SKIPPED` line and pass, because a clang for wasm32 is not part of the Rust toolchain;
//! with `KARGS_REQUIRE_C_GUEST=1` (what `scripts/c-guest-check.sh` sets) they fail instead.
#![cfg(feature = "wasmtime")]

use std::io::Write as _;
use std::sync::{Once, OnceLock};

use kernel_args::wasmtime_host::wasmtime::{
    Engine, ExternType, Instance, Linker, Memory, Module, Store, WasmParams, WasmResults,
};
use kernel_args::wasmtime_host::add_to_linker;
use kernel_args::{IMPORT_MODULE, LAUNCH_IMPORT, MEMORY_EXPORT};
use kernel_args::{
    AbiError, Bound, Detail, Dimension, DryRunLauncher, HostError, LaunchHost, LaunchOutcome, LaunchRequest,
    LaunchShape, Launcher, PointerMode, RegionError, SignatureCheck, encode_argv_vec, parse_snapshots,
};
use kernel_args_core::{ErrorKind, GuestMemory, GuestRange, LoweredArgSnapshot};

const SKIPPED: &str =
    "SKIPPED c_guest_e2e: KARGS_C_GUEST_WASM is not set (scripts/c-guest-check.sh builds the C guest)";

/// The C guest's contract (include/examples/vector_add.c), the same as the Rust guest's
/// (`kernel_args::guest`; compared in `the_c_and_rust_guests_send_the_same_launch`).
const VECTOR_ADD_KERNEL_ID: i64 = 1;
const THREADS_PER_BLOCK: u32 = 256;
const CAPACITY: usize = 4096;
const ERR_BAD_COUNT: i32 = -100;

/// The exports the tests use, by name (as in `kernel_args::guest::exports`), with their wasm
/// signatures.
mod exports {
    pub const RUN_VECTOR_ADD: &str = "run_vector_add";
    pub const FIRST_MISMATCH: &str = "first_mismatch";
    pub const OUT_AT: &str = "out_at";
    pub const A_PTR: &str = "a_ptr";
    pub const B_PTR: &str = "b_ptr";
    pub const OUT_PTR: &str = "out_ptr";
    pub const CAPACITY: &str = "capacity";
    pub const LAST_ARGV_PTR: &str = "last_argv_ptr";
    pub const LAST_ARGV_LEN: &str = "last_argv_len";
    pub const LAUNCH_RAW: &str = "launch_raw";
    pub const SEND_PTR_PAST_MEMORY: &str = "send_ptr_past_memory";
    pub const SEND_UNKNOWN_TAG: &str = "send_unknown_tag";
    pub const SEND_TOO_MANY_ARGS: &str = "send_too_many_args";
    pub const SEND_ARGS_REGION_PAST_MEMORY: &str = "send_args_region_past_memory";
    pub const SEND_BAD_DIMENSIONS: &str = "send_bad_dimensions";

    const I32_TO_I32: &str = "func(i32) -> (i32)";
    const TO_I32: &str = "func() -> (i32)";
    const LAUNCH: &str = "func(i64, i32, i32, i32, i32, i32, i32, i32, i32, i32) -> (i32)";

    /// Every export and its signature, as `signature` spells it.
    pub const ALL: [(&str, &str); 16] = [
        ("memory", "memory"),
        (RUN_VECTOR_ADD, I32_TO_I32),
        (FIRST_MISMATCH, I32_TO_I32),
        (OUT_AT, "func(i32) -> (f32)"),
        (A_PTR, TO_I32),
        (B_PTR, TO_I32),
        (OUT_PTR, TO_I32),
        (CAPACITY, TO_I32),
        (LAST_ARGV_PTR, TO_I32),
        (LAST_ARGV_LEN, TO_I32),
        (LAUNCH_RAW, LAUNCH),
        (SEND_PTR_PAST_MEMORY, TO_I32),
        (SEND_UNKNOWN_TAG, TO_I32),
        (SEND_TOO_MANY_ARGS, TO_I32),
        (SEND_ARGS_REGION_PAST_MEMORY, TO_I32),
        (SEND_BAD_DIMENSIONS, TO_I32),
    ];
}

/// One engine and one compiled module for all tests; `None` (the tests skip) when
/// `KARGS_C_GUEST_WASM` is unset, a panic when `KARGS_REQUIRE_C_GUEST=1` or the file cannot
/// be read or compiled.
fn compiled() -> Option<&'static (Engine, Module)> {
    static COMPILED: OnceLock<Option<(Engine, Module)>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let Some(path) = std::env::var_os("KARGS_C_GUEST_WASM").filter(|p| !p.is_empty()) else {
                assert!(
                    std::env::var("KARGS_REQUIRE_C_GUEST").as_deref() != Ok("1"),
                    "KARGS_REQUIRE_C_GUEST=1 but KARGS_C_GUEST_WASM is not set \
                     (scripts/c-guest-check.sh builds the C guest and sets it)"
                );
                return None;
            };
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("KARGS_C_GUEST_WASM={}: {e}", path.to_string_lossy()));
            let engine = Engine::default();
            let module = Module::new(&engine, &bytes)
                .unwrap_or_else(|e| panic!("{} does not compile: {e:?}", path.to_string_lossy()));
            Some((engine, module))
        })
        .as_ref()
}

/// Prints the SKIPPED line, once per run, to stderr directly: the harness captures
/// `eprint!`, not this, so the line shows in every run (as in cuda-backend/tests/support).
fn report_skip() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = std::io::stderr().write_all(format!("{SKIPPED}\n").as_bytes());
    });
}

/// The compiled C guest, or: report the skip and return from the test.
macro_rules! c_guest {
    () => {
        match compiled() {
            Some(compiled) => compiled,
            None => {
                report_skip();
                return;
            }
        }
    };
}

struct Guest<L: Launcher + 'static> {
    store: Store<LaunchHost<L>>,
    instance: Instance,
    memory: Memory,
}

impl Guest<DryRunLauncher> {
    fn dry_run(compiled: &(Engine, Module)) -> Self {
        Guest::with_host(compiled, LaunchHost::new(DryRunLauncher::new()))
    }
}

impl<L: Launcher + 'static> Guest<L> {
    fn with_host((engine, module): &(Engine, Module), host: LaunchHost<L>) -> Self {
        let mut linker = Linker::new(engine);
        add_to_linker(&mut linker, |host: &mut LaunchHost<L>| host).unwrap();
        let mut store = Store::new(engine, host);
        let instance = linker.instantiate(&mut store, module).unwrap();
        let memory = instance.get_memory(&mut store, MEMORY_EXPORT).unwrap();
        Guest { store, instance, memory }
    }

    /// Calls an export; a trap fails the test (the host function must never trap).
    fn call<P: WasmParams, R: WasmResults>(&mut self, name: &str, params: P) -> R {
        let f = self.instance.get_typed_func::<P, R>(&mut self.store, name).unwrap();
        f.call(&mut self.store, params).unwrap_or_else(|trap| panic!("{name} trapped: {trap:?}"))
    }

    fn call0(&mut self, name: &str) -> i32 {
        self.call::<(), i32>(name, ())
    }

    fn offset(&mut self, name: &str) -> u32 {
        u32::try_from(self.call0(name)).unwrap()
    }

    fn host(&self) -> &LaunchHost<L> {
        self.store.data()
    }

    fn error(&self) -> &HostError {
        self.host().last_error().expect("the call failed")
    }

    fn argv_error_kind(&self) -> (ErrorKind, usize, usize) {
        match self.error().detail() {
            Detail::Argv(e) => (e.kind(), e.index(), e.offset()),
            other => panic!("expected an argv error, got {other:?}"),
        }
    }

    /// The guest's copy of the last argv it sent.
    fn guest_argv(&mut self) -> Vec<u8> {
        let ptr = self.offset(exports::LAST_ARGV_PTR) as usize;
        let len = self.offset(exports::LAST_ARGV_LEN) as usize;
        self.memory.data(&self.store)[ptr..ptr + len].to_vec()
    }
}

fn ptr(guest_offset: u32, len: u32) -> LoweredArgSnapshot {
    LoweredArgSnapshot::Ptr(GuestRange { guest_offset, len })
}

/// `memory`, or `func(i64, i32) -> (i32)`.
fn signature(ty: &ExternType) -> String {
    match ty {
        ExternType::Func(f) => {
            let list = |types: Vec<String>| types.join(", ");
            format!(
                "func({}) -> ({})",
                list(f.params().map(|t| t.to_string()).collect()),
                list(f.results().map(|t| t.to_string()).collect())
            )
        }
        ExternType::Memory(_) => "memory".to_string(),
        other => format!("{other:?}"),
    }
}

#[test]
fn the_c_guest_imports_only_wasi_cuda_launch_and_exports_the_demo_interface() {
    let (_, module) = c_guest!();
    let imports: Vec<(String, String, String)> = module
        .imports()
        .map(|i| (i.module().to_string(), i.name().to_string(), signature(&i.ty())))
        .collect();
    assert_eq!(
        imports,
        [(
            IMPORT_MODULE.to_string(),
            LAUNCH_IMPORT.to_string(),
            "func(i64, i32, i32, i32, i32, i32, i32, i32, i32, i32) -> (i32)".to_string()
        )]
    );
    for (name, expected) in exports::ALL {
        let ty = module.get_export(name).unwrap_or_else(|| panic!("the C guest does not export {name}"));
        assert_eq!(signature(&ty), expected, "{name}");
    }
}

/// The Rust guest has the interface `exports::ALL` states, and sends the same launch as the C
/// guest: the same shape and records, windows of the same lengths, argvs of the same length.
#[cfg(feature = "demo-guest")]
#[test]
fn the_c_and_rust_guests_send_the_same_launch() {
    use kernel_args::guest as rust;

    let compiled_c = c_guest!();
    assert_eq!(
        (rust::VECTOR_ADD_KERNEL_ID, rust::THREADS_PER_BLOCK, rust::CAPACITY, rust::ERR_BAD_COUNT),
        (VECTOR_ADD_KERNEL_ID, THREADS_PER_BLOCK, CAPACITY, ERR_BAD_COUNT)
    );
    let engine = &compiled_c.0;
    let compiled_rust = (engine.clone(), Module::new(engine, rust::GUEST_WASM).unwrap());
    for (name, expected) in exports::ALL {
        let ty = compiled_rust.1.get_export(name).unwrap_or_else(|| panic!("the Rust guest lacks {name}"));
        assert_eq!(signature(&ty), expected, "the Rust guest's {name}");
    }

    let mut c = Guest::dry_run(compiled_c);
    let mut r = Guest::dry_run(&compiled_rust);
    for n in [0, 1, 255, 256, 257, 1000, CAPACITY as i32] {
        assert_eq!(
            c.call::<i32, i32>(exports::RUN_VECTOR_ADD, n),
            r.call::<i32, i32>(exports::RUN_VECTOR_ADD, n)
        );
        let (cs, rs) =
            (c.host().last_launch().unwrap().snapshot(), r.host().last_launch().unwrap().snapshot());
        assert_eq!((cs.kernel_id(), cs.shape()), (rs.kernel_id(), rs.shape()), "n = {n}");
        let lens = |args: &[LoweredArgSnapshot]| -> Vec<LoweredArgSnapshot> {
            args.iter()
                .map(|a| match a {
                    LoweredArgSnapshot::Ptr(w) => ptr(0, w.len),
                    other => *other,
                })
                .collect()
        };
        assert_eq!(lens(cs.args()), lens(rs.args()), "n = {n}");
        assert_eq!(c.guest_argv().len(), r.guest_argv().len(), "n = {n}");
    }
    for export in [
        exports::SEND_PTR_PAST_MEMORY,
        exports::SEND_UNKNOWN_TAG,
        exports::SEND_TOO_MANY_ARGS,
        exports::SEND_ARGS_REGION_PAST_MEMORY,
        exports::SEND_BAD_DIMENSIONS,
    ] {
        assert_eq!(c.call0(export), r.call0(export), "{export}");
        assert_eq!(c.error().code(), r.error().code(), "{export}");
    }
}

#[test]
fn the_guests_argv_arrives_intact() {
    let mut g = Guest::dry_run(c_guest!());
    let n = 1000;
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, n), AbiError::NotAvailable.code());

    let (a, b, out) = (g.offset(exports::A_PTR), g.offset(exports::B_PTR), g.offset(exports::OUT_PTR));
    let bytes = 4 * n as u32;
    let expected = [ptr(a, bytes), ptr(b, bytes), ptr(out, bytes), LoweredArgSnapshot::U32(n as u32)];

    let launch = g.host().last_launch().expect("the call reached the launcher");
    let snapshot = launch.snapshot();
    assert_eq!(snapshot.kernel_id(), VECTOR_ADD_KERNEL_ID);
    assert_eq!(snapshot.shape(), LaunchShape { grid: [4, 1, 1], block: [256, 1, 1], shared_mem_bytes: 0 });
    assert_eq!(snapshot.args(), expected);
    assert_eq!(launch.result(), Err(AbiError::NotAvailable));
    let recorded = snapshot.args().to_vec();

    // What the guest encoded, read from its memory: same records, same bytes.
    let guest_bytes = g.guest_argv();
    assert_eq!(guest_bytes.len(), 3 * 9 + 5);
    let memory_len = g.memory.data_size(&g.store) as u64;
    assert_eq!(parse_snapshots(&guest_bytes, &GuestMemory::length_only(memory_len)).unwrap(), recorded);
    assert_eq!(encode_argv_vec(&recorded).unwrap(), guest_bytes);

    // The dry run saw the same request, and says why nothing ran.
    let dry = g.host().launcher().last().unwrap();
    assert_eq!(dry.args(), &recorded[..]);
    assert_eq!(g.host().launcher().launches(), 1);
    assert_eq!(g.error().detail(), &Detail::NoDevice);
    assert!(g.host().last_error_message().unwrap().contains("no CUDA device"));

    // Nothing ran, so `out` still holds the guest's sentinel.
    assert_eq!(g.call::<i32, i32>(exports::FIRST_MISMATCH, n), 0);
    assert!(g.call::<i32, f32>(exports::OUT_AT, 0).is_nan());
}

#[test]
fn a_launcher_that_succeeds_gives_the_guest_zero() {
    struct Accepts(Vec<Vec<LoweredArgSnapshot>>);
    impl Launcher for Accepts {
        fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
            let args: kernel_args_core::ParsedArgv<'_> = request.args()?;
            self.0.push(args.iter().map(|a| a.snapshot()).collect());
            Ok(LaunchOutcome { pointer_mode: PointerMode::Staged, signature: SignatureCheck::Skipped })
        }
    }
    let mut g = Guest::with_host(c_guest!(), LaunchHost::new(Accepts(Vec::new())));
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, 16), 0);
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, 0), 0, "an empty vector is still one block");
    assert!(g.host().last_error().is_none());
    let launch = g.host().last_launch().unwrap();
    assert_eq!(launch.result().unwrap().pointer_mode, PointerMode::Staged);
    assert_eq!(launch.snapshot().shape().grid, [1, 1, 1]);
    let seen = &g.host().launcher().0;
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0][3], LoweredArgSnapshot::U32(16));
    assert_eq!(
        seen[1][..3].iter().filter(|a| matches!(a, LoweredArgSnapshot::Ptr(r) if r.len == 0)).count(),
        3
    );
}

#[test]
fn a_pointer_past_memory_is_an_invalid_pointer() {
    let mut g = Guest::dry_run(c_guest!());
    assert_eq!(g.call0(exports::SEND_PTR_PAST_MEMORY), AbiError::InvalidPointer.code());
    let memory_len = g.memory.data_size(&g.store) as u64;
    let (kind, index, offset) = g.argv_error_kind();
    assert_eq!(kind, ErrorKind::WindowOutOfBounds { guest_offset: memory_len as u32, len: 64, memory_len });
    assert_eq!((index, offset), (2, 18));
    assert!(g.host().last_launch().is_none());
    assert_eq!(g.host().launcher().launches(), 0);
}

#[test]
fn an_unknown_tag_is_invalid_args() {
    let mut g = Guest::dry_run(c_guest!());
    assert_eq!(g.call0(exports::SEND_UNKNOWN_TAG), AbiError::InvalidArgs.code());
    assert_eq!(g.argv_error_kind(), (ErrorKind::UnknownTag { tag: 0xff }, 4, 32));
    assert_eq!(
        g.host().last_error_message().unwrap(),
        "InvalidArgs -9: unknown tag 0xff at byte 32 (record 4)"
    );
}

#[test]
fn one_hundred_twenty_nine_args_are_unsupported() {
    let mut g = Guest::dry_run(c_guest!());
    assert_eq!(g.call0(exports::SEND_TOO_MANY_ARGS), AbiError::KernelArgsUnsupported.code());
    assert_eq!(g.argv_error_kind(), (ErrorKind::TooManyRecords { max: 128 }, 128, 640));
    assert_eq!(g.guest_argv().len(), 129 * 5);
}

#[test]
fn an_args_region_past_memory_is_an_invalid_pointer() {
    let mut g = Guest::dry_run(c_guest!());
    assert_eq!(g.call0(exports::SEND_ARGS_REGION_PAST_MEMORY), AbiError::InvalidPointer.code());
    let memory_len = g.memory.data_size(&g.store) as u64;
    let args_ptr = (memory_len - 8) as i32;
    assert_eq!(
        g.error().detail(),
        &Detail::Region(RegionError::PastMemory { args_ptr, args_len: 32, memory_len })
    );
}

#[test]
fn bad_dimensions_are_invalid_dimensions() {
    let mut g = Guest::dry_run(c_guest!());
    assert_eq!(g.call0(exports::SEND_BAD_DIMENSIONS), AbiError::InvalidDimensions.code());
    let Detail::Shape(e) = g.error().detail() else { panic!("shape detail") };
    assert_eq!((e.dimension, e.value, e.bound), (Dimension::BlockX, 2048, Bound::AtMost(1024)));
}

#[test]
fn a_disabled_capability_is_not_available_and_records_nothing() {
    let mut g = Guest::with_host(c_guest!(), LaunchHost::new(DryRunLauncher::new()).with_enabled(false));
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, 64), AbiError::NotAvailable.code());
    assert!(g.host().last_launch().is_none());
    assert_eq!(g.host().launcher().launches(), 0);
    assert!(g.host().launcher().last().is_none());
    assert_eq!(g.error().detail(), &Detail::CapabilityDisabled);
}

#[test]
fn a_failed_launch_after_a_good_one_leaves_no_stale_args() {
    let mut g = Guest::dry_run(c_guest!());
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, 64), -1);
    assert_eq!(g.host().last_launch().unwrap().snapshot().args().len(), 4);

    for (export, code) in [
        (exports::SEND_UNKNOWN_TAG, -9),
        (exports::SEND_BAD_DIMENSIONS, -8),
        (exports::SEND_ARGS_REGION_PAST_MEMORY, -2),
        (exports::SEND_PTR_PAST_MEMORY, -2),
        (exports::SEND_TOO_MANY_ARGS, -10),
    ] {
        assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, 64), -1);
        assert!(g.host().last_launch().is_some());
        assert_eq!(g.call0(export), code, "{export}");
        assert!(g.host().last_launch().is_none(), "{export} left the previous launch's args readable");
        assert_eq!(g.error().code().code(), code);
    }
    // And a good launch afterwards records afresh.
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, 8), -1);
    assert_eq!(g.host().last_launch().unwrap().snapshot().args()[3], LoweredArgSnapshot::U32(8));
}

type Raw = (i64, i32, i32, i32, i32, i32, i32, i32, i32, i32);

#[test]
fn raw_calls_get_codes_never_traps() {
    let mut g = Guest::dry_run(c_guest!());
    let memory_len = g.memory.data_size(&g.store) as i32;
    let raw = |args_ptr, args_len| -> Raw { (1, 1, 1, 1, 32, 1, 1, 0, args_ptr, args_len) };
    let cases: [(Raw, i32); 12] = [
        (raw(-1, 4), -2),
        (raw(0, -1), -2),
        (raw(i32::MIN, i32::MIN), -2),
        (raw(i32::MAX, 1), -2),
        (raw(memory_len, 1), -2),
        (raw(memory_len + 1, 0), -2),
        // No arguments: nothing is read, the dry run is reached.
        (raw(0, 0), -1),
        (raw(memory_len, 0), -1),
        ((1, 0, 1, 1, 32, 1, 1, 0, 0, 0), -8),
        ((1, 1, 1, 1, 32, 1, 1, -1, 0, 0), -8),
        ((1, 1, 1, 1, 32, 1, 1, 227 * 1024 + 1, 0, 0), -8),
        ((i64::MIN, 1, 65_535, 65_535, 1024, 1, 1, 227 * 1024, 0, 0), -1),
    ];
    for (params, code) in cases {
        assert_eq!(g.call::<Raw, i32>(exports::LAUNCH_RAW, params), code, "{params:?}");
    }
    assert_eq!(g.host().last_launch().unwrap().snapshot().kernel_id(), i64::MIN);
    assert_eq!(g.host().launcher().launches(), 3);
}

#[test]
fn guest_accessors_and_codes() {
    let mut g = Guest::dry_run(c_guest!());
    assert_eq!(g.call0(exports::CAPACITY), CAPACITY as i32);
    let over = CAPACITY as i32 + 1;
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, over), ERR_BAD_COUNT);
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, -1), ERR_BAD_COUNT);
    assert!(g.host().last_launch().is_none(), "the guest refused before calling the host");
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, CAPACITY as i32), -1);
    let shape = g.host().last_launch().unwrap().snapshot().shape();
    assert_eq!(shape.grid[0], CAPACITY as u32 / THREADS_PER_BLOCK);
    assert!(g.call::<i32, f32>(exports::OUT_AT, over).is_nan());
    assert!(g.call::<i32, f32>(exports::OUT_AT, CAPACITY as i32).is_nan());
    assert!(g.call::<i32, f32>(exports::OUT_AT, -1).is_nan());
    assert_eq!(g.call::<i32, i32>(exports::FIRST_MISMATCH, over), ERR_BAD_COUNT);
}
