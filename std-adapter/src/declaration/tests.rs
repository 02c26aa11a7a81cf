use kernel_args_core::{F32Bits, GuestRange};

use super::*;

const VECTOR_ADD: &str = "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)";

fn shape() -> LaunchShape {
    LaunchShape { grid: [4, 2, 1], block: [256, 1, 1], shared_mem_bytes: 0 }
}

fn w(guest_offset: u32, len: u32) -> LoweredArgSnapshot {
    LoweredArgSnapshot::Ptr(GuestRange { guest_offset, len })
}

fn check(decl: &str, args: &[LoweredArgSnapshot]) -> Result<(), Mismatch> {
    Declaration::parse(decl).unwrap().check(&LaunchArgs::from_slice(args).unwrap(), &shape())
}

fn message(decl: &str, args: &[LoweredArgSnapshot]) -> std::string::String {
    check(decl, args).unwrap_err().to_string()
}

/// The messages `docs/declarations.md` shows.
#[test]
fn documented_parse_errors() {
    let error = |text: &str| Declaration::parse(text).unwrap_err().to_string();
    assert_eq!(
        error("vector_add(a: &[f32; n], p: ptr, n: u32)"),
        "column 29: expected a type (`i32`, `i64`, `f32`, `f64`, `u32`, `u64`, `&[T; n]`, `&mut [T; n]` or `&out [T; n]`), found `ptr`"
    );
    assert_eq!(error("k(a: &[f32; m], n: u32)"), "column 13: `m` is not a parameter of this kernel");
    assert_eq!(
        error("k(a: &[u8; x], x: f32)"),
        "column 12: `x` is not an integer parameter: an extent counts with integers"
    );
}

/// docs/declarations.md's whitespace (space, tab, newline, carriage return) between any two
/// tokens, and `0x` hexadecimal: nothing more.
#[test]
fn the_grammar_is_the_documents() {
    for ok in ["k(a:&[u8;0x10])", "k(\ta: &[u8; 16],\r\n n: u32)", " k ( a : & [ u8 ; 16 ] ) "] {
        assert!(Declaration::parse(ok).is_ok(), "{ok:?}");
    }
    for (bad, column) in
        [("k(a: &[u8; 0X10])", 12), ("k(\x0ca: u32)", 3), ("k(a:\x0bu32)", 5), ("\x0ck(a: u32)", 1)]
    {
        let e = Declaration::parse(bad).unwrap_err();
        assert_eq!(e.column, column, "{bad:?}: {e}");
    }
}

#[test]
fn parses_every_form() {
    let d = Declaration::parse(
        " k ( a : &[ i8 ; 3 ], b: &out [u16; (rows + 1) * cols / 2], c: &mut[f64;grid.x*block.y - 0x10],\n\
         rows: i32, cols: u64, s: f32, t: f64, u: i64, ) ",
    )
    .unwrap();
    assert_eq!(d.name(), "k");
    assert_eq!(d.len(), 8);
    let params: std::vec::Vec<_> = d.params().collect();
    assert_eq!(params[0].name, "a");
    assert_eq!(params[0].ty, ParamType::Pointer { element: Element::I8, access: PointerAccess::Read });
    assert_eq!(params[0].extent, Some("3"));
    assert_eq!(params[1].ty, ParamType::Pointer { element: Element::U16, access: PointerAccess::Write });
    assert_eq!(params[1].extent, Some("(rows + 1) * cols / 2"));
    assert_eq!(params[2].ty, ParamType::Pointer { element: Element::F64, access: PointerAccess::ReadWrite });
    assert_eq!(params[2].extent, Some("grid.x*block.y - 0x10"));
    assert_eq!(params[5].ty, ParamType::Scalar(Scalar::F32));
    assert_eq!(params[5].extent, None);
    let sizes: std::vec::Vec<_> = d.params().map(|p| p.ty.size()).collect();
    assert_eq!(sizes, [8, 8, 8, 4, 8, 4, 8, 8]);
    assert!(Declaration::parse("empty()").unwrap().is_empty());
    assert_eq!(format!("{:?}", Declaration::parse("e()").unwrap()), "Declaration(\"e()\")");
}

