//! The emulated device's kernels: the PTX of the loaded module, decoded once when the module is
//! loaded and interpreted thread by thread when a kernel runs. No kernel is written again for
//! the CPU: what a kernel reads from its parameters, computes and stores is what its PTX says.
//!
//! - `decode`: the body of an `.entry`, statement by statement, into `Inst`s: registers by
//!   name, labels, static shared variables, operands. An instruction (or a form of one) outside
//!   what this interpreter supports refuses the module at load, naming its line, never a wrong
//!   result at run time.
//! - One module per instruction family: `arith` (integer and floating-point arithmetic,
//!   comparisons, selection), `convert` (`mov`, `cvt`, `cvta`), `memory_ops` (`ld`, `st`,
//!   `atom`, `red` in the parameter, global and shared state spaces; `cp.async`), `warp` (`shfl.sync`,
//!   `vote.sync`, `bar.warp.sync`, `wmma.mma`: a warp's threads together), `matrix` (`wmma`'s fragments).
//! - This module: the scheduler. A block's threads run one after the other, each until it
//!   ends (`ret`, `exit`) or reaches `bar.sync`; when every thread still running has reached
//!   the barrier, they all go on. Blocks run in grid order. The first faulting access stops the
//!   kernel.
//!
//! State spaces are separate: parameters are the launch's parameter buffer (read-only), global
//! memory goes through [`KernelMemory`] (device mappings, and host memory where the device has
//! pageable memory access; the module's `.global` variables are one device allocation its load
//! makes, initialized, and its unload frees: [`module_globals`]), shared memory is a buffer per block (static declarations, then the
//! launch's dynamic shared memory), local memory (`.local`, what nvcc makes of a thread's
//! arrays) and registers are per thread, constant memory is the module's `.const` variables
//! (read-only). Shared and local memory start poisoned, as neither is cleared on a GPU; an
//! access past the block's shared memory or the thread's local memory, or not aligned to its
//! width, faults as on a GPU.
//!
//! **Generic addresses** are modelled as a GPU maps them: the block's shared memory is seen at
//! [`SHARED_WINDOW`] and the thread's local memory at [`LOCAL_WINDOW`] (each 4 GiB of the
//! generic address space that no host or device memory can be at), `cvta.shared`/`cvta.local`
//! and `cvta.to.shared`/`cvta.to.local` move between an address in the space and its generic
//! address, `isspacep` says which window an address is in, and a generic access in a window
//! reaches that memory; any other generic address is a global one. Atomics are atomic with
//! respect to every other kernel running at the time. `trap` and `brkpt` stop the kernel with
//! the sticky launch failure a GPU reports.
//!
//! **Calls** of the module's `.func`s run as on a GPU, in each thread: the arguments (the
//! caller's `.param` variables) are copied into the callee's parameters, the thread runs the
//! callee's body to its `ret` and goes on after the call with the return values copied back.
//! Every function has registers and places of its own, so a recursive call is refused at the
//! load, as is a call of a function the module does not define (`vprintf`); a call of
//! `__assertfail` is a failed device-side `assert`, which stops the kernel with
//! `CUDA_ERROR_ASSERT` (its message is not printed).
//!
//! Every 64-bit register carries the pointer parameter its value came from (the value of an
//! `ld.param` of 8 bytes, through `cvta` and integer arithmetic), so that a store knows which
//! allocation its address was meant to stay in ([`KernelMemory::store`]'s `base`).
//!
//! Each launch counts the instructions its threads executed (a guarded instruction whose guard
//! is false counts too: the thread stepped through it): [`Outcome::instructions`].

mod arith;
mod convert;
mod decode;
mod error;
mod matrix;
mod memory_ops;
mod operands;
mod warp;

use crate::memory::{Fault, KernelMemory};
use crate::ptx::PtxEntry;

pub use decode::{Globals, Program, compile, module_globals};
pub use error::{DecodeError, Needed, Role, Unsupported};

