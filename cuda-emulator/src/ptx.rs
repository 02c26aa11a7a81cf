//! The emulator's PTX reader: what the driver's ptxas does at `cuModuleLoadDataEx`, as far as
//! a launch needs it. It reads a module's `.version` and `.target`, every kernel (`.entry`)
//! with its parameter layout (offset, size and alignment of each `.param`) and the kernel's
//! static shared memory, and refuses malformed PTX with a ptxas-style log line.
//!
//! It is written independently of the launcher's PTX parser (`cuda-backend/src/signature.rs`),
//! so that the parameter sizes the emulated driver reports (`cuFuncGetParamInfo`) and copies
//! (`cuLaunchKernel`) cross-check that parser instead of repeating it.
//!
//! ```
//! use kernel_args_cuda_emulator::ptx::read_ptx;
//!
//! let ptx = ".version 7.8\n.target sm_52\n.address_size 64\n\
//!            .visible .entry scale(\n\t.param .u64 scale_param_0,\n\t.param .f32 scale_param_1\n)\n{\n\tret;\n}\n";
//! let module = read_ptx(ptx).unwrap();
//! assert_eq!(module.entry("scale").unwrap().param_sizes(), vec![8, 4]);
//! ```
//!
//! ## What the reader accepts
//!
//! The text is read as tokens (comments `//` and `/* */` are skipped, line numbers kept):
//!
//! - The first statement must be `.version MAJOR.MINOR`; a `.target` (one or more targets,
//!   comma-separated) must come before the first function. `.address_size` takes 32 or 64.
//! - `.entry NAME ( PARAM, ... )`, optionally preceded by `.visible`, `.extern` or `.weak`,
//!   optionally followed by performance directives (`.maxntid 256, 1, 1`, ...), then a body
//!   `{ ... }` (a kernel) or `;` (a declaration, not a kernel). The parameter list may be
//!   absent or empty.
//! - A parameter is `.param`, then in any order one type (`.b8`-`.b128`, `.u8`-`.u64`,
//!   `.s8`-`.s64`, `.f16`, `.f16x2`, `.bf16`, `.bf16x2`, `.f32`, `.f64`), an optional vector
//!   size `.v2`/`.v4`, an optional `.align N`, an optional `.ptr` with a state space and the
//!   pointee's `.align`; then the name and optional array lengths `[N]`. Its size is the type's
//!   size × the vector size × the array lengths; its alignment `.align N` where given, else
//!   the type's size × the vector size (PTX aligns a vector to its whole size). Parameters are
//!   laid out in order, each at the next multiple of its alignment.
//! - In a kernel body, a statement that starts with `.shared` declares static shared memory
//!   (`.shared .align 4 .b8 tile[4096];`, several names separated by commas allowed): the
//!   declarations are laid out in order, each at the next multiple of its alignment, and the
//!   end of the last one is the kernel's static shared size (for aligned declarations, their
//!   sum). `.extern .shared` (dynamic shared memory) and module-scope `.shared` variables add
//!   nothing. A kernel over 48 KiB of static shared memory is refused, as ptxas refuses it.
//! - `.func` definitions and declarations are skipped (header, then body or `;`), as is any
//!   other top-level directive (`.file`, `.global`, `.const`, `.extern` variables, ...): the
//!   rest of its line, and a brace-delimited initialiser to its end. A top-level `{ ... }`
//!   block is skipped whole.
//!
//! ## What is malformed (`CUDA_ERROR_INVALID_PTX`)
//!
//! - no `.version` first, or no `.target` before the first function (or at all);
//! - a top-level statement that is not a directive (`.xxx`), a comment, a blank line, a
//!   top-level brace block, or part of an `.entry`/`.func` header, parameter list or body;
//! - an `.entry` whose parameter list cannot be read as above, a body or comment that does
//!   not end, a `.shared` declaration that cannot be read, two kernels of the same name, a
//!   kernel over 48 KiB of static shared memory.
//!
//! Instructions inside bodies are not checked: the reader is the launch path's ptxas, not a
//! PTX compiler.

use std::fmt;

/// The most static shared memory one kernel may declare, in bytes (48 KiB, as ptxas enforces).
pub const STATIC_SHARED_LIMIT: usize = 48 * 1024;

