//! Kernel signatures: the PTX `.entry` parameter-list parser, and the size check of a launch's
//! arguments against a kernel's parameters.
//!
//! Neither the CUDA driver's launch call nor cust checks that the arguments of a launch match
//! the kernel: `cuLaunchKernel` copies as many bytes from each `kernelParams[i]` as the
//! kernel's parameter `i` declares, whatever the host put there. The kernel's declaration
//! (`kernel_args::Declaration`, checked by the host before any launcher runs) says what each
//! parameter is; the PTX's parameter list is what the declaration is checked against when a
//! kernel is registered, and what the launcher checks sizes against again before it launches
//! (for a kernel without a declaration, the only check). The parameter list comes from one of
//! two sources:
//!
//! 1. the module's PTX text, parsed here without a GPU when a kernel is registered
//!    ([`KernelEntry::signature`](crate::KernelEntry::signature)): each
//!    `.entry name( .param ..., ... )` declaration gives the parameters' types, alignments
//!    and array lengths, hence their sizes;
//! 2. at run time, the driver's `cuFuncGetParamCount` and `cuFuncGetParamInfo` (CUDA 12.4
//!    and later; see the launcher).
//!
//! The launcher compares the argument sizes with the parameter sizes before it launches: a
//! count or size mismatch is `InvalidArgs` with [`Detail::ParamCount`] or
//! [`Detail::ParamSize`], naming the argument index and both sizes.
//!
//! ```
//! use kernel_args_cuda::KernelRegistry;
//!
//! let ptx = ".visible .entry scale(\n\t.param .u64 scale_param_0,\n\t.param .f32 scale_param_1\n)\n{ ret; }";
//! let mut registry = KernelRegistry::new();
//! registry.register(7, ptx, "scale", "scale(data: &mut [f32; 64], by: f32)")?;
//! let signature = registry.get(7).and_then(|k| k.signature()).expect("declared");
//! assert_eq!(signature.param_sizes(), vec![8, 4]);
//! # Ok::<(), kernel_args_cuda::SetupError>(())
//! ```
//!
//! ## What the parser accepts
//!
//! A parameter is `.param`, then in any order: one fundamental type (`.b8` ... `.b64`,
//! `.u8` ... `.u64`, `.s8` ... `.s64`, `.f16`, `.f32`, `.f64`), an optional `.align N`, an
//! optional `.ptr` with an optional state space (`.global`, `.const`, `.local`, `.shared`) and
//! alignment; then the name and an optional array length `[M]`. Comments (`//`, `/* */`) are
//! skipped. A parameter's size is the type's size times `M`; its alignment is `.align N` when
//! given, else the type's size. Anything else inside a parameter list is an error naming the
//! line.

use std::fmt;

use kernel_args::{Detail, HostError, LaunchArgs};

use crate::storage::slot_size;

/// A fundamental PTX type of a kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PtxType {
    /// `.b8`, `.u8` or `.s8`.
    Bits8,
    /// `.b16`, `.u16`, `.s16` or `.f16`.
    Bits16,
    /// `.b32`, `.u32` or `.s32`.
    Bits32,
    /// `.f32`.
    F32,
    /// `.b64`, `.u64` or `.s64` (also every pointer parameter).
    Bits64,
    /// `.f64`.
    F64,
}

impl PtxType {
    /// The type for a PTX type directive (`".u32"`, ...), if it is a fundamental type.
    pub(crate) fn from_directive(directive: &str) -> Option<PtxType> {
        Some(match directive {
            ".b8" | ".u8" | ".s8" => PtxType::Bits8,
            ".b16" | ".u16" | ".s16" | ".f16" => PtxType::Bits16,
            ".b32" | ".u32" | ".s32" => PtxType::Bits32,
            ".f32" => PtxType::F32,
            ".b64" | ".u64" | ".s64" => PtxType::Bits64,
            ".f64" => PtxType::F64,
            _ => return None,
        })
    }

