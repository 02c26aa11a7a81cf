//! Decoding an `.entry` body into [`Inst`]s, once, when its module is loaded.
//!
//! The body comes from the project's one PTX front end (`kernel_args_ptx`): its statements in
//! order with nested blocks opened, every register resolved to its declaration in scope
//! ([`kernel_args_ptx::flatten`]). Here each declared register gets a slot, the entry's
//! `.shared` and `.local` variables and the module's `.shared` and `.const` variables their
//! places (laid out as the PTX reader lays out shared memory, `.extern .shared` arrays at the
//! dynamic shared memory after them; the module's `.global` variables are at the device
//! addresses its load gives, [`module_globals`]), labels the index of the instruction after them, and each
//! instruction is decoded by its family. An instruction (or a form of one) outside what this
//! interpreter supports is refused with the line and what is not supported: [`Unsupported`].

use std::collections::HashMap;

use kernel_args_ptx::{
    FlatItem, Immediate, Initializer, Instruction, Linkage, OperandKind, StateSpace, Variable, flatten,
};

use super::arith;
use super::convert;
use super::error::{DecodeError, Unsupported};
use super::memory_ops;
use super::operands::{Names, immediate_value, operand, register, ty};
use super::{Inst, Op, Ty};
use crate::ptx::{PtxEntry, PtxModule};

/// A kernel, decoded: what [`Program::run`](super::Program::run) interprets.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The entry's name.
    pub(crate) name: String,
    /// The instructions, in order; a branch names an index.
    pub(crate) insts: Vec<Inst>,
    /// Registers per thread.
    pub(crate) slots: usize,
    /// Bytes of static shared memory.
    pub(crate) shared_bytes: usize,
    /// Where dynamic shared memory starts (`.extern .shared`): after the static declarations,
    /// aligned to 16 or to its declarations' largest alignment.
    pub(crate) dynamic_at: usize,
    /// Bytes of local memory per thread (`.local` declarations).
    pub(crate) local_bytes: usize,
    /// The module's constant memory (its `.const` variables with their initializers).
    pub(crate) constant: Vec<u8>,
    /// Whether the kernel synchronises its block (`bar.sync`) or a warp (`shfl.sync`,
    /// `vote.sync`): its threads then run in turns.
    pub(crate) has_barrier: bool,
}

/// Variables laid out one after another: each at the next multiple of its alignment.
fn lay_out<'v>(
    variables: impl Iterator<Item = &'v Variable>,
    end: &mut u64,
    into: &mut HashMap<String, u64>,
) -> Result<(), DecodeError> {
    for v in variables {
        let size = v.size().ok_or_else(|| DecodeError::Unsized { name: v.name.clone() })?;
        let at = end.checked_next_multiple_of(v.alignment().max(1)).ok_or(DecodeError::TooMuchMemory)?;
        into.insert(v.name.clone(), at);
        *end = at.checked_add(size).ok_or(DecodeError::TooMuchMemory)?;
    }
    Ok(())
}