/// A PTX module as the emulated driver loads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxModule {
    /// The PTX ISA version of `.version`, as `(major, minor)`.
    pub version: (u32, u32),
    /// The line of the `.version` directive (1-based), for the log of a version refusal.
    pub version_line: usize,
    /// The targets of `.target` (e.g. `["sm_52"]`).
    pub targets: Vec<String>,
    /// The kernels: every `.entry` with a body, in file order.
    pub entries: Vec<PtxEntry>,
}

impl PtxModule {
    /// The kernel named `name`, if the module defines one.
    pub fn entry(&self, name: &str) -> Option<&PtxEntry> {
        self.entries.iter().find(|entry| entry.name == name)
    }
}

/// A kernel: an `.entry` definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxEntry {
    /// The entry's name, as `cuModuleGetFunction` looks it up.
    pub name: String,
    /// The parameters, in declaration order, with their layout.
    pub params: Vec<PtxParam>,
    /// Bytes of static shared memory the body declares.
    pub static_shared_bytes: usize,
    /// `.maxntid X[, Y[, Z]]`: the most threads a block may have (`X * Y * Z`), if declared.
    pub max_threads: Option<u64>,
    /// `.reqntid X[, Y[, Z]]`: the exact block the kernel must be launched with, if declared.
    pub required_block: Option<[u32; 3]>,
}

impl PtxEntry {
    /// The parameters' sizes in bytes, in order: what `cuLaunchKernel` copies from each
    /// `kernelParams[i]`.
    pub fn param_sizes(&self) -> Vec<usize> {
        self.params.iter().map(|param| param.size).collect()
    }

    /// The size of the parameter buffer: the end of the last parameter.
    pub fn param_buffer_bytes(&self) -> usize {
        self.params.last().map_or(0, |param| param.offset + param.size)
    }
}

/// One kernel parameter's place in the parameter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtxParam {
    /// Offset in the parameter buffer, a multiple of `align`.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub align: usize,
}

/// Why the reader refused a module, formatted as ptxas's log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxError {
    /// The line the error is on (1-based), where ptxas names one.
    pub line: Option<usize>,
    /// What is wrong, as ptxas words it (e.g. `Parsing error near 'this': syntax error`).
    pub message: String,
}

impl PtxError {
    /// A fatal error on `line`: `ptxas application ptx input, line N; fatal   : ...`.
    pub fn fatal(line: usize, message: impl Into<String>) -> PtxError {
        PtxError { line: Some(line), message: message.into() }
    }

    /// ptxas's syntax error near the token `near` on `line`.
    fn syntax(line: usize, near: &str) -> PtxError {
        PtxError::fatal(line, format!("Parsing error near '{near}': syntax error"))
    }
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "ptxas application ptx input, line {line}; fatal   : {}", self.message),
            None => write!(f, "ptxas error   : {}", self.message),
        }
    }
}

impl std::error::Error for PtxError {}

/// Reads a PTX module (the text of `cuModuleLoadDataEx`'s image, without its NUL).
///
/// # Errors
///
/// A [`PtxError`] naming the line, for everything the module docs call malformed.
pub fn read_ptx(text: &str) -> Result<PtxModule, PtxError> {
    let tokens = tokenize(text)?;
    Reader { tokens: &tokens, pos: 0 }.module()
}

/// One token and the line it is on.
#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    line: usize,
}

impl Token<'_> {
    fn syntax_error(&self) -> PtxError {
        PtxError::syntax(self.line, self.text)
    }
}

/// A byte that may start an identifier (`%r1`, `$L__BB0_2`, `_Z3fooPf`, `sm_52`).
fn starts_identifier(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || matches!(byte, b'_' | b'$' | b'%')
}

/// A byte that may continue an identifier or a directive.
fn continues_identifier(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'$')
}

