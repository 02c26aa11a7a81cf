//! Messages with `snprintf` semantics: the length of the whole message is always returned, and
//! as much of it as fits is written, NUL-terminated. Safe code: the caller (`ffi`) turns the C
//! buffer into the slice written here.

use core::fmt::{self, Write};
use core::mem::MaybeUninit;

use kernel_args::Detail;

use crate::types::{Decoded, KargsError, KargsErrorKind, write_null_message};

/// Writes `err`'s message to `f`: the Rust crates' `Display` of the error it was made from
/// (core's `ArgvError`, kernel-args' `RegionError`, `ShapeError`, `QuotaError`, a
/// declaration's `Mismatch` and `DeclarationError`), this library's own words for a NULL
/// argument, and a fixed text for no error or a struct this library did not write.
pub(crate) fn write_message(f: &mut dyn Write, err: Option<&KargsError>) -> fmt::Result {
    let Some(err) = err else {
        return f.write_str("kargs_error_message: err is NULL");
    };
    match err.decode() {
        Some(Decoded::None) => f.write_str("no error"),
        Some(Decoded::Argv(e)) => write!(f, "{e}"),
        Some(Decoded::Region(e)) => write!(f, "{e}"),
        Some(Decoded::Shape(e)) => write!(f, "{e}"),
        Some(Decoded::Quota(e)) => write!(f, "{e}"),
        Some(Decoded::Mismatch(e)) => write!(f, "{e}"),
        Some(Decoded::Syntax(e)) => write!(f, "{e}"),
        Some(Decoded::Null { function, position, len }) => write_null_message(f, function, position, len),
        Some(Decoded::Host { kind, detail }) => write_host_message(f, kind, detail),
        None => write!(f, "invalid kargs_error: kind {}, abi_code {}", err.kind, err.abi_code),
    }
}

/// The message of a kind of the host call or of this library's declarations, from its plain
/// data: the Rust crates' `Display` where there is a Rust error (an unknown or undeclared kernel,
/// a withheld capability, no memory), else this library's own words.
fn write_host_message(f: &mut dyn Write, kind: KargsErrorKind, [d0, d1, _]: [u64; 3]) -> fmt::Result {
    match kind {
        KargsErrorKind::UnknownKernel => write!(f, "{}", Detail::UnknownKernel { kernel_id: d0 as i64 }),
        KargsErrorKind::UndeclaredKernel => write!(f, "{}", Detail::Undeclared { kernel_id: d0 as i64 }),
        KargsErrorKind::CapabilityDisabled => write!(f, "{}", Detail::CapabilityDisabled),
        KargsErrorKind::NoMemory => write!(f, "{}", Detail::NoExportedMemory),
        KargsErrorKind::MemoryTooLarge => {
            write!(f, "kargs_host_call: memory_len {d0} is over 4 GiB, larger than any wasm32 memory")
        }
        KargsErrorKind::LaunchCallback => write!(f, "the host's launch callback answered {}", d0 as i64),
        KargsErrorKind::InvalidDeclaration => {
            write!(f, "the kargs_declaration of kernel {d0} was not written by kargs_declaration_parse")
        }
        KargsErrorKind::InvalidEntry => write!(f, "kargs_arg {d0} has tag {d1}, which is no tag"),
        _ => write!(f, "invalid kargs_error: kind {}", kind as u32),
    }
}

/// Counts the bytes written to it: the length of a message before it is written.
#[derive(Default)]
pub(crate) struct Counter(pub(crate) usize);

impl Write for Counter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 = self.0.saturating_add(s.len());
        Ok(())
    }
}

/// Writes into a buffer, keeping the last byte for the NUL: what fits, silently cut (the
/// caller compares the returned length with the capacity). Never fails, so a `Display` always
/// runs to the end.
pub(crate) struct Truncating<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    written: usize,
}

impl<'a> Truncating<'a> {
    /// A writer into `buf` (which may be empty: then nothing is written, not even the NUL).
    pub(crate) fn new(buf: &'a mut [MaybeUninit<u8>]) -> Self {
        Truncating { buf, written: 0 }
    }

    /// Writes the terminating NUL after what was written, and returns how many bytes were
    /// written before it.
    pub(crate) fn finish(self) -> usize {
        if let Some(nul) = self.buf.get_mut(self.written) {
            nul.write(0);
        }
        self.written
    }
}

impl Write for Truncating<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Room for text: everything but the last byte, which is the NUL's.
        let room = self.buf.len().saturating_sub(1).saturating_sub(self.written);
        let take = s.len().min(room);
        let end = self.written.saturating_add(take);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(self.written..end), s.as_bytes().get(..take)) {
            for (d, b) in dst.iter_mut().zip(src) {
                d.write(*b);
            }
            self.written = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes written before the NUL, for a buffer of `cap` bytes (the bytes themselves are
    /// checked through the C entry point, in tests/ffi.rs).
    fn written(cap: usize, text: &str) -> usize {
        let mut buf = std::vec![MaybeUninit::new(0xa5u8); cap];
        let mut w = Truncating::new(&mut buf);
        w.write_str(text).unwrap();
        w.write_str(text).unwrap();
        w.finish()
    }

    #[test]
    fn truncation_keeps_the_nul() {
        assert_eq!(written(0, "abc"), 0);
        assert_eq!(written(1, "abc"), 0);
        assert_eq!(written(3, "abc"), 2);
        assert_eq!(written(5, "abc"), 4);
        assert_eq!(written(7, "abc"), 6);
        assert_eq!(written(99, "abc"), 6);
        let mut c = Counter::default();
        write!(c, "{}-{}", 12, 345).unwrap();
        assert_eq!(c.0, 6);
        let mut c = Counter::default();
        write!(c, "{}-ab", 12).unwrap();
        assert_eq!(c.0, 5);
    }
}
