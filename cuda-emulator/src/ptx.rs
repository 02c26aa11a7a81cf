//! The emulator's PTX reader: what the driver's ptxas does at `cuModuleLoadDataEx`, as far as
//! a launch needs it. The text is read by the project's one PTX front end
//! ([`kernel_args_ptx::parse`]): the whole module, or a refusal with a ptxas-style log line
//! naming the line. From the parsed module the reader takes the `.version`, the `.target`s,
//! and every kernel (`.entry` with a body) with its parameter layout (offset, size and
//! alignment of each `.param`) and its static shared memory.
//!
//! The layout is computed here, independently of the launcher's parameter reader
//! (`cuda-backend/src/signature.rs`), so that the parameter sizes the emulated driver reports
//! (`cuFuncGetParamInfo`) and copies (`cuLaunchKernel`) cross-check that reader instead of
//! repeating it.
//!
//! ```
//! use kernel_args_cuda_emulator::read_ptx;
//!
//! let ptx = ".version 7.8\n.target sm_52\n.address_size 64\n\
//!            .visible .entry scale(\n\t.param .u64 scale_param_0,\n\t.param .f32 scale_param_1\n)\n{\n\tret;\n}\n";
//! let module = read_ptx(ptx).unwrap();
//! assert_eq!(module.entry("scale").unwrap().param_sizes(), vec![8, 4]);
//! ```
//!
//! ## The layout
//!
//! - A parameter's size is its type's size × its vector size (`.v2`, `.v4`) × its array
//!   lengths; its alignment is `.align N` where given (for a `.ptr` parameter, `.align` after
//!   `.ptr` is its pointee's and does not count), else the type's size × the vector size (PTX
//!   aligns a vector to its whole size). Parameters are laid out in order, each at the next
//!   multiple of its alignment. A zero-length array, or a `.reg` parameter of an entry, is
//!   refused.
//! - The kernel's `.shared` declarations (not `.extern`) are laid out in order, each at the
//!   next multiple of its alignment; the end of the last one is the kernel's static shared
//!   size. `.extern .shared` (dynamic shared memory) adds nothing. A kernel over 48 KiB of
//!   static shared memory is refused, as ptxas refuses it.
//! - `.maxntid` and `.reqntid` are the block limits the launch checks.
//!
//! ## What is malformed (`CUDA_ERROR_INVALID_PTX`)
//!
//! Everything the front end refuses (no `.version` first, no `.target` before the first
//! function, a statement outside the grammar, an unterminated comment or body, two kernels of
//! the same name), and what the layout above refuses.

use std::fmt;

use kernel_args_ptx::{FlatItem, Function, ParseErrorKind, StateSpace};

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
    /// The module as the front end read it, which the interpreter decodes.
    pub module: kernel_args_ptx::Module,
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
    let module = kernel_args_ptx::parse(text).map_err(|e| {
        let line = e.line as usize;
        match e.kind {
            ParseErrorKind::Header(h) if h.contains(".version") => {
                PtxError::fatal(line, "Missing .version directive at start of file")
            }
            ParseErrorKind::Header(_) => PtxError::fatal(line, "Missing .target directive"),
            ParseErrorKind::Duplicate(name) => {
                PtxError::fatal(line, format!("Duplicate definition of function '{name}'"))
            }
            kind => PtxError::fatal(line, format!("Parsing error: {kind}")),
        }
    })?;
    let mut entries = Vec::new();
    for function in module.entries() {
        entries.push(entry(function)?);
    }
    Ok(PtxModule {
        version: (module.version.major, module.version.minor),
        version_line: module.version_span.line as usize,
        targets: module.targets.clone(),
        entries,
        module,
    })
}

