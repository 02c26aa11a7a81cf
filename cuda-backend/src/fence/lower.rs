//! What the fence lowers before it rewrites: forms nvcc emits for ordinary CUDA code that have a
//! fenced equivalent, each replaced in the parsed module (never in text).
//!
//! - **Device-side `assert`.** nvcc compiles a failing `assert` to a call sequence ending in
//!   `call.uni __assertfail, (...)` on the `.extern .func __assertfail` the CUDA runtime supplies;
//!   on a GPU it prints its message and traps (sticky error 710). The whole call sequence (a
//!   nested block of `.param` declarations, the `st.param` stores of the arguments and the call,
//!   nothing else) becomes `trap`, which the rewriter turns into the flag and the fence's exit:
//!   the thread stops, the launch reports it, and the context survives. The message is not
//!   printed.
//! - **Address moves nothing reads.** Once an assert's call is gone, the moves that formed its
//!   arguments' addresses (`mov.u64 %rd, $str;` and the `cvta` after it) have no reader; a
//!   `mov` or `cvta` whose destination no instruction reads is removed, to a fixed point, in the
//!   entries whose asserts were lowered.
//! - **Module-scope variables and declarations nothing names.** A `.global` or `.const`
//!   variable (not a texture, sampler or surface handle: those are refused by name), or a `.func` declaration without a body, that no instruction of the module names
//!   is dropped: a kernel cannot reach a variable it does not name (PTX initializers hold
//!   numbers only), so nothing is lost, and the strings of lowered asserts and the tables the
//!   CUDA headers leave in every module (libcu++'s `cuda::std::ignore`, for one) go with them.
//!
//! Whatever remains is the rewriter's to accept or refuse by name: a used `__device__` variable
//! is still [`FenceRefusal::ModuleGlobal`](super::FenceRefusal::ModuleGlobal), a call to
//! anything but `__assertfail` (`vprintf` among them) still
//! [`FenceRefusal::Call`](super::FenceRefusal::Call).

use std::collections::BTreeSet;

use kernel_args_ptx::{
    AddressBase, Block, FunctionKind, Instruction, Item, Linkage, Module, OperandKind, StateSpace, Statement,
    Type,
};

/// The CUDA runtime's assertion handler, which nvcc calls for a failing `assert`.
const ASSERT_FAIL: &str = "__assertfail";

/// What [`lower`] did to a module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Lowered {
    /// Assert call sequences replaced by `trap`.
    pub asserts: usize,
    /// Module-scope variables and function declarations dropped.
    pub dropped: usize,
}

/// Lowers `module` in place (see the module's documentation).
pub(super) fn lower(module: &mut Module) -> Lowered {
    let mut lowered = Lowered::default();
    let assert_declared = module.items.iter().any(|item| {
        matches!(item, Item::Function(f)
            if f.name == ASSERT_FAIL && f.kind == FunctionKind::Func && f.body.is_none()
                && f.linkage == Some(Linkage::Extern))
    });
    if assert_declared {
        for item in &mut module.items {
            if let Item::Function(f) = item
                && let Some(body) = &mut f.body
            {
                let asserts = lower_asserts(body);
                if asserts > 0 {
                    lowered.asserts = lowered.asserts.saturating_add(asserts);
                    remove_dead_moves(body);
                }
            }
        }
    }
    // Every symbol an instruction names, in every function.
    let mut named = BTreeSet::new();
    for item in &module.items {
        if let Item::Function(f) = item
            && let Some(body) = &f.body
        {
            for_each_instruction(body, &mut |i| {
                for operand in &i.operands {
                    named.extend(operand.symbols().into_iter().map(str::to_owned));
                }
            });
        }
    }
    let before = module.items.len();
    module.items.retain(|item| match item {
        // Texture, sampler and surface handles stay, for the rewriter to refuse by name.
        Item::Variable(v) => {
            !matches!(v.space, StateSpace::Global | StateSpace::Const)
                || matches!(v.ty, Type::TexRef | Type::SamplerRef | Type::SurfRef)
                || named.contains(&v.name)
        }
        Item::Function(f) => f.body.is_some() || f.kind != FunctionKind::Func || named.contains(&f.name),
        Item::Pragma(_) => true,
    });
    lowered.dropped = before.saturating_sub(module.items.len());
    lowered
}

