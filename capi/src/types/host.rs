//! The host's structs: what `kargs_host_call` is given (`kargs_host`, `kargs_call`), what it
//! hands the launch callback (`kargs_launch`, `kargs_kernel`), a parsed declaration's storage
//! and the shared in-flight counts.

use super::*;

/// A count of launches in flight that `kargs_host`s share: one guest's (`in_flight_guest`)
/// or one device's (`in_flight_device`). The host owns it, sets `max` and zeroes `now` before
/// the first call, and reads `now` only atomically while calls may run: `kargs_host_call`
/// updates it with atomic operations (adds one just before the launch callback, subtracts it
/// when the callback returns) from whatever thread calls.
#[repr(C)]
#[derive(Debug, Default)]
pub struct KargsInFlight {
    /// The most launches at once; 0 refuses every launch.
    pub max: u32,
    /// Launches running now (in the callback).
    pub now: u32,
}

/// Bytes of a `kargs_declaration`: room for any declaration kernel-args parses, on every
/// target.
pub const KARGS_DECLARATION_SIZE: u32 = 10240u32;

/// A parsed kernel declaration (`docs/declarations.md`), in storage the caller owns: written by
/// `kargs_declaration_parse`, read by `kargs_declaration_check` and `kargs_host_call`. Its
/// contents are private; it holds no pointer (copy it with `memcpy`, keep it anywhere, for as
/// long as it is used). A `kargs_declaration` that `kargs_declaration_parse` did not write (all
/// zeros, say) is refused with `KARGS_ERROR_KIND_INVALID_DECLARATION`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KargsDeclaration {
    /// Private: a marker that `kargs_declaration_parse` wrote it, then the parsed declaration.
    pub opaque: [u64; 1280],
}

// The opaque words hold the marker and a `Declaration` (at the second word, aligned for it),
// on every target.
const _: () = assert!(
    size_of::<KargsDeclaration>() == KARGS_DECLARATION_SIZE as usize
        && size_of::<kernel_args::Declaration>() + 8 <= KARGS_DECLARATION_SIZE as usize
        && align_of::<kernel_args::Declaration>() <= align_of::<KargsDeclaration>()
);

/// A kernel the host knows: its id and its declaration, or NULL for a kernel registered without
/// one (launched only when the host trusts its guest).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KargsKernel {
    /// The id the guest names it by.
    pub id: i64,
    /// Its declaration, or NULL.
    pub declaration: *const KargsDeclaration,
}

/// A checked launch, as `kargs_host_call` hands it to the host's callback: the kernel, the
/// launch shape and the arguments, each pointer window checked against the guest's memory and
/// against the kernel's declaration, with its host address.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KargsLaunch {
    /// The guest's kernel id.
    pub kernel_id: i64,
    /// The grid's x, y, z (each at least 1).
    pub grid: [u32; 3],
    /// The block's x, y, z (each at least 1).
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
    /// The arguments, in argv order (`host_ptr` set for every window; `kargs_arg` as
    /// `kargs_parse` writes it). Valid only during the callback.
    pub args: *const KargsArg,
    /// The number of arguments.
    pub args_len: usize,
}

/// The host's launch: called by `kargs_host_call` once every check has passed, with `ctx` the
/// host's `ctx`. Returns 0, or the negative ABI code the guest gets (`KARGS_ABI_*`); any other
/// value is answered `KARGS_ABI_INTERNAL`. Must not unwind (a C++ exception, a `longjmp`) out
/// of the call.
pub type KargsLaunchFn =
    Option<unsafe extern "C" fn(ctx: *mut core::ffi::c_void, launch: *const KargsLaunch) -> i32>;

/// A host's `wasi_cuda_launch` state for `kargs_host_call`: what the guest may do and where
/// its launches go. The host owns it (and the kernels and declarations it points at); nothing
/// in it changes during a call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KargsHost {
    /// The kernels the guest may name. NULL only when `kernels_len` is 0.
    pub kernels: *const KargsKernel,
    /// The number of kernels.
    pub kernels_len: usize,
    /// The launch callback. Never NULL.
    pub launch: KargsLaunchFn,
    /// Passed to `launch` as it is.
    pub ctx: *mut core::ffi::c_void,
    /// The most dynamic shared memory per block a launch may ask for; 0 for
    /// `KARGS_DEFAULT_MAX_SHARED_MEM_BYTES`, an upper bound for any device: pass the device's own
    /// limit here, or check it in the launch callback.
    pub max_shared_mem_bytes: u32,
    /// Nonzero: the guest has the wasi-cuda capability. 0: every call is answered
    /// `KARGS_ABI_NOT_AVAILABLE`.
    pub enabled: u8,
    /// Nonzero: the host trusts its guest as itself, and kernels without a declaration
    /// launch (see docs/declarations.md). 0 (the default to choose): they are refused.
    pub trusted: u8,
    /// The most threads one launch may run (grid × block); 0 for
    /// `KARGS_DEFAULT_MAX_THREADS_PER_LAUNCH` (2^32). More is `KARGS_ABI_QUOTA_EXCEEDED`
    /// (`KARGS_ERROR_KIND_QUOTA`), checked after the launch shape, before the argv is read.
    pub max_threads_per_launch: u64,
    /// NULL, or the guest's count of launches in flight, shared by the guest's hosts: the call
    /// takes a place in it just before the launch callback and gives it back when the callback
    /// returns; when all `max` are taken the call answers `KARGS_ABI_QUOTA_EXCEEDED` without
    /// calling back.
    pub in_flight_guest: *mut KargsInFlight,
    /// NULL, or the device's count of launches in flight, shared by every host on the device;
    /// as `in_flight_guest`.
    pub in_flight_device: *mut KargsInFlight,
}

/// One `wasi_cuda_launch` call, as the guest made it: the import's arguments.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct KargsCall {
    /// The kernel's id.
    pub kernel_id: i64,
    /// Grid x, y, z.
    pub grid: [i32; 3],
    /// Block x, y, z.
    pub block: [i32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: i32,
    /// The argv's offset in guest memory.
    pub args_ptr: i32,
    /// The argv's length in bytes.
    pub args_len: i32,
}
