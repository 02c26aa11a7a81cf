//! Moves and conversions: `mov`, `cvt` (between integer widths and signedness, between float
//! widths, and between integers and floats), `cvta` (to and from the global space: an
//! identity, as global addresses are generic ones; to and from the shared and local spaces:
//! the windows of the generic address space, [`SHARED_WINDOW`](super::SHARED_WINDOW) and
//! [`LOCAL_WINDOW`](super::LOCAL_WINDOW)).
//!
//! `cvt` to an integer narrower than the source truncates; to a wider one it sign-extends a
//! signed source and zero-extends an unsigned one. Float to integer rounds as its suffix says
//! (`.rzi` toward zero, `.rni` to nearest even, `.rmi` down, `.rpi` up) and saturates, NaN
//! giving 0, as the GPU does; integer to float and `f64` to `f32` round to nearest even; a NaN
//! result is the canonical NaN. A `mov` or `cvta` of a 64-bit register keeps the pointer
//! parameter it came from.

use kernel_args_ptx::Operand as Src;

use super::error::DecodeError;
use super::operands::{Names, operand, register, ty};
use super::{Context, Operand, Registers, Ty, f32_bits, f64_bits, read};

/// How a float-to-integer `cvt` rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// Toward zero (`.rzi`, and the default for a float-to-integer `cvt` without one).
    Zero,
    /// To nearest even (`.rni`).
    Nearest,
    /// Down (`.rmi`).
    Down,
    /// Up (`.rpi`).
    Up,
}

/// One decoded instruction of this family.
#[derive(Debug, Clone, PartialEq)]
pub enum ConvertOp {
    /// `mov.ty d, a`.
    Mov {
        /// The type.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The source.
        src: Operand,
    },
    /// `cvta`: the address plus `add` (a window's start, or its negation for `cvta.to`, or 0
    /// for the global space), in `bits` bits.
    Cvta {
        /// The result's register.
        dst: usize,
        /// The address.
        src: Operand,
        /// What is added.
        add: u64,
        /// 32 or 64.
        bits: u32,
    },
    /// `cvt.to.from d, a`.
    Cvt {
        /// The result's type.
        to: Ty,
        /// The source's type.
        from: Ty,
        /// A float-to-integer conversion's rounding.
        round: Round,
        /// A float-to-float conversion rounds to an integral value (`.rzi`, `.rni`, `.rmi`,
        /// `.rpi`), as `round` says.
        integral: bool,
        /// `.sat` on a float result: clamped to `[0, 1]`, NaN giving 0.
        saturate: bool,
        /// The result's register.
        dst: usize,
        /// The source.
        src: Operand,
    },
}

/// Decodes `mov`, `cvt` or `cvta`.
pub fn decode(
    base: &str,
    modifiers: &[&str],
    operands: &[Src],
    names: &mut Names,
) -> Result<ConvertOp, DecodeError> {
    if operands.len() != 2 {
        return Err(DecodeError::OperandCount { opcode: base.to_owned(), count: operands.len() });
    }
    let types_of = || DecodeError::Types {
        opcode: base.to_owned(),
        modifiers: modifiers.iter().map(|m| (*m).to_owned()).collect(),
    };
    let modifier = |m: &str| DecodeError::Modifier { opcode: base.to_owned(), modifier: m.to_owned() };
    let types: Vec<Ty> = modifiers.iter().filter_map(|m| ty(m)).collect();
    match base {
        "mov" => {
            let [ty] = types[..] else { return Err(types_of()) };
            if let Some(m) = modifiers.iter().find(|m| ty_of(m).is_none()) {
                return Err(modifier(m));
            }
            let src = operand(&operands[1], ty, names)?;
            Ok(ConvertOp::Mov { ty, dst: register(&operands[0], names)?, src })
        }
        "cvta" => {
            let (to, rest) = match modifiers.split_first() {
                Some((&"to", rest)) => (true, rest),
                _ => (false, modifiers),
            };
            let (window, bits) = match rest {
                ["global", "u64"] => (0, 64),
                ["shared" | "shared::cta", "u64"] => (super::SHARED_WINDOW, 64),
                ["shared" | "shared::cta", "u32"] => (super::SHARED_WINDOW, 32),
                ["local", "u64"] => (super::LOCAL_WINDOW, 64),
                ["local", "u32"] => (super::LOCAL_WINDOW, 32),
                _ => return Err(DecodeError::Form { instruction: format!("cvta.{}", modifiers.join(".")) }),
            };
            let add = if to { window.wrapping_neg() } else { window };
            let src = operand(&operands[1], Ty::U(64), names)?;
            Ok(ConvertOp::Cvta { dst: register(&operands[0], names)?, src, add, bits })
        }
        _ => {
            let [to, from] = types[..] else { return Err(types_of()) };
            let mut round = Round::Zero;
            let (mut integral, mut saturate) = (false, false);
            for m in modifiers.iter().filter(|m| ty_of(m).is_none()) {
                round = match *m {
                    "rzi" => Round::Zero,
                    "rni" => Round::Nearest,
                    "rmi" => Round::Down,
                    "rpi" => Round::Up,
                    // Rounding of a float result: to nearest (what Rust's conversions do).
                    "rn" | "ftz" | "sat" => round,
                    other => return Err(modifier(other)),
                };
                integral |= matches!(*m, "rzi" | "rni" | "rmi" | "rpi");
                saturate |= *m == "sat";
            }
            let float_to_float = matches!(to, Ty::F32 | Ty::F64) && matches!(from, Ty::F32 | Ty::F64);
            let integral = integral && float_to_float;
            let saturate = saturate && matches!(to, Ty::F32 | Ty::F64);
            let src = operand(&operands[1], from, names)?;
            let dst = register(&operands[0], names)?;
            Ok(ConvertOp::Cvt { to, from, round, integral, saturate, dst, src })
        }
    }
}

