//! What the lowering is measured against, and the lowering itself as the launch path runs it:
//!
//! - [`heap`]: a straightforward implementation that allocates (a `Vec` of parsed arguments,
//!   then a `Vec` of values and a `Vec` of pointers), with the same checks as the core parser;
//! - [`floor`]: an unchecked decoder: it trusts the buffer completely (no tag, length, window
//!   or cap check) and writes the same slots as ours, their sizes and a `void**` table on every
//!   call (ours keeps its table in the storage), so the distance to it is the price of the
//!   checks and of the two steps;
//! - [`ours`]: the direct-mode lowering per call, from the argv bytes to the `void**` table: the
//!   host function's parse into its pointer-free record, then the CUDA launcher's fill of its
//!   parameter storage (each window's host pointer, checked again) and its table; and the whole
//!   host call with a launcher that does that fill.

use std::ffi::c_void;

/// The heap-allocating reference.
pub mod heap {
    use std::ffi::c_void;

    use kernel_args_core::{MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES};

    /// A parsed argument; a pointer as its host pointer.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum HeapArg {
        I32(i32),
        I64(i64),
        F32(f32),
        F64(f64),
        U32(u32),
        U64(u64),
        Ptr(*mut u8),
    }

    /// Why the reference refused a buffer.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum HeapError {
        TooLong,
        TooMany,
        BadTag(u8),
        Truncated,
        OutOfBounds,
    }

    /// The values, their offsets and the `void**` table, each a `Vec` (the values and offsets
    /// are kept, as a real implementation keeps them while the table is used).
    #[derive(Debug)]
    #[allow(dead_code)]
    pub struct HeapParams {
        pub values: Vec<u8>,
        pub offsets: Vec<usize>,
        pub slots: Vec<*mut c_void>,
    }

    fn take<const K: usize>(buf: &[u8], pos: &mut usize) -> Result<[u8; K], HeapError> {
        let bytes = buf.get(*pos..*pos + K).ok_or(HeapError::Truncated)?;
        *pos += K;
        Ok(bytes.try_into().expect("K bytes"))
    }

    /// Parses into a `Vec`, with the core parser's checks.
    pub fn parse(buf: &[u8], memory: &mut [u8]) -> Result<Vec<HeapArg>, HeapError> {
        if buf.len() > MAX_KERNEL_ARGS_BYTES {
            return Err(HeapError::TooLong);
        }
        let mut args = Vec::new();
        let mut pos = 0;
        while pos < buf.len() {
            if args.len() >= MAX_KERNEL_ARGS {
                return Err(HeapError::TooMany);
            }
            let tag = buf[pos];
            pos += 1;
            let arg = match tag {
                0x01 => HeapArg::I32(i32::from_le_bytes(take(buf, &mut pos)?)),
                0x02 => HeapArg::I64(i64::from_le_bytes(take(buf, &mut pos)?)),
                0x03 => HeapArg::F32(f32::from_le_bytes(take(buf, &mut pos)?)),
                0x04 => HeapArg::F64(f64::from_le_bytes(take(buf, &mut pos)?)),
                0x05 => HeapArg::U32(u32::from_le_bytes(take(buf, &mut pos)?)),
                0x06 => HeapArg::U64(u64::from_le_bytes(take(buf, &mut pos)?)),
                0x07 => {
                    let offset = u32::from_le_bytes(take(buf, &mut pos)?);
                    let len = u32::from_le_bytes(take(buf, &mut pos)?);
                    if u64::from(offset) + u64::from(len) > memory.len() as u64 {
                        return Err(HeapError::OutOfBounds);
                    }
                    HeapArg::Ptr(memory.as_mut_ptr().wrapping_add(offset as usize))
                }
                other => return Err(HeapError::BadTag(other)),
            };
            args.push(arg);
        }
        Ok(args)
    }

    /// The values and the table, each in a new `Vec`.
    pub fn build(args: &[HeapArg]) -> HeapParams {
        let mut values = Vec::new();
        let mut offsets = Vec::new();
        for arg in args {
            offsets.push(values.len());
            match *arg {
                HeapArg::I32(v) => values.extend_from_slice(&v.to_ne_bytes()),
                HeapArg::I64(v) => values.extend_from_slice(&v.to_ne_bytes()),
                HeapArg::F32(v) => values.extend_from_slice(&v.to_ne_bytes()),
                HeapArg::F64(v) => values.extend_from_slice(&v.to_ne_bytes()),
                HeapArg::U32(v) => values.extend_from_slice(&v.to_ne_bytes()),
                HeapArg::U64(v) => values.extend_from_slice(&v.to_ne_bytes()),
                HeapArg::Ptr(p) => values.extend_from_slice(&(p as usize as u64).to_ne_bytes()),
            }
        }
        let base = values.as_mut_ptr();
        let slots = offsets.iter().map(|&o| base.wrapping_add(o).cast::<c_void>()).collect();
        HeapParams { values, offsets, slots }
    }

    /// Parse, then build.
    pub fn parse_build(buf: &[u8], memory: &mut [u8]) -> Result<HeapParams, HeapError> {
        parse(buf, memory).map(|args| build(&args))
    }
}

