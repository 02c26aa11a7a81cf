//! Kernel declarations: the grammar's parser and the check ([`Declaration`]).

use core::fmt;

use kernel_args_core::{ArgTag, LoweredArgSnapshot, MAX_KERNEL_ARGS};

use crate::args::LaunchArgs;
use crate::checks::LaunchShape;
use crate::limits::{
    MAX_DECLARATION_BYTES, MAX_EXTENT_BYTES, MAX_EXTENT_DEPTH, MAX_EXTENT_OPS, MAX_NAME_BYTES,
};

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

    /// Checks a launch's arguments (as the host parsed them) and shape against the declaration,
    /// in this order: the number of arguments; each argument's type, in argv order; then for
    /// each pointer, in argv order, its window's alignment for its elements and its length
    /// against the bytes its extent says the kernel may touch. The first failure decides.
    ///
    /// # Errors
    ///
    /// A [`Mismatch`]: what and where (record index, byte offset, parameter name).
    pub fn check(&self, args: &LaunchArgs, shape: &LaunchShape) -> Result<(), Mismatch> {
        // The types, as one run of tag bytes (the first that differs is looked for only when
        // one does).
        let declared = self.tag_bytes.get(..self.params.len()).unwrap_or_default();
        self.check_typed(args, args.tag_bytes() == declared, shape)
    }

    /// [`check`](Self::check), told whether every argument's tag is its parameter's.
    fn check_typed(&self, args: &LaunchArgs, types_match: bool, shape: &LaunchShape) -> Result<(), Mismatch> {
        if args.len() != self.tags.len() {
            return Err(self.mismatch(
                args,
                args.len().min(self.params.len()),
                None,
                MismatchKind::Count { declared: self.params.len(), got: args.len() },
            ));
        }
        if !types_match && let Some(index) = first_wrong_type(&self.tags, args) {
            return Err(self.type_mismatch(args, index));
        }
        for pointer in &self.pointers {
            let index = usize::from(pointer.index);
            let Some(window) = args.window(index) else {
                return Err(self.type_mismatch(args, index));
            };
            let size = pointer.element.size();
            // `size` is a power of two: the offset is aligned when its low bits are zero.
            if window.guest_offset & size.wrapping_sub(1) != 0 {
                return Err(self.window_mismatch(args, index, Failure::Misaligned));
            }
            let bytes = match pointer.extent {
                Extent::Bytes(Some(bytes)) => Ok(bytes),
                Extent::Bytes(None) => Err(Failure::Overflow),
                Extent::Scaled(scalar) => scalar_value(args, usize::from(scalar))
                    .and_then(|count| count.checked_mul(u64::from(size)).ok_or(Failure::Overflow)),
                Extent::Program => self
                    .params
                    .get(index)
                    .map_or(Err(Failure::Overflow), |param| self.evaluate(param, args, shape))
                    .and_then(|count| count.checked_mul(u64::from(size)).ok_or(Failure::Overflow)),
            };
            match bytes {
                Ok(bytes) if bytes <= u64::from(window.len) => {}
                Ok(bytes) => return Err(self.window_mismatch(args, index, Failure::Short(bytes))),
                Err(failure) => return Err(self.window_mismatch(args, index, failure)),
            }
        }
        Ok(())
    }

    /// Argument `index`'s type is not its parameter's.
    #[cold]
    #[inline(never)]
    fn type_mismatch(&self, args: &LaunchArgs, index: usize) -> Mismatch {
        let param = self.params.get(index);
        let declared = param.map(|p| self.type_text(p)).unwrap_or_default();
        let got = args.get(index).map_or(ArgTag::Ptr, |arg| arg.tag());
        let expected = param.map_or(ArgTag::Ptr, |p| p.ty.tag());
        self.mismatch(args, index, param, MismatchKind::Type { declared, expected, got })
    }

    /// Pointer argument `index`'s window fails its check.
    #[cold]
    #[inline(never)]
    fn window_mismatch(&self, args: &LaunchArgs, index: usize, failure: Failure) -> Mismatch {
        let param = self.params.get(index);
        let (element, guest_offset, len) = match (param.map(|p| p.ty), args.window(index)) {
            (Some(ParamType::Pointer { element, .. }), Some(w)) => (element, w.guest_offset, w.len),
            _ => (Element::U8, 0, 0),
        };
        let touches = param.map(|p| self.touches_text(p, element)).unwrap_or_default();
        let kind = match failure {
            Failure::Misaligned => MismatchKind::Misaligned { guest_offset, element },
            Failure::Short(bytes) => MismatchKind::WindowTooShort { len, touches, bytes },
            Failure::Overflow => MismatchKind::Overflow { touches },
            Failure::Negative(scalar) => {
                MismatchKind::Negative { touches, scalar: self.name_text(scalar), scalar_index: scalar }
            }
        };
        self.mismatch(args, index, param, kind)
    }

    /// The check's plan: each parameter's tag, and each pointer's fastest extent form.
    fn plan(&mut self) {
        self.tags.clear();
        self.pointers.clear();
        self.tag_bytes = [0; MAX_KERNEL_ARGS];
        for (index, param) in self.params.iter().enumerate() {
            // At most MAX_KERNEL_ARGS parameters, so neither push can fail and the index fits.
            let _ = self.tags.push(param.ty.tag());
            if let Some(byte) = self.tag_bytes.get_mut(index) {
                *byte = param.ty.tag().byte();
            }
            let ParamType::Pointer { element, .. } = param.ty else { continue };
            let (start, len) = (usize::from(param.ops.0), usize::from(param.ops.1));
            let program = self.ops.get(start..start.saturating_add(len)).unwrap_or_default();
            let extent = match program {
                [Op::Const(count)] => Extent::Bytes(u64::from(*count).checked_mul(u64::from(element.size()))),
                [Op::Param(scalar)] => Extent::Scaled(*scalar),
                _ => Extent::Program,
            };
            let index = u8::try_from(index).unwrap_or(u8::MAX);
            let _ = self.pointers.push(PointerCheck { index, element, extent });
        }
    }

    /// The number of elements `param`'s extent gives for `args` and `shape` (out of line: the
    /// common extents are evaluated in [`check`](Self::check)'s loop without it).
    #[inline(never)]
    fn evaluate(&self, param: &Param, args: &LaunchArgs, shape: &LaunchShape) -> Result<u64, Failure> {
        let (start, len) = (usize::from(param.ops.0), usize::from(param.ops.1));
        let program = self.ops.get(start..start.saturating_add(len)).unwrap_or_default();
        // The parser bounds the stack by the extent's operations.
        let mut stack: heapless::Vec<u64, MAX_EXTENT_DEPTH_STACK> = heapless::Vec::new();
        for op in program {
            let value = match *op {
                Op::Const(c) => u64::from(c),
                Op::Param(i) => scalar_value(args, usize::from(i))?,
                Op::Shape(axis) => u64::from(shape_value(shape, axis)),
                Op::Name(_) => return Err(Failure::Overflow), // resolved at parse time
                Op::Add | Op::Sub | Op::Mul | Op::Div => {
                    let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                        return Err(Failure::Overflow);
                    };
                    let result = match op {
                        Op::Add => a.checked_add(b),
                        Op::Sub => a.checked_sub(b),
                        Op::Mul => a.checked_mul(b),
                        _ => a.checked_div(b),
                    };
                    result.ok_or(Failure::Overflow)?
                }
            };
            stack.push(value).map_err(|_| Failure::Overflow)?;
        }
        match (stack.pop(), stack.is_empty()) {
            (Some(v), true) => Ok(v),
            _ => Err(Failure::Overflow),
        }
    }

    fn mismatch(
        &self,
        args: &LaunchArgs,
        record: usize,
        param: Option<&Param>,
        kind: MismatchKind,
    ) -> Mismatch {
        let offset = args.iter().take(record).fold(0usize, |at, a| at.saturating_add(a.tag().wire_size()));
        Mismatch {
            record,
            offset,
            param: param.map(|p| truncated(self.slice(p.name))).unwrap_or_default(),
            kind,
        }
    }

    fn name_text(&self, index: usize) -> Name {
        self.params.get(index).map(|p| truncated(self.slice(p.name))).unwrap_or_default()
    }

    /// The parameter's type as written (`&[f32; n]`, `u32`).
    fn type_text(&self, param: &Param) -> Text {
        match param.ty {
            ParamType::Scalar(s) => joined(&[s.name()]),
            ParamType::Pointer { element, access } => {
                joined(&[access.spelling(), "[", element.name(), "; ", self.slice(param.extent), "]"])
            }
        }
    }

    /// The bytes the kernel touches through `param`, as an expression: `n * 4`.
    fn touches_text(&self, param: &Param, element: Element) -> Text {
        let extent = self.slice(param.extent);
        let simple = extent.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        // An element is 1, 2, 4 or 8 bytes: one digit.
        let size = match element.size() {
            2 => "2",
            4 => "4",
            _ => "8",
        };
        match (element.size(), simple) {
            (1, _) => joined(&[extent]),
            (_, true) => joined(&[extent, " * ", size]),
            (_, false) => joined(&["(", extent, ") * ", size]),
        }
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

/// The first argument whose tag is not its parameter's (`tags` and `args` are as long).
#[inline]
fn first_wrong_type(tags: &[ArgTag], args: &LaunchArgs) -> Option<usize> {
    tags.iter().zip(args.tag_bytes()).position(|(tag, byte)| tag.byte() != *byte)
}

/// The value of scalar argument `index` of `args`, as a count.
fn scalar_value(args: &LaunchArgs, index: usize) -> Result<u64, Failure> {
    let negative = || Failure::Negative(index);
    match args.get(index) {
        Some(LoweredArgSnapshot::U32(v)) => Ok(u64::from(v)),
        Some(LoweredArgSnapshot::U64(v)) => Ok(v),
        Some(LoweredArgSnapshot::I32(v)) => u64::try_from(v).map_err(|_| negative()),
        Some(LoweredArgSnapshot::I64(v)) => u64::try_from(v).map_err(|_| negative()),
        // The types were checked before any extent is evaluated, and an extent names only
        // integer parameters.
        _ => Err(Failure::Overflow),
    }
}

/// The value of a shape axis (0 to 2: grid x, y, z; 4 to 6: block x, y, z).
fn shape_value(shape: &LaunchShape, axis: u8) -> u32 {
    let dims = if axis & 4 == 0 { &shape.grid } else { &shape.block };
    dims.get(usize::from(axis & 3)).copied().unwrap_or(0)
}

/// The deepest an extent's evaluation stack can be: each level of parentheses holds a pending
/// sum and a pending product, and the innermost factor one more (a deeper stack would be a
/// refusal, not a panic).
const MAX_EXTENT_DEPTH_STACK: usize = 2 * MAX_EXTENT_DEPTH + 4;

/// Why a window failed its check.
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// Its guest offset is not aligned for its elements.
    Misaligned,
    /// It is shorter than these bytes, which the kernel may touch.
    Short(u64),
    /// The extent overflowed `u64`, or divided by zero.
    Overflow,
    /// A signed scalar the extent counts with is negative (its parameter index).
    Negative(usize),
}

