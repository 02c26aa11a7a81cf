//! The rewriter: a parsed module, every entry fenced (see the module `fence`'s documentation
//! for what that means). It works on the parsed form and gives a parsed form back; the module
//! the driver loads is printed from it.
//!
//! Per entry it adds the hidden parameters, the fence's registers, its windows (computed once,
//! at the top of the body, before any instruction of the kernel's own), and before each access
//! the instructions that clamp its address into the window of the state space it reaches.
//! The sequences are written so that the checker can follow them: each clamp ends in an
//! address register (`%__kargs_a0`, `%__kargs_a1`) that the access then uses as it is.
//!
//! A clamp, for a window with base `b` and length `len`, an access of `w` bytes at `e`, in
//! 32-bit offsets (every window is shorter than 4 GiB: the launcher gives a fence of at most
//! [`MAX_FENCE_LEN`](super::MAX_FENCE_LEN) bytes, and the shared, local and constant spaces are
//! addressed in 32 bits), with `lim` = `len - w` computed once per entry as a 32-bit register:
//!
//! ```text
//! cvt.u32.u64  u, e           // the address's low 32 bits: in the global window, an offset
//!                             // into the fence already
//! min.u32      k, u, lim      // at most the last place an access of w bytes fits
//! and.b32      k, k, -w       // aligned to w (w > 1)
//! cvt.u64.u32  c, k
//! add.u64      a, c, b        // inside [b, b + len - w], aligned to w when b is aligned to 16
//! xor.b32      d, u, k        // non-zero when the access was moved...
//! or.b32       v, v, d        // ...which the thread keeps (under the access's own guard)
//! ```
//!
//! A shared, local or constant window is computed (its base `b`, its end and length, from its
//! variables' addresses) and clamped in 32 bits, its state space's own addresses; only the
//! clamped address is widened:
//!
//! ```text
//! cvt.u32.u64  u, e
//! sub.u32      u, u, b        // the offset from the window's start (wrapping)
//! min.u32      k, u, lim
//! and.b32      k, k, -w
//! add.u32      j, k, b
//! cvt.u64.u32  a, j           // the same address in 64 bits
//! ```
//!
//! **A global address is an offset into the fence.** The launcher gives a fenced kernel each
//! pointer parameter as its window's offset from the fence's start (in direct mode the guest's
//! own pointer, in staged mode the window's place in the arena), and the fence's base only as a
//! hidden parameter that the kernel's code cannot name; so no host or device address reaches a
//! register the kernel can store. Every global access adds the base to the clamped offset. A
//! `cvta` between generic and global leaves an address as it is (on a GPU and in the emulator),
//! so nvcc's `cvta.to.global` of a pointer parameter still gives the offset.
//!
//! Whatever `e` is, `a` is in the window: the result is the base plus a clamped offset. Only
//! the low 32 bits of `e` decide where the access lands and whether it is noted, so ptxas keeps
//! the kernel's own address arithmetic in 32 bits. An address 4 GiB or more from the window is
//! moved like any other; it is noted unless its low 32 bits already name an aligned place
//! inside the window, in which case it runs there unnoted (inside the fence, like every access;
//! see `docs/RISKS.md`). A generic access notes the clamp of the window its address resolved
//! to: the global one's, replaced (under `isspacep`'s predicate) by the shared or local one's.
//!
//! **Proven accesses** (`prove.rs`) are not clamped: each becomes `[%__kargs_aN + c]` with
//! `add.s64 %__kargs_aN, %__kargs_ip<proof>, %__kargs_io<size>`, the proof's pointer's address
//! plus the fence's own index times the element's size, after the fence's own bounds check
//! (`Context::bounds_check`) and with the index, the bounds and the addresses read in the
//! leading run (`proof_prologue`). A ranged proof's access (`Context::proven_access`) is the
//! pointer's address plus the kernel's own index confined to `[0, hi]` (`min.u32` with the
//! proof's `%__kargs_yh<proof>`) and scaled as the kernel scales it; the clamped form notes an
//! index it moved.
//!
//! **Groups.** Accesses through one register at constant offsets (`[%r+0]`, `[%r+4]`, ...,
//! as nvcc writes an unrolled loop over a tile), into one window, unguarded, with no label,
//! branch, exit or write of the register between the first and the last, share one clamp: the
//! lowest address is clamped so that the group's whole span fits (the lowest offset to the
//! highest end, at most the window's shortest length: the launcher's
//! [`MIN_FENCE_LEN`] for the fence), rounded to the widest access, into a
//! register `%__kargs_rN`, and each access becomes `[%__kargs_rN + its offset from the
//! lowest]`. The offsets from the lowest must be multiples of the widest access, so the group
//! is moved exactly when one of its accesses would have been (out of the window, or
//! misaligned). A global group through a register whose value is at most a constant (`bounds`:
//! `printf`'s records' places) and whose accesses end inside the module's variables at the
//! fence's start is clamped to that constant instead, which no correct access passes, the module
//! asking for a fence that long; a global access at a constant offset that every fence holds
//! (a module variable's, by its name or through a register written once with its offset, within
//! [`MIN_FENCE_LEN`] or the module's variables) is the fence's base plus the offset.
//!
//! **Fragments.** A `wmma.load` or `wmma.store` of the global or shared space is one access of
//! its whole fragment in its window (a generic one: the fence's, or the shared window's where
//! `isspacep.shared` says so),
//! whose reach depends on its stride: the stride is bounded first (0 where the fragment would
//! not fit with it), then the offset clamped against the fence's length less the fragment's
//! reach (`Context::fragment` shows the sequence). A global fragment whose stride is a constant
//! ([`fixed_stride`]) has a known reach, at most [`MAX_REACH`](super::MAX_REACH): its offset is
//! clamped against the fence's length less that reach, as one access, and the stride written as
//! the constant; the module then needs a fence that long (`FencedModule::fence_min_len`).
//!
//! A generic access takes the global clamp, and where the entry has a shared (or local) window
//! and `isspacep.shared` (`isspacep.local`) says the address is there, the same clamp in that
//! window through `cvta.to.shared`/`cvta.shared`: an address in none of the windows lands in the
//! fence.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kernel_args_ptx::{
    Address, AddressBase, Block, Flat, FlatItem, Function, FunctionKind, Guard, Immediate, Instruction, Item,
    Linkage, Module, Operand, OperandKind, Param, Register, RegisterId, Resolved, Span, StateSpace,
    Statement, Type, Variable, flatten,
};

use super::isa::{self, Access, Class, Space};
use super::prove::{Check, SharedHi};
use super::{
    FENCE_PARAMS, FLAG_BUDGET, FLAG_REACHED_OUT, FLAG_TRAPPED, FenceError, FenceRefusal, MIN_FENCE_LEN,
    ProofKind, WINDOW_ALIGN,
};

/// The fence's names: its registers, its exit label, its padding variables.
pub(super) mod names {
    /// The effective address of an access.
    pub const E: &str = "%__kargs_e";
    /// The clamped offset.
    pub const C: &str = "%__kargs_c";
    /// The offset's low 32 bits.
    pub const U: &str = "%__kargs_u";
    /// The clamped 32-bit offset.
    pub const K: &str = "%__kargs_k";
    /// A generic access's address in the shared or local window.
    pub const X: &str = "%__kargs_x";
    /// A window's computation's scratch.
    pub const T: &str = "%__kargs_t";
    /// A shared, local or constant window's computation's scratch (32 bits: those windows are
    /// computed in the 32-bit addresses of their state space).
    pub const H: &str = "%__kargs_h";
    /// A clamped address in a shared, local or constant window, in 32 bits, before it is
    /// widened into the address register.
    pub const J: &str = "%__kargs_j";
    /// Whether an access was moved.
    pub const D: &str = "%__kargs_d";
    /// Whether any access of the thread was moved.
    pub const V: &str = "%__kargs_v";
    /// Whether the thread reached a `trap`, `brkpt` or failed `assert` (entries with one only).
    pub const W: &str = "%__kargs_w";
    /// The backward branches the thread may still take (entries with a backward branch only).
    pub const B: &str = "%__kargs_b";
    /// The budget's test: the branch would be taken, and the budget is spent.
    pub const Q: &str = "%__kargs_q";
    /// Where a thread that spent its budget leaves: the budget's byte of the flag set, then the
    /// fence's exit.
    pub const BUDGET: &str = "$__kargs_budget";
    /// A counted branch that leaves its loop on a spent budget goes: the kernel's guard holds,
    /// and the budget is not spent.
    pub const GO: &str = "%__kargs_go";
    /// The flag's address.
    pub const FLAG: &str = "%__kargs_flag";
    /// The dynamic shared memory's size.
    pub const N: &str = "%__kargs_n";
    /// `%lanemask_eq`.
    pub const LANE: &str = "%__kargs_lm";
    /// A member mask with the executing thread in it.
    pub const MASK: &str = "%__kargs_m";
    /// `isspacep.shared`.
    pub const PS: &str = "%__kargs_ps";
    /// `isspacep.local`.
    pub const PL: &str = "%__kargs_pl";
    /// No access was moved.
    pub const P: &str = "%__kargs_p";
    /// The exit every `ret` and `exit` goes through once the thread may have noted something
    /// (before that, an exit, or a branch to a label whose first instruction is one, is a
    /// plain `ret`).
    pub const EXIT: &str = "$__kargs_exit";
    /// The address registers, one per address operand of an instruction.
    pub const ADDRESS: [&str; 2] = ["%__kargs_a0", "%__kargs_a1"];
    /// A group's clamped register (`%__kargs_r0`, `%__kargs_r1`, ...).
    pub const GROUP: &str = "%__kargs_r";
    /// The thread's index in the grid, `%ctaid.x * %ntid.x + %tid.x`, and its three parts
    /// (entries with a proof only, `prove.rs`).
    pub const INDEX: &str = "%__kargs_ix";
    pub const INDEX_CTAID: &str = "%__kargs_ic";
    pub const INDEX_NTID: &str = "%__kargs_in";
    pub const INDEX_TID: &str = "%__kargs_it";
    /// A proof's bound: the parameter's value (`%__kargs_im<parameter>`; `%__kargs_il` for
    /// an 8-byte one).
    pub const BOUND: &str = "%__kargs_im";
    pub const BOUND64: &str = "%__kargs_il";
    /// The thread's 64-bit index in the grid, and its two parts: `%ctaid.x * %ntid.x` in 64
    /// bits and `%tid.x` widened (entries with a 64-bit indexed proof only).
    pub const INDEX64: &str = "%__kargs_iy";
    pub const INDEX64_GRID: &str = "%__kargs_iw";
    pub const INDEX64_TID: &str = "%__kargs_iv";
    /// The 64-bit index times an element's size (`%__kargs_iq<size>`).
    pub const PRODUCT64: &str = "%__kargs_iq";
    /// A proof's pointer's address (`%__kargs_ip<proof>`).
    pub const POINTER: &str = "%__kargs_ip";
    /// The index times an element's size (`%__kargs_io<size>`).
    pub const PRODUCT: &str = "%__kargs_io";
    /// A grid-stride loop's index, the fence's copy (`prove::StrideLoop`); its test, that it is
    /// below the loop's bound; and it times an element's size (`%__kargs_ij<size>`), made at
    /// the loop's head.
    pub const WALK: &str = "%__kargs_ik";
    pub const WALK_TEST: &str = "%__kargs_iz";
    pub const WALK_PRODUCT: &str = "%__kargs_ij";
    /// The fence's own bounds check: the index at least the bound (`%__kargs_ig<bound><s32|s64|u64>`).
    pub const OUTSIDE: &str = "%__kargs_ig";
    /// A ranged proof's highest index (`%__kargs_yh<proof>`).
    pub const RANGE_HI: &str = "%__kargs_yh";
    /// A ranged access's index, confined to its proof's range, one per address operand.
    pub const RANGED: [&str; 2] = ["%__kargs_yx0", "%__kargs_yx1"];
    /// That index times the element's size, one per address operand.
    pub const RANGED_PRODUCT: [&str; 2] = ["%__kargs_yo0", "%__kargs_yo1"];
    /// A confined shared access's array's address (`%__kargs_zv<j>`, the `j`th of the arrays
    /// the entry's confined accesses reach, by name), read once in the leading run.
    pub const SHARED_ARRAY: &str = "%__kargs_zv";
    /// A confined shared access's index shifted, and that plus the array's address, one per
    /// address operand.
    pub const SHARED_OFFSET: [&str; 2] = ["%__kargs_zo0", "%__kargs_zo1"];
    pub const SHARED_SUM: [&str; 2] = ["%__kargs_zs0", "%__kargs_zs1"];
    /// The launch's dynamic shared memory's size, for the confined accesses into an
    /// `.extern .shared` array.
    pub const DYNAMIC: &str = "%__kargs_zn";
    /// That size less a reach (`%__kargs_zr<reach>`): the last offset at which the reach fits.
    pub const DYNAMIC_ROOM: &str = "%__kargs_zr";
    /// That shifted down (`%__kargs_zh<reach>_<shift>`): the highest index.
    pub const DYNAMIC_HI: &str = "%__kargs_zh";
    /// A confinement made once in the leading run (`%__kargs_xt<n>`: `%tid`'s component that
    /// is the index; `%__kargs_xr<n>`: the row's; `%__kargs_xm<n>`: the index confined, or the
    /// two-dimensional offset; `%__kargs_xc<n>`: the confined offset from the array).
    pub const PRE_INDEX: &str = "%__kargs_xt";
    pub const PRE_ROW: &str = "%__kargs_xr";
    pub const PRE_MID: &str = "%__kargs_xm";
    pub const PRE_OFFSET: &str = "%__kargs_xc";
    /// A fragment's stride, aligned to 16 bytes.
    pub const STRIDE_ALIGNED: &str = "%__kargs_wa";
    /// That stride times the fragment's span, in 64 bits.
    pub const STRIDE_PRODUCT: &str = "%__kargs_wp";
    /// The fence's length less a fragment's line, in 64 bits.
    pub const LINE_LIMIT: &str = "%__kargs_wt";
    /// Whether the fragment would not fit in the fence with that stride.
    pub const STRIDE_OVER: &str = "%__kargs_wg";
    /// A fragment's stride, bounded so that the fragment fits in the fence.
    pub const STRIDE: &str = "%__kargs_ws";
    /// A generic fragment's stride bounded for the shared window.
    pub const STRIDE_SHARED: &str = "%__kargs_wz";
    /// A generic fragment's stride: the shared window's or the fence's, as its address is.
    pub const STRIDE_CHOSEN: &str = "%__kargs_wf";
    /// The stride times the fragment's span: how far its last line is from its first.
    pub const STRIDE_SPAN: &str = "%__kargs_wr";
    /// The last offset at which the fragment fits.
    pub const STRIDE_LIMIT: &str = "%__kargs_wl";
}

/// A window: the global fence, or the entry's shared, local or constant memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Window {
    Global,
    Shared,
    Local,
    Const,
}

impl Window {
    /// The letter of its registers: `%__kargs_{p}b` is the base, `%__kargs_{p}{w}` the last
    /// offset an access of `w` bytes may take (a 32-bit register).
    fn prefix(self) -> char {
        match self {
            Window::Global => 'g',
            Window::Shared => 's',
            Window::Local => 'l',
            Window::Const => 'c',
        }
    }

    fn base(self) -> String {
        format!("%__kargs_{}b", self.prefix())
    }

    fn limit(self, width: u64) -> String {
        format!("%__kargs_{}{width}", self.prefix())
    }

    fn space(self) -> StateSpace {
        match self {
            Window::Global => StateSpace::Global,
            Window::Shared => StateSpace::Shared,
            Window::Local => StateSpace::Local,
            Window::Const => StateSpace::Const,
        }
    }
}

/// What rewriting a module produced.
pub(super) struct Rewritten {
    pub(super) module: Module,
    pub(super) entries: Vec<String>,
    pub(super) clamped: usize,
    pub(super) static_accesses: usize,
    pub(super) widest: u64,
    /// Backward branches counted against the budget.
    pub(super) counted: usize,
    /// Those of them that leave their loop, not the kernel, on a spent budget.
    pub(super) leaving: usize,
    /// `wmma` fragments clamped whole that may reach the fence (global or generic; each counted
    /// in `clamped` too): the fence's base must then be aligned to 32.
    pub(super) fragments: usize,
    /// Global accesses left unclamped by a proof (`prove.rs`).
    pub(super) proven: usize,
    /// Each entry's proofs, in the order of `entries` and of their hidden parameters.
    pub(super) proofs: Vec<Vec<super::Proof>>,
}