/// The unchecked decoder.
pub mod floor {
    use super::c_void;

    /// Its output: the slots, their value sizes and the `void**` table, as ours keeps them.
    pub struct FloorTable<const N: usize> {
        pub slots: [u64; N],
        pub sizes: [u8; N],
        pub ptrs: [*mut c_void; N],
        pub len: usize,
    }

    impl<const N: usize> FloorTable<N> {
        pub fn new() -> Self {
            FloorTable { slots: [0; N], sizes: [0; N], ptrs: [std::ptr::null_mut(); N], len: 0 }
        }
    }

    /// Decodes `buf` into `out` without any check: per record, a `match` on the tag whose arms
    /// each know their record's size (so the next record's start does not wait for this one's
    /// tag when the branch is predicted), one unaligned load of the value, a pointer's offset
    /// added to `memory_base`, and the slot, its size and its table entry stored.
    ///
    /// # Safety
    ///
    /// `buf` is a valid argv of at most `N` records whose windows lie in the memory at
    /// `memory_base`, followed by at least 8 readable bytes (each value is read with an 8-byte
    /// load).
    #[inline(never)]
    pub unsafe fn decode<const N: usize>(buf: &[u8], memory_base: *mut u8, out: &mut FloorTable<N>) {
        let mut p = buf.as_ptr();
        // SAFETY: one past the end of `buf`.
        let end = unsafe { p.add(buf.len()) };
        let slots = out.slots.as_mut_ptr();
        let sizes = out.sizes.as_mut_ptr();
        let ptrs = out.ptrs.as_mut_ptr();
        let base = memory_base as u64;
        let mut i = 0;
        while p < end {
            // SAFETY: `p < end`, inside `buf`; the value follows the tag, and 8 bytes are
            // readable past any record's start + 1 (the caller's contract).
            let (tag, raw) = unsafe { (*p, p.add(1).cast::<u64>().read_unaligned()) };
            let (bits, size) = match tag {
                0x01 | 0x03 | 0x05 => (raw & 0xffff_ffff, 4u8),
                0x07 => (base.wrapping_add(raw & 0xffff_ffff), 8),
                _ => (raw, 8),
            };
            // SAFETY: `i < N` (the caller's contract: at most N records); the next record
            // starts after this one's value, at most at `end`.
            unsafe {
                let slot = slots.add(i);
                slot.write(bits);
                sizes.add(i).write(size);
                ptrs.add(i).write(slot.cast::<c_void>());
                p = p.add(1 + usize::from(size));
            }
            i += 1;
        }
        out.len = i;
    }
}

/// Ours: the lowering as the host function and the CUDA launcher run it in direct mode.
pub mod ours {
    use std::hint::black_box;

    use kernel_args::{
        Declaration, GuestTrust, HostError, KernelTable, LaunchCall, LaunchHost, LaunchOutcome,
        LaunchRequest, Launcher, Registered,
    };
    use kernel_args_core::{GuestMemory, LoweredArgSnapshot, parse_argv_into};
    use kernel_args_cuda::{KernelParamStorage, StorageError, check_param_sizes};
    use kernel_args_testkit::argvs;

    /// The host function's record of a launch's arguments.
    pub type Record = kernel_args::LaunchArgs;