/// Where a block's shared memory is in the generic address space (a non-canonical address on
/// x86-64: no host memory is there, and the device's reservation is not).
pub const SHARED_WINDOW: u64 = 0x00fe_0000_0000_0000;

/// Where a thread's local memory is in the generic address space.
pub const LOCAL_WINDOW: u64 = 0x00fd_0000_0000_0000;

/// The size of each window.
pub const WINDOW_BYTES: u64 = 1 << 32;

/// The window a generic address is in, and its offset there.
pub fn window_of(address: u64) -> Option<(Space, u64)> {
    if address.wrapping_sub(SHARED_WINDOW) < WINDOW_BYTES {
        Some((Space::Shared, address - SHARED_WINDOW))
    } else if address.wrapping_sub(LOCAL_WINDOW) < WINDOW_BYTES {
        Some((Space::Local, address - LOCAL_WINDOW))
    } else {
        None
    }
}

/// A launch's grid and block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
}

/// What running a kernel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Threads started (the one that faulted included).
    pub threads: u64,
    /// Instructions the threads executed.
    pub instructions: u64,
    /// The fault a thread made, which stopped the kernel.
    pub fault: Option<Fault>,
}

/// A kernel's parameter buffer: each parameter at its PTX offset.
#[derive(Debug, Clone, Copy)]
pub struct KernelParams<'a> {
    /// The bytes copied from `kernelParams[i]`, each at its offset.
    pub buffer: &'a [u8],
    /// The entry whose layout the buffer follows.
    pub entry: &'a PtxEntry,
}

/// A PTX type, as an instruction's suffix names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// `.b8`, `.b16`, `.b32`, `.b64`: untyped bits.
    B(u8),
    /// `.u8` ... `.u64`.
    U(u8),
    /// `.s8` ... `.s64`.
    S(u8),
    /// `.f32`.
    F32,
    /// `.f64`.
    F64,
    /// `.pred`.
    Pred,
}

impl Ty {
    /// The type's size in bytes (a predicate: 1).
    pub fn bytes(self) -> usize {
        match self {
            Ty::B(bits) | Ty::U(bits) | Ty::S(bits) => usize::from(bits / 8),
            Ty::F32 => 4,
            Ty::F64 => 8,
            Ty::Pred => 1,
        }
    }

    /// The type's width in bits.
    pub fn bits(self) -> u32 {
        (self.bytes() * 8) as u32
    }

    /// The mask of the type's bits in a 64-bit register.
    pub fn mask(self) -> u64 {
        match self.bits() {
            64 => u64::MAX,
            bits => (1u64 << bits) - 1,
        }
    }

    /// The type's bits of `bits`, sign-extended for a signed type and zero-extended otherwise,
    /// as an `i128`, so that every comparison and product of two of them is exact.
    pub fn widen(self, bits: u64) -> i128 {
        let masked = bits & self.mask();
        match self {
            Ty::S(width) => {
                let shift = 64 - u32::from(width);
                i128::from(((masked << shift) as i64) >> shift)
            }
            _ => i128::from(masked),
        }
    }
}

/// An `f32` result's bits: the GPU's canonical NaN (`0x7fffffff`) for a NaN.
pub fn f32_bits(value: f32) -> u64 {
    u64::from(if value.is_nan() { 0x7fff_ffff } else { value.to_bits() })
}

/// An `f64` result's bits: the canonical NaN (`0x7fffffffffffffff`) for a NaN.
pub fn f64_bits(value: f64) -> u64 {
    if value.is_nan() { 0x7fff_ffff_ffff_ffff } else { value.to_bits() }
}

/// A special register (`%tid.x`, ...): the thread's coordinates and the launch's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// `%tid.{x,y,z}`.
    Tid(usize),
    /// `%ntid.{x,y,z}`.
    Ntid(usize),
    /// `%ctaid.{x,y,z}`.
    Ctaid(usize),
    /// `%nctaid.{x,y,z}`.
    Nctaid(usize),
    /// `%laneid`: the thread's lane in its warp of 32.
    LaneId,
    /// `%warpsize` (32).
    WarpSize,
    /// `%lanemask_eq`: the thread's bit in its warp.
    LanemaskEq,
    /// `%dynamic_smem_size`: the launch's dynamic shared memory in bytes.
    DynamicSmemSize,
}

