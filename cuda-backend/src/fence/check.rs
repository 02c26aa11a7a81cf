//! The checker: translation validation of a fenced module, written apart from the rewriter.
//!
//! It reads the printed text through the front end, as the driver will receive it, and for
//! every entry verifies by its own rules, not the rewriter's:
//!
//! 1. **Every instruction is one it knows.** Its own table of instructions that touch no
//!    memory, of memory instructions (which operand is an address, the state space it reaches
//!    and its default, the width), branches and barriers; anything else (`trap`, `call`,
//!    textures, tensor copies...) is a finding.
//! 2. **Every address is proven inside its window, on every path.** A small abstract
//!    interpretation over the body in order. Facts hold only in the fence's own registers
//!    (`%__kargs_*`), which only the fence's instruction forms below may write; every other
//!    instruction may name them only as an address it reads. A fact dies when its register is
//!    written (a guarded write kills it too) and at every label (another path joins there), so
//!    a fact at an instruction holds on every path that reaches it. One exception, a loop's
//!    head: a grid-stride loop's index (`within`, below) and the bounds below stay past a label
//!    that no earlier branch names, and every later branch to it must keep them (`back edge`,
//!    below), so they hold on every path there too.
//! 3. **The windows are computed once, before anything else.** Window facts come only from the
//!    entry's leading run of the fence's instructions (straight-line, before any label, branch
//!    or instruction of the kernel's), and no later instruction may write their registers.
//!    The facts kept past the run, fixed: the limits, the fence's base, the index and the bounds,
//!    the fence's own checks of them (`outside`), the proofs' pointers and ranges, variables'
//!    addresses, the special registers, the dynamic highest indexes, the "at most" values
//!    (the shared confinements made once, from `%tid`) and multiples, and the fixed proofs'
//!    addresses.
//! 4. **Every backward branch is counted against the budget.** A branch to a label at or before
//!    it follows its count with nothing between, the counter is written nowhere else, and no
//!    branch follows the budget's exit (the rules are on `Budget`, below).
//!
//! The facts, and the forms that make them (`R` a reach: the bytes a clamp covers, from 1 to
//! the window's shortest length; `A` an alignment of 2, 4, 8 or 16 bytes):
//!
//! | fact | made by | means |
//! |---|---|---|
//! | fence base | `ld.param.u64 r, [__kargs_fence_base]` | the global window's start (the launcher aligns it to 16, and to 32 for a module with a `wmma` fragment) |
//! | fence length | `ld.param.u64 r, [__kargs_fence_len]` | its length (the launcher gives at least [`MIN_FENCE_LEN`], a multiple of 16) |
//! | address of `V` | `mov.u32 r, V`, `V` a `.shared`, `.local` or `.const` variable aligned to 16 | its 32-bit address, in that space's allocation |
//! | low | `min.u32` of addresses and lows of one space | one of its variables' start: in the allocation, aligned to 16 |
//! | high | `add.u32 r, address of V, K` (`K` ≤ `V`'s size); the address of an `.extern .shared` plus `%dynamic_smem_size` (`mov.u32`); `max.u32` of highs | at most the allocation's end |
//! | length | `sub.u32 r, high, low b`, where the high reaches `k` ≥ 16 bytes past a variable the low is below | the window `[b, b + length)` is inside the allocation, at least the longest such `k` long |
//! | limit `R` | `sub.u64 r, fence length, R` (`R` at most [`MAX_REACH`]; the report's `fence_min_len` is the longest, which the launcher gives at least) | the last offset of the fence at which `R` bytes fit |
//! | 32-bit limit `R` | `cvt.u32.u64 r, limit R` (exact: the fence is shorter than 4 GiB, below); `sub.u32 r, length, R` (`R` at most the window's shortest length) | the last offset at which `R` bytes fit |
//! | below | `min.u64 r, x, limit R`; 32-bit: `min.u32 r, x, 32-bit limit R` | at most the limit |
//! | offset | `and.b64 r, below, -A` (a below alone is an offset aligned to 1); 32-bit: `and.b32` of a 32-bit below (`A` up to 32 in the fence: a fragment's); `cvt.u64.u32` of a 32-bit offset or below | at most the limit, a multiple of `A` |
//! | 32-bit offset, masked | `and.b32 r, x, 32-bit limit R` of the fence length (`R` 1, 2, 4, 8 or 16) | at most the limit, a multiple of `R` (its bits are the limit's, and the fence length less `R` is a multiple of `R`): the aligned form's mask |
//! | inside | `add.u64 r, offset, fence base`; `or.b64 r, offset, fence base` (between `b` and `b + offset`); for a shared, local or constant window, `add.u32 r, 32-bit offset, b` with `b` the very register its limit was computed from, and `cvt.u64.u32` of such an inside (the same address: those spaces' addresses are 32 bits) | `[r, r + R)` inside the window, aligned to `A` |
//! | generic | `cvta.shared.u64`/`cvta.local.u64` of an inside; `selp.b64` of two generics or global insides | a generic address inside one of the windows named |
//! | flag | `ld.param.u64 r, [__kargs_fence_flag]` | the flag (the only unclamped stores: `st.global.u8 [r+k], 1`, `k` 0, 1 or 2: one byte per reason) |
//! | mask | `or.b32 r, lane, x`, with `lane` from `mov.u32 lane, %lanemask_eq` | a member mask that holds the executing thread |
//! | special | `mov.u32 r, %ctaid.x` (`%ntid.x`, `%tid.x`) | that special register |
//! | index | `mad.lo.s32 r, ctaid, ntid, tid` (the first two either way round) | the thread's index in the grid: at least 0 and below 2^31 (the launcher gives at most [`PROOF_MAX_THREADS_X`](super::PROOF_MAX_THREADS_X) threads in x) |
//! | bound `m` | `ld.param.u32 r, [P]`, `P` the entry's own 4-byte parameter `m` | its value |
//! | pointer of a proof | `ld.param.u64 r, [__kargs_addr_k_m_S]`, one of the entry's proofs' hidden parameters | the address of parameter `k`'s offset in the fence, where `m` elements of `S` bytes from it end inside the fence and it is a multiple of `S` (the launcher's condition, or no thread passes the check below: `m <= 0`) |
//! | outside `m` | `setp.ge.s32 p, index, bound m` (`.u32`: compared unsigned, for a proof whose name says `u32`) | whether the index is at least `m` |
//! | below `m` (a path's, not a register's) | `@p ret`, or `@p bra $__kargs_exit`, with `p` outside `m`: after it, until a label | the index is below `m` on every path here |
//! | scaled `S` | `mul.wide.s32 r, index, S`, or `.u32` (`S` 1, 2, 4, 8 or 16) | the index times `S` (the index is below 2^31: extended either way, the same) |
//! | proven | `add.s64 r, pointer of a proof k_m_S, scaled S` (either way round), where below `m` | `[r, r + S)` inside the fence, aligned to `S` |
//! | within `m` | `mov.u32 r, index`, where below the 32-bit bounds `m` (a set); kept at a loop's head (above) | in `[0, m)` for each `m` |
//! | walked | `add.s32 r, within or walked, x`, `x` a kernel's register or a constant | a value of the kernel's: nothing of the host's in it |
//! | continue `m` | `setp.lt.u32 p, r, bound m`, where below `m` (so `m` is positive as its proof compares it) | whether `r`, unsigned, is in `[0, m)` (dies when `r` is written) |
//! | back edge | a branch to a loop's head that kept `within {m}` in `r`: `@p bra L` with `p` continue `m` of `r` (or the leaving form's `@%__kargs_go bra L`, counted under such a `p`), every bound the head kept still below | (a rule, not a fact: a finding where it fails) |
//! | within scaled | `mul.wide.u32 r, within m, S`; `.s32` where every `m` is compared `s32` (the value is then below 2^31) | the value times `S`, exact |
//! | proven (walk) | `add.s64 r, pointer of a proof k_m_S, within-scaled S of a set holding m` (either way round) | `[r, r + S)` inside the fence, aligned to `S` |
//! | proven (fixed) | `ld.param.u64 r, [__kargs_addr_k_rR_aA]`, a fixed proof's hidden parameter (`R` at most [`MIN_FENCE_LEN`]) | `[r, r + R)` inside the fence, aligned to `A` (the launcher gives parameter `k`'s address where its offset plus `R` is inside the fence and a multiple of `A`, the fence's base otherwise) |
//! | pointer of a ranged proof | `ld.param.u64 r, [__kargs_addr_k_sS_rR]` (`_uS_rR` for an unsigned index; `R` at most [`MIN_FENCE_LEN`]) | the address of parameter `k`'s offset in the fence where `R` bytes from it are inside the fence and it is a multiple of `S`, the fence's base otherwise |
//! | highest index | `ld.param.u32 r, [__kargs_range_k_sS_rR]`, the proof's range parameter | `hi`: `p + hi * S + R` is at most the fence's end, `p` the pointer's address (at most `i32::MAX` for `sS`) |
//! | in range | `min.u32 r, x, highest index` (`x` anything) | in `[0, hi]` |
//! | ranged scaled | `mul.wide.s32 r, in range, S` (`.u32` for `uS`) | in range times `S`: from 0 to `hi * S` |
//! | proven (ranged) | `add.s64 r, pointer of a ranged proof, ranged scaled` of the same proof (either way round) | `[r, r + R)` inside the fence, aligned to `S` |
//! | at most `K` | `min.u32 r, x, K`, `K` a constant | at most `K` |
//! | at most, shifted | `shl.b32 r, at most K, k` (`k` at most 4, `K << k` in 32 bits); `and.b32 r, at most K, -A` (`A = 2^k`) | at most `K << k` (`K` for the `and`), a multiple of `2^k` |
//! | near `K` | `cvt.u64.u32 r, at most K` (or at most, shifted) | a 64-bit value at most `K`, a multiple of `A` (1 for a plain at most) |
//! | from the base `K` | `add.u64 r, near K, fence base`, or `or.b64` (either way round) | `[r, r + len - K)` inside the fence, `len` its length, aligned to `A` (at most 16): an access `[r + C]` of `w` bytes is inside for a fence of at least `K + C + w` bytes (at most [`MAX_REACH`]), which the report's `fence_min_len` then asks for; `[fence base + C]` is the same with `K` 0 |
//! | inside (an array) | `add.u32 r, address of V, at most M shifted` (either way round), `V` of a known size more than `M` | `[r, r + size - M)` inside `V`'s window, aligned to `2^k` (at most 16) |
//! | dynamic room `R` | `sub.u32 r, dynamic size, R` (`R` from 1 to [`MIN_DYNAMIC_SHARED`]) | the last offset in the dynamic shared memory at which `R` bytes fit (the launcher gives a module with an `.extern .shared` array at least that many bytes) |
//! | dynamic highest `R`, `k` | `shr.u32 r, dynamic room R, k` (`k` at most 4) | the room shifted down |
//! | at most dynamic | `min.u32 r, x, dynamic highest R, k` | at most that |
//! | at most dynamic, shifted | `shl.b32 r, at most dynamic R, k, k` (the same `k`) | at most the room for `R`, a multiple of `2^k` |
//! | inside (an `.extern` array) | `add.u32 r, address of V, at most dynamic R shifted` (either way round), `V` an `.extern .shared` array | `[r, r + R)` inside `V` (every `.extern .shared` array starts at the dynamic shared memory), aligned to `2^k` (at most 16) |
//! | multiple | `and.b32 r, x, -A`; `shl.b32 r, x, k` (`k` at most 4, `A` = `2^k`); `mad.lo.u32 r, x, S, m`, `m` a multiple of `B` (`A` the largest power of two dividing both `S` and `B`) | a multiple of `A` |
//! | at most, shifted (a multiple) | `min.u32 r, multiple of A, K`, `K` a constant multiple of `A` | at most `K`, a multiple of `A` (a two-dimensional offset confined) |
//! | product `s` | `mul.wide.u32 r, s, S`, `s` a multiple | `s * S`, exact (dies when `s` is written) |
//! | over `s` | `setp.gt.u64 p, product s, limit L` (the fence's or the shared window's, widened by `cvt.u64.u32` of a 32-bit limit) | whether `s * S > len - L` |
//! | stride | `selp.b32 r, 0, s, over s` | `r * S <= len - L`, a multiple of `A` |
//! | distance `r` | `mul.lo.u32 d, r, S`, `r` a stride | `r * S`, exact (facts from here on die when `r` is written) |
//! | fragment limit | `sub.u32 l, 32-bit limit L, distance r` | the last offset at which `L + r * S` bytes fit |
//! | fragment below, offset, inside | as below, offset and inside, from the fragment limit (joined to the window's base: the fence's in 64 bits, a shared window's in 32, then widened) | `[a, a + L + r * S)` inside the window, aligned to 32 where the window's base is (the fence's; a shared window's whose variables are all aligned to 32) |
//! | either | `selp.b64 a, x, g, p`: `x` the `cvta.shared` of a shared fragment inside (stride `r`), `g` a fence's (stride `q`) | a generic fragment: the shared one where `p` holds, the fence's where not |
//! | chosen | `selp.b32 s, r, q, p` | stride `r` where `p` holds, `q` where not (with `either`, dies when `p`, `r` or `q` is written) |
//!
//! The 32-bit limit rests on two facts from outside the module: the launcher gives a fence of at
//! most 4 GiB ([`MAX_FENCE_LEN`](super::MAX_FENCE_LEN), so the fence length less `W` fits in
//! 32 bits), and a `.shared`, `.local` or `.const` window lies in a state space addressed in 32
//! bits (ptxas refuses a variable larger than the space), so its variables' 32-bit addresses,
//! their ends and its length are exact in 32 bits, and such an address widened by
//! `cvt.u64.u32` is the address the 64-bit form of the space names.
//!
//! A kernel's instruction may read a fence register only as an address, a mask or a stride, and
//! `mov.u32` may copy the index, a special register, or a grid-stride loop's index (within or
//! walked) into a register of the kernel's: values the kernel computes itself (the rewriter
//! makes the kernel's own computations of them such copies, so that ptxas sees one index, one
//! read of each special register and one bounds check). Nothing of the host's (the fence's
//! base, its length, a proof's pointer) reaches a register of the kernel's.
//!
//! An access of `w` bytes in the global, shared, local or constant space needs `[r + K]` with
//! `r` inside that window (a global one may have `r` proven instead), `K + w` at most its reach, `K` a multiple of `w` and `w` at most its
//! alignment; a generic one `[r]` with `r` generic (an atomic's not through
//! the local window); a named variable at a constant offset inside it and aligned passes by its
//! declaration; a parameter load only `[P+K]` inside parameter `P`. A `wmma.load` or
//! `wmma.store` of the global (or generic) or shared space needs `[a]` with `a` a fragment
//! inside that window for its own line `L` and span `S` (by the checker's table of shapes,
//! layouts and types), aligned to 32, and its stride operand the very register `r` of that
//! fact, a multiple of 16 bytes; a generic one may instead have `a` an either whose two sides
//! are such facts, with its stride the chosen of the same predicate and the same two strides.
//! A global (or generic) one may instead have a constant stride `C`, a multiple of 16 bytes,
//! and `[a]` with `a` inside the fence for `L + C * S` bytes, aligned to 32.
//! `wmma.mma` touches only registers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use kernel_args_ptx::{
    Address, AddressBase, Block, Function, FunctionKind, Immediate, Instruction, Item, Linkage, Module,
    Operand, OperandKind, Span, StateSpace, Statement, Type, Variable, parse,
};

