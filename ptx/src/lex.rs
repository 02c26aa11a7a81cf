//! The lexer: PTX text into tokens, by the PTX ISA's lexical rules as ptxas applies them.
//!
//! - The text is ASCII; any other byte is an error, as ptxas refuses it.
//! - Whitespace is space, tab, carriage return, line feed and form feed, and may stand between
//!   any two tokens (ptxas reads `ld .global .u32`, `@ ! %p1` and `%tid .x` as `ld.global.u32`,
//!   `@!%p1` and `%tid.x`); a vertical tab is an error.
//! - `//` comments run to the end of their line, `/* */` comments to the first `*/` (they do not
//!   nest); both are whitespace, even between an opcode and its modifiers.
//! - A string runs from `"` to the next `"`, with no escapes, on one line.
//! - An identifier is `[A-Za-z_$%][A-Za-z0-9_$]*`; a directive or modifier is `.` followed by
//!   `[A-Za-z0-9_$]+`, with `::` parts written without spaces (`.shared::cta`, as ptxas
//!   requires).
//! - A number starts with a digit: decimal, `0x` hexadecimal, `0b` binary, octal (a leading
//!   `0`), each with an optional `U`; `0f` and `0d` floats by their bits; decimal floats
//!   (`1.5`, `2.5e-3`). A number followed at once by a letter or digit it cannot hold is an
//!   error.
//! - Everything else is one punctuation character of `, ; : [ ] { } ( ) < > + - * / ! @ | = ~ & ^ ? %`.

use crate::error::{ParseError, ParseErrorKind};
use crate::span::Span;

/// A token's kind and text (without the leading `.` of a directive, or the quotes of a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok<'t> {
    /// An identifier: a name, a register (`%r1`), a label (`$L__BB0_1`), `_`.
    Ident(&'t str),
    /// A directive or modifier, without its dot: `global`, `shared::cta`, `x`.
    Directive(&'t str),
    /// A number, as written.
    Number(&'t str),
    /// A string's contents.
    Str(&'t str),
    /// One punctuation character.
    Punct(u8),
}

/// A token and where it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'t> {
    pub(crate) tok: Tok<'t>,
    pub(crate) span: Span,
}

/// The punctuation the lexer knows.
const PUNCT: &[u8] = b",;:[]{}()<>+-*/!@|=~&^?%";

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || matches!(b, b'_' | b'$' | b'%')
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$')
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0x0c)
}

/// Splits `text` into tokens.
///
/// # Errors
///
/// A [`ParseError`] at the first byte the rules above do not accept.
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token<'_>>, ParseError> {
    let mut lexer = Lexer { text, bytes: text.as_bytes(), at: 0, line: 1, line_start: 0 };
    let mut tokens = Vec::new();
    while let Some(token) = lexer.next_token()? {
        tokens.push(token);
    }
    Ok(tokens)
}

struct Lexer<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    line: u32,
    line_start: usize,
}

