//! The [`Launcher`] that runs registered PTX kernels on a [`CudaDevice`]: [`CudaLauncher`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use cust::sys::CUfunction_attribute;
use kernel_args::{
    AbiError, Bound, Detail, Dimension, FenceProblem, FenceReport, FenceSpan, FenceUnavailable, HostError,
    LaunchOutcome, LaunchRequest, Launcher, ParamType, PointerMode, Quota, QuotaError, Registered,
    ShapeError, SignatureCheck,
};
use kernel_args_core::{GuestMemory, GuestRange, GuestWindow};

use crate::cu_error::Phase;
use crate::device::CudaDevice;
#[cfg(doc)]
use crate::device::PointerModeChoice;
use crate::driver::{CuError, Current, DeviceBuffer, Dims, Kernel, MappedFlag, Stream, Transfer};
use crate::fence::printf::Printed;
use crate::fence::{
    FENCE_PARAMS, FLAG_BUDGET, FLAG_REACHED_OUT, FLAG_TRAPPED, MAX_FENCE_LEN, MAX_PROOF_PARAMS,
    MIN_FENCE_LEN, PROOF_MAX_THREADS_X, ProofKind, proof_grid_fits,
};
use crate::modules::LoadedKernel;
use crate::registry::KernelEntry;
use crate::signature::check_param_sizes;
use crate::staging::StagingPlan;
use crate::storage::{KernelParamStorage, KernelParams, PaddingScratch, StorageError};

/// A staging arena larger than this is freed after its launch rather than kept for the next
/// one, so that one large launch does not hold device memory for a launcher's life.
pub const MAX_KEPT_STAGING_BYTES: usize = 64 << 20;

pub use crate::staging::STAGING_ALIGN;

/// The most launches whose printed text a launcher keeps until [`CudaLauncher::take_printed`].
pub const MAX_KEPT_PRINTS: usize = 64;

/// The parameter storage's capacity: the most arguments a guest sends, and the fence's hidden
/// parameters after them.
const STORAGE_CAPACITY: usize = kernel_args_core::MAX_KERNEL_ARGS + MAX_PROOF_PARAMS + FENCE_PARAMS.len();

/// The alignment a fence's base needs in direct mode (the widest access the fence clamps; a
/// kernel with a `wmma` fragment needs more: `KernelEntry::fence_base_align`), and what every
/// fence's length is a multiple of.
const FENCE_ALIGN: usize = 16;

/// A fenced launch refused before anything was launched: its fence is not one the fence
/// clamps into.
fn unavailable(kernel_id: i64, problem: FenceProblem) -> HostError {
    HostError::new(Detail::FenceUnavailable(FenceUnavailable { kernel_id, problem }))
}

/// A launcher's own driver resources, made in one generation of the device's context.
#[derive(Debug)]
struct Resources {
    generation: u64,
    stream: Stream,
    /// The staging arena, kept for the next staged launch.
    arena: Option<DeviceBuffer>,
    /// The fence's flag, made on the first fenced launch and kept.
    flag: Option<MappedFlag>,
}

impl Resources {
    fn abandon(self) {
        self.stream.abandon();
        self.arena.into_iter().for_each(DeviceBuffer::abandon);
        self.flag.into_iter().for_each(MappedFlag::abandon);
    }
}

/// A fenced launch's fence: the address range its kernel's accesses are clamped into, and the
/// flag the kernel sets when it was outside.
#[derive(Debug, Clone, Copy)]
struct Fence<'b> {
    base: u64,
    len: u64,
    flag: &'b MappedFlag,
    /// What the fence is: the guest's memory (direct) or the launch's arena (staged).
    span: FenceSpan,
}

