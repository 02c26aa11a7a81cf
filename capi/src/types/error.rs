//! `kargs_error` and the enums of its fields, and the conversions between them and the Rust
//! errors they are made from.

use super::*;

/// What went wrong, in `kargs_error.kind`. The values are stable.
///
/// Kinds 1 to 5 are the argv parser's (kernel-args-core's `ErrorKind`), 16 to 19 the argument
/// region check's (kernel-args' `RegionError`), 32 and 33 the launch-shape check's
/// (`ShapeError`), 48 this library's own. `kargs_error_kind_name` names each.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KargsErrorKind {
    /// No error: the call succeeded (`abi_code` 0, every other field 0).
    None = 0,
    /// `-10` KernelArgsUnsupported: argv is longer than `KARGS_MAX_KERNEL_ARGS_BYTES`; nothing
    /// was read. Record 0, byte 0. `detail[0]`: argv's length, `detail[1]`: the cap (4096).
    BufferTooLong = 1,
    /// `-10` KernelArgsUnsupported: a record starts when the output already holds the record
    /// cap: `min(out_cap, KARGS_MAX_KERNEL_ARGS)`. `detail[0]`: that cap.
    TooManyRecords = 2,
    /// `-9` InvalidArgs: the record's tag byte is not one of the seven tags. `detail[0]`: the
    /// byte.
    UnknownTag = 3,
    /// `-9` InvalidArgs: fewer value bytes are left than the record's tag needs. `detail[0]`:
    /// the tag, `detail[1]`: the value bytes it needs, `detail[2]`: the value bytes present.
    TruncatedRecord = 4,
    /// `-2` InvalidPointer: a pointer window does not lie inside guest memory. `detail[0]`: its
    /// guest offset, `detail[1]`: its length, `detail[2]`: the memory's length.
    WindowOutOfBounds = 5,
    /// `-2` InvalidPointer: `args_ptr` is negative. `detail`, for every region kind:
    /// `args_ptr` and `args_len` (sign-extended: `(int64_t)detail[0]`), then `memory_len`.
    RegionNegativePointer = 16,
    /// `-2` InvalidPointer: `args_len` is negative.
    RegionNegativeLength = 17,
    /// `-2` InvalidPointer: `args_ptr + args_len` does not fit in an `int32_t`.
    RegionEndOverflows = 18,
    /// `-2` InvalidPointer: the region ends past the end of guest memory.
    RegionPastMemory = 19,
    /// `-8` InvalidDimensions: a launch quantity is below its minimum. `detail[0]`: the
    /// quantity (`kargs_dimension`), `detail[1]`: its value (`(int64_t)detail[1]`; for threads
    /// per block the product of the block's dimensions), `detail[2]`: the minimum.
    DimensionTooSmall = 32,
    /// `-8` InvalidDimensions: a launch quantity is above its maximum. `detail` as for
    /// `KARGS_ERROR_KIND_DIMENSION_TOO_SMALL`, `detail[2]`: the maximum.
    DimensionTooLarge = 33,
    /// `-7` Internal: the embedding host passed NULL where a pointer is required (a host bug,
    /// not the guest's doing). `detail[0]`: the function (`kargs_function`), `detail[1]`: the
    /// parameter's 0-based position, `detail[2]`: the length or capacity that makes NULL
    /// invalid there (0 for a parameter that may never be NULL).
    NullArgument = 48,
    /// `-3` InvalidKernel: no kernel of the host's table has the call's id. `detail[0]`: the
    /// id (`(int64_t)detail[0]`).
    UnknownKernel = 64,
    /// `-3` InvalidKernel: the kernel is registered without a declaration and the host does
    /// not trust its guest. `detail[0]`: the id.
    UndeclaredKernel = 65,
    /// `-9` InvalidArgs: the argv has not as many arguments as the declaration parameters.
    /// `record_index`, `byte_offset`: the first record past the shorter list. `detail[0]`: the
    /// parameters, `detail[1]`: the arguments. `text` is empty.
    DeclarationCount = 80,
    /// `-9` InvalidArgs: the record's type is not its parameter's. `detail[0]`: the parameter's
    /// index, `detail[1]`: the tag the parameter takes, `detail[2]`: the record's tag. `text`:
    /// the parameter's name, then its type as declared (`&[f32; n]`).
    DeclarationType = 81,
    /// `-9` InvalidArgs: the window's guest offset is not a multiple of its element's size.
    /// `detail[0]`: the parameter, `detail[1]`: the guest offset, `detail[2]`: the element's
    /// size. `text`: the parameter's name, then the element type's (`f32`).
    DeclarationMisaligned = 82,
    /// `-9` InvalidArgs: the window is shorter than the bytes the kernel may touch through it.
    /// `detail[0]`: the parameter, `detail[1]`: the window's length, `detail[2]`: the bytes.
    /// `text`: the parameter's name, then the bytes as the declaration counts them (`n * 4`).
    DeclarationWindowTooShort = 83,
    /// `-9` InvalidArgs: the bytes the kernel may touch are out of range for this launch (over
    /// 64 bits, below zero, a division by zero). `detail[0]`: the parameter. `text`: its name,
    /// then the bytes as the declaration counts them.
    DeclarationOutOfRange = 84,
    /// `-9` InvalidArgs: the extent counts with a signed parameter that is negative.
    /// `detail[0]`: the pointer parameter, `detail[1]`: the negative one. `text`: the pointer
    /// parameter's name, the bytes as the declaration counts them, the negative one's name.
    DeclarationNegative = 85,
    /// `-1` NotAvailable: the host's `enabled` is 0: the capability is withheld.
    CapabilityDisabled = 96,
    /// `-2` InvalidPointer: `memory` is NULL: the guest exports no linear memory.
    NoMemory = 97,
    /// `-7` Internal: `memory_len` is over 4 GiB, larger than any wasm32 memory. `detail[0]`:
    /// the length.
    MemoryTooLarge = 98,
    /// The host's launch callback refused the launch: `abi_code` is its code when that is an
    /// ABI code, else `-7` Internal. `detail[0]`: what it returned (`(int64_t)detail[0]`).
    LaunchCallback = 99,
    /// `-6` QuotaExceeded: the launch would exceed a quota (`kargs_host_call`). `detail[0]`:
    /// the quota (`kargs_quota`), `detail[1]`: what the launch would take, `detail[2]`: the
    /// limit.
    Quota = 100,
    /// `-7` Internal: a declaration does not parse (`kargs_declaration_parse`).
    /// `byte_offset`: the 1-based byte column of the problem, minus one; `detail[0]`: the
    /// column; `detail[1]`: what is wrong there (kernel-args' `Problem`): 1 something else than
    /// the grammar allows (`detail[2]`: what it allows, kernel-args' `Expected::code`; `text`:
    /// what is there), 2 a second parameter of a name, 3 a name that is no parameter, 4 a name
    /// that is not an integer parameter, 5 a keyword for a name (2 to 5: `text`: the name), 6 a
    /// name too long, 7 an extent too long, 9 too many parameters, 10 too many extent operations
    /// (6, 7, 9, 10: `detail[2]`: the cap), 8 a constant of 2^32 or more, 11 a declaration over
    /// kernel-args' `MAX_DECLARATION_BYTES` (`detail[2]`: its length), 12 a byte that is not UTF-8.
    DeclarationSyntax = 112,
    /// `-7` Internal: a `kargs_declaration` that `kargs_declaration_parse` did not write.
    /// `detail[0]`: its kernel's index in the host's table (0 for `kargs_declaration_check`).
    InvalidDeclaration = 113,
    /// `-7` Internal: an entry of a `kargs_arg` array with no valid tag. `detail[0]`: its
    /// index, `detail[1]`: its tag.
    InvalidEntry = 114,
}

