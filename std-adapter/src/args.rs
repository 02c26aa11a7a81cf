//! [`LaunchArgs`]: a launch's arguments as the host parsed them, pointer-free, kept as the tag
//! bytes and value bits a launcher copies into its parameter slots.

use core::fmt;
use core::hash::{Hash, Hasher};

use kernel_args_core::{
    Arg, ArgSink, ArgTag, F32Bits, F64Bits, GuestRange, LoweredArg, LoweredArgSnapshot, MAX_KERNEL_ARGS,
    SinkFull,
};

/// A launch's arguments, pointer-free (a window as its guest offset and length), in fixed
/// capacity: what [`LaunchHost::call`](crate::LaunchHost::call) parses the argv into and hands
/// a launcher in its [`LaunchRequest`](crate::LaunchRequest).
///
/// Each argument is kept as its tag byte ([`tag_bytes`](Self::tag_bytes)) and its value's bits
/// ([`bits`](Self::bits)), the parser writing both at the argument's index: a launcher copies
/// values into its parameter slots, and a declaration compares types, as runs of bytes, without
/// a match per argument. The parser also notes each pointer argument's index as it reads it, so
/// [`pointers`](Self::pointers) visits the pointer arguments alone without looking at the
/// others. [`get`](Self::get) and [`iter`](Self::iter) give the arguments as values to match on.
///
/// ```
/// use kernel_args::LaunchArgs;
/// use kernel_args_core::{GuestMemory, GuestRange, LoweredArgSnapshot, parse_argv_into};
///
/// let argv = [0x01, 0xf9, 0xff, 0xff, 0xff, 0x07, 16, 0, 0, 0, 8, 0, 0, 0];
/// let mut args = LaunchArgs::new();
/// parse_argv_into(&argv, &GuestMemory::length_only(64), &mut args)?;
/// let window = GuestRange { guest_offset: 16, len: 8 };
/// assert_eq!(args, [LoweredArgSnapshot::I32(-7), LoweredArgSnapshot::Ptr(window)]);
/// assert_eq!(args.tag_bytes(), &[0x01, 0x07]);
/// assert_eq!(args.bits(), &[0xffff_fff9, 8 << 32 | 16]);
/// assert_eq!(args.pointers().collect::<Vec<_>>(), [(1, window)]);
/// # Ok::<(), kernel_args_core::ArgvError>(())
/// ```
#[derive(Clone)]
pub struct LaunchArgs {
    /// INVARIANT: at most `MAX_KERNEL_ARGS`.
    len: usize,
    /// INVARIANT: entries `..len` are each argument's tag byte (a valid tag).
    tags: [u8; MAX_KERNEL_ARGS],
    /// INVARIANT: entries `..len` are each argument's bits (see [`LaunchArgs::bits`]).
    bits: [u64; MAX_KERNEL_ARGS],
    /// INVARIANT: at most `MAX_KERNEL_ARGS`.
    pointer_count: usize,
    /// INVARIANT: entries `..pointer_count` are the indices (each below `MAX_KERNEL_ARGS`, so a
    /// byte holds it) of the pointer arguments, in increasing order; once the parse is finished,
    /// exactly those below `len` whose tag is a pointer's.
    pointer_indices: [u8; MAX_KERNEL_ARGS],
}

// Every argument index fits the byte `pointer_indices` keeps it in.
const _: () = assert!(MAX_KERNEL_ARGS <= 1 << u8::BITS);

impl LaunchArgs {
    /// No arguments.
    pub const fn new() -> LaunchArgs {
        LaunchArgs {
            len: 0,
            tags: [0; MAX_KERNEL_ARGS],
            bits: [0; MAX_KERNEL_ARGS],
            pointer_count: 0,
            pointer_indices: [0; MAX_KERNEL_ARGS],
        }
    }

    /// The arguments of `args`, or `None` past [`MAX_KERNEL_ARGS`].
    pub fn from_slice(args: &[LoweredArgSnapshot]) -> Option<LaunchArgs> {
        let mut out = LaunchArgs::new();
        for (index, arg) in args.iter().enumerate() {
            out.set(index, *arg).ok()?;
        }
        out.len = args.len();
        Some(out)
    }

    /// The number of arguments.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` without arguments.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Argument `index`, or `None` past the last.
    #[inline]
    pub fn get(&self, index: usize) -> Option<LoweredArgSnapshot> {
        let tag = *self.tag_bytes().get(index)?;
        let bits = *self.bits().get(index)?;
        Some(decode(tag, bits))
    }

    /// Argument `index`'s window, or `None` when it is not a pointer (or past the last).
    #[inline]
    pub fn window(&self, index: usize) -> Option<GuestRange> {
        match self.tag_bytes().get(index) {
            Some(&tag) if tag == ArgTag::Ptr.byte() => self.bits().get(index).map(|&bits| window_of(bits)),
            _ => None,
        }
    }

