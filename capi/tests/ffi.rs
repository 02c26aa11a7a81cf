//! The C entry points called from Rust, against kernel-args-core and kernel-args: every
//! conformance vector, the worst-case message lengths, the byte cap without reading, and the
//! committed header's shared macros. (The C side of the same checks is
//! capi/c/tests/capi_vectors.c, run by scripts/capi-check.sh.)
#![allow(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
#![allow(clippy::arithmetic_side_effects)]

use std::ffi::CStr;

use kargs::{
    KARGS_ERROR_MESSAGE_MAX, KARGS_ERROR_TEXT_MAX, KargsArg, KargsError, KargsErrorKind,
    kargs_abi_error_name, kargs_error_kind_name, kargs_error_message, kargs_parse,
};
use kernel_args::AbiError;
use kernel_args::limits::{MAX_EXTENT_BYTES, MAX_NAME_BYTES};
use kernel_args_core::{ArgTag, ArgvError, ErrorKind, GuestMemory, LoweredArg, RecordReader, parse_argv};
use serde_json::Value;

/// `kargs_parse` over `argv` against a memory at `base` of `memory_len` bytes.
fn parse(argv: &[u8], base: *mut u8, memory_len: usize, cap: usize) -> (i32, Vec<KargsArg>, KargsError) {
    let mut out = vec![KargsArg::default(); cap];
    let mut n = usize::MAX;
    let mut err = KargsError { kind: 77, ..KargsError::default() };
    // SAFETY: argv and out are valid slices of their lengths; base is only offset, never
    // dereferenced (the function's contract), and n and err are valid for writes.
    let rc = unsafe {
        kargs_parse(
            argv.as_ptr(),
            argv.len(),
            base,
            memory_len,
            out.as_mut_ptr(),
            cap,
            &raw mut n,
            &raw mut err,
        )
    };
    out.truncate(n);
    (rc, out, err)
}

fn message(err: &KargsError) -> String {
    let mut buf = [0u8; 512];
    // SAFETY: err is a valid kargs_error, buf valid for 512 bytes.
    let n = unsafe { kargs_error_message(err, buf.as_mut_ptr().cast(), buf.len()) };
    assert!(n < buf.len());
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

fn name(p: *const std::ffi::c_char) -> &'static str {
    // SAFETY: the library returns static NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap()
}

#[test]
fn every_vector_as_core_parses_it() {
    let doc: Value = serde_json::from_str(include_str!("../../tests/vectors/argv.json")).unwrap();
    let mut backing = vec![0u8; 1 << 16];
    let mut count = 0;
    for v in doc["vectors"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let hex: String = v["hex"].as_str().unwrap().split_ascii_whitespace().collect();
        let argv: Vec<u8> =
            (0..hex.len()).step_by(2).map(|k| u8::from_str_radix(&hex[k..k + 2], 16).unwrap()).collect();
        let mem_len = v["mem_len"].as_u64().unwrap();
        // A real memory where the vector's fits in 64 KiB; otherwise its length over the same
        // base (the library never dereferences memory, it only offsets from it).
        let base = backing.as_mut_ptr();
        let (rc, out, err) = parse(&argv, base, usize::try_from(mem_len).unwrap(), 128);
        let memory = GuestMemory::length_only(mem_len);
        match parse_argv::<128>(&argv, &memory) {
            Ok(args) => {
                assert_eq!((rc, out.len(), err), (0, args.len(), KargsError::default()), "{name}");
                let records = RecordReader::new(&argv, &memory).unwrap();
                for ((a, c), r) in args.iter().zip(&out).zip(records) {
                    let r = r.unwrap();
                    assert_eq!(c.tag, a.tag().byte(), "{name}");
                    assert_eq!(c.byte_offset as usize, r.offset, "{name}");
                    let bits = match *a {
                        LoweredArg::I32(v) => i64::from(v) as u64,
                        LoweredArg::I64(v) => v as u64,
                        LoweredArg::F32(v) => u64::from(v.0),
                        LoweredArg::F64(v) => v.0,
                        LoweredArg::U32(v) => u64::from(v),
                        LoweredArg::U64(v) => v,
                        LoweredArg::Ptr(w) => {
                            assert_eq!((c.guest_offset, c.len), (w.guest_offset(), w.len()), "{name}");
                            assert_eq!(c.host_ptr, base.wrapping_add(w.guest_offset() as usize), "{name}");
                            0
                        }
                    };
                    assert_eq!(c.bits, bits, "{name}");
                }
            }
            Err(e) => {
                assert_eq!((rc, out.len()), (e.code().code(), 0), "{name}");
                assert_eq!(err.abi_code, rc);
                assert_eq!(name_of(err.kind), e.kind().name(), "{name}");
                assert_eq!(
                    (err.record_index as usize, err.byte_offset as usize),
                    (e.index(), e.offset()),
                    "{name}"
                );
                assert_eq!(message(&err), e.to_string(), "{name}");
            }
        }
        count += 1;
    }
    assert_eq!(count, 57);
}

