//! `kargs_declaration_parse`, `kargs_declaration_check` and `kargs_host_call` called from Rust
//! as a C host calls them: every refusal the host call makes, in its order, with the Rust host's
//! message, and the callback reached exactly when every check passes, with the checked launch.
//! (Run under Miri by .ci/steps/50-miri.sh; the C side is capi/tests/host_call_test.c.)
#![allow(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
#![allow(clippy::arithmetic_side_effects)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use kargs::{
    KARGS_DECLARATION_SIZE, KargsArg, KargsCall, KargsDeclaration, KargsError, KargsErrorKind, KargsHost,
    KargsInFlight, KargsKernel, KargsLaunch, KargsQuota, kargs_declaration_check, kargs_declaration_parse,
    kargs_error_message, kargs_host_call,
};
use kernel_args_core::{ArgvBuilder, GuestRange, LoweredArgSnapshot};

const VECTOR_ADD: &str = "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)";

fn parse_declaration(text: &str) -> (i32, Box<KargsDeclaration>, KargsError, String) {
    let mut out = Box::new(KargsDeclaration { opaque: [0xa5a5_a5a5_a5a5_a5a5; 1280] });
    let mut err = KargsError { kind: 77, ..KargsError::default() };
    let mut msg = [0u8; 256];
    // SAFETY: every pointer is valid for its length; nothing overlaps.
    let rc = unsafe {
        kargs_declaration_parse(
            text.as_ptr().cast(),
            text.len(),
            &raw mut *out,
            &raw mut err,
            msg.as_mut_ptr().cast(),
            msg.len(),
        )
    };
    (rc, out, err, c_string(&msg))
}

fn c_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).expect("NUL-terminated");
    String::from_utf8(buf[..end].to_vec()).unwrap()
}

