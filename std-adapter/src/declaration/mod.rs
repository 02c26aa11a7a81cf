//! Kernel declarations ([`Declaration`]): the types a declaration names and the parsed form
//! (here), the grammar's parser (`grammar.rs`), the check of a launch against a declaration
//! (`check.rs`), and the errors of both, which keep their text in fixed capacity
//! (`errors.rs`).

use core::fmt;

use kernel_args_core::{ArgTag, LoweredArgSnapshot, MAX_KERNEL_ARGS};

use crate::args::LaunchArgs;
use crate::checks::LaunchShape;
use crate::limits::{
    MAX_DECLARATION_BYTES, MAX_EXTENT_BYTES, MAX_EXTENT_DEPTH, MAX_EXTENT_OPS, MAX_NAME_BYTES,
};

mod check;
mod errors;
mod grammar;
#[cfg(test)]
mod tests;

pub use self::errors::{DeclarationError, Expected, Mismatch, MismatchKind, Name, Problem, Text};
use self::errors::{joined, truncated};
use self::grammar::Parser;

/// A scalar parameter's type: one of the wire format's scalar types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Scalar {
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
}

impl Scalar {
    const ALL: [Scalar; 6] = [Scalar::I32, Scalar::I64, Scalar::F32, Scalar::F64, Scalar::U32, Scalar::U64];

    /// The wire tag of an argument of this type.
    pub const fn tag(self) -> ArgTag {
        match self {
            Scalar::I32 => ArgTag::I32,
            Scalar::I64 => ArgTag::I64,
            Scalar::F32 => ArgTag::F32,
            Scalar::F64 => ArgTag::F64,
            Scalar::U32 => ArgTag::U32,
            Scalar::U64 => ArgTag::U64,
        }
    }

    /// The type's name (`"u32"`, ...).
    pub const fn name(self) -> &'static str {
        self.tag().name()
    }

    /// The parameter's size in bytes, which is also its alignment (4 or 8).
    pub const fn size(self) -> usize {
        self.tag().value_size()
    }

    /// Whether an extent may count with it (the integer types).
    const fn is_integer(self) -> bool {
        !matches!(self, Scalar::F32 | Scalar::F64)
    }
}

/// The type of the elements a pointer parameter points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Element {
    /// `i8`.
    I8,
    /// `u8`.
    U8,
    /// `i16`.
    I16,
    /// `u16`.
    U16,
    /// `f16`.
    F16,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `f32`.
    F32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// `f64`.
    F64,
}

impl Element {
    const ALL: [Element; 11] = [
        Element::I8,
        Element::U8,
        Element::I16,
        Element::U16,
        Element::F16,
        Element::I32,
        Element::U32,
        Element::F32,
        Element::I64,
        Element::U64,
        Element::F64,
    ];

    /// The element type named `name` (`"f32"`, ...), as a declaration writes it.
    pub fn from_name(name: &str) -> Option<Element> {
        Element::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The type's name (`"f32"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Element::I8 => "i8",
            Element::U8 => "u8",
            Element::I16 => "i16",
            Element::U16 => "u16",
            Element::F16 => "f16",
            Element::I32 => "i32",
            Element::U32 => "u32",
            Element::F32 => "f32",
            Element::I64 => "i64",
            Element::U64 => "u64",
            Element::F64 => "f64",
        }
    }

    /// An element's size in bytes, which is also the alignment its window's guest offset needs.
    pub const fn size(self) -> u32 {
        match self {
            Element::I8 | Element::U8 => 1,
            Element::I16 | Element::U16 | Element::F16 => 2,
            Element::I32 | Element::U32 | Element::F32 => 4,
            Element::I64 | Element::U64 | Element::F64 => 8,
        }
    }
}

/// What a kernel does through a pointer parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PointerAccess {
    /// `&[T; n]`: reads only. A staged launch does not copy the window back.
    Read,
    /// `&out [T; n]`: writes (and may read what it wrote).
    Write,
    /// `&mut [T; n]`: reads and writes.
    ReadWrite,
}

impl PointerAccess {
    /// Whether the kernel may write through the pointer.
    pub const fn writes(self) -> bool {
        !matches!(self, PointerAccess::Read)
    }

    /// The reference's spelling: `&`, `&out ` or `&mut `.
    const fn spelling(self) -> &'static str {
        match self {
            PointerAccess::Read => "&",
            PointerAccess::Write => "&out ",
            PointerAccess::ReadWrite => "&mut ",
        }
    }
}

/// A declared parameter's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParamType {
    /// A scalar, passed by value.
    Scalar(Scalar),
    /// A pointer into guest memory: a window of the argv.
    Pointer {
        /// What it points to.
        element: Element,
        /// What the kernel does through it.
        access: PointerAccess,
    },
}

