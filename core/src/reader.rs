//! The one decoder of the wire format, and the three shapes the parser comes in: into a
//! caller's [`ArgSink`] ([`parse_argv_into`]), into a new [`ParsedArgv`] ([`parse_argv`]), and
//! record by record with each record's place ([`RecordReader`], in the spirit of wasmparser's
//! `BinaryReader`). All three apply the rules of `docs/wire-format.md` ("Parsing rules and their
//! precedence") through the same private `read_record`; the rule numbers in the comments below
//! are that section's.

use zerocopy::{FromBytes, Unaligned};

use crate::arg::{Arg, F32Bits, F64Bits, LoweredArg};
use crate::error::{ArgvError, ErrorKind};
use crate::limits::{MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES};
use crate::memory::GuestMemory;
use crate::wire::{ArgTag, F32Value, F64Value, I32Value, I64Value, PtrValue, U32Value, U64Value};

/// One record as the reader yields it: the argument plus where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Record<'m> {
    /// The record's 0-based index in the buffer.
    pub index: usize,
    /// The byte offset at which the record (its tag byte) starts.
    pub offset: usize,
    /// The parsed, bounds-checked argument.
    pub arg: LoweredArg<'m>,
}

/// An iterator over the records of an argv buffer that validates each one as it reads it.
///
/// Yields `Ok(Record)` for each valid record and, at the first invalid one, a single
/// `Err(ArgvError)`, after which it is exhausted. It never allocates and never panics.
///
/// ```
/// use kernel_args_core::{GuestMemory, LoweredArg, RecordReader};
///
/// let buf = [0x05, 42, 0, 0, 0, 0x07, 16, 0, 0, 0, 8, 0, 0, 0];
/// let memory = GuestMemory::length_only(64);
/// let mut reader = RecordReader::new(&buf, &memory).unwrap();
/// let first = reader.next().unwrap().unwrap();
/// assert_eq!((first.index, first.offset, first.arg), (0, 0, LoweredArg::U32(42)));
/// let second = reader.next().unwrap().unwrap();
/// assert_eq!(second.offset, 5);
/// assert!(reader.next().is_none());
/// ```
#[derive(Debug)]
pub struct RecordReader<'a, 'm> {
    buf: &'a [u8],
    memory: &'a GuestMemory<'m>,
    /// Start of the next record. INVARIANT: `pos <= buf.len()`.
    pos: usize,
    /// Records yielded so far (the next record's index).
    index: usize,
    max_records: usize,
    done: bool,
}

#[cfg(feature = "defmt")]
impl defmt::Format for RecordReader<'_, '_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "RecordReader {{ len: {=usize}, offset: {=usize}, records_read: {=usize}, max_records: {=usize} }}",
            self.buf.len(),
            self.pos,
            self.index,
            self.max_records
        )
    }
}

impl<'a, 'm> RecordReader<'a, 'm> {
    /// A reader over `buf`, checking windows against `memory`, capped at
    /// [`MAX_KERNEL_ARGS`] records.
    ///
    /// Fails with [`ErrorKind::BufferTooLong`] when `buf` exceeds [`MAX_KERNEL_ARGS_BYTES`]:
    /// rule 1 is decided before any byte is read.
    #[inline]
    pub fn new(buf: &'a [u8], memory: &'a GuestMemory<'m>) -> Result<Self, ArgvError> {
        check_argv_len(buf.len())?;
        Ok(RecordReader { buf, memory, pos: 0, index: 0, max_records: MAX_KERNEL_ARGS, done: false })
    }

    /// Lowers the record cap to `max` (it never rises above [`MAX_KERNEL_ARGS`]).
    #[must_use]
    #[inline]
    pub fn with_max_records(mut self, max: usize) -> Self {
        self.max_records = max.min(MAX_KERNEL_ARGS);
        self
    }

    /// The record cap in force.
    pub fn max_records(&self) -> usize {
        self.max_records
    }