    /// The type's size in bytes.
    pub const fn size(self) -> usize {
        match self {
            PtxType::Bits8 => 1,
            PtxType::Bits16 => 2,
            PtxType::Bits32 | PtxType::F32 => 4,
            PtxType::Bits64 | PtxType::F64 => 8,
        }
    }
}

/// One parameter of a kernel's `.entry` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxParam {
    /// The parameter's name (`vector_add_param_0`, ...).
    pub name: String,
    /// The element type.
    pub ty: PtxType,
    /// The array length for `name[M]`, `None` for a scalar.
    pub array_len: Option<usize>,
    /// `.align N` where the declaration gives it (for a `.ptr` parameter, the pointee's
    /// alignment, not the parameter's).
    pub align: Option<usize>,
    /// Whether the parameter is declared `.ptr`.
    pub is_ptr: bool,
}

impl PtxParam {
    /// The parameter's size in bytes: the type's size times the array length.
    pub fn size(&self) -> usize {
        self.ty.size().saturating_mul(self.array_len.unwrap_or(1))
    }

    /// The parameter's alignment in the parameter space: `.align N` where given (but for a
    /// `.ptr` parameter, whose `.align` is its pointee's), else its type's size.
    pub fn alignment(&self) -> usize {
        match self.align {
            Some(align) if !self.is_ptr => align,
            _ => self.ty.size(),
        }
    }
}

/// A kernel's entry name and parameter list, as its PTX declares them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSignature {
    /// The entry's name (possibly C++-mangled).
    pub entry: String,
    /// The parameters, in order.
    pub params: Vec<PtxParam>,
}

impl KernelSignature {
    /// The size in bytes of each parameter, in order.
    pub fn param_sizes(&self) -> Vec<usize> {
        self.params.iter().map(PtxParam::size).collect()
    }
}

