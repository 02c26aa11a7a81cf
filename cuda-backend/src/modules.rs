//! The module cache: each registered kernel's module, loaded in one generation of a device's
//! context on its first launch, with what the launcher needs to know of it ([`LoadedKernel`]),
//! or why it cannot be loaded ([`LoadFailure`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use cust::sys::CUfunction_attribute;
use kernel_args::{Detail, DriverParams, HostError, SignatureCheck};

use crate::cu_error::Phase;
use crate::driver::{CuError, Current, Kernel, KernelLoadError};
use crate::fence::FENCE_PARAMS;
use crate::registry::KernelEntry;
use crate::setup::KernelProblem;
use crate::signature::find_entry;

/// The size of each of the fence's hidden parameters (`.u64`).
const FENCE_PARAM_SIZE: usize = 8;

/// A kernel's module, loaded in one context, and what the launcher needs to know of it.
#[derive(Debug)]
pub(crate) struct LoadedKernel {
    pub(crate) kernel: Kernel,
    /// The parameter sizes, where the driver or the PTX knows them.
    pub(crate) param_sizes: Option<Vec<usize>>,
    /// Where `param_sizes` came from ([`SignatureCheck::Skipped`] exactly when `None`).
    pub(crate) signature: SignatureCheck,
    /// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`.
    pub(crate) static_shared: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` as last set.
    pub(crate) dynamic_shared_limit: AtomicU32,
    /// Whether the module is fenced: every launch appends the fence's hidden parameters
    /// (not in `param_sizes`, which are the guest's).
    pub(crate) fenced: bool,
    /// The alignment its fence's base needs (`KernelEntry::fence_base_align`).
    pub(crate) fence_base_align: u64,
    /// The least dynamic shared memory a launch gets (`KernelEntry::dynamic_shared_min`).
    pub(crate) dynamic_shared_min: u32,
    /// The shortest fence a launch may have (`KernelEntry::fence_min_len`).
    pub(crate) fence_min_len: u64,
    /// Its proofs (`KernelEntry::proofs`): their hidden parameters come before the fence's.
    pub(crate) proofs: Vec<crate::fence::Proof>,
}

/// A kernel id's module, or why it cannot be loaded (kept only for `MalformedPtx` and
/// `InvalidKernel`, which depend on the registered kernel alone).
pub(crate) type KernelSlot = Result<LoadedKernel, LoadFailure>;

/// Why a kernel's module cannot be used: what the guest is answered, and what the embedder is
/// told ([`CudaDevice::verify`](crate::CudaDevice::verify)).
#[derive(Debug, Clone)]
pub(crate) struct LoadFailure {
    pub(crate) guest: HostError,
    pub(crate) problem: KernelProblem,
}

impl From<HostError> for LoadFailure {
    fn from(guest: HostError) -> LoadFailure {
        let problem = KernelProblem::Load(guest.to_string());
        LoadFailure { guest, problem }
    }
}

/// A device's modules, made in one generation of its context.
#[derive(Debug, Default)]
pub(crate) struct Kernels {
    pub(crate) generation: u64,
    /// By kernel id and registration ([`KernelEntry::registration`]).
    pub(crate) slots: HashMap<(i64, u64), Arc<KernelSlot>>,
}

impl Kernels {
    /// The modules, emptied first when they are of an older generation than `generation`: the
    /// reset that made it destroyed them, so they are given up, not unloaded.
    pub(crate) fn of(&mut self, generation: u64) -> &mut HashMap<(i64, u64), Arc<KernelSlot>> {
        if self.generation != generation {
            abandon(std::mem::take(&mut self.slots));
            self.generation = generation;
        }
        &mut self.slots
    }
}

/// Gives up modules whose context is gone (reset or unusable): nothing is unloaded.
pub(crate) fn abandon(slots: HashMap<(i64, u64), Arc<KernelSlot>>) {
    for (_, slot) in slots {
        match Arc::try_unwrap(slot) {
            Ok(Ok(loaded)) => loaded.kernel.abandon(),
            Ok(Err(_)) => {}
            // Not reachable (a launch holds the slots it uses only while the context cannot be
            // reset), but a slot still held elsewhere must not unload a module of another
            // context.
            Err(shared) => std::mem::forget(shared),
        }
    }
}

/// Loads kernel `id`'s module from `entry` in the current context, and learns what a launch
/// needs of it: its parameter sizes (the driver's, checked against the declaration, or the
/// PTX's), its shared memory, whether it is fenced. `aligned`: the launcher's fences are aligned
/// (staged mode's arena), so a fenced kernel loads its aligned form
/// ([`KernelEntry::aligned_ptx`]). `fail` maps a driver failure (and marks the context for
/// recovery when it is sticky).
#[expect(clippy::result_large_err, reason = "a kernel's one load result, kept in an Arc in the kernel table")]
pub(crate) fn load(
    fail: impl Fn(CuError, Phase) -> HostError,
    current: &Current<'_>,
    id: i64,
    entry: &KernelEntry,
    aligned: bool,
) -> KernelSlot {
    let text = if aligned { entry.aligned_ptx() } else { entry.ptx() };
    let kernel = Kernel::load(current, text, entry.entry()).map_err(|e| match e {
        KernelLoadError::Module { error, log } => {
            let e = fail(error, Phase::ModuleLoad);
            LoadFailure::from(match e.detail() {
                Detail::Driver(failure) if !log.is_empty() => {
                    HostError::new(Detail::JitRefused { failure: *failure, log })
                }
                _ => e,
            })
        }
        KernelLoadError::Entry(error) => LoadFailure::from(fail(error, Phase::GetFunction)),
    })?;
    // A fenced entry has the fence's hidden parameters (its proofs', then the fence's four)
    // after the guest's: the driver's list is checked whole, and the guest's part of it is what
    // launches are checked against.
    let hidden = if entry.fenced() {
        entry
            .proofs()
            .iter()
            .flat_map(crate::fence::Proof::param_names)
            .count()
            .saturating_add(FENCE_PARAMS.len())
    } else {
        0
    };
    let driver_sizes = kernel.driver_param_sizes();
    if let Some(declaration) = entry.declaration() {
        let mut declared: Vec<usize> = declaration.params().map(|p| p.ty.size()).collect();
        declared.extend(std::iter::repeat_n(FENCE_PARAM_SIZE, hidden));
        let refuse = |driver: Vec<usize>| {
            let params = DriverParams { declared: declared.clone(), driver };
            let guest = HostError::new(Detail::DriverParams { kernel_id: id, params: params.clone() });
            LoadFailure { guest, problem: KernelProblem::DriverParams(params) }
        };
        match &driver_sizes {
            // The driver's list, counted or asked for until refused: the whole of it.
            Some((driver, counted)) if (*counted || entry.fenced()) && &declared != driver => {
                return Err(refuse(driver.clone()));
            }
            // A driver without parameter info (CUDA 12.2): a fenced entry's list is the
            // loaded text's, which must end in the fence's parameters.
            None if entry.fenced() => {
                let loaded = text
                    .to_str()
                    .ok()
                    .and_then(|ptx| find_entry(ptx, &entry.entry().to_string_lossy()).ok().flatten());
                let sizes = loaded.as_ref().map(|s| s.param_sizes()).unwrap_or_default();
                let proof_names: Vec<String> =
                    entry.proofs().iter().flat_map(crate::fence::Proof::param_names).collect();
                let names_ok = loaded.as_ref().is_some_and(|s| {
                    s.params.iter().rev().take(hidden).map(|p| p.name.as_str()).eq(FENCE_PARAMS
                        .iter()
                        .rev()
                        .copied()
                        .chain(proof_names.iter().rev().map(String::as_str)))
                });
                if sizes != declared || !names_ok {
                    return Err(refuse(sizes));
                }
            }
            _ => {}
        }
    }
    let driver_sizes = driver_sizes.and_then(|(mut sizes, counted)| {
        // A list counted by asking until the driver refused that does not end in the hidden
        // parameters is not the fenced entry's: the PTX's sizes are used instead.
        let guest = sizes.len().checked_sub(hidden).filter(|&n| {
            sizes.get(n..).is_some_and(|tail| tail.iter().all(|&size| size == FENCE_PARAM_SIZE))
        })?;
        sizes.truncate(guest);
        Some((sizes, counted))
    });
    // A declared kernel's sizes are its declaration's (checked against the PTX when it was
    // registered, and against the driver's count just now).
    let ptx_sizes = match entry.declaration() {
        Some(declaration) => Some(declaration.params().map(|p| p.ty.size()).collect()),
        None => entry.signature().map(|s| s.param_sizes()),
    };
    let (param_sizes, signature) = match (driver_sizes, ptx_sizes) {
        // The driver counted the parameters: its answer is the loaded function's.
        (Some((sizes, true)), _) => (Some(sizes), SignatureCheck::Driver),
        // Counted by asking until the driver refused: where the PTX says otherwise, the
        // PTX the module was loaded from wins.
        (Some((sizes, false)), Some(ptx)) if sizes != ptx => (Some(ptx), SignatureCheck::Ptx),
        (Some((sizes, false)), _) => (Some(sizes), SignatureCheck::Driver),
        (None, Some(ptx)) => (Some(ptx), SignatureCheck::Ptx),
        (None, None) => (None, SignatureCheck::Skipped),
    };
    let attribute = |a| {
        let value = kernel.attribute(current, a).map_err(|e| fail(e, Phase::Launch))?;
        Ok::<u32, HostError>(u32::try_from(value).unwrap_or(0))
    };
    let static_shared =
        attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).map_err(LoadFailure::from)?;
    let dynamic_shared = attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        .map_err(LoadFailure::from)?;
    Ok(LoadedKernel {
        kernel,
        param_sizes,
        signature,
        static_shared,
        dynamic_shared_limit: AtomicU32::new(dynamic_shared),
        fenced: entry.fenced(),
        fence_base_align: entry.fence_base_align(),
        dynamic_shared_min: entry.dynamic_shared_min(),
        fence_min_len: entry.fence_min_len(),
        proofs: entry.proofs().to_vec(),
    })
}
