//! The host side of one `wasi_cuda_launch` call, independent of any wasm runtime: [`LaunchHost`]
//! (its docs say what a call does), the names a guest links against, [`LaunchCall`].

#[cfg(feature = "std")]
use std::panic::{AssertUnwindSafe, catch_unwind};

use kernel_args_core::{GuestMemory, check_argv_len, parse_argv_into};

use crate::checks::{LaunchLimits, check_args_region, check_launch_shape};
#[cfg(doc)]
use crate::declaration::Declaration;
use crate::error::{AbiError, Detail, HostError};
use crate::launcher::{GuestTrust, LaunchOutcome, LaunchRequest, LaunchSnapshot, Launcher, check_registered};
#[cfg(feature = "std")]
use crate::quota::InFlight;
use crate::quota::check_threads_per_launch;

/// The import module the host function is registered under.
pub const IMPORT_MODULE: &str = "wasi:cuda/host@0.2.0";

/// The host function's import name.
pub const LAUNCH_IMPORT: &str = "wasi_cuda_launch";

/// The export the host resolves guest pointers against.
pub const MEMORY_EXPORT: &str = "memory";

/// The import's parameters in wasm types, in order: `kernel_id`, `grid_x`, `grid_y`, `grid_z`,
/// `block_x`, `block_y`, `block_z`, `shared_mem`, `args_ptr`, `args_len`; the import returns an
/// `i32`. The one place this signature is written: the bindings' host functions are made by
/// the one `host_function!` macro from it, and a host that calls a guest's export of
/// the same signature uses it as the typed function's parameters.
pub type LaunchParams = (i64, i32, i32, i32, i32, i32, i32, i32, i32, i32);

/// The parameters of one `wasi_cuda_launch` call, exactly as the guest passed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchCall {
    /// The guest's kernel handle.
    pub kernel_id: i64,
    /// Blocks in x, y, z.
    pub grid: [i32; 3],
    /// Threads per block in x, y, z.
    pub block: [i32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: i32,
    /// Offset of the argv buffer in guest memory.
    pub args_ptr: i32,
    /// Length of the argv buffer in bytes (0: no arguments).
    pub args_len: i32,
}

impl LaunchCall {
    /// A call with no shared memory and no arguments (`args_ptr` and `args_len` 0).
    pub const fn new(kernel_id: i64, grid: [i32; 3], block: [i32; 3]) -> LaunchCall {
        LaunchCall { kernel_id, grid, block, shared_mem: 0, args_ptr: 0, args_len: 0 }
    }

    /// The call whose import parameters are `params`.
    pub const fn from_params(params: LaunchParams) -> LaunchCall {
        let (kernel_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, args_ptr, args_len) =
            params;
        LaunchCall {
            kernel_id,
            grid: [grid_x, grid_y, grid_z],
            block: [block_x, block_y, block_z],
            shared_mem,
            args_ptr,
            args_len,
        }
    }

    /// The import parameters of this call.
    pub const fn params(&self) -> LaunchParams {
        let LaunchCall { kernel_id, grid: [gx, gy, gz], block: [bx, by, bz], shared_mem, args_ptr, args_len } =
            *self;
        (kernel_id, gx, gy, gz, bx, by, bz, shared_mem, args_ptr, args_len)
    }
}

/// The `wasi_cuda_launch` host function for a runtime whose API has the shape wasmtime's and
/// wasmi's share (`Caller`, `Extern::Memory`, `Memory::data_and_store_mut`): the closure both
/// bindings register, written once. `$runtime` is the runtime's crate, `$get` finds the
/// [`LaunchHost`] in the store's data. A module without a linear memory named [`MEMORY_EXPORT`]
/// (or with a shared one, which other threads could write while the host reads it) gets
/// `InvalidPointer`; the function never traps.
#[cfg(any(feature = "wasmtime", feature = "wasmi"))]
macro_rules! host_function {
    ($runtime:ident, $get:expr) => {
        move |mut caller: $runtime::Caller<'_, _>,
              kernel_id: i64,
              grid_x: i32,
              grid_y: i32,
              grid_z: i32,
              block_x: i32,
              block_y: i32,
              block_z: i32,
              shared_mem: i32,
              args_ptr: i32,
              args_len: i32|
              -> i32 {
            let call = $crate::LaunchCall::from_params((
                kernel_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, args_ptr, args_len,
            ));
            match caller.get_export($crate::MEMORY_EXPORT) {
                Some($runtime::Extern::Memory(memory)) => {
                    let (data, state) = memory.data_and_store_mut(&mut caller);
                    $get(state).call(Some(data), &call)
                }
                _ => $get(caller.data_mut()).call(None, &call),
            }
        }
    };
}
#[cfg(any(feature = "wasmtime", feature = "wasmi"))]
pub(crate) use host_function;