/// A name, as an error keeps it.
pub type Name = heapless::String<MAX_NAME_BYTES>;

/// A short text an error keeps (a type, an extent), at most [`MAX_EXTENT_BYTES`] long.
pub type Text = heapless::String<MAX_EXTENT_BYTES>;

/// `s`, cut to fit a [`Name`] at a character boundary (a name in a declaration never needs it).
/// `parts` one after the other, cut (at a character) to `N` bytes. (Not `write!`: the check's
/// path carries no formatting machinery.)
fn joined<const N: usize>(parts: &[&str]) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in parts.iter().flat_map(|part| part.chars()) {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

fn truncated<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

/// A launch that does not fit its kernel's declaration: what, and where. Answered with
/// `InvalidArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Mismatch {
    /// The record's 0-based index in the argv (for a count mismatch, the first record past the
    /// shorter of the two lists).
    pub record: usize,
    /// The byte offset at which that record starts.
    pub offset: usize,
    /// The parameter's name (empty for a count mismatch).
    pub param: Name,
    /// What does not fit.
    pub kind: MismatchKind,
}

/// What about a launch does not fit its kernel's declaration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MismatchKind {
    /// The kernel takes `declared` parameters; the argv has `got` arguments.
    Count {
        /// Parameters declared.
        declared: usize,
        /// Arguments passed.
        got: usize,
    },
    /// The argument's type is not the parameter's: a scalar where the kernel takes a pointer,
    /// a pointer where it takes a scalar, or another scalar type.
    Type {
        /// The parameter's type as declared (`&[f32; n]`, `u32`).
        declared: Text,
        /// The tag an argument for the parameter has (`ptr` for a pointer).
        expected: ArgTag,
        /// The argument's type.
        got: ArgTag,
    },
    /// The window's guest offset is not a multiple of its elements' size.
    Misaligned {
        /// The window's guest offset.
        guest_offset: u32,
        /// The element type.
        element: Element,
    },
    /// The window is shorter than the bytes the kernel may touch through it.
    WindowTooShort {
        /// The window's length.
        len: u32,
        /// The bytes touched, as an expression (`n * 4`).
        touches: Text,
        /// Its value for this launch.
        bytes: u64,
    },
    /// The bytes the kernel may touch overflow 64 bits (or divide by zero) for this launch.
    Overflow {
        /// The bytes touched, as an expression.
        touches: Text,
    },
    /// A signed scalar the extent counts with is negative.
    Negative {
        /// The bytes touched, as an expression.
        touches: Text,
        /// The scalar parameter's name.
        scalar: Name,
        /// The scalar parameter's index.
        scalar_index: usize,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (record, offset, param) = (self.record, self.offset, &self.param);
        match &self.kind {
            MismatchKind::Count { declared, got } => {
                write!(f, "the kernel takes {declared} parameters, the argv has {got} arguments")
            }
            MismatchKind::Type { declared, got, .. } => {
                write!(
                    f,
                    "record {record} at byte {offset}: {param}: the kernel takes {declared}, the argv has {got}"
                )
            }
            MismatchKind::Misaligned { guest_offset, element } => write!(
                f,
                "record {record} at byte {offset}: {param}: window at guest offset {guest_offset} is not aligned \
                 for {} ({} bytes)",
                element.name(),
                element.size()
            ),
            MismatchKind::WindowTooShort { len, touches, bytes } => write!(
                f,
                "record {record} at byte {offset}: {param}: {len}-byte window, the kernel touches {touches} = \
                 {bytes} bytes"
            ),
            MismatchKind::Overflow { touches } => write!(
                f,
                "record {record} at byte {offset}: {param}: the kernel touches {touches} bytes, which is out of \
                 range for this launch (over 64 bits, below zero, or a division by zero)"
            ),
            MismatchKind::Negative { touches, scalar, .. } => write!(
                f,
                "record {record} at byte {offset}: {param}: the kernel touches {touches} bytes, and {scalar} is \
                 negative"
            ),
        }
    }
}