/// The [`Launcher`] that runs registered PTX kernels on a [`CudaDevice`]: [`CudaLauncher`], one
/// per guest.
///
/// Each launcher (made by [`CudaDevice::launcher`]) has its own stream, parameter storage and
/// staging arena, and is `Send`: a `LaunchHost<CudaLauncher>` lives in a `wasmtime::Store` on
/// any thread. The host function hands it a request whose arguments are checked already,
/// against the registration [`Launcher::registered`] answered from (which the launcher keeps);
/// a [`launch`](Launcher::launch):
///
/// 1. finds the module of that registration (`LaunchRequest::registration`: a kernel
///    registered again since the check runs at the next call), loading it on first use (the
///    JIT's error log goes into the
///    `MalformedPtx` message), and its parameter sizes: from the driver
///    (`cuFuncGetParamCount` and `cuFuncGetParamInfo`) where it can say, cross-checked with
///    the PTX's `.entry` declaration where the driver gives no count, else from the PTX alone,
///    else none ([`SignatureCheck::Skipped`], and the `void**` table is padded with pointers
///    to zeros);
/// 2. opts the kernel in to more than 48 KiB of dynamic shared memory when the launch asks
///    for it (`cuFuncSetAttribute`), and refuses with `InvalidDimensions` more than the
///    device's opt-in limit less the kernel's static shared memory;
/// 3. checks the arguments' sizes against the kernel's (a mismatch is `InvalidArgs` naming the
///    argument and both sizes);
/// 4. places the pointer arguments where the device reads them, in the device's
///    [`PointerMode`], and fills its parameter storage from the arguments
///    ([`KernelParamStorage::fill`]), one path per mode:
///    - **direct**: the kernel gets each window's host pointer into guest memory (a fenced
///      kernel its offset in guest memory: the guest's own pointer). `Auto` picks
///      it where the device reads pageable memory through the host's page tables
///      (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES`: ATS, as on Grace
///      Hopper). Under HMM (pageable access without the host's page tables) `Auto` stages: HMM
///      migrates the pages a kernel touches into device memory, and a wasm memory may be a
///      copy-on-write file mapping that HMM cannot migrate; [`PointerModeChoice::Direct`]
///      still allows it there (see `docs/RISKS.md`);
///    - **staged**: each window is copied into device memory before the launch, the bytes of the
///      windows the declaration lets the kernel write (`&mut`, `&out`; every window of a kernel
///      without a declaration) back after it, and the kernel gets the device addresses (a
///      fenced kernel each window's offset in the arena). All of a launch's windows lie in one
///      device buffer, the arena; overlapping (or touching) windows are staged as one region
///      of it (the crate's staging plan), so aliasing arguments alias on the device too. The
///      arena is kept by the launcher and reused (no `cuMemAlloc`/`cuMemFree` per launch),
///      except one over [`MAX_KEPT_STAGING_BYTES`], freed after its launch. An arena longer than
///      the request's staging quota ([`LaunchRequest::limits`], `max_staging_bytes`) is refused
///      with `QuotaExceeded` ([`Quota::StagingBytes`]) before anything is allocated or copied.
///      A fenced module's variables (its `__device__` variables, `KernelEntry::variables`)
///      take the arena's first bytes, the windows after them: the launcher keeps their bytes
///      per kernel (and registration: a kernel registered again starts from its PTX's
///      initializers), copies them in with the windows and back after the kernel, so they
///      persist from one of this launcher's launches to the next and no other launcher sees
///      them. Such a kernel is staged on a direct-mode device too (its fence, the guest's own
///      memory there, has no room of the host's for them; [`LaunchOutcome::pointer_mode`]
///      says `Staged`). A device-side `printf`'s print buffer is one of them, emptied before
///      each launch; what the launch printed is formatted after it, for
///      [`CudaLauncher::take_printed`];
/// 5. for a fenced kernel (registered with [`KernelRegistry::register`](crate::KernelRegistry::register)),
///    appends the fence's hidden parameters (`crate::fence`; the fence's base is the only
///    address the kernel is given, and its code cannot name it): in direct mode the fence is the
///    guest's whole linear memory, in staged mode the launch's staging arena (every staged
///    window of the launch lies in that one device buffer), and each thread's budget, the
///    request's `max_back_edges_per_thread` ([`LaunchRequest::limits`]); the kernel's flag (a
///    word of page-locked host memory mapped into the device, `cuMemHostAlloc`, which the
///    launcher keeps) is cleared before the launch and read after it, with no copy either way;
/// 6. launches on the launcher's stream, copies staged windows back and synchronises: when
///    `launch` returns, nothing on the device can touch guest memory any more. A fenced kernel
///    one of whose threads spent its budget (and stopped there, the others running on) answers
///    `QuotaExceeded` ([`Quota::BackEdgesPerThread`]). One that set its flag otherwise answers
///    `LaunchFailed` with [`Detail::Fenced`], saying which of the two things it did: it reached
///    outside its fence (and was redirected inside), or a thread stopped at a `trap`, `brkpt` or
///    failed device-side `assert`. Its windows then hold whatever it wrote (staged windows are copied back).
///    Nothing outside the fence was touched, and the next launch runs as any other.
///
/// GPU writes reach guest memory only through windows of memory borrowed with
/// [`GuestMemory::exclusive`](kernel_args_core::GuestMemory::exclusive); a request whose
/// windows are not writable is refused (`Internal`: the host's mistake, not the guest's).
/// Driver errors are mapped from the integer code (the crate's `cu_error` table), never by
/// asking the driver.
///
/// `Send`; one per guest.
#[derive(Debug)]
pub struct CudaLauncher {
    device: Arc<CudaDevice>,
    resources: Option<Resources>,
    /// Filled in place for every launch (boxed: it is 2 KiB and more).
    storage: Box<KernelParamStorage<STORAGE_CAPACITY>>,
    /// Where the table of a kernel whose parameters nobody knows is made (trusted guests only).
    padding: PaddingScratch,
    /// The registry entry of the last kernel asked for, with the device's registration count
    /// when it was looked up.
    entry: Option<(i64, u64, Arc<KernelEntry>)>,
    /// The entry the last [`Launcher::registered`] answered from: what the launch of a request
    /// checked against it runs, even if the kernel has been registered again since.
    checked: Option<(i64, Arc<KernelEntry>)>,
    /// Each fenced kernel's module variables as its last launch left them, with the
    /// registration they belong to (`KernelEntry::variables`).
    variables: HashMap<i64, (u64, Vec<u8>)>,
    /// What the last launches' device-side `printf`s printed, oldest first, until taken.
    printed: VecDeque<(i64, Printed)>,
}

