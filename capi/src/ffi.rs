//! The C boundary: the exported functions. The only module of the crate with `unsafe`: each
//! function turns the caller's pointers into Rust values under the contract its `# Safety`
//! section states (each block with its `// SAFETY:`), then calls safe code.
#![allow(unsafe_code)]

use core::ffi::{c_char, c_void};
use core::mem::{MaybeUninit, offset_of};
use core::sync::atomic::AtomicU32;

use core::fmt::Write as _;

use kernel_args::{
    AbiError, Declaration, GuestTrust, HostError, InFlightSlot, LaunchArgs, LaunchCall, LaunchHost,
    LaunchLimits, LaunchOutcome, LaunchRequest, LaunchShape, Launcher, Mismatch, PointerMode, Quota,
    Registered, SignatureCheck, check_args_region, check_launch_shape,
};
use kernel_args_core::{
    Arg, ArgvError, ErrorKind, GuestMemory, LoweredArgSnapshot, MAX_GUEST_MEMORY_BYTES, MAX_KERNEL_ARGS,
    MAX_KERNEL_ARGS_BYTES, parse_argv_into,
};

use crate::message::{Counter, Truncating, write_message};
use crate::sink::ArgArray;
use crate::types::{
    KargsArg, KargsCall, KargsDeclaration, KargsError, KargsErrorKind, KargsFunction, KargsHost,
    KargsInFlight, KargsKernel, KargsLaunch,
};

/// Writes `value` to `ptr` unless it is NULL.
///
/// # Safety
///
/// `ptr` is NULL or valid for a write of a `T` and aligned.
unsafe fn put<T>(ptr: *mut T, value: T) {
    if !ptr.is_null() {
        // SAFETY: not NULL, and valid and aligned by this function's contract.
        unsafe { ptr.write(value) }
    }
}

