//! Decoding an `.entry` body into [`Inst`]s, once, when its module is loaded.
//!
//! The body is read statement by statement (`;`-terminated; `//` and `/* */` comments and
//! blank lines skipped): `.reg` declarations (registers are named by use, so their counts are
//! not needed), `.shared` declarations (laid out as the PTX reader lays them out, then any
//! `.extern .shared` array after them: the dynamic shared memory), labels (`$L__BB0_2:`),
//! nested `{ }` scopes, and instructions with an optional guard (`@%p1`, `@!%p1`). Anything
//! else is refused with the line and what is not supported.

use std::collections::HashMap;

use super::arith;
use super::convert;
use super::memory_ops;
use super::{AddrBase, Inst, Op, Operand, Space, Special, Ty};
use crate::ptx::{PtxEntry, PtxError};

/// A kernel, decoded: what [`Program::run`](super::Program::run) interprets.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The entry's name.
    pub name: String,
    /// The instructions, in order; a branch names an index.
    pub insts: Vec<Inst>,
    /// Registers per thread.
    pub slots: usize,
    /// Bytes of static shared memory.
    pub shared_bytes: usize,
    /// Where dynamic shared memory starts (`.extern .shared`): after the static declarations,
    /// 16-aligned.
    pub dynamic_at: usize,
    /// Bytes of local memory per thread (`.local` declarations).
    pub local_bytes: usize,
    /// Whether the kernel synchronises its block (`bar.sync`): its threads then run in turns.
    pub has_barrier: bool,
}

/// What decoding one statement needs: the names seen so far.
pub struct Names {
    /// Register slots by name.
    registers: HashMap<String, usize>,
    /// Parameters by name: their offset in the parameter buffer.
    params: HashMap<String, usize>,
    /// Static shared variables by name: their offset.
    shared: HashMap<String, u64>,
    /// Local variables by name: their offset in a thread's local memory.
    local: HashMap<String, u64>,
    /// Labels by name: the index of the instruction after them.
    labels: HashMap<String, usize>,
}

impl Names {
    /// The slot of register `name`, made on first use.
    pub fn register(&mut self, name: &str) -> usize {
        let next = self.registers.len();
        *self.registers.entry(name.to_owned()).or_insert(next)
    }
}

/// Why a statement cannot be decoded: the message for the load's log.
pub type DecodeError = String;