use super::{
    FENCE_PARAMS, MAX_REACH, MIN_DYNAMIC_SHARED, MIN_FENCE_LEN, PROOF_PARAM_PREFIX, PROOF_RANGE_PREFIX,
    Proof, ProofKind, WINDOW_ALIGN,
};

/// What the checker found in a fenced module: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFinding {
    /// The 1-based line of the printed module.
    pub line: usize,
    /// The statement, as printed (empty for a module-wide finding).
    pub statement: String,
    /// What is wrong.
    pub kind: FindingKind,
}

/// What the checker can find.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindingKind {
    /// The front end cannot read the printed module.
    Unreadable(String),
    /// The module is not 64-bit, or has a `.global` variable, a texture, a device function's
    /// body or a pragma the checker does not know.
    Module,
    /// An entry's last four parameters are not the fence's, or a proof's hidden parameter
    /// before them names parameters of the entry's that are not a `.u64` and a 4-byte one.
    HiddenParams,
    /// An instruction outside the checker's table.
    NotAllowed,
    /// A memory access whose address is not proven inside its window.
    Unproven,
    /// A fence register written after the windows were computed, written by an instruction
    /// that is not one of the fence's forms, or declared in a nested block.
    FenceRegister,
    /// A warp-synchronous member mask not proven to hold the executing thread.
    Mask,
    /// A barrier whose number or thread count is not a constant.
    Barrier,
    /// A `ret` or `exit` before the fence's exit, where it has one: the flag would not be set.
    Exit,
    /// A backward branch not counted against the thread's budget, a write of the budget's
    /// registers outside its forms, a branch after the budget's exit, or a branch that leaves
    /// its loop on a spent budget without setting the budget's byte after it.
    Uncounted,
    /// A branch to a loop's head that does not keep what the head assumed: a grid-stride loop's
    /// index below its bound (the module documentation's `back edge`).
    LoopHead,
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindingKind::Unreadable(e) => write!(f, "the front end cannot read it: {e}"),
            FindingKind::Module => f.write_str("a module-scope declaration outside the sandbox"),
            FindingKind::HiddenParams => f.write_str("an entry without the fence's four parameters last"),
            FindingKind::NotAllowed => f.write_str("an instruction outside the checker's table"),
            FindingKind::Unproven => f.write_str("an address not proven inside its window"),
            FindingKind::FenceRegister => f.write_str("a fence register written outside the fence's forms"),
            FindingKind::Mask => f.write_str("a member mask not proven to hold the executing thread"),
            FindingKind::Barrier => f.write_str("a barrier that is not a constant"),
            FindingKind::Exit => f.write_str("an exit that skips the fence's flag"),
            FindingKind::Uncounted => f.write_str("a backward branch not counted against the budget"),
            FindingKind::LoopHead => {
                f.write_str("a branch to a loop's head that does not keep its index below its bound")
            }
        }
    }
}

impl fmt::Display for CheckFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fenced PTX line {}: ", self.line)?;
        if !self.statement.is_empty() {
            write!(f, "`{}`: ", self.statement)?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for CheckFinding {}

/// What the checker verified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The entries, in order.
    pub entries: Vec<String>,
    /// Address operands proven inside their windows by their clamps.
    pub clamped: usize,
    /// Address operands proven by their declarations (a named variable or parameter at a
    /// constant offset inside it).
    pub by_declaration: usize,
    /// Global address operands proven inside the fence by the fence's own bounds check (a
    /// [`Proof`]), unclamped.
    pub proven: usize,
    /// Backward branches proven counted against the budget.
    pub counted: usize,
    /// Those of them counted in the form that leaves the loop, not the kernel, on a spent
    /// budget.
    pub leaving: usize,
    /// The longest reach of a limit computed from the fence's length (`sub.u64 r, fence
    /// length, R`, `R` at most [`MAX_REACH`]): the module is fenced for a fence at least this
    /// long (0 where it computes none). The launcher gives at least
    /// [`FencedModule::fence_min_len`](super::FencedModule::fence_min_len).
    pub fence_min_len: u64,
    /// Whether a proof rests on the fence's base being aligned to
    /// [`FRAGMENT_BASE_ALIGN`](super::FRAGMENT_BASE_ALIGN) (a `wmma` fragment in the fence,
    /// aligned to 32 from it), which the launcher gives a module whose
    /// [`FencedModule::base_align`](super::FencedModule::base_align) says so.
    pub fragment_base: bool,
}

const PREFIX: &str = "__kargs_";

fn fence_name(name: &str) -> bool {
    name.trim_start_matches(['%', '$']).starts_with(PREFIX)
}

/// A window of the checker's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Win {
    Global,
    Shared,
    Local,
    Const,
}

fn win_of(space: StateSpace) -> Option<Win> {
    match space {
        StateSpace::Global => Some(Win::Global),
        StateSpace::Shared => Some(Win::Shared),
        StateSpace::Local => Some(Win::Local),
        StateSpace::Const => Some(Win::Const),
        _ => None,
    }
}

/// How the fence's own bounds check compares the thread's index with its bound
/// ([`Fact::Outside`]): the 32-bit or the 64-bit index, signed or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Compare {
    S32,
    U32,
    S64,
    U64,
}

/// What is known of a fence register's value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fact {
    FenceBase,
    FenceLen,
    Address {
        win: Win,
        var: String,
        size: Option<u64>,
    },
    /// `%dynamic_smem_size`, in a 32-bit register.
    Dynamic,
    Low {
        win: Win,
        vars: BTreeSet<String>,
    },
    High {
        win: Win,
        reach: BTreeMap<String, u64>,
    },
    /// The window `[base, base + length)`, at least `min` bytes long.
    Length {
        win: Win,
        base: String,
        min: u64,
    },
    /// The last offset at which `reach` bytes fit.
    Limit {
        win: Win,
        reach: u64,
        base: Option<String>,
    },
    Below {
        win: Win,
        reach: u64,
        base: Option<String>,
    },
    Offset {
        win: Win,
        reach: u64,
        align: u64,
        base: Option<String>,
    },
    Limit32 {
        win: Win,
        reach: u64,
        base: Option<String>,
    },
    Below32 {
        win: Win,
        reach: u64,
        base: Option<String>,
    },
    Offset32 {
        win: Win,
        reach: u64,
        align: u64,
        base: Option<String>,
    },
    /// `[r, r + reach)` inside the window, `r` aligned to `align`.
    Inside {
        win: Win,
        reach: u64,
        align: u64,
    },
    Generic {
        width: u64,
        windows: BTreeSet<Win>,
    },
    /// `%ctaid.x`, `%ntid.x` or `%tid.x` (by its name), in a 32-bit register.
    Special(&'static str),
    /// The thread's index in the grid, `%ctaid.x * %ntid.x + %tid.x` as a signed 32-bit
    /// value: at least 0 and less than 2^31 (the launcher bounds the grid's threads in x,
    /// `PROOF_MAX_THREADS_X`).
    Index,
    /// The value of the entry's own 4-byte parameter of this index.
    Bound(usize),
    /// A grid-stride loop's index, the fence's copy: a 32-bit value in `[0, m)` for each bound
    /// `m` of the set, compared so (made from the index below them; kept at a loop's head
    /// whose every branch back tests it: see [`Entry::heads`]).
    Within(BTreeSet<(usize, Compare)>),
    /// That stepped by the kernel (`add.s32` of it and a register of the kernel's or a
    /// constant): a value of the kernel's own, nothing of the host's in it.
    Walked,
    /// That times a size, extended signed (every bound compared `s32`: the value is below
    /// 2^31) or not: exact in 64 bits.
    WithinScaled {
        bounds: BTreeSet<(usize, Compare)>,
        size: u64,
    },
    /// A predicate: register `of`, unsigned, is below the bound `m` of this parameter index,
    /// where `m` is positive (a value was below it on this path) as the comparison reads it.
    Continue {
        of: String,
        bound: (usize, Compare),
    },
    /// A proof's pointer's address, from its hidden parameter.
    Pointer(Proof),
    /// A predicate: the index is at least the bound of this parameter index, compared so.
    Outside(usize, Compare),
    /// `%ctaid.x * %ntid.x` in 64 bits (`mul.wide.u32`), and `%tid.x` widened (`cvt.u64.u32`).
    Grid64,
    Tid64,
    /// Their sum, the thread's 64-bit index in the grid: below 2^63 (a grid's blocks and a
    /// block's threads are each below 2^32), non-negative read either way.
    Index64,
    /// The value of the entry's own 8-byte parameter of this index.
    Bound64(usize),
    /// The 64-bit index times this element size (`shl.b64`: exact, the index is below 2^59
    /// and the size at most 16).
    Scaled64(u64),
    /// The index times this element size, sign-extended (exact: the index is below 2^31).
    Scaled(u64),
    /// A ranged proof's highest index `hi`, from its range parameter (unsigned; at most
    /// `i32::MAX` for a signed proof).
    RangeHi(Proof),
    /// A 32-bit value in a ranged proof's `[0, hi]`.
    InRange(Proof),
    /// A 32-bit value at most `max` (`min.u32` with a constant).
    AtMost {
        max: u64,
    },
    /// That shifted left (`shl.b32` by at most 4, not past 32 bits): at most `max`, a multiple
    /// of `align`.
    AtMostShifted {
        max: u64,
        align: u64,
    },
    /// An "at most" widened (`cvt.u64.u32`): a 64-bit value at most `max`, a multiple of
    /// `align`.
    Near {
        max: u64,
        align: u64,
    },
    /// The fence's base plus such a value: `[r, r + len - max)` inside the fence, `len` its
    /// length (which the report's `fence_min_len` says is long enough for each access through
    /// it), aligned to `align` (at most 16, the base's).
    FromBase {
        max: u64,
        align: u64,
    },
    /// `%dynamic_smem_size` less `reach` (at most [`MIN_DYNAMIC_SHARED`], which the launcher
    /// gives at least to a module with an `.extern .shared` array): the last offset in the
    /// dynamic shared memory at which `reach` bytes fit.
    DynamicRoom {
        reach: u64,
    },
    /// That shifted down by `shift` (`shr.u32`, at most 4).
    DynamicHi {
        reach: u64,
        shift: u32,
    },
    /// A 32-bit value at most that (`min.u32`).
    AtMostDynamic {
        reach: u64,
        shift: u32,
    },
    /// That shifted back up (`shl.b32` by the same shift): at most the room, a multiple of
    /// `2^shift`.
    AtMostDynamicShifted {
        reach: u64,
        shift: u32,
    },
    /// A value in a ranged proof's range times its element size, extended as the proof says
    /// (exact in 64 bits).
    RangedScaled(Proof),
    /// `[r, r + reach)` inside the fence, `r` aligned to `align`: an indexed proof's pointer's
    /// address plus the index times its element's size, where the index is below the proof's
    /// bound on every path here; or a fixed proof's pointer's address.
    Proven {
        reach: u64,
        align: u64,
    },
    Flag,
    Lane,
    Mask,
    /// A 32-bit value that is a multiple of `align`.
    Multiple {
        align: u64,
    },
    /// `of * span`, exact in 64 bits, `of` a [`Fact::Multiple`] of `align` (the fact dies when
    /// `of` is written).
    Product {
        span: u64,
        align: u64,
        of: String,
    },
    /// A predicate: whether `of * span > len - line`, `of` a multiple of `align`, `len` the
    /// length of window `win` (whose base is `base`, none for the fence).
    Over {
        win: Win,
        base: Option<String>,
        line: u64,
        span: u64,
        align: u64,
        of: String,
    },
    /// A stride `s` with `s * span <= len - line`, a multiple of `align` (`len` as in `Over`).
    Stride {
        win: Win,
        base: Option<String>,
        line: u64,
        span: u64,
        align: u64,
    },
    /// A step of the fragment clamp whose reach depends on the stride in register `stride`.
    Strided(Strided),
    /// A generic fragment's address: the shared window's `shared` where predicate `pred` holds,
    /// the fence's `global` where it does not (dies when `pred` or either stride is written).
    Either {
        pred: String,
        shared: Strided,
        global: Strided,
    },
    /// A generic fragment's stride: register `shared` where predicate `pred` holds, `global`
    /// where it does not (dies when any of the three is written).
    Chosen {
        pred: String,
        shared: String,
        global: String,
    },
}

/// What is known of a fragment clamp's register whose meaning depends on the stride register
/// `stride` (the fact dies when `stride` is written), for a fragment of lines of `line` bytes,
/// its last line `span` bytes per element of stride from its first, so reaching
/// `line + stride * span` bytes; `align` the stride's alignment in elements; in window `win`,
/// whose base is the register `base` (none for the fence).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Strided {
    step: StridedStep,
    win: Win,
    base: Option<String>,
    line: u64,
    span: u64,
    align: u64,
    stride: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StridedStep {
    /// `stride * span`.
    Distance,
    /// `len - line - stride * span`: the last offset the fragment fits at (32 bits).
    Limit,
    /// At most that limit, a multiple of `align` (32 bits, or 64 where `wide`).
    Below { align: u64, wide: bool },
    /// `[r, r + line + stride * span)` inside the window, `r` aligned to `align`.
    Inside { align: u64 },
    /// The generic address (`cvta.shared`) of a shared window's inside.
    GenericShared { align: u64 },
}

impl Fact {
    /// The window base register this fact depends on.
    fn base(&self) -> Option<&str> {
        match self {
            Fact::Length { base, .. } => Some(base),
            Fact::Limit { base, .. }
            | Fact::Below { base, .. }
            | Fact::Offset { base, .. }
            | Fact::Limit32 { base, .. }
            | Fact::Below32 { base, .. }
            | Fact::Offset32 { base, .. } => base.as_deref(),
            _ => None,
        }
    }

