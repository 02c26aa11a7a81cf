//! Every conformance vector of `tests/vectors/argv.json`, parsed on the target and compared
//! with its expected outcome.
//!
//! `build.rs` turns the JSON file into the static table [`VECTORS`] (input bytes, guest memory
//! length, expected outcome in the types below), so the target needs no JSON parser and no
//! file system. [`run`] checks each vector as `tests/tests/conformance.rs` does on the host:
//!
//! 1. **reader**: [`RecordReader`] against `GuestMemory::length_only(mem_len)`: every
//!    argument's record index, byte offset, type and value (integers exactly; floats by their
//!    bits, and their `{:?}` text against the vector's `value`, as the host compares it); or
//!    the first error's ABI code, ABI name, kind, record index and byte offset;
//! 2. **parse_argv**: [`parse_argv`] at the full capacity (128): the same values, or the same
//!    error;
//! 3. **encode_argv**: an accepted buffer encodes back to the same bytes;
//! 4. **exclusive memory**: for `mem_len` up to 64 KiB, the reader against a real borrowed
//!    memory of that length agrees, and each window's host pointer is the memory's base plus
//!    its guest offset;
//! 5. **capacity 4**: `parse_argv::<4>` accepts an accepted vector of at most 4 arguments and
//!    refuses a longer one with `too_many_records` at record 4 and that record's offset.
//!
//! A vector passes when all of them hold; the first check that fails is reported.

use core::fmt::{self, Write as _};

use cortex_m_semihosting::hprintln;
use kernel_args_core::{
    ArgvError, GuestMemory, LoweredArg, LoweredArgSnapshot, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES,
    ParsedArgv, RecordReader, encode_argv, parse_argv,
};

include!(concat!(env!("OUT_DIR"), "/vectors.rs"));

/// One conformance vector: an argv buffer, a guest memory length, and the answer.
#[derive(Debug)]
pub struct Vector {
    /// The vector's unique name.
    pub name: &'static str,
    /// The argv buffer.
    pub bytes: &'static [u8],
    /// The guest memory's length in bytes (0 to 4 GiB).
    pub mem_len: u64,
    /// What a conforming parser answers.
    pub expect: Expect,
}

/// The answer: the arguments in buffer order, or the first error.
#[derive(Debug)]
pub enum Expect {
    /// Accepted, with these arguments.
    Args(&'static [ExpectedArg]),
    /// Rejected with this error.
    Error(ExpectedError),
}

/// One accepted argument and where its record starts.
#[derive(Debug)]
pub struct ExpectedArg {
    /// 0-based record index.
    pub index: usize,
    /// Byte offset of the record's tag byte.
    pub offset: usize,
    /// The typed value.
    pub value: ExpectedValue,
}

/// A typed value as the vector file states it.
#[derive(Debug)]
pub enum ExpectedValue {
    /// `i32`.
    I32(i32),
    /// `i64`.
    I64(i64),
    /// `f32`: the raw bits (the value compared), and the shortest decimal that reads back as
    /// the same float (`"1.5"`, `"-0.0"`, `"NaN"`).
    F32 {
        /// IEEE-754 bits.
        bits: u32,
        /// The vector's `value` text.
        text: &'static str,
    },
    /// `f64`, as `F32`.
    F64 {
        /// IEEE-754 bits.
        bits: u64,
        /// The vector's `value` text.
        text: &'static str,
    },
    /// `u32`.
    U32(u32),
    /// `u64`.
    U64(u64),
    /// A pointer window `[guest_offset, guest_offset + len)`.
    Ptr {
        /// Start of the window.
        guest_offset: u32,
        /// Length in bytes.
        len: u32,
    },
}

impl fmt::Display for ExpectedValue {
    /// The vector's spelling: `i32 -7`, `f32 0x3fc00000 "1.5"`, `ptr [64, +128)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpectedValue::I32(v) => write!(f, "i32 {v}"),
            ExpectedValue::I64(v) => write!(f, "i64 {v}"),
            ExpectedValue::F32 { bits, text } => write!(f, "f32 {bits:#010x} {text:?}"),
            ExpectedValue::F64 { bits, text } => write!(f, "f64 {bits:#018x} {text:?}"),
            ExpectedValue::U32(v) => write!(f, "u32 {v}"),
            ExpectedValue::U64(v) => write!(f, "u64 {v}"),
            ExpectedValue::Ptr { guest_offset, len } => write!(f, "ptr [{guest_offset}, +{len})"),
        }
    }
}

