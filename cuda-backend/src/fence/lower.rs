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
//! - **Read-only tables in constant memory.** A module-scope `.global` variable that the module
//!   only reads (the math library's `__cudart_i2opi_f`, which `sinf` and `cosf` without fast
//!   math reduce large arguments with; a lookup table) moves to `.const`, where the fence's
//!   constant window covers it, and its loads become `ld.const`. "Only reads" is shown, not
//!   assumed: every instruction that names the variable is `mov` of its address into a register
//!   or an `ld.global` of it; every register holding such an address is defined only by those
//!   moves and by `add`/`sub` of an offset to another such register; and such a register is
//!   used only as the address of an `ld.global` (or `ldu.global`), in a comparison, or to form
//!   another. Anything else (a store, an atomic, `cvta` to a generic pointer, an address passed
//!   on) leaves every table of the module in global memory, for the next step. The constant
//!   space's 64 KiB is respected.
//! - **The module's variables at the start of the fence.** The `.global` variables left (the
//!   `__device__` variables a kernel writes, or whose address it takes or passes on) are laid
//!   out at the start of the fence, in the module's order, each aligned to 16 (at least its
//!   own alignment), their initializers written into the bytes a launch begins with
//!   ([`FencedModule::variables`](super::FencedModule::variables)); each name becomes its
//!   offset there, as every global address of a fenced kernel is an offset into its fence:
//!   `mov.u64 %r, v+k` and `cvta.global.u64 %r, v+k` become `mov.u64 %r, offset`, and an access
//!   at `[v+k]` (global or generic) one at `[offset]`, which the rewriter clamps as any other.
//!   So a variable is inside the fence by construction, and its address tells a guest nothing
//!   of the host. All of them or none: a variable declared `.extern`, the variables past 1 MiB
//!   together ([`MAX_MODULE_VARIABLES`]), an initializer this does not write (a decimal float,
//!   an integer for a float type), or a name used in another form (a 32-bit `mov`, another
//!   state space) leaves them all in global memory, for the rewriter to refuse by name
//!   ([`FenceRefusal::ModuleGlobal`](super::FenceRefusal::ModuleGlobal)). The launcher keeps
//!   each guest's copy of those bytes, per kernel and registration, and copies it into the
//!   start of a staged launch's arena and back after the kernel (`crate::launcher`).
//! - **Calls of the module's own device functions** are inlined first (`inline.rs`): the call
//!   sequence becomes the callee's body, renamed, in the caller.
//! - **Device-side `printf`.** Each call sequence of `vprintf` whose format is a string of the
//!   module that `printf.rs` reads becomes the writing of a record into the launch's print
//!   buffer, a variable the fence adds (`printf.rs`); the strings and the runtime's declaration
//!   then go with the other names nothing uses. Where the module's variables cannot be placed
//!   (below), nothing of this is done, and the calls are refused as calls. The frame's accesses
//!   (next) are named before, so that a record can take the arguments from the registers the
//!   kernel stored into its depot.
//! - **Local accesses through the frame pointer.** nvcc addresses a thread's local variables
//!   (its `__local_depotN`) through registers: `mov.u64 %SPL, __local_depot0;`, then
//!   `add.u64 %rd4, %SPL, 8;` and `st.local.u32 [%rd4+4], %r1;`. Where each register of such a
//!   chain has one definition in the function, unguarded (a `mov` of the variable's address or
//!   of another such register, an `add` of a constant to one; a write as part of a vector or a
//!   pair counts as a definition), a `.local` load or store through it names the variable
//!   instead: `st.local.u32 [__local_depot0+12], %r1;`. The rewriter leaves a named access that
//!   lies inside its variable as it is and clamps any other, and the checker proves either, so
//!   the naming only spares the clamp (a use of such a register before its definition reads an
//!   undefined value in the kernel as written; named, it reads the variable).
//! - **Module-scope variables and functions nothing names.** A `.global` or `.const`
//!   variable (not a texture, sampler or surface handle: those are refused by name), or a
//!   `.func` (a declaration, or a body no call is left to run), that no instruction of the
//!   module names is dropped: a kernel cannot reach a variable it does not name (PTX initializers hold
//!   numbers only), so nothing is lost, and the strings of lowered asserts and the tables the
//!   CUDA headers leave in every module (libcu++'s `cuda::std::ignore`, for one) go with them.
//!
//! Whatever remains is the rewriter's to accept or refuse by name: a call to anything but
//! `__assertfail`, and of `vprintf` with a format `printf.rs` does not read, is still
//! [`FenceRefusal::Call`](super::FenceRefusal::Call).