impl core::error::Error for Mismatch {}

/// A declaration that does not parse: where (1-based byte column) and what.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeclarationError {
    /// The 1-based byte column where the problem is.
    pub column: usize,
    /// What is wrong there.
    pub problem: Problem,
}

impl DeclarationError {
    fn at(column: usize, problem: Problem) -> DeclarationError {
        DeclarationError { column, problem }
    }
}

/// What is wrong with a declaration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Problem {
    /// Something else than what the grammar allows there.
    Expected {
        /// What the grammar allows there.
        expected: &'static str,
        /// What is there (a token, or `end of text`).
        found: Name,
    },
    /// Two parameters with this name.
    DuplicateName(Name),
    /// An extent counts with a name that is no parameter.
    UnknownName(Name),
    /// An extent counts with a parameter that is not an integer scalar.
    NotAnInteger(Name),
    /// A parameter or the kernel is named with a keyword (a type name, `grid`, `block`).
    Reserved(Name),
    /// A name longer than [`MAX_NAME_BYTES`].
    NameTooLong {
        /// The most a name may have.
        max: usize,
    },
    /// An extent longer than [`MAX_EXTENT_BYTES`], or nested deeper than [`MAX_EXTENT_DEPTH`].
    ExtentTooLong {
        /// The most an extent may have.
        max: usize,
    },
    /// A constant of 2³² or more.
    ConstantTooLarge,
    /// More parameters than [`MAX_KERNEL_ARGS`].
    TooManyParams {
        /// The most a kernel may declare.
        max: usize,
    },
    /// More extent operations in all than [`MAX_EXTENT_OPS`].
    TooManyOps {
        /// The most a declaration may have.
        max: usize,
    },
    /// A declaration longer than [`MAX_DECLARATION_BYTES`].
    TooLong {
        /// Its length.
        len: usize,
        /// The most a declaration may have.
        max: usize,
    },
    /// The text is not UTF-8 here ([`Declaration::parse_bytes`]).
    NotUtf8,
}

