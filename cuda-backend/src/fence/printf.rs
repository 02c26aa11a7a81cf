//! Device-side `printf`: the formats the fence rewrites, the records a fenced kernel writes into
//! its launch's print buffer, and the text the host makes of them.
//!
//! nvcc compiles `printf(format, args...)` to a call of the CUDA runtime's `vprintf(format,
//! buffer)`: the format is a module-scope `.global` string, and the arguments are packed into a
//! thread-local buffer, each aligned to its size (a `float` promoted to `double`, a `char` or
//! `short` to `int`). The fence replaces the call (`lower.rs`) with a **record** written into
//! the launch's **print buffer**, inside the fence: the format's number, then, 16 bytes in
//! (`RECORD_ARGS`), the arguments: from the registers the kernel stored them from, where it
//! stores each into its local depot just before the call (`stored`; the depot's stores and
//! the depot go where nothing else reads it), else the argument buffer's bytes read from the
//! depot by name 16 bytes at a time where they are aligned (or a word at a time through the
//! generic pointer nvcc passed, fenced, where it is not the depot's), at a place reserved with
//! one fenced atomic, the record's stores under one clamp. The buffer is one of the module's variables (at
//! the start of the fence, [`FencedModule::variables`](super::FencedModule::variables)): a
//! 16-byte header whose first 8 bytes count the bytes reserved, [`PRINT_BUFFER_BYTES`] of
//! records, and a scratch record of [`MAX_RECORD`] bytes where a record that does not fit is
//! written instead (so the stores need no guard); the count still grows, so the host knows
//! output was lost. The launcher empties the buffer before each launch, reads it back after,
//! and formats each record as C's `printf` formats it ([`PrintBuffer::text`],
//! `CudaLauncher::take_printed`). The call's result, where the kernel reads it, is the number
//! of arguments.
//!
//! What a format may hold: literal text, `%%`, and the conversions `d i u x X o c f F e E g G
//! p s` with the flags `- + space # 0`, a width and a precision of at most [`MAX_FIELD`] written
//! as digits, and the length modifiers `hh h l ll z j t`; its record at most [`MAX_RECORD`]
//! bytes. A `%s` prints a string of the module (a literal: its address is an offset into the
//! fence, where the module's variables lie), read back with them; any other string, which the
//! host does not read, prints as its offset ([`Format::print`]). Anything else (`%n`; `*`
//! widths; `%a`; `L`; `%ls`; a format that is not a string of the module) leaves the call in
//! place, for the rewriter to refuse by name. The kernel's own code can
//! write anywhere in its fence, the print buffer too: the host reads what it finds there as
//! untrusted bytes, stops at a record that names no format, and prints at most
//! [`MAX_PRINTED_BYTES`] per launch.

use std::collections::HashMap;
use std::fmt::Write as _;

use kernel_args_ptx::{
    Address, AddressBase, Block, FunctionKind, Immediate, Initializer, Instruction, Item, Linkage, Module,
    Operand, OperandKind, Register, RegisterDecl, RegisterName, Span, StateSpace, Statement, Type, Variable,
};

use super::body::{
    defines, for_each_instruction, is_move, local_variables, remove_dead, retain_instructions,
};

/// The bytes of records a launch's print buffer holds, after its header.
pub const PRINT_BUFFER_BYTES: u32 = 16 * 1024;

/// The print buffer's header: the count of bytes reserved (a `u64`), padded to 16.
pub(super) const HEADER: u32 = 16;

/// Where a record's arguments start: after the format's number, padded to 16 bytes, so that
/// every record (16 bytes long times something) and its arguments are aligned to 16, and the
/// arguments are copied 16 bytes at a time where the thread's depot allows.
pub(super) const RECORD_ARGS: u32 = 16;

/// The longest record: a record that does not fit the buffer is written past its end, into a
/// scratch record of this many bytes that nobody reads (so the stores need no guard).
pub const MAX_RECORD: u32 = 512;

/// The most text one launch's records print: past it, the rest is lost (and said to be).
pub const MAX_PRINTED_BYTES: usize = 256 * 1024;

/// The widest field width or precision a format may ask for.
pub const MAX_FIELD: u32 = 512;

/// One piece of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Bytes printed as they are (`%%` as one `%`).
    Text(Vec<u8>),
    /// A conversion, with the place of its argument in the argument buffer.
    Conversion(Conversion),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Conversion {
    left: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    /// The argument's size in the buffer: 4 or 8.
    size: usize,
    /// `hh` (1) or `h` (2): the integer is truncated to this many bytes before printing.
    truncate: Option<usize>,
    /// Its offset in the argument buffer.
    at: usize,
    conversion: u8,
}

/// A format the fence rewrites: what it prints and where its arguments are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    pieces: Vec<Piece>,
    args_len: usize,
    args: usize,
}

impl Format {
    /// Reads `format` (the bytes before its NUL), or `None` where it holds anything the module
    /// documentation does not list.
    pub fn parse(format: &[u8]) -> Option<Format> {
        let mut pieces = Vec::new();
        let mut text = Vec::new();
        let (mut at, mut args) = (0usize, 0usize);
        let mut bytes = format.iter().copied().peekable();
        while let Some(b) = bytes.next() {
            if b != b'%' {
                text.push(b);
                continue;
            }
            if bytes.peek() == Some(&b'%') {
                bytes.next();
                text.push(b'%');
                continue;
            }
            let mut c = Conversion {
                left: false,
                plus: false,
                space: false,
                alternate: false,
                zero: false,
                width: 0,
                precision: None,
                size: 4,
                truncate: None,
                at: 0,
                conversion: 0,
            };
            while let Some(&flag) = bytes.peek() {
                match flag {
                    b'-' => c.left = true,
                    b'+' => c.plus = true,
                    b' ' => c.space = true,
                    b'#' => c.alternate = true,
                    b'0' => c.zero = true,
                    _ => break,
                }
                bytes.next();
            }
            let number = |bytes: &mut std::iter::Peekable<std::iter::Copied<std::slice::Iter<'_, u8>>>| {
                let mut n: u32 = 0;
                while let Some(&d) = bytes.peek().filter(|d| d.is_ascii_digit()) {
                    n = n.checked_mul(10)?.checked_add(u32::from(d.wrapping_sub(b'0')))?;
                    bytes.next();
                }
                (n <= MAX_FIELD).then_some(n as usize)
            };
            c.width = number(&mut bytes)?;
            if bytes.peek() == Some(&b'.') {
                bytes.next();
                c.precision = Some(number(&mut bytes)?);
            }
            match bytes.peek() {
                Some(b'h') => {
                    bytes.next();
                    c.truncate = Some(2);
                    if bytes.peek() == Some(&b'h') {
                        bytes.next();
                        c.truncate = Some(1);
                    }
                }
                Some(b'l') => {
                    bytes.next();
                    c.size = 8;
                    if bytes.peek() == Some(&b'l') {
                        bytes.next();
                    }
                }
                Some(b'z' | b'j' | b't') => {
                    bytes.next();
                    c.size = 8;
                }
                _ => {}
            }
            c.conversion = bytes.next()?;
            match c.conversion {
                b'd' | b'i' | b'u' | b'x' | b'X' | b'o' => {}
                b'c' if c.size == 4 && c.truncate.is_none() => {}
                b'f' | b'F' | b'e' | b'E' | b'g' | b'G' if c.truncate.is_none() => c.size = 8,
                b'p' | b's' if c.size == 4 && c.truncate.is_none() => c.size = 8,
                _ => return None,
            }
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            c.at = at.next_multiple_of(c.size);
            at = c.at.checked_add(c.size)?;
            args = args.checked_add(1)?;
            pieces.push(Piece::Conversion(c));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Some(Format { pieces, args_len: at, args })
    }

