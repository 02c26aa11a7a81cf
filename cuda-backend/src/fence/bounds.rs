//! Bounds proofs: the global accesses of a declared entry that stay inside the windows its
//! declaration gives, for every launch the host's declaration check lets through, so that the
//! fence need not check them.
//!
//! An access is proven when its address is a pointer parameter's value (through `cvta.to.global`
//! or not) plus `s × x`, where `x` is a 32-bit value the analysis knows to be below the pointer's
//! extent, `s` is the element's size and the access is no wider than an element: then the
//! access lies in the first `extent × size` bytes from the window's start, which the host has
//! checked lie in guest memory (direct) or the staging arena (staged), and it is aligned as the
//! window is. What "below" can come from, and nothing else:
//!
//! - a branch on `setp.{ge,lt,gt,le}.u32` (alone, or combined by `or.pred`, `and.pred`,
//!   `not.pred`) against a 32-bit scalar parameter, `%ntid`, `%nctaid` or a number, on the
//!   edge where the comparison says `x < bound`;
//! - `%tid` (below `%ntid`, the extent's `block.*`) and `%ctaid` (below `%nctaid`, `grid.*`);
//! - `mad.lo` of `a × b + c` with `a < X`, `b` equal to `Y` and `c < Y`: below `X × Y` (whatever
//!   the 32-bit result wraps to, it stays below `X × Y`);
//! - a zero-extending load of 8 or 16 bits (below 256 or 65,536).
//!
//! The bound must be the extent exactly (a product of the declaration's integer parameters,
//! `grid.*`, `block.*` and numbers, in any order), or both numbers with the bound no larger.
//!
//! It is a must-analysis over the entry's control-flow graph: facts hold at a point only when
//! they hold on every path to it, a register's facts die when anything writes it (every
//! register in an instruction's first operand, guarded or not, unless the instruction is a
//! store, a reduction, a copy, a prefetch or a branch), and a comparison's facts die when
//! either side is written. The analysis gives up on the whole entry (nothing proven, every
//! access fenced) on anything it does not read: a nested block, an indirect branch, a label it
//! cannot parse, a branch to a label it did not see, or too much work.

use std::collections::{HashMap, HashSet};

use kernel_args::{Declaration, ParamType};

use super::{Class, Width, classify, parse_address, parse_integer, split_guard, split_operands, statements};

/// Statements past which an entry gets no proofs (the analysis is quadratic at worst).
const MAX_STATEMENTS: usize = 20_000;

/// A launch value a bound is made of: an integer scalar parameter (by index), or a grid or
/// block dimension (0, 1, 2 for x, y, z).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Factor {
    Param(usize),
    Grid(u8),
    Block(u8),
}

/// A product of launch values and a number, its factors sorted: what the host evaluates an
/// extent to, and what a register is known to be below.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Bound {
    factors: Vec<Factor>,
    constant: u64,
}

impl Bound {
    fn number(constant: u64) -> Bound {
        Bound { factors: Vec::new(), constant }
    }

    fn factor(factor: Factor) -> Bound {
        Bound { factors: vec![factor], constant: 1 }
    }

    fn times(&self, other: &Bound) -> Option<Bound> {
        let mut factors = self.factors.clone();
        factors.extend_from_slice(&other.factors);
        factors.sort_unstable();
        Some(Bound { factors, constant: self.constant.checked_mul(other.constant)? })
    }

    /// Whether a value below `self` is below `extent` too.
    fn within(&self, extent: &Bound) -> bool {
        self == extent
            || (self.factors.is_empty() && extent.factors.is_empty() && self.constant <= extent.constant)
    }
}

/// What a 64-bit register holds as an address.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Addr {
    /// Pointer parameter `i`'s value: its window's start.
    Pointer(usize),
    /// `scale × x`, `x` a 32-bit value below each bound.
    Offset { scale: u64, below: Vec<Bound> },
    /// Pointer parameter `param`'s value plus `scale × x`, `x` below each bound.
    Element { param: usize, scale: u64, below: Vec<Bound> },
}

/// What is known of a register's value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Info {
    /// Its value, exactly.
    value: Option<Bound>,
    /// Strict upper bounds of its value (unsigned), sorted.
    below: Vec<Bound>,
    /// For a 64-bit register: the address or offset it holds.
    addr: Option<Addr>,
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Operand {
    Reg(String),
    Number(u64),
}

/// `lhs < rhs`, unsigned 32-bit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Less {
    lhs: String,
    rhs: Operand,
}

/// What a predicate register says when it is true and when it is false.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Pred {
    when_true: Vec<Less>,
    when_false: Vec<Less>,
}

impl Pred {
    fn mentions(&self, reg: &str) -> bool {
        self.when_true
            .iter()
            .chain(&self.when_false)
            .any(|l| l.lhs == reg || matches!(&l.rhs, Operand::Reg(r) if r == reg))
    }
}

