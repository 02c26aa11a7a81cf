//! Proofs, the launcher's side: what a [`Proof`] states, the hidden parameters an entry gets
//! for it, and their values at a launch ([`Proof::hidden_values`]). The rewriter finds the
//! proofs (`prove.rs`) and the checker verifies the fence's code from them (`check.rs`); what
//! each kind rests on is the condition stated here, which the launcher meets at each launch.

use std::fmt;

use kernel_args_ptx::parse;

/// The prefix of a proof's hidden parameter that holds its pointer's address
/// ([`Proof::param_name`]).
pub const PROOF_PARAM_PREFIX: &str = "__kargs_addr_";

/// The prefix of a ranged proof's second hidden parameter, its index's range
/// ([`Proof::range_name`]).
pub const PROOF_RANGE_PREFIX: &str = "__kargs_range_";

/// The most proofs one entry gets (each one or two hidden parameters); its other accesses are
/// clamped.
pub const MAX_PROOFS: usize = 8;

/// The most hidden parameters an entry's proofs take: two per ranged proof, one per other.
pub const MAX_PROOF_PARAMS: usize = 2 * MAX_PROOFS;

/// The most threads in x a launch of an entry with an indexed [`Proof`] may have: its grid's
/// `x` times its block's, so that every thread's `%ctaid.x * %ntid.x + %tid.x` is a
/// non-negative `int`.
pub const PROOF_MAX_THREADS_X: u64 = 1 << 31;

/// What a [`Proof`] rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    /// The kernel's own bounds check `i < n` of the thread's index in the grid (`i = blockIdx.x
    /// * blockDim.x + threadIdx.x`, an `int` or an `unsigned`), against the entry's 4-byte
    /// parameter of index `bound`, compared signed (`setp.ge.s32`) or not (`setp.ge.u32`).
    Indexed {
        /// The bound's index among the entry's own parameters.
        bound: usize,
        /// Whether the check is signed.
        signed: bool,
    },
    /// The kernel's own bounds check `i < n` of the thread's 64-bit index in the grid (`i =
    /// (size_t)blockIdx.x * blockDim.x + threadIdx.x`, always below 2^63), against the entry's
    /// 8-byte parameter of index `bound`, compared signed (`long long n`) or not (`size_t n`).
    Indexed64 {
        /// The bound's index among the entry's own parameters.
        bound: usize,
        /// Whether the check is signed (`setp.ge.s64`) or not (`setp.ge.u64`).
        signed: bool,
    },
    /// A constant offset from the pointer.
    Fixed,
    /// Any 32-bit index, which the fence confines to the elements from the pointer's place in
    /// the fence to its end (one unsigned `min`).
    Ranged {
        /// Whether the kernel extends the index as signed (`mul.wide.s32`) or not
        /// (`mul.wide.u32`).
        signed: bool,
        /// The bytes from each element the accesses reach (at least the element's size, at
        /// most [`MIN_FENCE_LEN`](super::MIN_FENCE_LEN)).
        reach: u64,
    },
}

