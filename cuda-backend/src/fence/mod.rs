//! The fence: a kernel's PTX rewritten so that nothing it does reaches memory outside the
//! windows it is given, and nothing it does stops the device with an error, whatever its
//! arguments and whatever its bugs.
//!
//! [`fence_ptx`] runs the sandbox's pipeline once, at registration:
//!
//! 1. **Parse** the whole module with the project's one PTX front end
//!    ([`kernel_args_ptx::parse`]): what it does not read is refused with its line.
//! 2. **Lower** what nvcc emits for ordinary CUDA code into forms the rewriter fences
//!    (`src/fence/lower.rs`): a device-side `assert`'s call of `__assertfail` becomes `trap`,
//!    a device-side `printf`'s call of `vprintf` becomes a record written into the launch's
//!    print buffer ([`printf`]), `.global` tables the module only reads move to constant
//!    memory, the `.global` variables left (`__device__` variables, the print buffer) are
//!    placed at the start of the fence, `.local` accesses at constant places in a thread's
//!    frame, through nvcc's frame pointer, name the frame (no clamp), and module-scope
//!    variables and declarations no instruction names are dropped. The walks and edits of a
//!    body these passes share (what an instruction writes, dead moves) are `src/fence/body.rs`.
//! 3. **Rewrite** the parsed module (`src/fence/rewrite.rs`), instruction by instruction from an
//!    allowlist (`src/fence/isa.rs`) that knows each accepted instruction's memory semantics:
//!    which operand is an address, the state space it reaches (the one a modifier names, or
//!    generic addressing where none is written) and its width. Anything else that can touch
//!    memory or stop the device is refused by name ([`FenceRefusal`]).
//! 4. **Print** the rewritten module with the front end's printer: the text the driver loads
//!    is made from the parsed form, never copied from the input.
//! 5. **Check** the printed text (`src/fence/check.rs`, [`check()`]): a second pass, written apart
//!    from the rewriter with a table of its own, reads it through the front end again and
//!    proves every address inside its window on every path, and every instruction one it
//!    knows. A finding refuses the module ([`FenceRefusal::Unchecked`]).
//!
//! ## What a fenced entry does
//!
//! Each `.entry` gets four hidden parameters after its own ([`FENCE_PARAMS`]): the fence's base
//! address, its length in bytes, the address of a 32-bit flag, and each thread's budget of
//! backward branches (and, before those, one per [`Proof`] it has). Every access is clamped into
//! the window of the state space it reaches, except those a proof covers (below):
//!
//! - **global**: the fence, `[base, base + len)` (the guest's linear memory in direct mode, the
//!   launch's staging arena in staged mode; the launcher gives at least [`MIN_FENCE_LEN`] and at
//!   most [`MAX_FENCE_LEN`] bytes, a multiple of 16, its base aligned to 16). A fenced kernel's
//!   global address is an **offset into the fence**: the launcher gives each pointer parameter
//!   as its window's offset (in direct mode the guest's own pointer, in staged mode its place in
//!   the arena), and each access adds the base to the clamped offset. The base is a hidden
//!   parameter the kernel's code cannot name (the fence reserves `__kargs_` names), so no host
//!   or device address reaches a register the kernel could store into guest memory;
//! - **shared**: the block's shared window, from the lowest to the highest end of the entry's
//!   shared variables (and the dynamic shared memory the launch gives, through
//!   `%dynamic_smem_size`); an access `[V + (x << k) + c]` into an array `V` of the entry's own
//!   whose size the module states keeps the kernel's index `x`, confined to `V`'s elements by
//!   one `min` with a constant (`src/fence/prove.rs`, `SharedAccess`); into an `.extern
//!   .shared` array, by one `min` with `(%dynamic_smem_size - reach) >> k`, computed once at
//!   the entry's start, which rests on the launcher giving such a module's launches at least
//!   [`MIN_DYNAMIC_SHARED`] bytes of dynamic shared memory
//!   ([`FencedModule::dynamic_shared_min`]);
//! - **local**: the thread's local window, over the entry's local variables;
//! - **const**: the module's constant window, over the constant variables the entry names;
//! - **param**: only a parameter named at a constant offset inside it;
//! - **generic** (no space written): where `isspacep.shared` or `isspacep.local` says the
//!   address is in the entry's shared or local window, clamped there; anywhere else, clamped
//!   into the fence.
//!
//! **Proven accesses.** A global access that a bounds check of the kernel's own keeps inside
//! its buffer is left unclamped ([`Proof`], `src/fence/prove.rs`): nvcc's form of
//! `int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) ... p[i] ...`, with `p` a pointer
//! parameter, `n` a 4-byte one and the access within one element of `p[i]`. The entry gets a hidden parameter
//! per such pointer, after its own and before the fence's four: the pointer's address (the
//! fence's base plus its offset), which only the fence's code names. The fence computes the
//! thread's index itself (the kernel's own computation of it becomes a copy of the fence's),
//! checks `i < n` itself after the kernel's check (the same check: ptxas keeps one), and forms
//! each such access's address as that hidden address plus `i` times the element's size. The
//! launcher gives the hidden address only where the launch meets the proof's condition (`n`
//! elements from the pointer's offset end inside the fence, the offset a multiple of the
//! element's size, and at most [`PROOF_MAX_THREADS_X`] threads in x), and refuses the launch
//! otherwise ([`Proof::hidden_values`], [`proof_grid_fits`]). A grid-stride loop's accesses
//! (`for (int i = ...; i < n; i += blockDim.x * gridDim.x) p[i]`) are an indexed proof's too:
//! the fence walks its own copy of the index (its index before the loop, the kernel's step made
//! on the copy) and the loop goes on while the copy is below `n` unsigned, so the copy is in
//! `[0, n)` at every access whatever the step; the checker keeps that past the loop's head only
//! where every branch back tests it so. An access at a constant offset
//! from a pointer (`*flag = 1`, `atomicAdd(count, c)`) is proven by a fixed proof (one per
//! pointer, end and width): the hidden address is the pointer's where the access fits inside
//! the fence, aligned (its end at most [`MIN_FENCE_LEN`]), and the fence's base where it would
//! not, so such a launch is never refused (a kernel that checks its count before reading an empty buffer runs as
//! unfenced). Any other access at `[p + x * S + c]`, `x` a 32-bit index the kernel scaled
//! (`mul.wide.s32` or `.u32`: a loaded index `src[idx[i]]`, a row and column `m[r * pitch +
//! c]`), is proven by a ranged proof where every access through
//! that sum is one: the fence confines the kernel's own index to `[0, hi]` with one unsigned
//! `min` (`hi` a second hidden parameter: the last element from the pointer with the accesses'
//! reach inside the fence) and adds the pointer's hidden address; an index below 0 or past
//! `hi` is moved to `hi`. The checker proves each proven access
//! inside from the fence's own index, check, range and hidden address alone, never from the
//! kernel's registers. An indexed access costs what it costs unfenced (`vector_add` assembles
//! to as many SASS instructions fenced as unfenced), a ranged one a `min` more
//! (`docs/performance.md`).
//!
//! Every variable of a window is aligned to 16 and a window is at least 16 bytes long (a
//! 16-byte padding variable is added where no variable is), so a clamped access of up to 16
//! bytes, rounded down to its width, is inside its window and aligned: nothing faults. A named
//! variable accessed at a constant offset inside it needs no clamp. A thread notes whether
//! any of its accesses was moved, judged on the address's low 32 bits as the clamp is (an
//! address a whole number of 4 GiB from a place inside its window runs there unnoted); on
//! exit, a thread that moved one sets byte 0 of the flag to 1 ([`FLAG_REACHED_OUT`]), which
//! the launcher reads after the kernel. `trap` and `brkpt` leave through the same exit instead
//! of stopping the device, and set byte 1 ([`FLAG_TRAPPED`]). Each reason has its own byte,
//! written with a plain byte store, so the launcher can say which happened. A warp-synchronous
//! instruction's member mask is given the executing thread (a mask without it is undefined
//! behaviour). A failing device-side `assert` does what `trap` does: its message is not
//! printed.
//!
//! **The budget.** Every cycle of an entry's control flow has a branch to a label at or before
//! it in the text (along every other edge the text only moves on), so each such backward
//! branch is counted: a taken branch spends one, and a thread whose budget is spent and that
//! would take it sets byte 2 of the flag ([`FLAG_BUDGET`]) and does not take it. Where it goes
//! then depends on the loop. In the common case it leaves the kernel through the budget's
//! exit. A thread that stops so has exited: a `bar.sync` without a thread count waits only for
//! the block's threads that have not exited (on sm_70 and later, and in the emulator), so the
//! threads waiting there go on without it; each of them stops at its own budget if it loops
//! on. Where the branch is guarded, its loop holds no instruction that waits for other threads
//! (a barrier, or a `.sync` one) and a warp-synchronous instruction follows the loop, the
//! thread leaves the loop instead and runs on after it, as one that ended the loop would: an
//! exit there would split its warp before the `shfl.sync` after the loop, and ptxas would give
//! every such instruction a divergent path (`docs/performance.md`). No thread in such a loop
//! waits for another, and each leaves it within its own budget, so one that left early holds
//! none up (`rewrite.rs`, `leaving_branches`). Either way a thread takes at most its budget of
//! backward branches, and so runs no loop for longer than its arguments and the budget allow,
//! and the launch answers that the budget ran out. A barrier with a thread count waits for that
//! many arrivals, and nothing in the process bounds a block that never makes them
//! (`docs/RISKS.md`, "Timing"). The launcher gives the guest's `LaunchLimits::max_back_edges_per_thread`.
//!
//! **Tensor-core fragments.** A `wmma.load` or `wmma.store` of the global or shared space, or
//! through a generic address, reaches a whole fragment from one address: its lines (rows, or
//! columns for `.col`) a stride apart. It is clamped as
//! one access: the stride aligned to 16 bytes (what a GPU needs of it) and made 0 where the
//! stride times the fragment's span would not fit in the fence, the offset clamped to the last
//! place the whole fragment fits and aligned to 32 (a stride the kernel leaves out is written,
//! as the line's length), each in its window. A generic one is clamped into the fence, and,
//! where the entry has a shared window and `isspacep.shared` says the address is there, into
//! that window instead, its address and stride chosen together. A correct kernel's fragment
//! lies in its window and runs as it is. A module with a global one needs its fence's base aligned to 32
//! ([`FencedModule::base_align`]); in a module with a shared one, every shared variable is
//! aligned to 32, and a shared window is at least a fragment's line long (a padding variable
//! is added where no variable is).
//! `wmma.mma` touches only registers.
//!
//! **Two forms.** [`FencedModule::ptx`] clamps, for any fence the launcher gives;
//! [`FencedModule::aligned_ptx`], the aligned form, masks each global access of `w` bytes
//! instead (the offset `and` the fence's length less `w`, a multiple of `w`, joined to the base
//! with `or`), for a fence whose length is a power of two and whose base is aligned to it (a
//! staged launch's arena, where the embedder asks for it: `CudaOptions::aligned_fence`). Both
//! are rewritten from the same lowered module and each is checked; the aligned form is inside
//! on any fence, and leaves a correct kernel's offsets as they are on the fence it is made for.
//! The aligned form notes no access for the flag: a stray one lands inside without a report
//! (its flag reports traps and the budget).
//!
//! Per clamped access this costs seven PTX instructions in the global window (eight in another,
//! which first subtracts the window's base; those windows are computed and clamped in 32 bits,
//! their state spaces' own addresses), about five in sm_90 SASS (about two in the
//! aligned form: the mask and the base's low half in one `LOP3`, its high half moved, and no
//! note; one or two more to form the address of a register with an offset or a 32-bit
//! register, twelve more per window a generic access may reach); per backward branch, three PTX instructions and
//! three in SASS (the test, the branch out, the decrement); per thread, the windows'
//! computation at the start and about four instructions to leave (the flag's test and store).
//! An exit before the thread has passed any access, trap or label (nvcc's bounds check) is
//! left a plain `ret`: it has nothing to report. A call of one of the module's own device
//! functions is inlined before anything else (`src/fence/inline.rs`), so its body is fenced as
//! the caller's own, and a `printf` writes a record into the launch's print buffer, which the
//! launcher formats ([`printf`]). What the fence refuses, by name: calls it does not inline (of
//! a function without a body in the module, such as `vprintf` with a format [`printf`] does not
//! rewrite; recursion; forms other than nvcc's call sequence) and the device functions' bodies they leave, textures and
//! surfaces, matrix loads and stores other than a `wmma` of the half-precision and 8-bit shapes
//! (`ldmatrix`, `wgmma`),
//! bulk copies (`cp.async.bulk`, `mbarrier`),
//! module-scope `.global` variables it cannot place at the start of the fence (see
//! [`FenceRefusal::ModuleGlobal`]), indirect branches, barriers whose number is not a
//! constant, pragmas other than `nounroll`, and every instruction or modifier outside the
//! allowlist.
//!
//! ```
//! use kernel_args_cuda::fence::{FENCE_PARAMS, fence_ptx};
//! use kernel_args_cuda::kernels;
//!
//! let fenced = fence_ptx(kernels::VECTOR_ADD_PTX)?;
//! // 3 accesses in each of the module's two entries, each its index confined by a proof.
//! assert_eq!((fenced.accesses(), fenced.proven()), (0, 6));
//! assert!(fenced.ptx().contains(FENCE_PARAMS[0]));
//!
//! let refused = fence_ptx(".version 7.8\n.target sm_52\n.address_size 64\n\
//!     .visible .entry k(.param .u64 p)\n{\n\t.reg .b64 %rd<2>;\n\
//!     \tld.param.u64 %rd1, [p];\n\tcall.uni helper, (%rd1);\n\tret;\n}\n").unwrap_err();
//! assert_eq!(refused.line, 8);
//! assert_eq!(refused.to_string(), "PTX line 8: `call.uni helper, (%rd1)`: a call (the fence does \
//!     not reach into the callee)");
//! # Ok::<(), kernel_args_cuda::fence::FenceError>(())
//! ```
//!
//! ## Where its tests are
//!
//! The pipeline's own, on its private parts: `src/fence/tests.rs` (the rewriter, its refusals,
//! the checker against broken rewrites, the golden files). Everything that runs a fenced kernel
//! is in `integration/tests/`: `fence_emulated.rs` and `corpus.rs` on the emulated driver's API
//! (the fixtures, the attacks, random kernels, the kernel corpus), `corpus_driver.rs` through a
//! driver library's C entry points (the emulated one, or a GPU's), and `fence.rs` through the
//! whole launch path (`LaunchHost::call`, `CudaLauncher`).

