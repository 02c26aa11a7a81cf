//! Warp-synchronous instructions: `shfl.sync`, `vote.sync`, `bar.warp.sync` and `wmma.mma`,
//! which the threads of a warp (32 consecutive threads of a block, x fastest) execute together,
//! as sm_70 and later define them.
//!
//! A kernel with one runs its blocks in turns, as a kernel with `bar.sync` does: each thread
//! runs until it reaches a warp-synchronous instruction (or a barrier, or its end) and waits
//! there. A waiting thread's member mask names the lanes it executes with: when every member
//! that has not ended waits at an instruction of the same kind and mode with the same mask,
//! they execute it together (members that have ended take no part; a shuffle from a lane that
//! is not taking part reads the reader's own value). A member mask without the executing
//! thread is undefined behaviour and stops the kernel as `trap` does
//! (`CUDA_ERROR_LAUNCH_FAILED`); members that can never gather (different instructions or
//! masks) would hang a GPU, and end the launch with `CUDA_ERROR_LAUNCH_TIMEOUT`, as a watchdog
//! ends one ([`Fault::Hang`](crate::memory::Fault::Hang)).

use kernel_args_ptx::{Operand as Src, OperandKind};

use super::error::{DecodeError, Role};
use super::operands::{Names, immediate_value, refused};
use super::{Operand, Registers, Ty};

/// `shfl.sync`'s modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShuffleMode {
    /// From the lane `b` below.
    Up,
    /// From the lane `b` above.
    Down,
    /// From the lane whose id is this lane's XOR `b`.
    Butterfly,
    /// From lane `b`.
    Index,
}

/// `vote.sync`'s modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteMode {
    /// True when the predicate is true in every member.
    All,
    /// True when it is true in any member.
    Any,
    /// True when it is the same in every member.
    Uni,
    /// The members' predicates as bits of a 32-bit value, by lane.
    Ballot,
}

/// A decoded warp-synchronous instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum WarpOp {
    /// `shfl.sync.mode.b32 d{|p}, a, b, c, membermask`.
    Shuffle {
        /// The mode.
        mode: ShuffleMode,
        /// `d`'s slot.
        dst: usize,
        /// `p`'s slot, where written: whether the source lane was in range.
        pred: Option<usize>,
        /// The value shared.
        a: Operand,
        /// The lane or offset.
        b: Operand,
        /// The clamp and segment mask.
        c: Operand,
        /// The member mask.
        mask: Operand,
    },
    /// `vote.sync.mode{.pred,.b32} d, {!}a, membermask`.
    Vote {
        /// The mode.
        mode: VoteMode,
        /// `d`'s slot.
        dst: usize,
        /// `a`'s slot (a predicate).
        a: usize,
        /// `!a`.
        negated: bool,
        /// The member mask.
        mask: Operand,
    },
    /// `wmma.mma`: every lane of the warp takes part (`.aligned`).
    Mma(super::matrix::MatrixMma),
    /// `bar.warp.sync membermask` (`__syncwarp`): the members wait for each other.
    Sync {
        /// The member mask.
        mask: Operand,
    },
}

/// A register or 32-bit immediate operand (a special register is not decoded here).
fn value(src: &Src, names: &mut Names) -> Result<Operand, DecodeError> {
    match &src.kind {
        // A special register is not one `names` resolves: refused there.
        OperandKind::Register(r) if r.component.is_none() => names.register(&r.name).map(Operand::Reg),
        OperandKind::Immediate(v) => {
            immediate_value(v, Ty::U(32)).map(Operand::Imm).ok_or_else(|| refused(src, Role::Value))
        }
        _ => Err(refused(src, Role::Warp)),
    }
}

