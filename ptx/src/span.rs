//! Where a piece of the module is in its text.

use core::fmt;

/// A byte range of the text, with the 1-based line and column (in bytes) of its start.
///
/// Spans do not take part in equality: two parsed modules are equal when their text means the
/// same thing, wherever it was written (what the printer's round trip is held to).
#[derive(Debug, Clone, Copy, Default, Eq)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// The 1-based line of `start`.
    pub line: u32,
    /// The 1-based column (byte) of `start` in its line.
    pub column: u32,
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}

impl core::hash::Hash for Span {
    fn hash<H: core::hash::Hasher>(&self, _: &mut H) {}
}

impl Span {
    /// The span from the start of `self` to the end of `other`.
    pub fn to(self, other: Span) -> Span {
        Span { end: other.end.max(self.start), ..self }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}
