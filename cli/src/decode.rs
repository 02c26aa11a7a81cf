//! `kargs decode`: parse an argv buffer exactly as the host does and show the result.
//!
//! The buffer is walked with the core's [`RecordReader`], so every argument and every error
//! comes with its record index and byte offset. The guest memory is [`GuestMemory::length_only`]:
//! `--mem-len` only states the memory's size, against which pointer windows are checked.
//!
//! An accepted argv's table goes to stdout; a rejected one's diagnostic, in the style of a
//! compiler's, to stderr, with a hex excerpt (each row's byte offset in hex in the gutter) and a
//! caret under the offending record's first byte (coloured on a terminal, see `style`):
//!
//! ```text
//! error[InvalidArgs -9]: unknown tag 0xff at byte 15 (record 3)
//!      |
//! 0x00 | 05 01 00 00 00 05 02 00 00 00 05 03 00 00 00 ff
//!      |                                              ^^ record 3
//!      |
//!      = note: the tags are 0x01 i32, 0x02 i64, 0x03 f32, 0x04 f64, 0x05 u32, 0x06 u64, 0x07 ptr
//!      = note: the records before it are valid
//! ```
//!
//! `--json` prints one object instead, on stdout whether the argv is accepted or not (see the
//! `json` module). The hex comes from the arguments, or from stdin for `-` or when there are
//! none and stdin is not a terminal (a pipe, a file).
//!
//! `--signature '<declaration>'` checks a whole launch as the host does before any launch: the
//! launch shape of `--grid`, `--block` and `--shared-mem` with the host's own function
//! ([`check_launch_shape`], the default [`LaunchLimits`]) and the threads of the whole launch
//! against the default quota ([`check_threads_per_launch`]), first, as the host checks them
//! first; then the argv on the wire; then the argv against the kernel declaration
//! (`docs/declarations.md`), pointing at the record that does not fit:
//!
//! ```text
//! error[InvalidArgs -9]: record 2 at byte 18: out: 16-byte window, the kernel touches n * 4 = 64 bytes
//!      |
//! 0x00 | 07 00 00 00 00 40 00 00 00 07 40 00 00 00 40 00
//! 0x10 | 00 00 07 80 00 00 00 10 00 00 00 05 10 00 00 00
//!      |       ^^ ~~ ~~ ~~ ~~ ~~ ~~ ~~ ~~ record 2
//!      |
//!      = note: the kernel's declaration: vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)
//! ```

use std::fmt::Write;

use clap::Args;
use kernel_args::limits::{
    DEFAULT_MAX_THREADS_PER_LAUNCH, MAX_BLOCK_X, MAX_BLOCK_Y, MAX_BLOCK_Z, MAX_GRID_X, MAX_GRID_Y,
    MAX_GRID_Z, MAX_THREADS_PER_BLOCK, MIN_DIM,
};
use kernel_args::{
    AbiError, Declaration, DeclarationError, LaunchArgs, LaunchLimits, LaunchShape, Mismatch, MismatchKind,
    QuotaError, ShapeError, check_launch_shape, check_threads_per_launch,
};
use kernel_args_core::{
    Arg, ArgTag, ArgvError, ErrorKind, GuestMemory, LoweredArgSnapshot, MAX_GUEST_MEMORY_BYTES, Record,
    RecordReader,
};

use crate::json::Decoded;
use crate::style::Paint;
use crate::{Output, Status, hex, input, number, value};

/// Bytes per row of a diagnostic's hex excerpt.
const ROW: usize = 16;

/// `kargs decode [--mem-len N] [--json] HEX...`
#[derive(Debug, Args)]
pub(crate) struct DecodeArgs {
    /// Size in bytes of the guest memory that pointer windows are checked against
    /// (0 to 4294967296 = 0x100000000, the largest wasm32 memory; decimal or 0x hex).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MEM_LEN,
          value_parser = number::unsigned_up_to(MAX_GUEST_MEMORY_BYTES))]
    mem_len: u64,

    /// Print one JSON object instead of a table or a diagnostic.
    #[arg(long)]
    json: bool,

    /// Also check the argv against this kernel declaration (docs/declarations.md), e.g.
    /// 'vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)'.
    #[arg(long, value_name = "DECLARATION")]
    signature: Option<String>,

    /// The launch's grid (`X[,Y[,Z]]`, missing ones 1), checked as the host checks it and read
    /// by a declaration's `grid.x` ...
    #[arg(long, value_name = "X,Y,Z", default_value = "1", value_parser = parse_dims, requires = "signature")]
    grid: [i32; 3],

    /// The launch's block (`X[,Y[,Z]]`, missing ones 1), checked as the host checks it and read
    /// by a declaration's `block.x` ...
    #[arg(long, value_name = "X,Y,Z", default_value = "1", value_parser = parse_dims, requires = "signature")]
    block: [i32; 3],

    /// The launch's dynamic shared memory in bytes, checked as the host checks it.
    #[arg(long, value_name = "BYTES", default_value = "0", value_parser = parse_i32, requires = "signature")]
    shared_mem: i32,

    /// The argv buffer as hex digits (no `0x`); whitespace is ignored and several arguments are
    /// joined. `-`, or none with stdin a pipe or a file, reads the hex from stdin.
    #[arg(value_name = "HEX")]
    hex: Vec<String>,
}