use std::collections::{BTreeMap, BTreeSet};

use super::body::{defines, destination, for_each_instruction, for_each_instruction_mut, remove_dead_moves};
use super::printf::PrintBuffer;

use kernel_args_ptx::{
    Address, AddressBase, Block, FunctionKind, Immediate, Initializer, Instruction, Item, Linkage, Module,
    Operand, OperandKind, StateSpace, Statement, Type,
};

/// The CUDA runtime's assertion handler, which nvcc calls for a failing `assert`.
const ASSERT_FAIL: &str = "__assertfail";

/// What [`lower`] did to a module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Lowered {
    /// Calls of the module's own `.func` bodies inlined (`inline.rs`).
    pub inlined: usize,
    /// Assert call sequences replaced by `trap`.
    pub asserts: usize,
    /// `.local` loads and stores through the frame pointer that now name the frame.
    pub named: usize,
    /// Module-scope variables and function declarations dropped.
    pub dropped: usize,
    /// Read-only `.global` tables moved to `.const`.
    pub tables: usize,
    /// The bytes of the module-scope `.global` variables placed at the start of the fence, as a
    /// launch begins (empty where there are none).
    pub variables: Vec<u8>,
    /// The print buffer among them, where `printf` calls were rewritten (`printf.rs`).
    pub print: Option<PrintBuffer>,
}

/// Lowers `module` in place (see the module's documentation).
pub(super) fn lower(module: &mut Module) -> Lowered {
    // Only a module whose `printf`s may be rewritten can be lowered a second time (below): the
    // copy that takes is kept for it alone.
    let original = super::printf::declares_vprintf(module).then(|| module.clone());
    let lowered = lower_with(module, true);
    // Where the module's variables could not be placed, its `printf`s are not rewritten either
    // (their print buffer is one of those variables): the module as the rewriter will refuse it.
    let unplaced =
        module.items.iter().any(|item| matches!(item, Item::Variable(v) if v.space == StateSpace::Global));
    if let Some(original) = original
        && lowered.print.is_some()
        && unplaced
    {
        *module = original;
        return lower_with(module, false);
    }
    lowered
}