    /// The bytes of the argument buffer the format reads.
    pub fn args_len(&self) -> usize {
        self.args_len
    }

    /// How many arguments it converts (what the fenced `printf` returns).
    pub fn args(&self) -> usize {
        self.args
    }

    /// The text of the format with the arguments in `args` (an argument buffer of at least
    /// [`args_len`](Self::args_len) bytes; missing bytes read as zeros), as C's `printf` makes
    /// it; bytes that are not UTF-8 become U+FFFD. A `%s` argument is an offset into the fence:
    /// its string is read from `strings`, the module's variables as the launch left them (a
    /// string of the module, such as a literal, lies there), up to its NUL or the variables'
    /// end; an offset past them prints as `(string at offset N)`, since the host does not read
    /// the rest of the fence.
    pub fn print(&self, args: &[u8], strings: &[u8]) -> String {
        let mut out: Vec<u8> = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.extend_from_slice(text),
                Piece::Conversion(c) => {
                    let mut raw = [0u8; 8];
                    for (i, r) in raw.iter_mut().enumerate().take(c.size) {
                        *r = args.get(c.at.saturating_add(i)).copied().unwrap_or(0);
                    }
                    let bits = u64::from_le_bytes(raw);
                    if c.conversion == b's' {
                        string(c, bits, strings, &mut out);
                    } else {
                        convert(c, bits, &mut out);
                    }
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// `%s` of the string at fence offset `at`, read from `strings` (see [`Format::print`]): at
/// most its precision of bytes, padded to its width.
fn string(c: &Conversion, at: u64, strings: &[u8], out: &mut Vec<u8>) {
    let text: Vec<u8> = match usize::try_from(at).ok().and_then(|at| strings.get(at..)) {
        Some(rest) if !rest.is_empty() => {
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            rest.get(..end).unwrap_or_default().to_vec()
        }
        _ => format!("(string at offset {at})").into_bytes(),
    };
    let shown = c.precision.map_or(text.len(), |p| p.min(text.len()));
    pad(c, &[], text.get(..shown).unwrap_or_default(), false, out);
}

/// The sign a signed conversion prints: `-` for a negative value, else `+` or a space where the
/// flags ask for one.
fn sign(c: &Conversion, negative: bool) -> &'static str {
    if negative {
        "-"
    } else if c.plus {
        "+"
    } else if c.space {
        " "
    } else {
        ""
    }
}

/// One conversion of `bits` (the argument's bytes, zero-extended), appended to `out`.
fn convert(c: &Conversion, bits: u64, out: &mut Vec<u8>) {
    let (sign, prefix, digits, numeric): (&str, &str, String, bool) = match c.conversion {
        b'd' | b'i' => {
            let value: i64 = match (c.truncate, c.size) {
                (Some(1), _) => i64::from(bits as u8 as i8),
                (Some(_), _) => i64::from(bits as u16 as i16),
                (None, 4) => i64::from(bits as u32 as i32),
                _ => bits as i64,
            };
            (sign(c, value < 0), "", integer_digits(value.unsigned_abs(), 10, false, c.precision), true)
        }
        b'u' | b'x' | b'X' | b'o' => {
            let value: u64 = match (c.truncate, c.size) {
                (Some(1), _) => u64::from(bits as u8),
                (Some(_), _) => u64::from(bits as u16),
                (None, 4) => u64::from(bits as u32),
                _ => bits,
            };
            let (radix, upper) = match c.conversion {
                b'x' => (16, false),
                b'X' => (16, true),
                b'o' => (8, false),
                _ => (10, false),
            };
            let mut digits = integer_digits(value, radix, upper, c.precision);
            let prefix = match c.conversion {
                b'x' if c.alternate && value != 0 => "0x",
                b'X' if c.alternate && value != 0 => "0X",
                b'o' if c.alternate && !digits.starts_with('0') => {
                    digits.insert(0, '0');
                    ""
                }
                _ => "",
            };
            ("", prefix, digits, true)
        }
        b'c' => ("", "", String::new(), false),
        b'p' => ("", "0x", format!("{bits:x}"), false),
        _ => {
            let value = f64::from_bits(bits);
            let sign = sign(c, value.is_sign_negative());
            let upper = c.conversion.is_ascii_uppercase();
            let digits = if value.is_nan() {
                "nan".to_owned()
            } else if value.is_infinite() {
                "inf".to_owned()
            } else {
                float_digits(value.abs(), c)
            };
            let digits = if upper { digits.to_ascii_uppercase() } else { digits };
            (sign, "", digits, value.is_finite())
        }
    };
    if c.conversion == b'c' {
        let body = [bits as u8];
        pad(c, &[], &body, false, out);
        return;
    }
    let mut head = String::from(sign);
    head.push_str(prefix);
    // `0` pads with zeros after the sign and prefix: not when left-justified, and not for an
    // integer with a precision.
    let zeros = numeric
        && c.zero
        && !c.left
        && !(c.precision.is_some() && matches!(c.conversion, b'd' | b'i' | b'u' | b'x' | b'X' | b'o'));
    pad(c, head.as_bytes(), digits.as_bytes(), zeros, out);
}

/// `head` (sign and prefix) and `body`, padded to the conversion's width: with spaces on the
/// left, on the right (`-`), or with zeros between the two (`zeros`).
fn pad(c: &Conversion, head: &[u8], body: &[u8], zeros: bool, out: &mut Vec<u8>) {
    let fill = c.width.saturating_sub(head.len().saturating_add(body.len()));
    if c.left {
        out.extend_from_slice(head);
        out.extend_from_slice(body);
        out.resize(out.len().saturating_add(fill), b' ');
    } else if zeros {
        out.extend_from_slice(head);
        out.resize(out.len().saturating_add(fill), b'0');
        out.extend_from_slice(body);
    } else {
        out.resize(out.len().saturating_add(fill), b' ');
        out.extend_from_slice(head);
        out.extend_from_slice(body);
    }
}

/// `value`'s digits in `radix`, at least `precision` of them (a precision of 0 prints nothing
/// for 0), one by default.
fn integer_digits(value: u64, radix: u32, upper: bool, precision: Option<usize>) -> String {
    let mut digits = match radix {
        16 if upper => format!("{value:X}"),
        16 => format!("{value:x}"),
        8 => format!("{value:o}"),
        _ => format!("{value}"),
    };
    match precision {
        Some(0) if value == 0 => digits.clear(),
        Some(p) if p > digits.len() => digits.insert_str(0, &"0".repeat(p.saturating_sub(digits.len()))),
        _ => {}
    }
    digits
}

/// A finite, non-negative `value`'s digits for `%f`, `%e` or `%g` (lower case).
fn float_digits(value: f64, c: &Conversion) -> String {
    let precision = c.precision.unwrap_or(6);
    match c.conversion.to_ascii_lowercase() {
        b'f' => fixed(value, precision, c.alternate),
        b'e' => exponent(value, precision, c.alternate),
        _ => {
            // C's %g: the exponent X that %e with P - 1 digits would print decides.
            let p = precision.max(1);
            let x = exponent_of(value, p.saturating_sub(1));
            let mut digits = if x < p as i64 && x >= -4 {
                fixed(value, (p as i64).saturating_sub(1).saturating_sub(x).max(0) as usize, c.alternate)
            } else {
                exponent(value, p.saturating_sub(1), c.alternate)
            };
            if !c.alternate {
                strip_zeros(&mut digits);
            }
            digits
        }
    }
}

fn fixed(value: f64, precision: usize, alternate: bool) -> String {
    let mut s = format!("{value:.precision$}");
    if alternate && precision == 0 {
        s.push('.');
    }
    s
}

/// `%e`: Rust's `1.5e3` written as C writes it, `1.5e+03`.
fn exponent(value: f64, precision: usize, alternate: bool) -> String {
    let s = format!("{value:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let mut out = String::from(mantissa);
    if alternate && precision == 0 {
        out.push('.');
    }
    let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
    out
}

/// The decimal exponent `%e` prints for `value` with `precision` digits after the point.
fn exponent_of(value: f64, precision: usize) -> i64 {
    let s = format!("{value:.precision$e}");
    s.split_once('e').and_then(|(_, e)| e.parse().ok()).unwrap_or(0)
}

/// Removes the trailing zeros of the fraction, and the point where nothing follows it.
fn strip_zeros(digits: &mut String) {
    let (mantissa, exp) = match digits.find('e') {
        Some(at) => (digits[..at].to_owned(), digits[at..].to_owned()),
        None => (digits.clone(), String::new()),
    };
    if !mantissa.contains('.') {
        return;
    }
    let trimmed = mantissa.trim_end_matches('0').trim_end_matches('.');
    *digits = format!("{trimmed}{exp}");
}

/// A fenced module's print buffer: where it lies among the module's variables, and the
/// formats its records name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintBuffer {
    /// The buffer's offset among the module's variables (its header's).
    pub(super) at: usize,
    pub(super) formats: Vec<Format>,
}

/// What a launch printed: the text of the records that fitted its print buffer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Printed {
    /// The records' text, in the order the kernel's threads reserved their places.
    pub text: String,
    /// Whether records were lost: more was printed than the buffer holds.
    pub truncated: bool,
}

impl PrintBuffer {
    /// The buffer's bytes among the module's variables: its header, then its records.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.at..self.at.saturating_add(BUFFER_BYTES as usize)
    }