    /// The byte offset at which the next record starts.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// `true` once every byte has been read or an error was yielded.
    pub fn is_finished(&self) -> bool {
        self.done || self.pos >= self.buf.len()
    }

    fn fail(&mut self, kind: ErrorKind) -> Option<Result<Record<'m>, ArgvError>> {
        self.done = true;
        Some(Err(ArgvError::new(kind, self.index, self.pos)))
    }
}

/// The byte cap (rule 1): an argv of `len` bytes is refused, before any of its bytes is read,
/// when `len` exceeds [`MAX_KERNEL_ARGS_BYTES`]. Every parser here applies it first; a host
/// that has the length before it has the bytes (the argument region of a host call, a C
/// caller's `argv_len`) calls it before it makes a slice of them, and gets the same error.
///
/// ```
/// use kernel_args_core::{ErrorKind, MAX_KERNEL_ARGS_BYTES, check_argv_len};
///
/// assert!(check_argv_len(MAX_KERNEL_ARGS_BYTES).is_ok());
/// let err = check_argv_len(MAX_KERNEL_ARGS_BYTES + 1).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::BufferTooLong { len: 4097, max: 4096 });
/// assert_eq!((err.index(), err.offset()), (0, 0));
/// ```
#[inline]
pub fn check_argv_len(len: usize) -> Result<(), ArgvError> {
    if len > MAX_KERNEL_ARGS_BYTES {
        return Err(ArgvError::new(ErrorKind::BufferTooLong { len, max: MAX_KERNEL_ARGS_BYTES }, 0, 0));
    }
    Ok(())
}

/// Reads the value of type `V` at the start of `value` (the bytes after a record's tag byte):
/// the value and the bytes after the record, or rule 4's error. The layout's size is the one
/// length check.
#[inline(always)]
fn read_value<V: FromBytes + Unaligned>(value: &[u8], tag: ArgTag) -> Result<(V, &[u8]), ErrorKind> {
    match V::read_from_prefix(value) {
        Ok(read) => Ok(read),
        Err(_) => Err(ErrorKind::TruncatedRecord { tag, needed: tag.value_size(), present: value.len() }),
    }
}

/// Reads the record whose tag byte is `tag_byte` and whose value bytes start `value`, applying
/// rules 3 to 5 (the caller applies rules 1 and 2): the argument and the bytes after the
/// record. The record's layout is `wire::RecordLayout`: a tag byte, then the value.
///
/// The one place records are decoded, shared by [`RecordReader`] and [`parse_argv`]; inlined
/// into both so that the parser's loop has no call and no intermediate value per record.
#[inline(always)]
fn read_record<'b, 'm>(
    tag_byte: u8,
    value: &'b [u8],
    memory: &GuestMemory<'m>,
) -> Result<(LoweredArg<'m>, &'b [u8]), ErrorKind> {
    // Rule 3.
    let Some(tag) = ArgTag::from_byte(tag_byte) else {
        return Err(ErrorKind::UnknownTag { tag: tag_byte });
    };
    // Rule 4 is each arm's `read_value`; rule 5 the pointer arm's window check.
    Ok(match tag {
        ArgTag::I32 => read_value::<I32Value>(value, tag).map(|(v, rest)| (Arg::I32(v.get()), rest))?,
        ArgTag::I64 => read_value::<I64Value>(value, tag).map(|(v, rest)| (Arg::I64(v.get()), rest))?,
        ArgTag::F32 => {
            read_value::<F32Value>(value, tag).map(|(v, rest)| (Arg::F32(F32Bits(v.get())), rest))?
        }
        ArgTag::F64 => {
            read_value::<F64Value>(value, tag).map(|(v, rest)| (Arg::F64(F64Bits(v.get())), rest))?
        }
        ArgTag::U32 => read_value::<U32Value>(value, tag).map(|(v, rest)| (Arg::U32(v.get()), rest))?,
        ArgTag::U64 => read_value::<U64Value>(value, tag).map(|(v, rest)| (Arg::U64(v.get()), rest))?,
        ArgTag::Ptr => {
            let (p, rest) = read_value::<PtrValue>(value, tag)?;
            let (guest_offset, len) = (p.guest_offset.get(), p.len.get());
            match memory.window(guest_offset, len) {
                Some(window) => (Arg::Ptr(window), rest),
                None => {
                    let memory_len = memory.len();
                    return Err(ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len });
                }
            }
        }
    })
}