impl ParamType {
    /// The parameter's size in the kernel's parameter list (a pointer is a 64-bit address).
    pub const fn size(self) -> usize {
        match self {
            ParamType::Scalar(s) => s.size(),
            ParamType::Pointer { .. } => 8,
        }
    }

    /// The parameter's alignment in the kernel's parameter list: its size.
    pub const fn align(self) -> usize {
        self.size()
    }

    /// The wire tag an argument for this parameter has.
    pub const fn tag(self) -> ArgTag {
        match self {
            ParamType::Scalar(s) => s.tag(),
            ParamType::Pointer { .. } => ArgTag::Ptr,
        }
    }
}

/// A byte range of the declaration's text: `start..start + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    start: u16,
    len: u16,
}

impl Span {
    fn of(start: usize, end: usize) -> Span {
        // Both are at most MAX_DECLARATION_BYTES (2048): they fit.
        let start16 = u16::try_from(start).unwrap_or(u16::MAX);
        Span { start: start16, len: u16::try_from(end.saturating_sub(start)).unwrap_or(0) }
    }

    fn range(self) -> core::ops::Range<usize> {
        let start = usize::from(self.start);
        start..start.saturating_add(usize::from(self.len))
    }
}

/// One operation of an extent's program, in postfix order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Push a constant.
    Const(u32),
    /// Push the value of scalar parameter `index`.
    Param(u8),
    /// Push a name not resolved yet (parsing only).
    Name(Span),
    /// Push `grid.x` (0), `.y` (1), `.z` (2), `block.x` (4), `.y` (5), `.z` (6).
    Shape(u8),
    /// Pop two, push their sum.
    Add,
    /// Pop two, push their difference.
    Sub,
    /// Pop two, push their product.
    Mul,
    /// Pop two, push their quotient.
    Div,
}

/// One declared parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Param {
    name: Span,
    ty: ParamType,
    /// A pointer's extent: its text, and its program `ops[start..start + len]`.
    extent: Span,
    ops: (u16, u16),
}

/// How a pointer's extent is evaluated, decided when the declaration is parsed: the common
/// forms without the stack machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extent {
    /// The bytes, known at parse time (`&[f32; 16]`); `None` when they overflow.
    Bytes(Option<u64>),
    /// A scalar parameter's value times the element's size (`&[f32; n]`).
    Scaled(u8),
    /// Anything else: the program `ops[start..start + len]`.
    Program,
}

/// A pointer parameter, as the check sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PointerCheck {
    /// The parameter's index.
    index: u8,
    element: Element,
    extent: Extent,
}

/// Kernel declarations: what a registered kernel takes, and the check of a guest's arguments
/// against it.
///
/// A kernel's PTX says only how many bytes each parameter has: a pointer is a `.u64`, like any
/// 64-bit integer. A [`Declaration`] says what the kernel does with each parameter: a scalar of
/// which type, or a pointer to elements of which type, read or written, and how many elements
/// it may touch, as an expression over the scalar parameters and the launch shape. The host
/// checks every launch against its kernel's declaration ([`Declaration::check`], in
/// [`LaunchHost::call`](crate::LaunchHost::call), after the argv is parsed and before any
/// launcher runs), so a correct kernel cannot be steered outside the guest's windows: a raw
/// integer where it takes a pointer, a count larger than a window, a window misaligned for its
/// elements are refused with `InvalidArgs`, naming the record and the parameter.
///
/// ```
/// use kernel_args::{Declaration, LaunchArgs, LaunchShape};
/// use kernel_args_core::{GuestRange, LoweredArgSnapshot as A};
///
/// let vector_add =
///     Declaration::parse("vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)")?;
/// let window = |guest_offset, len| A::Ptr(GuestRange { guest_offset, len });
/// let shape = LaunchShape { grid: [4, 1, 1], block: [256, 1, 1], shared_mem_bytes: 0 };
/// // The arguments as the host parses them from the guest's argv.
/// let args = |list: &[A]| LaunchArgs::from_slice(list).expect("at most 128");
///
/// let ok = args(&[window(0, 64), window(64, 64), window(128, 64), A::U32(16)]);
/// assert!(vector_add.check(&ok, &shape).is_ok());
///
/// // A count past the windows.
/// let short = args(&[window(0, 64), window(64, 64), window(128, 16), A::U32(16)]);
/// let err = vector_add.check(&short, &shape).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "record 2 at byte 18: out: 16-byte window, the kernel touches n * 4 = 64 bytes"
/// );
/// // A raw address where the kernel takes a pointer.
/// let raw = args(&[A::U64(0x7f00_0000_0000), window(64, 64), window(128, 64), A::U32(16)]);
/// let err = vector_add.check(&raw, &shape).unwrap_err();
/// assert_eq!(err.to_string(), "record 0 at byte 0: a: the kernel takes &[f32; n], the argv has u64");
/// # Ok::<(), kernel_args::DeclarationError>(())
/// ```
///
/// The grammar, the rules and their order are `docs/declarations.md`'s. A declaration is
/// parsed once, at registration, into fixed capacity (no allocation; `no_std`); the check
/// allocates nothing and evaluates every extent in checked `u64` arithmetic, an overflow being
/// a refusal, never a wrap.
///
/// A parsed declaration holds the kernel's name and its parameters, in fixed capacity. Made by
/// [`Declaration::parse`]; checked against with [`Declaration::check`].
#[derive(Clone, PartialEq, Eq)]
pub struct Declaration {
    text: heapless::String<MAX_DECLARATION_BYTES>,
    name: Span,
    params: heapless::Vec<Param, MAX_KERNEL_ARGS>,
    ops: heapless::Vec<Op, MAX_EXTENT_OPS>,
    /// Each parameter's wire tag, for the type check.
    tags: heapless::Vec<ArgTag, MAX_KERNEL_ARGS>,
    /// The same tags as bytes, 0 past the last parameter: what the host compares its parsed
    /// arguments' tag bytes with, as one run.
    tag_bytes: [u8; MAX_KERNEL_ARGS],
    /// The pointer parameters, in order, for the window checks.
    pointers: heapless::Vec<PointerCheck, MAX_KERNEL_ARGS>,
}