fn ty_of(m: &str) -> Option<Ty> {
    ty(m)
}

/// `value` rounded to an integral value as `round` says (a float-to-float `cvt.rzi` and the
/// like; NaN and infinities as they are).
fn integral_value(value: f64, round: Round) -> f64 {
    match round {
        Round::Zero => value.trunc(),
        Round::Nearest => value.round_ties_even(),
        Round::Down => value.floor(),
        Round::Up => value.ceil(),
    }
}

/// A float as an integer of type `to`: rounded, saturated, NaN as 0.
fn float_to_int(value: f64, round: Round, to: Ty) -> u64 {
    if value.is_nan() {
        return 0;
    }
    let rounded = match round {
        Round::Zero => value.trunc(),
        Round::Nearest => value.round_ties_even(),
        Round::Down => value.floor(),
        Round::Up => value.ceil(),
    };
    let (low, high) = match to {
        Ty::S(width) => (-(2f64.powi(i32::from(width) - 1)), 2f64.powi(i32::from(width) - 1) - 1.0),
        _ => (0.0, 2f64.powi(to.bits() as i32) - 1.0),
    };
    let clamped = rounded.clamp(low, high);
    (if matches!(to, Ty::S(_)) { clamped as i64 as u64 } else { clamped as u64 }) & to.mask()
}