/// Decodes kernel `entry` of the module `text`.
///
/// # Errors
///
/// A [`PtxError`] naming the line of the first statement this interpreter does not support
/// (or cannot read), as the load's log says it.
pub fn compile(text: &str, entry: &PtxEntry) -> Result<Program, PtxError> {
    let lines = strip_comments(text);
    let unsupported = |line: usize, what: &str| PtxError {
        line: Some(line),
        message: format!("the emulated driver does not run this: {what}"),
    };
    let (header_at, params) = find_entry(&lines, &entry.name).ok_or_else(|| PtxError {
        line: None,
        message: format!("the emulated driver cannot find the body of `{}`", entry.name),
    })?;
    let mut names = Names {
        registers: HashMap::new(),
        params: params.iter().zip(&entry.params).map(|(name, param)| (name.clone(), param.offset)).collect(),
        shared: HashMap::new(),
        local: HashMap::new(),
        labels: HashMap::new(),
    };
    // The body's statements, with their lines.
    let statements =
        body(&lines, header_at).ok_or_else(|| unsupported(header_at + 1, "a body without its end"))?;
    // First pass: shared declarations and labels.
    let mut shared_end = 0u64;
    let mut local_end = 0u64;
    let mut dynamic: Vec<String> = Vec::new();
    let mut count = 0usize;
    for (line, statement) in &statements {
        if let Some(label) = statement.strip_suffix(':') {
            names.labels.insert(label.trim().to_owned(), count);
        } else if statement.starts_with(".local") {
            let (name, align, size, _) =
                variable_declaration(statement, ".local").ok_or_else(|| unsupported(*line, statement))?;
            let at = local_end.next_multiple_of(align.max(1));
            names.local.insert(name, at);
            local_end = at + size;
        } else if statement.starts_with(".shared") || statement.starts_with(".extern") {
            let (name, align, size, external) =
                variable_declaration(statement, ".shared").ok_or_else(|| unsupported(*line, statement))?;
            if external {
                dynamic.push(name);
            } else {
                let at = shared_end.next_multiple_of(align.max(1));
                names.shared.insert(name, at);
                shared_end = at + size;
            }
        } else if !statement.starts_with('.') && statement != "{" && statement != "}" {
            count += 1;
        }
    }
    for name in dynamic {
        names.shared.insert(name, shared_end.next_multiple_of(16));
    }
    // Second pass: the instructions.
    let mut insts = Vec::new();
    let mut has_barrier = false;
    for (line, statement) in &statements {
        if statement.ends_with(':') || statement.starts_with('.') || statement == "{" || statement == "}" {
            continue;
        }
        let refuse = |e: String| unsupported(*line, &format!("`{statement}` ({e})"));
        let (guard, rest) = guard(statement, &mut names).map_err(refuse)?;
        let op = instruction(rest, &mut names).map_err(refuse)?;
        has_barrier |= op == Op::Barrier;
        insts.push(Inst { guard, op, line: *line });
    }
    Ok(Program {
        name: entry.name.clone(),
        insts,
        slots: names.registers.len(),
        shared_bytes: usize::try_from(shared_end).unwrap_or(usize::MAX),
        dynamic_at: usize::try_from(shared_end.next_multiple_of(16)).unwrap_or(usize::MAX),
        local_bytes: usize::try_from(local_end).unwrap_or(usize::MAX),
        has_barrier,
    })
}

/// The text's lines (1-based index = position + 1) with comments blanked out.
fn strip_comments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut kept = String::new();
        let mut rest = line;
        loop {
            if in_block {
                match rest.find("*/") {
                    Some(end) => {
                        rest = &rest[end + 2..];
                        in_block = false;
                    }
                    None => break,
                }
            } else {
                let block = rest.find("/*");
                let line_comment = rest.find("//");
                match (block, line_comment) {
                    (Some(b), l) if l.is_none_or(|l| b < l) => {
                        kept.push_str(&rest[..b]);
                        rest = &rest[b + 2..];
                        in_block = true;
                    }
                    (_, Some(l)) => {
                        kept.push_str(&rest[..l]);
                        break;
                    }
                    _ => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push(kept);
    }
    out
}

/// The line index of `.entry name`'s header and its parameters' names, in order.
fn find_entry(lines: &[String], name: &str) -> Option<(usize, Vec<String>)> {
    let at = lines.iter().position(|line| {
        let mut words = line.split(|c: char| c.is_whitespace() || c == '(');
        words.any(|w| w == ".entry") && line.split(|c: char| c.is_whitespace() || c == '(').any(|w| w == name)
    })?;
    // The parameter list: from the `(` after the name to its `)`.
    let header: String =
        lines[at..].iter().take_while(|l| !l.contains('{')).cloned().collect::<Vec<_>>().join(" ");
    let open = header.find('(');
    let params = match open {
        Some(open) => {
            let close = header[open..].find(')')? + open;
            header[open + 1..close]
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(|p| {
                    let last = p.split_whitespace().last().unwrap_or_default();
                    last.split('[').next().unwrap_or_default().to_owned()
                })
                .collect()
        }
        None => Vec::new(),
    };
    Some((at, params))
}

/// The statements of the body that starts at or after line index `header_at`: each with its
/// line (1-based), trimmed, without its `;`. Scope braces are statements of their own; braces
/// inside a statement (a vector operand, `{%f1, %f2}`) are part of it.
fn body(lines: &[String], header_at: usize) -> Option<Vec<(usize, String)>> {
    let start = (header_at..lines.len()).find(|&i| lines[i].contains('{'))?;
    let mut depth = 0usize;
    let mut statements = Vec::new();
    let mut pending = String::new();
    let mut pending_line = 0;
    let mut vector = 0usize;
    for (i, line) in lines.iter().enumerate().skip(start) {
        let mut text = line.as_str();
        if i == start {
            text = &text[text.find('{')? + 1..];
            depth = 1;
        }
        for c in text.chars() {
            let in_statement = !pending.trim().is_empty();
            match c {
                '{' if !in_statement => {
                    depth += 1;
                    statements.push((i + 1, "{".to_owned()));
                }
                '}' if vector == 0 && !in_statement => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(statements);
                    }
                    statements.push((i + 1, "}".to_owned()));
                }
                ';' if vector == 0 => {
                    if in_statement {
                        statements.push((pending_line, pending.trim().to_owned()));
                    }
                    pending.clear();
                }
                ':' if vector == 0 && in_statement && !pending.trim().contains(char::is_whitespace) => {
                    // A label ends at its colon.
                    statements.push((pending_line, format!("{}:", pending.trim())));
                    pending.clear();
                }
                _ => {
                    if !in_statement && c.is_whitespace() {
                        continue;
                    }
                    if !in_statement {
                        pending_line = i + 1;
                    }
                    match c {
                        '{' => vector += 1,
                        '}' => vector = vector.saturating_sub(1),
                        _ => {}
                    }
                    pending.push(c);
                }
            }
        }
        if !pending.trim().is_empty() {
            pending.push(' ');
        }
    }
    None
}