    /// The arguments, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = LoweredArgSnapshot> + '_ {
        self.tag_bytes().iter().zip(self.bits()).map(|(&tag, &bits)| decode(tag, bits))
    }

    /// Each argument's tag byte (`0x01` for an `i32` ... `0x07` for a pointer), in order.
    #[inline]
    pub fn tag_bytes(&self) -> &[u8] {
        self.tags.get(..self.len).unwrap_or_default()
    }

    /// Each argument's bits, in order: a scalar's value bits zero-extended to 64 (an `i32`'s and
    /// an `f32`'s 32 bits, not sign-extended), so that on a little-endian host they are the
    /// value's bytes followed by zeros; a pointer's window as `guest_offset | len << 32`.
    #[inline]
    pub fn bits(&self) -> &[u64] {
        self.bits.get(..self.len).unwrap_or_default()
    }

    /// The pointer arguments, in order: each one's index and window. Visits only them (their
    /// indices are noted as the argv is parsed).
    #[inline]
    pub fn pointers(&self) -> impl Iterator<Item = (usize, GuestRange)> + '_ {
        let indices = self.pointer_indices.get(..self.pointer_count).unwrap_or_default();
        let bits = self.bits();
        // By the invariant every index is below `len`, so `map_while` never stops early and
        // `bits.get` always finds the argument.
        indices
            .iter()
            .map(|&index| usize::from(index))
            .map_while(move |index| bits.get(index).map(|&bits| (index, window_of(bits))))
    }

    /// Forgets every argument.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.pointer_count = 0;
    }

    /// Writes argument `index` (not counted until `len` covers it).
    #[inline(always)]
    fn set(&mut self, index: usize, arg: LoweredArgSnapshot) -> Result<(), SinkFull> {
        let (Some(tag), Some(bits)) = (self.tags.get_mut(index), self.bits.get_mut(index)) else {
            return Err(SinkFull);
        };
        *tag = arg.tag().byte();
        *bits = match arg {
            Arg::I32(v) => u64::from(v.cast_unsigned()),
            Arg::I64(v) => v.cast_unsigned(),
            Arg::F32(v) => u64::from(v.0),
            Arg::F64(v) => v.0,
            Arg::U32(v) => u64::from(v),
            Arg::U64(v) => v,
            Arg::Ptr(w) => {
                // `index < MAX_KERNEL_ARGS` (the `get_mut`s above), and there are at most as many
                // pointers as indices: the slot exists and the index fits a byte.
                if let Some(slot) = self.pointer_indices.get_mut(self.pointer_count) {
                    *slot = index as u8;
                    self.pointer_count = self.pointer_count.saturating_add(1);
                }
                u64::from(w.guest_offset) | u64::from(w.len) << 32
            }
        };
        Ok(())
    }
}

/// The window a pointer argument's bits hold (see [`LaunchArgs::bits`]).
#[inline(always)]
pub(crate) const fn window_of(bits: u64) -> GuestRange {
    GuestRange { guest_offset: bits as u32, len: (bits >> 32) as u32 }
}

/// The argument a tag byte and bits hold.
#[inline]
fn decode(tag: u8, bits: u64) -> LoweredArgSnapshot {
    // The casts keep exactly the bits `LaunchArgs::set` stored.
    match ArgTag::from_byte(tag) {
        Some(ArgTag::I32) => Arg::I32((bits as u32).cast_signed()),
        Some(ArgTag::I64) => Arg::I64(bits.cast_signed()),
        Some(ArgTag::F32) => Arg::F32(F32Bits(bits as u32)),
        Some(ArgTag::F64) => Arg::F64(F64Bits(bits)),
        Some(ArgTag::U32) => Arg::U32(bits as u32),
        Some(ArgTag::Ptr) => Arg::Ptr(window_of(bits)),
        // `U64`, and (unreachable by the invariant) a byte that is no tag.
        Some(ArgTag::U64) | None => Arg::U64(bits),
    }
}

impl Default for LaunchArgs {
    fn default() -> LaunchArgs {
        LaunchArgs::new()
    }
}

/// Equal arguments: the same tags and bits (floats compare by bits).
impl PartialEq for LaunchArgs {
    fn eq(&self, other: &LaunchArgs) -> bool {
        self.tag_bytes() == other.tag_bytes() && self.bits() == other.bits()
    }
}

impl Eq for LaunchArgs {}

impl PartialEq<[LoweredArgSnapshot]> for LaunchArgs {
    fn eq(&self, other: &[LoweredArgSnapshot]) -> bool {
        self.len == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl<const N: usize> PartialEq<[LoweredArgSnapshot; N]> for LaunchArgs {
    fn eq(&self, other: &[LoweredArgSnapshot; N]) -> bool {
        *self == other[..]
    }
}

impl PartialEq<LaunchArgs> for [LoweredArgSnapshot] {
    fn eq(&self, other: &LaunchArgs) -> bool {
        *other == *self
    }
}

impl PartialEq<&[LoweredArgSnapshot]> for LaunchArgs {
    fn eq(&self, other: &&[LoweredArgSnapshot]) -> bool {
        *self == **other
    }
}

impl Hash for LaunchArgs {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.tag_bytes().hash(state);
        self.bits().hash(state);
    }
}

impl fmt::Debug for LaunchArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for LaunchArgs {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "[");
        for (i, arg) in self.iter().enumerate() {
            if i > 0 {
                defmt::write!(f, ", ");
            }
            defmt::write!(f, "{}", arg);
        }
        defmt::write!(f, "]");
    }
}