/// An instruction's operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A register, by its slot.
    Reg(usize),
    /// An immediate value's bits (a float immediate `0f...`/`0d...` as its bits).
    Imm(u64),
    /// A special register.
    Special(Special),
    /// A shared or local variable's offset in its state space (`mov.u32 %r1, tile;`,
    /// `mov.u64 %SPL, __local_depot0;`).
    Symbol(u64),
}

/// Where a load, store or atomic accesses memory: a base and a byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrBase {
    /// A register's value.
    Reg(usize),
    /// A kernel parameter, by its offset in the parameter buffer (`[name+8]`).
    Param(usize),
    /// A shared or local variable, by its offset in its space (`[tile+4]`).
    Symbol(u64),
    /// An absolute address (`[0x10]`).
    Imm(u64),
}

/// A state space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// `.param` (read-only: the launch's parameters).
    Param,
    /// `.global`.
    Global,
    /// No space written: a generic address, in the shared or local window or global.
    Generic,
    /// `.const` (read-only: the module's constant variables).
    Const,
    /// `.shared`.
    Shared,
    /// `.local`: the thread's own memory (stack arrays).
    Local,
}

impl Space {
    /// Its name as the refusals say it (`Shared`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Space::Param => "Param",
            Space::Global => "Global",
            Space::Generic => "Generic",
            Space::Const => "Const",
            Space::Shared => "Shared",
            Space::Local => "Local",
        }
    }
}

/// One decoded instruction: its guard, what it does, and its line in the PTX.
#[derive(Debug, Clone, PartialEq)]
pub struct Inst {
    /// `@%p` (run when true) or `@!%p` (when false): the predicate's slot and the polarity.
    pub guard: Option<(usize, bool)>,
    /// What it does.
    pub op: Op,
    /// Its line in the module (1-based).
    pub line: usize,
}

/// What an instruction does.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// An arithmetic, logic, comparison or selection instruction (`arith`).
    Arith(arith::ArithOp),
    /// `mov`, `cvt` or `cvta` (`convert`).
    Convert(convert::ConvertOp),
    /// `ld`, `st`, `atom`, `red` or `cp.async` (`memory_ops`).
    Memory(memory_ops::MemoryOp),
    /// `bra`: jump to the instruction at this index.
    Branch(usize),
    /// `bar.sync` / `barrier.sync` (barrier 0 and the whole block only).
    Barrier,
    /// `ret` in the entry, or `exit`: the thread ends.
    Exit,
    /// `call` of a `.func` of the module: the arguments copied into the callee's parameters,
    /// and the thread on at the callee's first instruction until its `ret` ([`Op::Return`]).
    Call(Call),
    /// `ret` in a `.func`: back to the instruction after the call, the callee's return values
    /// copied into the caller's.
    Return,
    /// `call` of `__assertfail` (a failed device-side `assert`): the kernel stops with the
    /// device assert a GPU reports.
    Assert,
    /// `trap` or `brkpt`: the kernel stops with a launch failure.
    Trap,
    /// `shfl.sync`, `vote.sync`, `bar.warp.sync` or `wmma.mma`: the warp executes it together
    /// (`warp`).
    Warp(warp::WarpOp),
    /// `wmma.load` or `wmma.store`: each lane its own elements of a fragment (`matrix`).
    Matrix(matrix::MatrixMemory),
}

/// A call of a `.func`: where its body starts, and the bytes copied in and out. Parameters and
/// return values (the caller's `.param` variables and the callee's) are the thread's, in its
/// local memory: each function's registers and variables have places of their own, which a
/// call without recursion (the decoder refuses it) never needs twice at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The index of the callee's first instruction.
    pub target: usize,
    /// The arguments: `(from, to, bytes)` in local memory, caller's to callee's.
    pub arguments: Vec<(usize, usize, usize)>,
    /// The return values: `(from, to, bytes)`, callee's to caller's, at its `ret`.
    pub returns: Vec<(usize, usize, usize)>,
}