impl CudaDevice {
    /// A launcher on this device, with its own stream (made on its first launch), parameter
    /// storage, staging arena and fence flag.
    pub fn launcher(self: &Arc<CudaDevice>) -> CudaLauncher {
        CudaLauncher::new(Arc::clone(self))
    }
}

impl CudaLauncher {
    /// What fenced kernels' device-side `printf`s printed in this launcher's launches since the
    /// last call, oldest first: each launch that printed, with its kernel id (the last
    /// [`MAX_KEPT_PRINTS`] of them; older ones are dropped). A launch prints into a buffer of
    /// its own inside its fence ([`crate::fence::printf`]), which the launcher reads after the
    /// kernel; what did not fit is said ([`Printed::truncated`]).
    pub fn take_printed(&mut self) -> Vec<(i64, Printed)> {
        self.printed.drain(..).collect()
    }

    fn new(device: Arc<CudaDevice>) -> CudaLauncher {
        CudaLauncher {
            device,
            resources: None,
            storage: Box::default(),
            padding: PaddingScratch::default(),
            entry: None,
            checked: None,
            variables: HashMap::new(),
            printed: VecDeque::new(),
        }
    }

    /// The entry `request` was checked against: the one [`Launcher::registered`] answered from
    /// (kept from that call), or the registry's while it is still the same registration.
    fn checked_entry(&mut self, request: &LaunchRequest<'_, '_>) -> Result<Arc<KernelEntry>, HostError> {
        let matches =
            |id: i64, e: &KernelEntry| id == request.kernel_id && e.registration() == request.registration();
        if let Some((id, entry)) = &self.checked
            && matches(*id, entry)
        {
            return Ok(Arc::clone(entry));
        }
        match self.entry(request.kernel_id) {
            Some(entry) if entry.registration() == request.registration() => Ok(Arc::clone(entry)),
            _ => Err(HostError::msg(
                AbiError::Internal,
                format!(
                    "kernel {} was registered again after this launch was checked, and the registration it was \
                     checked against is gone",
                    request.kernel_id
                ),
            )),
        }
    }

    /// Kernel `id`'s registry entry, looked up again only when the registry changed.
    fn entry(&mut self, id: i64) -> Option<&Arc<KernelEntry>> {
        let registrations = self.device.registrations.load(Ordering::Acquire);
        let fresh =
            matches!(&self.entry, Some((cached, count, _)) if *cached == id && *count == registrations);
        if !fresh {
            self.entry = self.device.entry(id).map(|entry| (id, registrations, entry));
        }
        self.entry.as_ref().map(|(_, _, entry)| entry)
    }

    /// The device this launcher runs on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.device
    }
}

/// What one launch works with once its kernel is found: the context made current, the stream,
/// the kernel, and how its failures are mapped.
struct Launch<'l> {
    device: &'l CudaDevice,
    generation: u64,
    current: &'l Current<'l>,
    stream: &'l Stream,
    kernel: &'l LoadedKernel,
    /// When the launch began: a launch that ends past its device's
    /// [`launch_deadline`](crate::CudaOptions::launch_deadline) answers the launch-time quota.
    started: Instant,
}