/// Parses an argv (the wasi-cuda kernel-argument buffer a guest passed as `args_ptr`,
/// `args_len`) against the guest's linear memory, into the caller's array of `kargs_arg`: one
/// entry per record, in argv order, each pointer window checked to lie inside
/// `[0, memory_len)`.
///
/// Returns 0, or the negative ABI code of the first rule the argv breaks (the code a host
/// answers `wasi_cuda_launch` with):
///
/// - `KARGS_ABI_KERNEL_ARGS_UNSUPPORTED` (-10): argv is longer than
///   `KARGS_MAX_KERNEL_ARGS_BYTES` (decided before any byte is read), or has more records than
///   `min(out_cap, KARGS_MAX_KERNEL_ARGS)`;
/// - `KARGS_ABI_INVALID_ARGS` (-9): an unknown tag, or a record cut short;
/// - `KARGS_ABI_INVALID_POINTER` (-2): a pointer window outside guest memory;
/// - `KARGS_ABI_INTERNAL` (-7): a NULL pointer where this function needs one (a bug of the
///   embedding host, not the guest's doing): `KARGS_ERROR_KIND_NULL_ARGUMENT`; or a
///   `memory_len` over 4 GiB, larger than any wasm32 memory (checked before the argv):
///   `KARGS_ERROR_KIND_MEMORY_TOO_LARGE`.
///
/// The rules, their precedence and the error of every case are kernel-args-core's
/// (`parse_argv_into`), and so are the outcomes: the same arguments, or the same error kind,
/// record index and byte offset, and the same message (`kargs_error_message`), checked
/// against every conformance vector (tests/vectors/argv.json) and by a fuzz target.
///
/// - `argv`, `argv_len`: the argv bytes. NULL is allowed when `argv_len` is 0. When
///   `argv_len > KARGS_MAX_KERNEL_ARGS_BYTES` nothing is read (not even the first byte).
///   `argv` usually lies inside `memory` (the guest wrote it there); that is allowed.
/// - `memory`, `memory_len`: the guest's linear memory, only to check windows against and to
///   compute `host_ptr`: it is never read or written. NULL is allowed when `memory_len` is 0;
///   then `host_ptr` is NULL for every window. At most 4 GiB (`KARGS_MAX_GUEST_MEMORY_BYTES`).
/// - `out`, `out_cap`: the caller's array. At most `min(out_cap, KARGS_MAX_KERNEL_ARGS)`
///   entries are written, and nothing past them is touched; the array needs room for only
///   that many. NULL is allowed when `out_cap` is 0 (then only an empty argv is accepted).
/// - `out_len`: receives the number of arguments on success, and 0 on any error. Never NULL.
/// - `err`: NULL, or receives the error on failure, and all zeros on success.
///
/// On error, `*out_len` is 0 and every entry this call had written is reset to zeros (tag
/// 0): nothing of a refused argv survives. The function allocates nothing, keeps no state,
/// never panics or unwinds, and may be called from any number of threads at once.
///
/// # Safety
///
/// - `argv` is NULL (only if `argv_len` is 0) or valid for reads of `min(argv_len, 4096)`
///   bytes, which nothing writes during the call (copy the argv first if other guest threads
///   can write to it);
/// - `memory` is NULL (only if `memory_len` is 0) or points to a guest memory of `memory_len`
///   bytes (it is never dereferenced; the `host_ptr`s are offsets from it);
/// - `out` is NULL (only if `out_cap` is 0) or an aligned array valid for writes of
///   `min(out_cap, KARGS_MAX_KERNEL_ARGS)` entries (which need not be initialised), and does
///   not overlap `argv`;
/// - `out_len` and `err`, when not NULL, are valid for writes and aligned, and overlap
///   neither `argv` nor `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kargs_parse(
    argv: *const u8,
    argv_len: usize,
    memory: *mut u8,
    memory_len: usize,
    out: *mut KargsArg,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut KargsError,
) -> i32 {
    let null = |position, len| Err(KargsError::null_argument(KargsFunction::Parse, position, len));
    let result = if argv.is_null() && argv_len != 0 {
        null(0, argv_len)
    } else if memory.is_null() && memory_len != 0 {
        null(2, memory_len)
    } else if out.is_null() && out_cap != 0 {
        null(4, out_cap)
    } else if out_len.is_null() {
        null(6, 0)
    } else if u64::try_from(memory_len).map_or(true, |len| len > MAX_GUEST_MEMORY_BYTES) {
        let detail = [u64::try_from(memory_len).unwrap_or(u64::MAX), 0, 0];
        Err(KargsError::own(KargsErrorKind::MemoryTooLarge, 0, detail))
    } else if argv_len > MAX_KERNEL_ARGS_BYTES {
        // Rule 1, before any byte is read: the error core gives for such a buffer (a test
        // checks they are equal), made here so that argv is never turned into a slice of a
        // length the caller may not have meant.
        let kind = ErrorKind::BufferTooLong { len: argv_len, max: MAX_KERNEL_ARGS_BYTES };
        Err(KargsError::from_argv(&ArgvError::new(kind, 0, 0)))
    } else {
        let argv: &[u8] = if argv_len == 0 {
            &[]
        } else {
            // SAFETY: `argv` is not NULL (checked above), valid for reads of `argv_len` bytes
            // (at most 4096, checked above) that nothing writes during the call, by the
            // caller's contract; u8 has no alignment requirement.
            unsafe { core::slice::from_raw_parts(argv, argv_len) }
        };
        let cap = out_cap.min(MAX_KERNEL_ARGS);
        let entries: &mut [MaybeUninit<KargsArg>] = if cap == 0 {
            &mut []
        } else {
            // SAFETY: `out` is not NULL (`out_cap > 0`, checked above) and valid for writes of
            // `min(out_cap, 128)` entries, disjoint from `argv`, by the caller's contract.
            // `MaybeUninit`: the caller's entries need not be initialised; they are only
            // written.
            unsafe { core::slice::from_raw_parts_mut(out.cast::<MaybeUninit<KargsArg>>(), cap) }
        };
        // The memory is checked by its length only, and never becomes a Rust reference: argv
        // usually lies inside it, and the parser never reads it. Host pointers are offsets
        // from the caller's own `memory` (ArgArray).
        let guest = GuestMemory::length_only(u64::try_from(memory_len).unwrap_or(u64::MAX));
        let mut sink = ArgArray::new(entries, memory);
        match parse_argv_into(argv, &guest, &mut sink) {
            Ok(()) => Ok(sink.len()),
            Err(e) => Err(KargsError::from_argv(&e)),
        }
    };
    let (len, error) = match result {
        Ok(len) => (len, KargsError::NONE),
        Err(e) => (0, e),
    };
    // SAFETY: `out_len` is NULL or valid for writes and aligned, by the caller's contract.
    unsafe { put(out_len, len) };
    // SAFETY: `err` is NULL or valid for writes and aligned, by the caller's contract.
    unsafe { put(err, error) };
    error.abi_code
}

/// Writes the message of `err` into `buf`, with `snprintf`'s contract: returns the length of
/// the whole message (without its NUL), writes as much of it as fits in `cap - 1` bytes
/// followed by a NUL, and writes nothing when `cap` is 0 or `buf` is NULL. A return value of
/// `cap` or more means the message was cut: call again with a buffer of the returned length
/// plus one. Only the bytes up to and including the NUL are written. A buffer of
/// `KARGS_ERROR_MESSAGE_MAX` (256) bytes holds every message.
///
/// The message is the one the Rust crates' `Display` gives for the same error, for example
/// `unknown tag 0x42 at byte 17 (record 3)` (kernel-args-core's `ArgvError`),
/// `args_len -3 is negative` (kernel-args' `RegionError`) or
/// `block.z is 65, must be at most 64` (`ShapeError`); for a NULL argument,
/// `kargs_parse: out_len is NULL`; for a success, `no error`. It is rebuilt from the struct
/// alone, so a `kargs_error` may be copied and formatted later. A struct this library did not
/// write (an unknown kind, details that do not fit it) gives
/// `invalid kargs_error: kind K, abi_code C`; a NULL `err` gives a message saying so.
///
/// # Safety
///
/// `err` is NULL or points to a readable, aligned `kargs_error`; `buf` is NULL or valid for
/// writes of `cap` bytes (of the bytes this call writes: at most the returned length plus
/// one).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kargs_error_message(err: *const KargsError, buf: *mut c_char, cap: usize) -> usize {
    // SAFETY: `err` is NULL or points to a readable, aligned `kargs_error`, by the caller's
    // contract; every bit pattern is a valid `KargsError` (integers only).
    let err = unsafe { err.as_ref() };
    let mut counter = Counter::default();
    // Neither writer ever fails.
    let _ = write_message(&mut counter, err);
    let total = counter.0;
    if buf.is_null() || cap == 0 {
        return total;
    }
    let writable = cap.min(total.saturating_add(1));
    // SAFETY: `buf` is not NULL and valid for writes of `cap` bytes, of which this is a
    // prefix, by the caller's contract. `MaybeUninit`: the buffer need not be initialised.
    let buf = unsafe { core::slice::from_raw_parts_mut(buf.cast::<MaybeUninit<u8>>(), writable) };
    let mut writer = Truncating::new(buf);
    let _ = write_message(&mut writer, err);
    writer.finish();
    total
}

