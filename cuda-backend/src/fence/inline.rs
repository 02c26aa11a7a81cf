//! Inlining: each call of one of the module's own `.func` bodies, in an entry, replaced by that
//! body, so that the fence covers the callee's accesses with the caller's windows and the
//! checker proves them as the entry's own. nvcc inlines device functions unless told not to
//! (`__noinline__`, or a function too large for its heuristics); what it leaves is a call
//! sequence this undoes.
//!
//! A call site is inlined when it is exactly nvcc's call sequence: a nested block of register
//! and `.param` declarations, unguarded `st.param` stores into those parameters (inside each),
//! one unguarded `call` (`.uni` at most) of a `.func` of the module that has a body, naming
//! only those parameters, and unguarded `ld.param` loads of its return values (inside each).
//! The callee qualifies when its parameters and return values are `.param`s of a known size,
//! it declares no variable but `.local` ones at its top, and it names its parameters and
//! return values only as the address of an `ld.param` or `st.param` (inside each). Each
//! parameter and return value becomes a `.local` variable of its size and alignment at the
//! entry's top, and each `ld.param`/`st.param` of one the same access of the `.local`
//! variable, at the same offset, so any shape passes (scalars, vectors, structures by value).
//! The call sequence becomes a block of its own:
//!
//! ```text
//! {
//! st.local.b64 [_kinl0g_p0+0], %rd1;    // the caller's st.param, into parameter 0's copy
//! ...the callee's body, its registers, labels and .local variables renamed (%r1 is
//!    %_kinl0r_r1, $L__BB0_2 is $_kinl0l_$L__BB0_2, depot is _kinl0v_depot); ld.param of
//!    parameter k: ld.local of _kinl0g_pk; st.param of return value k: st.local of
//!    _kinl0g_rk; ret: a branch to the end label...
//! $_kinl0g_return:
//! ld.local.f32 %f1, [_kinl0g_r0+0];     // the caller's ld.param
//! }
//! ```
//!
//! The callee's `.local` variables move to the entry's top (one copy per call site). A call in
//! an inlined body is inlined in turn, up to [`MAX_DEPTH`] levels, [`MAX_SITES`] call sites and
//! [`MAX_STATEMENTS`] inlined statements a module, so recursion stops there. A call that is not
//! inlined stays, for the rewriter to refuse by name
//! ([`FenceRefusal::Call`](super::FenceRefusal::Call)); a `.func` that no
//! instruction names any more is dropped with the module's other unnamed items (`lower.rs`).
//! Nothing here is trusted: the rewriter fences and the checker proves the inlined text as
//! they do the entry's own.

use std::collections::{BTreeMap, BTreeSet};

use kernel_args_ptx::{
    Address, AddressBase, Block, Function, FunctionKind, Guard, Instruction, Item, Label, Module, Operand,
    OperandKind, Register, RegisterDecl, RegisterName, Span, StateSpace, Statement, Type, Variable,
};

/// The deepest nesting of inlined calls.
const MAX_DEPTH: usize = 8;

/// The most call sites inlined into one module.
const MAX_SITES: usize = 256;

/// The most statements inlined into one module, all call sites together.
const MAX_STATEMENTS: usize = 1 << 16;

/// Inlines the calls of `module`'s entries (see the module's documentation): how many call
/// sites.
pub(super) fn inline_calls(module: &mut Module) -> usize {
    let callees: BTreeMap<String, Function> = module
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Function(f) if f.kind == FunctionKind::Func && f.body.is_some() && qualifies(f) => {
                Some((f.name.clone(), f.clone()))
            }
            _ => None,
        })
        .collect();
    if callees.is_empty() {
        return 0;
    }
    let mut namer = Namer { taken: names(module), next: 0 };
    let mut sites = Sites { count: 0, statements: 0 };
    for item in &mut module.items {
        let Item::Function(f) = item else { continue };
        if f.kind != FunctionKind::Entry {
            continue;
        }
        let Some(body) = &mut f.body else { continue };
        let mut hoisted = Vec::new();
        for _ in 0..MAX_DEPTH {
            let before = sites.count;
            inline_block(body, &callees, &mut namer, &mut hoisted, &mut sites);
            if sites.count == before {
                break;
            }
        }
        body.statements.splice(0..0, hoisted.into_iter().map(Statement::Variable));
    }
    sites.count
}