impl<'m> Iterator for RecordReader<'_, 'm> {
    type Item = Result<Record<'m>, ArgvError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let Some(rec) = self.buf.get(self.pos..) else {
            // Unreachable by the invariant; ends the walk rather than panicking.
            self.done = true;
            return None;
        };
        let Some((&tag_byte, value)) = rec.split_first() else {
            self.done = true;
            return None;
        };
        // Rule 2: the cap is checked when a record starts, before its tag is looked at.
        if self.index >= self.max_records {
            return self.fail(ErrorKind::TooManyRecords { max: self.max_records });
        }
        match read_record(tag_byte, value, self.memory) {
            Ok((arg, rest)) => {
                let record = Record { index: self.index, offset: self.pos, arg };
                // Both stay bounded: `rest` is a suffix of `buf`, and
                // `index < max_records <= MAX_KERNEL_ARGS`.
                self.pos = self.buf.len().saturating_sub(rest.len());
                self.index = self.index.saturating_add(1);
                Some(Ok(record))
            }
            Err(kind) => self.fail(kind),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        // At most one item per remaining byte, plus a possible error.
        (0, Some(self.buf.len().saturating_sub(self.pos)))
    }
}

impl core::iter::FusedIterator for RecordReader<'_, '_> {}

/// The output of [`parse_argv`]: a fixed-capacity vector of arguments. `N` defaults to
/// [`MAX_KERNEL_ARGS`]; a small host may choose less.
pub type ParsedArgv<'m, const N: usize = MAX_KERNEL_ARGS> = heapless::Vec<LoweredArg<'m>, N>;

/// A sink that is full: returned by [`ArgSink::push`] when it holds
/// [`capacity`](ArgSink::capacity) arguments already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SinkFull;

/// Where [`parse_argv_into`] puts the arguments it accepts, in order.
///
/// The parser is one loop, generic over its sink and inlined into each caller, so a sink that
/// turns each argument into what its host needs (a [`ParsedArgv`], pointer-free snapshots, a
/// launcher's parameter slots) gets it in the same pass that reads and checks the record,
/// with no intermediate list. Every rule stays the parser's: the sink sees only arguments that
/// passed all of them, and the record cap, the record index and the error are the parser's
/// own, whatever the sink does.
///
/// Implemented for every `heapless::Vec<T, N>` whose `T` converts from a [`LoweredArg`]: a
/// [`ParsedArgv`] and a vector of [`LoweredArgSnapshot`](crate::LoweredArgSnapshot)s.
///
/// ```
/// use kernel_args_core::{ArgSink, GuestMemory, LoweredArg, SinkFull, parse_argv_into};
///
/// /// Keeps only the sum of the `u32` arguments.
/// #[derive(Default)]
/// struct SumU32 { sum: u64, len: usize }
///
/// impl<'m> ArgSink<'m> for SumU32 {
///     fn capacity(&self) -> usize { 16 }
///     fn clear(&mut self) { *self = SumU32::default(); }
///     fn push(&mut self, _index: usize, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
///         if let LoweredArg::U32(v) = arg { self.sum += u64::from(v); }
///         Ok(())
///     }
///     fn finish(&mut self, count: usize) { self.len = count; }
/// }
///
/// let mut sink = SumU32::default();
/// let buf = [0x05, 2, 0, 0, 0, 0x01, 9, 0, 0, 0, 0x05, 3, 0, 0, 0];
/// parse_argv_into(&buf, &GuestMemory::length_only(0), &mut sink)?;
/// assert_eq!((sink.sum, sink.len), (5, 3));
/// # Ok::<(), kernel_args_core::ArgvError>(())
/// ```
pub trait ArgSink<'m> {
    /// The most arguments it takes. The parser's record cap is this or [`MAX_KERNEL_ARGS`],
    /// whichever is smaller.
    fn capacity(&self) -> usize;

    /// Forgets every argument pushed so far. The parser calls it before the first record
    /// and after any error, so nothing of an earlier or a refused buffer survives.
    fn clear(&mut self);

    /// Takes `arg`, argument `index` in argv order. After a `clear` the parser calls it with
    /// `index` 0, 1, 2, ..., always below `min(capacity(), MAX_KERNEL_ARGS)` (so a sink can
    /// write each argument at its index without a count of its own); a sink that refuses
    /// anyway makes the parse fail with [`ErrorKind::TooManyRecords`] at that record, never
    /// drop it.
    fn push(&mut self, index: usize, arg: LoweredArg<'m>) -> Result<(), SinkFull>;

    /// Called once the whole argv is accepted, with the number of arguments pushed (never
    /// after an error, which ends in a `clear`). The default does nothing.
    #[inline]
    fn finish(&mut self, count: usize) {
        let _ = count;
    }
}