/// Replaces each call sequence of `__assertfail` in `block` (at any depth) with `trap`: how many.
fn lower_asserts(block: &mut Block) -> usize {
    let mut count = 0usize;
    for statement in &mut block.statements {
        let Statement::Block(inner) = statement else { continue };
        if let Some(call) = assert_call(inner) {
            let trap = Instruction {
                span: call.span,
                guard: call.guard.clone(),
                opcode: "trap".to_owned(),
                modifiers: Vec::new(),
                operands: Vec::new(),
            };
            *statement = Statement::Instruction(trap);
            count = count.saturating_add(1);
        } else {
            count = count.saturating_add(lower_asserts(inner));
        }
    }
    count
}

/// The call of `block` when `block` is exactly an assert's call sequence: register and `.param`
/// declarations, `st.param` stores into those parameters, and one `call` of `__assertfail`
/// whose every argument is one of them.
fn assert_call(block: &Block) -> Option<&Instruction> {
    let mut params = BTreeSet::new();
    let mut call = None;
    for statement in &block.statements {
        match statement {
            Statement::Registers(_) => {}
            Statement::Variable(v) if v.space == StateSpace::Param && v.init.is_none() => {
                params.insert(v.name.as_str());
            }
            Statement::Instruction(i) if i.opcode == "st" && i.has("param") && i.guard.is_none() => {
                let into_own = matches!(i.operands.first().map(|o| &o.kind),
                    Some(OperandKind::Address(a)) if matches!(&a.base, AddressBase::Symbol(s) if params.contains(s.as_str())));
                if !into_own {
                    return None;
                }
            }
            Statement::Instruction(i) if i.opcode == "call" && call.is_none() => {
                if i.modifiers.iter().any(|m| m != "uni") {
                    return None;
                }
                let [callee, arguments] = i.operands.as_slice() else { return None };
                let OperandKind::Symbol { name, offset: 0 } = &callee.kind else { return None };
                let OperandKind::List(arguments) = &arguments.kind else { return None };
                let own = arguments.iter().all(|a| {
                    matches!(&a.kind, OperandKind::Symbol { name, offset: 0 } if params.contains(name.as_str()))
                });
                if name != ASSERT_FAIL || !own {
                    return None;
                }
                call = Some(i);
            }
            _ => return None,
        }
    }
    call
}

/// Removes, to a fixed point, each `mov` or `cvta` whose destination (one register) no
/// instruction of `body` reads.
fn remove_dead_moves(body: &mut Block) {
    loop {
        let mut read = BTreeSet::new();
        for_each_instruction(body, &mut |i| {
            if let Some(guard) = &i.guard {
                read.insert(guard.register.clone());
            }
            let skip_first = is_move(i);
            for (index, operand) in i.operands.iter().enumerate() {
                if !(skip_first && index == 0) {
                    read.extend(operand.registers().into_iter().map(str::to_owned));
                }
            }
        });
        if !retain_instructions(body, &|i| !is_move(i) || destination(i).is_none_or(|d| read.contains(d))) {
            return;
        }
    }
}

/// Whether `i` is a `mov` or a `cvta` to one register: a pure definition of it.
fn is_move(i: &Instruction) -> bool {
    matches!(i.opcode.as_str(), "mov" | "cvta") && destination(i).is_some()
}

/// The register operand 0 names, where it is one whole register.
fn destination(i: &Instruction) -> Option<&str> {
    i.operands.first()?.register().filter(|r| r.component.is_none()).map(|r| r.name.as_str())
}

/// Keeps the instructions of `block` (at any depth) that `keep` approves: whether any went.
fn retain_instructions(block: &mut Block, keep: &dyn Fn(&Instruction) -> bool) -> bool {
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
fn for_each_instruction(block: &Block, f: &mut dyn FnMut(&Instruction)) {
    for statement in &block.statements {
        match statement {
            Statement::Instruction(i) => f(i),
            Statement::Block(inner) => for_each_instruction(inner, f),
            _ => {}
        }
    }
}