    /// Whether this fact depends on register `name` besides a window base: a fragment's
    /// stride, or the predicate and strides a generic fragment's choice is made by.
    fn depends_on(&self, name: &str) -> bool {
        match self {
            Fact::Strided(s) => s.stride == name,
            Fact::Product { of, .. } | Fact::Over { of, .. } => of == name,
            Fact::Either { pred, shared, global } => {
                pred == name || shared.stride == name || global.stride == name
            }
            Fact::Chosen { pred, shared, global } => pred == name || shared == name || global == name,
            Fact::Continue { of, .. } => of == name,
            _ => false,
        }
    }
}

/// Checks the fenced module `text` (see the module's documentation).
///
/// # Errors
///
/// The first [`CheckFinding`].
pub fn check(text: &str) -> Result<CheckReport, CheckFinding> {
    let module = parse(text).map_err(|e| CheckFinding {
        line: e.line as usize,
        statement: String::new(),
        kind: FindingKind::Unreadable(e.to_string()),
    })?;
    let module_finding = |span: Span, statement: String| CheckFinding {
        line: span.line as usize,
        statement,
        kind: FindingKind::Module,
    };
    if module.address_size != Some(64) {
        return Err(module_finding(Span::default(), String::new()));
    }
    let mut variables: HashMap<&str, &Variable> = HashMap::new();
    for item in &module.items {
        match item {
            Item::Variable(v) => {
                let allowed = matches!(v.space, StateSpace::Const | StateSpace::Shared | StateSpace::Local)
                    && !matches!(v.ty, Type::TexRef | Type::SamplerRef | Type::SurfRef);
                if !allowed {
                    return Err(module_finding(v.span, v.to_string()));
                }
                variables.insert(&v.name, v);
            }
            Item::Function(f) if f.kind == FunctionKind::Func && f.body.is_some() => {
                return Err(module_finding(f.span, f.name.clone()));
            }
            Item::Function(_) => {}
            Item::Pragma(p) => return Err(module_finding(p.span, p.to_string())),
        }
    }
    let mut report = CheckReport::default();
    for f in module.entries() {
        check_entry(&module, f, &variables, &mut report)?;
        report.entries.push(f.name.clone());
    }
    Ok(report)
}

struct Entry<'m> {
    /// Variables by name: the entry's top-level ones over the module's.
    variables: HashMap<&'m str, &'m Variable>,
    /// Parameter sizes by name.
    params: HashMap<&'m str, u64>,
    /// The fence registers' declared types.
    registers: HashMap<&'m str, Type>,
    /// Facts of the windows, fixed once the leading run ends.
    window: HashMap<String, Fact>,
    /// Facts since the last label.
    local: HashMap<String, Fact>,
    /// The bounds (parameter indexes) the index is proven below on every path here: since the
    /// fence's own check of each, without a label between.
    below: BTreeSet<(usize, Compare)>,
    /// The entry's own parameters (before the hidden ones): name and size, by index.
    own_params: Vec<(&'m str, u64)>,
    /// The proofs of the entry's hidden parameters, by parameter name.
    proofs: HashMap<&'m str, Proof>,
    /// The ranged proofs, by their range parameter's name.
    ranges: HashMap<&'m str, Proof>,
    /// Whether the leading run is over.
    frozen: bool,
    /// Whether the fence's exit label has been passed.
    past_exit: bool,
    has_exit: bool,
    /// Whether a thread here may have something to report: a label has been passed (a later
    /// branch may reach it), or the flag's registers written other than cleared. Before that,
    /// an exit skips nothing.
    noted: bool,
    /// The budget's count: what is known of the backward branches.
    budget: Budget,
    /// The loops' heads passed with a grid-stride loop's index ([`Fact::Within`]) at their
    /// fall-through, which no earlier branch reaches: each such register and its fact, and the
    /// bounds the index was below there, all kept past the label. Every later branch to the
    /// label must keep them: it is guarded by the register's [`Fact::Continue`] test of the one
    /// bound of its set, with those bounds still below.
    heads: HashMap<String, Head>,
    /// The labels a branch passed so far names.
    branched: BTreeSet<String>,
}

/// What a loop's head kept ([`Entry::heads`]): each grid-stride loop index's register and
/// bounds, and the bounds the thread's index was below.
type Head = (Vec<(String, BTreeSet<(usize, Compare)>)>, BTreeSet<(usize, Compare)>);

/// The registers and label of the budget's count (see [`Budget`]).
const COUNTER: &str = "%__kargs_b";
const SPENT: &str = "%__kargs_q";
const GO: &str = "%__kargs_go";
const BUDGET_EXIT: &str = "$__kargs_budget";
const FLAG: &str = "%__kargs_flag";
/// A grid-stride loop's test, which a counted branch may be guarded by.
const WALK_TEST: &str = "%__kargs_iz";

/// A guard: its register and whether it is negated.
type GuardOf = Option<(bool, String)>;

/// The budget's count. Every cycle of an entry's control flow has a branch to a label at or
/// before it in the text (along every other edge the text only moves on), so a thread that
/// takes at most `b` such branches runs every loop at most `b` times. Each backward branch
/// `[@g] bra L` must follow, with nothing between (no label, no other instruction):
///
/// ```text
/// setp.eq.and.u32 %__kargs_q, %__kargs_b, 0, g   // setp.eq.u32 %__kargs_q, %__kargs_b, 0 unguarded
/// @%__kargs_q bra $__kargs_budget
/// [@g] sub.u32    %__kargs_b, %__kargs_b, 1
/// ```
///
/// or, for a guarded branch that leaves its loop on a spent budget instead of the kernel, be
/// `@%__kargs_go bra L` (never `.uni`), with nothing between:
///
/// ```text
/// setp.ne.and.u32 %__kargs_go, %__kargs_b, 0, g  // setp.ne.u32 %__kargs_go, %__kargs_b, 0 unguarded
/// @%__kargs_go sub.u32 %__kargs_b, %__kargs_b, 1
/// @%__kargs_go bra L
/// setp.eq.and.u32 %__kargs_q, %__kargs_b, 0, g   // the same test as above: g held, budget spent
/// ld.param.u64 %__kargs_flag, [__kargs_fence_flag]
/// @%__kargs_q st.global.u8 [%__kargs_flag+2], 1
/// ```
///
/// where the last three follow the branch at once (no label, no other instruction): a thread
/// that falls through with its budget spent sets the budget's byte of the flag. Either way a
/// backward branch is taken only while `%__kargs_b` is not 0, and taking it spends one.
///
/// `%__kargs_b` is written only there and by `ld.param.u32 %__kargs_b, [__kargs_fence_budget]`
/// in the leading run; `%__kargs_q` only by those `setp`s. After the label `$__kargs_budget`, whose
/// first two instructions must set the budget's byte of the flag (`ld.param.u64 %__kargs_flag,
/// [__kargs_fence_flag]`, `st.global.u8 [%__kargs_flag+2], 1`), no branch at all: a thread
/// there only runs forward, to a `ret`.
#[derive(Debug, Default)]
struct Budget {
    /// `%__kargs_b` was loaded in the leading run.
    loaded: bool,
    /// Labels passed, in the text's order.
    labels: BTreeSet<String>,
    /// Where the count stands just before this instruction.
    step: Step,
    /// `$__kargs_budget` was passed.
    past_exit: bool,
    /// Backward branches found counted.
    counted: usize,
    /// How many of the instructions that set the budget's byte, just after `$__kargs_budget`,
    /// are still to come (2, 1 or 0).
    at_exit: u8,
    /// How many of the instructions that set the budget's byte after a leaving branch are
    /// still to come (3, 2, 1 or 0), and that branch's guard.
    after: u8,
    after_guard: GuardOf,
    /// Backward branches found counted in the leaving form.
    leaving: usize,
}

/// How far the count before a backward branch has come.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum Step {
    #[default]
    None,
    /// `setp` made `%__kargs_q` for a branch under this guard.
    Tested(GuardOf),
    /// `@%__kargs_q bra $__kargs_budget` followed.
    Left(GuardOf),
    /// `sub.u32 %__kargs_b` under the same guard followed: the branch may come.
    Counted(GuardOf),
    /// `setp.ne` made `%__kargs_go` for a leaving branch under this guard.
    Going(GuardOf),
    /// `@%__kargs_go sub.u32 %__kargs_b` followed: the branch may come, under `%__kargs_go`.
    GoCounted(GuardOf),
}

fn finding(instruction: &Instruction, kind: FindingKind) -> CheckFinding {
    CheckFinding {
        line: instruction.span.line as usize,
        statement: super::rewrite::one_line(instruction),
        kind,
    }
}

fn check_entry<'m>(
    module: &'m Module,
    f: &'m Function,
    module_variables: &HashMap<&'m str, &'m Variable>,
    report: &mut CheckReport,
) -> Result<(), CheckFinding> {
    let _ = module;
    let count = FENCE_PARAMS.len();
    let hidden: Vec<&str> = f.params.iter().rev().take(count).map(|p| p.name.as_str()).collect();
    let hidden_ok = hidden.len() == count
        && hidden.iter().rev().copied().eq(FENCE_PARAMS)
        && f.params.iter().rev().take(count).all(|p| p.ty == Type::U64 && p.dims.is_empty());
    if !hidden_ok {
        return Err(CheckFinding {
            line: f.span.line as usize,
            statement: f.name.clone(),
            kind: FindingKind::HiddenParams,
        });
    }
    // Before the fence's four, the proofs' hidden parameters (`__kargs_addr_*`, and a ranged
    // proof's `__kargs_range_*` after its address), each a `.u64`, each proof naming a pointer
    // parameter of the entry's own (and an indexed one a 4-byte one).
    let mut own = f.params.len().saturating_sub(count);
    while let Some(last) = own.checked_sub(1)
        && f.params
            .get(last)
            .is_some_and(|p| p.name.starts_with(PROOF_PARAM_PREFIX) || p.name.starts_with(PROOF_RANGE_PREFIX))
    {
        own = last;
    }
    let hidden_proofs = f.params.get(own..f.params.len().saturating_sub(count)).unwrap_or_default();
    let mut proofs: HashMap<&str, Proof> = HashMap::new();
    let mut ranges: HashMap<&str, Proof> = HashMap::new();
    let mut stated: Vec<Proof> = Vec::new();
    for p in hidden_proofs {
        if p.ty != Type::U64 || !p.dims.is_empty() {
            return Err(CheckFinding {
                line: f.span.line as usize,
                statement: f.name.clone(),
                kind: FindingKind::HiddenParams,
            });
        }
        if let Some(proof) = Proof::from_param_name(&p.name) {
            proofs.insert(&p.name, proof);
            stated.push(proof);
        }
        if let Some(proof) =
            stated.last().filter(|proof| proof.range_name().as_deref() == Some(p.name.as_str()))
        {
            ranges.insert(&p.name, *proof);
        }
    }
    // Exactly the stated proofs' parameters, in order (what the launcher gives).
    let names_ok =
        hidden_proofs.iter().map(|p| p.name.clone()).eq(stated.iter().flat_map(Proof::param_names));
    let own_params: Vec<(&str, u64)> =
        f.params.iter().take(own).map(|p| (p.name.as_str(), p.size().unwrap_or(0))).collect();
    let valid = |proof: &Proof| {
        let pointer = f.params.get(proof.pointer).filter(|_| proof.pointer < own);
        let bound_ok = match proof.kind {
            ProofKind::Indexed { bound, .. } => f
                .params
                .get(bound)
                .filter(|_| bound < own)
                .is_some_and(|p| p.size() == Some(4) && p.dims.is_empty()),
            ProofKind::Indexed64 { bound, .. } => f
                .params
                .get(bound)
                .filter(|_| bound < own)
                .is_some_and(|p| p.size() == Some(8) && p.dims.is_empty()),
            // The fence's base where the launch does not meet it: its reach must fit any fence.
            ProofKind::Fixed => proof.size <= MIN_FENCE_LEN,
            ProofKind::Ranged { reach, .. } => reach <= MIN_FENCE_LEN,
        };
        pointer.is_some_and(|p| matches!(p.ty, Type::U64 | Type::B64 | Type::S64) && p.dims.is_empty())
            && bound_ok
    };
    if !names_ok || !proofs.values().all(valid) || own_params.iter().any(|(name, _)| fence_name(name)) {
        return Err(CheckFinding {
            line: f.span.line as usize,
            statement: f.name.clone(),
            kind: FindingKind::HiddenParams,
        });
    }
    let Some(body) = &f.body else { return Ok(()) };
    let mut entry = Entry {
        below: BTreeSet::new(),
        own_params,
        proofs,
        ranges,
        variables: module_variables.clone(),
        params: f.params.iter().map(|p| (p.name.as_str(), p.size().unwrap_or(0))).collect(),
        registers: HashMap::new(),
        window: HashMap::new(),
        local: HashMap::new(),
        frozen: false,
        past_exit: false,
        has_exit: false,
        noted: false,
        budget: Budget::default(),
        heads: HashMap::new(),
        branched: BTreeSet::new(),
    };
    for statement in &body.statements {
        match statement {
            Statement::Variable(v) => {
                entry.variables.insert(&v.name, v);
            }
            Statement::Registers(r) => {
                for name in &r.names {
                    if fence_name(&name.name) && r.vector.is_none() && name.count.is_none() {
                        entry.registers.insert(&name.name, r.ty);
                    }
                }
            }
            Statement::Label(l) if l.name == "$__kargs_exit" => entry.has_exit = true,
            _ => {}
        }
    }
    entry.block(body, true, report)?;
    entry.no_byte_pending(body.span.line, &f.name)?;
    report.counted = report.counted.saturating_add(entry.budget.counted);
    report.leaving = report.leaving.saturating_add(entry.budget.leaving);
    Ok(())
}

impl<'m> Entry<'m> {
    fn fact(&self, name: &str) -> Option<&Fact> {
        self.local.get(name).or_else(|| self.window.get(name))
    }

    fn operand_fact(&self, operand: &Operand) -> Option<&Fact> {
        match &operand.kind {
            OperandKind::Register(r) if r.component.is_none() => self.fact(&r.name),
            _ => None,
        }
    }