#[test]
fn parse_errors_name_the_column_and_what_was_expected() {
    let cases = [
        ("", 1, "expected the kernel's name, found the end of the declaration"),
        ("k", 2, "expected `(`, found the end of the declaration"),
        ("k(a u32)", 5, "expected `:`, found `u32`"),
        (
            "k(a: u33)",
            6,
            "expected a type (`i32`, `i64`, `f32`, `f64`, `u32`, `u64`, `&[T; n]`, `&mut [T; n]` or `&out [T; n]`), found `u33`",
        ),
        ("k(a: &[f32 n])", 12, "expected `;`, found `n`"),
        ("k(a: &[f32; n)", 14, "expected `]` or an operator (`+`, `-`, `*`, `/`), found `)`"),
        ("k(a: &[bool; 1])", 8, "expected an element type (`u8` ... `f64`), found `bool`"),
        (
            "k(a: &[u8; ])",
            12,
            "expected a count: an integer, an integer parameter, `grid.x` ... `block.z`, or `(`, found `]`",
        ),
        ("k(a: &[u8; grid.w])", 17, "expected `x`, `y` or `z`, found `w`"),
        ("k(a: &[u8; 4294967296])", 12, "a constant of 2^32 or more"),
        ("k(a: &[u8; n])", 12, "`n` is not a parameter of this kernel"),
        ("k(a: &[u8; f], f: f32)", 12, "`f` is not an integer parameter: an extent counts with integers"),
        ("k(a: &[u8; a])", 12, "`a` is not an integer parameter: an extent counts with integers"),
        ("k(n: u32, n: u32)", 11, "a second parameter named `n`"),
        ("k(grid: u32)", 3, "`grid` is a keyword, not a name"),
        ("u32()", 1, "`u32` is a keyword, not a name"),
        ("k(a: u32) x", 11, "expected the end of the declaration, found `x`"),
        ("k(a: u32 b: u32)", 10, "expected `,` or `)`, found `b`"),
        (
            "k(a: &[u8; 1 +])",
            15,
            "expected a count: an integer, an integer parameter, `grid.x` ... `block.z`, or `(`, found `]`",
        ),
        (
            "k(a: &[u8; é])",
            12,
            "expected a count: an integer, an integer parameter, `grid.x` ... `block.z`, or `(`, found `é`",
        ),
    ];
    for (text, column, what) in cases {
        let err = Declaration::parse(text).unwrap_err();
        assert_eq!((err.column, err.to_string()), (column, format!("column {column}: {what}")), "{text:?}");
    }
    let long_name = format!("k({}: u32)", "x".repeat(MAX_NAME_BYTES + 1));
    assert_eq!(
        Declaration::parse(&long_name).unwrap_err().problem,
        Problem::NameTooLong { max: MAX_NAME_BYTES }
    );
    let deep =
        format!("k(a: &[u8; {}1{}])", "(".repeat(MAX_EXTENT_DEPTH + 1), ")".repeat(MAX_EXTENT_DEPTH + 1));
    assert!(matches!(Declaration::parse(&deep).unwrap_err().problem, Problem::ExtentTooLong { .. }));
    let long = format!("k({})", "a: u32, ".repeat(MAX_DECLARATION_BYTES / 8 + 1));
    assert!(matches!(Declaration::parse(&long).unwrap_err().problem, Problem::TooLong { .. }));
    let many: std::string::String =
        (0..=MAX_KERNEL_ARGS).map(|i| format!("p{i}: u32")).collect::<std::vec::Vec<_>>().join(",");
    let err = Declaration::parse(&format!("k({many})")).unwrap_err();
    assert_eq!(err.problem, Problem::TooManyParams { max: MAX_KERNEL_ARGS });
}