/// Decodes kernel `entry` of `module` (an entry that [`read_ptx`](crate::ptx::read_ptx) read
/// from it), the module's `.global` variables at the device addresses in `globals` (where the
/// module's load placed [`Globals::image`]; empty for a module without them).
///
/// # Errors
///
/// [`Unsupported`]: the line of the first statement this interpreter does not run (or cannot
/// place), and what of it; [`DecodeError::NoBody`] for an entry `module` does not define.
pub fn compile(
    module: &PtxModule,
    entry: &PtxEntry,
    globals: &HashMap<String, u64>,
) -> Result<Program, Unsupported> {
    let unsupported =
        |line: u32, error: DecodeError| Unsupported { line: Some(line), statement: None, error };
    let function = module.module.entry(&entry.name).ok_or_else(|| Unsupported {
        line: None,
        statement: None,
        error: DecodeError::NoBody { entry: entry.name.clone() },
    })?;
    let flat = flatten(function).map_err(|e| unsupported(e.line, DecodeError::Body(e)))?;
    let mut names = Names {
        slots: HashMap::new(),
        current: Vec::new(),
        params: function
            .params
            .iter()
            .zip(&entry.params)
            .map(|(p, layout)| (p.name.clone(), layout.offset))
            .collect(),
        shared: HashMap::new(),
        local: HashMap::new(),
        constant: HashMap::new(),
        global: globals.clone(),
        labels: HashMap::new(),
    };
    // The places of variables: the entry's own, then the module's (which ptxas allocates for
    // the entries that use them); the module's constant memory.
    let own: Vec<&Variable> = flat
        .items
        .iter()
        .filter_map(|item| match item {
            FlatItem::Variable(v) => Some(*v),
            _ => None,
        })
        .collect();
    let line_of = |v: &Variable| v.span.line;
    let (mut shared_end, mut local_end, mut constant_end) = (0u64, 0u64, 0u64);
    let dynamic = |v: &&Variable| v.space == StateSpace::Shared && v.linkage == Some(Linkage::Extern);
    let static_shared = |v: &&Variable| v.space == StateSpace::Shared && v.linkage != Some(Linkage::Extern);
    for v in &own {
        if !matches!(v.space, StateSpace::Shared | StateSpace::Local) {
            return Err(unsupported(line_of(v), DecodeError::VariableSpace { space: v.space.name() }));
        }
    }
    let module_vars: Vec<&Variable> = module.module.variables().collect();
    lay_out(
        own.iter().copied().filter(static_shared).chain(module_vars.iter().copied().filter(static_shared)),
        &mut shared_end,
        &mut names.shared,
    )
    .map_err(|e| unsupported(function.span.line, e))?;
    lay_out(
        own.iter()
            .copied()
            .filter(|v| v.space == StateSpace::Local)
            .chain(module_vars.iter().copied().filter(|v| v.space == StateSpace::Local)),
        &mut local_end,
        &mut names.local,
    )
    .map_err(|e| unsupported(function.span.line, e))?;
    let constants: Vec<&Variable> =
        module_vars.iter().copied().filter(|v| v.space == StateSpace::Const).collect();
    lay_out(constants.iter().copied(), &mut constant_end, &mut names.constant)
        .map_err(|e| unsupported(function.span.line, e))?;
    // The dynamic shared memory starts at a multiple of 16, or of the largest alignment its
    // declarations ask for, as ptxas places it.
    let dynamic_align = own
        .iter()
        .copied()
        .filter(dynamic)
        .chain(module_vars.iter().copied().filter(dynamic))
        .map(|v| v.alignment())
        .fold(16, u64::max);
    let dynamic_at = shared_end.next_multiple_of(dynamic_align);
    for v in own.iter().copied().filter(dynamic).chain(module_vars.iter().copied().filter(dynamic)) {
        names.shared.insert(v.name.clone(), dynamic_at);
    }
    let mut constant = vec![0u8; usize::try_from(constant_end).unwrap_or(0)];
    initialize(&constants, &names.constant, &mut constant)?;
    // Labels: the index of the next instruction.
    let mut count = 0usize;
    for item in &flat.items {
        match item {
            FlatItem::Label(l) => {
                names.labels.insert(l.name.clone(), count);
            }
            FlatItem::Instruction(..) => count += 1,
            _ => {}
        }
    }
    let mut insts = Vec::new();
    let mut has_barrier = false;
    for item in &flat.items {
        let FlatItem::Instruction(instruction, registers) = item else { continue };
        names.current = registers.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect();
        let line = instruction.span.line;
        let refuse = |error| Unsupported { line: Some(line), statement: Some(one_line(instruction)), error };
        let guard = match &instruction.guard {
            Some(g) => Some((names.register(&g.register).map_err(refuse)?, !g.negated)),
            None => None,
        };
        let op = decode_instruction(instruction, &mut names).map_err(refuse)?;
        has_barrier |= matches!(op, Op::Barrier | Op::Warp(_));
        insts.push(Inst { guard, op, line: line as usize });
    }
    Ok(Program {
        name: entry.name.clone(),
        insts,
        slots: names.slots.len(),
        shared_bytes: usize::try_from(shared_end).unwrap_or(usize::MAX),
        dynamic_at: usize::try_from(dynamic_at).unwrap_or(usize::MAX),
        local_bytes: usize::try_from(local_end).unwrap_or(usize::MAX),
        constant,
        has_barrier,
    })
}

/// Writes the initializers of `variables` into `bytes`, each at its place in `places`.
fn initialize(
    variables: &[&Variable],
    places: &HashMap<String, u64>,
    bytes: &mut [u8],
) -> Result<(), Unsupported> {
    let unsupported = |v: &Variable, error| Unsupported { line: Some(v.span.line), statement: None, error };
    for v in variables {
        let Some(init) = &v.init else { continue };
        let at = places.get(&v.name).copied().unwrap_or(0) as usize;
        let element = v.ty.size().unwrap_or(1) as usize;
        let ty = decl_ty(v).ok_or_else(|| unsupported(v, DecodeError::ConstantType))?;
        let mut values = Vec::new();
        flatten_init(init, &mut values);
        for (i, value) in values.iter().enumerate() {
            let bits = immediate_value(value, ty).ok_or_else(|| unsupported(v, DecodeError::Initializer))?;
            let start = at + i * element;
            let Some(slot) = bytes.get_mut(start..start + element) else {
                return Err(unsupported(v, DecodeError::InitializerTooLong));
            };
            slot.copy_from_slice(&bits.to_le_bytes()[..element]);
        }
    }
    Ok(())
}

/// A module's `.global` variables: their bytes as the module's load places them in one device
/// allocation (initialized, zeros where a variable has no initializer), and each variable's
/// offset in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Globals {
    /// The variables' bytes, laid out one after another at their alignments.
    pub image: Vec<u8>,
    /// Each variable's offset in [`image`](Self::image), by name.
    pub offsets: HashMap<String, u64>,
}

impl Globals {
    /// Each variable's device address, the image placed at `base`.
    pub fn addresses(&self, base: u64) -> HashMap<String, u64> {
        self.offsets.iter().map(|(name, &offset)| (name.clone(), base.wrapping_add(offset))).collect()
    }
}