fn message(err: &KargsError) -> String {
    let mut buf = [0u8; 512];
    // SAFETY: err is a valid kargs_error, buf valid for 512 bytes.
    let n = unsafe { kargs_error_message(err, buf.as_mut_ptr().cast(), buf.len()) };
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

#[test]
fn declarations_parse_into_caller_storage() {
    assert_eq!(size_of::<KargsDeclaration>(), KARGS_DECLARATION_SIZE as usize);
    let (rc, _, err, msg) = parse_declaration(VECTOR_ADD);
    assert_eq!((rc, err, msg.as_str()), (0, KargsError::default(), ""));

    let (rc, decl, err, msg) = parse_declaration("k(a: &[f32; m], n: u32)");
    assert_eq!((rc, err.kind), (-7, KargsErrorKind::DeclarationSyntax as u32));
    assert_eq!((err.byte_offset, err.detail[0]), (12, 13));
    assert_eq!(msg, "column 13: `m` is not a parameter of this kernel");
    assert_eq!(message(&err), msg);
    assert_eq!(&err.text[..2], b"m\0");
    // The storage a failed parse leaves is refused, never read as a declaration.
    let (rc, err, _) = check(&decl, &[]);
    assert_eq!((rc, err.kind), (-7, KargsErrorKind::InvalidDeclaration as u32));

    // Not UTF-8, and NULL.
    let mut out = Box::new(KargsDeclaration { opaque: [0; 1280] });
    let mut err = KargsError::default();
    let bytes = b"k(a: \xff)";
    // SAFETY: valid pointers for their lengths; msg NULL with 0.
    let rc = unsafe {
        kargs_declaration_parse(
            bytes.as_ptr().cast(),
            bytes.len(),
            &raw mut *out,
            &raw mut err,
            null_mut(),
            0,
        )
    };
    assert_eq!((rc, err.kind, err.detail[0]), (-7, KargsErrorKind::DeclarationSyntax as u32, 6));
    assert_eq!(message(&err), kernel_args::Declaration::parse_bytes(bytes).unwrap_err().to_string());
    // SAFETY: NULL text with a length is refused before any read.
    let rc = unsafe { kargs_declaration_parse(null(), 3, &raw mut *out, &raw mut err, null_mut(), 0) };
    assert_eq!((rc, err.kind), (-7, KargsErrorKind::NullArgument as u32));
    assert_eq!(
        message(&err),
        "kargs_declaration_parse: text is NULL but text_len is 3 (NULL is allowed only with 0)"
    );
    // SAFETY: NULL out is refused.
    let rc = unsafe {
        kargs_declaration_parse(b"e()".as_ptr().cast(), 3, null_mut(), &raw mut err, null_mut(), 0)
    };
    assert_eq!((rc, err.kind), (-7, KargsErrorKind::NullArgument as u32));
}

/// Every problem a declaration can have: the struct's message is `Declaration::parse`'s error's
/// `Display`, and so is the parse's `msg`.
#[test]
fn a_syntax_errors_struct_gives_the_rust_message() {
    let long_name = "n".repeat(33);
    let deep = format!("k(a: &[u8; {}n{}], n: u32)", "(".repeat(40), ")".repeat(40));
    let many: String = (0..129).map(|i| format!("p{i}: u32")).collect::<Vec<_>>().join(", ");
    let ops = format!(
        "k({})",
        (0..20).map(|i| format!("a{i}: &[u8; n*n*n*n*n*n*n*n*n*n*n*n*n], ")).collect::<String>() + "n: u32"
    );
    let huge = format!("k(a: u32{})", " ".repeat(3000));
    let cases: Vec<String> = [
        "k(a: &[f32; n]",
        "k(a: u32, a: u32)",
        "k(a: &[f32; m])",
        "k(a: &[f32; n], n: f32)",
        "k(grid: u32)",
        "k(a: &[u8; 4294967296])",
        "k(a: &[u8; grid.w])",
        "k(a: \u{0}u32)",
        "k(a: &[u8; n], n: u32) x",
        "(",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("k({long_name}: u32)"), deep, format!("k({many})"), ops, huge])
    .collect();
    let mut problems = std::collections::BTreeSet::new();
    for text in &cases {
        let expected = kernel_args::Declaration::parse(text).expect_err(text);
        let (rc, _, err, msg) = parse_declaration(text);
        assert_eq!((rc, err.kind), (-7, KargsErrorKind::DeclarationSyntax as u32), "{text}");
        assert_eq!(msg, expected.to_string(), "{text}");
        assert_eq!(message(&err), msg, "{text}");
        problems.insert(err.detail[1]);
    }
    // Not UTF-8 (the parse of bytes).
    assert_eq!(problems.len(), 11, "{problems:?}");
}

/// The C API reads declarations by docs/declarations.md's grammar, as `Declaration::parse` does:
/// space, tab, newline and carriage return between tokens, `0x` hexadecimal; no form feed, no
/// `0X`.
#[test]
fn the_grammar_is_the_documents() {
    for ok in ["k(a:&[u8;0x10])", "k(\ta: &[u8; 16],\r\n n: u32)"] {
        assert_eq!(parse_declaration(ok).0, 0, "{ok:?}");
    }
    for (bad, column) in [("k(a: &[u8; 0X10])", 12), ("k(\x0ca: u32)", 3)] {
        let (rc, _, err, msg) = parse_declaration(bad);
        assert_eq!(
            (rc, err.kind, err.detail[0]),
            (-7, KargsErrorKind::DeclarationSyntax as u32, column),
            "{bad:?}: {msg}"
        );
    }
}

fn window(guest_offset: u32, len: u32) -> KargsArg {
    KargsArg { tag: 7, guest_offset, len, ..KargsArg::default() }
}

fn check(decl: &KargsDeclaration, args: &[KargsArg]) -> (i32, KargsError, String) {
    let (grid, block) = ([4u32, 1, 1], [64u32, 1, 1]);
    let mut err = KargsError { kind: 77, ..KargsError::default() };
    let mut msg = [0u8; 256];
    // SAFETY: valid pointers for their lengths.
    let rc = unsafe {
        kargs_declaration_check(
            decl,
            if args.is_empty() { null() } else { args.as_ptr() },
            args.len(),
            grid.as_ptr(),
            block.as_ptr(),
            &raw mut err,
            msg.as_mut_ptr().cast(),
            msg.len(),
        )
    };
    (rc, err, c_string(&msg))
}

