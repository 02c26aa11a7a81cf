//! End to end, once for every runtime and every guest: the guest calls `wasi_cuda_launch`, the
//! host function checks and parses, and the tests compare what the host lowered with what the
//! guest encoded. Every test runs for each pair of
//!
//! - a runtime (`Runtime::ALL`): wasmi, and wasmtime where the `wasmtime` feature is on (as in
//!   `cargo test --workspace`), each with kernel-args' binding, and
//! - a guest with the demo interface (`kernel_args::guest::exports`): the bundled Rust guest,
//!   and the C guest (`capi/c/examples/vector_add.c` on `include/kargs_guest.h`, built for
//!   wasm32 by `scripts/c-guest-check.sh`), read from the path in `KARGS_C_GUEST_WASM`.
//!
//! Without `KARGS_C_GUEST_WASM` the C guest's runs are left out with one `SKIPPED` line,
//! because a clang for wasm32 is not part of the Rust toolchain; with `KARGS_REQUIRE_C_GUEST=1`
//! (what `scripts/c-guest-check.sh` sets) the tests fail instead. Each run prints its pair
//! first (`case: ...`), which the harness shows when the test fails.
//!
//! The two guests are also held to each other (the same launches, windows of the same
//! lengths, argvs of the same length) and each guest's runs on the runtimes to each other (the
//! same records, bytes and messages).

use std::io::Write as _;
use std::sync::OnceLock;

use kernel_args::guest::{
    CAPACITY, ERR_BAD_COUNT, GUEST_WASM, THREADS_PER_BLOCK, VECTOR_ADD_KERNEL_ID, exports,
};
use kernel_args::{
    AbiError, Bound, Detail, Dimension, DryRunLauncher, HostError, IMPORT_MODULE, KernelTable, LAUNCH_IMPORT,
    LaunchArgs, LaunchCall, LaunchHost, LaunchOutcome, LaunchRequest, LaunchShape, Launcher, MEMORY_EXPORT,
    PointerMode, RegionError, Registered, SignatureCheck,
};
use kernel_args_core::{
    ErrorKind, GuestMemory, GuestRange, LoweredArgSnapshot, ParsedArgv, encode_argv, parse_argv,
};
use kernel_args_demo::guest::{Guest, GuestModule, Runtime, demo_dry_run, demo_kernels};

/// Which guest a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The bundled Rust guest (`GUEST_WASM`).
    Rust,
    /// The C guest from `KARGS_C_GUEST_WASM`.
    C,
}

/// One guest compiled for one runtime.
struct Case {
    runtime: Runtime,
    source: Source,
    label: String,
    wasm: Vec<u8>,
    module: GuestModule,
}

/// Every (runtime × guest) pair of this run, each guest compiled once per runtime (compiling
/// is the slow part).
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let mut guests = vec![(Source::Rust, "the Rust guest".to_owned(), GUEST_WASM.to_vec())];
        if let Some((path, wasm)) = c_guest_wasm() {
            guests.push((Source::C, format!("the C guest {path}"), wasm));
        }
        let mut cases = Vec::new();
        for &runtime in Runtime::ALL {
            for (source, name, wasm) in &guests {
                let label = format!("{name} on {runtime}");
                let module = GuestModule::new(runtime, wasm).unwrap_or_else(|e| panic!("{label}: {e}"));
                cases.push(Case { runtime, source: *source, label, wasm: wasm.clone(), module });
            }
        }
        cases
    })
}

/// The C guest's path and bytes; `None` (its runs are left out, reported once) when
/// `KARGS_C_GUEST_WASM` is unset, a panic when `KARGS_REQUIRE_C_GUEST=1` or the file cannot be
/// read.
fn c_guest_wasm() -> Option<(String, Vec<u8>)> {
    let Some(path) = std::env::var_os("KARGS_C_GUEST_WASM").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var("KARGS_REQUIRE_C_GUEST").as_deref() != Ok("1"),
            "KARGS_REQUIRE_C_GUEST=1 but KARGS_C_GUEST_WASM is not set \
             (scripts/c-guest-check.sh builds the C guest and sets it)"
        );
        // To stderr directly: the harness captures `eprint!`, not this, so the line shows in
        // every run (as in integration/tests/support).
        let _ = std::io::stderr().write_all(
            b"SKIPPED guest_e2e with the C guest: KARGS_C_GUEST_WASM is not set \
              (scripts/c-guest-check.sh builds the C guest)\n",
        );
        return None;
    };
    let path = path.to_string_lossy().into_owned();
    let wasm = std::fs::read(&path).unwrap_or_else(|e| panic!("KARGS_C_GUEST_WASM={path}: {e}"));
    Some((path, wasm))
}

