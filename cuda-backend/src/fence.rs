//! The fence: a kernel's PTX rewritten so that every access it makes to global memory stays
//! inside one address range, whatever its arguments and whatever its bugs.
//!
//! [`fence_ptx`] rewrites a module's text once. Each `.entry` gets three hidden parameters,
//! appended after its own ([`FENCE_PARAMS`]): the fence's base address, its length in bytes, and
//! the address of a 32-bit flag. Each access that can reach global memory (`ld`, `st`, `atom`
//! and `red` in the global state space, vector forms by their full width, `cp.async`'s global
//! source, `prefetch`; the generic forms of each where `isspacep.global` says the address is
//! global) has its address computed as an offset from the base, clamped to
//! the last place in the fence where an access of its width fits, rounded down to that width,
//! and added back to the base: an access outside the fence (or misaligned) lands inside it, and
//! nothing faults. Each thread keeps whether any of its accesses was moved; on exit, a thread
//! that moved one writes 1 to the flag, which the launcher reads after the kernel.
//!
//! Per access this costs six instructions (seven with an address offset, three more for a
//! generic access); per thread, four to start and two to leave. What the rewriter cannot fence
//! it refuses, naming the line ([`FenceError`]): calls, textures and surfaces, bulk and tensor
//! copies, module-scope `.global` variables, and any other instruction that names the global
//! state space.
//!
//! The rewritten text is PTX a driver loads as it is; the fenced fixtures are committed beside
//! their sources (`kernels/fenced/`) and assembled by `ptxas` for `sm_52` and `sm_90` in CI.
//!
//! [`fence_declared_ptx`], what `KernelRegistry::register` uses, also takes the registered
//! entry's declaration, and leaves as they are the accesses it proves inside their windows for
//! every launch the host's declaration check lets through (`fence/bounds.rs`: an index below
//! the pointer's extent, from the kernel's own guards, thread and block indices): those cost
//! nothing, and an entry whose every access is proven runs as it was. The proofs take the
//! windows the check gives, aligned as their guest offsets: a launch that did not pass the
//! check is not covered.
//!
//! ```
//! use kernel_args_cuda::fence::{FENCE_PARAMS, fence_ptx};
//! use kernel_args_cuda::kernels;
//!
//! let fenced = fence_ptx(kernels::VECTOR_ADD_PTX)?;
//! assert_eq!(fenced.accesses(), 6); // 3 in each of the module's two entries
//! assert!(fenced.ptx().contains(FENCE_PARAMS[0]));
//!
//! let refused = fence_ptx(".version 7.8\n.target sm_52\n.address_size 64\n\
//!     .visible .entry k(.param .u64 p)\n{\n\t.reg .b64 %rd<2>;\n\
//!     \tld.param.u64 %rd1, [p];\n\tcall.uni helper, (%rd1);\n\tret;\n}\n").unwrap_err();
//! assert_eq!(refused.line, 8);
//! assert_eq!(refused.to_string(), "PTX line 8: `call.uni helper, (%rd1)`: a call (the fence does \
//!     not reach into the callee)");
//!
//! // With vector_add's declaration, its three accesses are proven: only the other entry of the
//! // module is fenced.
//! let declaration = kernel_args::Declaration::parse(kernels::VECTOR_ADD_DECLARATION).expect("parses");
//! let fenced = kernel_args_cuda::fence::fence_declared_ptx(kernels::VECTOR_ADD_PTX, "vector_add", &declaration)?;
//! assert_eq!((fenced.proven(), fenced.accesses()), (3, 3));
//! # Ok::<(), kernel_args_cuda::fence::FenceError>(())
//! ```

use std::collections::HashSet;
use std::fmt;
use std::fmt::Write as _;

use kernel_args::Declaration;

mod bounds;

/// The hidden parameters appended to each entry, in order: the fence's base address (`.u64`),
/// its length in bytes (`.u64`), and the address of the 32-bit flag a thread sets when one of
/// its accesses was outside the fence (`.u64`).
pub const FENCE_PARAMS: [&str; 3] = ["__kargs_fence_base", "__kargs_fence_len", "__kargs_fence_flag"];

/// The shortest fence a launcher may give: the widest access the rewriter fences is 16 bytes
/// (a `v4` of 32-bit elements, a `v2` of 64-bit ones), and a clamped access must fit. A shorter
/// fence would not clamp: the kernel computes its limits as the length less the width.
pub const MIN_FENCE_LEN: u64 = 16;

/// The prefix of every name the rewriter adds; a module that already uses it is refused.
const RESERVED: &str = "__kargs_";

/// A module's PTX with its fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedModule {
    ptx: String,
    entries: Vec<String>,
    accesses: usize,
    proven: usize,
    widest: u64,
}

impl FencedModule {
    /// The rewritten PTX.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }

    /// The entries that were fenced, in the module's order.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// How many global-memory accesses were fenced, over all entries.
    pub fn accesses(&self) -> usize {
        self.accesses
    }

    /// How many global-memory accesses were left as they are because they are proven inside
    /// their windows ([`fence_declared_ptx`]); 0 from [`fence_ptx`].
    pub fn proven(&self) -> usize {
        self.proven
    }

    /// The widest fenced access, in bytes (0 where there is none): the fence's base must be
    /// aligned to it, as an unfenced kernel's buffers are.
    pub fn widest_access(&self) -> u64 {
        self.widest
    }
}

