//! An independent model of kernel declarations (`docs/declarations.md`): a declaration as a
//! plain value, its text, and the check's rules written as plainly as possible, sharing no code
//! with `kernel_args::Declaration` (its own type tables, `u128` arithmetic for the extents).
//!
//! The property test (`tests/tests/declarations_vs_model.rs`) and the `declaration` fuzz target
//! render a [`Decl`] to text, parse it with the crate, and hold the crate's check to
//! [`Decl::check`] for any argument list and launch shape.

use std::fmt::Write as _;

use kernel_args_core::{Arg, LoweredArgSnapshot};

/// A scalar parameter's type: `(name, tag byte, size)`.
pub const SCALARS: [(&str, u8, u64); 6] =
    [("i32", 1, 4), ("i64", 2, 8), ("f32", 3, 4), ("f64", 4, 8), ("u32", 5, 4), ("u64", 6, 8)];

/// A pointer's element type: `(name, size)`. The size is also its alignment.
pub const ELEMENTS: [(&str, u64); 11] = [
    ("i8", 1),
    ("u8", 1),
    ("i16", 2),
    ("u16", 2),
    ("f16", 2),
    ("i32", 4),
    ("u32", 4),
    ("f32", 4),
    ("i64", 8),
    ("u64", 8),
    ("f64", 8),
];

/// A pointer's access: its spelling.
pub const ACCESSES: [&str; 3] = ["&", "&mut ", "&out "];

/// An extent: the number of elements, as an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// A constant.
    Const(u32),
    /// Parameter `i`'s value (an integer scalar).
    Param(usize),
    /// A launch dimension: 0 to 2 `grid.x` to `grid.z`, 3 to 5 `block.x` to `block.z`.
    Shape(usize),
    /// `(l op r)`, `op` one of `+ - * /`.
    Bin(Box<Expr>, char, Box<Expr>),
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    /// A scalar: an index into [`SCALARS`].
    Scalar(usize),
    /// A pointer: an index into [`ELEMENTS`], one into [`ACCESSES`], and its extent.
    Pointer {
        /// The element type.
        element: usize,
        /// The access.
        access: usize,
        /// The number of elements.
        extent: Expr,
    },
}

/// A declaration: parameter `i` is named `p{i}`, the kernel `k`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decl {
    /// The parameters, in order.
    pub params: Vec<Param>,
}

/// Why the model refuses a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The counts differ.
    Count,
    /// The argument's type is not the parameter's.
    Type,
    /// The window's offset is not a multiple of its element's size.
    Misaligned,
    /// The window is shorter than this many bytes.
    Short(u64),
    /// The extent is out of range (over 64 bits, below zero, a division by zero).
    OutOfRange,
    /// The extent counts with this (signed) parameter, and it is negative.
    Negative(usize),
}

/// A refusal and where: the record, its byte offset, the parameter (none for a count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// The record's index (for a count, the shorter list's length).
    pub record: usize,
    /// Its byte offset in the argv.
    pub offset: usize,
    /// The parameter's index, `None` for a count.
    pub param: Option<usize>,
    /// What.
    pub why: Refusal,
}

impl Expr {
    fn render(&self, out: &mut String) {
        match self {
            Expr::Const(c) => {
                let _ = write!(out, "{c}");
            }
            Expr::Param(i) => {
                let _ = write!(out, "p{i}");
            }
            Expr::Shape(axis) => {
                let what = if *axis < 3 { "grid" } else { "block" };
                let _ = write!(out, "{what}.{}", ["x", "y", "z"][axis % 3]);
            }
            Expr::Bin(l, op, r) => {
                out.push('(');
                l.render(out);
                let _ = write!(out, " {op} ");
                r.render(out);
                out.push(')');
            }
        }
    }

