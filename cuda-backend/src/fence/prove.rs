//! Proven accesses: the global accesses of an entry that a proof covers (a bounds check of the
//! kernel's own, a constant offset, or the fence's confinement of the kernel's own index),
//! under a condition the launcher meets at each launch, and that the fence therefore leaves
//! unclamped (see [`Proof`] for the condition, and the checker's table for what it verifies);
//! and the shared accesses into an array of the entry's own whose index the fence confines.
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
//! With `unsigned` (`setp.ge.u32`, `mul.wide.u32`: the index is below 2^31, so it extends the
//! same either way) the proof says the bound is compared unsigned, and the launcher reads it so.
//! The same with the 64-bit index (`(size_t)blockIdx.x * blockDim.x + threadIdx.x`:
//! `mul.wide.u32` of `%ctaid.x` and `%ntid.x`, plus `%tid.x` widened) checked against an
//! 8-byte parameter (`setp.ge.s64` or `.u64`) and scaled by `shl.b64`, is a 64-bit indexed
//! proof's.
//!
//! Accesses at constant offsets from a pointer parameter (`*flag = 1`, `atomicAdd(count, c)`,
//! `out[0]`), within the shortest fence's bytes of it, are proven too, with a fixed proof per
//! pointer, end and width: the pointer's address plus the constant, the address the launcher
//! gives being the pointer's where the access fits inside the fence, aligned, and the fence's
//! base where not (where the access itself would have been outside or misaligned).
//!
//! Any other access through a sum the kernel made of a base and its own index scaled (a
//! [`Scaled`] register: `mul.wide.s32 X, x, S` then `add.s64 A, P, X` for a global pointer;
//! `shl.b32 X, x, k` or `mul.wide.u16 X, h, S` then `add.s32 A, V, X` for a shared array of
//! the entry's own) keeps the kernel's `x`, which the fence confines: to the pointer's elements
//! in the fence (a ranged proof, its highest index a hidden parameter), or to the array's (a
//! constant; for an `.extern .shared` array, from the launch's dynamic shared memory). A
//! two-dimensional shared sum, a [`Row`] (`mad.lo.s32 A, y, S, V`, or `V + (y << s)`) plus `x`
//! shifted, has its whole offset `y * S + (x << k)` confined instead, to the array's size less
//! the accesses' reach. Every access through the sum must be one (in the sum's space, at a
//! non-negative offset aligned to its width), the index (indices) not written between the sum
//! and the access, no label between them unless the sum and its indices are each written once
//! and the indices before the body's first label (so they hold one value for the whole thread),
//! and each index's name one register in the whole body (so the fence's `min`, written at the
//! access, reads the value the kernel scaled).
//!
//! Each register of an indexed proof's chain must be written exactly once in the body (so its
//! value is the one named here wherever it is read), and no label may stand between the guard
//! and the access (so every path to the access passed the guard). A grid-stride loop is the one
//! exception ([`StrideLoop`]): its index is written twice (before the loop and at its step),
//! and its head is a label, which the fence's walk of its own copy of the index crosses. What
//! is found here decides only what
//! the fence writes; it is the fence's own instructions that the checker proves, in the
//! fence's own registers: the index computed again from the special registers, the bound read
//! again from its parameter, its own guard after the kernel's (`setp.ge.s32` and an exit), the
//! product, and the address from the pointer's hidden address. Where this analysis were wrong,
//! the access would land elsewhere inside the fence, never outside it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kernel_args_ptx::{
    AddressBase, Block, Flat, FlatItem, Immediate, Instruction, Operand, OperandKind, Param, RegisterId,
    Resolved, StateSpace, Statement,
};

use super::isa::{Class, Space};
use super::{MAX_PROOFS, MIN_DYNAMIC_SHARED, MIN_FENCE_LEN, Proof, ProofKind};

/// What the rewriter writes for an entry's proven accesses.
#[derive(Debug, Default)]
pub(super) struct Proven {
    /// The proofs, in the order of their hidden parameters.
    pub(super) proofs: Vec<Proof>,
    /// Each proven address operand, by (instruction index, operand index).
    pub(super) accesses: BTreeMap<(usize, usize), ProvenAccess>,
    /// After which instruction (a kernel's guard) the fence's guard of each bound goes (the
    /// bound and how it is compared), and the element sizes whose products the accesses after it
    /// use.
    pub(super) guards: BTreeMap<usize, BTreeMap<(usize, Check), BTreeSet<u64>>>,
    /// The kernel's own computations of the index (`mad.lo.s32 I, %ctaid.x, %ntid.x,
    /// %tid.x`), by instruction index: where the entry has a proof, each becomes a copy of the
    /// fence's index (`mov.u32 I, %__kargs_ix`), the same value, so that ptxas sees one index
    /// and one bounds check, not two.
    pub(super) index_defs: BTreeSet<usize>,
    /// The same for the 64-bit index (`add.s64 I, %ctaid.x * %ntid.x (wide), %tid.x
    /// (widened)`): each becomes `mov.b64 I, %__kargs_iy`.
    pub(super) index_defs64: BTreeSet<usize>,
    /// The shared accesses `[V + (x << k) + c]` into a `.shared` array `V` of the entry's own,
    /// by (instruction index, operand index): the fence confines `x` to the array's elements
    /// (a constant: the array's size is known), with no parameter.
    pub(super) shared: BTreeMap<(usize, usize), SharedAccess>,
    /// The grid-stride loops whose accesses an indexed proof covers ([`StrideLoop`]).
    pub(super) loops: Vec<StrideLoop>,
}

/// A loop that walks the thread's index against its bound, as nvcc writes `for (int i =
/// blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)`:
///
/// ```text
///     mad.lo.s32  %r10, %r7, %r1, %r8        // I: the thread's index
///     setp.ge.s32 %p1, %r10, %r6             // the kernel's bounds check of N
///     @%p1 bra    $L__BB1_3
///     ...
/// $L__BB1_2:                                 // the loop's head: one branch reaches it, its own
///     ...                                    // accesses [P + I * S + c]
///     add.s32     %r10, %r10, %r3            // the index's one write in the loop: any step
///     setp.lt.s32 %p2, %r10, %r6
///     @%p2 bra    $L__BB1_2                  // the loop's one branch back
/// ```
///
/// with no label inside the loop. The fence walks its own copy of the index: the fence's index
/// before the head (where the fence's own check has proven it below `N`), the kernel's after its
/// step, and the loop continues while that copy is below `N` unsigned (the fence's test replaces
/// the branch's guard). So on every path to the head, and from it to the step, the copy is in
/// `[0, N)`, whatever the step was, and the accesses in the loop are an indexed proof's: the
/// pointer's address plus the copy times the element's size, computed at the head. The loop
/// runs as the kernel's does while the index does not pass 2^31 (where the kernel's signed `int`
/// would wrap negative, the fenced loop ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StrideLoop {
    /// The head's label.
    pub(super) label: String,
    /// The kernel's index register, as named at its step.
    pub(super) index: String,
    /// The bound (a 4-byte parameter's index) and how the kernel compares it.
    pub(super) bound: usize,
    pub(super) check: Check,
    /// The element sizes of the loop's proven accesses: the fence's products at the head.
    pub(super) sizes: BTreeSet<u64>,
    /// The instruction index of the index's step, and of the branch back.
    pub(super) step: usize,
    pub(super) branch: usize,
}