/// Why a module cannot be fenced: the 1-based line and what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceError {
    /// The 1-based line of the PTX text.
    pub line: usize,
    /// The statement, as written (whitespace squeezed), or empty for a module-wide problem.
    pub statement: String,
    /// What the rewriter cannot fence there.
    pub reason: FenceRefusal,
}

/// What the rewriter cannot fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FenceRefusal {
    /// A call: the fence's registers do not reach into the callee (nvcc inlines device
    /// functions unless told not to).
    Call,
    /// A texture or surface instruction: it reaches memory through a handle, not an address.
    TextureOrSurface,
    /// A bulk or tensor copy (`cp.async.bulk`, `cp.reduce.async.bulk`, tensor maps).
    BulkCopy,
    /// A module-scope `.global` variable: memory outside any guest's fence, shared by every
    /// launch of the module.
    ModuleGlobal,
    /// Another instruction that names the global state space, which the rewriter does not know.
    UnknownGlobalInstruction,
    /// A global access whose address is not a register, a register plus an offset, or a number.
    Address,
    /// A name the rewriter reserves (it starts with `__kargs_`).
    ReservedName,
    /// The text does not have the shape of a PTX module the rewriter reads (an unclosed block,
    /// parameter list or comment, an entry without a body).
    Malformed,
}

impl fmt::Display for FenceRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FenceRefusal::Call => "a call (the fence does not reach into the callee)",
            FenceRefusal::TextureOrSurface => "a texture or surface instruction",
            FenceRefusal::BulkCopy => "a bulk or tensor copy",
            FenceRefusal::ModuleGlobal => "a module-scope .global variable (memory outside every fence)",
            FenceRefusal::UnknownGlobalInstruction => {
                "an instruction on global memory the fence does not know"
            }
            FenceRefusal::Address => {
                "a global address that is not a register, a register plus an offset, or a number"
            }
            FenceRefusal::ReservedName => "a name starting with __kargs_, which the fence reserves",
            FenceRefusal::Malformed => "not a PTX module the fence can read",
        })
    }
}

impl fmt::Display for FenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX line {}: ", self.line)?;
        if !self.statement.is_empty() {
            write!(f, "`{}`: ", self.statement)?;
        }
        write!(f, "{}", self.reason)
    }
}

impl std::error::Error for FenceError {}

/// Rewrites `ptx` with its fence (see the module's documentation).
///
/// # Errors
///
/// [`FenceError`] naming the first line the rewriter cannot fence, and why.
pub fn fence_ptx(ptx: &str) -> Result<FencedModule, FenceError> {
    fence(ptx, None)
}

/// Rewrites `ptx` with its fence as [`fence_ptx`] does, but leaves as they are the accesses of
/// entry `entry` that are proven to stay inside the windows `declaration` gives, for every launch
/// the host's declaration check lets through (the module `fence/bounds.rs` says what it proves
/// and how). An entry whose every access is proven keeps its body as it was: it takes the hidden
/// parameters, and costs nothing. Other entries, and accesses not proven, are fenced.
///
/// # Errors
///
/// As [`fence_ptx`].
pub fn fence_declared_ptx(
    ptx: &str,
    entry: &str,
    declaration: &Declaration,
) -> Result<FencedModule, FenceError> {
    fence(ptx, Some((entry, declaration)))
}

fn fence(ptx: &str, declared: Option<(&str, &Declaration)>) -> Result<FencedModule, FenceError> {
    let clean = blank_comments(ptx)?;
    if let Some(at) = clean.find(RESERVED) {
        return Err(FenceError {
            line: line_of(ptx, at),
            statement: String::new(),
            reason: FenceRefusal::ReservedName,
        });
    }
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut entries = Vec::new();
    let (mut accesses, mut proven, mut widest) = (0usize, 0usize, 0u64);
    let mut scanner = Scanner { text: &clean, at: 0 };
    while let Some(statement) = scanner.module_statement()? {
        match statement {
            ModuleStatement::Directive { start, text } => {
                // A declaration, or the part before an initializer's `{` (`= {1, 2}`).
                let storage =
                    text.split_whitespace().find(|w| !matches!(*w, ".visible" | ".extern" | ".weak"));
                if storage == Some(".global") {
                    return Err(refuse(ptx, start, text, FenceRefusal::ModuleGlobal));
                }
            }
            ModuleStatement::Entry { name, params_end, params_empty, body } => {
                let hidden: Vec<String> = FENCE_PARAMS.iter().map(|p| format!("\t.param .u64 {p}")).collect();
                let joined = hidden.join(",\n");
                let params = if params_empty { format!("\n{joined}\n") } else { format!(",\n{joined}") };
                edits.push((params_end, params_end, params));
                let safe = match declared {
                    Some((entry, declaration)) if entry == name => {
                        let names: Vec<String> = crate::signature::find_entry(ptx, entry)
                            .ok()
                            .flatten()
                            .map(|s| s.params.into_iter().map(|p| p.name).collect())
                            .unwrap_or_default();
                        bounds::proven_accesses(&clean, body, &names, declaration)
                    }
                    _ => HashSet::new(),
                };
                let fenced = fence_body(ptx, &clean, body, &safe)?;
                accesses = accesses.saturating_add(fenced.accesses);
                proven = proven.saturating_add(fenced.proven);
                widest = widest.max(fenced.widths.iter().copied().max().unwrap_or(0));
                edits.extend(fenced.edits);
                entries.push(name);
            }
            ModuleStatement::Other => {}
        }
    }
    edits.sort_by_key(|&(start, end, _)| (start, end));
    let mut out = String::with_capacity(ptx.len().saturating_add(edits.len().saturating_mul(160)));
    let mut copied = 0;
    for (start, end, text) in edits {
        out.push_str(ptx.get(copied..start).unwrap_or_default());
        out.push_str(&text);
        copied = end;
    }
    out.push_str(ptx.get(copied..).unwrap_or_default());
    Ok(FencedModule { ptx: out, entries, accesses, proven, widest })
}