use std::fmt;

use kernel_args_ptx::{ParseErrorKind, parse};

mod body;
mod check;
mod inline;
mod isa;
mod lower;
pub mod printf;
mod proof;
mod prove;
mod rewrite;

pub use check::{CheckFinding, CheckReport, FindingKind, check};
pub use proof::{
    HiddenValues, MAX_PROOF_PARAMS, MAX_PROOFS, PROOF_MAX_THREADS_X, PROOF_PARAM_PREFIX, PROOF_RANGE_PREFIX,
    Proof, ProofFailure, ProofKind, proof_grid_fits, proofs_in,
};

/// The hidden parameters appended to each entry, in order, each a `.u64`: the fence's base
/// address, its length in bytes, the address of the 32-bit flag a thread sets
/// ([`FLAG_REACHED_OUT`], [`FLAG_TRAPPED`], [`FLAG_BUDGET`]), and the thread's budget: the most
/// backward branches it may take (the kernel reads the low 32 bits).
pub const FENCE_PARAMS: [&str; 4] =
    ["__kargs_fence_base", "__kargs_fence_len", "__kargs_fence_flag", "__kargs_fence_budget"];

/// The flag's value (read as a little-endian `u32`) where a thread moved an access into its
/// window: each reason is one byte of the flag, which a thread that has it sets to 1 with a
/// plain byte store, so the flag is the sum of the reasons' values.
pub const FLAG_REACHED_OUT: u32 = 1;

