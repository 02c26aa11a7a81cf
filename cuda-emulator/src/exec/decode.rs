//! Decoding an `.entry` body into [`Inst`]s, once, when its module is loaded.
//!
//! The body comes from the project's one PTX front end (`kernel_args_ptx`): its statements in
//! order with nested blocks opened, every register resolved to its declaration in scope
//! ([`kernel_args_ptx::flatten`]). Here each declared register gets a slot, the entry's
//! `.shared` and `.local` variables and the module's `.shared` and `.const` variables their
//! places (laid out as the PTX reader lays out shared memory, `.extern .shared` arrays at the
//! dynamic shared memory after them; the module's `.global` variables are at the device
//! addresses its load gives, [`module_globals`]), labels the index of the instruction after
//! them, and each instruction is decoded by its family. The `.func`s the entry calls, directly
//! or not, are decoded after it, each with registers, labels and `.param` places of its own.
//! An instruction (or a form of one) outside what this interpreter supports is refused with the
//! line and what is not supported: [`Unsupported`].

use std::collections::HashMap;

use kernel_args_ptx::{
    FlatItem, Function, FunctionKind, Immediate, Initializer, Instruction, Linkage, Operand, OperandKind,
    StateSpace, Variable, flatten,
};

use super::arith;
use super::convert;
use super::error::{DecodeError, Unsupported};
use super::memory_ops;
use super::operands::{Callee, Names, immediate_value, operand, register, ty};
use super::{Call, Inst, Op, Ty};
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
    // The entry, then every `.func` with a body it calls, directly or not, each once.
    let functions = called(module, function)?;
    let flats = functions
        .iter()
        .map(|f| flatten(f).map_err(|e| unsupported(e.line, DecodeError::Body(e))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = Names {
        slots: HashMap::new(),
        next_slot: 0,
        current: Vec::new(),
        params: HashMap::new(),
        shared: HashMap::new(),
        local: HashMap::new(),
        constant: HashMap::new(),
        global: globals.clone(),
        labels: HashMap::new(),
        frame: HashMap::new(),
        callees: HashMap::new(),
        in_callee: false,
    };
    let entry_params: HashMap<String, usize> = function
        .params
        .iter()
        .zip(&entry.params)
        .map(|(p, layout)| (p.name.clone(), layout.offset))
        .collect();
    // The places of variables: the functions' own, then the module's (which ptxas allocates
    // for the entries that use them); the module's constant memory. A `.param` variable of a
    // body (a call's arguments) is placed where its function's decoding meets it.
    let own: Vec<&Variable> = flats
        .iter()
        .flat_map(|flat| flat.items.iter())
        .filter_map(|item| match item {
            FlatItem::Variable(v) if v.space != StateSpace::Param => Some(*v),
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
    // Each function's first instruction, one after another; each callee's return values and
    // parameters, in the thread's local memory.
    let mut place = |size: u64, align: u64| -> Result<(u64, u64), DecodeError> {
        let at = local_end.checked_next_multiple_of(align.max(1)).ok_or(DecodeError::TooMuchMemory)?;
        local_end = at.checked_add(size).ok_or(DecodeError::TooMuchMemory)?;
        Ok((at, size))
    };
    let mut start = 0usize;
    let mut formals: Vec<Vec<(String, (u64, u64))>> = Vec::new();
    for (f, flat) in functions.iter().zip(&flats) {
        let mut own_formals = Vec::new();
        if f.kind == FunctionKind::Func {
            let mut callee = Callee { start, ..Callee::default() };
            for (i, p) in f.returns.iter().chain(&f.params).enumerate() {
                let refuse =
                    |why| unsupported(f.span.line, DecodeError::Call { callee: f.name.clone(), why });
                if p.space != StateSpace::Param {
                    return Err(refuse("a .reg parameter"));
                }
                let size = p.size().ok_or_else(|| refuse("a parameter without a size"))?;
                let at = place(size, p.alignment()).map_err(|e| unsupported(f.span.line, e))?;
                if i < f.returns.len() {
                    callee.returns.push(at)
                } else {
                    callee.params.push(at)
                }
                own_formals.push((p.name.clone(), at));
            }
            names.callees.insert(f.name.clone(), callee);
        }
        formals.push(own_formals);
        // Its instructions, and the `ret` its end is (below).
        start += flat.items.iter().filter(|item| matches!(item, FlatItem::Instruction(..))).count() + 1;
    }
    let mut insts = Vec::new();
    let mut has_barrier = false;
    for ((f, flat), own_formals) in functions.iter().zip(&flats).zip(formals) {
        // Names are the function's own: its registers, labels and parameters.
        names.slots.clear();
        names.in_callee = f.kind == FunctionKind::Func;
        names.params = if names.in_callee { HashMap::new() } else { entry_params.clone() };
        names.frame = own_formals.into_iter().collect();
        names.labels.clear();
        let mut count = insts.len();
        for item in &flat.items {
            match item {
                FlatItem::Label(l) => {
                    names.labels.insert(l.name.clone(), count);
                }
                FlatItem::Instruction(..) => count += 1,
                _ => {}
            }
        }
        for item in &flat.items {
            let (instruction, registers) = match item {
                FlatItem::Instruction(instruction, registers) => (instruction, registers),
                // A call's argument or return value: the thread's, from here on in its
                // function (a later one of the same name, in a later call's block, replaces it).
                FlatItem::Variable(v) if v.space == StateSpace::Param => {
                    let size = v.size().ok_or_else(|| {
                        unsupported(line_of(v), DecodeError::Unsized { name: v.name.clone() })
                    })?;
                    let at = place(size, v.alignment()).map_err(|e| unsupported(line_of(v), e))?;
                    names.frame.insert(v.name.clone(), at);
                    continue;
                }
                _ => continue,
            };
            names.current = registers.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect();
            let line = instruction.span.line;
            let refuse =
                |error| Unsupported { line: Some(line), statement: Some(one_line(instruction)), error };
            let guard = match &instruction.guard {
                Some(g) => Some((names.register(&g.register).map_err(refuse)?, !g.negated)),
                None => None,
            };
            let op = decode_instruction(instruction, &mut names).map_err(refuse)?;
            has_barrier |= matches!(op, Op::Barrier | Op::Warp(_));
            insts.push(Inst { guard, op, line: line as usize });
        }
        // A function that runs to the end of its body returns there, as if a `ret` ended it
        // (nvcc ends each with one); a label at the end is this `ret`.
        let end = if names.in_callee { Op::Return } else { Op::Exit };
        insts.push(Inst { guard: None, op: end, line: f.span.line as usize });
    }
    Ok(Program {
        name: entry.name.clone(),
        insts,
        slots: names.next_slot,
        shared_bytes: usize::try_from(shared_end).unwrap_or(usize::MAX),
        dynamic_at: usize::try_from(dynamic_at).unwrap_or(usize::MAX),
        local_bytes: usize::try_from(local_end).unwrap_or(usize::MAX),
        constant,
        has_barrier,
    })
}

/// `entry`, then every `.func` of `module` with a body that it calls, directly or through
/// others, each once, in the order first reached. Walked with a stack of its own, so a module
/// of many functions calling each other in a chain cannot exhaust the thread's stack.
///
/// # Errors
///
/// A recursive call, which one place per function cannot run: the call's line.
fn called<'m>(module: &'m PtxModule, entry: &'m Function) -> Result<Vec<&'m Function>, Unsupported> {
    let body = |name: &str| module.module.functions().find(|f| f.name == name && f.body.is_some());
    let mut out = vec![entry];
    // The functions on the path from the entry, each with the calls it has still to visit.
    let mut path: Vec<(&Function, std::vec::IntoIter<(&str, u32)>)> = vec![(entry, calls(entry).into_iter())];
    while let Some((_, pending)) = path.last_mut() {
        let Some((callee, line)) = pending.next() else {
            path.pop();
            continue;
        };
        // No body: refused, or a device assert, where the call is decoded.
        let Some(function) = body(callee) else { continue };
        if path.iter().any(|(f, _)| f.name == callee) {
            let error = DecodeError::Call { callee: callee.to_owned(), why: "recursive" };
            return Err(Unsupported { line: Some(line), statement: None, error });
        }
        if !out.iter().any(|f| f.name == callee) {
            out.push(function);
            path.push((function, calls(function).into_iter()));
        }
    }
    Ok(out)
}

/// The functions `function` calls by name, each with its call's line.
fn calls(function: &Function) -> Vec<(&str, u32)> {
    fn walk<'f>(block: &'f kernel_args_ptx::Block, out: &mut Vec<(&'f str, u32)>) {
        for statement in &block.statements {
            match statement {
                kernel_args_ptx::Statement::Instruction(i) if i.opcode == "call" => {
                    let callee = i.operands.iter().find_map(symbol);
                    out.extend(callee.map(|c| (c, i.span.line)));
                }
                kernel_args_ptx::Statement::Block(inner) => walk(inner, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    if let Some(body) = &function.body {
        walk(body, &mut out);
    }
    out
}

/// A list of symbols (`(param0, param1)`): their names.
fn symbol_list(o: &Operand) -> Option<Vec<&str>> {
    match &o.kind {
        OperandKind::List(items) => items.iter().map(symbol).collect(),
        _ => None,
    }
}

/// A symbol at offset 0: its name.
fn symbol(o: &Operand) -> Option<&str> {
    match &o.kind {
        OperandKind::Symbol { name, offset: 0 } => Some(name.as_str()),
        _ => None,
    }
}

/// `call` (`.uni` at most): to a `.func` of the entry's program, its arguments and return
/// values the caller's `.param` variables, one per callee's parameter and return value; or to
/// `__assertfail` without a body, a device assert.
fn decode_call(i: &Instruction, names: &Names) -> Result<Op, DecodeError> {
    let form = || DecodeError::Form { instruction: one_line(i) };
    if i.modifiers.iter().any(|m| m != "uni") {
        return Err(form());
    }
    let parts = match i.operands.as_slice() {
        [r, f, a] => (symbol_list(r), symbol(f), symbol_list(a)),
        [f, a] if matches!(a.kind, OperandKind::List(_)) => (Some(Vec::new()), symbol(f), symbol_list(a)),
        [r, f] if matches!(r.kind, OperandKind::List(_)) => (symbol_list(r), symbol(f), Some(Vec::new())),
        [f] => (Some(Vec::new()), symbol(f), Some(Vec::new())),
        _ => (None, None, None),
    };
    let (Some(returns), Some(callee), Some(arguments)) = parts else { return Err(form()) };
    let Some(target) = names.callees.get(callee) else {
        if callee == "__assertfail" {
            return Ok(Op::Assert);
        }
        return Err(DecodeError::Call { callee: callee.to_owned(), why: "no body in the module" });
    };
    if returns.len() != target.returns.len() || arguments.len() != target.params.len() {
        return Err(form());
    }
    let actual = |name: &str| {
        names
            .frame
            .get(name)
            .copied()
            .ok_or_else(|| DecodeError::NoVariable { space: "Param", name: name.to_owned() })
    };
    let as_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    let mut call = Call { target: target.start, arguments: Vec::new(), returns: Vec::new() };
    for (name, &(to, size)) in arguments.iter().zip(&target.params) {
        let (from, have) = actual(name)?;
        call.arguments.push((as_usize(from), as_usize(to), as_usize(have.min(size))));
    }
    for (name, &(from, size)) in returns.iter().zip(&target.returns) {
        let (to, have) = actual(name)?;
        call.returns.push((as_usize(from), as_usize(to), as_usize(have.min(size))));
    }
    Ok(Op::Call(call))
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
        "ret" if names.in_callee => Ok(Op::Return),
        "ret" | "exit" => Ok(Op::Exit),
        "call" => decode_call(i, names),
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