/// A fence error at byte `at` of `ptx`.
fn refuse(ptx: &str, at: usize, statement: &str, reason: FenceRefusal) -> FenceError {
    FenceError { line: line_of(ptx, at), statement: squeeze(statement), reason }
}

/// The 1-based line of byte `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).map_or(0, |before| before.matches('\n').count()).saturating_add(1)
}

/// Whitespace runs as one space, trimmed.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with each comment's characters replaced by spaces (newlines kept), so that every
/// byte offset and line is the original's.
fn blank_comments(text: &str) -> Result<String, FenceError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let line = rest.find("//");
        let block = rest.find("/*");
        let (at, end_marker) = match (line, block) {
            (Some(l), Some(b)) if b < l => (b, "*/"),
            (Some(l), _) => (l, "\n"),
            (None, Some(b)) => (b, "*/"),
            (None, None) => {
                out.push_str(rest);
                break;
            }
        };
        out.push_str(rest.get(..at).unwrap_or_default());
        let comment = rest.get(at..).unwrap_or_default();
        let len = match comment.get(2..).and_then(|after| after.find(end_marker)) {
            // A line comment ends before its newline; a block comment after its `*/`.
            Some(i) if end_marker == "\n" => i.saturating_add(2),
            Some(i) => i.saturating_add(4),
            None if end_marker == "\n" => comment.len(),
            None => {
                let before = text.len().saturating_sub(rest.len()).saturating_add(at);
                return Err(FenceError {
                    line: line_of(text, before),
                    statement: String::new(),
                    reason: FenceRefusal::Malformed,
                });
            }
        };
        let (body, after) = comment.split_at(len.min(comment.len()));
        for c in body.chars() {
            if c == '\n' {
                out.push('\n');
            } else {
                // As many spaces as the character has bytes, so every offset stays the same.
                out.extend(std::iter::repeat_n(' ', c.len_utf8()));
            }
        }
        rest = after;
    }
    Ok(out)
}

/// A top-level statement of a module.
enum ModuleStatement<'t> {
    /// A declaration from byte `start`: up to its `;` (`.global .u32 x;`), or up to its block
    /// (a `.func`'s header, a variable's `= {...}` initializer).
    Directive { start: usize, text: &'t str },
    /// A `.entry`: its name, the byte after its last parameter (or inside its empty list),
    /// whether the list is empty, and its body's bytes from `{` to `}` inclusive.
    Entry { name: String, params_end: usize, params_empty: bool, body: (usize, usize) },
    /// A line directive (`.version`, `.loc`, ...).
    Other,
}

/// Walks a comment-free module's top level.
struct Scanner<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Scanner<'t> {
    fn malformed(&self, at: usize) -> FenceError {
        FenceError { line: line_of(self.text, at), statement: String::new(), reason: FenceRefusal::Malformed }
    }

    /// The next top-level statement, or `None` at the end.
    fn module_statement(&mut self) -> Result<Option<ModuleStatement<'t>>, FenceError> {
        let rest = self.text.get(self.at..).unwrap_or_default();
        let Some(skip) = rest.find(|c: char| !c.is_whitespace()) else { return Ok(None) };
        let start = self.at.saturating_add(skip);
        let rest = self.text.get(start..).unwrap_or_default();
        if line_directive(rest) {
            let end = rest.find('\n').unwrap_or(rest.len());
            self.at = start.saturating_add(end);
            return Ok(Some(ModuleStatement::Other));
        }
        let semicolon = rest.find(';');
        let brace = rest.find('{');
        match (semicolon, brace) {
            (Some(s), b) if b.is_none_or(|b| s < b) => {
                self.at = start.saturating_add(s).saturating_add(1);
                Ok(Some(ModuleStatement::Directive { start, text: rest.get(..s).unwrap_or_default() }))
            }
            (_, Some(b)) => {
                let header = rest.get(..b).unwrap_or_default();
                let open = start.saturating_add(b);
                let close = self.matching_brace(open)?;
                self.at = close.saturating_add(1);
                if !header.split_whitespace().any(|w| w == ".entry") {
                    // A `.func`, or a variable with an initializer: its declaration.
                    return Ok(Some(ModuleStatement::Directive { start, text: header }));
                }
                let (name, params_end, params_empty) = self.entry_header(start, header)?;
                Ok(Some(ModuleStatement::Entry { name, params_end, params_empty, body: (open, close) }))
            }
            _ => Err(self.malformed(start)),
        }
    }

    /// The byte of the `}` that closes the `{` at `open`.
    fn matching_brace(&self, open: usize) -> Result<usize, FenceError> {
        let mut depth = 0usize;
        for (i, c) in self.text.get(open..).unwrap_or_default().char_indices() {
            match c {
                '{' => depth = depth.saturating_add(1),
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(open.saturating_add(i));
                    }
                }
                _ => {}
            }
        }
        Err(self.malformed(open))
    }

    /// An entry header's name, the byte after its last parameter (or inside its empty list), and
    /// whether the list is empty.
    fn entry_header(&self, start: usize, header: &str) -> Result<(String, usize, bool), FenceError> {
        let after_entry = header.find(".entry").map(|i| i.saturating_add(".entry".len())).unwrap_or_default();
        let rest = header.get(after_entry..).unwrap_or_default();
        let (name, _) = rest.split_once('(').ok_or_else(|| self.malformed(start))?;
        let open = after_entry.saturating_add(rest.find('(').unwrap_or_default());
        let close = header.get(open..).and_then(|r| r.find(')')).ok_or_else(|| self.malformed(start))?;
        let close = open.saturating_add(close);
        let inside = header.get(open.saturating_add(1)..close).unwrap_or_default();
        // Where the hidden parameters go: after the last parameter, or inside the empty list.
        let at = open.saturating_add(1).saturating_add(inside.trim_end().len());
        Ok((name.trim().to_owned(), start.saturating_add(at), inside.trim().is_empty()))
    }
}

