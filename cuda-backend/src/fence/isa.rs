//! The rewriter's allowlist: every instruction the fence accepts, with what it does to memory.
//!
//! An instruction is accepted only if its opcode is named here and every modifier it carries is
//! one this table knows for that opcode; anything else is refused by name ([`FenceRefusal`]).
//! For each accepted instruction the table says which operands are addresses, the state space
//! each reaches (the space a modifier names, or generic addressing where none is written, as
//! the PTX ISA defines the default), and the width of the access in bytes.
//!
//! The checker (`check.rs`) has a table of its own, written apart from this one: a mistake here
//! that lets an access through unclamped is a finding there.

use kernel_args_ptx::{Immediate, Instruction, OperandKind};

use super::FenceRefusal;

/// A state space an address reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Space {
    /// `.global`: the fence.
    Global,
    /// `.shared`: the block's shared window.
    Shared,
    /// `.local`: the thread's local window.
    Local,
    /// `.const`: the module's constant window.
    Const,
    /// `.param`: the entry's own parameters, by name and offset only.
    Param,
    /// No space written: a generic address. `local` says whether it may reach local memory (an
    /// atomic's may not).
    Generic { local: bool },
}

/// One address operand of an accepted instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Access {
    /// The operand's index.
    pub(super) operand: usize,
    /// The state space it reaches.
    pub(super) space: Space,
    /// Bytes accessed from the address.
    pub(super) width: u64,
}

/// What the fence does with an accepted instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Class {
    /// It touches no memory: kept as it is.
    Plain,
    /// `bra`: kept (its target is a label of the entry).
    Branch,
    /// `ret` or `exit`: through the fence's exit (kept as it is where the thread has nothing to
    /// report yet).
    Exit,
    /// `trap` or `brkpt`, which stop the device with an error: rewritten to set the flag and
    /// leave through the fence's exit.
    Trap,
    /// A memory access: each address operand clamped into its window.
    Access(Vec<Access>),
    /// A warp-synchronous instruction whose member mask (this operand) must include the
    /// executing thread.
    WarpSync(usize),
    /// `wmma.load` or `wmma.store` of the global space: a whole fragment, clamped with its
    /// stride into the fence.
    Fragment(Fragment),
}

/// A `wmma.load` or `wmma.store` fragment's reach in memory: `lines` lines (rows, or columns
/// for `.col`) of `line_bytes` each, one `stride` elements of `element` bytes from the next.
/// From an address `p`, it reaches `[p, p + line_bytes + stride * span)`, where `span` is
/// `(lines - 1) * element`. A GPU needs `p` aligned to 32 bytes and the stride to a multiple of
/// 16 bytes (`stride_align` elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fragment {
    /// The state space its address reaches: global, shared, or generic (no space written:
    /// the fence, or the shared window where `isspacep.shared` says the address is there).
    pub(super) space: Space,
    /// The address operand's index.
    pub(super) operand: usize,
    /// The stride operand's index, where it is written (without one the stride is the line's
    /// length in elements).
    pub(super) stride: Option<usize>,
    /// The stride where none is written: the line's length in elements.
    pub(super) line_elements: u64,
    /// Bytes of one line.
    pub(super) line_bytes: u64,
    /// `(lines - 1) * element`: the bytes one element of stride moves the last line.
    pub(super) span: u64,
    /// The stride's alignment in elements: 16 bytes' worth.
    pub(super) stride_align: u64,
}

/// The alignment a fragment's address needs.
pub(super) const FRAGMENT_ALIGN: u64 = super::FRAGMENT_BASE_ALIGN;