/// Runs one instruction of this family.
pub fn execute(op: &ConvertOp, regs: &mut Registers, cx: &Context<'_, '_>) {
    match *op {
        ConvertOp::Mov { ty, dst, src } => {
            let (value, origin) = read(regs, cx, src);
            regs.bits[dst] = value & ty.mask();
            regs.origin[dst] = if ty.bits() == 64 { origin } else { 0 };
        }
        ConvertOp::Cvta { dst, src, add, bits } => {
            let (value, origin) = read(regs, cx, src);
            let converted = value.wrapping_add(add);
            regs.bits[dst] = if bits == 32 { converted & 0xffff_ffff } else { converted };
            regs.origin[dst] = if add == 0 { origin } else { 0 };
        }
        ConvertOp::Cvt { to, from, round, integral, saturate, dst, src } => {
            let bits = read(regs, cx, src).0;
            let bits = match from {
                Ty::F32 if integral => {
                    f32_bits(integral_value(f64::from(f32::from_bits(bits as u32)), round) as f32)
                }
                Ty::F64 if integral => f64_bits(integral_value(f64::from_bits(bits), round)),
                _ => bits,
            };
            let bits = match (to, from) {
                (Ty::F32, Ty::F32) | (Ty::F64, Ty::F64) => bits,
                (Ty::F64, Ty::F32) => f64_bits(f64::from(f32::from_bits(bits as u32))),
                (Ty::F32, Ty::F64) => f32_bits(f64::from_bits(bits) as f32),
                (Ty::F32, _) => u64::from((from.widen(bits) as f32).to_bits()),
                (Ty::F64, _) => (from.widen(bits) as f64).to_bits(),
                (_, Ty::F32) => float_to_int(f64::from(f32::from_bits(bits as u32)), round, to),
                (_, Ty::F64) => float_to_int(f64::from_bits(bits), round, to),
                _ => (from.widen(bits) as u64) & to.mask(),
            };
            regs.bits[dst] = match to {
                Ty::F32 if saturate => {
                    let v = f32::from_bits(bits as u32);
                    f32_bits(if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) })
                }
                Ty::F64 if saturate => {
                    let v = f64::from_bits(bits);
                    f64_bits(if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) })
                }
                _ => bits,
            };
            regs.origin[dst] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::results;

    #[test]
    fn integer_widths_extend_by_signedness_and_truncate() {
        let got = results(&[
            "mov.u16 %rs1, 0xfffe;\n\tcvt.s32.s16 %r9, %rs1;",
            "mov.u16 %rs1, 0xfffe;\n\tcvt.u32.u16 %r9, %rs1;",
            "mov.u64 %rd1, 0x1234567890;\n\tcvt.u32.u64 %r9, %rd1;",
            "mov.u32 %r1, -1;\n\tcvt.s64.s32 %rd1, %r1;\n\tshr.u64 %rd1, %rd1, 32;\n\tcvt.u32.u64 %r9, %rd1;",
            "mov.u32 %r1, -1;\n\tcvt.u64.u32 %rd1, %r1;\n\tshr.u64 %rd1, %rd1, 32;\n\tcvt.u32.u64 %r9, %rd1;",
        ]);
        assert_eq!(got, [(-2i32) as u32, 0xfffe, 0x3456_7890, u32::MAX, 0]);
    }

    /// A float-to-float `cvt` with an integer rounding rounds to an integral value; `.sat`
    /// clamps to `[0, 1]`, NaN giving 0 (as the math library's `expf` and `powf` rely on).
    #[test]
    fn floats_round_to_integral_values_and_saturate() {
        let got = results(&[
            "cvt.rzi.f32.f32 %f9, 0fC0300000;\n\tmov.b32 %r9, %f9;",
            "cvt.rni.f32.f32 %f9, 0f40200000;\n\tmov.b32 %r9, %f9;",
            "cvt.rmi.f32.f32 %f9, 0fC0300000;\n\tmov.b32 %r9, %f9;",
            "cvt.rpi.f32.f32 %f9, 0f40300000;\n\tmov.b32 %r9, %f9;",
            "cvt.sat.f32.f32 %f9, 0f40300000;\n\tmov.b32 %r9, %f9;",
            "cvt.sat.f32.f32 %f9, 0fBF000000;\n\tmov.b32 %r9, %f9;",
            "cvt.sat.f32.f32 %f9, 0f7FC00000;\n\tmov.b32 %r9, %f9;",
            "cvt.f32.f32 %f9, 0f40300000;\n\tmov.b32 %r9, %f9;",
        ]);
        assert_eq!(
            got,
            [
                (-2.0f32).to_bits(),
                2.0f32.to_bits(),
                (-3.0f32).to_bits(),
                3.0f32.to_bits(),
                1.0f32.to_bits(),
                0,
                0,
                2.75f32.to_bits(),
            ]
        );
    }

    #[test]
    fn floats_and_integers_round_saturate_and_canonicalise() {
        let got = results(&[
            "cvt.rzi.s32.f32 %r9, 0fC0700000;",
            "cvt.rni.s32.f32 %r9, 0f40200000;",
            "cvt.rmi.s32.f32 %r9, 0fC0700000;",
            "cvt.rzi.s32.f32 %r9, 0f7F800000;",
            "cvt.rzi.u32.f32 %r9, 0fBF800000;",
            "cvt.rzi.s32.f32 %r9, 0f7FC00000;",
            "cvt.rn.f32.s32 %f1, -3;\n\tmov.b32 %r9, %f1;",
            "cvt.rn.f32.u32 %f1, 16777217;\n\tmov.b32 %r9, %f1;",
            "cvt.rn.f32.f64 %f1, 0d3FF0000000000001;\n\tmov.b32 %r9, %f1;",
            "cvt.f64.f32 %fd1, 0f7FC00001;\n\tmov.b64 %rd1, %fd1;\n\tshr.u64 %rd1, %rd1, 32;\n\tcvt.u32.u64 %r9, %rd1;",
        ]);
        let want = [
            (-3i32) as u32,
            2,
            (-4i32) as u32,
            i32::MAX as u32,
            0,
            0,
            (-3.0f32).to_bits(),
            16_777_216f32.to_bits(),
            1.0f32.to_bits(),
            0x7fff_ffff,
        ];
        assert_eq!(got, want);
    }
}