/// What has been inlined into the module so far.
struct Sites {
    count: usize,
    statements: usize,
}

/// How many statements `block` holds, nested ones included.
fn statements(block: &Block) -> usize {
    block
        .statements
        .iter()
        .map(|s| match s {
            Statement::Block(b) => statements(b).saturating_add(1),
            _ => 1,
        })
        .fold(0usize, usize::saturating_add)
}

/// Whether `f`'s signature and variables are ones this inlines.
fn qualifies(f: &Function) -> bool {
    let params_ok = f
        .params
        .iter()
        .chain(&f.returns)
        .all(|p| p.space == StateSpace::Param && p.size().is_some_and(|n| n > 0));
    let variables_ok = f.body.as_ref().is_some_and(|body| {
        body.statements.iter().all(|s| match s {
            Statement::Variable(v) => v.space == StateSpace::Local && v.init.is_none() && v.size().is_some(),
            _ => true,
        })
    });
    params_ok && variables_ok
}

/// Every name the module spells (registers, labels, variables, functions), so that the
/// prefixes made here are new.
fn names(module: &Module) -> BTreeSet<String> {
    fn block(b: &Block, out: &mut BTreeSet<String>) {
        for s in &b.statements {
            match s {
                Statement::Registers(r) => out.extend(r.names.iter().map(|n| n.name.clone())),
                Statement::Variable(v) => {
                    out.insert(v.name.clone());
                }
                Statement::Label(l) => {
                    out.insert(l.name.clone());
                }
                Statement::Instruction(i) => {
                    for o in &i.operands {
                        out.extend(o.registers().into_iter().map(str::to_owned));
                        out.extend(o.symbols().into_iter().map(str::to_owned));
                    }
                }
                Statement::Block(inner) => block(inner, out),
                Statement::Pragma(_) => {}
            }
        }
    }
    let mut out = BTreeSet::new();
    for item in &module.items {
        match item {
            Item::Variable(v) => {
                out.insert(v.name.clone());
            }
            Item::Function(f) => {
                out.insert(f.name.clone());
                if let Some(body) = &f.body {
                    block(body, &mut out);
                }
            }
            Item::Pragma(_) => {}
        }
    }
    out
}

/// Makes each call site's prefix, `_kinlN`, one no name of the module contains. A copy's names
/// are the prefix and a letter: `r` for the callee's registers, `l` its labels, `v` its
/// `.local` variables (each followed by `_` and the callee's own name), `g` the inliner's own,
/// so no two of them are the same.
struct Namer {
    taken: BTreeSet<String>,
    next: usize,
}

impl Namer {
    fn prefix(&mut self) -> String {
        loop {
            let prefix = format!("_kinl{}", self.next);
            self.next = self.next.saturating_add(1);
            if !self.taken.iter().any(|name| name.contains(&prefix)) {
                return prefix;
            }
        }
    }
}

/// Inlines the call sequences of `block` (at any depth) whose callee is in `callees`.
fn inline_block(
    block: &mut Block,
    callees: &BTreeMap<String, Function>,
    namer: &mut Namer,
    hoisted: &mut Vec<Variable>,
    sites: &mut Sites,
) {
    for statement in &mut block.statements {
        let Statement::Block(inner) = statement else { continue };
        let expanded = match call_site(inner) {
            Some(site) if sites.count < MAX_SITES => callees.get(site.callee).and_then(|callee| {
                let size = callee.body.as_ref().map_or(0, statements);
                if sites.statements.saturating_add(size) > MAX_STATEMENTS {
                    return None;
                }
                sites.statements = sites.statements.saturating_add(size);
                expand(&site, callee, namer.prefix())
            }),
            _ => None,
        };
        match expanded {
            Some((inlined, locals)) => {
                *statement = Statement::Block(inlined);
                hoisted.extend(locals);
                sites.count = sites.count.saturating_add(1);
            }
            None => inline_block(inner, callees, namer, hoisted, sites),
        }
    }
}