/// Checks a guest's argument region (`args_ptr`, `args_len`, as `wasi_cuda_launch` received
/// them) against a linear memory of `memory_len` bytes, before any argv byte is read:
/// kernel-args' `check_args_region`.
///
/// In order: a negative `args_ptr`, a negative `args_len`, an end that overflows `int32_t`, an
/// end past `memory_len` are each refused with `KARGS_ABI_INVALID_POINTER` (-2) and a
/// `KARGS_ERROR_KIND_REGION_*` kind. A zero-length region reads nothing but must still lie
/// inside the memory (`args_ptr <= memory_len`); `(0, 0)` is always accepted.
///
/// Returns 0 and writes the region's start and length to `*start` and `*len` (when not
/// NULL): then `memory + start` is the argv to give `kargs_parse`, `len` its length. On error
/// writes 0 to both. `err`: NULL, or receives the error, all zeros on success.
///
/// # Safety
///
/// `start`, `len` and `err` are each NULL or valid for writes and aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kargs_check_args_region(
    args_ptr: i32,
    args_len: i32,
    memory_len: u64,
    start: *mut u32,
    len: *mut u32,
    err: *mut KargsError,
) -> i32 {
    let (region, error) = match check_args_region(args_ptr, args_len, memory_len) {
        // Both are at most i32::MAX: they fit.
        Ok(r) => (
            (u32::try_from(r.start()).unwrap_or(u32::MAX), u32::try_from(r.len()).unwrap_or(u32::MAX)),
            KargsError::NONE,
        ),
        Err(e) => ((0, 0), KargsError::from_region(&e, args_ptr, args_len, memory_len)),
    };
    // SAFETY: NULL or valid for writes and aligned, by the caller's contract.
    unsafe { put(start, region.0) };
    // SAFETY: as above.
    unsafe { put(len, region.1) };
    // SAFETY: as above.
    unsafe { put(err, error) };
    error.abi_code
}

/// Checks a launch shape as the guest passed it to `wasi_cuda_launch`: kernel-args'
/// `check_launch_shape`. `grid` and `block` are arrays of 3 (x, y, z); `shared_mem` is the
/// dynamic shared memory per block in bytes.
///
/// Checked in this order, the first failure deciding: grid x, y, z, then block x, y, z (each
/// at least 1 and at most its maximum: grid 2147483647, 65535, 65535; block 1024, 1024, 64),
/// then threads per block (`block[0] * block[1] * block[2]`, at most 1024), then shared
/// memory (at least 0, at most `max_shared_mem_bytes`, or
/// `KARGS_DEFAULT_MAX_SHARED_MEM_BYTES` when it is 0: an upper bound for any device, not this
/// device's limit, which the launcher still checks; see that constant). A failure is
/// `KARGS_ABI_INVALID_DIMENSIONS` (-8) with `KARGS_ERROR_KIND_DIMENSION_TOO_SMALL` or
/// `_TOO_LARGE` and the quantity (`kargs_dimension`) in `detail[0]`.
///
/// Returns 0 or -8; -7 (`KARGS_ERROR_KIND_NULL_ARGUMENT`) when `grid` or `block` is NULL.
/// `err`: NULL, or receives the error, all zeros on success.
///
/// # Safety
///
/// `grid` and `block` each point to 3 readable, aligned `int32_t` (or are NULL, which is
/// refused); `err` is NULL or valid for writes and aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kargs_check_launch_shape(
    grid: *const i32,
    block: *const i32,
    shared_mem: i32,
    max_shared_mem_bytes: u32,
    err: *mut KargsError,
) -> i32 {
    let limits = if max_shared_mem_bytes == 0 {
        LaunchLimits::DEFAULT
    } else {
        LaunchLimits { max_shared_mem_bytes, ..LaunchLimits::DEFAULT }
    };
    let error = if grid.is_null() {
        KargsError::null_argument(KargsFunction::CheckLaunchShape, 0, 0)
    } else if block.is_null() {
        KargsError::null_argument(KargsFunction::CheckLaunchShape, 1, 0)
    } else {
        // SAFETY: not NULL, and 3 readable, aligned `int32_t` by the caller's contract
        // (`[i32; 3]` has `int32_t`'s alignment).
        let grid = unsafe { grid.cast::<[i32; 3]>().read() };
        // SAFETY: as above.
        let block = unsafe { block.cast::<[i32; 3]>().read() };
        match check_launch_shape(grid, block, shared_mem, &limits) {
            Ok(_) => KargsError::NONE,
            Err(e) => KargsError::from_shape(&e),
        }
    };
    // SAFETY: NULL or valid for writes and aligned, by the caller's contract.
    unsafe { put(err, error) };
    error.abi_code
}

