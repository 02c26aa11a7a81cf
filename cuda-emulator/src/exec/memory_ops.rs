//! Loads, stores and atomics: `ld` and `st` in the parameter and constant (loads only), global,
//! shared and local state spaces and generic addresses (in the shared or local window, or
//! global), scalar and `.v2`/`.v4` vectors; `atom` and `red` (`.add`, `.min`, `.max`, `.exch`,
//! `.cas`, `.and`, `.or`, `.xor`) on 32- and 64-bit integers and `.add` on `.f32` and `.f64`, in
//! global and shared memory and through generic addresses (a generic atomic in the local
//! window faults, as PTX leaves it undefined); `cp.async` from global to shared memory, which
//! completes when it is issued (so `cp.async.commit_group`, `.wait_group` and `.wait_all`
//! have nothing left to wait for: PTX lets a copy complete at any time before the wait).
//!
//! A global access goes through [`KernelMemory`](crate::memory::KernelMemory): it must be
//! naturally aligned (a vector to its whole size) and inside memory the kernel may reach, or
//! the kernel faults; a store names the pointer parameter its address came from. A global
//! atomic is a real atomic instruction on the host, so kernels of different streams running at
//! once update the same word without losing an update. A shared access outside the block's
//! shared memory faults as an illegal address. `.volatile`, `.relaxed`, `.acquire`,
//! `.release`, scopes (`.cta`, `.gpu`, `.sys`), cache operators (`.ca`, `.cg`, `.cs`, `.lu`,
//! `.cv`, `.wb`, `.wt`) and `.nc` are read and need nothing more here: every access is
//! sequentially consistent.

use kernel_args_ptx::Operand as Src;

use super::error::{DecodeError, Needed};
use super::operands::{Names, address, in_frame, lanes as vector_lanes, operand, register, ty};
use super::{AddrBase, Context, Operand, Registers, Space, Ty, read};
use crate::memory::Fault;

/// An atomic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomKind {
    /// `.add`.
    Add,
    /// `.min`.
    Min,
    /// `.max`.
    Max,
    /// `.exch`.
    Exch,
    /// `.cas`.
    Cas,
    /// `.and`.
    And,
    /// `.or`.
    Or,
    /// `.xor`.
    Xor,
}

/// One decoded instruction of this family.
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryOp {
    /// `ld.space.ty d, [a]`, `ld.space.vN.ty {d, ...}, [a]`.
    Ld {
        /// The state space.
        space: Space,
        /// Each element's type.
        ty: Ty,
        /// The destination registers (one, two or four).
        dst: Vec<usize>,
        /// The address.
        addr: (AddrBase, i64),
    },
    /// `st.space.ty [a], s`, `st.space.vN.ty [a], {s, ...}`.
    St {
        /// The state space.
        space: Space,
        /// Each element's type.
        ty: Ty,
        /// The address.
        addr: (AddrBase, i64),
        /// The values (one, two or four).
        src: Vec<Operand>,
    },
    /// `cp.async.ca|cg.shared.global [d], [s], size[, src_size]`: `size` bytes (4, 8 or 16, each
    /// address aligned to it) copied from global memory to shared memory, those from
    /// `src_size` on (where given) zeros.
    CopyAsync {
        /// The shared destination.
        dst: (AddrBase, i64),
        /// The global source.
        src: (AddrBase, i64),
        /// The bytes written.
        size: usize,
        /// The bytes read (at most `size`; the rest are zeros).
        src_size: Option<Operand>,
    },
    /// `cp.async.commit_group`, `cp.async.wait_group N`, `cp.async.wait_all`: nothing (every
    /// copy has completed).
    CopyAsyncGroup,
    /// `atom.space.op.ty d, [a], b[, c]` and `red.space.op.ty [a], b`.
    Atom {
        /// The state space.
        space: Space,
        /// The operation.
        kind: AtomKind,
        /// The type.
        ty: Ty,
        /// The register that receives the old value (`atom`; none for `red`).
        dst: Option<usize>,
        /// The address.
        addr: (AddrBase, i64),
        /// The operand (`cas`: the value compared).
        b: Operand,
        /// `cas`: the new value.
        c: Option<Operand>,
    },
}

