//! Walks of a parsed function body and the small edits the lowering passes share
//! (`lower.rs`, `printf.rs`): visiting its instructions, what an instruction writes, removing
//! moves nothing reads. A leaf: it knows the PTX syntax tree and nothing of the fence.

use std::collections::BTreeSet;

use kernel_args_ptx::{Block, Instruction, Operand, OperandKind, Statement};

/// Removes, to a fixed point, each `mov` or `cvta` whose destination (one register) no
/// instruction of `body` reads.
pub(super) fn remove_dead_moves(body: &mut Block) {
    remove_dead(body, &is_move);
}

/// Removes, to a fixed point, each instruction `pure` approves (one that writes one register and
/// nothing else) whose destination no instruction of `body` reads.
pub(super) fn remove_dead(body: &mut Block, pure: &dyn Fn(&Instruction) -> bool) {
    loop {
        let mut read = BTreeSet::new();
        for_each_instruction(body, &mut |i| {
            if let Some(guard) = &i.guard {
                read.insert(guard.register.clone());
            }
            let skip_first = pure(i);
            for (index, operand) in i.operands.iter().enumerate() {
                if !(skip_first && index == 0) {
                    read.extend(operand.registers().into_iter().map(str::to_owned));
                }
            }
        });
        if !retain_instructions(body, &|i| !pure(i) || destination(i).is_none_or(|d| read.contains(d))) {
            return;
        }
    }
}

/// Whether `i` is a `mov` or a `cvta` to one register: a pure definition of it.
pub(super) fn is_move(i: &Instruction) -> bool {
    matches!(i.opcode.as_str(), "mov" | "cvta") && destination(i).is_some()
}

/// The register operand 0 names, where it is one whole register.
pub(super) fn destination(i: &Instruction) -> Option<&str> {
    i.operands.first()?.register().filter(|r| r.component.is_none()).map(|r| r.name.as_str())
}

/// Keeps the instructions of `block` (at any depth) that `keep` approves: whether any went.
pub(super) fn retain_instructions(block: &mut Block, keep: &dyn Fn(&Instruction) -> bool) -> bool {
    let before = block.statements.len();
    block.statements.retain(|s| !matches!(s, Statement::Instruction(i) if !keep(i)));
    let mut removed = block.statements.len() != before;
    for statement in &mut block.statements {
        if let Statement::Block(inner) = statement {
            removed |= retain_instructions(inner, keep);
        }
    }
    removed
}

/// Calls `f` on every instruction of `block`, at any depth.
pub(super) fn for_each_instruction(block: &Block, f: &mut dyn FnMut(&Instruction)) {
    for statement in &block.statements {
        match statement {
            Statement::Instruction(i) => f(i),
            Statement::Block(inner) => for_each_instruction(inner, f),
            _ => {}
        }
    }
}

/// The names of the `.local` variables `body` declares at its top level (nvcc's frame).
pub(super) fn local_variables(body: &Block) -> Vec<String> {
    body.statements
        .iter()
        .filter_map(|s| match s {
            Statement::Variable(v) if v.space == kernel_args_ptx::StateSpace::Local => Some(v.name.clone()),
            _ => None,
        })
        .collect()
}

/// The registers an instruction writes, where its operand 0 is a destination: a register, a
/// vector of them or a pair (`%p|%q`). An address (a store's) is not.
pub(super) fn defines(i: &Instruction) -> Vec<&str> {
    match i.operands.first().map(|o| &o.kind) {
        Some(OperandKind::Register(_) | OperandKind::Vector(_) | OperandKind::Pair(..)) => {
            i.operands.first().map(Operand::registers).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Calls `f` on every instruction of `block`, at any depth, mutably.
pub(super) fn for_each_instruction_mut(block: &mut Block, f: &mut dyn FnMut(&mut Instruction)) {
    for statement in &mut block.statements {
        match statement {
            Statement::Instruction(i) => f(i),
            Statement::Block(inner) => for_each_instruction_mut(inner, f),
            _ => {}
        }
    }
}

/// How many register declarations of `block` (its nested blocks' too) declare `name`: where it
/// is one, the name is that register wherever it is written (no nested block shadows it).
pub(super) fn declarations_of(block: &Block, name: &str) -> usize {
    let mut count = 0usize;
    for statement in &block.statements {
        match statement {
            Statement::Registers(r) => {
                for n in &r.names {
                    let declares = match n.count {
                        None => n.name == name,
                        // `%r<N>`: `%r0` ... `%r{N-1}`, written without leading zeros.
                        Some(c) => name.strip_prefix(n.name.as_str()).is_some_and(|digits| {
                            (digits == "0" || !digits.starts_with('0'))
                                && digits.parse::<u32>().is_ok_and(|k| k < c)
                                && digits.bytes().all(|b| b.is_ascii_digit())
                        }),
                    };
                    count = count.saturating_add(usize::from(declares));
                }
            }
            Statement::Block(inner) => count = count.saturating_add(declarations_of(inner, name)),
            _ => {}
        }
    }
    count
}