/// Runs `test` on a fresh instance of every case, each with the host `host` makes.
fn each_case<L: Launcher + 'static>(
    host: impl Fn() -> LaunchHost<L>,
    mut test: impl FnMut(&Case, &mut dyn Guest<L>),
) {
    for case in cases() {
        eprintln!("case: {}", case.label);
        let mut guest = instantiate(case, host());
        test(case, &mut *guest);
    }
}

/// [`each_case`] with a dry-run host.
fn each_dry_run(test: impl FnMut(&Case, &mut dyn Guest<DryRunLauncher>)) {
    each_case(dry_run_host, test);
}

fn dry_run_host() -> LaunchHost<DryRunLauncher> {
    LaunchHost::new(demo_dry_run())
}

fn instantiate<L: Launcher + 'static>(case: &Case, host: LaunchHost<L>) -> Box<dyn Guest<L>> {
    case.module.instantiate(host).unwrap_or_else(|e| panic!("{}: {e}", case.label))
}

/// The test's view of a guest: a trap fails the test (the host function must never trap).
trait Checked<L> {
    /// `run_vector_add(n)`.
    fn run(&mut self, n: i32) -> i32;
    /// An export `() -> i32`.
    fn send(&mut self, export: &str) -> i32;
    /// An export `() -> i32` that answers an offset.
    fn offset(&mut self, export: &str) -> u32;
    /// An export `(i32) -> i32`.
    fn call_i32(&mut self, export: &str, arg: i32) -> i32;
    /// `out_at(i)`.
    fn out_at(&mut self, i: i32) -> f32;
    /// The guest's copy of the last argv it sent.
    fn guest_argv(&mut self) -> Vec<u8>;
    fn memory_len(&self) -> u64;
    fn error(&self) -> &HostError;
    fn argv_error_kind(&self) -> (ErrorKind, usize, usize);
}

impl<L: Launcher> Checked<L> for dyn Guest<L> + '_ {
    fn run(&mut self, n: i32) -> i32 {
        self.run_vector_add(n).unwrap_or_else(|e| panic!("{e}"))
    }

    fn send(&mut self, export: &str) -> i32 {
        self.call0(export).unwrap_or_else(|e| panic!("{e}"))
    }

    fn offset(&mut self, export: &str) -> u32 {
        u32::try_from(self.send(export)).unwrap()
    }

    fn call_i32(&mut self, export: &str, arg: i32) -> i32 {
        self.call1(export, arg).unwrap_or_else(|e| panic!("{e}"))
    }

    fn out_at(&mut self, i: i32) -> f32 {
        self.out(i).unwrap_or_else(|e| panic!("{e}"))
    }

    fn guest_argv(&mut self) -> Vec<u8> {
        self.last_argv().unwrap_or_else(|e| panic!("{e}"))
    }

    fn memory_len(&self) -> u64 {
        self.memory().len() as u64
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
}

fn ptr(guest_offset: u32, len: u32) -> LoweredArgSnapshot {
    LoweredArgSnapshot::Ptr(GuestRange { guest_offset, len })
}

/// The exports the demo interface needs, with their signatures as [`interface`] spells them.
const INTERFACE: [(&str, &str); 16] = {
    const I32_TO_I32: &str = "func(i32) -> (i32)";
    const TO_I32: &str = "func() -> (i32)";
    [
        (MEMORY_EXPORT, "memory"),
        (exports::RUN_VECTOR_ADD, I32_TO_I32),
        (exports::FIRST_MISMATCH, I32_TO_I32),
        (exports::OUT_AT, "func(i32) -> (f32)"),
        (exports::A_PTR, TO_I32),
        (exports::B_PTR, TO_I32),
        (exports::OUT_PTR, TO_I32),
        (exports::CAPACITY, TO_I32),
        (exports::LAST_ARGV_PTR, TO_I32),
        (exports::LAST_ARGV_LEN, TO_I32),
        (exports::LAUNCH_RAW, LAUNCH_SIGNATURE),
        (exports::SEND_PTR_PAST_MEMORY, TO_I32),
        (exports::SEND_UNKNOWN_TAG, TO_I32),
        (exports::SEND_TOO_MANY_ARGS, TO_I32),
        (exports::SEND_ARGS_REGION_PAST_MEMORY, TO_I32),
        (exports::SEND_BAD_DIMENSIONS, TO_I32),
    ]
};