/// The ABI name of a wasi-cuda code, as kernel-args' `AbiError::name()` spells it
/// (`"InvalidArgs"` for -9), `"Ok"` for 0 and `"Unknown"` for anything else: the same as
/// kargs_guest.h's `kargs_error_name`. A static, NUL-terminated string; never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn kargs_abi_error_name(code: i32) -> *const c_char {
    let name = match AbiError::try_from(code) {
        Ok(AbiError::NotAvailable) => c"NotAvailable",
        Ok(AbiError::InvalidPointer) => c"InvalidPointer",
        Ok(AbiError::InvalidKernel) => c"InvalidKernel",
        Ok(AbiError::MalformedPtx) => c"MalformedPtx",
        Ok(AbiError::LaunchFailed) => c"LaunchFailed",
        Ok(AbiError::QuotaExceeded) => c"QuotaExceeded",
        Ok(AbiError::Internal) => c"Internal",
        Ok(AbiError::InvalidDimensions) => c"InvalidDimensions",
        Ok(AbiError::InvalidArgs) => c"InvalidArgs",
        Ok(AbiError::KernelArgsUnsupported) => c"KernelArgsUnsupported",
        Err(_) if code == 0 => c"Ok",
        Err(_) => c"Unknown",
    };
    name.as_ptr()
}

/// The stable snake_case name of a `kargs_error_kind` (`"unknown_tag"`, ...; the argv kinds'
/// names are the conformance vectors' `kind`), or `"unknown"` for a value that is not a kind.
/// A static, NUL-terminated string; never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn kargs_error_kind_name(kind: u32) -> *const c_char {
    KargsErrorKind::from_u32(kind).map_or(c"unknown", KargsErrorKind::name).as_ptr()
}

/// The first word of a `kargs_declaration` that `kargs_declaration_parse` wrote.
const DECLARATION_MARK: u64 = u64::from_le_bytes(*b"kargsdc1");

/// Bytes before the `Declaration` in a `kargs_declaration`: the mark's word (so the
/// `Declaration` is aligned as the struct's words are, which is enough: types/host.rs asserts it).
const DECLARATION_AT: usize = size_of::<u64>();

/// The declaration `decl` holds, or `None` when `kargs_declaration_parse` did not write it (its
/// mark is not there).
///
/// # Safety
///
/// `decl` is aligned, readable for `KARGS_DECLARATION_SIZE` bytes, and unchanged for `'a`;
/// when its first word is the mark, `kargs_declaration_parse` wrote it (or it is a byte copy of
/// one it wrote).
unsafe fn declaration_of<'a>(decl: *const KargsDeclaration) -> Option<&'a Declaration> {
    // SAFETY: aligned and readable by the contract; every bit pattern is a valid u64.
    let mark = unsafe { decl.cast::<u64>().read() };
    if mark != DECLARATION_MARK {
        return None;
    }
    // SAFETY: the mark says `kargs_declaration_parse` wrote a `Declaration` at
    // `DECLARATION_AT` (aligned and inside the struct: a const assertion in types/host.rs), which
    // holds no pointer, so a byte copy is the same value; it is unchanged for 'a.
    Some(unsafe { &*decl.cast::<u8>().wrapping_add(DECLARATION_AT).cast::<Declaration>() })
}

/// Writes `message` into `msg` (snprintf's contract: NUL-terminated, cut to `cap - 1` bytes;
/// nothing when `msg` is NULL or `cap` is 0).
///
/// # Safety
///
/// `msg` is NULL or valid for writes of `cap` bytes.
unsafe fn put_message(msg: *mut c_char, cap: usize, message: &dyn core::fmt::Display) {
    if msg.is_null() || cap == 0 {
        return;
    }
    // SAFETY: not NULL and valid for writes of `cap` bytes by the contract; `MaybeUninit`: the
    // buffer need not be initialised.
    let buf = unsafe { core::slice::from_raw_parts_mut(msg.cast::<MaybeUninit<u8>>(), cap) };
    let mut writer = Truncating::new(buf);
    let _ = write!(writer, "{message}");
    writer.finish();
}