/// Splits `text` into tokens: directives (`.param`), identifiers, numbers (`7.8`, `0x10`,
/// `0f3F800000`), strings, and single punctuation characters. Comments are dropped.
fn tokenize(text: &str) -> Result<Vec<Token<'_>>, PtxError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Every token ends on an ASCII byte or a char boundary, so `text.get` never fails; the
    // fallback keeps this function panic-free regardless.
    let mut push = |start: usize, end: usize, line: usize| {
        tokens.push(Token { text: text.get(start..end).unwrap_or("?"), line });
    };
    while let Some(&byte) = bytes.get(i) {
        let start = i;
        match byte {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => i += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while bytes.get(i).is_some_and(|&b| b != b'\n') {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let opened = line;
                i += 2;
                loop {
                    match bytes.get(i) {
                        None => {
                            return Err(PtxError::fatal(
                                opened,
                                "Parsing error near '/*': comment not closed",
                            ));
                        }
                        Some(b'*') if bytes.get(i + 1) == Some(&b'/') => {
                            i += 2;
                            break;
                        }
                        Some(b'\n') => {
                            line += 1;
                            i += 1;
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            b'"' => {
                i += 1;
                loop {
                    match bytes.get(i) {
                        None | Some(b'\n') => return Err(PtxError::syntax(line, "\"")),
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
                push(start, i, line);
            }
            b'.' => {
                i += 1;
                while bytes.get(i).is_some_and(|&b| continues_identifier(b)) {
                    i += 1;
                }
                push(start, i, line);
            }
            b if starts_identifier(b) => {
                i += 1;
                while bytes.get(i).is_some_and(|&b| continues_identifier(b)) {
                    i += 1;
                }
                push(start, i, line);
            }
            b if b.is_ascii_digit() => {
                while bytes.get(i).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_') {
                    i += 1;
                }
                push(start, i, line);
            }
            _ => {
                let width = text.get(i..).and_then(|rest| rest.chars().next()).map_or(1, char::len_utf8);
                i += width;
                push(start, i, line);
            }
        }
    }
    Ok(tokens)
}

/// The size in bytes of a fundamental PTX type, for the type directives a parameter or a
/// shared variable may have.
fn type_size(directive: &str) -> Option<usize> {
    Some(match directive {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// A directive token: `.` and at least one more character.
fn is_directive(text: &str) -> bool {
    text.len() > 1 && text.starts_with('.')
}

/// An identifier token (a name).
fn is_identifier(text: &str) -> bool {
    text.as_bytes().first().is_some_and(|&b| starts_identifier(b))
        && text.bytes().skip(1).all(continues_identifier)
        && text != "%"
}

/// `value` rounded up to a multiple of `align` (a power of two), or `None` on overflow.
fn align_up(value: usize, align: usize) -> Option<usize> {
    value.checked_next_multiple_of(align)
}

/// The token-level reader: the position in the token list.
struct Reader<'t, 'a> {
    tokens: &'t [Token<'a>],
    pos: usize,
}

impl<'a> Reader<'_, 'a> {
    fn peek(&self) -> Option<Token<'a>> {
        self.tokens.get(self.pos).copied()
    }

    fn peek_is(&self, text: &str) -> bool {
        self.peek().is_some_and(|token| token.text == text)
    }

    fn advance(&mut self) -> Option<Token<'a>> {
        let token = self.peek()?;
        self.pos += 1;
        Some(token)
    }

    /// The next token; at the end of the text, a syntax error on the last line.
    fn expect_token(&mut self) -> Result<Token<'a>, PtxError> {
        self.advance().ok_or_else(|| self.end_of_text())
    }

    fn end_of_text(&self) -> PtxError {
        PtxError::syntax(self.tokens.last().map_or(1, |token| token.line), "end of file")
    }

    /// The next token if it is on `line`.
    fn advance_on_line(&mut self, line: usize) -> Option<Token<'a>> {
        let token = self.peek().filter(|token| token.line == line)?;
        self.pos += 1;
        Some(token)
    }

    /// The next token, which must be `text`.
    fn expect(&mut self, text: &str) -> Result<Token<'a>, PtxError> {
        let token = self.expect_token()?;
        if token.text == text { Ok(token) } else { Err(token.syntax_error()) }
    }

    /// The next token, which must be a positive decimal or `0x` hexadecimal integer.
    fn positive_integer(&mut self) -> Result<usize, PtxError> {
        let token = self.expect_token()?;
        let parsed = match token.text.strip_prefix("0x").or_else(|| token.text.strip_prefix("0X")) {
            Some(hex) => usize::from_str_radix(hex, 16).ok(),
            None => token.text.parse::<usize>().ok(),
        };
        parsed.filter(|&n| n > 0).ok_or_else(|| token.syntax_error())
    }

    /// The next token, which must be a power-of-two `.align` value.
    fn alignment(&mut self) -> Result<usize, PtxError> {
        let line = self.peek().map_or(0, |token| token.line);
        let value = self.positive_integer()?;
        if value.is_power_of_two() { Ok(value) } else { Err(PtxError::syntax(line, &value.to_string())) }
    }

    fn module(mut self) -> Result<PtxModule, PtxError> {
        let mut version: Option<((u32, u32), usize)> = None;
        let mut targets: Option<Vec<String>> = None;
        let mut entries: Vec<PtxEntry> = Vec::new();
        while let Some(token) = self.advance() {
            if version.is_none() && token.text != ".version" {
                return Err(PtxError::fatal(token.line, "Missing .version directive at start of file"));
            }
            match token.text {
                ".version" if version.is_none() => version = Some((self.version(token)?, token.line)),
                ".target" if targets.is_none() => targets = Some(self.targets(token)?),
                ".address_size" => self.address_size(token)?,
                // Linkage: what follows says what is declared.
                ".visible" | ".extern" | ".weak" | ".common" => {
                    if !(self.peek_is(".entry") || self.peek_is(".func") || self.peek_is(".visible")) {
                        self.skip_directive(token)?;
                    }
                }
                ".entry" => {
                    if targets.is_none() {
                        return Err(PtxError::fatal(token.line, "Missing .target directive"));
                    }
                    if let Some(entry) = self.entry()? {
                        if entries.iter().any(|known| known.name == entry.name) {
                            return Err(PtxError::fatal(
                                token.line,
                                format!("Duplicate definition of function '{}'", entry.name),
                            ));
                        }
                        entries.push(entry);
                    }
                }
                ".func" => {
                    if targets.is_none() {
                        return Err(PtxError::fatal(token.line, "Missing .target directive"));
                    }
                    self.skip_function()?;
                }
                "{" => self.skip_block()?,
                ".version" | ".target" => return Err(token.syntax_error()),
                text if is_directive(text) => self.skip_directive(token)?,
                _ => return Err(token.syntax_error()),
            }
        }
        let Some((version, version_line)) = version else {
            return Err(PtxError::fatal(1, "Missing .version directive at start of file"));
        };
        let Some(targets) = targets else {
            return Err(PtxError::fatal(version_line, "Missing .target directive"));
        };
        Ok(PtxModule { version, version_line, targets, entries })
    }

    /// `.version MAJOR.MINOR`, on the directive's line.
    fn version(&mut self, directive: Token<'a>) -> Result<(u32, u32), PtxError> {
        let token = self.advance_on_line(directive.line).ok_or_else(|| directive.syntax_error())?;
        token
            .text
            .split_once('.')
            .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?)))
            .ok_or_else(|| token.syntax_error())
    }

    /// `.target T[, T...]`, on the directive's line.
    fn targets(&mut self, directive: Token<'a>) -> Result<Vec<String>, PtxError> {
        let mut targets = Vec::new();
        loop {
            let token = self.advance_on_line(directive.line).ok_or_else(|| directive.syntax_error())?;
            if !is_identifier(token.text) {
                return Err(token.syntax_error());
            }
            targets.push(token.text.to_owned());
            if self.peek().is_some_and(|next| next.line == directive.line && next.text == ",") {
                self.pos += 1;
            } else {
                return Ok(targets);
            }
        }
    }

    /// `.address_size 32|64`, on the directive's line.
    fn address_size(&mut self, directive: Token<'a>) -> Result<(), PtxError> {
        let token = self.advance_on_line(directive.line).ok_or_else(|| directive.syntax_error())?;
        if matches!(token.text, "32" | "64") { Ok(()) } else { Err(token.syntax_error()) }
    }

    /// Skips a top-level directive the emulator has no use for: the rest of its line, and a
    /// brace-delimited initialiser that starts on it to its closing brace's line.
    fn skip_directive(&mut self, directive: Token<'a>) -> Result<(), PtxError> {
        let mut line = directive.line;
        let mut depth = 0usize;
        loop {
            let Some(token) = self.peek() else {
                return if depth == 0 { Ok(()) } else { Err(self.end_of_text()) };
            };
            if token.line != line {
                if depth == 0 {
                    return Ok(());
                }
                line = token.line;
            }
            self.pos += 1;
            match token.text {
                "{" => depth += 1,
                "}" => depth = depth.checked_sub(1).ok_or_else(|| token.syntax_error())?,
                _ => {}
            }
        }
    }

    /// Skips a brace block whose `{` has been read, to its matching `}`.
    fn skip_block(&mut self) -> Result<(), PtxError> {
        let mut depth = 1usize;
        while depth > 0 {
            match self.expect_token()?.text {
                "{" => depth += 1,
                "}" => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }

    /// Skips a `.func`: its header, then its body or the `;` of a declaration.
    fn skip_function(&mut self) -> Result<(), PtxError> {
        let mut parens = 0usize;
        loop {
            let token = self.expect_token()?;
            match token.text {
                "(" => parens += 1,
                ")" => parens = parens.checked_sub(1).ok_or_else(|| token.syntax_error())?,
                ";" if parens == 0 => return Ok(()),
                "{" if parens == 0 => return self.skip_block(),
                "{" | "}" | ";" => return Err(token.syntax_error()),
                _ => {}
            }
        }
    }

    /// An `.entry` after its directive: the kernel, or `None` for a declaration without body.
    fn entry(&mut self) -> Result<Option<PtxEntry>, PtxError> {
        let name = self.expect_token()?;
        if !is_identifier(name.text) {
            return Err(name.syntax_error());
        }
        let params = if self.peek_is("(") {
            self.pos += 1;
            self.param_list()?
        } else {
            Vec::new()
        };
        let (mut max_threads, mut required_block) = (None, None);
        loop {
            let token = self.expect_token()?;
            match token.text {
                "{" => {
                    let static_shared_bytes = self.entry_body()?;
                    if static_shared_bytes > STATIC_SHARED_LIMIT {
                        return Err(PtxError {
                            line: None,
                            message: format!(
                                "Entry function '{}' uses too much shared data ({static_shared_bytes:#x} bytes, \
                                 {STATIC_SHARED_LIMIT:#x} max)",
                                name.text
                            ),
                        });
                    }
                    return Ok(Some(PtxEntry {
                        name: name.text.to_owned(),
                        params,
                        static_shared_bytes,
                        max_threads,
                        required_block,
                    }));
                }
                ";" => return Ok(None),
                // Performance directives: `.maxntid 256, 1, 1`, `.minnctapersm 2`, `.noreturn`...
                text if is_directive(text) => {
                    let mut numbers = Vec::new();
                    while let Some(next) = self.peek().filter(|next| {
                        next.text == "," || next.text.starts_with(|c: char| c.is_ascii_digit() || c == '"')
                    }) {
                        if let Ok(number) = next.text.parse::<u32>() {
                            numbers.push(number);
                        }
                        self.pos += 1;
                    }
                    if text == ".maxntid" || text == ".reqntid" {
                        // Up to three dimensions, the missing ones 1.
                        if numbers.is_empty() || numbers.len() > 3 || numbers.contains(&0) {
                            return Err(token.syntax_error());
                        }
                        let mut dims = [1u32; 3];
                        for (dim, number) in dims.iter_mut().zip(&numbers) {
                            *dim = *number;
                        }
                        let threads = dims.iter().map(|&d| u64::from(d)).product::<u64>();
                        max_threads = Some(max_threads.map_or(threads, |m: u64| m.min(threads)));
                        if text == ".reqntid" {
                            required_block = Some(dims);
                        }
                    }
                    if text == ".pragma" && self.peek_is(";") {
                        self.pos += 1;
                    }
                }
                _ => return Err(token.syntax_error()),
            }
        }
    }

    /// A parameter list after its `(`, through its `)`, laid out in the parameter buffer.
    fn param_list(&mut self) -> Result<Vec<PtxParam>, PtxError> {
        let mut params = Vec::new();
        if self.peek_is(")") {
            self.pos += 1;
            return Ok(params);
        }
        let mut end = 0usize;
        loop {
            let line = self.peek().map_or(0, |token| token.line);
            let (size, align) = self.param()?;
            let offset = align_up(end, align).ok_or_else(|| PtxError::syntax(line, ".param"))?;
            end = offset.checked_add(size).ok_or_else(|| PtxError::syntax(line, ".param"))?;
            params.push(PtxParam { offset, size, align });
            let token = self.expect_token()?;
            match token.text {
                "," => {}
                ")" => return Ok(params),
                _ => return Err(token.syntax_error()),
            }
        }
    }

    /// One `.param` declaration: its size and alignment.
    fn param(&mut self) -> Result<(usize, usize), PtxError> {
        self.expect(".param")?;
        let mut element: Option<usize> = None;
        let mut vector = 1usize;
        let mut align: Option<usize> = None;
        let mut pointer = false;
        while let Some(token) = self.peek() {
            match token.text {
                ".align" => {
                    self.pos += 1;
                    let value = self.alignment()?;
                    // After `.ptr`, `.align` is the pointee's alignment, not the parameter's.
                    if !pointer {
                        if align.is_some() {
                            return Err(token.syntax_error());
                        }
                        align = Some(value);
                    }
                    continue;
                }
                ".v2" if vector == 1 => vector = 2,
                ".v4" if vector == 1 => vector = 4,
                ".ptr" if !pointer => pointer = true,
                ".global" | ".const" | ".local" | ".shared" if pointer => {}
                text => match type_size(text) {
                    Some(size) if element.is_none() => element = Some(size),
                    _ => break,
                },
            }
            self.pos += 1;
        }
        let name = self.expect_token()?;
        let Some(element) = element else { return Err(name.syntax_error()) };
        if !is_identifier(name.text) {
            return Err(name.syntax_error());
        }
        let mut count = 1usize;
        while self.peek_is("[") {
            self.pos += 1;
            let line = self.peek().map_or(name.line, |token| token.line);
            let length = self.positive_integer()?;
            count = count.checked_mul(length).ok_or_else(|| PtxError::syntax(line, &length.to_string()))?;
            self.expect("]")?;
        }
        let whole = element * vector;
        let size = whole.checked_mul(count).ok_or_else(|| name.syntax_error())?;
        Ok((size, align.unwrap_or(whole)))
    }

    /// A kernel body after its `{`, through its `}`: the static shared memory it declares.
    fn entry_body(&mut self) -> Result<usize, PtxError> {
        let mut depth = 1usize;
        let mut shared_end = 0usize;
        let mut statement_start = true;
        loop {
            let token = self.expect_token()?;
            match token.text {
                "{" => {
                    depth += 1;
                    statement_start = true;
                }
                "}" => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(shared_end);
                    }
                    statement_start = true;
                }
                ";" | ":" => statement_start = true,
                ".shared" if statement_start => {
                    shared_end = self.shared_declaration(shared_end)?;
                    statement_start = true;
                }
                _ => statement_start = false,
            }
        }
    }

    /// A `.shared` declaration after its directive, through its `;`: lays its variables out
    /// after `end` and returns the new end.
    fn shared_declaration(&mut self, mut end: usize) -> Result<usize, PtxError> {
        let mut element: Option<usize> = None;
        let mut vector = 1usize;
        let mut align: Option<usize> = None;
        while let Some(token) = self.peek() {
            match token.text {
                ".align" if align.is_none() => {
                    self.pos += 1;
                    align = Some(self.alignment()?);
                    continue;
                }
                ".v2" if vector == 1 => vector = 2,
                ".v4" if vector == 1 => vector = 4,
                text => match type_size(text) {
                    Some(size) if element.is_none() => element = Some(size),
                    _ => break,
                },
            }
            self.pos += 1;
        }
        loop {
            let name = self.expect_token()?;
            let Some(element) = element else { return Err(name.syntax_error()) };
            if !is_identifier(name.text) {
                return Err(name.syntax_error());
            }
            let mut count = 1usize;
            let mut unsized_array = false;
            while self.peek_is("[") {
                self.pos += 1;
                if self.peek_is("]") {
                    unsized_array = true;
                } else {
                    count = count.checked_mul(self.positive_integer()?).ok_or_else(|| name.syntax_error())?;
                }
                self.expect("]")?;
            }
            if !unsized_array {
                let whole = element * vector;
                let size = whole.checked_mul(count).ok_or_else(|| name.syntax_error())?;
                let offset = align_up(end, align.unwrap_or(whole)).ok_or_else(|| name.syntax_error())?;
                end = offset.checked_add(size).ok_or_else(|| name.syntax_error())?;
            }
            let token = self.expect_token()?;
            match token.text {
                "," => {}
                ";" => return Ok(end),
                _ => return Err(token.syntax_error()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR_ADD: &str = include_str!("../../cuda-backend/kernels/vector_add.ptx");
    const SCALARS: &str = include_str!("../../cuda-backend/kernels/scalars.ptx");
    const STRUCT_PARAM: &str = include_str!("../../cuda-backend/kernels/struct_param.ptx");

    const HEADER: &str = ".version 7.8\n.target sm_52\n.address_size 64\n";

    fn offsets(entry: &PtxEntry) -> Vec<usize> {
        entry.params.iter().map(|param| param.offset).collect()
    }

    #[test]
    fn reads_the_vector_add_fixture() {
        let module = read_ptx(VECTOR_ADD).unwrap();
        assert_eq!(module.version, (7, 8));
        assert_eq!(module.version_line, 9);
        assert_eq!(module.targets, vec!["sm_52"]);
        let names: Vec<&str> = module.entries.iter().map(|entry| entry.name.as_str()).collect();
        assert_eq!(names, ["vector_add", "_Z18vector_add_mangledPKfS0_Pfj"]);
        for entry in &module.entries {
            assert_eq!(entry.param_sizes(), [8, 8, 8, 4]);
            assert_eq!(offsets(entry), [0, 8, 16, 24]);
            assert_eq!(entry.param_buffer_bytes(), 28);
            assert_eq!(entry.static_shared_bytes, 0);
        }
    }

    #[test]
    fn reads_the_scalars_fixture() {
        let module = read_ptx(SCALARS).unwrap();
        let every = module.entry("every_scalar").unwrap();
        assert_eq!(every.param_sizes(), [4, 8, 4, 8, 4, 8, 8]);
        assert_eq!(offsets(every), [0, 8, 16, 24, 32, 40, 48]);
        let narrow = module.entry("narrow_scalars").unwrap();
        assert_eq!(narrow.param_sizes(), [1, 1, 2, 2, 8]);
        assert_eq!(offsets(narrow), [0, 1, 2, 4, 8]);
    }

    #[test]
    fn reads_the_struct_param_fixture() {
        let module = read_ptx(STRUCT_PARAM).unwrap();
        let affine = module.entry("affine").unwrap();
        assert_eq!(affine.param_sizes(), [24, 8, 8]);
        assert_eq!(offsets(affine), [0, 24, 32]);
        assert_eq!(affine.params[0].align, 8);
    }

    #[test]
    fn vector_and_pointer_params() {
        let ptx = format!(
            "{HEADER}.visible .entry v(\n\t.param .u8 a,\n\t.param .v2 .f32 b,\n\t.param .v4 .f32 c,\n\
             \t.param .u64 .ptr .global .align 16 d,\n\t.param .align 16 .b8 e[3]\n) .maxntid 256, 1, 1\n{{\n\tret;\n}}\n"
        );
        let entry = read_ptx(&ptx).unwrap().entries.remove(0);
        assert_eq!(entry.param_sizes(), [1, 8, 16, 8, 3]);
        assert_eq!(offsets(&entry), [0, 8, 16, 32, 48]);
        assert_eq!(entry.param_buffer_bytes(), 51);
    }

    #[test]
    fn entries_without_params_declarations_and_funcs() {
        let ptx = format!(
            "{HEADER}// a comment\n/* a block\n comment */\n.extern .func (.param .b32 r) vprintf (.param .b64 a, .param .b64 b);\n\
             .global .align 1 .b8 $str[3] = {{104, 105, 0}};\n.func helper()\n{{\n\t{{ ret; }}\n}}\n\
             .extern .entry declared(.param .u32 x);\n.entry none\n{{\n\tret;\n}}\n.entry empty()\n{{\n}}\n"
        );
        let module = read_ptx(&ptx).unwrap();
        let names: Vec<&str> = module.entries.iter().map(|entry| entry.name.as_str()).collect();
        assert_eq!(names, ["none", "empty"]);
        assert!(module.entries.iter().all(|entry| entry.params.is_empty()));
    }

    #[test]
    fn static_shared_memory_is_laid_out_and_limited() {
        let ptx = format!(
            "{HEADER}.visible .entry k(.param .u64 p)\n{{\n\t.reg .b32 %r<2>;\n\t.shared .align 4 .b8 tile[4096];\n\
             \t.shared .align 8 .b8 a[3], b[8];\n\t.extern .shared .align 16 .b8 dynamic[];\n\
             \tld.shared.u32 %r1, [tile];\n\tret;\n}}\n"
        );
        assert_eq!(read_ptx(&ptx).unwrap().entries[0].static_shared_bytes, 4096 + 8 + 8);

        let at_limit = format!("{HEADER}.entry k()\n{{\n\t.shared .align 4 .b8 s[49152];\n}}\n");
        assert_eq!(read_ptx(&at_limit).unwrap().entries[0].static_shared_bytes, STATIC_SHARED_LIMIT);
        let over =
            format!("{HEADER}.entry k()\n{{\n\t.shared .align 4 .b8 s[49152];\n\t.shared .u32 t;\n}}\n");
        assert_eq!(
            read_ptx(&over).unwrap_err().to_string(),
            "ptxas error   : Entry function 'k' uses too much shared data (0xc004 bytes, 0xc000 max)"
        );
    }

    fn log(ptx: &str) -> String {
        read_ptx(ptx).unwrap_err().to_string()
    }

    #[test]
    fn a_line_that_is_not_ptx_is_a_syntax_error_naming_it() {
        assert_eq!(
            log(&format!("{HEADER}this is not ptx\n")),
            "ptxas application ptx input, line 4; fatal   : Parsing error near 'this': syntax error"
        );
        let mut broken = VECTOR_ADD.replacen(".address_size 64", ".address_size 64\nhello", 1);
        assert!(
            log(&broken)
                .starts_with("ptxas application ptx input, line 12; fatal   : Parsing error near 'hello'")
        );
        broken = VECTOR_ADD.replacen(".target sm_52", ".target sm_52 junk", 1);
        assert!(log(&broken).contains("line 10; fatal   : Parsing error near 'junk'"));
    }

    #[test]
    fn missing_version_or_target() {
        assert_eq!(
            log(".target sm_52\n.entry k()\n{\n}\n"),
            "ptxas application ptx input, line 1; fatal   : Missing .version directive at start of file"
        );
        assert_eq!(
            log(""),
            "ptxas application ptx input, line 1; fatal   : Missing .version directive at start of file"
        );
        assert_eq!(
            log(".version 7.8\n.entry k()\n{\n}\n"),
            "ptxas application ptx input, line 2; fatal   : Missing .target directive"
        );
        assert_eq!(
            log(".version 7.8\n"),
            "ptxas application ptx input, line 1; fatal   : Missing .target directive"
        );
        assert!(
            log(".version seven\n.target sm_52\n").contains("line 1; fatal   : Parsing error near 'seven'")
        );
    }

    #[test]
    fn unreadable_param_lists() {
        let cases = [
            ("(.param .u64 a .param .u32 b)", "'.param'"),
            ("(.param .u64)", "')'"),
            ("(.param .u64 a,)", "')'"),
            ("(.param a)", "'a'"),
            ("(.param .u64 .u32 a)", "'.u32'"),
            ("(.param .align 3 .b8 a[4])", "'3'"),
            ("(.param .b8 a[0])", "'0'"),
            ("(.reg .u64 a)", "'.reg'"),
            ("(.param .u64 a", "'end of file'"),
        ];
        for (list, near) in cases {
            let ptx = format!("{HEADER}.visible .entry k{list}\n{{\n\tret;\n}}\n");
            let ptx = if near == "'end of file'" { format!("{HEADER}.entry k{list}") } else { ptx };
            let log = log(&ptx);
            assert!(log.contains(&format!("Parsing error near {near}")), "{list}: {log}");
            assert!(log.starts_with("ptxas application ptx input, line 4;"), "{list}: {log}");
        }
    }

    #[test]
    fn unterminated_bodies_comments_and_duplicates() {
        assert!(
            log(&format!("{HEADER}.entry k()\n{{\n\tret;\n"))
                .contains("line 6; fatal   : Parsing error near 'end of file'")
        );
        assert!(log(&format!("{HEADER}/* open\n")).contains("line 4; fatal   : Parsing error near '/*'"));
        assert!(
            log(&format!("{HEADER}.entry k()\n{{\n}}\n.entry k()\n{{\n}}\n"))
                .contains("line 7; fatal   : Duplicate definition of function 'k'")
        );
        assert!(log(&format!("{HEADER}}}\n")).contains("line 4; fatal   : Parsing error near '}'"));
    }
}