#[test]
fn declarations_check_kargs_arg_arrays() {
    let (_, decl, _, _) = parse_declaration(VECTOR_ADD);
    let n = |v: u64| KargsArg { tag: 5, bits: v, byte_offset: 27, ..KargsArg::default() };
    let at = |mut a: KargsArg, byte_offset| {
        a.byte_offset = byte_offset;
        a
    };
    let ok = [window(0, 64), at(window(64, 64), 9), at(window(128, 64), 18), n(16)];
    assert_eq!(check(&decl, &ok), (0, KargsError::default(), String::new()));

    let short = [window(0, 64), at(window(64, 64), 9), at(window(128, 16), 18), n(16)];
    let (rc, err, msg) = check(&decl, &short);
    assert_eq!(
        (rc, err.kind, err.record_index, err.byte_offset),
        (-9, KargsErrorKind::DeclarationWindowTooShort as u32, 2, 18)
    );
    assert_eq!(err.detail, [2, 16, 64]);
    assert_eq!(msg, "record 2 at byte 18: out: 16-byte window, the kernel touches n * 4 = 64 bytes");
    // The struct alone gives the same message: it carries the name and the expression.
    assert_eq!(message(&err), msg);
    assert_eq!(&err.text[..10], b"out\0n * 4\0");
    assert!(err.text[10..].iter().all(|&b| b == 0));

    let raw = [KargsArg { tag: 6, bits: 0xdead_0000, ..KargsArg::default() }, ok[1], ok[2], ok[3]];
    let (rc, err, msg) = check(&decl, &raw);
    assert_eq!((rc, err.kind, err.detail), (-9, KargsErrorKind::DeclarationType as u32, [0, 7, 6]));
    assert_eq!(msg, "record 0 at byte 0: a: the kernel takes &[f32; n], the argv has u64");
    assert_eq!(message(&err), msg);

    let odd = [window(0, 64), at(window(66, 64), 9), ok[2], ok[3]];
    let (rc, err, msg) = check(&decl, &odd);
    assert_eq!((rc, err.kind, err.detail), (-9, KargsErrorKind::DeclarationMisaligned as u32, [1, 66, 4]));
    assert_eq!(msg, "record 1 at byte 9: b: window at guest offset 66 is not aligned for f32 (4 bytes)");
    assert_eq!(message(&err), msg);

    let (rc, err, msg) = check(&decl, &ok[..3]);
    assert_eq!(
        (rc, err.kind, err.record_index, err.byte_offset),
        (-9, KargsErrorKind::DeclarationCount as u32, 3, 27)
    );
    assert_eq!(msg, "the kernel takes 4 parameters, the argv has 3 arguments");
    assert_eq!(message(&err), msg);

    let signed = parse_declaration("k(a: &[u8; n], n: i32)").1;
    let neg =
        [window(0, 8), KargsArg { tag: 1, bits: (-1i64) as u64, byte_offset: 9, ..KargsArg::default() }];
    let (rc, err, msg) = check(&signed, &neg);
    assert_eq!((rc, err.kind, err.detail), (-9, KargsErrorKind::DeclarationNegative as u32, [0, 1, 0]));
    assert_eq!(msg, "record 0 at byte 0: a: the kernel touches n bytes, and n is negative");
    assert_eq!(message(&err), msg);
    let shaped = parse_declaration("k(a: &[u8; grid.x * block.x - 300])").1;
    let (rc, err, msg) = check(&shaped, &[window(0, 8)]);
    assert_eq!((rc, err.kind), (-9, KargsErrorKind::DeclarationOutOfRange as u32));
    assert!(
        msg.starts_with("record 0 at byte 0: a: the kernel touches grid.x * block.x - 300 bytes"),
        "{msg}"
    );
    assert_eq!(message(&err), msg);

    let bad = [window(0, 64), KargsArg { tag: 9, ..KargsArg::default() }];
    let (rc, err, _) = check(&decl, &bad);
    assert_eq!((rc, err.kind, err.detail), (-7, KargsErrorKind::InvalidEntry as u32, [1, 9, 0]));
}

