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
//! use kernel_args_cuda::{KernelRegistry, Sandbox};
//!
//! let ptx = ".version 7.8\n.target sm_52\n.address_size 64\n\
//!     .visible .entry scale(\n\t.param .u64 scale_param_0,\n\t.param .f32 scale_param_1\n)\n{ ret; }";
//! let mut registry = KernelRegistry::new();
//! registry.register(7, ptx, "scale", Sandbox::fenced("scale(data: &mut [f32; 64], by: f32)")?)?;
//! let signature = registry.get(7).and_then(|k| k.signature()).expect("declared");
//! assert_eq!(signature.param_sizes(), vec![8, 4]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## What is read
//!
//! The whole module, by the project's one PTX front end ([`kernel_args_ptx::parse`]): a text it
//! does not read is an error naming its line. A parameter's type must be a fundamental type
//! (`.b8` ... `.b64`, `.u8` ... `.u64`, `.s8` ... `.s64`, `.f16`, `.f32`, `.f64`); a `.ptr`
//! parameter is 64-bit; `.align N` is a power of two. A parameter's size is the type's size
//! times its array lengths; its alignment is `.align N` when given (but for a `.ptr`
//! parameter, whose `.align` is its pointee's), else the type's size.

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
    let module = kernel_args_ptx::parse(ptx).map_err(|e| PtxParseError {
        line: e.line as usize,
        entry: None,
        message: e.kind.to_string(),
    })?;
    module.entries().map(signature).collect()
}

/// An entry's parameter list as this crate's types.
fn signature(entry: &kernel_args_ptx::Function) -> Result<KernelSignature, PtxParseError> {
    let mut params = Vec::with_capacity(entry.params.len());
    for p in &entry.params {
        let err = |message: String| PtxParseError {
            line: p.span.line as usize,
            entry: Some(entry.name.clone()),
            message,
        };
        if p.space != kernel_args_ptx::StateSpace::Param {
            return Err(err(format!("parameter `{}` is not `.param`", p.name)));
        }
        if let Some(v) = p.vector {
            return Err(err(format!("unsupported parameter qualifier `.v{v}`")));
        }
        let ty = PtxType::from_directive(&format!(".{}", p.ty.name()))
            .ok_or_else(|| err(format!("unsupported parameter type `.{}`", p.ty.name())))?;
        if p.ptr.is_some() && ty != PtxType::Bits64 {
            return Err(err(format!("`.ptr` parameter `{}` is not 64-bit", p.name)));
        }
        let align = match p.align {
            Some(a) if !a.is_power_of_two() => return Err(err("`.align` must be a power of two".into())),
            Some(a) => Some(usize::try_from(a).map_err(|_| err("`.align` too large".into()))?),
            None => None,
        };
        let array_len = match p.dims.as_slice() {
            [] => None,
            dims => {
                let len = dims.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d));
                Some(len.and_then(|l| usize::try_from(l).ok()).ok_or_else(|| err("array too large".into()))?)
            }
        };
        params.push(PtxParam { name: p.name.clone(), ty, array_len, align, is_ptr: p.ptr.is_some() });
    }
    Ok(KernelSignature { entry: entry.name.clone(), params })
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
        let ptx = ".version 7.8\n.target sm_52\n.address_size 64
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
        let header = ".version 7.8\n.target sm_52\n.address_size 64\n";
        let cases = [
            (".entry k(\n.param .v2 .f32 x\n)\n{ ret; }", 5, "unsupported parameter qualifier `.v2`"),
            (".entry k(\n.param .f16x2 x\n)\n{ ret; }", 5, "unsupported parameter type `.f16x2`"),
            (".entry k(\n.param .u32\n)\n{ ret; }", 6, "expected a parameter's name, found `)`"),
            (".entry k(\n.param .u32 x,\n\n.reg .u32 y)\n{ ret; }", 7, "parameter `y` is not `.param`"),
            (
                ".entry k(\n.param .u32 x",
                5,
                "expected `,` or `)` in a parameter list, found the end of the text",
            ),
            (".entry k(\n.param .b8 x[12\n)\n{ ret; }", 6, "expected `]`, found `)`"),
            (".entry k(\n.param .align 3 .b8 x[12])\n{ ret; }", 5, "`.align` must be a power of two"),
            (".entry k(\n.param x)\n{ ret; }", 5, "expected a parameter's type, found `x`"),
            (".entry k(\n.param .u32 .ptr x)\n{ ret; }", 5, "`.ptr` parameter `x` is not 64-bit"),
            (
                ".entry k(\n.param .u32 x y)\n{ ret; }",
                5,
                "expected `,` or `)` in a parameter list, found `y`",
            ),
            ("\n.entry (", 5, "expected a function name, found `(`"),
            ("/* open", 4, "a /* comment without its */"),
        ];
        for (ptx, line, message) in cases {
            let err = parse_ptx_entries(&format!("{header}{ptx}")).unwrap_err();
            assert_eq!((err.line, err.message.as_str()), (line, message), "{ptx:?}");
        }
        let err =
            parse_ptx_entries(&format!("{header}.entry k(\n.param .v2 .f32 x\n)\n{{ ret; }}")).unwrap_err();
        assert_eq!(err.to_string(), "PTX line 5 (entry k): unsupported parameter qualifier `.v2`");
    }
}
