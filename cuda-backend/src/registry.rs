//! The kernel registry: what a guest's kernel id names (PTX text and entry point), what the
//! kernel declares it does with its parameters, and whether it runs behind the fence.
//!
//! A kernel is registered with its declaration (`kernel_args::Declaration`, the grammar of
//! `docs/declarations.md`), which every launch is checked against before any launcher runs.
//! Registration checks the declaration against the PTX's `.entry` parameter list (the count,
//! each parameter's size and alignment): a disagreement is a [`SetupError`] naming both sides.
//!
//! A kernel is registered once, with [`KernelRegistry::register`], and a [`Sandbox`]: fenced
//! ([`Sandbox::Fenced`], what any guest may launch), the module is rewritten once here
//! ([`crate::fence`]) and the driver loads the rewritten text, whose every global access is
//! clamped into the launch's fence (the guest's linear memory in direct mode, the launch's
//! staging arena in staged mode) and whose every loop counts against the thread's budget; a
//! module the fence cannot cover (a call, a texture, a tensor-core load) is refused
//! with its line. The other two skip the fence, and both are for kernels the embedder trusts
//! as it trusts itself:
//!
//! - [`Sandbox::Unfenced`]: declared, so every launch is still checked against the
//!   declaration, but a bug in the kernel (an index past its window) reaches whatever memory
//!   the kernel can address;
//! - [`Sandbox::Undeclared`]: no declaration and no fence; launched only for a guest the host
//!   trusts (`kernel_args::GuestTrust::Trusted`).
//!
//! Built without a GPU; the CUDA launcher loads a registered kernel's module on its first
//! launch, and checks the declaration against the driver's parameter list there too.
//!
//! ```
//! use kernel_args_cuda::{KernelRegistry, Sandbox, kernels};
//!
//! let mut registry = KernelRegistry::new();
//! let vector_add = Sandbox::fenced(kernels::VECTOR_ADD_DECLARATION)?;
//! registry.register(1, kernels::VECTOR_ADD_PTX, "vector_add", vector_add)?;
//! let kernel = registry.get(1).expect("registered");
//! assert_eq!(kernel.declaration().expect("declared").name(), "vector_add");
//! assert_eq!(kernel.signature().expect("parsed").param_sizes(), [8, 8, 8, 4]);
//! assert!(kernel.fenced());
//!
//! // A declaration the PTX disagrees with is the embedder's error, named on both sides.
//! let add = Sandbox::fenced("add(a: &[f32; n], n: u32)")?;
//! let err = registry.register(2, kernels::VECTOR_ADD_PTX, "vector_add", add).unwrap_err();
//! assert_eq!(err.to_string(), "kernel 2: the declaration has 2 parameters, the PTX entry vector_add has 4");
//!
//! // A module the fence cannot cover is refused, with its line, unless registered unfenced.
//! let calls = ".version 7.8\n.target sm_52\n.address_size 64\n\
//!     .visible .entry k(.param .u64 p)\n{\n\t.reg .b64 %rd<2>;\n\
//!     \tld.param.u64 %rd1, [p];\n\tcall.uni helper, (%rd1);\n\tret;\n}\n";
//! let err = registry.register(3, calls, "k", Sandbox::fenced("k(p: u64)")?).unwrap_err();
//! assert_eq!(err.to_string(), "kernel 3: the fence cannot cover it: PTX line 8: `call.uni helper, (%rd1)`: \
//!     a call (the fence does not reach into the callee)");
//! registry.register(3, calls, "k", Sandbox::unfenced("k(p: u64)")?)?; // trusted kernels only
//! assert!(!registry.get(3).expect("registered").fenced());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kernel_args::{Declaration, DeclarationError};

use crate::fence::printf::PrintBuffer;
use crate::fence::{Proof, fence_ptx};
use crate::setup::{KernelProblem, SetupError};
use crate::signature::{KernelSignature, PtxParseError, find_entry};