/// A parameter list the parser does not understand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxParseError {
    /// The 1-based line of the PTX text where the problem is.
    pub line: usize,
    /// The entry whose parameter list it is, when known.
    pub entry: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for PtxParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX line {}", self.line)?;
        if let Some(entry) = &self.entry {
            write!(f, " (entry {entry})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for PtxParseError {}

/// Every `.entry` declared in `ptx`, with its parameter list.
///
/// # Errors
///
/// A [`PtxParseError`] naming the line of the first parameter list it cannot read.
pub(crate) fn parse_ptx_entries(ptx: &str) -> Result<Vec<KernelSignature>, PtxParseError> {
    let tokens = tokenize(ptx)?;
    let mut entries = Vec::new();
    let mut i = 0;
    while let Some(tok) = tokens.get(i) {
        i = i.saturating_add(1);
        if tok.text != ".entry" {
            continue;
        }
        let (signature, next) = parse_entry(&tokens, i, tok.line)?;
        entries.push(signature);
        i = next;
    }
    Ok(entries)
}

/// The signature of the entry named `name` in `ptx`, or `None` when the PTX declares no such
/// entry.
///
/// # Errors
///
/// A [`PtxParseError`] for a parameter list the parser cannot read (of any entry).
pub(crate) fn find_entry(ptx: &str, name: &str) -> Result<Option<KernelSignature>, PtxParseError> {
    Ok(parse_ptx_entries(ptx)?.into_iter().find(|e| e.entry == name))
}

/// Checks a launch's arguments against the kernel's parameter sizes.
///
/// # Errors
///
/// `InvalidArgs` with [`Detail::ParamCount`] when the counts differ, or [`Detail::ParamSize`]
/// naming the first argument whose size (4 or 8; 8 for a pointer, a device address) differs
/// from its parameter's.
pub fn check_param_sizes(param_sizes: &[usize], args: &LaunchArgs) -> Result<(), HostError> {
    check_sizes(param_sizes, args.tag_bytes().iter().map(|&tag| usize::from(slot_size(tag))))
}

/// The count, then each size in order.
fn check_sizes(param_sizes: &[usize], got: impl ExactSizeIterator<Item = usize>) -> Result<(), HostError> {
    if param_sizes.len() != got.len() {
        return Err(HostError::new(Detail::ParamCount { expected: param_sizes.len(), got: got.len() }));
    }
    for (index, (&expected, got)) in param_sizes.iter().zip(got).enumerate() {
        if expected != got {
            return Err(HostError::new(Detail::ParamSize { index, expected, got }));
        }
    }
    Ok(())
}

/// A token of PTX text with the line it starts on.
#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    line: usize,
}

/// Splits PTX into identifiers/directives/numbers and single punctuation characters, skipping
/// whitespace and comments.
fn tokenize(ptx: &str) -> Result<Vec<Token<'_>>, PtxParseError> {
    let mut tokens = Vec::new();
    let mut line = 1usize;
    let mut rest = ptx;
    while let Some(c) = rest.chars().next() {
        if c == '\n' {
            line = line.saturating_add(1);
            rest = rest.get(1..).unwrap_or("");
        } else if c.is_whitespace() {
            rest = rest.get(c.len_utf8()..).unwrap_or("");
        } else if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').and_then(|n| after.get(n..)).unwrap_or("");
        } else if let Some(after) = rest.strip_prefix("/*") {
            let end = after.find("*/").ok_or_else(|| PtxParseError {
                line,
                entry: None,
                message: "unterminated /* comment".into(),
            })?;
            let comment = after.get(..end).unwrap_or("");
            line = line.saturating_add(comment.matches('\n').count());
            rest = after.get(end.saturating_add(2)..).unwrap_or("");
        } else if let Some(after) = rest.strip_prefix('"') {
            // A string (`.file 1 "/path/k.cu"`): one token, so `//` inside it is no comment.
            let end = after.find(['"', '\n']).unwrap_or(after.len());
            tokens.push(Token { text: rest.get(..end.saturating_add(2)).unwrap_or(rest), line });
            rest = after.get(end.saturating_add(1)..).unwrap_or("");
        } else if is_word_char(c) {
            let len = rest.find(|ch: char| !is_word_char(ch)).unwrap_or(rest.len());
            tokens.push(Token { text: rest.get(..len).unwrap_or(""), line });
            rest = rest.get(len..).unwrap_or("");
        } else {
            let len = c.len_utf8();
            tokens.push(Token { text: rest.get(..len).unwrap_or(""), line });
            rest = rest.get(len..).unwrap_or("");
        }
    }
    Ok(tokens)
}

/// Characters of PTX identifiers, directives (`.u32`) and numbers.
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