fn name_of(kind: u32) -> &'static str {
    name(kargs_error_kind_name(kind))
}

#[test]
fn the_byte_cap_is_cores_without_reading() {
    for len in [4097, 5000] {
        let buf = vec![0x42u8; len];
        let core = parse_argv::<128>(&buf, &GuestMemory::length_only(0)).unwrap_err();
        let (rc, _, err) = parse(&buf, std::ptr::null_mut(), 0, 128);
        assert_eq!(rc, -10);
        assert_eq!(message(&err), core.to_string());
        assert_eq!(err, KargsError::from_argv(&core));
    }
}

#[test]
fn names_are_the_rust_crates() {
    for e in AbiError::ALL {
        assert_eq!(name(kargs_abi_error_name(e.code())), e.name());
    }
    assert_eq!(name(kargs_abi_error_name(0)), "Ok");
    assert_eq!(name(kargs_abi_error_name(-11)), "Unknown");
    for kind in [
        ErrorKind::BufferTooLong { len: 0, max: 0 },
        ErrorKind::TooManyRecords { max: 0 },
        ErrorKind::UnknownTag { tag: 0 },
        ErrorKind::TruncatedRecord { tag: ArgTag::Ptr, needed: 8, present: 0 },
        ErrorKind::WindowOutOfBounds { guest_offset: 0, len: 1, memory_len: 0 },
    ] {
        let c = KargsError::from_argv(&ArgvError::new(kind, 0, 0));
        assert_eq!(name_of(c.kind), kind.name());
    }
    assert_eq!(name_of(KargsErrorKind::NullArgument as u32), "null_argument");
    assert_eq!(name_of(1000), "unknown");
}