/// Any fixed-capacity vector of something an argument converts into: [`ParsedArgv`] keeps the
/// arguments as they are, a vector of [`LoweredArgSnapshot`](crate::LoweredArgSnapshot)s keeps them pointer-free.
impl<'m, T: From<LoweredArg<'m>>, const N: usize> ArgSink<'m> for heapless::Vec<T, N> {
    #[inline]
    fn capacity(&self) -> usize {
        N
    }

    #[inline]
    fn clear(&mut self) {
        heapless::Vec::clear(self);
    }

    #[inline]
    fn push(&mut self, _index: usize, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
        heapless::Vec::push(self, T::from(arg)).map_err(|_| SinkFull)
    }
}

/// Parses a tagged argv buffer into at most `N` arguments, bounds-checking every pointer
/// window against `memory`. Never allocates, never panics.
///
/// The record cap is `min(N, MAX_KERNEL_ARGS)`. The rules and their precedence are those of
/// `docs/wire-format.md`.
///
/// ```
/// use kernel_args_core::{ErrorCode, GuestMemory, LoweredArg, ParsedArgv, parse_argv};
///
/// let mut memory = vec![0u8; 1024];
/// let guest = GuestMemory::exclusive(&mut memory);
/// // i32 -7, then ptr { offset 64, len 128 }
/// let buf = [0x01, 0xf9, 0xff, 0xff, 0xff, 0x07, 64, 0, 0, 0, 128, 0, 0, 0];
/// let args: ParsedArgv = parse_argv(&buf, &guest)?;
/// assert_eq!(args[0], LoweredArg::I32(-7));
/// let LoweredArg::Ptr(window) = args[1] else { unreachable!() };
/// assert_eq!((window.guest_offset(), window.len()), (64, 128));
///
/// let err = parse_argv::<4>(&[0x01, 0, 0, 0, 0, 0xff], &guest).unwrap_err();
/// assert_eq!((err.code(), err.index(), err.offset()), (ErrorCode::InvalidArgs, 1, 5));
/// assert_eq!(err.to_string(), "unknown tag 0xff at byte 5 (record 1)");
/// # Ok::<(), kernel_args_core::ArgvError>(())
/// ```
pub fn parse_argv<'m, const N: usize>(
    buf: &[u8],
    memory: &GuestMemory<'m>,
) -> Result<ParsedArgv<'m, N>, ArgvError> {
    let mut out = ParsedArgv::new();
    parse_argv_into(buf, memory, &mut out)?;
    Ok(out)
}

/// Like [`parse_argv`], into a caller's [`ArgSink`] (a [`ParsedArgv`], snapshots, or a
/// launcher's own storage), which is cleared first and cleared again on error, so no argument
/// from an earlier call, nor a refused buffer's first records, can survive into this one.
///
/// The record cap is `min(out.capacity(), MAX_KERNEL_ARGS)`. The parser's loop is inlined into
/// each caller with the sink's `push`, so the argument is written straight where the sink
/// keeps it.
#[inline]
pub fn parse_argv_into<'m, S: ArgSink<'m> + ?Sized>(
    buf: &[u8],
    memory: &GuestMemory<'m>,
    out: &mut S,
) -> Result<(), ArgvError> {
    out.clear();
    let result = fill(buf, memory, out);
    if result.is_err() {
        out.clear();
    }
    result
}