impl<'t> Lexer<'t> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.at.saturating_add(ahead)).copied()
    }

    fn span_from(&self, start: usize, line: u32, line_start: usize) -> Span {
        let column = u32::try_from(start.saturating_sub(line_start)).unwrap_or(u32::MAX).saturating_add(1);
        Span { start, end: self.at, line, column }
    }

    fn error(&self, kind: ParseErrorKind) -> ParseError {
        let column =
            u32::try_from(self.at.saturating_sub(self.line_start)).unwrap_or(u32::MAX).saturating_add(1);
        ParseError { line: self.line, column, kind }
    }

    /// Moves past one byte, counting lines.
    fn bump(&mut self) {
        if self.peek(0) == Some(b'\n') {
            self.line = self.line.saturating_add(1);
            self.line_start = self.at.saturating_add(1);
        }
        self.at = self.at.saturating_add(1);
    }

    fn slice(&self, start: usize) -> &'t str {
        self.text.get(start..self.at).unwrap_or_default()
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), ParseError> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(b), _) if is_space(b) => self.bump(),
                (Some(b'/'), Some(b'/')) => {
                    while let Some(b) = self.peek(0) {
                        if b == b'\n' {
                            break;
                        }
                        if !b.is_ascii() {
                            return Err(self.error(ParseErrorKind::NonAscii));
                        }
                        self.bump();
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let (line, column) = (self.line, self.at.saturating_sub(self.line_start));
                    self.bump();
                    self.bump();
                    loop {
                        match (self.peek(0), self.peek(1)) {
                            (Some(b'*'), Some(b'/')) => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            (Some(b), _) if !b.is_ascii() => return Err(self.error(ParseErrorKind::NonAscii)),
                            (Some(_), _) => self.bump(),
                            (None, _) => {
                                return Err(ParseError {
                                    line,
                                    column: u32::try_from(column).unwrap_or(u32::MAX).saturating_add(1),
                                    kind: ParseErrorKind::UnterminatedComment,
                                });
                            }
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn next_token(&mut self) -> Result<Option<Token<'t>>, ParseError> {
        self.skip_trivia()?;
        let Some(first) = self.peek(0) else { return Ok(None) };
        let (start, line, line_start) = (self.at, self.line, self.line_start);
        let tok = if !first.is_ascii() {
            return Err(self.error(ParseErrorKind::NonAscii));
        } else if is_ident_start(first) && (first != b'%' || self.peek(1).is_some_and(is_ident_continue)) {
            self.bump();
            while self.peek(0).is_some_and(is_ident_continue) {
                self.bump();
            }
            Tok::Ident(self.slice(start))
        } else if first == b'.' && self.peek(1).is_some_and(is_ident_continue) {
            self.bump();
            while self.peek(0).is_some_and(is_ident_continue) {
                self.bump();
            }
            while self.peek(0) == Some(b':')
                && self.peek(1) == Some(b':')
                && self.peek(2).is_some_and(is_ident_continue)
            {
                self.bump();
                self.bump();
                while self.peek(0).is_some_and(is_ident_continue) {
                    self.bump();
                }
            }
            Tok::Directive(self.text.get(start.saturating_add(1)..self.at).unwrap_or_default())
        } else if first.is_ascii_digit() {
            self.number()?;
            Tok::Number(self.slice(start))
        } else if first == b'"' {
            self.bump();
            loop {
                match self.peek(0) {
                    Some(b'"') => break,
                    Some(b'\n') | None => {
                        return Err(ParseError {
                            line,
                            column: u32::try_from(start.saturating_sub(line_start))
                                .unwrap_or(u32::MAX)
                                .saturating_add(1),
                            kind: ParseErrorKind::UnterminatedString,
                        });
                    }
                    Some(b) if !b.is_ascii() => return Err(self.error(ParseErrorKind::NonAscii)),
                    Some(_) => self.bump(),
                }
            }
            let contents = self.text.get(start.saturating_add(1)..self.at).unwrap_or_default();
            self.bump();
            Tok::Str(contents)
        } else if PUNCT.contains(&first) {
            self.bump();
            Tok::Punct(first)
        } else {
            return Err(self.error(ParseErrorKind::UnexpectedCharacter(char::from(first))));
        };
        Ok(Some(Token { tok, span: self.span_from(start, line, line_start) }))
    }

    /// A number: see the module's documentation.
    fn number(&mut self) -> Result<(), ParseError> {
        let radix = match (self.peek(0), self.peek(1)) {
            (Some(b'0'), Some(b'x' | b'X' | b'f' | b'F' | b'd' | b'D')) => Some(16),
            (Some(b'0'), Some(b'b' | b'B')) => Some(2),
            _ => None,
        };
        if let Some(radix) = radix {
            self.bump();
            self.bump();
            let digits = self.at;
            while self.peek(0).is_some_and(|b| char::from(b).is_digit(radix)) {
                self.bump();
            }
            if self.at == digits {
                return Err(self.error(ParseErrorKind::MalformedNumber));
            }
        } else {
            while self.peek(0).is_some_and(|b| b.is_ascii_digit()) {
                self.bump();
            }
            let fraction = self.peek(0) == Some(b'.') && self.peek(1).is_some_and(|b| b.is_ascii_digit());
            if fraction {
                self.bump();
                while self.peek(0).is_some_and(|b| b.is_ascii_digit()) {
                    self.bump();
                }
            }
            let exponent = match (self.peek(0), self.peek(1), self.peek(2)) {
                (Some(b'e' | b'E'), Some(b'+' | b'-'), Some(d)) if d.is_ascii_digit() => Some(2),
                (Some(b'e' | b'E'), Some(d), _) if d.is_ascii_digit() => Some(1),
                _ => None,
            };
            if let Some(skip) = exponent {
                for _ in 0..skip {
                    self.bump();
                }
                while self.peek(0).is_some_and(|b| b.is_ascii_digit()) {
                    self.bump();
                }
            }
        }
        if self.peek(0) == Some(b'U') {
            self.bump();
        }
        if self.peek(0).is_some_and(|b| is_ident_continue(b) || b == b'.') {
            return Err(self.error(ParseErrorKind::MalformedNumber));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok<'_>> {
        tokenize(text).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn whitespace_and_comments_separate_any_two_tokens() {
        let want = [
            Tok::Ident("ld"),
            Tok::Directive("global"),
            Tok::Directive("u32"),
            Tok::Ident("%r1"),
            Tok::Punct(b','),
            Tok::Punct(b'['),
            Tok::Ident("%rd1"),
            Tok::Punct(b']'),
            Tok::Punct(b';'),
        ];
        assert_eq!(kinds("ld.global.u32 %r1, [%rd1];"), want);
        assert_eq!(kinds("ld /* x */ .global\n\t.u32\x0c%r1 ,[ %rd1 ] ;"), want);
        assert_eq!(kinds("ld // a comment\n.global.u32 %r1,\r\n[%rd1];"), want);
        assert_eq!(kinds("@ ! %p1"), [Tok::Punct(b'@'), Tok::Punct(b'!'), Tok::Ident("%p1")]);
        assert_eq!(kinds("%tid .x"), [Tok::Ident("%tid"), Tok::Directive("x")]);
    }

    #[test]
    fn strings_have_no_escapes_and_hide_comment_markers() {
        assert_eq!(
            kinds(".pragma \"nounroll // x /* y\";"),
            [Tok::Directive("pragma"), Tok::Str("nounroll // x /* y"), Tok::Punct(b';')]
        );
        // `\"` ends the string, as in ptxas: what follows is a comment.
        assert_eq!(kinds("\"a\\\" // b\";"), [Tok::Str("a\\")]);
        let e = tokenize("\"open\nx").unwrap_err();
        assert_eq!((e.line, e.kind), (1, ParseErrorKind::UnterminatedString));
    }

    #[test]
    fn scoped_modifiers_are_one_token_without_spaces() {
        assert_eq!(kinds(".shared::cta"), [Tok::Directive("shared::cta")]);
        assert_eq!(kinds(".L2::cache_hint"), [Tok::Directive("L2::cache_hint")]);
        assert_eq!(kinds(".shared :: cta")[1], Tok::Punct(b':'));
    }

    #[test]
    fn numbers() {
        for n in [
            "0",
            "42",
            "0x1F",
            "0X1fU",
            "0b101",
            "017",
            "0f3F800000",
            "0d3FF0000000000000",
            "1.5",
            "7.8",
            "2.5e-3",
            "1E10",
            "4U",
        ] {
            assert_eq!(kinds(n), [Tok::Number(n)], "{n}");
        }
        for bad in ["0x", "12abc", "0x1G", "1.5.2", "0b2"] {
            assert_eq!(tokenize(bad).unwrap_err().kind, ParseErrorKind::MalformedNumber, "{bad}");
        }
    }

    #[test]
    fn what_ptxas_refuses_is_an_error_with_its_place() {
        let e = tokenize("mov.u32 %r1,\n  #1;").unwrap_err();
        assert_eq!((e.line, e.column, e.kind), (2, 3, ParseErrorKind::UnexpectedCharacter('#')));
        assert_eq!(tokenize("a\u{a0}b").unwrap_err().kind, ParseErrorKind::NonAscii);
        assert_eq!(tokenize("a\x0bb").unwrap_err().kind, ParseErrorKind::UnexpectedCharacter('\x0b'));
        let e = tokenize("x\n/* open").unwrap_err();
        assert_eq!((e.line, e.column, e.kind), (2, 1, ParseErrorKind::UnterminatedComment));
    }

    #[test]
    fn spans_are_byte_ranges_with_lines_and_columns() {
        let tokens = tokenize("a\n  bb").unwrap();
        let b = tokens[1].span;
        assert_eq!((b.start, b.end, b.line, b.column), (4, 6, 2, 3));
    }
}