impl KargsErrorKind {
    /// Every kind, in value order.
    pub(crate) const ALL: [KargsErrorKind; 29] = [
        KargsErrorKind::None,
        KargsErrorKind::BufferTooLong,
        KargsErrorKind::TooManyRecords,
        KargsErrorKind::UnknownTag,
        KargsErrorKind::TruncatedRecord,
        KargsErrorKind::WindowOutOfBounds,
        KargsErrorKind::RegionNegativePointer,
        KargsErrorKind::RegionNegativeLength,
        KargsErrorKind::RegionEndOverflows,
        KargsErrorKind::RegionPastMemory,
        KargsErrorKind::DimensionTooSmall,
        KargsErrorKind::DimensionTooLarge,
        KargsErrorKind::NullArgument,
        KargsErrorKind::UnknownKernel,
        KargsErrorKind::UndeclaredKernel,
        KargsErrorKind::DeclarationCount,
        KargsErrorKind::DeclarationType,
        KargsErrorKind::DeclarationMisaligned,
        KargsErrorKind::DeclarationWindowTooShort,
        KargsErrorKind::DeclarationOutOfRange,
        KargsErrorKind::DeclarationNegative,
        KargsErrorKind::CapabilityDisabled,
        KargsErrorKind::NoMemory,
        KargsErrorKind::MemoryTooLarge,
        KargsErrorKind::LaunchCallback,
        KargsErrorKind::Quota,
        KargsErrorKind::DeclarationSyntax,
        KargsErrorKind::InvalidDeclaration,
        KargsErrorKind::InvalidEntry,
    ];

    /// Every kind, in value order.
    pub const ALL_PUBLIC: &'static [KargsErrorKind] = &KargsErrorKind::ALL;

    /// The kind with this value, if there is one.
    pub fn from_u32(value: u32) -> Option<KargsErrorKind> {
        KargsErrorKind::ALL.into_iter().find(|k| *k as u32 == value)
    }

    /// The kind's stable snake_case name. The argv kinds' are core's `ErrorKind::name()`, the
    /// names the conformance vectors use.
    pub const fn name(self) -> &'static core::ffi::CStr {
        match self {
            KargsErrorKind::None => c"none",
            KargsErrorKind::BufferTooLong => c"buffer_too_long",
            KargsErrorKind::TooManyRecords => c"too_many_records",
            KargsErrorKind::UnknownTag => c"unknown_tag",
            KargsErrorKind::TruncatedRecord => c"truncated_record",
            KargsErrorKind::WindowOutOfBounds => c"window_out_of_bounds",
            KargsErrorKind::RegionNegativePointer => c"region_negative_pointer",
            KargsErrorKind::RegionNegativeLength => c"region_negative_length",
            KargsErrorKind::RegionEndOverflows => c"region_end_overflows",
            KargsErrorKind::RegionPastMemory => c"region_past_memory",
            KargsErrorKind::DimensionTooSmall => c"dimension_too_small",
            KargsErrorKind::DimensionTooLarge => c"dimension_too_large",
            KargsErrorKind::NullArgument => c"null_argument",
            KargsErrorKind::UnknownKernel => c"unknown_kernel",
            KargsErrorKind::UndeclaredKernel => c"undeclared_kernel",
            KargsErrorKind::DeclarationCount => c"declaration_count",
            KargsErrorKind::DeclarationType => c"declaration_type",
            KargsErrorKind::DeclarationMisaligned => c"declaration_misaligned",
            KargsErrorKind::DeclarationWindowTooShort => c"declaration_window_too_short",
            KargsErrorKind::DeclarationOutOfRange => c"declaration_out_of_range",
            KargsErrorKind::DeclarationNegative => c"declaration_negative",
            KargsErrorKind::CapabilityDisabled => c"capability_disabled",
            KargsErrorKind::NoMemory => c"no_memory",
            KargsErrorKind::MemoryTooLarge => c"memory_too_large",
            KargsErrorKind::LaunchCallback => c"launch_callback",
            KargsErrorKind::Quota => c"quota",
            KargsErrorKind::DeclarationSyntax => c"declaration_syntax",
            KargsErrorKind::InvalidDeclaration => c"invalid_declaration",
            KargsErrorKind::InvalidEntry => c"invalid_entry",
        }
    }

    /// The ABI code every error of this kind is answered with (0 for `None`;
    /// `KARGS_ERROR_KIND_LAUNCH_CALLBACK` is answered with the callback's code, `Internal` when
    /// that is not an ABI code).
    pub fn abi_code(self) -> i32 {
        match self {
            KargsErrorKind::None => 0,
            KargsErrorKind::BufferTooLong | KargsErrorKind::TooManyRecords => {
                AbiError::KernelArgsUnsupported.code()
            }
            KargsErrorKind::UnknownTag | KargsErrorKind::TruncatedRecord => AbiError::InvalidArgs.code(),
            KargsErrorKind::WindowOutOfBounds
            | KargsErrorKind::RegionNegativePointer
            | KargsErrorKind::RegionNegativeLength
            | KargsErrorKind::RegionEndOverflows
            | KargsErrorKind::RegionPastMemory => AbiError::InvalidPointer.code(),
            KargsErrorKind::DimensionTooSmall | KargsErrorKind::DimensionTooLarge => {
                AbiError::InvalidDimensions.code()
            }
            KargsErrorKind::NullArgument
            | KargsErrorKind::MemoryTooLarge
            | KargsErrorKind::DeclarationSyntax
            | KargsErrorKind::InvalidDeclaration
            | KargsErrorKind::InvalidEntry => AbiError::Internal.code(),
            KargsErrorKind::UnknownKernel | KargsErrorKind::UndeclaredKernel => {
                AbiError::InvalidKernel.code()
            }
            KargsErrorKind::DeclarationCount
            | KargsErrorKind::DeclarationType
            | KargsErrorKind::DeclarationMisaligned
            | KargsErrorKind::DeclarationWindowTooShort
            | KargsErrorKind::DeclarationOutOfRange
            | KargsErrorKind::DeclarationNegative => AbiError::InvalidArgs.code(),
            KargsErrorKind::CapabilityDisabled => AbiError::NotAvailable.code(),
            KargsErrorKind::NoMemory => AbiError::InvalidPointer.code(),
            // The callback's own code; `Internal` when it is not an ABI code.
            KargsErrorKind::LaunchCallback => AbiError::Internal.code(),
            KargsErrorKind::Quota => AbiError::QuotaExceeded.code(),
        }
    }
}