/// A kernel's layout (see the module's documentation).
fn entry(function: &Function) -> Result<PtxEntry, PtxError> {
    let mut params = Vec::with_capacity(function.params.len());
    let mut end = 0usize;
    for p in &function.params {
        let line = p.span.line as usize;
        let bad = |what: &str| PtxError::fatal(line, format!("Parsing error near '{}': {what}", p.name));
        if p.space != StateSpace::Param {
            return Err(bad("an entry's parameter is .param"));
        }
        if p.dims.contains(&0) {
            return Err(bad("a zero-length array"));
        }
        let size =
            p.size().and_then(|s| usize::try_from(s).ok()).ok_or_else(|| bad("a parameter of no size"))?;
        let align = usize::try_from(p.alignment()).map_err(|_| bad("an alignment too large"))?;
        if !align.is_power_of_two() {
            return Err(bad("an alignment that is not a power of two"));
        }
        let offset = align_up(end, align).ok_or_else(|| bad("a parameter list too large"))?;
        end = offset.checked_add(size).ok_or_else(|| bad("a parameter list too large"))?;
        params.push(PtxParam { offset, size, align });
    }
    let mut shared = 0usize;
    let flat = kernel_args_ptx::flatten(function)
        .map_err(|e| PtxError::fatal(e.line as usize, format!("Parsing error: {}", e.kind)))?;
    for item in &flat.items {
        let FlatItem::Variable(v) = item else { continue };
        if v.space != StateSpace::Shared || v.linkage.is_some() {
            continue;
        }
        let line = v.span.line as usize;
        let size = v.size().and_then(|s| usize::try_from(s).ok()).ok_or_else(|| {
            PtxError::fatal(line, format!("Parsing error near '{}': a shared variable of no size", v.name))
        })?;
        let align = usize::try_from(v.alignment()).unwrap_or(usize::MAX).max(1);
        shared = align_up(shared, align)
            .and_then(|at| at.checked_add(size))
            .ok_or_else(|| PtxError::fatal(line, "too much shared data"))?;
    }
    if shared > STATIC_SHARED_LIMIT {
        return Err(PtxError {
            line: None,
            message: format!(
                "Entry function '{}' uses too much shared data ({shared:#x} bytes, {STATIC_SHARED_LIMIT:#x} max)",
                function.name
            ),
        });
    }
    let dims = |name: &str| {
        function.attributes.iter().find(|a| a.name == name).map(|a| {
            let mut d = [1u32; 3];
            for (slot, v) in d.iter_mut().zip(&a.values) {
                *slot = u32::try_from(*v).unwrap_or(u32::MAX);
            }
            d
        })
    };
    Ok(PtxEntry {
        name: function.name.clone(),
        params,
        static_shared_bytes: shared,
        // `.reqntid` bounds the block too: exactly its threads.
        max_threads: dims("maxntid")
            .or_else(|| dims("reqntid"))
            .map(|[x, y, z]| u64::from(x) * u64::from(y) * u64::from(z)),
        required_block: dims("reqntid"),
    })
}

/// `value` rounded up to a multiple of `align` (a power of two), or `None` on overflow.
fn align_up(value: usize, align: usize) -> Option<usize> {
    value.checked_next_multiple_of(align)
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
            "{HEADER}.extern .shared .align 16 .b8 dynamic[];\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .b32 %r<2>;\n\
             \t.shared .align 4 .b8 tile[4096];\n\t.shared .align 8 .b8 a[3], b[8];\n\
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
    fn a_line_that_is_not_ptx_is_an_error_naming_it() {
        assert_eq!(
            log(&format!("{HEADER}this is not ptx\n")),
            "ptxas application ptx input, line 4; fatal   : Parsing error: expected a directive, a variable or a \
             function, found `this`"
        );
        let mut broken = VECTOR_ADD.replacen(".address_size 64", ".address_size 64\nhello", 1);
        assert!(log(&broken).starts_with("ptxas application ptx input, line 12; fatal   : Parsing error:"));
        assert!(log(&broken).contains("`hello`"));
        broken = VECTOR_ADD.replacen(".target sm_52", ".target sm_52 junk", 1);
        assert!(log(&broken).contains("line 10; fatal   : Parsing error:"), "{}", log(&broken));
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
            log(".version seven\n.target sm_52\n")
                .contains("line 1; fatal   : Parsing error: expected a version")
        );
    }

    #[test]
    fn unreadable_param_lists() {
        let cases = [
            ("(.param .u64 a .param .u32 b)", "found `.param`"),
            ("(.param .u64)", "found `)`"),
            ("(.param .u64 a,)", "found `)`"),
            ("(.param a)", "found `a`"),
            ("(.param .u64 .u32 a)", "found `.u32`"),
            ("(.param .align 3 .b8 a[4])", "an alignment that is not a power of two"),
            ("(.param .b8 a[0])", "a zero-length array"),
            ("(.reg .u64 a)", "an entry's parameter is .param"),
            ("(.param .u64 a", "found the end of the text"),
        ];
        for (list, near) in cases {
            let ptx = format!("{HEADER}.visible .entry k{list}\n{{\n\tret;\n}}\n");
            let ptx = if near.contains("end of the text") { format!("{HEADER}.entry k{list}") } else { ptx };
            let log = log(&ptx);
            assert!(log.contains(near), "{list}: {log}");
            assert!(log.starts_with("ptxas application ptx input, line 4;"), "{list}: {log}");
        }
    }

    #[test]
    fn unterminated_bodies_comments_and_duplicates() {
        assert!(
            log(&format!("{HEADER}.entry k()\n{{\n\tret;\n"))
                .contains("line 6; fatal   : Parsing error: expected `}`")
        );
        assert!(
            log(&format!("{HEADER}/* open\n"))
                .contains("line 4; fatal   : Parsing error: a /* comment without its */")
        );
        assert!(
            log(&format!("{HEADER}.entry k()\n{{\n}}\n.entry k()\n{{\n}}\n"))
                .contains("line 7; fatal   : Duplicate definition of function 'k'")
        );
        assert!(log(&format!("{HEADER}}}\n")).contains("line 4; fatal   : Parsing error:"));
    }
}
