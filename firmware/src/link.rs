//! The link to an accelerator, and the launcher that forwards over it.
//!
//! A microcontroller has no GPU. What it can do with a checked launch is send it to one: the
//! pointer-free launch record (kernel id, shape, arguments with pointer windows as guest
//! offset and length) as a frame over a link, for the device at the other end to resolve the
//! windows against guest memory it is given separately. [`ForwardingLauncher`] is that
//! [`Launcher`]; the link here is the semihosting console (each frame printed as one hex
//! line, as a UART driver would send it), and [`decode`] is the receiving end, which the
//! firmware uses to check that what went over the link is the launch the host recorded.
//!
//! Nothing on this link runs kernels or answers, so the launcher answers the guest
//! `NotAvailable` once the frame is sent, like the dry run: the guest never sees a launch
//! that did not happen reported as a success.
//!
//! Frame (all little-endian): `kernel_id: i64 | grid: 3 × u32 | block: 3 × u32 |
//! shared_mem_bytes: u32 | argv_len: u32 | argv`, where `argv` is the arguments in the wire
//! format itself (`docs/wire-format.md`), so the receiver parses it with the same core parser.

use core::fmt::Write as _;

use cortex_m_semihosting::hio;
use heapless::Vec;
use kernel_args::{
    AbiError, HostError, KernelTable, LaunchOutcome, LaunchRequest, LaunchShape, LaunchSnapshot, Launcher,
    Registered,
};
use kernel_args_core::{
    ArgvBuilder, ArgvError, EncodeError, GuestMemory, LoweredArgSnapshot, MAX_KERNEL_ARGS,
    MAX_KERNEL_ARGS_BYTES, parse_argv_into,
};

/// Bytes before the argv in a frame.
pub const HEADER_LEN: usize = 8 + 12 + 12 + 4 + 4;

/// The largest frame: a header and the longest argv.
pub const MAX_FRAME_LEN: usize = HEADER_LEN + MAX_KERNEL_ARGS_BYTES;

/// One frame, built on the stack.
pub type Frame = Vec<u8, MAX_FRAME_LEN>;

/// Why a launch could not be put in a frame (never for a launch the host recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The arguments exceed what an argv can hold.
    Argv(EncodeError),
    /// The frame would be longer than [`MAX_FRAME_LEN`].
    TooLong,
}

/// Encodes `snapshot` as a frame.
///
/// # Errors
///
/// [`FrameError`].
pub fn encode(snapshot: &LaunchSnapshot) -> Result<Frame, FrameError> {
    let mut frame = Frame::new();
    let mut argv = [0u8; MAX_KERNEL_ARGS_BYTES];
    let mut builder = ArgvBuilder::new(&mut argv);
    for arg in snapshot.args().iter() {
        builder.push(&arg).map_err(FrameError::Argv)?;
    }
    let argv_len = builder.len();
    let shape = snapshot.shape();
    let header = snapshot
        .kernel_id()
        .to_le_bytes()
        .into_iter()
        .chain(shape.grid.iter().chain(&shape.block).flat_map(|d| d.to_le_bytes()))
        .chain(shape.shared_mem_bytes.to_le_bytes())
        .chain(u32::try_from(argv_len).unwrap_or(u32::MAX).to_le_bytes());
    for byte in header.chain(argv.iter().take(argv_len).copied()) {
        frame.push(byte).map_err(|_| FrameError::TooLong)?;
    }
    Ok(frame)
}

/// A launch as the far end of the link receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The guest's kernel handle.
    pub kernel_id: i64,
    /// The launch shape.
    pub shape: LaunchShape,
    /// The arguments, pointer-free.
    pub args: Vec<LoweredArgSnapshot, MAX_KERNEL_ARGS>,
}

/// Why a frame was refused by the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The frame is shorter than its header says.
    Truncated,
    /// The argv in the frame is not a valid argv for a memory of the given length.
    Argv(ArgvError),
}

/// Decodes a frame, checking its argv (and every pointer window against a guest memory of
/// `memory_len` bytes) with the core parser, as the device would.
///
/// # Errors
///
/// [`DecodeError`].
pub fn decode(frame: &[u8], memory_len: u64) -> Result<Received, DecodeError> {
    let (header, argv) = frame.split_at_checked(HEADER_LEN).ok_or(DecodeError::Truncated)?;
    let word = |i: usize| -> u32 {
        let at = 8 + 4 * i;
        header.get(at..at + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes)
    };
    let kernel_id = header.get(..8).and_then(|b| b.try_into().ok()).map_or(0, i64::from_le_bytes);
    let shape = LaunchShape {
        grid: [word(0), word(1), word(2)],
        block: [word(3), word(4), word(5)],
        shared_mem_bytes: word(6),
    };
    let argv_len = usize::try_from(word(7)).map_err(|_| DecodeError::Truncated)?;
    let argv = argv.get(..argv_len).ok_or(DecodeError::Truncated)?;
    let mut args = Vec::new();
    parse_argv_into(argv, &GuestMemory::length_only(memory_len), &mut args).map_err(DecodeError::Argv)?;
    Ok(Received { kernel_id, shape, args })
}

/// Sends each launch's record over the link; remembers the last frame for the firmware's
/// checks. Its kernels are those of its [`KernelTable`]: the host checks each launch against
/// their declarations before forwarding it.
#[derive(Debug, Default)]
pub struct ForwardingLauncher {
    kernels: KernelTable<2>,
    last: Option<Frame>,
    sent: u32,
    quiet: bool,
}

impl ForwardingLauncher {
    /// A launcher that prints each frame on the link.
    pub fn new() -> ForwardingLauncher {
        ForwardingLauncher::default()
    }

    /// A launcher that builds each frame but does not print it (the measurements).
    pub fn quiet() -> ForwardingLauncher {
        ForwardingLauncher { quiet: true, ..ForwardingLauncher::default() }
    }

    /// Its kernels, to register them.
    pub fn kernels_mut(&mut self) -> &mut KernelTable<2> {
        &mut self.kernels
    }

    /// The last frame sent.
    pub fn last_frame(&self) -> Option<&[u8]> {
        self.last.as_deref()
    }

    /// Frames sent.
    pub fn sent(&self) -> u32 {
        self.sent
    }
}

impl Launcher for ForwardingLauncher {
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        self.kernels.get(kernel_id)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        self.last = None;
        let snapshot = request.snapshot();
        let frame = encode(&snapshot)
            .map_err(|_| HostError::fixed(AbiError::Internal, "launch record does not fit a frame"))?;
        if !self.quiet {
            send(&frame);
        }
        self.sent = self.sent.saturating_add(1);
        self.last = Some(frame);
        Err(HostError::fixed(
            AbiError::NotAvailable,
            "forwarded over the link; nothing on this link runs kernels",
        ))
    }
}

/// The link: one line `link: <hex>` on the semihosting console.
fn send(frame: &[u8]) {
    let Ok(mut out) = hio::hstdout() else { return };
    let mut line: heapless::String<{ 2 * MAX_FRAME_LEN + 8 }> = heapless::String::new();
    let _ = line.push_str("link: ");
    for byte in frame {
        let _ = write!(line, "{byte:02x}");
    }
    let _ = line.push('\n');
    let _ = out.write_all(line.as_bytes());
}