/// A thread's registers: each slot's bits, and for each the pointer parameter its value came
/// from (0: none); and its calls under way. A value passed through a call's parameters loses
/// its origin (it goes through local memory).
#[derive(Debug, Clone)]
pub struct Registers {
    /// Each slot's bits.
    pub bits: Vec<u64>,
    /// Each slot's origin: the value of the 8-byte parameter it was derived from, or 0.
    pub origin: Vec<u64>,
    /// The calls under way, innermost last: the instruction after each, and the call's index.
    calls: Vec<(usize, usize)>,
}

impl Registers {
    fn new(slots: usize) -> Registers {
        Registers { bits: vec![0; slots], origin: vec![0; slots], calls: Vec::new() }
    }

    fn clear(&mut self) {
        self.bits.fill(0);
        self.origin.fill(0);
        self.calls.clear();
    }
}

/// Copies each `(from, to, bytes)` of `copies` within `local`.
fn copy_frames(local: &mut [u8], copies: &[(usize, usize, usize)]) -> Result<(), Fault> {
    for &(from, to, bytes) in copies {
        let end = from.checked_add(bytes).filter(|&end| end <= local.len()).ok_or(Fault::IllegalAddress)?;
        if to.checked_add(bytes).is_none_or(|end| end > local.len()) {
            return Err(Fault::IllegalAddress);
        }
        local.copy_within(from..end, to);
    }
    Ok(())
}

/// What one thread sees of the launch: its coordinates, the shape, the parameters, memory.
pub struct Context<'a, 'm> {
    /// `%tid`.
    pub tid: [u32; 3],
    /// `%ctaid`.
    pub ctaid: [u32; 3],
    /// The launch's shape (`%ntid`, `%nctaid`).
    pub shape: LaunchShape,
    /// The parameter buffer.
    pub params: &'a [u8],
    /// Global memory.
    pub memory: &'a KernelMemory<'m>,
    /// The block's shared memory.
    pub shared: &'a mut [u8],
    /// The thread's local memory.
    pub local: &'a mut [u8],
    /// The module's constant memory.
    pub constant: &'a [u8],
    /// The launch's dynamic shared memory in bytes.
    pub dynamic_shared: u32,
}

impl Context<'_, '_> {
    /// The value of a special register.
    pub fn special(&self, special: Special) -> u64 {
        u64::from(match special {
            Special::Tid(i) => self.tid[i],
            Special::Ntid(i) => self.shape.block[i],
            Special::Ctaid(i) => self.ctaid[i],
            Special::Nctaid(i) => self.shape.grid[i],
            Special::LaneId => self.linear_tid() % 32,
            Special::WarpSize => 32,
            Special::LanemaskEq => 1u32 << (self.linear_tid() % 32),
            Special::DynamicSmemSize => self.dynamic_shared,
        })
    }

    /// The thread's index in its block, x fastest.
    fn linear_tid(&self) -> u32 {
        let [x, y, _] = self.shape.block;
        self.tid[0].wrapping_add(x.wrapping_mul(self.tid[1].wrapping_add(y.wrapping_mul(self.tid[2]))))
    }
}

/// An operand's value (its bits) and origin in `regs`.
pub fn read(regs: &Registers, cx: &Context<'_, '_>, operand: Operand) -> (u64, u64) {
    match operand {
        Operand::Reg(slot) => (regs.bits[slot], regs.origin[slot]),
        Operand::Imm(bits) => (bits, 0),
        Operand::Special(special) => (cx.special(special), 0),
        Operand::Symbol(offset) => (offset, 0),
    }
}

/// How often a running kernel looks whether its context was destroyed (and stops), in
/// instructions executed by its launch.
pub const STOP_CHECK_INSTRUCTIONS: u64 = 4096;