#[test]
fn the_holes_are_refused() {
    // 1. A raw integer where the kernel takes a pointer, and a pointer for a scalar.
    let ok = [w(0, 64), w(64, 64), w(128, 64), LoweredArgSnapshot::U32(16)];
    assert_eq!(check(VECTOR_ADD, &ok), Ok(()));
    let raw = [LoweredArgSnapshot::U64(0xdead_0000), w(64, 64), w(128, 64), LoweredArgSnapshot::U32(16)];
    assert_eq!(
        message(VECTOR_ADD, &raw),
        "record 0 at byte 0: a: the kernel takes &[f32; n], the argv has u64"
    );
    let ptr_for_n = [w(0, 64), w(64, 64), w(128, 64), w(0, 4)];
    assert_eq!(
        message(VECTOR_ADD, &ptr_for_n),
        "record 3 at byte 27: n: the kernel takes u32, the argv has ptr"
    );
    // 2. A count larger than the windows.
    let big = [w(0, 16), w(64, 16), w(128, 16), LoweredArgSnapshot::U32(1 << 20)];
    assert_eq!(
        message(VECTOR_ADD, &big),
        "record 0 at byte 0: a: 16-byte window, the kernel touches n * 4 = 4194304 bytes"
    );
    // 3. A window misaligned for its elements.
    let odd = [w(0, 64), w(66, 64), w(128, 64), LoweredArgSnapshot::U32(16)];
    assert_eq!(
        message(VECTOR_ADD, &odd),
        "record 1 at byte 9: b: window at guest offset 66 is not aligned for f32 (4 bytes)"
    );
    // The count.
    let err = check(VECTOR_ADD, &ok[..3]).unwrap_err();
    assert_eq!(err.kind, MismatchKind::Count { declared: 4, got: 3 });
    assert_eq!((err.record, err.offset), (3, 27));
    assert_eq!(err.to_string(), "the kernel takes 4 parameters, the argv has 3 arguments");
}

#[test]
fn types_before_extents_and_extents_in_order() {
    // n is a float: its type is refused before any extent that counts with it is evaluated.
    let args = [w(0, 0), w(0, 0), w(0, 0), LoweredArgSnapshot::F32(F32Bits::from_f32(1.0))];
    assert_eq!(message(VECTOR_ADD, &args), "record 3 at byte 27: n: the kernel takes u32, the argv has f32");
    // The first pointer whose window is short decides.
    let args = [w(0, 64), w(64, 8), w(128, 8), LoweredArgSnapshot::U32(16)];
    assert!(message(VECTOR_ADD, &args).starts_with("record 1 at byte 9: b: 8-byte window"));
}

#[test]
fn extents_evaluate_in_checked_arithmetic() {
    let decl = "k(a: &[f64; rows * cols], b: &[u8; grid.x * block.x * 4 + grid.y], rows: i32, cols: u64)";
    let args = |rows, cols, a_len, b_len| {
        [w(0, a_len), w(0, b_len), LoweredArgSnapshot::I32(rows), LoweredArgSnapshot::U64(cols)]
    };
    assert_eq!(check(decl, &args(3, 5, 120, 4098)), Ok(()));
    assert_eq!(
        message(decl, &args(3, 5, 119, 4098)),
        "record 0 at byte 0: a: 119-byte window, the kernel touches (rows * cols) * 8 = 120 bytes"
    );
    assert_eq!(
        message(decl, &args(3, 5, 120, 4097)),
        "record 1 at byte 9: b: 4097-byte window, the kernel touches grid.x * block.x * 4 + grid.y = 4098 bytes"
    );
    assert_eq!(
        message(decl, &args(-1, 5, 120, 4098)),
        "record 0 at byte 0: a: the kernel touches (rows * cols) * 8 bytes, and rows is negative"
    );
    let err = check(decl, &args(2, u64::MAX, 120, 4098)).unwrap_err();
    assert!(matches!(err.kind, MismatchKind::Overflow { .. }), "{err}");
    // A difference below zero and a division by zero are refusals, never a wrap.
    let under = "k(a: &[u8; n - 2], n: u32)";
    assert!(matches!(
        check(under, &[w(0, 100), LoweredArgSnapshot::U32(1)]).unwrap_err().kind,
        MismatchKind::Overflow { .. }
    ));
    assert_eq!(check(under, &[w(0, 100), LoweredArgSnapshot::U32(2)]), Ok(()));
    let div = "k(a: &[u8; 64 / n], n: u32)";
    assert!(matches!(
        check(div, &[w(0, 100), LoweredArgSnapshot::U32(0)]).unwrap_err().kind,
        MismatchKind::Overflow { .. }
    ));
    assert_eq!(check(div, &[w(0, 32), LoweredArgSnapshot::U32(2)]), Ok(()));
    // Bytes: one-byte elements need no factor.
    assert_eq!(
        message("k(a: &[u8; 5])", &[w(0, 4)]),
        "record 0 at byte 0: a: 4-byte window, the kernel touches 5 = 5 bytes"
    );
}