fn lower_with(module: &mut Module, printf: bool) -> Lowered {
    let mut lowered = Lowered { inlined: super::inline::inline_calls(module), ..Lowered::default() };
    // Frame accesses named first: a `printf` record then reads the arguments the kernel stored
    // into its depot from the registers it stored (`printf.rs`).
    for item in &mut module.items {
        if let Item::Function(f) = item
            && let Some(body) = &mut f.body
        {
            lowered.named = lowered.named.saturating_add(name_frame_accesses(body));
        }
    }
    let formats = if printf { super::printf::lower_printf(module) } else { None };
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
    // Every symbol an instruction names, in every function; to a fixed point, since a `.func`
    // dropped here may have named another.
    let before = module.items.len();
    loop {
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
        let count = module.items.len();
        module.items.retain(|item| match item {
            // Texture, sampler and surface handles stay, for the rewriter to refuse by name.
            Item::Variable(v) => {
                !matches!(v.space, StateSpace::Global | StateSpace::Const)
                    || matches!(v.ty, Type::TexRef | Type::SamplerRef | Type::SurfRef)
                    || named.contains(&v.name)
            }
            // A `.func` (a body or a declaration) no instruction names: no call can run it.
            Item::Function(f) => f.kind != FunctionKind::Func || named.contains(&f.name),
            Item::Pragma(_) => true,
        });
        if module.items.len() == count {
            break;
        }
    }
    lowered.dropped = before.saturating_sub(module.items.len());
    lowered.tables = place_read_only_tables(module);
    if let Some((variables, at)) = place_module_variables(module) {
        lowered.variables = variables;
        lowered.print = formats
            .zip(at.get(super::printf::PRINT_VARIABLE))
            .map(|(formats, &at)| PrintBuffer { at: usize::try_from(at).unwrap_or(usize::MAX), formats });
    }
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

/// The constant space a module may declare (the driver's limit for one module's `.const`).
const CONST_SPACE: u64 = 64 * 1024;

/// Moves the module's read-only `.global` tables to `.const` (see the module's documentation):
/// how many moved. All of them or none: where any use is not one this shows to be a read, the
/// module is left as it was.
fn place_read_only_tables(module: &mut Module) -> usize {
    let tables: BTreeSet<String> = module
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Variable(v)
                if v.space == StateSpace::Global
                    && v.linkage != Some(Linkage::Extern)
                    && v.vector.is_none()
                    && !matches!(v.ty, Type::TexRef | Type::SamplerRef | Type::SurfRef)
                    && v.size().is_some() =>
            {
                Some(v.name.clone())
            }
            _ => None,
        })
        .collect();
    if tables.is_empty() {
        return 0;
    }
    let const_bytes: u64 = module
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Variable(v) if v.space == StateSpace::Const || tables.contains(&v.name) => {
                // Each rounded up to the fence's 16-byte alignment.
                v.size().map(|s| s.next_multiple_of(16))
            }
            _ => None,
        })
        .fold(0u64, u64::saturating_add);
    if const_bytes > CONST_SPACE {
        return 0;
    }
    // Per function: the registers that hold only table addresses, or `None` where a use escapes.
    let mut plans = Vec::new();
    for item in &module.items {
        let Item::Function(f) = item else { continue };
        let Some(body) = &f.body else { continue };
        let mut instructions = Vec::new();
        for_each_instruction(body, &mut |i| instructions.push(i.clone()));
        match table_registers(&instructions, &tables) {
            Some(pure) => plans.push(pure),
            None => return 0,
        }
    }
    // Every table is named somewhere, or it would have been dropped; move them all.
    let mut plans = plans.into_iter();
    for item in &mut module.items {
        match item {
            Item::Variable(v) if tables.contains(&v.name) => v.space = StateSpace::Const,
            Item::Function(f) => {
                let Some(body) = &mut f.body else { continue };
                let pure = plans.next().unwrap_or_default();
                for_each_instruction_mut(body, &mut |i| {
                    if table_load(i, &pure, &tables) {
                        // `ld.const` with the load's vector and type: ordering, scope and cache
                        // hints mean nothing for memory no one writes.
                        i.opcode = "ld".to_owned();
                        i.modifiers.retain(|m| !super::isa::ordering_or_hint(m));
                        for m in &mut i.modifiers {
                            if m == "global" {
                                *m = "const".to_owned();
                            }
                        }
                    }
                });
            }
            _ => {}
        }
    }
    tables.len()
}

/// How an instruction relates to table addresses.
#[derive(Debug, PartialEq, Eq)]
enum TableUse<'i> {
    /// Defines the register as a table address: `mov R, table(+n)`, `mov R, A`, `add R, A, x`,
    /// `add R, x, A` or `sub R, A, x` (`A` a table register, `x` naming none), 64-bit.
    Define(&'i str),
    /// Loads through a table address (`ld.global`/`ldu.global` of a table or table register).
    Load,
    /// Compares a table address (`setp`).
    Compare,
    /// Names no table and no table register.
    Unrelated,
    /// Names a table or a table register in any other way.
    Other,
}

/// Whether `i` is a load through a table address: an `ld.global`/`ldu.global` whose address is
/// a table or a table register.
fn table_load(i: &Instruction, pure: &BTreeSet<String>, tables: &BTreeSet<String>) -> bool {
    matches!(i.opcode.as_str(), "ld" | "ldu")
        && i.has("global")
        && matches!(i.operands.get(1).map(|o| &o.kind), Some(OperandKind::Address(a)) if match &a.base {
            AddressBase::Register(r) => pure.contains(r),
            AddressBase::Symbol(s) => tables.contains(s),
            _ => false,
        })
}