/// What the callback saw, and what it answers.
#[derive(Default)]
struct Seen {
    calls: usize,
    answer: i32,
    kernel_id: i64,
    grid: [u32; 3],
    block: [u32; 3],
    args: Vec<KargsArg>,
}

unsafe extern "C" fn record(ctx: *mut c_void, launch: *const KargsLaunch) -> i32 {
    // SAFETY: ctx is the test's `Seen`, not otherwise borrowed during the call.
    let seen = unsafe { &mut *ctx.cast::<Seen>() };
    // SAFETY: launch is valid during the call, its args for args_len entries.
    let launch = unsafe { &*launch };
    seen.calls += 1;
    seen.kernel_id = launch.kernel_id;
    seen.grid = launch.grid;
    seen.block = launch.block;
    // SAFETY: as above.
    seen.args = unsafe { std::slice::from_raw_parts(launch.args, launch.args_len) }.to_vec();
    seen.answer
}

/// A guest memory of 1 KiB with vector_add's argv at 512: windows of `out_len` for `out`.
fn memory(out_len: u32) -> (Vec<u8>, KargsCall) {
    let mut memory = vec![0u8; 1024];
    let w = |guest_offset, len| LoweredArgSnapshot::Ptr(GuestRange { guest_offset, len });
    let mut argv = [0u8; 64];
    let mut b = ArgvBuilder::new(&mut argv);
    for arg in [w(0, 64), w(64, 64), w(128, out_len), LoweredArgSnapshot::U32(16)] {
        b.push(&arg).unwrap();
    }
    let n = b.len();
    memory[512..512 + n].copy_from_slice(&argv[..n]);
    let call = KargsCall {
        kernel_id: 7,
        grid: [1, 1, 1],
        block: [16, 1, 1],
        shared_mem: 0,
        args_ptr: 512,
        args_len: i32::try_from(n).unwrap(),
    };
    (memory, call)
}

fn host_call(host: &KargsHost, memory: Option<&mut [u8]>, call: &KargsCall) -> (i32, KargsError, String) {
    let mut err = KargsError { kind: 77, ..KargsError::default() };
    let mut msg = [0u8; 256];
    let (ptr, len) = memory.map_or((null_mut(), 0), |m| (m.as_mut_ptr(), m.len()));
    // SAFETY: every pointer valid for its length; the memory is the test's alone.
    let rc =
        unsafe { kargs_host_call(host, ptr, len, call, &raw mut err, msg.as_mut_ptr().cast(), msg.len()) };
    (rc, err, c_string(&msg))
}