/// One registered kernel: the PTX its module loads (fenced or not), its entry name, its
/// declaration where it has one, and its parameter list as the PTX declares it where the parser
/// reads it.
#[derive(Debug, Clone)]
pub struct KernelEntry {
    registration: u64,
    ptx: CString,
    /// A fenced kernel's module in the fence's aligned form (staged launches).
    aligned_ptx: Option<CString>,
    entry: CString,
    declaration: Option<Declaration>,
    signature: Option<KernelSignature>,
    parse_error: Option<PtxParseError>,
    fenced: bool,
    /// The alignment a fenced kernel's fence base needs (`FencedModule::base_align`).
    fence_base_align: u64,
    /// The least dynamic shared memory a fenced kernel's launch gets
    /// (`FencedModule::dynamic_shared_min`).
    dynamic_shared_min: u32,
    /// The shortest fence a fenced kernel's launch may have (`FencedModule::fence_min_len`).
    fence_min_len: u64,
    /// A fenced entry's proofs (`FencedModule::proofs`): their hidden parameters come after the
    /// guest's, before the fence's four.
    proofs: Vec<Proof>,
    /// A fenced module's variables at the start of its fence (empty where it has none).
    variables: Arc<[u8]>,
    /// The print buffer among them, where the module's `printf`s were rewritten.
    print: Option<Arc<PrintBuffer>>,
}

/// The registrations made in this process: each entry's identity.
static REGISTRATIONS: AtomicU64 = AtomicU64::new(0);

impl KernelEntry {
    /// This registration's identity, unique in the process: a kernel registered again (even with
    /// the same text) is another registration. A launch request carries the registration its
    /// arguments were checked against, and the launcher launches that one
    /// (`kernel_args::LaunchRequest::registration`).
    pub fn registration(&self) -> u64 {
        self.registration
    }

    /// The PTX text the driver loads, NUL-terminated as `cuModuleLoadData` wants it: for a
    /// fenced kernel, the rewritten text, whose entries have the four hidden parameters of
    /// [`FENCE_PARAMS`](crate::fence::FENCE_PARAMS) after their own (and their
    /// [proofs'](Self::proofs) before those).
    pub fn ptx(&self) -> &CStr {
        &self.ptx
    }

    /// The text a launcher whose fences are aligned loads (a staged launch's arena, whose
    /// length is a power of two and whose base is aligned to it): for a fenced kernel, the
    /// module in the fence's aligned form
    /// ([`FencedModule::aligned_ptx`](crate::fence::FencedModule::aligned_ptx)), whose global
    /// accesses are masked rather than clamped; for any other kernel, [`ptx`](Self::ptx).
    pub fn aligned_ptx(&self) -> &CStr {
        self.aligned_ptx.as_deref().unwrap_or(&self.ptx)
    }

    /// Whether the kernel runs behind the fence (registered with
    /// [`KernelRegistry::register`]): every launch hands it the fence's four hidden
    /// parameters, a launch in which it reached outside answers `LaunchFailed`, and one in
    /// which a thread spent its budget `QuotaExceeded`.
    pub fn fenced(&self) -> bool {
        self.fenced
    }

    /// The alignment a fenced kernel's fence base needs
    /// ([`FencedModule::base_align`](crate::fence::FencedModule::base_align)): 16, or 32 where
    /// the module loads or stores a `wmma` fragment in global memory or through a generic
    /// address. In direct mode the fence is guest memory,
    /// and a launch whose memory starts at a host address aligned to less is refused
    /// (`FenceProblem::MisalignedMemory`). 1 for a kernel that is not fenced.
    pub fn fence_base_align(&self) -> u64 {
        self.fence_base_align
    }

    /// The least dynamic shared memory, in bytes, each launch of a fenced kernel gets
    /// ([`FencedModule::dynamic_shared_min`](crate::fence::FencedModule::dynamic_shared_min)):
    /// [`MIN_DYNAMIC_SHARED`](crate::fence::MIN_DYNAMIC_SHARED) where its module declares an
    /// `.extern .shared` array, 0 otherwise (and for a kernel that is not fenced). A launch
    /// that asks for less is given this much.
    pub fn dynamic_shared_min(&self) -> u32 {
        self.dynamic_shared_min
    }

    /// The shortest fence, in bytes, a fenced kernel's launch may have
    /// ([`FencedModule::fence_min_len`](crate::fence::FencedModule::fence_min_len)):
    /// [`MIN_FENCE_LEN`](crate::fence::MIN_FENCE_LEN), or more where the module clamps a `wmma`
    /// fragment of a constant stride as one access. In direct mode the fence is guest memory,
    /// and a launch whose memory is shorter is refused (`FenceProblem::MemoryTooShort`); a
    /// staged launch's arena is made at least this long. 0 for a kernel that is not fenced.
    pub fn fence_min_len(&self) -> u64 {
        self.fence_min_len
    }