/// The facts at one point of the entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct State {
    regs: HashMap<String, Info>,
    preds: HashMap<String, Pred>,
}

fn intersect(a: &[Bound], b: &[Bound]) -> Vec<Bound> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

impl State {
    /// The facts that hold on both sides.
    fn join(&self, other: &State) -> State {
        let mut regs = HashMap::new();
        for (name, a) in &self.regs {
            let Some(b) = other.regs.get(name) else { continue };
            let addr = match (&a.addr, &b.addr) {
                (Some(x), Some(y)) if x == y => Some(x.clone()),
                (Some(Addr::Offset { scale: s, below: x }), Some(Addr::Offset { scale: t, below: y }))
                    if s == t =>
                {
                    Some(Addr::Offset { scale: *s, below: intersect(x, y) })
                }
                (
                    Some(Addr::Element { param: p, scale: s, below: x }),
                    Some(Addr::Element { param: q, scale: t, below: y }),
                ) if p == q && s == t => Some(Addr::Element { param: *p, scale: *s, below: intersect(x, y) }),
                _ => None,
            };
            let info = Info {
                value: a.value.clone().filter(|v| b.value.as_ref() == Some(v)),
                below: intersect(&a.below, &b.below),
                addr,
            };
            if info != Info::default() {
                regs.insert(name.clone(), info);
            }
        }
        let preds = self
            .preds
            .iter()
            .filter(|(name, p)| other.preds.get(*name) == Some(*p))
            .map(|(name, p)| (name.clone(), p.clone()))
            .collect();
        State { regs, preds }
    }

    /// `reg` was written: nothing known of it stays, nor any comparison that read it.
    fn kill(&mut self, reg: &str) {
        self.regs.remove(reg);
        self.preds.remove(reg);
        self.preds.retain(|_, p| !p.mentions(reg));
    }

    fn info(&self, reg: &str) -> Info {
        self.regs.get(reg).cloned().unwrap_or_default()
    }

    fn set(&mut self, reg: &str, mut info: Info) {
        info.below.sort_unstable();
        info.below.dedup();
        if info != Info::default() {
            self.regs.insert(reg.to_owned(), info);
        }
    }

    /// `less` holds: its left side gets the right side's value as a bound.
    fn assume(&mut self, less: &Less) {
        let bound = match &less.rhs {
            Operand::Number(n) => Some(Bound::number(*n)),
            Operand::Reg(r) => self.info(r).value,
        };
        if let Some(bound) = bound {
            let mut info = self.info(&less.lhs);
            info.below.push(bound);
            self.set(&less.lhs.clone(), info);
        }
    }
}

/// A statement of the body, as the analysis reads it.
struct Instr<'t> {
    start: usize,
    guard: Option<(String, bool)>,
    base: &'t str,
    modifiers: Vec<&'t str>,
    operands: Vec<String>,
}

enum Item<'t> {
    Label(String),
    Instr(Instr<'t>),
}

/// The entry's parameters as the declaration gives them: for each PTX parameter name, its index,
/// its size in the parameter list, and (for a pointer) its element size and extent.
struct Params {
    index: HashMap<String, usize>,
    sizes: Vec<usize>,
    pointers: HashMap<usize, (u64, Option<Bound>)>,
}

impl Params {
    fn new(declaration: &Declaration, ptx_names: &[String]) -> Option<Params> {
        if ptx_names.len() != declaration.len() {
            return None;
        }
        let names: HashMap<&str, usize> =
            declaration.params().enumerate().map(|(i, p)| (p.name, i)).collect();
        let integer = |i: usize| {
            declaration.params().nth(i).is_some_and(|p| {
                matches!(
                    p.ty,
                    ParamType::Scalar(
                        kernel_args::Scalar::I32
                            | kernel_args::Scalar::U32
                            | kernel_args::Scalar::I64
                            | kernel_args::Scalar::U64
                    )
                )
            })
        };
        let mut pointers = HashMap::new();
        for (i, p) in declaration.params().enumerate() {
            if let ParamType::Pointer { element, .. } = p.ty {
                let extent = p.extent.and_then(|text| extent(text, &names, &integer));
                pointers.insert(i, (u64::from(element.size()), extent));
            }
        }
        Some(Params {
            index: ptx_names.iter().enumerate().map(|(i, n)| (n.clone(), i)).collect(),
            sizes: declaration.params().map(|p| p.ty.size()).collect(),
            pointers,
        })
    }
}