/// What the last call that reached the launcher handed it, and what it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaunchRecord {
    snapshot: LaunchSnapshot,
    result: Result<LaunchOutcome, AbiError>,
}

impl LaunchRecord {
    /// The launch, pointer-free: kernel id, shape, argument snapshots.
    pub fn snapshot(&self) -> &LaunchSnapshot {
        &self.snapshot
    }

    /// The launcher's answer: its outcome, or the code the guest was given.
    pub fn result(&self) -> Result<LaunchOutcome, AbiError> {
        self.result
    }
}

/// Per-guest host state for `wasi_cuda_launch`: capability, limits, launcher, last call.
///
/// [`call`](LaunchHost::call) runs the whole host call over the guest's linear memory, in the
/// steps its documentation lists (the capability, the memory, the argument region, the shape
/// and the threads quota, the byte cap, the parse, the kernel, its declaration, the launches in
/// flight and the launcher). The first that fails is the guest's answer, and nothing of the call
/// is recorded.
///
/// Nothing is allocated on the heap, with or without std: the record of the launch is stored
/// inline and parsed into in place. Bad guest input only ever produces an ABI code, never a
/// panic. With the `std` feature a panicking launcher is caught and answered with `Internal`;
/// without it a launcher's panic is the embedder's panic handler's to handle (a firmware built
/// with `panic = "abort"` cannot unwind).
///
/// `L` is any [`Launcher`]: [`DryRunLauncher`](crate::DryRunLauncher), the CUDA backend, or
/// `Box<dyn Launcher>` to choose at run time.
///
/// ```
/// use kernel_args::{AbiError, Declaration, DryRunLauncher, LaunchCall, LaunchHost};
/// use kernel_args_core::{ArgvBuilder, LoweredArgSnapshot, GuestRange};
///
/// // A guest memory with an argv at offset 0: one pointer window and an element count.
/// let mut memory = vec![0u8; 4096];
/// let len = {
///     let mut argv = ArgvBuilder::new(&mut memory[..64]);
///     argv.ptr(1024, 256)?.u32(64)?;
///     argv.len()
/// };
/// let mut dry_run = DryRunLauncher::new();
/// dry_run.kernels_mut().declare(1, Declaration::parse("scale(data: &mut [f32; n], n: u32)")?)?;
/// let mut host = LaunchHost::new(dry_run);
/// let call = LaunchCall { args_len: len as i32, ..LaunchCall::new(1, [1, 1, 1], [64, 1, 1]) };
/// assert_eq!(host.call(Some(&mut memory), &call), AbiError::NotAvailable.code());
///
/// let launch = host.last_launch().expect("the call reached the launcher");
/// assert_eq!(
///     launch.snapshot().args(),
///     &[LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 1024, len: 256 }), LoweredArgSnapshot::U32(64)]
/// );
/// assert_eq!(
///     host.last_error().map(|e| e.to_string()).as_deref(),
///     Some("NotAvailable -1: no CUDA device: dry run, the launch was recorded but not run")
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LaunchHost<L> {
    launcher: L,
    enabled: bool,
    trust: GuestTrust,
    limits: LaunchLimits,
    /// The shared counts of launches in flight this host takes a place in: the guest's, the
    /// device's.
    #[cfg(feature = "std")]
    in_flight: [Option<std::sync::Arc<InFlight>>; 2],
    /// The last launch handed to the launcher, valid while `recorded`; kept in place (and
    /// parsed into in place) so that recording a launch copies nothing.
    record: LaunchRecord,
    recorded: bool,
    last_error: Option<HostError>,
}

impl<L: Launcher> LaunchHost<L> {
    /// An enabled host with the default [`LaunchLimits`]. What is fixed for the host's life is
    /// given by a builder ([`with_limits`](LaunchHost::with_limits),
    /// `with_in_flight`); what an embedder may change between calls by a setter
    /// ([`set_trust`](LaunchHost::set_trust), [`set_enabled`](LaunchHost::set_enabled)): one
    /// way for each.
    pub fn new(launcher: L) -> LaunchHost<L> {
        LaunchHost {
            launcher,
            enabled: true,
            trust: GuestTrust::Untrusted,
            limits: LaunchLimits::DEFAULT,
            #[cfg(feature = "std")]
            in_flight: [None, None],
            record: LaunchRecord { snapshot: LaunchSnapshot::EMPTY, result: Err(AbiError::Internal) },
            recorded: false,
            last_error: None,
        }
    }