    /// A fenced entry's proofs
    /// ([`FencedModule::proofs`](crate::fence::FencedModule::proofs)): each launch gives each
    /// one's values ([`Proof::hidden_values`]) after the guest's arguments and before the fence's
    /// four hidden parameters, and is refused where its arguments do not meet an indexed one. Empty for an
    /// entry without and for a kernel that is not fenced.
    pub fn proofs(&self) -> &[Proof] {
        &self.proofs
    }

    /// A fenced kernel's module variables as a launch of a new registration finds them
    /// ([`FencedModule::variables`](crate::fence::FencedModule::variables)): the bytes at the
    /// start of its fence, which a staged launch copies in and back. Empty for a module without
    /// `.global` variables and for a kernel that is not fenced.
    pub fn variables(&self) -> &Arc<[u8]> {
        &self.variables
    }

    /// Where a fenced kernel's device-side `printf`s write their records among its
    /// [variables](Self::variables)
    /// ([`FencedModule::print_buffer`](crate::fence::FencedModule::print_buffer)); `None` for a
    /// module without `printf` and for a kernel that is not fenced.
    pub fn print_buffer(&self) -> Option<&Arc<PrintBuffer>> {
        self.print.as_ref()
    }

    /// The entry point's name.
    pub fn entry(&self) -> &CStr {
        &self.entry
    }

    /// What the kernel declares; `None` for a kernel registered without a declaration.
    pub fn declaration(&self) -> Option<&Declaration> {
        self.declaration.as_ref()
    }

    /// The entry's parameter list from the PTX; `None` when the PTX does not declare the entry
    /// or the parser could not read it (a declared kernel always has it).
    pub fn signature(&self) -> Option<&KernelSignature> {
        self.signature.as_ref()
    }

    /// Why the PTX's parameter lists could not be read, if they could not.
    pub fn parse_error(&self) -> Option<&PtxParseError> {
        self.parse_error.as_ref()
    }
}

/// How a registered kernel runs: what its launches are checked against, and whether it runs
/// behind the fence. The one choice [`KernelRegistry::register`] takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Sandbox {
    /// Behind the fence, every launch checked against the declaration: what any guest may
    /// launch. Whatever the kernel does, it stays inside its guest's memory (direct) or its
    /// launch's arena (staged), and its threads' loops inside their budget.
    Fenced(Declaration),
    /// Without the fence, every launch still checked against the declaration, so a correct
    /// kernel reaches only the guest's windows; a kernel with a bug (an index past its window,
    /// a pointer made from a scalar) reaches whatever memory it can address: host memory
    /// outside the guest's in direct mode, other tenants' device buffers in staged mode. For
    /// kernels the embedder trusts as it trusts itself: those the fence cannot cover (calls it
    /// does not inline, textures, tensor copies), or whose fence costs too much (`docs/performance.md`).
    Unfenced(Declaration),
    /// No declaration and no fence: only a host that trusts its guest
    /// (`kernel_args::GuestTrust::Trusted`) launches it, its arguments checked against the
    /// PTX's or the driver's parameter sizes where either gives them. A PTX whose parameter
    /// lists the parser cannot read is accepted ([`KernelEntry::parse_error`] says why).
    Undeclared,
}

impl Sandbox {
    /// [`Sandbox::Fenced`] with `declaration` parsed (`docs/declarations.md`).
    ///
    /// # Errors
    ///
    /// The declaration's [`DeclarationError`].
    pub fn fenced(declaration: &str) -> Result<Sandbox, DeclarationError> {
        Declaration::parse(declaration).map(Sandbox::Fenced)
    }

    /// [`Sandbox::Unfenced`] with `declaration` parsed.
    ///
    /// # Errors
    ///
    /// The declaration's [`DeclarationError`].
    pub fn unfenced(declaration: &str) -> Result<Sandbox, DeclarationError> {
        Declaration::parse(declaration).map(Sandbox::Unfenced)
    }
}

/// Kernel id → [`KernelEntry`].
#[derive(Debug, Clone, Default)]
pub struct KernelRegistry {
    kernels: HashMap<i64, Arc<KernelEntry>>,
}

impl KernelRegistry {
    /// An empty registry.
    pub fn new() -> KernelRegistry {
        KernelRegistry::default()
    }