/// How a thread's run ended.
enum Stop {
    /// It ended.
    Exited,
    /// It reached `bar.sync` at this instruction.
    Barrier,
    /// It reached a warp-synchronous instruction (`pc` is after it), which it waits to
    /// execute with its warp.
    Warp,
    /// It faulted.
    Fault(Fault),
}

impl Program {
    /// Runs the kernel over every thread of `shape` with `params`, its global accesses checked
    /// by `memory`, with `dynamic_shared` bytes of dynamic shared memory per block.
    pub fn run(
        &self,
        shape: LaunchShape,
        params: &KernelParams<'_>,
        memory: &KernelMemory<'_>,
        dynamic_shared: usize,
    ) -> Outcome {
        let mut outcome = Outcome { threads: 0, instructions: 0, fault: None };
        let shared_len = if dynamic_shared > 0 {
            self.dynamic_at.saturating_add(dynamic_shared)
        } else {
            self.shared_bytes
        };
        let mut shared = vec![0u8; shared_len];
        let dynamic = u32::try_from(dynamic_shared).unwrap_or(u32::MAX);
        let mut files: Vec<Registers> = Vec::new();
        for bz in 0..shape.grid[2] {
            for by in 0..shape.grid[1] {
                for bx in 0..shape.grid[0] {
                    shared.fill(crate::memory::POISON); // shared memory is not cleared either
                    let ctaid = [bx, by, bz];
                    let fault = if self.has_barrier {
                        self.block_with_barriers(
                            dynamic,
                            ctaid,
                            shape,
                            params,
                            memory,
                            &mut shared,
                            &mut files,
                            &mut outcome,
                        )
                    } else {
                        self.block(
                            dynamic,
                            ctaid,
                            shape,
                            params,
                            memory,
                            &mut shared,
                            &mut files,
                            &mut outcome,
                        )
                    };
                    if let Some(fault) = fault {
                        outcome.fault = Some(fault);
                        return outcome;
                    }
                }
            }
        }
        outcome
    }