    /// Sets the launch limits.
    #[must_use]
    pub fn with_limits(mut self, limits: LaunchLimits) -> LaunchHost<L> {
        self.limits = limits;
        self
    }

    /// Takes a place in `count` for each launch (feature `std`): the guest's count
    /// ([`InFlight::per_guest`], shared by every host of the guest) or the device's
    /// ([`InFlight::per_device`], shared by every host on the device); one of each may be
    /// given, and a second of the same kind replaces the first. Just before its launcher runs,
    /// the host takes a place in each; when one is full the launch is refused with
    /// [`QuotaExceeded`](AbiError::QuotaExceeded) ([`Detail::Quota`]), and the places are
    /// given back when the launcher returns (or panics).
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    #[must_use]
    pub fn with_in_flight(mut self, count: std::sync::Arc<InFlight>) -> LaunchHost<L> {
        let slot = usize::from(count.quota() == crate::Quota::InFlightPerDevice);
        if let Some(place) = self.in_flight.get_mut(slot) {
            *place = Some(count);
        }
        self
    }

    /// How far the host trusts its guest.
    pub fn trust(&self) -> GuestTrust {
        self.trust
    }

    /// Sets how far the host trusts its guest with undeclared kernels, from the next call on
    /// (the default: [`GuestTrust::Untrusted`]). See [`GuestTrust::Trusted`] before choosing it.
    pub fn set_trust(&mut self, trust: GuestTrust) {
        self.trust = trust;
    }