/// An extent as a [`Bound`]: a product of integer parameters, `grid.*`, `block.*` and numbers;
/// `None` for anything else (a sum, a quotient, parentheses).
fn extent(text: &str, names: &HashMap<&str, usize>, integer: &dyn Fn(usize) -> bool) -> Option<Bound> {
    let mut bound = Bound::number(1);
    for factor in text.split('*') {
        let factor = factor.trim();
        let next = if let Some(rest) = factor.strip_prefix("grid.") {
            Bound::factor(Factor::Grid(axis(rest)?))
        } else if let Some(rest) = factor.strip_prefix("block.") {
            Bound::factor(Factor::Block(axis(rest)?))
        } else if factor.starts_with(|c: char| c.is_ascii_digit()) {
            Bound::number(u64::try_from(parse_integer(factor)?).ok()?)
        } else {
            let &i = names.get(factor)?;
            if !integer(i) {
                return None;
            }
            Bound::factor(Factor::Param(i))
        };
        bound = bound.times(&next)?;
    }
    Some(bound)
}

/// The body as labels and instructions; `None` where the analysis cannot read it.
fn items<'t>(clean: &'t str, body: (usize, usize)) -> Option<Vec<Item<'t>>> {
    let statements = statements(clean, body);
    if statements.len() > MAX_STATEMENTS {
        return None;
    }
    let mut out = Vec::new();
    let mut gap_start = body.0.saturating_add(1);
    // Each gap before a statement (labels may be there), and the statement.
    type Gap = (usize, usize, Option<(usize, usize)>);
    let mut gaps: Vec<Gap> = Vec::new();
    for &(start, end) in &statements {
        gaps.push((gap_start, start, Some((start, end))));
        gap_start = end.saturating_add(1);
    }
    gaps.push((gap_start, body.1, None));
    for (from, to, statement) in gaps {
        let gap = clean.get(from..to)?;
        if gap.contains(['{', '}']) {
            return None; // a nested block: its own scope
        }
        for line in gap.lines() {
            let line = line.trim();
            if line.starts_with(".loc") || line.starts_with(".file") || line.is_empty() {
                continue;
            }
            for token in line.split_whitespace() {
                let label = token.strip_suffix(':')?;
                let valid = label
                    .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '%')
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%');
                if !valid {
                    return None;
                }
                out.push(Item::Label(label.to_owned()));
            }
        }
        let Some((start, end)) = statement else { continue };
        let text = clean.get(start..end)?;
        let (guard, instruction) = split_guard(text);
        let (opcode, operands) = match instruction.split_once(char::is_whitespace) {
            Some((opcode, operands)) => (opcode, operands.trim()),
            None => (instruction, ""),
        };
        if opcode.starts_with('.') {
            continue; // .reg, .shared, .local, .pragma: no instruction
        }
        let guard = match guard.trim() {
            "" => None,
            g => {
                let g = g.strip_prefix('@')?;
                Some(match g.strip_prefix('!') {
                    Some(p) => (p.to_owned(), true),
                    None => (g.to_owned(), false),
                })
            }
        };
        let mut parts = opcode.split('.');
        let base = parts.next()?;
        let modifiers: Vec<&str> = parts.collect();
        // A kernel that writes its parameters, or takes their address, could change what a
        // parameter's load gives: not read.
        if (matches!(base, "st" | "cvta" | "atom" | "red") && modifiers.contains(&"param"))
            || (base == "mov" && operands.contains("param"))
        {
            return None;
        }
        out.push(Item::Instr(Instr {
            start,
            guard,
            base,
            modifiers,
            operands: split_operands(operands).into_iter().map(|o| o.trim().to_owned()).collect(),
        }));
    }
    Some(out)
}

/// A basic block: its instructions (indices into the items) and where control goes after it.
struct Block {
    instrs: Vec<usize>,
    /// Each successor block, with the predicate a branch to it tested (name, and whether the
    /// edge is taken when the predicate is true).
    succs: Vec<(usize, Option<(String, bool)>)>,
}

/// The blocks of `items`, the first one the entry's; `None` where control flow is not read.
fn blocks(items: &[Item<'_>]) -> Option<Vec<Block>> {
    // Leaders: the first item, each label, each item after a branch or an exit.
    let mut label_block: HashMap<&str, usize> = HashMap::new();
    let mut starts: Vec<usize> = vec![0];
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::Label(_) if i > 0 && starts.last() != Some(&i) => starts.push(i),
            Item::Instr(instr) if matches!(instr.base, "bra" | "ret" | "exit") => {
                let next = i.saturating_add(1);
                if next < items.len() {
                    starts.push(next);
                }
            }
            Item::Instr(instr) if matches!(instr.base, "brx" | "call" | "jmpi" | "trap") => return None,
            _ => {}
        }
    }
    starts.dedup();
    let mut blocks: Vec<Block> = Vec::new();
    for (b, &start) in starts.iter().enumerate() {
        let end = starts.get(b.saturating_add(1)).copied().unwrap_or(items.len());
        let mut instrs = Vec::new();
        for (i, item) in items.iter().enumerate().take(end).skip(start) {
            match item {
                Item::Label(name) => {
                    if label_block.insert(name, b).is_some() {
                        return None; // a label twice
                    }
                }
                Item::Instr(_) => instrs.push(i),
            }
        }
        blocks.push(Block { instrs, succs: Vec::new() });
    }
    let count = blocks.len();
    for (b, block) in blocks.iter_mut().enumerate() {
        let last = block.instrs.last().and_then(|&i| match items.get(i) {
            Some(Item::Instr(instr)) => Some(instr),
            _ => None,
        });
        let next = Some(b.saturating_add(1)).filter(|&n| n < count);
        match last {
            Some(instr) if instr.base == "bra" => {
                let target = instr.operands.first()?;
                let &to = label_block.get(target.as_str())?;
                match &instr.guard {
                    None => block.succs.push((to, None)),
                    Some((pred, negated)) => {
                        block.succs.push((to, Some((pred.clone(), !negated))));
                        if let Some(next) = next {
                            block.succs.push((next, Some((pred.clone(), *negated))));
                        }
                    }
                }
            }
            Some(instr) if matches!(instr.base, "ret" | "exit") && instr.guard.is_none() => {}
            _ => block.succs.extend(next.map(|n| (n, None))),
        }
    }
    Some(blocks)
}