/// Parses a kernel declaration (`docs/declarations.md`), such as
/// `"vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)"`, into `*out`, the
/// caller's storage: once, when the host registers the kernel. No allocation; `text` is not
/// kept (the declaration holds a copy).
///
/// Returns 0, or `KARGS_ABI_INTERNAL` (-7: the embedder's mistake, not a guest's) with
/// `KARGS_ERROR_KIND_DECLARATION_SYNTAX` (the 1-based byte column in `detail[0]`), and the
/// whole message in `msg` (`column 13: ` and what was expected there). On error `*out` is left
/// invalid (a later use is refused), never half-written. `KARGS_ERROR_KIND_NULL_ARGUMENT` for
/// a NULL `out`, or a NULL `text` with `text_len` not 0.
///
/// - `text`, `text_len`: the declaration's bytes (UTF-8; no NUL needed; at most 2048 bytes).
/// - `err`: NULL, or receives the error (all zeros on success).
/// - `msg`, `msg_cap`: NULL and 0, or a buffer for the message (snprintf's contract; empty on
///   success). `KARGS_ERROR_MESSAGE_MAX` bytes hold any.
///
/// # Safety
///
/// `text` is NULL (only with `text_len` 0) or valid for reads of `text_len` bytes; `out` is
/// NULL or an aligned `kargs_declaration` valid for writes; `err` NULL or valid for writes and
/// aligned; `msg` NULL or valid for writes of `msg_cap` bytes; none of them overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kargs_declaration_parse(
    text: *const c_char,
    text_len: usize,
    out: *mut KargsDeclaration,
    err: *mut KargsError,
    msg: *mut c_char,
    msg_cap: usize,
) -> i32 {
    let null = |position, len| KargsError::null_argument(KargsFunction::DeclarationParse, position, len);
    let error = if text.is_null() && text_len != 0 {
        null(0, text_len)
    } else if out.is_null() {
        null(2, 0)
    } else {
        // Invalid until a whole declaration is written.
        // SAFETY: `out` is aligned and valid for writes (not NULL, checked above).
        unsafe { out.cast::<u64>().write(0) };
        let bytes: &[u8] = if text_len == 0 {
            &[]
        } else {
            // SAFETY: not NULL, valid for reads of `text_len` bytes by the contract.
            unsafe { core::slice::from_raw_parts(text.cast::<u8>(), text_len) }
        };
        match Declaration::parse_bytes(bytes) {
            Ok(declaration) => {
                // SAFETY: `out` is valid for writes of the whole struct; the `Declaration` goes
                // at `DECLARATION_AT`, aligned and inside it (const assertion in types/host.rs).
                unsafe {
                    out.cast::<u8>().wrapping_add(DECLARATION_AT).cast::<Declaration>().write(declaration)
                };
                // SAFETY: as above; the mark last, once the declaration is whole.
                unsafe { out.cast::<u64>().write(DECLARATION_MARK) };
                // SAFETY: NULL or valid for writes of `msg_cap` bytes.
                unsafe { put_message(msg, msg_cap, &"") };
                KargsError::NONE
            }
            Err(e) => {
                // SAFETY: NULL or valid for writes of `msg_cap` bytes.
                unsafe { put_message(msg, msg_cap, &e) };
                KargsError::from_declaration(&e)
            }
        }
    };
    if error.kind == KargsErrorKind::NullArgument as u32 {
        // SAFETY: NULL or valid for writes of `msg_cap` bytes.
        unsafe { put_message(msg, msg_cap, &Message(&error)) };
    }
    // SAFETY: NULL or valid for writes and aligned.
    unsafe { put(err, error) };
    error.abi_code
}

/// `kargs_error_message`'s text of an error, as a `Display`.
struct Message<'e>(&'e KargsError);

impl core::fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write_message(f, Some(self.0))
    }
}