/// The flag's value where a thread stopped at a `trap`, `brkpt` or failed `assert` (byte 1).
pub const FLAG_TRAPPED: u32 = 1 << 8;

/// The flag's value where a thread stopped because it would have taken more backward branches
/// than its budget ([`FENCE_PARAMS`]`[3]`) (byte 2).
pub const FLAG_BUDGET: u32 = 1 << 16;

/// The shortest fence a launcher may give: a clamp of the global window covers up to this many
/// bytes (one access of up to 16, or a group of accesses through one register at constant
/// offsets), and what it covers must fit. A shorter fence would not clamp: the kernel computes
/// its limits as the length less the bytes covered. A wasm memory of one page is 65,536 bytes.
pub const MIN_FENCE_LEN: u64 = 256;

/// The most bytes one clamp of the global window may cover, and so the longest fence a module
/// may need ([`FencedModule::fence_min_len`]): a wasm memory of one page. A clamp covers more
/// than [`MIN_FENCE_LEN`] only for a `wmma` fragment of a constant stride, whose whole
/// fragment is clamped as one access.
pub const MAX_REACH: u64 = 1 << 16;

/// The longest fence a launcher may give, 4 GiB (a wasm32 guest's whole linear memory): the
/// rewriter clamps offsets in 32 bits, so a limit (the length less an access's width) must fit
/// in 32 bits.
pub const MAX_FENCE_LEN: u64 = 1 << 32;