#[test]
fn every_message_fits_the_documented_buffer() {
    let max = KARGS_ERROR_MESSAGE_MAX as usize;
    // Each value at its widest among those whose details agree with their kind (a struct whose
    // details contradict it gets the short `invalid kargs_error: ...`).
    let worst = [
        KargsError::from_argv(&ArgvError::new(
            ErrorKind::WindowOutOfBounds {
                guest_offset: u32::MAX,
                len: u32::MAX,
                memory_len: 2 * u64::from(u32::MAX) - 1,
            },
            usize::MAX,
            usize::MAX,
        )),
        KargsError::from_argv(&ArgvError::new(ErrorKind::BufferTooLong { len: usize::MAX, max: 4096 }, 0, 0)),
        KargsError::from_argv(&ArgvError::new(
            ErrorKind::TruncatedRecord { tag: ArgTag::Ptr, needed: 8, present: 7 },
            usize::MAX,
            usize::MAX,
        )),
        KargsError::from_argv(&ArgvError::new(
            ErrorKind::TooManyRecords { max: 128 },
            usize::MAX,
            usize::MAX,
        )),
        KargsError::from_region(
            &kernel_args::RegionError::PastMemory {
                args_ptr: 1_000_000_000,
                args_len: 1_147_483_647,
                memory_len: 2_147_483_646,
            },
            1_000_000_000,
            1_147_483_647,
            2_147_483_646,
        ),
        KargsError::from_region(
            &kernel_args::RegionError::EndOverflows { args_ptr: i32::MAX, args_len: i32::MAX },
            i32::MAX,
            i32::MAX,
            u64::MAX,
        ),
        KargsError::from_shape(&kernel_args::ShapeError {
            dimension: kernel_args::Dimension::ThreadsPerBlock,
            value: i64::MIN,
            bound: kernel_args::Bound::AtLeast(u64::MAX),
        }),
        KargsError::null_argument(kargs::KargsFunction::Parse, 2, usize::MAX),
        KargsError::null_argument(kargs::KargsFunction::HostCall, 8, usize::MAX),
        KargsError { abi_code: i32::MIN, kind: u32::MAX, ..KargsError::default() },
    ];
    // The kinds of the declarations and the host call, every detail and text at its widest.
    let (name, extent) = ("n".repeat(MAX_NAME_BYTES), "9".repeat(MAX_EXTENT_BYTES));
    let host_kinds = KargsErrorKind::ALL_PUBLIC.iter().filter(|k| **k as u32 >= 64).map(|&kind| {
        let record = u64::from(u32::MAX);
        let text = match kind {
            KargsErrorKind::DeclarationType
            | KargsErrorKind::DeclarationWindowTooShort
            | KargsErrorKind::DeclarationOutOfRange => text_of(&[&name, &extent]),
            KargsErrorKind::DeclarationMisaligned => text_of(&[&name, "f64"]),
            KargsErrorKind::DeclarationNegative => text_of(&[&name, &extent, &name]),
            KargsErrorKind::DeclarationSyntax => text_of(&[&name]),
            _ => [0; KARGS_ERROR_TEXT_MAX],
        };
        let detail = match kind {
            KargsErrorKind::DeclarationCount => [u64::MAX, u64::MAX - 1, 0],
            KargsErrorKind::DeclarationType => [record, 0x07, 0x06],
            KargsErrorKind::DeclarationMisaligned => [record, u64::from(u32::MAX), 8],
            KargsErrorKind::DeclarationWindowTooShort => [record, u64::from(u32::MAX), u64::MAX],
            KargsErrorKind::DeclarationOutOfRange => [record, 0, 0],
            KargsErrorKind::DeclarationNegative => [record, u64::MAX, 0],
            KargsErrorKind::UnknownKernel
            | KargsErrorKind::UndeclaredKernel
            | KargsErrorKind::MemoryTooLarge
            | KargsErrorKind::LaunchCallback => [u64::MAX, 0, 0],
            KargsErrorKind::CapabilityDisabled | KargsErrorKind::NoMemory => [0; 3],
            // The longest thing the grammar expects, at the last column.
            KargsErrorKind::DeclarationSyntax => [u64::MAX, 1, u64::from(kernel_args::Expected::Type.code())],
            _ => [u64::MAX; 3],
        };
        KargsError {
            abi_code: kind.abi_code(),
            kind: kind as u32,
            // A declaration's syntax error has a column, no record.
            record_index: if kind == KargsErrorKind::DeclarationSyntax { 0 } else { u32::MAX },
            byte_offset: u32::MAX,
            detail,
            text,
        }
    });
    let worst: Vec<KargsError> = worst.into_iter().chain(host_kinds).collect();
    assert!(worst.len() > 20);
    for err in worst {
        let m = message(&err);
        assert!(m.len() < max, "{} bytes: {m}", m.len());
        // Record and byte are only a placed kind's; elsewhere the struct is not this library's.
        let placed = err.kind < 16 || (80..=85).contains(&err.kind) || err.kind == 112;
        assert!(!m.starts_with("invalid") || err.kind == u32::MAX || !placed, "{m}");
    }
}

#[test]
fn the_header_shares_the_guest_headers_macros() {
    let header = include_str!("../../include/kargs.h");
    let guest = include_str!("../../include/kargs_guest.h");
    let define = |text: &str, name: &str| {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["#define", name]))
            .unwrap_or_else(|| panic!("no #define {name}"));
        // The replacement list, without a trailing comment.
        let body = line.split("/*").next().unwrap();
        body.split_whitespace().skip(2).collect::<Vec<_>>().join(" ")
    };
    let screaming = |s: &str| {
        let mut out = String::new();
        for (i, ch) in s.chars().enumerate() {
            if ch.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_uppercase());
        }
        out
    };
    let mut names = vec!["KARGS_ABI_OK".to_string()];
    for e in AbiError::ALL {
        let name = format!("KARGS_ABI_{}", screaming(e.name()));
        assert_eq!(define(header, &name), format!("({})", e.code()), "{name}");
        names.push(name);
    }
    for t in ArgTag::ALL {
        let name = format!("KARGS_TAG_{}", t.name().to_uppercase());
        assert_eq!(define(header, &name), format!("0x{:02x}u", t.byte()), "{name}");
        names.push(name);
    }
    names.extend(
        ["KARGS_MAX_KERNEL_ARGS", "KARGS_MAX_KERNEL_ARGS_BYTES", "KARGS_MAX_GUEST_MEMORY_BYTES"]
            .map(String::from),
    );
    for name in names {
        assert_eq!(define(header, &name), define(guest, &name), "{name}: kargs.h and kargs_guest.h differ");
    }
}