    /// A block of a kernel without barriers: each thread to its end, one register file.
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        dynamic_shared: u32,
        ctaid: [u32; 3],
        shape: LaunchShape,
        params: &KernelParams<'_>,
        memory: &KernelMemory<'_>,
        shared: &mut [u8],
        files: &mut Vec<Registers>,
        outcome: &mut Outcome,
    ) -> Option<Fault> {
        if files.is_empty() {
            files.push(Registers::new(self.slots));
        }
        let regs = &mut files[0];
        let mut local = vec![crate::memory::POISON; self.local_bytes];
        let [block_x, block_y, block_z] = shape.block;
        for tz in 0..block_z {
            for ty in 0..block_y {
                for tx in 0..block_x {
                    regs.clear();
                    local.fill(crate::memory::POISON);
                    outcome.threads = outcome.threads.saturating_add(1);
                    let mut cx = Context {
                        tid: [tx, ty, tz],
                        ctaid,
                        shape,
                        params: params.buffer,
                        memory,
                        shared,
                        local: &mut local,
                        constant: &self.constant,
                        dynamic_shared,
                    };
                    let mut pc = 0;
                    match self.step_until_stop(regs, &mut cx, &mut pc, &mut outcome.instructions) {
                        Stop::Exited | Stop::Barrier => {}
                        // Not reached: a kernel with one runs in turns (`has_barrier`).
                        Stop::Warp => return Some(Fault::Trap),
                        Stop::Fault(fault) => return Some(fault),
                    }
                }
            }
        }
        None
    }

    /// A block of a kernel with barriers: every thread has its registers, and runs to the next
    /// barrier in turn.
    #[allow(clippy::too_many_arguments)]
    fn block_with_barriers(
        &self,
        dynamic_shared: u32,
        ctaid: [u32; 3],
        shape: LaunchShape,
        params: &KernelParams<'_>,
        memory: &KernelMemory<'_>,
        shared: &mut [u8],
        files: &mut Vec<Registers>,
        outcome: &mut Outcome,
    ) -> Option<Fault> {
        let [block_x, block_y, block_z] = shape.block;
        let tids: Vec<[u32; 3]> = (0..block_z)
            .flat_map(|z| (0..block_y).flat_map(move |y| (0..block_x).map(move |x| [x, y, z])))
            .collect();
        while files.len() < tids.len() {
            files.push(Registers::new(self.slots));
        }
        let mut pcs = vec![0usize; tids.len()];
        let mut locals = vec![vec![crate::memory::POISON; self.local_bytes]; tids.len()];
        let mut running = vec![true; tids.len()];
        for regs in files.iter_mut().take(tids.len()) {
            regs.clear();
        }
        outcome.threads = outcome.threads.saturating_add(tids.len() as u64);
        // Threads waiting at a warp-synchronous instruction for the rest of their warp.
        let mut waiting = vec![false; tids.len()];
        while running.iter().any(|&r| r) {
            let mut progressed = false;
            for (i, &tid) in tids.iter().enumerate() {
                if !running[i] || waiting[i] {
                    continue;
                }
                progressed = true;
                let mut cx = Context {
                    tid,
                    ctaid,
                    shape,
                    params: params.buffer,
                    memory,
                    shared,
                    local: &mut locals[i],
                    constant: &self.constant,
                    dynamic_shared,
                };
                match self.step_until_stop(&mut files[i], &mut cx, &mut pcs[i], &mut outcome.instructions) {
                    Stop::Exited => running[i] = false,
                    Stop::Barrier => {}
                    Stop::Warp => waiting[i] = true,
                    Stop::Fault(fault) => return Some(fault),
                }
            }
            // In each warp, the members of a waiting thread's mask execute together once all of
            // them that have not ended wait at an instruction of the same kind with that mask.
            for warp in 0..tids.len().div_ceil(32) {
                let lanes = warp * 32..(warp * 32 + 32).min(tids.len());
                let start = lanes.start;
                let op_of = |i: usize| match pcs[i].checked_sub(1).and_then(|pc| self.insts.get(pc)) {
                    Some(Inst { op: Op::Warp(op), .. }) if running[i] && waiting[i] => Some(op),
                    _ => None,
                };
                for first in lanes.clone() {
                    let Some(op) = op_of(first) else { continue };
                    let mask = warp::member_mask(op, &files[first]);
                    if mask & (1 << (first - start)) == 0 {
                        return Some(Fault::Trap); // a member mask without the executing thread
                    }
                    let members: Vec<usize> =
                        lanes.clone().filter(|&i| mask & (1 << (i - start)) != 0 && running[i]).collect();
                    let gathered = members.iter().all(|&i| {
                        op_of(i).is_some_and(|o| {
                            warp::same_kind(o, op) && warp::member_mask(o, &files[i]) == mask
                        })
                    });
                    if !gathered {
                        continue;
                    }
                    let ops: Vec<Option<&warp::WarpOp>> =
                        lanes.clone().map(|i| if members.contains(&i) { op_of(i) } else { None }).collect();
                    let (_, rest) = files.split_at_mut(start);
                    let mut regs: Vec<Option<&mut Registers>> = rest
                        .iter_mut()
                        .take(lanes.len())
                        .enumerate()
                        .map(|(l, r)| if members.contains(&(start + l)) { Some(r) } else { None })
                        .collect();
                    warp::execute(&ops, &mut regs);
                    for &i in &members {
                        waiting[i] = false;
                    }
                    progressed = true;
                    break; // this warp's lanes changed: look again next round
                }
            }
            if !progressed {
                // Every running thread waits on members that never gather: a GPU would hang.
                return Some(Fault::Hang);
            }
        }
        None
    }

    /// Runs one thread from `pc` until it ends, reaches a barrier (then `pc` is after it) or
    /// faults.
    fn step_until_stop(
        &self,
        regs: &mut Registers,
        cx: &mut Context<'_, '_>,
        pc: &mut usize,
        instructions: &mut u64,
    ) -> Stop {
        loop {
            let Some(inst) = self.insts.get(*pc) else { return Stop::Exited };
            *instructions = instructions.saturating_add(1);
            if instructions.is_multiple_of(STOP_CHECK_INSTRUCTIONS) && cx.memory.stopped() {
                return Stop::Fault(Fault::Stopped);
            }
            *pc += 1;
            if let Some((pred, when)) = inst.guard
                && (regs.bits[pred] != 0) != when
            {
                continue;
            }
            match &inst.op {
                Op::Arith(op) => arith::execute(op, regs, cx),
                Op::Convert(op) => convert::execute(op, regs, cx),
                Op::Memory(op) => {
                    if let Err(fault) = memory_ops::execute(op, regs, cx) {
                        return Stop::Fault(fault);
                    }
                }
                Op::Matrix(op) => {
                    if let Err(fault) = matrix::execute(op, regs, cx) {
                        return Stop::Fault(fault);
                    }
                }
                Op::Branch(target) => *pc = *target,
                Op::Barrier => return Stop::Barrier,
                Op::Warp(_) => return Stop::Warp,
                Op::Exit => return Stop::Exited,
                Op::Trap => return Stop::Fault(Fault::Trap),
                Op::Assert => return Stop::Fault(Fault::Assert),
                Op::Call(call) => {
                    if let Err(fault) = copy_frames(cx.local, &call.arguments) {
                        return Stop::Fault(fault);
                    }
                    regs.calls.push((*pc, *pc - 1));
                    *pc = call.target;
                }
                Op::Return => {
                    let Some((back, at)) = regs.calls.pop() else { return Stop::Exited };
                    if let Some(Inst { op: Op::Call(call), .. }) = self.insts.get(at)
                        && let Err(fault) = copy_frames(cx.local, &call.returns)
                    {
                        return Stop::Fault(fault);
                    }
                    *pc = back;
                }
            }
        }
    }
}