/// The least dynamic shared memory, in bytes, a launcher gives a fenced entry of a module that
/// declares an `.extern .shared` array ([`FencedModule::dynamic_shared_min`]): a launch that
/// asks for less gets this much. The fence confines an access of at most this reach into such
/// an array by one `min` of the kernel's index with `(%dynamic_smem_size - reach) >> k`,
/// which needs the array to hold at least one reach.
pub const MIN_DYNAMIC_SHARED: u32 = 16;

/// The alignment a fence's base needs where the module clamps a `wmma` fragment
/// ([`FencedModule::base_align`]).
pub const FRAGMENT_BASE_ALIGN: u64 = 32;

/// The alignment of every variable in a window, and the shortest window.
const WINDOW_ALIGN: u32 = 16;

/// A module's PTX with its fence, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedModule {
    ptx: String,
    aligned_ptx: String,
    entries: Vec<String>,
    proofs: Vec<Vec<Proof>>,
    accesses: usize,
    proven: usize,
    by_declaration: usize,
    widest: u64,
    base_align: u64,
    dynamic_shared_min: u32,
    fence_min_len: u64,
    counted: usize,
    leaving: usize,
    asserts: usize,
    dropped: usize,
    tables: usize,
    inlined: usize,
    variables: Vec<u8>,
    print: Option<printf::PrintBuffer>,
}