/// Decodes `shfl` or `vote` with `.sync`.
///
/// # Errors
///
/// A form this interpreter does not run, named.
pub fn decode(
    base: &str,
    modifiers: &[&str],
    operands: &[Src],
    names: &mut Names,
) -> Result<WarpOp, DecodeError> {
    let unsupported = || DecodeError::Form { instruction: format!("{base}.{}", modifiers.join(".")) };
    match (base, modifiers, operands) {
        ("shfl", ["sync", mode, "b32"], [d, a, b, c, mask]) => {
            let mode = match *mode {
                "up" => ShuffleMode::Up,
                "down" => ShuffleMode::Down,
                "bfly" => ShuffleMode::Butterfly,
                "idx" => ShuffleMode::Index,
                _ => return Err(unsupported()),
            };
            let (dst, pred) = match &d.kind {
                OperandKind::Pair(d, p) if d.component.is_none() && p.component.is_none() => {
                    (names.register(&d.name)?, Some(names.register(&p.name)?))
                }
                OperandKind::Register(d) if d.component.is_none() => (names.register(&d.name)?, None),
                _ => return Err(refused(d, Role::RegisterWritten)),
            };
            Ok(WarpOp::Shuffle {
                mode,
                dst,
                pred,
                a: value(a, names)?,
                b: value(b, names)?,
                c: value(c, names)?,
                mask: value(mask, names)?,
            })
        }
        ("bar", ["warp", "sync"], [mask]) => Ok(WarpOp::Sync { mask: value(mask, names)? }),
        ("vote", ["sync", mode, ty], [d, a, mask]) => {
            let mode = match (*mode, *ty) {
                ("all", "pred") => VoteMode::All,
                ("any", "pred") => VoteMode::Any,
                ("uni", "pred") => VoteMode::Uni,
                ("ballot", "b32") => VoteMode::Ballot,
                _ => return Err(unsupported()),
            };
            let OperandKind::Register(d) = &d.kind else {
                return Err(refused(d, Role::RegisterWritten));
            };
            let (a, negated) = match &a.kind {
                OperandKind::Register(r) => (r, false),
                OperandKind::Not(r) => (r, true),
                _ => return Err(refused(a, Role::Vote)),
            };
            Ok(WarpOp::Vote {
                mode,
                dst: names.register(&d.name)?,
                a: names.register(&a.name)?,
                negated,
                mask: value(mask, names)?,
            })
        }
        _ => Err(unsupported()),
    }
}

/// An operand's 32 bits in `regs`.
fn read(regs: &Registers, operand: &Operand) -> u32 {
    match operand {
        Operand::Reg(slot) => regs.bits[*slot] as u32,
        Operand::Imm(bits) => *bits as u32,
        // Not decoded (see `value`).
        Operand::Special(_) | Operand::Symbol(_) => 0,
    }
}

/// The member mask of `op` as `regs` holds it.
pub fn member_mask(op: &WarpOp, regs: &Registers) -> u32 {
    match op {
        WarpOp::Shuffle { mask, .. } | WarpOp::Vote { mask, .. } | WarpOp::Sync { mask } => read(regs, mask),
        WarpOp::Mma(_) => u32::MAX,
    }
}

/// Whether two threads waiting at `a` and `b` execute them together: the same kind and mode.
pub fn same_kind(a: &WarpOp, b: &WarpOp) -> bool {
    match (a, b) {
        (WarpOp::Shuffle { mode: x, .. }, WarpOp::Shuffle { mode: y, .. }) => x == y,
        (WarpOp::Vote { mode: x, .. }, WarpOp::Vote { mode: y, .. }) => x == y,
        (WarpOp::Mma(x), WarpOp::Mma(y)) => x.same_form(y),
        (WarpOp::Sync { .. }, WarpOp::Sync { .. }) => true,
        _ => false,
    }
}

/// What one lane's execution writes: the value, the predicate's slot and bit where there is
/// one, the destination's slot.
type LaneResult = (u64, Option<(usize, u64)>, usize);