fn classify<'i>(i: &'i Instruction, pure: &BTreeSet<String>, tables: &BTreeSet<String>) -> TableUse<'i> {
    let is_table = |o: &Operand| match &o.kind {
        OperandKind::Symbol { name, .. } => tables.contains(name.as_str()),
        OperandKind::Register(r) => r.component.is_none() && pure.contains(&r.name),
        _ => false,
    };
    let names_table = |o: &Operand| {
        o.symbols().iter().any(|s| tables.contains(*s)) || o.registers().iter().any(|r| pure.contains(*r))
    };
    let wide = i.modifiers.iter().any(|m| matches!(m.as_str(), "u64" | "s64" | "b64"));
    let dest = destination(i).filter(|_| wide && i.guard.is_none());
    match (i.opcode.as_str(), i.operands.as_slice(), dest) {
        ("mov", [_, source], Some(d)) if is_table(source) => return TableUse::Define(d),
        ("add", [_, a, b], Some(d)) if is_table(a) && !names_table(b) => return TableUse::Define(d),
        ("add" | "sub", [_, a, b], Some(d)) if is_table(b) && !names_table(a) && i.opcode == "add" => {
            return TableUse::Define(d);
        }
        ("sub", [_, a, b], Some(d)) if is_table(a) && !names_table(b) => return TableUse::Define(d),
        _ => {}
    }
    if table_load(i, pure, tables) {
        let value_only = i.operands.len() == 2 && !i.operands.first().is_some_and(names_table);
        return if value_only { TableUse::Load } else { TableUse::Other };
    }
    let mentions =
        i.operands.iter().any(names_table) || i.guard.as_ref().is_some_and(|g| pure.contains(&g.register));
    match (i.opcode.as_str(), mentions) {
        (_, false) => TableUse::Unrelated,
        ("setp", true) if !i.operands.first().is_some_and(names_table) => TableUse::Compare,
        _ => TableUse::Other,
    }
}

/// The registers of a function (its instructions, in order) that hold only addresses of
/// `tables`, or `None` where a table or such a register is used in any other way.
fn table_registers(instructions: &[Instruction], tables: &BTreeSet<String>) -> Option<BTreeSet<String>> {
    // Grow from the moves of a table's address, through additions of offsets.
    let mut pure = BTreeSet::new();
    loop {
        let before = pure.len();
        for i in instructions {
            if let TableUse::Define(d) = classify(i, &pure, tables) {
                pure.insert(d.to_owned());
            }
        }
        if pure.len() == before {
            break;
        }
    }
    // Shrink: a register with any definition of another kind holds something else at times.
    loop {
        let mut gone = BTreeSet::new();
        for i in instructions {
            let defined = classify(i, &pure, tables);
            for r in defines(i) {
                if pure.contains(r) && defined != TableUse::Define(r) {
                    gone.insert(r.to_owned());
                }
            }
        }
        if gone.is_empty() {
            break;
        }
        pure.retain(|r| !gone.contains(r));
    }
    // Every instruction that names a table or a table register is one of the forms above, and
    // every address it defines stays a table register.
    for i in instructions {
        match classify(i, &pure, tables) {
            TableUse::Define(d) if !pure.contains(d) => return None,
            TableUse::Other => return None,
            _ => {}
        }
    }
    Some(pure)
}