impl FencedModule {
    /// The rewritten PTX, printed from the checked module: for any fence the launcher gives
    /// (at least [`MIN_FENCE_LEN`] and at most [`MAX_FENCE_LEN`] bytes, a multiple of 16, its
    /// base aligned to 16).
    /// Each global access is clamped: the offset's low 32 bits at most the fence's length less
    /// the access's width, rounded down to the width, added to the base.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }

    /// The same module in its **aligned form**, printed from its own checked rewrite: for a
    /// fence whose length is a power of two and whose base is aligned to its length (what
    /// `CudaLauncher` makes a staged launch's arena). A global access of `w` bytes is masked,
    /// not clamped: its offset's low 32 bits `and` the fence's length less `w`, which is a
    /// multiple of `w` (one `and` where the clamp takes a `min` and an `and`), joined to the
    /// base with `or` (which ptxas merges with the mask, where an `add` of a 64-bit base takes
    /// two instructions). Inside the fence whatever the fence is: the mask keeps the offset at most
    /// the length less `w`, and `b | k` lies between `b` and `b + k`. On the fence it is made
    /// for, an offset inside the fence is left as it is, so a correct kernel computes the same
    /// as in [`ptx`](Self::ptx); on another, such an offset may be moved (still inside). No
    /// access the form moved (global, shared, local or generic) is noted for the flag
    /// ([`FLAG_REACHED_OUT`]): it confines without reporting, so no access pays for the note;
    /// traps and the budget are reported as in the clamped form.
    pub fn aligned_ptx(&self) -> &str {
        &self.aligned_ptx
    }

    /// The entries that were fenced, in the module's order: every entry of the module.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// How many address operands are clamped, over all entries (the checker proved each).
    pub fn accesses(&self) -> usize {
        self.accesses
    }

    /// How many global address operands are left unclamped by a [`Proof`], over all entries
    /// (the checker proved each from the fence's own bounds check).
    pub fn proven(&self) -> usize {
        self.proven
    }

    /// Entry `entry`'s proofs, in the order of their hidden parameters (empty for an entry
    /// without, or one the module does not have): each launch gives each one's
    /// [`Proof::hidden_values`] after the entry's own parameters and before [`FENCE_PARAMS`].
    pub fn proofs(&self, entry: &str) -> &[Proof] {
        self.entries
            .iter()
            .position(|e| e == entry)
            .and_then(|at| self.proofs.get(at))
            .map_or(&[], Vec::as_slice)
    }

    /// How many address operands need no clamp: a named variable or parameter at a constant
    /// offset inside it (the checker proved each from the declaration).
    pub fn by_declaration(&self) -> usize {
        self.by_declaration
    }

    /// The widest clamped access, in bytes (0 where there is none).
    pub fn widest_access(&self) -> u64 {
        self.widest
    }

    /// The alignment the fence's base needs: 16 bytes, or [`FRAGMENT_BASE_ALIGN`] where an
    /// entry loads or stores a `wmma` fragment in global memory or through a generic address
    /// (the checker reports that its proof of one rests on it: [`CheckReport::fragment_base`]),
    /// whose address the fence clamps to a multiple of 32 from the base (a GPU faults on a fragment that is not aligned to 32). The launcher
    /// refuses a direct-mode launch whose guest memory is aligned to less; a staged launch's
    /// arena is aligned to 256.
    pub fn base_align(&self) -> u64 {
        self.base_align
    }