    /// Registers (or replaces) kernel `id`: entry `entry` of the module whose PTX is `ptx`,
    /// launched as `sandbox` says ([`Sandbox`]). A declared kernel's declaration is checked
    /// against the entry's parameter list here; a fenced one's module is rewritten with its
    /// fence here, once ([`crate::fence::fence_ptx`]), and the driver loads the rewritten text.
    ///
    /// # Errors
    ///
    /// [`SetupError::Kernel`] when `ptx` contains a NUL byte, `entry` is empty or contains one;
    /// for a declared kernel, when the PTX's parameter lists cannot be read or do not declare
    /// `entry`, or the declaration disagrees with the entry's parameter list (the count, or a
    /// parameter's size or alignment); for a fenced one, when the module uses what the fence
    /// cannot cover ([`KernelProblem::Fence`], with the line).
    pub fn register(&mut self, id: i64, ptx: &str, entry: &str, sandbox: Sandbox) -> Result<(), SetupError> {
        let refuse = |problem| SetupError::Kernel { id, problem };
        let (declaration, fenced) = match sandbox {
            Sandbox::Fenced(declaration) => (Some(declaration), true),
            Sandbox::Unfenced(declaration) => (Some(declaration), false),
            Sandbox::Undeclared => (None, false),
        };
        let mut kernel = KernelEntry::new(id, ptx, entry, declaration)?;
        if let Some(declaration) = &kernel.declaration {
            let signature = match (&kernel.signature, &kernel.parse_error) {
                (Some(signature), _) => signature,
                (None, Some(e)) => return Err(refuse(KernelProblem::PtxUnreadable(e.clone()))),
                (None, None) => return Err(refuse(KernelProblem::NoEntry { entry: entry.to_owned() })),
            };
            check_against_ptx(declaration, signature).map_err(refuse)?;
        }
        if fenced {
            let module = fence_ptx(ptx).map_err(|e| refuse(KernelProblem::Fence(e)))?;
            // The registered entry must be one the fence rewrote (and the checker proved).
            if !module.entries().iter().any(|e| e == entry) {
                return Err(refuse(KernelProblem::NoEntry { entry: entry.to_owned() }));
            }
            // The rewriter only adds text, so no NUL byte appears in it.
            kernel.ptx = CString::new(module.ptx())
                .map_err(|e| refuse(KernelProblem::NulInPtx { position: e.nul_position() }))?;
            kernel.aligned_ptx = Some(
                CString::new(module.aligned_ptx())
                    .map_err(|e| refuse(KernelProblem::NulInPtx { position: e.nul_position() }))?,
            );
            kernel.fenced = true;
            kernel.fence_base_align = module.base_align();
            kernel.dynamic_shared_min = module.dynamic_shared_min();
            kernel.fence_min_len = module.fence_min_len();
            kernel.proofs = module.proofs(entry).to_vec();
            kernel.variables = Arc::from(module.variables());
            kernel.print = module.print_buffer().cloned().map(Arc::new);
        }
        self.kernels.insert(id, Arc::new(kernel));
        Ok(())
    }

    /// The kernel registered as `id`.
    pub fn get(&self, id: i64) -> Option<&KernelEntry> {
        self.kernels.get(&id).map(Arc::as_ref)
    }

    /// The kernel registered as `id`, shared (what a launcher keeps while it uses it).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn shared(&self, id: i64) -> Option<Arc<KernelEntry>> {
        self.kernels.get(&id).cloned()
    }

    /// Each registered kernel's id and registration ([`KernelEntry::registration`]).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn registrations(&self) -> HashMap<i64, u64> {
        self.kernels.iter().map(|(&id, entry)| (id, entry.registration)).collect()
    }

    /// Number of registered kernels.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// `true` when no kernel is registered.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }
}