impl Launch<'_> {
    /// The host error for a driver failure, marking the context for recovery when sticky.
    fn fail(&self, e: CuError) -> HostError {
        self.device.fail(self.generation, e, Phase::Launch)
    }

    /// The one table helper of both pointer modes: the `void**` table of `storage` (the padded
    /// one, made in `padding`, when nobody knows the kernel's parameters), with the fence's
    /// hidden parameters after the arguments for a fenced kernel, handed to `cuLaunchKernel`
    /// with the shape; then the staged windows' copies back and a synchronisation. A fenced
    /// kernel's flag is cleared before the launch and read after the synchronisation: it is
    /// host memory the device writes, so neither is a copy.
    fn run(
        &self,
        storage: &mut KernelParamStorage<STORAGE_CAPACITY>,
        padding: &mut PaddingScratch,
        request: &LaunchRequest<'_, '_>,
        copy_back: &[Transfer<'_, '_>],
        fence: Option<Fence<'_>>,
    ) -> Result<(), HostError> {
        let (stream, current, kernel, shape) =
            (self.stream, self.current, &self.kernel.kernel, &request.shape);
        let flag = match (self.kernel.fenced, fence) {
            (false, _) => None,
            (true, Some(fence)) => {
                // The fence's limits are 32-bit registers: a longer fence would not clamp; nor
                // would one shorter than the most a clamp of the module covers.
                let min = MIN_FENCE_LEN.max(self.kernel.fence_min_len);
                if !(min..=MAX_FENCE_LEN).contains(&fence.len) {
                    return Err(unavailable(
                        request.kernel_id,
                        FenceProblem::OutOfBounds { len: fence.len, min, max: MAX_FENCE_LEN },
                    ));
                }
                // The fence's length less an access's width (up to 16) is a multiple of the
                // width: the aligned form's mask aligns as it confines (`fence::check`).
                let multiple = FENCE_ALIGN as u64;
                if !fence.len.is_multiple_of(multiple) {
                    return Err(unavailable(
                        request.kernel_id,
                        FenceProblem::NotMultiple { len: fence.len, multiple },
                    ));
                }
                let budget = u64::from(request.limits().max_back_edges_per_thread);
                // Each proof's pointer's address, where the arguments meet it (`fence::Proof`),
                // then the fence's four.
                let proofs = &self.kernel.proofs;
                let indexed = proofs.iter().any(|p| matches!(p.kind, ProofKind::Indexed { .. }));
                if indexed && !proof_grid_fits(shape.grid[0], shape.block[0]) {
                    let threads = u64::from(shape.grid[0]).saturating_mul(u64::from(shape.block[0]));
                    return Err(unavailable(
                        request.kernel_id,
                        FenceProblem::TooManyThreadsX { threads, max: PROOF_MAX_THREADS_X },
                    ));
                }
                let mut hidden = [0u64; MAX_PROOF_PARAMS + FENCE_PARAMS.len()];
                let word = |index: usize| storage.slot(index).copied().unwrap_or([0; 8]);
                let mut count = 0usize;
                for proof in proofs {
                    let values = proof.hidden_values(fence.base, fence.len, word).map_err(|failure| {
                        let index = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
                        let bound = match proof.kind {
                            ProofKind::Indexed { bound, .. } | ProofKind::Indexed64 { bound, .. } => {
                                index(bound)
                            }
                            ProofKind::Fixed | ProofKind::Ranged { .. } => u32::MAX,
                        };
                        unavailable(
                            request.kernel_id,
                            FenceProblem::ProofFails {
                                pointer: index(proof.pointer),
                                offset: failure.offset,
                                bound,
                                count: failure.count,
                                size: proof.size,
                                fence_len: failure.fence_len,
                            },
                        )
                    })?;
                    for value in values.words() {
                        if let Some(slot) = hidden.get_mut(count) {
                            *slot = value;
                            count = count.saturating_add(1);
                        }
                    }
                }
                let fixed = [fence.base, fence.len, fence.flag.address(), budget];
                for (slot, value) in hidden.iter_mut().skip(count).zip(fixed) {
                    *slot = value;
                }
                storage.append(hidden.get(..count.saturating_add(FENCE_PARAMS.len())).unwrap_or(&fixed))?;
                Some(fence.flag)
            }
            (true, None) => return Err(unfenced(request.kernel_id)),
        };
        // At least the fenced kernel's minimum of dynamic shared memory (checked against the
        // kernel's limit with it, before anything ran).
        let shared_mem_bytes = shape.shared_mem_bytes.max(self.kernel.dynamic_shared_min);
        let shape = Dims { grid: shape.grid, block: shape.block, shared_mem_bytes };
        // Every window copied back is writable and fits its buffer, before anything runs.
        copy_back.iter().try_for_each(Transfer::check_download).map_err(|e| self.fail(e))?;
        if let Some(flag) = flag {
            flag.clear();
        }
        match self.kernel.signature {
            // A fenced kernel is declared, so its parameters are always known: its hidden
            // parameters are never left to a padded table's zeros.
            SignatureCheck::Skipped if flag.is_some() => return Err(unfenced(request.kernel_id)),
            SignatureCheck::Skipped => storage.with_padded_params(padding, |table| {
                launch_and_copy_back((stream, current), kernel, &shape, table, copy_back)
            }),
            SignatureCheck::Ptx | SignatureCheck::Driver => storage.with_params(|table| {
                launch_and_copy_back((stream, current), kernel, &shape, table, copy_back)
            }),
        }
        .map_err(|e| self.fail(e))?;
        // The scope synchronised the stream: the kernel has finished writing the flag.
        let flagged = flag.map_or(0, MappedFlag::read);
        match fence {
            // A thread that spent its budget stopped: the launch is the budget's quota, whatever
            // else the flag says.
            Some(_) if flagged & FLAG_BUDGET != 0 => {
                let limit = u64::from(request.limits().max_back_edges_per_thread);
                Err(QuotaError {
                    quota: Quota::BackEdgesPerThread,
                    requested: limit.saturating_add(1),
                    limit,
                }
                .into())
            }
            // The flag's other bytes are never written (the checker allows the three reasons').
            Some(fence) if flagged & (FLAG_REACHED_OUT | FLAG_TRAPPED) != 0 => {
                Err(HostError::new(Detail::Fenced(FenceReport {
                    kernel_id: request.kernel_id,
                    reached_out: flagged & FLAG_REACHED_OUT != 0,
                    trapped: flagged & FLAG_TRAPPED != 0,
                    fence: fence.span,
                    fence_len: fence.len,
                })))
            }
            _ => self.within_deadline(),
        }
    }

    /// The launch-time quota where the device has a deadline and this launch ended past it
    /// (counted in [`CudaDevice::overruns`]): the kernel ran to its end, and what it wrote is in
    /// guest memory. `requested` is the time the launch took, in milliseconds rounded up: above
    /// the limit's whole milliseconds, since it is above the limit.
    fn within_deadline(&self) -> Result<(), HostError> {
        let Some(limit) = self.device.launch_deadline else { return Ok(()) };
        let took = self.started.elapsed();
        if took <= limit {
            return Ok(());
        }
        self.device.context.overruns.fetch_add(1, Ordering::AcqRel);
        let millis = |ms: u128| u64::try_from(ms).unwrap_or(u64::MAX);
        // ⌈took⌉ ≥ took > limit ≥ ⌊limit⌋, in whole milliseconds: requested > limit.
        let (requested, limit) = (millis(took.as_nanos().div_ceil(1_000_000)), millis(limit.as_millis()));
        Err(QuotaError { quota: Quota::LaunchTime, requested, limit }.into())
    }

    /// The flag of a fenced kernel, made on its first launch and kept.
    fn flag<'r>(&self, flag: &'r mut Option<MappedFlag>) -> Result<Option<&'r MappedFlag>, HostError> {
        if !self.kernel.fenced {
            return Ok(None);
        }
        if flag.is_none() {
            *flag = Some(MappedFlag::alloc(self.current).map_err(|e| self.fail(e))?);
        }
        Ok(flag.as_ref())
    }

    /// Direct mode: each window's writable host pointer into guest memory; the fence is the
    /// whole guest memory.
    fn direct(
        &self,
        storage: &mut KernelParamStorage<STORAGE_CAPACITY>,
        padding: &mut PaddingScratch,
        flag: &mut Option<MappedFlag>,
        request: &LaunchRequest<'_, '_>,
    ) -> Result<(), HostError> {
        // A fenced kernel is given each window's offset in guest memory (the guest's own
        // pointer), never a host address: the fence adds its hidden base to every access.
        // Otherwise the device dereferences the addresses, so their provenance is exposed, not
        // dropped. A `usize` address always fits `u64` on the hosts CUDA supports.
        let fenced = self.kernel.fenced;
        storage.fill(request.args, |index, range| {
            let window = request.window(range)?;
            if fenced {
                return Ok::<u64, HostError>(u64::from(range.guest_offset));
            }
            let host = window.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
            Ok::<u64, HostError>(host.expose_provenance() as u64)
        })?;
        let fence = match self.flag(flag)? {
            None => None,
            Some(flag) => {
                let base = request.memory.window(0, 0).and_then(|w| w.host_ptr_mut());
                let (Some(base), len) = (base, request.memory.len()) else {
                    return Err(HostError::msg(
                        AbiError::Internal,
                        "a fenced launch in direct mode needs guest memory borrowed with GuestMemory::exclusive",
                    ));
                };
                // The fence clamps each access to a multiple of its width from the base (a
                // `wmma` fragment's to 32 bytes): the base must be aligned to the widest (16
                // bytes, or the kernel's `fence_base_align`). A wasm memory starts on a page.
                let align = (FENCE_ALIGN as u64).max(self.kernel.fence_base_align);
                if !(base.addr() as u64).is_multiple_of(align) {
                    return Err(unavailable(request.kernel_id, FenceProblem::MisalignedMemory { align }));
                }
                // At least the shortest fence, or what the module's clamps cover where that is
                // more (`KernelEntry::fence_min_len`).
                let min = MIN_FENCE_LEN.max(self.kernel.fence_min_len);
                if len < min {
                    let problem = FenceProblem::MemoryTooShort { len, min };
                    return Err(unavailable(request.kernel_id, problem));
                }
                Some(Fence { base: base.expose_provenance() as u64, len, flag, span: FenceSpan::GuestMemory })
            }
        };
        self.run(storage, padding, request, &[], fence)
    }

    /// Staged mode: the windows copied into the arena (kept in `arena` for the next launch),
    /// the kernel given their device addresses, and the regions it may have written copied
    /// back; the fence is the arena. Each region lies in the arena at its start's distance past
    /// a [`STAGING_ALIGN`] boundary, so every window keeps its alignment on the device.
    fn staged(
        &self,
        storage: &mut KernelParamStorage<STORAGE_CAPACITY>,
        padding: &mut PaddingScratch,
        (arena, flag): (&mut Option<DeviceBuffer>, &mut Option<MappedFlag>),
        request: &LaunchRequest<'_, '_>,
        (writes, variables): (&[bool], Option<&mut Vec<u8>>),
    ) -> Result<(), HostError> {
        let windows: Vec<GuestRange> = request.args.pointers().map(|(_, window)| window).collect();
        // A fenced module's variables take the arena's first bytes; the windows follow.
        let reserved = variables.as_ref().map_or(0, |v| v.len() as u64);
        let plan = StagingPlan::after(reserved, &windows);
        // The staging quota, before anything is allocated or copied.
        let limit = request.limits().max_staging_bytes;
        if plan.arena_len() > limit {
            return Err(QuotaError { quota: Quota::StagingBytes, requested: plan.arena_len(), limit }.into());
        }
        let regions = plan
            .regions()
            .iter()
            .map(|&(start, end)| region_window(request, start, end))
            .collect::<Result<Vec<GuestWindow<'_>>, HostError>>()?;
        // What is copied back: exactly the bytes of the windows the kernel may write (every
        // window of a kernel without a declaration), each run of them once. A byte only a
        // read-only window covers is never copied back, even where the two windows share a
        // region; a byte a writable window covers is, whatever other window covers it too.
        let writable: Vec<GuestRange> = windows
            .iter()
            .zip(writes.iter().chain(std::iter::repeat(&true)))
            .filter(|(_, w)| **w)
            .map(|(window, _)| *window)
            .collect();
        let mut back = Vec::new();
        for &(start, end) in StagingPlan::new(&writable).regions() {
            let Some((r, &(region_start, _))) =
                plan.regions().iter().enumerate().find(|&(_, &(rs, re))| rs <= start && end <= re)
            else {
                return Err(HostError::msg(
                    AbiError::Internal,
                    format!("the written bytes [{start}, {end}) are in no staging region"),
                ));
            };
            let offset = plan.region_at(r).saturating_add(start.saturating_sub(region_start));
            back.push((region_window(request, start, end)?, offset));
        }
        let flag = self.flag(flag)?;
        // A fenced kernel gets an arena of at least the shortest fence (or its module's, where
        // longer: `KernelEntry::fence_min_len`), windows or not, a
        // multiple of 16 bytes long. With the aligned fence (`CudaOptions::aligned_fence`, the
        // aligned form it loaded masks into it), that rounded up to a power of two, at an
        // address in the arena aligned to its length; the arena is made twice that long, so that
        // such an address is in it wherever the driver puts it.
        let aligned = flag.is_some() && self.device.aligned_fence;
        let shortest = MIN_FENCE_LEN.max(self.kernel.fence_min_len);
        let fence_len = match flag {
            Some(_) if aligned => plan.arena_len().max(shortest).next_power_of_two(),
            Some(_) => plan.arena_len().max(shortest).next_multiple_of(FENCE_ALIGN as u64),
            None => plan.arena_len(),
        };
        // The fence's start in `buffer`: with the aligned fence, its address rounded up to the
        // fence's length.
        let shift = |buffer: &DeviceBuffer| -> u64 {
            if aligned {
                buffer.address().next_multiple_of(fence_len).saturating_sub(buffer.address())
            } else {
                0
            }
        };
        let fits = |buffer: &DeviceBuffer| {
            u64::try_from(buffer.len()).is_ok_and(|len| len >= shift(buffer).saturating_add(fence_len))
        };
        let alloc_len = if aligned { fence_len.saturating_mul(2) } else { fence_len };
        let arena_len = usize::try_from(alloc_len).unwrap_or(usize::MAX);
        let needed = flag.is_some() || !plan.regions().is_empty();
        if needed && arena.as_ref().is_none_or(|kept| !fits(kept)) {
            // The kept one (too short) is freed first. The new one is zeroed: the bytes between
            // regions are inside the fence, and fresh device memory may hold another tenant's.
            *arena = None;
            let fresh = DeviceBuffer::alloc(self.current, arena_len).map_err(|e| self.fail(e))?;
            let zeros = vec![0u8; fresh.len()];
            self.stream
                .scope(self.current, |queue| queue.upload_bytes(&zeros, &fresh, 0))
                .map_err(|e| self.fail(e))?;
            *arena = Some(fresh);
        }
        let result = match arena.as_ref().filter(|_| needed) {
            None => {
                // No pointer argument and no fence: nothing to place.
                storage.fill(request.args, |index, _| {
                    Err::<u64, HostError>(StorageError::Unplaced { index }.into())
                })?;
                self.run(storage, padding, request, &[], None)
            }
            Some(buffer) => {
                let shift = shift(buffer);
                let in_buffer = |at: u64| usize::try_from(shift.saturating_add(at)).unwrap_or(usize::MAX);
                // The module's variables, copied in at the fence's start and back after the kernel.
                let memory = variables.map(|v| GuestMemory::exclusive(v.as_mut_slice()));
                let image = memory.as_ref().and_then(|m| m.window(0, u32::try_from(m.len()).ok()?));
                let image = image.as_ref().map(|window| Transfer { window, buffer, at: in_buffer(0) });
                let transfers: Vec<Transfer<'_, '_>> = regions
                    .iter()
                    .enumerate()
                    .map(|(r, window)| Transfer { window, buffer, at: in_buffer(plan.region_at(r)) })
                    .chain(image)
                    .collect();
                // Every window checked before anything is copied; the scope waits for the copies.
                transfers.iter().try_for_each(Transfer::check_upload).map_err(|e| self.fail(e))?;
                self.stream
                    .scope(self.current, |queue| transfers.iter().try_for_each(|t| queue.upload(t)))
                    .map_err(|e| self.fail(e))?;
                let copy_back: Vec<Transfer<'_, '_>> = back
                    .iter()
                    .map(|(window, at)| Transfer { window, buffer, at: in_buffer(*at) })
                    .chain(image)
                    .collect();
                let mut window = 0;
                let fence = flag.map(|flag| Fence {
                    base: buffer.address().saturating_add(shift),
                    len: fence_len,
                    flag,
                    span: FenceSpan::StagingArena,
                });
                // A fenced kernel is given each window's offset in the arena, never a device
                // address: the fence adds its hidden base to every access.
                let base = if fence.is_some() { 0 } else { buffer.address() };
                storage
                    .fill(request.args, |index, _| {
                        let at = plan.in_arena(window).ok_or(StorageError::Unplaced { index })?;
                        window = window.saturating_add(1);
                        Ok::<u64, HostError>(base.saturating_add(at))
                    })
                    .and_then(|()| self.run(storage, padding, request, &copy_back, fence))
            }
        };
        // Keep the arena for the next launch, but not a large one.
        if arena.as_ref().is_some_and(|b| b.len() > MAX_KEPT_STAGING_BYTES) {
            *arena = None;
        }
        result
    }
}