    /// The least dynamic shared memory, in bytes, each launch of the module's entries must
    /// have: [`MIN_DYNAMIC_SHARED`] where the module declares an `.extern .shared` array, 0
    /// otherwise. The launcher raises a launch's dynamic shared memory to it (a kernel given
    /// less could touch nothing of such an array); the fence's confined accesses into the array
    /// rest on it.
    pub fn dynamic_shared_min(&self) -> u32 {
        self.dynamic_shared_min
    }

    /// The shortest fence, in bytes, a launch of the module's entries may have: [`MIN_FENCE_LEN`],
    /// or more where a clamp covers more (a `wmma` fragment of a constant stride: its reach,
    /// at most [`MAX_REACH`]), a multiple of 16. The checker reports it: the longest reach of
    /// any limit the module computes from the fence's length. The launcher refuses a direct-mode
    /// launch whose guest memory is shorter (`FenceProblem::MemoryTooShort`) and makes a staged
    /// launch's arena at least this long.
    pub fn fence_min_len(&self) -> u64 {
        self.fence_min_len
    }

    /// How many backward branches are counted against each thread's budget, over all entries
    /// (the checker found each counted).
    pub fn counted_branches(&self) -> usize {
        self.counted
    }

    /// How many of the counted backward branches leave their loop on a spent budget, rather
    /// than the kernel: those whose loop holds no instruction that waits for other threads (the
    /// module's documentation, "The budget"; the checker found each one's count).
    pub fn leaving_branches(&self) -> usize {
        self.leaving
    }

    /// How many device-side `assert` call sequences (`call.uni __assertfail`) became the
    /// fence's exit: the thread stops and sets the flag, as at a `trap`.
    pub fn asserts(&self) -> usize {
        self.asserts
    }

    /// How many read-only module-scope `.global` tables were moved to constant memory, where
    /// the fence's constant window covers them (the math library's, lookup tables).
    pub fn tables(&self) -> usize {
        self.tables
    }

    /// How many calls of the module's own device functions were inlined into the entries that
    /// make them (a call in an inlined body counts too), so that the fence covers the callee
    /// with the caller's windows.
    pub fn inlined(&self) -> usize {
        self.inlined
    }

    /// The module's variables: the bytes of its module-scope `.global` variables (`__device__`
    /// variables, which it writes), initializers written in, that every fenced launch finds
    /// at the start of its fence. The fence places each variable there, at its offset from
    /// the fence's start (aligned to 16), and the kernel names it by that offset as it names
    /// any global address; nothing else of the fence changes. Empty where the module has none.
    ///
    /// The launcher keeps these bytes per kernel and registration: a staged launch copies them
    /// into the start of its arena and back after the kernel, so they persist from one launch
    /// to the next, as a `__device__` variable does, without any other tenant's launches
    /// seeing them. A direct launch's fence is the guest's own memory, which has no room for
    /// them: such a kernel is staged on a direct-mode device too.
    pub fn variables(&self) -> &[u8] {
        &self.variables
    }

    /// The print buffer among the [module's variables](Self::variables), where the module's
    /// device-side `printf` calls were rewritten to write records into it ([`printf`]); `None`
    /// where the module has none.
    pub fn print_buffer(&self) -> Option<&printf::PrintBuffer> {
        self.print.as_ref()
    }

    /// How many module-scope `.global` and `.const` variables and `.func`s (declarations, and
    /// bodies no call is left to run) no instruction names were dropped (the strings of
    /// lowered asserts, headers' unused tables, inlined device functions).
    pub fn dropped(&self) -> usize {
        self.dropped
    }
}

/// Why a module cannot be fenced: the 1-based line and what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceError {
    /// The 1-based line of the PTX text (of the printed module for a checker's finding; 0 for
    /// a module-wide problem).
    pub line: usize,
    /// The statement, as the front end prints it, or empty for a module-wide problem.
    pub statement: String,
    /// What the fence cannot cover there.
    pub reason: FenceRefusal,
}