/// What fencing one entry's body produced.
struct FencedBody {
    edits: Vec<(usize, usize, String)>,
    accesses: usize,
    proven: usize,
    widths: Vec<u64>,
}

/// Whether `text` starts with a directive that ends at its line's end, without `;`.
fn line_directive(text: &str) -> bool {
    [".version", ".target", ".address_size", ".file", ".loc"]
        .iter()
        .any(|d| text.strip_prefix(d).is_some_and(|rest| rest.starts_with(char::is_whitespace)))
}

/// The body's statements: each instruction's byte range and text (guard included), in order.
fn statements(clean: &str, body: (usize, usize)) -> Vec<(usize, usize)> {
    let (open, close) = body;
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut vector = 0usize;
    let mut line_end: Option<usize> = None;
    let text = clean.get(..close).unwrap_or_default();
    for (i, c) in text.char_indices().skip_while(|&(i, _)| i <= open) {
        if line_end.is_some_and(|e| i < e) {
            continue; // inside a `.loc` line
        }
        if start.is_none() && !c.is_whitespace() && line_directive(text.get(i..).unwrap_or_default()) {
            line_end = Some(text.get(i..).and_then(|r| r.find('\n')).map_or(close, |e| i.saturating_add(e)));
            continue;
        }
        match (start, c) {
            (None, c) if c.is_whitespace() => {}
            (None, '{' | '}') => {}
            (None, _) => start = Some(i),
            (Some(_), '{') => vector = vector.saturating_add(1),
            (Some(_), '}') => vector = vector.saturating_sub(1),
            (Some(s), ';') if vector == 0 => {
                out.push((s, i));
                start = None;
            }
            (Some(s), ':') if vector == 0 => {
                // A label ends at its colon: one word, then `:`.
                let word = text.get(s..i).unwrap_or_default();
                if !word.contains(|c: char| c.is_whitespace() || c == '[' || c == '.' || c == ':') {
                    start = None;
                }
            }
            _ => {}
        }
    }
    out
}

/// The fence's names: its registers and the exit label.
const REG_BASE: &str = "%__kargs_base";
const REG_LEN: &str = "%__kargs_len";
const REG_FLAG: &str = "%__kargs_flag";
const REG_VIOLATION: &str = "%__kargs_v";
const REG_OFFSET: &str = "%__kargs_o";
const REG_CLAMPED: &str = "%__kargs_c";
const REG_ADDRESS: &str = "%__kargs_a";
const REG_PRED: &str = "%__kargs_p";
const REG_EFFECTIVE: &str = "%__kargs_e";
const REG_GLOBAL: &str = "%__kargs_g";
const EXIT_LABEL: &str = "$__kargs_fence_exit";

fn limit_register(width: u64) -> String {
    format!("%__kargs_lim{width}")
}

