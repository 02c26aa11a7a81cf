//! The parser: tokens into a [`Module`]. It reads the whole text, and refuses, with the line,
//! the column and what it expected, anything outside the grammar below; nothing is skipped
//! but `.file` and `.loc` (debug line information, read whole and not kept).
//!
//! ```text
//! module      := ".version" M.m { ".target" id {"," id} | ".address_size" n | ".file" ...
//!                              | ".pragma" str {"," str} ";" | variable | function }
//! variable    := [linkage] space {".align" n | ".v2" | ".v4" | ".v8" | type}
//!                declarator {"," declarator} ";"
//! declarator  := name {"[" [n] "]"} ["=" init]
//! init        := number | "-" number | "{" init {"," init} "}"
//! function    := [linkage] (".entry" | ".func" ["(" params ")"]) name ["(" [params] ")"]
//!                {attribute} ("{" body "}" | ";")
//! param       := (".param" | ".reg") {".align" n | ".v2" | ".v4" | type | ".ptr" [space] [".align" n]}
//!                name {"[" n "]"}
//! body        := { ".reg" [".v2" | ".v4"] type regname {"," regname} ";" | variable
//!                | ".pragma" ... ";" | ".loc" ... | label ":" | "{" body "}" | instruction }
//! instruction := ["@" ["!"] register] opcode {"." modifier} [operand {"," operand}] ";"
//! operand     := register [component] | register "|" register | "!" register | "_"
//!                | ["-"] number | symbol ["+" n] | "[" address "]" | "[" operand {"," operand} "]"
//!                | "{" operand {"," operand} "}" | "(" [operand {"," operand}] ")"
//! address     := (register | symbol) ["+" ["-"] n] | n
//! ```
//!
//! What PTX has beyond this is refused by name ([`ParseErrorKind::Unsupported`]): constant
//! expressions, addresses in initializers, `.section` (debug information), `.alias`, call
//! prototypes and branch-target tables.

use crate::MAX_DEPTH;
use crate::ast::*;
use crate::error::{ParseError, ParseErrorKind};
use crate::lex::{Tok, Token, tokenize};
use crate::span::Span;

/// Parses a whole module.
///
/// # Errors
///
/// A [`ParseError`] at the first place the text leaves the grammar.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    let tokens = tokenize(text)?;
    let end = tokens.last().map_or(Span { start: 0, end: 0, line: 1, column: 1 }, |t| t.span);
    let mut parser = Parser { tokens, at: 0, depth: 0, end };
    parser.module()
}

struct Parser<'t> {
    tokens: Vec<Token<'t>>,
    at: usize,
    depth: usize,
    /// The last token's span: where an error at the end of the text is.
    end: Span,
}

/// How a token reads in an error message.
fn describe(tok: Option<Tok<'_>>) -> String {
    match tok {
        None => "the end of the text".to_owned(),
        Some(Tok::Ident(s)) => format!("`{s}`"),
        Some(Tok::Directive(s)) => format!("`.{s}`"),
        Some(Tok::Number(s)) => format!("`{s}`"),
        Some(Tok::Str(s)) => format!("the string \"{s}\""),
        Some(Tok::Punct(c)) => format!("`{}`", char::from(c)),
    }
}

/// Which directives may follow a function's parameter list.
const ATTRIBUTES: &[&str] = &[
    "maxntid",
    "reqntid",
    "minnctapersm",
    "maxnctapersm",
    "maxnreg",
    "noreturn",
    "reqnctapercluster",
    "explicitcluster",
    "maxclusterrank",
    "blocksareclusters",
];

