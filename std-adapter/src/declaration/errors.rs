//! What a refused declaration ([`DeclarationError`]) or a refused launch ([`Mismatch`]) says,
//! in fixed-capacity text, so that no error allocates.

use super::*;

/// A name, as an error keeps it.
pub type Name = heapless::String<MAX_NAME_BYTES>;

/// A short text an error keeps (a type, an extent), at most [`MAX_EXTENT_BYTES`] long.
pub type Text = heapless::String<MAX_EXTENT_BYTES>;

/// `s`, cut to fit a [`Name`] at a character boundary (a name in a declaration never needs it).
/// `parts` one after the other, cut (at a character) to `N` bytes. (Not `write!`: the check's
/// path carries no formatting machinery.)
pub(super) fn joined<const N: usize>(parts: &[&str]) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in parts.iter().flat_map(|part| part.chars()) {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

pub(super) fn truncated<const N: usize>(s: &str) -> heapless::String<N> {
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
    pub(super) fn at(column: usize, problem: Problem) -> DeclarationError {
        DeclarationError { column, problem }
    }
}

/// What the grammar allows where a declaration goes wrong ([`Problem::Expected`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Expected {
    /// The kernel's name, first.
    KernelName,
    /// `(` after the kernel's name.
    OpenParen,
    /// `,` or `)` after a parameter.
    CommaOrClose,
    /// Nothing after the closing `)`.
    End,
    /// A parameter's name, or `)` for no (more) parameters.
    ParamName,
    /// `:` after a parameter's name.
    Colon,
    /// A parameter's type.
    Type,
    /// `[` after `&` (or after `&mut`, `&out`).
    OpenBracket,
    /// A pointer's element type.
    ElementType,
    /// `;` after the element type.
    Semicolon,
    /// `]`, or an operator continuing the extent.
    CloseBracket,
    /// A count in an extent.
    Count,
    /// `)` closing a parenthesised count, or an operator.
    CloseParen,
    /// `.` after `grid` or `block`.
    Dot,
    /// An axis after `grid.` or `block.`.
    Axis,
}

impl Expected {
    /// Every value, in the order of their codes ([`Expected::code`]).
    pub const ALL: [Expected; 15] = [
        Expected::KernelName,
        Expected::OpenParen,
        Expected::CommaOrClose,
        Expected::End,
        Expected::ParamName,
        Expected::Colon,
        Expected::Type,
        Expected::OpenBracket,
        Expected::ElementType,
        Expected::Semicolon,
        Expected::CloseBracket,
        Expected::Count,
        Expected::CloseParen,
        Expected::Dot,
        Expected::Axis,
    ];

    /// A stable number for it: its index in [`Expected::ALL`] (what the C API stores).
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The value of code `code`, if it is one.
    pub fn from_code(code: u64) -> Option<Expected> {
        Expected::ALL.into_iter().find(|e| u64::from(e.code()) == code)
    }

    /// What the messages say.
    pub const fn text(self) -> &'static str {
        match self {
            Expected::KernelName => "the kernel's name",
            Expected::OpenParen => "`(`",
            Expected::CommaOrClose => "`,` or `)`",
            Expected::End => "the end of the declaration",
            Expected::ParamName => "a parameter's name or `)`",
            Expected::Colon => "`:`",
            Expected::Type => {
                "a type (`i32`, `i64`, `f32`, `f64`, `u32`, `u64`, `&[T; n]`, `&mut [T; n]` or `&out [T; n]`)"
            }
            Expected::OpenBracket => "`[` (or `mut`, `out`)",
            Expected::ElementType => "an element type (`u8` ... `f64`)",
            Expected::Semicolon => "`;`",
            Expected::CloseBracket => "`]` or an operator (`+`, `-`, `*`, `/`)",
            Expected::Count => "a count: an integer, an integer parameter, `grid.x` ... `block.z`, or `(`",
            Expected::CloseParen => "`)` or an operator",
            Expected::Dot => "`.`",
            Expected::Axis => "`x`, `y` or `z`",
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// What is wrong with a declaration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Problem {
    /// Something else than what the grammar allows there.
    Expected {
        /// What the grammar allows there.
        expected: Expected,
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