/// Fences each global access of the body `open..=close` of an entry, but those whose statement
/// starts at an offset in `proven`. A body with nothing to fence is left as it is.
fn fence_body(
    ptx: &str,
    clean: &str,
    body: (usize, usize),
    proven: &HashSet<usize>,
) -> Result<FencedBody, FenceError> {
    let mut edits = Vec::new();
    let mut exits = Vec::new();
    let mut widths: Vec<u64> = Vec::new();
    let (mut accesses, mut skipped) = (0usize, 0usize);
    for (start, end) in statements(clean, body) {
        let text = clean.get(start..end).unwrap_or_default();
        let (guard, instruction) = split_guard(text);
        let guard = guard.as_str();
        let (opcode, operands) = match instruction.split_once(char::is_whitespace) {
            Some((opcode, operands)) => (opcode, operands.trim()),
            None => (instruction, ""),
        };
        if opcode.starts_with('.') {
            continue; // .reg, .shared, .local, .pragma ...
        }
        let parts: Vec<&str> = opcode.split('.').collect();
        let base = parts.first().copied().unwrap_or_default();
        let modifiers = parts.get(1..).unwrap_or_default();
        let refused = |reason| refuse(ptx, start, text, reason);
        match classify(base, modifiers) {
            Class::Plain => {}
            Class::Exit => exits.push((start, end, format!("{guard}bra.uni {EXIT_LABEL}"))),
            Class::Refuse(reason) => return Err(refused(reason)),
            Class::Global { address_operand, width, generic } => {
                let operands = split_operands(operands);
                let width = match width {
                    Width::Bytes(w) => w,
                    Width::Operand(i) => operands
                        .get(i)
                        .and_then(|o| o.trim().parse::<u64>().ok())
                        .ok_or_else(|| refused(FenceRefusal::Address))?,
                };
                if !width.is_power_of_two() || width > 16 {
                    return Err(refused(FenceRefusal::UnknownGlobalInstruction));
                }
                if proven.contains(&start) {
                    skipped = skipped.saturating_add(1);
                    continue;
                }
                let address = operands.get(address_operand).ok_or_else(|| refused(FenceRefusal::Address))?;
                let (register, offset) =
                    parse_address(address).ok_or_else(|| refused(FenceRefusal::Address))?;
                let mut sequence = fence_sequence(guard, &register, offset, width, generic);
                let rewritten: Vec<String> =
                    operands
                        .iter()
                        .enumerate()
                        .map(|(i, o)| {
                            if i == address_operand {
                                format!("[{REG_ADDRESS}]")
                            } else {
                                o.trim().to_owned()
                            }
                        })
                        .collect();
                sequence.push(format!("{guard}{opcode} {}", rewritten.join(", ")));
                // The statement's own `;` ends the last instruction.
                edits.push((start, end, sequence.join(";\n\t")));
                accesses = accesses.saturating_add(1);
                if !widths.contains(&width) {
                    widths.push(width);
                }
            }
        }
    }
    if accesses == 0 {
        // Nothing to fence: the body stays as it was, its exits too.
        return Ok(FencedBody { edits, accesses, proven: skipped, widths });
    }
    edits.extend(exits);
    widths.sort_unstable();
    let (open, close) = body;
    let mut prologue = format!(
        "\n\t.reg .u64 {REG_BASE}, {REG_LEN}, {REG_FLAG}, {REG_VIOLATION}, {REG_OFFSET}, {REG_CLAMPED}, {REG_ADDRESS}, {REG_EFFECTIVE}"
    );
    for &w in &widths {
        let _ = write!(prologue, ", {}", limit_register(w));
    }
    let _ = write!(
        prologue,
        ";\n\t.reg .pred {REG_PRED}, {REG_GLOBAL};\n\tld.param.u64 {REG_BASE}, [{}];\n\tld.param.u64 {REG_LEN}, [{}];\n\tmov.u64 {REG_VIOLATION}, 0;\n",
        FENCE_PARAMS[0], FENCE_PARAMS[1]
    );
    for &w in &widths {
        let _ = writeln!(prologue, "\tsub.u64 {}, {REG_LEN}, {w};", limit_register(w));
    }
    edits.push((open.saturating_add(1), open.saturating_add(1), prologue));
    let exit = format!(
        "{EXIT_LABEL}:\n\tsetp.eq.u64 {REG_PRED}, {REG_VIOLATION}, 0;\n\t@{REG_PRED} ret;\n\
         \tld.param.u64 {REG_FLAG}, [{}];\n\tst.global.u32 [{REG_FLAG}], 1;\n\tret;\n",
        FENCE_PARAMS[2]
    );
    edits.push((close, close, exit));
    Ok(FencedBody { edits, accesses, proven: skipped, widths })
}

/// The instructions that compute a fenced access's address into `%__kargs_a` and note, under
/// the access's own guard, whether it was moved: each without its `;`. A generic access is
/// fenced only where `isspacep.global` says its address is global; a shared or local one keeps
/// its address.
fn fence_sequence(guard: &str, register: &str, offset: i64, width: u64, generic: bool) -> Vec<String> {
    let mut out = Vec::new();
    let effective = match (register.starts_with('%'), offset) {
        (true, 0) => register.to_owned(),
        (true, _) => {
            out.push(format!("add.s64 {REG_EFFECTIVE}, {register}, {offset}"));
            REG_EFFECTIVE.to_owned()
        }
        // An absolute address: a number.
        (false, _) => {
            out.push(format!("mov.u64 {REG_EFFECTIVE}, {register}"));
            if offset != 0 {
                out.push(format!("add.s64 {REG_EFFECTIVE}, {REG_EFFECTIVE}, {offset}"));
            }
            REG_EFFECTIVE.to_owned()
        }
    };
    if generic {
        out.push(format!("isspacep.global {REG_GLOBAL}, {effective}"));
    }
    out.push(format!("sub.u64 {REG_OFFSET}, {effective}, {REG_BASE}"));
    if generic {
        // Not global: offset 0, so nothing is clamped and nothing noted.
        out.push(format!("selp.b64 {REG_OFFSET}, {REG_OFFSET}, 0, {REG_GLOBAL}"));
    }
    out.push(format!("min.u64 {REG_CLAMPED}, {REG_OFFSET}, {}", limit_register(width)));
    if width > 1 {
        let mask = !width.saturating_sub(1);
        out.push(format!("and.b64 {REG_CLAMPED}, {REG_CLAMPED}, 0x{mask:016X}"));
    }
    out.push(format!("sub.u64 {REG_OFFSET}, {REG_OFFSET}, {REG_CLAMPED}"));
    out.push(format!("{guard}or.b64 {REG_VIOLATION}, {REG_VIOLATION}, {REG_OFFSET}"));
    out.push(format!("add.u64 {REG_ADDRESS}, {REG_CLAMPED}, {REG_BASE}"));
    if generic {
        out.push(format!("selp.b64 {REG_ADDRESS}, {REG_ADDRESS}, {effective}, {REG_GLOBAL}"));
    }
    out
}

