//! The C boundary: the exported functions. The only module of the crate with `unsafe`: each
//! function turns the caller's pointers into Rust values under the contract its `# Safety`
//! section states (each block with its `// SAFETY:`), then calls safe code.
#![allow(unsafe_code)]

use core::ffi::c_char;
use core::mem::MaybeUninit;

use kernel_args::{AbiError, LaunchLimits, check_args_region, check_launch_shape};
use kernel_args_core::{
    ArgvError, ErrorKind, GuestMemory, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES, parse_argv_into,
};

use crate::message::{Counter, Truncating, write_message};
use crate::sink::ArgArray;
use crate::types::{KargsArg, KargsError, KargsErrorKind, KargsFunction};

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
///   embedding host, not the guest's doing): `KARGS_ERROR_KIND_NULL_ARGUMENT`.
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
///   then `host_ptr` is NULL for every window.
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
/// `KARGS_DEFAULT_MAX_SHARED_MEM_BYTES` when it is 0). A failure is
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
    let limits =
        if max_shared_mem_bytes == 0 { LaunchLimits::DEFAULT } else { LaunchLimits { max_shared_mem_bytes } };
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