    /// The value for `args` and `shape`, left operand first, then the right, then the
    /// operation (so the first failure is the one met first in that order).
    fn eval(&self, decl: &Decl, args: &[LoweredArgSnapshot], shape: &[u32; 6]) -> Result<u128, Refusal> {
        match self {
            Expr::Const(c) => Ok(u128::from(*c)),
            Expr::Shape(axis) => Ok(u128::from(shape[*axis])),
            Expr::Param(i) => match args.get(*i) {
                Some(Arg::I32(v)) if *v < 0 => Err(Refusal::Negative(*i)),
                Some(Arg::I64(v)) if *v < 0 => Err(Refusal::Negative(*i)),
                Some(Arg::I32(v)) => Ok(*v as u128),
                Some(Arg::I64(v)) => Ok(*v as u128),
                Some(Arg::U32(v)) => Ok(u128::from(*v)),
                Some(Arg::U64(v)) => Ok(u128::from(*v)),
                // The types were checked first; an extent names integer parameters only.
                _ => unreachable!("parameter {i} of {decl:?} is not an integer argument"),
            },
            Expr::Bin(l, op, r) => {
                let (l, r) = (l.eval(decl, args, shape)?, r.eval(decl, args, shape)?);
                let value = match op {
                    '+' => l + r,
                    '-' if r > l => return Err(Refusal::OutOfRange),
                    '-' => l - r,
                    '*' => l * r,
                    '/' if r == 0 => return Err(Refusal::OutOfRange),
                    '/' => l / r,
                    _ => unreachable!("operator {op}"),
                };
                if value > u128::from(u64::MAX) { Err(Refusal::OutOfRange) } else { Ok(value) }
            }
        }
    }

    /// The text's length.
    pub fn text_len(&self) -> usize {
        let mut s = String::new();
        self.render(&mut s);
        s.len()
    }

    /// The deepest its parentheses nest.
    pub fn depth(&self) -> usize {
        match self {
            Expr::Bin(l, _, r) => 1 + l.depth().max(r.depth()),
            _ => 0,
        }
    }

    /// Its operands and operators.
    pub fn ops(&self) -> usize {
        match self {
            Expr::Bin(l, _, r) => 1 + l.ops() + r.ops(),
            _ => 1,
        }
    }
}

impl Decl {
    /// The declaration's text, as a person would write it.
    pub fn render(&self) -> String {
        let mut out = String::from("k(");
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "p{i}: ");
            match p {
                Param::Scalar(s) => out.push_str(SCALARS[*s].0),
                Param::Pointer { element, access, extent } => {
                    let _ = write!(out, "{}[{}; ", ACCESSES[*access], ELEMENTS[*element].0);
                    extent.render(&mut out);
                    out.push(']');
                }
            }
        }
        out.push(')');
        out
    }

    /// Whether parameter `i` is an integer scalar (what an extent may name).
    pub fn is_integer(&self, i: usize) -> bool {
        matches!(self.params.get(i), Some(Param::Scalar(s)) if !matches!(SCALARS[*s].0, "f32" | "f64"))
    }

    /// The model's check of `args` and the launch's `grid` and `block` (`docs/declarations.md`):
    /// the count, every type in order, then every pointer in order (alignment, then length).
    pub fn check(&self, args: &[LoweredArgSnapshot], grid: [u32; 3], block: [u32; 3]) -> Result<(), Refused> {
        let shape = [grid[0], grid[1], grid[2], block[0], block[1], block[2]];
        let offset = |record: usize| args.iter().take(record).map(wire_size).sum::<usize>();
        if args.len() != self.params.len() {
            let record = args.len().min(self.params.len());
            return Err(Refused { record, offset: offset(record), param: None, why: Refusal::Count });
        }
        for (i, (p, a)) in self.params.iter().zip(args).enumerate() {
            let want = match p {
                Param::Scalar(s) => SCALARS[*s].1,
                Param::Pointer { .. } => 7,
            };
            if tag_byte(a) != want {
                return Err(Refused { record: i, offset: offset(i), param: Some(i), why: Refusal::Type });
            }
        }
        for (i, p) in self.params.iter().enumerate() {
            let Param::Pointer { element, extent, .. } = p else { continue };
            let Arg::Ptr(window) = args[i] else { unreachable!("types checked") };
            let refuse = |why| Err(Refused { record: i, offset: offset(i), param: Some(i), why });
            let size = ELEMENTS[*element].1;
            if u64::from(window.guest_offset) % size != 0 {
                return refuse(Refusal::Misaligned);
            }
            let bytes = match extent.eval(self, args, &shape) {
                Ok(count) => count * u128::from(size),
                Err(why) => return refuse(why),
            };
            if bytes > u128::from(u64::MAX) {
                return refuse(Refusal::OutOfRange);
            }
            if bytes > u128::from(window.len) {
                return refuse(Refusal::Short(bytes as u64));
            }
        }
        Ok(())
    }
}