const LAUNCH_SIGNATURE: &str = "func(i64, i32, i32, i32, i32, i32, i32, i32, i32, i32) -> (i32)";

/// A module's imports `(module, name, signature)` and exports `(name, signature)` as the
/// runtime reads them, signatures spelled `memory` or `func(i64, i32) -> (i32)`.
type Interface = (Vec<(String, String, String)>, Vec<(String, String)>);

fn signature(params: Vec<String>, results: Vec<String>) -> String {
    format!("func({}) -> ({})", params.join(", "), results.join(", "))
}

fn interface(runtime: Runtime, wasm: &[u8]) -> Interface {
    match runtime {
        #[cfg(not(feature = "wasmtime"))]
        Runtime::Wasmtime => unreachable!("not in Runtime::ALL without the wasmtime feature"),
        #[cfg(feature = "wasmtime")]
        Runtime::Wasmtime => {
            use kernel_args::wasmtime_host::wasmtime::{Engine, ExternType, Module};
            let spell = |ty: ExternType| match ty {
                ExternType::Func(f) => signature(
                    f.params().map(|t| t.to_string()).collect(),
                    f.results().map(|t| t.to_string()).collect(),
                ),
                ExternType::Memory(_) => "memory".to_owned(),
                other => format!("{other:?}"),
            };
            let module = Module::new(&Engine::default(), wasm).unwrap();
            (
                module
                    .imports()
                    .map(|i| (i.module().to_owned(), i.name().to_owned(), spell(i.ty())))
                    .collect(),
                module.exports().map(|e| (e.name().to_owned(), spell(e.ty()))).collect(),
            )
        }
        Runtime::Wasmi => {
            use kernel_args::wasmi_host::wasmi::{Engine, ExternType, Module, ValType};
            let name = |t: &ValType| format!("{t:?}").to_lowercase();
            let spell = |ty: &ExternType| match ty {
                ExternType::Func(f) => {
                    signature(f.params().iter().map(name).collect(), f.results().iter().map(name).collect())
                }
                ExternType::Memory(_) => "memory".to_owned(),
                other => format!("{other:?}"),
            };
            let module = Module::new(&Engine::default(), wasm).unwrap();
            (
                module
                    .imports()
                    .map(|i| (i.module().to_owned(), i.name().to_owned(), spell(i.ty())))
                    .collect(),
                module.exports().map(|e| (e.name().to_owned(), spell(e.ty()))).collect(),
            )
        }
    }
}

#[test]
fn the_guest_imports_only_wasi_cuda_launch_and_exports_the_demo_interface() {
    for case in cases() {
        let (imports, exports) = interface(case.runtime, &case.wasm);
        assert_eq!(
            imports,
            [(IMPORT_MODULE.to_owned(), LAUNCH_IMPORT.to_owned(), LAUNCH_SIGNATURE.to_owned())],
            "{}",
            case.label
        );
        for (name, expected) in INTERFACE {
            let (_, found) = exports
                .iter()
                .find(|(export, _)| export == name)
                .unwrap_or_else(|| panic!("{} does not export {name}", case.label));
            assert_eq!(found, expected, "{}: {name}", case.label);
        }
    }
}