#[test]
fn the_host_call_checks_in_order_and_calls_back_once_all_pass() {
    let (_, decl, _, _) = parse_declaration(VECTOR_ADD);
    let kernels =
        [KargsKernel { id: 7, declaration: &raw const *decl }, KargsKernel { id: 8, declaration: null() }];
    let mut seen = Seen::default();
    let mut host = KargsHost {
        kernels: kernels.as_ptr(),
        kernels_len: kernels.len(),
        launch: Some(record),
        ctx: (&raw mut seen).cast(),
        max_shared_mem_bytes: 0,
        enabled: 1,
        trusted: 0,
        max_threads_per_launch: 0,
        in_flight_guest: null_mut(),
        in_flight_device: null_mut(),
    };
    let (mut mem, call) = memory(64);
    let base = mem.as_mut_ptr();

    // Every check passes: the callback sees the checked launch, host pointers into memory.
    let (rc, err, msg) = host_call(&host, Some(&mut mem), &call);
    assert_eq!((rc, err, msg.as_str()), (0, KargsError::default(), ""));
    // SAFETY: `seen` is read after the call, nothing else holds it.
    let s = unsafe { &*host.ctx.cast::<Seen>() };
    assert_eq!((s.calls, s.kernel_id, s.grid, s.block), (1, 7, [1, 1, 1], [16, 1, 1]));
    assert_eq!(s.args.len(), 4);
    assert_eq!(
        (s.args[2].tag, s.args[2].guest_offset, s.args[2].len, s.args[2].byte_offset),
        (7, 128, 64, 18)
    );
    assert_eq!(s.args[2].host_ptr, base.wrapping_add(128));
    assert_eq!((s.args[3].tag, s.args[3].bits, s.args[3].host_ptr), (5, 16, null_mut()));

    let calls = |host: &KargsHost| {
        // SAFETY: as above.
        unsafe { &*host.ctx.cast::<Seen>() }.calls
    };
    // The declaration refuses a count past the window, with the Rust host's message.
    let (mut short, _) = memory(16);
    let (rc, err, msg) = host_call(&host, Some(&mut short), &call);
    assert_eq!((rc, err.kind, err.record_index), (-9, KargsErrorKind::DeclarationWindowTooShort as u32, 2));
    assert_eq!(
        msg,
        "InvalidArgs -9: record 2 at byte 18: out: 16-byte window, the kernel touches n * 4 = 64 bytes"
    );
    assert_eq!(calls(&host), 1, "a refused launch reaches no callback");

    // Unknown and undeclared kernels; a trusted guest launches the undeclared one.
    let unknown = KargsCall { kernel_id: 9, ..call };
    let (rc, err, msg) = host_call(&host, Some(&mut mem), &unknown);
    assert_eq!((rc, err.kind, err.detail[0]), (-3, KargsErrorKind::UnknownKernel as u32, 9));
    assert_eq!(msg, "InvalidKernel -3: no kernel is registered with id 9");
    assert_eq!(message(&err), "no kernel is registered with id 9");
    let undeclared = KargsCall { kernel_id: 8, ..call };
    let (rc, err, _) = host_call(&host, Some(&mut mem), &undeclared);
    assert_eq!((rc, err.kind), (-3, KargsErrorKind::UndeclaredKernel as u32));
    host.trusted = 1;
    assert_eq!(host_call(&host, Some(&mut mem), &undeclared).0, 0);
    assert_eq!(calls(&host), 2);
    host.trusted = 0;

    // The argv's own errors come first, then the kernel: a bad tag for an unknown kernel.
    mem[512] = 0xff;
    let (rc, err, _) = host_call(&host, Some(&mut mem), &unknown);
    assert_eq!((rc, err.kind), (-9, KargsErrorKind::UnknownTag as u32));
    mem[512] = 0x07;

    // Region, shape, memory, capability: the host's order.
    let (rc, err, _) = host_call(&host, Some(&mut mem), &KargsCall { args_ptr: 1020, ..call });
    assert_eq!((rc, err.kind), (-2, KargsErrorKind::RegionPastMemory as u32));
    let (rc, err, _) =
        host_call(&host, Some(&mut mem), &KargsCall { block: [2048, 1, 1], args_ptr: -1, ..call });
    assert_eq!((rc, err.kind), (-2, KargsErrorKind::RegionNegativePointer as u32));
    let (rc, err, _) = host_call(&host, Some(&mut mem), &KargsCall { block: [2048, 1, 1], ..call });
    assert_eq!((rc, err.kind), (-8, KargsErrorKind::DimensionTooLarge as u32));
    let (rc, err, msg) = host_call(&host, None, &call);
    assert_eq!((rc, err.kind), (-2, KargsErrorKind::NoMemory as u32));
    assert_eq!(msg, "InvalidPointer -2: the guest exports no linear memory named `memory`");
    host.enabled = 0;
    let (rc, err, _) = host_call(&host, None, &call);
    assert_eq!((rc, err.kind), (-1, KargsErrorKind::CapabilityDisabled as u32));
    host.enabled = 1;
    assert_eq!(calls(&host), 2);

    // The callback's own answer: an ABI code as it is, anything else Internal.
    for (answer, rc_want) in [(-5, -5), (-6, -6), (3, -7), (-99, -7)] {
        // SAFETY: as above.
        unsafe { &mut *host.ctx.cast::<Seen>() }.answer = answer;
        let (rc, err, _) = host_call(&host, Some(&mut mem), &call);
        assert_eq!((rc, err.abi_code, err.kind), (rc_want, rc_want, KargsErrorKind::LaunchCallback as u32));
        assert_eq!(err.detail[0] as i64, i64::from(answer));
        assert_eq!(message(&err), format!("the host's launch callback answered {answer}"));
    }
}

