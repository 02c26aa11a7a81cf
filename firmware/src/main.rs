//! The firmware `cargo run --release` boots on QEMU's `mps2-an386` (Cortex-M4): it checks
//! every conformance vector on the target, runs launches through the `no_std` host pipeline
//! (`kernel_args::LaunchHost`) counting their heap allocations (none) and measuring their
//! stack, runs the bundled demo guest on wasmi with the forwarding launcher ([`link`]),
//! measures the stack high-water mark of a 128-argument parse, prints the results through
//! semihosting and exits QEMU with status 0 when everything held, 1 otherwise (a panic exits
//! with 1 too, through panic-semihosting).
//!
//! Each check is one step of [`main`] that prints its own result lines and answers whether it
//! held; a new check (a guest run, the host pipeline) is one more step there. The results are
//! also logged through defmt ([`defmt_log`]: into a host file that CI decodes with
//! `defmt-print`), with the crates' own `defmt::Format` for their values.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

mod defmt_log;
#[cfg(feature = "wasmi")]
mod guest;

use cortex_m_rt::entry;
use cortex_m_semihosting::hprintln;
use kernel_args::{Declaration, DryRunLauncher, LaunchCall, LaunchHost};
use kernel_args_core::{GuestMemory, MAX_KERNEL_ARGS, ParsedArgv, parse_argv, parse_argv_into};
use kernel_args_firmware::link::ForwardingLauncher;
use kernel_args_firmware::{argvs, exit, heap, link, stack, vectors};
use panic_semihosting as _;

#[entry]
fn main() -> ! {
    heap::init();
    let mut ok = true;

    // The conformance vectors.
    ok &= check_vectors();

    // Stack high-water marks.
    ok &= check_stack_method();
    ok &= stack_parse_128();

    // The host pipeline without std: no allocation, its stack.
    ok &= check_pipeline();

    // The demo guest on wasmi, through the pipeline, forwarded over the link.
    #[cfg(feature = "wasmi")]
    {
        ok &= check_guest();
    }

    // The crates' values through defmt.
    ok &= log_with_defmt();

    // More checks go here, each one `ok &= step();`.

    hprintln!("firmware: {}", if ok { "ok" } else { "FAILED" });
    if ok {
        defmt::info!("firmware: ok");
    } else {
        defmt::error!("firmware: FAILED");
    }
    exit(ok)
}

/// Every conformance vector; one line per failure, then `vectors: N passed, M failed`.
fn check_vectors() -> bool {
    let summary = vectors::run();
    hprintln!("vectors: {} passed, {} failed", summary.passed, summary.failed);
    defmt::info!("vectors: {=usize} passed, {=usize} failed", summary.passed, summary.failed);
    summary.failed == 0 && summary.passed == vectors::VECTORS.len()
}

/// The stack measurement itself, on two operations whose use is known: nothing (at most the
/// unpainted red zone), and a 1 KiB local array (at least 1 KiB, and in an optimised build
/// less than 128 bytes more; an unoptimised build copies the array and keeps every
/// temporary, so there only the lower bound is checked).
fn check_stack_method() -> bool {
    let ((), nothing) = stack::measure(|| ());
    let (sum, kib) = stack::measure(|| {
        let buf = core::hint::black_box([0x5au8; 1024]);
        buf.iter().map(|&b| u32::from(b)).sum::<u32>()
    });
    let optimised = !cfg!(debug_assertions);
    let ok =
        sum == 0x5a * 1024 && kib >= 1024 && (!optimised || (nothing <= stack::RED_ZONE && kib < 1024 + 128));
    hprintln!(
        "{}stack: method check: empty operation {} bytes (red zone {}), 1 KiB array {} bytes",
        if ok { "" } else { "FAIL " },
        nothing,
        stack::RED_ZONE,
        kib
    );
    ok
}

/// The stack a 128-argument parse needs, its `ParsedArgv` (on the stack) included.
fn stack_parse_128() -> bool {
    let mut buf = [0u8; core::mem::size_of::<argvs::ArgvBuf>()];
    let Ok(argv) = argvs::mixed(MAX_KERNEL_ARGS, &mut buf) else {
        hprintln!("FAIL stack: could not build the 128-argument argv");
        return false;
    };
    let memory = GuestMemory::length_only(argvs::MEMORY_LEN);
    let (parsed, measured) = stack::measure_detailed(|| {
        let args: ParsedArgv = match parse_argv(core::hint::black_box(argv), &memory) {
            Ok(args) => args,
            Err(_) => return None,
        };
        Some(core::hint::black_box(&args).len())
    });
    hprintln!("stack: parse 128 args: {} bytes", measured.bytes);
    hprintln!("stack: of which ParsedArgv<128>: {} bytes", core::mem::size_of::<ParsedArgv>());
    let ok = parsed == Some(MAX_KERNEL_ARGS) && !measured.saturated;
    if !ok {
        hprintln!("FAIL stack: parse gave {:?}, saturated: {}", parsed, measured.saturated);
    }

    // The same parse into a sink the caller owns (outside the measured frames): the parser's
    // own frames, without the by-value ParsedArgv and its moves.
    let mut sink: ParsedArgv = ParsedArgv::new();
    let (into, measured_into) = stack::measure_detailed(|| {
        parse_argv_into(core::hint::black_box(argv), &memory, &mut sink).map(|()| sink.len())
    });
    hprintln!("stack: parse_argv_into 128 args, sink outside: {} bytes", measured_into.bytes);
    let ok_into = into == Ok(MAX_KERNEL_ARGS) && !measured_into.saturated;
    if !ok_into {
        hprintln!("FAIL stack: parse_argv_into gave {:?}, saturated: {}", into, measured_into.saturated);
    }
    ok && ok_into
}

