//! `capi`: the C API (`capi/`, header `include/kargs.h`) through its exported
//! `extern "C"` functions, called with raw pointers as a C host calls them.
//!
//! Input layout (the committed seeds in `corpus/capi`: each conformance vector's argv with
//! memory modes 2 and 3, capacities 128, 0, 1, 3 and `SIZE_MAX`, message buffers of 255, 0, 1
//! and 16 bytes, and region and shape inputs, named by content hash like `seeds.py`'s):
//!
//! | bytes | meaning |
//! |-------|---------|
//! | 0     | flags: bits 0-1 the memory (0: NULL and length 0; 1: a real pointer and length 0; 2: a real memory of the length below, at most 64 KiB; 3: the length below, up to 4 GiB, claimed for a 64 KiB allocation, which the library never dereferences); bit 2: `err` NULL; bit 3: `out` NULL when `out_cap` is 0, and `argv` NULL when it is empty; bit 4: the region and shape checks instead of the parser |
//! | 1-8   | memory length, little-endian `u64` |
//! | 9     | `out_cap`: the byte, except 255, which is `SIZE_MAX` (above 128: the array has 128 entries, all the library may touch) |
//! | 10    | the message buffer's capacity |
//! | 11-   | argv (or, with flag bit 4, the checks' `i32`s and lengths) |
//!
//! What must hold, against kernel-args-core's `RecordReader` and `parse_argv_into` with the
//! record cap `min(out_cap, 128)` and a length-only memory of the same length:
//!
//! - the same code, the same count and, entry by entry, the same tag, value bits (i32
//!   sign-extended), record offset and window, with `host_ptr` the memory plus the window's
//!   offset (NULL for a NULL memory); or the same error code, kind, record, byte and details,
//!   `*out_len` 0 and every entry the call wrote reset to zeros;
//! - nothing written past `min(out_cap, 128)` entries (guard entries after the array), no entry
//!   past the arguments on success;
//! - `kargs_error_message` gives core's `Display` of the error, cut to the buffer's capacity
//!   with a NUL, returns its whole length, and writes nothing past the NUL (guard bytes);
//! - with flag bit 4: `kargs_check_args_region` and `kargs_check_launch_shape` give kernel-args'
//!   outcome and message.
#![no_main]
#![allow(unsafe_code)]

use std::ptr::{null, null_mut};

use kargs::{
    KargsArg, KargsError, kargs_check_args_region, kargs_check_launch_shape, kargs_error_kind_name,
    kargs_error_message, kargs_parse,
};
use kernel_args::{LaunchLimits, check_args_region, check_launch_shape};
use kernel_args_core::{
    ArgSink, ErrorKind, GuestMemory, LoweredArg, LoweredArgSnapshot, MAX_KERNEL_ARGS, RecordReader, SinkFull,
    parse_argv_into,
};
use libfuzzer_sys::fuzz_target;

const HEADER: usize = 11;
const GUARD: usize = 4;
const REAL_MEMORY: usize = 1 << 16;
const SENTINEL_BYTE: u8 = 0xa5;

fn sentinel() -> KargsArg {
    KargsArg {
        bits: 0xa5a5_a5a5_a5a5_a5a5,
        host_ptr: std::ptr::without_provenance_mut(0xa5a5_a5a5),
        byte_offset: 0xa5a5_a5a5,
        guest_offset: 0xa5a5_a5a5,
        len: 0xa5a5_a5a5,
        tag: SENTINEL_BYTE,
    }
}

/// core's parser with a record cap of `cap`: a `heapless::Vec` sink that says it holds `cap`.
struct Capped {
    args: heapless::Vec<LoweredArgSnapshot, MAX_KERNEL_ARGS>,
    cap: usize,
}

impl<'m> ArgSink<'m> for Capped {
    fn capacity(&self) -> usize {
        self.cap
    }
    fn clear(&mut self) {
        self.args.clear();
    }
    fn push(&mut self, _index: usize, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
        if self.args.len() >= self.cap {
            return Err(SinkFull);
        }
        self.args.push(arg.snapshot()).map_err(|_| SinkFull)
    }
}

fn bits(arg: &LoweredArgSnapshot) -> u64 {
    match *arg {
        LoweredArgSnapshot::I32(v) => i64::from(v) as u64,
        LoweredArgSnapshot::I64(v) => v as u64,
        LoweredArgSnapshot::F32(v) => u64::from(v.0),
        LoweredArgSnapshot::F64(v) => v.0,
        LoweredArgSnapshot::U32(v) => u64::from(v),
        LoweredArgSnapshot::U64(v) => v,
        LoweredArgSnapshot::Ptr(_) => 0,
    }
}