/// Makes each `.local` load or store of `body` through a register that holds a constant place
/// in one of the body's `.local` variables name that variable (see the module's
/// documentation): how many.
fn name_frame_accesses(body: &mut Block) -> usize {
    // The body's own `.local` variables (nvcc's frame), declared at its top level.
    let locals: BTreeSet<String> = super::body::local_variables(body).into_iter().collect();
    if locals.is_empty() {
        return 0;
    }
    let mut all = Vec::new();
    for_each_instruction(body, &mut |i| all.push(i.clone()));
    let mut defs: BTreeMap<&str, Vec<&Instruction>> = BTreeMap::new();
    for i in &all {
        for r in defines(i) {
            defs.entry(r).or_default().push(i);
        }
    }
    let wide = |i: &Instruction| i.modifiers.iter().any(|m| matches!(m.as_str(), "u64" | "s64" | "b64"));
    // Register -> (variable, offset), grown to a fixed point from the moves of a variable's address.
    let mut frame: BTreeMap<String, (String, i64)> = BTreeMap::new();
    loop {
        let before = frame.len();
        for (r, d) in &defs {
            let [i] = d.as_slice() else { continue };
            if frame.contains_key(*r) || i.guard.is_some() || !wide(i) {
                continue;
            }
            let found = match (i.opcode.as_str(), i.operands.as_slice()) {
                ("mov", [_, source]) => match &source.kind {
                    OperandKind::Symbol { name, offset } if locals.contains(name) => {
                        Some((name.clone(), *offset))
                    }
                    OperandKind::Register(s) if s.component.is_none() => frame.get(&s.name).cloned(),
                    _ => None,
                },
                ("add", [_, a, b]) => match (a.register(), &b.kind) {
                    (Some(s), OperandKind::Immediate(Immediate::Int(k))) if s.component.is_none() => frame
                        .get(&s.name)
                        .and_then(|(v, o)| Some((v.clone(), o.checked_add(i64::try_from(*k).ok()?)?))),
                    _ => None,
                },
                _ => None,
            };
            if let Some(place) = found {
                frame.insert((*r).to_owned(), place);
            }
        }
        if frame.len() == before {
            break;
        }
    }
    let mut named = 0usize;
    for_each_instruction_mut(body, &mut |i| {
        if !matches!(i.opcode.as_str(), "ld" | "st") || !i.has("local") {
            return;
        }
        for operand in &mut i.operands {
            if let OperandKind::Address(address) = &mut operand.kind
                && let AddressBase::Register(r) = &address.base
                && let Some((variable, k)) = frame.get(r)
                && let Some(offset) = k.checked_add(address.offset)
            {
                *address = Address { base: AddressBase::Symbol(variable.clone()), offset };
                named = named.saturating_add(1);
            }
        }
    });
    named
}

/// The most bytes a module's variables may take at the start of the fence: every staged launch
/// of its kernels copies them in and out.
pub(super) const MAX_MODULE_VARIABLES: u64 = 1 << 20;

/// Places the module's remaining `.global` variables (those it writes, or whose address it
/// takes: `__device__` variables) at the start of the fence (see the module's documentation):
/// their bytes at launch, initializers written in, or `None` where the module has none or any
/// of them cannot be placed, in which case the module is left as it was.
fn place_module_variables(module: &mut Module) -> Option<(Vec<u8>, BTreeMap<String, i64>)> {
    // Each variable's offset, in the module's order.
    let mut at = BTreeMap::new();
    let mut image: Vec<u8> = Vec::new();
    for item in &module.items {
        let Item::Variable(v) = item else { continue };
        if v.space != StateSpace::Global {
            continue;
        }
        if v.linkage == Some(Linkage::Extern)
            || matches!(v.ty, Type::TexRef | Type::SamplerRef | Type::SurfRef)
        {
            return None;
        }
        let size = usize::try_from(v.size()?).ok()?;
        let align = usize::try_from(v.align.unwrap_or(1).max(super::WINDOW_ALIGN)).ok()?;
        let offset = image.len().next_multiple_of(align);
        let end = offset.checked_add(size)?;
        if u64::try_from(end).ok()? > MAX_MODULE_VARIABLES {
            return None;
        }
        image.resize(end, 0);
        if let Some(init) = &v.init {
            let element = usize::try_from(v.ty.size()?).ok()?;
            let mut values = Vec::new();
            flatten_initializer(init, &mut values);
            let bytes = image.get_mut(offset..end)?;
            let mut chunks = bytes.chunks_exact_mut(element);
            for value in values {
                encode(value, v.ty, chunks.next()?)?;
            }
        }
        at.insert(v.name.clone(), i64::try_from(offset).ok()?);
    }
    if at.is_empty() {
        return None;
    }
    image.resize(image.len().next_multiple_of(super::WINDOW_ALIGN as usize), 0);
    // Every instruction that names one is a form this places; then each is placed.
    let mut placeable = true;
    for item in &module.items {
        if let Item::Function(f) = item
            && let Some(body) = &f.body
        {
            for_each_instruction(body, &mut |i| placeable &= place_variables_in(&mut i.clone(), &at));
        }
    }
    if !placeable {
        return None;
    }
    for item in &mut module.items {
        if let Item::Function(f) = item
            && let Some(body) = &mut f.body
        {
            for_each_instruction_mut(body, &mut |i| {
                place_variables_in(i, &at);
            });
        }
    }
    module.items.retain(|item| !matches!(item, Item::Variable(v) if at.contains_key(&v.name)));
    Some((image, at))
}