/// A call sequence, as nvcc writes one.
struct CallSite<'b> {
    /// The callee's name.
    callee: &'b str,
    /// The sequence's `.param` declarations, by name.
    params: BTreeMap<&'b str, &'b Variable>,
    /// The arguments and the return values the call names, in order.
    arguments: Vec<&'b str>,
    returns: Vec<&'b str>,
    /// The stores of the arguments, before the call, and the loads of the return values, after.
    stores: Vec<&'b Instruction>,
    /// The sequence's register declarations (nvcc's `temp_param_reg`), kept in the block.
    registers: Vec<&'b RegisterDecl>,
    loads: Vec<&'b Instruction>,
    span: Span,
}

/// `block` as a call sequence (see the module's documentation), or `None`.
fn call_site(block: &Block) -> Option<CallSite<'_>> {
    let mut params: BTreeMap<&str, &Variable> = BTreeMap::new();
    let mut stores = Vec::new();
    let mut loads = Vec::new();
    let mut registers = Vec::new();
    let mut call: Option<(&str, Vec<&str>, Vec<&str>, Span)> = None;
    for statement in &block.statements {
        match statement {
            Statement::Registers(r) if call.is_none() => registers.push(r),
            Statement::Variable(v) if call.is_none() && v.space == StateSpace::Param && v.init.is_none() => {
                v.size().filter(|n| *n > 0)?;
                params.insert(v.name.as_str(), v);
            }
            Statement::Instruction(i) if call.is_none() && i.opcode == "st" && i.guard.is_none() => {
                let [address, _] = i.operands.as_slice() else { return None };
                inside(i, address, &params)?;
                stores.push(i);
            }
            Statement::Instruction(i) if call.is_none() && i.opcode == "call" && i.guard.is_none() => {
                if i.modifiers.iter().any(|m| m != "uni") {
                    return None;
                }
                let (returns, name, arguments) = match i.operands.as_slice() {
                    [r, f, a] => (list(r)?, symbol(f)?, list(a)?),
                    [f, a] if matches!(a.kind, OperandKind::List(_)) => (Vec::new(), symbol(f)?, list(a)?),
                    [r, f] if matches!(r.kind, OperandKind::List(_)) => (list(r)?, symbol(f)?, Vec::new()),
                    [f] => (Vec::new(), symbol(f)?, Vec::new()),
                    _ => return None,
                };
                call = Some((name, returns, arguments, i.span));
            }
            Statement::Instruction(i) if call.is_some() && i.opcode == "ld" && i.guard.is_none() => {
                let [_, address] = i.operands.as_slice() else { return None };
                inside(i, address, &params)?;
                loads.push(i);
            }
            _ => return None,
        }
    }
    let (callee, returns, arguments, span) = call?;
    // The call names only the sequence's parameters, each once; the stores are into its
    // arguments and the loads from its return values.
    let named: BTreeSet<&str> = arguments.iter().chain(&returns).copied().collect();
    let store_ok = |i: &&Instruction| {
        i.operands.first().and_then(|o| address_symbol(o)).is_some_and(|p| arguments.contains(&p))
    };
    let load_ok = |i: &&Instruction| {
        i.operands.get(1).and_then(|o| address_symbol(o)).is_some_and(|p| returns.contains(&p))
    };
    if named.len() != arguments.len().saturating_add(returns.len())
        || named.iter().any(|n| !params.contains_key(n))
        || !stores.iter().all(store_ok)
        || !loads.iter().all(load_ok)
    {
        return None;
    }
    Some(CallSite { callee, params, arguments, returns, stores, registers, loads, span })
}

/// The `.param` an `ld.param`/`st.param` reaches through `address`, where the access is inside
/// it: `[P+K]`, `K` and the access's size within `P`'s size.
fn inside<'p>(
    i: &Instruction,
    address: &Operand,
    params: &BTreeMap<&'p str, &'p Variable>,
) -> Option<&'p str> {
    let OperandKind::Address(Address { base: AddressBase::Symbol(name), offset }) = &address.kind else {
        return None;
    };
    let (&key, variable) = params.get_key_value(name.as_str())?;
    let offset = u64::try_from(*offset).ok()?;
    let end = offset.checked_add(access_bytes(i)?)?;
    (i.has("param") && end <= variable.size()?).then_some(key)
}