/// `X[,Y[,Z]]`: up to three dimensions, the missing ones 1. Each is what a guest can pass, an
/// `i32` that is not negative; whether the host accepts it is the shape check's to say.
fn parse_dims(text: &str) -> Result<[i32; 3], String> {
    let mut dims = [1i32; 3];
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("`{text}`: at most three dimensions, X,Y,Z"));
    }
    for (dim, part) in dims.iter_mut().zip(parts) {
        *dim = parse_i32(part.trim())?;
    }
    Ok(dims)
}

/// A number a guest passes as an `i32`, not negative: 0 to 2147483647, decimal or `0x` hex.
fn parse_i32(text: &str) -> Result<i32, String> {
    number::unsigned(text).and_then(|d| i32::try_from(d).ok()).ok_or_else(|| {
        format!(
            "`{text}` is not a launch dimension (0 to 2147483647, decimal or 0x hex: the ABI passes an i32)"
        )
    })
}

/// Runs `kargs decode`; diagnostics are coloured with `paint`.
pub(crate) fn run(args: &DecodeArgs, paint: Paint) -> Output {
    let bytes = match read_input(&args.hex) {
        Ok(bytes) => bytes,
        Err(message) => return Output::usage(message),
    };
    let declaration = match args.signature.as_deref().map(Declaration::parse) {
        None => None,
        Some(Ok(declaration)) => Some(declaration),
        Some(Err(error)) => {
            return Output::usage(declaration_error(args.signature.as_deref().unwrap_or_default(), &error));
        }
    };
    // The host's order: the launch shape and the threads quota (both at their defaults), then
    // the argv on the wire, then the declaration.
    let shape = match declaration {
        Some(_) => match check_launch_shape(args.grid, args.block, args.shared_mem, &LaunchLimits::DEFAULT) {
            Ok(shape) => Some(shape),
            Err(error) => return shape_refused(&error, args.json, paint),
        },
        None => None,
    };
    if let Some(Err(error)) =
        shape.as_ref().map(|shape| check_threads_per_launch(shape, &LaunchLimits::DEFAULT))
    {
        return quota_refused(&error, args.json, paint);
    }
    let memory = GuestMemory::length_only(args.mem_len);
    let (records, error) = walk(&bytes, &memory);
    let mismatch = match (&declaration, &shape, &error) {
        (Some(declaration), Some(shape), None) => check(declaration, &records, shape).err(),
        _ => None,
    };
    let status = if error.is_some() || mismatch.is_some() { Status::Rejected } else { Status::Accepted };
    if args.json {
        let decoded = Decoded::new(&records, error.as_ref());
        let decoded = match &declaration {
            Some(declaration) if error.is_none() => {
                decoded.with_signature(declaration.name(), mismatch.as_ref())
            }
            _ => decoded,
        };
        return Output::stdout(decoded.to_line(), status);
    }
    match (&error, &mismatch, &declaration) {
        (Some(error), _, _) => Output::stderr(diagnostic(&bytes, error, args.mem_len, paint), status),
        (None, Some(mismatch), Some(declaration)) => {
            Output::stderr(signature_diagnostic(&bytes, &records, mismatch, declaration, paint), status)
        }
        (None, _, declaration) => {
            let mut out = table(&records, bytes.len(), args.mem_len);
            if let (Some(declaration), Some(shape)) = (declaration, &shape) {
                let _ =
                    writeln!(out, "\nfits the declaration of {} ({})", declaration.name(), shape_text(shape));
            }
            Output::stdout(out, status)
        }
    }
}

