//! End to end on wasmtime: the bundled Rust guest calls `wasi_cuda_launch`, the host function
//! checks and parses, and the tests compare what the host lowered with what the guest encoded.
#![cfg(all(feature = "wasmtime", feature = "demo-guest"))]

use std::sync::OnceLock;

use kernel_args::guest::{self, GUEST_WASM, VECTOR_ADD_KERNEL_ID, exports};
use kernel_args::wasmtime_host::add_to_linker;
use kernel_args::{
    AbiError, Bound, Detail, Dimension, DryRunLauncher, HostError, LaunchHost, LaunchOutcome, LaunchRequest,
    LaunchShape, Launcher, PointerMode, RegionError, SignatureCheck, encode_argv_vec, parse_snapshots,
};
use kernel_args_core::{ErrorKind, GuestMemory, GuestRange, LoweredArgSnapshot};
use wasmtime::{Engine, Instance, Linker, Memory, Module, Store, WasmParams, WasmResults};

/// One engine and one compiled module for all tests: compiling is the slow part.
fn compiled() -> &'static (Engine, Module) {
    static COMPILED: OnceLock<(Engine, Module)> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let engine = Engine::default();
        let module = Module::new(&engine, GUEST_WASM).expect("the bundled guest compiles");
        (engine, module)
    })
}

struct Guest<L: Launcher + 'static> {
    store: Store<LaunchHost<L>>,
    instance: Instance,
    memory: Memory,
}

impl Guest<DryRunLauncher> {
    fn dry_run() -> Self {
        Guest::with_host(LaunchHost::new(DryRunLauncher::new()))
    }
}

impl<L: Launcher + 'static> Guest<L> {
    fn with_host(host: LaunchHost<L>) -> Self {
        let (engine, module) = compiled();
        let mut linker = Linker::new(engine);
        add_to_linker(&mut linker, |host: &mut LaunchHost<L>| host).unwrap();
        let mut store = Store::new(engine, host);
        let instance = linker.instantiate(&mut store, module).unwrap();
        let memory = instance.get_memory(&mut store, "memory").unwrap();
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

#[test]
fn the_guests_argv_arrives_intact() {
    let mut g = Guest::dry_run();
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
    let mut g = Guest::with_host(LaunchHost::new(Accepts(Vec::new())));
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
    let mut g = Guest::dry_run();
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
    let mut g = Guest::dry_run();
    assert_eq!(g.call0(exports::SEND_UNKNOWN_TAG), AbiError::InvalidArgs.code());
    assert_eq!(g.argv_error_kind(), (ErrorKind::UnknownTag { tag: 0xff }, 4, 32));
    assert_eq!(
        g.host().last_error_message().unwrap(),
        "InvalidArgs -9: unknown tag 0xff at byte 32 (record 4)"
    );
}

#[test]
fn one_hundred_twenty_nine_args_are_unsupported() {
    let mut g = Guest::dry_run();
    assert_eq!(g.call0(exports::SEND_TOO_MANY_ARGS), AbiError::KernelArgsUnsupported.code());
    assert_eq!(g.argv_error_kind(), (ErrorKind::TooManyRecords { max: 128 }, 128, 640));
    assert_eq!(g.guest_argv().len(), 129 * 5);
}

#[test]
fn an_args_region_past_memory_is_an_invalid_pointer() {
    let mut g = Guest::dry_run();
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
    let mut g = Guest::dry_run();
    assert_eq!(g.call0(exports::SEND_BAD_DIMENSIONS), AbiError::InvalidDimensions.code());
    let Detail::Shape(e) = g.error().detail() else { panic!("shape detail") };
    assert_eq!((e.dimension, e.value, e.bound), (Dimension::BlockX, 2048, Bound::AtMost(1024)));
}

#[test]
fn a_disabled_capability_is_not_available_and_records_nothing() {
    let mut g = Guest::with_host(LaunchHost::new(DryRunLauncher::new()).with_enabled(false));
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, 64), AbiError::NotAvailable.code());
    assert!(g.host().last_launch().is_none());
    assert_eq!(g.host().launcher().launches(), 0);
    assert!(g.host().launcher().last().is_none());
    assert_eq!(g.error().detail(), &Detail::CapabilityDisabled);
}

#[test]
fn a_failed_launch_after_a_good_one_leaves_no_stale_args() {
    let mut g = Guest::dry_run();
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
    let mut g = Guest::dry_run();
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
    let mut g = Guest::dry_run();
    assert_eq!(g.call0(exports::CAPACITY), guest::CAPACITY as i32);
    let over = guest::CAPACITY as i32 + 1;
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, over), guest::ERR_BAD_COUNT);
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, -1), guest::ERR_BAD_COUNT);
    assert!(g.host().last_launch().is_none(), "the guest refused before calling the host");
    assert_eq!(g.call::<i32, i32>(exports::RUN_VECTOR_ADD, guest::CAPACITY as i32), -1);
    let shape = g.host().last_launch().unwrap().snapshot().shape();
    assert_eq!(shape.grid[0], guest::CAPACITY as u32 / guest::THREADS_PER_BLOCK);
    assert!(g.call::<i32, f32>(exports::OUT_AT, over).is_nan());
}