    /// The direct-mode lowering of one call, from the argv bytes to the `void**` table: the
    /// parse into the record (against the memory's length, as the host function parses), the
    /// fill of the storage with each window's host pointer (checked again against the memory,
    /// as `CudaLauncher` places it), and the table. Returns the table's length.
    #[inline(never)]
    pub fn lower(
        buf: &[u8],
        guest: &GuestMemory<'_>,
        record: &mut Record,
        storage: &mut KernelParamStorage,
    ) -> usize {
        parse_argv_into(buf, &GuestMemory::length_only(guest.len()), record).expect("valid argv");
        storage
            .fill(record, |index, range| {
                let window =
                    guest.window(range.guest_offset, range.len).ok_or(StorageError::Unplaced { index })?;
                let host = window.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
                Ok::<u64, StorageError>(host.expose_provenance() as u64)
            })
            .expect("placed");
        storage.with_params(|table| {
            black_box(table.as_mut_ptr());
            table.len()
        })
    }

    /// Does what the CUDA launcher does in direct mode for a kernel whose parameter sizes are
    /// known, up to `cuLaunchKernel`: the size check, the storage filled with each window's
    /// writable host pointer, the `void**` table. The driver calls around it (the context, the
    /// kernel's lookup, the launch itself) are not made: there is no GPU.
    pub struct DirectLauncher {
        kernels: KernelTable,
        storage: Box<KernelParamStorage>,
        /// The kernel's parameter sizes.
        param_sizes: Vec<usize>,
    }

    impl Launcher for DirectLauncher {
        fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
            self.kernels.get(kernel_id)
        }

        fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
            check_param_sizes(&self.param_sizes, request.args)?;
            self.storage.fill(request.args, |index, range| {
                let host = request.window(range)?.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
                Ok::<u64, HostError>(host.expose_provenance() as u64)
            })?;
            self.storage.with_params(|table| black_box(table.as_mut_ptr()));
            Ok(LaunchOutcome::NO_DEVICE)
        }
    }

    /// A host with a [`DirectLauncher`] for the kernel `buf` fits, and the call whose argv is
    /// `buf`, placed at the end of `memory`. `declared`: the kernel is declared for `buf`
    /// (`argvs::declaration`) and every call is checked against it; else it is registered
    /// without a declaration on a host that trusts its guest, so no declaration is checked.
    pub fn setup(memory: &mut [u8], buf: &[u8], declared: bool) -> (LaunchHost<DirectLauncher>, LaunchCall) {
        let mut record = Record::new();
        parse_argv_into(buf, &GuestMemory::length_only(memory.len() as u64), &mut record)
            .expect("valid argv");
        let param_sizes = record
            .iter()
            .map(|arg| match arg {
                LoweredArgSnapshot::I32(_) | LoweredArgSnapshot::U32(_) | LoweredArgSnapshot::F32(_) => 4,
                _ => 8,
            })
            .collect();
        let mut kernels = KernelTable::new();
        if declared {
            kernels
                .declare(
                    1,
                    Declaration::parse(&argvs::declaration(&record.iter().collect::<Vec<_>>()))
                        .expect("it parses"),
                )
                .expect("room");
        } else {
            kernels.register_undeclared(1).expect("room");
        }
        let launcher = DirectLauncher { kernels, storage: Box::default(), param_sizes };
        let args_ptr = memory.len() - buf.len();
        memory[args_ptr..].copy_from_slice(buf);
        let call = LaunchCall {
            args_ptr: args_ptr as i32,
            args_len: buf.len() as i32,
            ..LaunchCall::new(1, [4, 1, 1], [256, 1, 1])
        };
        let trust = if declared { GuestTrust::Untrusted } else { GuestTrust::Trusted };
        let mut host = LaunchHost::new(launcher);
        host.set_trust(trust);
        (host, call)
    }

    /// One whole host call.
    #[inline(never)]
    pub fn call(host: &mut LaunchHost<DirectLauncher>, memory: &mut [u8], call: &LaunchCall) -> i32 {
        host.call(Some(memory), call)
    }

    /// The memory every benchmark's windows lie in.
    pub fn memory() -> Vec<u8> {
        vec![0u8; argvs::MEMORY_LEN]
    }
}