impl fmt::Debug for Declaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Declaration").field(&self.text.as_str()).finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Declaration {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Declaration({=str})", self.text.as_str())
    }
}

/// One parameter of a [`Declaration`], as [`Declaration::params`] yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredParam<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its type.
    pub ty: ParamType,
    /// A pointer's extent (the number of elements the kernel may touch), as written.
    pub extent: Option<&'a str>,
}

impl Declaration {
    /// Parses `text` (the grammar of `docs/declarations.md`).
    ///
    /// # Errors
    ///
    /// A [`DeclarationError`] naming the 1-based column (in bytes) and what was expected there,
    /// or what is wrong with a name.
    pub fn parse(text: &str) -> Result<Declaration, DeclarationError> {
        let mut decl = Declaration {
            text: heapless::String::new(),
            name: Span::default(),
            params: heapless::Vec::new(),
            ops: heapless::Vec::new(),
            tags: heapless::Vec::new(),
            tag_bytes: [0; MAX_KERNEL_ARGS],
            pointers: heapless::Vec::new(),
        };
        if decl.text.push_str(text).is_err() {
            return Err(DeclarationError::at(
                MAX_DECLARATION_BYTES.saturating_add(1),
                Problem::TooLong { len: text.len(), max: MAX_DECLARATION_BYTES },
            ));
        }
        let mut parser = Parser { text, pos: 0, last_end: 0, decl: &mut decl, depth: 0 };
        parser.declaration()?;
        decl.resolve()?;
        decl.plan();
        Ok(decl)
    }

    /// [`parse`](Self::parse) of bytes (a C string, a file): UTF-8, else
    /// [`Problem::NotUtf8`] at the first byte that is not.
    ///
    /// # Errors
    ///
    /// As [`parse`](Self::parse).
    pub fn parse_bytes(text: &[u8]) -> Result<Declaration, DeclarationError> {
        match core::str::from_utf8(text) {
            Ok(text) => Declaration::parse(text),
            Err(e) => Err(DeclarationError::at(e.valid_up_to().saturating_add(1), Problem::NotUtf8)),
        }
    }

    /// The declaration as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        self.slice(self.name)
    }

    /// The number of parameters.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// `true` for a kernel without parameters.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The parameters, in order.
    pub fn params(&self) -> impl ExactSizeIterator<Item = DeclaredParam<'_>> + '_ {
        self.params.iter().map(|p| DeclaredParam {
            name: self.slice(p.name),
            ty: p.ty,
            extent: matches!(p.ty, ParamType::Pointer { .. }).then(|| self.slice(p.extent)),
        })
    }

    fn slice(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or_default()
    }

    /// Resolves every name an extent uses to a parameter that is an integer scalar.
    fn resolve(&mut self) -> Result<(), DeclarationError> {
        for i in 0..self.ops.len() {
            let Some(Op::Name(span)) = self.ops.get(i).copied() else { continue };
            let name = self.slice(span);
            let column = usize::from(span.start).saturating_add(1);
            let found = self.params.iter().position(|p| self.slice(p.name) == name);
            let Some(index) = found else {
                return Err(DeclarationError::at(column, Problem::UnknownName(truncated(name))));
            };
            match self.params.get(index).map(|p| p.ty) {
                Some(ParamType::Scalar(s)) if s.is_integer() => {}
                _ => return Err(DeclarationError::at(column, Problem::NotAnInteger(truncated(name)))),
            }
            if let (Some(op), Ok(index)) = (self.ops.get_mut(i), u8::try_from(index)) {
                *op = Op::Param(index);
            }
        }
        Ok(())
    }
}