#[test]
fn the_host_calls_own_refusals() {
    let mut seen = Seen::default();
    let zeroed = Box::new(KargsDeclaration { opaque: [0; 1280] });
    let kernels = [KargsKernel { id: 7, declaration: &raw const *zeroed }];
    let mut host = KargsHost {
        kernels: kernels.as_ptr(),
        kernels_len: 1,
        launch: Some(record),
        ctx: (&raw mut seen).cast(),
        max_shared_mem_bytes: 0,
        enabled: 1,
        trusted: 0,
        max_threads_per_launch: 0,
        in_flight_guest: null_mut(),
        in_flight_device: null_mut(),
    };
    let (mut mem, call) = memory(64);
    let (rc, err, msg) = host_call(&host, Some(&mut mem), &call);
    assert_eq!((rc, err.kind, err.detail[0]), (-7, KargsErrorKind::InvalidDeclaration as u32, 0));
    assert_eq!(msg, "the kargs_declaration of kernel 0 was not written by kargs_declaration_parse");
    host.kernels_len = 0;
    host.kernels = null();
    host.launch = None;
    let (rc, err, msg) = host_call(&host, Some(&mut mem), &call);
    assert_eq!((rc, err.kind, err.detail[1]), (-7, KargsErrorKind::NullArgument as u32, 9));
    assert_eq!(msg, "kargs_host_call: host->launch is NULL");
    host.launch = Some(record);
    host.kernels_len = 2;
    let (rc, err, _) = host_call(&host, Some(&mut mem), &call);
    assert_eq!((rc, err.kind, err.detail[1], err.detail[2]), (-7, KargsErrorKind::NullArgument as u32, 7, 2));
    host.kernels_len = 0;
    // Over 4 GiB: refused before the memory is touched.
    if usize::BITS > 32 {
        let mut err = KargsError::default();
        let huge = (1usize << 32) + 1;
        // SAFETY: refused before `memory` becomes a slice (the contract's length is never used).
        let rc = unsafe {
            kargs_host_call(
                &host,
                std::ptr::NonNull::dangling().as_ptr(),
                huge,
                &call,
                &raw mut err,
                null_mut(),
                0,
            )
        };
        assert_eq!((rc, err.kind, err.detail[0]), (-7, KargsErrorKind::MemoryTooLarge as u32, huge as u64));
    }
    // NULL host, NULL call, NULL memory with a length.
    let mut err = KargsError::default();
    // SAFETY: NULLs are refused.
    let rc = unsafe { kargs_host_call(null(), null_mut(), 0, &call, &raw mut err, null_mut(), 0) };
    assert_eq!((rc, err.detail[1]), (-7, 0));
    // SAFETY: as above.
    let rc =
        unsafe { kargs_host_call(&host, mem.as_mut_ptr(), mem.len(), null(), &raw mut err, null_mut(), 0) };
    assert_eq!((rc, err.detail[1]), (-7, 3));
    // SAFETY: as above.
    let rc = unsafe { kargs_host_call(&host, null_mut(), 16, &call, &raw mut err, null_mut(), 0) };
    assert_eq!((rc, err.detail[1], err.detail[2]), (-7, 1, 16));
    assert_eq!(seen.calls, 0);
}

/// A callback that, while its launch is in flight, makes a second guest's call through
/// `inner` (sharing a count with the outer host) and keeps what it answered.
struct Nested {
    inner: KargsHost,
    answered: Option<(i32, KargsError, String)>,
}

unsafe extern "C" fn nested(ctx: *mut c_void, _: *const KargsLaunch) -> i32 {
    // SAFETY: ctx is the test's `Nested`, not otherwise borrowed during the call.
    let nested = unsafe { &mut *ctx.cast::<Nested>() };
    let (mut mem, call) = memory(64);
    nested.answered = Some(host_call(&nested.inner, Some(&mut mem), &call));
    0
}