impl<'t> Parser<'t> {
    fn peek(&self) -> Option<Tok<'t>> {
        self.tokens.get(self.at).map(|t| t.tok)
    }

    fn peek_at(&self, ahead: usize) -> Option<Tok<'t>> {
        self.tokens.get(self.at.saturating_add(ahead)).map(|t| t.tok)
    }

    /// The current token's span (the end of the text past the last token).
    fn span(&self) -> Span {
        self.tokens.get(self.at).map_or(Span { start: self.end.end, ..self.end }, |t| t.span)
    }

    /// The span of the token before the current one.
    fn last_span(&self) -> Span {
        self.at.checked_sub(1).and_then(|i| self.tokens.get(i)).map_or(self.end, |t| t.span)
    }

    fn bump(&mut self) -> Option<Token<'t>> {
        let token = self.tokens.get(self.at).copied();
        if token.is_some() {
            self.at = self.at.saturating_add(1);
        }
        token
    }

    fn error_here(&self, kind: ParseErrorKind) -> ParseError {
        let span = self.span();
        ParseError { line: span.line, column: span.column, kind }
    }

    fn error_at(span: Span, kind: ParseErrorKind) -> ParseError {
        ParseError { line: span.line, column: span.column, kind }
    }

    fn expected(&self, expected: &'static str) -> ParseError {
        self.error_here(ParseErrorKind::Expected { expected, found: describe(self.peek()) })
    }

    fn eat_punct(&mut self, c: u8) -> bool {
        if self.peek() == Some(Tok::Punct(c)) {
            self.at = self.at.saturating_add(1);
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: u8, expected: &'static str) -> Result<Span, ParseError> {
        let span = self.span();
        if self.eat_punct(c) { Ok(span) } else { Err(self.expected(expected)) }
    }

    fn eat_directive(&mut self, name: &str) -> bool {
        if self.peek() == Some(Tok::Directive(name)) {
            self.at = self.at.saturating_add(1);
            true
        } else {
            false
        }
    }

    fn ident(&mut self, expected: &'static str) -> Result<(String, Span), ParseError> {
        match self.peek() {
            Some(Tok::Ident(name)) => {
                let span = self.span();
                self.at = self.at.saturating_add(1);
                Ok((name.to_owned(), span))
            }
            _ => Err(self.expected(expected)),
        }
    }

    /// A non-negative integer that fits `u64`.
    fn number(&mut self, expected: &'static str) -> Result<u64, ParseError> {
        let span = self.span();
        match self.peek() {
            Some(Tok::Number(text)) => {
                self.at = self.at.saturating_add(1);
                match immediate(text) {
                    Some(Immediate::Int(v)) => {
                        u64::try_from(v).map_err(|_| Self::error_at(span, ParseErrorKind::MalformedNumber))
                    }
                    _ => Err(Self::error_at(
                        span,
                        ParseErrorKind::Expected { expected, found: describe(Some(Tok::Number(text))) },
                    )),
                }
            }
            _ => Err(self.expected(expected)),
        }
    }

    fn number_u32(&mut self, expected: &'static str) -> Result<u32, ParseError> {
        let span = self.span();
        let value = self.number(expected)?;
        u32::try_from(value).map_err(|_| Self::error_at(span, ParseErrorKind::MalformedNumber))
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error_here(ParseErrorKind::TooDeep));
        }
        self.depth = self.depth.saturating_add(1);
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn module(&mut self) -> Result<Module, ParseError> {
        let version_span = self.span();
        if !self.eat_directive("version") {
            return Err(self.error_here(ParseErrorKind::Header("the module does not start with .version")));
        }
        let version = self.version()?;
        let mut module =
            Module { version, version_span, targets: Vec::new(), address_size: None, items: Vec::new() };
        let mut names: Vec<(String, bool)> = Vec::new();
        while let Some(tok) = self.peek() {
            let start = self.span();
            match tok {
                Tok::Directive("target") => {
                    self.bump();
                    loop {
                        let (target, _) = self.ident("a target")?;
                        module.targets.push(target);
                        if !self.eat_punct(b',') {
                            break;
                        }
                    }
                }
                Tok::Directive("address_size") => {
                    self.bump();
                    let size = self.number_u32("32 or 64")?;
                    if size != 32 && size != 64 {
                        return Err(Self::error_at(
                            self.last_span(),
                            ParseErrorKind::Expected { expected: "32 or 64", found: size.to_string() },
                        ));
                    }
                    module.address_size = Some(size);
                }
                Tok::Directive("file") => {
                    self.bump();
                    self.number("a file number")?;
                    match self.bump().map(|t| t.tok) {
                        Some(Tok::Str(_)) => {}
                        _ => {
                            return Err(Self::error_at(
                                self.last_span(),
                                ParseErrorKind::Expected {
                                    expected: "a file name",
                                    found: describe(
                                        self.tokens.get(self.at.saturating_sub(1)).map(|t| t.tok),
                                    ),
                                },
                            ));
                        }
                    }
                    if self.eat_punct(b',') {
                        self.number("a timestamp")?;
                        self.expect_punct(b',', "`,`")?;
                        self.number("a file size")?;
                    }
                }
                Tok::Directive("pragma") => {
                    self.bump();
                    let pragma = self.pragma(start)?;
                    module.items.push(Item::Pragma(pragma));
                }
                Tok::Directive("section") => {
                    return Err(self.error_here(ParseErrorKind::Unsupported(
                        "a .section (debug information: compile without -G)",
                    )));
                }
                Tok::Directive("alias") => {
                    return Err(self.error_here(ParseErrorKind::Unsupported("an .alias")));
                }
                _ => {
                    let linkage = self.linkage();
                    if module.targets.is_empty() {
                        return Err(Self::error_at(
                            start,
                            ParseErrorKind::Header("no .target before the first function or variable"),
                        ));
                    }
                    match self.peek() {
                        Some(Tok::Directive("entry")) | Some(Tok::Directive("func")) => {
                            let function = self.function(start, linkage)?;
                            let defined = function.body.is_some();
                            if defined && names.iter().any(|(n, d)| *d && *n == function.name) {
                                return Err(Self::error_at(start, ParseErrorKind::Duplicate(function.name)));
                            }
                            names.push((function.name.clone(), defined));
                            module.items.push(Item::Function(function));
                        }
                        Some(Tok::Directive(d)) if StateSpace::from_name(d).is_some() => {
                            for variable in self.variables(start, linkage)? {
                                module.items.push(Item::Variable(variable));
                            }
                        }
                        _ => return Err(self.expected("a directive, a variable or a function")),
                    }
                }
            }
        }
        if module.targets.is_empty() {
            return Err(self.error_here(ParseErrorKind::Header("no .target")));
        }
        Ok(module)
    }

    fn version(&mut self) -> Result<Version, ParseError> {
        let span = self.span();
        let bad = |found: String| {
            Self::error_at(span, ParseErrorKind::Expected { expected: "a version M.m", found })
        };
        match self.bump().map(|t| t.tok) {
            Some(Tok::Number(text)) => {
                let (major, minor) = text.split_once('.').ok_or_else(|| bad(format!("`{text}`")))?;
                let parse = |s: &str| {
                    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                        None
                    } else {
                        s.parse::<u32>().ok()
                    }
                };
                match (parse(major), parse(minor)) {
                    (Some(major), Some(minor)) => Ok(Version { major, minor }),
                    _ => Err(bad(format!("`{text}`"))),
                }
            }
            other => Err(bad(describe(other))),
        }
    }

    fn linkage(&mut self) -> Option<Linkage> {
        let linkage = match self.peek() {
            Some(Tok::Directive("visible")) => Linkage::Visible,
            Some(Tok::Directive("extern")) => Linkage::Extern,
            Some(Tok::Directive("weak")) => Linkage::Weak,
            Some(Tok::Directive("common")) => Linkage::Common,
            _ => return None,
        };
        self.bump();
        Some(linkage)
    }

    /// After `.pragma`: its strings and `;`.
    fn pragma(&mut self, start: Span) -> Result<Pragma, ParseError> {
        let mut strings = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Str(s)) => {
                    strings.push(s.to_owned());
                    self.bump();
                }
                _ => return Err(self.expected("a string")),
            }
            if !self.eat_punct(b',') {
                break;
            }
        }
        let end = self.expect_punct(b';', "`;`")?;
        Ok(Pragma { span: start.to(end), strings })
    }

    /// One or more variables, from their state space to their `;`.
    fn variables(&mut self, start: Span, linkage: Option<Linkage>) -> Result<Vec<Variable>, ParseError> {
        let space = match self.bump().map(|t| t.tok) {
            Some(Tok::Directive(d)) => StateSpace::from_name(d),
            _ => None,
        };
        let Some(space) = space else {
            return Err(Self::error_at(
                self.last_span(),
                ParseErrorKind::Expected {
                    expected: "a state space",
                    found: describe(self.tokens.get(self.at.saturating_sub(1)).map(|t| t.tok)),
                },
            ));
        };
        let (mut align, mut vector, mut ty) = (None, None, None);
        loop {
            match self.peek() {
                Some(Tok::Directive("align")) => {
                    self.bump();
                    align = Some(self.number_u32("an alignment")?);
                }
                Some(Tok::Directive(v @ ("v2" | "v4" | "v8"))) => {
                    vector = v.get(1..).and_then(|n| n.parse().ok());
                    self.bump();
                }
                Some(Tok::Directive(d)) if Type::from_name(d).is_some() && ty.is_none() => {
                    ty = Type::from_name(d);
                    self.bump();
                }
                Some(Tok::Directive(d)) if d.starts_with("attribute") || d == "managed" => {
                    return Err(
                        self.error_here(ParseErrorKind::Unsupported("a variable attribute (.managed)"))
                    );
                }
                _ => break,
            }
        }
        let Some(ty) = ty else { return Err(self.expected("a type")) };
        let mut out = Vec::new();
        loop {
            let (name, name_span) = self.ident("a variable name")?;
            let mut dims = Vec::new();
            while self.eat_punct(b'[') {
                if self.eat_punct(b']') {
                    dims.push(None);
                } else {
                    dims.push(Some(self.number("an array length")?));
                    self.expect_punct(b']', "`]`")?;
                }
            }
            if self.peek() == Some(Tok::Punct(b'<')) {
                return Err(self.error_here(ParseErrorKind::Unsupported("a parameterized variable name")));
            }
            let init = if self.eat_punct(b'=') { Some(self.initializer()?) } else { None };
            let span = if out.is_empty() { start } else { name_span };
            out.push(Variable {
                span: span.to(self.last_span()),
                linkage,
                space,
                align,
                vector,
                ty,
                name,
                dims,
                init,
            });
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.expect_punct(b';', "`;` after a variable")?;
        Ok(out)
    }

    fn initializer(&mut self) -> Result<Initializer, ParseError> {
        if self.eat_punct(b'{') {
            self.enter()?;
            let mut items = Vec::new();
            if !self.eat_punct(b'}') {
                loop {
                    items.push(self.initializer()?);
                    if self.eat_punct(b'}') {
                        break;
                    }
                    self.expect_punct(b',', "`,` or `}`")?;
                }
            }
            self.leave();
            return Ok(Initializer::List(items));
        }
        match self.peek() {
            Some(Tok::Number(_)) | Some(Tok::Punct(b'-')) => Ok(Initializer::Value(self.immediate()?)),
            Some(Tok::Ident(_)) => {
                Err(self.error_here(ParseErrorKind::Unsupported("an address in an initializer")))
            }
            _ => Err(self.expected("a number or `{`")),
        }
    }

    /// A number with an optional `-`, not followed by an operator.
    fn immediate(&mut self) -> Result<Immediate, ParseError> {
        let span = self.span();
        let negative = self.eat_punct(b'-');
        let value = match self.peek() {
            Some(Tok::Number(text)) => {
                self.bump();
                immediate(text).ok_or_else(|| Self::error_at(span, ParseErrorKind::MalformedNumber))?
            }
            _ => return Err(self.expected("a number")),
        };
        if matches!(
            self.peek(),
            Some(Tok::Punct(b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'<' | b'>'))
        ) {
            return Err(self.error_here(ParseErrorKind::Unsupported("a constant expression")));
        }
        Ok(if negative { negate(value) } else { value })
    }

    fn function(&mut self, start: Span, linkage: Option<Linkage>) -> Result<Function, ParseError> {
        let kind = if self.eat_directive("entry") {
            FunctionKind::Entry
        } else {
            self.bump(); // .func
            FunctionKind::Func
        };
        let returns = if kind == FunctionKind::Func && self.peek() == Some(Tok::Punct(b'(')) {
            self.params()?
        } else {
            Vec::new()
        };
        let (name, _) = self.ident("a function name")?;
        let params = if self.peek() == Some(Tok::Punct(b'(')) { self.params()? } else { Vec::new() };
        let mut attributes = Vec::new();
        while let Some(Tok::Directive(d)) = self.peek() {
            if !ATTRIBUTES.contains(&d) {
                break;
            }
            let span = self.span();
            self.bump();
            let mut values = Vec::new();
            if matches!(self.peek(), Some(Tok::Number(_))) {
                loop {
                    values.push(self.number("a number")?);
                    if !self.eat_punct(b',') {
                        break;
                    }
                }
            }
            attributes.push(Attribute { span: span.to(self.last_span()), name: d.to_owned(), values });
        }
        let body = if self.eat_punct(b';') {
            None
        } else if self.peek() == Some(Tok::Punct(b'{')) {
            Some(self.block()?)
        } else {
            return Err(self.expected("`{` or `;` after a function's header"));
        };
        Ok(Function { span: start, linkage, kind, returns, name, params, attributes, body })
    }

    /// `( param, ... )`.
    fn params(&mut self) -> Result<Vec<Param>, ParseError> {
        self.expect_punct(b'(', "`(`")?;
        let mut params = Vec::new();
        if self.eat_punct(b')') {
            return Ok(params);
        }
        loop {
            params.push(self.param()?);
            if self.eat_punct(b')') {
                return Ok(params);
            }
            self.expect_punct(b',', "`,` or `)` in a parameter list")?;
        }
    }

    fn param(&mut self) -> Result<Param, ParseError> {
        let start = self.span();
        let space = if self.eat_directive("param") {
            StateSpace::Param
        } else if self.eat_directive("reg") {
            StateSpace::Reg
        } else {
            return Err(self.expected("`.param` or `.reg`"));
        };
        let (mut align, mut vector, mut ty, mut ptr): (
            Option<u32>,
            Option<u32>,
            Option<Type>,
            Option<PtrAttribute>,
        ) = (None, None, None, None);
        loop {
            match self.peek() {
                Some(Tok::Directive("align")) => {
                    self.bump();
                    let value = self.number_u32("an alignment")?;
                    match &mut ptr {
                        Some(p) => p.align = Some(value),
                        None => align = Some(value),
                    }
                }
                Some(Tok::Directive("ptr")) if ptr.is_none() => {
                    self.bump();
                    ptr = Some(PtrAttribute { space: None, align: None });
                }
                Some(Tok::Directive(s @ ("global" | "const" | "local" | "shared"))) => {
                    match &mut ptr {
                        Some(p) if p.space.is_none() => p.space = StateSpace::from_name(s),
                        _ => return Err(self.expected("a parameter's type, `.align` or `.ptr`")),
                    }
                    self.bump();
                }
                Some(Tok::Directive(v @ ("v2" | "v4"))) if vector.is_none() => {
                    vector = v.get(1..).and_then(|n| n.parse().ok());
                    self.bump();
                }
                Some(Tok::Directive(d)) if Type::from_name(d).is_some() && ty.is_none() => {
                    ty = Type::from_name(d);
                    self.bump();
                }
                _ => break,
            }
        }
        let Some(ty) = ty else { return Err(self.expected("a parameter's type")) };
        let (name, _) = self.ident("a parameter's name")?;
        let mut dims = Vec::new();
        while self.eat_punct(b'[') {
            dims.push(self.number("an array length")?);
            self.expect_punct(b']', "`]`")?;
        }
        Ok(Param { span: start.to(self.last_span()), space, align, vector, ty, ptr, name, dims })
    }

    /// `{ statements }`.
    fn block(&mut self) -> Result<Block, ParseError> {
        let start = self.expect_punct(b'{', "`{`")?;
        self.enter()?;
        let mut statements = Vec::new();
        loop {
            let span = self.span();
            match self.peek() {
                None => return Err(self.expected("`}`")),
                Some(Tok::Punct(b'}')) => {
                    self.bump();
                    break;
                }
                Some(Tok::Punct(b'{')) => statements.push(Statement::Block(self.block()?)),
                Some(Tok::Directive("reg")) => statements.push(Statement::Registers(self.registers()?)),
                Some(Tok::Directive("pragma")) => {
                    self.bump();
                    statements.push(Statement::Pragma(self.pragma(span)?));
                }
                Some(Tok::Directive("loc")) => self.loc()?,
                Some(Tok::Directive(d @ ("local" | "shared" | "param" | "const" | "global"))) => {
                    let _ = d;
                    for variable in self.variables(span, None)? {
                        statements.push(Statement::Variable(variable));
                    }
                }
                Some(Tok::Directive(_)) => return Err(self.expected("a statement")),
                Some(Tok::Ident(name)) if self.peek_at(1) == Some(Tok::Punct(b':')) => {
                    self.bump();
                    self.bump();
                    if let Some(Tok::Directive(d @ ("callprototype" | "branchtargets" | "calltargets"))) =
                        self.peek()
                    {
                        let _ = d;
                        return Err(self.error_here(ParseErrorKind::Unsupported(
                            "a call prototype or a branch-target table",
                        )));
                    }
                    statements.push(Statement::Label(Label { span, name: name.to_owned() }));
                }
                Some(Tok::Ident(_)) | Some(Tok::Punct(b'@')) => {
                    statements.push(Statement::Instruction(self.instruction()?))
                }
                Some(_) => return Err(self.expected("a statement")),
            }
        }
        self.leave();
        Ok(Block { span: start.to(self.last_span()), statements })
    }

    /// `.reg [.vN] .type name[<N>], ...;`.
    fn registers(&mut self) -> Result<RegisterDecl, ParseError> {
        let start = self.span();
        self.bump();
        let mut vector = None;
        if let Some(Tok::Directive(v @ ("v2" | "v4"))) = self.peek() {
            vector = v.get(1..).and_then(|n| n.parse().ok());
            self.bump();
        }
        let ty = match self.peek() {
            Some(Tok::Directive(d)) => Type::from_name(d),
            _ => None,
        };
        let Some(ty) = ty else { return Err(self.expected("a register type")) };
        self.bump();
        let mut names = Vec::new();
        loop {
            let (name, span) = self.ident("a register name")?;
            // A register named as a special register would hide it from every reader after.
            if crate::scope::is_special(&name) || crate::scope::is_special(&format!("{name}0")) {
                return Err(Self::error_at(
                    span,
                    ParseErrorKind::Unsupported("a register named as a special register"),
                ));
            }
            let count = if self.eat_punct(b'<') {
                let n = self.number_u32("a register count")?;
                self.expect_punct(b'>', "`>`")?;
                Some(n)
            } else {
                None
            };
            names.push(RegisterName { name, count });
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.expect_punct(b';', "`;` after a register declaration")?;
        Ok(RegisterDecl { span: start.to(self.last_span()), vector, ty, names })
    }

    /// `.loc file line column [, function_name label[+n] [, inlined_at file line column]]`,
    /// read and dropped.
    fn loc(&mut self) -> Result<(), ParseError> {
        self.bump();
        for what in ["a file number", "a line", "a column"] {
            self.number(what)?;
        }
        if self.peek() == Some(Tok::Punct(b',')) && self.peek_at(1) == Some(Tok::Ident("function_name")) {
            self.bump();
            self.bump();
            self.ident("a label")?;
            if self.eat_punct(b'+') {
                self.number("an offset")?;
            }
            if self.peek() == Some(Tok::Punct(b',')) && self.peek_at(1) == Some(Tok::Ident("inlined_at")) {
                self.bump();
                self.bump();
                for what in ["a file number", "a line", "a column"] {
                    self.number(what)?;
                }
            }
        }
        Ok(())
    }

    fn instruction(&mut self) -> Result<Instruction, ParseError> {
        let start = self.span();
        let guard = if self.eat_punct(b'@') {
            let negated = self.eat_punct(b'!');
            let span = self.span();
            match self.peek() {
                Some(Tok::Ident(name)) if name != "_" => {
                    self.bump();
                    Some(Guard { span: span.to(self.last_span()), negated, register: name.to_owned() })
                }
                _ => return Err(self.expected("a predicate register")),
            }
        } else {
            None
        };
        let opcode = match self.peek() {
            Some(Tok::Ident(name)) if name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) => {
                self.bump();
                name.to_owned()
            }
            _ => return Err(self.expected("an opcode")),
        };
        let mut modifiers = Vec::new();
        while let Some(Tok::Directive(m)) = self.peek() {
            modifiers.push(m.to_owned());
            self.bump();
        }
        let mut operands = Vec::new();
        if !self.eat_punct(b';') {
            loop {
                operands.push(self.operand(true)?);
                if self.eat_punct(b';') {
                    break;
                }
                self.expect_punct(b',', "`,` or `;` after an operand")?;
            }
        }
        Ok(Instruction { span: start.to(self.last_span()), guard, opcode, modifiers, operands })
    }

    /// An operand; `nested` says whether braces, parentheses and brackets may hold more of them.
    fn operand(&mut self, nested: bool) -> Result<Operand, ParseError> {
        let start = self.span();
        let kind = match self.peek() {
            Some(Tok::Punct(open @ (b'{' | b'('))) if nested => {
                self.bump();
                let close = if open == b'{' { b'}' } else { b')' };
                let mut items = Vec::new();
                if !self.eat_punct(close) {
                    loop {
                        items.push(self.operand(false)?);
                        if self.eat_punct(close) {
                            break;
                        }
                        self.expect_punct(b',', if open == b'{' { "`,` or `}`" } else { "`,` or `)`" })?;
                    }
                }
                if open == b'{' {
                    if items.is_empty() {
                        return Err(Self::error_at(
                            start,
                            ParseErrorKind::Expected {
                                expected: "a vector's elements",
                                found: "`{}`".to_owned(),
                            },
                        ));
                    }
                    OperandKind::Vector(items)
                } else {
                    OperandKind::List(items)
                }
            }
            Some(Tok::Punct(b'[')) => {
                self.bump();
                self.bracket(start, nested)?
            }
            Some(Tok::Punct(b'!')) => {
                self.bump();
                match self.peek() {
                    Some(Tok::Ident(name)) if name.starts_with('%') => {
                        self.bump();
                        OperandKind::Not(Register::new(name))
                    }
                    _ => return Err(self.expected("a predicate register")),
                }
            }
            Some(Tok::Number(_)) | Some(Tok::Punct(b'-')) => OperandKind::Immediate(self.immediate()?),
            Some(Tok::Ident("_")) => {
                self.bump();
                OperandKind::Sink
            }
            Some(Tok::Ident(name)) if name.starts_with('%') => {
                self.bump();
                let first = self.register_rest(name);
                if self.eat_punct(b'|') {
                    match self.peek() {
                        Some(Tok::Ident(second)) if second.starts_with('%') => {
                            self.bump();
                            OperandKind::Pair(first, Register::new(second))
                        }
                        _ => return Err(self.expected("a predicate register after `|`")),
                    }
                } else {
                    OperandKind::Register(first)
                }
            }
            Some(Tok::Ident(name)) => {
                self.bump();
                if self.peek() == Some(Tok::Punct(b'(')) {
                    return Err(self
                        .error_here(ParseErrorKind::Unsupported("an address expression (`generic(...)`)")));
                }
                let offset = if self.eat_punct(b'+') { self.offset()? } else { 0 };
                OperandKind::Symbol { name: name.to_owned(), offset }
            }
            _ => return Err(self.expected("an operand")),
        };
        Ok(Operand { span: start.to(self.last_span()), kind })
    }

    /// A register's optional component (`%tid.x`, `%tid .x`).
    fn register_rest(&mut self, name: &str) -> Register {
        let mut register = Register::new(name);
        if let Some(Tok::Directive(c)) = self.peek()
            && let Some(component) = Component::from_name(c)
        {
            self.bump();
            register.component = Some(component);
        }
        register
    }

    /// After `+` in an address or a symbol: `n` or `-n`, as an `i64`.
    fn offset(&mut self) -> Result<i64, ParseError> {
        let span = self.span();
        match self.immediate()? {
            Immediate::Int(v) => {
                i64::try_from(v).map_err(|_| Self::error_at(span, ParseErrorKind::MalformedNumber))
            }
            _ => Err(Self::error_at(
                span,
                ParseErrorKind::Expected { expected: "an integer offset", found: "a float".into() },
            )),
        }
    }

    /// After `[`: an address, or a list of operands (a texture's).
    fn bracket(&mut self, start: Span, nested: bool) -> Result<OperandKind, ParseError> {
        let base = match self.peek() {
            Some(Tok::Ident(name)) if name.starts_with('%') => {
                self.bump();
                Some(AddressBase::Register(name.to_owned()))
            }
            Some(Tok::Ident(name)) if name != "_" => {
                self.bump();
                Some(AddressBase::Symbol(name.to_owned()))
            }
            Some(Tok::Number(_)) => {
                let span = self.span();
                let offset = self.offset()?;
                if offset < 0 {
                    return Err(Self::error_at(span, ParseErrorKind::MalformedNumber));
                }
                self.expect_punct(b']', "`]`")?;
                return Ok(OperandKind::Address(Address { base: AddressBase::Absolute, offset }));
            }
            _ => None,
        };
        match (base, self.peek()) {
            (Some(base), Some(Tok::Punct(b']'))) => {
                self.bump();
                Ok(OperandKind::Address(Address { base, offset: 0 }))
            }
            (Some(base), Some(Tok::Punct(b'+'))) => {
                self.bump();
                let offset = self.offset()?;
                self.expect_punct(b']', "`]`")?;
                Ok(OperandKind::Address(Address { base, offset }))
            }
            (Some(base), Some(Tok::Punct(b','))) if nested => {
                let first = Operand {
                    span: start,
                    kind: match base {
                        AddressBase::Register(name) => OperandKind::Register(Register::new(name)),
                        AddressBase::Symbol(name) => OperandKind::Symbol { name, offset: 0 },
                        AddressBase::Absolute => OperandKind::Sink,
                    },
                };
                let mut items = vec![first];
                while self.eat_punct(b',') {
                    items.push(self.operand(true)?);
                }
                self.expect_punct(b']', "`]`")?;
                Ok(OperandKind::Brackets(items))
            }
            _ => Err(self.expected("an address: a register or variable, `+` and an offset")),
        }
    }
}