/// Whether a name is one the fence reserves.
pub(super) fn reserved(name: &str) -> bool {
    name.trim_start_matches(['%', '$']).starts_with("__kargs_")
}

fn refuse(span: Span, statement: impl Into<String>, reason: FenceRefusal) -> FenceError {
    FenceError { line: span.line as usize, statement: statement.into(), reason }
}

/// An instruction as one line without its `;`.
pub(super) fn one_line(instruction: &Instruction) -> String {
    instruction.to_string().trim_end_matches(';').replace('\t', " ")
}

fn reg(name: &str) -> Operand {
    Operand::new(OperandKind::Register(Register::new(name)))
}

fn imm(value: i128) -> Operand {
    Operand::new(OperandKind::Immediate(Immediate::Int(value)))
}

fn sym(name: &str, offset: i64) -> Operand {
    Operand::new(OperandKind::Symbol { name: name.to_owned(), offset })
}

fn at(register: &str) -> Operand {
    Operand::new(OperandKind::Address(Address {
        base: AddressBase::Register(register.to_owned()),
        offset: 0,
    }))
}

/// An unguarded instruction of the fence's.
fn op(code: &str, modifiers: &[&str], operands: Vec<Operand>) -> Statement {
    guarded(None, code, modifiers, operands)
}

fn guarded(guard: Option<&Guard>, code: &str, modifiers: &[&str], operands: Vec<Operand>) -> Statement {
    Statement::Instruction(Instruction {
        span: Span::default(),
        guard: guard.cloned(),
        opcode: code.to_owned(),
        modifiers: modifiers.iter().map(|m| (*m).to_owned()).collect(),
        operands,
    })
}

/// `or.b32 %__kargs_v, %__kargs_v, %__kargs_d` under `guard`: the access's difference
/// (`%__kargs_d`, zero when the fence left it in place) recorded in the entry's note.
fn record(guard: Option<&Guard>) -> Statement {
    guarded(guard, "or", &["b32"], vec![reg(names::V), reg(names::V), reg(names::D)])
}

/// The registers the body writes once, each by a `mov` of a 32-bit integer constant: their
/// value wherever they are read (a register read before it is written holds an unspecified
/// value, which the constant may be).
fn constants(flat: &Flat) -> HashMap<RegisterId, u64> {
    let mut writes: HashMap<RegisterId, (usize, Option<u64>)> = HashMap::new();
    for item in &flat.items {
        let FlatItem::Instruction(i, registers) = item else { continue };
        let value = match (i.opcode.as_str(), i.modifiers.as_slice(), i.operands.get(1).map(|o| &o.kind)) {
            ("mov", [ty], Some(OperandKind::Immediate(Immediate::Int(v))))
                if i.operands.len() == 2 && matches!(ty.as_str(), "u32" | "b32" | "s32") =>
            {
                u32::try_from(*v).ok().map(u64::from)
            }
            _ => None,
        };
        for name in super::body::defines(i) {
            if let Some(Resolved::Declared(id)) = kernel_args_ptx::resolved_in(registers, name) {
                let (count, _) = writes.entry(id).or_insert((0, value));
                *count = count.saturating_add(1);
            }
        }
    }
    writes
        .into_iter()
        .filter(|(_, (count, _))| *count == 1)
        .filter_map(|(id, (_, v))| Some((id, v?)))
        .collect()
}

/// Whether an access of `width` bytes at the constant offset `at` into the fence is inside every
/// fence (the shortest, or the module's variables at its start, `room`) and aligned: it is then
/// the fence's base plus `at`, unclamped (the checker asks for a fence that long).
fn constant_fits(at: i64, width: u64, room: u64) -> bool {
    u64::try_from(at).is_ok_and(|k| {
        k.checked_rem(width) == Some(0)
            && k.checked_add(width).is_some_and(|end| end <= room.max(MIN_FENCE_LEN))
            && width <= u64::from(WINDOW_ALIGN)
    })
}

/// What [`bounds`] knows of a register: at most `max`, or exactly it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bound {
    max: u64,
    exact: bool,
}

/// The registers written once whose value is at most a constant (exactly, for `mov.u64 r, K`) on every path where the
/// program is correct: `mov.u64 r, K`; `selp.b64 r, x, K, p` with `p` from `setp.le.u64 p, x,
/// L` (at most the larger of `K` and `L`; `x` and `p` written once); `add.u64 r, a, b` of two
/// such (or a constant). `printf`'s records' places (`printf.rs`) are such. What the fence
/// makes of a bound confines the access whatever the value (the checker proves it); the bound
/// decides only that a correct access is not moved.
fn bounds(flat: &Flat) -> HashMap<RegisterId, Bound> {
    let mut writes: HashMap<RegisterId, usize> = HashMap::new();
    for item in &flat.items {
        let FlatItem::Instruction(i, registers) = item else { continue };
        for name in super::body::defines(i) {
            if let Some(Resolved::Declared(id)) = kernel_args_ptx::resolved_in(registers, name) {
                let count = writes.entry(id).or_default();
                *count = count.saturating_add(1);
            }
        }
    }
    let mut bounds: HashMap<RegisterId, Bound> = HashMap::new();
    // Predicates `x <= L`: (x, L).
    let mut at_most: HashMap<RegisterId, (RegisterId, u64)> = HashMap::new();
    for item in &flat.items {
        let FlatItem::Instruction(i, registers) = item else { continue };
        let id = |k: usize| match i.operands.get(k).map(|o| &o.kind) {
            Some(OperandKind::Register(r)) if r.component.is_none() => {
                match kernel_args_ptx::resolved_in(registers, &r.name) {
                    Some(Resolved::Declared(id)) if writes.get(&id) == Some(&1) => Some(id),
                    _ => None,
                }
            }
            _ => None,
        };
        let int = |k: usize| match i.operands.get(k).map(|o| &o.kind) {
            Some(OperandKind::Immediate(Immediate::Int(v))) => u64::try_from(*v).ok(),
            _ => None,
        };
        let value = |k: usize| int(k).or_else(|| id(k).and_then(|r| bounds.get(&r).map(|b| b.max)));
        let Some(dest) = id(0).filter(|_| i.guard.is_none()) else { continue };
        let m: Vec<&str> = i.modifiers.iter().map(String::as_str).collect();
        match (i.opcode.as_str(), m.as_slice(), i.operands.len()) {
            ("mov", ["u64" | "b64"], 2) => {
                if let Some(k) = int(1) {
                    bounds.insert(dest, Bound { max: k, exact: true });
                }
            }
            ("setp", ["le", "u64"], 3) => {
                if let (Some(x), Some(l)) = (id(1), int(2)) {
                    at_most.insert(dest, (x, l));
                }
            }
            ("selp", ["b64"], 4) => {
                if let (Some(x), Some(k), Some(p)) = (id(1), int(2), id(3))
                    && let Some(&(tested, l)) = at_most.get(&p)
                    && tested == x
                {
                    bounds.insert(dest, Bound { max: k.max(l), exact: false });
                }
            }
            ("add", ["u64" | "s64"], 3) => {
                if let Some(sum) = value(1).zip(value(2)).and_then(|(a, b)| a.checked_add(b)) {
                    bounds.insert(dest, Bound { max: sum, exact: false });
                }
            }
            _ => {}
        }
    }
    bounds
}

/// A fragment's stride where it is a constant (written, a register of [`constants`], or the
/// line's length where none is written) and a multiple of 16 bytes, with the fragment's reach
/// from its address at that stride: `(stride, line + stride * span)`.
fn fixed_stride(
    instruction: &Instruction,
    f: &isa::Fragment,
    registers: &[(&str, Resolved)],
    constants: &HashMap<RegisterId, u64>,
) -> Option<(u64, u64)> {
    let stride = match f.stride {
        None => f.line_elements,
        Some(k) => match &instruction.operands.get(k)?.kind {
            OperandKind::Immediate(Immediate::Int(v)) => u64::from(u32::try_from(*v).ok()?),
            OperandKind::Register(r) if r.component.is_none() => {
                match kernel_args_ptx::resolved_in(registers, &r.name)? {
                    Resolved::Declared(id) => *constants.get(&id)?,
                    Resolved::Special => return None,
                }
            }
            _ => return None,
        },
    };
    if f.stride_align == 0 || !stride.is_multiple_of(f.stride_align) {
        return None;
    }
    Some((stride, f.line_bytes.checked_add(stride.checked_mul(f.span)?)?))
}

/// The module's variables by name, by state space.
struct ModuleScope {
    variables: HashMap<String, Variable>,
    functions: BTreeSet<String>,
    /// The bytes of the module's variables at the fence's start (`lower.rs`): every launch's
    /// fence is at least this long.
    room: u64,
}

/// Rewrites every entry of `module`, whose variables take `room` bytes at the fence's start.
pub(super) fn rewrite(mut module: Module, aligned: bool, room: u64) -> Result<Rewritten, FenceError> {
    if module.address_size != Some(64) {
        return Err(refuse(Span::default(), "", FenceRefusal::AddressSize));
    }
    let shared_align = shared_alignment(&module);
    let mut scope = ModuleScope { variables: HashMap::new(), functions: BTreeSet::new(), room };
    for item in &mut module.items {
        match item {
            Item::Variable(v) => {
                if reserved(&v.name) {
                    return Err(refuse(v.span, v.to_string(), FenceRefusal::ReservedName));
                }
                match (v.space, v.ty) {
                    (_, Type::TexRef | Type::SamplerRef | Type::SurfRef) | (StateSpace::Tex, _) => {
                        return Err(refuse(v.span, v.to_string(), FenceRefusal::TextureOrSurface));
                    }
                    (StateSpace::Global, _) => {
                        return Err(refuse(v.span, v.to_string(), FenceRefusal::ModuleGlobal));
                    }
                    (StateSpace::Const | StateSpace::Shared | StateSpace::Local, _) => {
                        let dynamic = v.space == StateSpace::Shared && v.linkage == Some(Linkage::Extern);
                        if v.linkage == Some(Linkage::Extern) && !dynamic {
                            return Err(refuse(v.span, v.to_string(), FenceRefusal::NotAllowed));
                        }
                        if !dynamic && v.size().is_none() {
                            return Err(refuse(v.span, v.to_string(), FenceRefusal::NotAllowed));
                        }
                        // Every variable of a window is aligned to 16, so the window's start is
                        // (shared ones to 32 where a fragment is loaded or stored there).
                        let align = if v.space == StateSpace::Shared { shared_align } else { WINDOW_ALIGN };
                        v.align = Some(v.align.unwrap_or(1).max(align));
                    }
                    _ => return Err(refuse(v.span, v.to_string(), FenceRefusal::NotAllowed)),
                }
                scope.variables.insert(v.name.clone(), v.clone());
            }
            Item::Function(f) => {
                if reserved(&f.name) {
                    return Err(refuse(f.span, f.name.clone(), FenceRefusal::ReservedName));
                }
                match (f.kind, &f.body) {
                    (FunctionKind::Func, Some(_)) => {
                        return Err(refuse(
                            f.span,
                            format!(".func {}", f.name),
                            FenceRefusal::DeviceFunction,
                        ));
                    }
                    (FunctionKind::Entry, None) => {
                        return Err(refuse(f.span, format!(".entry {}", f.name), FenceRefusal::Malformed));
                    }
                    _ => {}
                }
                scope.functions.insert(f.name.clone());
            }
            Item::Pragma(p) => return Err(refuse(p.span, p.to_string(), FenceRefusal::Pragma)),
        }
    }
    let mut out = Rewritten {
        module: Module { items: Vec::new(), ..module.clone() },
        entries: Vec::new(),
        clamped: 0,
        static_accesses: 0,
        widest: 0,
        counted: 0,
        leaving: 0,
        fragments: 0,
        proven: 0,
        proofs: Vec::new(),
    };
    let mut const_pad = false;
    for item in module.items {
        match item {
            Item::Function(mut f) if f.kind == FunctionKind::Entry => {
                let entry = EntryRewriter::new(&f, &scope, aligned, shared_align)?;
                let (body, stats) = entry.rewrite(&f)?;
                const_pad |= stats.const_pad;
                out.clamped = out.clamped.saturating_add(stats.clamped);
                out.static_accesses = out.static_accesses.saturating_add(stats.static_accesses);
                out.widest = out.widest.max(stats.widest);
                out.counted = out.counted.saturating_add(stats.counted);
                out.leaving = out.leaving.saturating_add(stats.leaving);
                out.fragments = out.fragments.saturating_add(stats.fragments);
                out.proven = out.proven.saturating_add(stats.proven);
                // Each proof's pointer's address (and a ranged one's range), then the fence's four.
                let proof_names: Vec<String> =
                    stats.proofs.iter().flat_map(super::Proof::param_names).collect();
                out.proofs.push(stats.proofs);
                for name in proof_names.iter().map(String::as_str).chain(FENCE_PARAMS) {
                    f.params.push(Param {
                        span: Span::default(),
                        space: StateSpace::Param,
                        align: None,
                        vector: None,
                        ty: Type::U64,
                        ptr: None,
                        name: name.to_owned(),
                        dims: Vec::new(),
                    });
                }
                f.body = Some(body);
                out.entries.push(f.name.clone());
                out.module.items.push(Item::Function(f));
            }
            other => out.module.items.push(other),
        }
    }
    if const_pad {
        // One padding table for the module's constant window, before the entries that use it.
        let at = out
            .module
            .items
            .iter()
            .position(|i| matches!(i, Item::Function(_)))
            .unwrap_or(out.module.items.len());
        out.module.items.insert(
            at,
            Item::Variable(pad(
                StateSpace::Const,
                "__kargs_const_pad",
                WINDOW_ALIGN,
                u64::from(WINDOW_ALIGN),
            )),
        );
    }
    Ok(out)
}

/// A variable of `len` bytes, aligned to `align`, that gives a window its minimum length.
fn pad(space: StateSpace, name: &str, align: u32, len: u64) -> Variable {
    Variable {
        span: Span::default(),
        linkage: None,
        space,
        align: Some(align),
        vector: None,
        ty: Type::B8,
        name: name.to_owned(),
        dims: vec![Some(len)],
        init: None,
    }
}

/// The alignment of the module's shared variables: 16, or 32 where an entry loads or stores a
/// `wmma` fragment in shared memory or through a generic address (the fence clamps its address
/// to a multiple of 32 from the shared window's start, the lowest of them).
fn shared_alignment(module: &Module) -> u32 {
    let mut fragment = false;
    for item in &module.items {
        if let Item::Function(Function { body: Some(body), .. }) = item {
            super::body::for_each_instruction(body, &mut |i| {
                // A fragment in shared memory, or a generic one (which may be there).
                fragment |= i.opcode == "wmma"
                    && matches!(i.modifiers.first().map(String::as_str), Some("load" | "store"))
                    && !i.modifiers.iter().any(|m| m == "global");
            });
        }
    }
    if fragment { super::FRAGMENT_BASE_ALIGN as u32 } else { WINDOW_ALIGN }
}

/// What rewriting one entry counted.
struct EntryStats {
    clamped: usize,
    proven: usize,
    proofs: Vec<super::Proof>,
    static_accesses: usize,
    widest: u64,
    counted: usize,
    leaving: usize,
    fragments: usize,
    const_pad: bool,
}

/// One entry's plan: its variables, the windows it needs and their widths.
struct EntryRewriter<'m> {
    module: &'m ModuleScope,
    /// The entry's own top-level variables (moved to the body's top), by name.
    own: BTreeMap<String, Variable>,
    /// The widths clamped into each window.
    windows: BTreeMap<Window, BTreeSet<u64>>,
    /// Whether the entry has a `wmma` fragment whose stride the fence bounds (`isa::Fragment`;
    /// not one of a constant stride, clamped as one access).
    fragments: bool,
    /// The alignment of shared variables (`shared_alignment`).
    shared_align: u32,
    /// The longest line of a fragment in shared memory: the shared window is at least this long.
    shared_line: u64,
    /// Whether a generic fragment may be in the shared window (its stride is chosen between
    /// two clamps).
    either: bool,
    /// Register types by name at each instruction: resolved per instruction in `rewrite`.
    params: HashMap<String, u64>,
    /// The aligned form: a fence whose length is a power of two and whose base is aligned to
    /// it, so a global access is masked into it (see the module's documentation).
    aligned: bool,
}