    /// The formats a record may name, by number.
    pub fn formats(&self) -> &[Format] {
        &self.formats
    }

    /// Empties the buffer in `variables` (the module's variables, as a launch will find them):
    /// its count and its records zero, so that the bytes a record reserved and did not write
    /// (one that did not fit, at the end) read as no record.
    pub fn reset(&self, variables: &mut [u8]) {
        if let Some(buffer) = variables.get_mut(self.range()) {
            buffer.fill(0);
        }
    }

    /// What the records in `variables` (the module's variables, as a launch left them) print,
    /// at most [`MAX_PRINTED_BYTES`]. A record naming no format ends the reading (the kernel's
    /// own code may write anywhere inside its fence, this buffer too), and is reported as lost
    /// output.
    pub fn text(&self, variables: &[u8]) -> Printed {
        let word = |at: usize| -> Option<u32> {
            let bytes = variables.get(at..at.checked_add(4)?)?;
            Some(u32::from_le_bytes(bytes.try_into().ok()?))
        };
        let mut printed = Printed::default();
        let reserved = variables
            .get(self.at..self.at.saturating_add(8))
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        printed.truncated = reserved > u64::from(PRINT_BUFFER_BYTES);
        let end = reserved.min(u64::from(PRINT_BUFFER_BYTES)) as usize;
        let records = self.at.saturating_add(HEADER as usize);
        let mut at = 0usize;
        while at < end {
            if printed.text.len() >= MAX_PRINTED_BYTES {
                printed.truncated = true;
                break;
            }
            // A record names its format by number plus one: 0 is bytes no record was written to.
            let format = word(records.saturating_add(at))
                .and_then(|id| id.checked_sub(1))
                .and_then(|id| self.formats.get(id as usize));
            let Some(format) = format else {
                printed.truncated = true;
                break;
            };
            let args = records.saturating_add(at).saturating_add(RECORD_ARGS as usize);
            let len = record_len(format) as usize;
            let bytes = variables.get(args..args.saturating_add(format.args_len)).unwrap_or_default();
            printed.text.push_str(&format.print(bytes, variables));
            at = at.saturating_add(len);
        }
        if printed.text.len() > MAX_PRINTED_BYTES {
            let mut cut = MAX_PRINTED_BYTES;
            while !printed.text.is_char_boundary(cut) {
                cut = cut.saturating_sub(1);
            }
            printed.text.truncate(cut);
            printed.truncated = true;
        }
        printed
    }
}

/// A record's bytes: the format's number plus one (so that 0 is no record), padded to
/// [`RECORD_ARGS`], then its argument buffer rounded up to 16 bytes.
pub(super) fn record_len(format: &Format) -> u32 {
    let args = u32::try_from(format.args_len.next_multiple_of(16)).unwrap_or(u32::MAX);
    args.saturating_add(RECORD_ARGS)
}

/// The print buffer's bytes: its header, its records, the scratch record.
const BUFFER_BYTES: u32 = HEADER + PRINT_BUFFER_BYTES + MAX_RECORD;

/// The module variable the fence adds for the print buffer (placed at the start of the fence
/// with the others, so no instruction names it once lowering is done).
pub(super) const PRINT_VARIABLE: &str = "__kargs_print";

/// The CUDA runtime's `printf`, which nvcc calls.
const VPRINTF: &str = "vprintf";

/// Whether `module` declares CUDA's `vprintf` (`.extern .func vprintf` without a body): what a
/// `printf` in its source compiles to a call of, and what [`lower_printf`] rewrites.
pub(super) fn declares_vprintf(module: &Module) -> bool {
    module.items.iter().any(|item| {
        matches!(item, Item::Function(f)
            if f.name == VPRINTF && f.kind == FunctionKind::Func && f.body.is_none()
                && f.linkage == Some(Linkage::Extern))
    })
}