/// Launch calls through the `no_std` host pipeline on a 1 MiB guest memory holding the mixed
/// argv of 128 arguments: each allocates nothing (counted by the heap, as the host crates'
/// allocation tests count), records all 128 arguments, and its stack is measured.
fn check_pipeline() -> bool {
    let mut memory = alloc::vec![0u8; argvs::MEMORY_LEN as usize];
    let mut buf = [0u8; core::mem::size_of::<argvs::ArgvBuf>()];
    let Ok(argv) = argvs::mixed(MAX_KERNEL_ARGS, &mut buf) else {
        hprintln!("FAIL pipeline: could not build the 128-argument argv");
        return false;
    };
    let Some(dst) = memory.get_mut(..argv.len()) else { return false };
    dst.copy_from_slice(argv);
    let args_len = i32::try_from(argv.len()).unwrap_or(i32::MAX);
    let call = LaunchCall { args_len, ..LaunchCall::new(7, [2, 1, 1], [128, 1, 1]) };
    let mut ok = true;
    // Kernel 7, declared for this argv: every launch is checked against the declaration here,
    // on the target.
    let Some(declaration) = argvs::declaration(MAX_KERNEL_ARGS).and_then(|d| Declaration::parse(&d).ok())
    else {
        hprintln!("FAIL pipeline: the 128-parameter declaration does not parse");
        return false;
    };

    // The forwarding launcher (quiet: the measurement is of the pipeline, not of printing).
    let mut forwarding = ForwardingLauncher::quiet();
    if forwarding.kernels_mut().declare(7, declaration.clone()).is_err() {
        return false;
    }
    let mut host = LaunchHost::new(forwarding);
    let ((code, allocations), measured) =
        stack::measure_detailed(|| heap::count(|| host.call(Some(&mut memory), &call)));
    let recorded = host.last_launch().map_or(0, |r| r.snapshot().args().len());
    let frame_ok =
        host.launcher().last_frame().and_then(|f| link::decode(f, argvs::MEMORY_LEN).ok()).is_some_and(
            |received| host.last_launch().is_some_and(|r| *received.args.as_slice() == *r.snapshot().args()),
        );
    let good =
        code == -1 && allocations == 0 && recorded == MAX_KERNEL_ARGS && frame_ok && !measured.saturated;
    hprintln!(
        "{}pipeline: launch call, 128 args, forwarding launcher: answered {}, {} allocations, {} args recorded, frame {}",
        if good { "" } else { "FAIL " },
        code,
        allocations,
        recorded,
        if frame_ok { "decodes to the record" } else { "WRONG" }
    );
    hprintln!("stack: one launch call, 128 args, forwarding launcher: {} bytes", measured.bytes);
    ok &= good;

    // The dry run: the pipeline and a launcher that only snapshots.
    let mut dry_run = DryRunLauncher::new();
    if dry_run.kernels_mut().declare(7, declaration).is_err() {
        return false;
    }
    let mut dry = LaunchHost::new(dry_run);
    let ((code, allocations), measured) =
        stack::measure_detailed(|| heap::count(|| dry.call(Some(&mut memory), &call)));
    let good = code == -1
        && allocations == 0
        && dry.launcher().last().is_some_and(|s| s.args().len() == MAX_KERNEL_ARGS)
        && !measured.saturated;
    hprintln!(
        "{}pipeline: launch call, 128 args, dry run: answered {}, {} allocations",
        if good { "" } else { "FAIL " },
        code,
        allocations
    );
    hprintln!("stack: one launch call, 128 args, dry run: {} bytes", measured.bytes);
    ok &= good;

    // A refused call (an unknown tag in record 0) allocates nothing either, and says where.
    if let Some(first) = memory.first_mut() {
        *first = 0xff;
    }
    let (code, allocations) = heap::count(|| dry.call(Some(&mut memory), &call));
    let good = code == -9 && allocations == 0 && dry.last_launch().is_none();
    hprintln!(
        "{}pipeline: refused call: answered {}, {} allocations, error: {}",
        if good { "" } else { "FAIL " },
        code,
        allocations,
        dry.last_error().map(|e| e as &dyn core::fmt::Display).unwrap_or(&"none")
    );
    ok && good
}

