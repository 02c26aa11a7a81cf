//! The kernel registry: what a guest's kernel id names (PTX text and entry point), with the
//! signature parsed from the PTX when it can be.
//!
//! Built without a GPU; the CUDA launcher loads a registered kernel's module on its first
//! launch.
//!
//! ```
//! use kernel_args_cuda::KernelRegistry;
//!
//! let mut registry = KernelRegistry::new();
//! registry.register(1, include_str!("../kernels/vector_add.ptx"), "vector_add")?;
//! let kernel = registry.get(1).expect("registered");
//! assert_eq!(kernel.signature().expect("parsed").param_sizes(), [8, 8, 8, 4]);
//! # Ok::<(), kernel_args_cuda::SetupError>(())
//! ```

use std::collections::HashMap;
use std::ffi::{CStr, CString};

use crate::setup::{KernelProblem, SetupError};
use crate::signature::{KernelSignature, PtxParseError, find_entry};

/// One registered kernel: its module's PTX, its entry name, and its parameter list when the
/// PTX declares the entry in a form the parser reads.
#[derive(Debug, Clone)]
pub struct KernelEntry {
    ptx: CString,
    entry: CString,
    signature: Option<KernelSignature>,
    parse_error: Option<PtxParseError>,
}

impl KernelEntry {
    /// The module's PTX text, NUL-terminated as `cuModuleLoadData` wants it.
    pub fn ptx(&self) -> &CStr {
        &self.ptx
    }

    /// The entry point's name.
    pub fn entry(&self) -> &CStr {
        &self.entry
    }

    /// The entry's parameter list from the PTX; `None` when the PTX does not declare the entry
    /// or the parser could not read it (the launch then skips the PTX check).
    pub fn signature(&self) -> Option<&KernelSignature> {
        self.signature.as_ref()
    }

    /// Why the PTX's parameter lists could not be read, if they could not.
    pub fn parse_error(&self) -> Option<&PtxParseError> {
        self.parse_error.as_ref()
    }
}

/// Kernel id → [`KernelEntry`].
#[derive(Debug, Clone, Default)]
pub struct KernelRegistry {
    kernels: HashMap<i64, KernelEntry>,
}

impl KernelRegistry {
    /// An empty registry.
    pub fn new() -> KernelRegistry {
        KernelRegistry::default()
    }

    /// Registers (or replaces) kernel `id`: entry `entry` of the module whose PTX is `ptx`.
    ///
    /// # Errors
    ///
    /// [`SetupError::Kernel`] when `ptx` contains a NUL byte, or `entry` is empty or contains
    /// one. A PTX whose parameter lists the parser cannot read is accepted: its launches skip
    /// the PTX check ([`KernelEntry::parse_error`] says why).
    pub fn register(&mut self, id: i64, ptx: &str, entry: &str) -> Result<(), SetupError> {
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
        self.kernels.insert(id, KernelEntry { ptx: ptx_c, entry: entry_c, signature, parse_error });
        Ok(())
    }

    /// The kernel registered as `id`.
    pub fn get(&self, id: i64) -> Option<&KernelEntry> {
        self.kernels.get(&id)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_parses_the_signature_when_it_can() {
        let mut r = KernelRegistry::new();
        r.register(1, include_str!("../kernels/struct_param.ptx"), "affine").unwrap();
        r.register(2, include_str!("../kernels/vector_add.ptx"), "no_such_entry").unwrap();
        r.register(3, ".entry k(\n.param .v4 .f32 x\n)", "k").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r.get(1).unwrap().signature().unwrap().param_sizes(), [24, 8, 8]);
        assert_eq!(r.get(1).unwrap().entry().to_str(), Ok("affine"));
        assert!(r.get(2).unwrap().signature().is_none());
        assert!(r.get(2).unwrap().parse_error().is_none());
        assert!(r.get(3).unwrap().signature().is_none());
        assert_eq!(r.get(3).unwrap().parse_error().unwrap().line, 2);
        assert!(r.get(4).is_none());
    }

    #[test]
    fn nul_bytes_are_refused() {
        let mut r = KernelRegistry::new();
        let problem = |e: SetupError| match e {
            SetupError::Kernel { id: 1, problem } => problem,
            other => panic!("{other:?}"),
        };
        assert_eq!(problem(r.register(1, "a\0b", "k").unwrap_err()), KernelProblem::NulInPtx { position: 1 });
        assert_eq!(problem(r.register(1, "", "k\0").unwrap_err()), KernelProblem::NulInEntry);
        assert_eq!(problem(r.register(1, "", "").unwrap_err()), KernelProblem::EmptyEntry);
        assert!(r.is_empty());
    }
}
