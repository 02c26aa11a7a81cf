//! Integer and floating-point arithmetic, logic, comparison and selection: `add`, `sub`, `mul`
//! (`.lo`, `.hi`, `.wide`), `mad` (`.lo`, `.wide`), `div`, `rem`, `min`, `max`, `and`, `or`,
//! `xor`, `not`, `shl`, `shr`, `neg`, `abs`, `fma`, `setp` (with its boolean combination,
//! `setp.eq.and.u32 p, a, b, !q`), `selp`, `bfi`, and the math library's `ex2`, `lg2`, `rcp`,
//! `sqrt`, `rsqrt`.
//!
//! Integers wrap at their width; shifts past the width give 0 (or the sign, for `shr.s`), as
//! PTX clamps the shift amount; an integer division by zero gives all ones (PTX leaves it
//! unspecified; it never traps). Floating-point operations round to nearest even whatever the
//! rounding suffix (`.rn`, `.rz`, `.rm`, `.rp`, and `.ftz`, `.approx`, `.full` are read and
//! ignored: subnormals are kept; `ex2.approx` and `rcp.approx` are the host's correctly rounded
//! or nearly so, where a GPU's differ in the last bits), and a NaN result is the GPU's canonical NaN
//! (`0x7fffffff`, `0x7fffffffffffffff`). In 64-bit integer arithmetic a result keeps the
//! pointer parameter an operand came from ([`Registers::origin`](super::Registers)).

use kernel_args_ptx::{Operand as Src, OperandKind};

use super::error::{DecodeError, Needed, Role};
use super::operands::{Names, operand, refused, register, ty};
use super::{Context, Operand, Registers, Ty, f32_bits, f64_bits, read};

/// An integer operation of two operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntKind {
    /// `add`.
    Add,
    /// `sub`.
    Sub,
    /// `mul.lo`.
    MulLo,
    /// `mul.hi`.
    MulHi,
    /// `div`.
    Div,
    /// `rem`.
    Rem,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `and`.
    And,
    /// `or`.
    Or,
    /// `xor`.
    Xor,
    /// `shl`.
    Shl,
    /// `shr`.
    Shr,
}

/// A floating-point operation of two operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatKind {
    /// `add`.
    Add,
    /// `sub`.
    Sub,
    /// `mul`.
    Mul,
    /// `div`.
    Div,
    /// `min`.
    Min,
    /// `max`.
    Max,
}

/// A comparison of `setp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `eq`.
    Eq,
    /// `ne`.
    Ne,
    /// `lt`, `lo` (unsigned).
    Lt,
    /// `le`, `ls`.
    Le,
    /// `gt`, `hi`.
    Gt,
    /// `ge`, `hs`.
    Ge,
    /// `num`: neither float is NaN.
    Num,
    /// `nan`: either float is NaN.
    Nan,
}

