//! The dry-run launcher: records what would be launched and reports that no CUDA device is
//! present. It needs no GPU, so the whole host path (checks, parser, dispatch) runs and is
//! tested on any machine.
//!
//! ```
//! use kernel_args::{AbiError, Declaration, DryRunLauncher, GuestTrust, LaunchArgs, LaunchRequest, LaunchShape, Launcher};
//! use kernel_args_core::{GuestMemory, LoweredArgSnapshot};
//!
//! let mut dry = DryRunLauncher::new();
//! dry.kernels_mut().declare(7, Declaration::parse("fill(n: u32)")?)?;
//! let shape = LaunchShape { grid: [1, 1, 1], block: [32, 1, 1], shared_mem_bytes: 0 };
//! let args = LaunchArgs::from_slice(&[LoweredArgSnapshot::U32(32)]).unwrap();
//! let memory = GuestMemory::length_only(0);
//! let request = LaunchRequest::check(&mut dry, 7, shape, &args, &memory, GuestTrust::Untrusted)?;
//! let err = dry.launch(&request).unwrap_err();
//! assert_eq!(err.code(), AbiError::NotAvailable);
//! let recorded = dry.last().unwrap();
//! assert_eq!(recorded.kernel_id(), 7);
//! assert_eq!(*recorded.args(), [LoweredArgSnapshot::U32(32)]);
//! assert_eq!(dry.launches(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::error::{Detail, HostError};
use crate::launcher::{KernelTable, LaunchOutcome, LaunchRequest, LaunchSnapshot, Launcher, Registered};

/// A [`Launcher`] that runs nothing: it keeps a pointer-free snapshot of the last request and
/// answers [`AbiError::NotAvailable`](crate::AbiError::NotAvailable) with [`Detail::NoDevice`].
/// Its kernels are those of its [`KernelTable`], so the host checks a dry run's arguments
/// against the same declarations a device's launcher would. Recording and answering never
/// allocate.
#[derive(Debug, Clone, Default)]
pub struct DryRunLauncher {
    kernels: KernelTable,
    last: Option<LaunchSnapshot>,
    launches: u64,
}

impl DryRunLauncher {
    /// A launcher that has recorded nothing and knows no kernel yet.
    pub fn new() -> DryRunLauncher {
        DryRunLauncher::default()
    }

    /// A launcher that knows the kernels of `kernels`.
    pub fn with_kernels(kernels: KernelTable) -> DryRunLauncher {
        DryRunLauncher { kernels, ..DryRunLauncher::default() }
    }

    /// Its kernels.
    pub fn kernels(&self) -> &KernelTable {
        &self.kernels
    }

    /// Its kernels, to register more.
    pub fn kernels_mut(&mut self) -> &mut KernelTable {
        &mut self.kernels
    }

    /// The last request it was handed, pointer-free.
    pub fn last(&self) -> Option<&LaunchSnapshot> {
        self.last.as_ref()
    }

    /// How many requests it has been handed.
    pub fn launches(&self) -> u64 {
        self.launches
    }
}

impl Launcher for DryRunLauncher {
    fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
        self.kernels.get(kernel_id)
    }

    fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
        self.launches = self.launches.saturating_add(1);
        self.last = Some(request.snapshot());
        Err(HostError::new(Detail::NoDevice))
    }
}
