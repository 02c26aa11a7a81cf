//! `declaration`: kernel declarations, parsed and checked (`docs/declarations.md`).
//!
//! The first byte chooses the mode:
//! - even: the rest is a declaration's text (any bytes; only UTF-8 is a `&str`). Parsing never
//!   panics; a refusal names a column inside the text (or one past it) and says something; an
//!   accepted declaration keeps its text, parses again to an equal value, and its parameters'
//!   names are unique.
//! - odd: `arbitrary` builds a declaration as the test kit's model holds it
//!   (`kernel_args_testkit::declarations`), an argument list (mostly of the declared types) and a
//!   launch shape; the model's text must parse, and `Declaration::check` must agree with the
//!   model's check: both accept, or both refuse at the same record, byte offset and parameter,
//!   for the same reason.
//!
//! In both modes a refusal, made into the C API's `kargs_error`, gives the same message through
//! `kargs_error_message` as the Rust error's `Display`: the struct carries what it quotes.
#![no_main]
#![allow(unsafe_code)]

use arbitrary::{Arbitrary, Result, Unstructured};
use kernel_args::{Declaration, LaunchArgs, LaunchShape, MismatchKind};
use kernel_args_core::LoweredArgSnapshot;
use kernel_args_fuzz::FuzzArg;
use kernel_args_testkit::declarations::{ACCESSES, Decl, ELEMENTS, Expr, Param, Refusal, SCALARS};
use libfuzzer_sys::fuzz_target;

/// `kargs_error_message` of `err`: it must be `expected`.
fn same_message_in_c(err: &kargs::KargsError, expected: &str) {
    let mut buf = [0u8; kargs::KARGS_ERROR_MESSAGE_MAX as usize];
    // SAFETY: `err` is a valid kargs_error; `buf` holds `buf.len()` writable bytes.
    let n = unsafe { kargs::kargs_error_message(err, buf.as_mut_ptr().cast(), buf.len()) };
    assert!(n < buf.len(), "a message of {n} bytes: {expected}");
    assert_eq!(std::str::from_utf8(&buf[..n]), Ok(expected), "the C API's message");
}

fn expr(u: &mut Unstructured<'_>, ints: &[usize], depth: u32) -> Result<Expr> {
    Ok(match u.int_in_range(0..=if depth == 0 { 2 } else { 3 })? {
        0 if !ints.is_empty() => Expr::Param(*u.choose(ints)?),
        0 | 1 => Expr::Const(if u.ratio(7, 8)? { u.int_in_range(0..=40)? } else { u32::arbitrary(u)? }),
        2 => Expr::Shape(u.int_in_range(0..=5)?),
        _ => {
            let l = expr(u, ints, depth - 1)?;
            let op = *u.choose(&['+', '-', '*', '/'])?;
            Expr::Bin(Box::new(l), op, Box::new(expr(u, ints, depth - 1)?))
        }
    })
}

fn decl(u: &mut Unstructured<'_>) -> Result<Decl> {
    let n = u.int_in_range(0..=8)?;
    let mut kinds = Vec::with_capacity(n);
    for _ in 0..n {
        kinds.push(if bool::arbitrary(u)? {
            (Some((u.choose_index(ELEMENTS.len())?, u.choose_index(ACCESSES.len())?)), 0)
        } else {
            (None, u.choose_index(SCALARS.len())?)
        });
    }
    let ints: Vec<usize> =
        (0..n).filter(|&i| kinds[i].0.is_none() && !matches!(SCALARS[kinds[i].1].0, "f32" | "f64")).collect();
    let mut params = Vec::with_capacity(n);
    for (pointer, scalar) in kinds {
        params.push(match pointer {
            None => Param::Scalar(scalar),
            Some((element, access)) => {
                let mut extent = expr(u, &ints, 3)?;
                if extent.text_len() > 64 {
                    extent = Expr::Const(1);
                }
                Param::Pointer { element, access, extent }
            }
        });
    }
    Ok(Decl { params })
}

