//! The runtime-independent way to run a guest with the demo interface: [`Runtime`], the
//! [`Guest`] trait and [`GuestError`]. Nothing here names a runtime's API: the bindings
//! (`bindings.rs`) implement the trait, and `module.rs` compiles and instantiates.

use std::fmt;

#[cfg(doc)]
use kernel_args::Launcher;
use kernel_args::guest::exports;
use kernel_args::{LaunchCall, LaunchHost};

/// A wasm runtime the runner runs a guest on, through the same `wasi_cuda_launch` host function
/// ([`LaunchHost::call`] behind both of kernel-args' bindings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// wasmtime, compiling with Cranelift (in a build with the `wasmtime` feature; without it, a
    /// module for wasmtime is a [`GuestError`] that names the feature).
    Wasmtime,
    /// wasmi, an interpreter (the runtime of firmware-style hosts).
    Wasmi,
}

impl Runtime {
    /// Every runtime this build has: wasmi, and wasmtime with the `wasmtime` feature.
    #[cfg(feature = "wasmtime")]
    pub const ALL: &'static [Runtime] = &[Runtime::Wasmtime, Runtime::Wasmi];
    /// Every runtime this build has: wasmi, and wasmtime with the `wasmtime` feature.
    #[cfg(not(feature = "wasmtime"))]
    pub const ALL: &'static [Runtime] = &[Runtime::Wasmi];

    /// `"wasmtime"` or `"wasmi"`.
    pub const fn name(self) -> &'static str {
        match self {
            Runtime::Wasmtime => "wasmtime",
            Runtime::Wasmi => "wasmi",
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A runtime's error while compiling, instantiating or calling a guest (a trap, a missing
/// export, an export of another signature), with the runtime it came from. The host function
/// itself never traps: a refused launch is an ABI code the guest gets, not a `GuestError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestError {
    runtime: Runtime,
    message: String,
}

impl GuestError {
    /// An error of `runtime`.
    pub fn new(runtime: Runtime, message: impl Into<String>) -> GuestError {
        GuestError { runtime, message: message.into() }
    }

    /// The runtime the error came from.
    pub fn runtime(&self) -> Runtime {
        self.runtime
    }

    /// What went wrong, in the runtime's words (with the export's name for a call).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for GuestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.runtime, self.message)
    }
}

impl std::error::Error for GuestError {}

/// A guest with the demo interface ([`exports`]: the bundled Rust guest, the C guest of
/// `capi/c/examples/vector_add.c`) instantiated on some [`Runtime`], its store's data a
/// [`LaunchHost`]: what `kargs-demo` and the end-to-end tests drive, the same way on every
/// runtime. Any [`Launcher`] plugs in.
///
/// Made by [`GuestModule::instantiate`](super::GuestModule::instantiate) (as a `Box<dyn Guest<L>>`), or directly as a
/// `WasmtimeGuest` or a `WasmiGuest`. The calls
/// take the interface's signatures; a trap, a missing export or another signature is a
/// [`GuestError`].
pub trait Guest<L> {
    /// The runtime the guest runs on.
    fn runtime(&self) -> Runtime;

    /// Calls the export `name` of signature `() -> i32`.
    ///
    /// # Errors
    ///
    /// The runtime's: a trap, no such export, another signature.
    fn call0(&mut self, name: &str) -> Result<i32, GuestError>;

    /// Calls the export `name` of signature `(i32) -> i32`.
    ///
    /// # Errors
    ///
    /// As [`call0`](Guest::call0).
    fn call1(&mut self, name: &str, arg: i32) -> Result<i32, GuestError>;

    /// Calls the export `name` of signature `(i32) -> f32`.
    ///
    /// # Errors
    ///
    /// As [`call0`](Guest::call0).
    fn call1_f32(&mut self, name: &str, arg: i32) -> Result<f32, GuestError>;

    /// Calls [`exports::LAUNCH_RAW`], which passes `call`'s values to `wasi_cuda_launch`
    /// unchanged, and returns what the host answered.
    ///
    /// # Errors
    ///
    /// As [`call0`](Guest::call0).
    fn launch_raw(&mut self, call: &LaunchCall) -> Result<i32, GuestError>;

    /// The guest's linear memory, as the host sees it (empty when it exports none).
    fn memory(&self) -> &[u8];

    /// The guest's linear memory, writable: a host that lays out a launch's data itself.
    fn memory_mut(&mut self) -> &mut [u8];

    /// The host state: the last launch, the last error, the launcher.
    fn host(&self) -> &LaunchHost<L>;

    /// The host state, writable (the limits, the capability, the launcher).
    fn host_mut(&mut self) -> &mut LaunchHost<L>;

    /// Fills `a` and `b` for `n` elements and launches vector_add; returns what the host
    /// answered the guest (`0`, an ABI code, or a guest code such as
    /// [`ERR_BAD_COUNT`](kernel_args::guest::ERR_BAD_COUNT)).
    ///
    /// # Errors
    ///
    /// As [`call0`](Guest::call0).
    fn run_vector_add(&mut self, n: i32) -> Result<i32, GuestError> {
        self.call1(exports::RUN_VECTOR_ADD, n)
    }

    /// The first index below `n` where `out != a + b`, or `None` when every element is
    /// right (after a real launch: the kernel ran correctly).
    ///
    /// # Errors
    ///
    /// As [`call0`](Guest::call0), and an `n` outside `0..=CAPACITY`.
    fn first_mismatch(&mut self, n: i32) -> Result<Option<u32>, GuestError> {
        match self.call1(exports::FIRST_MISMATCH, n)? {
            -1 => Ok(None),
            i => u32::try_from(i).map(Some).map_err(|_| {
                GuestError::new(
                    self.runtime(),
                    format!("first_mismatch({n}) answered {i}: n is out of range"),
                )
            }),
        }
    }

    /// `out[i]` (NaN out of range).
    ///
    /// # Errors
    ///
    /// As [`call0`](Guest::call0).
    fn out(&mut self, i: i32) -> Result<f32, GuestError> {
        self.call1_f32(exports::OUT_AT, i)
    }

    /// The guest's copy of the last argv it sent ([`exports::LAST_ARGV_PTR`],
    /// [`exports::LAST_ARGV_LEN`]), read from its memory.
    ///
    /// # Errors
    ///
    /// As [`call0`](Guest::call0), and a window that is not in the guest's memory.
    fn last_argv(&mut self) -> Result<Vec<u8>, GuestError> {
        let ptr = self.call0(exports::LAST_ARGV_PTR)?;
        let len = self.call0(exports::LAST_ARGV_LEN)?;
        let window = usize::try_from(ptr)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(ptr, len)| self.memory().get(ptr..ptr.checked_add(len)?));
        match window {
            Some(bytes) => Ok(bytes.to_vec()),
            None => Err(GuestError::new(
                self.runtime(),
                format!("the guest's last argv [{ptr}, +{len}) is not in its memory"),
            )),
        }
    }
}