fn detail(kind: ErrorKind) -> [u64; 3] {
    match kind {
        ErrorKind::BufferTooLong { len, max } => [len as u64, max as u64, 0],
        ErrorKind::TooManyRecords { max } => [max as u64, 0, 0],
        ErrorKind::UnknownTag { tag } => [u64::from(tag), 0, 0],
        ErrorKind::TruncatedRecord { tag, needed, present } => {
            [u64::from(tag.byte()), needed as u64, present as u64]
        }
        ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => {
            [u64::from(guest_offset), u64::from(len), memory_len]
        }
    }
}

/// `kargs_error_message` into a buffer of `cap` bytes plus guards: the message must be
/// `expected`, cut with snprintf's contract.
fn check_message(err: &KargsError, cap: usize, expected: &str) {
    let mut buf = vec![SENTINEL_BYTE; cap + GUARD];
    // SAFETY: `err` is a valid kargs_error; `buf` holds `cap` (and more) writable bytes.
    let n = unsafe { kargs_error_message(err, buf.as_mut_ptr().cast(), cap) };
    assert_eq!(n, expected.len(), "message length");
    if cap > 0 {
        let kept = (cap - 1).min(expected.len());
        assert_eq!(&buf[..kept], &expected.as_bytes()[..kept], "message text");
        assert_eq!(buf[kept], 0, "the NUL");
        assert!(buf[kept + 1..].iter().all(|b| *b == SENTINEL_BYTE), "written past the NUL");
    } else {
        assert!(buf.iter().all(|b| *b == SENTINEL_BYTE), "written with capacity 0");
    }
    // SAFETY: a NULL buffer is allowed (nothing is written).
    assert_eq!(unsafe { kargs_error_message(err, null_mut(), cap) }, expected.len());
}

fn kind_name(kind: u32) -> &'static str {
    // SAFETY: the library returns static NUL-terminated strings.
    unsafe { std::ffi::CStr::from_ptr(kargs_error_kind_name(kind)) }.to_str().unwrap()
}

fn parse(flags: u8, memory_len: u64, out_cap_byte: u8, msg_cap: usize, argv: &[u8], backing: &mut [u8]) {
    let (base, memory_len): (*mut u8, u64) = match flags & 3 {
        0 => (null_mut(), 0),
        1 => (backing.as_mut_ptr(), 0),
        2 => (backing.as_mut_ptr(), memory_len % (REAL_MEMORY as u64 + 1)),
        _ => (backing.as_mut_ptr(), memory_len % ((1 << 32) + 1)),
    };
    let err_null = flags & 4 != 0;
    let out_cap = if out_cap_byte == 255 { usize::MAX } else { usize::from(out_cap_byte) };
    let cap = out_cap.min(MAX_KERNEL_ARGS);
    let out_null = cap == 0 && flags & 8 != 0;

    // The oracle: core, with the same record cap, over a length-only memory.
    let memory = GuestMemory::length_only(memory_len);
    let mut expected = Capped { args: heapless::Vec::new(), cap };
    let expected_result = parse_argv_into(argv, &memory, &mut expected);
    let reader: Vec<_> = match RecordReader::new(argv, &memory) {
        Ok(reader) => reader.with_max_records(cap).collect(),
        Err(e) => vec![Err(e)],
    };

    let mut out = vec![sentinel(); cap + GUARD];
    let mut n = 0xa5a5usize;
    let mut err = KargsError { kind: 0xa5a5, ..KargsError::default() };
    // SAFETY: `argv` is a valid slice; `base` is NULL with length 0, or a 64 KiB allocation
    // the library only offsets from (never dereferences, by its contract); `out` holds
    // `min(out_cap, 128)` entries (plus guards) or is NULL with capacity 0; `n` and `err` are
    // valid for writes.
    let rc = unsafe {
        kargs_parse(
            if argv.is_empty() && flags & 8 != 0 { null() } else { argv.as_ptr() },
            argv.len(),
            base,
            usize::try_from(memory_len).unwrap(),
            if out_null { null_mut() } else { out.as_mut_ptr() },
            out_cap,
            &raw mut n,
            if err_null { null_mut() } else { &raw mut err },
        )
    };
    assert!(out[cap..].iter().all(|e| *e == sentinel()), "written past min(out_cap, 128) entries");
    match expected_result {
        Ok(()) => {
            let args = &expected.args;
            assert_eq!((rc, n), (0, args.len()), "accepted by core");
            assert_eq!(reader.len(), args.len(), "RecordReader and parse_argv_into differ");
            for (k, (arg, record)) in args.iter().zip(&reader).enumerate() {
                let record = record.as_ref().unwrap();
                let c = &out[k];
                assert_eq!(c.tag, arg.tag().byte(), "entry {k}: tag");
                assert_eq!(c.bits, bits(arg), "entry {k}: bits");
                assert_eq!(c.byte_offset as usize, record.offset, "entry {k}: byte offset");
                let (off, len, host) = match arg {
                    LoweredArgSnapshot::Ptr(w) => (
                        w.guest_offset,
                        w.len,
                        if base.is_null() { null_mut() } else { base.wrapping_add(w.guest_offset as usize) },
                    ),
                    _ => (0, 0, null_mut()),
                };
                assert_eq!((c.guest_offset, c.len, c.host_ptr), (off, len, host), "entry {k}: window");
            }
            assert!(out[args.len()..cap].iter().all(|e| *e == sentinel()), "entries past the arguments");
            if !err_null {
                assert_eq!(err, KargsError::default(), "err after a success");
                check_message(&err, msg_cap, "no error");
            }
        }
        Err(e) => {
            assert_eq!((rc, n), (e.code().code(), 0), "refused by core: {e}");
            let last = reader.last().unwrap();
            assert_eq!(last.as_ref().err(), Some(&e), "RecordReader and parse_argv_into differ");
            // Entries the call wrote (the records before the refused one) are zeros.
            let written = if matches!(e.kind(), ErrorKind::BufferTooLong { .. }) { 0 } else { e.index() };
            assert!(out[..written].iter().all(|a| *a == KargsArg::default()), "entries not reset");
            assert!(out[written..cap].iter().all(|a| *a == sentinel()), "entries past the refused record");
            if !err_null {
                assert_eq!(err.abi_code, rc);
                assert_eq!(kind_name(err.kind), e.kind().name());
                assert_eq!((err.record_index as usize, err.byte_offset as usize), (e.index(), e.offset()));
                assert_eq!(err.detail, detail(e.kind()));
                check_message(&err, msg_cap, &e.to_string());
            }
        }
    }
}