    fn block(&mut self, block: &'m Block, top: bool, report: &mut CheckReport) -> Result<(), CheckFinding> {
        for statement in &block.statements {
            match statement {
                Statement::Label(l) => {
                    self.no_byte_pending(l.span.line, &l.name)?;
                    self.end_leading_run();
                    // A loop's head: a grid-stride loop's index, and the bounds below, kept where
                    // no earlier branch reaches the label (every later one is checked to keep
                    // them: `back_edge`).
                    let kept: Vec<(String, BTreeSet<(usize, Compare)>)> = self
                        .local
                        .iter()
                        .filter_map(|(name, fact)| match fact {
                            Fact::Within(bounds) => Some((name.clone(), bounds.clone())),
                            _ => None,
                        })
                        .collect();
                    let below = std::mem::take(&mut self.below);
                    self.local.clear();
                    if !kept.is_empty() && !self.branched.contains(&l.name) {
                        for (name, bounds) in &kept {
                            self.local.insert(name.clone(), Fact::Within(bounds.clone()));
                        }
                        self.below.clone_from(&below);
                        self.heads.insert(l.name.clone(), (kept, below));
                    }
                    self.noted = true;
                    if l.name == "$__kargs_exit" {
                        self.past_exit = true;
                    }
                    self.budget.labels.insert(l.name.clone());
                    self.budget.step = Step::None;
                    if l.name == BUDGET_EXIT {
                        self.budget.past_exit = true;
                        self.budget.at_exit = 2;
                    }
                }
                Statement::Block(b) => {
                    self.no_byte_pending(b.span.line, "{")?;
                    self.end_leading_run();
                    self.budget.step = Step::None;
                    self.block(b, false, report)?;
                    self.budget.step = Step::None;
                }
                Statement::Registers(r) => {
                    if !top && r.names.iter().any(|n| fence_name(&n.name)) {
                        return Err(CheckFinding {
                            line: r.span.line as usize,
                            statement: r.to_string(),
                            kind: FindingKind::FenceRegister,
                        });
                    }
                }
                Statement::Variable(v) => {
                    if !top || !matches!(v.space, StateSpace::Shared | StateSpace::Local) {
                        return Err(CheckFinding {
                            line: v.span.line as usize,
                            statement: v.to_string(),
                            kind: FindingKind::Module,
                        });
                    }
                }
                Statement::Pragma(p) => {
                    if p.strings != ["nounroll"] {
                        return Err(CheckFinding {
                            line: p.span.line as usize,
                            statement: p.to_string(),
                            kind: FindingKind::Module,
                        });
                    }
                }
                Statement::Instruction(i) => self.instruction(i, top, report)?,
            }
        }
        Ok(())
    }

    /// Refuses `at` (a label, a block or the body's end) where a leaving branch's budget byte is
    /// still to come: its instructions follow the branch at once.
    fn no_byte_pending(&self, line: u32, at: &str) -> Result<(), CheckFinding> {
        if self.budget.after == 0 {
            return Ok(());
        }
        Err(CheckFinding { line: line as usize, statement: at.to_owned(), kind: FindingKind::Uncounted })
    }

    /// The leading run is over: only the windows' facts stay, fixed.
    fn end_leading_run(&mut self) {
        if self.frozen {
            return;
        }
        self.frozen = true;
        let mut keep: HashMap<String, Fact> = HashMap::new();
        for (name, fact) in &self.window {
            if let Fact::Limit { .. }
            | Fact::Limit32 { .. }
            | Fact::FenceBase
            | Fact::Index
            | Fact::Index64
            | Fact::Bound(_)
            | Fact::Bound64(_)
            | Fact::Pointer(_)
            | Fact::RangeHi(_)
            | Fact::DynamicHi { .. }
            | Fact::Outside(..)
            | Fact::Address { .. }
            | Fact::Special(_)
            | Fact::AtMost { .. }
            | Fact::AtMostShifted { .. }
            | Fact::AtMostDynamic { .. }
            | Fact::AtMostDynamicShifted { .. }
            | Fact::Multiple { .. }
            | Fact::Proven { .. } = fact
            {
                keep.insert(name.clone(), fact.clone());
                if let Some(base) = fact.base()
                    && let Some(b) = self.window.get(base)
                {
                    keep.insert(base.to_owned(), b.clone());
                }
            }
        }
        self.window = keep;
    }

    /// Register `name` is written with `fact` (or nothing known).
    fn write(
        &mut self,
        instruction: &Instruction,
        name: &str,
        fact: Option<Fact>,
    ) -> Result<(), CheckFinding> {
        if self.frozen && self.window.contains_key(name) {
            return Err(finding(instruction, FindingKind::FenceRegister));
        }
        // The flag's registers: anything but clearing them may leave something to report.
        let cleared = instruction.opcode == "mov"
            && instruction.guard.is_none()
            && matches!(
                instruction.operands.get(1).map(|o| &o.kind),
                Some(OperandKind::Immediate(Immediate::Int(0)))
            );
        if matches!(name, "%__kargs_v" | "%__kargs_w") && !cleared {
            self.noted = true;
        }
        let map = if self.frozen { &mut self.local } else { &mut self.window };
        map.remove(name);
        map.retain(|_, f| f.base() != Some(name) && !f.depends_on(name));
        if let Some(fact) = fact {
            map.insert(name.to_owned(), fact);
        }
        Ok(())
    }

    fn instruction(
        &mut self,
        i: &'m Instruction,
        top: bool,
        report: &mut CheckReport,
    ) -> Result<(), CheckFinding> {
        self.back_edge(i)?;
        if self.count(i)? {
            return Ok(());
        }
        let mentions_fence = i.operands.iter().any(|o| o.registers().iter().any(|r| fence_name(r)));
        if mentions_fence && let Some((dest, fact)) = self.fence_form(i)? {
            if !top {
                self.end_leading_run();
            }
            // A guarded write may or may not happen: nothing is known after it.
            let fact = if i.guard.is_some() { None } else { fact };
            if let Some(Fact::Limit { win: Win::Global, reach, base: None }) = &fact {
                report.fence_min_len = report.fence_min_len.max(*reach);
            }
            return self.write(i, &dest, fact);
        }
        self.end_leading_run();
        let m: Vec<&str> = i.modifiers.iter().map(String::as_str).collect();
        // A warp-synchronous instruction's member mask, which the fence may have replaced.
        let mask = match i.opcode.as_str() {
            "shfl" | "vote" | "match" | "redux" if m.contains(&"sync") => i.operands.len().checked_sub(1),
            "bar" if m == ["warp", "sync"] => Some(0),
            _ => None,
        };
        // A fragment's stride, which the fence bounds.
        let stride = match (i.opcode.as_str(), m.first()) {
            ("wmma", Some(&("load" | "store"))) => Some(2),
            _ => None,
        };
        // A copy of the thread's index in the grid into a register of the kernel's: a value the
        // kernel computes itself (`Fact::Index`).
        let copied = match m.as_slice() {
            ["u32" | "b32" | "s32"] => Some(&Fact::Index),
            ["u64" | "b64" | "s64"] => Some(&Fact::Index64),
            _ => None,
        };
        // Or of a grid-stride loop's index, which is the thread's index stepped by the kernel's
        // values, or of a special register the fence read.
        let source = i.operands.get(1).and_then(|o| self.operand_fact(o));
        let walk = copied == Some(&Fact::Index)
            && matches!(source, Some(Fact::Within(_) | Fact::Walked | Fact::Special(_)));
        if i.opcode == "mov"
            && i.operands.len() == 2
            && i.operands.first().and_then(Operand::register).is_some_and(|r| !fence_name(&r.name))
            && copied.is_some()
            && (source == copied || walk)
        {
            return Ok(());
        }
        // Any other instruction: a fence register only as an address, a mask or a stride it
        // reads.
        for (index, operand) in i.operands.iter().enumerate() {
            let as_address = matches!(&operand.kind, OperandKind::Address(a) if matches!(&a.base, AddressBase::Register(r) if fence_name(r)));
            let as_mask = (mask == Some(index) || stride == Some(index)) && operand.register().is_some();
            if !as_address && !as_mask && operand.registers().iter().any(|r| fence_name(r)) {
                return Err(finding(i, FindingKind::FenceRegister));
            }
        }
        // The fence's own bounds check (`Fact::Outside`): past a `ret`, or a branch to the fence's
        // exit, under it, the index is below that bound on every path until a label.
        let outside = i.guard.as_ref().filter(|g| !g.negated).and_then(|g| match self.fact(&g.register) {
            Some(Fact::Outside(bound, compare)) => Some((*bound, *compare)),
            _ => None,
        });
        if let Some(bound) = outside {
            let leaves = match i.opcode.as_str() {
                "ret" | "exit" => i.operands.is_empty(),
                "bra" => matches!(i.operands.as_slice(),
                    [o] if matches!(&o.kind, OperandKind::Symbol { name, offset: 0 } if name == "$__kargs_exit")),
                _ => false,
            };
            if leaves {
                self.below.insert(bound);
            }
        }
        match i.opcode.as_str() {
            op if NO_MEMORY.contains(&op) => Ok(()),
            "bra" if m.iter().all(|x| *x == "uni") && i.operands.len() == 1 => Ok(()),
            "ret" | "exit" => {
                // With the fence's exit, every other exit once something may be noted goes
                // through it.
                if self.has_exit && self.noted && !self.past_exit {
                    Err(finding(i, FindingKind::Exit))
                } else {
                    Ok(())
                }
            }
            "bar" | "barrier" => self.barrier(i, &m),
            "shfl" | "vote" | "match" | "redux" if m.contains(&"sync") => {
                self.mask(i, i.operands.len().saturating_sub(1))
            }
            "shfl" | "vote" => Ok(()),
            "ld" | "ldu" | "st" | "atom" | "red" | "prefetch" | "prefetchu" | "cp" => {
                self.memory(i, &m, report)
            }
            "wmma" => self.fragment(i, &m, report),
            _ => Err(finding(i, FindingKind::NotAllowed)),
        }
    }

    /// A branch `i` to a loop's head that kept a grid-stride loop's index ([`Entry::heads`]):
    /// it must be guarded by the index's test of the one bound it was kept below (or be the
    /// leaving form's branch counted under that test), the bounds the head kept still below. Any branch's label is remembered: a head passed after a
    /// branch to it keeps nothing.
    fn back_edge(&mut self, i: &Instruction) -> Result<(), CheckFinding> {
        if i.opcode != "bra" {
            return Ok(());
        }
        let Some(OperandKind::Symbol { name: target, offset: 0 }) = i.operands.first().map(|o| &o.kind)
        else {
            return Ok(());
        };
        self.branched.insert(target.clone());
        let Some((kept, below)) = self.heads.get(target) else { return Ok(()) };
        // The leaving form's branch is under `%__kargs_go`, which holds only where the counted
        // guard does.
        let guard = i.guard.as_ref().filter(|g| !g.negated).map(|g| g.register.as_str());
        let guard = match (guard, &self.budget.step) {
            (Some(GO), Step::GoCounted(Some((false, g)))) => Some(g.as_str()),
            (Some(GO), _) => None,
            (g, _) => g,
        };
        let test = guard.and_then(|g| self.fact(g));
        let keeps = kept.iter().all(|(name, bounds)| {
            matches!(test, Some(Fact::Continue { of, bound }) if of == name && bounds.len() == 1 && bounds.contains(bound))
        }) && below.is_subset(&self.below);
        if keeps { Ok(()) } else { Err(finding(i, FindingKind::LoopHead)) }
    }