/// Lays out and initializes the `.global` variables `module` defines. A `.global` variable it
/// only declares (`.extern`) is defined in another module, which the emulated driver does not
/// link: refused with its line.
///
/// # Errors
///
/// [`Unsupported`]: the variable's line, and what of it.
pub fn module_globals(module: &PtxModule) -> Result<Globals, Unsupported> {
    let variables: Vec<&Variable> =
        module.module.variables().filter(|v| v.space == StateSpace::Global).collect();
    if let Some(v) = variables.iter().find(|v| v.linkage == Some(Linkage::Extern)) {
        return Err(Unsupported {
            line: Some(v.span.line),
            statement: None,
            error: DecodeError::ExternGlobal { name: v.name.clone() },
        });
    }
    let mut globals = Globals::default();
    let mut end = 0u64;
    let line = variables.first().map_or(0, |v| v.span.line);
    lay_out(variables.iter().copied(), &mut end, &mut globals.offsets).map_err(|error| Unsupported {
        line: Some(line),
        statement: None,
        error,
    })?;
    globals.image = vec![0u8; usize::try_from(end).unwrap_or(0)];
    initialize(&variables, &globals.offsets, &mut globals.image)?;
    Ok(globals)
}

/// An instruction as one line without its `;`.
fn one_line(instruction: &Instruction) -> String {
    instruction.to_string().trim_end_matches(';').replace('\t', " ")
}

/// An initializer's values in order.
fn flatten_init<'i>(init: &'i Initializer, out: &mut Vec<&'i Immediate>) {
    match init {
        Initializer::Value(v) => out.push(v),
        Initializer::List(items) => {
            for item in items {
                flatten_init(item, out);
            }
        }
    }
}

/// The interpreter's type of a variable's element.
fn decl_ty(v: &Variable) -> Option<Ty> {
    ty(v.ty.name())
}

/// An instruction: by its opcode, the family that decodes it.
fn decode_instruction(i: &Instruction, names: &mut Names) -> Result<Op, DecodeError> {
    let base = i.opcode.as_str();
    let modifiers: Vec<&str> = i.modifiers.iter().map(String::as_str).collect();
    let operands = i.operands.as_slice();
    match base {
        "ret" | "exit" => Ok(Op::Exit),
        "trap" | "brkpt" if operands.is_empty() => Ok(Op::Trap),
        "bra" => match operands.first().map(|o| &o.kind) {
            Some(OperandKind::Symbol { name, offset: 0 }) => names
                .labels
                .get(name)
                .map(|&i| Op::Branch(i))
                .ok_or_else(|| DecodeError::NoLabel { label: name.clone() }),
            _ => Err(DecodeError::BranchTarget),
        },
        "bar" if modifiers == ["warp", "sync"] => {
            super::warp::decode(base, &modifiers, operands, names).map(Op::Warp)
        }
        "bar" | "barrier" => {
            let whole_block = operands.len() == 1
                && matches!(operands[0].kind, OperandKind::Immediate(Immediate::Int(0)))
                && modifiers.iter().all(|m| matches!(*m, "sync" | "aligned"));
            if whole_block { Ok(Op::Barrier) } else { Err(DecodeError::Barrier { instruction: one_line(i) }) }
        }
        "shfl" | "vote" if modifiers.first() == Some(&"sync") => {
            super::warp::decode(base, &modifiers, operands, names).map(Op::Warp)
        }
        "wmma" => Ok(match super::matrix::decode(&modifiers, operands, names)? {
            super::matrix::Decoded::Mma(mma) => Op::Warp(super::warp::WarpOp::Mma(mma)),
            super::matrix::Decoded::Memory(memory) => Op::Matrix(memory),
        }),
        "isspacep" => {
            let space = match modifiers.as_slice() {
                ["global"] => arith::AddressSpace::Global,
                ["shared" | "shared::cta"] => arith::AddressSpace::Shared,
                ["local"] => arith::AddressSpace::Local,
                ["const" | "param"] => arith::AddressSpace::Other,
                _ => {
                    return Err(DecodeError::Form {
                        instruction: format!("isspacep.{}", modifiers.join(".")),
                    });
                }
            };
            if operands.len() != 2 {
                return Err(DecodeError::OperandCount { opcode: base.to_owned(), count: operands.len() });
            }
            let dst = register(&operands[0], names)?;
            let a = operand(&operands[1], Ty::U(64), names)?;
            Ok(Op::Arith(arith::ArithOp::IsSpace { dst, space, a }))
        }
        "mov" | "cvt" | "cvta" => convert::decode(base, &modifiers, operands, names).map(Op::Convert),
        // `ldu`: a load (of a value the same for every thread of the warp, which is a hint).
        "ld" | "ldu" | "st" | "atom" | "red" => {
            memory_ops::decode(base, &modifiers, operands, names).map(Op::Memory)
        }
        "cp" => memory_ops::decode_copy(&modifiers, operands, names).map(Op::Memory),
        _ => arith::decode(base, &modifiers, operands, names).map(Op::Arith),
    }
}