/// A proof that an entry's accesses through one pointer parameter `p` are inside the fence, so
/// the fence leaves them unclamped. Three kinds ([`ProofKind`]):
///
/// - **indexed**: each access at `[p + i * size + c]` (`c + width <= size`) after the
///   kernel's own bounds check `i < n` of the thread's index in the grid. It holds where `p`'s
///   offset in the fence is a multiple of `size` and `n` elements of `size` bytes from it end
///   inside the fence (nothing to check where `n` is 0, or below 0 compared signed: no thread
///   passes the check), and the
///   grid has at most [`PROOF_MAX_THREADS_X`] threads in x ([`proof_grid_fits`]). The launcher
///   refuses a launch that does not meet it. With a 64-bit index and bound
///   ([`ProofKind::Indexed64`]), the same, `n` read as the kernel compares it, and no bound on
///   the grid (a 64-bit index never overflows);
/// - **fixed**: an access at `[p + c]`, a constant `c` with `c + width = size` (`size` at most
///   [`MIN_FENCE_LEN`](super::MIN_FENCE_LEN)) and `width = align` (one proof per pointer, end and width). Where `p`'s
///   offset is a multiple of `align` and `size` bytes from it end inside the fence, the access
///   runs where the kernel put it; elsewhere (where the access itself would be outside the
///   fence or misaligned: a pointer to an empty buffer at the end of the guest's memory, which
///   a kernel that checks its count never reads), it is confined to the fence's first `size`
///   bytes, unreported, as the aligned form confines a stray access;
/// - **ranged**: the accesses at `[p + x * size + c]` (`0 <= c`, `c + width <= reach`, one
///   straight run of them through one register) for any 32-bit index `x`, which the fence
///   confines to `[0, hi]` (an unsigned `min`) before it scales it as the kernel does: `hi` is
///   the last element of `size` bytes from `p`'s offset with `reach` bytes inside the fence (at
///   most `i32::MAX` where the kernel's index is signed, so that the index stays non-negative).
///   An index in that range is left as it is; one past it, or below 0 (before `p`: outside the
///   window the guest declared `p` with), is moved to `hi` (the clamped form notes it, as it
///   notes a clamped access; the aligned form does not). Where `p`'s offset is not a multiple
///   of `size` or `reach` bytes from it do not fit, the address is the fence's base and `hi` is
///   0 (`reach` is at most [`MIN_FENCE_LEN`](super::MIN_FENCE_LEN)). Never refused.
///
/// The entry reads `p`'s address (the fence's base plus its offset) from a hidden parameter of
/// its own ([`Proof::param_name`]), and a ranged proof's range from a second one
/// ([`Proof::range_name`]), after its own parameters and before
/// [`FENCE_PARAMS`](super::FENCE_PARAMS): values only the fence's code names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Proof {
    /// The pointer parameter's index among the entry's own parameters.
    pub pointer: usize,
    /// What the proof rests on.
    pub kind: ProofKind,
    /// An indexed or ranged proof's element size (1, 2, 4, 8 or 16 bytes); a fixed one's
    /// reach, the bytes from `p` its accesses cover.
    pub size: u64,
    /// The alignment `p`'s offset needs: an indexed or ranged proof's element size; a fixed
    /// one's widest access (1, 2, 4, 8 or 16).
    pub align: u64,
}

/// Why a launch does not meet an indexed [`Proof`]'s condition: the pointer's offset, the
/// bound's value and the fence's length, for the launch's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProofFailure {
    /// The proof.
    pub proof: Proof,
    /// The pointer parameter's value: its offset in the fence.
    pub offset: u64,
    /// The bound parameter's value (more than 0: a count of 0 or less needs nothing).
    pub count: u64,
    /// The fence's length in bytes.
    pub fence_len: u64,
}

impl fmt::Display for ProofFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Proof { pointer, kind, size, align } = self.proof;
        if !self.offset.is_multiple_of(align) {
            return write!(
                f,
                "parameter {pointer} (offset {}) is not a multiple of {align} bytes",
                self.offset
            );
        }
        let bound = match kind {
            ProofKind::Indexed { bound, .. } | ProofKind::Indexed64 { bound, .. } => bound.to_string(),
            ProofKind::Fixed | ProofKind::Ranged { .. } => "?".to_owned(),
        };
        write!(
            f,
            "parameter {bound} ({}) elements of {size} bytes from parameter {pointer} (offset {}) end past the \
             fence's {} bytes",
            self.count, self.offset, self.fence_len
        )
    }
}

impl std::error::Error for ProofFailure {}

/// A proof's hidden parameters' values at one launch ([`Proof::hidden_values`]), each a
/// `.u64` parameter's 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HiddenValues {
    /// The pointer's address: the fence's base plus its offset, or the fence's base.
    pub address: u64,
    /// A ranged proof's range: `hi`, the highest index (unsigned, in the low 32 bits; the high
    /// 32 bits are 0).
    pub range: Option<u64>,
}

impl HiddenValues {
    /// The values in the order of the parameters ([`Proof::param_names`]).
    pub fn words(&self) -> impl Iterator<Item = u64> + use<> {
        std::iter::once(self.address).chain(self.range)
    }
}

