//! `host_launch`: one `wasi_cuda_launch` call through the std adapter's `LaunchHost`, with
//! arbitrary `i32` inputs against a small guest memory.
//!
//! `arbitrary` gives the call as a guest passes it (kernel id, grid, block, shared memory,
//! `args_ptr`, `args_len`: each an arbitrary `i32`, or, so that the later checks and the
//! launcher are reached often, small dimensions and a region inside memory or an encoded argv
//! written into it), whether the capability is granted, whether the guest has a
//! memory, whether the launcher fails, which kernel is called (any id, the one registered without
//! a declaration, or one of a few declared ones), whether the guest is trusted, and the memory's
//! bytes (at most 64 KiB). One host is kept across all inputs, as an embedder keeps one per guest.
//!
//! The answer must be exactly what the documented order of checks gives, computed here from
//! the public checks and the core parser: `NotAvailable` when disabled, `InvalidPointer` without
//! memory or for a bad region, `InvalidDimensions` for a bad shape, `QuotaExceeded` for more
//! threads than the default quota (2^32, counted here in `u128`), `KernelArgsUnsupported` for
//! an argv over the byte cap, the parser's code for a bad argv, `InvalidKernel` for an unknown
//! kernel or an undeclared one with an untrusted guest, `InvalidArgs` where the kernel's
//! declaration refuses the arguments, else the launcher's answer.
//! Only ABI codes come back, never a panic. The launcher is reached exactly when every check
//! passes, then sees the kernel id, the checked shape and the parsed arguments, every pointer
//! window writable and inside guest memory; a refused call leaves no launch recorded.
#![no_main]

use std::sync::{LazyLock, Mutex};

use arbitrary::Arbitrary;
use kernel_args::{
    AbiError, Declaration, GuestTrust, HostError, KernelTable, LaunchArgs, LaunchCall, LaunchHost,
    LaunchLimits, LaunchOutcome, LaunchRequest, Launcher, Registered, check_args_region, check_launch_shape,
};
use kernel_args_core::{
    Access, GuestMemory, LoweredArgSnapshot, MAX_KERNEL_ARGS_BYTES, ParsedArgv, encode_argv, parse_argv,
};
use kernel_args_fuzz::FuzzArg;
use libfuzzer_sys::fuzz_target;

const OUTCOME: LaunchOutcome = LaunchOutcome::NO_DEVICE;

/// Where the argv lies: raw `i32`s as a guest may pass anything, a region inside memory, or
/// an argv encoded into memory (its windows folded to near the memory's size, so that the
/// launcher is reached with pointers often, and a window one byte too long is tried too).
#[derive(Debug, Arbitrary)]
enum Region {
    Raw { args_ptr: i32, args_len: i32 },
    Inside { start: u16, len: u16 },
    Encoded { at: u16, args: Vec<FuzzArg> },
}

/// The launch shape: raw `i32`s, or small positive dimensions that pass more often.
#[derive(Debug, Arbitrary)]
enum Shape {
    Raw { grid: [i32; 3], block: [i32; 3], shared_mem: i32 },
    Small { grid: [u16; 3], block: [u8; 3], shared_mem: u16 },
}

/// The kernel called: any id (most are not registered), the one registered without a
/// declaration, or one of [`DECLARED`].
#[derive(Debug, Arbitrary)]
enum Kernel {
    Any(i64),
    Undeclared,
    Declared(u8),
}

/// The id registered without a declaration.
const UNDECLARED: i64 = 1;
/// Kernel `FIRST_DECLARED + i` is declared by `DECLARED[i]`: declarations that the encoded argvs
/// (up to four arguments, windows near the memory's size) meet often and miss often.
const FIRST_DECLARED: i64 = 10;
const DECLARED: [&str; 7] = [
    "none()",
    "one(n: u32)",
    "bytes(p: &mut [u8; n], n: u32)",
    "floats(p: &[f32; n], n: i32)",
    "fixed(x: i64, p: &mut [u32; 4])",
    "shaped(p: &mut [u8; grid.x * block.x])",
    "two(a: &[u16; n / 2 + 1], b: &mut [u8; n], n: u64)",
];