/// `wmma.load.{a,b,c}` / `wmma.store.d` `.sync.aligned.{row,col}.shape{.ss}.type`: its
/// fragment, or the refusal. Accepted: the three shapes of 16-element `k` (`m16n16k16`,
/// `m32n8k16`, `m8n32k16`) with `.f16`, `.bf16`, `.s8` or `.u8` A and B and `.f16`, `.f32` or
/// `.s32` C and D, in the global or shared space or through a generic address.
fn fragment(modifiers: &[&str], operands: usize) -> Result<Class, FenceRefusal> {
    let refused = Err(FenceRefusal::MatrixMemory);
    let (space, parts) = match modifiers {
        [v, w, "sync", "aligned", l, shape, "global", ty] => (Space::Global, [*v, *w, *l, *shape, *ty]),
        [v, w, "sync", "aligned", l, shape, "shared" | "shared::cta", ty] => {
            (Space::Shared, [*v, *w, *l, *shape, *ty])
        }
        [v, w, "sync", "aligned", l, shape, ty] => {
            (Space::Generic { local: false }, [*v, *w, *l, *shape, *ty])
        }
        _ => return refused,
    };
    let [verb @ ("load" | "store"), which, layout @ ("row" | "col"), shape, ty] = parts else {
        return refused;
    };
    let store = verb == "store";
    let (m, n, k) = match shape {
        "m16n16k16" => (16, 16, 16),
        "m32n8k16" => (32, 8, 16),
        "m8n32k16" => (8, 32, 16),
        _ => return refused,
    };
    let (rows, cols, element) = match (which, store, ty) {
        ("a", false, "f16" | "bf16") => (m, k, 2),
        ("a", false, "s8" | "u8") => (m, k, 1),
        ("b", false, "f16" | "bf16") => (k, n, 2),
        ("b", false, "s8" | "u8") => (k, n, 1),
        ("c", false, _) | ("d", true, _) => match ty {
            "f16" => (m, n, 2),
            "f32" | "s32" => (m, n, 4),
            _ => return refused,
        },
        _ => return refused,
    };
    let (lines, line_elements) = if layout == "row" { (rows, cols) } else { (cols, rows) };
    let (operand, stride) = match (store, operands) {
        (false, 2) => (1, None),
        (false, 3) => (1, Some(2)),
        (true, 2) => (0, None),
        (true, 3) => (0, Some(2)),
        _ => return Err(FenceRefusal::NotAllowed),
    };
    Ok(Class::Fragment(Fragment {
        space,
        operand,
        stride,
        line_elements,
        line_bytes: line_elements.saturating_mul(element),
        span: lines.saturating_sub(1).saturating_mul(element),
        stride_align: 16u64.checked_div(element).unwrap_or(16),
    }))
}

/// `wmma.mma.sync.aligned.{row,col}.{row,col}.shape.dtype.ctype` (and the integer and `bf16`
/// forms' type lists, `.satfinite`): registers only.
fn matrix_product(m: &[&str]) -> Result<Class, FenceRefusal> {
    let [
        _,
        "sync",
        "aligned",
        "row" | "col",
        "row" | "col",
        "m16n16k16" | "m32n8k16" | "m8n32k16",
        types @ ..,
    ] = m
    else {
        return Err(FenceRefusal::MatrixMemory);
    };
    let known = |t: &&str| matches!(*t, "f16" | "f32" | "bf16" | "s8" | "u8" | "s32" | "satfinite");
    if types.len() >= 2 && types.iter().all(known) { Ok(Class::Plain) } else { Err(FenceRefusal::NotAllowed) }
}