/// One decoded instruction of this family.
#[derive(Debug, Clone, PartialEq)]
pub enum ArithOp {
    /// An integer operation.
    Int {
        /// Which.
        kind: IntKind,
        /// The operands' and result's type.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The operands.
        a: Operand,
        /// The second operand.
        b: Operand,
    },
    /// `mul.wide` (`c` none) or `mad.wide`: the 32-bit operands' full 64-bit product (plus `c`).
    Wide {
        /// `.s32` (else `.u32`).
        signed: bool,
        /// The result's register.
        dst: usize,
        /// The factors.
        a: Operand,
        /// The second factor.
        b: Operand,
        /// The addend of `mad.wide`.
        c: Option<Operand>,
    },
    /// `mad.lo`: `a * b + c` at the type's width.
    MadLo {
        /// The type.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The factors and addend.
        a: Operand,
        /// The second factor.
        b: Operand,
        /// The addend.
        c: Operand,
    },
    /// A floating-point operation.
    Float {
        /// Which.
        kind: FloatKind,
        /// `.f32` or `.f64`.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The operands.
        a: Operand,
        /// The second operand.
        b: Operand,
    },
    /// `fma` (and `mad` on floats): `a * b + c` rounded once.
    Fma {
        /// `.f32` or `.f64`.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The factors and addend.
        a: Operand,
        /// The second factor.
        b: Operand,
        /// The addend.
        c: Operand,
    },
    /// `not`, `neg`, `abs`, `popc`, `clz`; on floats `ex2`, `lg2`, `rcp`, `sqrt`, `rsqrt`
    /// (`.approx` or not: computed by the host, correctly rounded or nearly, where a GPU's
    /// approximate instructions may differ in the last bits).
    Unary {
        /// `not` (`'!'`), `neg` (`'-'`), `abs` (`'|'`), `popc` (`'#'`), `clz` (`'z'`), `ex2`
        /// (`'e'`), `lg2` (`'l'`), `rcp` (`'r'`), `sqrt` (`'s'`) or `rsqrt` (`'q'`).
        kind: char,
        /// The type.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The operand.
        a: Operand,
    },
    /// `bfi.ty d, a, b, pos, len`: `b` with its `len` bits from bit `pos` replaced by the low
    /// bits of `a` (`b` as it is where `len` is 0 or `pos` past the type's width; each of
    /// `pos` and `len` read from its low 8 bits, as PTX says).
    Bfi {
        /// `.b32` or `.b64`.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The bits inserted.
        a: Operand,
        /// The bits inserted into.
        b: Operand,
        /// The first bit.
        pos: Operand,
        /// The bits' count.
        len: Operand,
    },
    /// `setp.cmp.ty`: a predicate from a comparison.
    Setp {
        /// The comparison.
        cmp: Cmp,
        /// A float comparison's answer when an operand is NaN: `false` for the ordered ones
        /// (`eq`, `ne`, `lt`, ...), `true` for the unordered ones (`equ`, `neu`, `ltu`, ...).
        unordered: bool,
        /// The operands' type.
        ty: Ty,
        /// The predicate register.
        dst: usize,
        /// The operands.
        a: Operand,
        /// The second operand.
        b: Operand,
        /// `setp.cmp.bool.ty p, a, b, {!}c`: the comparison combined with predicate `c`
        /// (negated where written `!c`) by `and`, `or` or `xor`.
        combine: Option<Combine>,
    },
    /// `isspacep.space p, a`: whether the generic address `a` is in `space`. In this emulator a
    /// generic address is a global one, so the answer is `global`.
    IsSpace {
        /// The predicate register.
        dst: usize,
        /// The space asked about.
        space: AddressSpace,
        /// The generic address.
        a: Operand,
    },
    /// `selp.ty d, a, b, p`: `p ? a : b`.
    Selp {
        /// The type.
        ty: Ty,
        /// The result's register.
        dst: usize,
        /// The operands.
        a: Operand,
        /// The second operand.
        b: Operand,
        /// The predicate register.
        p: usize,
    },
}

/// How `setp` combines its comparison with a predicate: `setp.cmp.bool.ty p, a, b, {!}c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Combine {
    /// `and` (`'&'`), `or` (`'|'`) or `xor` (`'^'`).
    pub op: char,
    /// The predicate register `c`.
    pub predicate: usize,
    /// Whether it is written `!c`.
    pub negated: bool,
}

/// The state space `isspacep` asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressSpace {
    /// `.global`: not in the shared or local window.
    Global,
    /// `.shared`: in the shared window.
    Shared,
    /// `.local`: in the local window.
    Local,
    /// `.const` or `.param`: never (the emulator maps neither into the generic space).
    Other,
}

