//! The declaration grammar (`docs/declarations.md`): the tokens and the recursive-descent
//! parser that fills a [`Declaration`].

use super::*;

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
pub(super) struct Parser<'t, 'd> {
    pub(super) text: &'t str,
    /// Byte offset of the next token (or whitespace before it).
    pub(super) pos: usize,
    /// Byte offset just past the last token consumed.
    pub(super) last_end: usize,
    pub(super) decl: &'d mut Declaration,
    /// Parentheses open in the extent being parsed.
    pub(super) depth: usize,
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

    fn error(&self, at: usize, expected: Expected, found: Token<'t>) -> DeclarationError {
        let found = match found {
            Token::Word(w) => {
                let mut n: Name = truncated("`");
                let _ = n.push_str(&truncated::<{ MAX_NAME_BYTES - 2 }>(w));
                let _ = n.push('`');
                n
            }
            Token::Punct(_) => {
                let c = self.text.get(at..).and_then(|r| r.chars().next()).unwrap_or('?');
                // A control character (a NUL, a tab) as `\u{0}`: a message and the C API's text
                // hold no NUL.
                let mut n: Name = truncated("`");
                if c.is_control() {
                    for e in c.escape_unicode() {
                        let _ = n.push(e);
                    }
                } else {
                    let _ = n.push(c);
                }
                let _ = n.push('`');
                n
            }
            Token::End => truncated("the end of the declaration"),
        };
        DeclarationError::at(at.saturating_add(1), Problem::Expected { expected, found })
    }

    /// Consumes `byte`, or fails expecting `what`.
    fn expect(&mut self, byte: u8, what: Expected) -> Result<(), DeclarationError> {
        match self.peek() {
            (Token::Punct(b), _) if b == byte => {
                self.advance(Token::Punct(b));
                Ok(())
            }
            (token, at) => Err(self.error(at, what, token)),
        }
    }

    /// A name: not a keyword, at most [`MAX_NAME_BYTES`], starting with a letter or `_`.
    fn name(&mut self, what: Expected) -> Result<Span, DeclarationError> {
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
    pub(super) fn declaration(&mut self) -> Result<(), DeclarationError> {
        self.decl.name = self.name(Expected::KernelName)?;
        self.expect(b'(', Expected::OpenParen)?;
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
                (token, at) => return Err(self.error(at, Expected::CommaOrClose, token)),
            }
        }
        match self.peek() {
            (Token::End, _) => Ok(()),
            (token, at) => Err(self.error(at, Expected::End, token)),
        }
    }

    /// `param := name ':' type`.
    fn param(&mut self) -> Result<(), DeclarationError> {
        let (_, at) = self.peek();
        let name = self.name(Expected::ParamName)?;
        let text = self.text.get(name.range()).unwrap_or_default();
        if self.decl.params.iter().any(|p| self.text.get(p.name.range()) == Some(text)) {
            return Err(DeclarationError::at(at.saturating_add(1), Problem::DuplicateName(truncated(text))));
        }
        self.expect(b':', Expected::Colon)?;
        let param = self.ty(name)?;
        self.decl.params.push(param).map_err(|_| {
            DeclarationError::at(at.saturating_add(1), Problem::TooManyParams { max: MAX_KERNEL_ARGS })
        })
    }

    /// `type := scalar | '&' ['mut' | 'out'] '[' element ';' extent ']'`.
    fn ty(&mut self, name: Span) -> Result<Param, DeclarationError> {
        const TYPE: Expected = Expected::Type;
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
                self.expect(b'[', Expected::OpenBracket)?;
                let element = match self.peek() {
                    (Token::Word(w), _) if let Some(element) = Element::from_name(w) => {
                        self.advance(Token::Word(w));
                        element
                    }
                    (token, at) => return Err(self.error(at, Expected::ElementType, token)),
                };
                self.expect(b';', Expected::Semicolon)?;
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
                self.expect(b']', Expected::CloseBracket)?;
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
        const FACTOR: Expected = Expected::Count;
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
                self.expect(b')', Expected::CloseParen)?;
                self.depth = self.depth.saturating_sub(1);
                Ok(())
            }
            (Token::Word(w @ ("grid" | "block")), at) => {
                self.advance(Token::Word(w));
                self.expect(b'.', Expected::Dot)?;
                let axis = match self.peek() {
                    (Token::Word(a @ ("x" | "y" | "z")), _) => {
                        self.advance(Token::Word(a));
                        match a {
                            "x" => 0,
                            "y" => 1,
                            _ => 2,
                        }
                    }
                    (token, at) => return Err(self.error(at, Expected::Axis, token)),
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