/// Parses `name ( params )` after an `.entry` token at `tokens[i]`; returns the signature and
/// the index after it.
fn parse_entry(
    tokens: &[Token<'_>],
    mut i: usize,
    line: usize,
) -> Result<(KernelSignature, usize), PtxParseError> {
    let err = |line: usize, entry: Option<&str>, message: String| PtxParseError {
        line,
        entry: entry.map(str::to_owned),
        message,
    };
    let name = tokens
        .get(i)
        .filter(|t| is_identifier(t.text))
        .ok_or_else(|| err(line, None, "`.entry` without a name".into()))?;
    i = i.saturating_add(1);
    let entry = name.text;
    let mut params = Vec::new();
    // An entry without parameters may omit the parentheses.
    if tokens.get(i).map(|t| t.text) != Some("(") {
        return Ok((KernelSignature { entry: entry.to_owned(), params }, i));
    }
    i = i.saturating_add(1);
    if tokens.get(i).map(|t| t.text) == Some(")") {
        return Ok((KernelSignature { entry: entry.to_owned(), params }, i.saturating_add(1)));
    }
    loop {
        let (param, next) = parse_param(tokens, i, entry)?;
        params.push(param);
        i = next;
        match tokens.get(i) {
            Some(t) if t.text == "," => i = i.saturating_add(1),
            Some(t) if t.text == ")" => {
                return Ok((KernelSignature { entry: entry.to_owned(), params }, i.saturating_add(1)));
            }
            Some(t) => {
                return Err(err(t.line, Some(entry), format!("expected `,` or `)`, found `{}`", t.text)));
            }
            None => {
                let line = tokens.last().map_or(name.line, |t| t.line);
                return Err(err(line, Some(entry), "parameter list is not closed".into()));
            }
        }
    }
}

/// Parses one `.param ... name[M]` starting at `tokens[i]`.
fn parse_param(tokens: &[Token<'_>], mut i: usize, entry: &str) -> Result<(PtxParam, usize), PtxParseError> {
    let last_line = tokens.last().map_or(1, |t| t.line);
    let err = |line: usize, message: String| PtxParseError { line, entry: Some(entry.to_owned()), message };
    let first = tokens.get(i).ok_or_else(|| err(last_line, "parameter list is not closed".into()))?;
    if first.text != ".param" {
        return Err(err(first.line, format!("expected `.param`, found `{}`", first.text)));
    }
    i = i.saturating_add(1);
    let (mut ty, mut is_ptr, mut align) = (None, false, None);
    let name = loop {
        let tok = tokens.get(i).ok_or_else(|| err(first.line, "parameter without a name".into()))?;
        i = i.saturating_add(1);
        match tok.text {
            ".align" => {
                let n = tokens.get(i).and_then(|t| t.text.parse::<usize>().ok());
                align =
                    Some(n.filter(|n| n.is_power_of_two()).ok_or_else(|| {
                        err(tok.line, "`.align` must be followed by a power of two".into())
                    })?);
                i = i.saturating_add(1);
            }
            ".ptr" => is_ptr = true,
            ".global" | ".const" | ".local" | ".shared" if is_ptr => {}
            directive if directive.starts_with('.') => {
                let t = PtxType::from_directive(directive).ok_or_else(|| {
                    err(tok.line, format!("unsupported parameter qualifier or type `{directive}`"))
                })?;
                if ty.replace(t).is_some() {
                    return Err(err(tok.line, "parameter with two types".into()));
                }
            }
            word if is_identifier(word) => break tok,
            other => return Err(err(tok.line, format!("unexpected `{other}` in a parameter"))),
        }
    };
    let ty = ty.ok_or_else(|| err(name.line, format!("parameter `{}` has no type", name.text)))?;
    if is_ptr && ty != PtxType::Bits64 {
        return Err(err(name.line, format!("`.ptr` parameter `{}` is not 64-bit", name.text)));
    }
    let mut array_len = None;
    if tokens.get(i).map(|t| t.text) == Some("[") {
        let n = tokens.get(i.saturating_add(1)).and_then(|t| t.text.parse::<usize>().ok());
        let close = tokens.get(i.saturating_add(2)).map(|t| t.text);
        match (n, close) {
            (Some(n), Some("]")) => array_len = Some(n),
            _ => return Err(err(name.line, format!("parameter `{}`: malformed array length", name.text))),
        }
        i = i.saturating_add(3);
    }
    Ok((PtxParam { name: name.text.to_owned(), ty, array_len, align, is_ptr }, i))
}

/// A PTX identifier: a letter, or `_`/`$`/`%` followed by at least one more character.
fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => chars.all(|c| is_word_char(c) && c != '.'),
        Some('_' | '$' | '%') => {
            let rest = chars.as_str();
            !rest.is_empty() && rest.chars().all(|c| is_word_char(c) && c != '.')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use kernel_args::AbiError;
    use kernel_args_core::{Arg, F32Bits, F64Bits, GuestRange, LoweredArgSnapshot};

    use super::*;

    const VECTOR_ADD: &str = include_str!("../kernels/vector_add.ptx");
    const SCALARS: &str = include_str!("../kernels/scalars.ptx");
    const STRUCT_PARAM: &str = include_str!("../kernels/struct_param.ptx");

    fn la(args: &[LoweredArgSnapshot]) -> LaunchArgs {
        LaunchArgs::from_slice(args).unwrap()
    }

    fn ptr(len: u32) -> LoweredArgSnapshot {
        Arg::Ptr(GuestRange { guest_offset: 0, len })
    }

    #[test]
    fn vector_add_matches_the_guest_argv() {
        let entries = parse_ptx_entries(VECTOR_ADD).unwrap();
        let names: Vec<_> = entries.iter().map(|e| e.entry.as_str()).collect();
        assert_eq!(names, ["vector_add", "_Z18vector_add_mangledPKfS0_Pfj"]);
        for entry in &entries {
            assert_eq!(entry.param_sizes(), [8, 8, 8, 4], "{}", entry.entry);
            assert_eq!(entry.params[0].ty, PtxType::Bits64);
            assert_eq!(entry.params[3].ty, PtxType::Bits32);
            assert_eq!(entry.params[3].name, format!("{}_param_3", entry.entry));
        }
        // The guest's argv: a, b, out, n.
        let argv = [ptr(64), ptr(64), ptr(64), Arg::U32(16)];
        check_param_sizes(&entries[0].param_sizes(), &la(&argv)).unwrap();
    }

    #[test]
    fn every_scalar_type() {
        let entry = find_entry(SCALARS, "every_scalar").unwrap().unwrap();
        let types: Vec<_> = entry.params.iter().map(|p| p.ty).collect();
        assert_eq!(
            types,
            [
                PtxType::Bits32,
                PtxType::Bits64,
                PtxType::F32,
                PtxType::F64,
                PtxType::Bits32,
                PtxType::Bits64,
                PtxType::Bits64
            ]
        );
        let argv: [LoweredArgSnapshot; 7] = [
            Arg::I32(-1),
            Arg::I64(-2),
            Arg::F32(F32Bits::from_f32(3.0)),
            Arg::F64(F64Bits::from_f64(4.0)),
            Arg::U32(5),
            Arg::U64(6),
            ptr(48),
        ];
        check_param_sizes(&entry.param_sizes(), &la(&argv)).unwrap();

        let narrow = find_entry(SCALARS, "narrow_scalars").unwrap().unwrap();
        assert_eq!(narrow.param_sizes(), [1, 1, 2, 2, 8]);
        // No wire type is 1 or 2 bytes: an i32 for a `signed char` is refused at index 0.
        let err = check_param_sizes(
            &narrow.param_sizes(),
            &la(&[Arg::I32(1), Arg::I32(2), Arg::I32(3), Arg::I32(4), ptr(16)]),
        )
        .unwrap_err();
        assert_eq!(err.detail(), &Detail::ParamSize { index: 0, expected: 1, got: 4 });
    }

    #[test]
    fn struct_by_value() {
        let entry = find_entry(STRUCT_PARAM, "affine").unwrap().unwrap();
        let p = &entry.params[0];
        assert_eq!((p.ty, p.array_len, p.size()), (PtxType::Bits8, Some(24), 24));
        assert_eq!(entry.param_sizes(), [24, 8, 8]);
        let err = check_param_sizes(&entry.param_sizes(), &la(&[Arg::U64(0), ptr(4), ptr(8)])).unwrap_err();
        assert_eq!(err.code(), AbiError::InvalidArgs);
        assert_eq!(err.detail(), &Detail::ParamSize { index: 0, expected: 24, got: 8 });
        assert_eq!(
            err.to_string(),
            "InvalidArgs -9: argument 0 is 8 bytes but kernel parameter 0 is 24 bytes"
        );
    }

    #[test]
    fn count_and_size_mismatches_name_the_argument() {
        let sizes = find_entry(VECTOR_ADD, "vector_add").unwrap().unwrap().param_sizes();
        let err = check_param_sizes(&sizes, &la(&[ptr(4), ptr(4), ptr(4)])).unwrap_err();
        assert_eq!(err.code(), AbiError::InvalidArgs);
        assert_eq!(err.detail(), &Detail::ParamCount { expected: 4, got: 3 });
        // n passed as a u64: index 3, 4 bytes expected, 8 given.
        let err = check_param_sizes(&sizes, &la(&[ptr(4), ptr(4), ptr(4), Arg::U64(1)])).unwrap_err();
        assert_eq!(err.detail(), &Detail::ParamSize { index: 3, expected: 4, got: 8 });
        // A float where a pointer goes.
        let err =
            check_param_sizes(&sizes, &la(&[ptr(4), Arg::F32(F32Bits(0)), ptr(4), Arg::U32(1)])).unwrap_err();
        assert_eq!(err.detail(), &Detail::ParamSize { index: 1, expected: 8, got: 4 });
    }

    #[test]
    fn ptr_qualifiers_comments_and_empty_lists() {
        let ptx = "
            // a comment with .entry in it
            .file 1 \"//server/share/k.cu\"
            /* .entry nope( .param .u32 x ) */
            .visible .entry k(
                .param .u64 .ptr .global .align 16 k_param_0, // trailing comment
                .param .u64 .ptr .align 1 k_param_1,
                .param .s32 k_param_2,
                .param .b64 k_param_3,
                .param .f16 k_param_4,
                .param .align 4 .b8 k_param_5[12]
            )
            .maxntid 256, 1, 1
            { ret; }
            .entry no_params() { ret; }
            .entry no_parens { ret; }
        ";
        let entries = parse_ptx_entries(ptx).unwrap();
        assert_eq!(entries.len(), 3);
        let k = &entries[0];
        assert_eq!(k.entry, "k");
        assert_eq!(k.param_sizes(), [8, 8, 4, 8, 2, 12]);
        assert_eq!(k.param_sizes()[..2], [8, 8], "`.ptr` parameters are 64-bit addresses");
        assert_eq!(k.params[5].size(), 12);
        let alignments: Vec<usize> = k.params.iter().map(PtxParam::alignment).collect();
        assert_eq!(alignments, [8, 8, 4, 8, 2, 4], "`.align` of a `.ptr` is its pointee's");
        assert_eq!((entries[1].entry.as_str(), entries[1].params.len()), ("no_params", 0));
        assert_eq!((entries[2].entry.as_str(), entries[2].params.len()), ("no_parens", 0));
        assert_eq!(find_entry(ptx, "nope").unwrap(), None);
    }

    #[test]
    fn malformed_lists_name_the_line() {
        let cases = [
            (".entry k(\n.param .v2 .f32 x\n)", 2, "unsupported parameter qualifier or type `.v2`"),
            (".entry k(\n.param .u32\n)", 3, "unexpected `)` in a parameter"),
            (".entry k(\n.param .u32 x,\n\n.reg .u32 y)", 4, "expected `.param`, found `.reg`"),
            (".entry k(\n.param .u32 x", 2, "parameter list is not closed"),
            (".entry k(\n.param .b8 x[12\n)", 2, "parameter `x`: malformed array length"),
            (".entry k(\n.param .align 3 .b8 x[12])", 2, "`.align` must be followed by a power of two"),
            (".entry k(\n.param x)", 2, "parameter `x` has no type"),
            (".entry k(\n.param .u32 .u64 x)", 2, "parameter with two types"),
            (".entry k(\n.param .u32 .ptr x)", 2, "`.ptr` parameter `x` is not 64-bit"),
            (".entry k(\n.param .u32 x y)", 2, "expected `,` or `)`, found `y`"),
            ("\n.entry (", 2, "`.entry` without a name"),
            ("/* open", 1, "unterminated /* comment"),
        ];
        for (ptx, line, message) in cases {
            let err = parse_ptx_entries(ptx).unwrap_err();
            assert_eq!((err.line, err.message.as_str()), (line, message), "{ptx:?}");
        }
        let err = parse_ptx_entries(".entry k(\n.param .v2 .f32 x\n)").unwrap_err();
        assert_eq!(err.to_string(), "PTX line 2 (entry k): unsupported parameter qualifier or type `.v2`");
    }
}