/// The registers an instruction writes: every register in its first operand (outside any
/// address), but for the instructions that write none.
fn written(instr: &Instr<'_>) -> Vec<String> {
    if matches!(instr.base, "st" | "red" | "cp" | "prefetch" | "prefetchu" | "bra" | "ret" | "exit") {
        return Vec::new();
    }
    let Some(first) = instr.operands.first() else { return Vec::new() };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in first.chars().chain(std::iter::once(' ')) {
        match c {
            '[' => depth = depth.saturating_add(1),
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c.is_ascii_alphanumeric() || c == '%' || c == '_' || c == '$') {
            current.push(c);
        } else {
            if current.starts_with('%') {
                out.push(std::mem::take(&mut current));
            }
            current.clear();
        }
    }
    out
}

fn register(operand: &str) -> Option<&str> {
    (operand.starts_with('%') && !operand.contains(['.', '[', '{', '|'])).then_some(operand)
}

fn number(operand: &str) -> Option<u64> {
    u64::try_from(parse_integer(operand)?).ok()
}

fn axis(name: &str) -> Option<u8> {
    match name {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    }
}

/// Runs one instruction over `state`.
fn transfer(state: &mut State, instr: &Instr<'_>, params: &Params) {
    let written = written(instr);
    for reg in &written {
        state.kill(reg);
    }
    if instr.guard.is_some() || written.len() != 1 {
        return; // it may or may not have written: nothing more is known
    }
    let Some(dest) = written.first() else { return };
    let ops = &instr.operands;
    let m = instr.modifiers.as_slice();
    let info = |state: &State, i: usize| ops.get(i).and_then(|o| register(o)).map(|r| state.info(r));
    let new = match (instr.base, m) {
        ("ld", ["param", t]) => {
            let name = ops.get(1).and_then(|o| o.strip_prefix('[')?.strip_suffix(']'));
            let Some(&i) = name.and_then(|n| params.index.get(n.trim())) else { return };
            let width = match *t {
                "u32" | "s32" | "b32" => 4,
                "u64" | "s64" | "b64" => 8,
                _ => return,
            };
            if params.sizes.get(i) != Some(&width) {
                return;
            }
            let addr = params.pointers.contains_key(&i).then_some(Addr::Pointer(i));
            Info { value: Some(Bound::factor(Factor::Param(i))), below: Vec::new(), addr }
        }
        ("ld", [.., t]) if matches!(*t, "u8" | "u16") && !m.iter().any(|x| x.starts_with('v')) => {
            let bound = if *t == "u8" { 256 } else { 65_536 };
            Info { below: vec![Bound::number(bound)], ..Info::default() }
        }
        ("mov", [t]) => {
            let Some(src) = ops.get(1) else { return };
            if let Some(special) = src.strip_prefix('%').and_then(|s| s.split_once('.')) {
                if !matches!(*t, "u32" | "b32" | "s32") {
                    return;
                }
                let Some(a) = axis(special.1) else { return };
                match special.0 {
                    "tid" => Info { below: vec![Bound::factor(Factor::Block(a))], ..Info::default() },
                    "ntid" => Info { value: Some(Bound::factor(Factor::Block(a))), ..Info::default() },
                    "ctaid" => Info { below: vec![Bound::factor(Factor::Grid(a))], ..Info::default() },
                    "nctaid" => Info { value: Some(Bound::factor(Factor::Grid(a))), ..Info::default() },
                    _ => return,
                }
            } else if let Some(src) = register(src) {
                state.info(src)
            } else if let Some(n) = number(src) {
                Info { value: Some(Bound::number(n)), ..Info::default() }
            } else {
                return;
            }
        }
        ("cvta", ["to", "global", "u64"]) => match info(state, 1).and_then(|i| i.addr) {
            Some(Addr::Pointer(p)) => Info { addr: Some(Addr::Pointer(p)), ..Info::default() },
            _ => return,
        },
        ("cvt", ["u64", "u32"]) => match info(state, 1) {
            Some(i) if !i.below.is_empty() => {
                Info { addr: Some(Addr::Offset { scale: 1, below: i.below }), ..Info::default() }
            }
            _ => return,
        },
        ("mul", ["wide", "u32"]) => {
            let (a, b) = (info(state, 1), ops.get(2));
            let scale = b.and_then(|b| number(b)).or_else(|| {
                info(state, 2).and_then(|i| i.value).filter(|v| v.factors.is_empty()).map(|v| v.constant)
            });
            match (a, scale) {
                (Some(a), Some(scale)) if !a.below.is_empty() => {
                    Info { addr: Some(Addr::Offset { scale, below: a.below }), ..Info::default() }
                }
                _ => return,
            }
        }
        ("add", ["s64" | "u64"]) => {
            match (info(state, 1).and_then(|i| i.addr), info(state, 2).and_then(|i| i.addr)) {
                (Some(Addr::Pointer(param)), Some(Addr::Offset { scale, below }))
                | (Some(Addr::Offset { scale, below }), Some(Addr::Pointer(param))) => {
                    Info { addr: Some(Addr::Element { param, scale, below }), ..Info::default() }
                }
                _ => return,
            }
        }
        ("mad", ["lo", "s32" | "u32"]) => {
            let (Some(a), Some(b), Some(c)) = (info(state, 1), info(state, 2), info(state, 3)) else {
                return;
            };
            let mut below = Vec::new();
            for (x, y) in [(&a, &b), (&b, &a)] {
                let Some(multiplier) = &y.value else { continue };
                if c.below.contains(multiplier) {
                    below.extend(x.below.iter().filter_map(|bound| bound.times(multiplier)));
                }
            }
            Info { below, ..Info::default() }
        }
        ("setp", [cmp, "u32"]) => {
            let (Some(a), Some(b)) = (ops.get(1), ops.get(2)) else { return };
            let side = |o: &str| match (register(o), number(o)) {
                (Some(r), _) => Some(Operand::Reg(r.to_owned())),
                (None, Some(n)) => Some(Operand::Number(n)),
                _ => None,
            };
            let (Some(a), Some(b)) = (side(a), side(b)) else { return };
            let less = |lhs: &Operand, rhs: &Operand| match lhs {
                Operand::Reg(r) => vec![Less { lhs: r.clone(), rhs: rhs.clone() }],
                Operand::Number(_) => Vec::new(),
            };
            let pred = match *cmp {
                "ge" => Pred { when_true: Vec::new(), when_false: less(&a, &b) },
                "lt" => Pred { when_true: less(&a, &b), when_false: Vec::new() },
                "gt" => Pred { when_true: less(&b, &a), when_false: Vec::new() },
                "le" => Pred { when_true: Vec::new(), when_false: less(&b, &a) },
                _ => return,
            };
            state.preds.insert(dest.clone(), pred);
            return;
        }
        ("or" | "and", ["pred"]) | ("not", ["pred"]) => {
            let pred =
                |i: usize| ops.get(i).and_then(|o| state.preds.get(o.as_str())).cloned().unwrap_or_default();
            let pred = match instr.base {
                "or" => {
                    let (x, y) = (pred(1), pred(2));
                    Pred { when_true: Vec::new(), when_false: [x.when_false, y.when_false].concat() }
                }
                "and" => {
                    let (x, y) = (pred(1), pred(2));
                    Pred { when_true: [x.when_true, y.when_true].concat(), when_false: Vec::new() }
                }
                _ => {
                    let x = pred(1);
                    Pred { when_true: x.when_false, when_false: x.when_true }
                }
            };
            if pred != Pred::default() {
                state.preds.insert(dest.clone(), pred);
            }
            return;
        }
        _ => return,
    };
    state.set(dest, new);
}