    /// The budget's rules (see [`Budget`]) for `i`: `Ok(true)` where `i` is one of the count's
    /// own instructions, fully checked here.
    fn count(&mut self, i: &Instruction) -> Result<bool, CheckFinding> {
        let uncounted = || finding(i, FindingKind::Uncounted);
        let m: Vec<&str> = i.modifiers.iter().map(String::as_str).collect();
        let ops = &i.operands;
        let guard: GuardOf = i.guard.as_ref().map(|g| (g.negated, g.register.clone()));
        let register = |k: usize, name: &str| matches!(ops.get(k).map(|o| &o.kind), Some(OperandKind::Register(r)) if r.name == name && r.component.is_none());
        let int = |k: usize, v: i128| matches!(ops.get(k).map(|o| &o.kind), Some(OperandKind::Immediate(Immediate::Int(x))) if *x == v);
        // `ld.param.u64 %__kargs_flag, [__kargs_fence_flag]` and `st.global.u8
        // [%__kargs_flag+2], 1`: the flag's address, and the budget's byte set (`memory` proves
        // the store).
        let loads_flag = i.opcode == "ld"
            && m == ["param", "u64"]
            && ops.len() == 2
            && register(0, FLAG)
            && matches!(ops.get(1).and_then(Operand::address),
                Some(a) if a.offset == 0 && matches!(&a.base, AddressBase::Symbol(s) if s == FENCE_PARAMS[2]));
        let byte = i64::from(super::FLAG_BUDGET.trailing_zeros() / 8);
        let sets_budget_byte = i.opcode == "st"
            && m == ["global", "u8"]
            && matches!(ops.first().and_then(Operand::address),
                Some(a) if a.offset == byte && matches!(&a.base, AddressBase::Register(r) if r == FLAG))
            && int(1, 1);
        // The budget's byte of the flag, set first after its label.
        let expected = match self.budget.at_exit {
            2 => loads_flag,
            1 => sets_budget_byte,
            _ => true,
        };
        if !expected || (self.budget.at_exit > 0 && i.guard.is_some()) {
            return Err(uncounted());
        }
        self.budget.at_exit = self.budget.at_exit.saturating_sub(1);
        let step = std::mem::take(&mut self.budget.step);
        let writes = |name: &str| register(0, name);
        // A budget test, `setp.<cmp>[.and].u32 <dest>, %__kargs_b, 0[, g]` (g: a kernel's
        // predicate): its guard `g`, where `i` is one.
        let test = |dest: &str, cmp: &str| -> Option<GuardOf> {
            let predicate = match ops.get(3).map(|o| &o.kind) {
                None => None,
                Some(OperandKind::Register(r))
                    if r.component.is_none() && (!fence_name(&r.name) || r.name == WALK_TEST) =>
                {
                    Some((false, r.name.clone()))
                }
                Some(OperandKind::Not(r)) if r.component.is_none() && !fence_name(&r.name) => {
                    Some((true, r.name.clone()))
                }
                Some(_) => return None,
            };
            let form = match predicate {
                None => m == [cmp, "u32"] && ops.len() == 3,
                Some(_) => m == [cmp, "and", "u32"] && ops.len() == 4,
            };
            let ok = i.opcode == "setp"
                && i.guard.is_none()
                && form
                && writes(dest)
                && register(1, COUNTER)
                && int(2, 0);
            ok.then_some(predicate)
        };
        // After a leaving branch: the budget's byte set where the thread fell through spent.
        if self.budget.after > 0 {
            let ok = match self.budget.after {
                3 => test(SPENT, "eq").is_some_and(|g| g == self.budget.after_guard),
                2 => loads_flag && i.guard.is_none(),
                _ => sets_budget_byte && guard == Some((false, SPENT.to_owned())),
            };
            if !ok {
                return Err(uncounted());
            }
            self.budget.after = self.budget.after.saturating_sub(1);
            // The test is the count's own; the flag's load and store go on to the rules of any
            // instruction (`memory` proves the store).
            return Ok(self.budget.after == 2);
        }
        // The leaving form's test.
        if writes(GO) {
            let Some(predicate) = test(GO, "ne") else { return Err(uncounted()) };
            self.end_leading_run();
            self.budget.step = Step::Going(predicate);
            return Ok(true);
        }
        // The counter's load, in the leading run.
        if writes(COUNTER) && i.opcode == "ld" {
            let from_budget = matches!(ops.get(1).and_then(Operand::address),
                Some(a) if a.offset == 0 && matches!(&a.base, AddressBase::Symbol(s) if s == FENCE_PARAMS[3]));
            if self.frozen || i.guard.is_some() || m != ["param", "u32"] || ops.len() != 2 || !from_budget {
                return Err(uncounted());
            }
            self.budget.loaded = true;
            return Ok(true);
        }
        // The test.
        if writes(SPENT) {
            let Some(predicate) = test(SPENT, "eq") else { return Err(uncounted()) };
            self.end_leading_run();
            self.budget.step = Step::Tested(predicate);
            return Ok(true);
        }
        // The decrement.
        if writes(COUNTER) {
            let form =
                i.opcode == "sub" && m == ["u32"] && ops.len() == 3 && register(1, COUNTER) && int(2, 1);
            return match step {
                Step::Left(g) if form && g == guard => {
                    self.budget.step = Step::Counted(g);
                    Ok(true)
                }
                Step::Going(g) if form && guard == Some((false, GO.to_owned())) => {
                    self.budget.step = Step::GoCounted(g);
                    Ok(true)
                }
                _ => Err(uncounted()),
            };
        }
        if i.opcode != "bra" {
            return Ok(false);
        }
        if self.budget.past_exit {
            return Err(uncounted());
        }
        let target = match ops.first().map(|o| &o.kind) {
            Some(OperandKind::Symbol { name, offset: 0 }) => name.as_str(),
            _ => return Ok(false),
        };
        // The way out for a spent budget.
        if target == BUDGET_EXIT {
            return match step {
                Step::Tested(g) if guard == Some((false, SPENT.to_owned())) && m.is_empty() => {
                    self.budget.step = Step::Left(g);
                    Ok(true)
                }
                _ => Err(uncounted()),
            };
        }
        // A backward branch: counted just before, under its own guard, with the budget loaded.
        if self.budget.labels.contains(target) {
            match step {
                Step::Counted(g) if g == guard && self.budget.loaded => {
                    self.budget.counted = self.budget.counted.saturating_add(1);
                }
                Step::GoCounted(g)
                    if guard == Some((false, GO.to_owned())) && m.is_empty() && self.budget.loaded =>
                {
                    self.budget.counted = self.budget.counted.saturating_add(1);
                    self.budget.leaving = self.budget.leaving.saturating_add(1);
                    self.budget.after = 3;
                    self.budget.after_guard = g;
                }
                _ => return Err(uncounted()),
            }
        }
        Ok(false)
    }

    fn mask(&self, i: &Instruction, index: usize) -> Result<(), CheckFinding> {
        let ok = match i.operands.get(index) {
            Some(o) => {
                matches!(o.kind, OperandKind::Immediate(Immediate::Int(-1 | 0xffff_ffff)))
                    || self.operand_fact(o) == Some(&Fact::Mask)
            }
            None => false,
        };
        if ok { Ok(()) } else { Err(finding(i, FindingKind::Mask)) }
    }

    fn barrier(&self, i: &Instruction, m: &[&str]) -> Result<(), CheckFinding> {
        if m == ["warp", "sync"] {
            return self.mask(i, 0);
        }
        let int = |k: usize| match i.operands.get(k).map(|o| &o.kind) {
            Some(OperandKind::Immediate(Immediate::Int(v))) => Some(*v),
            _ => None,
        };
        let known = m.iter().all(|x| {
            matches!(
                *x,
                "sync" | "arrive" | "red" | "aligned" | "popc" | "and" | "or" | "u32" | "pred" | "cta"
            )
        });
        let red = m.contains(&"red");
        let number = usize::from(red);
        let with_count = i.operands.len() == if red { 4 } else { 2 };
        let ok = known
            && int(number).is_some_and(|v| (0..16).contains(&v))
            && (!with_count
                || int(number.saturating_add(1)).is_some_and(|v| v > 0 && v <= 1024 && v % 32 == 0));
        if ok { Ok(()) } else { Err(finding(i, FindingKind::Barrier)) }
    }