/// An argument's tag byte, from the model's own table.
pub fn tag_byte(arg: &LoweredArgSnapshot) -> u8 {
    match arg {
        Arg::I32(_) => 1,
        Arg::I64(_) => 2,
        Arg::F32(_) => 3,
        Arg::F64(_) => 4,
        Arg::U32(_) => 5,
        Arg::U64(_) => 6,
        Arg::Ptr(_) => 7,
    }
}

/// An argument's record size on the wire, from the model's own table.
fn wire_size(arg: &LoweredArgSnapshot) -> usize {
    match arg {
        Arg::I32(_) | Arg::F32(_) | Arg::U32(_) => 5,
        _ => 9,
    }
}

#[cfg(test)]
mod tests {
    use kernel_args_core::{F32Bits, GuestRange};

    use super::*;

    fn w(guest_offset: u32, len: u32) -> LoweredArgSnapshot {
        Arg::Ptr(GuestRange { guest_offset, len })
    }

    #[test]
    fn vector_add_as_the_docs_say() {
        let n = || Box::new(Expr::Param(3));
        let ptr = |access| Param::Pointer { element: 7, access, extent: *n() };
        let decl = Decl { params: vec![ptr(0), ptr(0), ptr(1), Param::Scalar(4)] };
        assert_eq!(decl.render(), "k(p0: &[f32; p3], p1: &[f32; p3], p2: &mut [f32; p3], p3: u32)");
        let ok = [w(0, 64), w(64, 64), w(128, 64), Arg::U32(16)];
        assert_eq!(decl.check(&ok, [1; 3], [1; 3]), Ok(()));
        let short = [w(0, 64), w(64, 64), w(128, 16), Arg::U32(16)];
        let refused = decl.check(&short, [1; 3], [1; 3]).unwrap_err();
        assert_eq!((refused.record, refused.offset, refused.why), (2, 18, Refusal::Short(64)));
        let raw = [Arg::U64(7), w(64, 64), w(128, 64), Arg::U32(16)];
        assert_eq!(decl.check(&raw, [1; 3], [1; 3]).unwrap_err().why, Refusal::Type);
        let odd = [w(0, 64), w(66, 64), w(128, 64), Arg::U32(16)];
        assert_eq!(decl.check(&odd, [1; 3], [1; 3]).unwrap_err().why, Refusal::Misaligned);
        let float = [w(0, 64), w(64, 64), w(128, 64), Arg::F32(F32Bits(0))];
        assert_eq!(decl.check(&float, [1; 3], [1; 3]).unwrap_err().record, 3);
        let refused = decl.check(&ok[..3], [1; 3], [1; 3]).unwrap_err();
        assert_eq!((refused.record, refused.offset, refused.why), (3, 27, Refusal::Count));
    }

    #[test]
    fn extents_in_checked_arithmetic() {
        let bin = |l, op, r| Expr::Bin(Box::new(l), op, Box::new(r));
        let decl = |extent| Decl {
            params: vec![Param::Pointer { element: 0, access: 0, extent }, Param::Scalar(0)],
        };
        let args = |n| [w(0, 100), Arg::I32(n)];
        // (p1 - 2): below zero for p1 = 1.
        let d = decl(bin(Expr::Param(1), '-', Expr::Const(2)));
        assert_eq!(d.check(&args(1), [1; 3], [1; 3]).unwrap_err().why, Refusal::OutOfRange);
        assert_eq!(d.check(&args(2), [1; 3], [1; 3]), Ok(()));
        assert_eq!(d.check(&args(-1), [1; 3], [1; 3]).unwrap_err().why, Refusal::Negative(1));
        // 64 / p1: a division by zero.
        let d = decl(bin(Expr::Const(64), '/', Expr::Param(1)));
        assert_eq!(d.check(&args(0), [1; 3], [1; 3]).unwrap_err().why, Refusal::OutOfRange);
        // grid.z * block.x * 2^32-1 * 2^32-1 overflows 64 bits.
        let big = bin(bin(Expr::Shape(2), '*', Expr::Shape(3)), '*', Expr::Const(u32::MAX));
        let d = decl(bin(big, '*', Expr::Const(u32::MAX)));
        assert_eq!(d.render(), "k(p0: &[i8; (((grid.z * block.x) * 4294967295) * 4294967295)], p1: i32)");
        assert_eq!(d.check(&args(0), [1, 1, 2], [2, 1, 1]).unwrap_err().why, Refusal::OutOfRange);
        assert_eq!(d.check(&args(0), [1, 1, 0], [2, 1, 1]), Ok(()));
    }
}