/// `@%p ` or `@!%p ` at the start of an instruction, and the rest.
fn split_guard(text: &str) -> (String, &str) {
    let text = text.trim();
    if text.starts_with('@')
        && let Some(space) = text.find(char::is_whitespace)
    {
        let (guard, rest) = text.split_at(space);
        return (format!("{guard} "), rest.trim());
    }
    (String::new(), text)
}

/// How wide an access is: a fixed number of bytes, or the number in an operand (`cp.async`).
enum Width {
    Bytes(u64),
    Operand(usize),
}

/// What an instruction is to the fence.
enum Class {
    /// Nothing to do.
    Plain,
    /// `ret` or `exit`: goes through the fence's exit.
    Exit,
    /// A global access (or a generic one, which may be global): which operand is the address,
    /// and its width.
    Global { address_operand: usize, width: Width, generic: bool },
    /// Refused, for this reason.
    Refuse(FenceRefusal),
}

/// The state spaces of `ld`/`st`/`atom`/`red` that are not global memory.
fn other_space(modifier: &str) -> bool {
    ["shared", "local", "param", "const"].iter().any(|s| modifier.starts_with(s))
}

/// The bytes of a PTX type modifier (`u32`, `f16x2`, `b128`, ...).
fn type_bytes(modifier: &str) -> Option<u64> {
    Some(match modifier {
        "b8" | "u8" | "s8" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        "b128" => 16,
        _ => return None,
    })
}

fn classify(base: &str, modifiers: &[&str]) -> Class {
    let global = modifiers.contains(&"global");
    match base {
        "ret" | "exit" => Class::Exit,
        "call" => Class::Refuse(FenceRefusal::Call),
        // Address conversions and tests touch no memory.
        "cvta" | "isspacep" => Class::Plain,
        "tex" | "tld4" | "txq" | "suld" | "sust" | "sured" | "suq" => {
            Class::Refuse(FenceRefusal::TextureOrSurface)
        }
        "ld" | "st" | "atom" | "red" => {
            if modifiers.iter().any(|m| other_space(m)) {
                return Class::Plain;
            }
            let element = modifiers.iter().rev().find_map(|m| type_bytes(m));
            let lanes = modifiers.iter().find_map(|m| match *m {
                "v2" => Some(2),
                "v4" => Some(4),
                "v8" => Some(8),
                _ => None,
            });
            let Some(element) = element else { return Class::Refuse(FenceRefusal::UnknownGlobalInstruction) };
            let address_operand = if matches!(base, "ld" | "atom") { 1 } else { 0 };
            let width = Width::Bytes(element.saturating_mul(lanes.unwrap_or(1)));
            Class::Global { address_operand, width, generic: !global }
        }
        "cp" if modifiers.iter().any(|m| m.starts_with("bulk")) => Class::Refuse(FenceRefusal::BulkCopy),
        "cp" if modifiers.first() == Some(&"async") && global => {
            Class::Global { address_operand: 1, width: Width::Operand(2), generic: false }
        }
        "prefetch" | "prefetchu" if modifiers.iter().any(|m| m.starts_with("tensormap")) => {
            Class::Refuse(FenceRefusal::BulkCopy)
        }
        "prefetch" | "prefetchu" if !modifiers.iter().any(|m| other_space(m)) => {
            Class::Global { address_operand: 0, width: Width::Bytes(1), generic: !global }
        }
        _ if modifiers.iter().any(|m| m.starts_with("tensor") || m.starts_with("bulk")) => {
            Class::Refuse(FenceRefusal::BulkCopy)
        }
        _ if global => Class::Refuse(FenceRefusal::UnknownGlobalInstruction),
        _ => Class::Plain,
    }
}

/// Splits operands at commas outside brackets and braces.
fn split_operands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '[' | '{' => depth = depth.saturating_add(1),
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// `[%rd1]`, `[%rd1+8]`, `[%rd1+-8]`, `[%rd1-8]` or `[4096]`: the register (or number) and the
/// offset.
fn parse_address(operand: &str) -> Option<(String, i64)> {
    let inner = operand.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    let (base, offset) = match inner.find(['+', '-']).filter(|&i| i > 0) {
        Some(i) => {
            let (base, offset) = inner.split_at(i);
            let offset = offset.replace(' ', "");
            let offset = offset.strip_prefix('+').unwrap_or(&offset);
            (base.trim(), parse_integer(offset)?)
        }
        None => (inner, 0),
    };
    if base.starts_with('%')
        && base.len() > 1
        && base.chars().skip(1).all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    {
        return Some((base.to_owned(), offset));
    }
    let number = parse_integer(base)?;
    Some((number.to_string(), offset))
}

