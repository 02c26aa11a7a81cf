//! Random declarations × random argument lists × random launch shapes: `Declaration::parse` of
//! the text the test kit's model renders, then `Declaration::check`, against the model's own
//! check (`kernel_args_testkit::declarations`, sharing no code with the crate): both accept, or
//! both refuse at the same record, byte offset and parameter, for the same reason.

// A test states what must hold by panicking when it does not.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use kernel_args::{Declaration, LaunchArgs, LaunchShape, MismatchKind, ParamType, PointerAccess};
use kernel_args_core::{Arg, F32Bits, F64Bits, GuestRange, LoweredArgSnapshot};
use kernel_args_testkit::declarations::{ACCESSES, Decl, ELEMENTS, Expr, Param, Refusal, SCALARS};
use proptest::prelude::*;

/// An extent over the integer parameters `ints`: constants (mostly small), launch dimensions,
/// parameters, nested up to three operators deep.
fn expr(ints: Vec<usize>) -> impl Strategy<Value = Expr> {
    let param = if ints.is_empty() {
        (0u32..40).prop_map(Expr::Const).boxed()
    } else {
        prop::sample::select(ints).prop_map(Expr::Param).boxed()
    };
    let leaf = prop_oneof![
        4 => (0u32..40).prop_map(Expr::Const),
        1 => prop_oneof![Just(u32::MAX), any::<u32>()].prop_map(Expr::Const),
        2 => (0usize..6).prop_map(Expr::Shape),
        5 => param,
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        (inner.clone(), prop::sample::select(vec!['+', '-', '*', '/']), inner)
            .prop_map(|(l, op, r)| Expr::Bin(Box::new(l), op, Box::new(r)))
    })
}

/// A parameter's shape before its extent: a scalar type, or a pointer's element and access.
#[derive(Debug, Clone)]
enum Skeleton {
    Scalar(usize),
    Pointer(usize, usize),
}

/// Up to 6 parameters, each pointer's extent over the declaration's integer parameters, every
/// extent within the grammar's 64 bytes.
fn decl() -> impl Strategy<Value = Decl> {
    let skeleton = prop_oneof![
        (0..SCALARS.len()).prop_map(Skeleton::Scalar),
        (0..ELEMENTS.len(), 0..ACCESSES.len()).prop_map(|(e, a)| Skeleton::Pointer(e, a)),
    ];
    prop::collection::vec(skeleton, 0..=6).prop_flat_map(|skeletons| {
        let scalars = Decl {
            params: skeletons
                .iter()
                .map(|s| Param::Scalar(if let Skeleton::Scalar(t) = s { *t } else { 0 }))
                .collect(),
        };
        let ints: Vec<usize> = (0..skeletons.len())
            .filter(|&i| matches!(skeletons[i], Skeleton::Scalar(_)) && scalars.is_integer(i))
            .collect();
        let extents = prop::collection::vec(
            expr(ints).prop_filter("an extent within 64 bytes", |e| e.text_len() <= 64),
            skeletons.len(),
        );
        (Just(skeletons), extents).prop_map(|(skeletons, extents)| Decl {
            params: skeletons
                .into_iter()
                .zip(extents)
                .map(|(s, extent)| match s {
                    Skeleton::Scalar(t) => Param::Scalar(t),
                    Skeleton::Pointer(element, access) => Param::Pointer { element, access, extent },
                })
                .collect(),
        })
    })
}

/// An argument of any type.
fn any_arg() -> impl Strategy<Value = LoweredArgSnapshot> {
    prop_oneof![
        any::<i32>().prop_map(Arg::I32),
        any::<i64>().prop_map(Arg::I64),
        any::<u32>().prop_map(|b| Arg::F32(F32Bits(b))),
        any::<u64>().prop_map(|b| Arg::F64(F64Bits(b))),
        any::<u32>().prop_map(Arg::U32),
        any::<u64>().prop_map(Arg::U64),
        (any::<u32>(), any::<u32>())
            .prop_map(|(guest_offset, len)| Arg::Ptr(GuestRange { guest_offset, len })),
    ]
}

/// An argument for `param`: mostly of its type with values near what extents count (small
/// counts, sometimes negative or huge; windows mostly aligned, around a few hundred bytes),
/// sometimes any argument at all.
fn arg_for(param: &Param) -> BoxedStrategy<LoweredArgSnapshot> {
    let small = prop_oneof![8 => -3i64..40, 1 => any::<i64>()];
    let fitting = match param {
        Param::Scalar(t) => match SCALARS[*t].0 {
            "i32" => small.prop_map(|v| Arg::I32(v as i32)).boxed(),
            "i64" => small.prop_map(Arg::I64).boxed(),
            "u32" => small.prop_map(|v| Arg::U32(v as u32)).boxed(),
            "u64" => small.prop_map(|v| Arg::U64(v as u64)).boxed(),
            "f32" => any::<u32>().prop_map(|b| Arg::F32(F32Bits(b))).boxed(),
            _ => any::<u64>().prop_map(|b| Arg::F64(F64Bits(b))).boxed(),
        },
        Param::Pointer { .. } => {
            let offset = prop_oneof![6 => (0u32..64).prop_map(|k| k * 8), 1 => 0u32..512, 1 => any::<u32>()];
            let len = prop_oneof![6 => 0u32..400, 1 => any::<u32>()];
            (offset, len).prop_map(|(guest_offset, len)| Arg::Ptr(GuestRange { guest_offset, len })).boxed()
        }
    };
    prop_oneof![9 => fitting, 1 => any_arg()].boxed()
}