/// Executes `ops[l]` for each lane `l` of a warp with `Some` registers in `lanes` (the members
/// that gathered, each at its own instruction of one kind and mode).
pub fn execute(ops: &[Option<&WarpOp>], lanes: &mut [Option<&mut Registers>]) {
    // The lanes gathered at one form: the product is the warp's, computed once.
    if let Some(WarpOp::Mma(mma)) = ops.iter().flatten().next() {
        mma.execute(lanes);
        return;
    }
    let members: u32 = lanes
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_some())
        .fold(0, |bits, (lane, _)| bits | (1u32 << lane));
    let mut results: Vec<Option<LaneResult>> = Vec::with_capacity(lanes.len());
    for (lane, (regs, op)) in lanes.iter().zip(ops).enumerate() {
        let (Some(regs), Some(op)) = (regs, op) else {
            results.push(None);
            continue;
        };
        let lane = lane as u32;
        match op {
            WarpOp::Shuffle { mode, dst, pred, a, b, c, .. } => {
                let (b, c) = (read(regs, b) & 0x1f, read(regs, c));
                let segment = (c >> 8) & 0x1f;
                let clamp = c & 0x1f;
                let max_lane = (lane & segment) | (clamp & !segment);
                let min_lane = lane & segment;
                let (j, in_range) = match mode {
                    ShuffleMode::Up => (lane.wrapping_sub(b), lane >= b && lane - b >= max_lane),
                    ShuffleMode::Down => (lane + b, lane + b <= max_lane),
                    ShuffleMode::Butterfly => (lane ^ b, (lane ^ b) <= max_lane),
                    ShuffleMode::Index => {
                        let j = min_lane | (b & !segment);
                        (j, j <= max_lane)
                    }
                };
                // A source that takes no part gives an undefined value: here the reader's own.
                let source =
                    if in_range && members & (1u32.checked_shl(j).unwrap_or(0)) != 0 { j } else { lane };
                let value =
                    lanes.get(source as usize).and_then(|r| r.as_ref()).map_or(0, |r| u64::from(read(r, a)));
                results.push(Some((value, pred.map(|p| (p, u64::from(in_range))), *dst)));
            }
            WarpOp::Mma(_) | WarpOp::Sync { .. } => results.push(None),
            WarpOp::Vote { mode, dst, mask, .. } => {
                let mask = read(regs, mask) & members;
                let ballot = lanes.iter().zip(ops).enumerate().fold(0u32, |bits, (l, (r, o))| match (r, o) {
                    (Some(r), Some(WarpOp::Vote { a, negated, .. }))
                        if mask & (1 << l) != 0 && (r.bits[*a] != 0) != *negated =>
                    {
                        bits | (1 << l)
                    }
                    _ => bits,
                });
                let result = match mode {
                    VoteMode::All => u64::from(ballot == mask),
                    VoteMode::Any => u64::from(ballot != 0),
                    VoteMode::Uni => u64::from(ballot == mask || ballot == 0),
                    VoteMode::Ballot => u64::from(ballot),
                };
                results.push(Some((result, None, *dst)));
            }
        }
    }
    for (regs, result) in lanes.iter_mut().zip(results) {
        if let (Some(regs), Some((value, pred, dst))) = (regs, result) {
            regs.bits[dst] = value;
            regs.origin[dst] = 0;
            if let Some((p, bit)) = pred {
                regs.bits[p] = bit;
                regs.origin[p] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{run, words};
    use crate::memory::Fault;

    /// Each thread of a 64-thread block (two warps) stores `%r9`, computed by `body` from
    /// `%r1` (its lane id) and `%r2` (its thread id), at word `tid` of `out`.
    fn per_thread(body: &str) -> (Vec<u32>, Option<Fault>) {
        let body = format!(
            "\tmov.u32 %r1, %laneid;\n\tmov.u32 %r2, %tid.x;\n{body}\tmul.wide.u32 %rd1, %r2, 4;\n\
             \tadd.s64 %rd1, %out, %rd1;\n\tst.global.u32 [%rd1], %r9;\n"
        );
        let (bytes, outcome) = run(&body, 64, 256);
        (words(&bytes), outcome.fault)
    }

    #[test]
    fn a_warp_barrier_orders_its_lanes_shared_stores_before_their_loads() {
        // Each thread stores its id in shared memory, waits at `bar.warp.sync`, and reads its
        // neighbour's: without the wait, thread 0 would run on before thread 1 stored.
        let body = "\t.shared .align 4 .b8 s[256];\n\tmov.u32 %r4, s;\n\tmul.lo.u32 %r3, %r2, 4;\n\
                    \tadd.u32 %r5, %r4, %r3;\n\tst.shared.u32 [%r5], %r2;\n\tbar.warp.sync -1;\n\
                    \txor.b32 %r7, %r2, 1;\n\tmul.lo.u32 %r7, %r7, 4;\n\tadd.u32 %r7, %r4, %r7;\n\
                    \tld.shared.u32 %r9, [%r7];\n";
        let (out, fault) = per_thread(body);
        assert_eq!(fault, None);
        assert_eq!(out, (0..64).map(|t| t ^ 1).collect::<Vec<u32>>());
    }

    #[test]
    fn shuffles_read_the_lane_their_mode_names_within_the_clamp() {
        // down 1 over the whole warp: lane l gets l + 1's value, lane 31 its own.
        let (out, fault) = per_thread("\tshfl.sync.down.b32 %r9, %r2, 1, 31, -1;\n");
        assert_eq!(fault, None);
        for t in 0..64u32 {
            assert_eq!(out[t as usize], if t % 32 == 31 { t } else { t + 1 }, "thread {t}");
        }
        // up 2: lane l gets l - 2's value, lanes 0 and 1 their own; the predicate says which.
        let (out, _) = per_thread(
            "\tshfl.sync.up.b32 %r3|%p1, %r2, 2, 0, -1;\n\tselp.u32 %r4, 1000, 0, %p1;\n\tadd.u32 %r9, %r3, %r4;\n",
        );
        for t in 0..64u32 {
            let expected = if t % 32 < 2 { t } else { t - 2 + 1000 };
            assert_eq!(out[t as usize], expected, "thread {t}");
        }
        // bfly 5 and idx 7: lane l ^ 5, lane 7 of the warp.
        let (out, _) = per_thread("\tshfl.sync.bfly.b32 %r9, %r2, 5, 31, -1;\n");
        assert!((0..64u32).all(|t| out[t as usize] == t ^ 5));
        let (out, _) = per_thread("\tshfl.sync.idx.b32 %r9, %r2, 7, 31, -1;\n");
        assert!((0..64u32).all(|t| out[t as usize] == (t & !31) + 7));
        // Segments of 8 lanes (c = 0x1807): idx 3 reads lane 3 of each segment.
        let (out, _) = per_thread("\tshfl.sync.idx.b32 %r9, %r2, 3, 6151, -1;\n");
        assert!((0..64u32).all(|t| out[t as usize] == (t & !7) + 3), "{out:?}");
    }

    #[test]
    fn votes_over_the_warp() {
        // Lanes below 4 vote true.
        let vote = |instruction: &str| {
            per_thread(&format!("\tsetp.lt.u32 %p1, %r1, 4;\n\t{instruction}\n\tselp.u32 %r9, 1, 0, %p2;\n"))
                .0[0]
        };
        assert_eq!(vote("vote.sync.any.pred %p2, %p1, -1;"), 1);
        assert_eq!(vote("vote.sync.all.pred %p2, %p1, -1;"), 0);
        assert_eq!(vote("vote.sync.all.pred %p2, !%p1, -1;"), 0);
        assert_eq!(vote("vote.sync.uni.pred %p2, %p1, -1;"), 0);
        let (out, _) = per_thread("\tsetp.lt.u32 %p1, %r1, 4;\n\tvote.sync.ballot.b32 %r9, %p1, -1;\n");
        assert!(out.iter().all(|&w| w == 0xf));
        let (out, _) = per_thread("\tsetp.lt.u32 %p1, %r1, 4;\n\tvote.sync.ballot.b32 %r9, !%p1, -1;\n");
        assert!(out.iter().all(|&w| w == 0xffff_fff0));
    }

    #[test]
    fn members_that_ended_take_no_part_and_what_cannot_gather_hangs() {
        // A mask without the executing thread: undefined, stopped as a trap.
        assert_eq!(per_thread("\tshfl.sync.down.b32 %r9, %r2, 1, 31, 1;\n").1, Some(Fault::Trap));
        // Lanes above 15 end first: the rest shuffle among themselves; lane 15 reads lane 16,
        // which takes no part, so gets its own value.
        let early = "\tmov.u32 %r1, %laneid;\n\tmov.u32 %r2, %tid.x;\n\tsetp.gt.u32 %p1, %r1, 15;\n\t@%p1 bra END;\n\tshfl.sync.down.b32 %r9, %r2, 1, 31, -1;\n\
                     \tmul.wide.u32 %rd1, %r2, 4;\n\tadd.s64 %rd1, %out, %rd1;\n\tst.global.u32 [%rd1], %r9;\nEND:\n\tret;\n";
        let (bytes, outcome) = super::super::testing::run(early, 64, 256);
        let out = words(&bytes);
        assert_eq!(outcome.fault, None);
        assert_eq!((out[0], out[14], out[15], out[16], out[32], out[47]), (1, 15, 15, 0, 33, 47));
        // A partial mask: lanes 0-7 shuffle among themselves while the others do not.
        let (out, fault) = per_thread(
            "\tmov.u32 %r9, 0;\n\tsetp.lt.u32 %p1, %r1, 8;\n\t@%p1 shfl.sync.idx.b32 %r9, %r2, 3, 31, 255;\n",
        );
        assert_eq!(fault, None);
        assert_eq!((out[0], out[7], out[8], out[33], out[40]), (3, 3, 0, 35, 0));
        // The same shuffle reached at two places in the code gathers.
        let two_places = "\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 bra L1;\n\tshfl.sync.bfly.b32 %r9, %r2, 16, 31, -1;\n\
                          \tbra.uni L2;\nL1:\n\tshfl.sync.bfly.b32 %r9, %r2, 16, 31, -1;\nL2:\n";
        let (out, fault) = per_thread(two_places);
        assert_eq!(fault, None);
        assert!((0..64u32).all(|t| out[t as usize] == t ^ 16));
        // Different shuffles with one mask never gather: a GPU would hang.
        let split = "\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 bra L1;\n\tshfl.sync.down.b32 %r9, %r2, 1, 31, -1;\n\
                     \tbra.uni L2;\nL1:\n\tshfl.sync.up.b32 %r9, %r2, 1, 0, -1;\nL2:\n";
        assert_eq!(per_thread(split).1, Some(Fault::Hang));
    }

    #[test]
    fn population_count_leading_zeros_nan_tests_and_predicate_not() {
        let results = super::super::testing::results(&[
            "popc.b32 %r9, 0xf0f0;",
            "mov.b64 %rd3, -1;\n\tpopc.b64 %r9, %rd3;",
            "clz.b32 %r9, 1;",
            "clz.b32 %r9, 0;",
            "mov.b64 %rd3, 1;\n\tclz.b64 %r9, %rd3;",
            "mov.f32 %f1, 0f7FC00000;\n\tsetp.nan.f32 %p1, %f1, %f1;\n\tselp.u32 %r9, 1, 0, %p1;",
            "mov.f32 %f1, 0f7FC00000;\n\tsetp.num.f32 %p1, %f1, %f1;\n\tselp.u32 %r9, 1, 0, %p1;",
            "mov.f32 %f1, 0f3F800000;\n\tsetp.num.f32 %p1, %f1, %f1;\n\tselp.u32 %r9, 1, 0, %p1;",
            "setp.eq.u32 %p1, 1, 1;\n\tnot.pred %p2, %p1;\n\tselp.u32 %r9, 1, 0, %p2;",
            "setp.eq.u32 %p1, 1, 0;\n\tnot.pred %p2, %p1;\n\tselp.u32 %r9, 1, 0, %p2;",
        ]);
        assert_eq!(results, [8, 64, 31, 32, 63, 1, 0, 1, 0, 1]);
    }
}