fn arg_for(u: &mut Unstructured<'_>, param: &Param) -> Result<LoweredArgSnapshot> {
    if u.ratio(1, 10)? {
        return Ok(FuzzArg::arbitrary(u)?.snapshot());
    }
    let small = |u: &mut Unstructured<'_>| -> Result<i64> {
        if u.ratio(7, 8)? { u.int_in_range(-3..=40) } else { i64::arbitrary(u) }
    };
    Ok(match param {
        Param::Scalar(t) => match SCALARS[*t].0 {
            "i32" => FuzzArg::I32(small(u)? as i32),
            "i64" => FuzzArg::I64(small(u)?),
            "u32" => FuzzArg::U32(small(u)? as u32),
            "u64" => FuzzArg::U64(small(u)? as u64),
            "f32" => FuzzArg::F32(u32::arbitrary(u)?),
            _ => FuzzArg::F64(u64::arbitrary(u)?),
        },
        Param::Pointer { .. } => {
            let guest_offset =
                if u.ratio(6, 8)? { u.int_in_range(0..=63u32)? * 8 } else { u32::arbitrary(u)? };
            let len = if u.ratio(6, 8)? { u.int_in_range(0..=400)? } else { u32::arbitrary(u)? };
            FuzzArg::Ptr { guest_offset, len }
        }
    }
    .snapshot())
}

fn structured(u: &mut Unstructured<'_>) -> Result<()> {
    let decl = decl(u)?;
    let mut args = Vec::with_capacity(decl.params.len() + 1);
    for p in &decl.params {
        args.push(arg_for(u, p)?);
    }
    match u.int_in_range(0..=9u8)? {
        0 => {
            args.pop();
        }
        1 => args.push(FuzzArg::arbitrary(u)?.snapshot()),
        _ => {}
    }
    let dim = |u: &mut Unstructured<'_>| -> Result<u32> {
        if u.ratio(7, 8)? { u.int_in_range(1..=5) } else { u32::arbitrary(u) }
    };
    let grid = [dim(u)?, dim(u)?, dim(u)?];
    let block = [dim(u)?, dim(u)?, dim(u)?];

    let text = decl.render();
    let parsed = Declaration::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let launch_args = LaunchArgs::from_slice(&args).expect("at most 9 arguments");
    let got = parsed.check(&launch_args, &LaunchShape { grid, block, shared_mem_bytes: 0 });
    match (got, decl.check(&args, grid, block)) {
        (Ok(()), Ok(())) => {}
        (Err(m), Err(r)) => {
            assert_eq!((m.record, m.offset), (r.record, r.offset), "{text} {args:?}: {m}");
            let param = r.param.map(|i| format!("p{i}")).unwrap_or_default();
            assert_eq!(m.param.as_str(), param, "{text}: {m}");
            let same = match (&m.kind, r.why) {
                (MismatchKind::Count { declared, got }, Refusal::Count) => {
                    *declared == decl.params.len() && *got == args.len()
                }
                (MismatchKind::Type { got, .. }, Refusal::Type) => *got == args[r.record].tag(),
                (MismatchKind::Misaligned { .. }, Refusal::Misaligned) => true,
                (MismatchKind::WindowTooShort { bytes, .. }, Refusal::Short(want)) => *bytes == want,
                (MismatchKind::Overflow { .. }, Refusal::OutOfRange) => true,
                (MismatchKind::Negative { scalar, .. }, Refusal::Negative(i)) => {
                    scalar.as_str() == format!("p{i}")
                }
                _ => false,
            };
            assert!(same, "{text}: crate {m:?}, model {r:?}");
            assert!(!m.to_string().is_empty());
            same_message_in_c(&kargs::KargsError::from_mismatch(&m), &m.to_string());
        }
        (got, want) => panic!("{text} {args:?}: crate {got:?}, model {want:?}"),
    }
    Ok(())
}

fn text(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        let e = Declaration::parse_bytes(bytes).expect_err("not UTF-8");
        same_message_in_c(&kargs::KargsError::from_declaration(&e), &e.to_string());
        return;
    };
    match Declaration::parse(text) {
        Ok(d) => {
            assert_eq!(d.as_str(), text);
            assert_eq!(Declaration::parse(d.as_str()).as_ref(), Ok(&d));
            let names: Vec<&str> = d.params().map(|p| p.name).collect();
            for (i, name) in names.iter().enumerate() {
                assert!(!names[..i].contains(name), "{text}: `{name}` twice");
            }
            assert_eq!(d.params().len(), d.len());
        }
        Err(e) => {
            assert!(e.column >= 1 && e.column <= text.len() + 1, "{text}: column {}", e.column);
            assert!(!e.to_string().is_empty());
            same_message_in_c(&kargs::KargsError::from_declaration(&e), &e.to_string());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        text(rest);
    } else {
        let _ = structured(&mut Unstructured::new(rest));
    }
});