/// A `.shared` or `.local` declaration (`space`): its name, alignment, size and whether it is
/// `.extern` (dynamic shared memory).
fn variable_declaration(statement: &str, space: &str) -> Option<(String, u64, u64, bool)> {
    let words: Vec<&str> = statement.split_whitespace().collect();
    let external = words.first() == Some(&".extern");
    if !words.contains(&space) {
        return None;
    }
    let mut align = 0u64;
    let mut elem = 0u64;
    let mut name = None;
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        match *word {
            ".extern" | ".shared" | ".local" => {}
            ".align" => align = iter.next()?.parse().ok()?,
            w if w.starts_with('.') => elem = ty(&w[1..])?.bytes() as u64,
            w => name = Some(w),
        }
    }
    let name = name?;
    let (base, dims) = match name.find('[') {
        Some(open) => (&name[..open], &name[open..]),
        None => (name, ""),
    };
    let mut size = elem;
    for dim in dims.split('[').skip(1) {
        let n = dim.trim_end_matches(']');
        size *= if n.is_empty() { 0 } else { n.parse::<u64>().ok()? };
    }
    Some((base.to_owned(), if align == 0 { elem } else { align }, size, external))
}

/// A type suffix (`u32`, `f64`, `pred`, ...).
pub fn ty(suffix: &str) -> Option<Ty> {
    Some(match suffix {
        "b8" => Ty::B(8),
        "b16" => Ty::B(16),
        "b32" => Ty::B(32),
        "b64" => Ty::B(64),
        "u8" => Ty::U(8),
        "u16" => Ty::U(16),
        "u32" => Ty::U(32),
        "u64" => Ty::U(64),
        "s8" => Ty::S(8),
        "s16" => Ty::S(16),
        "s32" => Ty::S(32),
        "s64" => Ty::S(64),
        "f32" => Ty::F32,
        "f64" => Ty::F64,
        "pred" => Ty::Pred,
        _ => return None,
    })
}

/// The guard of a statement (`@%p1`, `@!%p1`) and the rest of it.
/// A guard: the predicate's slot, and whether the instruction runs when it is true.
type Guard = Option<(usize, bool)>;