/// Decodes `ld`, `st`, `atom` or `red`.
pub fn decode(
    base: &str,
    modifiers: &[&str],
    operands: &[Src],
    names: &mut Names,
) -> Result<MemoryOp, DecodeError> {
    let form = || format!("{base}.{}", modifiers.join("."));
    let count = || DecodeError::OperandCount { opcode: base.to_owned(), count: operands.len() };
    let missing = |what| DecodeError::Missing { opcode: base.to_owned(), what };
    let mut space = Space::Generic;
    let mut ty_found = None;
    let mut lanes = 1usize;
    let mut kind = None;
    for m in modifiers {
        match *m {
            "param" => space = Space::Param,
            "global" => space = Space::Global,
            "shared" | "shared::cta" => space = Space::Shared,
            "local" => space = Space::Local,
            "const" => space = Space::Const,
            "v2" => lanes = 2,
            "v4" => lanes = 4,
            "volatile" | "relaxed" | "acquire" | "release" | "acq_rel" | "sc" | "cta" | "gpu" | "sys"
            | "ca" | "cg" | "cs" | "lu" | "cv" | "wb" | "wt" | "nc" => {}
            "add" => kind = Some(AtomKind::Add),
            "min" => kind = Some(AtomKind::Min),
            "max" => kind = Some(AtomKind::Max),
            "exch" => kind = Some(AtomKind::Exch),
            "cas" => kind = Some(AtomKind::Cas),
            "and" => kind = Some(AtomKind::And),
            "or" => kind = Some(AtomKind::Or),
            "xor" => kind = Some(AtomKind::Xor),
            m => match ty(m) {
                Some(t) if ty_found.is_none() => ty_found = Some(t),
                _ => return Err(DecodeError::Modifier { opcode: base.to_owned(), modifier: m.to_owned() }),
            },
        }
    }
    let ty = ty_found.ok_or_else(|| missing(Needed::Type))?;
    // A call's arguments and return values, and a `.func`'s parameters, are the thread's.
    let reached = match base {
        "ld" | "ldu" => operands.get(1),
        "st" => operands.first(),
        _ => None,
    };
    if space == Space::Param && reached.is_some_and(|a| in_frame(a, names)) {
        space = Space::Local;
    }
    fn lanes_of<'s>(base: &str, lanes: usize, src: &'s Src) -> Result<Vec<&'s Src>, DecodeError> {
        let items = vector_lanes(src);
        if items.len() == lanes {
            Ok(items)
        } else {
            Err(DecodeError::Lanes { opcode: base.to_owned(), lanes, operand: src.to_string() })
        }
    }
    match base {
        "ld" | "ldu" => {
            if operands.len() != 2 {
                return Err(count());
            }
            let dst = lanes_of(base, lanes, &operands[0])?
                .iter()
                .map(|r| register(r, names))
                .collect::<Result<Vec<_>, _>>()?;
            let addr = address(&operands[1], space, names)?;
            Ok(MemoryOp::Ld { space, ty, dst, addr })
        }
        "st" => {
            if operands.len() != 2 || matches!(space, Space::Param | Space::Const) {
                return Err(DecodeError::Form { instruction: form() });
            }
            let addr = address(&operands[0], space, names)?;
            let src = lanes_of(base, lanes, &operands[1])?
                .iter()
                .map(|s| operand(s, ty, names))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(MemoryOp::St { space, ty, addr, src })
        }
        _ => {
            let kind = kind.ok_or_else(|| missing(Needed::Operation))?;
            if matches!(space, Space::Param | Space::Const | Space::Local)
                || lanes != 1
                || !matches!(ty.bytes(), 4 | 8)
            {
                return Err(DecodeError::Form { instruction: form() });
            }
            if matches!(ty, Ty::F32 | Ty::F64) && kind != AtomKind::Add && kind != AtomKind::Exch {
                return Err(DecodeError::FloatAtomic { instruction: form() });
            }
            let (dst, rest) = if base == "atom" {
                let dst = register(operands.first().ok_or_else(|| missing(Needed::Operands))?, names)?;
                (Some(dst), &operands[1..])
            } else {
                (None, operands)
            };
            let want = if kind == AtomKind::Cas { 3 } else { 2 };
            if rest.len() != want {
                return Err(count());
            }
            let addr = address(&rest[0], space, names)?;
            let b = operand(&rest[1], ty, names)?;
            let c = if kind == AtomKind::Cas { Some(operand(&rest[2], ty, names)?) } else { None };
            Ok(MemoryOp::Atom { space, kind, ty, dst, addr, b, c })
        }
    }
}