impl KernelEntry {
    fn new(
        id: i64,
        ptx: &str,
        entry: &str,
        declaration: Option<Declaration>,
    ) -> Result<KernelEntry, SetupError> {
        let refuse = |problem| SetupError::Kernel { id, problem };
        let ptx_c =
            CString::new(ptx).map_err(|e| refuse(KernelProblem::NulInPtx { position: e.nul_position() }))?;
        if entry.is_empty() {
            return Err(refuse(KernelProblem::EmptyEntry));
        }
        let entry_c = CString::new(entry).map_err(|_| refuse(KernelProblem::NulInEntry))?;
        let (signature, parse_error) = match find_entry(ptx, entry) {
            Ok(signature) => (signature, None),
            Err(e) => (None, Some(e)),
        };
        let registration = REGISTRATIONS.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        Ok(KernelEntry {
            registration,
            ptx: ptx_c,
            aligned_ptx: None,
            entry: entry_c,
            declaration,
            signature,
            parse_error,
            fenced: false,
            fence_base_align: 1,
            dynamic_shared_min: 0,
            fence_min_len: 0,
            proofs: Vec::new(),
            variables: Arc::from(Vec::new()),
            print: None,
        })
    }
}

/// The declaration against the PTX entry's parameter list: the count, then each parameter's
/// size and alignment.
fn check_against_ptx(declaration: &Declaration, ptx: &KernelSignature) -> Result<(), KernelProblem> {
    if declaration.len() != ptx.params.len() {
        return Err(KernelProblem::ParamCount {
            declared: declaration.len(),
            ptx: ptx.params.len(),
            entry: ptx.entry.clone(),
        });
    }
    for (index, (declared, ptx_param)) in declaration.params().zip(&ptx.params).enumerate() {
        let (size, align) = (declared.ty.size(), declared.ty.align());
        if size != ptx_param.size() || align != ptx_param.alignment() {
            return Err(KernelProblem::ParamLayout {
                index,
                name: declared.name.to_owned(),
                declared: (size, align),
                ptx: (ptx_param.size(), ptx_param.alignment()),
                ptx_name: ptx_param.name.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::VECTOR_ADD_DECLARATION;

    const VECTOR_ADD: &str = include_str!("../kernels/vector_add.ptx");

    fn problem(e: SetupError) -> KernelProblem {
        match e {
            SetupError::Kernel { problem, .. } => problem,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn registration_checks_the_declaration_against_the_ptx() {
        let mut r = KernelRegistry::new();
        r.register(1, VECTOR_ADD, "vector_add", Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap()).unwrap();
        r.register(
            2,
            VECTOR_ADD,
            "_Z18vector_add_mangledPKfS0_Pfj",
            Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap(),
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r.get(1).unwrap().signature().unwrap().param_sizes(), [8, 8, 8, 4]);
        assert_eq!(r.get(1).unwrap().declaration().unwrap().len(), 4);
        // n as a u64: 8 bytes by the declaration, 4 by the PTX.
        let err = r
            .register(
                3,
                VECTOR_ADD,
                "vector_add",
                Sandbox::fenced("vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u64)")
                    .unwrap(),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel 3: parameter 3 (n) is 8 bytes aligned to 8 by the declaration, 4 bytes aligned to 4 by \
             the PTX (vector_add_param_3)"
        );
        let err = r
            .register(3, VECTOR_ADD, "no_such_entry", Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap())
            .unwrap_err();
        assert_eq!(problem(err), KernelProblem::NoEntry { entry: "no_such_entry".into() });
        let err = r
            .register(
                3,
                ".version 7.8\n.target sm_52\n.entry k(\n.param .v4 .f32 x\n)\n{ ret; }",
                "k",
                Sandbox::fenced("k(x: f32)").unwrap(),
            )
            .unwrap_err();
        assert!(matches!(problem(err), KernelProblem::PtxUnreadable(e) if e.line == 4));
        // A declaration that does not parse is refused before any registration.
        let err = Sandbox::fenced("vector_add(a: &[f32; m])").unwrap_err();
        assert!(err.to_string().starts_with("column 22: "), "{err}");
        assert!(r.get(3).is_none(), "nothing refused is registered");
    }

    #[test]
    fn registration_fences_unless_told_not_to() {
        use crate::fence::{FENCE_PARAMS, FenceRefusal};
        let mut r = KernelRegistry::new();
        r.register(1, VECTOR_ADD, "vector_add", Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap()).unwrap();
        r.register(2, VECTOR_ADD, "vector_add", Sandbox::unfenced(VECTOR_ADD_DECLARATION).unwrap()).unwrap();
        r.register(3, VECTOR_ADD, "vector_add", Sandbox::Undeclared).unwrap();
        let fenced = r.get(1).unwrap();
        assert!(fenced.fenced());
        let module = crate::fence::fence_ptx(VECTOR_ADD).unwrap();
        assert_eq!(fenced.ptx().to_str().unwrap(), module.ptx());
        assert_eq!(fenced.aligned_ptx().to_str().unwrap(), module.aligned_ptx());
        // Both entries of the module are fenced: three accesses each, their index confined (a
        // ranged proof's: `vector_add`'s index is unsigned).
        assert_eq!((module.accesses(), module.proven()), (0, 6));
        assert!(FENCE_PARAMS.iter().all(|p| fenced.ptx().to_str().unwrap().contains(p)));
        // The guest-visible parameter list is the source's, checked against the declaration.
        assert_eq!(fenced.signature().unwrap().param_sizes(), [8, 8, 8, 4]);
        for id in [2, 3] {
            let unfenced = r.get(id).unwrap();
            assert!(!unfenced.fenced());
            assert_eq!(unfenced.ptx().to_str().unwrap(), VECTOR_ADD);
            assert_eq!(unfenced.aligned_ptx(), unfenced.ptx());
        }
        // A module variable a kernel writes is placed at the start of the fence, its bytes
        // kept by the entry; one too large to copy in and out at every launch is refused fenced,
        // with its line, and accepted unfenced.
        let counter = VECTOR_ADD
            .replacen(".address_size 64", ".address_size 64\n.global .u32 counter = 7;", 1)
            .replacen("ret;", "st.global.u32 [counter], %r1;\n\tret;", 1);
        r.register(6, &counter, "vector_add", Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap()).unwrap();
        let placed = r.get(6).unwrap();
        assert_eq!(&placed.variables()[..], &[7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(!placed.ptx().to_str().unwrap().contains("counter"));
        let global = counter.replacen(".u32 counter = 7;", ".u32 counter[524288];", 1);
        let line = global.lines().position(|l| l.starts_with(".global")).unwrap() + 1;
        match problem(
            r.register(4, &global, "vector_add", Sandbox::fenced(VECTOR_ADD_DECLARATION).unwrap())
                .unwrap_err(),
        ) {
            KernelProblem::Fence(e) => {
                assert_eq!((e.line, &e.reason), (line, &FenceRefusal::ModuleGlobal));
                assert!(e.to_string().contains(".global .u32 counter[524288];"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        assert!(r.get(4).is_none());
        r.register(4, &global, "vector_add", Sandbox::unfenced(VECTOR_ADD_DECLARATION).unwrap()).unwrap();
        // The declaration is checked before the fence, unfenced too.
        let err = r
            .register(5, &global, "vector_add", Sandbox::unfenced("vector_add(n: u32)").unwrap())
            .unwrap_err();
        assert!(matches!(problem(err), KernelProblem::ParamCount { declared: 1, ptx: 4, .. }));
    }

    #[test]
    fn undeclared_kernels_need_no_readable_ptx() {
        let mut r = KernelRegistry::new();
        r.register(1, include_str!("../kernels/struct_param.ptx"), "affine", Sandbox::Undeclared).unwrap();
        r.register(2, VECTOR_ADD, "no_such_entry", Sandbox::Undeclared).unwrap();
        r.register(
            3,
            ".version 7.8\n.target sm_52\n.entry k(\n.param .v4 .f32 x\n)\n{ ret; }",
            "k",
            Sandbox::Undeclared,
        )
        .unwrap();
        assert_eq!(r.get(1).unwrap().signature().unwrap().param_sizes(), [24, 8, 8]);
        assert!(r.get(1).unwrap().declaration().is_none());
        assert!(r.get(2).unwrap().signature().is_none());
        assert!(r.get(2).unwrap().parse_error().is_none());
        assert_eq!(r.get(3).unwrap().parse_error().unwrap().line, 4);
        assert!(r.get(4).is_none());
    }

    #[test]
    fn nul_bytes_are_refused() {
        let mut r = KernelRegistry::new();
        assert_eq!(
            problem(r.register(1, "a\0b", "k", Sandbox::Undeclared).unwrap_err()),
            KernelProblem::NulInPtx { position: 1 }
        );
        assert_eq!(
            problem(r.register(1, "", "k\0", Sandbox::Undeclared).unwrap_err()),
            KernelProblem::NulInEntry
        );
        assert_eq!(
            problem(r.register(1, "", "", Sandbox::Undeclared).unwrap_err()),
            KernelProblem::EmptyEntry
        );
        assert!(r.is_empty());
    }
}