    /// Grants (`true`, the default) or withholds (`false`) the capability, from the next call
    /// on; a host without it answers every call with `NotAvailable` and records nothing.
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
    }

    /// Whether the capability is granted.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The launch limits in force.
    pub fn limits(&self) -> &LaunchLimits {
        &self.limits
    }

    /// The launcher.
    pub fn launcher(&self) -> &L {
        &self.launcher
    }

    /// The launcher, mutably.
    pub fn launcher_mut(&mut self) -> &mut L {
        &mut self.launcher
    }

    /// What the last call handed the launcher; `None` when the last call was refused before
    /// dispatch (or no call was made), so a failed call never leaves an older launch's
    /// arguments behind.
    pub fn last_launch(&self) -> Option<&LaunchRecord> {
        self.recorded.then_some(&self.record)
    }

    /// The last call's error; `None` when it succeeded (or no call was made).
    pub fn last_error(&self) -> Option<&HostError> {
        self.last_error.as_ref()
    }

    /// The last call's error as a message (`"InvalidDimensions -8: block.x is 2048, ..."`;
    /// feature `std`). Without std, [`last_error`](Self::last_error) is `Display`: write it
    /// with `core::fmt` wherever the host logs.
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    pub fn last_error_message(&self) -> Option<String> {
        self.last_error.as_ref().map(HostError::to_string)
    }

    /// Runs one `wasi_cuda_launch` call against the guest's linear memory (`None` when the
    /// guest has none) and returns what the guest sees: `0` or a negative [`AbiError`] code.
    ///
    /// This is the one place the host call's steps are written; every host runs them, in this
    /// order, here (the wasmtime and wasmi bindings, the no_std firmware, the C API's
    /// `kargs_host_call`). The first step that fails decides the guest's ABI code, and nothing
    /// of the call is recorded.
    ///
    /// 1. The guest encodes its arguments (`ArgvBuilder`, `include/kargs_guest.h`, or any
    ///    encoder that follows `docs/wire-format.md`) and calls `wasi_cuda_launch(kernel_id,
    ///    grid…, block…, shared_mem, args_ptr, args_len)`.
    /// 2. **Capability**: a guest without it gets `NotAvailable` (-1), whatever else is wrong.
    /// 3. **Memory**: a guest that exports no linear memory gets `InvalidPointer` (-2).
    /// 4. **Region**: `[args_ptr, args_ptr + args_len)` lies in linear memory
    ///    ([`check_args_region`], `InvalidPointer`), decided before any argv byte is read.
    /// 5. **Shape**: grid, block, threads per block and shared memory within the limits every
    ///    device accepts ([`check_launch_shape`], `InvalidDimensions`); then the threads of the
    ///    whole launch (`grid × block`) within the host's quota
    ///    ([`check_threads_per_launch`](crate::check_threads_per_launch), `QuotaExceeded`, -6).
    /// 6. **Byte cap**: at most 4096 argv bytes (`check_argv_len`, `KernelArgsUnsupported`).
    /// 7. **Parse**: the core parser (`parse_argv_into`, one loop) reads the argv in place,
    ///    under the call's exclusive borrow of linear memory, into the call's
    ///    [`LaunchArgs`](crate::LaunchArgs) (each argument's tag byte and value bits, a window
    ///    as guest offset and length), checking every record and every window against the
    ///    memory's length (`docs/wire-format.md` gives the rules and their precedence).
    /// 8. **Kernel**: [`Launcher::registered`]: unknown is `InvalidKernel` (-3); registered
    ///    without a declaration is `InvalidKernel` too, unless the host trusts its guest
    ///    ([`GuestTrust::Trusted`]).
    /// 9. **Declaration**: [`Declaration::check`] (`docs/declarations.md`): the count, each
    ///    type, each window's alignment and length against what the kernel touches
    ///    (`InvalidArgs`, -9, naming the record and the parameter).
    /// 10. **Launch**: a host given shared counts of launches in flight
    ///     ([`InFlight`](crate::InFlight), the guest's and the device's) takes a place in each,
    ///     or answers `QuotaExceeded` when one is full, and gives it back when the launcher
    ///     returns. The [`Launcher`] receives a [`LaunchRequest`], which only this call (or the
    ///     checking constructor [`LaunchRequest::check`], which runs steps 5, 8 and 9 itself)
    ///     can make: the kernel id, the registration step 8 found (the launcher launches that
    ///     one, even if the kernel has been registered again since), the shape, the checked
    ///     arguments, the host's [`LaunchLimits`](crate::LaunchLimits) (the staging quota a
    ///     launcher that copies windows holds itself to) and the guest memory, through which
    ///     [`LaunchRequest::window`] turns a window into its host slice or pointer (checked
    ///     again in one compare). Its answer is the guest's. (What the CUDA launcher does here:
    ///     ARCHITECTURE.md, "The CUDA launcher's step 10".)
    /// 11. **Record**: the host keeps the last launch pointer-free
    ///     ([`last_launch`](Self::last_launch): kernel id, shape, arguments) and the last error
    ///     ([`last_error`](Self::last_error): its ABI code and a typed [`Detail`](crate::Detail)).
    pub fn call(&mut self, memory: Option<&mut [u8]>, call: &LaunchCall) -> i32 {
        self.recorded = false;
        self.last_error = None;
        match self.run(memory, call) {
            Ok(_) => 0,
            Err(e) => {
                let code = e.code().code();
                self.last_error = Some(e);
                code
            }
        }
    }

    fn run(&mut self, memory: Option<&mut [u8]>, call: &LaunchCall) -> Result<LaunchOutcome, HostError> {
        if !self.enabled {
            return Err(HostError::new(Detail::CapabilityDisabled));
        }
        let Some(memory) = memory else {
            return Err(HostError::new(Detail::NoExportedMemory));
        };
        let memory_len = u64::try_from(memory.len()).unwrap_or(u64::MAX);
        let region = check_args_region(call.args_ptr, call.args_len, memory_len)?;
        let shape = check_launch_shape(call.grid, call.block, call.shared_mem, &self.limits)?;
        check_threads_per_launch(&shape, &self.limits)?;

        // The byte cap, on the region's length, before any argv byte is read.
        check_argv_len(region.len())?;
        let internal = || HostError::fixed(AbiError::Internal, "checked args region not in memory");
        // The one parse of the argv, in place in guest memory (the call holds the only borrow of
        // it, so its bytes cannot change under the parser), against the memory's length, into
        // the record: pointer-free snapshots, kept in place. A refused argv reaches no launcher
        // and leaves the record empty.
        self.record.result = Err(AbiError::Internal);
        self.record.snapshot.kernel_id = call.kernel_id;
        self.record.snapshot.shape = shape;
        let argv = memory.get(region.range()).ok_or_else(internal)?;
        // Every refusal of the parser comes first, then an unknown or undeclared kernel, then
        // the kernel's declaration.
        let length_only = GuestMemory::length_only(memory_len);
        parse_argv_into(argv, &length_only, &mut self.record.snapshot.args)?;
        // The kernel as registered now, and the argv against its declaration: the request
        // carries this registration, which is what the launcher launches.
        let registration = check_registered(
            &mut self.launcher,
            call.kernel_id,
            &self.record.snapshot.args,
            &shape,
            self.trust,
        )?;
        // The places in flight, last of the checks: held until the launcher returns, and given
        // back on every path (a refusal, a launcher's error, a caught panic) as they drop.
        #[cfg(feature = "std")]
        let mut places: [Option<crate::InFlightSlot<'_>>; 2] = [None, None];
        #[cfg(feature = "std")]
        for (place, count) in places.iter_mut().zip(&self.in_flight) {
            if let Some(count) = count {
                *place = Some(count.acquire()?);
            }
        }
        self.recorded = true;

        let guest = GuestMemory::exclusive(memory);
        let request = LaunchRequest::from_checked(
            call.kernel_id,
            shape,
            &self.record.snapshot.args,
            &guest,
            registration,
            self.limits,
        );
        let launcher = &mut self.launcher;
        #[cfg(feature = "std")]
        let result = catch_unwind(AssertUnwindSafe(|| launcher.launch(&request)))
            .unwrap_or_else(|_| Err(HostError::new(Detail::LauncherPanicked)));
        #[cfg(not(feature = "std"))]
        let result = launcher.launch(&request);
        self.record.result = result.as_ref().map(|outcome| *outcome).map_err(HostError::code);
        result
    }
}