/// A launch quantity, in `kargs_error.detail[0]` of the two dimension kinds. The values are
/// stable.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KargsDimension {
    /// `grid[0]`: blocks in x (1 to 2147483647).
    GridX = 0,
    /// `grid[1]`: blocks in y (1 to 65535).
    GridY = 1,
    /// `grid[2]`: blocks in z (1 to 65535).
    GridZ = 2,
    /// `block[0]`: threads per block in x (1 to 1024).
    BlockX = 3,
    /// `block[1]`: threads per block in y (1 to 1024).
    BlockY = 4,
    /// `block[2]`: threads per block in z (1 to 64).
    BlockZ = 5,
    /// `block[0] * block[1] * block[2]` (at most 1024).
    ThreadsPerBlock = 6,
    /// `shared_mem`: dynamic shared memory per block in bytes (0 to the maximum).
    SharedMem = 7,
}

impl KargsDimension {
    const ALL: [(KargsDimension, Dimension); 8] = [
        (KargsDimension::GridX, Dimension::GridX),
        (KargsDimension::GridY, Dimension::GridY),
        (KargsDimension::GridZ, Dimension::GridZ),
        (KargsDimension::BlockX, Dimension::BlockX),
        (KargsDimension::BlockY, Dimension::BlockY),
        (KargsDimension::BlockZ, Dimension::BlockZ),
        (KargsDimension::ThreadsPerBlock, Dimension::ThreadsPerBlock),
        (KargsDimension::SharedMem, Dimension::SharedMem),
    ];

    fn of(dimension: Dimension) -> KargsDimension {
        match dimension {
            Dimension::GridX => KargsDimension::GridX,
            Dimension::GridY => KargsDimension::GridY,
            Dimension::GridZ => KargsDimension::GridZ,
            Dimension::BlockX => KargsDimension::BlockX,
            Dimension::BlockY => KargsDimension::BlockY,
            Dimension::BlockZ => KargsDimension::BlockZ,
            Dimension::ThreadsPerBlock => KargsDimension::ThreadsPerBlock,
            Dimension::SharedMem => KargsDimension::SharedMem,
        }
    }

    fn dimension(value: u64) -> Option<Dimension> {
        KargsDimension::ALL.into_iter().find(|(k, _)| *k as u64 == value).map(|(_, d)| d)
    }
}

/// A quota, in `kargs_error.detail[0]` of `KARGS_ERROR_KIND_QUOTA`. The values are stable.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KargsQuota {
    /// Threads in one launch (grid × block): `kargs_host.max_threads_per_launch`.
    ThreadsPerLaunch = 0,
    /// Bytes of device memory one launch's windows are copied into (a Rust launcher's staged
    /// mode; `kargs_host_call` never stages).
    StagingBytes = 1,
    /// Launches of one guest at once: `kargs_host.in_flight_guest`.
    InFlightPerGuest = 2,
    /// Launches on one device at once: `kargs_host.in_flight_device`.
    InFlightPerDevice = 3,
    /// Milliseconds one launch may run (a Rust CUDA host's deadline; `kargs_host_call` has
    /// none): `detail[1]` is how long the launch took; it ran to its end.
    LaunchTime = 4,
    /// Backward branches one thread of a fenced kernel takes (a Rust CUDA host's fence;
    /// `kargs_host_call`'s launches are the callback's): `detail[2]` is the budget.
    BackEdgesPerThread = 5,
}

impl KargsQuota {
    const ALL: [(KargsQuota, Quota); 6] = [
        (KargsQuota::ThreadsPerLaunch, Quota::ThreadsPerLaunch),
        (KargsQuota::StagingBytes, Quota::StagingBytes),
        (KargsQuota::InFlightPerGuest, Quota::InFlightPerGuest),
        (KargsQuota::InFlightPerDevice, Quota::InFlightPerDevice),
        (KargsQuota::LaunchTime, Quota::LaunchTime),
        (KargsQuota::BackEdgesPerThread, Quota::BackEdgesPerThread),
    ];