#[test]
fn a_memory_over_4_gib_is_refused_with_its_own_kind() {
    // The base is only offset, never read: any address does.
    let base = std::ptr::dangling_mut::<u8>();
    let (rc, out, err) = parse(&[0x07, 0, 0, 0, 0, 8, 0, 0, 0], base, (1 << 32) + 1, 4);
    assert_eq!((rc, out.len()), (AbiError::Internal.code(), 0));
    assert_eq!(err.kind, KargsErrorKind::MemoryTooLarge as u32);
    assert_eq!(err.detail, [(1 << 32) + 1, 0, 0]);
    assert!(message(&err).contains("4294967297"), "{}", message(&err));
    // 4 GiB itself is the largest wasm32 memory.
    let (rc, out, _) = parse(&[0x07, 0xf8, 0xff, 0xff, 0xff, 8, 0, 0, 0], base, 1 << 32, 4);
    assert_eq!((rc, out.len()), (0, 1));
}

/// `parts`, each followed by a NUL, in a zeroed `kargs_error.text`.
fn text_of(parts: &[&str]) -> [u8; KARGS_ERROR_TEXT_MAX] {
    let mut text = [0; KARGS_ERROR_TEXT_MAX];
    let joined: Vec<u8> = parts.iter().flat_map(|p| p.bytes().chain([0])).collect();
    text[..joined.len()].copy_from_slice(&joined);
    text
}

#[test]
fn a_struct_whose_details_contradict_its_kind_is_called_invalid() {
    // A struct written by hand, with the kind's own ABI code; a declaration kind's text names
    // parameter `out` and its extent (`n * 4`) or element type.
    let text = |kind: KargsErrorKind, record: u32, detail: [u64; 3]| {
        let text = match kind {
            KargsErrorKind::DeclarationMisaligned => text_of(&["out", "f32"]),
            KargsErrorKind::DeclarationNegative => text_of(&["out", "n * 4", "n"]),
            k if (81..=85).contains(&(k as u32)) => text_of(&["out", "n * 4"]),
            _ => [0; KARGS_ERROR_TEXT_MAX],
        };
        message(&KargsError {
            abi_code: kind.abi_code(),
            kind: kind as u32,
            record_index: record,
            byte_offset: 0,
            detail,
            text,
        })
    };
    let invalid = |kind: KargsErrorKind, record: u32, detail: [u64; 3]| {
        let text = text(kind, record, detail);
        assert!(text.starts_with("invalid kargs_error: kind "), "{kind:?} {detail:?}: {text}");
    };
    use KargsErrorKind as K;
    // The argv's kinds.
    invalid(K::BufferTooLong, 0, [100, 4096, 0]);
    invalid(K::BufferTooLong, 0, [5000, 9000, 0]);
    invalid(K::TooManyRecords, 3, [128, 0, 0]);
    invalid(K::TruncatedRecord, 0, [0x01, 4, 4]);
    invalid(K::TruncatedRecord, 0, [0x01, 8, 2]);
    invalid(K::WindowOutOfBounds, 0, [16, 16, 64]);
    // The region's and the shape's.
    invalid(K::RegionNegativePointer, 0, [5, 0, 0]);
    invalid(K::RegionNegativeLength, 0, [0, 5, 0]);
    invalid(K::RegionEndOverflows, 0, [1, 2, 0]);
    invalid(K::RegionPastMemory, 0, [0, 16, 64]);
    invalid(K::DimensionTooSmall, 0, [0, 1, 1]);
    invalid(K::DimensionTooLarge, 0, [3, 64, 64]);
    // The declaration's and the host call's.
    invalid(K::DeclarationCount, 0, [4, 4, 0]);
    invalid(K::DeclarationType, 2, [2, 0x07, 0x07]);
    invalid(K::DeclarationType, 2, [1, 0x07, 0x06]);
    invalid(K::DeclarationType, 2, [2, 0x07, 0x42]);
    invalid(K::DeclarationMisaligned, 0, [0, 8, 4]);
    invalid(K::DeclarationMisaligned, 0, [0, 3, 3]);
    invalid(K::DeclarationWindowTooShort, 1, [1, 64, 64]);
    invalid(K::UnknownKernel, 0, [9, 1, 0]);
    invalid(K::CapabilityDisabled, 0, [1, 0, 0]);
    invalid(K::MemoryTooLarge, 0, [4096, 0, 0]);

    // The same kinds with details that agree are read as the library writes them.
    assert_eq!(
        text(K::TruncatedRecord, 0, [0x01, 4, 2]),
        ArgvError::new(ErrorKind::TruncatedRecord { tag: ArgTag::I32, needed: 4, present: 2 }, 0, 0)
            .to_string()
    );
    assert_eq!(
        text(K::DeclarationWindowTooShort, 1, [1, 16, 64]),
        "record 1 at byte 0: out: 16-byte window, the kernel touches n * 4 = 64 bytes"
    );
}