/// A declaration, an argument list for it (sometimes one too short or too long) and a shape.
fn case() -> impl Strategy<Value = (Decl, Vec<LoweredArgSnapshot>, [u32; 3], [u32; 3])> {
    decl().prop_flat_map(|decl| {
        let args: Vec<_> = decl.params.iter().map(arg_for).collect();
        let edit = prop_oneof![8 => Just(0i8), 1 => Just(-1), 1 => Just(1)];
        let dims = || prop::array::uniform3(prop_oneof![8 => 1u32..6, 1 => any::<u32>()]);
        (Just(decl), args, edit, any_arg(), dims(), dims()).prop_map(
            |(decl, mut args, edit, extra, grid, block)| {
                match edit {
                    -1 => {
                        args.pop();
                    }
                    1 => args.push(extra),
                    _ => {}
                }
                (decl, args, grid, block)
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn the_check_is_the_models((decl, args, grid, block) in case()) {
        let text = decl.render();
        let parsed = Declaration::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let shape = LaunchShape { grid, block, shared_mem_bytes: 0 };
        let got = parsed.check(&LaunchArgs::from_slice(&args).expect("at most 7 arguments"), &shape);
        let want = decl.check(&args, grid, block);
        match (got, want) {
            (Ok(()), Ok(())) => {}
            (Err(m), Err(r)) => {
                prop_assert_eq!((m.record, m.offset), (r.record, r.offset), "{} {:?}: {}", text, args, m);
                let param = r.param.map(|i| format!("p{i}")).unwrap_or_default();
                prop_assert_eq!(m.param.as_str(), param.as_str(), "{}: {}", text, m);
                let same = match (&m.kind, r.why) {
                    (MismatchKind::Count { declared, got }, Refusal::Count) => {
                        *declared == decl.params.len() && *got == args.len()
                    }
                    (MismatchKind::Type { got, .. }, Refusal::Type) => *got == args[r.record].tag(),
                    (MismatchKind::Misaligned { .. }, Refusal::Misaligned) => true,
                    (MismatchKind::WindowTooShort { bytes, .. }, Refusal::Short(want)) => *bytes == want,
                    (MismatchKind::Overflow { .. }, Refusal::OutOfRange) => true,
                    (MismatchKind::Negative { scalar, scalar_index, .. }, Refusal::Negative(i)) => {
                        scalar.as_str() == format!("p{i}") && *scalar_index == i
                    }
                    _ => false,
                };
                prop_assert!(same, "{}: crate {:?}, model {:?}", text, m, r);
                prop_assert!(!m.to_string().is_empty());
            }
            (got, want) => prop_assert!(false, "{} {:?}: crate {:?}, model {:?}", text, args, got, want),
        }
    }

    #[test]
    fn the_text_parses_to_its_parameters(decl in decl()) {
        let text = decl.render();
        let parsed = Declaration::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(parsed.name(), "k");
        prop_assert_eq!(parsed.len(), decl.params.len());
        for (i, (got, want)) in parsed.params().zip(&decl.params).enumerate() {
            prop_assert_eq!(got.name, format!("p{i}"));
            match want {
                Param::Scalar(t) => {
                    prop_assert!(matches!(got.ty, ParamType::Scalar(s) if s.name() == SCALARS[*t].0));
                    prop_assert_eq!(got.extent, None);
                }
                Param::Pointer { element, access, .. } => {
                    let ParamType::Pointer { element: e, access: a } = got.ty else {
                        return Err(TestCaseError::fail(format!("{text}: parameter {i} is not a pointer")));
                    };
                    prop_assert_eq!(e.name(), ELEMENTS[*element].0);
                    prop_assert_eq!(u64::from(e.size()), ELEMENTS[*element].1);
                    let want_access = [PointerAccess::Read, PointerAccess::ReadWrite, PointerAccess::Write][*access];
                    prop_assert_eq!(a, want_access);
                }
            }
        }
    }
}

/// The generator reaches every rule: over 4096 cases (a fixed seed), the model accepts some and
/// refuses some for each reason.
#[test]
fn the_cases_reach_every_rule() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let mut seen = [0usize; 7];
    for _ in 0..4096 {
        let (decl, args, grid, block) = case().new_tree(&mut runner).expect("a case").current();
        let slot = match decl.check(&args, grid, block) {
            Ok(()) => 0,
            Err(r) => match r.why {
                Refusal::Count => 1,
                Refusal::Type => 2,
                Refusal::Misaligned => 3,
                Refusal::Short(_) => 4,
                Refusal::OutOfRange => 5,
                Refusal::Negative(_) => 6,
            },
        };
        seen[slot] += 1;
    }
    assert!(
        seen.iter().all(|&n| n >= 20),
        "accepted, count, type, misaligned, short, out of range, negative: {seen:?}"
    );
}