#[derive(Debug, Arbitrary)]
struct Input {
    kernel: Kernel,
    trusted: bool,
    shape: Shape,
    region: Region,
    enabled: bool,
    has_memory: bool,
    launcher_fails: bool,
    memory: Vec<u8>,
}

/// What the launcher saw of one request.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    kernel_id: i64,
    shape: kernel_args::LaunchShape,
    args: Vec<LoweredArgSnapshot>,
}

/// A launcher that checks every pointer window it is handed and records the request.
#[derive(Debug)]
struct Checking {
    kernels: KernelTable,
    /// Address and length of the guest memory of the current call.
    memory: (usize, usize),
    fail: bool,
    seen: Option<Seen>,
}

impl Checking {
    fn new() -> Checking {
        let mut kernels = KernelTable::new();
        kernels.register_undeclared(UNDECLARED).expect("room");
        for (id, text) in (FIRST_DECLARED..).zip(DECLARED) {
            kernels.declare(id, Declaration::parse(text).expect("a valid declaration")).expect("room");
        }
        Checking { kernels, memory: (0, 0), fail: false, seen: None }
    }
}

impl Launcher for Checking {
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        self.kernels.get(kernel_id)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        let (base, len) = self.memory;
        // The host checked the argv before dispatch: every window is in guest memory.
        for (i, range) in request.args.pointers() {
            let w = request.window(range).expect("the host dispatched checked windows");
            assert_eq!(w.access(), Access::ReadWrite, "argument {i}: a launcher needs writable windows");
            let p = w.host_ptr_mut().expect("an exclusive window has a writable pointer").addr();
            let end = p + usize::try_from(w.len()).unwrap();
            assert!(p >= base && end <= base + len, "argument {i}: window outside guest memory");
            assert_eq!(p - base, usize::try_from(w.guest_offset()).unwrap());
        }
        self.seen = Some(Seen {
            kernel_id: request.kernel_id,
            shape: request.shape,
            args: request.args.iter().collect(),
        });
        if self.fail {
            Err(HostError::msg(AbiError::LaunchFailed, "the fuzz launcher fails"))
        } else {
            Ok(OUTCOME)
        }
    }
}

static HOST: LazyLock<Mutex<LaunchHost<Checking>>> =
    LazyLock::new(|| Mutex::new(LaunchHost::new(Checking::new())));

/// The answer and the launch the documented order of checks gives.
fn expected(
    input: &Input,
    kernels: &KernelTable,
    call: &LaunchCall,
    memory: Option<&[u8]>,
) -> Result<Seen, i32> {
    if !input.enabled {
        return Err(AbiError::NotAvailable.code());
    }
    let memory = memory.ok_or(AbiError::InvalidPointer.code())?;
    let memory_len = memory.len() as u64;
    let region = check_args_region(call.args_ptr, call.args_len, memory_len)
        .map_err(|_| AbiError::InvalidPointer.code())?;
    let shape = check_launch_shape(call.grid, call.block, call.shared_mem, &LaunchLimits::DEFAULT)
        .map_err(|_| AbiError::InvalidDimensions.code())?;
    // The threads quota, at its default: the whole launch's threads, in exact arithmetic.
    let threads: u128 = shape.grid.iter().chain(&shape.block).map(|&d| u128::from(d)).product();
    if threads > u128::from(kernel_args::limits::DEFAULT_MAX_THREADS_PER_LAUNCH) {
        return Err(AbiError::QuotaExceeded.code());
    }
    if region.len() > MAX_KERNEL_ARGS_BYTES {
        return Err(AbiError::KernelArgsUnsupported.code());
    }
    let argv = &memory[region.range()];
    let args: ParsedArgv =
        parse_argv(argv, &GuestMemory::length_only(memory_len)).map_err(|e| e.code().code())?;
    let args: Vec<LoweredArgSnapshot> = args.iter().map(LoweredArgSnapshot::from).collect();
    match kernels.get(call.kernel_id).map(|r| r.declaration()) {
        None => return Err(AbiError::InvalidKernel.code()),
        Some(None) if !input.trusted => return Err(AbiError::InvalidKernel.code()),
        Some(None) => {}
        Some(Some(declaration)) => {
            declaration
                .check(&LaunchArgs::from_slice(&args).expect("at most 128"), &shape)
                .map_err(|_| AbiError::InvalidArgs.code())?;
        }
    }
    Ok(Seen { kernel_id: call.kernel_id, shape, args })
}