impl Proof {
    /// The name of the entry's hidden parameter that holds the pointer's address:
    /// `__kargs_addr_<pointer>_<bound>_<size>` for an indexed proof (`_u32_<bound>_<size>` where
    /// its check is unsigned),
    /// `__kargs_addr_<pointer>_s64_<bound>_<size>` (or `_u64_`) for a 64-bit indexed one,
    /// `__kargs_addr_<pointer>_r<size>_a<align>` for a fixed one,
    /// `__kargs_addr_<pointer>_s<size>_r<reach>` (signed) or `_u<size>_r<reach>` for a ranged
    /// one.
    pub fn param_name(&self) -> String {
        let Proof { pointer, size, align, .. } = *self;
        match self.kind {
            ProofKind::Indexed { bound, signed: true } => {
                format!("{PROOF_PARAM_PREFIX}{pointer}_{bound}_{size}")
            }
            ProofKind::Indexed { bound, signed: false } => {
                format!("{PROOF_PARAM_PREFIX}{pointer}_u32_{bound}_{size}")
            }
            ProofKind::Indexed64 { bound, signed } => {
                format!("{PROOF_PARAM_PREFIX}{pointer}_{}64_{bound}_{size}", if signed { 's' } else { 'u' })
            }
            ProofKind::Fixed => format!("{PROOF_PARAM_PREFIX}{pointer}_r{size}_a{align}"),
            ProofKind::Ranged { signed, reach } => {
                format!("{PROOF_PARAM_PREFIX}{pointer}_{}{size}_r{reach}", if signed { 's' } else { 'u' })
            }
        }
    }

    /// A ranged proof's second hidden parameter, its range:
    /// `__kargs_range_<pointer>_s<size>_r<reach>` (or `_u<size>`); `None` for the other kinds.
    pub fn range_name(&self) -> Option<String> {
        let ProofKind::Ranged { signed, reach } = self.kind else { return None };
        let sign = if signed { 's' } else { 'u' };
        Some(format!("{PROOF_RANGE_PREFIX}{}_{sign}{}_r{reach}", self.pointer, self.size))
    }

    /// The proof's hidden parameters' names, in their order.
    pub fn param_names(&self) -> impl Iterator<Item = String> + use<> {
        std::iter::once(self.param_name()).chain(self.range_name())
    }

    /// The proof a hidden address parameter's name states, if it is one.
    pub fn from_param_name(name: &str) -> Option<Proof> {
        let parts: Vec<&str> = name.strip_prefix(PROOF_PARAM_PREFIX)?.split('_').collect();
        let number = |p: &str| p.parse::<u64>().ok().and_then(|n| usize::try_from(n).ok());
        let width = |n: u64| matches!(n, 1 | 2 | 4 | 8 | 16).then_some(n);
        let proof = match parts.as_slice() {
            [pointer, reach, align] if reach.starts_with('r') => Proof {
                pointer: number(pointer)?,
                kind: ProofKind::Fixed,
                size: reach.strip_prefix('r')?.parse::<u64>().ok().filter(|s| *s > 0)?,
                align: width(align.strip_prefix('a')?.parse().ok()?)?,
            },
            [pointer, check @ ("s64" | "u64"), bound, size] => {
                let size = width(size.parse().ok()?)?;
                let kind = ProofKind::Indexed64 { bound: number(bound)?, signed: *check == "s64" };
                Proof { pointer: number(pointer)?, kind, size, align: size }
            }
            [pointer, "u32", bound, size] => {
                let size = width(size.parse().ok()?)?;
                let kind = ProofKind::Indexed { bound: number(bound)?, signed: false };
                Proof { pointer: number(pointer)?, kind, size, align: size }
            }
            [pointer, ranged, reach] if ranged.starts_with(['s', 'u']) => {
                let (sign, size) = ranged.split_at_checked(1)?;
                let size = width(size.parse().ok()?)?;
                let reach = reach.strip_prefix('r')?.parse::<u64>().ok().filter(|r| *r >= size)?;
                let kind = ProofKind::Ranged { signed: sign == "s", reach };
                Proof { pointer: number(pointer)?, kind, size, align: size }
            }
            [pointer, bound, size] => {
                let size = width(size.parse().ok()?)?;
                Proof {
                    pointer: number(pointer)?,
                    kind: ProofKind::Indexed { bound: number(bound)?, signed: true },
                    size,
                    align: size,
                }
            }
            _ => return None,
        };
        (proof.param_name() == name).then_some(proof)
    }