#[test]
fn a_declaration_kinds_text_is_read_strictly() {
    let err = |kind: KargsErrorKind, detail: [u64; 3], text: [u8; KARGS_ERROR_TEXT_MAX]| {
        message(&KargsError {
            abi_code: kind.abi_code(),
            kind: kind as u32,
            record_index: 1,
            byte_offset: 0,
            detail,
            text,
        })
    };
    use KargsErrorKind as K;
    let short = [1, 16, 64];
    let invalid = |kind, detail, text| {
        let m = err(kind, detail, text);
        assert!(m.starts_with("invalid kargs_error: kind "), "{m}");
    };
    assert_eq!(
        err(K::DeclarationWindowTooShort, short, text_of(&["out", "n * 4"])),
        "record 1 at byte 0: out: 16-byte window, the kernel touches n * 4 = 64 bytes"
    );
    // Missing parts, a part past its cap, bytes after the last NUL, not UTF-8.
    invalid(K::DeclarationWindowTooShort, short, [0; KARGS_ERROR_TEXT_MAX]);
    invalid(K::DeclarationWindowTooShort, short, text_of(&["out"]));
    invalid(K::DeclarationWindowTooShort, short, text_of(&[&"n".repeat(MAX_NAME_BYTES + 1), "n * 4"]));
    invalid(K::DeclarationWindowTooShort, short, text_of(&["out", "n * 4", "x"]));
    invalid(
        K::DeclarationWindowTooShort,
        short,
        text_of(&["out", "n \u{e9}"]).map(|b| if b == 0xa9 { 0xff } else { b }),
    );
    // A text that ends without its NUL.
    invalid(K::DeclarationWindowTooShort, short, [b'x'; KARGS_ERROR_TEXT_MAX]);
    // An element type that is none, or not of the size in detail[2].
    invalid(K::DeclarationMisaligned, [1, 66, 4], text_of(&["out", "f33"]));
    invalid(K::DeclarationMisaligned, [1, 66, 4], text_of(&["out", "f64"]));
    // A text on a kind that has none.
    let mut unknown_tag = KargsError::from_argv(&ArgvError::new(ErrorKind::UnknownTag { tag: 0x42 }, 0, 0));
    unknown_tag.text[0] = b'x';
    assert!(message(&unknown_tag).starts_with("invalid kargs_error: kind "));
    let mut count = KargsError {
        abi_code: K::DeclarationCount.abi_code(),
        kind: K::DeclarationCount as u32,
        detail: [4, 3, 0],
        ..KargsError::default()
    };
    assert_eq!(message(&count), "the kernel takes 4 parameters, the argv has 3 arguments");
    count.text[0] = b'x';
    assert!(message(&count).starts_with("invalid kargs_error: kind "));
}