/// A shared access confined by its index ([`Proven::shared`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SharedAccess {
    /// The array.
    pub(super) var: String,
    /// The kernel's 32-bit index register, as named at the access (not written since it was
    /// shifted).
    pub(super) index: String,
    /// Whether the index is a 16-bit register (widened first).
    pub(super) narrow: bool,
    /// The shift (`log2` of the element's size).
    pub(super) shift: u32,
    /// The highest index.
    pub(super) hi: SharedHi,
    /// A two-dimensional access's row index (its 32-bit register) and stride in bytes: the
    /// fence confines the whole offset `y * stride + (x << shift)` to at most `hi`'s
    /// [`SharedHi::Offset`], a multiple of the access's alignment.
    pub(super) row: Option<(String, u64)>,
    /// The access's constant offset.
    pub(super) offset: i64,
    /// Where its index is the thread's `%tid.x` or `%tid.y`, which component, and its row's
    /// index's (where it has a row): the confinement the fence makes once, in the entry's
    /// leading run, from the special registers themselves ([`SharedAccess::pre`]).
    pub(super) tid: Option<(char, Option<char>)>,
}

impl SharedAccess {
    /// The confinement made once that this access takes, where its indices are `%tid`'s.
    pub(super) fn pre(&self) -> Option<Pre> {
        let (index, row_index) = self.tid?;
        Some(Pre {
            var: self.var.clone(),
            register: self.index.clone(),
            narrow: self.narrow,
            shift: self.shift,
            hi: self.hi,
            row: self.row.clone(),
            index,
            row_index,
        })
    }
}

/// A shared confinement made once, in the entry's leading run ([`Proven::pre`]): the fields of
/// the accesses it serves but their offsets (the array, the kernel's index register, the shift,
/// the bound, the row), and which component of `%tid` its index and its row's index are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Pre {
    pub(super) var: String,
    pub(super) register: String,
    pub(super) narrow: bool,
    pub(super) shift: u32,
    pub(super) hi: SharedHi,
    pub(super) row: Option<(String, u64)>,
    pub(super) index: char,
    pub(super) row_index: Option<char>,
}

/// A confined shared access's highest index ([`SharedAccess::hi`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum SharedHi {
    /// An array of a size the module states: its size less the accesses' reach, shifted down
    /// (a constant).
    Fixed(u64),
    /// An `.extern .shared` array, as long as the launch's dynamic shared memory: that
    /// length less `reach` (at most [`MIN_DYNAMIC_SHARED`], which the launcher gives at least),
    /// shifted down by the access's shift, computed once at the entry's start.
    Dynamic {
        /// The bytes from each element the accesses reach.
        reach: u64,
    },
    /// A two-dimensional array's: the highest offset in bytes, the array's size less the
    /// accesses' reach rounded down to the offset's alignment (`align`, at most 16, by which
    /// both the stride and `1 << shift` are multiples).
    Offset {
        /// The highest offset.
        max: u64,
        /// Its alignment.
        align: u64,
    },
}

/// How a kernel's bounds check compares the thread's index with its bound: the 32-bit index
/// signed against a 4-byte parameter, or the 64-bit index signed or not against an 8-byte one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Check {
    S32,
    U32,
    S64,
    U64,
}

impl Check {
    /// The proof kind of a check of bound `bound`.
    fn kind(self, bound: usize) -> ProofKind {
        match self {
            Check::S32 => ProofKind::Indexed { bound, signed: true },
            Check::U32 => ProofKind::Indexed { bound, signed: false },
            Check::S64 => ProofKind::Indexed64 { bound, signed: true },
            Check::U64 => ProofKind::Indexed64 { bound, signed: false },
        }
    }

    /// Whether the index is the 64-bit one.
    pub(super) fn wide(self) -> bool {
        matches!(self, Check::S64 | Check::U64)
    }

    /// The check `setp.ge` (or `.lt`) makes: `s32`, `s64` or `u64`.
    pub(super) fn ty(self) -> &'static str {
        match self {
            Check::S32 => "s32",
            Check::U32 => "u32",
            Check::S64 => "s64",
            Check::U64 => "u64",
        }
    }
}

impl Proven {
    /// The bounds (parameter indexes) the fence reads, each with whether it is 8 bytes.
    pub(super) fn bounds(&self) -> BTreeSet<(usize, bool)> {
        self.proofs
            .iter()
            .filter_map(|p| match p.kind {
                ProofKind::Indexed { bound, .. } => Some((bound, false)),
                ProofKind::Indexed64 { bound, .. } => Some((bound, true)),
                ProofKind::Fixed | ProofKind::Ranged { .. } => None,
            })
            .collect()
    }

    /// The arrays the confined shared accesses reach, each named once: the fence reads each
    /// one's address once, at the entry's start.
    pub(super) fn arrays(&self) -> BTreeSet<&str> {
        self.shared.values().map(|a| a.var.as_str()).collect()
    }

    /// The shared confinements made once, in the entry's leading run, in their order.
    pub(super) fn pre(&self) -> BTreeSet<Pre> {
        self.shared.values().filter_map(SharedAccess::pre).collect()
    }

    /// The fence's own bounds checks (each bound and how it is compared), each made once at
    /// the entry's start and tested after each of the kernel's checks of it.
    pub(super) fn checks(&self) -> BTreeSet<(usize, Check)> {
        self.guards.values().flat_map(|checks| checks.keys().copied()).collect()
    }

    /// The highest indexes of the confined accesses into `.extern .shared` arrays that the
    /// fence computes at the entry's start, each a reach and a shift.
    pub(super) fn dynamic_his(&self) -> BTreeSet<(u64, u32)> {
        self.shared
            .values()
            .filter_map(|a| match a.hi {
                SharedHi::Dynamic { reach } => Some((reach, a.shift)),
                SharedHi::Fixed(_) | SharedHi::Offset { .. } => None,
            })
            .collect()
    }

    /// The element sizes whose products of the thread's index the fence computes after its own
    /// checks (indexed proofs' outside a grid-stride loop), each with whether it is of the 64-bit
    /// index.
    pub(super) fn sizes(&self) -> BTreeSet<(u64, bool)> {
        self.guards
            .values()
            .flat_map(|checks| checks.iter())
            .flat_map(|(&(_, check), sizes)| sizes.iter().map(move |&s| (s, check.wide())))
            .collect()
    }