#[cfg(test)]
mod tests {
    use kernel_args_core::{ArgvBuilder, ErrorKind, GuestRange, LoweredArgSnapshot, MAX_KERNEL_ARGS_BYTES};

    use super::*;
    use crate::checks::{Dimension, RegionError};
    use crate::declaration::{Declaration, MismatchKind};
    use crate::dry_run::DryRunLauncher;
    use crate::launcher::{KernelTable, Registered};

    const OUTCOME: LaunchOutcome = LaunchOutcome::NO_DEVICE;

    /// Kernel 3 is `k(data: &mut [f32; n], n: u32)`, what [`memory_with_argv`]'s argv fits;
    /// kernel 4 is registered without a declaration.
    fn kernels() -> KernelTable {
        let mut kernels = KernelTable::new();
        kernels.declare(3, Declaration::parse("k(data: &mut [f32; n], n: u32)").unwrap()).unwrap();
        kernels.register_undeclared(4).unwrap();
        kernels.declare(1, Declaration::parse("none()").unwrap()).unwrap();
        kernels
    }

    /// Succeeds, counting calls; or panics when told to.
    struct Counting {
        kernels: KernelTable,
        calls: usize,
        panic: bool,
    }

    impl Default for Counting {
        fn default() -> Counting {
            Counting { kernels: kernels(), calls: 0, panic: false }
        }
    }

    impl Launcher for Counting {
        fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
            self.kernels.get(kernel_id)
        }