/// The C guest sends the same launch as the Rust guest on each runtime: the same shape and
/// records, windows of the same lengths, argvs of the same length, the same refusals.
#[test]
fn the_c_and_rust_guests_send_the_same_launch() {
    for c_case in cases().iter().filter(|case| case.source == Source::C) {
        let rust_case = cases()
            .iter()
            .find(|case| case.source == Source::Rust && case.runtime == c_case.runtime)
            .unwrap();
        eprintln!("case: {} against {}", c_case.label, rust_case.label);
        let mut c = instantiate(c_case, dry_run_host());
        let mut r = instantiate(rust_case, dry_run_host());
        let (c, r) = (&mut *c, &mut *r);
        for n in [0, 1, 255, 256, 257, 1000, CAPACITY as i32] {
            assert_eq!(c.run(n), r.run(n));
            let (cs, rs) =
                (c.host().last_launch().unwrap().snapshot(), r.host().last_launch().unwrap().snapshot());
            assert_eq!((cs.kernel_id(), cs.shape()), (rs.kernel_id(), rs.shape()), "n = {n}");
            let lens = |args: &LaunchArgs| -> Vec<LoweredArgSnapshot> {
                args.iter()
                    .map(|a| match a {
                        LoweredArgSnapshot::Ptr(w) => ptr(0, w.len),
                        other => other,
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
            assert_eq!(c.send(export), r.send(export), "{export}");
            assert_eq!(c.error().code(), r.error().code(), "{export}");
        }
    }
}

/// One guest on every runtime: the same answers, the same records (offsets included: the same
/// module lays out the same memory), the same argv bytes, the same messages.
#[test]
fn every_runtime_lowers_the_same_launch() {
    for source in [Source::Rust, Source::C] {
        let runs: Vec<&Case> = cases().iter().filter(|case| case.source == source).collect();
        let Some((first, others)) = runs.split_first() else { continue };
        let mut reference = instantiate(first, dry_run_host());
        for other in others {
            eprintln!("case: {} against {}", other.label, first.label);
            let mut guest = instantiate(other, dry_run_host());
            let (a, b) = (&mut *reference, &mut *guest);
            assert_eq!(a.memory_len(), b.memory_len());
            for n in [0, 1, 257, 1000, CAPACITY as i32, CAPACITY as i32 + 1, -1] {
                assert_eq!(a.run(n), b.run(n), "n = {n}");
                assert_eq!(a.host().last_launch(), b.host().last_launch(), "n = {n}");
                assert_eq!(a.host().last_error_message(), b.host().last_error_message(), "n = {n}");
                assert_eq!(a.guest_argv(), b.guest_argv(), "n = {n}");
            }
            for export in [
                exports::SEND_PTR_PAST_MEMORY,
                exports::SEND_UNKNOWN_TAG,
                exports::SEND_TOO_MANY_ARGS,
                exports::SEND_ARGS_REGION_PAST_MEMORY,
                exports::SEND_BAD_DIMENSIONS,
            ] {
                assert_eq!(a.send(export), b.send(export), "{export}");
                assert_eq!(a.host().last_error(), b.host().last_error(), "{export}");
                assert_eq!(a.host().last_error_message(), b.host().last_error_message(), "{export}");
                assert_eq!(a.guest_argv(), b.guest_argv(), "{export}");
            }
        }
    }
}

#[test]
fn the_guests_argv_arrives_intact() {
    each_dry_run(|_, g| {
        let n = 1000;
        assert_eq!(g.run(n), AbiError::NotAvailable.code());

        let (a, b, out) = (g.offset(exports::A_PTR), g.offset(exports::B_PTR), g.offset(exports::OUT_PTR));
        let bytes = 4 * n as u32;
        let expected = [ptr(a, bytes), ptr(b, bytes), ptr(out, bytes), LoweredArgSnapshot::U32(n as u32)];

        let launch = g.host().last_launch().expect("the call reached the launcher");
        let snapshot = launch.snapshot();
        assert_eq!(snapshot.kernel_id(), VECTOR_ADD_KERNEL_ID);
        assert_eq!(
            snapshot.shape(),
            LaunchShape { grid: [4, 1, 1], block: [THREADS_PER_BLOCK, 1, 1], shared_mem_bytes: 0 }
        );
        assert_eq!(*snapshot.args(), expected);
        assert_eq!(launch.result(), Err(AbiError::NotAvailable));
        let recorded: Vec<LoweredArgSnapshot> = snapshot.args().iter().collect();

        // What the guest encoded, read from its memory: same records, same bytes.
        let guest_bytes = g.guest_argv();
        assert_eq!(guest_bytes.len(), 3 * 9 + 5);
        let memory_len = g.memory_len();
        let parsed: ParsedArgv<'_> = parse_argv(&guest_bytes, &GuestMemory::length_only(memory_len)).unwrap();
        assert_eq!(parsed.iter().map(|a| a.snapshot()).collect::<Vec<_>>(), recorded);
        let mut encoded = vec![0u8; guest_bytes.len()];
        assert_eq!(encode_argv(&recorded, &mut encoded), Ok(guest_bytes.len()));
        assert_eq!(encoded, guest_bytes);

        // The dry run saw the same request, and says why nothing ran.
        let dry = g.host().launcher().last().unwrap();
        assert_eq!(*dry.args(), recorded[..]);
        assert_eq!(g.host().launcher().launches(), 1);
        assert_eq!(g.error().detail(), &Detail::NoDevice);
        assert!(g.host().last_error_message().unwrap().contains("no CUDA device"));

        // Nothing ran, so `out` still holds the guest's sentinel.
        assert_eq!(g.call_i32(exports::FIRST_MISMATCH, n), 0);
        assert!(g.out_at(0).is_nan());
    });
}

#[test]
fn a_launcher_that_succeeds_gives_the_guest_zero() {
    struct Accepts(KernelTable, Vec<Vec<LoweredArgSnapshot>>);
    impl Launcher for Accepts {
        fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
            self.0.get(kernel_id)
        }
        fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
            self.1.push(request.args.iter().collect());
            Ok(LaunchOutcome { pointer_mode: PointerMode::Staged, signature: SignatureCheck::Skipped })
        }
    }
    each_case(
        || LaunchHost::new(Accepts(demo_kernels(), Vec::new())),
        |_, g| {
            assert_eq!(g.run(16), 0);
            assert_eq!(g.run(0), 0, "an empty vector is still one block");
            assert!(g.host().last_error().is_none());
            let launch = g.host().last_launch().unwrap();
            assert_eq!(launch.result().unwrap().pointer_mode, PointerMode::Staged);
            assert_eq!(launch.snapshot().shape().grid, [1, 1, 1]);
            let seen = &g.host().launcher().1;
            assert_eq!(seen.len(), 2);
            assert_eq!(seen[0][3], LoweredArgSnapshot::U32(16));
            assert_eq!(
                seen[1][..3].iter().filter(|a| matches!(a, LoweredArgSnapshot::Ptr(r) if r.len == 0)).count(),
                3
            );
        },
    );
}

#[test]
fn a_pointer_past_memory_is_an_invalid_pointer() {
    each_dry_run(|_, g| {
        assert_eq!(g.send(exports::SEND_PTR_PAST_MEMORY), AbiError::InvalidPointer.code());
        let memory_len = g.memory_len();
        let (kind, index, offset) = g.argv_error_kind();
        assert_eq!(
            kind,
            ErrorKind::WindowOutOfBounds { guest_offset: memory_len as u32, len: 64, memory_len }
        );
        assert_eq!((index, offset), (2, 18));
        assert!(g.host().last_launch().is_none());
        assert_eq!(g.host().launcher().launches(), 0);
    });
}

#[test]
fn an_unknown_tag_is_invalid_args() {
    each_dry_run(|_, g| {
        assert_eq!(g.send(exports::SEND_UNKNOWN_TAG), AbiError::InvalidArgs.code());
        assert_eq!(g.argv_error_kind(), (ErrorKind::UnknownTag { tag: 0xff }, 4, 32));
        assert_eq!(
            g.host().last_error_message().unwrap(),
            "InvalidArgs -9: unknown tag 0xff at byte 32 (record 4)"
        );
    });
}

#[test]
fn one_hundred_twenty_nine_args_are_unsupported() {
    each_dry_run(|_, g| {
        assert_eq!(g.send(exports::SEND_TOO_MANY_ARGS), AbiError::KernelArgsUnsupported.code());
        assert_eq!(g.argv_error_kind(), (ErrorKind::TooManyRecords { max: 128 }, 128, 640));
        assert_eq!(g.guest_argv().len(), 129 * 5);
    });
}

#[test]
fn an_args_region_past_memory_is_an_invalid_pointer() {
    each_dry_run(|_, g| {
        assert_eq!(g.send(exports::SEND_ARGS_REGION_PAST_MEMORY), AbiError::InvalidPointer.code());
        let memory_len = g.memory_len();
        let args_ptr = (memory_len - 8) as i32;
        assert_eq!(
            g.error().detail(),
            &Detail::Region(RegionError::PastMemory { args_ptr, args_len: 32, memory_len })
        );
    });
}

#[test]
fn bad_dimensions_are_invalid_dimensions() {
    each_dry_run(|_, g| {
        assert_eq!(g.send(exports::SEND_BAD_DIMENSIONS), AbiError::InvalidDimensions.code());
        let Detail::Shape(e) = g.error().detail() else { panic!("shape detail") };
        assert_eq!((e.dimension, e.value, e.bound), (Dimension::BlockX, 2048, Bound::AtMost(1024)));
    });
}

#[test]
fn a_disabled_capability_is_not_available_and_records_nothing() {
    each_case(
        || {
            let mut host = dry_run_host();
            host.set_enabled(false);
            host
        },
        |_, g| {
            assert_eq!(g.run(64), AbiError::NotAvailable.code());
            assert!(g.host().last_launch().is_none());
            assert_eq!(g.host().launcher().launches(), 0);
            assert!(g.host().launcher().last().is_none());
            assert_eq!(g.error().detail(), &Detail::CapabilityDisabled);
        },
    );
}

#[test]
fn a_failed_launch_after_a_good_one_leaves_no_stale_args() {
    each_dry_run(|_, g| {
        assert_eq!(g.run(64), -1);
        assert_eq!(g.host().last_launch().unwrap().snapshot().args().len(), 4);

        for (export, code) in [
            (exports::SEND_UNKNOWN_TAG, -9),
            (exports::SEND_BAD_DIMENSIONS, -8),
            (exports::SEND_ARGS_REGION_PAST_MEMORY, -2),
            (exports::SEND_PTR_PAST_MEMORY, -2),
            (exports::SEND_TOO_MANY_ARGS, -10),
        ] {
            assert_eq!(g.run(64), -1);
            assert!(g.host().last_launch().is_some());
            assert_eq!(g.send(export), code, "{export}");
            assert!(g.host().last_launch().is_none(), "{export} left the previous launch's args readable");
            assert_eq!(g.error().code().code(), code);
        }
        // And a good launch afterwards records afresh.
        assert_eq!(g.run(8), -1);
        assert_eq!(
            g.host().last_launch().unwrap().snapshot().args().get(3),
            Some(LoweredArgSnapshot::U32(8))
        );
    });
}

#[test]
fn raw_calls_get_codes_never_traps() {
    each_dry_run(|_, g| {
        let memory_len = g.memory_len() as i32;
        let call = LaunchCall::new(1, [1, 1, 1], [32, 1, 1]);
        let raw = |args_ptr, args_len| LaunchCall { args_ptr, args_len, ..call };
        let cases: [(LaunchCall, i32); 13] = [
            (raw(-1, 4), -2),
            (raw(0, -1), -2),
            (raw(i32::MIN, i32::MIN), -2),
            (raw(i32::MAX, 1), -2),
            (raw(memory_len, 1), -2),
            (raw(memory_len + 1, 0), -2),
            // No arguments: nothing is read, and vector_add's declaration takes four.
            (raw(0, 0), -9),
            (raw(memory_len, 0), -9),
            (LaunchCall { grid: [0, 1, 1], ..call }, -8),
            (LaunchCall { shared_mem: -1, ..call }, -8),
            (LaunchCall { shared_mem: 227 * 1024 + 1, ..call }, -8),
            // Every dimension in range, but past the default threads quota (2^32).
            (LaunchCall::new(i64::MIN, [1, 65_535, 65_535], [1024, 1, 1]), -6),
            (
                LaunchCall {
                    shared_mem: 227 * 1024,
                    ..LaunchCall::new(i64::MIN, [1, 65_535, 64], [1024, 1, 1])
                },
                -3,
            ),
        ];
        for (params, code) in cases {
            assert_eq!(g.launch_raw(&params).unwrap_or_else(|e| panic!("{e}")), code, "{params:?}");
        }
        // The largest shape within the quota, for an unknown kernel id: InvalidKernel, and nothing
        // recorded.
        assert_eq!(g.error().detail(), &Detail::UnknownKernel { kernel_id: i64::MIN });
        assert!(g.host().last_launch().is_none());
        assert_eq!(g.host().launcher().launches(), 0);
    });
}

#[test]
fn guest_accessors_and_codes() {
    each_dry_run(|_, g| {
        assert_eq!(g.send(exports::CAPACITY), CAPACITY as i32);
        let over = CAPACITY as i32 + 1;
        assert_eq!(g.run(over), ERR_BAD_COUNT);
        assert_eq!(g.run(-1), ERR_BAD_COUNT);
        assert!(g.host().last_launch().is_none(), "the guest refused before calling the host");
        assert_eq!(g.run(CAPACITY as i32), -1);
        let shape = g.host().last_launch().unwrap().snapshot().shape();
        assert_eq!(shape.grid[0], CAPACITY as u32 / THREADS_PER_BLOCK);
        assert!(g.out_at(over).is_nan());
        assert!(g.out_at(CAPACITY as i32).is_nan());
        assert!(g.out_at(-1).is_nan());
        assert_eq!(g.call_i32(exports::FIRST_MISMATCH, over), ERR_BAD_COUNT);
        // The runner's own reading of the same answers.
        assert!(g.first_mismatch(over).is_err());
        assert_eq!(g.first_mismatch(0).unwrap(), None);
        assert_eq!(g.first_mismatch(1).unwrap(), Some(0), "nothing ran");
    });
}

#[test]
fn the_runner_says_which_runtime_and_reports_traps_as_errors() {
    each_dry_run(|case, g| {
        assert_eq!(g.runtime(), case.runtime);
        assert_eq!(case.module.runtime(), case.runtime);
        let e = g.call0("no_such_export").unwrap_err();
        assert_eq!(e.runtime(), case.runtime);
        assert!(e.to_string().starts_with(&format!("{}: no_such_export: ", case.runtime)), "{e}");
        // An export of another signature is an error too, not a wrong answer.
        assert!(g.call0(exports::RUN_VECTOR_ADD).is_err());
        assert!(g.call1_f32(exports::RUN_VECTOR_ADD, 1).is_err());
    });
}

#[test]
fn a_module_that_is_not_wasm_is_an_error() {
    for &runtime in Runtime::ALL {
        let e = GuestModule::new(runtime, b"\0asm but not really").unwrap_err();
        assert_eq!(e.runtime(), runtime);
        assert!(e.message().starts_with("compiling the guest: "), "{e}");
    }
}

/// The four ways through a kernel's declaration, each written into the guest's own memory and
/// sent with `launch_raw` as a malicious guest would, on every runtime and guest: refused with
/// `InvalidArgs` before any launcher runs, naming the record and the parameter.
#[test]
fn a_guest_reaches_only_what_the_kernel_declares() {
    each_dry_run(|case, g| {
        let a = g.offset(exports::A_PTR);
        let b = g.offset(exports::B_PTR);
        let out = g.offset(exports::OUT_PTR);
        let memory_len = u32::try_from(g.memory_len()).unwrap();
        let cases: [(Vec<LoweredArgSnapshot>, usize, &str); 5] = [
            // A raw address where vector_add takes a pointer.
            (
                vec![
                    LoweredArgSnapshot::U64(0x7f00_0000_1000),
                    ptr(b, 64),
                    ptr(out, 64),
                    LoweredArgSnapshot::U32(16),
                ],
                0,
                "a",
            ),
            // A count past the windows: n = 2^20 with 64-byte windows.
            (vec![ptr(a, 64), ptr(b, 64), ptr(out, 64), LoweredArgSnapshot::U32(1 << 20)], 0, "a"),
            // A window misaligned for f32.
            (vec![ptr(a, 64), ptr(b + 2, 64), ptr(out, 64), LoweredArgSnapshot::U32(16)], 1, "b"),
            // A pointer where vector_add takes n.
            (vec![ptr(a, 64), ptr(b, 64), ptr(out, 64), ptr(0, 4)], 3, "n"),
            // Three arguments for four parameters.
            (vec![ptr(a, 64), ptr(b, 64), ptr(out, 64)], 3, ""),
        ];
        for (args, record, param) in cases {
            let mut argv = vec![0u8; 64];
            let n = encode_argv(&args, &mut argv).unwrap();
            argv.truncate(n);
            let at = memory_len as usize - argv.len();
            g.memory_mut()[at..].copy_from_slice(&argv);
            let call = LaunchCall {
                args_ptr: at as i32,
                args_len: argv.len() as i32,
                ..LaunchCall::new(VECTOR_ADD_KERNEL_ID, [1, 1, 1], [16, 1, 1])
            };
            let code = g.launch_raw(&call).unwrap_or_else(|e| panic!("{}: {e}", case.label));
            assert_eq!(code, AbiError::InvalidArgs.code(), "{}: {args:?}", case.label);
            let Detail::Declaration(m) = g.error().detail() else {
                panic!("{}: a declaration error, got {:?}", case.label, g.error())
            };
            assert_eq!((m.record, m.param.as_str()), (record, param), "{}: {m}", case.label);
            assert!(g.host().last_launch().is_none(), "{}: nothing recorded", case.label);
            assert_eq!(g.host().launcher().launches(), 0, "{}: no launcher ran", case.label);
        }
        // The same windows with n = 16 launch.
        assert_eq!(g.run(16), -1);
        assert_eq!(g.host().launcher().launches(), 1);
    });
}
