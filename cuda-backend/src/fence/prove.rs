//! Proven accesses: the global accesses of an entry that a bounds check of the kernel's own
//! proves inside the fence, under a condition the launcher checks at each launch, and that the
//! fence therefore leaves unclamped (see [`Proof`] for the condition, and the
//! checker's table for what it verifies).
//!
//! The rewriter finds them here, in the kernel's code as nvcc writes `int i = blockIdx.x *
//! blockDim.x + threadIdx.x; if (i < n) ... p[i] ...` with signed `int`s:
//!
//! ```text
//! ld.param.u64        %rd1, [p]              // a pointer parameter: P
//! ld.param.u32        %r2, [n]               // a 4-byte parameter: N
//! mov.u32             %r3, %ctaid.x
//! mov.u32             %r4, %ntid.x
//! mov.u32             %r5, %tid.x
//! mad.lo.s32          %r1, %r3, %r4, %r5     // the thread's index in the grid: I
//! setp.ge.s32         %p1, %r1, %r2
//! @%p1 bra            $L__BB0_2              // (or `ret`): below, I < N
//! cvta.to.global.u64  %rd2, %rd1
//! mul.wide.s32        %rd3, %r1, 4           // I * S
//! add.s64             %rd4, %rd2, %rd3       // P + I * S
//! ld.global.f32       %f1, [%rd4]            // [P + I * S + c], c + width <= S
//! ```
//!
//! Accesses at constant offsets from a pointer parameter (`*flag = 1`, `atomicAdd(count, c)`,
//! `out[0]`), within the shortest fence's bytes of it, are proven too, with a fixed proof per
//! pointer, end and width: the pointer's address plus the constant, the address the launcher
//! gives being the pointer's where the access fits inside the fence, aligned, and the fence's
//! base where not (where the access itself would have been outside or misaligned).
//!
//! Each register of the chain must be written exactly once in the body (so its value is the
//! one named here wherever it is read), and no label may stand between the guard and the
//! access (so every path to the access passed the guard). What is found here decides only what
//! the fence writes; it is the fence's own instructions that the checker proves, in the
//! fence's own registers: the index computed again from the special registers, the bound read
//! again from its parameter, its own guard after the kernel's (`setp.ge.s32` and an exit), the
//! product, and the address from the pointer's hidden address. Where this analysis were wrong,
//! the access would land elsewhere inside the fence, never outside it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kernel_args_ptx::{
    AddressBase, Flat, FlatItem, Immediate, Instruction, OperandKind, Param, RegisterId, Resolved,
};

use super::isa::{Class, Space};
use super::{MAX_PROOFS, MIN_FENCE_LEN, Proof};

/// What the rewriter writes for an entry's proven accesses.
#[derive(Debug, Default)]
pub(super) struct Proven {
    /// The proofs, in the order of their hidden parameters.
    pub(super) proofs: Vec<Proof>,
    /// Each proven address operand, by (instruction index, operand index): its proof's index
    /// and the access's constant offset.
    pub(super) accesses: BTreeMap<(usize, usize), (usize, i64)>,
    /// After which instruction (a kernel's guard) the fence's guard of each bound goes, and the
    /// element sizes whose products the accesses after it use.
    pub(super) guards: BTreeMap<usize, BTreeMap<usize, BTreeSet<u64>>>,
    /// The kernel's own computations of the index (`mad.lo.s32 I, %ctaid.x, %ntid.x,
    /// %tid.x`), by instruction index: where the entry has a proof, each becomes a copy of the
    /// fence's index (`mov.u32 I, %__kargs_ix`), the same value, so that ptxas sees one index
    /// and one bounds check, not two.
    pub(super) index_defs: BTreeSet<usize>,
}

impl Proven {
    /// The bounds (parameter indexes) the fence reads.
    pub(super) fn bounds(&self) -> BTreeSet<usize> {
        self.proofs.iter().filter_map(|p| p.bound).collect()
    }

    /// The element sizes whose products the fence computes (indexed proofs').
    pub(super) fn sizes(&self) -> BTreeSet<u64> {
        self.proofs.iter().filter(|p| p.bound.is_some()).map(|p| p.size).collect()
    }

    /// `proof`'s number among the entry's proofs, added where it is new; `None` where the entry
    /// has [`MAX_PROOFS`] already (the access is then clamped).
    fn number(&mut self, proof: Proof) -> Option<usize> {
        if let Some(n) = self.proofs.iter().position(|p| *p == proof) {
            return Some(n);
        }
        if self.proofs.len() >= MAX_PROOFS {
            return None;
        }
        self.proofs.push(proof);
        Some(self.proofs.len().saturating_sub(1))
    }

    /// Whether the entry computes the thread's index (it has an indexed proof).
    pub(super) fn indexed(&self) -> bool {
        self.proofs.iter().any(|p| p.bound.is_some())
    }
}

/// An access at a constant offset from a pointer: (instruction, operand, offset, end, width).
type FixedAccess = (usize, usize, i64, u64, u64);