/// Decodes an instruction of this family: `base` (`add`, ...), its `.`-modifiers, its operands.
/// An opcode this family does not know, or one without a type, is [`DecodeError::Instruction`].
pub fn decode(
    base: &str,
    modifiers: &[&str],
    operands: &[Src],
    names: &mut Names,
) -> Result<ArithOp, DecodeError> {
    let unknown = || DecodeError::Instruction { opcode: base.to_owned() };
    // The opcodes of the arms below: another is refused as an instruction, before its modifiers.
    const OPCODES: &[&str] = &[
        "setp", "selp", "not", "neg", "abs", "popc", "clz", "fma", "mad", "mul", "add", "sub", "div", "rem",
        "min", "max", "and", "or", "xor", "shl", "shr", "ex2", "lg2", "rcp", "sqrt", "rsqrt", "bfi",
    ];
    if !OPCODES.contains(&base) {
        return Err(unknown());
    }
    let ty = modifiers.iter().rev().find_map(|m| ty(m)).ok_or_else(unknown)?;
    let known = |m: &&str| {
        ty_of(m)
            || matches!(
                *m,
                "rn" | "rz" | "rm" | "rp" | "ftz" | "sat" | "approx" | "full" | "lo" | "hi" | "wide"
            )
            || cmp(m).is_some()
            || (base == "setp" && matches!(*m, "and" | "or" | "xor"))
    };
    if let Some(m) = modifiers.iter().find(|m| !known(m)) {
        return Err(DecodeError::Modifier { opcode: base.to_owned(), modifier: (*m).to_owned() });
    }
    let has = |m: &str| modifiers.contains(&m);
    let n = |count: usize| {
        if operands.len() == count {
            Ok(())
        } else {
            Err(DecodeError::OperandCount { opcode: base.to_owned(), count: operands.len() })
        }
    };
    let float = matches!(ty, Ty::F32 | Ty::F64);
    let mut op = |i: usize, t: Ty| operand(&operands[i], t, names);
    match base {
        "setp" => {
            let (cmp, unordered) = modifiers
                .iter()
                .find_map(|m| cmp(m))
                .ok_or_else(|| DecodeError::Missing { opcode: base.to_owned(), what: Needed::Comparison })?;
            let bool_op = modifiers.iter().find_map(|m| match *m {
                "and" => Some('&'),
                "or" => Some('|'),
                "xor" => Some('^'),
                _ => None,
            });
            n(if bool_op.is_some() { 4 } else { 3 })?;
            let (a, b) = (op(1, ty)?, op(2, ty)?);
            let combine = match (bool_op, operands.get(3).map(|o| &o.kind)) {
                (None, _) => None,
                (Some(op), Some(OperandKind::Register(r))) if r.component.is_none() => {
                    Some(Combine { op, predicate: names.register(&r.name)?, negated: false })
                }
                (Some(op), Some(OperandKind::Not(r))) if r.component.is_none() => {
                    Some(Combine { op, predicate: names.register(&r.name)?, negated: true })
                }
                (Some(_), _) => return Err(refused(&operands[3], Role::SetpCombine)),
            };
            Ok(ArithOp::Setp { cmp, unordered, ty, dst: register(&operands[0], names)?, a, b, combine })
        }
        "selp" => {
            n(4)?;
            let (a, b) = (op(1, ty)?, op(2, ty)?);
            let p = register(&operands[3], names)?;
            Ok(ArithOp::Selp { ty, dst: register(&operands[0], names)?, a, b, p })
        }
        "not" | "neg" | "abs" | "popc" | "clz" | "ex2" | "lg2" | "rcp" | "sqrt" | "rsqrt" => {
            n(2)?;
            if matches!(base, "popc" | "clz") && !matches!(ty, Ty::B(32 | 64)) {
                return Err(DecodeError::BitCountType { opcode: base.to_owned() });
            }
            if matches!(base, "ex2" | "lg2" | "rcp" | "sqrt" | "rsqrt") && !float {
                return Err(DecodeError::Form { instruction: format!("{base}.{}", modifiers.join(".")) });
            }
            let a = op(1, ty)?;
            let kind = match base {
                "not" => '!',
                "neg" => '-',
                "popc" => '#',
                "clz" => 'z',
                "ex2" => 'e',
                "lg2" => 'l',
                "rcp" => 'r',
                "sqrt" => 's',
                "rsqrt" => 'q',
                _ => '|',
            };
            Ok(ArithOp::Unary { kind, ty, dst: register(&operands[0], names)?, a })
        }
        "bfi" => {
            n(5)?;
            if !matches!(ty, Ty::B(32 | 64)) {
                return Err(DecodeError::Form { instruction: format!("bfi.{}", modifiers.join(".")) });
            }
            let (a, b) = (op(1, ty)?, op(2, ty)?);
            let (pos, len) = (op(3, Ty::U(32))?, op(4, Ty::U(32))?);
            Ok(ArithOp::Bfi { ty, dst: register(&operands[0], names)?, a, b, pos, len })
        }
        "fma" | "mad" if float => {
            n(4)?;
            let (a, b, c) = (op(1, ty)?, op(2, ty)?, op(3, ty)?);
            Ok(ArithOp::Fma { ty, dst: register(&operands[0], names)?, a, b, c })
        }
        "mad" if has("wide") => {
            n(4)?;
            let (a, b, c) = (op(1, ty)?, op(2, ty)?, op(3, Ty::U(64))?);
            let signed = matches!(ty, Ty::S(_));
            Ok(ArithOp::Wide { signed, dst: register(&operands[0], names)?, a, b, c: Some(c) })
        }
        "mad" if has("lo") => {
            n(4)?;
            let (a, b, c) = (op(1, ty)?, op(2, ty)?, op(3, ty)?);
            Ok(ArithOp::MadLo { ty, dst: register(&operands[0], names)?, a, b, c })
        }
        "mul" if has("wide") => {
            n(3)?;
            let (a, b) = (op(1, ty)?, op(2, ty)?);
            let signed = matches!(ty, Ty::S(_));
            Ok(ArithOp::Wide { signed, dst: register(&operands[0], names)?, a, b, c: None })
        }
        "add" | "sub" | "mul" | "div" | "min" | "max" if float => {
            n(3)?;
            let kind = match base {
                "add" => FloatKind::Add,
                "sub" => FloatKind::Sub,
                "mul" => FloatKind::Mul,
                "div" => FloatKind::Div,
                "min" => FloatKind::Min,
                _ => FloatKind::Max,
            };
            let (a, b) = (op(1, ty)?, op(2, ty)?);
            Ok(ArithOp::Float { kind, ty, dst: register(&operands[0], names)?, a, b })
        }
        "add" | "sub" | "mul" | "div" | "rem" | "min" | "max" | "and" | "or" | "xor" | "shl" | "shr" => {
            n(3)?;
            let kind = match base {
                "add" => IntKind::Add,
                "sub" => IntKind::Sub,
                "mul" if has("hi") => IntKind::MulHi,
                "mul" => IntKind::MulLo,
                "div" => IntKind::Div,
                "rem" => IntKind::Rem,
                "min" => IntKind::Min,
                "max" => IntKind::Max,
                "and" => IntKind::And,
                "or" => IntKind::Or,
                "xor" => IntKind::Xor,
                "shl" => IntKind::Shl,
                _ => IntKind::Shr,
            };
            // A shift amount is a .u32 whatever the type.
            let b_ty = if matches!(kind, IntKind::Shl | IntKind::Shr) { Ty::U(32) } else { ty };
            let (a, b) = (op(1, ty)?, op(2, b_ty)?);
            Ok(ArithOp::Int { kind, ty, dst: register(&operands[0], names)?, a, b })
        }
        _ => Err(unknown()),
    }
}