impl fmt::Display for DeclarationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: ", self.column)?;
        match &self.problem {
            Problem::Expected { expected, found } => write!(f, "expected {expected}, found {found}"),
            Problem::DuplicateName(n) => write!(f, "a second parameter named `{n}`"),
            Problem::UnknownName(n) => write!(f, "`{n}` is not a parameter of this kernel"),
            Problem::NotAnInteger(n) => {
                write!(f, "`{n}` is not an integer parameter: an extent counts with integers")
            }
            Problem::Reserved(n) => write!(f, "`{n}` is a keyword, not a name"),
            Problem::NameTooLong { max } => write!(f, "a name longer than {max} bytes"),
            Problem::ExtentTooLong { max } => {
                write!(f, "an extent longer than {max} bytes or nested too deep")
            }
            Problem::ConstantTooLarge => f.write_str("a constant of 2^32 or more"),
            Problem::TooManyParams { max } => write!(f, "more than {max} parameters"),
            Problem::TooManyOps { max } => write!(f, "more than {max} extent operations in all"),
            Problem::TooLong { len, max } => {
                write!(f, "the declaration is {len} bytes, over the cap of {max}")
            }
            Problem::NotUtf8 => f.write_str("a byte that is not UTF-8"),
        }
    }
}

impl core::error::Error for DeclarationError {}