    /// Whether the entry computes the thread's 64-bit index (it has a 64-bit indexed proof).
    pub(super) fn indexed64(&self) -> bool {
        self.proofs.iter().any(|p| matches!(p.kind, ProofKind::Indexed64 { .. }))
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
        self.proofs.iter().any(|p| matches!(p.kind, ProofKind::Indexed { .. }))
    }

    /// The numbers of the entry's ranged proofs.
    pub(super) fn ranged_proofs(&self) -> impl Iterator<Item = usize> + '_ {
        self.proofs
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.kind, ProofKind::Ranged { .. }))
            .map(|(j, _)| j)
    }
}

/// One proven address operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ProvenAccess {
    /// Its proof's number among the entry's proofs.
    pub(super) proof: usize,
    /// The access's constant offset.
    pub(super) offset: i64,
    /// A ranged proof's index: the kernel's 32-bit register, as named at the access (the value
    /// it held where the kernel scaled it: it is not written in between).
    pub(super) index: Option<String>,
    /// Whether it is a grid-stride loop's ([`StrideLoop`]): its product is the fence's copy of
    /// the loop's index times the element's size, made at the loop's head.
    pub(super) walk: bool,
}

/// What a sum's base is: a global pointer parameter's value (`cvta.to.global`), by the
/// parameter's index, or the address of one of the entry's own shared arrays, by its place
/// among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Pointer(usize),
    Array(usize),
}

/// How the kernel scales its index: to 64 bits for a global pointer, signed (`mul.wide.s32`,
/// `cvt.s64.s32` for bytes) or not (`.u32`); in 32 bits for a shared array's address, a 32-bit
/// index shifted (`shl.b32`) or a 16-bit one widened (`mul.wide.u16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    Signed,
    Unsigned,
    Shift,
    Narrow,
}

/// A register's value in the straight-line run since the last label: the kernel's index
/// register `index` (named `name`) times `size` (a power of two up to 16), and that added to a
/// base (with the instruction that added it: the sum). Each dies when its register, or the
/// index, is written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scaled {
    index: RegisterId,
    name: String,
    size: u64,
    scale: Scale,
    base: Option<(Base, usize)>,
    /// A two-dimensional shared sum's row: `V + y * stride + (x << k)`, `y` its register (named
    /// so) and the row's stride in bytes.
    row: Option<Row>,
}

/// A row of a two-dimensional shared array: a shared array's address plus a 32-bit index times
/// a constant stride (`mad.lo.s32 A, y, S, V`, or `add.s32 A, V, y << k`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    var: usize,
    index: RegisterId,
    name: String,
    stride: u64,
}

/// `sum` (one of `scaled`'s) as a row, where it is a shared array's one-dimensional sum
/// `V + (y << k)`: a row of stride `2^k`.
fn row_of(scaled: &HashMap<RegisterId, Scaled>, sum: RegisterId) -> Option<Row> {
    let s = scaled.get(&sum).filter(|s| s.row.is_none() && s.scale == Scale::Shift)?;
    match s.base {
        Some((Base::Array(var), _)) => {
            Some(Row { var, index: s.index, name: s.name.clone(), stride: s.size })
        }
        _ => None,
    }
}

/// An access through a sum: (instruction, operand, offset, end).
type SumAccess = (usize, usize, i64, u64);

/// The accesses through each sum (by the instruction that made it), and the sums one of whose
/// accesses no ranged proof or shared confinement covers (their accesses are clamped together,
/// as one group).
#[derive(Debug, Default)]
struct Sums {
    accesses: BTreeMap<usize, (Scaled, Vec<SumAccess>)>,
    unfit: BTreeSet<usize>,
}