/// What the fence cannot cover.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FenceRefusal {
    /// The front end cannot read the text.
    Unreadable(ParseErrorKind),
    /// The module is not 64-bit (`.address_size 64`).
    AddressSize,
    /// A call the fence does not inline: of a function without a body in the module, past the
    /// deepest nesting (recursion), or not in nvcc's call sequence form (`src/fence/inline.rs`);
    /// the fence's registers do not reach into a callee.
    Call,
    /// A device function's body (`.func`) that a call the fence does not inline still runs.
    DeviceFunction,
    /// The address of a function (an indirect call's target).
    FunctionAddress,
    /// An indirect branch (`brx.idx`).
    IndirectBranch,
    /// A texture or surface instruction or handle: it reaches memory through a handle, not an
    /// address.
    TextureOrSurface,
    /// A bulk or tensor copy, or an `mbarrier` (`cp.async.bulk`, tensor maps, `multimem`).
    BulkCopy,
    /// A tensor-core or matrix load or store the fence does not clamp: `ldmatrix`, `stmatrix`,
    /// `wgmma`, and a `wmma.load` or `wmma.store` of a shape or type outside the half-precision
    /// and 8-bit ones of 16-element `k` (`m16n16k16`, `m32n8k16`, `m8n32k16`) or of a state
    /// space other than global and shared. Each reaches a whole fragment from one address.
    MatrixMemory,
    /// A module-scope `.global` variable the fence cannot place at the start of the fence
    /// ([`FencedModule::variables`]): declared `.extern`, the module's variables over 1 MiB
    /// together, an initializer other than integers and float bits of the variable's type, or
    /// named other than by a 64-bit `mov` of its address, a `cvta.global.u64` of it or the
    /// address of a global or generic access (a table the module only reads moves to constant
    /// memory instead, and one it never names is dropped). Left in global memory it would lie
    /// outside every guest's fence, shared by every launch of the module.
    ModuleGlobal,
    /// An access wider than 16 bytes.
    TooWide,
    /// A barrier whose number or thread count is not a constant.
    Barrier,
    /// An address the fence does not read: a named variable of another state space, a generic
    /// access to a named variable, or a base that is not a register of 16, 32 or 64 bits.
    Address,
    /// A parameter read through a register, or past its parameter.
    ParamAccess,
    /// A variable declared in a nested block, or of a state space an entry cannot have.
    NestedVariable,
    /// A pragma other than `nounroll`.
    Pragma,
    /// A name the fence reserves (it starts with `__kargs_`).
    ReservedName,
    /// An instruction, or a modifier of one, outside the allowlist.
    NotAllowed,
    /// An entry without a body.
    Malformed,
    /// The checker refused the rewritten module: the rewriter's mistake, never passed on.
    Unchecked(FindingKind),
}

impl fmt::Display for FenceRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenceRefusal::Unreadable(e) => write!(f, "the PTX front end cannot read it: {e}"),
            FenceRefusal::AddressSize => f.write_str("not a 64-bit module (.address_size 64)"),
            FenceRefusal::Call => f.write_str("a call (the fence does not reach into the callee)"),
            FenceRefusal::DeviceFunction => {
                f.write_str("a device function's body (the fence does not reach into calls)")
            }
            FenceRefusal::FunctionAddress => f.write_str("a function's address"),
            FenceRefusal::IndirectBranch => f.write_str("an indirect branch"),
            FenceRefusal::TextureOrSurface => f.write_str("a texture or surface"),
            FenceRefusal::BulkCopy => f.write_str("a bulk or tensor copy, or an mbarrier"),
            FenceRefusal::MatrixMemory => f.write_str(
                "a matrix load or store the fence does not clamp (ldmatrix, stmatrix, wgmma, or a wmma of \
                 another shape or state space)",
            ),
            FenceRefusal::ModuleGlobal => {
                f.write_str("a module-scope .global variable the fence cannot place in the fence")
            }
            FenceRefusal::TooWide => f.write_str("an access wider than 16 bytes"),
            FenceRefusal::Barrier => f.write_str("a barrier whose number or thread count is not a constant"),
            FenceRefusal::Address => f.write_str("an address the fence does not read"),
            FenceRefusal::ParamAccess => {
                f.write_str("a parameter read through a register or past its parameter")
            }
            FenceRefusal::NestedVariable => f.write_str("a variable declared in a nested block"),
            FenceRefusal::Pragma => f.write_str("a pragma other than nounroll"),
            FenceRefusal::ReservedName => {
                f.write_str("a name starting with __kargs_, which the fence reserves")
            }
            FenceRefusal::NotAllowed => {
                f.write_str("an instruction or modifier outside the fence's allowlist")
            }
            FenceRefusal::Malformed => f.write_str("an entry without a body"),
            FenceRefusal::Unchecked(kind) => {
                write!(f, "the fence's checker refused the rewritten module: {kind}")
            }
        }
    }
}