/// The launch and the copies back of one launch, in one scope of `stream`: the kernel, then
/// each staged window's copy back, then a synchronisation (also after a failure), so that when
/// this returns nothing on the device can touch guest memory any more.
fn launch_and_copy_back(
    (stream, current): (&Stream, &Current<'_>),
    kernel: &Kernel,
    dims: &Dims,
    params: &mut impl KernelParams,
    copy_back: &[Transfer<'_, '_>],
) -> Result<(), CuError> {
    stream.scope(current, |queue| {
        queue.launch(kernel, dims, params)?;
        copy_back.iter().try_for_each(|t| queue.download(t))
    })
}

/// A fenced kernel about to launch without its fence: the launcher's own mistake, refused.
fn unfenced(kernel_id: i64) -> HostError {
    HostError::msg(
        AbiError::Internal,
        format!("kernel {kernel_id} is fenced, and this launch has no fence for it"),
    )
}

impl Launcher for CudaLauncher {
    /// As the device's registry has it now (looked up again only after a registration); the
    /// entry is kept for the launch of the request checked against it.
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        let entry = Arc::clone(self.entry(kernel_id)?);
        let entry = &self.checked.insert((kernel_id, entry)).1;
        Some(match entry.declaration() {
            Some(declaration) => Registered::declared(declaration, entry.registration()),
            None => Registered::undeclared(entry.registration()),
        })
    }

    /// Launches the registration the request was checked against
    /// ([`LaunchRequest::registration`]), never a fresh lookup of its id.
    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        let entry = self.checked_entry(request)?;
        // A fenced module's variables live at the start of its fence, which in direct mode is
        // the guest's own memory: such a kernel is staged on every device.
        let variables = entry.variables();
        let mode = if variables.is_empty() { self.device.pointer_mode } else { PointerMode::Staged };
        // Which windows the kernel may write, by its declaration (every one without): what a
        // staged launch copies back.
        let staged = mode != PointerMode::Direct;
        let writes: Vec<bool> = match entry.declaration() {
            Some(declaration) if staged => declaration
                .params()
                .filter_map(|p| match p.ty {
                    ParamType::Pointer { access, .. } => Some(access.writes()),
                    ParamType::Scalar(_) => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        // A fenced module's variables: as the last launch of this registration left them.
        let mut variables = (!variables.is_empty()).then(|| {
            let kept = self
                .variables
                .entry(request.kernel_id)
                .or_insert_with(|| (entry.registration(), variables.to_vec()));
            if kept.0 != entry.registration() {
                *kept = (entry.registration(), variables.to_vec());
            }
            &mut kept.1
        });
        // Its print buffer is per launch: empty as the kernel starts.
        let print = entry.print_buffer();
        if let (Some(print), Some(variables)) = (print, variables.as_deref_mut()) {
            print.reset(variables);
        }
        let device = &*self.device;
        let state = device.usable_context()?;
        let started = Instant::now();
        let generation = state.generation;
        let current = state.primary.push().map_err(|e| device.fail(generation, e, Phase::Launch))?;

        // The stream and buffers of this context (those of a reset one died with it).
        if self.resources.as_ref().is_some_and(|r| r.generation != generation)
            && let Some(stale) = self.resources.take()
        {
            stale.abandon();
        }
        let resources = match &mut self.resources {
            Some(resources) => resources,
            None => {
                let stream = Stream::new(&current).map_err(|e| device.fail(generation, e, Phase::Launch))?;
                self.resources.insert(Resources { generation, stream, arena: None, flag: None })
            }
        };

        let slot = device.kernel(&state, &current, request.kernel_id, &entry)?;
        let kernel = slot.as_ref().as_ref().map_err(|failure| failure.guest.clone())?;
        let Resources { stream, arena, flag, .. } = resources;
        let launch = Launch { device, generation, current: &current, stream, kernel, started };

        // A fenced kernel with an `.extern .shared` array gets at least the fence's minimum
        // (`KernelEntry::dynamic_shared_min`), on which its confined accesses into the array rest.
        let shared = request.shape.shared_mem_bytes.max(kernel.dynamic_shared_min);
        if shared > kernel.dynamic_shared_limit.load(Ordering::Acquire) {
            let most = device.info.shared_memory_per_block_optin.saturating_sub(kernel.static_shared);
            if shared > most {
                let refused = ShapeError {
                    dimension: Dimension::SharedMem,
                    value: i64::from(shared),
                    bound: Bound::AtMost(u64::from(most)),
                };
                return Err(HostError::new(Detail::Shape(refused)));
            }
            // Opt in to all the kernel may have, once, so concurrent launches never lower it.
            let attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            let value = i32::try_from(most).unwrap_or(i32::MAX);
            kernel.kernel.set_attribute(&current, attribute, value).map_err(|e| launch.fail(e))?;
            kernel.dynamic_shared_limit.fetch_max(most, Ordering::AcqRel);
        }
        if let Some(sizes) = kernel.param_sizes.as_deref() {
            check_param_sizes(sizes, request.args)?;
        }

        let (storage, padding) = (&mut *self.storage, &mut self.padding);
        let launched = match mode {
            PointerMode::Direct => launch.direct(storage, padding, flag, request),
            PointerMode::Staged | PointerMode::None => {
                launch.staged(storage, padding, (arena, flag), request, (&writes, variables.as_deref_mut()))
            }
        };
        // What the kernel printed (copied back with its variables, whether or not the launch
        // then reported its fence), kept for the embedder.
        if let (Some(print), Some(variables)) = (print, variables.as_deref()) {
            let printed = print.text(variables);
            if !printed.text.is_empty() || printed.truncated {
                if self.printed.len() == MAX_KEPT_PRINTS {
                    self.printed.pop_front();
                }
                self.printed.push_back((request.kernel_id, printed));
            }
        }
        launched?;
        drop(current);
        drop(state);
        Ok(LaunchOutcome { pointer_mode: mode, signature: kernel.signature })
    }
}

/// The guest memory window of the staging region `[start, end)`: the union of windows the
/// host function checked, so it lies inside guest memory.
fn region_window<'m>(
    request: &LaunchRequest<'_, 'm>,
    start: u64,
    end: u64,
) -> Result<GuestWindow<'m>, HostError> {
    let range = u32::try_from(start).ok().zip(u32::try_from(end.saturating_sub(start)).ok());
    match range {
        Some((guest_offset, len)) => request.window(GuestRange { guest_offset, len }),
        None => Err(HostError::msg(
            AbiError::Internal,
            format!("staging region [{start}, {end}) is not a window of guest memory"),
        )),
    }
}

impl Drop for CudaLauncher {
    fn drop(&mut self) {
        let Some(resources) = self.resources.take() else { return };
        // Shared, so that the context cannot be reset while the stream and buffers are freed.
        let state = self.device.context.state.read().unwrap_or_else(PoisonError::into_inner);
        let usable =
            state.lost.is_none() && self.device.context.poisoned.load(Ordering::Acquire) != state.generation;
        if usable && resources.generation == state.generation {
            drop(resources); // each frees itself in its context
        } else {
            resources.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}

    #[test]
    fn the_device_is_shared_and_launchers_move_between_threads() {
        assert_send_sync::<CudaDevice>();
        assert_send_sync::<Arc<CudaDevice>>();
        assert_send::<CudaLauncher>();
        assert_send::<kernel_args::LaunchHost<CudaLauncher>>();
    }
}