    fn of(quota: Quota) -> KargsQuota {
        match quota {
            Quota::ThreadsPerLaunch => KargsQuota::ThreadsPerLaunch,
            Quota::StagingBytes => KargsQuota::StagingBytes,
            Quota::InFlightPerGuest => KargsQuota::InFlightPerGuest,
            Quota::InFlightPerDevice => KargsQuota::InFlightPerDevice,
            Quota::LaunchTime => KargsQuota::LaunchTime,
            Quota::BackEdgesPerThread => KargsQuota::BackEdgesPerThread,
        }
    }

    fn quota(value: u64) -> Option<Quota> {
        KargsQuota::ALL.into_iter().find(|(k, _)| *k as u64 == value).map(|(_, q)| q)
    }
}

/// The function that refused a NULL argument, in `kargs_error.detail[0]` of
/// `KARGS_ERROR_KIND_NULL_ARGUMENT`. The values are stable.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KargsFunction {
    /// `kargs_parse`.
    Parse = 1,
    /// `kargs_check_launch_shape`.
    CheckLaunchShape = 2,
    /// `kargs_declaration_parse`.
    DeclarationParse = 3,
    /// `kargs_declaration_check`.
    DeclarationCheck = 4,
    /// `kargs_host_call`.
    HostCall = 5,
}

impl KargsFunction {
    fn from_u64(value: u64) -> Option<KargsFunction> {
        [
            KargsFunction::Parse,
            KargsFunction::CheckLaunchShape,
            KargsFunction::DeclarationParse,
            KargsFunction::DeclarationCheck,
            KargsFunction::HostCall,
        ]
        .into_iter()
        .find(|f| *f as u64 == value)
    }

    /// The function's C name and its parameters' names, in order.
    fn names(self) -> (&'static str, &'static [&'static str]) {
        match self {
            KargsFunction::Parse => (
                "kargs_parse",
                &["argv", "argv_len", "memory", "memory_len", "out", "out_cap", "out_len", "err"],
            ),
            KargsFunction::CheckLaunchShape => {
                ("kargs_check_launch_shape", &["grid", "block", "shared_mem", "max_shared_mem_bytes", "err"])
            }
            KargsFunction::DeclarationParse => {
                ("kargs_declaration_parse", &["text", "text_len", "out", "err", "msg", "msg_cap"])
            }
            KargsFunction::DeclarationCheck => (
                "kargs_declaration_check",
                &["declaration", "args", "args_len", "grid", "block", "err", "msg", "msg_cap"],
            ),
            KargsFunction::HostCall => (
                "kargs_host_call",
                &[
                    "host",
                    "memory",
                    "memory_len",
                    "call",
                    "err",
                    "msg",
                    "msg_cap",
                    "host->kernels",
                    "host->kernels_len",
                    "host->launch",
                ],
            ),
        }
    }
}

/// What went wrong and where: what every function of this library writes to its `err`
/// argument (when it is not NULL), on success as well (then all zero), so nothing stale from
/// an earlier call survives.
///
/// `kargs_error_message` turns it into the same one-line message the Rust crates'
/// `Display` gives: everything it needs is in the struct, so the struct may be copied, kept
/// and formatted later. Layout: 176 bytes, no padding.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KargsError {
    /// 0 on success, else the negative wasi-cuda ABI code the call returned (`KARGS_ABI_*`):
    /// the code a host answers the guest with.
    pub abi_code: i32,
    /// What went wrong: a `kargs_error_kind` (`KARGS_ERROR_KIND_*`).
    pub kind: u32,
    /// Argv kinds (1 to 5): the offending record's 0-based index. 0 for every other kind.
    pub record_index: u32,
    /// Argv kinds (1 to 5): the byte offset in argv at which the offending record starts. 0 for
    /// every other kind.
    pub byte_offset: u32,
    /// The kind's details, as each `KARGS_ERROR_KIND_*` says; unused entries are 0. Signed
    /// values are stored in two's complement: read them as `(int64_t)detail[i]`.
    pub detail: [u64; 3],
    /// The declaration kinds (81 to 85, 112): the names, expressions and tokens of the
    /// declaration the message quotes, in UTF-8, each followed by a NUL, as each
    /// `KARGS_ERROR_KIND_*` says
    /// (the first is a C string: `(const char *)err.text`); the bytes after the last NUL are 0.
    /// All 0 for every other kind.
    pub text: [u8; KARGS_ERROR_TEXT_MAX],
}

/// Bytes of `kargs_error.text`: two names of at most 32 bytes and an expression of at most 64
/// (kernel-args' `MAX_NAME_BYTES`, `MAX_EXTENT_BYTES`), each with its NUL, and padding.
pub const KARGS_ERROR_TEXT_MAX: usize = 136;

// Two names and an extent, each with its NUL (three NULs).
const _: () = assert!(MAX_NAME_BYTES + MAX_EXTENT_BYTES + MAX_NAME_BYTES + 3 <= KARGS_ERROR_TEXT_MAX);

/// `parts` one after the other, each followed by a NUL, in a zeroed text. The parts always fit
/// (a name or an extent is at most its cap: the assertion above); one that did not would be
/// cut, and the text then read as invalid.
fn text_of(parts: &[&str]) -> [u8; KARGS_ERROR_TEXT_MAX] {
    let mut text = [0; KARGS_ERROR_TEXT_MAX];
    let mut at = 0usize;
    for part in parts {
        for &byte in part.as_bytes() {
            if let Some(slot) = text.get_mut(at) {
                *slot = byte;
            }
            at = at.saturating_add(1);
        }
        at = at.saturating_add(1);
    }
    text
}

/// The `N` NUL-terminated parts of `text`: each UTF-8, not empty, none longer than its cap in
/// `caps`, and nothing but zeros after the last; `None` otherwise.
fn parts_of<const N: usize>(text: &[u8; KARGS_ERROR_TEXT_MAX], caps: [usize; N]) -> Option<[&str; N]> {
    let mut parts = [""; N];
    let mut rest: &[u8] = text;
    for (part, cap) in parts.iter_mut().zip(caps) {
        let end = rest.iter().position(|&b| b == 0)?;
        let (bytes, after) = rest.split_at(end);
        if bytes.is_empty() || bytes.len() > cap {
            return None;
        }
        *part = core::str::from_utf8(bytes).ok()?;
        rest = after.get(1..)?;
    }
    rest.iter().all(|&b| b == 0).then_some(parts)
}

