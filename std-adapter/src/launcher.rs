//! The seam between the host function and whatever runs the kernel.
//!
//! The host function checks the argument region and the launch shape, checks the whole argv
//! (every rule of the wire format, every pointer window) while it records the launch, and then
//! hands a [`LaunchRequest`] to a [`Launcher`]: the dry-run launcher in this crate, or the CUDA
//! backend (`kernel-args-cuda`).
//!
//! A request carries the argv bytes and the guest memory, not a parsed list: each launcher
//! parses them into what it needs with [`LaunchRequest::parse_into`], in one pass (the CUDA
//! launcher straight into its parameter slots, a recorder into snapshots, anything else into
//! a [`ParsedArgv`]). Pointer windows borrow guest memory exclusively for the duration of the
//! call, so a launcher may let the device read and write guest memory but cannot keep a
//! pointer past the call.

use kernel_args_core::{
    ArgSink, GuestMemory, LoweredArg, LoweredArgSnapshot, ParsedArgv, SinkFull, parse_argv_into,
};

use crate::checks::LaunchShape;
use crate::error::HostError;
use crate::limits::MAX_KERNEL_ARGS;

/// One launch, ready for a [`Launcher`].
///
/// From the host function, `argv` has passed every rule of the wire format against `memory`
/// (the host parsed it to record the launch before dispatching), so parsing it again cannot
/// fail; a launcher still propagates [`parse_into`](Self::parse_into)'s error, because a
/// request made by hand may hold anything.
///
/// ```
/// use kernel_args::{LaunchRequest, LaunchShape};
/// use kernel_args_core::{ArgvBuilder, GuestMemory, LoweredArg, ParsedArgv};
///
/// let mut buf = [0u8; 16];
/// let mut argv = ArgvBuilder::new(&mut buf);
/// argv.ptr(0, 64)?.u32(16)?;
/// let argv = argv.finish();
/// let mut memory = vec![0u8; 64];
/// let guest = GuestMemory::exclusive(&mut memory);
/// let shape = LaunchShape { grid: [1, 1, 1], block: [16, 1, 1], shared_mem_bytes: 0 };
/// let request = LaunchRequest::new(1, shape, argv, &guest);
///
/// let mut args: ParsedArgv = ParsedArgv::new();
/// request.parse_into(&mut args).expect("a valid argv");
/// assert_eq!(args[1], LoweredArg::U32(16));
/// # Ok::<(), kernel_args_core::EncodeError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LaunchRequest<'a, 'm> {
    /// The guest's kernel handle.
    pub kernel_id: i64,
    /// The checked launch shape.
    pub shape: LaunchShape,
    /// The argv bytes (a copy of the guest's, so they cannot change during the call).
    pub argv: &'a [u8],
    /// Guest memory, which the argv's pointer windows are checked against and point into;
    /// borrowed exclusively for `'m` by the host function.
    pub memory: &'a GuestMemory<'m>,
    /// Set only by the host function, when its one pass over `argv` also filled the launcher's
    /// [`Launcher::parse_recorded`] in this call.
    in_sink: bool,
}

impl<'a, 'm> LaunchRequest<'a, 'm> {
    /// A request for `kernel_id` with `shape`, whose arguments are `argv` over `memory`.
    pub fn new(kernel_id: i64, shape: LaunchShape, argv: &'a [u8], memory: &'a GuestMemory<'m>) -> Self {
        LaunchRequest { kernel_id, shape, argv, memory, in_sink: false }
    }

    /// The same request, with its arguments already in the launcher's sink (the host
    /// function's one pass).
    pub(crate) fn parsed_into_sink(self) -> Self {
        LaunchRequest { in_sink: true, ..self }
    }

    /// Whether the host function's one pass ([`Launcher::parse_recorded`]) put this request's
    /// arguments into the launcher's own sink in this call, successfully: the sink then holds
    /// exactly these arguments, checked, and need not be filled again. Only the host function
    /// can make such a request.
    pub fn in_sink(&self) -> bool {
        self.in_sink
    }

    /// Parses the arguments into `record` (the host's pointer-free record of this launch) and
    /// into `sink` together, in one pass; both are cleared first, and left empty on error.
    /// This is what a launcher's [`Launcher::parse_recorded`] calls with its own sink.
    ///
    /// # Errors
    ///
    /// As [`parse_into`](Self::parse_into).
    #[inline]
    pub fn parse_recorded<S: ArgSink<'m> + ?Sized>(
        &self,
        record: &mut LaunchSnapshot,
        sink: &mut S,
    ) -> Result<(), HostError> {
        record.kernel_id = self.kernel_id;
        record.shape = self.shape;
        self.parse_into(&mut Both { record: &mut record.args, sink })
    }

    /// Parses the arguments into `out` (any [`ArgSink`]: a [`ParsedArgv`], snapshots, a
    /// launcher's own parameter storage), in one pass; `out` is cleared first, and left empty
    /// on error.
    ///
    /// # Errors
    ///
    /// The core parser's error (`InvalidArgs`, `InvalidPointer` or `KernelArgsUnsupported`,
    /// with the record and byte): never for a request from the host function, which checked the
    /// same bytes against the same memory.
    #[inline]
    pub fn parse_into<S: ArgSink<'m> + ?Sized>(&self, out: &mut S) -> Result<(), HostError> {
        parse_argv_into(self.argv, self.memory, out).map_err(HostError::from)
    }

    /// The arguments as a [`ParsedArgv`] of at most `N`, by value (see
    /// [`parse_into`](Self::parse_into)).
    ///
    /// # Errors
    ///
    /// As [`parse_into`](Self::parse_into).
    pub fn args<const N: usize>(&self) -> Result<ParsedArgv<'m, N>, HostError> {
        let mut args = ParsedArgv::new();
        self.parse_into(&mut args)?;
        Ok(args)
    }
}