/// Rewrites the names of `at`'s variables in `i` as offsets into the fence: `mov.u64 %r, v+k`
/// (and `cvta.global.u64 %r, v+k`, the same offset) become a move of the offset, and an address
/// `[v+k]` of a global or generic access becomes `[offset]`. Whether every name of one in `i`
/// was one of those forms (where not, `i` may be left half rewritten: call it on a copy first).
fn place_variables_in(i: &mut Instruction, at: &BTreeMap<String, i64>) -> bool {
    let names_one = |o: &Operand| o.symbols().iter().any(|s| at.contains_key(*s));
    if !i.operands.iter().any(names_one) {
        return true;
    }
    let wide = i.modifiers.iter().any(|m| matches!(m.as_str(), "u64" | "s64" | "b64"));
    let cvta_global = i.opcode == "cvta" && i.modifiers.iter().map(String::as_str).eq(["global", "u64"]);
    if (i.opcode == "mov" && wide) || cvta_global {
        let [dest, source] = i.operands.as_mut_slice() else { return false };
        if names_one(dest) {
            return false;
        }
        let OperandKind::Symbol { name, offset } = &source.kind else { return false };
        let Some(placed) = at.get(name).and_then(|&p| p.checked_add(*offset)) else { return false };
        source.kind = OperandKind::Immediate(Immediate::Int(i128::from(placed)));
        if cvta_global {
            i.opcode = "mov".to_owned();
            i.modifiers = vec!["u64".to_owned()];
        }
        return true;
    }
    // A global or generic access (no other state space written) naming one as its address.
    let other_space =
        i.modifiers.iter().any(|m| matches!(m.as_str(), "shared" | "local" | "const" | "param" | "tex"));
    if other_space {
        return false;
    }
    for operand in &mut i.operands {
        if !matches!(operand.kind, OperandKind::Address(_)) {
            if names_one(operand) {
                return false;
            }
            continue;
        }
        if let OperandKind::Address(a) = &mut operand.kind
            && let AddressBase::Symbol(name) = &a.base
            && let Some(&placed) = at.get(name)
        {
            let Some(offset) = placed.checked_add(a.offset) else { return false };
            *a = Address { base: AddressBase::Absolute, offset };
        }
    }
    true
}

/// The numbers of an initializer, in order (a list's elements, nested lists flattened).
fn flatten_initializer<'i>(init: &'i Initializer, out: &mut Vec<&'i Immediate>) {
    match init {
        Initializer::Value(value) => out.push(value),
        Initializer::List(items) => items.iter().for_each(|item| flatten_initializer(item, out)),
    }
}

/// `value` as a `ty` in little-endian `bytes` (its size), or `None` where it is not one this
/// writes: an integer for an integer or bit type, a float's bits for a float type of its width.
fn encode(value: &Immediate, ty: Type, bytes: &mut [u8]) -> Option<()> {
    let float = matches!(ty, Type::F16 | Type::F16x2 | Type::BF16 | Type::BF16x2 | Type::F32 | Type::F64);
    let le: [u8; 16] = match (value, ty) {
        (Immediate::Int(v), _) if !float => v.to_le_bytes(),
        (Immediate::F32(bits), Type::F32) => u128::from(*bits).to_le_bytes(),
        (Immediate::F64(bits), Type::F64) => u128::from(*bits).to_le_bytes(),
        _ => return None,
    };
    bytes.copy_from_slice(le.get(..bytes.len())?);
    Some(())
}