/// What the instruction families' tests share: a kernel of one parameter (`out`, a device
/// buffer) whose body is the test's instructions, run over one block.
#[cfg(test)]
pub(crate) mod testing {
    use super::{LaunchShape, Outcome, Program, Unsupported, compile};
    use crate::memory::DeviceMemory;
    use crate::ptx::read_ptx;

    /// The module of a kernel `t(.param .u64 out)` whose body loads `out` into `%out` and then
    /// runs `body`.
    pub fn module(body: &str) -> String {
        format!(
            ".version 7.8\n.target sm_52\n.address_size 64\n.visible .entry t(\n\t.param .u64 t_param_0\n)\n{{\n\
             \t.reg .b64 %out;\n\t.reg .b64 %rd<32>;\n\t.reg .b32 %r<32>;\n\t.reg .b16 %rs<8>;\n\t.reg .f32 %f<32>;\n\
             \t.reg .f64 %fd<16>;\n\t.reg .pred %p<8>;\n\tld.param.u64 %out, [t_param_0];\n{body}\n\tret;\n}}\n"
        )
    }

    /// The kernel of [`module`]`(body)`, decoded.
    pub fn program(body: &str) -> Result<Program, Unsupported> {
        let text = module(body);
        let ptx = read_ptx(&text).unwrap();
        compile(&ptx, &ptx.entries[0], &Default::default())
    }

    /// Runs `body` over `threads` threads of one block with `out` a fresh `out_len`-byte
    /// buffer (zeroed first): the buffer afterwards and what the run did.
    pub fn run(body: &str, threads: u32, out_len: usize) -> (Vec<u8>, Outcome) {
        let text = module(body);
        let ptx = read_ptx(&text).unwrap();
        let program = compile(&ptx, &ptx.entries[0], &Default::default()).unwrap();
        let mut memory = DeviceMemory::new();
        let out = memory.alloc(1, out_len).unwrap() as u64;
        let view = memory.kernel_view(1, false);
        for i in 0..out_len as u64 {
            view.store(out, i, [0u8]).unwrap();
        }
        let params = out.to_le_bytes();
        let shape = LaunchShape { grid: [1, 1, 1], block: [threads, 1, 1] };
        let outcome =
            program.run(shape, &super::KernelParams { buffer: &params, entry: &ptx.entries[0] }, &view, 0);
        let bytes = (0..out_len as u64).map(|i| view.load::<1>(out + i).unwrap()[0]).collect();
        (bytes, outcome)
    }