/// Decodes `cp.async`: a copy from global to shared memory, or its group's commit or wait.
pub fn decode_copy(modifiers: &[&str], operands: &[Src], names: &mut Names) -> Result<MemoryOp, DecodeError> {
    let form = || DecodeError::Form { instruction: format!("cp.{}", modifiers.join(".")) };
    match modifiers {
        ["async", "commit_group" | "wait_all"] if operands.is_empty() => Ok(MemoryOp::CopyAsyncGroup),
        ["async", "wait_group"] if operands.len() == 1 => Ok(MemoryOp::CopyAsyncGroup),
        ["async", cache @ ("ca" | "cg"), "shared" | "shared::cta", "global", rest @ ..]
            if rest.iter().all(|m| matches!(*m, "L2::64B" | "L2::128B" | "L2::256B")) =>
        {
            let (dst, src, size, src_size) = match operands {
                [d, s, size] => (d, s, size, None),
                [d, s, size, src_size] => (d, s, size, Some(src_size)),
                _ => {
                    return Err(DecodeError::OperandCount { opcode: "cp".to_owned(), count: operands.len() });
                }
            };
            let size = match &size.kind {
                kernel_args_ptx::OperandKind::Immediate(kernel_args_ptx::Immediate::Int(v)) => *v,
                _ => return Err(form()),
            };
            // `.cg` copies 16 bytes only.
            let size = match (size, *cache) {
                (16, _) => 16,
                (4 | 8, "ca") => size as usize,
                _ => return Err(form()),
            };
            Ok(MemoryOp::CopyAsync {
                dst: address(dst, Space::Shared, names)?,
                src: address(src, Space::Global, names)?,
                size,
                src_size: src_size.map(|s| operand(s, Ty::U(32), names)).transpose()?,
            })
        }
        _ => Err(form()),
    }
}

/// The effective address and the pointer parameter it came from.
pub(super) fn effective(regs: &Registers, addr: (AddrBase, i64)) -> (u64, u64) {
    let (base, origin) = match addr.0 {
        AddrBase::Reg(slot) => (regs.bits[slot], regs.origin[slot]),
        AddrBase::Param(offset) => (offset as u64, 0),
        AddrBase::Symbol(offset) => (offset, 0),
        AddrBase::Imm(value) => (value, 0),
    };
    (base.wrapping_add(addr.1 as u64), origin)
}

/// `N` little-endian bytes of `bits`.
fn bytes_of<const N: usize>(bits: u64) -> [u8; N] {
    let all = bits.to_le_bytes();
    let mut out = [0u8; N];
    out.copy_from_slice(&all[..N]);
    out
}

