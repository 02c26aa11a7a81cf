//! Inlining: each call of one of the module's own `.func` bodies, in an entry, replaced by that
//! body, so that the fence covers the callee's accesses with the caller's windows and the
//! checker proves them as the entry's own. nvcc inlines device functions unless told not to
//! (`__noinline__`, or a function too large for its heuristics); what it leaves is a call
//! sequence this undoes.
//!
//! A call site is inlined when it is exactly nvcc's call sequence: a nested block of register
//! and `.param` declarations (scalars of 2, 4 or 8 bytes), one unguarded `st.param` into each
//! argument at offset 0, one unguarded `call` (`.uni` at most) of a `.func` of the module that
//! has a body, and unguarded `ld.param` loads of its return values at offset 0. The callee
//! qualifies when its parameters and its return value are such scalars, it declares no
//! variable but `.local` ones at its top, and it names its parameters only in `ld.param` loads
//! and its return value only in `st.param` stores, each at offset 0 and of the parameter's
//! size. The call sequence becomes a block of its own:
//!
//! ```text
//! {
//! .reg .b64 %_kinl0g_a0;                // one register per argument and return value
//! mov.b64 %_kinl0g_a0, %rd1;            // the caller's st.param
//! ...the callee's body, its registers, labels and .local variables renamed (%r1 is
//!    %_kinl0r_r1, $L__BB0_2 is $_kinl0l_$L__BB0_2); ld.param of parameter k: mov from
//!    %_kinl0g_ak; st.param of the return value: mov to %_kinl0g_v0; ret: a branch to
//!    the end label...
//! $_kinl0g_return:
//! mov.b32 %f1, %_kinl0g_v0;             // the caller's ld.param
//! }
//! ```
//!
//! The callee's `.local` variables move to the entry's top (one copy per call site). A call in
//! an inlined body is inlined in turn, up to [`MAX_DEPTH`] levels, [`MAX_SITES`] call sites and
//! [`MAX_STATEMENTS`] inlined statements a module, so recursion stops there. A call that is not inlined stays, for the rewriter to
//! refuse by name ([`FenceRefusal::Call`](super::FenceRefusal::Call)); a `.func` that no
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

/// A scalar's size in bytes when it is one an inlined call passes in a register: 2, 4 or 8.
fn scalar(ty: Type, vector: Option<u32>, dims: bool) -> Option<u64> {
    let size = ty.size()?;
    (vector.is_none() && !dims && matches!(size, 2 | 4 | 8)).then_some(size)
}