impl FloatKind {
    /// `x kind y` in `T`'s arithmetic (`min` and `max` as given: `f32::min`, ...).
    fn apply<T>(self, x: T, y: T, min: fn(T, T) -> T, max: fn(T, T) -> T) -> T
    where
        T: std::ops::Add<Output = T>
            + std::ops::Sub<Output = T>
            + std::ops::Mul<Output = T>
            + std::ops::Div<Output = T>,
    {
        match self {
            FloatKind::Add => x + y,
            FloatKind::Sub => x - y,
            FloatKind::Mul => x * y,
            FloatKind::Div => x / y,
            FloatKind::Min => min(x, y),
            FloatKind::Max => max(x, y),
        }
    }
}

impl Cmp {
    /// Whether `x cmp y` holds, for operands that are not NaN.
    fn holds<T: PartialOrd>(self, x: T, y: T) -> bool {
        match self {
            Cmp::Eq => x == y,
            Cmp::Ne => x != y,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            // Operands that are not NaN: numbers both.
            Cmp::Num => true,
            Cmp::Nan => false,
        }
    }
}

fn ty_of(m: &str) -> bool {
    ty(m).is_some()
}

/// A comparison suffix, and whether it is a float's unordered form (`equ`, ...).
fn cmp(m: &str) -> Option<(Cmp, bool)> {
    Some(match m {
        "eq" => (Cmp::Eq, false),
        "ne" => (Cmp::Ne, false),
        "lt" | "lo" => (Cmp::Lt, false),
        "le" | "ls" => (Cmp::Le, false),
        "gt" | "hi" => (Cmp::Gt, false),
        "ge" | "hs" => (Cmp::Ge, false),
        "equ" => (Cmp::Eq, true),
        "neu" => (Cmp::Ne, true),
        "ltu" => (Cmp::Lt, true),
        "leu" => (Cmp::Le, true),
        "gtu" => (Cmp::Gt, true),
        "geu" => (Cmp::Ge, true),
        // With a NaN operand, `num` is false and `nan` true, as the unordered forms are.
        "num" => (Cmp::Num, false),
        "nan" => (Cmp::Nan, true),
        _ => return None,
    })
}