fn guard<'s>(statement: &'s str, names: &mut Names) -> Result<(Guard, &'s str), DecodeError> {
    let Some(rest) = statement.strip_prefix('@') else { return Ok((None, statement)) };
    let (pred, rest) =
        rest.split_once(char::is_whitespace).ok_or_else(|| format!("a guard alone: {statement}"))?;
    let (negated, name) = match pred.strip_prefix('!') {
        Some(name) => (true, name),
        None => (false, pred),
    };
    if !name.starts_with('%') {
        return Err(format!("a guard that is not a predicate register: {pred}"));
    }
    Ok((Some((names.register(name), !negated)), rest.trim()))
}

/// An instruction: opcode and operands.
fn instruction(text: &str, names: &mut Names) -> Result<Op, DecodeError> {
    let (opcode, operands) = match text.split_once(char::is_whitespace) {
        Some((opcode, operands)) => (opcode, operands.trim()),
        None => (text, ""),
    };
    let parts: Vec<&str> = opcode.split('.').collect();
    let operands = split_operands(operands);
    let base = parts[0];
    let modifiers = &parts[1..];
    match base {
        "ret" | "exit" => Ok(Op::Exit),
        "bra" => {
            let label = operands.first().ok_or("`bra` without a target")?;
            names
                .labels
                .get(label.as_str())
                .map(|&i| Op::Branch(i))
                .ok_or_else(|| format!("no label {label}"))
        }
        "bar" | "barrier" => {
            let whole_block = operands.len() == 1
                && operands[0] == "0"
                && modifiers.iter().all(|m| matches!(*m, "sync" | "aligned"));
            if whole_block {
                Ok(Op::Barrier)
            } else {
                Err(format!("a barrier other than `bar.sync 0`: {text}"))
            }
        }
        "isspacep" => {
            let space = match modifiers {
                ["global"] => true,
                [space] if ["shared", "local", "const", "param"].iter().any(|s| space.starts_with(s)) => {
                    false
                }
                _ => return Err(format!("`{opcode}`")),
            };
            if operands.len() != 2 {
                return Err(format!("`{opcode}` with {} operands", operands.len()));
            }
            let dst = names.register(&operands[0]);
            Ok(Op::Arith(arith::ArithOp::IsSpace { dst, global: space }))
        }
        "mov" | "cvt" | "cvta" => convert::decode(base, modifiers, &operands, names).map(Op::Convert),
        "ld" | "st" | "atom" | "red" => memory_ops::decode(base, modifiers, &operands, names).map(Op::Memory),
        _ => arith::decode(base, modifiers, &operands, names)
            .map(Op::Arith)
            .map_err(|e| if e.is_empty() { format!("the instruction `{opcode}`") } else { e }),
    }
}

/// Splits operands at commas outside brackets and braces.
fn split_operands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '[' | '{' => {
                depth += 1;
                current.push(c);
            }
            ']' | '}' => {
                depth -= 1;
                current.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut current).trim().to_owned()),
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// A register or immediate operand of type `ty` (a shared variable's name gives its offset).
pub fn operand(text: &str, ty: Ty, names: &mut Names) -> Result<Operand, DecodeError> {
    if let Some(special) = special(text) {
        return Ok(Operand::Special(special));
    }
    if text.starts_with('%') {
        return Ok(Operand::Reg(names.register(text)));
    }
    if let Some(&offset) = names.shared.get(text).or_else(|| names.local.get(text)) {
        return Ok(Operand::Symbol(offset));
    }
    immediate(text, ty).map(Operand::Imm).ok_or_else(|| format!("the operand `{text}`"))
}

/// A destination register.
pub fn register(text: &str, names: &mut Names) -> Result<usize, DecodeError> {
    if text.starts_with('%') && special(text).is_none() {
        Ok(names.register(text))
    } else {
        Err(format!("`{text}` where a register is written"))
    }
}