/// The first error of a rejected buffer.
#[derive(Debug)]
pub struct ExpectedError {
    /// The wasi-cuda ABI code (`-2`, `-9`, `-10`).
    pub code: i32,
    /// The code's ABI name.
    pub name: &'static str,
    /// The kind's snake_case name.
    pub kind: &'static str,
    /// The offending record's index.
    pub index: usize,
    /// The byte offset at which the offending record starts.
    pub offset: usize,
}

/// Vectors that passed and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Vectors for which every check held.
    pub passed: usize,
    /// Vectors for which a check failed (each printed when found).
    pub failed: usize,
}

/// Checks every vector, printing one line per failing vector; returns the counts.
pub fn run() -> Summary {
    let mut summary = Summary::default();
    for vector in VECTORS {
        match check(vector) {
            Ok(()) => summary.passed += 1,
            Err(failure) => {
                summary.failed += 1;
                hprintln!("FAIL vector {}: {}", vector.name, failure);
            }
        }
    }
    summary
}

/// Largest `mem_len` checked against a real borrowed memory (check 4).
const REAL_MEMORY_MAX: usize = 1 << 16;

/// All the checks of one vector; the first that fails.
pub fn check(v: &'static Vector) -> Result<(), Failure> {
    let memory = GuestMemory::length_only(v.mem_len);

    // 1. The record reader: where each record starts, and its value.
    compare_reader(v, &memory, None).map_err(|m| m.during("reader"))?;

    // 2. parse_argv at the full capacity, and 3. the round trip.
    let parsed: Result<ParsedArgv, ArgvError> = parse_argv(v.bytes, &memory);
    match (&parsed, &v.expect) {
        (Ok(args), Expect::Args(want)) => {
            if args.len() != want.len() {
                return Err(Mismatch::ArgCount { got: args.len(), want: want.len() }.during("parse_argv"));
            }
            for (position, (got, want)) in args.iter().zip(want.iter()).enumerate() {
                compare_value(&got.snapshot(), &want.value)
                    .map_err(|m| m.at(position).during("parse_argv"))?;
            }
            let mut out = [0u8; MAX_KERNEL_ARGS_BYTES];
            match encode_argv(args, &mut out) {
                Ok(n) if out.get(..n) == Some(v.bytes) => {}
                Ok(n) => return Err(Mismatch::Encoded { len: n }.during("encode_argv")),
                Err(_) => return Err(Mismatch::EncodeRefused.during("encode_argv")),
            }
        }
        (Err(got), Expect::Error(want)) => compare_error(got, want).map_err(|m| m.during("parse_argv"))?,
        (Ok(args), Expect::Error(_)) => {
            return Err(Mismatch::Accepted { count: args.len() }.during("parse_argv"));
        }
        (Err(got), Expect::Args(_)) => return Err(Mismatch::Rejected { got: *got }.during("parse_argv")),
    }

    // 4. A real borrowed memory of the same length agrees, with host pointers into it.
    if let Ok(len) = usize::try_from(v.mem_len)
        && len <= REAL_MEMORY_MAX
    {
        let mut bytes = [0u8; REAL_MEMORY_MAX];
        let real = bytes.get_mut(..len).ok_or(Mismatch::Internal.during("exclusive memory"))?;
        let base = real.as_mut_ptr() as usize;
        let memory = GuestMemory::exclusive(real);
        compare_reader(v, &memory, Some(base)).map_err(|m| m.during("exclusive memory"))?;
    }

    // 5. A capacity of 4 only lowers the record cap.
    if let Expect::Args(want) = &v.expect {
        let result = parse_argv::<4>(v.bytes, &memory).map(|a| a.len());
        match (result, want.get(4)) {
            (Ok(n), None) if n == want.len() => {}
            (Err(e), Some(fifth))
                if e.kind().name() == "too_many_records" && e.index() == 4 && e.offset() == fifth.offset => {}
            (Ok(n), _) => return Err(Mismatch::Accepted { count: n }.during("capacity 4")),
            (Err(got), _) => return Err(Mismatch::Rejected { got }.during("capacity 4")),
        }
    }
    Ok(())
}