impl Sums {
    /// An access through `sum` at `[sum + offset]`, `width` bytes wide, in `space`: one of the
    /// sum's where it is in the sum's space, at a non-negative offset aligned to its width
    /// within the element's alignment, and `name` is one register in the whole body; otherwise
    /// the sum is unfit.
    fn add(
        &mut self,
        sum: &Scaled,
        (at, slot): (usize, usize),
        offset: i64,
        width: u64,
        space: Space,
        body: &Block,
    ) {
        let Some((base, made)) = sum.base else { return };
        let wanted = match base {
            Base::Pointer(_) => Space::Global,
            Base::Array(_) => Space::Shared,
        };
        let end = u64::try_from(offset)
            .ok()
            .filter(|c| {
                c.checked_rem(width) == Some(0)
                    && sum.size.checked_rem(width) == Some(0)
                    && width.is_power_of_two()
                    && width <= 16
            })
            .and_then(|c| c.checked_add(width));
        match end {
            Some(end)
                if space == wanted
                    && super::body::declarations_of(body, &sum.name) == 1
                    && sum.row.as_ref().is_none_or(|r| super::body::declarations_of(body, &r.name) == 1) =>
            {
                let entry = self.accesses.entry(made).or_insert_with(|| (sum.clone(), Vec::new()));
                entry.1.push((at, slot, offset, end));
            }
            _ => {
                self.unfit.insert(made);
            }
        }
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
    /// `%tid.y`.
    TidY,
    /// `%ctaid.x * %ntid.x + %tid.x` in 32 bits.
    Index,
    /// The index times `S`, sign-extended to 64 bits (`mul.wide.s32`).
    Scaled(u64),
    /// A global pointer parameter plus the scaled index.
    Element(usize, u64),
    /// `I >= N` (or, negated, `I < N`) for bound parameter `N`, compared as the check says.
    AtLeast(usize, Check, bool),
    /// `%ctaid.x * %ntid.x` in 64 bits (`mul.wide.u32`), and `%tid.x` widened (`cvt.u64.u32`).
    Grid64,
    Tid64,
    /// Their sum: the thread's 64-bit index in the grid.
    Index64,
    /// The 64-bit index times `S` (`shl.b64` by `log2 S`).
    Scaled64(u64),
    /// A global pointer parameter plus the 64-bit index times `S` (or the index itself, `S` 1).
    Element64(usize, u64),
    /// The address of one of the entry's own `.shared` arrays (`mov.u32`), by its place in the
    /// list of them.
    SharedVar(usize),
    /// A grid-stride loop's index between its head and its step, by the loop's number among
    /// the candidates ([`StrideLoop`]); that times `S`; a global pointer parameter plus that.
    Walk(usize),
    WalkScaled(usize, u64),
    WalkElement(usize, u64, usize),
}

/// The entry's proven accesses, from its body (flattened, too), its classes (by instruction
/// index) and its parameters.
pub(super) fn find(
    body: &Block,
    flat: &Flat<'_>,
    classes: &[Class],
    params: &[Param],
    externs: &[&str],
) -> Proven {
    let mut proven = Proven::default();
    // The entry's own `.shared` arrays of a known size, in the body's order, then the module's
    // `.extern .shared` arrays (`externs`), as long as the launch's dynamic shared memory.
    let arrays: Vec<(&str, Option<u64>)> = body
        .statements
        .iter()
        .filter_map(|s| match s {
            Statement::Variable(v) if v.space == StateSpace::Shared && v.linkage.is_none() => {
                v.size().map(|size| (v.name.as_str(), Some(size)))
            }
            _ => None,
        })
        .chain(externs.iter().map(|&name| (name, None)))
        .collect();
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
    // A register written more than once whose first write reads a special register
    // (`mov.u32 %r29, %tid.x`, the register later a loop's index): that value, where it holds
    // (`FirstSpecials::value`).
    let specials = first_specials(flat, &writes);
    // The grid-stride loops the body may have, their indices, the one whose head was passed
    // (its number, the kernel's check before it and the bound's parameter), and those whose
    // accesses are proven (the same, and the sizes).
    let candidates = loop_candidates(flat, &writes);
    let loop_indices: BTreeSet<RegisterId> = candidates.iter().map(|c| c.index).collect();
    let mut active: Option<(usize, usize, usize)> = None;
    let mut walked: BTreeMap<usize, (usize, usize, BTreeSet<u64>)> = BTreeMap::new();
    // The bounds proven on every path here, each with the guard that proved it (cleared at
    // labels).
    let mut below: BTreeMap<(usize, Check), usize> = BTreeMap::new();
    let mut labels: BTreeSet<&str> = BTreeSet::new();
    // Each pointer's accesses at constant offsets: (instruction, operand, offset, end, width).
    let mut fixed: BTreeMap<usize, Vec<FixedAccess>> = BTreeMap::new();
    // The scaled indices and their sums with a base, since the last label, and the accesses
    // through each sum.
    let mut scaled: HashMap<RegisterId, Scaled> = HashMap::new();
    // A shared array's rows (`V + y * S`), and the indices scaled by a row's stride (`y << k`,
    // `k` from 5 to 16), since the last label.
    let mut rows: HashMap<RegisterId, Row> = HashMap::new();
    let mut outer: HashMap<RegisterId, (RegisterId, String, u64)> = HashMap::new();
    let mut sums = Sums::default();
    // The registers written before the body's first label: such a write runs once per thread,
    // at its start (no branch reaches back into that run).
    let mut early: BTreeSet<RegisterId> = BTreeSet::new();
    let mut index = 0usize;
    for item in &flat.items {
        let (i, registers) = match item {
            FlatItem::Label(l) => {
                // A grid-stride loop's head, where the kernel's check of the loop's bound (and
                // no other 32-bit one) proved its index below it: between here and the step, the
                // fence's copy of the index is in `[0, N)` (`StrideLoop`).
                let narrow: Vec<((usize, Check), usize)> =
                    below.iter().filter(|((_, c), _)| !c.wide()).map(|(k, g)| (*k, *g)).collect();
                let head =
                    candidates.iter().enumerate().find(|(_, c)| c.label == l.name).and_then(|(n, c)| {
                        match narrow.as_slice() {
                            &[((bound, check), guard)]
                                if check == c.check
                                    && values.get(&c.index) == Some(&Value::Index)
                                    && values.get(&c.bound) == Some(&Value::Bound(bound)) =>
                            {
                                Some((n, guard, bound))
                            }
                            _ => None,
                        }
                    });
                // Another path may reach a label with another value of a loop's index.
                for r in &loop_indices {
                    values.remove(r);
                }
                active = head;
                if let Some((n, ..)) = head
                    && let Some(c) = candidates.get(n)
                {
                    values.insert(c.index, Value::Walk(n));
                }
                below.clear();
                // A sum written once, of an index written once at the start, holds that sum of
                // that index wherever it is read: it outlives the label.
                let once = |r: &RegisterId| writes.get(r) == Some(&1) && early.contains(r);
                scaled.retain(|sum, s| {
                    s.base.is_some()
                        && writes.get(sum) == Some(&1)
                        && once(&s.index)
                        && s.row.as_ref().is_none_or(|r| once(&r.index))
                });
                rows.clear();
                outer.clear();
                labels.insert(&l.name);
                continue;
            }
            FlatItem::Instruction(i, registers) => (i, registers),
            _ => continue,
        };
        if labels.is_empty() {
            for name in super::body::defines(i) {
                if let Some(Resolved::Declared(id)) = kernel_args_ptx::resolved_in(registers, name) {
                    early.insert(id);
                }
            }
        }
        let at = index;
        index = index.saturating_add(1);
        if active.is_some_and(|(n, ..)| candidates.get(n).is_none_or(|c| at > c.branch)) {
            active = None;
        }
        let id = |k: usize| match i.operands.get(k).map(|o| &o.kind) {
            Some(OperandKind::Register(r)) if r.component.is_none() => {
                match kernel_args_ptx::resolved_in(registers, &r.name) {
                    Some(Resolved::Declared(id)) => Some(id),
                    _ => None,
                }
            }
            _ => None,
        };
        let value =
            |k: usize| id(k).and_then(|id| values.get(&id).copied().or_else(|| specials.value(id, at)));
        let special = |k: usize| special_value(i.operands.get(k));
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
                && let Some(Value::AtLeast(bound, check, flipped)) = values.get(&p).copied()
                && negated == flipped
            {
                below.insert((bound, check), at);
            }
            continue;
        }
        if let Some(Class::Access(accesses)) = classes.get(at) {
            for (slot, access) in accesses.iter().enumerate() {
                let Some(address) = i.operands.get(access.operand).and_then(|o| o.address()) else {
                    continue;
                };
                let AddressBase::Register(name) = &address.base else { continue };
                let Some(Resolved::Declared(a)) = kernel_args_ptx::resolved_in(registers, name) else {
                    continue;
                };
                // Through a sum: once every access through it is known, a ranged proof's (a global
                // pointer's, after an indexed proof's below) or confined (a shared array's).
                let sum = scaled.get(&a).filter(|s| s.base.is_some());
                if access.space != Space::Global {
                    if let Some(sum) = sum {
                        sums.add(sum, (at, slot), address.offset, access.width, access.space, body);
                    }
                    continue;
                }
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
                // Within one element of `size` bytes.
                let fits = |size: u64| {
                    u64::try_from(address.offset).is_ok_and(|c| {
                        c.checked_add(width).is_some_and(|end| end <= size)
                            && c.checked_rem(width) == Some(0)
                            && size.checked_rem(width) == Some(0)
                    })
                };
                // `[p + i * S + c]` in a grid-stride loop, `i` its index: an indexed proof's, of
                // the fence's copy of the index.
                if let Some(Value::WalkElement(pointer, size, n)) = values.get(&a).copied()
                    && let Some((walking, guard, bound)) = active
                    && walking == n
                    && fits(size)
                    && let Some(c) = candidates.get(n)
                    && let Some(proof) =
                        proven.number(Proof { pointer, kind: c.check.kind(bound), size, align: size })
                {
                    let access = ProvenAccess { proof, offset: address.offset, index: None, walk: true };
                    proven.accesses.insert((at, slot), access);
                    walked.entry(n).or_insert_with(|| (guard, bound, BTreeSet::new())).2.insert(size);
                    continue;
                }
                // `[p + i * S + c]` below the kernel's check of `i`: an indexed proof's.
                let element = match values.get(&a).copied() {
                    Some(Value::Element(pointer, size)) => Some((pointer, size, false)),
                    Some(Value::Element64(pointer, size)) => Some((pointer, size, true)),
                    _ => None,
                };
                if let Some((pointer, size, wide)) = element
                    && let Some((&(bound, check), &guard)) = below.iter().find(|((_, c), _)| c.wide() == wide)
                    && fits(size)
                    && let Some(proof) =
                        proven.number(Proof { pointer, kind: check.kind(bound), size, align: size })
                {
                    let access = ProvenAccess { proof, offset: address.offset, index: None, walk: false };
                    proven.accesses.insert((at, slot), access);
                    proven.guards.entry(guard).or_default().entry((bound, check)).or_default().insert(size);
                    continue;
                }
                // `[p + x * S + c]` for any 32-bit `x` not written since it was scaled.
                if let Some(sum) = sum {
                    sums.add(sum, (at, slot), address.offset, width, access.space, body);
                }
            }
        }
        // What this instruction writes: what was known of it, and of products of it, dies.
        for name in super::body::defines(i) {
            if let Some(Resolved::Declared(d)) = kernel_args_ptx::resolved_in(registers, name) {
                scaled.remove(&d);
                scaled.retain(|_, s| s.index != d && s.row.as_ref().is_none_or(|r| r.index != d));
                rows.remove(&d);
                rows.retain(|_, r| r.index != d);
                outer.remove(&d);
                outer.retain(|_, (y, _, _)| *y != d);
            }
        }
        if i.guard.is_none()
            && let Some(dest) = id(0)
        {
            let index = |k: usize| id(k).zip(i.operands.get(k).and_then(Operand::register));
            let scaled_by = |(index, r): (RegisterId, &kernel_args_ptx::Register), size: u64, scale| Scaled {
                index,
                name: r.name.clone(),
                size,
                scale,
                base: None,
                row: None,
            };
            let found = match (i.opcode.as_str(), m.as_slice()) {
                // Scaled to 64 bits, for a global pointer (bytes: widened as they are).
                ("mul", ["wide", sign @ ("s32" | "u32")]) => match (index(1), int(2)) {
                    (Some(x), Some(size @ (1 | 2 | 4 | 8 | 16))) => {
                        Some(scaled_by(x, size, if *sign == "s32" { Scale::Signed } else { Scale::Unsigned }))
                    }
                    _ => None,
                },
                ("cvt", [to @ ("s64" | "u64"), from @ ("s32" | "u32")])
                    if to.starts_with('s') == from.starts_with('s') =>
                {
                    index(1)
                        .map(|x| scaled_by(x, 1, if *to == "s64" { Scale::Signed } else { Scale::Unsigned }))
                }
                // In 32 bits, for a shared array: a 32-bit index shifted, a 16-bit one (a byte
                // loaded, `bins[data[i]]`) widened.
                ("shl", ["b32"]) => match (index(1), int(2)) {
                    (Some(x), Some(shift @ 0..=4)) => Some(scaled_by(x, 1 << shift, Scale::Shift)),
                    // A row's index scaled by its stride.
                    (Some((y, r)), Some(shift @ 5..=16)) => {
                        outer.insert(dest, (y, r.name.clone(), 1 << shift));
                        None
                    }
                    _ => None,
                },
                ("mul", ["wide", "u16"]) => match (index(1), int(2)) {
                    (Some(x), Some(size @ (1 | 2 | 4 | 8 | 16))) => Some(scaled_by(x, size, Scale::Narrow)),
                    _ => None,
                },
                // A row: `V + y * S`.
                ("mad", ["lo", "s32" | "u32"]) => {
                    if let (Some((y, r)), Some(stride @ 1..=65_536), Some(Value::SharedVar(var))) =
                        (index(1), int(2), value(3))
                    {
                        rows.insert(dest, Row { var, index: y, name: r.name.clone(), stride });
                    }
                    None
                }
                // A row (or a shared array's one-dimensional sum, `V + (y << k)`, as a row of
                // stride `2^k`) added to an index shifted: a two-dimensional sum.
                ("add", ["s32" | "u32"])
                    if [1, 2].iter().any(|&k| {
                        id(k).is_some_and(|r| rows.contains_key(&r) || row_of(&scaled, r).is_some())
                    }) =>
                {
                    let row =
                        |k: usize| id(k).and_then(|r| rows.get(&r).cloned().or_else(|| row_of(&scaled, r)));
                    let product = |k: usize| {
                        id(k)
                            .and_then(|r| scaled.get(&r))
                            .filter(|s| s.base.is_none() && s.scale == Scale::Shift)
                    };
                    match (row(1), product(2), row(2), product(1)) {
                        (Some(r), Some(s), _, _) | (_, _, Some(r), Some(s)) => {
                            Some(Scaled { base: Some((Base::Array(r.var), at)), row: Some(r), ..s.clone() })
                        }
                        _ => None,
                    }
                }
                // Added to a base of its kind (a shared array's address plus a row's index
                // scaled by its stride: a row).
                ("add", ["s32" | "u32"])
                    if [1, 2].iter().any(|&k| id(k).is_some_and(|r| outer.contains_key(&r))) =>
                {
                    let var = |k: usize| match value(k) {
                        Some(Value::SharedVar(v)) => Some(v),
                        _ => None,
                    };
                    let shifted = |k: usize| id(k).and_then(|r| outer.get(&r)).cloned();
                    let row = match (var(1), shifted(2), shifted(1), var(2)) {
                        (Some(v), Some(o), _, _) | (_, _, Some(o), Some(v)) => Some((v, o)),
                        _ => None,
                    };
                    if let Some((var, (y, name, stride))) = row {
                        rows.insert(dest, Row { var, index: y, name, stride });
                    }
                    None
                }
                // Added to a base of its kind.
                ("add", [ty @ ("s64" | "u64" | "s32" | "u32")]) => {
                    let base = |k: usize| match (value(k), *ty) {
                        (Some(Value::Global(p)), "s64" | "u64") => Some(Base::Pointer(p)),
                        (Some(Value::SharedVar(v)), "s32" | "u32") => Some(Base::Array(v)),
                        _ => None,
                    };
                    let product = |k: usize| {
                        id(k).and_then(|r| scaled.get(&r)).filter(|s| {
                            s.base.is_none()
                                && matches!(
                                    (s.scale, *ty),
                                    (Scale::Signed | Scale::Unsigned, "s64" | "u64")
                                        | (Scale::Shift | Scale::Narrow, "s32" | "u32")
                                )
                        })
                    };
                    match (base(1), product(2), base(2), product(1)) {
                        (Some(b), Some(s), _, _) | (_, _, Some(b), Some(s)) => {
                            Some(Scaled { base: Some((b, at)), ..s.clone() })
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(found) = found {
                scaled.insert(dest, found);
            }
        }
        // A value, for a register written exactly once (or a grid-stride loop's index, the
        // thread's index until it is written again).
        let Some(dest) = id(0).filter(|d| writes.get(d) == Some(&1) || loop_indices.contains(d)) else {
            continue;
        };
        let loop_index = loop_indices.contains(&dest);
        if i.guard.is_some() {
            if loop_index {
                values.remove(&dest);
            }
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
            ("mov", ["u32" | "b32" | "s32"]) => {
                special(1).or_else(|| match i.operands.get(1).map(|o| &o.kind) {
                    Some(OperandKind::Symbol { name, offset: 0 }) => {
                        arrays.iter().position(|(v, _)| v == name).map(Value::SharedVar)
                    }
                    _ => None,
                })
            }
            ("mad", ["lo", "s32" | "u32"]) => {
                let factors = [value(1), value(2)];
                let grid = factors.contains(&Some(Value::Ctaid)) && factors.contains(&Some(Value::Ntid));
                (grid && value(3) == Some(Value::Tid)).then_some(Value::Index)
            }
            // A loop's index scaled: signed only where the loop compares signed (it is then
            // below 2^31).
            ("mul", ["wide", sign @ ("s32" | "u32")]) if matches!(value(1), Some(Value::Walk(_))) => {
                match (value(1), int(2)) {
                    (Some(Value::Walk(n)), Some(s @ (1 | 2 | 4 | 8 | 16)))
                        if *sign == "u32" || candidates.get(n).is_some_and(|c| c.check == Check::S32) =>
                    {
                        Some(Value::WalkScaled(n, s))
                    }
                    _ => None,
                }
            }
            ("mul", ["wide", "s32"]) => match (value(1), int(2)) {
                (Some(Value::Index), Some(s @ (1 | 2 | 4 | 8 | 16))) => Some(Value::Scaled(s)),
                _ => None,
            },
            ("add", ["s64" | "u64"]) => match (value(1), value(2)) {
                (Some(Value::Global(k)), Some(Value::Scaled(s)))
                | (Some(Value::Scaled(s)), Some(Value::Global(k))) => Some(Value::Element(k, s)),
                (Some(Value::Global(k)), Some(Value::WalkScaled(n, s)))
                | (Some(Value::WalkScaled(n, s)), Some(Value::Global(k))) => {
                    Some(Value::WalkElement(k, s, n))
                }
                (Some(Value::Global(k)), Some(Value::Scaled64(s)))
                | (Some(Value::Scaled64(s)), Some(Value::Global(k))) => Some(Value::Element64(k, s)),
                (Some(Value::Global(k)), Some(Value::Index64))
                | (Some(Value::Index64), Some(Value::Global(k))) => Some(Value::Element64(k, 1)),
                (Some(Value::Grid64), Some(Value::Tid64)) | (Some(Value::Tid64), Some(Value::Grid64)) => {
                    Some(Value::Index64)
                }
                _ => None,
            },
            ("mul", ["wide", "u32"]) => match (value(1), int(2)) {
                // The index is below 2^31: zero-extended as sign-extended.
                (Some(Value::Index), Some(s @ (1 | 2 | 4 | 8 | 16))) => Some(Value::Scaled(s)),
                _ => {
                    let factors = [value(1), value(2)];
                    (factors.contains(&Some(Value::Ctaid)) && factors.contains(&Some(Value::Ntid)))
                        .then_some(Value::Grid64)
                }
            },
            // The index widened: times 1 (a byte's element), extended as `mul.wide` would.
            ("cvt", [to @ ("s64" | "u64"), from @ ("s32" | "u32")])
                if to.starts_with('s') == from.starts_with('s')
                    && matches!(value(1), Some(Value::Index | Value::Walk(_))) =>
            {
                match value(1) {
                    Some(Value::Index) => Some(Value::Scaled(1)),
                    Some(Value::Walk(n))
                        if *to == "u64" || candidates.get(n).is_some_and(|c| c.check == Check::S32) =>
                    {
                        Some(Value::WalkScaled(n, 1))
                    }
                    _ => None,
                }
            }
            ("cvt", ["u64", "u32"]) => (value(1) == Some(Value::Tid)).then_some(Value::Tid64),
            ("shl", ["b64"]) => match (value(1), int(2)) {
                (Some(Value::Index64), Some(k @ 0..=4)) => Some(Value::Scaled64(1 << k)),
                _ => None,
            },
            ("setp", [op @ ("ge" | "lt"), ty @ ("s32" | "u32" | "s64" | "u64")]) => {
                let flipped = *op == "lt";
                match (value(1), value(2), *ty) {
                    (Some(Value::Index), Some(Value::Bound(n)), "s32") => {
                        Some(Value::AtLeast(n, Check::S32, flipped))
                    }
                    (Some(Value::Index), Some(Value::Bound(n)), "u32") => {
                        Some(Value::AtLeast(n, Check::U32, flipped))
                    }
                    (Some(Value::Index64), Some(Value::Pointer(n)), "s64") => {
                        Some(Value::AtLeast(n, Check::S64, flipped))
                    }
                    (Some(Value::Index64), Some(Value::Pointer(n)), "u64") => {
                        Some(Value::AtLeast(n, Check::U64, flipped))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if loop_index {
            values.remove(&dest);
            if found != Some(Value::Index) {
                continue;
            }
        }
        if let Some(found) = found {
            if found == Value::Index {
                proven.index_defs.insert(at);
            }
            if found == Value::Index64 {
                proven.index_defs64.insert(at);
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
            let Some(proof) =
                proven.number(Proof { pointer, kind: ProofKind::Fixed, size: end, align: width })
            else {
                continue;
            };
            proven.accesses.insert((at, slot), ProvenAccess { proof, offset, index: None, walk: false });
        }
    }
    // A ranged proof per pointer, element size, extension and reach, and the shared arrays'
    // confined accesses: the accesses through one sum, where every access through it is one (as
    // the group they would be clamped as).
    for (sum, (s, accesses)) in sums.accesses {
        let reach = accesses.iter().map(|(.., end)| *end).max().unwrap_or(0).max(s.size);
        if sums.unfit.contains(&sum) {
            continue;
        }
        match s.base {
            Some((Base::Pointer(pointer), _)) if reach <= MIN_FENCE_LEN => {
                let kind = ProofKind::Ranged { signed: s.scale == Scale::Signed, reach };
                let Some(proof) = proven.number(Proof { pointer, kind, size: s.size, align: s.size }) else {
                    continue;
                };
                for (at, slot, offset, _) in accesses {
                    proven.accesses.insert(
                        (at, slot),
                        ProvenAccess { proof, offset, index: Some(s.name.clone()), walk: false },
                    );
                }
            }
            // The highest index whose accesses' reach fits in the array: a constant, or, for
            // an `.extern .shared` one, from the launch's dynamic shared memory.
            Some((Base::Array(var), _)) => {
                // A two-dimensional sum's offset `y * stride + (x << k)` is a multiple of the
                // largest power of two (at most 16) that divides both; every access through it
                // must be aligned to it.
                let align = s
                    .row
                    .as_ref()
                    .map(|r| (1u64 << r.stride.trailing_zeros().min(s.size.trailing_zeros())).min(16));
                let fits = |align: u64| {
                    accesses
                        .iter()
                        .all(|&(_, _, offset, end)| end.saturating_sub(offset.unsigned_abs()) <= align)
                };
                let hi = match (arrays.get(var), align) {
                    (Some(&(name, Some(size))), Some(align)) if reach <= size && fits(align) => {
                        let room = size.saturating_sub(reach);
                        let max = room.saturating_sub(room.checked_rem(align).unwrap_or(0));
                        (name, SharedHi::Offset { max, align })
                    }
                    (_, Some(_)) => continue,
                    (Some(&(name, Some(size))), None) if reach <= size => {
                        (name, SharedHi::Fixed(size.saturating_sub(reach).checked_div(s.size).unwrap_or(0)))
                    }
                    (Some(&(name, None)), None) if reach <= u64::from(MIN_DYNAMIC_SHARED) => {
                        (name, SharedHi::Dynamic { reach })
                    }
                    _ => continue,
                };
                let (name, hi) = hi;
                // Indices that are the thread's `%tid.x` or `%tid.y` (copied once): the
                // confinement is the same wherever the access is, made once at the start.
                let tid = |r: &RegisterId| match values.get(r) {
                    Some(Value::Tid) => Some('x'),
                    Some(Value::TidY) => Some('y'),
                    _ => None,
                };
                let tid = match (&s.row, tid(&s.index)) {
                    (_, _) if s.scale != Scale::Shift => None,
                    (None, Some(index)) => Some((index, None)),
                    (Some(r), Some(index)) => tid(&r.index).map(|row| (index, Some(row))),
                    _ => None,
                };
                for (at, slot, offset, _) in accesses {
                    let access = SharedAccess {
                        var: name.to_owned(),
                        index: s.name.clone(),
                        narrow: s.scale == Scale::Narrow,
                        shift: s.size.trailing_zeros(),
                        hi,
                        row: s.row.as_ref().map(|r| (r.name.clone(), r.stride)),
                        offset,
                        tid,
                    };
                    proven.shared.insert((at, slot), access);
                }
            }
            _ => {}
        }
    }
    // The loops with a proven access: the fence's own check after the kernel's before the
    // loop, and the loop's walk.
    for (n, (guard, bound, sizes)) in walked {
        let Some(c) = candidates.get(n) else { continue };
        proven.guards.entry(guard).or_default().entry((bound, c.check)).or_default();
        proven.loops.push(StrideLoop {
            label: c.label.to_owned(),
            index: c.name.clone(),
            bound,
            check: c.check,
            sizes,
            step: c.step,
            branch: c.branch,
        });
    }
    if !proven.indexed() {
        proven.index_defs.clear();
    }
    if !proven.indexed64() {
        proven.index_defs64.clear();
    }
    // The hidden parameters in the order of their pointers.
    let mut order: Vec<usize> = (0..proven.proofs.len()).collect();
    order.sort_by_key(|&n| proven.proofs.get(n).copied());
    let renumber: HashMap<usize, usize> = order.iter().enumerate().map(|(new, &old)| (old, new)).collect();
    proven.proofs = order.iter().filter_map(|&n| proven.proofs.get(n).copied()).collect();
    for access in proven.accesses.values_mut() {
        access.proof = renumber.get(&access.proof).copied().unwrap_or(access.proof);
    }
    proven
}

/// A loop that may be a [`StrideLoop`], as its instructions alone say: its head's label, the
/// kernel's index register (written twice in the body: before the head, and once in the loop),
/// the bound's register, how the loop's test compares them, and the instruction indices of the
/// index's step and of the branch back.
#[derive(Debug, Clone)]
struct Candidate<'b> {
    label: &'b str,
    index: RegisterId,
    name: String,
    bound: RegisterId,
    check: Check,
    step: usize,
    branch: usize,
}

/// An instruction with its index and its resolved registers.
type Numbered<'b> = (usize, &'b Instruction, &'b [(&'b str, Resolved)]);

/// The loops of `flat` that may be grid-stride loops ([`StrideLoop`]): a label that exactly one
/// branch reaches, an unnegated `@P bra` after it with no label between; `P` last written in
/// the loop by `setp.lt.s32` (or `.u32`) `P, I, N`, unguarded, neither `I` nor `N` written after
/// it; `I` written exactly once in the loop, unguarded, before that test, and once more in the
/// whole body; `N` not written in the loop.
fn loop_candidates<'b>(flat: &'b Flat<'_>, writes: &HashMap<RegisterId, usize>) -> Vec<Candidate<'b>> {
    // The body as labels and (instruction index, instruction, registers).
    let mut items: Vec<Result<Numbered<'b>, &str>> = Vec::new();
    let mut at = 0usize;
    for item in &flat.items {
        match item {
            FlatItem::Label(l) => items.push(Err(l.name.as_str())),
            FlatItem::Instruction(i, registers) => {
                items.push(Ok((at, i, registers.as_slice())));
                at = at.saturating_add(1);
            }
            _ => {}
        }
    }
    fn target(i: &Instruction) -> Option<&str> {
        (i.opcode == "bra").then_some(())?;
        i.operands.iter().find_map(|o| match &o.kind {
            OperandKind::Symbol { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }
    let resolve =
        |registers: &[(&str, Resolved)], name: &str| match kernel_args_ptx::resolved_in(registers, name) {
            Some(Resolved::Declared(id)) => Some(id),
            _ => None,
        };
    let operand = |i: &Instruction, registers: &[(&str, Resolved)], k: usize| match i
        .operands
        .get(k)
        .map(|o| &o.kind)
    {
        Some(OperandKind::Register(r)) if r.component.is_none() => resolve(registers, &r.name),
        _ => None,
    };
    // The branches to each label, by their place in `items`.
    let mut branches: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, item) in items.iter().enumerate() {
        if let Ok((_, i, _)) = item
            && let Some(label) = target(i)
        {
            branches.entry(label).or_default().push(k);
        }
    }
    let mut out = Vec::new();
    for (head, item) in items.iter().enumerate() {
        let Err(label) = *item else { continue };
        let Some([back]) = branches.get(label).map(Vec::as_slice) else { continue };
        let Some(body) = items.get(head.saturating_add(1)..*back) else { continue };
        let Some(Ok((branch, bra, registers))) = items.get(*back) else { continue };
        let Some(guard) = bra.guard.as_ref().filter(|g| !g.negated) else { continue };
        let Some(p) = resolve(registers, &guard.register) else { continue };
        if body.iter().any(|it| it.is_err()) {
            continue;
        }
        let body: Vec<Numbered<'b>> = body.iter().filter_map(|it| it.ok()).collect();
        let defines = |i: &Instruction, registers: &[(&str, Resolved)]| -> Vec<RegisterId> {
            super::body::defines(i).into_iter().filter_map(|n| resolve(registers, n)).collect()
        };
        // The test: the last write of `P` in the loop.
        let Some(t) = body.iter().rposition(|(_, i, r)| defines(i, r).contains(&p)) else { continue };
        let Some(&(_, test, test_registers)) = body.get(t) else { continue };
        let m: Vec<&str> = test.modifiers.iter().map(String::as_str).collect();
        let check = match m.as_slice() {
            ["lt", "s32"] => Check::S32,
            ["lt", "u32"] => Check::U32,
            _ => continue,
        };
        let (Some(index), Some(bound)) = (operand(test, test_registers, 1), operand(test, test_registers, 2))
        else {
            continue;
        };
        if test.guard.is_some() || test.operands.len() != 3 {
            continue;
        }
        let written = |range: &[Numbered<'b>], r: RegisterId| {
            range
                .iter()
                .filter(|(_, i, regs)| defines(i, regs).contains(&r))
                .map(|(at, i, _)| (*at, i.guard.is_some()))
                .collect::<Vec<_>>()
        };
        let (before, after) = body.split_at(t);
        let after = after.get(1..).unwrap_or_default();
        if !written(after, index).is_empty() || !written(&body, bound).is_empty() {
            continue;
        }
        let steps = written(before, index);
        let [(step, guarded)] = steps.as_slice() else { continue };
        // The step: `add` of the index and anything (the fence makes it on its copy).
        let adds = body.iter().any(|(at, i, _)| {
            at == step
                && i.opcode == "add"
                && matches!(i.modifiers.as_slice(), [m] if m == "s32" || m == "u32")
        });
        if *guarded || !adds || writes.get(&index) != Some(&2) {
            continue;
        }
        let Some(name) = test.operands.get(1).and_then(Operand::register).map(|r| r.name.clone()) else {
            continue;
        };
        out.push(Candidate { label, index, name, bound, check, step: *step, branch: *branch });
    }
    out
}

/// The registers written more than once whose first write, in the body's order, is `mov.u32 R,
/// %ctaid.x` (`%ntid.x`, `%tid.x`, `%tid.y`), and where that value holds.
#[derive(Debug, Default)]
struct FirstSpecials {
    /// Each such register's value, first write's instruction index and second write's.
    writes: HashMap<RegisterId, (Value, usize, usize)>,
    /// The backward branches: (instruction index, the index of its target's first instruction).
    back: Vec<(usize, usize)>,
}

impl FirstSpecials {
    /// Register `r`'s first write's value, where it is its value at instruction `at`: `at` is
    /// after the first write and before the second, and no backward branch at or after the
    /// second reaches back to `at` or before (so no later write reaches `at`).
    fn value(&self, r: RegisterId, at: usize) -> Option<Value> {
        let &(value, first, second) = self.writes.get(&r)?;
        let holds =
            first < at && at < second && !self.back.iter().any(|&(from, to)| from >= second && to <= at);
        holds.then_some(value)
    }
}

/// The special register `operand` names, where it is one the proofs know: `%ctaid.x`,
/// `%ntid.x`, `%tid.x` or `%tid.y`.
fn special_value(operand: Option<&Operand>) -> Option<Value> {
    match operand.map(|o| &o.kind) {
        Some(OperandKind::Register(r)) => match (r.name.as_str(), r.component.map(|c| c.name())) {
            ("%ctaid", Some("x")) => Some(Value::Ctaid),
            ("%ntid", Some("x")) => Some(Value::Ntid),
            ("%tid", Some("x")) => Some(Value::Tid),
            ("%tid", Some("y")) => Some(Value::TidY),
            _ => None,
        },
        _ => None,
    }
}

/// The body's [`FirstSpecials`], given how often each register is written.
fn first_specials(flat: &Flat<'_>, writes: &HashMap<RegisterId, usize>) -> FirstSpecials {
    let mut out = FirstSpecials::default();
    let mut firsts: HashMap<RegisterId, (Option<Value>, usize, usize)> = HashMap::new();
    let mut labels: HashMap<&str, usize> = HashMap::new();
    let mut branches: Vec<(usize, &str)> = Vec::new();
    let mut at = 0usize;
    for item in &flat.items {
        match item {
            FlatItem::Label(l) => {
                labels.insert(l.name.as_str(), at);
            }
            FlatItem::Instruction(i, registers) => {
                if i.opcode == "bra"
                    && let Some(OperandKind::Symbol { name, .. }) = i.operands.first().map(|o| &o.kind)
                {
                    branches.push((at, name.as_str()));
                }
                for name in super::body::defines(i) {
                    let Some(Resolved::Declared(id)) = kernel_args_ptx::resolved_in(registers, name) else {
                        continue;
                    };
                    if writes.get(&id).is_none_or(|&n| n < 2) {
                        continue;
                    }
                    // The first write (its value, where it reads a special register), then the
                    // second.
                    match firsts.get_mut(&id) {
                        Some((_, _, second)) if *second == usize::MAX => *second = at,
                        Some(_) => {}
                        None => {
                            let read = i.opcode == "mov"
                                && matches!(i.modifiers.as_slice(), [m] if m == "u32")
                                && i.guard.is_none();
                            let value = if read { special_value(i.operands.get(1)) } else { None };
                            firsts.insert(id, (value, at, usize::MAX));
                        }
                    }
                }
                at = at.saturating_add(1);
            }
            _ => {}
        }
    }
    out.back = branches
        .into_iter()
        .filter_map(|(from, name)| labels.get(name).filter(|&&to| to <= from).map(|&to| (from, to)))
        .collect();
    out.writes = firsts
        .into_iter()
        .filter_map(|(r, (value, first, second))| Some((r, (value?, first, second))))
        .collect();
    out
}

/// The parameter an `ld.param` reads at offset 0 of operand `k`.
fn param_of(i: &Instruction, k: usize) -> Option<&str> {
    let address = i.operands.get(k)?.address()?;
    match &address.base {
        AddressBase::Symbol(name) if address.offset == 0 => Some(name),
        _ => None,
    }
}