/// Replaces each `vprintf` call sequence of `module` whose format this reads with the writing
/// of its record (see the module's documentation), and adds the print buffer's variable: the
/// formats, by number, or `None` where no call was replaced. A call this does not replace stays,
/// for the rewriter to refuse by name.
pub(super) fn lower_printf(module: &mut Module) -> Option<Vec<Format>> {
    let declared = declares_vprintf(module);
    let taken = module.items.iter().any(|item| match item {
        Item::Variable(v) => v.name == PRINT_VARIABLE,
        Item::Function(f) => f.name == PRINT_VARIABLE,
        Item::Pragma(_) => false,
    });
    if !declared || taken {
        return None;
    }
    // The module's strings: `.global` byte arrays with an initializer, up to their NUL.
    let strings: HashMap<String, Vec<u8>> = module
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Variable(v)
                if v.space == StateSpace::Global && matches!(v.ty, Type::B8 | Type::U8 | Type::S8) =>
            {
                let Some(Initializer::List(items)) = &v.init else { return None };
                let mut bytes = Vec::new();
                for item in items {
                    let Initializer::Value(Immediate::Int(b)) = item else { return None };
                    if *b == 0 {
                        return Some((v.name.clone(), bytes));
                    }
                    bytes.push(u8::try_from(*b).ok().or_else(|| i8::try_from(*b).ok().map(|s| s as u8))?);
                }
                None
            }
            _ => None,
        })
        .collect();
    let mut formats: Vec<Format> = Vec::new();
    let mut site = 0usize;
    for item in &mut module.items {
        let Item::Function(f) = item else { continue };
        let Some(body) = &mut f.body else { continue };
        let mut instructions = Vec::new();
        collect(body, &mut instructions);
        // Each `.local` variable aligned to 16 (below, where a record reads it), so that the
        // arguments are read 16 bytes at a time (the fence aligns them so in any case).
        let locals: HashMap<String, (u64, u64)> = body
            .statements
            .iter()
            .filter_map(|s| match s {
                Statement::Variable(v) if v.space == StateSpace::Local => {
                    Some((v.name.clone(), (v.size()?, v.alignment().max(u64::from(RECORD_ARGS)))))
                }
                _ => None,
            })
            .collect();
        let function = Caller { instructions: &instructions, locals: &locals };
        let before = site;
        replace_calls(body, &function, &strings, &mut formats, &mut site);
        if site != before {
            // The frame's addresses the calls took, and the depot's stores nothing reads now
            // that the records take the arguments from the registers stored.
            remove_dead(body, &|i| is_move(i) || frame_address(i));
            remove_unread_locals(body);
            for statement in &mut body.statements {
                if let Statement::Variable(v) = statement
                    && v.space == StateSpace::Local
                {
                    v.align = Some(v.align.unwrap_or(1).max(RECORD_ARGS));
                }
            }
        }
    }
    if formats.is_empty() {
        return None;
    }
    module.items.push(Item::Variable(Variable {
        span: Span::default(),
        linkage: None,
        space: StateSpace::Global,
        align: Some(16),
        vector: None,
        ty: Type::B8,
        name: PRINT_VARIABLE.to_owned(),
        dims: vec![Some(u64::from(BUFFER_BYTES))],
        init: None,
    }));
    Some(formats)
}

/// What a call's rewriting reads of the function that makes it.
struct Caller<'f> {
    /// Its instructions, at any depth, in order.
    instructions: &'f [Instruction],
    /// Its `.local` variables, with their sizes and alignments.
    locals: &'f HashMap<String, (u64, u64)>,
}

/// Where a call's argument buffer is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arguments {
    /// A `.local` variable of the function (`size` bytes, aligned to `align`), at a constant
    /// offset (nvcc's `%SP` of its local depot): read from the variable by name, which the
    /// fence proves from its declaration, 16 bytes at a time where they are aligned and inside
    /// it (8 or 4 where not).
    Local { depot: String, offset: i64, size: u64, align: u64 },
    /// The registers the kernel stored each argument from, into its depot just before the call
    /// ([`stored`]): written from them, and the depot not read.
    Stored(Vec<Stored>),
    /// A register holding a generic address: each word read through it, fenced.
    Generic(String),
    /// No arguments.
    None,
}

/// One argument written from the register the kernel stored it from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stored {
    /// Its place in the argument buffer.
    at: i64,
    /// Its bytes: 4 or 8.
    width: u64,
    /// The store's type (`u32`, `f64`...).
    ty: String,
    /// The register.
    value: Operand,
}

/// Whether `i` computes an address in the thread's frame nvcc's way, `add` of a register and a
/// constant (`add.u64 %rd4, %SPL, 8`): pure, removed where nothing reads it.
fn frame_address(i: &Instruction) -> bool {
    i.opcode == "add"
        && i.guard.is_none()
        && i.modifiers.iter().map(String::as_str).eq(["u64"])
        && matches!(i.operands.as_slice(), [d, a, k]
            if d.register().is_some() && a.register().is_some()
                && matches!(k.kind, OperandKind::Immediate(Immediate::Int(_))))
}

/// Removes the stores into each of `body`'s top-level `.local` variables that nothing reads
/// (every instruction that names it is a `.local` store into it by name), and the variable: a
/// thread's memory no one reads.
fn remove_unread_locals(body: &mut Block) {
    for local in local_variables(body) {
        let store = |i: &Instruction| {
            i.opcode == "st"
                && i.has("local")
                && matches!(i.operands.first().map(|o| &o.kind),
                    Some(OperandKind::Address(Address { base: AddressBase::Symbol(s), .. })) if *s == local)
        };
        let mut unread = true;
        for_each_instruction(body, &mut |i| {
            // Any mention but a store's address reads it, or lets its address escape.
            let reads = i
                .operands
                .iter()
                .enumerate()
                .any(|(k, o)| o.symbols().contains(&local.as_str()) && !(k == 0 && store(i)));
            unread &= !reads;
        });
        if unread {
            retain_instructions(body, &|i| !store(i));
            body.statements.retain(|s| !matches!(s, Statement::Variable(v) if v.name == local));
        }
    }
}

/// Instructions that write registers only (no memory, no control): a run of stores into the
/// depot goes on past them ([`stored`]).
const PURE: &[&str] = &[
    "mov", "cvta", "cvt", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "neg", "min",
    "max", "selp", "setp",
];