/// What is known of one of the kernel's registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// A pointer parameter's value (`ld.param.u64`), by parameter index.
    Pointer(usize),
    /// The same, through `cvta.to.global.u64`.
    Global(usize),
    /// A 4-byte parameter's value, by parameter index.
    Bound(usize),
    /// `%ctaid.x`, `%ntid.x`, `%tid.x`.
    Ctaid,
    Ntid,
    Tid,
    /// `%ctaid.x * %ntid.x + %tid.x` in 32 bits.
    Index,
    /// The index times `S`, sign-extended to 64 bits (`mul.wide.s32`).
    Scaled(u64),
    /// A global pointer parameter plus the scaled index.
    Element(usize, u64),
    /// `I >= N` (or, negated, `I < N`) for bound parameter `N`.
    AtLeast(usize, bool),
}

/// The entry's proven accesses, from its flattened body, its classes (by instruction index)
/// and its parameters.
pub(super) fn find(flat: &Flat<'_>, classes: &[Class], params: &[Param]) -> Proven {
    let mut proven = Proven::default();
    // How often each register is written, anywhere in the body.
    let mut writes: HashMap<RegisterId, usize> = HashMap::new();
    for item in &flat.items {
        if let FlatItem::Instruction(i, registers) = item {
            for name in super::body::defines(i) {
                if let Some(Resolved::Declared(id)) = kernel_args_ptx::resolved_in(registers, name) {
                    let count = writes.entry(id).or_default();
                    *count = count.saturating_add(1);
                }
            }
        }
    }
    let param_index = |name: &str, size: u64| {
        params.iter().position(|p| p.name == name && p.size() == Some(size) && p.dims.is_empty())
    };
    let mut values: HashMap<RegisterId, Value> = HashMap::new();
    // The bounds proven on every path here, each with the guard that proved it (cleared at
    // labels).
    let mut below: BTreeMap<usize, usize> = BTreeMap::new();
    let mut labels: BTreeSet<&str> = BTreeSet::new();
    // Each pointer's accesses at constant offsets: (instruction, operand, offset, end, width).
    let mut fixed: BTreeMap<usize, Vec<FixedAccess>> = BTreeMap::new();
    let mut index = 0usize;
    for item in &flat.items {
        let (i, registers) = match item {
            FlatItem::Label(l) => {
                below.clear();
                labels.insert(&l.name);
                continue;
            }
            FlatItem::Instruction(i, registers) => (i, registers),
            _ => continue,
        };
        let at = index;
        index = index.saturating_add(1);
        let id = |k: usize| match i.operands.get(k).map(|o| &o.kind) {
            Some(OperandKind::Register(r)) if r.component.is_none() => {
                match kernel_args_ptx::resolved_in(registers, &r.name) {
                    Some(Resolved::Declared(id)) => Some(id),
                    _ => None,
                }
            }
            _ => None,
        };
        let value = |k: usize| id(k).and_then(|id| values.get(&id).copied());
        let special = |k: usize| match i.operands.get(k).map(|o| &o.kind) {
            Some(OperandKind::Register(r)) => match (r.name.as_str(), r.component.map(|c| c.name())) {
                ("%ctaid", Some("x")) => Some(Value::Ctaid),
                ("%ntid", Some("x")) => Some(Value::Ntid),
                ("%tid", Some("x")) => Some(Value::Tid),
                _ => None,
            },
            _ => None,
        };
        let int = |k: usize| match i.operands.get(k).map(|o| &o.kind) {
            Some(OperandKind::Immediate(Immediate::Int(v))) => u64::try_from(*v).ok(),
            _ => None,
        };
        let m: Vec<&str> = i.modifiers.iter().map(String::as_str).collect();
        // A guard: `@p bra` (forward) or `@p ret` where `p` says `I >= N`, or `@!p` where it says
        // `I < N`.
        if i.guard.is_some() && matches!(i.opcode.as_str(), "bra" | "ret" | "exit") {
            let backward = i.operands.iter().any(
                |o| matches!(&o.kind, OperandKind::Symbol { name, .. } if labels.contains(name.as_str())),
            );
            if backward {
                continue;
            }
            let guard =
                i.guard.as_ref().map(|g| (g.negated, kernel_args_ptx::resolved_in(registers, &g.register)));
            if let Some((negated, Some(Resolved::Declared(p)))) = guard
                && let Some(Value::AtLeast(bound, flipped)) = values.get(&p).copied()
                && negated == flipped
            {
                below.insert(bound, at);
            }
            continue;
        }
        if let Some(Class::Access(accesses)) = classes.get(at) {
            for (slot, access) in accesses.iter().enumerate() {
                if access.space != Space::Global {
                    continue;
                }
                let Some(address) = i.operands.get(access.operand).and_then(|o| o.address()) else {
                    continue;
                };
                let AddressBase::Register(name) = &address.base else { continue };
                let Some(Resolved::Declared(a)) = kernel_args_ptx::resolved_in(registers, name) else {
                    continue;
                };
                let width = access.width;
                // `[p + c]`: a fixed proof's, once every such access through `p` is known.
                if let Some(Value::Global(pointer)) = values.get(&a).copied() {
                    let end = u64::try_from(address.offset)
                        .ok()
                        .filter(|c| c.checked_rem(width) == Some(0) && width.is_power_of_two() && width <= 16)
                        .and_then(|c| c.checked_add(width));
                    if let Some(end) = end {
                        fixed.entry(pointer).or_default().push((at, slot, address.offset, end, width));
                    }
                    continue;
                }
                let Some(Value::Element(pointer, size)) = values.get(&a).copied() else { continue };
                let fits = u64::try_from(address.offset).is_ok_and(|c| {
                    c.checked_add(width).is_some_and(|end| end <= size)
                        && c.checked_rem(width) == Some(0)
                        && size.checked_rem(width) == Some(0)
                });
                let Some((&bound, &guard)) = below.iter().next() else { continue };
                if !fits {
                    continue;
                }
                let Some(number) = proven.number(Proof { pointer, bound: Some(bound), size, align: size })
                else {
                    continue;
                };
                proven.accesses.insert((at, slot), (number, address.offset));
                proven.guards.entry(guard).or_default().entry(bound).or_default().insert(size);
            }
        }
        // A value, for a register written exactly once.
        let Some(dest) = id(0).filter(|d| writes.get(d) == Some(&1)) else { continue };
        if i.guard.is_some() {
            continue;
        }
        let found = match (i.opcode.as_str(), m.as_slice()) {
            ("ld", ["param", "u64" | "b64" | "s64"]) => {
                param_of(i, 1).and_then(|p| param_index(p, 8)).map(Value::Pointer)
            }
            ("ld", ["param", "u32" | "b32" | "s32"]) => {
                param_of(i, 1).and_then(|p| param_index(p, 4)).map(Value::Bound)
            }
            ("cvta", ["to", "global", "u64"]) => match value(1) {
                Some(Value::Pointer(k)) => Some(Value::Global(k)),
                _ => None,
            },
            ("mov", ["u32" | "b32" | "s32"]) => special(1),
            ("mad", ["lo", "s32" | "u32"]) => {
                let factors = [value(1), value(2)];
                let grid = factors.contains(&Some(Value::Ctaid)) && factors.contains(&Some(Value::Ntid));
                (grid && value(3) == Some(Value::Tid)).then_some(Value::Index)
            }
            ("mul", ["wide", "s32"]) => match (value(1), int(2)) {
                (Some(Value::Index), Some(s @ (1 | 2 | 4 | 8 | 16))) => Some(Value::Scaled(s)),
                _ => None,
            },
            ("add", ["s64" | "u64"]) => match (value(1), value(2)) {
                (Some(Value::Global(k)), Some(Value::Scaled(s)))
                | (Some(Value::Scaled(s)), Some(Value::Global(k))) => Some(Value::Element(k, s)),
                _ => None,
            },
            ("setp", ["ge", "s32"]) => match (value(1), value(2)) {
                (Some(Value::Index), Some(Value::Bound(n))) => Some(Value::AtLeast(n, false)),
                _ => None,
            },
            ("setp", ["lt", "s32"]) => match (value(1), value(2)) {
                (Some(Value::Index), Some(Value::Bound(n))) => Some(Value::AtLeast(n, true)),
                _ => None,
            },
            _ => None,
        };
        if let Some(found) = found {
            if found == Value::Index {
                proven.index_defs.insert(at);
            }
            values.insert(dest, found);
        }
    }
    // A fixed proof per pointer, access end and width: the launcher's fallback (the fence's
    // base) then moves only an access that is itself outside the fence or misaligned, never one
    // that a longer or wider access through the same pointer made fail.
    for (pointer, accesses) in fixed {
        for (at, slot, offset, end, width) in accesses {
            if end > MIN_FENCE_LEN {
                continue;
            }
            let Some(number) = proven.number(Proof { pointer, bound: None, size: end, align: width }) else {
                continue;
            };
            proven.accesses.insert((at, slot), (number, offset));
        }
    }
    if !proven.indexed() {
        proven.index_defs.clear();
    }
    // The hidden parameters in the order of their pointers.
    let mut order: Vec<usize> = (0..proven.proofs.len()).collect();
    order.sort_by_key(|&n| proven.proofs.get(n).copied());
    let renumber: HashMap<usize, usize> = order.iter().enumerate().map(|(new, &old)| (old, new)).collect();
    proven.proofs = order.iter().filter_map(|&n| proven.proofs.get(n).copied()).collect();
    for (number, _) in proven.accesses.values_mut() {
        *number = renumber.get(number).copied().unwrap_or(*number);
    }
    proven
}

/// The parameter an `ld.param` reads at offset 0 of operand `k`.
fn param_of(i: &Instruction, k: usize) -> Option<&str> {
    let address = i.operands.get(k)?.address()?;
    match &address.base {
        AddressBase::Symbol(name) if address.offset == 0 => Some(name),
        _ => None,
    }
}