    /// One of the fence's forms: the register it writes and the fact it makes. `Ok(None)` for an
    /// instruction that is not one of them.
    fn fence_form(&self, i: &Instruction) -> Result<Option<(String, Option<Fact>)>, CheckFinding> {
        let m: Vec<&str> = i.modifiers.iter().map(String::as_str).collect();
        let ops = &i.operands;
        let Some(dest) = ops.first().and_then(Operand::register).filter(|r| r.component.is_none()) else {
            return Ok(None);
        };
        let dest = dest.name.as_str();
        if !fence_name(dest) {
            return Ok(None);
        }
        let wide = self.registers.get(dest) == Some(&Type::B64);
        let narrow = self.registers.get(dest) == Some(&Type::B32);
        let pred = self.registers.get(dest) == Some(&Type::Pred);
        let f = |k: usize| ops.get(k).and_then(|o| self.operand_fact(o)).cloned();
        let int = |k: usize| match ops.get(k).map(|o| &o.kind) {
            Some(OperandKind::Immediate(Immediate::Int(v))) => Some(*v),
            _ => None,
        };
        let reg_name = |k: usize| ops.get(k).and_then(Operand::register).map(|r| r.name.clone());
        let narrow_reg = |k: usize| {
            ops.get(k).and_then(Operand::register).is_some_and(|r| {
                r.component.is_none() && self.registers.get(r.name.as_str()) == Some(&Type::B32)
            })
        };
        let align_ok = |a: u64| matches!(a, 2 | 4 | 8 | 16);
        let fact = match (i.opcode.as_str(), m.as_slice(), ops.len()) {
            ("ld", ["param", "u64"], 2) if wide => match ops.get(1).and_then(Operand::address) {
                Some(a) if a.offset == 0 => match &a.base {
                    AddressBase::Symbol(s) if s == FENCE_PARAMS[0] => Some(Fact::FenceBase),
                    AddressBase::Symbol(s) if s == FENCE_PARAMS[1] => Some(Fact::FenceLen),
                    AddressBase::Symbol(s) if s == FENCE_PARAMS[2] => Some(Fact::Flag),
                    // A proof's pointer: an indexed one's, or a fixed one's, which is itself the
                    // proven address of its accesses.
                    // An 8-byte bound: one of the entry's own parameters.
                    AddressBase::Symbol(s)
                        if self.own_params.iter().any(|(name, size)| name == s && *size == 8) =>
                    {
                        self.own_params
                            .iter()
                            .position(|(name, size)| name == s && *size == 8)
                            .map(Fact::Bound64)
                    }
                    AddressBase::Symbol(s) if self.proofs.contains_key(s.as_str()) => {
                        self.proofs.get(s.as_str()).copied().map(|proof| match proof.kind {
                            ProofKind::Indexed { .. }
                            | ProofKind::Indexed64 { .. }
                            | ProofKind::Ranged { .. } => Fact::Pointer(proof),
                            ProofKind::Fixed => Fact::Proven { reach: proof.size, align: proof.align },
                        })
                    }
                    _ => return Err(finding(i, FindingKind::FenceRegister)),
                },
                _ => return Err(finding(i, FindingKind::FenceRegister)),
            },
            ("mov", ["u32"], 2) if narrow => match ops.get(1).map(|o| &o.kind) {
                Some(OperandKind::Symbol { name, offset: 0 }) => self.variable_address(name),
                // The thread's index, below the bounds of the path here (32-bit ones): a
                // grid-stride loop's index.
                Some(OperandKind::Register(r))
                    if r.component.is_none() && self.fact(&r.name) == Some(&Fact::Index) =>
                {
                    let bounds: BTreeSet<(usize, Compare)> = self
                        .below
                        .iter()
                        .filter(|(_, c)| matches!(c, Compare::S32 | Compare::U32))
                        .copied()
                        .collect();
                    (!bounds.is_empty()).then_some(Fact::Within(bounds))
                }
                Some(OperandKind::Register(r)) if r.name == "%dynamic_smem_size" && r.component.is_none() => {
                    Some(Fact::Dynamic)
                }
                Some(OperandKind::Register(r)) if r.name == "%lanemask_eq" && r.component.is_none() => {
                    Some(Fact::Lane)
                }
                Some(OperandKind::Register(r)) if r.component.map(|c| c.name()) == Some("x") => {
                    match r.name.as_str() {
                        "%ctaid" => Some(Fact::Special("%ctaid")),
                        "%ntid" => Some(Fact::Special("%ntid")),
                        "%tid" => Some(Fact::Special("%tid")),
                        _ => None,
                    }
                }
                _ => None,
            },
            // The proofs' forms (see `Fact::Index` ... `Fact::Proven`).
            ("mad", ["lo", "s32"], 4) if narrow => {
                let grid = [f(1), f(2)];
                let ok = grid.contains(&Some(Fact::Special("%ctaid")))
                    && grid.contains(&Some(Fact::Special("%ntid")))
                    && f(3) == Some(Fact::Special("%tid"));
                ok.then_some(Fact::Index)
            }
            // A ranged proof's highest index, its range parameter's first four bytes.
            ("ld", ["param", "u32"], 2)
                if narrow
                    && ops.get(1).and_then(Operand::address).is_some_and(
                        |a| matches!(&a.base, AddressBase::Symbol(s) if self.ranges.contains_key(s.as_str())),
                    ) =>
            {
                match ops.get(1).and_then(Operand::address) {
                    Some(Address { base: AddressBase::Symbol(s), offset: 0 }) => {
                        self.ranges.get(s.as_str()).copied().map(Fact::RangeHi)
                    }
                    _ => None,
                }
            }
            // Anything, unsigned, at most a constant; a multiple of `A` at most a constant
            // multiple of `A`: at most it, a multiple of `A`.
            ("min", ["u32"], 3) if narrow && int(2).is_some_and(|k| k >= 0) => {
                int(2).and_then(|k| u64::try_from(k).ok()).map(|max| match f(1) {
                    Some(Fact::Multiple { align }) if max.is_multiple_of(align) => {
                        Fact::AtMostShifted { max, align }
                    }
                    _ => Fact::AtMost { max },
                })
            }
            // A multiple of `A` plus anything times a constant: a multiple of the largest power
            // of two dividing both (in 32 bits, wrapping or not).
            ("mad", ["lo", "u32"], 4) if narrow => match (int(2), f(3)) {
                (Some(stride), Some(Fact::Multiple { align })) if stride > 0 => {
                    let stride = u64::try_from(stride).unwrap_or(1);
                    Some(Fact::Multiple { align: align.min(1 << stride.trailing_zeros().min(4)) })
                }
                _ => None,
            },
            ("shl", ["b32"], 3) if narrow => match (f(1), int(2)) {
                (Some(Fact::AtMostDynamic { reach, shift }), Some(k)) if k == i128::from(shift) => {
                    Some(Fact::AtMostDynamicShifted { reach, shift })
                }
                (Some(Fact::AtMost { max }), Some(k @ 0..=4)) => {
                    let shifted =
                        max.checked_shl(u32::try_from(k).unwrap_or(0)).filter(|m| *m <= u64::from(u32::MAX));
                    shifted.map(|max| Fact::AtMostShifted { max, align: 1 << k })
                }
                // Anything shifted: a multiple of `2^k`.
                (_, Some(k @ 0..=4)) => Some(Fact::Multiple { align: 1 << k }),
                _ => None,
            },
            // The dynamic shared memory's room for a reach, shifted down; anything, unsigned, at
            // most that.
            ("shr", ["u32"], 3) if narrow => match (f(1), int(2)) {
                (Some(Fact::DynamicRoom { reach }), Some(k @ 0..=4)) => {
                    Some(Fact::DynamicHi { reach, shift: u32::try_from(k).unwrap_or(0) })
                }
                _ => None,
            },
            ("min", ["u32"], 3) if narrow && matches!(f(2), Some(Fact::DynamicHi { .. })) => match f(2) {
                Some(Fact::DynamicHi { reach, shift }) => Some(Fact::AtMostDynamic { reach, shift }),
                _ => None,
            },
            // Anything, unsigned, at most a ranged proof's highest index: in `[0, hi]`.
            ("min", ["u32"], 3) if narrow && matches!(f(2), Some(Fact::RangeHi(_))) => match f(2) {
                Some(Fact::RangeHi(proof)) => Some(Fact::InRange(proof)),
                _ => None,
            },
            // A grid-stride loop's index stepped by the kernel's value.
            ("add", ["s32"], 3) if narrow && matches!(f(1), Some(Fact::Within(_) | Fact::Walked)) => {
                let kernels = match ops.get(2).map(|o| &o.kind) {
                    Some(OperandKind::Register(r)) => r.component.is_none() && !fence_name(&r.name),
                    Some(OperandKind::Immediate(Immediate::Int(_))) => true,
                    _ => false,
                };
                kernels.then_some(Fact::Walked)
            }
            // A grid-stride loop's index scaled: signed only where every bound is compared
            // signed (the index is then below 2^31).
            ("mul", ["wide", sign @ ("s32" | "u32")], 3) if wide && matches!(f(1), Some(Fact::Within(_))) => {
                match (f(1), int(2)) {
                    (Some(Fact::Within(bounds)), Some(size @ (1 | 2 | 4 | 8 | 16)))
                        if *sign == "u32" || bounds.iter().all(|(_, c)| *c == Compare::S32) =>
                    {
                        Some(Fact::WithinScaled { bounds, size: u64::try_from(size).unwrap_or(0) })
                    }
                    _ => None,
                }
            }
            // Scaled as the proof says the kernel extends it (the same value: `hi` is at most
            // `i32::MAX` for a signed one).
            ("mul", ["wide", sign @ ("s32" | "u32")], 3)
                if wide && matches!(f(1), Some(Fact::InRange(_))) =>
            {
                match (f(1), int(2)) {
                    (
                        Some(Fact::InRange(proof @ Proof { kind: ProofKind::Ranged { signed, .. }, .. })),
                        Some(size),
                    ) if u64::try_from(size) == Ok(proof.size)
                        && *sign == if signed { "s32" } else { "u32" } =>
                    {
                        Some(Fact::RangedScaled(proof))
                    }
                    _ => None,
                }
            }
            ("ld", ["param", "u32"], 2) if narrow => match ops.get(1).and_then(Operand::address) {
                Some(a) if a.offset == 0 => match &a.base {
                    AddressBase::Symbol(s) => self
                        .own_params
                        .iter()
                        .position(|(name, size)| name == s && *size == 4)
                        .map(Fact::Bound),
                    _ => None,
                },
                _ => None,
            },
            // A kernel's register, or a grid-stride loop's index (a value of the kernel's own),
            // unsigned, below a bound that a value on this path was below (so positive as its
            // comparison reads it: as unsigned, the same value).
            ("setp", ["lt", "u32"], 3) if pred && matches!(f(2), Some(Fact::Bound(_))) => {
                match (f(2), reg_name(1)) {
                    (Some(Fact::Bound(b)), Some(of))
                        if matches!(f(1), Some(Fact::Within(_) | Fact::Walked)) || !fence_name(&of) =>
                    {
                        self.below
                            .iter()
                            .find(|(bound, c)| *bound == b && matches!(c, Compare::S32 | Compare::U32))
                            .map(|&bound| Fact::Continue { of, bound })
                    }
                    _ => None,
                }
            }
            ("setp", ["ge", ty @ ("s32" | "u32")], 3) if pred => match (f(1), f(2)) {
                (Some(Fact::Index), Some(Fact::Bound(bound))) => {
                    Some(Fact::Outside(bound, if *ty == "s32" { Compare::S32 } else { Compare::U32 }))
                }
                _ => None,
            },
            ("setp", ["ge", ty @ ("s64" | "u64")], 3) if pred => match (f(1), f(2)) {
                (Some(Fact::Index64), Some(Fact::Bound64(bound))) => {
                    Some(Fact::Outside(bound, if *ty == "s64" { Compare::S64 } else { Compare::U64 }))
                }
                _ => None,
            },
            // The 64-bit index's parts and sum, and its product.
            ("mul", ["wide", "u32"], 3)
                if wide && matches!((f(1), f(2)), (Some(Fact::Special(_)), Some(Fact::Special(_)))) =>
            {
                let factors = [f(1), f(2)];
                let grid = factors.contains(&Some(Fact::Special("%ctaid")))
                    && factors.contains(&Some(Fact::Special("%ntid")));
                grid.then_some(Fact::Grid64)
            }
            ("shl", ["b64"], 3) if wide => match (f(1), int(2)) {
                (Some(Fact::Index64), Some(k @ 0..=4)) => Some(Fact::Scaled64(1 << k)),
                _ => None,
            },
            ("mul", ["wide", "s32"], 3) if wide => match (f(1), int(2)) {
                (Some(Fact::Index), Some(size @ (1 | 2 | 4 | 8 | 16))) => {
                    Some(Fact::Scaled(u64::try_from(size).unwrap_or(0)))
                }
                _ => None,
            },
            // The index is at least 0 and below 2^31: zero-extended as sign-extended.
            ("mul", ["wide", "u32"], 3) if wide && f(1) == Some(Fact::Index) => match int(2) {
                Some(size @ (1 | 2 | 4 | 8 | 16)) => Some(Fact::Scaled(u64::try_from(size).unwrap_or(0))),
                _ => None,
            },
            ("add", ["s64"], 3) if wide => match (f(1), f(2)) {
                (Some(Fact::Pointer(proof)), Some(Fact::Scaled(size)))
                | (Some(Fact::Scaled(size)), Some(Fact::Pointer(proof)))
                    if proof.size == size
                        && matches!(proof.kind, ProofKind::Indexed { bound, signed }
                            if self.below.contains(&(bound, if signed { Compare::S32 } else { Compare::U32 }))) =>
                {
                    Some(Fact::Proven { reach: size, align: size })
                }
                (Some(Fact::Pointer(proof)), Some(Fact::Scaled64(size)))
                | (Some(Fact::Scaled64(size)), Some(Fact::Pointer(proof)))
                    if proof.size == size
                        && matches!(proof.kind, ProofKind::Indexed64 { bound, signed }
                            if self.below.contains(&(bound, if signed { Compare::S64 } else { Compare::U64 }))) =>
                {
                    Some(Fact::Proven { reach: size, align: size })
                }
                (Some(Fact::Grid64), Some(Fact::Tid64)) | (Some(Fact::Tid64), Some(Fact::Grid64)) => {
                    Some(Fact::Index64)
                }
                // An indexed proof's pointer plus a grid-stride loop's index below its bound times
                // its element size: `[r, r + S)` inside the fence.
                (Some(Fact::Pointer(a)), Some(Fact::WithinScaled { bounds, size }))
                | (Some(Fact::WithinScaled { bounds, size }), Some(Fact::Pointer(a)))
                    if size == a.size
                        && matches!(a.kind, ProofKind::Indexed { bound, signed }
                            if bounds.contains(&(bound, if signed { Compare::S32 } else { Compare::U32 }))) =>
                {
                    Some(Fact::Proven { reach: size, align: size })
                }
                // A ranged proof's pointer plus a value in its range times its element size:
                // `[p, p + hi * S + reach)` is inside the fence (the launcher's range).
                (Some(Fact::Pointer(a)), Some(Fact::RangedScaled(b)))
                | (Some(Fact::RangedScaled(b)), Some(Fact::Pointer(a)))
                    if a == b =>
                {
                    match a.kind {
                        ProofKind::Ranged { reach, .. } => Some(Fact::Proven { reach, align: a.size }),
                        ProofKind::Indexed { .. } | ProofKind::Indexed64 { .. } | ProofKind::Fixed => None,
                    }
                }
                _ => None,
            },
            ("cvt", ["u64", "u32"], 2) if wide => match f(1) {
                Some(Fact::Special("%tid")) => Some(Fact::Tid64),
                Some(Fact::AtMost { max }) => Some(Fact::Near { max, align: 1 }),
                Some(Fact::AtMostShifted { max, align }) => Some(Fact::Near { max, align }),
                // A 32-bit address of a shared, local or constant window, widened: the same
                // address (those state spaces' addresses are 32 bits, zero-extended).
                Some(Fact::Inside { win, reach, align }) if win != Win::Global => {
                    Some(Fact::Inside { win, reach, align })
                }
                Some(Fact::Strided(
                    s @ Strided { step: StridedStep::Inside { .. }, win: Win::Shared, .. },
                )) => Some(Fact::Strided(s)),
                Some(Fact::Offset32 { win, reach, align, base }) => {
                    Some(Fact::Offset { win, reach, align, base })
                }
                Some(Fact::Below32 { win, reach, base }) => Some(Fact::Offset { win, reach, align: 1, base }),
                Some(Fact::Limit32 { win, reach, base }) => Some(Fact::Limit { win, reach, base }),
                Some(Fact::Strided(s @ Strided { step: StridedStep::Below { align, wide: false }, .. })) => {
                    Some(Fact::Strided(Strided { step: StridedStep::Below { align, wide: true }, ..s }))
                }
                _ => None,
            },
            ("cvt", ["u32", "u64"], 2) if narrow => match f(1) {
                Some(Fact::Limit { win, reach, base }) => Some(Fact::Limit32 { win, reach, base }),
                _ => None,
            },
            // The fragment clamp (see `Strided`): a stride whose product with the span would
            // not fit is 0.
            ("mul", ["wide", "u32"], 3) if wide => match (f(1), int(2), reg_name(1)) {
                (Some(Fact::Multiple { align }), Some(span), Some(of)) if span >= 1 => {
                    Some(Fact::Product { span: u64::try_from(span).unwrap_or(0), align, of })
                }
                _ => None,
            },
            ("setp", ["gt", "u64"], 3) if pred => match (f(1), f(2)) {
                (Some(Fact::Product { span, align, of }), Some(Fact::Limit { win, reach, base }))
                    if matches!(win, Win::Global | Win::Shared) =>
                {
                    Some(Fact::Over { win, base, line: reach, span, align, of })
                }
                _ => None,
            },
            ("selp", ["b32"], 4) if narrow => match (int(1), reg_name(2), f(3)) {
                (Some(0), Some(x), Some(Fact::Over { win, base, line, span, align, of })) if x == of => {
                    Some(Fact::Stride { win, base, line, span, align })
                }
                // A generic fragment's stride, chosen by the predicate its address is chosen by.
                (None, Some(global), None) => match (reg_name(1), reg_name(3)) {
                    (Some(shared), Some(pred)) => Some(Fact::Chosen { pred, shared, global }),
                    _ => None,
                },
                _ => None,
            },
            ("mul", ["lo", "u32"], 3) if narrow => match (f(1), int(2), reg_name(1)) {
                (Some(Fact::Stride { win, base, line, span, align }), Some(k), Some(stride))
                    if k == i128::from(span) =>
                {
                    let step = StridedStep::Distance;
                    Some(Fact::Strided(Strided { step, win, base, line, span, align, stride }))
                }
                _ => None,
            },
            ("sub", ["u32"], 3) if narrow => match (f(1), f(2), int(2)) {
                (Some(Fact::Dynamic), _, Some(k)) if k >= 1 && k <= i128::from(MIN_DYNAMIC_SHARED) => {
                    Some(Fact::DynamicRoom { reach: u64::try_from(k).unwrap_or(0) })
                }
                (
                    Some(Fact::Limit32 { win, reach, base }),
                    Some(Fact::Strided(s @ Strided { step: StridedStep::Distance, .. })),
                    _,
                ) if s.line == reach && s.win == win && s.base == base => {
                    Some(Fact::Strided(Strided { step: StridedStep::Limit, ..s }))
                }
                (Some(Fact::High { win: wh, reach }), Some(l), _)
                    if low(&l).is_some_and(|(wl, _)| wl == wh) && narrow_reg(2) =>
                {
                    // The low is at or below each of its variables, and the high reaches `k`
                    // bytes past some: the window is at least the longest such `k` long.
                    let vars = low(&l).map(|(_, v)| v).unwrap_or_default();
                    let min = reach.iter().filter(|(var, _)| vars.contains(*var)).map(|(_, k)| *k).max();
                    match (reg_name(2), min) {
                        (Some(base), Some(min)) if min >= 16 => Some(Fact::Length { win: wh, base, min }),
                        _ => None,
                    }
                }
                (Some(Fact::Length { win, base, min }), _, Some(k)) if k >= 1 && k <= i128::from(min) => {
                    Some(Fact::Limit32 { win, reach: u64::try_from(k).unwrap_or(0), base: Some(base) })
                }
                _ => None,
            },
            ("min", ["u32"], 3) if narrow && matches!(f(2), Some(Fact::Strided(_))) => match f(2) {
                Some(Fact::Strided(s @ Strided { step: StridedStep::Limit, .. })) => {
                    Some(Fact::Strided(Strided { step: StridedStep::Below { align: 1, wide: false }, ..s }))
                }
                _ => None,
            },
            ("and", ["b32"], 3) if narrow && matches!(f(1), Some(Fact::Strided(_))) => {
                let mask = int(2).filter(|m| *m < 0).map(|m| m.unsigned_abs() as u64);
                match (f(1), mask) {
                    (
                        Some(Fact::Strided(s @ Strided { step: StridedStep::Below { wide: false, .. }, .. })),
                        Some(a),
                    ) if a.is_power_of_two() && a <= 32 => Some(Fact::Strided(Strided {
                        step: StridedStep::Below { align: a, wide: false },
                        ..s
                    })),
                    _ => None,
                }
            }
            // A shared fragment's `k + b` in 32 bits, `b` the very register its limit was
            // computed from: inside as a clamped offset is.
            ("add", ["u32"], 3) if narrow && matches!(f(1), Some(Fact::Strided(_))) => match f(1) {
                Some(Fact::Strided(
                    s @ Strided { step: StridedStep::Below { align, wide: false }, win: Win::Shared, .. },
                )) if s.base.is_some() && reg_name(2) == s.base => {
                    Some(Fact::Strided(Strided { step: StridedStep::Inside { align }, ..s }))
                }
                _ => None,
            },
            // `k + b` for the fence base `b`, or `k | b`: inside as a clamped offset is.
            ("add", ["u64"], 3) | ("or", ["b64"], 3)
                if wide
                    && (matches!(f(1), Some(Fact::Strided(_))) || matches!(f(2), Some(Fact::Strided(_)))) =>
            {
                let (other, s) = match (f(1), f(2)) {
                    (Some(Fact::Strided(s)), _) => (2, s),
                    (_, Some(Fact::Strided(s))) => (1, s),
                    _ => return Ok(Some((dest.to_owned(), None))),
                };
                let base_ok = s.base.is_none() && s.win == Win::Global && f(other) == Some(Fact::FenceBase);
                match s.step {
                    StridedStep::Below { align, wide: true } if base_ok => {
                        Some(Fact::Strided(Strided { step: StridedStep::Inside { align }, ..s }))
                    }
                    _ => None,
                }
            }
            ("min", ["u32"], 3) if narrow => match (f(1), f(2)) {
                (Some(a), Some(b)) if low(&a).is_some() && low(&b).is_some() => {
                    let (Some((wa, mut va)), Some((wb, vb))) = (low(&a), low(&b)) else { return Ok(None) };
                    if wa == wb {
                        va.extend(vb);
                        Some(Fact::Low { win: wa, vars: va })
                    } else {
                        None
                    }
                }
                (_, Some(Fact::Limit32 { win, reach, base }))
                | (Some(Fact::Limit32 { win, reach, base }), _) => Some(Fact::Below32 { win, reach, base }),
                _ => None,
            },
            ("and", ["b32"], 3) if narrow => match (f(1), f(2), int(2)) {
                // A fragment's offset in the fence is aligned to 32 (the launcher aligns the
                // fence's base so for a module with a fragment).
                (Some(Fact::Below32 { win, reach, base }), _, Some(mask))
                    if (align_ok(mask.unsigned_abs() as u64) || (mask == -32 && win == Win::Global))
                        && mask < 0 =>
                {
                    Some(Fact::Offset32 { win, reach, align: mask.unsigned_abs() as u64, base })
                }
                // Anything and the fence's 32-bit limit for `reach` bytes (1, 2, 4, 8 or 16): at
                // most the limit, and a multiple of the reach, its bits being the limit's: the
                // fence's length less the reach, a multiple of the reach, as the launcher gives a
                // fence a multiple of 16 bytes long. The aligned form's mask.
                (_, Some(Fact::Limit32 { win: Win::Global, reach, base: None }), _)
                | (Some(Fact::Limit32 { win: Win::Global, reach, base: None }), _, _)
                    if reach == 1 || align_ok(reach) =>
                {
                    Some(Fact::Offset32 { win: Win::Global, reach, align: reach, base: None })
                }
                // At most `K` and `-A`: at most `K`, a multiple of `A`.
                (Some(Fact::AtMost { max }), _, Some(mask))
                    if mask < 0 && align_ok(mask.unsigned_abs() as u64) =>
                {
                    Some(Fact::AtMostShifted { max, align: mask.unsigned_abs() as u64 })
                }
                // Anything and `-A`: a multiple of `A` (a fragment's stride).
                (_, _, Some(mask)) if mask < 0 && align_ok(mask.unsigned_abs() as u64) => {
                    Some(Fact::Multiple { align: mask.unsigned_abs() as u64 })
                }
                _ => None,
            },
            // The fence's base plus a value at most a constant (`add` or, the aligned form's,
            // `or`: between `b` and `b + k`).
            ("add", ["u64"], 3) | ("or", ["b64"], 3)
                if wide
                    && (matches!(f(1), Some(Fact::Near { .. }))
                        || matches!(f(2), Some(Fact::Near { .. }))) =>
            {
                match (f(1), f(2)) {
                    (Some(Fact::Near { max, align }), Some(Fact::FenceBase))
                    | (Some(Fact::FenceBase), Some(Fact::Near { max, align })) => {
                        Some(Fact::FromBase { max, align: align.min(u64::from(WINDOW_ALIGN)) })
                    }
                    _ => None,
                }
            }
            // `b | k` for the fence base `b` and an offset `k`: between `b` and `b + k` (an `or`
            // adds no bit the sum lacks), so inside as `b + k` is; aligned as `k` is, `b` being
            // aligned to 16. The aligned form's join.
            ("or", ["b64"], 3) if wide => match (f(1), f(2)) {
                (
                    Some(Fact::Offset { win: Win::Global, reach, align, base: None }),
                    Some(Fact::FenceBase),
                )
                | (
                    Some(Fact::FenceBase),
                    Some(Fact::Offset { win: Win::Global, reach, align, base: None }),
                ) => Some(Fact::Inside { win: Win::Global, reach, align }),
                _ => None,
            },
            ("or", ["b32"], 3) if narrow => {
                if f(1) == Some(Fact::Lane) || f(2) == Some(Fact::Lane) {
                    Some(Fact::Mask)
                } else {
                    None
                }
            }
            ("min", ["u64"], 3) if wide => match (f(1), f(2)) {
                (_, Some(Fact::Limit { win, reach, base })) | (Some(Fact::Limit { win, reach, base }), _) => {
                    Some(Fact::Below { win, reach, base })
                }
                _ => None,
            },
            ("max", ["u32"], 3) if narrow => match (f(1), f(2)) {
                (Some(Fact::High { win: wa, reach: mut ra }), Some(Fact::High { win: wb, reach: rb }))
                    if wa == wb =>
                {
                    for (var, k) in rb {
                        let e = ra.entry(var).or_insert(k);
                        *e = (*e).max(k);
                    }
                    Some(Fact::High { win: wa, reach: ra })
                }
                _ => None,
            },
            ("add", ["u32"], 3) if narrow => match (f(1), f(2), int(2)) {
                // A variable's address plus at most `max`, a multiple of `align`: `[r, r + size
                // - max)` inside its window, aligned as both are (the variable to 16).
                (
                    Some(Fact::Address { win, size: Some(size), .. }),
                    Some(Fact::AtMostShifted { max, align }),
                    _,
                )
                | (
                    Some(Fact::AtMostShifted { max, align }),
                    Some(Fact::Address { win, size: Some(size), .. }),
                    _,
                ) if win != Win::Global && max < size => {
                    Some(Fact::Inside { win, reach: size.saturating_sub(max), align: align.min(16) })
                }
                // An `.extern .shared` array's address plus at most the dynamic shared memory's
                // room for `reach`: `[r, r + reach)` inside the array.
                (
                    Some(Fact::Address { win: Win::Shared, size: None, .. }),
                    Some(Fact::AtMostDynamicShifted { reach, shift }),
                    _,
                )
                | (
                    Some(Fact::AtMostDynamicShifted { reach, shift }),
                    Some(Fact::Address { win: Win::Shared, size: None, .. }),
                    _,
                ) => Some(Fact::Inside { win: Win::Shared, reach, align: (1u64 << shift).min(16) }),
                (Some(Fact::Address { win, var, size: Some(size) }), _, Some(k))
                    if k >= 0 && u64::try_from(k).is_ok_and(|k| k <= size) =>
                {
                    Some(Fact::High { win, reach: BTreeMap::from([(var, u64::try_from(k).unwrap_or(0))]) })
                }
                (Some(Fact::Address { win: Win::Shared, var, size: None }), Some(Fact::Dynamic), _)
                | (Some(Fact::Dynamic), Some(Fact::Address { win: Win::Shared, var, size: None }), _) => {
                    Some(Fact::High { win: Win::Shared, reach: BTreeMap::from([(var, 0)]) })
                }
                // `k + b` in 32 bits, `k` a clamped offset of a shared, local or constant window
                // and `b` the very register its limit was computed from: inside (the 32-bit
                // address; widened by `cvt.u64.u32`).
                (Some(Fact::Offset32 { win, reach, align, base: Some(b) }), _, _)
                    if win != Win::Global && reg_name(2).as_deref() == Some(b.as_str()) =>
                {
                    Some(Fact::Inside { win, reach, align })
                }
                (Some(Fact::Below32 { win, reach, base: Some(b) }), _, _)
                    if win != Win::Global && reg_name(2).as_deref() == Some(b.as_str()) =>
                {
                    Some(Fact::Inside { win, reach, align: 1 })
                }
                _ => None,
            },
            // `k + b`, `k` a clamped offset of the fence and `b` the fence base: inside.
            ("add", ["u64"], 3) if wide => match (offset(f(1).as_ref()), offset(f(2).as_ref())) {
                (Some((Win::Global, reach, align, None)), _) if f(2) == Some(Fact::FenceBase) => {
                    Some(Fact::Inside { win: Win::Global, reach, align })
                }
                (_, Some((Win::Global, reach, align, None))) if f(1) == Some(Fact::FenceBase) => {
                    Some(Fact::Inside { win: Win::Global, reach, align })
                }
                _ => None,
            },
            ("sub", ["u64"], 3) if wide => match (f(1), f(2), int(2)) {
                (Some(Fact::FenceLen), _, Some(k)) if k >= 1 && k <= i128::from(MAX_REACH) => {
                    Some(Fact::Limit { win: Win::Global, reach: u64::try_from(k).unwrap_or(0), base: None })
                }
                _ => None,
            },
            ("and", ["b64"], 3) if wide => match (f(1), int(2)) {
                (Some(Fact::Below { win, reach, base }), Some(mask))
                    if align_ok(mask.unsigned_abs() as u64) && mask < 0 =>
                {
                    Some(Fact::Offset { win, reach, align: mask.unsigned_abs() as u64, base })
                }
                _ => None,
            },
            ("cvta", ["shared", "u64"], 2) if wide && matches!(f(1), Some(Fact::Strided(_))) => match f(1) {
                Some(Fact::Strided(
                    s @ Strided { step: StridedStep::Inside { align }, win: Win::Shared, .. },
                )) => Some(Fact::Strided(Strided { step: StridedStep::GenericShared { align }, ..s })),
                _ => None,
            },
            ("selp", ["b64"], 4) if wide && matches!(f(1), Some(Fact::Strided(_))) => {
                match (f(1), f(2), reg_name(3)) {
                    (
                        Some(Fact::Strided(shared @ Strided { step: StridedStep::GenericShared { .. }, .. })),
                        Some(Fact::Strided(
                            global @ Strided { step: StridedStep::Inside { .. }, win: Win::Global, .. },
                        )),
                        Some(pred),
                    ) => Some(Fact::Either { pred, shared, global }),
                    _ => None,
                }
            }
            ("cvta", [space @ ("shared" | "local"), "u64"], 2) if wide => match f(1) {
                Some(Fact::Inside { win, reach, align })
                    if reach == align
                        && ((win == Win::Shared && *space == "shared")
                            || (win == Win::Local && *space == "local")) =>
                {
                    Some(Fact::Generic { width: reach, windows: BTreeSet::from([win]) })
                }
                _ => None,
            },
            ("selp", ["b64"], 4) if wide => match (generic(f(1)), generic(f(2))) {
                (Some((wa, mut sa)), Some((wb, sb))) => {
                    sa.extend(sb);
                    Some(Fact::Generic { width: wa.min(wb), windows: sa })
                }
                _ => None,
            },
            // The fence's other forms: what they write is not a fact.
            (
                "mov" | "add" | "sub" | "and" | "or" | "xor" | "cvt" | "cvta" | "selp" | "isspacep" | "setp",
                _,
                _,
            ) if wide || narrow || pred => {
                let known = matches!(
                    (i.opcode.as_str(), m.as_slice()),
                    ("mov", ["u64" | "u32"])
                        | ("add", ["u64" | "s64"])
                        | ("sub", ["u64"])
                        | ("and", ["b64" | "b32"])
                        | ("or", ["b64" | "b32"])
                        | ("xor", ["b64" | "b32"])
                        | ("cvt", ["u64", "u32" | "u16"] | ["u32", "u64" | "u16"])
                        | ("cvta", ["to", "shared" | "local", "u64"])
                        | ("cvta", ["shared" | "local", "u64"])
                        | ("selp", ["b64"])
                        | ("isspacep", ["shared" | "local"])
                        | ("setp", ["eq", "u64" | "u32"])
                );
                if !known {
                    return Err(finding(i, FindingKind::FenceRegister));
                }
                None
            }
            // Not one of the fence's forms: the caller's rules apply.
            _ => return Ok(None),
        };
        Ok(Some((dest.to_owned(), fact)))
    }