/// The arguments of a call whose buffer is `depot` at `offset`, from `before`, the statements
/// before the call: where the kernel stored each argument the format reads, in the run of
/// `.local` stores into the depot by name just before the call (the last store there of each of
/// its bytes: one store of exactly its place and width), from a register.
fn stored(before: &[Statement], format: &Format, depot: &str, offset: i64) -> Option<Vec<Stored>> {
    // The run of stores, nearest first: (place in the depot, width, type, value); and the
    // registers written after them, before the call.
    let mut run: Vec<(i64, u64, &String, &Operand)> = Vec::new();
    let mut written: Vec<&str> = Vec::new();
    for statement in before.iter().rev() {
        let Statement::Instruction(i) = statement else { break };
        // An instruction that only computes a register (nvcc computes the format's address
        // between the stores and the call): the run goes on past it.
        if PURE.contains(&i.opcode.as_str()) {
            written.extend(defines(i));
            continue;
        }
        let ([space, ty], [to, value]) = (i.modifiers.as_slice(), i.operands.as_slice()) else { break };
        let width = match ty.as_str() {
            "b32" | "u32" | "s32" | "f32" => 4,
            "b64" | "u64" | "s64" | "f64" => 8,
            _ => break,
        };
        let OperandKind::Address(Address { base: AddressBase::Symbol(s), offset: place }) = &to.kind else {
            break;
        };
        if i.opcode != "st" || i.guard.is_some() || space != "local" || s != depot {
            break;
        }
        match value.register() {
            Some(r) if r.component.is_none() && !written.contains(&r.name.as_str()) => {}
            _ => break,
        }
        run.push((*place, width, ty, value));
    }
    let mut out = Vec::new();
    for piece in &format.pieces {
        let Piece::Conversion(c) = piece else { continue };
        let (at, size) = (i64::try_from(c.at).ok()?, u64::try_from(c.size).ok()?);
        let place = offset.checked_add(at)?;
        let end = place.checked_add(i64::try_from(size).ok()?)?;
        let &(p, width, ty, value) = run
            .iter()
            .find(|(p, w, ..)| *p < end && p.saturating_add(i64::try_from(*w).unwrap_or(0)) > place)?;
        if p != place || width != size {
            return None;
        }
        out.push(Stored { at, width, ty: ty.clone(), value: value.clone() });
    }
    Some(out)
}

/// Every instruction of `block`, at any depth, in order.
fn collect(block: &Block, out: &mut Vec<Instruction>) {
    for statement in &block.statements {
        match statement {
            Statement::Instruction(i) => out.push(i.clone()),
            Statement::Block(inner) => collect(inner, out),
            _ => {}
        }
    }
}

/// Replaces, at any depth of `block`, each `vprintf` call sequence whose format is known.
fn replace_calls(
    block: &mut Block,
    function: &Caller<'_>,
    strings: &HashMap<String, Vec<u8>>,
    formats: &mut Vec<Format>,
    site: &mut usize,
) {
    for k in 0..block.statements.len() {
        let (before, rest) = block.statements.split_at_mut(k);
        let Some(Statement::Block(inner)) = rest.first_mut() else { continue };
        match call(inner, function, strings) {
            Some((format, args, result)) => {
                let id = match formats.iter().position(|f| *f == format) {
                    Some(id) => id,
                    None => {
                        formats.push(format.clone());
                        formats.len().saturating_sub(1)
                    }
                };
                let args = match &args {
                    Arguments::Local { depot, offset, .. } => {
                        stored(before, &format, depot, *offset).map_or(args, Arguments::Stored)
                    }
                    _ => args,
                };
                *inner = record(&format, id, &args, result.as_ref(), *site);
                *site = site.saturating_add(1);
            }
            None => replace_calls(inner, function, strings, formats, site),
        }
    }
}