    /// The hidden parameters' values for a launch whose fence starts at `base` and is
    /// `fence_len` bytes long, whose parameters' values `param(i)` gives (each parameter's 8
    /// bytes in native order, as the launcher's parameter storage holds them: a 4-byte one in the
    /// first four): the pointer's address, `base` plus its offset, where the condition holds
    /// (see [`Proof`]), and a ranged proof's range. Where an indexed proof's bound is 0 or less
    /// no thread passes the kernel's check, and the address is `base`.
    ///
    /// # Errors
    ///
    /// [`ProofFailure`] where an indexed proof's condition does not hold (the other kinds'
    /// addresses are then `base`: see [`Proof`]).
    pub fn hidden_values(
        &self,
        base: u64,
        fence_len: u64,
        param: impl Fn(usize) -> [u8; 8],
    ) -> Result<HiddenValues, ProofFailure> {
        let offset = u64::from_ne_bytes(param(self.pointer));
        let fits = |reach: u128| {
            offset.is_multiple_of(self.align)
                && u128::from(offset).saturating_add(reach) <= u128::from(fence_len)
        };
        let at = |address: u64| HiddenValues { address, range: None };
        match self.kind {
            ProofKind::Indexed { .. } | ProofKind::Indexed64 { .. } => {
                // The bound as the kernel compares it; 0 or less: no thread passes its check.
                let count = match self.kind {
                    ProofKind::Indexed { bound, signed: true } => {
                        let [a, b, c, d, ..] = param(bound);
                        u64::try_from(i32::from_ne_bytes([a, b, c, d])).unwrap_or(0)
                    }
                    ProofKind::Indexed { bound, signed: false } => {
                        let [a, b, c, d, ..] = param(bound);
                        u64::from(u32::from_ne_bytes([a, b, c, d]))
                    }
                    ProofKind::Indexed64 { bound, signed: true } => {
                        u64::try_from(i64::from_ne_bytes(param(bound))).unwrap_or(0)
                    }
                    ProofKind::Indexed64 { bound, signed: false } => u64::from_ne_bytes(param(bound)),
                    ProofKind::Fixed | ProofKind::Ranged { .. } => 0,
                };
                if count == 0 {
                    return Ok(at(base));
                }
                if fits(u128::from(count).saturating_mul(u128::from(self.size))) {
                    Ok(at(base.wrapping_add(offset)))
                } else {
                    Err(ProofFailure { proof: *self, offset, count, fence_len })
                }
            }
            ProofKind::Fixed if fits(u128::from(self.size)) => Ok(at(base.wrapping_add(offset))),
            ProofKind::Fixed => Ok(at(base)),
            ProofKind::Ranged { reach, .. } if !fits(u128::from(reach)) => {
                Ok(HiddenValues { address: base, range: Some(0) })
            }
            ProofKind::Ranged { signed, reach } => {
                // The last element from the offset with `reach` bytes inside the fence.
                let last = fence_len
                    .saturating_sub(offset)
                    .saturating_sub(reach)
                    .checked_div(self.size)
                    .unwrap_or(0);
                let most = if signed { u64::from(i32::MAX.unsigned_abs()) } else { u64::from(u32::MAX) };
                Ok(HiddenValues { address: base.wrapping_add(offset), range: Some(last.min(most)) })
            }
        }
    }
}

/// The proofs entry `entry` of a fenced module's text states in its hidden parameters' names,
/// in their order: what [`FencedModule::proofs`](super::FencedModule::proofs) says of the
/// module it printed, for a launcher that holds only the text. Empty where the text does not
/// parse or has no such entry.
pub fn proofs_in(ptx: &str, entry: &str) -> Vec<Proof> {
    let Ok(module) = parse(ptx) else { return Vec::new() };
    module
        .entry(entry)
        .map(|f| f.params.iter().filter_map(|p| Proof::from_param_name(&p.name)).collect())
        .unwrap_or_default()
}

/// Whether a launch of `grid_x` blocks of `block_x` threads in x keeps every thread's index in
/// the grid a non-negative `int`, as an entry with an indexed [`Proof`] needs.
pub fn proof_grid_fits(grid_x: u32, block_x: u32) -> bool {
    u64::from(grid_x).saturating_mul(u64::from(block_x)) <= PROOF_MAX_THREADS_X
}