/// Whether `f`'s signature and variables are ones this inlines.
fn qualifies(f: &Function) -> bool {
    let params_ok = f
        .params
        .iter()
        .chain(&f.returns)
        .all(|p| p.space == StateSpace::Param && scalar(p.ty, p.vector, !p.dims.is_empty()).is_some());
    let variables_ok = f.body.as_ref().is_some_and(|body| {
        body.statements.iter().all(|s| match s {
            Statement::Variable(v) => v.space == StateSpace::Local && v.init.is_none() && v.size().is_some(),
            _ => true,
        })
    });
    params_ok && f.returns.len() <= 1 && variables_ok
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
    /// Each argument's value (the operand stored into its `.param`) and size, in order.
    arguments: Vec<(&'b Operand, u64)>,
    /// Each return value's load: its guard, the destination and the size.
    returns: Vec<(Option<&'b Guard>, &'b Operand, u64)>,
    /// How many return values the call names.
    named_returns: usize,
    span: Span,
}

/// `block` as a call sequence (see the module's documentation), or `None`.
fn call_site(block: &Block) -> Option<CallSite<'_>> {
    let mut params: BTreeMap<&str, u64> = BTreeMap::new();
    let mut stored: BTreeMap<&str, &Operand> = BTreeMap::new();
    let mut call: Option<(&str, Vec<&str>, Vec<&str>, Span)> = None;
    let mut loaded: BTreeMap<&str, (Option<&Guard>, &Operand)> = BTreeMap::new();
    let own = |o: &Operand, params: &BTreeMap<&str, u64>| -> Option<String> {
        match &o.kind {
            OperandKind::Address(Address { base: AddressBase::Symbol(s), offset: 0 })
                if params.contains_key(s.as_str()) =>
            {
                Some(s.clone())
            }
            _ => None,
        }
    };
    for statement in &block.statements {
        match statement {
            Statement::Registers(_) if call.is_none() => {}
            Statement::Variable(v) if call.is_none() && v.space == StateSpace::Param && v.init.is_none() => {
                let size = scalar(v.ty, v.vector, !v.dims.is_empty())?;
                params.insert(v.name.as_str(), size);
            }
            Statement::Instruction(i) if call.is_none() && i.opcode == "st" && i.guard.is_none() => {
                let [address, value] = i.operands.as_slice() else { return None };
                let name = own(address, &params)?;
                let (&key, &size) = params.get_key_value(name.as_str())?;
                if !i.has("param") || access_size(i) != Some(size) || stored.insert(key, value).is_some() {
                    return None;
                }
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
            Statement::Instruction(i) if call.is_some() && i.opcode == "ld" && i.has("param") => {
                let [destination, address] = i.operands.as_slice() else { return None };
                let name = own(address, &params)?;
                let (&key, &size) = params.get_key_value(name.as_str())?;
                if access_size(i) != Some(size)
                    || loaded.insert(key, (i.guard.as_ref(), destination)).is_some()
                {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let (callee, returns, arguments, span) = call?;
    let arguments =
        arguments.iter().map(|a| Some((*stored.get(a)?, *params.get(a)?))).collect::<Option<Vec<_>>>()?;
    // Every argument stored is passed, once; every load is of a return value.
    if stored.len() != arguments.len() || loaded.keys().any(|l| !returns.contains(l)) {
        return None;
    }
    let loads = returns
        .iter()
        .filter_map(|r| loaded.get(r).map(|(guard, d)| params.get(r).map(|size| (*guard, *d, *size))))
        .collect::<Option<Vec<_>>>()?;
    Some(CallSite { callee, arguments, named_returns: returns.len(), returns: loads, span })
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

/// `[name+0]`: the name.
fn param_at(o: &Operand) -> Option<&str> {
    match &o.kind {
        OperandKind::Address(Address { base: AddressBase::Symbol(s), offset: 0 }) => Some(s.as_str()),
        _ => None,
    }
}

/// The size of a scalar `ld` or `st`: its type's (`None` for a vector access).
fn access_size(i: &Instruction) -> Option<u64> {
    if i.modifiers.iter().any(|m| matches!(m.as_str(), "v2" | "v4" | "v8")) {
        return None;
    }
    i.modifiers.iter().rev().find_map(|m| Type::from_name(m)).and_then(Type::size)
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

fn register(name: &str) -> Operand {
    Operand::new(OperandKind::Register(Register::new(name)))
}

/// `mov.bN destination, source`, the move of a value of `size` bytes.
fn mov(guard: Option<Guard>, size: u64, destination: Operand, source: Operand) -> Statement {
    let ty = match size {
        2 => "b16",
        4 => "b32",
        _ => "b64",
    };
    instruction(guard, "mov", &[ty], vec![destination, source])
}

/// The names of the callee the copy renames.
struct Renames {
    prefix: String,
    /// Registers declared alone, and ranges (`%r<5>`: the prefix and the count).
    plain: BTreeSet<String>,
    ranges: Vec<(String, u32)>,
    labels: BTreeSet<String>,
    locals: BTreeSet<String>,
    /// The callee's parameters (index, size) and its return value's name and size.
    params: BTreeMap<String, (usize, u64)>,
    ret: Option<(String, u64)>,
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

    fn argument(&self, k: usize) -> String {
        format!("%{}g_a{k}", self.prefix)
    }

    fn value(&self) -> String {
        format!("%{}g_v0", self.prefix)
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
        if self.params.contains_key(name) || self.ret.as_ref().is_some_and(|(r, _)| r == name) {
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
        match (i.opcode.as_str(), i.operands.as_slice()) {
            ("ld", [destination, address]) if i.has("param") => {
                if let Some(&(k, size)) = param_at(address).and_then(|p| self.params.get(p)) {
                    if access_size(i) != Some(size) {
                        return None;
                    }
                    return Some(mov(guard, size, self.operand(destination)?, register(&self.argument(k))));
                }
            }
            ("st", [address, value]) if i.has("param") => {
                if let Some((name, size)) = &self.ret
                    && param_at(address) == Some(name.as_str())
                {
                    if access_size(i) != Some(*size) {
                        return None;
                    }
                    return Some(mov(guard, *size, register(&self.value()), self.operand(value)?));
                }
            }
            ("ret", []) => {
                let modifiers: &[&str] = if guard.is_none() { &["uni"] } else { &[] };
                let end = Operand::new(OperandKind::Symbol { name: self.end(), offset: 0 });
                return Some(instruction(guard, "bra", modifiers, vec![end]));
            }
            _ => {}
        }
        let operands = i.operands.iter().map(|o| self.operand(o)).collect::<Option<Vec<_>>>()?;
        Some(Statement::Instruction(Instruction { guard, operands, ..i.clone() }))
    }
}

/// The call `site` of `callee` as a block with the callee's body inlined, and the callee's
/// `.local` variables renamed for the entry's top; `None` where the callee or the site is not
/// one this inlines.
fn expand(site: &CallSite<'_>, callee: &Function, prefix: String) -> Option<(Block, Vec<Variable>)> {
    let body = callee.body.as_ref()?;
    if site.arguments.len() != callee.params.len()
        || site.named_returns != callee.returns.len()
        || site.arguments.iter().zip(&callee.params).any(|((_, size), p)| p.size() != Some(*size))
        || site.returns.iter().zip(&callee.returns).any(|((_, _, size), r)| r.size() != Some(*size))
    {
        return None;
    }
    let mut renames = Renames {
        prefix,
        plain: BTreeSet::new(),
        ranges: Vec::new(),
        labels: BTreeSet::new(),
        locals: BTreeSet::new(),
        params: callee
            .params
            .iter()
            .enumerate()
            .filter_map(|(k, p)| Some((p.name.clone(), (k, p.size()?))))
            .collect(),
        ret: callee.returns.first().and_then(|r| Some((r.name.clone(), r.size()?))),
    };
    collect(body, &mut renames);
    let mut locals = Vec::new();
    let inlined = renames.block(body, true, &mut locals)?;
    let mut statements = Vec::new();
    let declare = |name: String, size: u64| {
        let ty = match size {
            2 => Type::B16,
            4 => Type::B32,
            _ => Type::B64,
        };
        Statement::Registers(RegisterDecl {
            span: Span::default(),
            vector: None,
            ty,
            names: vec![RegisterName { name, count: None }],
        })
    };
    for (k, (_, size)) in site.arguments.iter().enumerate() {
        statements.push(declare(renames.argument(k), *size));
    }
    if let Some((_, size)) = &renames.ret {
        statements.push(declare(renames.value(), *size));
    }
    for (k, (value, size)) in site.arguments.iter().enumerate() {
        statements.push(mov(None, *size, register(&renames.argument(k)), (*value).clone()));
    }
    statements.extend(inlined);
    statements.push(Statement::Label(Label { span: Span::default(), name: renames.end() }));
    for (guard, destination, size) in &site.returns {
        statements.push(mov((*guard).cloned(), *size, (*destination).clone(), register(&renames.value())));
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