/// The format, the argument buffer's operand and the register the call's result went to, when
/// `block` is exactly nvcc's `vprintf` call sequence (register and `.param` declarations, the
/// two arguments stored, the unguarded call, the result loaded or not) and its format is a
/// string of the module this reads.
fn call(
    block: &Block,
    function: &Caller<'_>,
    strings: &HashMap<String, Vec<u8>>,
) -> Option<(Format, Arguments, Option<Operand>)> {
    let mut stored: HashMap<&str, &Operand> = HashMap::new();
    let mut params = Vec::new();
    let (mut called, mut result) = (None, None);
    for statement in &block.statements {
        match statement {
            Statement::Registers(_) => {}
            Statement::Variable(v) if v.space == StateSpace::Param && v.init.is_none() => {
                params.push(v.name.as_str())
            }
            Statement::Instruction(i) if i.guard.is_none() => {
                match (i.opcode.as_str(), i.operands.as_slice()) {
                    ("st", [to, value]) if i.has("param") && called.is_none() => {
                        let OperandKind::Address(a) = &to.kind else { return None };
                        let AddressBase::Symbol(name) = &a.base else { return None };
                        if a.offset != 0 || !params.contains(&name.as_str()) {
                            return None;
                        }
                        stored.insert(name.as_str(), value);
                    }
                    ("call", [ret, callee, arguments])
                        if called.is_none() && i.modifiers.iter().all(|m| m == "uni") =>
                    {
                        let (
                            OperandKind::List(ret),
                            OperandKind::Symbol { name, offset: 0 },
                            OperandKind::List(args),
                        ) = (&ret.kind, &callee.kind, &arguments.kind)
                        else {
                            return None;
                        };
                        let symbol = |o: &Operand| match &o.kind {
                            OperandKind::Symbol { name, offset: 0 } => Some(name.clone()),
                            _ => None,
                        };
                        let args: Vec<String> = args.iter().map(symbol).collect::<Option<_>>()?;
                        let [ret] = ret.as_slice() else { return None };
                        if name != VPRINTF || args.len() != 2 {
                            return None;
                        }
                        called = Some((args, symbol(ret)?));
                    }
                    ("ld", [to, from]) if i.has("param") && result.is_none() => {
                        let (_, ret) = called.as_ref()?;
                        let OperandKind::Address(a) = &from.kind else { return None };
                        if a.base != AddressBase::Symbol(ret.clone())
                            || a.offset != 0
                            || to.register().is_none()
                        {
                            return None;
                        }
                        result = Some(to.clone());
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    let (args, _) = called?;
    let [format, buffer] = args.as_slice() else { return None };
    let format = stored.get(format.as_str())?.register()?;
    let buffer = *stored.get(buffer.as_str())?;
    let name = string_of(&format.name, function.instructions)?;
    let format = Format::parse(strings.get(&name)?)?;
    if record_len(&format) > MAX_RECORD {
        return None;
    }
    let words = i64::try_from(format.args_len.div_ceil(4)).ok()?;
    let arguments = match buffer.register() {
        _ if words == 0 => Arguments::None,
        Some(r) => match local_buffer(&r.name, function) {
            Some((depot, offset))
                if offset % 4 == 0
                    && u64::try_from(offset.checked_add(words.checked_mul(4)?)?).is_ok_and(|end| {
                        function.locals.get(&depot).is_some_and(|&(size, _)| end <= size)
                    }) =>
            {
                let (size, align) = function.locals.get(&depot).copied().unwrap_or((0, 1));
                Arguments::Local { depot, offset, size, align }
            }
            _ => Arguments::Generic(r.name.clone()),
        },
        None => return None,
    };
    Some((format, arguments, result))
}

/// The one unguarded definition of register `r` in `function`, where it has exactly one (a
/// write of `r` as part of a vector or a pair counts: [`defines`]).
fn definition<'f>(r: &str, function: &'f [Instruction]) -> Option<&'f Instruction> {
    let mut defs = function.iter().filter(|i| defines(i).contains(&r));
    let first = defs.next()?;
    (defs.next().is_none() && first.guard.is_none()).then_some(first)
}

/// The `.local` variable and offset a generic argument buffer register holds, as nvcc forms
/// it: `add.u64 %rB, %SP, k` (or `mov.u64 %rB, %SP`), `cvta.local.u64 %SP, %SPL`, `mov.u64
/// %SPL, depot`, each the register's one definition.
fn local_buffer(register: &str, function: &Caller<'_>) -> Option<(String, i64)> {
    let wide = |i: &Instruction| i.modifiers.iter().any(|m| matches!(m.as_str(), "u64" | "b64" | "s64"));
    let def = definition(register, function.instructions)?;
    let (sp, offset) = match (def.opcode.as_str(), def.operands.as_slice()) {
        ("add", [_, sp, k]) if wide(def) => {
            let OperandKind::Immediate(Immediate::Int(k)) = &k.kind else { return None };
            (sp.register()?, i64::try_from(*k).ok()?)
        }
        ("mov", [_, sp]) if wide(def) => (sp.register()?, 0),
        _ => return None,
    };
    let cvta = definition(&sp.name, function.instructions)?;
    if cvta.opcode != "cvta" || !cvta.modifiers.iter().map(String::as_str).eq(["local", "u64"]) {
        return None;
    }
    let mov = definition(&cvta.operands.get(1)?.register()?.name, function.instructions)?;
    let OperandKind::Symbol { name, offset: 0 } = &mov.operands.get(1)?.kind else { return None };
    (mov.opcode == "mov" && wide(mov) && function.locals.contains_key(name)).then(|| (name.clone(), offset))
}

/// The string a format register holds: its one definition is `cvta.global.u64` of the string,
/// or of a register whose one definition is `mov.u64` of it.
fn string_of(register: &str, function: &[Instruction]) -> Option<String> {
    let definition = |r: &str| definition(r, function);
    let symbol = |o: &Operand| match &o.kind {
        OperandKind::Symbol { name, offset: 0 } => Some(name.clone()),
        _ => None,
    };
    let cvta = definition(register)?;
    if cvta.opcode != "cvta" || !cvta.modifiers.iter().map(String::as_str).eq(["global", "u64"]) {
        return None;
    }
    let source = cvta.operands.get(1)?;
    if let Some(name) = symbol(source) {
        return Some(name);
    }
    let mov = definition(&source.register()?.name)?;
    let wide = mov.modifiers.iter().any(|m| matches!(m.as_str(), "u64" | "b64"));
    if mov.opcode != "mov" || !wide {
        return None;
    }
    symbol(mov.operands.get(1)?)
}

/// The pieces a record's arguments are copied in from the thread's depot: `(place, bytes)`,
/// `place` from the arguments' start, covering its `args_len` bytes, each piece 16, 8 or 4
/// bytes wide, aligned to its width at both ends (the record's arguments are aligned to 16) and
/// inside the depot (`size` bytes, aligned to `align`, the arguments at `offset`, a multiple of
/// 4; the bytes past `args_len` a wide piece may read are the depot's, and nobody reads them
/// back).
fn pieces(args_len: usize, offset: i64, size: u64, align: u64) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    let end = i64::try_from(args_len).unwrap_or(i64::MAX);
    let size = i64::try_from(size).unwrap_or(0);
    let mut place = 0i64;
    while place < end {
        let source = offset.saturating_add(place);
        let width = [16u64, 8, 4]
            .into_iter()
            .find(|&w| {
                let wi = w as i64;
                w == 4
                    || (align >= w
                        && place.checked_rem(wi) == Some(0)
                        && source.checked_rem(wi) == Some(0)
                        && source.saturating_add(wi) <= size)
            })
            .unwrap_or(4);
        out.push((place, width));
        place = place.saturating_add(width as i64);
    }
    out
}

/// The block that writes one call's record (see the module's documentation): the place
/// reserved with an atomic add to the buffer's count (the scratch record past the buffer's end
/// where it does not fit), then the format's number and the argument buffer's words stored
/// there; the call's result, where it was read, is the number of arguments. The stores are one
/// register at constant offsets, unguarded, so the rewriter clamps them once.
fn record(format: &Format, id: usize, arguments: &Arguments, result: Option<&Operand>, site: usize) -> Block {
    let name = |what: &str| format!("%_kpf{site}_{what}");
    let (p, s, w, a, b, ok) = (name("p"), name("s"), name("w"), name("a"), name("b"), name("ok"));
    let reg = |r: &str| Operand::new(OperandKind::Register(Register::new(r)));
    let imm = |v: i128| Operand::new(OperandKind::Immediate(Immediate::Int(v)));
    let at = |base: AddressBase, offset: i64| Operand::new(OperandKind::Address(Address { base, offset }));
    let op = |opcode: &str, modifiers: &[&str], operands: Vec<Operand>| {
        Statement::Instruction(Instruction {
            span: Span::default(),
            guard: None,
            opcode: opcode.to_owned(),
            modifiers: modifiers.iter().map(|m| (*m).to_owned()).collect(),
            operands,
        })
    };
    let declare = |ty: Type, names: &[&String]| {
        Statement::Registers(RegisterDecl {
            span: Span::default(),
            vector: None,
            ty,
            names: names.iter().map(|n| RegisterName { name: (*n).clone(), count: None }).collect(),
        })
    };
    let len = record_len(format);
    let print = || AddressBase::Symbol(PRINT_VARIABLE.to_owned());
    let mut statements = vec![
        declare(Type::B32, &[&w]),
        declare(Type::B64, &[&p, &s, &a, &b]),
        declare(Type::Pred, &[&ok]),
        op("atom", &["global", "add", "u64"], vec![reg(&p), at(print(), 0), imm(i128::from(len))]),
        op(
            "setp",
            &["le", "u64"],
            vec![reg(&ok), reg(&p), imm(i128::from(PRINT_BUFFER_BYTES.saturating_sub(len)))],
        ),
        op("selp", &["b64"], vec![reg(&s), reg(&p), imm(i128::from(PRINT_BUFFER_BYTES)), reg(&ok)]),
        op(
            "mov",
            &["u64"],
            vec![reg(&b), Operand::new(OperandKind::Symbol { name: PRINT_VARIABLE.to_owned(), offset: 0 })],
        ),
        op("add", &["u64"], vec![reg(&a), reg(&s), reg(&b)]),
        op("mov", &["u32"], vec![reg(&w), imm((id as i128).saturating_add(1))]),
        op("st", &["global", "u32"], vec![at(AddressBase::Register(a.clone()), i64::from(HEADER)), reg(&w)]),
    ];
    let args = i64::from(HEADER).saturating_add(i64::from(RECORD_ARGS));
    match arguments {
        Arguments::Local { depot, offset, size, align } => {
            let q: Vec<String> = (0..4).map(|k| name(&format!("q{k}"))).collect();
            statements.insert(0, declare(Type::B32, &q.iter().collect::<Vec<_>>()));
            for (place, width) in pieces(format.args_len, *offset, *size, *align) {
                let from = at(AddressBase::Symbol(depot.clone()), offset.saturating_add(place));
                let to = at(AddressBase::Register(a.clone()), args.saturating_add(place));
                let (vector, words) = match width {
                    16 => (Some("v4"), 4),
                    8 => (Some("v2"), 2),
                    _ => (None, 1),
                };
                let value = match vector {
                    Some(_) => {
                        Operand::new(OperandKind::Vector(q.iter().take(words).map(|w| reg(w)).collect()))
                    }
                    None => reg(&w),
                };
                let modifiers: Vec<&str> = vector.into_iter().chain(["u32"]).collect();
                let mut load = vec!["local"];
                load.extend(&modifiers);
                let mut store = vec!["global"];
                store.extend(&modifiers);
                statements.push(op("ld", &load, vec![value.clone(), from]));
                statements.push(op("st", &store, vec![to, value]));
            }
        }
        Arguments::Stored(values) => {
            // Each 8 bytes of the arguments one store, in order: an 8-byte value, or a pair of
            // 4-byte ones (the one value again where its other half is padding), so that every
            // store's place is a multiple of 8 from the record's start and the stores take one
            // clamp.
            let mut units: std::collections::BTreeMap<i64, [Option<&Stored>; 2]> = Default::default();
            for v in values {
                let unit = v.at.saturating_sub(v.at.rem_euclid(8));
                let half = usize::from(v.width == 4 && v.at != unit);
                if let Some(slot) = units.entry(unit).or_default().get_mut(half) {
                    *slot = Some(v);
                }
            }
            for (unit, halves) in units {
                let to = at(AddressBase::Register(a.clone()), args.saturating_add(unit));
                let store = match halves {
                    [Some(v), None] => op("st", &["global", &v.ty], vec![to, v.value.clone()]),
                    [low, Some(high)] => {
                        let pair = vec![low.unwrap_or(high).value.clone(), high.value.clone()];
                        op("st", &["global", "v2", "b32"], vec![to, Operand::new(OperandKind::Vector(pair))])
                    }
                    [None, None] => continue,
                };
                statements.push(store);
            }
        }
        Arguments::Generic(r) => {
            for word in 0..format.args_len.div_ceil(4) {
                let at_word = i64::try_from(word).unwrap_or(i64::MAX).saturating_mul(4);
                statements.push(op(
                    "ld",
                    &["u32"],
                    vec![reg(&w), at(AddressBase::Register(r.clone()), at_word)],
                ));
                statements.push(op(
                    "st",
                    &["global", "u32"],
                    vec![at(AddressBase::Register(a.clone()), args.saturating_add(at_word)), reg(&w)],
                ));
            }
        }
        Arguments::None => {}
    }
    if let Some(result) = result {
        statements.push(op("mov", &["b32"], vec![result.clone(), imm(format.args as i128)]));
    }
    Block { span: Span::default(), statements }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(values: &[(usize, u64)]) -> Vec<u8> {
        let mut buffer = vec![0u8; 128];
        for &(at, bits) in values {
            buffer[at..at + 8].copy_from_slice(&bits.to_le_bytes());
        }
        buffer
    }

    /// Each line as glibc's printf printed it (gcc, x86-64), from the same values (3.14159 is
    /// such a value, not π).
    #[test]
    #[allow(clippy::approx_constant)]
    fn formats_print_as_c_prints_them() {
        let f = Format::parse(b"[%d|%5d|%-5d|%05d|%+d|% d|%.3d|%x|%#x|%X|%o|%#o|%u|%c|%%]\n").unwrap();
        let ints: [i32; 14] = [-42, 42, 42, -42, 42, 42, 7, 255, 255, 255, 8, 8, -1, 65];
        let values: Vec<(usize, u64)> =
            ints.iter().enumerate().map(|(i, &v)| (i * 4, u64::from(v as u32))).collect();
        let mut buffer = vec![0u8; 64];
        for (at, v) in values {
            buffer[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
        }
        assert_eq!(f.args_len(), 56);
        assert_eq!(
            f.print(&buffer, &[]),
            "[-42|   42|42   |-0042|+42| 42|007|ff|0xff|FF|10|010|4294967295|A|%]\n"
        );

        let f = Format::parse(b"[%ld|%lld|%lu|%lx|%hd|%hhd]\n").unwrap();
        // 8-byte arguments at 0, 8, 16, 24; the promoted short and char at 32 and 36.
        let mut buffer = args(&[
            (0, -5_000_000_000i64 as u64),
            (8, 123_456_789_012),
            (16, u64::MAX),
            (24, 0xdead_beef_cafe),
        ]);
        buffer[32..36].copy_from_slice(&(-3i32).to_le_bytes());
        buffer[36..40].copy_from_slice(&(-7i32).to_le_bytes());
        assert_eq!(
            f.print(&buffer, &[]),
            "[-5000000000|123456789012|18446744073709551615|deadbeefcafe|-3|-7]\n"
        );

        let f =
            Format::parse(b"[%f|%.2f|%10.3f|%-10.1f|%+f|%e|%.3E|%g|%g|%g|%g|%#g|%G|%.0f|%.0e]\n").unwrap();
        let doubles = [
            3.14159, 2.005, -1.5, 2.25, 1.0, 123456.789, 0.000123, 100000.0, 1000000.0, 0.0001, 0.00001, 1.0,
            1e-10, 2.5, 15000.0,
        ];
        let buffer =
            args(&doubles.iter().enumerate().map(|(i, v)| (i * 8, f64::to_bits(*v))).collect::<Vec<_>>());
        assert_eq!(
            f.print(&buffer, &[]),
            "[3.141590|2.00|    -1.500|2.2       |+1.000000|1.234568e+05|1.230E-04|100000|1e+06|0.0001|1e-05|1.00000|1E-10|2|2e+04]\n"
        );

        let f = Format::parse(b"[%f|%e|%g|%F|%5.1f|%08.3f|%g|%.10g]\n").unwrap();
        let doubles =
            [f64::INFINITY, f64::NEG_INFINITY, -f64::NAN, f64::INFINITY, -0.0, -3.14159, 0.0, 1.0 / 3.0];
        let buffer =
            args(&doubles.iter().enumerate().map(|(i, v)| (i * 8, f64::to_bits(*v))).collect::<Vec<_>>());
        assert_eq!(f.print(&buffer, &[]), "[inf|-inf|-nan|INF| -0.0|-003.142|0|0.3333333333]\n");

        let f = Format::parse(b"[%p|%#.0x|%.0d|%5.3x]\n").unwrap();
        let mut buffer = args(&[(0, 0x1234)]);
        buffer[16..20].copy_from_slice(&10u32.to_le_bytes());
        assert_eq!(f.print(&buffer, &[]), "[0x1234|||  00a]\n");
    }

    /// A `%s` argument is an offset into the fence, read from the module's variables.
    #[test]
    fn a_string_is_read_from_the_modules_variables() {
        let f = Format::parse(b"[%s|%5s|%-5s|%.2s|%s|%s]").unwrap();
        assert_eq!(f.args_len(), 48);
        let strings = b"hi\0hello\0tail";
        let buffer = args(&[(0, 0), (8, 0), (16, 0), (24, 3), (32, 9), (40, 64)]);
        // glibc prints the first four so; the fifth runs to the variables' end.
        assert_eq!(f.print(&buffer, strings), "[hi|   hi|hi   |he|tail|(string at offset 64)]");
    }

    #[test]
    fn arguments_are_placed_as_vprintf_packs_them() {
        // `first element %f of %d\n`: the double at 0, the int at 8 (corpus/printf.cu).
        let f = Format::parse(b"first element %f of %d\n").unwrap();
        assert_eq!((f.args_len(), f.args()), (12, 2));
        let mut buffer = args(&[(0, 1.5f64.to_bits())]);
        buffer[8..12].copy_from_slice(&7i32.to_le_bytes());
        assert_eq!(f.print(&buffer, &[]), "first element 1.500000 of 7\n");
        // An int then a double: the double aligned to 8.
        let f = Format::parse(b"%d %g").unwrap();
        assert_eq!(f.args_len(), 16);
        // Missing bytes read as zeros.
        assert_eq!(f.print(&[], &[]), "0 0");
        assert_eq!(Format::parse(b"no conversion").unwrap().args_len(), 0);
    }

    #[test]
    fn what_a_format_may_not_hold() {
        for format in [
            &b"%ls"[..],
            b"%n",
            b"%*d",
            b"%.*f",
            b"%a",
            b"%Lf",
            b"%1$d",
            b"%513d",
            b"%.99999999999f",
            b"%",
            b"%hc",
            b"%lp",
            b"%hf",
            b"%q",
        ] {
            assert_eq!(Format::parse(format), None, "{}", String::from_utf8_lossy(format));
        }
        assert!(Format::parse(b"%512d %.512f").is_some());
    }

    /// Whatever the kernel left in its print buffer (it can write anywhere in its fence), the
    /// host reads it without a panic and prints at most `MAX_PRINTED_BYTES`.
    #[test]
    fn any_bytes_in_the_buffer_read_safely() {
        let formats = ["%d %s %f\n", "%512d", "%c%c%c%c", "%.512e|%#o|%-9lx|%p", "x"];
        let buffer = PrintBuffer {
            at: 8,
            formats: formats.iter().map(|f| Format::parse(f.as_bytes()).unwrap()).collect(),
        };
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for round in 0..64 {
            let mut variables = vec![0u8; 8 + BUFFER_BYTES as usize];
            for b in &mut variables {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mostly small words, so that records name formats.
                *b = if state.is_multiple_of(4) { (state >> 8) as u8 } else { (state % 6) as u8 };
            }
            let count = [0u64, 12, u64::from(PRINT_BUFFER_BYTES), u64::MAX][round % 4];
            variables[8..16].copy_from_slice(&count.to_le_bytes());
            let printed = buffer.text(&variables);
            assert!(printed.text.len() <= MAX_PRINTED_BYTES);
        }
    }

    #[test]
    fn arguments_are_copied_in_the_widest_aligned_pieces_inside_the_depot() {
        // 40 bytes at the start of a 40-byte depot: 16, 16, then 8.
        assert_eq!(pieces(40, 0, 40, 16), [(0, 16), (16, 16), (32, 8)]);
        // 12 bytes: one piece of 16 (the depot's 4 bytes past them are read, and not printed)...
        assert_eq!(pieces(12, 0, 40, 16), [(0, 16)]);
        // ...but never past the depot's end.
        assert_eq!(pieces(12, 0, 12, 16), [(0, 8), (8, 4)]);
        // At an offset of 8 or 4 the record's places and the depot's are aligned to 8 or 4 only.
        assert_eq!(pieces(16, 8, 64, 16), [(0, 8), (8, 8)]);
        assert_eq!(pieces(8, 4, 64, 16), [(0, 4), (4, 4)]);
        // A depot aligned to 8: no piece of 16.
        assert_eq!(pieces(16, 0, 64, 8), [(0, 8), (8, 8)]);
        assert!(pieces(0, 0, 0, 16).is_empty());
    }

    #[test]
    fn a_buffer_reads_its_records_and_says_what_was_lost() {
        let formats = vec![Format::parse(b"a=%d\n").unwrap(), Format::parse(b"b\n").unwrap()];
        let buffer = PrintBuffer { at: 16, formats };
        let mut variables = vec![0u8; 16 + BUFFER_BYTES as usize];
        let records = 16 + HEADER as usize;
        // Two records: format 0 with 5 (its arguments 16 bytes in, 32 bytes long), format 1
        // without arguments (16 bytes).
        variables[records..records + 4].copy_from_slice(&1u32.to_le_bytes());
        variables[records + 16..records + 20].copy_from_slice(&5i32.to_le_bytes());
        variables[records + 32..records + 36].copy_from_slice(&2u32.to_le_bytes());
        variables[16..24].copy_from_slice(&48u64.to_le_bytes());
        assert_eq!(buffer.text(&variables), Printed { text: "a=5\nb\n".to_owned(), truncated: false });
        // More reserved than the buffer holds: what fitted, and the loss said.
        variables[16..24].copy_from_slice(&u64::from(PRINT_BUFFER_BYTES + 16).to_le_bytes());
        let printed = buffer.text(&variables);
        assert!(printed.truncated && printed.text.starts_with("a=5\nb\n"));
        // A record naming no format ends the reading.
        variables[16..24].copy_from_slice(&64u64.to_le_bytes());
        variables[records + 48..records + 52].copy_from_slice(&9u32.to_le_bytes());
        assert_eq!(buffer.text(&variables), Printed { text: "a=5\nb\n".to_owned(), truncated: true });
        buffer.reset(&mut variables);
        assert_eq!(buffer.text(&variables), Printed::default());
        // However its records are written, a launch prints at most MAX_PRINTED_BYTES.
        let wide = PrintBuffer { at: 16, formats: vec![Format::parse(b"%512d%512d").unwrap()] };
        variables[16..24].copy_from_slice(&u64::from(PRINT_BUFFER_BYTES).to_le_bytes());
        for record in variables[records..records + PRINT_BUFFER_BYTES as usize].chunks_exact_mut(32) {
            record[..4].copy_from_slice(&1u32.to_le_bytes());
        }
        let printed = wide.text(&variables);
        assert!(printed.truncated && printed.text.len() == MAX_PRINTED_BYTES, "{}", printed.text.len());
        assert_eq!(buffer.range(), 16..16 + BUFFER_BYTES as usize);
        assert_eq!(record_len(&buffer.formats()[0]), 32);
        assert_eq!(record_len(&buffer.formats()[1]), 16);
    }
}