/// The symbol an address operand is based on.
fn address_symbol(o: &Operand) -> Option<&str> {
    match &o.kind {
        OperandKind::Address(Address { base: AddressBase::Symbol(s), .. }) => Some(s.as_str()),
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

/// A list of symbols at offset 0 (a call's arguments or return values): their names.
fn list(o: &Operand) -> Option<Vec<&str>> {
    let OperandKind::List(items) = &o.kind else { return None };
    items.iter().map(symbol).collect()
}

/// The bytes an `ld` or `st` moves: its type's size times its vector length.
fn access_bytes(i: &Instruction) -> Option<u64> {
    let lanes = if i.has("v8") {
        8
    } else if i.has("v4") {
        4
    } else if i.has("v2") {
        2
    } else {
        1
    };
    i.modifiers
        .iter()
        .rev()
        .find_map(|m| Type::from_name(m))
        .and_then(Type::size)
        .and_then(|n| n.checked_mul(lanes))
}

/// `i`, an `ld.param` or `st.param`, as the same access of a `.local` variable: the modifier
/// `param` made `local`, the address's symbol `name`.
fn to_local(
    i: &Instruction,
    guard: Option<Guard>,
    name: &str,
    operands: Vec<Operand>,
    at: usize,
) -> Statement {
    let mut local = Instruction { guard, operands, ..i.clone() };
    for m in &mut local.modifiers {
        if m == "param" {
            *m = "local".to_owned();
        }
    }
    if let Some(OperandKind::Address(a)) = local.operands.get_mut(at).map(|o| &mut o.kind) {
        a.base = AddressBase::Symbol(name.to_owned());
    }
    Statement::Instruction(local)
}

/// An instruction of the inliner's, unguarded or under `guard`.
fn instruction(guard: Option<Guard>, opcode: &str, modifiers: &[&str], operands: Vec<Operand>) -> Statement {
    Statement::Instruction(Instruction {
        span: Span::default(),
        guard,
        opcode: opcode.to_owned(),
        modifiers: modifiers.iter().map(|m| (*m).to_owned()).collect(),
        operands,
    })
}

/// The names of the callee the copy renames.
struct Renames {
    prefix: String,
    /// Registers declared alone, and ranges (`%r<5>`: the prefix and the count).
    plain: BTreeSet<String>,
    ranges: Vec<(String, u32)>,
    labels: BTreeSet<String>,
    locals: BTreeSet<String>,
    /// The callee's parameters and return values: each one's `.local` copy.
    copies: BTreeMap<String, String>,
}

impl Renames {
    fn is_register(&self, name: &str) -> bool {
        self.plain.contains(name)
            || self.ranges.iter().any(|(prefix, count)| {
                name.strip_prefix(prefix.as_str()).is_some_and(|digits| {
                    !digits.is_empty()
                        && digits.bytes().all(|b| b.is_ascii_digit())
                        && (digits == "0" || !digits.starts_with('0'))
                        && digits.parse::<u32>().is_ok_and(|n| n < *count)
                })
            })
    }

    fn register(&self, name: &str) -> String {
        if self.is_register(name) { self.declared(name) } else { name.to_owned() }
    }

    /// A register name (or a range's prefix) of the callee, renamed.
    fn declared(&self, name: &str) -> String {
        format!("%{}r_{}", self.prefix, name.trim_start_matches('%'))
    }

    fn label(&self, name: &str) -> String {
        format!("${}l_{name}", self.prefix)
    }

    fn local(&self, name: &str) -> String {
        format!("{}v_{name}", self.prefix)
    }

    fn end(&self) -> String {
        format!("${}g_return", self.prefix)
    }

    /// The `.local` copy of parameter `k`.
    fn parameter(&self, k: usize) -> String {
        format!("{}g_p{k}", self.prefix)
    }

    /// The `.local` copy of return value `k`.
    fn returned(&self, k: usize) -> String {
        format!("{}g_r{k}", self.prefix)
    }

    /// `operand` renamed, or `None` where it names a parameter or the return value other than
    /// as the inliner rewrites them.
    fn operand(&self, operand: &Operand) -> Option<Operand> {
        let kind = match &operand.kind {
            OperandKind::Register(r) => {
                OperandKind::Register(Register { name: self.register(&r.name), ..r.clone() })
            }
            OperandKind::Not(r) => OperandKind::Not(Register { name: self.register(&r.name), ..r.clone() }),
            OperandKind::Pair(a, b) => OperandKind::Pair(
                Register { name: self.register(&a.name), ..a.clone() },
                Register { name: self.register(&b.name), ..b.clone() },
            ),
            OperandKind::Symbol { name, offset } => {
                OperandKind::Symbol { name: self.symbol(name)?, offset: *offset }
            }
            OperandKind::Address(Address { base, offset }) => OperandKind::Address(Address {
                base: match base {
                    AddressBase::Register(r) => AddressBase::Register(self.register(r)),
                    AddressBase::Symbol(s) => AddressBase::Symbol(self.symbol(s)?),
                    AddressBase::Absolute => AddressBase::Absolute,
                },
                offset: *offset,
            }),
            OperandKind::Vector(items) => {
                OperandKind::Vector(items.iter().map(|o| self.operand(o)).collect::<Option<_>>()?)
            }
            OperandKind::List(items) => {
                OperandKind::List(items.iter().map(|o| self.operand(o)).collect::<Option<_>>()?)
            }
            OperandKind::Brackets(items) => {
                OperandKind::Brackets(items.iter().map(|o| self.operand(o)).collect::<Option<_>>()?)
            }
            OperandKind::Immediate(_) | OperandKind::Sink => operand.kind.clone(),
        };
        Some(Operand { span: operand.span, kind })
    }

    fn symbol(&self, name: &str) -> Option<String> {
        if self.copies.contains_key(name) {
            return None;
        }
        Some(if self.labels.contains(name) {
            self.label(name)
        } else if self.locals.contains(name) {
            self.local(name)
        } else {
            name.to_owned()
        })
    }

    fn guard(&self, guard: &Option<Guard>) -> Option<Guard> {
        guard.as_ref().map(|g| Guard { register: self.register(&g.register), ..g.clone() })
    }

    /// The callee's statements, renamed and rewritten (see the module's documentation).
    fn block(&self, block: &Block, top: bool, locals: &mut Vec<Variable>) -> Option<Vec<Statement>> {
        let mut out = Vec::new();
        for statement in &block.statements {
            match statement {
                Statement::Registers(r) => out.push(Statement::Registers(RegisterDecl {
                    names: r
                        .names
                        .iter()
                        .map(|n| RegisterName { name: self.declared(&n.name), count: n.count })
                        .collect(),
                    ..r.clone()
                })),
                Statement::Variable(v) if top => {
                    locals.push(Variable { name: self.local(&v.name), ..v.clone() })
                }
                // A nested call sequence's own `.param` declarations, scoped to its block.
                Statement::Variable(v) => out.push(Statement::Variable(v.clone())),
                Statement::Label(l) => {
                    out.push(Statement::Label(Label { name: self.label(&l.name), ..l.clone() }))
                }
                Statement::Pragma(p) => out.push(Statement::Pragma(p.clone())),
                // A nested block that declares a `.param` of a parameter's name (shadowing it)
                // is not one this renames.
                Statement::Block(b)
                    if b.statements.iter().any(
                        |s| matches!(s, Statement::Variable(v) if self.copies.contains_key(&v.name)),
                    ) =>
                {
                    return None;
                }
                Statement::Block(b) => out.push(Statement::Block(Block {
                    span: b.span,
                    statements: self.block(b, false, locals)?,
                })),
                Statement::Instruction(i) => out.push(self.instruction(i)?),
            }
        }
        Some(out)
    }

    fn instruction(&self, i: &Instruction) -> Option<Statement> {
        let guard = self.guard(&i.guard);
        let at = match i.opcode.as_str() {
            "ld" => 1,
            "st" => 0,
            _ => usize::MAX,
        };
        // An ld.param or st.param of a parameter or return value: the same access of its copy.
        if i.has("param")
            && let Some(copy) = i.operands.get(at).and_then(address_symbol).and_then(|p| self.copies.get(p))
        {
            let operands = i
                .operands
                .iter()
                .enumerate()
                .map(|(n, o)| if n == at { Some(o.clone()) } else { self.operand(o) })
                .collect::<Option<Vec<_>>>()?;
            return Some(to_local(i, guard, copy, operands, at));
        }
        if i.opcode == "ret" && i.operands.is_empty() {
            let modifiers: &[&str] = if guard.is_none() { &["uni"] } else { &[] };
            let end = Operand::new(OperandKind::Symbol { name: self.end(), offset: 0 });
            return Some(instruction(guard, "bra", modifiers, vec![end]));
        }
        let operands = i.operands.iter().map(|o| self.operand(o)).collect::<Option<Vec<_>>>()?;
        Some(Statement::Instruction(Instruction { guard, operands, ..i.clone() }))
    }
}

/// The call `site` of `callee` as a block with the callee's body inlined, and the `.local`
/// variables for the entry's top (the parameters' and return values' copies, the callee's own,
/// renamed); `None` where the callee or the site is not one this inlines.
fn expand(site: &CallSite<'_>, callee: &Function, prefix: String) -> Option<(Block, Vec<Variable>)> {
    let body = callee.body.as_ref()?;
    if site.arguments.len() != callee.params.len() || site.returns.len() != callee.returns.len() {
        return None;
    }
    let mut renames = Renames {
        prefix,
        plain: BTreeSet::new(),
        ranges: Vec::new(),
        labels: BTreeSet::new(),
        locals: BTreeSet::new(),
        copies: BTreeMap::new(),
    };
    // Each parameter and return value's copy: the callee's size (the caller's must match), the
    // larger of the two alignments.
    let mut locals = Vec::new();
    let mut copy_of: BTreeMap<&str, String> = BTreeMap::new();
    let pairs = site
        .arguments
        .iter()
        .zip(&callee.params)
        .enumerate()
        .map(|(k, (a, p))| (a, p, renames.parameter(k)))
        .chain(
            site.returns
                .iter()
                .zip(&callee.returns)
                .enumerate()
                .map(|(k, (r, p))| (r, p, renames.returned(k))),
        )
        .collect::<Vec<_>>();
    for (caller, param, copy) in pairs {
        let variable = site.params.get(caller)?;
        let size = param.size()?;
        if variable.size() != Some(size) {
            return None;
        }
        let align = param.alignment().max(variable.alignment()).max(1);
        locals.push(Variable {
            span: Span::default(),
            linkage: None,
            space: StateSpace::Local,
            align: u32::try_from(align).ok(),
            vector: None,
            ty: Type::B8,
            name: copy.clone(),
            dims: vec![Some(size)],
            init: None,
        });
        renames.copies.insert(param.name.clone(), copy.clone());
        copy_of.insert(caller, copy);
    }
    collect(body, &mut renames);
    let inlined = renames.block(body, true, &mut locals)?;
    let local = |i: &Instruction, at: usize| -> Option<Statement> {
        let copy = i.operands.get(at).and_then(address_symbol).and_then(|p| copy_of.get(p))?;
        Some(to_local(i, i.guard.clone(), copy, i.operands.clone(), at))
    };
    let mut statements: Vec<Statement> =
        site.registers.iter().map(|r| Statement::Registers((*r).clone())).collect();
    for i in &site.stores {
        statements.push(local(i, 0)?);
    }
    statements.extend(inlined);
    statements.push(Statement::Label(Label { span: Span::default(), name: renames.end() }));
    for i in &site.loads {
        statements.push(local(i, 1)?);
    }
    Some((Block { span: site.span, statements }, locals))
}

/// The callee's register declarations, labels and `.local` variables, into `renames`.
fn collect(block: &Block, renames: &mut Renames) {
    for statement in &block.statements {
        match statement {
            Statement::Registers(r) => {
                for n in &r.names {
                    match n.count {
                        Some(count) => renames.ranges.push((n.name.clone(), count)),
                        None => {
                            renames.plain.insert(n.name.clone());
                        }
                    }
                }
            }
            Statement::Label(l) => {
                renames.labels.insert(l.name.clone());
            }
            Statement::Variable(v) if v.space == StateSpace::Local => {
                renames.locals.insert(v.name.clone());
            }
            Statement::Block(b) => collect(b, renames),
            _ => {}
        }
    }
}