/// A PTX integer: decimal or `0x` hexadecimal, with an optional `-`.
fn parse_integer(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let magnitude = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    if negative { magnitude.checked_neg() } else { Some(magnitude) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = ".version 7.8\n.target sm_52\n.address_size 64\n";

    fn entry(body: &str) -> String {
        format!(
            "{HEADER}.visible .entry k(\n\t.param .u64 p\n)\n{{\n\t.reg .b64 %rd<4>;\n\t.reg .b32 %r<4>;\n\t.reg .f32 %f<8>;\n\t.reg .pred %p<2>;\n{body}\tret;\n}}\n"
        )
    }

    fn refusal(body: &str) -> FenceError {
        fence_ptx(&entry(body)).unwrap_err()
    }

    #[test]
    fn each_family_is_fenced_by_its_width() {
        for (instruction, width) in [
            ("ld.global.u8 %r1, [%rd1];", 1),
            ("ld.global.nc.u16 %r1, [%rd1];", 2),
            ("ld.global.f32 %f1, [%rd1];", 4),
            ("st.global.u64 [%rd1], %rd2;", 8),
            ("ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", 16),
            ("st.global.v2.f64 [%rd1], {%rd2, %rd3};", 16),
            ("atom.global.add.u32 %r1, [%rd1], 1;", 4),
            ("atom.global.cas.b64 %rd2, [%rd1], %rd2, %rd3;", 8),
            ("red.global.add.f32 [%rd1], %f1;", 4),
            ("ld.volatile.global.u32 %r1, [%rd1];", 4),
            ("cp.async.ca.shared.global [%rd2], [%rd1], 8;", 8),
            ("prefetch.global.L2 [%rd1];", 1),
            // Generic forms: fenced where isspacep.global says the address is global.
            ("ld.u32 %r1, [%rd1];", 4),
            ("st.v2.f32 [%rd1], {%f1, %f2};", 8),
            ("atom.add.u32 %r1, [%rd1], 1;", 4),
            ("prefetch.L1 [%rd1];", 1),
        ] {
            let fenced = fence_ptx(&entry(&format!("\t{instruction}\n"))).unwrap();
            assert_eq!(fenced.accesses(), 1, "{instruction}");
            assert_eq!(fenced.widest_access(), width, "{instruction}");
            let text = fenced.ptx();
            assert!(text.contains(&format!("sub.u64 %__kargs_lim{width}, %__kargs_len, {width};")), "{text}");
            assert!(
                text.contains(&format!("min.u64 {REG_CLAMPED}, {REG_OFFSET}, %__kargs_lim{width};")),
                "{text}"
            );
            assert!(text.contains(&format!("[{REG_ADDRESS}]")), "{instruction}: {text}");
            assert!(!text.contains("[%rd1]"), "{instruction}: the original address is gone: {text}");
        }
    }

    #[test]
    fn a_generic_access_is_fenced_only_when_its_address_is_global() {
        let text = fence_ptx(&entry("\t@%p1 st.u32 [%rd1+4], %r1;\n")).unwrap().ptx().to_owned();
        for line in [
            "add.s64 %__kargs_e, %rd1, 4;",
            "isspacep.global %__kargs_g, %__kargs_e;",
            "sub.u64 %__kargs_o, %__kargs_e, %__kargs_base;",
            "selp.b64 %__kargs_o, %__kargs_o, 0, %__kargs_g;",
            "selp.b64 %__kargs_a, %__kargs_a, %__kargs_e, %__kargs_g;",
            "@%p1 st.u32 [%__kargs_a], %r1;",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        let global = fence_ptx(&entry("\tst.global.u32 [%rd1], %r1;\n")).unwrap().ptx().to_owned();
        assert!(!global.contains("isspacep"), "a global access needs no test: {global}");
    }

    #[test]
    fn other_state_spaces_are_left_alone() {
        let body = "\tld.param.u64 %rd1, [p];\n\tld.shared.f32 %f1, [%rd1];\n\tst.local.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};\n\tld.const.u32 %r1, [%rd1];\n";
        let fenced = fence_ptx(&entry(body)).unwrap();
        assert_eq!(fenced.accesses(), 0);
        for line in body.lines() {
            assert!(fenced.ptx().contains(line.trim()), "{line} unchanged");
        }
    }

    #[test]
    fn offsets_absolute_addresses_and_guards() {
        let fenced =
            fence_ptx(&entry("\t@%p1 ld.global.f32 %f1, [%rd1+-8];\n\tst.global.u32 [4096], %r1;\n"))
                .unwrap();
        let text = fenced.ptx();
        assert!(text.contains("add.s64 %__kargs_e, %rd1, -8;"), "{text}");
        assert!(
            text.contains("@%p1 or.b64 %__kargs_v, %__kargs_v, %__kargs_o;"),
            "the guard covers the flag: {text}"
        );
        assert!(text.contains("@%p1 ld.global.f32 %f1, [%__kargs_a]"), "{text}");
        assert!(text.contains("mov.u64 %__kargs_e, 4096;"), "{text}");
    }

    #[test]
    fn every_exit_goes_through_the_fence_exit() {
        let fenced = fence_ptx(&entry("\t@%p1 ret;\n\tst.global.u32 [%rd1], %r1;\n")).unwrap();
        let text = fenced.ptx();
        assert!(text.contains("@%p1 bra.uni $__kargs_fence_exit;"), "{text}");
        assert_eq!(text.matches("bra.uni $__kargs_fence_exit;").count(), 2, "{text}");
        assert!(text.contains("st.global.u32 [%__kargs_flag], 1;"), "{text}");
        let params: Vec<_> =
            FENCE_PARAMS.iter().filter(|p| text.contains(&format!(".param .u64 {p}"))).collect();
        assert_eq!(params.len(), 3, "{text}");
    }

    #[test]
    fn what_cannot_be_fenced_is_refused_with_its_line() {
        for (instruction, reason) in [
            ("call.uni (%r1), f, (%r2);", FenceRefusal::Call),
            ("call %rd1, (%r2), proto;", FenceRefusal::Call),
            ("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];", FenceRefusal::TextureOrSurface),
            ("suld.b.2d.b32.trap {%r1}, [%rd1, {%r2, %r3}];", FenceRefusal::TextureOrSurface),
            (
                "cp.async.bulk.tensor.1d.shared::cluster.global.tile [%rd1], [%rd2, {%r1}], [%rd3];",
                FenceRefusal::BulkCopy,
            ),
            ("multimem.ld_reduce.global.add.u32 %r1, [%rd1];", FenceRefusal::UnknownGlobalInstruction),
            ("ld.global.f32 %f1, [buffer];", FenceRefusal::Address),
        ] {
            let e = refusal(&format!("\t{instruction}\n"));
            assert_eq!((e.line, e.reason), (12, reason), "{instruction}: {e}");
            assert_eq!(e.statement, instruction.trim_end_matches(';'));
        }
    }

    #[test]
    fn module_globals_and_reserved_names_are_refused() {
        let e = fence_ptx(&format!("{HEADER}.global .align 4 .u32 counter;\n")).unwrap_err();
        assert_eq!((e.line, e.reason), (4, FenceRefusal::ModuleGlobal));
        let e = fence_ptx(&format!("{HEADER}.visible .global .align 4 .b8 table[64];\n")).unwrap_err();
        assert_eq!(e.reason, FenceRefusal::ModuleGlobal);
        let e = fence_ptx(&format!("{HEADER}\n.global .align 4 .u32 seeds[2] = {{1, 2}};\n")).unwrap_err();
        assert_eq!((e.line, e.reason), (5, FenceRefusal::ModuleGlobal), "with an initializer");
        assert!(fence_ptx(&format!("{HEADER}.const .align 4 .u32 table[2] = {{1, 2}};\n")).is_ok());
        let e = fence_ptx(&entry("\tmov.u64 %__kargs_base, 0;\n")).unwrap_err();
        assert_eq!(e.reason, FenceRefusal::ReservedName);
        let e = fence_ptx(&format!("{HEADER}/* open")).unwrap_err();
        assert_eq!((e.line, e.reason), (4, FenceRefusal::Malformed));
        // Commented-out instructions are not instructions.
        let fenced = fence_ptx(&entry("\t// ld.u32 %r1, [%rd1];\n\t/* call f; */\n")).unwrap();
        assert_eq!(fenced.accesses(), 0);
    }

    /// The fixtures' fenced text is committed (`kernels/fenced/`), so that a change in the
    /// rewriter shows as a diff and CI's `ptxas` (scripts/ptxas-check.sh) assembles exactly what
    /// the rewriter makes. `KARGS_UPDATE_GOLDEN=1` rewrites the files.
    #[test]
    #[cfg_attr(miri, ignore = "reads the fixture files; Miri isolates the file system")]
    fn the_fixtures_fenced_are_the_committed_files() {
        let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let update = std::env::var_os("KARGS_UPDATE_GOLDEN").is_some_and(|v| v == "1");
        let mut checked = 0;
        // The fixtures, and the kernels broken on purpose that the fence's tests launch.
        for (dir, fenced_dir) in [
            (kernels.clone(), kernels.join("fenced")),
            (kernels.join("broken"), kernels.join("fenced/broken")),
        ] {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "ptx") {
                    continue;
                }
                let ptx = std::fs::read_to_string(&path).unwrap();
                let fenced = fence_ptx(&ptx).unwrap();
                // Each entry parses again: its own parameters, then the fence's three.
                for entry in fenced.entries() {
                    let (mut plain, mut with_fence) =
                        (crate::KernelRegistry::new(), crate::KernelRegistry::new());
                    plain.register_undeclared(1, &ptx, entry).unwrap();
                    with_fence.register_undeclared(1, fenced.ptx(), entry).unwrap();
                    let sizes =
                        |r: &crate::KernelRegistry| r.get(1).unwrap().signature().unwrap().param_sizes();
                    let mut want = sizes(&plain);
                    want.extend([8, 8, 8]);
                    assert_eq!(sizes(&with_fence), want, "{entry}");
                }
                let golden = fenced_dir.join(path.file_name().unwrap());
                if update {
                    std::fs::create_dir_all(&fenced_dir).unwrap();
                    std::fs::write(&golden, fenced.ptx()).unwrap();
                }
                let committed = std::fs::read_to_string(&golden).unwrap_or_default();
                assert!(
                    committed == fenced.ptx(),
                    "{} differs from the fenced {} (KARGS_UPDATE_GOLDEN=1 rewrites it)",
                    golden.display(),
                    path.display()
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 14, "every fixture and every broken kernel");
    }

    #[test]
    fn an_entry_without_parameters_gets_the_hidden_ones() {
        let fenced = fence_ptx(&format!("{HEADER}.visible .entry k()\n{{\n\tret;\n}}\n")).unwrap();
        assert!(fenced.ptx().contains(".entry k(\n\t.param .u64 __kargs_fence_base,"), "{}", fenced.ptx());
        assert_eq!(fenced.entries(), ["k"]);
    }
}