/// Checks a launch's arguments (as `kargs_parse` wrote them) and shape against a kernel's
/// declaration: what `kargs_host_call` does before its callback, for a host that makes its own
/// pipeline. The rules and their order are docs/declarations.md's: the count, each type, then
/// each window's alignment and length.
///
/// Returns 0, or `KARGS_ABI_INVALID_ARGS` (-9) with a `KARGS_ERROR_KIND_DECLARATION_*` kind
/// naming the record (`record_index`, `byte_offset`) and the parameter (`detail[0]`), and the
/// whole message in `msg` (`record 2 at byte 18: out: 16-byte window, the kernel touches n * 4
/// = 64 bytes`). `KARGS_ABI_INTERNAL` (-7) for a NULL where a pointer is needed, a declaration
/// `kargs_declaration_parse` did not write, or an entry with no valid tag.
///
/// - `args`, `args_len`: the arguments (NULL only with `args_len` 0).
/// - `grid`, `block`: 3 dimensions each (x, y, z), for extents such as `grid.x * block.x`.
///
/// # Safety
///
/// `declaration` is NULL or as `kargs_declaration_parse` left it (aligned, readable); `args`
/// NULL (only with `args_len` 0) or valid for reads of `args_len` aligned entries; `grid` and
/// `block` NULL or each 3 readable, aligned `uint32_t`; `err` NULL or valid for writes and
/// aligned; `msg` NULL or valid for writes of `msg_cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kargs_declaration_check(
    declaration: *const KargsDeclaration,
    args: *const KargsArg,
    args_len: usize,
    grid: *const u32,
    block: *const u32,
    err: *mut KargsError,
    msg: *mut c_char,
    msg_cap: usize,
) -> i32 {
    let null = |position, len| {
        Err(Refused::Own(KargsError::null_argument(KargsFunction::DeclarationCheck, position, len)))
    };
    let result = if declaration.is_null() {
        null(0, 0)
    } else if args.is_null() && args_len != 0 {
        null(1, args_len)
    } else if grid.is_null() {
        null(3, 0)
    } else if block.is_null() {
        null(4, 0)
    } else {
        // SAFETY: not NULL; as `kargs_declaration_parse` left it, by the contract.
        match unsafe { declaration_of(declaration) } {
            None => Err(Refused::Own(KargsError::own(KargsErrorKind::InvalidDeclaration, 0, [0; 3]))),
            Some(declaration) => {
                let entries: &[KargsArg] = if args_len == 0 {
                    &[]
                } else {
                    // SAFETY: not NULL, `args_len` readable aligned entries by the contract.
                    unsafe { core::slice::from_raw_parts(args, args_len) }
                };
                // SAFETY: not NULL, 3 readable aligned `uint32_t`, by the contract.
                let grid = unsafe { grid.cast::<[u32; 3]>().read() };
                // SAFETY: as above.
                let block = unsafe { block.cast::<[u32; 3]>().read() };
                check_entries(declaration, entries, &LaunchShape { grid, block, shared_mem_bytes: 0 })
            }
        }
    };
    let error = match &result {
        Ok(()) => KargsError::NONE,
        Err(Refused::Own(error)) => *error,
        Err(Refused::Mismatch(m)) => KargsError::from_mismatch(m),
    };
    let own;
    let message: &dyn core::fmt::Display = match &result {
        Ok(()) => &"",
        Err(Refused::Own(error)) => {
            own = Message(error);
            &own
        }
        Err(Refused::Mismatch(m)) => m,
    };
    // SAFETY: NULL or valid for writes of `msg_cap` bytes.
    unsafe { put_message(msg, msg_cap, message) };
    // SAFETY: NULL or valid for writes and aligned.
    unsafe { put(err, error) };
    error.abi_code
}

/// Why `kargs_declaration_check` refuses: this library's own error, or the declaration's.
enum Refused {
    Own(KargsError),
    Mismatch(Mismatch),
}

/// The declaration's check of a `kargs_arg` array.
fn check_entries(
    declaration: &Declaration,
    entries: &[KargsArg],
    shape: &LaunchShape,
) -> Result<(), Refused> {
    let mut snapshots: heapless::Vec<LoweredArgSnapshot, MAX_KERNEL_ARGS> = heapless::Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(arg) = entry.snapshot() else {
            let detail = [u64::try_from(index).unwrap_or(u64::MAX), u64::from(entry.tag), 0];
            return Err(Refused::Own(KargsError::own(KargsErrorKind::InvalidEntry, 0, detail)));
        };
        if snapshots.push(arg).is_err() {
            // More entries than any argv has: too many for any declaration.
            let declared = declaration.len();
            let at = entries.get(declared).map_or(0, |e| e.byte_offset);
            let detail =
                [u64::try_from(declared).unwrap_or(0), u64::try_from(entries.len()).unwrap_or(u64::MAX), 0];
            return Err(Refused::Own(KargsError::own_at(
                KargsErrorKind::DeclarationCount,
                declared,
                at,
                detail,
            )));
        }
    }
    let args = LaunchArgs::from_slice(&snapshots).unwrap_or_default();
    declaration.check(&args, shape).map_err(Refused::Mismatch)
}

/// The host's launch callback as a [`Launcher`]: the kernels of the host's table (their
/// declarations checked to be `kargs_declaration_parse`'s before the call), each checked launch
/// handed to the callback as a `kargs_launch`.
struct CallbackLauncher<'a> {
    kernels: &'a [KargsKernel],
    launch: unsafe extern "C" fn(*mut c_void, *const KargsLaunch) -> i32,
    ctx: *mut c_void,
    /// What the callback returned, once it has been called.
    answered: i64,
    /// The host's counts of launches in flight (the guest's, the device's): the count, its
    /// limit and which quota it is.
    in_flight: [Option<(&'a AtomicU32, u32, Quota)>; 2],
}

impl Launcher for CallbackLauncher<'_> {
    /// The host's table is the host's for the whole call (its contract): one registration, 0.
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        let kernel = self.kernels.iter().find(|k| k.id == kernel_id)?;
        if kernel.declaration.is_null() {
            return Some(Registered::undeclared(0));
        }
        // SAFETY: `kargs_host_call` checked every declaration's mark before the call, and the
        // host's table and declarations stay unchanged during it (its contract).
        unsafe { declaration_of(kernel.declaration) }.map(|d| Registered::declared(d, 0))
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        // A place in each count, held until the callback returns.
        let mut places: [Option<InFlightSlot<'_>>; 2] = [None, None];
        for (place, count) in places.iter_mut().zip(&self.in_flight) {
            if let Some((now, max, quota)) = *count {
                *place = Some(InFlightSlot::take(now, max, quota)?);
            }
        }
        let mut entries = [KargsArg::ZERO; MAX_KERNEL_ARGS];
        let mut offset = 0usize;
        for (entry, arg) in entries.iter_mut().zip(request.args.iter()) {
            let host_ptr = match arg {
                Arg::Ptr(range) => request.window(range)?.host_ptr_mut().unwrap_or(core::ptr::null_mut()),
                _ => core::ptr::null_mut(),
            };
            *entry = KargsArg::checked(arg, offset, host_ptr);
            offset = offset.saturating_add(arg.tag().wire_size());
        }
        let shape = request.shape;
        let launch = KargsLaunch {
            kernel_id: request.kernel_id,
            grid: shape.grid,
            block: shape.block,
            shared_mem_bytes: shape.shared_mem_bytes,
            args: entries.as_ptr(),
            args_len: request.args.len(),
        };
        // SAFETY: the host's callback, called as its contract says: `ctx` as the host gave it,
        // `launch` valid for the call (its `args` live in this frame).
        let code = unsafe { (self.launch)(self.ctx, &launch) };
        self.answered = i64::from(code);
        match code {
            0 => Ok(LaunchOutcome { pointer_mode: PointerMode::Direct, signature: SignatureCheck::Skipped }),
            code => Err(HostError::fixed(
                AbiError::try_from(code).unwrap_or(AbiError::Internal),
                "the host's launch callback refused the launch",
            )),
        }
    }
}