fn as_f32(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

fn as_f64(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// Runs one instruction of this family.
pub fn execute(op: &ArithOp, regs: &mut Registers, cx: &Context<'_, '_>) {
    match *op {
        ArithOp::Int { kind, ty, dst, a, b } => {
            let ((x, ox), (y, oy)) = (read(regs, cx, a), read(regs, cx, b));
            let (sx, sy) = (ty.widen(x), ty.widen(y));
            let width = ty.bits();
            let result: u64 = match kind {
                IntKind::Add => x.wrapping_add(y),
                IntKind::Sub => x.wrapping_sub(y),
                IntKind::MulLo => x.wrapping_mul(y),
                IntKind::MulHi => ((sx * sy) >> width) as u64,
                IntKind::Div if sy == 0 => u64::MAX,
                IntKind::Div => (sx / sy) as u64,
                IntKind::Rem if sy == 0 => u64::MAX,
                IntKind::Rem => (sx % sy) as u64,
                IntKind::Min => sx.min(sy) as u64,
                IntKind::Max => sx.max(sy) as u64,
                IntKind::And => x & y,
                IntKind::Or => x | y,
                IntKind::Xor => x ^ y,
                IntKind::Shl if y & 0xffff_ffff >= u64::from(width) => 0,
                IntKind::Shl => x << (y & 0xffff_ffff),
                IntKind::Shr => {
                    let amount = (y & 0xffff_ffff).min(u64::from(width));
                    match ty {
                        Ty::S(_) => (sx >> amount.min(127)) as u64,
                        _ if amount >= u64::from(width) => 0,
                        _ => (x & ty.mask()) >> amount,
                    }
                }
            };
            regs.bits[dst] = result & ty.mask();
            // Pointer arithmetic keeps the pointer's origin.
            regs.origin[dst] = if width == 64 && matches!(kind, IntKind::Add | IntKind::Sub | IntKind::And) {
                if ox != 0 { ox } else { oy }
            } else {
                0
            };
        }
        ArithOp::Wide { signed, dst, a, b, c } => {
            let ty = if signed { Ty::S(32) } else { Ty::U(32) };
            let (x, y) = (ty.widen(read(regs, cx, a).0), ty.widen(read(regs, cx, b).0));
            let (addend, origin) = c.map_or((0, 0), |c| read(regs, cx, c));
            regs.bits[dst] = ((x * y) as u64).wrapping_add(addend);
            regs.origin[dst] = origin;
        }
        ArithOp::MadLo { ty, dst, a, b, c } => {
            let ((x, _), (y, _), (z, oz)) = (read(regs, cx, a), read(regs, cx, b), read(regs, cx, c));
            regs.bits[dst] = x.wrapping_mul(y).wrapping_add(z) & ty.mask();
            regs.origin[dst] = if ty.bits() == 64 { oz } else { 0 };
        }
        ArithOp::Float { kind, ty, dst, a, b } => {
            let (x, y) = (read(regs, cx, a).0, read(regs, cx, b).0);
            regs.bits[dst] = if ty == Ty::F32 {
                f32_bits(kind.apply(as_f32(x), as_f32(y), f32::min, f32::max))
            } else {
                f64_bits(kind.apply(as_f64(x), as_f64(y), f64::min, f64::max))
            };
            regs.origin[dst] = 0;
        }
        ArithOp::Fma { ty, dst, a, b, c } => {
            let (x, y, z) = (read(regs, cx, a).0, read(regs, cx, b).0, read(regs, cx, c).0);
            regs.bits[dst] = if ty == Ty::F32 {
                f32_bits(as_f32(x).mul_add(as_f32(y), as_f32(z)))
            } else {
                f64_bits(as_f64(x).mul_add(as_f64(y), as_f64(z)))
            };
            regs.origin[dst] = 0;
        }
        ArithOp::Unary { kind, ty, dst, a } => {
            let x = read(regs, cx, a).0;
            regs.bits[dst] = match (kind, ty) {
                ('-', Ty::F32) => u64::from((-as_f32(x)).to_bits()),
                ('-', Ty::F64) => (-as_f64(x)).to_bits(),
                // In `f64`, then rounded to the type (exact for `sqrt` and `rcp` of an `f32`).
                ('e' | 'l' | 'r' | 's' | 'q', _) => {
                    let v = if ty == Ty::F32 { f64::from(as_f32(x)) } else { as_f64(x) };
                    let r = match kind {
                        'e' => v.exp2(),
                        'l' => v.log2(),
                        'r' => v.recip(),
                        's' => v.sqrt(),
                        _ => v.sqrt().recip(),
                    };
                    if ty == Ty::F32 { f32_bits(r as f32) } else { f64_bits(r) }
                }
                ('|', Ty::F32) => x & 0x7fff_ffff,
                ('|', Ty::F64) => x & 0x7fff_ffff_ffff_ffff,
                // A predicate is true or false, whatever bits it holds.
                ('!', Ty::Pred) => u64::from(x == 0),
                ('!', _) => !x & ty.mask(),
                // A 32-bit count, whatever the operand's width.
                ('#', _) => u64::from((x & ty.mask()).count_ones()),
                ('z', _) => u64::from((x & ty.mask()).leading_zeros() - (64 - ty.bits())),
                ('-', _) => x.wrapping_neg() & ty.mask(),
                _ => (ty.widen(x).unsigned_abs() as u64) & ty.mask(),
            };
            regs.origin[dst] = 0;
        }
        ArithOp::Bfi { ty, dst, a, b, pos, len } => {
            let (x, y) = (read(regs, cx, a).0, read(regs, cx, b).0);
            let (pos, len) = (read(regs, cx, pos).0 & 0xff, read(regs, cx, len).0 & 0xff);
            let bits = u64::from(ty.bits());
            regs.bits[dst] = if len == 0 || pos >= bits {
                y & ty.mask()
            } else {
                let len = len.min(bits - pos);
                let mask = (u64::MAX >> (64 - len)) << pos;
                ((y & !mask) | ((x << pos) & mask)) & ty.mask()
            };
            regs.origin[dst] = 0;
        }
        ArithOp::Setp { cmp, unordered, ty, dst, a, b, combine } => {
            let (x, y) = (read(regs, cx, a).0, read(regs, cx, b).0);
            let float = |x: f64, y: f64| if x.is_nan() || y.is_nan() { unordered } else { cmp.holds(x, y) };
            let holds = match ty {
                Ty::F32 => float(f64::from(as_f32(x)), f64::from(as_f32(y))),
                Ty::F64 => float(as_f64(x), as_f64(y)),
                _ => cmp.holds(ty.widen(x), ty.widen(y)),
            };
            let holds = match combine {
                None => holds,
                Some(Combine { op, predicate, negated }) => {
                    let c = (regs.bits[predicate] != 0) != negated;
                    match op {
                        '&' => holds && c,
                        '|' => holds || c,
                        _ => holds != c,
                    }
                }
            };
            regs.bits[dst] = u64::from(holds);
            regs.origin[dst] = 0;
        }
        ArithOp::IsSpace { dst, space, a } => {
            let address = read(regs, cx, a).0;
            let window = super::window_of(address).map(|(space, _)| space);
            regs.bits[dst] = u64::from(match space {
                AddressSpace::Global => window.is_none(),
                AddressSpace::Shared => window == Some(super::Space::Shared),
                AddressSpace::Local => window == Some(super::Space::Local),
                AddressSpace::Other => false,
            });
            regs.origin[dst] = 0;
        }
        ArithOp::Selp { ty, dst, a, b, p } => {
            let chosen = if regs.bits[p] != 0 { a } else { b };
            let (value, origin) = read(regs, cx, chosen);
            regs.bits[dst] = value & ty.mask();
            regs.origin[dst] = origin;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::results;

    #[test]
    fn integers_wrap_shift_clamp_and_divide_by_zero_without_trapping() {
        let got = results(&[
            "add.s32 %r9, 2147483647, 1;",
            "sub.u32 %r9, 0, 1;",
            "mul.lo.s32 %r9, 65536, 65536;",
            "mul.hi.s32 %r9, -2, 3;",
            "mul.hi.u32 %r9, 4294967295, 2;",
            "div.s32 %r9, -7, 2;",
            "rem.s32 %r9, -7, 2;",
            "div.u32 %r9, 7, 0;",
            "min.s32 %r9, -1, 1;",
            "min.u32 %r9, -1, 1;",
            "shl.b32 %r9, 1, 32;",
            "shr.s32 %r9, -8, 40;",
            "shr.u32 %r9, -8, 28;",
            "mad.lo.s32 %r9, 3, 4, -20;",
            "xor.b32 %r9, 0xff00, 0x0ff0;",
            "not.b32 %r9, 0;",
            "neg.s32 %r9, 5;",
            "abs.s32 %r9, -5;",
        ]);
        let want: [u32; 18] = [
            0x8000_0000,
            u32::MAX,
            0,
            u32::MAX,
            1,
            (-3i32) as u32,
            (-1i32) as u32,
            u32::MAX,
            (-1i32) as u32,
            1,
            0,
            u32::MAX,
            15,
            (-8i32) as u32,
            0xf0f0,
            u32::MAX,
            (-5i32) as u32,
            5,
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn comparisons_selection_and_wide_products() {
        let got = results(&[
            "setp.lt.s32 %p1, -1, 0;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.lt.u32 %p1, -1, 0;\n\tselp.u32 %r9, 1, 2, %p1;",
            // Ordered comparisons are false with a NaN operand, `ne` too; unordered ones true.
            "setp.ne.f32 %p1, 0f7FC00000, 0f7FC00000;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.neu.f32 %p1, 0f7FC00000, 0f3F800000;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.ltu.f64 %p1, 0d3FF0000000000000, 0d4000000000000000;\n\tselp.u32 %r9, 1, 2, %p1;",
            "mul.wide.s32 %rd9, -2, 3;\n\tcvt.u32.u64 %r9, %rd9;",
            "mul.wide.s32 %rd9, -2, 3;\n\tshr.u64 %rd9, %rd9, 32;\n\tcvt.u32.u64 %r9, %rd9;",
            "mul.wide.u32 %rd9, 4294967295, 2;\n\tshr.u64 %rd9, %rd9, 32;\n\tcvt.u32.u64 %r9, %rd9;",
            "or.pred %p1, %p2, %p3;\n\tselp.u32 %r9, 1, 2, %p1;",
        ]);
        assert_eq!(got, [1, 2, 2, 1, 1, (-6i32) as u32, u32::MAX, 1, 2]);
    }

    /// The math library's approximate instructions, computed by the host, and `bfi`.
    #[test]
    fn approximate_functions_and_bit_field_inserts() {
        let got = results(&[
            "ex2.approx.ftz.f32 %f9, 0f40400000;\n\tmov.b32 %r9, %f9;",
            "lg2.approx.f32 %f9, 0f41000000;\n\tmov.b32 %r9, %f9;",
            "rcp.approx.ftz.f32 %f9, 0f40800000;\n\tmov.b32 %r9, %f9;",
            "rcp.rn.f64 %fd9, 0d4010000000000000;\n\tmov.b64 %rd9, %fd9;\n\tshr.u64 %rd9, %rd9, 32;\n\tcvt.u32.u64 %r9, %rd9;",
            "sqrt.rn.f32 %f9, 0f41100000;\n\tmov.b32 %r9, %f9;",
            "rsqrt.approx.f32 %f9, 0f40800000;\n\tmov.b32 %r9, %f9;",
            // 0xAB's low 4 bits into bits 8 to 11 of 0xFFFF_FFFF.
            "bfi.b32 %r9, 0xAB, 0xFFFFFFFF, 8, 4;",
            // A length past the width inserts up to the top; a length of 0 inserts nothing.
            "bfi.b32 %r9, 0, 0xFFFFFFFF, 28, 200;",
            "bfi.b32 %r9, 0, 0xFFFFFFFF, 4, 0;",
            "bfi.b64 %rd9, 0x12345678, 0x9ABCDEF0, 32, 32;\n\tshr.u64 %rd9, %rd9, 32;\n\tcvt.u32.u64 %r9, %rd9;",
        ]);
        assert_eq!(
            got,
            [
                8.0f32.to_bits(),
                3.0f32.to_bits(),
                0.25f32.to_bits(),
                (0.25f64.to_bits() >> 32) as u32,
                3.0f32.to_bits(),
                0.5f32.to_bits(),
                0xFFFF_FBFF,
                0x0FFF_FFFF,
                u32::MAX,
                0x1234_5678,
            ]
        );
    }

    #[test]
    fn setp_combines_its_comparison_with_a_predicate_or_its_negation() {
        // %p2 is false (never written).
        let got = results(&[
            "setp.eq.and.u32 %p1, 0, 0, %p2;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.eq.and.u32 %p1, 0, 0, !%p2;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.eq.and.u32 %p1, 1, 0, !%p2;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.eq.or.u32 %p1, 1, 0, !%p2;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.eq.or.u32 %p1, 1, 0, %p2;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.eq.xor.u32 %p1, 0, 0, !%p2;\n\tselp.u32 %r9, 1, 2, %p1;",
            "setp.lt.xor.s32 %p1, -1, 0, %p2;\n\tselp.u32 %r9, 1, 2, %p1;",
        ]);
        assert_eq!(got, [2, 1, 2, 1, 2, 2, 1]);
    }

    #[test]
    fn floats_round_once_and_give_the_canonical_nan() {
        let got = results(&[
            "add.f32 %f9, 0f3F800000, 0f40000000;\n\tmov.b32 %r9, %f9;",
            "sub.f32 %f9, 0f7F800000, 0f7F800000;\n\tmov.b32 %r9, %f9;",
            // (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 rounded once (fma), 0 rounded twice.
            "fma.rn.f32 %f9, 0f3F800800, 0f3F800800, 0fBF801000;\n\tmov.b32 %r9, %f9;",
            "mul.f32 %f8, 0f3F800800, 0f3F800800;\n\tadd.f32 %f9, %f8, 0fBF801000;\n\tmov.b32 %r9, %f9;",
            "mul.f32 %f9, 0f3F800001, 0f3F800001;\n\tmov.b32 %r9, %f9;",
            "neg.f32 %f9, 0f00000000;\n\tmov.b32 %r9, %f9;",
            "abs.f32 %f9, 0fBF800000;\n\tmov.b32 %r9, %f9;",
            "min.f32 %f9, 0f7FC00000, 0f3F800000;\n\tmov.b32 %r9, %f9;",
        ]);
        let product = (f32::from_bits(0x3f80_0001) * f32::from_bits(0x3f80_0001)).to_bits();
        assert_eq!(
            got,
            [
                3.0f32.to_bits(),
                0x7fff_ffff,
                0x3380_0000,
                0,
                product,
                0x8000_0000,
                1.0f32.to_bits(),
                1.0f32.to_bits()
            ]
        );
    }
}