/// Walks `v.bytes` with the record reader over `memory` and compares every record, or the
/// first error, with the vector. With `base`, also checks each window's host pointer.
fn compare_reader(v: &'static Vector, memory: &GuestMemory<'_>, base: Option<usize>) -> Result<(), Located> {
    let reader = match RecordReader::new(v.bytes, memory) {
        Ok(reader) => reader,
        Err(got) => {
            return match &v.expect {
                Expect::Error(want) => Ok(compare_error(&got, want)?),
                Expect::Args(_) => Err(Mismatch::Rejected { got }.into()),
            };
        }
    };
    let mut count = 0;
    for record in reader {
        let record = match record {
            Ok(record) => record,
            Err(got) => {
                return match &v.expect {
                    Expect::Error(want) => Ok(compare_error(&got, want)?),
                    Expect::Args(_) => Err(Mismatch::Rejected { got }.into()),
                };
            }
        };
        count += 1;
        // With an expected error, records before it are not compared (as on the host).
        let Expect::Args(want) = &v.expect else { continue };
        let position = count - 1;
        let Some(want) = want.get(position) else {
            return Err(Mismatch::ArgCount { got: count, want: want.len() }.into());
        };
        if (record.index, record.offset) != (want.index, want.offset) {
            return Err(Mismatch::Place {
                got: (record.index, record.offset),
                want: (want.index, want.offset),
            }
            .at(position));
        }
        compare_value(&record.arg.snapshot(), &want.value).map_err(|m| m.at(position))?;
        if let (Some(base), LoweredArg::Ptr(window)) = (base, record.arg) {
            let expected = base + window.guest_offset() as usize;
            if window.host_ptr().map(|p| p as usize) != Some(expected) || window.host_ptr_mut().is_none() {
                return Err(Mismatch::HostPointer.at(position));
            }
        }
    }
    match &v.expect {
        Expect::Args(want) if count == want.len() => Ok(()),
        Expect::Args(want) => Err(Mismatch::ArgCount { got: count, want: want.len() }.into()),
        Expect::Error(_) => Err(Mismatch::Accepted { count }.into()),
    }
}

/// Compares a parsed value with the expected one: type and value; for floats the bits and the
/// `{:?}` text.
fn compare_value(got: &LoweredArgSnapshot, want: &'static ExpectedValue) -> Result<(), Mismatch> {
    let same = match (*got, want) {
        (LoweredArgSnapshot::I32(g), ExpectedValue::I32(w)) => g == *w,
        (LoweredArgSnapshot::I64(g), ExpectedValue::I64(w)) => g == *w,
        (LoweredArgSnapshot::U32(g), ExpectedValue::U32(w)) => g == *w,
        (LoweredArgSnapshot::U64(g), ExpectedValue::U64(w)) => g == *w,
        (LoweredArgSnapshot::F32(g), ExpectedValue::F32 { bits, text }) => {
            g.0 == *bits && Text::debug(&g.to_f32()).as_str() == *text
        }
        (LoweredArgSnapshot::F64(g), ExpectedValue::F64 { bits, text }) => {
            g.0 == *bits && Text::debug(&g.to_f64()).as_str() == *text
        }
        (LoweredArgSnapshot::Ptr(g), ExpectedValue::Ptr { guest_offset, len }) => {
            (g.guest_offset, g.len) == (*guest_offset, *len)
        }
        _ => false,
    };
    if same { Ok(()) } else { Err(Mismatch::Value { got: *got, want }) }
}

/// Compares an error with the expected one: ABI code, ABI name, kind, record index, offset.
fn compare_error(got: &ArgvError, want: &'static ExpectedError) -> Result<(), Mismatch> {
    let same = got.code().code() == want.code
        && got.code().name() == want.name
        && got.kind().name() == want.kind
        && got.index() == want.index
        && got.offset() == want.offset;
    if same { Ok(()) } else { Err(Mismatch::Error { got: *got, want }) }
}