fn special(text: &str) -> Option<Special> {
    let axis = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    let (name, dim) = text.split_once('.').unwrap_or((text, ""));
    Some(match name {
        "%tid" => Special::Tid(axis(dim)?),
        "%ntid" => Special::Ntid(axis(dim)?),
        "%ctaid" => Special::Ctaid(axis(dim)?),
        "%nctaid" => Special::Nctaid(axis(dim)?),
        "%laneid" if dim.is_empty() => Special::LaneId,
        "WARP_SZ" | "%warpsize" if dim.is_empty() => Special::WarpSize,
        _ => return None,
    })
}

/// An immediate's bits as type `ty` holds it: decimal (signed), hexadecimal (`0x`), octal
/// (`0` first), binary (`0b`), or a float's bits (`0f` + 8 hex digits, `0d` + 16); an integer
/// for a float type is converted.
pub fn immediate(text: &str, ty: Ty) -> Option<u64> {
    let text = text.trim_end_matches(['U', 'u']);
    if let Some(hex) = text.strip_prefix("0f").or_else(|| text.strip_prefix("0F")) {
        let bits = u32::from_str_radix(hex, 16).ok()?;
        return Some(match ty {
            Ty::F64 => f64::from(f32::from_bits(bits)).to_bits(),
            _ => u64::from(bits),
        });
    }
    if let Some(hex) = text.strip_prefix("0d").or_else(|| text.strip_prefix("0D")) {
        let bits = u64::from_str_radix(hex, 16).ok()?;
        return Some(match ty {
            Ty::F32 => u64::from((f64::from_bits(bits) as f32).to_bits()),
            _ => bits,
        });
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let magnitude = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = digits.strip_prefix("0b") {
        u64::from_str_radix(bin, 2).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse::<u64>().ok()?
    };
    let value = if negative { magnitude.wrapping_neg() } else { magnitude };
    Some(match ty {
        Ty::F32 => u64::from((value as i64 as f32).to_bits()),
        Ty::F64 => (value as i64 as f64).to_bits(),
        _ => value & ty.mask(),
    })
}

/// An address operand `[base]`, `[base+off]` or `[base+-off]` in state space `space`.
pub fn address(text: &str, space: Space, names: &mut Names) -> Result<(AddrBase, i64), DecodeError> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| format!("`{text}` where an address is read"))?
        .trim();
    let (base, offset) = match inner.find('+') {
        Some(plus) => {
            let off = inner[plus + 1..].trim();
            let value = immediate(off, Ty::S(64)).ok_or_else(|| format!("the offset `{off}`"))? as i64;
            (inner[..plus].trim(), value)
        }
        None => match inner.rfind('-').filter(|&i| i > 0) {
            Some(minus) => {
                let off = inner[minus + 1..].trim();
                let value = immediate(off, Ty::S(64)).ok_or_else(|| format!("the offset `{off}`"))? as i64;
                (inner[..minus].trim(), value.wrapping_neg())
            }
            None => (inner, 0),
        },
    };
    if base.starts_with('%') {
        return Ok((AddrBase::Reg(register(base, names)?), offset));
    }
    match space {
        Space::Param => names
            .params
            .get(base)
            .map(|&o| (AddrBase::Param(o), offset))
            .ok_or_else(|| format!("no parameter {base}")),
        Space::Local => names
            .local
            .get(base)
            .map(|&o| (AddrBase::Symbol(o), offset))
            .ok_or_else(|| format!("no local {base}")),
        Space::Shared => match names.shared.get(base) {
            Some(&o) => Ok((AddrBase::Symbol(o), offset)),
            None => immediate(base, Ty::U(64))
                .map(|a| (AddrBase::Imm(a), offset))
                .ok_or_else(|| format!("no shared {base}")),
        },
        Space::Global => immediate(base, Ty::U(64))
            .map(|a| (AddrBase::Imm(a), offset))
            .ok_or_else(|| format!("a global variable ({base}): not supported")),
    }
}