        fn launch(&mut self, _: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
            self.calls += 1;
            assert!(!self.panic, "launcher told to panic");
            Ok(OUTCOME)
        }
    }

    /// A 4 KiB memory with an argv `[ptr(1024, 64), u32 16]` at offset 0; returns its length.
    fn memory_with_argv() -> (Vec<u8>, i32) {
        let mut memory = vec![0u8; 4096];
        let mut b = ArgvBuilder::new(&mut memory[..64]);
        b.ptr(1024, 64).unwrap().u32(16).unwrap();
        let len = b.len() as i32;
        (memory, len)
    }

    fn good_call(args_len: i32) -> LaunchCall {
        LaunchCall { args_len, ..LaunchCall::new(3, [1, 1, 1], [16, 1, 1]) }
    }

    #[test]
    fn success_records_the_launch_and_clears_the_error() {
        let (mut memory, len) = memory_with_argv();
        let mut host = LaunchHost::new(Counting::default());
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), 0);
        let record = host.last_launch().unwrap();
        assert_eq!(record.result(), Ok(OUTCOME));
        assert_eq!(record.snapshot().kernel_id(), 3);
        assert_eq!(
            record.snapshot().args(),
            &[
                LoweredArgSnapshot::Ptr(GuestRange { guest_offset: 1024, len: 64 }),
                LoweredArgSnapshot::U32(16)
            ]
        );
        assert!(host.last_error().is_none());
        assert_eq!(host.launcher().calls, 1);
    }

    #[test]
    fn zero_length_args_read_nothing() {
        // Even a memory full of invalid tags: nothing is read.
        let mut memory = vec![0xffu8; 64];
        let mut host = LaunchHost::new(Counting::default());
        assert_eq!(host.call(Some(&mut memory), &LaunchCall::new(1, [1, 1, 1], [1, 1, 1])), 0);
        assert!(host.last_launch().unwrap().snapshot().args().is_empty());
    }

    #[test]
    fn disabled_capability_records_nothing() {
        let (mut memory, len) = memory_with_argv();
        let mut host = LaunchHost::new(Counting::default());
        host.set_enabled(false);
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), AbiError::NotAvailable.code());
        assert!(host.last_launch().is_none());
        assert_eq!(host.launcher().calls, 0);
        assert_eq!(host.last_error().unwrap().detail(), &Detail::CapabilityDisabled);
        // The gate comes first: even a call that is wrong in every other way gets -1.
        let bad = LaunchCall { args_ptr: -1, ..LaunchCall::new(1, [0, 0, 0], [0, 0, 0]) };
        assert_eq!(host.call(None, &bad), -1);
        host.set_enabled(true);
        assert!(host.is_enabled());
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), 0);
    }

    #[test]
    fn no_memory_is_an_invalid_pointer() {
        let mut host = LaunchHost::new(Counting::default());
        assert_eq!(host.call(None, &LaunchCall::new(1, [1, 1, 1], [1, 1, 1])), -2);
        assert_eq!(host.last_error().unwrap().detail(), &Detail::NoExportedMemory);
    }

    #[test]
    fn region_is_checked_before_shape_and_parse() {
        let mut memory = vec![0xffu8; 64];
        let mut host = LaunchHost::new(Counting::default());
        // Bad region, bad shape, bad bytes: the region decides.
        let call = LaunchCall { args_ptr: 60, args_len: 8, ..LaunchCall::new(1, [0, 1, 1], [1, 1, 1]) };
        assert_eq!(host.call(Some(&mut memory), &call), -2);
        assert_eq!(
            host.last_error().unwrap().detail(),
            &Detail::Region(RegionError::PastMemory { args_ptr: 60, args_len: 8, memory_len: 64 })
        );
        // Good region, bad shape, bad bytes: the shape decides.
        let call = LaunchCall { args_ptr: 0, args_len: 8, ..call };
        assert_eq!(host.call(Some(&mut memory), &call), -8);
        let Detail::Shape(e) = host.last_error().unwrap().detail() else { panic!("shape detail") };
        assert_eq!((e.dimension, e.value), (Dimension::GridX, 0));
        // Then the parser.
        let call = LaunchCall { grid: [1, 1, 1], ..call };
        assert_eq!(host.call(Some(&mut memory), &call), -9);
        assert_eq!(host.launcher().calls, 0);
    }

    #[test]
    fn argv_longer_than_the_cap_is_unsupported() {
        let mut memory = vec![0u8; 8192];
        let mut host = LaunchHost::new(Counting::default());
        let call =
            LaunchCall { args_len: MAX_KERNEL_ARGS_BYTES as i32 + 1, ..LaunchCall::new(1, [1; 3], [1; 3]) };
        assert_eq!(host.call(Some(&mut memory), &call), -10);
        let Detail::Argv(e) = host.last_error().unwrap().detail() else { panic!("argv detail") };
        assert_eq!(e.kind(), ErrorKind::BufferTooLong { len: 4097, max: 4096 });
    }

    #[test]
    fn a_failed_call_leaves_no_stale_launch() {
        let (mut memory, len) = memory_with_argv();
        let mut host = LaunchHost::new(DryRunLauncher::with_kernels(kernels()));
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), -1);
        assert_eq!(host.last_launch().unwrap().snapshot().args().len(), 2);
        assert_eq!(host.last_launch().unwrap().result(), Err(AbiError::NotAvailable));

        // Same argv, but the window now points past memory: refused by the parser.
        memory[1..5].copy_from_slice(&4090u32.to_le_bytes());
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), -2);
        assert!(host.last_launch().is_none(), "the previous launch's args must not survive");
        let message = host.last_error().unwrap().to_string();
        assert!(message.starts_with("InvalidPointer -2: "), "{message}");
        // The dry run still shows the first launch (it is the launcher's own record), once.
        assert_eq!(host.launcher().launches(), 1);
    }

    #[test]
    #[cfg(feature = "std")]
    fn a_panicking_launcher_is_an_internal_error() {
        let (mut memory, len) = memory_with_argv();
        let mut host = LaunchHost::new(Counting { panic: true, ..Counting::default() });
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), AbiError::Internal.code());
        assert_eq!(host.last_error().unwrap().detail(), &Detail::LauncherPanicked);
        assert_eq!(host.last_launch().unwrap().result(), Err(AbiError::Internal));
    }

    #[test]
    #[cfg(feature = "std")]
    fn boxed_launchers_plug_in() {
        let (mut memory, len) = memory_with_argv();
        let launcher: Box<dyn Launcher> = Box::new(Counting::default());
        let mut host = LaunchHost::new(launcher)
            .with_limits(LaunchLimits { max_shared_mem_bytes: 0, ..LaunchLimits::DEFAULT });
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), 0);
        let call = LaunchCall { shared_mem: 1, ..good_call(len) };
        assert_eq!(host.call(Some(&mut memory), &call), -8);
        assert_eq!(host.limits().max_shared_mem_bytes, 0);
    }

    #[test]
    fn threads_per_launch_are_refused_past_the_quota_before_the_argv_is_read() {
        let (mut memory, len) = memory_with_argv();
        let limits = LaunchLimits { max_threads_per_launch: 64, ..LaunchLimits::DEFAULT };
        let mut host = LaunchHost::new(Counting::default()).with_limits(limits);
        // 4 blocks of 16: at the quota.
        assert_eq!(host.call(Some(&mut memory), &LaunchCall { grid: [4, 1, 1], ..good_call(len) }), 0);
        // 5 blocks of 16, over an argv that would not parse: the quota is judged first.
        memory[0] = 0xee;
        let call = LaunchCall { grid: [5, 1, 1], ..good_call(len) };
        assert_eq!(host.call(Some(&mut memory), &call), AbiError::QuotaExceeded.code());
        assert!(host.last_launch().is_none());
        assert_eq!(
            host.last_error().unwrap().detail(),
            &Detail::Quota(crate::QuotaError {
                quota: crate::Quota::ThreadsPerLaunch,
                requested: 80,
                limit: 64
            })
        );
        assert_eq!(host.launcher().calls, 1);
        // A shape out of range is still InvalidDimensions, whatever its thread count.
        let call = LaunchCall { block: [2048, 1, 1], ..good_call(len) };
        assert_eq!(host.call(Some(&mut memory), &call), AbiError::InvalidDimensions.code());
    }

    /// Holds each launch until told to let it go, saying when it has started.
    #[cfg(feature = "std")]
    struct Held {
        kernels: KernelTable,
        started: std::sync::mpsc::Sender<()>,
        release: std::sync::mpsc::Receiver<()>,
    }

    #[cfg(feature = "std")]
    impl Launcher for Held {
        fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
            self.kernels.get(kernel_id)
        }

        fn launch(&mut self, _: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
            self.started.send(()).unwrap();
            self.release.recv().unwrap();
            Ok(OUTCOME)
        }
    }

    /// Two hosts sharing a device's count of one: while the first host's launch runs, the
    /// second's is refused; once it has returned, the second's runs. The guest's count works
    /// the same way over the hosts of one guest.
    #[test]
    #[cfg(feature = "std")]
    fn launches_in_flight_are_refused_at_the_quota_and_accepted_below_it() {
        use std::sync::{Arc, mpsc};

        use crate::{InFlight, Quota, QuotaError};

        for count in [Arc::new(InFlight::per_device(1)), Arc::new(InFlight::per_guest(1))] {
            let (started_tx, started) = mpsc::channel();
            let (release, release_rx) = mpsc::channel();
            let held = Held { kernels: kernels(), started: started_tx, release: release_rx };
            let mut first = LaunchHost::new(held).with_in_flight(count.clone());
            let mut second = LaunchHost::new(Counting::default()).with_in_flight(count.clone());
            std::thread::scope(|s| {
                let running = s.spawn(move || {
                    let (mut memory, len) = memory_with_argv();
                    first.call(Some(&mut memory), &good_call(len))
                });
                started.recv().unwrap();
                assert_eq!(count.in_flight(), 1);
                let (mut memory, len) = memory_with_argv();
                assert_eq!(second.call(Some(&mut memory), &good_call(len)), AbiError::QuotaExceeded.code());
                assert_eq!(
                    second.last_error().unwrap().detail(),
                    &Detail::Quota(QuotaError { quota: count.quota(), requested: 2, limit: 1 })
                );
                assert!(second.last_launch().is_none(), "refused before dispatch");
                assert_eq!(second.launcher().calls, 0);
                release.send(()).unwrap();
                assert_eq!(running.join().unwrap(), 0);
                assert_eq!(count.in_flight(), 0);
                assert_eq!(second.call(Some(&mut memory), &good_call(len)), 0);
                assert_eq!(second.launcher().calls, 1);
            });
            assert!(matches!(count.quota(), Quota::InFlightPerDevice | Quota::InFlightPerGuest));
        }
    }

    /// A place is given back whatever the launch's end: an error before dispatch takes none,
    /// and a launcher's panic gives its place back.
    #[test]
    #[cfg(feature = "std")]
    fn a_place_in_flight_is_given_back_on_every_path() {
        use std::sync::Arc;

        let device = Arc::new(crate::InFlight::per_device(1));
        let guest = Arc::new(crate::InFlight::per_guest(1));
        let (mut memory, len) = memory_with_argv();
        let mut host = LaunchHost::new(Counting { panic: true, ..Counting::default() })
            .with_in_flight(device.clone())
            .with_in_flight(guest.clone());
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), AbiError::Internal.code());
        assert_eq!((device.in_flight(), guest.in_flight()), (0, 0));
        host.launcher_mut().panic = false;
        assert_eq!(host.call(Some(&mut memory), &LaunchCall { kernel_id: 77, ..good_call(len) }), -3);
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), 0);
        assert_eq!((device.in_flight(), guest.in_flight()), (0, 0));
        // The device's count full: the guest's place taken first is given back too.
        let _other = device.acquire().unwrap();
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), AbiError::QuotaExceeded.code());
        assert_eq!((device.in_flight(), guest.in_flight()), (1, 0));
    }

    #[test]
    fn the_declaration_is_checked_before_any_launcher_runs() {
        let (mut memory, len) = memory_with_argv();
        let mut host = LaunchHost::new(Counting::default());
        // n = 32 needs 128 bytes of the 64-byte window.
        memory[10..14].copy_from_slice(&32u32.to_le_bytes());
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), AbiError::InvalidArgs.code());
        let Detail::Declaration(m) = host.last_error().unwrap().detail() else {
            panic!("declaration detail")
        };
        assert_eq!((m.record, m.offset, m.param.as_str()), (0, 0, "data"));
        assert!(matches!(m.kind, MismatchKind::WindowTooShort { len: 64, bytes: 128, .. }));
        assert_eq!(
            host.last_error().unwrap().to_string(),
            "InvalidArgs -9: record 0 at byte 0: data: 64-byte window, the kernel touches n * 4 = 128 bytes"
        );
        assert!(host.last_launch().is_none());
        assert_eq!(host.launcher().calls, 0, "the launcher never saw it");
        // A window misaligned for f32.
        memory[10..14].copy_from_slice(&16u32.to_le_bytes());
        memory[1..5].copy_from_slice(&1026u32.to_le_bytes());
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), AbiError::InvalidArgs.code());
        assert_eq!(host.launcher().calls, 0);
        memory[1..5].copy_from_slice(&1024u32.to_le_bytes());
        assert_eq!(host.call(Some(&mut memory), &good_call(len)), 0);
        assert_eq!(host.launcher().calls, 1);
    }

    #[test]
    fn unknown_and_undeclared_kernels_are_invalid_kernels() {
        let (mut memory, len) = memory_with_argv();
        let mut host = LaunchHost::new(Counting::default());
        let unknown = LaunchCall { kernel_id: 9, ..good_call(len) };
        assert_eq!(host.call(Some(&mut memory), &unknown), AbiError::InvalidKernel.code());
        assert_eq!(host.last_error().unwrap().detail(), &Detail::UnknownKernel { kernel_id: 9 });
        let undeclared = LaunchCall { kernel_id: 4, ..good_call(len) };
        assert_eq!(host.call(Some(&mut memory), &undeclared), AbiError::InvalidKernel.code());
        assert_eq!(
            host.last_error().unwrap().to_string(),
            "InvalidKernel -3: kernel 4 is registered without a declaration: only a trusted guest may launch it"
        );
        assert!(host.last_launch().is_none());
        assert_eq!(host.launcher().calls, 0);
        // A trusted guest launches it; an unknown id is refused all the same.
        let mut host = host;
        host.set_trust(GuestTrust::Trusted);
        assert_eq!(host.trust(), GuestTrust::Trusted);
        assert_eq!(host.call(Some(&mut memory), &undeclared), 0);
        assert_eq!(host.launcher().calls, 1);
        assert_eq!(host.call(Some(&mut memory), &unknown), AbiError::InvalidKernel.code());
        // The argv's own errors come first.
        let bad = LaunchCall { kernel_id: 9, args_ptr: 1, ..good_call(len) };
        assert_eq!(host.call(Some(&mut memory), &bad), AbiError::InvalidArgs.code());
        assert!(matches!(host.last_error().unwrap().detail(), Detail::Argv(_)));
    }
}