/// The value of a number token (see the lexer for the forms).
fn immediate(text: &str) -> Option<Immediate> {
    let digits = text.strip_suffix('U').unwrap_or(text);
    let lower = digits.get(..2).map(str::to_ascii_lowercase);
    let rest = digits.get(2..).unwrap_or_default();
    match lower.as_deref() {
        Some("0x") => u64::from_str_radix(rest, 16).ok().map(|v| Immediate::Int(i128::from(v))),
        Some("0b") => u64::from_str_radix(rest, 2).ok().map(|v| Immediate::Int(i128::from(v))),
        Some("0f") if rest.len() == 8 && digits.len() == text.len() => {
            u32::from_str_radix(rest, 16).ok().map(Immediate::F32)
        }
        Some("0d") if rest.len() == 16 && digits.len() == text.len() => {
            u64::from_str_radix(rest, 16).ok().map(Immediate::F64)
        }
        Some("0f" | "0d") => None,
        _ if digits.contains(['.', 'e', 'E']) => {
            if digits.len() == text.len() {
                Some(Immediate::Decimal(digits.to_owned()))
            } else {
                None
            }
        }
        _ if digits.len() > 1 && digits.starts_with('0') => {
            u64::from_str_radix(digits.get(1..).unwrap_or_default(), 8)
                .ok()
                .map(|v| Immediate::Int(i128::from(v)))
        }
        _ => digits.parse::<u64>().ok().map(|v| Immediate::Int(i128::from(v))),
    }
}