/// The error of a record [`read_record`] refused, at record `index`, byte `offset`: kept out of
/// the parser's loop so that no error field is carried through it.
#[cold]
#[inline(never)]
fn record_error(
    tag_byte: u8,
    value: &[u8],
    memory: &GuestMemory<'_>,
    index: usize,
    offset: usize,
) -> ArgvError {
    let kind = match read_record(tag_byte, value, memory) {
        Err(kind) => kind,
        // Unreachable: `read_record` is deterministic and refused this record. Reported as an
        // unknown tag rather than a panic.
        Ok(_) => ErrorKind::UnknownTag { tag: tag_byte },
    };
    ArgvError::new(kind, index, offset)
}

/// The error for a record that starts when the cap is reached (or that a full sink refused).
#[cold]
#[inline(never)]
fn cap_error(cap: usize, index: usize, offset: usize) -> ArgvError {
    ArgvError::new(ErrorKind::TooManyRecords { max: cap }, index, offset)
}

/// The parser's loop: [`RecordReader`]'s rules and its `read_record`, without the iterator's
/// bookkeeping, handing each argument straight to `out` (which the caller has cleared).
#[inline(always)]
fn fill<'m, S: ArgSink<'m> + ?Sized>(
    buf: &[u8],
    memory: &GuestMemory<'m>,
    out: &mut S,
) -> Result<(), ArgvError> {
    check_argv_len(buf.len())?;
    let cap = out.capacity().min(MAX_KERNEL_ARGS);
    let mut rest = buf;
    // The parser counts records itself: the cap and the error's record index never depend
    // on the sink. `index < cap <= MAX_KERNEL_ARGS`, so it cannot overflow.
    let mut index = 0usize;
    while let Some((&tag_byte, value)) = rest.split_first() {
        // Rule 2. (The offset is only computed on error paths; `rest` is a suffix of `buf`.)
        if index >= cap {
            return Err(cap_error(cap, index, buf.len().saturating_sub(rest.len())));
        }
        // The hot path keeps no error data: a refused record is read again, cold, for its
        // error (the same `read_record`, so the same rule decides).
        let Ok((arg, next)) = read_record(tag_byte, value, memory) else {
            return Err(record_error(tag_byte, value, memory, index, buf.len().saturating_sub(rest.len())));
        };
        // Refused rather than dropped if a sink holds fewer than it said.
        if out.push(index, arg).is_err() {
            return Err(cap_error(cap, index, buf.len().saturating_sub(rest.len())));
        }
        index = index.saturating_add(1);
        rest = next;
    }
    out.finish(index);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arg::LoweredArgSnapshot as S;
    use crate::encode::encode_argv;
    use crate::error::ErrorCode;
    use crate::memory::GuestRange;

    /// One record of every type: i32 -7, i64 min, f32 1.5, f64 NaN with a payload, u32 max,
    /// u64 42, ptr { 64, 128 }.
    static EVERY_TYPE: [u8; 51] = [
        0x01, 0xf9, 0xff, 0xff, 0xff, //
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, //
        0x03, 0x00, 0x00, 0xc0, 0x3f, //
        0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x7f, //
        0x05, 0xff, 0xff, 0xff, 0xff, //
        0x06, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x07, 0x40, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    ];

    fn snapshots<const N: usize>(args: &ParsedArgv<'_, N>) -> heapless::Vec<S, N> {
        args.iter().map(S::from).collect()
    }

    fn parse_err(buf: &[u8], mem_len: u64) -> (ErrorCode, usize, usize, ErrorKind) {
        let mem = GuestMemory::length_only(mem_len);
        let e = parse_argv::<MAX_KERNEL_ARGS>(buf, &mem).unwrap_err();
        (e.code(), e.index(), e.offset(), e.kind())
    }

    #[test]
    fn test_deconstruct() {
        let mut memory = [0u8; 192];
        let guest = GuestMemory::exclusive(&mut memory);
        let args: ParsedArgv = parse_argv(&EVERY_TYPE, &guest).unwrap();
        let expected = [
            S::I32(-7),
            S::I64(i64::MIN),
            S::F32(F32Bits::from_f32(1.5)),
            S::F64(F64Bits(0x7ff8_0000_0000_0001)),
            S::U32(u32::MAX),
            S::U64(42),
            S::Ptr(GuestRange { guest_offset: 64, len: 128 }),
        ];
        assert_eq!(snapshots(&args).as_slice(), &expected);
    }

    #[test]
    fn test_construct() {
        let mut memory = [0u8; 192];
        let guest = GuestMemory::exclusive(&mut memory);
        let args: ParsedArgv = parse_argv(&EVERY_TYPE, &guest).unwrap();
        let mut out = [0u8; 64];
        let n = encode_argv(&args, &mut out).unwrap();
        assert_eq!(&out[..n], &EVERY_TYPE[..]);
    }

    #[test]
    fn record_offsets_follow_wire_sizes() {
        let mem = GuestMemory::length_only(192);
        let offsets: heapless::Vec<usize, 8> =
            RecordReader::new(&EVERY_TYPE, &mem).unwrap().map(|r| r.unwrap().offset).collect();
        assert_eq!(offsets.as_slice(), &[0, 5, 14, 19, 28, 33, 42]);
    }

    #[test]
    fn empty_buffer_is_no_arguments() {
        let args: ParsedArgv = parse_argv(&[], &GuestMemory::length_only(0)).unwrap();
        assert!(args.is_empty());
    }

    #[test]
    fn test_impossible_len() {
        // A truncated record at each possible cut of every record type.
        for tag in ArgTag::ALL {
            for present in 0..tag.value_size() {
                let mut buf = [0u8; 9];
                buf[0] = tag.byte();
                let got = parse_err(&buf[..1 + present], 1 << 32);
                let kind = ErrorKind::TruncatedRecord { tag, needed: tag.value_size(), present };
                assert_eq!(got, (ErrorCode::InvalidArgs, 0, 0, kind));
            }
        }
    }

    #[test]
    fn unknown_tags_name_the_byte() {
        for tag in [0x00, 0x08, 0x80, 0xff] {
            let got = parse_err(&[0x05, 1, 0, 0, 0, tag, 0, 0, 0, 0], 0);
            assert_eq!(got, (ErrorCode::InvalidArgs, 1, 5, ErrorKind::UnknownTag { tag }));
        }
    }

    #[test]
    fn pointer_windows_at_the_memory_boundary() {
        let ptr = |off: u32, len: u32| {
            let mut b = [0x07, 0, 0, 0, 0, 0, 0, 0, 0];
            b[1..5].copy_from_slice(&off.to_le_bytes());
            b[5..9].copy_from_slice(&len.to_le_bytes());
            b
        };
        let ok = |b: [u8; 9], mem: u64| parse_argv::<1>(&b, &GuestMemory::length_only(mem)).is_ok();
        assert!(ok(ptr(100, 0), 100), "zero-length window at the end");
        assert!(ok(ptr(60, 40), 100), "window ending exactly at the end");
        assert!(ok(ptr(0, 0), 0), "zero-length window in empty memory");
        assert!(!ok(ptr(101, 0), 100), "zero-length window past the end");
        assert!(!ok(ptr(60, 41), 100), "one byte past the end");
        assert!(ok(ptr(u32::MAX, 1), 1 << 32), "last byte of a 4 GiB memory");
        let got = parse_err(&ptr(u32::MAX, u32::MAX), 1 << 32);
        let kind =
            ErrorKind::WindowOutOfBounds { guest_offset: u32::MAX, len: u32::MAX, memory_len: 1 << 32 };
        assert_eq!(got, (ErrorCode::InvalidPointer, 0, 0, kind), "offset + len beyond u32");
    }

    #[test]
    fn caps_and_their_precedence() {
        // Rule 1 beats everything, even a first byte that is an unknown tag.
        let long = [0xffu8; MAX_KERNEL_ARGS_BYTES + 1];
        let kind = ErrorKind::BufferTooLong { len: MAX_KERNEL_ARGS_BYTES + 1, max: MAX_KERNEL_ARGS_BYTES };
        assert_eq!(parse_err(&long, 0), (ErrorCode::KernelArgsUnsupported, 0, 0, kind));

        // Exactly at the record cap: accepted. One more record start, even an invalid one: -10.
        let mut buf = [0u8; 5 * MAX_KERNEL_ARGS + 1];
        for rec in buf.chunks_mut(5) {
            rec[0] = ArgTag::U32.byte();
        }
        let args: ParsedArgv = parse_argv(&buf[..5 * MAX_KERNEL_ARGS], &GuestMemory::length_only(0)).unwrap();
        assert_eq!(args.len(), MAX_KERNEL_ARGS);
        buf[5 * MAX_KERNEL_ARGS] = 0xff;
        let kind = ErrorKind::TooManyRecords { max: MAX_KERNEL_ARGS };
        assert_eq!(parse_err(&buf, 0), (ErrorCode::KernelArgsUnsupported, 128, 640, kind));

        // A smaller capacity is a smaller cap.
        let err = parse_argv::<2>(&buf[..15], &GuestMemory::length_only(0)).unwrap_err();
        assert_eq!((err.index(), err.offset(), err.kind()), (2, 10, ErrorKind::TooManyRecords { max: 2 }));

        // The first offending record decides: a truncated record before a bad pointer...
        assert_eq!(parse_err(&[0x07, 0xff, 0xff, 0xff, 0xff, 1], 0).0, ErrorCode::InvalidArgs);
        // ...and a bad pointer before a later unknown tag.
        let buf = [0x07, 1, 0, 0, 0, 0, 0, 0, 0, 0xee];
        assert_eq!(parse_err(&buf, 0).0, ErrorCode::InvalidPointer);
    }

    #[test]
    fn reader_stops_after_the_first_error() {
        let mem = GuestMemory::length_only(0);
        let mut reader = RecordReader::new(&[0x05, 1, 0, 0, 0, 0xaa, 0x05, 1, 0, 0, 0], &mem).unwrap();
        assert!(reader.next().unwrap().is_ok());
        assert!(reader.next().unwrap().is_err());
        assert!(reader.next().is_none());
        assert!(reader.is_finished());
    }

    #[test]
    fn parse_into_leaves_nothing_stale() {
        let mem = GuestMemory::length_only(0);
        let mut out: ParsedArgv<'_, 4> = heapless::Vec::new();
        parse_argv_into(&[0x05, 7, 0, 0, 0], &mem, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert!(parse_argv_into(&[0x05, 9, 0, 0, 0, 0xff], &mem, &mut out).is_err());
        assert!(out.is_empty(), "a failed parse must not leave the earlier arguments behind");
    }

    /// Says it holds `capacity` arguments but refuses every push past `accepts`.
    struct Lying {
        capacity: usize,
        accepts: usize,
        held: heapless::Vec<S, 8>,
        clears: usize,
    }

    impl<'m> ArgSink<'m> for Lying {
        fn capacity(&self) -> usize {
            self.capacity
        }
        fn clear(&mut self) {
            self.held.clear();
            self.clears += 1;
        }
        fn push(&mut self, index: usize, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
            assert_eq!(index, self.held.len(), "the parser's index is the count pushed");
            if self.held.len() >= self.accepts {
                return Err(SinkFull);
            }
            self.held.push(arg.snapshot()).map_err(|_| SinkFull)
        }
    }

    #[test]
    fn snapshot_sink_gets_what_the_vector_gets() {
        let mut memory = [0u8; 192];
        let guest = GuestMemory::exclusive(&mut memory);
        let args: ParsedArgv = parse_argv(&EVERY_TYPE, &guest).unwrap();
        let mut snaps: heapless::Vec<S, 7> = heapless::Vec::new();
        parse_argv_into(&EVERY_TYPE, &guest, &mut snaps).unwrap();
        assert_eq!(snaps, snapshots(&args));
        // Its capacity is its cap: 6 records fit, the 7th start is refused.
        let mut small: heapless::Vec<S, 6> = heapless::Vec::new();
        let err = parse_argv_into(&EVERY_TYPE, &guest, &mut small).unwrap_err();
        assert_eq!((err.index(), err.offset(), err.kind()), (6, 42, ErrorKind::TooManyRecords { max: 6 }));
        assert!(small.is_empty());
    }

    #[test]
    fn a_sink_that_refuses_is_an_error_not_a_truncation() {
        let mem = GuestMemory::length_only(192);
        let mut sink = Lying { capacity: 8, accepts: 2, held: heapless::Vec::new(), clears: 0 };
        let err = parse_argv_into(&EVERY_TYPE, &mem, &mut sink).unwrap_err();
        // Record 2 starts at byte 14; the cap named is the one the sink claimed.
        assert_eq!((err.index(), err.offset(), err.kind()), (2, 14, ErrorKind::TooManyRecords { max: 8 }));
        assert!(sink.held.is_empty(), "cleared after the error");
        assert_eq!(sink.clears, 2, "cleared before parsing and after the error");
    }

    #[test]
    fn the_cap_is_the_parsers_whatever_the_sink_claims() {
        // A sink claiming more than MAX_KERNEL_ARGS still gets at most MAX_KERNEL_ARGS.
        // `finish` is called once, on success only, with the count pushed.
        struct Counting {
            pushed: usize,
            finished: Option<usize>,
        }
        impl<'m> ArgSink<'m> for Counting {
            fn capacity(&self) -> usize {
                usize::MAX
            }
            fn clear(&mut self) {
                self.pushed = 0;
            }
            fn push(&mut self, index: usize, _: LoweredArg<'m>) -> Result<(), SinkFull> {
                assert_eq!(index, self.pushed);
                self.pushed += 1;
                Ok(())
            }
            fn finish(&mut self, count: usize) {
                assert_eq!(self.finished.replace(count), None, "finished once");
            }
        }
        let buf = [ArgTag::U32.byte(), 0, 0, 0, 0].repeat(MAX_KERNEL_ARGS + 1);
        let mut sink = Counting { pushed: 0, finished: None };
        let err = parse_argv_into(&buf[..], &GuestMemory::length_only(0), &mut sink).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TooManyRecords { max: MAX_KERNEL_ARGS });
        assert_eq!((err.index(), sink.pushed, sink.finished), (MAX_KERNEL_ARGS, 0, None));
        parse_argv_into(&buf[..5 * MAX_KERNEL_ARGS], &GuestMemory::length_only(0), &mut sink).unwrap();
        assert_eq!((sink.pushed, sink.finished), (MAX_KERNEL_ARGS, Some(MAX_KERNEL_ARGS)));
    }

    #[test]
    fn messages_say_what_and_where() {
        let mem = GuestMemory::length_only(100);
        let msg = |buf: &[u8]| {
            let mut s = heapless::String::<160>::new();
            core::fmt::write(&mut s, format_args!("{}", parse_argv::<8>(buf, &mem).unwrap_err())).unwrap();
            s
        };
        assert_eq!(
            msg(&[0x05, 0, 0, 0, 0, 0x02, 1, 2, 3]),
            "truncated i64 record at byte 5 (record 1): needs 8 value bytes, 3 present"
        );
        assert_eq!(
            msg(&[0x07, 96, 0, 0, 0, 8, 0, 0, 0]),
            "pointer window at guest offset 96 of 8 bytes at byte 0 (record 0) is outside guest memory of 100 bytes"
        );
    }
}