impl Default for KargsError {
    /// No error: all zeros, what a successful call writes.
    fn default() -> KargsError {
        KargsError::NONE
    }
}

/// A decoded `kargs_error`: the Rust error it was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decoded {
    None,
    Argv(ArgvError),
    Region(RegionError),
    Shape(ShapeError),
    Quota(QuotaError),
    /// A declaration's refusal of the arguments.
    Mismatch(Mismatch),
    /// A declaration that does not parse.
    Syntax(DeclarationError),
    Null {
        function: KargsFunction,
        position: usize,
        len: u64,
    },
    /// A kind of the declarations and the host call: its message is made from the plain data
    /// (`message.rs`).
    Host {
        kind: KargsErrorKind,
        detail: [u64; 3],
    },
}

/// Whether an error's details agree with its kind, as every error this library writes does (a
/// truncated record has fewer bytes than it needs, a window out of bounds ends past the memory,
/// a declaration's refusal names its own record as the parameter, ...): a struct whose details
/// contradict its kind was not written here, and its message says so rather than state the
/// contradiction as a fact.
fn holds(decoded: &Decoded) -> bool {
    use KargsErrorKind as K;
    match decoded {
        Decoded::None | Decoded::Null { .. } => true,
        Decoded::Argv(e) => match e.kind() {
            ErrorKind::BufferTooLong { len, max } => len > max && max == MAX_KERNEL_ARGS_BYTES,
            ErrorKind::TooManyRecords { max } => max <= MAX_KERNEL_ARGS && e.index() >= max,
            ErrorKind::UnknownTag { .. } => true,
            ErrorKind::TruncatedRecord { tag, needed, present } => {
                needed == tag.value_size() && present < needed
            }
            ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => {
                u64::from(guest_offset).saturating_add(u64::from(len)) > memory_len
            }
        },
        Decoded::Region(e) => match *e {
            RegionError::NegativePointer { args_ptr } => args_ptr < 0,
            RegionError::NegativeLength { args_len } => args_len < 0,
            RegionError::EndOverflows { args_ptr, args_len } => {
                args_ptr >= 0 && args_len >= 0 && args_ptr.checked_add(args_len).is_none()
            }
            RegionError::PastMemory { args_ptr, args_len, memory_len } => {
                args_ptr >= 0
                    && args_len >= 0
                    && args_ptr
                        .checked_add(args_len)
                        .and_then(|end| u64::try_from(end).ok())
                        .is_some_and(|end| end > memory_len)
            }
        },
        Decoded::Quota(e) => e.requested > e.limit,
        Decoded::Shape(e) => match e.bound {
            Bound::AtLeast(bound) => i128::from(e.value) < i128::from(bound),
            Bound::AtMost(bound) => i128::from(e.value) > i128::from(bound),
        },
        Decoded::Syntax(e) => {
            e.column > 0 && !matches!(e.problem, Problem::TooLong { len, max } if len <= max)
        }
        Decoded::Mismatch(m) => match &m.kind {
            MismatchKind::Count { declared, got } => declared != got,
            MismatchKind::Type { expected, got, .. } => expected != got,
            MismatchKind::Misaligned { guest_offset, element } => {
                guest_offset.checked_rem(element.size()).is_some_and(|rest| rest != 0)
            }
            MismatchKind::WindowTooShort { len, bytes, .. } => u64::from(*len) < *bytes,
            MismatchKind::Overflow { .. } => true,
            MismatchKind::Negative { scalar_index, .. } => *scalar_index != m.record,
        },
        Decoded::Host { kind, detail: [d0, d1, d2], .. } => match kind {
            K::UnknownKernel | K::UndeclaredKernel | K::LaunchCallback => (*d1, *d2) == (0, 0),
            K::CapabilityDisabled | K::NoMemory => (*d0, *d1, *d2) == (0, 0, 0),
            K::MemoryTooLarge => *d0 > MAX_GUEST_MEMORY_BYTES && (*d1, *d2) == (0, 0),
            _ => true,
        },
    }
}