    /// Runs each of `exprs` (instructions that leave their result in `%r9`) in one thread and
    /// stores its result in word i of `out`: the words.
    pub fn results(exprs: &[&str]) -> Vec<u32> {
        let body: String = exprs
            .iter()
            .enumerate()
            .map(|(i, e)| format!("\t{e}\n\tst.global.u32 [%out+{}], %r9;\n", 4 * i))
            .collect();
        words(&run(&body, 1, 4 * exprs.len()).0)
    }

    /// The little-endian `u32`s of `bytes`.
    pub fn words(bytes: &[u8]) -> Vec<u32> {
        bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{program, run, words};
    use super::{DecodeError, Role, Unsupported};

    #[test]
    fn branches_guards_and_barriers_run_as_written() {
        // Thread t stores t into slot t when t is odd (a negated guard skips the even ones),
        // after a loop of three iterations adds 3.
        let body = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, 0;\n$L_loop:\n\tadd.s32 %r2, %r2, 1;\n\
                    \tsetp.lt.u32 %p1, %r2, 3;\n\t@%p1 bra $L_loop;\n\tand.b32 %r3, %r1, 1;\n\
                    \tsetp.eq.u32 %p2, %r3, 0;\n\tadd.s32 %r4, %r1, %r2;\n\tmul.wide.u32 %rd1, %r1, 4;\n\
                    \tadd.s64 %rd2, %out, %rd1;\n\t@!%p2 st.global.u32 [%rd2], %r4;\n\tbar.sync 0;";
        let (bytes, outcome) = run(body, 4, 16);
        assert_eq!(words(&bytes), [0, 4, 0, 6]);
        assert_eq!(outcome.threads, 4);
        assert_eq!(outcome.fault, None);
        // ld.param, 2 mov, 3 x (add, setp, bra), and, setp, add, mul.wide, add, st, bar, ret.
        assert_eq!(outcome.instructions, 4 * (1 + 2 + 9 + 8));
    }

    #[test]
    fn what_is_not_supported_is_refused_naming_its_line() {
        let err =
            program("\tmov.u32 %r1, 1;\n\ttex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];").unwrap_err();
        assert_eq!(
            err,
            Unsupported {
                line: Some(17),
                statement: Some("tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}]".into()),
                error: DecodeError::Instruction { opcode: "tex".into() },
            }
        );
        assert_eq!(
            err.to_string(),
            "`tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}]` (the instruction `tex`)"
        );
        let refused = |body: &str| program(body).unwrap_err().error;
        assert_eq!(refused("\tbar.sync 1;"), DecodeError::Barrier { instruction: "bar.sync 1".into() });
        assert_eq!(
            refused("\tcvta.to.const.u64 %rd1, %out;"),
            DecodeError::Form { instruction: "cvta.to.const.u64".into() }
        );
        assert_eq!(refused("\tbra $L_nowhere;"), DecodeError::NoLabel { label: "$L_nowhere".into() });
        assert_eq!(
            refused("\tadd.u32 %r1, %r2;"),
            DecodeError::OperandCount { opcode: "add".into(), count: 2 }
        );
        assert_eq!(
            refused("\tmov.u32 %tid.x, 1;"),
            DecodeError::Operand { operand: "%tid.x".into(), role: Role::RegisterWritten }
        );
        assert_eq!(
            refused("\tatom.global.f32.max %f1, [%out], %f2;"),
            DecodeError::FloatAtomic { instruction: "atom.global.f32.max".into() }
        );
    }
}