/// `-value`.
fn negate(value: Immediate) -> Immediate {
    match value {
        Immediate::Int(v) => Immediate::Int(v.saturating_neg()),
        Immediate::F32(bits) => Immediate::F32(bits ^ 0x8000_0000),
        Immediate::F64(bits) => Immediate::F64(bits ^ (1 << 63)),
        Immediate::Decimal(text) => match text.strip_prefix('-') {
            Some(positive) => Immediate::Decimal(positive.to_owned()),
            None => Immediate::Decimal(format!("-{text}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const MODULE: &str = ".version 7.8\n.target sm_90\n.address_size 64\n\
        .const .align 4 .b8 table[8] = {0, 0, 128, 63, 0, 0, 0, 64};\n\
        .visible .entry k(.param .u64 p, .param .u32 n)\n.maxntid 128, 1, 1\n{\n\
        \t.reg .pred %p<3>;\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<8>;\n\
        \t.shared .align 16 .b8 tile[512];\n\t.pragma \"nounroll\";\n\
        \tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [n];\n\tmov.u32 %r2, %tid.x;\n\
        \tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra $L__BB0_2;\n\
        \tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\
        \tld.global.v2.f32 {%f1, %f2}, [%rd4+-8];\n\tmov.u32 %r3, tile;\n\tst.shared.f32 [%r3+4], %f1;\n\
        \t{\n\t\t.reg .b32 %t;\n\t\tshfl.sync.down.b32 %t|%p2, %r2, 1, 31, -1;\n\t}\n\
        \t@!%p2 atom.global.add.f32 %f3, [%rd4], 0f3F800000;\n\
        $L__BB0_2:\n\tret;\n}\n";

    /// The text of a token as the lexer read it.
    fn spell(tok: Tok<'_>) -> String {
        match tok {
            Tok::Ident(s) | Tok::Number(s) => s.to_owned(),
            Tok::Directive(s) => format!(".{s}"),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::Punct(c) => char::from(c).to_string(),
        }
    }

    proptest! {
        /// Any whitespace or comment between any two tokens: the same module.
        #[test]
        fn trivia_between_any_two_tokens_changes_nothing(
            trivia in prop::collection::vec(
                prop::sample::select(vec![" ", "\t", "\n", "\r\n", "\x0c", "/* c */", "// c\n", " /* a\n b */ "]),
                300,
            ),
        ) {
            let tokens = tokenize(MODULE).unwrap();
            let module = parse(MODULE).unwrap();
            let mut text = String::new();
            for (i, token) in tokens.iter().enumerate() {
                // `.version`'s number and `.loc`-free text: no line-sensitive directive here.
                text.push_str(&spell(token.tok));
                text.push_str(trivia[i % trivia.len()]);
            }
            prop_assert_eq!(parse(&text).unwrap(), module);
        }
    }

    #[test]
    fn the_sample_module_reads_as_written() {
        let module = parse(MODULE).unwrap();
        let printed = module.to_string();
        assert_eq!(parse(&printed).unwrap(), module);
        assert!(printed.contains("\t\tshfl.sync.down.b32\t%t|%p2, %r2, 1, 31, -1;\n"), "{printed}");
        assert!(printed.contains("\tld.global.v2.f32\t{%f1, %f2}, [%rd4+-8];\n"), "{printed}");
        assert!(
            printed.contains(".const .align 4 .b8 table[8] = {0, 0, 128, 63, 0, 0, 0, 64};"),
            "{printed}"
        );
    }
}