/// A token of the declaration: a word (a name, a keyword, a number) or one punctuation byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'t> {
    Word(&'t str),
    Punct(u8),
    End,
}

/// Words the grammar gives a meaning; none may name a parameter or the kernel.
const KEYWORDS: [&str; 13] =
    ["i8", "u8", "i16", "u16", "f16", "i32", "u32", "f32", "i64", "u64", "f64", "grid", "block"];

/// The recursive-descent parser over one declaration's text.
struct Parser<'t, 'd> {
    text: &'t str,
    /// Byte offset of the next token (or whitespace before it).
    pos: usize,
    /// Byte offset just past the last token consumed.
    last_end: usize,
    decl: &'d mut Declaration,
    /// Parentheses open in the extent being parsed.
    depth: usize,
}

impl<'t> Parser<'t, '_> {
    /// Skips whitespace; the next token and the byte offset where it starts.
    fn peek(&mut self) -> (Token<'t>, usize) {
        let rest = self.text.get(self.pos..).unwrap_or_default();
        // docs/declarations.md's whitespace: space, tab, newline, carriage return (no form feed,
        // no vertical tab).
        let trimmed = rest.trim_start_matches([' ', '\t', '\n', '\r']);
        self.pos = self.pos.saturating_add(rest.len().saturating_sub(trimmed.len()));
        let start = self.pos;
        let Some(first) = trimmed.bytes().next() else { return (Token::End, start) };
        if first.is_ascii_alphanumeric() || first == b'_' {
            let len = trimmed
                .bytes()
                .position(|b| !(b.is_ascii_alphanumeric() || b == b'_'))
                .unwrap_or(trimmed.len());
            (Token::Word(trimmed.get(..len).unwrap_or_default()), start)
        } else {
            (Token::Punct(first), start)
        }
    }

    /// Consumes the token [`peek`](Self::peek) returned.
    fn advance(&mut self, token: Token<'t>) {
        let len = match token {
            Token::Word(w) => w.len(),
            // A punctuation token is one byte of ASCII, or the first byte of a character the
            // grammar has no use for (an error follows; its length does not matter).
            Token::Punct(_) => 1,
            Token::End => 0,
        };
        self.pos = self.pos.saturating_add(len);
        self.last_end = self.pos;
    }

    fn error(&self, at: usize, expected: &'static str, found: Token<'t>) -> DeclarationError {
        let found = match found {
            Token::Word(w) => {
                let mut n: Name = truncated("`");
                let _ = n.push_str(&truncated::<{ MAX_NAME_BYTES - 2 }>(w));
                let _ = n.push('`');
                n
            }
            Token::Punct(_) => {
                let c = self.text.get(at..).and_then(|r| r.chars().next()).unwrap_or('?');
                let mut c_utf8 = [0u8; 4];
                joined(&["`", c.encode_utf8(&mut c_utf8), "`"])
            }
            Token::End => truncated("the end of the declaration"),
        };
        DeclarationError::at(at.saturating_add(1), Problem::Expected { expected, found })
    }

    /// Consumes `byte`, or fails expecting `what`.
    fn expect(&mut self, byte: u8, what: &'static str) -> Result<(), DeclarationError> {
        match self.peek() {
            (Token::Punct(b), _) if b == byte => {
                self.advance(Token::Punct(b));
                Ok(())
            }
            (token, at) => Err(self.error(at, what, token)),
        }
    }

    /// A name: not a keyword, at most [`MAX_NAME_BYTES`], starting with a letter or `_`.
    fn name(&mut self, what: &'static str) -> Result<Span, DeclarationError> {
        match self.peek() {
            (Token::Word(w), at) if !w.starts_with(|c: char| c.is_ascii_digit()) => {
                if KEYWORDS.contains(&w) {
                    return Err(DeclarationError::at(at.saturating_add(1), Problem::Reserved(truncated(w))));
                }
                if w.len() > MAX_NAME_BYTES {
                    return Err(DeclarationError::at(
                        at.saturating_add(1),
                        Problem::NameTooLong { max: MAX_NAME_BYTES },
                    ));
                }
                self.advance(Token::Word(w));
                Ok(Span::of(at, at.saturating_add(w.len())))
            }
            (token, at) => Err(self.error(at, what, token)),
        }
    }

    /// `declaration := name '(' [param {',' param} [',']] ')'`, then the end of the text.
    fn declaration(&mut self) -> Result<(), DeclarationError> {
        self.decl.name = self.name("the kernel's name")?;
        self.expect(b'(', "`(`")?;
        loop {
            match self.peek() {
                (Token::Punct(b')'), _) => {
                    self.advance(Token::Punct(b')'));
                    break;
                }
                _ => self.param()?,
            }
            match self.peek() {
                (Token::Punct(b','), _) => self.advance(Token::Punct(b',')),
                (Token::Punct(b')'), _) => {
                    self.advance(Token::Punct(b')'));
                    break;
                }
                (token, at) => return Err(self.error(at, "`,` or `)`", token)),
            }
        }
        match self.peek() {
            (Token::End, _) => Ok(()),
            (token, at) => Err(self.error(at, "the end of the declaration", token)),
        }
    }

    /// `param := name ':' type`.
    fn param(&mut self) -> Result<(), DeclarationError> {
        let (_, at) = self.peek();
        let name = self.name("a parameter's name or `)`")?;
        let text = self.text.get(name.range()).unwrap_or_default();
        if self.decl.params.iter().any(|p| self.text.get(p.name.range()) == Some(text)) {
            return Err(DeclarationError::at(at.saturating_add(1), Problem::DuplicateName(truncated(text))));
        }
        self.expect(b':', "`:`")?;
        let param = self.ty(name)?;
        self.decl.params.push(param).map_err(|_| {
            DeclarationError::at(at.saturating_add(1), Problem::TooManyParams { max: MAX_KERNEL_ARGS })
        })
    }

    /// `type := scalar | '&' ['mut' | 'out'] '[' element ';' extent ']'`.
    fn ty(&mut self, name: Span) -> Result<Param, DeclarationError> {
        const TYPE: &str =
            "a type (`i32`, `i64`, `f32`, `f64`, `u32`, `u64`, `&[T; n]`, `&mut [T; n]` or `&out [T; n]`)";
        match self.peek() {
            (Token::Word(w), _) => match Scalar::ALL.into_iter().find(|s| s.name() == w) {
                Some(scalar) => {
                    self.advance(Token::Word(w));
                    Ok(Param { name, ty: ParamType::Scalar(scalar), extent: Span::default(), ops: (0, 0) })
                }
                None => {
                    let (token, at) = self.peek();
                    Err(self.error(at, TYPE, token))
                }
            },
            (Token::Punct(b'&'), _) => {
                self.advance(Token::Punct(b'&'));
                let access = match self.peek() {
                    (Token::Word("mut"), _) => {
                        self.advance(Token::Word("mut"));
                        PointerAccess::ReadWrite
                    }
                    (Token::Word("out"), _) => {
                        self.advance(Token::Word("out"));
                        PointerAccess::Write
                    }
                    _ => PointerAccess::Read,
                };
                self.expect(b'[', "`[` (or `mut`, `out`)")?;
                let element = match self.peek() {
                    (Token::Word(w), _) if Element::ALL.iter().any(|e| e.name() == w) => {
                        self.advance(Token::Word(w));
                        Element::ALL.into_iter().find(|e| e.name() == w).unwrap_or(Element::U8)
                    }
                    (token, at) => return Err(self.error(at, "an element type (`u8` ... `f64`)", token)),
                };
                self.expect(b';', "`;`")?;
                let (_, start) = self.peek();
                let first_op = self.decl.ops.len();
                self.depth = 0;
                self.sum()?;
                let end = self.last_end;
                if end.saturating_sub(start) > MAX_EXTENT_BYTES {
                    return Err(DeclarationError::at(
                        start.saturating_add(1),
                        Problem::ExtentTooLong { max: MAX_EXTENT_BYTES },
                    ));
                }
                self.expect(b']', "`]` or an operator (`+`, `-`, `*`, `/`)")?;
                let ops = (
                    u16::try_from(first_op).unwrap_or(u16::MAX),
                    u16::try_from(self.decl.ops.len().saturating_sub(first_op)).unwrap_or(0),
                );
                Ok(Param {
                    name,
                    ty: ParamType::Pointer { element, access },
                    extent: Span::of(start, end),
                    ops,
                })
            }
            (token, at) => Err(self.error(at, TYPE, token)),
        }
    }

    fn emit(&mut self, op: Op, at: usize) -> Result<(), DeclarationError> {
        self.decl.ops.push(op).map_err(|_| {
            DeclarationError::at(at.saturating_add(1), Problem::TooManyOps { max: MAX_EXTENT_OPS })
        })
    }

    /// `sum := product {('+' | '-') product}`.
    fn sum(&mut self) -> Result<(), DeclarationError> {
        self.product()?;
        loop {
            let op = match self.peek() {
                (Token::Punct(b'+'), _) => Op::Add,
                (Token::Punct(b'-'), _) => Op::Sub,
                _ => return Ok(()),
            };
            let (token, at) = self.peek();
            self.advance(token);
            self.product()?;
            self.emit(op, at)?;
        }
    }

    /// `product := factor {('*' | '/') factor}`.
    fn product(&mut self) -> Result<(), DeclarationError> {
        self.factor()?;
        loop {
            let op = match self.peek() {
                (Token::Punct(b'*'), _) => Op::Mul,
                (Token::Punct(b'/'), _) => Op::Div,
                _ => return Ok(()),
            };
            let (token, at) = self.peek();
            self.advance(token);
            self.factor()?;
            self.emit(op, at)?;
        }
    }

    /// `factor := integer | name | ('grid' | 'block') '.' ('x' | 'y' | 'z') | '(' sum ')'`.
    fn factor(&mut self) -> Result<(), DeclarationError> {
        const FACTOR: &str = "a count: an integer, an integer parameter, `grid.x` ... `block.z`, or `(`";
        match self.peek() {
            (Token::Punct(b'('), at) => {
                self.depth = self.depth.saturating_add(1);
                if self.depth > MAX_EXTENT_DEPTH {
                    return Err(DeclarationError::at(
                        at.saturating_add(1),
                        Problem::ExtentTooLong { max: MAX_EXTENT_BYTES },
                    ));
                }
                self.advance(Token::Punct(b'('));
                self.sum()?;
                self.expect(b')', "`)` or an operator")?;
                self.depth = self.depth.saturating_sub(1);
                Ok(())
            }
            (Token::Word(w @ ("grid" | "block")), at) => {
                self.advance(Token::Word(w));
                self.expect(b'.', "`.`")?;
                let axis = match self.peek() {
                    (Token::Word(a @ ("x" | "y" | "z")), _) => {
                        self.advance(Token::Word(a));
                        match a {
                            "x" => 0,
                            "y" => 1,
                            _ => 2,
                        }
                    }
                    (token, at) => return Err(self.error(at, "`x`, `y` or `z`", token)),
                };
                let axis = if w == "grid" { axis } else { axis | 4 };
                self.emit(Op::Shape(axis), at)
            }
            (Token::Word(w), at) if w.starts_with(|c: char| c.is_ascii_digit()) => {
                self.advance(Token::Word(w));
                // `0x` only, lowercase, as docs/declarations.md spells it.
                let value = match w.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => w.parse::<u64>(),
                };
                match value {
                    Ok(v) => match u32::try_from(v) {
                        Ok(v) => self.emit(Op::Const(v), at),
                        Err(_) => Err(DeclarationError::at(at.saturating_add(1), Problem::ConstantTooLarge)),
                    },
                    Err(_) if w.bytes().all(|b| b.is_ascii_digit()) => {
                        Err(DeclarationError::at(at.saturating_add(1), Problem::ConstantTooLarge))
                    }
                    Err(_) => Err(self.error(at, FACTOR, Token::Word(w))),
                }
            }
            (Token::Word(w), at) if !KEYWORDS.contains(&w) => {
                if w.len() > MAX_NAME_BYTES {
                    return Err(DeclarationError::at(
                        at.saturating_add(1),
                        Problem::NameTooLong { max: MAX_NAME_BYTES },
                    ));
                }
                self.advance(Token::Word(w));
                self.emit(Op::Name(Span::of(at, at.saturating_add(w.len()))), at)
            }
            (token, at) => Err(self.error(at, FACTOR, token)),
        }
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(
            params[2].ty,
            ParamType::Pointer { element: Element::F64, access: PointerAccess::ReadWrite }
        );
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
            assert_eq!(
                (err.column, err.to_string()),
                (column, format!("column {column}: {what}")),
                "{text:?}"
            );
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
        assert_eq!(
            message(VECTOR_ADD, &args),
            "record 3 at byte 27: n: the kernel takes u32, the argv has f32"
        );
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
}