fuzz_target!(|input: Input| {
    let mut memory = input.memory.clone();
    memory.truncate(1 << 16);
    let (args_ptr, args_len) = match &input.region {
        Region::Raw { args_ptr, args_len } => (*args_ptr, *args_len),
        Region::Inside { start, len } => {
            let start = usize::from(*start) % (memory.len() + 1);
            let len = usize::from(*len) % (memory.len() - start + 1);
            (start as i32, len as i32)
        }
        Region::Encoded { at, args } => {
            let at = usize::from(*at) % (memory.len() + 1);
            let fold = |v: u32| v % (memory.len() as u32 + 2);
            let args: Vec<LoweredArgSnapshot> = args
                .iter()
                .map(|a| match *a {
                    FuzzArg::Ptr { guest_offset, len } => {
                        FuzzArg::Ptr { guest_offset: fold(guest_offset), len: fold(len) }.snapshot()
                    }
                    a => a.snapshot(),
                })
                .collect();
            let mut argv = [0u8; MAX_KERNEL_ARGS_BYTES];
            let Ok(n) = encode_argv(&args, &mut argv) else { return };
            if memory.len() < at + n {
                memory.resize(at + n, 0);
            }
            memory[at..at + n].copy_from_slice(&argv[..n]);
            (at as i32, n as i32)
        }
    };
    let (grid, block, shared_mem) = match input.shape {
        Shape::Raw { grid, block, shared_mem } => (grid, block, shared_mem),
        Shape::Small { grid, block, shared_mem } => {
            (grid.map(|d| i32::from(d) + 1), block.map(|d| i32::from(d % 16) + 1), i32::from(shared_mem))
        }
    };
    let kernel_id = match input.kernel {
        Kernel::Any(id) => id,
        Kernel::Undeclared => UNDECLARED,
        Kernel::Declared(i) => FIRST_DECLARED + i64::from(i) % DECLARED.len() as i64,
    };
    let call = LaunchCall { kernel_id, grid, block, shared_mem, args_ptr, args_len };

    let mut host = HOST.lock().unwrap();
    let want =
        expected(&input, &host.launcher().kernels, &call, input.has_memory.then_some(memory.as_slice()));
    host.set_enabled(input.enabled);
    host.set_trust(if input.trusted { GuestTrust::Trusted } else { GuestTrust::Untrusted });
    let launcher = host.launcher_mut();
    launcher.memory = (memory.as_ptr().addr(), memory.len());
    launcher.fail = input.launcher_fails;
    launcher.seen = None;
    let code = host.call(input.has_memory.then_some(memory.as_mut_slice()), &call);

    assert!(code == 0 || AbiError::ALL.iter().any(|e| e.code() == code), "{code} is not an ABI code");
    let seen = host.launcher_mut().seen.take();
    match want {
        Ok(expected_launch) => {
            assert_eq!(seen.as_ref(), Some(&expected_launch), "the launcher saw something else");
            let want_code = if input.launcher_fails { AbiError::LaunchFailed.code() } else { 0 };
            assert_eq!(code, want_code);
            let record = host.last_launch().expect("a dispatched call is recorded");
            assert_eq!(*record.snapshot().args(), expected_launch.args.as_slice());
        }
        Err(want_code) => {
            assert_eq!(code, want_code, "{:?}", host.last_error_message());
            assert_eq!(seen, None, "a refused call reached the launcher");
            assert!(host.last_launch().is_none(), "a refused call left a launch recorded");
        }
    }
    assert_eq!(host.last_error().is_none(), code == 0);
    if let Some(e) = host.last_error() {
        assert_eq!(e.code().code(), code);
        assert!(!e.to_string().is_empty());
    }
});