/// A C host's count of launches in flight as the call uses it: its atomic `now`, its `max`,
/// and which quota it is; `None` for NULL.
///
/// # Safety
///
/// `count` is NULL, or valid for reads and writes, aligned, and live for `'a`; while `'a` lasts
/// its `now` is touched only by atomic operations and its `max` not written.
unsafe fn in_flight<'a>(count: *mut KargsInFlight, quota: Quota) -> Option<(&'a AtomicU32, u32, Quota)> {
    if count.is_null() {
        return None;
    }
    let field = |offset: usize| count.wrapping_byte_add(offset).cast::<u32>();
    let (max, now) = (field(offset_of!(KargsInFlight, max)), field(offset_of!(KargsInFlight, now)));
    // SAFETY: `max` is a field of a valid, aligned `kargs_in_flight`, not written while the
    // call runs.
    let max = unsafe { max.read() };
    // SAFETY: `now` is a valid, aligned `uint32_t` for `'a`, which only atomic operations touch
    // meanwhile: what `AtomicU32::from_ptr` requires.
    let now = unsafe { AtomicU32::from_ptr(now) };
    Some((now, max, quota))
}

/// One `wasi_cuda_launch` call, the whole of it: kernel-args' `LaunchHost::call` runs it, with
/// its steps, order and rules (its documentation lists them). The C host's fields are what
/// those steps read: `host->enabled` (the capability), `max_threads_per_launch` (the threads
/// quota), `kernels` (the kernel and its declaration: unknown, or undeclared with an untrusted
/// guest, is `KARGS_ABI_INVALID_KERNEL`), `in_flight_guest` and `in_flight_device` (a full one
/// is `KARGS_ABI_QUOTA_EXCEEDED`); the launch is the host's `launch` callback, reached exactly
/// when every check passes.
///
/// Returns what the guest gets: 0 (the callback returned 0), the callback's code, or the code
/// of the first check that failed. `err` receives the error (all zeros on success; the kinds:
/// the argv's, the region's, the shape's, `QUOTA`, `UNKNOWN_KERNEL`, `UNDECLARED_KERNEL`,
/// `DECLARATION_*`, `CAPABILITY_DISABLED`, `NO_MEMORY`, `LAUNCH_CALLBACK`, and this library's
/// own); `msg` the Rust host's message for it (`InvalidArgs -9: record 2 at byte 18: out:
/// 16-byte window, the kernel touches n * 4 = 64 bytes`), empty on success. No allocation,
/// no global state; about 6 KiB of stack.
///
/// - `memory`, `memory_len`: the guest's linear memory; NULL (with `memory_len` 0) for a guest
///   that exports none (`KARGS_ABI_INVALID_POINTER`, kind `NO_MEMORY`). A memory of 0 bytes is
///   a non-NULL pointer with `memory_len` 0. Over 4 GiB is refused (`KARGS_ABI_INTERNAL`).
/// - `call`: the import's arguments, as the guest passed them.
///
/// # Safety
///
/// `host` is NULL or points to a readable `kargs_host` whose `kernels` (NULL only with
/// `kernels_len` 0) holds `kernels_len` entries, each declaration NULL or as
/// `kargs_declaration_parse` left it, all unchanged during the call; its `in_flight_guest` and
/// `in_flight_device` each NULL or valid for reads and writes and aligned, its `max` unchanged
/// and its `now` touched only by atomic operations (this library's, from any thread) while
/// calls may run; `memory` is NULL or valid
/// for reads and writes of `memory_len` bytes, which nothing but this call and its callback
/// touches during it; `call` NULL or readable; `err` NULL or valid for writes and aligned;
/// `msg` NULL or valid for writes of `msg_cap` bytes; the callback follows `kargs_launch_fn`'s
/// contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kargs_host_call(
    host: *const KargsHost,
    memory: *mut u8,
    memory_len: usize,
    call: *const KargsCall,
    err: *mut KargsError,
    msg: *mut c_char,
    msg_cap: usize,
) -> i32 {
    let null = |position, len| Err(KargsError::null_argument(KargsFunction::HostCall, position, len));
    // SAFETY: NULL or readable (the contract).
    let host_ref = unsafe { host.as_ref() };
    // SAFETY: as above.
    let call_ref = unsafe { call.as_ref() };
    let checked = match (host_ref, call_ref) {
        (None, _) => null(0, 0),
        (_, None) => null(3, 0),
        _ if memory.is_null() && memory_len != 0 => null(1, memory_len),
        (Some(host), _) if host.kernels.is_null() && host.kernels_len != 0 => null(7, host.kernels_len),
        (Some(host), _) if host.launch.is_none() => null(9, 0),
        _ if u64::try_from(memory_len).map_or(true, |len| len > MAX_GUEST_MEMORY_BYTES) => {
            let detail = [u64::try_from(memory_len).unwrap_or(u64::MAX), 0, 0];
            Err(KargsError::own(KargsErrorKind::MemoryTooLarge, 0, detail))
        }
        (Some(host), Some(call)) => {
            let kernels: &[KargsKernel] = if host.kernels_len == 0 {
                &[]
            } else {
                // SAFETY: not NULL, `kernels_len` readable entries, unchanged during the call.
                unsafe { core::slice::from_raw_parts(host.kernels, host.kernels_len) }
            };
            let invalid = |k: &KargsKernel| {
                // SAFETY: each declaration NULL or as `kargs_declaration_parse` left it.
                !k.declaration.is_null() && unsafe { declaration_of(k.declaration) }.is_none()
            };
            match kernels.iter().position(invalid) {
                Some(index) => {
                    let detail = [u64::try_from(index).unwrap_or(u64::MAX), 0, 0];
                    Err(KargsError::own(KargsErrorKind::InvalidDeclaration, 0, detail))
                }
                None => Ok((host, call, kernels)),
            }
        }
    };
    let (host, call, kernels) = match checked {
        Ok(parts) => parts,
        Err(error) => {
            // SAFETY: NULL or valid for writes of `msg_cap` bytes.
            unsafe { put_message(msg, msg_cap, &Message(&error)) };
            // SAFETY: NULL or valid for writes and aligned.
            unsafe { put(err, error) };
            return error.abi_code;
        }
    };
    let guest: Option<&mut [u8]> = if memory.is_null() {
        None
    } else {
        // SAFETY: not NULL, valid for reads and writes of `memory_len` bytes, touched by nothing
        // but this call and its callback during it (the contract).
        Some(unsafe { core::slice::from_raw_parts_mut(memory, memory_len) })
    };
    let Some(launch) = host.launch else { return AbiError::Internal.code() };
    // SAFETY: NULL or valid, aligned and live for the call, its `now` touched only atomically
    // while calls may run (the contract).
    let guest_count = unsafe { in_flight(host.in_flight_guest, Quota::InFlightPerGuest) };
    // SAFETY: as above.
    let device_count = unsafe { in_flight(host.in_flight_device, Quota::InFlightPerDevice) };
    let in_flight = [guest_count, device_count];
    let launcher = CallbackLauncher { kernels, launch, ctx: host.ctx, answered: 0, in_flight };
    let limits = LaunchLimits {
        max_shared_mem_bytes: match host.max_shared_mem_bytes {
            0 => LaunchLimits::DEFAULT.max_shared_mem_bytes,
            max => max,
        },
        max_threads_per_launch: match host.max_threads_per_launch {
            0 => LaunchLimits::DEFAULT.max_threads_per_launch,
            max => max,
        },
        ..LaunchLimits::DEFAULT
    };
    let trust = if host.trusted != 0 { GuestTrust::Trusted } else { GuestTrust::Untrusted };
    let mut launch_host = LaunchHost::new(launcher).with_limits(limits);
    launch_host.set_enabled(host.enabled != 0);
    launch_host.set_trust(trust);
    let rust_call = LaunchCall {
        kernel_id: call.kernel_id,
        grid: call.grid,
        block: call.block,
        shared_mem: call.shared_mem,
        args_ptr: call.args_ptr,
        args_len: call.args_len,
    };
    let code = launch_host.call(guest, &rust_call);
    let memory_len = u64::try_from(memory_len).unwrap_or(u64::MAX);
    let answered = launch_host.launcher().answered;
    let error = match launch_host.last_error() {
        None => KargsError::NONE,
        Some(e) => KargsError::from_host(e, call.args_ptr, call.args_len, memory_len, answered),
    };
    let message: &dyn core::fmt::Display = match launch_host.last_error() {
        None => &"",
        Some(e) => e,
    };
    // SAFETY: NULL or valid for writes of `msg_cap` bytes.
    unsafe { put_message(msg, msg_cap, message) };
    // SAFETY: NULL or valid for writes and aligned.
    unsafe { put(err, error) };
    code
}