fn bits_of(bytes: &[u8]) -> u64 {
    let mut all = [0u8; 8];
    all[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(all)
}

/// A generic address's space and address in it: the shared or local window, or global.
fn resolve(space: Space, at: u64) -> (Space, u64) {
    match (space, super::window_of(at)) {
        (Space::Generic, Some(window)) => window,
        (Space::Generic, None) => (Space::Global, at),
        _ => (space, at),
    }
}

/// Reads `len` bytes at `at` of `space`.
pub(super) fn load(cx: &Context<'_, '_>, space: Space, at: u64, len: usize) -> Result<u64, Fault> {
    let (space, at) = resolve(space, at);
    match space {
        Space::Const => {
            if !at.is_multiple_of(len as u64) {
                return Err(Fault::Misaligned);
            }
            let start = usize::try_from(at).map_err(|_| Fault::IllegalAddress)?;
            let bytes = cx.constant.get(start..start.saturating_add(len)).ok_or(Fault::IllegalAddress)?;
            Ok(bits_of(bytes))
        }
        Space::Param => {
            let start = usize::try_from(at).map_err(|_| Fault::IllegalAddress)?;
            let bytes = cx.params.get(start..start.saturating_add(len)).ok_or(Fault::IllegalAddress)?;
            Ok(bits_of(bytes))
        }
        Space::Shared | Space::Local => {
            if !at.is_multiple_of(len as u64) {
                return Err(Fault::Misaligned);
            }
            let start = usize::try_from(at).map_err(|_| Fault::IllegalAddress)?;
            let own: &[u8] = if space == Space::Shared { cx.shared } else { cx.local };
            let bytes = own.get(start..start.saturating_add(len)).ok_or(Fault::IllegalAddress)?;
            Ok(bits_of(bytes))
        }
        Space::Global | Space::Generic => Ok(match len {
            1 => bits_of(&cx.memory.load::<1>(at)?),
            2 => bits_of(&cx.memory.load::<2>(at)?),
            4 => bits_of(&cx.memory.load::<4>(at)?),
            _ => bits_of(&cx.memory.load::<8>(at)?),
        }),
    }
}

/// Writes the low `len` bytes of `bits` at `base + offset` of `space`.
pub(super) fn store(
    cx: &mut Context<'_, '_>,
    space: Space,
    base: u64,
    offset: u64,
    len: usize,
    bits: u64,
) -> Result<(), Fault> {
    let (space, at) = resolve(space, base.wrapping_add(offset));
    match space {
        Space::Param | Space::Const => Err(Fault::IllegalAddress),
        Space::Shared | Space::Local => {
            if !at.is_multiple_of(len as u64) {
                return Err(Fault::Misaligned);
            }
            let start = usize::try_from(at).map_err(|_| Fault::IllegalAddress)?;
            let own: &mut [u8] = if space == Space::Shared { cx.shared } else { cx.local };
            let target = own.get_mut(start..start.saturating_add(len)).ok_or(Fault::IllegalAddress)?;
            target.copy_from_slice(&bits.to_le_bytes()[..len]);
            Ok(())
        }
        Space::Global | Space::Generic => match len {
            1 => cx.memory.store(base, offset, bytes_of::<1>(bits)),
            2 => cx.memory.store(base, offset, bytes_of::<2>(bits)),
            4 => cx.memory.store(base, offset, bytes_of::<4>(bits)),
            _ => cx.memory.store(base, offset, bytes_of::<8>(bits)),
        },
    }
}

/// The new value of an atomic operation on `old` with operands `b` and (`cas`) `c`.
fn combine(kind: AtomKind, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    let signed = |v: u64| match ty.bits() {
        32 => i64::from(v as u32 as i32),
        _ => v as i64,
    };
    let value = match (kind, ty) {
        (AtomKind::Add, Ty::F32) => {
            u64::from((f32::from_bits(old as u32) + f32::from_bits(b as u32)).to_bits())
        }
        (AtomKind::Add, Ty::F64) => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
        (AtomKind::Add, _) => old.wrapping_add(b),
        (AtomKind::Min, Ty::S(_)) => signed(old).min(signed(b)) as u64,
        (AtomKind::Max, Ty::S(_)) => signed(old).max(signed(b)) as u64,
        (AtomKind::Min, _) => (old & ty.mask()).min(b & ty.mask()),
        (AtomKind::Max, _) => (old & ty.mask()).max(b & ty.mask()),
        (AtomKind::Exch, _) => b,
        (AtomKind::Cas, _) => {
            if old & ty.mask() == b & ty.mask() {
                c
            } else {
                old
            }
        }
        (AtomKind::And, _) => old & b,
        (AtomKind::Or, _) => old | b,
        (AtomKind::Xor, _) => old ^ b,
    };
    value & ty.mask()
}

/// Runs one instruction of this family.
///
/// # Errors
///
/// The [`Fault`] of a faulting access.
pub fn execute(op: &MemoryOp, regs: &mut Registers, cx: &mut Context<'_, '_>) -> Result<(), Fault> {
    match op {
        MemoryOp::Ld { space, ty, dst, addr } => {
            let (at, _) = effective(regs, *addr);
            let size = ty.bytes();
            if dst.len() > 1 && *space != Space::Param && at % (size * dst.len()) as u64 != 0 {
                return Err(Fault::Misaligned);
            }
            for (i, &reg) in dst.iter().enumerate() {
                let value = load(cx, *space, at.wrapping_add((i * size) as u64), size)?;
                // Sign-extended for a signed type, as its register holds it.
                regs.bits[reg] = ty.widen(value) as u64;
                // An 8-byte parameter is a pointer the kernel may dereference: its own origin.
                regs.origin[reg] = if *space == Space::Param && size == 8 { value } else { 0 };
            }
            Ok(())
        }
        MemoryOp::St { space, ty, addr, src } => {
            let (at, origin) = effective(regs, *addr);
            let size = ty.bytes();
            if src.len() > 1 && at % (size * src.len()) as u64 != 0 {
                return Err(Fault::Misaligned);
            }
            // The store's pointer: the parameter its address came from, else the address.
            let base = if origin != 0 { origin } else { at };
            for (i, &value) in src.iter().enumerate() {
                let bits = read(regs, cx, value).0;
                let offset = at.wrapping_add((i * size) as u64).wrapping_sub(base);
                store(cx, *space, base, offset, size, bits)?;
            }
            Ok(())
        }
        MemoryOp::CopyAsync { dst, src, size, src_size } => {
            let (to, _) = effective(regs, *dst);
            let (from, _) = effective(regs, *src);
            let len = *size as u64;
            if !to.is_multiple_of(len) || !from.is_multiple_of(len) {
                return Err(Fault::Misaligned);
            }
            let kept = src_size.map_or(len, |s| read(regs, cx, s).0 & 0xffff_ffff).min(len);
            let mut bytes = [0u8; 16];
            for (k, byte) in bytes.iter_mut().enumerate().take(kept as usize) {
                *byte = cx.memory.load::<1>(from.wrapping_add(k as u64))?[0];
            }
            for (w, word) in bytes.chunks_exact(4).take(*size / 4).enumerate() {
                store(cx, Space::Shared, to, (w * 4) as u64, 4, bits_of(word))?;
            }
            Ok(())
        }
        MemoryOp::CopyAsyncGroup => Ok(()),
        MemoryOp::Atom { space, kind, ty, dst, addr, b, c } => {
            let (at, origin) = effective(regs, *addr);
            let b = read(regs, cx, *b).0;
            let c = c.map_or(0, |c| read(regs, cx, c).0);
            let (space, at) = resolve(*space, at);
            let old = match space {
                Space::Local => return Err(Fault::IllegalAddress),
                Space::Shared => {
                    // The block's threads run one at a time: a read and a write are atomic.
                    let old = load(cx, space, at, ty.bytes())?;
                    store(cx, space, at, 0, ty.bytes(), combine(*kind, *ty, old, b, c))?;
                    old
                }
                _ => {
                    let base = if origin != 0 { origin } else { at };
                    let offset = at.wrapping_sub(base);
                    let update = |old: u64| combine(*kind, *ty, old, b, c);
                    if ty.bytes() == 4 {
                        cx.memory.atomic_u32(base, offset, |old| update(u64::from(old)) as u32)?.into()
                    } else {
                        cx.memory.atomic_u64(base, offset, update)?
                    }
                }
            };
            if let Some(dst) = dst {
                regs.bits[*dst] = old;
                regs.origin[*dst] = 0;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{run, words};
    use crate::memory::Fault;

    #[test]
    fn vectors_narrow_signed_loads_and_shared_memory() {
        let body = "\t.shared .align 16 .b8 tile[64];\n\
                    \tst.global.v2.u32 [%out], {7, 8};\n\
                    \tld.global.v2.u32 {%r1, %r2}, [%out];\n\
                    \tadd.s32 %r3, %r1, %r2;\n\
                    \tst.global.u32 [%out+8], %r3;\n\
                    \tst.global.u8 [%out+12], 0xff;\n\
                    \tld.global.s8 %r4, [%out+12];\n\
                    \tst.global.u32 [%out+16], %r4;\n\
                    \tmov.u32 %r5, tile;\n\
                    \tst.shared.v4.u32 [%r5], {1, 2, 3, 4};\n\
                    \tld.shared.u32 %r6, [tile+12];\n\
                    \tst.global.u32 [%out+20], %r6;";
        let (bytes, outcome) = run(body, 1, 24);
        assert_eq!(outcome.fault, None);
        let mut want = vec![7, 8, 15, 0xff, u32::MAX, 4];
        want[3] = 0xff;
        assert_eq!(words(&bytes), want);
    }

    /// `cp.async` copies from global to shared memory when it is issued; bytes past its source
    /// size are zeros; its addresses are aligned to its size, or it faults.
    #[test]
    fn async_copies_reach_shared_memory_with_zeros_past_their_source_size() {
        let body = "\t.shared .align 16 .b8 tile[32];\n\
                    \tst.global.v4.u32 [%out], {1, 2, 3, 4};\n\
                    \tst.global.u32 [%out+16], 0x04030201;\n\
                    \tmov.u32 %r1, tile;\n\
                    \tst.shared.v4.u32 [%r1+16], {9, 9, 9, 9};\n\
                    \tcp.async.cg.shared.global [%r1], [%out], 16;\n\
                    \tmov.u32 %r2, 2;\n\
                    \tcp.async.ca.shared.global [%r1+16], [%out+16], 8, %r2;\n\
                    \tcp.async.commit_group;\n\
                    \tcp.async.wait_group 0;\n\
                    \tcp.async.wait_all;\n\
                    \tld.shared.v4.u32 {%r3, %r4, %r5, %r6}, [%r1];\n\
                    \tld.shared.v4.u32 {%r7, %r8, %r9, %r10}, [%r1+16];\n\
                    \tst.global.v4.u32 [%out+32], {%r3, %r4, %r5, %r6};\n\
                    \tst.global.v4.u32 [%out+48], {%r7, %r8, %r9, %r10};";
        let (bytes, outcome) = run(body, 1, 64);
        assert_eq!(outcome.fault, None);
        // Two bytes of the second copy's source, six zeros, and the tile's own last 8 bytes.
        assert_eq!(words(&bytes[32..]), [1, 2, 3, 4, 0x0201, 0, 9, 9]);
        let misaligned = "\t.shared .align 16 .b8 tile[32];\n\tmov.u32 %r1, tile;\n\
                          \tcp.async.cg.shared.global [%r1+8], [%out], 16;";
        assert_eq!(run(misaligned, 1, 16).1.fault, Some(Fault::Misaligned));
        // `.cg` copies 16 bytes only.
        assert!(super::super::testing::program("\tcp.async.cg.shared.global [%r1], [%out], 8;").is_err());
    }

    #[test]
    fn atomics_return_the_old_value_and_every_thread_counts() {
        // 32 threads: each adds 1 to word 0, and takes part in exch and cas on words 1 and 2.
        let body = "\tatom.global.add.u32 %r1, [%out], 1;\n\
                    \tred.global.add.u32 [%out+4], 2;\n\
                    \tatom.global.cas.b32 %r2, [%out+8], 0, 9;\n\
                    \tatom.global.max.s32 %r3, [%out+12], -5;";
        let (bytes, _) = run(body, 32, 16);
        // 0 > -5: the max stays 0.
        assert_eq!(words(&bytes), [32, 64, 9, 0]);
    }

    #[test]
    fn misaligned_and_out_of_bounds_accesses_fault() {
        let (_, outcome) = run("\tst.global.u32 [%out+2], 1;", 1, 8);
        assert_eq!(outcome.fault, Some(Fault::Misaligned));
        let (_, outcome) = run("\tst.global.v2.u32 [%out+4], {1, 2};", 1, 16);
        assert_eq!(outcome.fault, Some(Fault::Misaligned), "a vector aligns to its whole size");
        let (_, outcome) = run("\t.shared .align 4 .b8 tile[8];\n\tld.shared.u32 %r1, [tile+8];", 1, 8);
        assert_eq!(outcome.fault, Some(Fault::IllegalAddress));
        let (_, outcome) = run("\tmov.u64 %rd1, 0;\n\tst.global.u32 [%rd1], 1;", 1, 8);
        assert_eq!(outcome.fault, Some(Fault::IllegalAddress));
    }

    #[test]
    fn generic_addresses_reach_shared_and_local_memory_through_their_windows() {
        let body = "\t.shared .align 16 .b8 tile[16];\n\t.local .align 16 .b8 depot[16];\n\
                    \tmov.u64 %rd1, tile;\n\tcvta.shared.u64 %rd2, %rd1;\n\tst.u32 [%rd2+4], 7;\n\
                    \tld.shared.u32 %r1, [tile+4];\n\tst.global.u32 [%out], %r1;\n\
                    \tmov.u64 %rd3, depot;\n\tcvta.local.u64 %rd4, %rd3;\n\tst.u32 [%rd4], 9;\n\
                    \tld.local.u32 %r2, [depot];\n\tst.global.u32 [%out+4], %r2;\n\
                    \tisspacep.shared %p1, %rd2;\n\tselp.u32 %r3, 1, 0, %p1;\n\tst.global.u32 [%out+8], %r3;\n\
                    \tisspacep.global %p2, %rd2;\n\tselp.u32 %r4, 1, 0, %p2;\n\tst.global.u32 [%out+12], %r4;\n\
                    \tisspacep.local %p3, %rd4;\n\tselp.u32 %r5, 1, 0, %p3;\n\tst.global.u32 [%out+16], %r5;\n\
                    \tcvta.to.shared.u64 %rd5, %rd2;\n\tsub.u64 %rd6, %rd5, %rd1;\n\tcvt.u32.u64 %r6, %rd6;\n\
                    \tst.global.u32 [%out+20], %r6;\n\tisspacep.global %p1, %out;\n\tselp.u32 %r7, 1, 0, %p1;\n\
                    \tst.global.u32 [%out+24], %r7;\n\tld.u32 %r8, [%rd2+4];\n\tst.global.u32 [%out+28], %r8;\n\
                    \tmov.u32 %r9, %dynamic_smem_size;\n\tst.global.u32 [%out+32], %r9;";
        let (bytes, outcome) = run(body, 1, 36);
        assert_eq!(outcome.fault, None);
        assert_eq!(words(&bytes), [7, 9, 1, 0, 1, 0, 1, 7, 0]);
    }

    #[test]
    fn shared_local_and_generic_accesses_fault_where_a_gpu_does() {
        for (body, fault) in [
            // Past the block's shared memory, through a generic address.
            (
                "\t.shared .align 16 .b8 tile[16];\n\tmov.u64 %rd1, tile;\n\tcvta.shared.u64 %rd1, %rd1;\n\tst.u32 [%rd1+16], 1;",
                Fault::IllegalAddress,
            ),
            // Misaligned in local memory, through a generic address.
            (
                "\t.local .align 16 .b8 depot[16];\n\tmov.u64 %rd1, depot;\n\tcvta.local.u64 %rd1, %rd1;\n\tst.u32 [%rd1+2], 1;",
                Fault::Misaligned,
            ),
            // A generic atomic in local memory.
            (
                "\t.local .align 16 .b8 depot[16];\n\tmov.u64 %rd1, depot;\n\tcvta.local.u64 %rd1, %rd1;\n\tatom.add.u32 %r1, [%rd1], 1;",
                Fault::IllegalAddress,
            ),
            // Past the thread's local memory.
            ("\t.local .align 16 .b8 depot[16];\n\tld.local.u32 %r1, [depot+16];", Fault::IllegalAddress),
            // A generic address in a window the block has no memory in.
            (
                "\tmov.u64 %rd1, 0;\n\tcvta.shared.u64 %rd1, %rd1;\n\tld.u32 %r1, [%rd1];",
                Fault::IllegalAddress,
            ),
            // A global access at a window's address is not host memory.
            (
                "\tmov.u64 %rd1, 0;\n\tcvta.local.u64 %rd1, %rd1;\n\tld.global.u32 %r1, [%rd1];",
                Fault::IllegalAddress,
            ),
            ("\ttrap;", Fault::Trap),
            ("\tbrkpt;", Fault::Trap),
        ] {
            let (_, outcome) = run(body, 1, 8);
            assert_eq!(outcome.fault, Some(fault), "{body}");
        }
    }

    #[test]
    fn constant_memory_holds_the_module_initializers() {
        let text = ".version 7.8\n.target sm_52\n.address_size 64\n\
            .const .align 4 .u32 table[3] = {5, 6, 7};\n.const .align 4 .f32 half = 0f3F000000;\n\
            .visible .entry t(.param .u64 p)\n{\n\t.reg .b64 %rd<4>;\n\t.reg .b32 %r<4>;\n\
            \tld.param.u64 %rd1, [p];\n\tmov.u64 %rd2, table;\n\tld.const.u32 %r1, [%rd2+8];\n\
            \tld.const.u32 %r2, [half];\n\tst.global.v2.u32 [%rd1], {%r1, %r2};\n\tret;\n}\n";
        let module = crate::ptx::read_ptx(text).unwrap();
        let program = super::super::compile(&module, &module.entries[0], &Default::default()).unwrap();
        assert_eq!(program.constant.len(), 16);
        assert_eq!(&program.constant[8..16], [7, 0, 0, 0, 0, 0, 0, 0x3f]);
    }
}