fn wide(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

fn narrow(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// A signed value in a `detail` entry: two's complement.
fn signed(v: i64) -> u64 {
    v as u64
}

fn unsigned(v: u64) -> i64 {
    v as i64
}

fn to_i32(v: u64) -> Option<i32> {
    i32::try_from(unsigned(v)).ok()
}

impl KargsError {
    /// No error.
    pub(crate) const NONE: KargsError = KargsError {
        abi_code: 0,
        kind: 0,
        record_index: 0,
        byte_offset: 0,
        detail: [0; 3],
        text: [0; KARGS_ERROR_TEXT_MAX],
    };

    fn of(kind: KargsErrorKind, record_index: u32, byte_offset: u32, detail: [u64; 3]) -> KargsError {
        KargsError {
            abi_code: kind.abi_code(),
            kind: kind as u32,
            record_index,
            byte_offset,
            detail,
            text: [0; KARGS_ERROR_TEXT_MAX],
        }
    }

    /// The error for an argv the parser refused.
    pub fn from_argv(e: &ArgvError) -> KargsError {
        let (kind, detail) = match e.kind() {
            ErrorKind::BufferTooLong { len, max } => {
                (KargsErrorKind::BufferTooLong, [wide(len), wide(max), 0])
            }
            ErrorKind::TooManyRecords { max } => (KargsErrorKind::TooManyRecords, [wide(max), 0, 0]),
            ErrorKind::UnknownTag { tag } => (KargsErrorKind::UnknownTag, [u64::from(tag), 0, 0]),
            ErrorKind::TruncatedRecord { tag, needed, present } => {
                (KargsErrorKind::TruncatedRecord, [u64::from(tag.byte()), wide(needed), wide(present)])
            }
            ErrorKind::WindowOutOfBounds { guest_offset, len, memory_len } => {
                (KargsErrorKind::WindowOutOfBounds, [u64::from(guest_offset), u64::from(len), memory_len])
            }
        };
        KargsError::of(kind, narrow(e.index()), narrow(e.offset()), detail)
    }

    /// The error for an argument region `check_args_region(args_ptr, args_len, memory_len)`
    /// refused with `e`.
    pub fn from_region(e: &RegionError, args_ptr: i32, args_len: i32, memory_len: u64) -> KargsError {
        let kind = match e {
            RegionError::NegativePointer { .. } => KargsErrorKind::RegionNegativePointer,
            RegionError::NegativeLength { .. } => KargsErrorKind::RegionNegativeLength,
            RegionError::EndOverflows { .. } => KargsErrorKind::RegionEndOverflows,
            RegionError::PastMemory { .. } => KargsErrorKind::RegionPastMemory,
        };
        KargsError::of(kind, 0, 0, [signed(i64::from(args_ptr)), signed(i64::from(args_len)), memory_len])
    }

    /// The error for a refused launch shape.
    pub fn from_shape(e: &ShapeError) -> KargsError {
        let (kind, bound) = match e.bound {
            Bound::AtLeast(n) => (KargsErrorKind::DimensionTooSmall, n),
            Bound::AtMost(n) => (KargsErrorKind::DimensionTooLarge, n),
        };
        KargsError::of(kind, 0, 0, [KargsDimension::of(e.dimension) as u64, signed(e.value), bound])
    }

    /// The error for a NULL where `function` needs a pointer: its parameter `position`, with
    /// `len` the length or capacity that made NULL invalid there (0 if NULL never is).
    pub fn null_argument(function: KargsFunction, position: usize, len: usize) -> KargsError {
        KargsError::of(KargsErrorKind::NullArgument, 0, 0, [function as u64, wide(position), wide(len)])
    }

    /// The Rust error this struct was made from; `None` when it is not a struct this library
    /// wrote (an unknown kind, an ABI code that is not the kind's, details out of range).
    pub(crate) fn decode(&self) -> Option<Decoded> {
        self.decode_fields().filter(holds)
    }

    /// The error the fields spell, each within its type's range, before [`holds`] checks that
    /// they agree with each other.
    fn decode_fields(&self) -> Option<Decoded> {
        let kind = KargsErrorKind::from_u32(self.kind)?;
        let callback_code =
            kind == KargsErrorKind::LaunchCallback && AbiError::try_from(self.abi_code).is_ok();
        if self.abi_code != kind.abi_code() && !callback_code {
            return None;
        }
        let placed_kind = matches!(
            kind,
            KargsErrorKind::BufferTooLong
                | KargsErrorKind::TooManyRecords
                | KargsErrorKind::UnknownTag
                | KargsErrorKind::TruncatedRecord
                | KargsErrorKind::WindowOutOfBounds
                | KargsErrorKind::DeclarationCount
                | KargsErrorKind::DeclarationType
                | KargsErrorKind::DeclarationMisaligned
                | KargsErrorKind::DeclarationWindowTooShort
                | KargsErrorKind::DeclarationOutOfRange
                | KargsErrorKind::DeclarationNegative
                | KargsErrorKind::DeclarationSyntax
        );
        if !placed_kind && (self.record_index, self.byte_offset) != (0, 0) {
            return None;
        }
        let texted_kind = matches!(
            kind,
            KargsErrorKind::DeclarationSyntax
                | KargsErrorKind::DeclarationType
                | KargsErrorKind::DeclarationMisaligned
                | KargsErrorKind::DeclarationWindowTooShort
                | KargsErrorKind::DeclarationOutOfRange
                | KargsErrorKind::DeclarationNegative
        );
        if !texted_kind && self.text != [0; KARGS_ERROR_TEXT_MAX] {
            return None;
        }
        let index = usize::try_from(self.record_index).ok()?;
        let offset = usize::try_from(self.byte_offset).ok()?;
        let [d0, d1, d2] = self.detail;
        let to_usize = |v: u64| usize::try_from(v).ok();
        let argv = |kind| Some(Decoded::Argv(ArgvError::new(kind, index, offset)));
        let region = |make: fn(i32, i32, u64) -> RegionError| {
            Some(Decoded::Region(make(to_i32(d0)?, to_i32(d1)?, d2)))
        };
        // A refusal of parameter `d0`, which is the record's: its name first in the text.
        let mismatch =
            |kind| Some(Decoded::Mismatch(Mismatch { record: index, offset, param: Name::new(), kind }));
        let named = |param: &str, kind| -> Option<Decoded> {
            let param = Name::try_from(param).ok().filter(|_| d0 == u64::from(self.record_index))?;
            Some(Decoded::Mismatch(Mismatch { record: index, offset, param, kind }))
        };
        let text = |s: &str| Text::try_from(s).ok();
        let shape = |bound: fn(u64) -> Bound| {
            Some(Decoded::Shape(ShapeError {
                dimension: KargsDimension::dimension(d0)?,
                value: unsigned(d1),
                bound: bound(d2),
            }))
        };
        match kind {
            KargsErrorKind::None => {
                (self.detail == [0; 3] && (index, offset) == (0, 0)).then_some(Decoded::None)
            }
            KargsErrorKind::BufferTooLong if d2 == 0 && (index, offset) == (0, 0) => {
                argv(ErrorKind::BufferTooLong { len: to_usize(d0)?, max: to_usize(d1)? })
            }
            KargsErrorKind::TooManyRecords if (d1, d2) == (0, 0) => {
                argv(ErrorKind::TooManyRecords { max: to_usize(d0)? })
            }
            KargsErrorKind::UnknownTag if (d1, d2) == (0, 0) => {
                let tag = u8::try_from(d0).ok()?;
                // A byte that is a tag cannot be an unknown tag.
                if ArgTag::from_byte(tag).is_some() {
                    return None;
                }
                argv(ErrorKind::UnknownTag { tag })
            }
            KargsErrorKind::TruncatedRecord => argv(ErrorKind::TruncatedRecord {
                tag: ArgTag::from_byte(u8::try_from(d0).ok()?)?,
                needed: to_usize(d1)?,
                present: to_usize(d2)?,
            }),
            KargsErrorKind::WindowOutOfBounds => argv(ErrorKind::WindowOutOfBounds {
                guest_offset: u32::try_from(d0).ok()?,
                len: u32::try_from(d1).ok()?,
                memory_len: d2,
            }),
            KargsErrorKind::RegionNegativePointer => {
                region(|args_ptr, _, _| RegionError::NegativePointer { args_ptr })
            }
            KargsErrorKind::RegionNegativeLength => {
                region(|_, args_len, _| RegionError::NegativeLength { args_len })
            }
            KargsErrorKind::RegionEndOverflows => {
                region(|args_ptr, args_len, _| RegionError::EndOverflows { args_ptr, args_len })
            }
            KargsErrorKind::RegionPastMemory => region(|args_ptr, args_len, memory_len| {
                RegionError::PastMemory { args_ptr, args_len, memory_len }
            }),
            KargsErrorKind::Quota if (index, offset) == (0, 0) => {
                Some(Decoded::Quota(QuotaError { quota: KargsQuota::quota(d0)?, requested: d1, limit: d2 }))
            }
            KargsErrorKind::Quota => None,
            KargsErrorKind::DimensionTooSmall => shape(Bound::AtLeast),
            KargsErrorKind::DimensionTooLarge => shape(Bound::AtMost),
            KargsErrorKind::NullArgument => {
                let function = KargsFunction::from_u64(d0)?;
                let position = to_usize(d1)?;
                function.names().1.get(position)?;
                Some(Decoded::Null { function, position, len: d2 })
            }
            KargsErrorKind::BufferTooLong | KargsErrorKind::TooManyRecords | KargsErrorKind::UnknownTag => {
                None
            }
            KargsErrorKind::DeclarationCount if d2 == 0 => {
                mismatch(MismatchKind::Count { declared: to_usize(d0)?, got: to_usize(d1)? })
            }
            KargsErrorKind::DeclarationType => {
                let [param, declared] = parts_of(&self.text, [MAX_NAME_BYTES, MAX_EXTENT_BYTES])?;
                let tag = |byte: u64| u8::try_from(byte).ok().and_then(ArgTag::from_byte);
                let kind =
                    MismatchKind::Type { declared: text(declared)?, expected: tag(d1)?, got: tag(d2)? };
                named(param, kind)
            }
            KargsErrorKind::DeclarationMisaligned => {
                let [param, element] = parts_of(&self.text, [MAX_NAME_BYTES, MAX_NAME_BYTES])?;
                let element = Element::from_name(element).filter(|e| u64::from(e.size()) == d2)?;
                named(param, MismatchKind::Misaligned { guest_offset: u32::try_from(d1).ok()?, element })
            }
            KargsErrorKind::DeclarationWindowTooShort => {
                let [param, touches] = parts_of(&self.text, [MAX_NAME_BYTES, MAX_EXTENT_BYTES])?;
                let kind = MismatchKind::WindowTooShort {
                    len: u32::try_from(d1).ok()?,
                    touches: text(touches)?,
                    bytes: d2,
                };
                named(param, kind)
            }
            KargsErrorKind::DeclarationOutOfRange if (d1, d2) == (0, 0) => {
                let [param, touches] = parts_of(&self.text, [MAX_NAME_BYTES, MAX_EXTENT_BYTES])?;
                named(param, MismatchKind::Overflow { touches: text(touches)? })
            }
            KargsErrorKind::DeclarationNegative if d2 == 0 => {
                let [param, touches, scalar] =
                    parts_of(&self.text, [MAX_NAME_BYTES, MAX_EXTENT_BYTES, MAX_NAME_BYTES])?;
                let kind = MismatchKind::Negative {
                    touches: text(touches)?,
                    scalar: Name::try_from(scalar).ok()?,
                    scalar_index: to_usize(d1)?,
                };
                named(param, kind)
            }
            KargsErrorKind::DeclarationSyntax
                if index == 0
                    && u64::from(self.byte_offset) == d0.saturating_sub(1).min(u64::from(u32::MAX)) =>
            {
                let name = || -> Option<Name> {
                    let [name] = parts_of(&self.text, [MAX_NAME_BYTES])?;
                    Name::try_from(name).ok()
                };
                let untexted = self.text == [0; KARGS_ERROR_TEXT_MAX];
                let max = || to_usize(d2);
                let problem = match d1 {
                    1 => Problem::Expected { expected: Expected::from_code(d2)?, found: name()? },
                    2 if d2 == 0 => Problem::DuplicateName(name()?),
                    3 if d2 == 0 => Problem::UnknownName(name()?),
                    4 if d2 == 0 => Problem::NotAnInteger(name()?),
                    5 if d2 == 0 => Problem::Reserved(name()?),
                    6 if untexted => Problem::NameTooLong { max: max()? },
                    7 if untexted => Problem::ExtentTooLong { max: max()? },
                    8 if untexted && d2 == 0 => Problem::ConstantTooLarge,
                    9 if untexted => Problem::TooManyParams { max: max()? },
                    10 if untexted => Problem::TooManyOps { max: max()? },
                    11 if untexted => Problem::TooLong { len: to_usize(d2)?, max: MAX_DECLARATION_BYTES },
                    12 if untexted && d2 == 0 => Problem::NotUtf8,
                    _ => return None,
                };
                Some(Decoded::Syntax(DeclarationError { column: to_usize(d0)?, problem }))
            }
            KargsErrorKind::DeclarationCount
            | KargsErrorKind::DeclarationOutOfRange
            | KargsErrorKind::DeclarationNegative
            | KargsErrorKind::DeclarationSyntax => None,
            KargsErrorKind::UnknownKernel
            | KargsErrorKind::UndeclaredKernel
            | KargsErrorKind::CapabilityDisabled
            | KargsErrorKind::NoMemory
            | KargsErrorKind::MemoryTooLarge
            | KargsErrorKind::LaunchCallback
            | KargsErrorKind::InvalidDeclaration
            | KargsErrorKind::InvalidEntry => Some(Decoded::Host { kind, detail: self.detail }),
        }
    }

    /// The error of a host call the host refused with `e` (`kargs_host_call`), for a call with
    /// `args_ptr`, `args_len` against `memory_len` bytes.
    pub(crate) fn from_host(
        e: &HostError,
        args_ptr: i32,
        args_len: i32,
        memory_len: u64,
        callback: i64,
    ) -> KargsError {
        let id = |kernel_id: i64| [signed(kernel_id), 0, 0];
        match e.detail() {
            Detail::Argv(e) => KargsError::from_argv(e),
            Detail::Region(e) => KargsError::from_region(e, args_ptr, args_len, memory_len),
            Detail::Shape(e) => KargsError::from_shape(e),
            Detail::Quota(e) => KargsError::of(
                KargsErrorKind::Quota,
                0,
                0,
                [KargsQuota::of(e.quota) as u64, e.requested, e.limit],
            ),
            Detail::Declaration(m) => KargsError::from_mismatch(m),
            Detail::UnknownKernel { kernel_id } => {
                KargsError::of(KargsErrorKind::UnknownKernel, 0, 0, id(*kernel_id))
            }
            Detail::Undeclared { kernel_id } => {
                KargsError::of(KargsErrorKind::UndeclaredKernel, 0, 0, id(*kernel_id))
            }
            Detail::CapabilityDisabled => KargsError::of(KargsErrorKind::CapabilityDisabled, 0, 0, [0; 3]),
            Detail::NoExportedMemory => KargsError::of(KargsErrorKind::NoMemory, 0, 0, [0; 3]),
            // Every other detail comes from the launch callback (`ffi::CallbackLauncher`).
            _ => KargsError {
                abi_code: e.code().code(),
                ..KargsError::of(KargsErrorKind::LaunchCallback, 0, 0, id(callback))
            },
        }
    }

    /// The error of arguments a declaration refuses: its numbers in `detail`, its names and
    /// expressions in `text`, so that `kargs_error_message` gives `m`'s `Display`.
    pub fn from_mismatch(m: &Mismatch) -> KargsError {
        let (record, offset) = (narrow(m.record), narrow(m.offset));
        let param = wide(m.record);
        let name = m.param.as_str();
        let (kind, detail, text) = match &m.kind {
            MismatchKind::Count { declared, got } => {
                (KargsErrorKind::DeclarationCount, [wide(*declared), wide(*got), 0], text_of(&[]))
            }
            MismatchKind::Type { declared, expected, got } => (
                KargsErrorKind::DeclarationType,
                [param, u64::from(expected.byte()), u64::from(got.byte())],
                text_of(&[name, declared]),
            ),
            MismatchKind::Misaligned { guest_offset, element } => (
                KargsErrorKind::DeclarationMisaligned,
                [param, u64::from(*guest_offset), u64::from(element.size())],
                text_of(&[name, element.name()]),
            ),
            MismatchKind::WindowTooShort { len, touches, bytes } => (
                KargsErrorKind::DeclarationWindowTooShort,
                [param, u64::from(*len), *bytes],
                text_of(&[name, touches]),
            ),
            MismatchKind::Overflow { touches } => {
                (KargsErrorKind::DeclarationOutOfRange, [param, 0, 0], text_of(&[name, touches]))
            }
            MismatchKind::Negative { touches, scalar, scalar_index } => (
                KargsErrorKind::DeclarationNegative,
                [param, wide(*scalar_index), 0],
                text_of(&[name, touches, scalar]),
            ),
        };
        KargsError { text, ..KargsError::of(kind, record, offset, detail) }
    }

    /// The error of a declaration that does not parse: the column, what is wrong there, and
    /// the names it quotes in `text`, so that `kargs_error_message` gives `e`'s `Display`.
    pub fn from_declaration(e: &DeclarationError) -> KargsError {
        let (code, number, text) = match &e.problem {
            Problem::Expected { expected, found } => (1, u64::from(expected.code()), text_of(&[found])),
            Problem::DuplicateName(name) => (2, 0, text_of(&[name])),
            Problem::UnknownName(name) => (3, 0, text_of(&[name])),
            Problem::NotAnInteger(name) => (4, 0, text_of(&[name])),
            Problem::Reserved(name) => (5, 0, text_of(&[name])),
            Problem::NameTooLong { max } => (6, wide(*max), text_of(&[])),
            Problem::ExtentTooLong { max } => (7, wide(*max), text_of(&[])),
            Problem::ConstantTooLarge => (8, 0, text_of(&[])),
            Problem::TooManyParams { max } => (9, wide(*max), text_of(&[])),
            Problem::TooManyOps { max } => (10, wide(*max), text_of(&[])),
            Problem::TooLong { len, .. } => (11, wide(*len), text_of(&[])),
            Problem::NotUtf8 => (12, 0, text_of(&[])),
        };
        let column = wide(e.column);
        let at = u32::try_from(e.column.saturating_sub(1)).unwrap_or(u32::MAX);
        KargsError { text, ..KargsError::own(KargsErrorKind::DeclarationSyntax, at, [column, code, number]) }
    }

    /// An error of this library's own, with its details.
    pub(crate) fn own(kind: KargsErrorKind, byte_offset: u32, detail: [u64; 3]) -> KargsError {
        KargsError::of(kind, 0, byte_offset, detail)
    }

    /// An error of this library's own at record `record`, byte `byte_offset`.
    pub(crate) fn own_at(
        kind: KargsErrorKind,
        record: usize,
        byte_offset: u32,
        detail: [u64; 3],
    ) -> KargsError {
        KargsError::of(kind, narrow(record), byte_offset, detail)
    }
}

/// The message of a NULL argument (the Rust crates have no such error).
pub(crate) fn write_null_message(
    f: &mut dyn core::fmt::Write,
    function: KargsFunction,
    position: usize,
    len: u64,
) -> core::fmt::Result {
    let (name, params) = function.names();
    let param = params.get(position).copied().unwrap_or("?");
    // The length or capacity that goes with a pointer is the parameter after it.
    let size = params.get(position.saturating_add(1)).copied().unwrap_or("?");
    if len == 0 {
        write!(f, "{name}: {param} is NULL")
    } else {
        write!(f, "{name}: {param} is NULL but {size} is {len} (NULL is allowed only with 0)")
    }
}