/// Whether the access `instr` (its address operand and width as the fence reads them) lies in
/// its pointer's window for every launch the declaration check lets through.
fn proven(state: &State, instr: &Instr<'_>, params: &Params) -> bool {
    let Class::Global { address_operand, width: Width::Bytes(width), .. } =
        classify(instr.base, &instr.modifiers)
    else {
        return false;
    };
    let Some((reg, 0)) = instr.operands.get(address_operand).and_then(|o| parse_address(o)) else {
        return false;
    };
    let Some(Addr::Element { param, scale, below }) = state.info(&reg).addr else { return false };
    let Some((size, Some(extent))) = params.pointers.get(&param) else { return false };
    scale == *size && width <= *size && below.iter().any(|b| b.within(extent))
}

/// The byte offsets (in the module's text) of the accesses of the entry whose body is `body`
/// that are proven inside their windows, for an entry with the PTX parameters `ptx_names` and
/// `declaration`.
pub(super) fn proven_accesses(
    clean: &str,
    body: (usize, usize),
    ptx_names: &[String],
    declaration: &Declaration,
) -> HashSet<usize> {
    let mut out = HashSet::new();
    let Some(params) = Params::new(declaration, ptx_names) else { return out };
    let Some(items) = items(clean, body) else { return out };
    let Some(blocks) = blocks(&items) else { return out };
    let instr = |i: usize| match items.get(i) {
        Some(Item::Instr(instr)) => Some(instr),
        _ => None,
    };
    let mut entry_states: Vec<Option<State>> = vec![None; blocks.len()];
    if let Some(first) = entry_states.first_mut() {
        *first = Some(State::default());
    }
    let mut work: Vec<usize> = vec![0];
    let mut budget = blocks.len().saturating_mul(64).saturating_add(64);
    while let Some(b) = work.pop() {
        budget = match budget.checked_sub(1) {
            Some(left) => left,
            None => return HashSet::new(),
        };
        let (Some(block), Some(Some(start))) = (blocks.get(b), entry_states.get(b)) else { continue };
        let mut state = start.clone();
        for &i in &block.instrs {
            if let Some(instr) = instr(i) {
                transfer(&mut state, instr, &params);
            }
        }
        for (to, condition) in &block.succs {
            let mut edge = state.clone();
            if let Some((pred, taken_when_true)) = condition {
                let facts = edge.preds.get(pred).cloned().unwrap_or_default();
                let holds = if *taken_when_true { &facts.when_true } else { &facts.when_false };
                for less in holds {
                    edge.assume(less);
                }
            }
            let Some(slot) = entry_states.get_mut(*to) else { continue };
            let joined = match slot {
                Some(old) => old.join(&edge),
                None => edge,
            };
            if slot.as_ref() != Some(&joined) {
                *slot = Some(joined);
                if !work.contains(to) {
                    work.push(*to);
                }
            }
        }
    }
    for (block, start) in blocks.iter().zip(&entry_states) {
        let Some(mut state) = start.clone() else { continue };
        for &i in &block.instrs {
            let Some(instr) = instr(i) else { continue };
            if proven(&state, instr, &params) {
                out.insert(instr.start);
            }
            transfer(&mut state, instr, &params);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use kernel_args::Declaration;

    use crate::fence::{fence_declared_ptx, fence_ptx};

    fn kernel(name: &str) -> &'static str {
        match name {
            "vector_add" => include_str!("../../kernels/vector_add.ptx"),
            "saxpy_grid_stride" => include_str!("../../kernels/grid_stride.ptx"),
            "block_sum" => include_str!("../../kernels/block_sum.ptx"),
            "transpose" => include_str!("../../kernels/transpose.ptx"),
            "histogram" => include_str!("../../kernels/histogram.ptx"),
            "local_array" => include_str!("../../kernels/local_array.ptx"),
            _ => unreachable!("{name}"),
        }
    }

    /// (proven, fenced) accesses of `ptx` fenced for `entry` with `declaration`.
    fn counts(ptx: &str, entry: &str, declaration: &str) -> (usize, usize) {
        let declaration = Declaration::parse(declaration).unwrap();
        let fenced = fence_declared_ptx(ptx, entry, &declaration).unwrap();
        (fenced.proven(), fenced.accesses())
    }

    const FIXTURES: [(&str, &str, usize); 6] = [
        ("vector_add", "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)", 3),
        ("saxpy_grid_stride", "saxpy(a: f32, x: &[f32; n], y: &mut [f32; n], n: u32)", 3),
        ("block_sum", "block_sum(input: &[f32; n], out: &mut [f32; grid.x], n: u32)", 2),
        (
            "transpose",
            "transpose(input: &[f32; rows * cols], out: &mut [f32; cols * rows], rows: u32, cols: u32)",
            2,
        ),
        ("histogram", "histogram(data: &[u8; n], bins: &mut [u32; 256], n: u32)", 2),
        ("local_array", "local_array(idx: &[i32; block.x], out: &mut [f32; block.x])", 2),
    ];

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code, no unsafe below it: minutes under Miri for what the native run checks"
    )]
    fn every_access_of_the_fixtures_is_proven() {
        for (entry, declaration, accesses) in FIXTURES {
            let ptx = kernel(entry);
            // vector_add's module has a second entry, fenced whole.
            let others = if entry == "vector_add" { 3 } else { 0 };
            assert_eq!(counts(ptx, entry, declaration), (accesses, others), "{entry}");
            let fenced = fence_declared_ptx(ptx, entry, &Declaration::parse(declaration).unwrap()).unwrap();
            assert_eq!(fenced.proven() + fenced.accesses(), fence_ptx(ptx).unwrap().accesses(), "{entry}");
        }
    }

    const VECTOR_ADD_DECLARATION: &str = "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)";

    /// vector_add's module with `from` replaced by `to` (once; it must be there).
    fn vector_add_with(from: &str, to: &str) -> String {
        let ptx = kernel("vector_add");
        assert!(ptx.contains(from), "{from}");
        ptx.replacen(from, to, 1)
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code, no unsafe below it: minutes under Miri for what the native run checks"
    )]
    fn what_is_not_proven() {
        let proven = |ptx: &str, declaration: &str| counts(ptx, "vector_add", declaration).0;
        let va = VECTOR_ADD_DECLARATION;
        // i <= n: the guard is not strict.
        let ptx = vector_add_with("setp.ge.u32 \t%p1, %r1, %r2", "setp.gt.u32 \t%p1, %r1, %r2");
        assert_eq!(proven(&ptx, va), 0);
        // The guard negated: the accesses run where i >= n.
        assert_eq!(proven(&vector_add_with("@%p1 bra \t$L__BB0_2", "@!%p1 bra \t$L__BB0_2"), va), 0);
        // The index written after the guard.
        let ptx = vector_add_with("$L__BB0_2;\n", "$L__BB0_2;\n\tadd.s32 %r1, %r1, 1;\n");
        assert_eq!(proven(&ptx, va), 0);
        // The bound written between the comparison and the branch.
        let ptx = vector_add_with("@%p1 bra \t$L__BB0_2", "add.s32 %r2, %r2, 1;\n\t@%p1 bra \t$L__BB0_2");
        assert_eq!(proven(&ptx, va), 0);
        // The index written under a guard (it may or may not be).
        let ptx = vector_add_with("$L__BB0_2;\n", "$L__BB0_2;\n\t@%p1 mov.u32 %r1, %r2;\n");
        assert_eq!(proven(&ptx, va), 0);
        // The accesses also reached by a path around the guard.
        let ptx = vector_add_with("setp.ge.u32", "bra.uni $L__around;\n\tsetp.ge.u32").replacen(
            "$L__BB0_2;\n",
            "$L__BB0_2;\n$L__around:\n",
            1,
        );
        assert_eq!(proven(&ptx, va), 0);
        // A signed or wider index, an offset in the address.
        assert_eq!(proven(&vector_add_with("mul.wide.u32 \t%rd5", "mul.wide.s32 \t%rd5"), va), 0);
        assert_eq!(proven(&vector_add_with("st.global.f32 \t[%rd10]", "st.global.f32 \t[%rd10+4]"), va), 2);
        // Part of the bound's parameter only.
        let ptx = vector_add_with("ld.param.u32 \t%r2", "ld.param.u16 \t%r2");
        assert_eq!(proven(&ptx, va), 0);
        // Declarations that do not fit what the kernel does: another extent, a smaller element,
        // a larger one, an extent the analysis does not read.
        let decl = "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; 4], n: u32)";
        assert_eq!(proven(kernel("vector_add"), decl), 2);
        let decl = "vector_add(a: &[u8; n], b: &[f64; n], out: &mut [f32; n], n: u32)";
        assert_eq!(proven(kernel("vector_add"), decl), 1);
        let decl = "vector_add(a: &[f32; n + 0], b: &[f32; (n)], out: &mut [f32; n * 1], n: u32)";
        assert_eq!(proven(kernel("vector_add"), decl), 1, "n * 1 is n");
        // Another entry's declaration proves nothing here.
        assert_eq!(counts(kernel("vector_add"), "no_such_entry", va).0, 0);
        // What the analysis does not read: a nested block, a stray word.
        let ptx = vector_add_with("$L__BB0_2;\n", "$L__BB0_2;\n\t{\n\t.reg .b32 %t;\n\t}\n");
        assert_eq!(proven(&ptx, va), 0);
        let ptx = vector_add_with("$L__BB0_2:", "$L__BB0_2 :");
        assert_eq!(proven(&ptx, va), 0);
        // A kernel that writes a parameter, or takes a parameter's address.
        let ptx = vector_add_with("$L__BB0_2;\n", "$L__BB0_2;\n\tst.param.u32 [vector_add_param_3], %r1;\n");
        assert_eq!(proven(&ptx, va), 0);
        let ptx = vector_add_with("$L__BB0_2;\n", "$L__BB0_2;\n\tmov.u64 %rd9, vector_add_param_3;\n");
        assert_eq!(proven(&ptx, va), 0);
    }

    #[test]
    fn loops_hold_their_bound_only_when_every_way_in_does() {
        let saxpy = "saxpy(a: f32, x: &[f32; n], y: &mut [f32; n], n: u32)";
        let ptx = kernel("saxpy_grid_stride");
        assert_eq!(counts(ptx, "saxpy_grid_stride", saxpy).0, 3);
        // The loop's own test not strict: its head is reached with i <= n.
        let ptx = ptx.replacen("setp.lt.u32 \t%p2", "setp.le.u32 \t%p2", 1);
        assert_eq!(counts(&ptx, "saxpy_grid_stride", saxpy).0, 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code, no unsafe below it: minutes under Miri for what the native run checks"
    )]
    fn products_need_the_same_factor_on_both_sides() {
        let transpose =
            "transpose(input: &[f32; rows * cols], out: &mut [f32; rows * cols], rows: u32, cols: u32)";
        let ptx = kernel("transpose");
        // in[r * cols + c] with c < cols; multiplied by rows instead, it is not proven.
        let ptx = ptx.replacen("mad.lo.s32 \t%r11, %r2, %r4, %r1", "mad.lo.s32 \t%r11, %r2, %r3, %r1", 1);
        assert_eq!(counts(&ptx, "transpose", transpose).0, 1);
        // A byte is below 256, not below 255.
        let histogram = "histogram(data: &[u8; n], bins: &mut [u32; 255], n: u32)";
        assert_eq!(counts(kernel("histogram"), "histogram", histogram).0, 1);
        let histogram = "histogram(data: &[u8; n], bins: &mut [u32; 300], n: u32)";
        assert_eq!(counts(kernel("histogram"), "histogram", histogram).0, 2);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code, no unsafe below it: minutes under Miri for what the native run checks"
    )]
    fn the_kernels_broken_on_purpose_are_not_proven() {
        let broken = [
            (
                "index_past",
                include_str!("../../kernels/broken/index_past.ptx"),
                "index_past(a: &[f32; n], out: &mut [f32; n], n: u32)",
                0,
            ),
            (
                "negative_index",
                include_str!("../../kernels/broken/negative_index.ptx"),
                "negative_index(out: &mut [f32; n], n: i32)",
                0,
            ),
            (
                "pointer_from_scalar",
                include_str!("../../kernels/broken/pointer_from_scalar.ptx"),
                "pointer_from_scalar(address: u64, value: f32)",
                0,
            ),
            // The table's load is proven; the store through what it read is not.
            (
                "generic_pointer",
                include_str!("../../kernels/broken/generic_pointer.ptx"),
                "generic_pointer(table: &[u64; block.x], value: f32)",
                1,
            ),
            (
                "atomic_past_end",
                include_str!("../../kernels/broken/atomic_past_end.ptx"),
                "atomic_past_end(counters: &mut [u32; 4 * stride], stride: u32)",
                0,
            ),
            (
                "vector_straddle",
                include_str!("../../kernels/broken/vector_straddle.ptx"),
                "vector_straddle(out: &mut [f32; 18], index: i32)",
                0,
            ),
        ];
        for (entry, ptx, declaration, proven) in broken {
            let (got, fenced) = counts(ptx, entry, declaration);
            assert_eq!(got, proven, "{entry}");
            assert!(fenced >= 1, "{entry}: its bad access is fenced");
        }
    }

    /// Every combination of a guard, a scale, an element and an extent for vector_add, against
    /// the rules written out once more: what is proven is exactly what the rules prove.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "768 rewrites of a module, minutes under Miri; the other tests here run the same code"
    )]
    fn vector_add_variants_against_the_rules() {
        let mut checked = 0;
        for cmp in ["ge", "gt", "lt", "le"] {
            for negated in [false, true] {
                for scale in [1u64, 2, 4, 8] {
                    for (element, size) in [("u8", 1u64), ("u16", 2), ("f32", 4), ("f64", 8)] {
                        for extent in ["n", "16", "grid.x", "grid.x * block.x", "block.x * grid.x", "n * 2"] {
                            let ptx = vector_add_with("setp.ge.u32", &format!("setp.{cmp}.u32"));
                            let ptx = ptx.replacen(
                                "mul.wide.u32 \t%rd5, %r1, 4",
                                &format!("mul.wide.u32 \t%rd5, %r1, {scale}"),
                                1,
                            );
                            let ptx = if negated { ptx.replacen("@%p1 bra", "@!%p1 bra", 1) } else { ptx };
                            let declaration = format!(
                                "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [{element}; {extent}], n: u32)"
                            );
                            // The accesses' index is below n where the branch falls through on
                            // `i >= n` false or `i < n` true; below grid.x * block.x always.
                            let guarded = matches!((cmp, negated), ("ge", false) | ("lt", true));
                            let below = |extent: &str| match extent {
                                "n" => guarded,
                                "grid.x * block.x" | "block.x * grid.x" => true,
                                _ => false,
                            };
                            let a_b = if guarded && scale == 4 { 2 } else { 0 };
                            let out = usize::from(below(extent) && scale == size && 4 <= size);
                            assert_eq!(
                                counts(&ptx, "vector_add", &declaration).0,
                                a_b + out,
                                "setp.{cmp}, negated {negated}, scale {scale}, out: &mut [{element}; {extent}]"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 768);
    }
}
