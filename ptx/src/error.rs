//! The front end's one error: where, and what.

use std::fmt;

/// Why a text is not a module the front end reads: the 1-based line and column (in bytes) and
/// what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The 1-based line.
    pub line: u32,
    /// The 1-based column, in bytes.
    pub column: u32,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong with a text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A byte outside ASCII (ptxas refuses them too).
    NonAscii,
    /// A character no PTX token starts with.
    UnexpectedCharacter(char),
    /// A `/*` comment without its `*/`.
    UnterminatedComment,
    /// A string without its closing `"` on its line.
    UnterminatedString,
    /// A number that is not one of PTX's forms, or too large.
    MalformedNumber,
    /// Something other than what the grammar allows there.
    Expected {
        /// What the grammar allows.
        expected: &'static str,
        /// What is there, as written (`end of text` at the end).
        found: String,
    },
    /// A construct PTX has that the front end does not read, so that nothing it does not
    /// understand reaches a consumer.
    Unsupported(&'static str),
    /// The module does not start with `.version`, or has no `.target` before its first
    /// function or variable.
    Header(&'static str),
    /// A name declared twice in one scope.
    Duplicate(String),
    /// A register used where no enclosing scope declares it (nor is it a special register).
    UndeclaredRegister(String),
    /// Blocks, operands or initializers nested deeper than [`MAX_DEPTH`](crate::MAX_DEPTH).
    TooDeep,
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::NonAscii => f.write_str("a byte outside ASCII"),
            ParseErrorKind::UnexpectedCharacter(c) => write!(f, "the character {c:?}"),
            ParseErrorKind::UnterminatedComment => f.write_str("a /* comment without its */"),
            ParseErrorKind::UnterminatedString => f.write_str("a string without its closing quote"),
            ParseErrorKind::MalformedNumber => f.write_str("a malformed number"),
            ParseErrorKind::Expected { expected, found } => write!(f, "expected {expected}, found {found}"),
            ParseErrorKind::Unsupported(what) => write!(f, "not read by the front end: {what}"),
            ParseErrorKind::Header(what) => f.write_str(what),
            ParseErrorKind::Duplicate(name) => write!(f, "`{name}` is declared twice"),
            ParseErrorKind::UndeclaredRegister(name) => write!(f, "the register `{name}` is not declared"),
            ParseErrorKind::TooDeep => {
                write!(f, "nested deeper than {} levels", crate::MAX_DEPTH)
            }
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX line {}, column {}: {}", self.line, self.column, self.kind)
    }
}

impl std::error::Error for ParseError {}