/// The bundled demo guest on wasmi ([`guest`]).
#[cfg(feature = "wasmi")]
fn check_guest() -> bool {
    let heap_before = heap::used();
    let (guest, allocations) = heap::count(guest::Guest::new);
    let mut guest = match guest {
        Ok(guest) => guest,
        Err(e) => {
            hprintln!("FAIL guest: wasmi could not instantiate the demo guest: {}", e);
            return false;
        }
    };
    hprintln!(
        "guest: demo guest ({} bytes of wasm) instantiated on wasmi: {} allocations, {} bytes of heap, {} bytes of linear memory",
        kernel_args::guest::GUEST_WASM.len(),
        allocations,
        heap::used() - heap_before,
        guest.memory_len()
    );
    let (result, allocations) = heap::count(|| guest::run(&mut guest));
    match result {
        Ok(passed) => {
            hprintln!(
                "guest: {} checks passed on wasmi ({} allocations during the guest calls)",
                passed,
                allocations
            );
            // Where those allocations are: wasmi's, which compiles each function on its first
            // call. Once both are compiled, an export that calls no host function
            // (`capacity`) and one that launches through `wasi_cuda_launch` allocate the same:
            // the binding and the pipeline add none.
            let _ = guest.call::<(), i32>(kernel_args::guest::exports::CAPACITY, ());
            let (_, plain) = heap::count(|| guest.call::<(), i32>(kernel_args::guest::exports::CAPACITY, ()));
            let (launched, launch) =
                heap::count(|| guest.call::<i32, i32>(kernel_args::guest::exports::RUN_VECTOR_ADD, 1000));
            let same = launched.ok() == Some(-1) && plain == launch;
            hprintln!(
                "{}guest: allocations per export call on wasmi: {} without a launch, {} with one",
                if same { "" } else { "FAIL " },
                plain,
                launch
            );
            same
        }
        Err(what) => {
            hprintln!("FAIL guest: {}", what);
            false
        }
    }
}

/// Logs, through defmt, the values a `no_std` host logs with the crates' `defmt::Format`: an
/// accepted argv, a refused one's error, a launch's record through the pipeline, a refused
/// call's error and a declaration. The host decodes them (.ci/steps/27-firmware.sh); here it
/// checks that the values are the expected ones.
fn log_with_defmt() -> bool {
    use kernel_args::AbiError;
    use kernel_args_core::{ArgvBuilder, LoweredArg};

    let mut memory = alloc::vec![0u8; 256];
    let mut buf = [0u8; 64];
    let mut builder = ArgvBuilder::new(&mut buf);
    let built =
        builder.ptr(0, 16).and_then(|b| b.ptr(16, 16)).and_then(|b| b.ptr(32, 16)).and_then(|b| b.u32(4));
    if built.is_err() {
        return false;
    }
    let argv = builder.finish();
    let guest = GuestMemory::length_only(256);
    let parsed: Result<ParsedArgv, _> = parse_argv(argv, &guest);
    let Ok(args) = parsed else { return false };
    defmt::info!("defmt: parsed {=usize} arguments: {}", args.len(), args.as_slice());
    let accepted = args.get(3) == Some(&LoweredArg::U32(4));

    let refused = parse_argv::<8>(&[0x05, 1, 0, 0, 0, 0x42], &guest);
    if let Err(error) = &refused {
        defmt::warn!("defmt: refused: {}", error);
    }
    let refused_ok = refused.is_err_and(|e| e.index() == 1 && e.offset() == 5);

    let Some(dst) = memory.get_mut(64..64 + argv.len()) else { return false };
    dst.copy_from_slice(argv);
    let Ok(declaration) =
        Declaration::parse("vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)")
    else {
        return false;
    };
    defmt::info!("defmt: declared {}", declaration);
    let mut dry_run = DryRunLauncher::new();
    if dry_run.kernels_mut().declare(1, declaration).is_err() {
        return false;
    }
    let mut host = LaunchHost::new(dry_run);
    let args_len = i32::try_from(argv.len()).unwrap_or(i32::MAX);
    let call = LaunchCall { args_ptr: 64, args_len, ..LaunchCall::new(1, [1, 1, 1], [4, 1, 1]) };
    let code = host.call(Some(&mut memory), &call);
    if let Some(record) = host.last_launch() {
        defmt::info!("defmt: launch answered {=i32}, recorded {}", code, record.snapshot());
    }
    let launched = code == AbiError::NotAvailable.code() && host.last_launch().is_some();

    // n = 5 asks the kernel to touch 20 bytes of 16-byte windows.
    if let Some(n) = memory.get_mut(64 + 28..64 + 32) {
        n.copy_from_slice(&5u32.to_le_bytes());
    }
    let code = host.call(Some(&mut memory), &call);
    if let Some(error) = host.last_error() {
        defmt::warn!("defmt: call answered {=i32}: {}", code, error);
    }
    let declined = code == AbiError::InvalidArgs.code();

    let ok = accepted && refused_ok && launched && declined;
    hprintln!("{}defmt: values logged (decoded on the host by defmt-print)", if ok { "" } else { "FAIL " });
    ok
}