/// The parser's sink: each argument's tag byte and bits written at its index, in the pass that
/// checks it; the count set when the whole argv is accepted.
impl<'m> ArgSink<'m> for LaunchArgs {
    #[inline]
    fn capacity(&self) -> usize {
        MAX_KERNEL_ARGS
    }

    #[inline]
    fn clear(&mut self) {
        LaunchArgs::clear(self);
    }

    #[inline(always)]
    fn push(&mut self, index: usize, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
        self.set(index, arg.snapshot())
    }

    #[inline]
    fn finish(&mut self, count: usize) {
        self.len = count.min(MAX_KERNEL_ARGS);
    }
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use kernel_args_core::{GuestMemory, encode_argv, parse_argv_into};

    use super::*;

    fn every_type() -> [LoweredArgSnapshot; 7] {
        [
            Arg::I32(-7),
            Arg::I64(-2),
            Arg::F32(F32Bits(0x7fc0_0001)),
            Arg::F64(F64Bits::from_f64(-0.0)),
            Arg::U32(u32::MAX),
            Arg::U64(42),
            Arg::Ptr(GuestRange { guest_offset: 8, len: 3 }),
        ]
    }

    #[test]
    fn bits_are_the_values_native_bytes_and_windows_packed() {
        let all = every_type();
        let args = LaunchArgs::from_slice(&all).unwrap();
        assert_eq!(args, all);
        assert_eq!(args.iter().collect::<Vec<_>>(), all);
        assert_eq!((0..8).map(|i| args.get(i)).collect::<Vec<_>>()[6..], [Some(all[6]), None]);
        assert_eq!(args.tag_bytes(), &[1, 2, 3, 4, 5, 6, 7]);
        for (i, arg) in all.iter().enumerate().take(6) {
            let size = arg.tag().value_size();
            assert_eq!(args.bits()[i].to_le_bytes()[..size], arg_bytes(arg)[..], "argument {i}");
            assert!(args.bits()[i].to_le_bytes()[size..].iter().all(|&b| b == 0), "zero-extended");
        }
        assert_eq!(args.bits()[6], 3 << 32 | 8);
        assert_eq!(args.pointers().collect::<Vec<_>>(), [(6, GuestRange { guest_offset: 8, len: 3 })]);
        assert_eq!(
            (args.window(6), args.window(5), args.window(7)),
            (Some(GuestRange { guest_offset: 8, len: 3 }), None, None)
        );
        let mixed = LaunchArgs::from_slice(&[all[6], all[0], all[6], all[6]]).unwrap();
        assert_eq!(mixed.pointers().map(|(i, _)| i).collect::<Vec<_>>(), [0, 2, 3]);
        assert!(LaunchArgs::from_slice(&[Arg::U32(0); MAX_KERNEL_ARGS + 1]).is_none());
        let mut cleared = args.clone();
        cleared.clear();
        assert!(cleared.is_empty() && cleared.tag_bytes().is_empty() && cleared.bits().is_empty());
        assert_eq!((cleared.pointers().next(), cleared.get(0)), (None, None));
        assert_eq!(format!("{:?}", LaunchArgs::from_slice(&all[4..5]).unwrap()), "[U32(4294967295)]");
        assert_ne!(args, LaunchArgs::from_slice(&all[..6]).unwrap());
    }

    #[test]
    fn a_parse_writes_every_argument_and_a_refused_one_leaves_none() {
        let all = every_type();
        let mut argv = [0u8; 64];
        let n = encode_argv(&all, &mut argv).unwrap();
        let mut args = LaunchArgs::new();
        parse_argv_into(&argv[..n], &GuestMemory::length_only(16), &mut args).unwrap();
        assert_eq!(args, all);
        // The same argv against a memory too short for its window: refused, nothing kept.
        assert!(parse_argv_into(&argv[..n], &GuestMemory::length_only(10), &mut args).is_err());
        assert!(args.is_empty() && args.iter().next().is_none());
        // A full capacity.
        let full = [Arg::Ptr(GuestRange { guest_offset: 0, len: 1 }); MAX_KERNEL_ARGS];
        let mut argv = [0u8; 9 * MAX_KERNEL_ARGS];
        let n = encode_argv(&full, &mut argv).unwrap();
        parse_argv_into(&argv[..n], &GuestMemory::length_only(1), &mut args).unwrap();
        assert_eq!(args.pointers().count(), MAX_KERNEL_ARGS);
        assert_eq!(args, full);
    }

    fn arg_bytes(arg: &LoweredArgSnapshot) -> Vec<u8> {
        match *arg {
            Arg::I32(v) => v.to_le_bytes().to_vec(),
            Arg::I64(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.0.to_le_bytes().to_vec(),
            Arg::F64(v) => v.0.to_le_bytes().to_vec(),
            Arg::U32(v) => v.to_le_bytes().to_vec(),
            Arg::U64(v) => v.to_le_bytes().to_vec(),
            Arg::Ptr(_) => Vec::new(),
        }
    }
}