/// Instructions that touch no memory and stop nothing, whatever their modifiers say.
const PLAIN: &[&str] = &[
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

/// The integer and float types of memory instructions, by their width.
fn type_width(modifier: &str) -> Option<u64> {
    Some(match modifier {
        "b8" | "u8" | "s8" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        "b128" => 16,
        _ => return None,
    })
}

/// Modifiers of `ld`, `st`, `atom` and `red` that change no address and no width: memory
/// ordering, scope, cache and eviction hints.
pub(super) fn ordering_or_hint(modifier: &str) -> bool {
    matches!(
        modifier,
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
            | "L2::256B"
    )
}

const ATOMIC_OPS: &[&str] = &["and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max"];

/// Whether `operand` is the immediate -1 as a 32-bit mask (`-1` or `0xffffffff`).
pub(super) fn full_mask(kind: &OperandKind) -> bool {
    matches!(kind, OperandKind::Immediate(Immediate::Int(-1 | 0xffff_ffff)))
}

/// Whether `instruction` may wait for other threads: a CTA barrier (`bar`, `barrier`, any of
/// their forms) or a warp-synchronous one (`.sync` or `.aligned`: `shfl.sync`, `vote.sync`,
/// `bar.warp.sync`, `mma.sync.aligned`, ...). A thread in a loop without one never waits for
/// a thread that left the loop (the budget's leaving form, `rewrite.rs`).
pub(super) fn waits(instruction: &Instruction) -> bool {
    matches!(instruction.opcode.as_str(), "bar" | "barrier")
        || instruction.modifiers.iter().any(|m| m == "sync" || m == "aligned")
}

/// Whether `instruction` waits for other threads of its warp: one of [`waits`] but for the CTA
/// barriers (`bar.warp.sync` is one).
pub(super) fn waits_for_warp(instruction: &Instruction) -> bool {
    let cta_barrier = matches!(instruction.opcode.as_str(), "bar" | "barrier")
        && !instruction.modifiers.iter().any(|m| m == "warp");
    waits(instruction) && !cta_barrier
}

/// What `instruction` is to the fence, or why it is refused.
pub(super) fn classify(instruction: &Instruction) -> Result<Class, FenceRefusal> {
    let op = instruction.opcode.as_str();
    let m: Vec<&str> = instruction.modifiers.iter().map(String::as_str).collect();
    let operands = instruction.operands.len();
    match op {
        _ if PLAIN.contains(&op) => Ok(Class::Plain),
        "bra" if m.iter().all(|x| *x == "uni") => Ok(Class::Branch),
        "brx" => Err(FenceRefusal::IndirectBranch),
        "ret" | "exit" if m.iter().all(|x| *x == "uni") => Ok(Class::Exit),
        "trap" | "brkpt" if m.is_empty() => Ok(Class::Trap),
        "call" => Err(FenceRefusal::Call),
        "bar" | "barrier" => barrier(&m, instruction),
        "shfl" | "vote" | "match" | "redux" | "elect" if m.contains(&"sync") => {
            match operands.checked_sub(1) {
                Some(mask) => Ok(Class::WarpSync(mask)),
                None => Err(FenceRefusal::NotAllowed),
            }
        }
        "shfl" | "vote" => Ok(Class::Plain),
        "ld" | "ldu" | "st" | "atom" | "red" => memory(op, &m, operands),
        "prefetch" | "prefetchu" => prefetch(op, &m, operands),
        "cp" => copy(&m, instruction),
        "tex" | "tld4" | "txq" | "suld" | "sust" | "sured" | "suq" | "istypep" => {
            Err(FenceRefusal::TextureOrSurface)
        }
        "wmma" if m.first() == Some(&"mma") => matrix_product(&m),
        "wmma" => fragment(&m, operands),
        "ldmatrix" | "stmatrix" | "wgmma" | "tcgen05" => Err(FenceRefusal::MatrixMemory),
        "mbarrier" | "multimem" | "tensormap" | "cp.async.bulk" | "discard" | "applypriority"
        | "createpolicy" => Err(FenceRefusal::BulkCopy),
        _ => Err(FenceRefusal::NotAllowed),
    }
}

/// `bar`/`barrier`: `sync`, `arrive` and `red` on a constant barrier (0-15) with a constant
/// thread count, and `bar.warp.sync` with its member mask.
fn barrier(m: &[&str], instruction: &Instruction) -> Result<Class, FenceRefusal> {
    if m.first() == Some(&"warp") {
        return if m == ["warp", "sync"] && instruction.operands.len() == 1 {
            Ok(Class::WarpSync(0))
        } else {
            Err(FenceRefusal::NotAllowed)
        };
    }
    let known = |x: &&str| {
        matches!(*x, "sync" | "arrive" | "red" | "aligned" | "popc" | "and" | "or" | "u32" | "pred" | "cta")
    };
    if !m.iter().all(known) {
        return Err(FenceRefusal::NotAllowed);
    }
    // The barrier number (operand 0; for `bar.red`, 1) and the thread count where written
    // (the next operand; `bar.red`'s last operand is its predicate): numbers.
    let red = m.contains(&"red");
    let number = usize::from(red);
    let has_count = instruction.operands.len() == if red { 4 } else { 2 };
    let int = |i: usize| match instruction.operands.get(i).map(|o| &o.kind) {
        Some(OperandKind::Immediate(Immediate::Int(v))) => Some(*v),
        _ => None,
    };
    let number_ok = int(number).is_some_and(|v| (0..=15).contains(&v));
    let count_ok =
        !has_count || int(number.saturating_add(1)).is_some_and(|v| v > 0 && v % 32 == 0 && v <= 1024);
    if number_ok && count_ok { Ok(Class::Plain) } else { Err(FenceRefusal::Barrier) }
}

/// `ld`, `ldu`, `st`, `atom`, `red`.
fn memory(op: &str, m: &[&str], operands: usize) -> Result<Class, FenceRefusal> {
    let mut space = None;
    let mut lanes = 1u64;
    let mut element = None;
    let mut atomic_op = false;
    for modifier in m {
        match *modifier {
            "global" | "shared" | "shared::cta" | "local" | "const" | "param" if space.is_none() => {
                space = Some(match *modifier {
                    "global" => Space::Global,
                    "local" => Space::Local,
                    "const" => Space::Const,
                    "param" => Space::Param,
                    _ => Space::Shared,
                });
            }
            "v2" | "v4" | "v8" if lanes == 1 => {
                lanes = if *modifier == "v2" {
                    2
                } else if *modifier == "v4" {
                    4
                } else {
                    8
                }
            }
            x if ordering_or_hint(x) => {}
            x if matches!(op, "atom" | "red") && ATOMIC_OPS.contains(&x) && !atomic_op => atomic_op = true,
            x if type_width(x).is_some() && element.is_none() => element = type_width(x),
            "shared::cluster" | "L2::cache_hint" | "unified" | "mmio" | "param::entry" | "param::func" => {
                return Err(FenceRefusal::NotAllowed);
            }
            _ => return Err(FenceRefusal::NotAllowed),
        }
    }
    let element = element.ok_or(FenceRefusal::NotAllowed)?;
    let width = element.checked_mul(lanes).ok_or(FenceRefusal::NotAllowed)?;
    if width > 16 {
        return Err(FenceRefusal::TooWide);
    }
    let atomic = matches!(op, "atom" | "red");
    if atomic && !atomic_op {
        return Err(FenceRefusal::NotAllowed);
    }
    let space = match (op, space) {
        ("ldu", None | Some(Space::Global)) => space.unwrap_or(Space::Generic { local: true }),
        ("ldu", _) => return Err(FenceRefusal::NotAllowed),
        ("st", Some(Space::Param | Space::Const)) => return Err(FenceRefusal::NotAllowed),
        ("atom" | "red", Some(Space::Global | Space::Shared)) => space.unwrap_or(Space::Global),
        ("atom" | "red", None) => Space::Generic { local: false },
        ("atom" | "red", _) => return Err(FenceRefusal::NotAllowed),
        (_, Some(space)) => space,
        (_, None) => Space::Generic { local: true },
    };
    let (operand, want) = match op {
        "ld" | "ldu" => (1, 2),
        "st" => (0, 2),
        "red" => (0, 2),
        // atom d, [a], b (, c for cas)
        _ => (1, if m.contains(&"cas") { 4 } else { 3 }),
    };
    if operands != want {
        return Err(FenceRefusal::NotAllowed);
    }
    Ok(Class::Access(vec![Access { operand, space, width }]))
}

/// `prefetch{.global,.local}.{L1,L2,L2::evict_*}` and `prefetchu.L1`: one byte at the address.
fn prefetch(op: &str, m: &[&str], operands: usize) -> Result<Class, FenceRefusal> {
    let mut space = Space::Generic { local: true };
    let mut level = false;
    for modifier in m {
        match *modifier {
            "global" if op == "prefetch" => space = Space::Global,
            "local" if op == "prefetch" => space = Space::Local,
            "L1" | "L2" | "L2::evict_last" | "L2::evict_normal" if !level => level = true,
            _ => return Err(FenceRefusal::NotAllowed),
        }
    }
    if !level || operands != 1 {
        return Err(FenceRefusal::NotAllowed);
    }
    Ok(Class::Access(vec![Access { operand: 0, space, width: 1 }]))
}

/// `cp.async.{ca,cg}.shared{::cta}.global [dst], [src], size{, src_size}`, and its group
/// commits and waits; bulk and tensor copies are refused.
fn copy(m: &[&str], instruction: &Instruction) -> Result<Class, FenceRefusal> {
    if m.first() != Some(&"async") {
        return Err(FenceRefusal::NotAllowed);
    }
    match m.get(1..).unwrap_or_default() {
        ["commit_group"] | ["wait_group"] | ["wait_all"] => return Ok(Class::Plain),
        rest if rest.iter().any(|x| x.starts_with("bulk") || x.starts_with("mbarrier")) => {
            return Err(FenceRefusal::BulkCopy);
        }
        ["ca" | "cg", "shared" | "shared::cta", "global"] => {}
        ["ca" | "cg", "shared" | "shared::cta", "global", "L2::64B" | "L2::128B" | "L2::256B"] => {}
        _ => return Err(FenceRefusal::NotAllowed),
    }
    let size = match instruction.operands.get(2).map(|o| &o.kind) {
        Some(OperandKind::Immediate(Immediate::Int(size @ (4 | 8 | 16)))) => {
            u64::try_from(*size).unwrap_or(16)
        }
        _ => return Err(FenceRefusal::NotAllowed),
    };
    // An optional source size: a number no larger than the copy (a register could say more).
    match instruction.operands.get(3).map(|o| &o.kind) {
        None => {}
        Some(OperandKind::Immediate(Immediate::Int(n))) if (0..=i128::from(size)).contains(n) => {}
        Some(_) => return Err(FenceRefusal::NotAllowed),
    }
    if instruction.operands.len() > 4 {
        return Err(FenceRefusal::NotAllowed);
    }
    Ok(Class::Access(vec![
        Access { operand: 0, space: Space::Shared, width: size },
        Access { operand: 1, space: Space::Global, width: size },
    ]))
}