    /// `wmma.mma` (registers only), or a `wmma.load`/`wmma.store` of the global space (or
    /// generic: the address is then a global one, inside the fence) whose
    /// address is proven to hold its whole fragment: `[r]` with `r` inside the fence for
    /// `line + s * span` bytes (the fragment's, by the checker's own table), aligned to 32, and
    /// the instruction's stride the register `s` of that fact, a multiple of 16 bytes.
    fn fragment(&self, i: &Instruction, m: &[&str], report: &mut CheckReport) -> Result<(), CheckFinding> {
        let not_allowed = || finding(i, FindingKind::NotAllowed);
        if m.first() == Some(&"mma") {
            let known = |t: &&str| matches!(*t, "f16" | "f32" | "bf16" | "s8" | "u8" | "s32" | "satfinite");
            return match m {
                [
                    "mma",
                    "sync",
                    "aligned",
                    "row" | "col",
                    "row" | "col",
                    "m16n16k16" | "m32n8k16" | "m8n32k16",
                    types @ ..,
                ] if types.len() >= 2 && types.iter().all(known) => Ok(()),
                _ => Err(not_allowed()),
            };
        }
        // Global, shared, or generic (a fragment inside the fence, or an either of the shared
        // window's and the fence's).
        let generic = m.len() == 7;
        let (verb, which, layout, shape, ty, win) = match m {
            [v, w, "sync", "aligned", l, shape, "global", ty] | [v, w, "sync", "aligned", l, shape, ty] => {
                (*v, *w, *l, *shape, *ty, Win::Global)
            }
            [v, w, "sync", "aligned", l, shape, "shared" | "shared::cta", ty] => {
                (*v, *w, *l, *shape, *ty, Win::Shared)
            }
            _ => return Err(not_allowed()),
        };
        if !matches!(verb, "load" | "store") || !matches!(layout, "row" | "col") {
            return Err(not_allowed());
        }
        let (rows_m, cols_n, k) = match shape {
            "m16n16k16" => (16u64, 16u64, 16u64),
            "m32n8k16" => (32, 8, 16),
            "m8n32k16" => (8, 32, 16),
            _ => return Err(not_allowed()),
        };
        let bytes = match ty {
            "f16" | "bf16" => 2u64,
            "s8" | "u8" => 1,
            "f32" | "s32" => 4,
            _ => return Err(not_allowed()),
        };
        let (rows, cols) = match (verb, which, bytes) {
            ("load", "a", 1 | 2) => (rows_m, k),
            ("load", "b", 1 | 2) => (k, cols_n),
            ("load", "c", 2 | 4) | ("store", "d", 2 | 4) => (rows_m, cols_n),
            _ => return Err(not_allowed()),
        };
        let (lines, along) = if layout == "row" { (rows, cols) } else { (cols, rows) };
        let (line, span) = (along.saturating_mul(bytes), lines.saturating_sub(1).saturating_mul(bytes));
        let address_at = usize::from(verb == "load");
        if i.operands.len() != 3 {
            return Err(finding(i, FindingKind::Unproven));
        }
        let address = i.operands.get(address_at).and_then(Operand::address);
        let stride = i.operands.get(2).and_then(Operand::register).filter(|r| r.component.is_none());
        let fixed = match i.operands.get(2).map(|o| &o.kind) {
            Some(OperandKind::Immediate(Immediate::Int(v))) => u32::try_from(*v).ok().map(u64::from),
            _ => None,
        };
        // One window's clamp of this fragment, reached as `step`, with stride register `by`.
        let fits = |s: &Strided, win: Win, step: StridedStep, by: &str| {
            s.step == step
                && s.win == win
                && s.line == line
                && s.span == span
                && s.stride == by
                && s.align.saturating_mul(bytes).is_multiple_of(16)
                && self.base_aligned_to_32(s.base.as_deref())
        };
        let inside = StridedStep::Inside { align: 32 };
        let proven = match (address, stride, fixed) {
            // A constant stride, a multiple of 16 bytes: `[r]` with `r` inside the fence for the
            // fragment's whole reach at that stride, aligned to 32.
            (Some(a), None, Some(fixed)) if a.offset == 0 && win == Win::Global => match &a.base {
                AddressBase::Register(r) => match self.fact(r) {
                    Some(Fact::Inside { win: Win::Global, reach, align }) => {
                        let needs = fixed.checked_mul(span).and_then(|d| d.checked_add(line));
                        fixed.saturating_mul(bytes).is_multiple_of(16)
                            && *align >= 32
                            && needs.is_some_and(|needs| *reach >= needs)
                    }
                    _ => false,
                },
                _ => false,
            },
            (Some(a), Some(stride), _) if a.offset == 0 => match &a.base {
                AddressBase::Register(r) => match (self.fact(r), self.fact(&stride.name)) {
                    (Some(Fact::Strided(s)), _) => fits(s, win, inside, &stride.name),
                    // Generic: the shared window's clamp or the fence's, chosen with its stride
                    // by one predicate.
                    (
                        Some(Fact::Either { pred, shared, global }),
                        Some(Fact::Chosen { pred: p, shared: a, global: b }),
                    ) if generic => {
                        pred == p
                            && fits(shared, Win::Shared, StridedStep::GenericShared { align: 32 }, a)
                            && fits(global, Win::Global, inside, b)
                    }
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        };
        if !proven {
            return Err(finding(i, FindingKind::Unproven));
        }
        // A fragment in the fence (global, or a generic one's global side) is aligned to 32
        // from the fence's base; one in a shared window rests on its variables' alignment.
        report.fragment_base |= win == Win::Global;
        report.clamped = report.clamped.saturating_add(1);
        Ok(())
    }

    /// Whether a fragment's window base is aligned to 32: the fence's, which the launcher aligns
    /// so for a module with a fragment; a shared window's, where every variable its low is the
    /// lowest of is.
    fn base_aligned_to_32(&self, base: Option<&str>) -> bool {
        let Some(base) = base else { return true };
        let vars = match self.fact(base).and_then(low) {
            Some((Win::Shared, vars)) => vars,
            _ => return false,
        };
        vars.iter().all(|v| self.variables.get(v.as_str()).is_some_and(|v| v.alignment() >= 32))
    }

    /// `mov.u64 r, V`'s fact: `V` a variable of a window, aligned to 16.
    fn variable_address(&self, name: &str) -> Option<Fact> {
        let v = self.variables.get(name)?;
        let win = win_of(v.space).filter(|w| *w != Win::Global)?;
        if v.alignment() < 16 || v.alignment() % 16 != 0 {
            return None;
        }
        let dynamic = v.space == StateSpace::Shared && v.linkage == Some(Linkage::Extern);
        let size = if dynamic { None } else { Some(v.size()?) };
        Some(Fact::Address { win, var: name.to_owned(), size })
    }

    /// A memory instruction: each address operand proven.
    fn memory(&self, i: &Instruction, m: &[&str], report: &mut CheckReport) -> Result<(), CheckFinding> {
        let unproven = || finding(i, FindingKind::Unproven);
        let not_allowed = || finding(i, FindingKind::NotAllowed);
        let op = i.opcode.as_str();
        // (operand, space, width, may a generic address reach local memory)
        let mut addresses: Vec<(usize, Option<StateSpace>, u64, bool)> = Vec::new();
        match op {
            "cp" => {
                // The group instructions touch no memory of their own (and have no size).
                if matches!(m, ["async", "commit_group" | "wait_group" | "wait_all"]) {
                    return Ok(());
                }
                let size = match i.operands.get(2).map(|o| &o.kind) {
                    Some(OperandKind::Immediate(Immediate::Int(n @ (4 | 8 | 16)))) => {
                        u64::try_from(*n).unwrap_or(0)
                    }
                    _ => return Err(not_allowed()),
                };
                match m {
                    ["async", "ca" | "cg", "shared" | "shared::cta", "global", rest @ ..]
                        if rest.iter().all(|x| matches!(*x, "L2::64B" | "L2::128B" | "L2::256B")) => {}
                    _ => return Err(not_allowed()),
                }
                let source_ok = match i.operands.get(3).map(|o| &o.kind) {
                    None => true,
                    Some(OperandKind::Immediate(Immediate::Int(n))) => (0..=i128::from(size)).contains(n),
                    _ => false,
                };
                if !source_ok || i.operands.len() > 4 {
                    return Err(not_allowed());
                }
                addresses.push((0, Some(StateSpace::Shared), size, false));
                addresses.push((1, Some(StateSpace::Global), size, false));
            }
            "prefetch" | "prefetchu" => {
                let mut space = None;
                for x in m {
                    match *x {
                        "global" if op == "prefetch" => space = Some(StateSpace::Global),
                        "local" if op == "prefetch" => space = Some(StateSpace::Local),
                        "L1" | "L2" | "L2::evict_last" | "L2::evict_normal" => {}
                        _ => return Err(not_allowed()),
                    }
                }
                if i.operands.len() != 1 {
                    return Err(not_allowed());
                }
                addresses.push((0, space, 1, true));
            }
            _ => {
                let (space, width) = memory_modifiers(op, m).ok_or_else(not_allowed)?;
                let (index, count) = match op {
                    "ld" | "ldu" | "st" | "red" => (usize::from(op == "ld" || op == "ldu"), 2),
                    _ => (1, if m.contains(&"cas") { 4 } else { 3 }),
                };
                if i.operands.len() != count {
                    return Err(not_allowed());
                }
                let atomic = matches!(op, "atom" | "red");
                addresses.push((index, space, width, !atomic));
            }
        }
        for (index, space, width, local_ok) in addresses {
            let address = i.operands.get(index).and_then(Operand::address).ok_or_else(unproven)?;
            // A named variable or parameter at a constant offset inside it.
            if let AddressBase::Symbol(name) = &address.base {
                let inside = |size: u64| {
                    u64::try_from(address.offset)
                        .ok()
                        .and_then(|o| o.checked_add(width))
                        .is_some_and(|end| end <= size)
                };
                let ok = match space {
                    // Never one of the fence's own (its base, a proof's address or range): only
                    // the fence's code reads those, into its own registers.
                    Some(StateSpace::Param) => {
                        !fence_name(name) && self.params.get(name.as_str()).is_some_and(|s| inside(*s))
                    }
                    Some(s @ (StateSpace::Shared | StateSpace::Local | StateSpace::Const)) => {
                        self.variables.get(name.as_str()).is_some_and(|v| {
                            v.space == s
                                && v.linkage != Some(Linkage::Extern)
                                && v.size().is_some_and(inside)
                                && v.alignment() >= width
                                && address.offset.checked_rem(i64::try_from(width).unwrap_or(1)) == Some(0)
                        })
                    }
                    _ => false,
                };
                if !ok {
                    return Err(unproven());
                }
                report.by_declaration = report.by_declaration.saturating_add(1);
                continue;
            }
            let AddressBase::Register(register) = &address.base else { return Err(unproven()) };
            let fact = self.fact(register);
            // `[r + K]` of `width` bytes, with `[r, r + reach)` inside and `r` aligned to `align`:
            // inside where `K + width <= reach`, aligned where `K` is a multiple of the width and
            // the width at most the alignment (both powers of two).
            let within = |reach: u64, align: u64| {
                u64::try_from(address.offset).is_ok_and(|k| {
                    k.checked_add(width).is_some_and(|end| end <= reach)
                        && k.checked_rem(width) == Some(0)
                        && width <= align
                })
            };
            if address.offset != 0
                && !matches!(
                    fact,
                    Some(
                        Fact::Inside { .. }
                            | Fact::Flag
                            | Fact::Proven { .. }
                            | Fact::FromBase { .. }
                            | Fact::FenceBase
                    )
                )
            {
                return Err(unproven());
            }
            // The fence's base plus at most `max`, or the base itself: inside for a fence at
            // least `max + K + width` long (at most `MAX_REACH`), which the report asks for.
            let near = match fact {
                Some(Fact::FromBase { max, align }) => Some((*max, *align)),
                Some(Fact::FenceBase) => Some((0, u64::from(WINDOW_ALIGN))),
                _ => None,
            };
            if let Some((max, align)) = near
                && matches!(space.map(win_of), Some(Some(Win::Global)) | None)
            {
                let need = u64::try_from(address.offset)
                    .ok()
                    .filter(|k| k.checked_rem(width) == Some(0) && width <= align)
                    .and_then(|k| max.checked_add(k)?.checked_add(width))
                    .filter(|&need| need <= MAX_REACH)
                    .ok_or_else(unproven)?;
                report.fence_min_len = report.fence_min_len.max(need);
                report.clamped = report.clamped.saturating_add(1);
                continue;
            }
            let ok = match space {
                Some(space) => match (win_of(space), fact) {
                    (Some(want), Some(Fact::Inside { win, reach, align })) => {
                        want == *win && within(*reach, *align)
                    }
                    (Some(Win::Global), Some(Fact::Proven { reach, align })) => within(*reach, *align),
                    // One byte of the flag, set to 1: the flag's 4 bytes hold 3 reasons.
                    (Some(Win::Global), Some(Fact::Flag)) => {
                        let value = i.operands.get(1).map(|o| &o.kind);
                        op == "st"
                            && m == ["global", "u8"]
                            && (0..=2).contains(&address.offset)
                            && matches!(value, Some(OperandKind::Immediate(Immediate::Int(1))))
                    }
                    _ => false,
                },
                None => match fact {
                    Some(Fact::Inside { win: Win::Global, reach, align }) => within(*reach, *align),
                    Some(Fact::Generic { width: w, windows }) => {
                        *w >= width && (local_ok || !windows.contains(&Win::Local))
                    }
                    _ => false,
                },
            };
            if !ok {
                return Err(unproven());
            }
            match fact {
                Some(Fact::Flag) => {}
                Some(Fact::Proven { .. }) => report.proven = report.proven.saturating_add(1),
                _ => report.clamped = report.clamped.saturating_add(1),
            }
        }
        Ok(())
    }
}

/// A low's window and variables (an address counts as a low of its own variable).
fn low(fact: &Fact) -> Option<(Win, BTreeSet<String>)> {
    match fact {
        Fact::Address { win, var, .. } => Some((*win, BTreeSet::from([var.clone()]))),
        Fact::Low { win, vars } => Some((*win, vars.clone())),
        _ => None,
    }
}

/// An offset's window, reach, alignment and base (a below is an offset aligned to one byte).
fn offset(fact: Option<&Fact>) -> Option<(Win, u64, u64, Option<String>)> {
    match fact? {
        Fact::Offset { win, reach, align, base } => Some((*win, *reach, *align, base.clone())),
        Fact::Below { win, reach, base } => Some((*win, *reach, 1, base.clone())),
        _ => None,
    }
}

/// A generic address's width and windows (an address inside the global window is one).
fn generic(fact: Option<Fact>) -> Option<(u64, BTreeSet<Win>)> {
    match fact? {
        Fact::Generic { width, windows } => Some((width, windows)),
        Fact::Inside { win: Win::Global, reach, align } if reach == align => {
            Some((reach, BTreeSet::from([Win::Global])))
        }
        _ => None,
    }
}

/// The state space (`None`: generic) and width of `ld`, `ldu`, `st`, `atom` or `red` by their
/// modifiers, or `None` for a modifier the checker does not know.
fn memory_modifiers(op: &str, m: &[&str]) -> Option<(Option<StateSpace>, u64)> {
    let mut space = None;
    let (mut lanes, mut element, mut operation): (u64, Option<u64>, bool) = (1, None, false);
    for x in m {
        match *x {
            "global" | "shared" | "shared::cta" | "local" | "const" | "param" if space.is_none() => {
                space = Some(match *x {
                    "global" => StateSpace::Global,
                    "local" => StateSpace::Local,
                    "const" => StateSpace::Const,
                    "param" => StateSpace::Param,
                    _ => StateSpace::Shared,
                })
            }
            "v2" if lanes == 1 => lanes = 2,
            "v4" if lanes == 1 => lanes = 4,
            "weak"
            | "volatile"
            | "relaxed"
            | "acquire"
            | "release"
            | "acq_rel"
            | "cta"
            | "gpu"
            | "sys"
            | "cluster"
            | "ca"
            | "cg"
            | "cs"
            | "lu"
            | "cv"
            | "wb"
            | "wt"
            | "nc"
            | "noftz"
            | "L1::evict_normal"
            | "L1::evict_unchanged"
            | "L1::evict_first"
            | "L1::evict_last"
            | "L1::no_allocate"
            | "L2::evict_normal"
            | "L2::evict_first"
            | "L2::evict_last"
            | "L2::64B"
            | "L2::128B"
            | "L2::256B" => {}
            "and" | "or" | "xor" | "cas" | "exch" | "add" | "inc" | "dec" | "min" | "max"
                if matches!(op, "atom" | "red") && !operation =>
            {
                operation = true
            }
            t if element.is_none() => {
                element = Some(match t {
                    "b8" | "u8" | "s8" => 1,
                    "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
                    "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
                    "b64" | "u64" | "s64" | "f64" => 8,
                    "b128" => 16,
                    _ => return None,
                })
            }
            _ => return None,
        }
    }
    let width = element?.checked_mul(lanes)?;
    if width > 16 || (matches!(op, "atom" | "red") && !operation) {
        return None;
    }
    let allowed = matches!(
        (op, space),
        ("ld", _)
            | ("ldu", None | Some(StateSpace::Global))
            | ("st", None | Some(StateSpace::Global | StateSpace::Shared | StateSpace::Local))
            | ("atom" | "red", None | Some(StateSpace::Global | StateSpace::Shared))
    );
    allowed.then_some((space, width))
}

/// Instructions that touch no memory and stop nothing (the checker's own list).
const NO_MEMORY: &[&str] = &[
    "add",
    "sub",
    "mul",
    "mad",
    "mul24",
    "mad24",
    "sad",
    "div",
    "rem",
    "abs",
    "neg",
    "min",
    "max",
    "popc",
    "clz",
    "bfind",
    "fns",
    "brev",
    "bfe",
    "bfi",
    "szext",
    "bmsk",
    "dp4a",
    "dp2a",
    "prmt",
    "lop3",
    "shf",
    "shl",
    "shr",
    "and",
    "or",
    "xor",
    "not",
    "cnot",
    "copysign",
    "testp",
    "fma",
    "rcp",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "lg2",
    "ex2",
    "tanh",
    "setp",
    "set",
    "selp",
    "slct",
    "mov",
    "cvt",
    "cvta",
    "isspacep",
    "activemask",
    "membar",
    "fence",
    "nanosleep",
    "mma",
    "addc",
    "subc",
    "madc",
    "movmatrix",
];