impl<'m> EntryRewriter<'m> {
    fn new(
        f: &Function,
        module: &'m ModuleScope,
        aligned: bool,
        shared_align: u32,
    ) -> Result<EntryRewriter<'m>, FenceError> {
        let mut params = HashMap::new();
        for p in &f.params {
            if reserved(&p.name) {
                return Err(refuse(p.span, p.to_string(), FenceRefusal::ReservedName));
            }
            params.insert(p.name.clone(), p.size().unwrap_or(0));
        }
        let mut own = BTreeMap::new();
        if let Some(body) = &f.body {
            for statement in &body.statements {
                if let Statement::Variable(v) = statement
                    && matches!(v.space, StateSpace::Shared | StateSpace::Local)
                {
                    let mut v = v.clone();
                    let align = if v.space == StateSpace::Shared { shared_align } else { WINDOW_ALIGN };
                    v.align = Some(v.align.unwrap_or(1).max(align));
                    own.insert(v.name.clone(), v);
                }
            }
        }
        Ok(EntryRewriter {
            module,
            own,
            windows: BTreeMap::new(),
            fragments: false,
            shared_align,
            shared_line: 0,
            either: false,
            params,
            aligned,
        })
    }

    fn variable(&self, name: &str) -> Option<&Variable> {
        self.own.get(name).or_else(|| self.module.variables.get(name))
    }

    /// Rewrites the entry's body (see the module's documentation).
    fn rewrite(mut self, f: &Function) -> Result<(Block, EntryStats), FenceError> {
        let Some(body) = &f.body else {
            return Err(refuse(f.span, format!(".entry {}", f.name), FenceRefusal::Malformed));
        };
        let flat = flatten(f).map_err(|e| FenceError {
            line: e.line as usize,
            statement: String::new(),
            reason: FenceRefusal::Unreadable(e.kind),
        })?;
        // A call the fence did not inline (`inline.rs`) is refused as the call, before the
        // stores of its call sequence are.
        if let Some(call) = flat.items.iter().find_map(|item| match item {
            FlatItem::Instruction(i, _) if i.opcode == "call" => Some(i),
            _ => None,
        }) {
            return Err(refuse(call.span, one_line(call), FenceRefusal::Call));
        }
        // Every name the body uses, checked; the register types of every instruction, by the
        // instruction's place in the flat order.
        let mut types: Vec<HashMap<String, u64>> = Vec::new();
        let mut referenced: BTreeSet<String> = BTreeSet::new();
        for item in &flat.items {
            match item {
                FlatItem::Label(l) if reserved(&l.name) => {
                    return Err(refuse(l.span, l.name.clone(), FenceRefusal::ReservedName));
                }
                FlatItem::Pragma(p) if p.strings != ["nounroll"] => {
                    return Err(refuse(p.span, p.to_string(), FenceRefusal::Pragma));
                }
                FlatItem::Instruction(i, regs) => {
                    let mut map = HashMap::new();
                    for (name, resolved) in regs {
                        if reserved(name) {
                            return Err(refuse(i.span, one_line(i), FenceRefusal::ReservedName));
                        }
                        let size = match resolved {
                            Resolved::Declared(id) => flat.type_of(*id).and_then(|t| {
                                if t.vector.is_some() {
                                    return None;
                                }
                                match t.ty {
                                    Type::B16 | Type::U16 | Type::S16 => Some(2),
                                    Type::B32 | Type::U32 | Type::S32 => Some(4),
                                    Type::B64 | Type::U64 | Type::S64 => Some(8),
                                    _ => None,
                                }
                            }),
                            Resolved::Special => None,
                        };
                        if let Some(size) = size {
                            map.insert((*name).to_owned(), size);
                        }
                    }
                    for operand in &i.operands {
                        for s in operand.symbols() {
                            if reserved(s) {
                                return Err(refuse(i.span, one_line(i), FenceRefusal::ReservedName));
                            }
                            if self.variable(s).is_some() {
                                referenced.insert(s.to_owned());
                            }
                        }
                    }
                    types.push(map);
                }
                _ => {}
            }
        }
        for name in body_register_names(body) {
            if reserved(&name) {
                return Err(refuse(body.span, name, FenceRefusal::ReservedName));
            }
        }
        // The windows each address needs, and the accesses proven by their names alone.
        let mut plans: Vec<Vec<Plan>> = Vec::new();
        let mut classes: Vec<Class> = Vec::new();
        let mut stats = EntryStats {
            clamped: 0,
            proven: 0,
            proofs: Vec::new(),
            static_accesses: 0,
            widest: 0,
            counted: 0,
            leaving: 0,
            fragments: 0,
            const_pad: false,
        };
        let mut traps = 0usize;
        // The backward branches, by instruction index: each is counted against the budget.
        let mut backward_at: BTreeSet<usize> = BTreeSet::new();
        let mut labels_seen: BTreeSet<&str> = BTreeSet::new();
        // Where each label stands (the index of the instruction after it), which instructions
        // wait for other threads, and each backward branch's target: the loops' regions.
        let mut label_at: BTreeMap<&str, usize> = BTreeMap::new();
        let mut waits: Vec<bool> = Vec::new();
        let mut warp_waits: Vec<bool> = Vec::new();
        let mut back_edges: Vec<(usize, usize, bool)> = Vec::new();
        let mut counter = 0usize;
        let constants = constants(&flat);
        // Global fragments whose stride is a constant and whose reach is at most `MAX_REACH`:
        // by instruction index, the stride and the fragment's reach.
        let mut fixed_strides: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
        for item in &flat.items {
            if let FlatItem::Label(l) = item {
                labels_seen.insert(&l.name);
                label_at.insert(&l.name, counter);
            }
            let FlatItem::Instruction(instruction, registers) = item else { continue };
            waits.push(isa::waits(instruction));
            warp_waits.push(isa::waits_for_warp(instruction));
            let class = isa::classify(instruction)
                .map_err(|reason| refuse(instruction.span, one_line(instruction), reason))?;
            if instruction
                .operands
                .iter()
                .flat_map(Operand::symbols)
                .any(|s| self.module.functions.contains(s))
            {
                return Err(refuse(instruction.span, one_line(instruction), FenceRefusal::FunctionAddress));
            }
            let mut plan = Vec::new();
            match &class {
                Class::Access(accesses) => {
                    for access in accesses {
                        let p = self.plan(instruction, access, types.get(counter))?;
                        match p {
                            Plan::Static => stats.static_accesses = stats.static_accesses.saturating_add(1),
                            Plan::Clamp { .. } | Plan::Grouped { .. } | Plan::Proven(_) | Plan::Shared(_) => {
                                stats.clamped = stats.clamped.saturating_add(1);
                                stats.widest = stats.widest.max(access.width);
                            }
                        }
                        plan.push(p);
                    }
                }
                Class::Fragment(fragment) => {
                    let window = if fragment.space == Space::Shared {
                        self.shared_line = self.shared_line.max(fragment.line_bytes);
                        Window::Shared
                    } else {
                        Window::Global
                    };
                    // Of the global space only: a generic fragment may be in the shared window,
                    // whose clamp the bounded stride chooses with the address.
                    let fixed = fixed_stride(instruction, fragment, registers, &constants)
                        .filter(|(_, reach)| fragment.space == Space::Global && *reach <= super::MAX_REACH);
                    if let Some(fixed) = fixed {
                        fixed_strides.insert(counter, fixed);
                    }
                    let reach = fixed.map_or(fragment.line_bytes, |(_, reach)| reach);
                    self.windows.entry(window).or_default().insert(reach);
                    self.fragments |= fixed.is_none();
                    stats.clamped = stats.clamped.saturating_add(1);
                    if window == Window::Global {
                        stats.fragments = stats.fragments.saturating_add(1);
                    }
                }
                Class::Trap => traps = traps.saturating_add(1),
                Class::Branch if backward(instruction, |l| labels_seen.contains(l)) => {
                    backward_at.insert(counter);
                    let target = instruction.operands.iter().find_map(|o| match &o.kind {
                        OperandKind::Symbol { name, .. } => label_at.get(name.as_str()).copied(),
                        _ => None,
                    });
                    if let Some(target) = target {
                        back_edges.push((target, counter, instruction.guard.is_some()));
                    }
                }
                _ => {}
            }
            plans.push(plan);
            classes.push(class);
            counter = counter.saturating_add(1);
        }
        // Global accesses a bounds check of the kernel's proves inside the fence: unclamped.
        let externs: Vec<&str> = self
            .module
            .variables
            .values()
            .filter(|v| v.space == StateSpace::Shared && v.linkage == Some(Linkage::Extern))
            .map(|v| v.name.as_str())
            .collect();
        let proven = super::prove::find(body, &flat, &classes, &f.params, &externs);
        for (&(at, slot), access) in &proven.accesses {
            if let Some(plan) = plans.get_mut(at).and_then(|p| p.get_mut(slot)) {
                *plan = Plan::Proven(access.clone());
                stats.clamped = stats.clamped.saturating_sub(1);
                stats.proven = stats.proven.saturating_add(1);
            }
        }
        for (&(at, slot), access) in &proven.shared {
            if let Some(plan) = plans.get_mut(at).and_then(|p| p.get_mut(slot)) {
                *plan = Plan::Shared(access.clone());
            }
        }
        stats.proofs = proven.proofs.clone();
        // Where every shared access is confined by its index, no access needs the shared
        // window (nor its pad, which would move the entry's arrays): a generic access adds it
        // back below.
        let shared_clamped =
            plans.iter().flatten().any(|p| matches!(p, Plan::Clamp { window: Window::Shared, .. }));
        let shared_fragment =
            classes.iter().any(|c| matches!(c, Class::Fragment(f) if f.space == Space::Shared));
        if !shared_clamped && !shared_fragment {
            self.windows.remove(&Window::Shared);
        }
        // The entry's variables: its own `.shared` and `.local` at the top of its body (which its
        // windows' computation names), nothing else.
        for statement in &body.statements {
            if let Statement::Variable(v) = statement {
                if reserved(&v.name) {
                    return Err(refuse(v.span, v.to_string(), FenceRefusal::ReservedName));
                }
                if !matches!(v.space, StateSpace::Shared | StateSpace::Local) || v.size().is_none() {
                    return Err(refuse(v.span, v.to_string(), FenceRefusal::NotAllowed));
                }
            }
        }
        if let Some(v) = nested_variables(body).first() {
            return Err(refuse(v.span, v.to_string(), FenceRefusal::NestedVariable));
        }
        // Windows that generic accesses use where the entry has them.
        let has_variables = |space: StateSpace| {
            self.own.values().any(|v| v.space == space)
                || referenced.iter().any(|n| self.variable(n).is_some_and(|v| v.space == space))
        };
        let shared_window = self.windows.contains_key(&Window::Shared) || has_variables(StateSpace::Shared);
        let local_window = self.windows.contains_key(&Window::Local) || has_variables(StateSpace::Local);
        // A generic fragment may be in the shared window too.
        for class in &classes {
            if let Class::Fragment(f) = class
                && matches!(f.space, Space::Generic { .. })
                && shared_window
            {
                self.windows.entry(Window::Shared).or_default().insert(f.line_bytes);
                self.shared_line = self.shared_line.max(f.line_bytes);
                self.either = true;
            }
        }
        for plan in plans.iter().flatten() {
            if let Plan::Clamp { generic: Some(local), width, .. } = plan {
                self.windows.entry(Window::Global).or_default().insert(*width);
                if shared_window {
                    self.windows.entry(Window::Shared).or_default().insert(*width);
                }
                if local_window && *local {
                    self.windows.entry(Window::Local).or_default().insert(*width);
                }
            }
        }
        // Accesses through one register at constant offsets: one clamp each group.
        let own_variables: Vec<Variable> = self.own.values().cloned().collect();
        // A window is at least as long as its longest variable, and at least 16 bytes.
        let lengths: BTreeMap<Window, u64> = [Window::Shared, Window::Local, Window::Const]
            .into_iter()
            .map(|window| {
                let members = self.members(window, &referenced, &own_variables);
                let longest = members.iter().filter_map(|(_, size)| *size).max().unwrap_or(0);
                let shortest = if window == Window::Shared { self.shared_line } else { 0 };
                (window, longest.max(u64::from(WINDOW_ALIGN)).max(shortest))
            })
            .collect();
        let min_len = |window: Window| match window {
            Window::Global => MIN_FENCE_LEN,
            _ => lengths.get(&window).copied().unwrap_or(u64::from(WINDOW_ALIGN)),
        };
        let mut windows = std::mem::take(&mut self.windows);
        let bounded = (self.module.room, bounds(&flat));
        constant_offsets(&flat, &mut plans, &bounded);
        let groups = group(&flat, &mut plans, &classes, (&min_len, bounded), &mut windows);
        self.windows = windows;
        stats.counted = backward_at.len();
        let leave_at = leaving_branches(&back_edges, &waits, &warp_waits);
        stats.leaving = leave_at.len();
        let loops = stats.counted > 0;
        let exits_on_budget = backward_at.len() > leave_at.len();
        let fenced = stats.clamped > 0 || traps > 0 || loops || stats.proven > 0;
        // The new body: the fence's declarations and windows, then the kernel's statements.
        let mut statements = Vec::new();
        statements.extend(self.declarations(fenced, traps > 0, loops, !leave_at.is_empty(), groups));
        statements.extend(proof_declarations(&proven));
        let mut moved: Vec<Variable> = self.own.values().cloned().collect();
        moved.sort_by_key(|v| body_position(body, &v.name));
        let (prologue, pads, const_pad) = self.prologue(&referenced, &moved);
        stats.const_pad = const_pad;
        statements.extend(moved.into_iter().map(Statement::Variable));
        statements.extend(pads.into_iter().map(Statement::Variable));
        if fenced {
            statements.push(op("mov", &["u32"], vec![reg(names::V), imm(0)]));
        }
        if traps > 0 {
            statements.push(op("mov", &["u32"], vec![reg(names::W), imm(0)]));
        }
        if loops {
            statements.push(op("ld", &["param", "u32"], vec![reg(names::B), param_address(FENCE_PARAMS[3])]));
        }
        statements.extend(prologue);
        statements.extend(proof_prologue(&proven, &f.params));
        statements.extend(shared_prologue(&proven));
        let exit_labels = exit_labels(&body.statements);
        let arrays: Vec<&str> = proven.arrays().into_iter().collect();
        let pres: Vec<super::prove::Pre> = proven.pre().into_iter().collect();
        let mut context = Context {
            plans: &plans,
            classes: &classes,
            types: &types,
            next: 0,
            fenced,
            aligned: self.aligned,
            windows: &self.windows,
            shared_window,
            local_window,
            exit_labels: &exit_labels,
            noted: false,
            backward_at: &backward_at,
            leave_at: &leave_at,
            proven: &proven,
            fixed_strides: &fixed_strides,
            arrays: &arrays,
            pres: &pres,
            room: self.module.room,
        };
        statements.extend(context.block(&body.statements)?);
        if exits_on_budget {
            // A thread that falls off the body's end leaves through the exit, not the budget's.
            let falls_through = !matches!(statements.last(), Some(Statement::Instruction(i))
                if i.guard.is_none() && matches!(i.opcode.as_str(), "bra" | "ret" | "exit"));
            if falls_through {
                statements.push(op("bra", &["uni"], vec![sym(names::EXIT, 0)]));
            }
            statements.push(label(names::BUDGET));
            statements.push(load_flag());
            statements.push(set_flag(None, FLAG_BUDGET));
        }
        if fenced {
            statements.extend(exit_block(names::EXIT.to_owned(), traps > 0));
        }
        Ok((Block { span: body.span, statements }, stats))
    }
}