/// What differed, in which check, at which argument.
#[derive(Debug)]
pub struct Failure {
    check: &'static str,
    position: Option<usize>,
    mismatch: Mismatch,
}

/// What differed from the vector.
#[derive(Debug, Clone, Copy)]
enum Mismatch {
    /// Accepted with this many arguments; the vector expects an error.
    Accepted { count: usize },
    /// Rejected; the vector expects arguments.
    Rejected { got: ArgvError },
    /// A different error.
    Error { got: ArgvError, want: &'static ExpectedError },
    /// A different number of arguments.
    ArgCount { got: usize, want: usize },
    /// A record at a different (index, offset).
    Place { got: (usize, usize), want: (usize, usize) },
    /// A different type or value.
    Value { got: LoweredArgSnapshot, want: &'static ExpectedValue },
    /// A window's host pointer is not the memory's base plus its guest offset.
    HostPointer,
    /// `encode_argv` gave other bytes (`len` of them).
    Encoded { len: usize },
    /// `encode_argv` refused the parsed arguments.
    EncodeRefused,
    /// The check itself could not be set up.
    Internal,
}

impl Mismatch {
    fn at(self, position: usize) -> Located {
        Located { position: Some(position), mismatch: self }
    }

    fn during(self, check: &'static str) -> Failure {
        Located::from(self).during(check)
    }
}

/// A mismatch, at an argument or not, before its check is named.
struct Located {
    position: Option<usize>,
    mismatch: Mismatch,
}

impl Located {
    fn during(self, check: &'static str) -> Failure {
        Failure { check, position: self.position, mismatch: self.mismatch }
    }
}

impl From<Mismatch> for Located {
    fn from(mismatch: Mismatch) -> Located {
        Located { position: None, mismatch }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.check)?;
        if let Some(position) = self.position {
            write!(f, "argument {position}: ")?;
        }
        match self.mismatch {
            Mismatch::Accepted { count } => write!(f, "accepted with {count} arguments, expected an error"),
            Mismatch::Rejected { got } => write!(f, "rejected ({got}), expected arguments"),
            Mismatch::Error { got, want } => write!(
                f,
                "got {} {} {} at record {}, byte {} ({got}), expected {} {} {} at record {}, byte {}",
                got.code().code(),
                got.code().name(),
                got.kind().name(),
                got.index(),
                got.offset(),
                want.code,
                want.name,
                want.kind,
                want.index,
                want.offset
            ),
            Mismatch::ArgCount { got, want } => write!(f, "{got} arguments, expected {want}"),
            Mismatch::Place { got, want } => {
                write!(f, "record {} at byte {}, expected record {} at byte {}", got.0, got.1, want.0, want.1)
            }
            Mismatch::Value { got, want } => write!(f, "got {got:?}, expected {want}"),
            Mismatch::HostPointer => write!(f, "host pointer is not base + guest offset"),
            Mismatch::Encoded { len } => write!(f, "re-encoded to {len} other bytes"),
            Mismatch::EncodeRefused => write!(f, "refused to re-encode the parsed arguments"),
            Mismatch::Internal => write!(f, "could not set up the check"),
        }
    }
}

/// A float's `{:?}` text, formatted without allocation. 40 bytes hold the longest
/// (`-1.7976931348623157e308`, 23 bytes); longer text is cut and so never matches.
struct Text {
    buf: [u8; 40],
    len: usize,
}

impl Text {
    fn debug(value: &dyn fmt::Debug) -> Text {
        let mut text = Text { buf: [0; 40], len: 0 };
        // A full buffer stops the formatting; the cut text then compares unequal.
        let _ = write!(text, "{value:?}");
        text
    }

    fn as_str(&self) -> &str {
        self.buf.get(..self.len).and_then(|b| core::str::from_utf8(b).ok()).unwrap_or("")
    }
}

impl fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        self.buf.get_mut(self.len..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

// `MAX_KERNEL_ARGS` is the capacity `parse_argv` uses above (`ParsedArgv`'s default).
const _: () = assert!(MAX_KERNEL_ARGS == 128);