/// The declaration's check of an accepted argv's records.
fn check(declaration: &Declaration, records: &[Record<'_>], shape: &LaunchShape) -> Result<(), Mismatch> {
    let args: Vec<LoweredArgSnapshot> = records.iter().map(|r| r.arg.snapshot()).collect();
    match LaunchArgs::from_slice(&args) {
        Some(args) => declaration.check(&args, shape),
        // Unreachable: an accepted argv has at most MAX_KERNEL_ARGS records.
        None => Err(Mismatch {
            record: 0,
            offset: 0,
            param: Default::default(),
            kind: MismatchKind::Count { declared: declaration.len(), got: args.len() },
        }),
    }
}

/// `grid X,Y,Z, block X,Y,Z, shared memory N bytes`.
fn shape_text(shape: &LaunchShape) -> String {
    let dims = |d: [u32; 3]| format!("{},{},{}", d[0], d[1], d[2]);
    format!(
        "grid {}, block {}, shared memory {} bytes",
        dims(shape.grid),
        dims(shape.block),
        shape.shared_mem_bytes
    )
}

/// A launch shape the host refuses (`InvalidDimensions`) before it reads the argv.
fn shape_refused(error: &ShapeError, json: bool, paint: Paint) -> Output {
    let note = format!(
        "the host checks the launch shape (--grid, --block, --shared-mem) before the argv: \
         grid {MIN_DIM}..={MAX_GRID_X}, {MIN_DIM}..={MAX_GRID_Y}, {MIN_DIM}..={MAX_GRID_Z}; \
         block {MIN_DIM}..={MAX_BLOCK_X}, {MIN_DIM}..={MAX_BLOCK_Y}, {MIN_DIM}..={MAX_BLOCK_Z}, \
         at most {MAX_THREADS_PER_BLOCK} threads per block; shared memory at most {} bytes",
        LaunchLimits::DEFAULT.max_shared_mem_bytes
    );
    launch_refused(AbiError::InvalidDimensions, "launch_shape", error, &note, json, paint)
}

/// A launch of more threads than the host's default quota (`QuotaExceeded`), refused before it
/// reads the argv.
fn quota_refused(error: &QuotaError, json: bool, paint: Paint) -> Output {
    let note = format!(
        "a host refuses a launch of more threads (grid × block) than its quota before the argv; \
         this is the default quota, {DEFAULT_MAX_THREADS_PER_LAUNCH}, which an embedder may set lower or higher"
    );
    launch_refused(AbiError::QuotaExceeded, "quota", error, &note, json, paint)
}

/// A launch the host refuses before it reads the argv: the JSON object, or the diagnostic with
/// its note.
fn launch_refused(
    code: AbiError,
    kind: &'static str,
    error: &dyn std::fmt::Display,
    note: &str,
    json: bool,
    paint: Paint,
) -> Output {
    if json {
        return Output::stdout(Decoded::launch_refused(code, kind, error).to_line(), Status::Rejected);
    }
    let mut out = String::new();
    let _ = writeln!(out, "{}: {error}", paint.error(&format!("error[{} {}]", code.name(), code.code())));
    let _ = writeln!(out, "  = note: {note}");
    Output::stderr(out, Status::Rejected)
}

/// A declaration that does not parse: the message, the text and a caret under its column.
fn declaration_error(text: &str, error: &DeclarationError) -> String {
    let caret = " ".repeat(error.column.saturating_sub(1));
    format!("--signature: {error}\n  {text}\n  {caret}^")
}

/// The diagnostic for an argv the declaration refuses: the record's bytes underlined.
fn signature_diagnostic(
    bytes: &[u8],
    records: &[Record<'_>],
    mismatch: &Mismatch,
    declaration: &Declaration,
    paint: Paint,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {mismatch}", paint.error("error[InvalidArgs -9]"));
    let start = mismatch.offset;
    let len = records.get(mismatch.record).map_or(0, |r| r.arg.tag().wire_size());
    let mut notes = vec![format!("the kernel's declaration: {}", declaration.as_str())];
    if matches!(mismatch.kind, MismatchKind::Count { .. }) {
        notes.push(format!("the argv's {} records are valid on the wire", records.len()));
    }
    excerpt(&mut out, bytes, Some((start, start.saturating_add(len), mismatch.record)), &notes, paint);
    out
}

/// Writes the excerpt of `bytes` around `marked` (the first and one past the last byte of the
/// offending record, and its index: `^` under its first byte, `~` under the rest, one row of
/// context before), then the notes; without `marked` (a buffer refused before any byte was
/// read), the notes alone. Each row's gutter is its offset in hex.
fn excerpt(
    out: &mut String,
    bytes: &[u8],
    marked: Option<(usize, usize, usize)>,
    notes: &[String],
    paint: Paint,
) {
    let rows = marked.map(|(start, end, record)| {
        let end = end.min(bytes.len());
        let first_row = (start / ROW).saturating_sub(1) * ROW;
        let last_row = (end.saturating_sub(1).max(start) / ROW) * ROW;
        (first_row, last_row.min(bytes.len().saturating_sub(1) / ROW * ROW), start, end, record)
    });
    let digits = rows.map_or(2, |(_, last, ..)| format!("{last:x}").len().max(2));
    let gutter = |row: usize| format!("0x{row:0digits$x}");
    let pad = " ".repeat(digits + 2);
    let bar = paint.gutter(&format!("{pad} |"));
    let _ = writeln!(out, "{bar}");
    if let Some((first_row, last_row, start, end, record)) = rows {
        let mut labelled = false;
        for row_start in (first_row..=last_row).step_by(ROW) {
            let row_end = (row_start + ROW).min(bytes.len());
            let row = bytes.get(row_start..row_end).unwrap_or_default();
            let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(out, "{} {}", paint.gutter(&format!("{} |", gutter(row_start))), hex.join(" "));
            let marks: Vec<&str> = (row_start..row_end)
                .map(|i| match i {
                    i if i == start => "^^",
                    i if i > start && i < end => "~~",
                    _ => "  ",
                })
                .collect();
            if marks.iter().any(|m| *m != "  ") {
                let mut line = marks.join(" ");
                line.truncate(line.trim_end().len());
                let lead = line.len() - line.trim_start().len();
                let (spaces, marks) = line.split_at(lead);
                let mut marks = marks.to_owned();
                if !labelled {
                    let _ = write!(marks, " record {record}");
                    labelled = true;
                }
                let _ = writeln!(out, "{bar} {spaces}{}", paint.marks(&marks));
            }
        }
        let _ = writeln!(out, "{bar}");
    }
    for note in notes {
        let _ = writeln!(out, "{pad} {} note: {note}", paint.gutter("="));
    }
}

/// The input's bytes: the hex arguments joined, or stdin's hex for a lone `-` or for no
/// argument at all when stdin is not a terminal.
fn read_input(pieces: &[String]) -> Result<Vec<u8>, String> {
    let text = match input::stdin_text(pieces, "HEX")? {
        Some(text) => text,
        None if pieces.is_empty() => {
            return Err("no argv: give it as hex digits (kargs decode 01f9ffffff), or `-` or a pipe \
                        to read them from stdin"
                .to_owned());
        }
        None => pieces.join(" "),
    };
    hex::decode(&text).map_err(|e| {
        let trimmed = text.trim_start();
        match trimmed.strip_prefix("0x").or_else(|| trimmed.strip_prefix("0X")) {
            Some(rest) => format!(
                "{e}\n  hint: the argv is its bytes' hex digits without a `0x` prefix: `{}`",
                rest.split_whitespace().collect::<String>()
            ),
            None => e.to_string(),
        }
    })
}

/// Every record the reader accepts, then the error that stopped it, if any.
fn walk<'m>(bytes: &[u8], memory: &GuestMemory<'m>) -> (Vec<Record<'m>>, Option<ArgvError>) {
    let reader = match RecordReader::new(bytes, memory) {
        Ok(reader) => reader,
        Err(error) => return (Vec::new(), Some(error)),
    };
    let mut records = Vec::new();
    for item in reader {
        match item {
            Ok(record) => records.push(record),
            Err(error) => return (records, Some(error)),
        }
    }
    (records, None)
}

/// The table printed for an accepted argv.
fn table(records: &[Record<'_>], len: usize, mem_len: u64) -> String {
    let mut out = String::new();
    let noun = if records.len() == 1 { "argument" } else { "arguments" };
    let _ =
        writeln!(out, "accepted: {} {noun} in {len} bytes (guest memory: {mem_len} bytes)", records.len());
    if records.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nindex  offset  type  value");
    for record in records {
        let arg = record.arg.snapshot();
        let _ = write!(
            out,
            "{:>5}  {:>6}  {:<4}  {}",
            record.index,
            record.offset,
            arg.tag().name(),
            value::human(&arg)
        );
        // The table also says where a window ends: that is what `--mem-len` is checked against.
        if let Arg::Ptr(range) = arg {
            let _ = write!(out, "  ends at {}", range.end());
        }
        out.push('\n');
    }
    out
}

/// The compiler-style diagnostic printed for a rejected argv.
fn diagnostic(bytes: &[u8], error: &ArgvError, mem_len: u64, paint: Paint) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {error}", paint.error(&format!("error[{}]", error.code())));
    let start = error.offset();
    let record_len = match error.kind() {
        ErrorKind::BufferTooLong { .. } => None,
        ErrorKind::TooManyRecords { .. } | ErrorKind::UnknownTag { .. } => Some(1),
        ErrorKind::TruncatedRecord { .. } => Some(bytes.len().saturating_sub(start)),
        ErrorKind::WindowOutOfBounds { .. } => Some(ArgTag::Ptr.wire_size()),
    };
    let marked = record_len.map(|len| (start, start.saturating_add(len), error.index()));
    excerpt(&mut out, bytes, marked, &notes(error, mem_len), paint);
    out
}

/// What helps the reader fix the argv, after the excerpt.
fn notes(error: &ArgvError, mem_len: u64) -> Vec<String> {
    let mut notes = Vec::new();
    match error.kind() {
        ErrorKind::BufferTooLong { max, .. } => {
            notes.push(format!("the length is checked before any byte is read; the cap is {max} bytes"));
        }
        ErrorKind::TooManyRecords { max } => {
            notes.push(format!(
                "the host accepts at most {max} records; records 0 to {} are valid",
                max.saturating_sub(1)
            ));
        }
        ErrorKind::UnknownTag { .. } => {
            let tags: Vec<String> = ArgTag::ALL.iter().map(|t| format!("{:#04x} {t}", t.byte())).collect();
            notes.push(format!("the tags are {}", tags.join(", ")));
        }
        ErrorKind::TruncatedRecord { tag, needed, .. } => {
            notes.push(format!(
                "{tag} records are {} bytes: the tag byte and {needed} value bytes, little-endian",
                tag.wire_size()
            ));
        }
        ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => {
            let end = u64::from(guest_offset) + u64::from(len);
            notes.push(format!(
                "the window [{guest_offset}, +{len}) ends at {end}, past the end of guest memory at {memory_len}"
            ));
            if mem_len == DEFAULT_MEM_LEN {
                notes.push(format!(
                    "guest memory is the default {DEFAULT_MEM_LEN} bytes; set it with --mem-len"
                ));
            }
        }
    }
    if error.index() > 0 && !matches!(error.kind(), ErrorKind::TooManyRecords { .. }) {
        let records = if error.index() == 1 { "record 0 is" } else { "the records before it are" };
        notes.push(format!("{records} valid"));
    }
    notes
}

/// `--mem-len`'s default: one 64 KiB wasm page.
const DEFAULT_MEM_LEN: u64 = 65536;

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(hex: &str, mem_len: u64) -> (Vec<Record<'static>>, Option<ArgvError>, Vec<u8>) {
        let bytes = hex::decode(hex).unwrap();
        let (records, error) = walk(&bytes, &GuestMemory::length_only(mem_len));
        (records, error, bytes)
    }

    #[test]
    fn records_carry_index_and_offset() {
        let (records, error, _) = decode("01f9ffffff 062a00000000000000 0740000000 80000000", 65536);
        assert!(error.is_none());
        let at: Vec<(usize, usize)> = records.iter().map(|r| (r.index, r.offset)).collect();
        assert_eq!(at, [(0, 0), (1, 5), (2, 14)]);
    }

    #[test]
    fn caret_sits_under_the_offending_records_first_byte() {
        let (_, error, bytes) = decode("0501000000 0502000000 0503000000 ff", 65536);
        let text = diagnostic(&bytes, &error.unwrap(), 65536, Paint::PLAIN);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "error[InvalidArgs -9]: unknown tag 0xff at byte 15 (record 3)");
        let row = lines.iter().position(|l| l.starts_with("0x00 | ")).unwrap();
        let caret = lines[row + 1].find('^').unwrap();
        assert_eq!(&lines[row][caret..caret + 2], "ff");
    }

    #[test]
    fn truncated_records_are_underlined_to_the_end() {
        let (_, error, bytes) = decode("0501000000 02010203", 65536);
        let text = diagnostic(&bytes, &error.unwrap(), 65536, Paint::PLAIN);
        assert!(text.contains("     |                ^^ ~~ ~~ ~~ record 1\n"), "{text}");
    }
}