/// Labels whose first instruction is an unguarded `ret` or `exit` (nvcc's `$L__BB0_2: ret;`
/// that a bounds check branches to).
fn exit_labels(statements: &[Statement]) -> BTreeSet<String> {
    fn walk(statements: &[Statement], pending: &mut Vec<String>, out: &mut BTreeSet<String>) {
        for statement in statements {
            match statement {
                Statement::Label(l) => pending.push(l.name.clone()),
                Statement::Block(b) => walk(&b.statements, pending, out),
                Statement::Instruction(i) => {
                    if i.guard.is_none() && matches!(i.opcode.as_str(), "ret" | "exit") {
                        out.extend(pending.drain(..));
                    }
                    pending.clear();
                }
                _ => {}
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(statements, &mut Vec::new(), &mut out);
    out
}

/// The backward branches (`back_edges`: each one's target and its own instruction index, and
/// whether it is guarded) that leave their loop when the thread's budget is spent, instead of
/// leaving the kernel: the guarded ones whose loop's region holds no instruction that waits for
/// other threads (`waits`, by instruction index), and that a warp-synchronous instruction
/// follows somewhere after in the text (`warp_waits`). There the exit would split the warp
/// before it, and ptxas would compile each such instruction twice, behind a divergent path;
/// elsewhere the exit costs less than the flag's store after a leaving branch
/// (`docs/performance.md`). A loop's region is the text from its head to
/// its branch, grown over every other backward branch whose span crosses one of its ends (one
/// end inside, one outside), until none does: what a thread runs from entering the loop to
/// leaving it lies there (an enclosing loop's span holds the region whole, and is not part of
/// it). A thread still in such a loop waits for no other, and leaves it within its own budget,
/// so one that left early can hold none of them up; it runs on after the loop as a thread that
/// ended the loop would. An unguarded backward branch has no path out of its loop to fall
/// through to, and keeps the budget's exit.
fn leaving_branches(
    back_edges: &[(usize, usize, bool)],
    waits: &[bool],
    warp_waits: &[bool],
) -> BTreeSet<usize> {
    back_edges
        .iter()
        .filter(|(_, _, guarded)| *guarded)
        .filter(|&&(head, at, _)| {
            let (mut start, mut end) = (head, at);
            loop {
                let (before, after) = (start, end);
                for &(h, a, _) in back_edges {
                    let crosses = h <= end && a >= start && !(h <= start && a >= end);
                    if crosses {
                        start = start.min(h);
                        end = end.max(a);
                    }
                }
                if (start, end) == (before, after) {
                    break;
                }
            }
            !waits.get(start..=end).is_none_or(|w| w.iter().any(|&x| x))
                && warp_waits.get(end.saturating_add(1)..).is_some_and(|w| w.iter().any(|&x| x))
        })
        .map(|&(_, at, _)| at)
        .collect()
}

/// Whether `instruction` (a `bra`) targets a label at or before it: one of `seen`, the labels
/// passed so far in the body's order. Every cycle of a body's control flow has such a branch
/// (text order only grows along the rest of its edges), so counting them bounds every loop.
fn backward(instruction: &Instruction, seen: impl Fn(&str) -> bool) -> bool {
    instruction.operands.iter().any(|o| matches!(&o.kind, OperandKind::Symbol { name, .. } if seen(name)))
}

fn label(name: &str) -> Statement {
    Statement::Label(kernel_args_ptx::Label { span: Span::default(), name: name.to_owned() })
}

/// `ld.param.u64 %__kargs_flag, [__kargs_fence_flag]`.
fn load_flag() -> Statement {
    op("ld", &["param", "u64"], vec![reg(names::FLAG), param_address(FENCE_PARAMS[2])])
}

/// The store of the flag's byte for `bit` (one of the `FLAG_*` values, each a byte's 1): a
/// plain byte store, so threads setting different reasons never race on one another's.
fn set_flag(guard: Option<&Guard>, bit: u32) -> Statement {
    let byte = i64::from(bit.trailing_zeros() / 8);
    let address = Address { base: AddressBase::Register(names::FLAG.to_owned()), offset: byte };
    guarded(guard, "st", &["global", "u8"], vec![Operand::new(OperandKind::Address(address)), imm(1)])
}

/// An exit of a fenced entry, labelled `name`: the thread's flag bytes written, then `ret`.
/// `traps`: the entry has a `trap`'s byte to write as well as the moved access's.
fn exit_block(name: String, traps: bool) -> Vec<Statement> {
    let mut statements = vec![label(&name), load_flag()];
    statements.push(op("setp", &["eq", "u32"], vec![reg(names::P), reg(names::V), imm(0)]));
    let none = Guard { span: Span::default(), negated: false, register: names::P.to_owned() };
    if traps {
        let moved = Guard { negated: true, ..none.clone() };
        statements.push(set_flag(Some(&moved), FLAG_REACHED_OUT));
        statements.push(op("setp", &["eq", "u32"], vec![reg(names::P), reg(names::W), imm(0)]));
        statements.push(guarded(Some(&none), "ret", &[], vec![]));
        statements.push(set_flag(None, FLAG_TRAPPED));
    } else {
        statements.push(guarded(Some(&none), "ret", &[], vec![]));
        statements.push(set_flag(None, FLAG_REACHED_OUT));
    }
    statements.push(op("ret", &[], vec![]));
    statements
}

impl EntryRewriter<'_> {
    /// How one address operand is fenced.
    fn plan(
        &mut self,
        instruction: &Instruction,
        access: &Access,
        types: Option<&HashMap<String, u64>>,
    ) -> Result<Plan, FenceError> {
        let refused = |reason| refuse(instruction.span, one_line(instruction), reason);
        let address = instruction
            .operands
            .get(access.operand)
            .and_then(Operand::address)
            .ok_or_else(|| refused(FenceRefusal::Address))?;
        let width = access.width;
        // A named variable of the access's own space, at a constant offset inside it: proven by
        // its declaration alone.
        if let AddressBase::Symbol(name) = &address.base {
            if access.space == Space::Param {
                let size =
                    self.params.get(name).copied().ok_or_else(|| refused(FenceRefusal::ParamAccess))?;
                let end = u64::try_from(address.offset).ok().and_then(|o| o.checked_add(width));
                return match end {
                    Some(end) if end <= size => Ok(Plan::Static),
                    _ => Err(refused(FenceRefusal::ParamAccess)),
                };
            }
            let v = self.variable(name).ok_or_else(|| refused(FenceRefusal::Address))?;
            let space = match access.space {
                Space::Shared => StateSpace::Shared,
                Space::Local => StateSpace::Local,
                Space::Const => StateSpace::Const,
                _ => return Err(refused(FenceRefusal::Address)),
            };
            if v.space != space {
                return Err(refused(FenceRefusal::Address));
            }
            let inside = match (v.size(), u64::try_from(address.offset)) {
                (Some(size), Ok(offset)) => {
                    offset.checked_add(width).is_some_and(|end| end <= size)
                        && offset.checked_rem(width) == Some(0)
                }
                _ => false,
            };
            if inside && v.linkage != Some(Linkage::Extern) {
                return Ok(Plan::Static);
            }
        }
        let register = match &address.base {
            AddressBase::Register(name) => {
                let size =
                    types.and_then(|t| t.get(name)).copied().ok_or_else(|| refused(FenceRefusal::Address))?;
                Some((name.clone(), size))
            }
            _ => None,
        };
        let window = match access.space {
            Space::Param => return Err(refused(FenceRefusal::ParamAccess)),
            Space::Generic { local } => {
                if matches!(address.base, AddressBase::Symbol(_)) {
                    return Err(refused(FenceRefusal::Address));
                }
                return Ok(Plan::Clamp {
                    window: Window::Global,
                    generic: Some(local),
                    width,
                    register,
                    base: address.base.clone(),
                    offset: address.offset,
                });
            }
            Space::Global => Window::Global,
            Space::Shared => Window::Shared,
            Space::Local => Window::Local,
            Space::Const => Window::Const,
        };
        self.windows.entry(window).or_default().insert(width);
        Ok(Plan::Clamp {
            window,
            generic: None,
            width,
            register,
            base: address.base.clone(),
            offset: address.offset,
        })
    }

    /// The fence's register declarations.
    fn declarations(
        &self,
        fenced: bool,
        traps: bool,
        loops: bool,
        leaving: bool,
        groups: usize,
    ) -> Vec<Statement> {
        let mut wide: Vec<String> = Vec::new();
        let mut narrow: Vec<String> =
            vec![names::N.to_owned(), names::LANE.to_owned(), names::MASK.to_owned()];
        if fenced {
            narrow.extend([names::U, names::K, names::D, names::V].map(str::to_owned));
            wide.extend([names::E, names::C, names::X, names::T, names::FLAG].map(str::to_owned));
            wide.extend(names::ADDRESS.map(str::to_owned));
            wide.extend((0..groups).map(|slot| format!("{}{slot}", names::GROUP)));
        }
        if traps {
            narrow.push(names::W.to_owned());
        }
        if loops {
            narrow.push(names::B.to_owned());
        }
        for (window, widths) in &self.windows {
            match window {
                Window::Global => wide.extend([window.base(), "%__kargs_gl".to_owned()]),
                _ => narrow.extend([
                    window.base(),
                    format!("%__kargs_{}e", window.prefix()),
                    format!("%__kargs_{}n", window.prefix()),
                ]),
            }
            narrow.extend(widths.iter().map(|w| window.limit(*w)));
        }
        if self.windows.keys().any(|w| *w != Window::Global) {
            narrow.extend([names::H, names::J].map(str::to_owned));
        }
        if self.fragments {
            narrow.extend(
                [names::STRIDE_ALIGNED, names::STRIDE, names::STRIDE_SPAN, names::STRIDE_LIMIT]
                    .map(str::to_owned),
            );
            if self.either {
                narrow.extend([names::STRIDE_SHARED, names::STRIDE_CHOSEN].map(str::to_owned));
            }
            wide.extend([names::STRIDE_PRODUCT, names::LINE_LIMIT].map(str::to_owned));
        }
        let decl = declare;
        let mut out = Vec::new();
        if !wide.is_empty() {
            out.push(decl(Type::B64, wide));
        }
        out.push(decl(Type::B32, narrow));
        if fenced {
            let mut predicates = vec![names::PS.to_owned(), names::PL.to_owned(), names::P.to_owned()];
            if loops {
                predicates.push(names::Q.to_owned());
            }
            if leaving {
                predicates.push(names::GO.to_owned());
            }
            if self.fragments {
                predicates.push(names::STRIDE_OVER.to_owned());
            }
            out.push(decl(Type::Pred, predicates));
        }
        out
    }

    /// A window's variables, the entry's own and the module's it names, with their sizes
    /// (`None`: the dynamic shared memory).
    fn members(
        &self,
        window: Window,
        referenced: &BTreeSet<String>,
        own: &[Variable],
    ) -> Vec<(String, Option<u64>)> {
        let space = window.space();
        let mut members: Vec<(String, Option<u64>)> =
            own.iter().filter(|v| v.space == space).map(|v| (v.name.clone(), v.size())).collect();
        for name in referenced {
            if let Some(v) = self.module.variables.get(name)
                && v.space == space
                && !self.own.contains_key(name)
            {
                let size = if v.linkage == Some(Linkage::Extern) { None } else { v.size() };
                members.push((name.clone(), size));
            }
        }
        members
    }

    /// Each window's computation, and the padding variables that give a window its minimum
    /// length where no variable of it is 16 bytes long; whether the module needs its constant
    /// padding.
    fn prologue(
        &self,
        referenced: &BTreeSet<String>,
        own: &[Variable],
    ) -> (Vec<Statement>, Vec<Variable>, bool) {
        let mut out = Vec::new();
        let mut pads = Vec::new();
        let mut const_pad = false;
        for (window, widths) in &self.windows {
            let base = window.base();
            let end = format!("%__kargs_{}e", window.prefix());
            let len = match window {
                Window::Global => {
                    out.push(op("ld", &["param", "u64"], vec![reg(&base), param_address(FENCE_PARAMS[0])]));
                    out.push(op(
                        "ld",
                        &["param", "u64"],
                        vec![reg("%__kargs_gl"), param_address(FENCE_PARAMS[1])],
                    ));
                    "%__kargs_gl".to_owned()
                }
                _ => {
                    let space = window.space();
                    let mut members = self.members(*window, referenced, own);
                    // At least 16 bytes, and a shared fragment's line.
                    let shortest = if *window == Window::Shared {
                        self.shared_line.max(u64::from(WINDOW_ALIGN))
                    } else {
                        u64::from(WINDOW_ALIGN)
                    };
                    if !members.iter().any(|(_, size)| size.is_some_and(|s| s >= shortest)) {
                        let name = match window {
                            Window::Shared => "__kargs_shared_pad",
                            Window::Local => "__kargs_local_pad",
                            _ => "__kargs_const_pad",
                        };
                        if *window == Window::Const {
                            const_pad = true;
                        } else {
                            let align =
                                if *window == Window::Shared { self.shared_align } else { WINDOW_ALIGN };
                            pads.push(pad(space, name, align, shortest));
                        }
                        members.insert(0, (name.to_owned(), Some(shortest)));
                    }
                    // Static members first: the base starts at one of them. In 32 bits: the
                    // state space's own addresses.
                    members.sort_by_key(|(_, size)| size.is_none());
                    for (i, (name, size)) in members.iter().enumerate() {
                        let target = if i == 0 { base.clone() } else { names::H.to_owned() };
                        out.push(op("mov", &["u32"], vec![reg(&target), sym(name, 0)]));
                        if i > 0 {
                            out.push(op("min", &["u32"], vec![reg(&base), reg(&base), reg(names::H)]));
                        }
                        let reach = match size {
                            Some(size) => imm(i128::from(*size)),
                            None => {
                                // Dynamic shared memory: as long as the launch says.
                                out.push(op("mov", &["u32"], vec![reg(names::N), reg("%dynamic_smem_size")]));
                                reg(names::N)
                            }
                        };
                        if i == 0 {
                            out.push(op("add", &["u32"], vec![reg(&end), reg(&base), reach]));
                        } else {
                            out.push(op("add", &["u32"], vec![reg(names::H), reg(names::H), reach]));
                            out.push(op("max", &["u32"], vec![reg(&end), reg(&end), reg(names::H)]));
                        }
                    }
                    let len = format!("%__kargs_{}n", window.prefix());
                    out.push(op("sub", &["u32"], vec![reg(&len), reg(&end), reg(&base)]));
                    len
                }
            };
            for width in widths {
                let limit = window.limit(*width);
                if *window == Window::Global {
                    out.push(op("sub", &["u64"], vec![reg(names::T), reg(&len), imm(i128::from(*width))]));
                    out.push(op("cvt", &["u32", "u64"], vec![reg(&limit), reg(names::T)]));
                } else {
                    out.push(op("sub", &["u32"], vec![reg(&limit), reg(&len), imm(i128::from(*width))]));
                }
            }
        }
        (out, pads, const_pad)
    }
}

/// A declaration of the fence's registers `names`, each of type `ty`.
fn declare(ty: Type, names: Vec<String>) -> Statement {
    Statement::Registers(kernel_args_ptx::RegisterDecl {
        span: Span::default(),
        vector: None,
        ty,
        names: names.into_iter().map(|name| kernel_args_ptx::RegisterName { name, count: None }).collect(),
    })
}

/// The register of the fence's index times `size` (`prove.rs`): the 64-bit index's product
/// (`%__kargs_iq<size>`) where `wide`, the 32-bit index's (`%__kargs_io<size>`) otherwise.
fn product_of(size: u64, wide: bool) -> String {
    format!("{}{size}", if wide { names::PRODUCT64 } else { names::PRODUCT })
}

/// A bound's register: `%__kargs_im<m>` for a 4-byte one, `%__kargs_il<m>` for an 8-byte one.
fn bound_register(bound: usize, wide: bool) -> String {
    format!("{}{bound}", if wide { names::BOUND64 } else { names::BOUND })
}

/// The registers of an entry's proofs (`prove.rs`): the index and its parts, each bound, each
/// pointer's address, each product, the fence's own check.
fn proof_declarations(proven: &super::prove::Proven) -> Vec<Statement> {
    if proven.proofs.is_empty() && proven.shared.is_empty() {
        return Vec::new();
    }
    let decl = declare;
    let mut narrow: Vec<String> = Vec::new();
    let mut wide: Vec<String> = (0..proven.proofs.len()).map(|j| format!("{}{j}", names::POINTER)).collect();
    if proven.indexed() {
        narrow.push(names::INDEX.to_owned());
    }
    if proven.indexed() || proven.indexed64() {
        narrow.extend([names::INDEX_CTAID, names::INDEX_NTID, names::INDEX_TID].map(str::to_owned));
    }
    if proven.indexed64() {
        wide.extend([names::INDEX64, names::INDEX64_GRID, names::INDEX64_TID].map(str::to_owned));
    }
    for &(bound, is_wide) in &proven.bounds() {
        if is_wide { &mut wide } else { &mut narrow }.push(bound_register(bound, is_wide));
    }
    wide.extend(proven.sizes().iter().map(|&(s, is_wide)| product_of(s, is_wide)));
    let ranged: Vec<usize> = proven.ranged_proofs().collect();
    if !ranged.is_empty() {
        wide.extend(names::RANGED_PRODUCT.map(str::to_owned));
        narrow.extend(ranged.iter().map(|j| format!("{}{j}", names::RANGE_HI)));
    }
    if !ranged.is_empty() || !proven.shared.is_empty() {
        narrow.extend(names::RANGED.map(str::to_owned));
    }
    if !proven.shared.is_empty() {
        for names in [names::SHARED_OFFSET, names::SHARED_SUM] {
            narrow.extend(names.map(str::to_owned));
        }
        narrow.extend((0..proven.arrays().len()).map(|j| format!("{}{j}", names::SHARED_ARRAY)));
    }
    for n in 0..proven.pre().len() {
        for name in [names::PRE_INDEX, names::PRE_ROW, names::PRE_MID, names::PRE_OFFSET] {
            narrow.push(format!("{name}{n}"));
        }
    }
    let dynamic = proven.dynamic_his();
    if !dynamic.is_empty() {
        narrow.push(names::DYNAMIC.to_owned());
        let reaches: BTreeSet<u64> = dynamic.iter().map(|&(reach, _)| reach).collect();
        narrow.extend(reaches.iter().map(|reach| format!("{}{reach}", names::DYNAMIC_ROOM)));
        narrow.extend(dynamic.iter().map(|&(reach, shift)| dynamic_hi(reach, shift)));
    }
    let mut out = Vec::new();
    if !wide.is_empty() {
        out.push(decl(Type::B64, wide));
    }
    if !narrow.is_empty() {
        out.push(decl(Type::B32, narrow));
    }
    if !proven.loops.is_empty() {
        out.push(decl(Type::B32, vec![names::WALK.to_owned()]));
        let sizes: BTreeSet<u64> = proven.loops.iter().flat_map(|l| l.sizes.iter().copied()).collect();
        out.push(decl(Type::B64, sizes.iter().map(|s| walk_product(*s)).collect()));
    }
    let checks = proven.checks();
    let mut predicates: Vec<String> = checks.iter().map(|&(bound, check)| outside(bound, check)).collect();
    if !proven.loops.is_empty() {
        predicates.push(names::WALK_TEST.to_owned());
    }
    if !predicates.is_empty() {
        out.push(decl(Type::Pred, predicates));
    }
    out
}

/// The register of a grid-stride loop's index (the fence's copy) times `size`.
fn walk_product(size: u64) -> String {
    format!("{}{size}", names::WALK_PRODUCT)
}

/// The predicate of the fence's own check of `bound`, compared as `check`: the index at least
/// the bound.
fn outside(bound: usize, check: super::prove::Check) -> String {
    format!("{}{bound}{}", names::OUTSIDE, check.ty())
}

/// The proofs' part of the leading run: the thread's index in the grid, each bound from its
/// parameter, each pointer's address from its hidden parameter.
///
/// ```text
/// mov.u32       %__kargs_ic, %ctaid.x
/// mov.u32       %__kargs_in, %ntid.x
/// mov.u32       %__kargs_it, %tid.x
/// mad.lo.s32    %__kargs_ix, %__kargs_ic, %__kargs_in, %__kargs_it
/// mul.wide.u32  %__kargs_iw, %__kargs_ic, %__kargs_in              // the 64-bit index's
/// cvt.u64.u32   %__kargs_iv, %__kargs_it
/// add.s64       %__kargs_iy, %__kargs_iw, %__kargs_iv
/// ld.param.u32  %__kargs_im<bound>, [<the bound's parameter>]      // .u64, %__kargs_il: 8 bytes
/// setp.ge.s32   %__kargs_ig<bound>s32, %__kargs_ix, %__kargs_im<bound>   // .s64/.u64, %__kargs_iy, %__kargs_il
/// ld.param.u64  %__kargs_ip<proof>, [__kargs_addr_<pointer>_<bound>_<size>]
/// ld.param.u32  %__kargs_yh<proof>, [__kargs_range_<pointer>_s<size>_r<reach>]  // a ranged one's
/// ```
fn proof_prologue(proven: &super::prove::Proven, params: &[Param]) -> Vec<Statement> {
    if proven.proofs.is_empty() {
        return Vec::new();
    }
    let special = |name: &str, component| {
        Operand::new(OperandKind::Register(Register { name: name.to_owned(), component: Some(component) }))
    };
    let x = kernel_args_ptx::Component::X;
    let mut out = Vec::new();
    if proven.indexed() || proven.indexed64() {
        out.extend([
            op("mov", &["u32"], vec![reg(names::INDEX_CTAID), special("%ctaid", x)]),
            op("mov", &["u32"], vec![reg(names::INDEX_NTID), special("%ntid", x)]),
            op("mov", &["u32"], vec![reg(names::INDEX_TID), special("%tid", x)]),
        ]);
    }
    if proven.indexed64() {
        out.extend([
            op(
                "mul",
                &["wide", "u32"],
                vec![reg(names::INDEX64_GRID), reg(names::INDEX_CTAID), reg(names::INDEX_NTID)],
            ),
            op("cvt", &["u64", "u32"], vec![reg(names::INDEX64_TID), reg(names::INDEX_TID)]),
            op("add", &["s64"], vec![reg(names::INDEX64), reg(names::INDEX64_GRID), reg(names::INDEX64_TID)]),
        ]);
    }
    if proven.indexed() {
        out.extend([op(
            "mad",
            &["lo", "s32"],
            vec![reg(names::INDEX), reg(names::INDEX_CTAID), reg(names::INDEX_NTID), reg(names::INDEX_TID)],
        )]);
    }
    for (bound, is_wide) in proven.bounds() {
        if let Some(p) = params.get(bound) {
            let ty = if is_wide { "u64" } else { "u32" };
            out.push(op(
                "ld",
                &["param", ty],
                vec![reg(&bound_register(bound, is_wide)), param_address(&p.name)],
            ));
        }
    }
    // Each of the fence's own bounds checks, once: the index and the bound hold one value for
    // the whole thread, and so does the check.
    for (bound, check) in proven.checks() {
        let wide = check.wide();
        let index = if wide { names::INDEX64 } else { names::INDEX };
        out.push(op(
            "setp",
            &["ge", check.ty()],
            vec![reg(&outside(bound, check)), reg(index), reg(&bound_register(bound, wide))],
        ));
    }
    for (j, proof) in proven.proofs.iter().enumerate() {
        out.push(op(
            "ld",
            &["param", "u64"],
            vec![reg(&format!("{}{j}", names::POINTER)), param_address(&proof.param_name())],
        ));
        if let Some(range) = proof.range_name() {
            out.push(op(
                "ld",
                &["param", "u32"],
                vec![reg(&format!("{}{j}", names::RANGE_HI)), param_address(&range)],
            ));
        }
    }
    out
}

/// The register of the highest index of a confined access of `reach` into an `.extern .shared`
/// array, shifted by `shift`.
fn dynamic_hi(reach: u64, shift: u32) -> String {
    format!("{}{reach}_{shift}", names::DYNAMIC_HI)
}

/// The leading run's part for the confined shared accesses: each array's address, and for
/// those into `.extern .shared` arrays, the launch's dynamic shared memory's size, less each
/// reach (at most [`super::MIN_DYNAMIC_SHARED`], which the launcher gives at least), shifted
/// down by each shift.
///
/// ```text
/// mov.u32  %__kargs_zv<j>, <array>
/// mov.u32  %__kargs_zn, %dynamic_smem_size
/// sub.u32  %__kargs_zr<reach>, %__kargs_zn, <reach>
/// shr.u32  %__kargs_zh<reach>_<shift>, %__kargs_zr<reach>, <shift>
/// ```
fn shared_prologue(proven: &super::prove::Proven) -> Vec<Statement> {
    let mut out: Vec<Statement> = proven
        .arrays()
        .iter()
        .enumerate()
        .map(|(j, var)| op("mov", &["u32"], vec![reg(&format!("{}{j}", names::SHARED_ARRAY)), sym(var, 0)]))
        .collect();
    let dynamic = proven.dynamic_his();
    if !dynamic.is_empty() {
        let size = Register { name: "%dynamic_smem_size".to_owned(), component: None };
        out.push(op("mov", &["u32"], vec![reg(names::DYNAMIC), Operand::new(OperandKind::Register(size))]));
    }
    let reaches: BTreeSet<u64> = dynamic.iter().map(|&(reach, _)| reach).collect();
    for reach in reaches {
        let room = format!("{}{reach}", names::DYNAMIC_ROOM);
        out.push(op("sub", &["u32"], vec![reg(&room), reg(names::DYNAMIC), imm(i128::from(reach))]));
    }
    for (reach, shift) in dynamic {
        let room = format!("{}{reach}", names::DYNAMIC_ROOM);
        out.push(op(
            "shr",
            &["u32"],
            vec![reg(&dynamic_hi(reach, shift)), reg(&room), imm(i128::from(shift))],
        ));
    }
    // The confinements of the accesses whose indices are `%tid.x` and `%tid.y`: made once.
    for (n, pre) in proven.pre().iter().enumerate() {
        let tid = |c: char| {
            let component =
                if c == 'y' { kernel_args_ptx::Component::Y } else { kernel_args_ptx::Component::X };
            Operand::new(OperandKind::Register(Register {
                name: "%tid".to_owned(),
                component: Some(component),
            }))
        };
        let name = |prefix: &str| format!("{prefix}{n}");
        let (index, row, mid, offset) =
            (name(names::PRE_INDEX), name(names::PRE_ROW), name(names::PRE_MID), name(names::PRE_OFFSET));
        let shift = imm(i128::from(pre.shift));
        out.push(op("mov", &["u32"], vec![reg(&index), tid(pre.index)]));
        match (pre.hi, &pre.row, pre.row_index) {
            (SharedHi::Offset { max, .. }, Some((_, stride)), Some(r)) => {
                out.push(op("mov", &["u32"], vec![reg(&row), tid(r)]));
                out.push(op("shl", &["b32"], vec![reg(&offset), reg(&index), shift]));
                out.push(op(
                    "mad",
                    &["lo", "u32"],
                    vec![reg(&mid), reg(&row), imm(i128::from(*stride)), reg(&offset)],
                ));
                out.push(op("min", &["u32"], vec![reg(&offset), reg(&mid), imm(i128::from(max))]));
            }
            (SharedHi::Fixed(hi), None, None) => {
                out.push(op("min", &["u32"], vec![reg(&mid), reg(&index), imm(i128::from(hi))]));
                out.push(op("shl", &["b32"], vec![reg(&offset), reg(&mid), shift]));
            }
            (SharedHi::Dynamic { reach }, None, None) => {
                out.push(op(
                    "min",
                    &["u32"],
                    vec![reg(&mid), reg(&index), reg(&dynamic_hi(reach, pre.shift))],
                ));
                out.push(op("shl", &["b32"], vec![reg(&offset), reg(&mid), shift]));
            }
            _ => {}
        }
    }
    out
}

/// Whether the aligned form masks a single access of `width` bytes (a power of two up to 16;
/// a group's span, which may be neither, is clamped).
fn masked(width: u64) -> bool {
    width.is_power_of_two() && width <= u64::from(WINDOW_ALIGN)
}

fn param_address(name: &str) -> Operand {
    Operand::new(OperandKind::Address(Address { base: AddressBase::Symbol(name.to_owned()), offset: 0 }))
}

/// Where variable `name` is declared among the body's top-level statements.
fn body_position(body: &Block, name: &str) -> usize {
    body.statements
        .iter()
        .position(|s| matches!(s, Statement::Variable(v) if v.name == name))
        .unwrap_or(usize::MAX)
}

/// The variables declared in nested blocks.
fn nested_variables(block: &Block) -> Vec<&Variable> {
    fn inner<'b>(block: &'b Block, out: &mut Vec<&'b Variable>) {
        for statement in &block.statements {
            match statement {
                Statement::Variable(v) => out.push(v),
                Statement::Block(b) => inner(b, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for statement in &block.statements {
        if let Statement::Block(b) = statement {
            inner(b, &mut out);
        }
    }
    out
}

/// Every register name the body declares, nested blocks included.
fn body_register_names(block: &Block) -> Vec<String> {
    let mut out = Vec::new();
    for statement in &block.statements {
        match statement {
            Statement::Registers(r) => out.extend(r.names.iter().map(|n| n.name.clone())),
            Statement::Block(b) => out.extend(body_register_names(b)),
            _ => {}
        }
    }
    out
}

/// How one address operand is fenced.
#[derive(Debug, Clone)]
enum Plan {
    /// A named variable at a constant offset inside it: left as written.
    Static,
    /// Clamped into `window` (a generic access: into the global window, and the shared and local
    /// ones where the entry has them; `Some(true)` where it may reach local memory).
    Clamp {
        window: Window,
        generic: Option<bool>,
        width: u64,
        register: Option<(String, u64)>,
        base: AddressBase,
        offset: i64,
    },
    /// One of a group of accesses through one base register at constant offsets, in one
    /// straight run of instructions (see [`group`]): the address is the group's register
    /// plus `delta`; the first access of the group (`lead`) clamps the register once.
    Grouped { register: String, delta: i64, lead: Option<Lead> },
    /// A shared access into an array of the entry's own whose index the fence confines
    /// (`prove.rs`, `SharedAccess`): the array's address plus the kernel's index confined to
    /// the array's elements, shifted, plus the access's constant offset.
    Shared(super::prove::SharedAccess),
    /// A global access a proof covers (`prove.rs`): the address is the proof's pointer's
    /// address, plus the index times the element's size (an indexed proof's: the fence's own
    /// index; a ranged one's: the kernel's index confined to the proof's range), plus the
    /// access's constant offset.
    Proven(super::prove::ProvenAccess),
}

/// The one clamp of a group: the address `base + offset` (the group's lowest) into `window`,
/// `span` bytes from it inside, aligned to `align`.
#[derive(Debug, Clone)]
struct Lead {
    window: Window,
    span: u64,
    align: u64,
    register: Option<(String, u64)>,
    base: AddressBase,
    offset: i64,
    /// The most the address is where the program is correct (a register of [`bounds`] plus
    /// `offset`), the group inside the module's variables: the clamp's limit is that constant,
    /// not the fence's length less the span.
    max: Option<u64>,
}

/// Each global access through a register of [`bounds`] holding exactly a constant offset that
/// every fence holds ([`constant_fits`]: nvcc's `mov.u64 %rd3, v` of a module variable placed at
/// the fence's start, then `[%rd3]`) planned as an access at that offset, as a named one is: the
/// fence's base plus the offset (`Context`'s constant access).
fn constant_offsets(flat: &Flat<'_>, plans: &mut [Vec<Plan>], (room, bounds): &Bounded) {
    let mut index = 0usize;
    for item in &flat.items {
        let FlatItem::Instruction(_, registers) = item else { continue };
        for plan in plans.get_mut(index).into_iter().flatten() {
            let Plan::Clamp {
                window: Window::Global,
                generic: None,
                register: Some((name, 8)),
                offset,
                width,
                ..
            } = plan
            else {
                continue;
            };
            let exact = match kernel_args_ptx::resolved_in(registers, name) {
                Some(Resolved::Declared(id)) => bounds.get(&id).filter(|b| b.exact).map(|b| b.max),
                _ => None,
            };
            if let Some(at) = exact.and_then(|k| i64::try_from(k).ok()?.checked_add(*offset))
                && constant_fits(at, *width, *room)
            {
                let width = *width;
                *plan = Plan::Clamp {
                    window: Window::Global,
                    generic: None,
                    width,
                    register: None,
                    base: AddressBase::Absolute,
                    offset: at,
                };
            }
        }
        index = index.saturating_add(1);
    }
}

/// The bytes of the module's variables at the fence's start, and the registers of [`bounds`].
type Bounded = (u64, HashMap<RegisterId, Bound>);

/// The longest span a group may cover in a window whose length is at least `min`.
fn group_fits(span: u64, min: u64) -> bool {
    span <= min
}

/// A group being gathered: the accesses through one register into one window.
struct Gathering {
    window: Window,
    id: kernel_args_ptx::RegisterId,
    /// (instruction index, access index, offset, width), in order.
    members: Vec<(usize, usize, i64, u64)>,
}

/// The groups of accesses that one clamp can cover: accesses through the same 64-bit or
/// 32-bit register at constant offsets, into the same window, unguarded, with no label,
/// branch, exit or write of the register between the first and the last, whose offsets from
/// the lowest are multiples of the widest access, and whose span (the lowest offset to the
/// highest end) fits in the window's shortest length (`min_len`). Each such group of two or
/// more becomes `Plan::Grouped` members; the rest keep their own clamps. Returns how many
/// group registers the entry needs.
///
/// A global group through a register of [`bounds`] whose accesses end inside `room` (the module's
/// variables at the fence's start, which every fence holds) is clamped to that bound, a constant
/// (`Lead::max`).
fn group(
    flat: &kernel_args_ptx::Flat<'_>,
    plans: &mut [Vec<Plan>],
    classes: &[Class],
    (min_len, (room, bounds)): (&dyn Fn(Window) -> u64, Bounded),
    windows: &mut BTreeMap<Window, BTreeSet<u64>>,
) -> usize {
    let mut open: Vec<Gathering> = Vec::new();
    let mut done: Vec<Gathering> = Vec::new();
    let mut index = 0usize;
    for item in &flat.items {
        let FlatItem::Instruction(instruction, regs) = item else {
            // A label joins paths: nothing gathered goes past it.
            done.append(&mut open);
            continue;
        };
        let id_of = |name: &str| {
            regs.iter().find(|(n, _)| *n == name).and_then(|(_, r)| match r {
                Resolved::Declared(id) => Some(*id),
                Resolved::Special => None,
            })
        };
        if let (Some(Class::Access(accesses)), Some(p)) = (classes.get(index), plans.get(index)) {
            for (a, (access, plan)) in accesses.iter().zip(p).enumerate() {
                let _ = access;
                let Plan::Clamp { window, generic: None, width, register: Some((name, _)), offset, .. } =
                    plan
                else {
                    continue;
                };
                if instruction.guard.is_some() {
                    continue;
                }
                let Some(id) = id_of(name) else { continue };
                match open.iter_mut().find(|g| g.window == *window && g.id == id) {
                    Some(g) => g.members.push((index, a, *offset, *width)),
                    None => open.push(Gathering {
                        window: *window,
                        id,
                        members: vec![(index, a, *offset, *width)],
                    }),
                }
            }
        }
        // What the instruction writes (its first operand, unless that is an address or it is a
        // store-like instruction that writes none): a group through it ends here.
        let written: Vec<kernel_args_ptx::RegisterId> = match instruction.operands.first() {
            Some(o) if o.address().is_none() && !matches!(instruction.opcode.as_str(), "st" | "red") => {
                o.registers().iter().filter_map(|r| id_of(r)).collect()
            }
            _ => Vec::new(),
        };
        let control = matches!(classes.get(index), Some(Class::Branch | Class::Exit | Class::Trap));
        let mut keep = Vec::new();
        for g in open.drain(..) {
            if control || written.contains(&g.id) { done.push(g) } else { keep.push(g) }
        }
        open = keep;
        index = index.saturating_add(1);
    }
    done.append(&mut open);
    // The groups that pay, in order of their first access, each given the lowest register free
    // by then.
    // Groups of two or more pay; one access pays where its register is bounded (its clamp is then
    // a constant's).
    let bounded_one = |g: &Gathering| {
        g.window == Window::Global
            && bounds.get(&g.id).zip(g.members.first()).is_some_and(|(b, m)| {
                u64::try_from(m.2)
                    .ok()
                    .and_then(|low| b.max.checked_add(low)?.checked_add(m.3))
                    .is_some_and(|end| end <= room)
            })
    };
    let mut groups: Vec<(Gathering, i64, u64, u64)> = done
        .into_iter()
        .filter(|g| g.members.len() >= 2 || bounded_one(g))
        .filter_map(|g| {
            let low = g.members.iter().map(|m| m.2).min()?;
            let end = g.members.iter().filter_map(|m| m.2.checked_add(i64::try_from(m.3).ok()?)).max()?;
            let span = u64::try_from(end.checked_sub(low)?).ok()?;
            let align = g.members.iter().map(|m| m.3).max()?;
            let aligned = g.members.iter().all(|m| {
                m.2.checked_sub(low).and_then(|d| d.checked_rem(i64::try_from(align).ok()?)) == Some(0)
            });
            (aligned && group_fits(span, min_len(g.window))).then_some((g, low, span, align))
        })
        .collect();
    groups.sort_by_key(|(g, ..)| g.members.first().map(|m| m.0));
    let mut busy_until: Vec<usize> = Vec::new();
    for (g, low, span, align) in groups {
        let (Some(first), Some(last)) = (g.members.first().map(|m| m.0), g.members.last().map(|m| m.0))
        else {
            continue;
        };
        let slot = match busy_until.iter().position(|&until| until < first) {
            Some(slot) => slot,
            None => {
                busy_until.push(0);
                busy_until.len().saturating_sub(1)
            }
        };
        if let Some(until) = busy_until.get_mut(slot) {
            *until = last;
        }
        let register = format!("{}{slot}", names::GROUP);
        // The most the lowest offset is, where the register's value is bounded and the group
        // ends inside the module's variables.
        let max = bounds
            .get(&g.id)
            .zip(u64::try_from(low).ok())
            .and_then(|(b, low)| b.max.checked_add(low))
            .filter(|&m| g.window == Window::Global && m.checked_add(span).is_some_and(|end| end <= room));
        if max.is_none() {
            windows.entry(g.window).or_default().insert(span);
        }
        for (n, &(i, a, offset, _)) in g.members.iter().enumerate() {
            let Some(plan) = plans.get_mut(i).and_then(|p| p.get_mut(a)) else { continue };
            let lead = match (n, &*plan) {
                (0, Plan::Clamp { register: r, base, .. }) => Some(Lead {
                    window: g.window,
                    span,
                    align,
                    register: r.clone(),
                    base: base.clone(),
                    offset: low,
                    max,
                }),
                _ => None,
            };
            *plan = Plan::Grouped { register: register.clone(), delta: offset.saturating_sub(low), lead };
        }
    }
    busy_until.len()
}

/// Walks the body's statements in the flat order `flatten` gave, rewriting instructions.
struct Context<'p> {
    plans: &'p [Vec<Plan>],
    classes: &'p [Class],
    types: &'p [HashMap<String, u64>],
    next: usize,
    fenced: bool,
    /// The aligned form (`EntryRewriter::aligned`).
    aligned: bool,
    windows: &'p BTreeMap<Window, BTreeSet<u64>>,
    shared_window: bool,
    local_window: bool,
    /// Labels whose first instruction is an exit.
    exit_labels: &'p BTreeSet<String>,
    /// Whether the thread may have noted something for the flag by here: an access or a trap
    /// has been passed, or a label (which a later branch may reach).
    noted: bool,
    /// The backward branches, by instruction index: each is counted.
    backward_at: &'p BTreeSet<usize>,
    /// Those of them that leave their loop on a spent budget (see [`leaving_branches`]).
    leave_at: &'p BTreeSet<usize>,
    /// The accesses a bounds check proves, and where the fence's own checks go.
    proven: &'p super::prove::Proven,
    /// Global fragments of a constant stride, by instruction index: the stride and the reach.
    fixed_strides: &'p BTreeMap<usize, (u64, u64)>,
    /// The arrays the confined shared accesses reach (`Proven::arrays`), in order: the `j` of
    /// each one's `%__kargs_zv<j>`.
    arrays: &'p [&'p str],
    /// The confinements made once (`Proven::pre`), in order: the `n` of each one's registers.
    pres: &'p [super::prove::Pre],
    /// The bytes of the module's variables at the fence's start (`ModuleScope::room`).
    room: u64,
}

impl Context<'_> {
    /// `mov.u32 R, %ctaid.x` (`%ntid.x`, `%tid.x`) as a copy of the fence's read of the same
    /// special register (`mov.u32 R, %__kargs_ic`), where the entry has an indexed proof (the
    /// fence reads them in the leading run).
    fn special_copy(&self, instruction: &Instruction) -> Option<Statement> {
        if !(self.proven.indexed() || self.proven.indexed64()) || instruction.opcode != "mov" {
            return None;
        }
        if !matches!(instruction.modifiers.as_slice(), [m] if m == "u32") {
            return None;
        }
        let dest =
            instruction.operands.first().filter(|o| o.register().is_some_and(|r| r.component.is_none()))?;
        let source = match instruction.operands.get(1).map(|o| &o.kind) {
            Some(OperandKind::Register(r)) if r.component.map(|c| c.name()) == Some("x") => {
                match r.name.as_str() {
                    "%ctaid" => names::INDEX_CTAID,
                    "%ntid" => names::INDEX_NTID,
                    "%tid" => names::INDEX_TID,
                    _ => return None,
                }
            }
            _ => return None,
        };
        (instruction.operands.len() == 2)
            .then(|| guarded(instruction.guard.as_ref(), "mov", &["u32"], vec![dest.clone(), reg(source)]))
    }

    /// A grid-stride loop's step of its index (`prove::StrideLoop`), where the fence's copy of
    /// the index is the kernel's: the step made on the copy, then copied back, so that ptxas
    /// keeps one register.
    ///
    /// ```text
    /// add.s32  %__kargs_ik, %__kargs_ik, <step>      // the kernel's add.s32 I, I, <step>
    /// mov.u32  I, %__kargs_ik
    /// ```
    fn walk_step(walk: &super::prove::StrideLoop, step: &Instruction, out: &mut Vec<Statement>) {
        let mut on_copy = step.clone();
        for operand in &mut on_copy.operands {
            if let OperandKind::Register(r) = &mut operand.kind
                && r.component.is_none()
                && r.name == walk.index
            {
                r.name = names::WALK.to_owned();
            }
        }
        out.push(Statement::Instruction(on_copy));
        out.push(op("mov", &["u32"], vec![reg(&walk.index), reg(names::WALK)]));
    }

    /// A grid-stride loop's branch back (`prove::StrideLoop`), instruction `index`: the loop
    /// goes on while the fence's copy of the index is below the bound, unsigned (the kernel's
    /// own test, the same where the index has not passed 2^31, is left for ptxas to drop).
    /// Other branches are as they are.
    ///
    /// ```text
    /// setp.lt.u32  %__kargs_iz, %__kargs_ik, %__kargs_im<bound>
    /// @%__kargs_iz bra L                                           // counted first
    /// ```
    fn walk_branch(&self, index: usize, branch: &Instruction, out: &mut Vec<Statement>) -> Instruction {
        let mut branch = branch.clone();
        if let Some(walk) = self.proven.loops.iter().find(|w| w.branch == index) {
            out.push(op(
                "setp",
                &["lt", "u32"],
                vec![reg(names::WALK_TEST), reg(names::WALK), reg(&bound_register(walk.bound, false))],
            ));
            branch.guard =
                Some(Guard { span: Span::default(), negated: false, register: names::WALK_TEST.to_owned() });
        }
        branch
    }

    /// After the kernel's bounds check that the instruction just written is (`prove.rs`), the
    /// fence's own (its predicate made once, in the leading run: `proof_prologue`): a thread
    /// whose index in the grid is at least the bound leaves (none does: the kernel's check sent
    /// it elsewhere), then the index times each element's size the accesses after it use.
    ///
    /// ```text
    /// @%__kargs_ig<bound><s32|s64|u64> ret      // bra $__kargs_exit once something may be noted
    /// mul.wide.s32  %__kargs_io<size>, %__kargs_ix, <size>         // shl.b64 %__kargs_iq<size>, %__kargs_iy, log2 size
    /// ```
    fn bounds_check(&self, out: &mut Vec<Statement>) {
        let Some(checks) = self.next.checked_sub(1).and_then(|at| self.proven.guards.get(&at)) else {
            return;
        };
        for (&(bound, check), sizes) in checks {
            let wide = check.wide();
            let index = if wide { names::INDEX64 } else { names::INDEX };
            let guard = Guard { span: Span::default(), negated: false, register: outside(bound, check) };
            if self.noted {
                out.push(guarded(Some(&guard), "bra", &[], vec![sym(names::EXIT, 0)]));
            } else {
                out.push(guarded(Some(&guard), "ret", &[], vec![]));
            }
            for &size in sizes {
                let product = product_of(size, wide);
                if wide {
                    let shift = i128::from(size.trailing_zeros());
                    out.push(op("shl", &["b64"], vec![reg(&product), reg(index), imm(shift)]));
                } else {
                    out.push(op(
                        "mul",
                        &["wide", if check == Check::U32 { "u32" } else { "s32" }],
                        vec![reg(&product), reg(index), imm(i128::from(size))],
                    ));
                }
            }
        }
    }

    /// A proven access's address, in `%__kargs_a<slot>`: an indexed proof's pointer's address
    /// plus the fence's own product of the index; a ranged proof's plus the kernel's index
    /// confined to `[0, hi]`, then scaled (as the kernel extends it: signed or not). A
    /// fixed proof's address is its pointer's, and needs nothing here. In the clamped form, a
    /// ranged access whose index was moved is noted (`xor` of the two, `or` into the note), as
    /// a clamped one is.
    ///
    /// ```text
    /// add.s64       %__kargs_a<slot>, %__kargs_ip<proof>, %__kargs_io<size>          // indexed
    ///
    /// min.u32       %__kargs_yx<slot>, <index>, %__kargs_yh<proof>                   // ranged
    /// mul.wide.s32  %__kargs_yo<slot>, %__kargs_yx<slot>, <size>     // .u32 for an unsigned index
    /// add.s64       %__kargs_a<slot>, %__kargs_ip<proof>, %__kargs_yo<slot>
    /// ```
    fn proven_access(
        &self,
        access: &super::prove::ProvenAccess,
        slot: usize,
        guard: Option<&Guard>,
        out: &mut Vec<Statement>,
    ) {
        let Some(proof) = self.proven.proofs.get(access.proof) else { return };
        let pick = |names: &[&'static str; 2]| names.get(slot).copied().unwrap_or(names[0]);
        let address = pick(&names::ADDRESS);
        let pointer = format!("{}{}", names::POINTER, access.proof);
        match (proof.kind, &access.index) {
            (ProofKind::Indexed { .. } | ProofKind::Indexed64 { .. }, _) => {
                let wide = matches!(proof.kind, ProofKind::Indexed64 { .. });
                let product =
                    if access.walk { walk_product(proof.size) } else { product_of(proof.size, wide) };
                out.push(op("add", &["s64"], vec![reg(address), reg(&pointer), reg(&product)]));
            }
            (ProofKind::Ranged { signed, .. }, Some(index)) => {
                let (ranged, scaled) = (pick(&names::RANGED), pick(&names::RANGED_PRODUCT));
                let hi = format!("{}{}", names::RANGE_HI, access.proof);
                out.push(op("min", &["u32"], vec![reg(ranged), reg(index), reg(&hi)]));
                self.note(index, ranged, guard, out);
                let sign = if signed { "s32" } else { "u32" };
                let size = i128::from(proof.size);
                out.push(op("mul", &["wide", sign], vec![reg(scaled), reg(ranged), imm(size)]));
                out.push(op("add", &["s64"], vec![reg(address), reg(&pointer), reg(scaled)]));
            }
            (ProofKind::Fixed | ProofKind::Ranged { .. }, _) => {}
        }
    }

    /// A confined shared access's address, in `%__kargs_a<slot>`: the array's address (read in
    /// the leading run: `shared_prologue`) plus the kernel's index confined to the array's
    /// elements (`hi`: a constant, or an `.extern .shared` array's register), shifted as the
    /// kernel shifts it; the clamped form notes an index it moved. A two-dimensional access's
    /// whole offset is confined instead, to a multiple of its alignment:
    ///
    /// ```text
    /// shl.b32      %__kargs_zo<slot>, <x>, <shift>
    /// mad.lo.u32   %__kargs_zs<slot>, <y>, <stride>, %__kargs_zo<slot>
    /// min.u32      %__kargs_yx<slot>, %__kargs_zs<slot>, <highest offset>
    /// add.u32      %__kargs_zs<slot>, %__kargs_zv<j>, %__kargs_yx<slot>
    /// cvt.u64.u32  %__kargs_a<slot>, %__kargs_zs<slot>
    /// ```
    ///
    /// A one-dimensional one:
    ///
    /// ```text
    /// min.u32      %__kargs_yx<slot>, <index>, <hi>       // a 16-bit index: cvt.u32.u16 first
    /// shl.b32      %__kargs_zo<slot>, %__kargs_yx<slot>, <shift>
    /// add.u32      %__kargs_zs<slot>, %__kargs_zv<j>, %__kargs_zo<slot>
    /// cvt.u64.u32  %__kargs_a<slot>, %__kargs_zs<slot>
    /// ```
    fn shared_access(
        &self,
        access: &super::prove::SharedAccess,
        slot: usize,
        guard: Option<&Guard>,
        out: &mut Vec<Statement>,
    ) {
        let pick = |names: &[&'static str; 2]| names.get(slot).copied().unwrap_or(names[0]);
        let (index, offset, sum) =
            (pick(&names::RANGED), pick(&names::SHARED_OFFSET), pick(&names::SHARED_SUM));
        let j = self.arrays.iter().position(|v| *v == access.var).unwrap_or(0);
        let array = format!("{}{j}", names::SHARED_ARRAY);
        // Confined once, in the leading run: the array's address plus that offset (the clamped
        // form's note compares the index, or the two-dimensional offset, with its confinement).
        if let Some(n) = access.pre().and_then(|p| self.pres.iter().position(|q| *q == p)) {
            if self.notes() {
                let mid = format!("{}{n}", names::PRE_MID);
                match &access.row {
                    Some(_) => self.note(&mid, &format!("{}{n}", names::PRE_OFFSET), guard, out),
                    None => self.note(&access.index, &mid, guard, out),
                }
            }
            out.push(op(
                "add",
                &["u32"],
                vec![reg(sum), reg(&array), reg(&format!("{}{n}", names::PRE_OFFSET))],
            ));
            out.push(op("cvt", &["u64", "u32"], vec![reg(pick(&names::ADDRESS)), reg(sum)]));
            return;
        }
        let hi = match access.hi {
            SharedHi::Fixed(hi) => imm(i128::from(hi)),
            SharedHi::Dynamic { reach } => reg(&dynamic_hi(reach, access.shift)),
            SharedHi::Offset { max, .. } => {
                // A two-dimensional access: the whole offset, `y * stride + (x << k)`, confined.
                let Some((row, stride)) = &access.row else { return };
                let shift = i128::from(access.shift);
                out.push(op("shl", &["b32"], vec![reg(offset), reg(&access.index), imm(shift)]));
                let stride = imm(i128::from(*stride));
                out.push(op("mad", &["lo", "u32"], vec![reg(sum), reg(row), stride, reg(offset)]));
                out.push(op("min", &["u32"], vec![reg(index), reg(sum), imm(i128::from(max))]));
                self.note(sum, index, guard, out);
                out.push(op("add", &["u32"], vec![reg(sum), reg(&array), reg(index)]));
                out.push(op("cvt", &["u64", "u32"], vec![reg(pick(&names::ADDRESS)), reg(sum)]));
                return;
            }
        };
        if access.narrow {
            out.push(op("cvt", &["u32", "u16"], vec![reg(index), reg(&access.index)]));
            out.push(op("min", &["u32"], vec![reg(index), reg(index), hi]));
        } else {
            out.push(op("min", &["u32"], vec![reg(index), reg(&access.index), hi]));
        }
        if self.notes() {
            // (A 16-bit index is compared widened: the moved one differs in its low bits.)
            let kernel = if access.narrow { offset } else { access.index.as_str() };
            if access.narrow {
                out.push(op("cvt", &["u32", "u16"], vec![reg(offset), reg(&access.index)]));
            }
            self.note(kernel, index, guard, out);
        }
        out.push(op("shl", &["b32"], vec![reg(offset), reg(index), imm(i128::from(access.shift))]));
        out.push(op("add", &["u32"], vec![reg(sum), reg(&array), reg(offset)]));
        out.push(op("cvt", &["u64", "u32"], vec![reg(pick(&names::ADDRESS)), reg(sum)]));
    }

    fn block(&mut self, statements: &[Statement]) -> Result<Vec<Statement>, FenceError> {
        let mut out = Vec::new();
        for statement in statements {
            match statement {
                Statement::Instruction(i) => {
                    self.instruction(i, &mut out)?;
                    self.bounds_check(&mut out);
                }
                Statement::Block(b) => {
                    let inner = self.block(&b.statements)?;
                    out.push(Statement::Block(Block { span: b.span, statements: inner }));
                }
                // Top-level variables were moved to the top; nested ones refused.
                Statement::Variable(_) => {}
                Statement::Label(l) => {
                    self.noted = true;
                    let walk = self.proven.loops.iter().find(|w| w.label == l.name);
                    if walk.is_some() {
                        out.push(op("mov", &["u32"], vec![reg(names::WALK), reg(names::INDEX)]));
                    }
                    out.push(statement.clone());
                    if let Some(walk) = walk {
                        let sign = if walk.check == Check::U32 { "u32" } else { "s32" };
                        for &size in &walk.sizes {
                            out.push(op(
                                "mul",
                                &["wide", sign],
                                vec![reg(&walk_product(size)), reg(names::WALK), imm(i128::from(size))],
                            ));
                        }
                    }
                }
                other => out.push(other.clone()),
            }
        }
        Ok(out)
    }

    fn instruction(&mut self, instruction: &Instruction, out: &mut Vec<Statement>) -> Result<(), FenceError> {
        let index = self.next;
        self.next = self.next.saturating_add(1);
        let (Some(class), Some(plans)) = (self.classes.get(index), self.plans.get(index)) else {
            return Err(refuse(instruction.span, one_line(instruction), FenceRefusal::Malformed));
        };
        let guard = instruction.guard.as_ref();
        match class {
            // Before anything is noted, a thread has nothing to report: a branch to an exit
            // (nvcc's bounds check, `@%p1 bra $L__BB0_2` to `ret`) and an exit leave at once,
            // so the paths do not join before the flag's test, and ptxas needs no convergence
            // barrier around the body.
            Class::Branch
                if self.fenced
                    && !self.noted
                    && instruction.operands.iter().any(
                        |o| matches!(&o.kind, OperandKind::Symbol { name, .. } if self.exit_labels.contains(name)),
                    ) =>
            {
                out.push(guarded(guard, "ret", &[], vec![]));
            }
            Class::Exit if self.fenced && !self.noted => out.push(Statement::Instruction(instruction.clone())),
            Class::Branch if self.leave_at.contains(&index) => {
                let branch = self.walk_branch(index, instruction, out);
                self.count_leaving(&branch, out);
            }
            Class::Branch if self.backward_at.contains(&index) => {
                let branch = self.walk_branch(index, instruction, out);
                self.count(branch.guard.as_ref(), out);
                out.push(Statement::Instruction(branch));
            }
            // The kernel's own index, where the entry has a proof: a copy of the fence's.
            Class::Plain if let Some(walk) = self.proven.loops.iter().find(|w| w.step == index) => {
                Self::walk_step(walk, instruction, out);
            }
            // The kernel's reads of `%ctaid.x`, `%ntid.x` and `%tid.x`, where the entry computes
            // the thread's index: copies of the fence's reads, so that ptxas sees one of each.
            Class::Plain if let Some(copy) = self.special_copy(instruction) => out.push(copy),
            Class::Plain if self.proven.index_defs.contains(&index) => {
                let dest = instruction.operands.first().cloned().unwrap_or_else(|| reg(names::INDEX));
                out.push(guarded(guard, "mov", &["u32"], vec![dest, reg(names::INDEX)]));
            }
            Class::Plain if self.proven.index_defs64.contains(&index) => {
                let dest = instruction.operands.first().cloned().unwrap_or_else(|| reg(names::INDEX64));
                out.push(guarded(guard, "mov", &["b64"], vec![dest, reg(names::INDEX64)]));
            }
            Class::Plain | Class::Branch => out.push(Statement::Instruction(instruction.clone())),
            Class::Exit if self.fenced => {
                let modifiers: &[&str] = if guard.is_some() { &[] } else { &["uni"] };
                out.push(guarded(guard, "bra", modifiers, vec![sym(names::EXIT, 0)]));
            }
            Class::Exit => out.push(Statement::Instruction(instruction.clone())),
            Class::Trap => {
                self.noted = true;
                out.push(guarded(guard, "mov", &["u32"], vec![reg(names::W), imm(1)]));
                out.push(guarded(guard, "bra", &[], vec![sym(names::EXIT, 0)]));
            }
            Class::WarpSync(mask) => {
                let mut rewritten = instruction.clone();
                if let Some(operand) = rewritten.operands.get_mut(*mask)
                    && !isa::full_mask(&operand.kind)
                {
                    out.push(op("mov", &["u32"], vec![reg(names::LANE), reg("%lanemask_eq")]));
                    out.push(op("or", &["b32"], vec![reg(names::MASK), reg(names::LANE), operand.clone()]));
                    *operand = reg(names::MASK);
                }
                out.push(Statement::Instruction(rewritten));
            }
            Class::Fragment(fragment) => {
                self.noted = true;
                self.fragment(instruction, fragment, index, out)?;
            }
            Class::Access(accesses) => {
                // A ranged proof's access is noted where it is moved, in the clamped form, as a
                // confined shared access is.
                let ranged = plans
                    .iter()
                    .any(|plan| matches!(plan, Plan::Proven(p) if p.index.is_some()) || matches!(plan, Plan::Shared(_)));
                self.noted |= plans.iter().any(|plan| !matches!(plan, Plan::Static | Plan::Proven(_) | Plan::Shared(_)))
                    || (ranged && self.notes());
                let mut rewritten = instruction.clone();
                let mut slot = 0usize;
                for (access, plan) in accesses.iter().zip(plans) {
                    if let Plan::Shared(shared) = plan {
                        let address = names::ADDRESS.get(slot).copied().unwrap_or(names::ADDRESS[0]);
                        self.shared_access(shared, slot, guard, out);
                        slot = slot.saturating_add(1);
                        if let Some(operand) = rewritten.operands.get_mut(access.operand) {
                            *operand = Operand::new(OperandKind::Address(Address {
                                base: AddressBase::Register(address.to_owned()),
                                offset: shared.offset,
                            }));
                        }
                        continue;
                    }
                    if let Plan::Proven(proven) = plan {
                        self.proven_access(proven, slot, guard, out);
                        let base = match self.proven.proofs.get(proven.proof).map(|p| p.kind) {
                            Some(ProofKind::Fixed) | None => format!("{}{}", names::POINTER, proven.proof),
                            Some(ProofKind::Indexed { .. } | ProofKind::Indexed64 { .. } | ProofKind::Ranged { .. }) => {
                                let address = names::ADDRESS.get(slot).copied().unwrap_or(names::ADDRESS[0]);
                                slot = slot.saturating_add(1);
                                address.to_owned()
                            }
                        };
                        if let Some(operand) = rewritten.operands.get_mut(access.operand) {
                            *operand = Operand::new(OperandKind::Address(Address {
                                base: AddressBase::Register(base),
                                offset: proven.offset,
                            }));
                        }
                        continue;
                    }
                    if let Plan::Grouped { register, delta, lead } = plan {
                        if let Some(lead) = lead {
                            self.lead(lead, register, out);
                        }
                        if let Some(operand) = rewritten.operands.get_mut(access.operand) {
                            *operand = Operand::new(OperandKind::Address(Address {
                                base: AddressBase::Register(register.clone()),
                                offset: *delta,
                            }));
                        }
                        continue;
                    }
                    let Plan::Clamp { window, generic, width, register, base, offset } = plan else {
                        continue;
                    };
                    // A constant offset into the fence (a module variable's, `lower.rs`) that
                    // every fence holds: the fence's base plus it.
                    if let (Window::Global, None, None, AddressBase::Absolute) = (window, generic, register, base)
                        && constant_fits(*offset, *width, self.room)
                    {
                        if let Some(operand) = rewritten.operands.get_mut(access.operand) {
                            *operand = Operand::new(OperandKind::Address(Address {
                                base: AddressBase::Register(Window::Global.base()),
                                offset: *offset,
                            }));
                        }
                        continue;
                    }
                    let address = names::ADDRESS.get(slot).copied().unwrap_or(names::ADDRESS[0]);
                    slot = slot.saturating_add(1);
                    let effective = self.effective(register.as_ref(), base, *offset, out);
                    let window = if generic.is_some() { Window::Global } else { *window };
                    self.clamp(window, *width, &effective, address, out);
                    if self.notes() {
                        out.push(op("xor", &["b32"], vec![reg(names::D), reg(names::U), reg(names::K)]));
                    }
                    if let Some(local) = generic {
                        if self.shared_window {
                            self.generic_path(Window::Shared, *width, &effective, address, out);
                        }
                        if self.local_window && *local {
                            self.generic_path(Window::Local, *width, &effective, address, out);
                        }
                    }
                    if self.notes() {
                        out.push(record(guard));
                    }
                    if let Some(operand) = rewritten.operands.get_mut(access.operand) {
                        *operand = at(address);
                    }
                }
                let _ = self.types;
                let _ = self.windows;
                out.push(Statement::Instruction(rewritten));
            }
        }
        Ok(())
    }

    /// The budget's count before a backward branch under `guard`: a thread that would take it
    /// with its budget spent leaves through the budget's exit; one that takes it spends one.
    ///
    /// ```text
    /// setp.eq.and.u32  q, b, 0, g     // setp.eq.u32 q, b, 0 for an unguarded branch
    /// @q bra           $__kargs_budget
    /// @g sub.u32       b, b, 1
    /// @g bra           L              // the kernel's own branch
    /// ```
    fn count(&self, guard: Option<&Guard>, out: &mut Vec<Statement>) {
        let test = match guard {
            None => op("setp", &["eq", "u32"], vec![reg(names::Q), reg(names::B), imm(0)]),
            Some(g) => {
                let register = kernel_args_ptx::Register::new(g.register.clone());
                let predicate = Operand::new(if g.negated {
                    OperandKind::Not(register)
                } else {
                    OperandKind::Register(register)
                });
                op("setp", &["eq", "and", "u32"], vec![reg(names::Q), reg(names::B), imm(0), predicate])
            }
        };
        out.push(test);
        let spent = Guard { span: Span::default(), negated: false, register: names::Q.to_owned() };
        out.push(guarded(Some(&spent), "bra", &[], vec![sym(names::BUDGET, 0)]));
        out.push(guarded(guard, "sub", &["u32"], vec![reg(names::B), reg(names::B), imm(1)]));
    }

    /// The budget's count before a backward branch `@g bra L` that leaves its loop on a spent
    /// budget (see [`leaving_branches`]): the branch goes only while the budget lasts, and a
    /// thread that would take it with its budget spent falls through, out of the loop, with the
    /// budget's byte of the flag set.
    ///
    /// ```text
    /// setp.ne.and.u32  go, b, 0, g
    /// @go sub.u32      b, b, 1
    /// @go bra          L              // the kernel's branch, under `go` (never `.uni`)
    /// setp.eq.and.u32  q, b, 0, g     // fell through: g held and the budget is spent
    /// ld.param.u64     flag, [__kargs_fence_flag]
    /// @q st.global.u8  [flag+2], 1
    /// ```
    fn count_leaving(&self, branch: &Instruction, out: &mut Vec<Statement>) {
        let predicate = |g: &Guard| {
            let register = kernel_args_ptx::Register::new(g.register.clone());
            Operand::new(if g.negated { OperandKind::Not(register) } else { OperandKind::Register(register) })
        };
        let test = |dest: &str, cmp: &str| match &branch.guard {
            None => op("setp", &[cmp, "u32"], vec![reg(dest), reg(names::B), imm(0)]),
            Some(g) => op("setp", &[cmp, "and", "u32"], vec![reg(dest), reg(names::B), imm(0), predicate(g)]),
        };
        let go = Guard { span: Span::default(), negated: false, register: names::GO.to_owned() };
        out.push(test(names::GO, "ne"));
        out.push(guarded(Some(&go), "sub", &["u32"], vec![reg(names::B), reg(names::B), imm(1)]));
        let mut taken = branch.clone();
        taken.guard = Some(go);
        taken.modifiers.retain(|m| m != "uni");
        out.push(Statement::Instruction(taken));
        out.push(test(names::Q, "eq"));
        out.push(load_flag());
        let spent = Guard { span: Span::default(), negated: false, register: names::Q.to_owned() };
        out.push(set_flag(Some(&spent), FLAG_BUDGET));
    }

    /// The instructions that put an access's effective address in a 64-bit register: which.
    fn effective(
        &self,
        register: Option<&(String, u64)>,
        base: &AddressBase,
        offset: i64,
        out: &mut Vec<Statement>,
    ) -> String {
        match (register, base) {
            (Some((name, 8)), _) if offset == 0 => return name.clone(),
            (Some((name, 8)), _) => {
                out.push(op("add", &["s64"], vec![reg(names::E), reg(name), imm(i128::from(offset))]))
            }
            (Some((name, size)), _) => {
                let from = if *size == 2 { "u16" } else { "u32" };
                out.push(op("cvt", &["u64", from], vec![reg(names::E), reg(name)]));
                if offset != 0 {
                    out.push(op(
                        "add",
                        &["s64"],
                        vec![reg(names::E), reg(names::E), imm(i128::from(offset))],
                    ));
                }
            }
            (None, AddressBase::Symbol(name)) => {
                out.push(op("mov", &["u64"], vec![reg(names::E), sym(name, offset)]))
            }
            (None, _) => out.push(op("mov", &["u64"], vec![reg(names::E), imm(i128::from(offset))])),
        }
        names::E.to_owned()
    }

    /// A `wmma.load` or `wmma.store` whose fragment is clamped whole into its window (the fence,
    /// or the shared window for one in shared memory, whose offsets are taken from its base
    /// first, as any shared access's are): its stride bounded so that the fragment fits in the
    /// window and aligned to 16 bytes, its address clamped to the last offset the fragment fits
    /// at, aligned to 32 bytes.
    ///
    /// ```text
    /// and.b32      wa, stride, -A     // 16 bytes' worth of elements
    /// mul.wide.u32 wp, wa, span       // the last line's distance from the first, exact
    /// cvt.u64.u32  wt, g<line>        // the fence's length less a line
    /// setp.gt.u64  wg, wp, wt         // the fragment would not fit
    /// selp.b32     ws, 0, wa, wg      // then its lines at one place: a line fits
    /// mul.lo.u32   wr, ws, span
    /// sub.u32      wl, g<line>, wr    // the last offset the fragment fits at
    /// cvt.u32.u64  u, e               // and sub.u32 u, u, b in the shared window
    /// min.u32      k, u, wl
    /// and.b32      k, k, -32
    /// cvt.u64.u32  c, k
    /// add.u64      a, c, b            // or.b64 in the aligned form; in the shared window,
    ///                                 // add.u32 j, k, b and cvt.u64.u32 a, j
    /// xor.b32      d, u, k            // clamped form: moved...
    /// xor.b32      wr, stride, ws     // ...or its stride changed
    /// or.b32       d, d, wr
    /// or.b32       v, v, d            // under the instruction's own guard
    /// wmma.load... [a], ws            // the stride written where the kernel left it out
    /// ```
    ///
    /// A generic fragment in an entry with a shared window takes the global chain and then,
    /// where `isspacep.shared` says its address is in the shared window, the shared one, into a
    /// stride of its own (`wz`) and a generic address (`cvta.shared`); the address and the
    /// stride are chosen together, by that predicate (`selp`), into `a` and `wf`.
    ///
    /// A correct kernel's fragment lies in its window, so its stride times the span fits and its
    /// offset is at most the last that fits: it runs as it is. A stride that would not fit is
    /// 0 (every line at one place), which the window holds whatever its length.
    fn fragment(
        &self,
        instruction: &Instruction,
        f: &isa::Fragment,
        index: usize,
        out: &mut Vec<Statement>,
    ) -> Result<(), FenceError> {
        let refused = |reason| refuse(instruction.span, one_line(instruction), reason);
        let address = instruction
            .operands
            .get(f.operand)
            .and_then(Operand::address)
            .ok_or_else(|| refused(FenceRefusal::Address))?;
        let AddressBase::Register(name) = &address.base else { return Err(refused(FenceRefusal::Address)) };
        let size = self
            .types
            .get(index)
            .and_then(|t| t.get(name))
            .copied()
            .ok_or_else(|| refused(FenceRefusal::Address))?;
        let effective = self.effective(Some(&(name.clone(), size)), &address.base, address.offset, out);
        let stride = match f.stride {
            Some(i) => {
                instruction.operands.get(i).cloned().ok_or_else(|| refused(FenceRefusal::Malformed))?
            }
            None => imm(i128::from(f.line_elements)),
        };
        let guard = instruction.guard.as_ref();
        let address = names::ADDRESS[0];
        let chosen = match self.fixed_strides.get(&index) {
            // A constant stride: one clamp of the whole fragment's reach, as an access's, and
            // the stride written as the constant it is.
            Some(&(fixed, reach)) => {
                let offset = self.offset(Window::Global, &effective, out);
                self.clamp_offset_to(&offset, &Window::Global.limit(reach), isa::FRAGMENT_ALIGN, out);
                self.join(Window::Global, address, out);
                self.note(names::U, names::K, guard, out);
                imm(i128::from(fixed))
            }
            None => reg(self.bounded_fragment(f, &effective, &stride, guard, out)),
        };
        let mut rewritten = instruction.clone();
        if let Some(operand) = rewritten.operands.get_mut(f.operand) {
            *operand = at(address);
        }
        match f.stride.and_then(|i| rewritten.operands.get_mut(i)) {
            Some(operand) => *operand = chosen,
            None => rewritten.operands.push(chosen),
        }
        out.push(Statement::Instruction(rewritten));
        Ok(())
    }

    /// [`fragment`](Self::fragment)'s clamp of a fragment whose stride it bounds, into
    /// `%__kargs_a0`: the register that holds the stride to use.
    fn bounded_fragment(
        &self,
        f: &isa::Fragment,
        effective: &str,
        stride: &Operand,
        guard: Option<&Guard>,
        out: &mut Vec<Statement>,
    ) -> &'static str {
        let address = names::ADDRESS[0];
        let first = if f.space == Space::Shared { Window::Shared } else { Window::Global };
        self.fragment_chain(f, first, effective, stride, (address, names::STRIDE), None, out);
        let chosen = if matches!(f.space, Space::Generic { .. }) && self.shared_window {
            let ps = Guard { span: Span::default(), negated: false, register: names::PS.to_owned() };
            out.push(op("isspacep", &["shared"], vec![reg(names::PS), reg(effective)]));
            out.push(op("cvta", &["to", "shared", "u64"], vec![reg(names::X), reg(effective)]));
            let shared = (names::X, names::STRIDE_SHARED);
            self.fragment_chain(f, Window::Shared, names::X, stride, shared, Some(&ps), out);
            out.push(op("cvta", &["shared", "u64"], vec![reg(names::X), reg(names::X)]));
            out.push(op("selp", &["b64"], vec![reg(address), reg(names::X), reg(address), reg(names::PS)]));
            let strides = vec![
                reg(names::STRIDE_CHOSEN),
                reg(names::STRIDE_SHARED),
                reg(names::STRIDE),
                reg(names::PS),
            ];
            out.push(op("selp", &["b32"], strides));
            names::STRIDE_CHOSEN
        } else {
            names::STRIDE
        };
        if self.notes() {
            out.push(record(guard));
        }
        chosen
    }

    /// One window's chain of [`fragment`](Self::fragment): `effective`'s fragment clamped into
    /// `window`, into `(address, bounded stride)`; in the clamped form, whether it moved into
    /// `%__kargs_d` (under `taken` where given: the path another clamp's note is replaced on).
    #[allow(clippy::too_many_arguments)]
    fn fragment_chain(
        &self,
        f: &isa::Fragment,
        window: Window,
        effective: &str,
        stride: &Operand,
        (address, bounded): (&str, &str),
        taken: Option<&Guard>,
        out: &mut Vec<Statement>,
    ) {
        let line_limit = window.limit(f.line_bytes);
        out.push(op(
            "and",
            &["b32"],
            vec![reg(names::STRIDE_ALIGNED), stride.clone(), imm(i128::from(f.stride_align).wrapping_neg())],
        ));
        out.push(op(
            "mul",
            &["wide", "u32"],
            vec![reg(names::STRIDE_PRODUCT), reg(names::STRIDE_ALIGNED), imm(i128::from(f.span))],
        ));
        out.push(op("cvt", &["u64", "u32"], vec![reg(names::LINE_LIMIT), reg(&line_limit)]));
        out.push(op(
            "setp",
            &["gt", "u64"],
            vec![reg(names::STRIDE_OVER), reg(names::STRIDE_PRODUCT), reg(names::LINE_LIMIT)],
        ));
        out.push(op(
            "selp",
            &["b32"],
            vec![reg(bounded), imm(0), reg(names::STRIDE_ALIGNED), reg(names::STRIDE_OVER)],
        ));
        out.push(op(
            "mul",
            &["lo", "u32"],
            vec![reg(names::STRIDE_SPAN), reg(bounded), imm(i128::from(f.span))],
        ));
        out.push(op(
            "sub",
            &["u32"],
            vec![reg(names::STRIDE_LIMIT), reg(&line_limit), reg(names::STRIDE_SPAN)],
        ));
        let offset = self.offset(window, effective, out);
        self.clamp_offset_to(&offset, names::STRIDE_LIMIT, isa::FRAGMENT_ALIGN, out);
        self.join(window, address, out);
        if self.notes() {
            out.push(guarded(taken, "xor", &["b32"], vec![reg(names::D), reg(names::U), reg(names::K)]));
            out.push(op("xor", &["b32"], vec![reg(names::STRIDE_SPAN), stride.clone(), reg(bounded)]));
            out.push(guarded(
                taken,
                "or",
                &["b32"],
                vec![reg(names::D), reg(names::D), reg(names::STRIDE_SPAN)],
            ));
        }
    }

    /// A group's one clamp, into its register (the group's accesses are unguarded).
    ///
    /// A bounded group's (`Lead::max`), at most the bound, then aligned:
    ///
    /// ```text
    /// cvt.u32.u64  %__kargs_u, <address>
    /// min.u32      %__kargs_k, %__kargs_u, <max>
    /// and.b32      %__kargs_k, %__kargs_k, -<align>
    /// ```
    fn lead(&self, lead: &Lead, register: &str, out: &mut Vec<Statement>) {
        let effective = self.effective(lead.register.as_ref(), &lead.base, lead.offset, out);
        let offset = self.offset(lead.window, &effective, out);
        if let Some(max) = lead.max {
            out.push(op("cvt", &["u32", "u64"], vec![reg(names::U), reg(&offset)]));
            out.push(op("min", &["u32"], vec![reg(names::K), reg(names::U), imm(i128::from(max))]));
            if lead.align > 1 {
                let mask = i128::from(lead.align).wrapping_neg();
                out.push(op("and", &["b32"], vec![reg(names::K), reg(names::K), imm(mask)]));
            }
            self.join(lead.window, register, out);
        } else if self.aligned
            && lead.window == Window::Global
            && lead.span == lead.align
            && masked(lead.span)
        {
            // Accesses of one width at one address: masked as one access is.
            self.mask(lead.span, &offset, register, out);
        } else {
            self.clamp_offset(lead.window, &offset, lead.span, lead.align, out);
            self.join(lead.window, register, out);
        }
        self.note(names::U, names::K, None, out);
    }

    /// Whether an access the fence moved is noted for the flag: in the clamped form. The
    /// aligned form confines every access without a word (as a wasm engine's bounds mask
    /// does), so that no access pays for the note; its flag reports traps and the budget.
    fn notes(&self) -> bool {
        !self.aligned
    }

    /// In the clamped form, the note of one access: `d = kernel ^ confined`, non-zero when the
    /// fence moved the access, or'd into the note (under the access's guard).
    ///
    /// ```text
    /// xor.b32      %__kargs_d, <kernel>, <confined>
    /// @g or.b32    %__kargs_v, %__kargs_v, %__kargs_d
    /// ```
    fn note(&self, kernel: &str, confined: &str, guard: Option<&Guard>, out: &mut Vec<Statement>) {
        if self.notes() {
            out.push(op("xor", &["b32"], vec![reg(names::D), reg(kernel), reg(confined)]));
            out.push(record(guard));
        }
    }

    /// The clamp of `effective` into `window`, into register `address`.
    fn clamp(&self, window: Window, width: u64, effective: &str, address: &str, out: &mut Vec<Statement>) {
        let offset = self.offset(window, effective, out);
        if self.aligned && window == Window::Global && masked(width) {
            self.mask(width, &offset, address, out);
            return;
        }
        self.clamp_offset(window, &offset, width, width, out);
        self.join(window, address, out);
    }

    /// The aligned form's global access of `width` bytes at `offset`, into register `address`:
    /// the offset's low 32 bits masked with the fence's limit for `width` bytes (its length
    /// less `width`: a multiple of `width`, the launcher giving a fence a multiple of 16 bytes
    /// long, so the mask also aligns), and the base's bits added.
    fn mask(&self, width: u64, offset: &str, address: &str, out: &mut Vec<Statement>) {
        let window = Window::Global;
        out.push(op("cvt", &["u32", "u64"], vec![reg(names::U), reg(offset)]));
        out.push(op("and", &["b32"], vec![reg(names::K), reg(names::U), reg(&window.limit(width))]));
        out.push(op("cvt", &["u64", "u32"], vec![reg(names::C), reg(names::K)]));
        out.push(op("or", &["b64"], vec![reg(address), reg(names::C), reg(&window.base())]));
    }

    /// The clamped 32-bit offset in `%__kargs_k` joined to `window`'s base, into the 64-bit
    /// register `address`. The fence's: widened, then `add` (`or` in the aligned form, whose
    /// base's low bits are zero). A shared, local or constant window's: added to its base in
    /// 32 bits, the state space's own addresses, then widened.
    fn join(&self, window: Window, address: &str, out: &mut Vec<Statement>) {
        let base = window.base();
        if window == Window::Global {
            out.push(op("cvt", &["u64", "u32"], vec![reg(names::C), reg(names::K)]));
            let (join, ty) = if self.aligned { ("or", "b64") } else { ("add", "u64") };
            out.push(op(join, &[ty], vec![reg(address), reg(names::C), reg(&base)]));
        } else {
            out.push(op("add", &["u32"], vec![reg(names::J), reg(names::K), reg(&base)]));
            out.push(op("cvt", &["u64", "u32"], vec![reg(address), reg(names::J)]));
        }
    }

    /// The register that holds `effective`'s offset from `window`'s start: in the global
    /// window the address is one already (a fenced kernel's global addresses are offsets into
    /// the fence); in another window, `%__kargs_u`, the address's low 32 bits less the window's
    /// base (a 32-bit register).
    fn offset(&self, window: Window, effective: &str, out: &mut Vec<Statement>) -> String {
        if window == Window::Global {
            return effective.to_owned();
        }
        out.push(op("cvt", &["u32", "u64"], vec![reg(names::U), reg(effective)]));
        out.push(op("sub", &["u32"], vec![reg(names::U), reg(names::U), reg(&window.base())]));
        names::U.to_owned()
    }

    /// `offset`, an offset from `window`'s base, clamped into `%__kargs_k` in 32 bits: at most
    /// the last offset `reach` bytes fit at, rounded down to `align`.
    fn clamp_offset(&self, window: Window, offset: &str, reach: u64, align: u64, out: &mut Vec<Statement>) {
        self.clamp_offset_to(offset, &window.limit(reach), align, out);
    }

    /// `offset` (a 64-bit register, or `%__kargs_u` already) clamped into `%__kargs_k` in 32
    /// bits: at most the 32-bit `limit`, rounded down to `align`.
    fn clamp_offset_to(&self, offset: &str, limit: &str, align: u64, out: &mut Vec<Statement>) {
        if offset != names::U {
            out.push(op("cvt", &["u32", "u64"], vec![reg(names::U), reg(offset)]));
        }
        out.push(op("min", &["u32"], vec![reg(names::K), reg(names::U), reg(limit)]));
        if align > 1 {
            out.push(op(
                "and",
                &["b32"],
                vec![reg(names::K), reg(names::K), imm(i128::from(align).wrapping_neg())],
            ));
        }
    }

    /// A generic access's path through the shared or local window: where `isspacep` says the
    /// address is there, the clamp in that window replaces the global one.
    fn generic_path(
        &self,
        window: Window,
        width: u64,
        effective: &str,
        address: &str,
        out: &mut Vec<Statement>,
    ) {
        let (space, predicate) =
            if window == Window::Shared { ("shared", names::PS) } else { ("local", names::PL) };
        out.push(op("isspacep", &[space], vec![reg(predicate), reg(effective)]));
        out.push(op("cvta", &["to", space, "u64"], vec![reg(names::X), reg(effective)]));
        let offset = self.offset(window, names::X, out);
        self.clamp_offset(window, &offset, width, width, out);
        self.join(window, names::X, out);
        out.push(op("cvta", &[space, "u64"], vec![reg(names::X), reg(names::X)]));
        out.push(op("selp", &["b64"], vec![reg(address), reg(names::X), reg(address), reg(predicate)]));
        // Where the address is in this window, whether this clamp moved it.
        if self.notes() {
            let taken = Guard { span: Span::default(), negated: false, register: predicate.to_owned() };
            out.push(guarded(
                Some(&taken),
                "xor",
                &["b32"],
                vec![reg(names::D), reg(names::U), reg(names::K)],
            ));
        }
    }
}