/// How pointer arguments reached the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PointerMode {
    /// The device was handed host pointers into guest memory (it can access pageable host
    /// memory).
    Direct,
    /// Each window was copied to device memory before the launch and back after it.
    Staged,
}

/// Whether the arguments were checked against the kernel's parameter list, and against what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SignatureCheck {
    /// Checked against the parameter list parsed from the module's PTX.
    Ptx,
    /// Checked against the driver's `cuFuncGetParamInfo`.
    Driver,
    /// No signature was known, so no check was made.
    Skipped,
}

/// What a successful launch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchOutcome {
    /// How pointer arguments were handed to the device.
    pub pointer_mode: PointerMode,
    /// Which signature check was made.
    pub signature: SignatureCheck,
}

/// Runs a checked launch request. Implemented by the dry-run launcher and the CUDA backend.
pub trait Launcher {
    /// The host function's one pass over a call's argv, before dispatch. A launcher that
    /// launches from its own parameter slots parses `request` into them and into `record`
    /// (the host's pointer-free record of the launch) together, with
    /// [`LaunchRequest::parse_recorded`], and returns that result; the host then refuses the
    /// call on an error, and otherwise hands the launcher the request with
    /// [`in_sink`](LaunchRequest::in_sink) set, so the argv is parsed once per call. `None`
    /// (the default): the host parses into its record alone, and the launcher parses the
    /// request itself at the launch. Nothing may be launched here.
    fn parse_recorded(
        &mut self,
        request: &LaunchRequest<'_, '_>,
        record: &mut LaunchSnapshot,
    ) -> Option<Result<(), HostError>> {
        let _ = (request, record);
        None
    }

    /// Launches the kernel and waits for it; an `Err` carries the ABI code the guest will see.
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError>;
}

impl<L: Launcher + ?Sized> Launcher for &mut L {
    fn parse_recorded(
        &mut self,
        request: &LaunchRequest<'_, '_>,
        record: &mut LaunchSnapshot,
    ) -> Option<Result<(), HostError>> {
        (**self).parse_recorded(request, record)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        (**self).launch(request)
    }
}

#[cfg(feature = "std")]
impl<L: Launcher + ?Sized> Launcher for Box<L> {
    fn parse_recorded(
        &mut self,
        request: &LaunchRequest<'_, '_>,
        record: &mut LaunchSnapshot,
    ) -> Option<Result<(), HostError>> {
        (**self).parse_recorded(request, record)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        (**self).launch(request)
    }
}

/// The pointer-free copy of a [`LaunchRequest`]: kernel id, shape and argument snapshots
/// (pointer arguments as guest offset and length). `Send + Sync`; holds its arguments inline,
/// so taking one never allocates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchSnapshot {
    kernel_id: i64,
    shape: LaunchShape,
    args: heapless::Vec<LoweredArgSnapshot, MAX_KERNEL_ARGS>,
}

impl LaunchSnapshot {
    /// Snapshots `request`, parsing its argv straight into snapshots (one pass, no heap). This
    /// is also how the host function checks an argv before dispatch.
    ///
    /// # Errors
    ///
    /// The core parser's error for an argv it refuses (see
    /// [`LaunchRequest::parse_into`]).
    pub fn capture(request: &LaunchRequest<'_, '_>) -> Result<LaunchSnapshot, HostError> {
        let mut snapshot = LaunchSnapshot::EMPTY;
        snapshot.recapture(request)?;
        Ok(snapshot)
    }

    /// No launch: kernel 0, an all-zero shape, no arguments.
    pub(crate) const EMPTY: LaunchSnapshot = LaunchSnapshot {
        kernel_id: 0,
        shape: LaunchShape { grid: [0; 3], block: [0; 3], shared_mem_bytes: 0 },
        args: heapless::Vec::new(),
    };

    /// [`capture`](Self::capture), in place. On error the snapshot holds no arguments.
    pub(crate) fn recapture(&mut self, request: &LaunchRequest<'_, '_>) -> Result<(), HostError> {
        self.kernel_id = request.kernel_id;
        self.shape = request.shape;
        request.parse_into(&mut self.args)
    }

    /// The guest's kernel handle.
    pub fn kernel_id(&self) -> i64 {
        self.kernel_id
    }

    /// The checked launch shape.
    pub fn shape(&self) -> LaunchShape {
        self.shape
    }

    /// The arguments, pointer-free, in argv order.
    pub fn args(&self) -> &[LoweredArgSnapshot] {
        &self.args
    }
}

/// One pass: each argument into the launch's record and into the launcher's sink.
struct Both<'s, S: ?Sized> {
    record: &'s mut heapless::Vec<LoweredArgSnapshot, MAX_KERNEL_ARGS>,
    sink: &'s mut S,
}

impl<'m, S: ArgSink<'m> + ?Sized> ArgSink<'m> for Both<'_, S> {
    #[inline]
    fn capacity(&self) -> usize {
        self.sink.capacity().min(MAX_KERNEL_ARGS)
    }

    #[inline]
    fn clear(&mut self) {
        self.record.clear();
        self.sink.clear();
    }

    #[inline(always)]
    fn push(&mut self, arg: LoweredArg<'m>) -> Result<(), SinkFull> {
        self.record.push(LoweredArgSnapshot::from(&arg)).map_err(|_| SinkFull)?;
        self.sink.push(arg)
    }
}