fn checks(bytes: &[u8], msg_cap: usize) {
    let mut raw = [0u8; 48];
    let take = bytes.len().min(raw.len());
    raw[..take].copy_from_slice(&bytes[..take]);
    let i32_at = |k: usize| i32::from_le_bytes(raw[k..k + 4].try_into().unwrap());
    let (args_ptr, args_len) = (i32_at(0), i32_at(4));
    let memory_len = u64::from_le_bytes(raw[8..16].try_into().unwrap());
    let grid = [i32_at(16), i32_at(20), i32_at(24)];
    let block = [i32_at(28), i32_at(32), i32_at(36)];
    let (shared_mem, max_shared) = (i32_at(40), u32::from_le_bytes(raw[44..48].try_into().unwrap()));

    let (mut start, mut len, mut err) = (7u32, 7u32, KargsError { kind: 0xa5, ..KargsError::default() });
    // SAFETY: all three are valid for writes.
    let rc = unsafe {
        kargs_check_args_region(args_ptr, args_len, memory_len, &raw mut start, &raw mut len, &raw mut err)
    };
    match check_args_region(args_ptr, args_len, memory_len) {
        Ok(r) => {
            assert_eq!((rc, start as usize, len as usize), (0, r.start(), r.len()));
            check_message(&err, msg_cap, "no error");
        }
        Err(e) => {
            assert_eq!((rc, start, len), (-2, 0, 0));
            assert_eq!(err.detail, [i64::from(args_ptr) as u64, i64::from(args_len) as u64, memory_len]);
            check_message(&err, msg_cap, &e.to_string());
        }
    }

    let limits = if max_shared == 0 {
        LaunchLimits::DEFAULT
    } else {
        LaunchLimits { max_shared_mem_bytes: max_shared, ..LaunchLimits::DEFAULT }
    };
    // SAFETY: `grid` and `block` are 3 `i32`s each; `err` is valid for writes.
    let rc = unsafe {
        kargs_check_launch_shape(grid.as_ptr(), block.as_ptr(), shared_mem, max_shared, &raw mut err)
    };
    match check_launch_shape(grid, block, shared_mem, &limits) {
        Ok(_) => {
            assert_eq!(rc, 0);
            check_message(&err, msg_cap, "no error");
        }
        Err(e) => {
            assert_eq!(rc, -8);
            assert_eq!(err.detail[1] as i64, e.value);
            check_message(&err, msg_cap, &e.to_string());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((header, rest)) = data.split_first_chunk::<HEADER>() else { return };
    let flags = header[0];
    let memory_len = u64::from_le_bytes(header[1..9].try_into().unwrap());
    let msg_cap = usize::from(header[10]);
    if flags & 16 != 0 {
        checks(rest, msg_cap);
        return;
    }
    let mut backing = vec![0u8; REAL_MEMORY];
    parse(flags, memory_len, header[9], msg_cap, rest, &mut backing);
});