impl fmt::Display for FenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX line {}: ", self.line)?;
        if !self.statement.is_empty() {
            write!(f, "`{}`: ", self.statement)?;
        }
        write!(f, "{}", self.reason)
    }
}

impl std::error::Error for FenceError {}

/// Fences every entry of `ptx` and checks the result (see the module's documentation).
///
/// # Errors
///
/// [`FenceError`] naming the first line the fence cannot cover, and why; or the checker's
/// finding in the rewritten module ([`FenceRefusal::Unchecked`]).
pub fn fence_ptx(ptx: &str) -> Result<FencedModule, FenceError> {
    let mut module = parse(ptx).map_err(|e| FenceError {
        line: e.line as usize,
        statement: String::new(),
        reason: FenceRefusal::Unreadable(e.kind),
    })?;
    let mut lowered = lower::lower(&mut module);
    let print = lowered.print.take();
    let dynamic_shared = module.items.iter().any(|item| {
        matches!(item, kernel_args_ptx::Item::Variable(v)
            if v.space == kernel_args_ptx::StateSpace::Shared && v.linkage == Some(kernel_args_ptx::Linkage::Extern))
    });
    let room = lowered.variables.len() as u64;
    let (text, rewritten, report) = rewritten_and_checked(module.clone(), false, room)?;
    let (aligned_ptx, aligned, aligned_report) = rewritten_and_checked(module, true, room)?;
    let fence_min_len =
        MIN_FENCE_LEN.max(report.fence_min_len).max(aligned_report.fence_min_len).next_multiple_of(16);
    // The two forms differ only in how a global access is clamped.
    if (aligned.clamped, aligned.static_accesses, aligned.counted, aligned.leaving, &aligned.proofs)
        != (
            rewritten.clamped,
            rewritten.static_accesses,
            rewritten.counted,
            rewritten.leaving,
            &rewritten.proofs,
        )
    {
        return Err(FenceError {
            line: 0,
            statement: String::new(),
            reason: FenceRefusal::Unchecked(FindingKind::Unproven),
        });
    }
    Ok(FencedModule {
        ptx: text,
        aligned_ptx,
        entries: rewritten.entries,
        proofs: rewritten.proofs,
        accesses: rewritten.clamped,
        proven: rewritten.proven,
        by_declaration: rewritten.static_accesses,
        widest: rewritten.widest,
        base_align: if rewritten.fragments > 0 { FRAGMENT_BASE_ALIGN } else { u64::from(WINDOW_ALIGN) },
        dynamic_shared_min: if dynamic_shared { MIN_DYNAMIC_SHARED } else { 0 },
        fence_min_len,
        counted: rewritten.counted,
        leaving: rewritten.leaving,
        asserts: lowered.asserts,
        dropped: lowered.dropped,
        tables: lowered.tables,
        inlined: lowered.inlined,
        variables: lowered.variables,
        print,
    })
}

/// `module` rewritten in one form (`aligned`: see [`FencedModule::aligned_ptx`]), its variables
/// taking `room` bytes at the fence's start, printed, and checked.
fn rewritten_and_checked(
    module: kernel_args_ptx::Module,
    aligned: bool,
    room: u64,
) -> Result<(String, rewrite::Rewritten, CheckReport), FenceError> {
    let rewritten = rewrite::rewrite(module, aligned, room)?;
    let text = rewritten.module.to_string();
    let unchecked = |finding: CheckFinding| FenceError {
        line: finding.line,
        statement: finding.statement,
        reason: FenceRefusal::Unchecked(finding.kind),
    };
    let report = check(&text).map_err(unchecked)?;
    // The checker proved as many addresses as the rewriter fenced, entry for entry, and found
    // as many backward branches counted.
    if report.entries != rewritten.entries
        || report.clamped != rewritten.clamped
        || report.proven != rewritten.proven
        || report.by_declaration != rewritten.static_accesses
        || report.counted != rewritten.counted
        || report.leaving != rewritten.leaving
        || report.fragment_base != (rewritten.fragments > 0)
    {
        return Err(unchecked(CheckFinding {
            line: 0,
            statement: String::new(),
            kind: FindingKind::Unproven,
        }));
    }
    Ok((text, rewritten, report))
}

// Not under Miri: the fence has no `unsafe` for Miri to find, and its tests (hundreds of rewrites
// and checks) would take Miri minutes; CI runs them natively in every test step.
#[cfg(test)]
#[cfg(not(miri))]
mod tests;