/// Threads per launch refused past `max_threads_per_launch` before the argv is read, and each
/// count of launches in flight refused while full (a call made from inside another's callback)
/// and accepted below it, as `KARGS_ERROR_KIND_QUOTA` with the Rust host's message.
#[test]
fn the_host_calls_quotas_are_refused_at_their_limits_and_accepted_below() {
    let (_, decl, _, _) = parse_declaration(VECTOR_ADD);
    let kernels = [KargsKernel { id: 7, declaration: &raw const *decl }];
    let mut seen = Seen::default();
    let host = KargsHost {
        kernels: kernels.as_ptr(),
        kernels_len: 1,
        launch: Some(record),
        ctx: (&raw mut seen).cast(),
        max_shared_mem_bytes: 0,
        enabled: 1,
        trusted: 0,
        max_threads_per_launch: 32,
        in_flight_guest: null_mut(),
        in_flight_device: null_mut(),
    };
    let (mut mem, call) = memory(64);
    let two = KargsCall { grid: [2, 1, 1], ..call };
    assert_eq!(host_call(&host, Some(&mut mem), &two).0, 0, "32 threads, at the quota");
    // Three blocks of 16, and an argv that does not parse: the quota answers first.
    mem[512] = 0xee;
    let (rc, err, msg) = host_call(&host, Some(&mut mem), &KargsCall { grid: [3, 1, 1], ..call });
    assert_eq!((rc, err.kind), (-6, KargsErrorKind::Quota as u32));
    assert_eq!(err.detail, [KargsQuota::ThreadsPerLaunch as u64, 48, 32]);
    assert_eq!(msg, "QuotaExceeded -6: threads per launch (grid × block) would be 48, the quota is 32");
    assert_eq!(message(&err), "threads per launch (grid × block) would be 48, the quota is 32");
    mem[512] = 0x07;
    assert_eq!(host_call(&host, Some(&mut mem), &call).0, 0);
    // SAFETY: read after the calls.
    assert_eq!(unsafe { &*host.ctx.cast::<Seen>() }.calls, 2);

    // The counts: one place each. A call from inside the outer call's callback, sharing the
    // count, finds it full; the outer call's place is given back when its callback returns.
    for device in [false, true] {
        // Owned through the raw pointer alone, as a C host's would be.
        let count = Box::into_raw(Box::new(KargsInFlight { max: 1, now: 0 }));
        // SAFETY: `count` is live until the end of the loop's body, read between calls.
        let now = || unsafe { (*count).now };
        let share = |h: &mut KargsHost| {
            if device {
                h.in_flight_device = count;
            } else {
                h.in_flight_guest = count;
            }
        };
        let mut inner_seen = Seen::default();
        let mut inner = KargsHost { ctx: (&raw mut inner_seen).cast(), max_threads_per_launch: 0, ..host };
        share(&mut inner);
        let mut state = Nested { inner, answered: None };
        let mut outer = KargsHost { launch: Some(nested), ctx: (&raw mut state).cast(), ..inner };
        share(&mut outer);
        let (mut mem, call) = memory(64);
        assert_eq!(host_call(&outer, Some(&mut mem), &call).0, 0);
        let (rc, err, msg) = state.answered.take().expect("the callback ran");
        let quota = if device { KargsQuota::InFlightPerDevice } else { KargsQuota::InFlightPerGuest };
        assert_eq!((rc, err.kind, err.detail), (-6, KargsErrorKind::Quota as u32, [quota as u64, 2, 1]));
        let which = if device { "on this device" } else { "for this guest" };
        assert_eq!(msg, format!("QuotaExceeded -6: launches in flight {which} would be 2, the quota is 1"));
        assert_eq!(inner_seen.calls, 0, "refused before its callback");
        assert_eq!(now(), 0, "the outer call's place is given back");
        // Not full now: the inner host's call runs.
        assert_eq!(host_call(&state.inner, Some(&mut mem), &call).0, 0);
        assert_eq!((inner_seen.calls, now()), (1, 0));
        // A count of none refuses every launch.
        // SAFETY: no call runs.
        unsafe { (*count).max = 0 };
        assert_eq!(host_call(&state.inner, Some(&mut mem), &call).0, -6);
        // SAFETY: made by Box::into_raw above, no longer used.
        drop(unsafe { Box::from_raw(count) });
    }
}
