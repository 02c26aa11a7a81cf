//! The two references the end-to-end (parse + build) benchmark measures ours against, and ours.
//!
//! - [`heap`]: a checked parser and parameter builder written the way such hosts usually are:
//!   a `Vec` of arguments per parse, then one growable byte buffer for the values, a vector of
//!   their offsets and a vector of slot pointers. Same rules, same checks as the core parser.
//! - [`floor`]: a decoder that trusts its input completely (no length cap, no record cap, no
//!   tag check, no truncation check, no window check) and writes the same slot table as
//!   [`KernelParamStorage`](kernel_args_cuda::KernelParamStorage) plus its `void**` table: the
//!   least work any decoder producing that output can do.
//! - [`ours`]: the functions of ours that both measure, so that they measure the same code:
//!   the one-pass parse into the parameter storage, and the host function's whole call with a
//!   launcher that parses the argv once (its storage is the host's argv sink) or twice.
//!
//! These are benchmark fixtures: `cuda-backend/benches/parse_build.rs` times them and
//! `cuda-backend/examples/parse_build_loop.rs` counts their instructions
//! (`scripts/callgrind-parse-build.sh`).

/// The checked, heap-allocating reference.
pub mod heap {
    use std::ffi::c_void;

    use kernel_args_core::{MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES};

    /// A parsed argument; a pointer carries the resolved host address.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum HeapArg {
        /// `i32`.
        I32(i32),
        /// `i64`.
        I64(i64),
        /// `f32`.
        F32(f32),
        /// `f64`.
        F64(f64),
        /// `u32`.
        U32(u32),
        /// `u64`.
        U64(u64),
        /// A checked window's host address.
        Ptr(*mut u8),
    }

    /// Why a buffer was refused (the same four rules as the core parser).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum HeapError {
        /// Over the byte cap.
        TooLong,
        /// Over the record cap.
        TooMany,
        /// Unknown tag byte.
        BadTag(u8),
        /// Fewer value bytes than the tag needs.
        Truncated,
        /// Window outside guest memory.
        OutOfBounds,
    }

    /// The built parameters: values back to back, their offsets, and the `void**` table.
    #[derive(Debug)]
    pub struct HeapParams {
        /// Every value's native bytes, back to back.
        pub values: Vec<u8>,
        /// Where each value starts in `values`.
        pub offsets: Vec<usize>,
        /// One pointer per value, into `values`.
        pub slots: Vec<*mut c_void>,
    }

    fn take<const K: usize>(buf: &[u8], pos: &mut usize) -> Result<[u8; K], HeapError> {
        let bytes = buf.get(*pos..*pos + K).ok_or(HeapError::Truncated)?;
        *pos += K;
        Ok(bytes.try_into().expect("K bytes"))
    }

    /// Parses `buf` against guest `memory` into a fresh `Vec`.
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

    /// Builds the value buffer, the offsets and the `void**` table for `args`.
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

/// The unchecked floor. The one module of the kit with `unsafe` code: reading records and
/// writing slots without a check is what makes it the floor.
#[allow(unsafe_code)]
pub mod floor {
    use std::ffi::c_void;

    use kernel_args_cuda::ParamSlot;

    /// The same output as `KernelParamStorage` and its `ParamTable`: 8-aligned value slots,
    /// each slot's value size, and one pointer per slot.
    pub struct FloorTable<const N: usize> {
        /// The values, native byte order, 8-aligned.
        pub slots: [ParamSlot; N],
        /// Each value's size (4 or 8).
        pub sizes: [u8; N],
        /// The `void**` table.
        pub ptrs: [*mut c_void; N],
        /// Slots written.
        pub len: usize,
    }

    impl<const N: usize> FloorTable<N> {
        /// An empty table (allocated once by the benchmark, outside the timed part).
        pub fn new() -> Self {
            FloorTable {
                slots: [ParamSlot::default(); N],
                sizes: [0; N],
                ptrs: [std::ptr::null_mut(); N],
                len: 0,
            }
        }
    }

    impl<const N: usize> Default for FloorTable<N> {
        fn default() -> Self {
            Self::new()
        }
    }

    /// Decodes `buf` into `out` trusting every byte: a tag of `0x01`, `0x03` or `0x05` is a
    /// 4-byte value, `0x07` a pointer window resolved against `memory_base`, anything else an
    /// 8-byte value. Nothing is checked.
    ///
    /// # Safety
    ///
    /// `buf` must be a valid argv of at most `N` records whose windows lie inside the memory
    /// at `memory_base`.
    #[inline(never)]
    pub unsafe fn decode<const N: usize>(buf: &[u8], memory_base: *mut u8, out: &mut FloorTable<N>) {
        let mut p = buf.as_ptr();
        // SAFETY: one past the end of `buf`.
        let end = unsafe { p.add(buf.len()) };
        let slots = out.slots.as_mut_ptr();
        let sizes = out.sizes.as_mut_ptr();
        let ptrs = out.ptrs.as_mut_ptr();
        let mut i = 0;
        while p < end {
            // SAFETY: `p < end`, inside `buf`.
            let tag = unsafe { *p };
            // SAFETY: the caller promises a whole record follows the tag.
            let value = unsafe { p.add(1) };
            let (bits, size): (u64, u8) = match tag {
                // SAFETY: 4 value bytes follow (caller's promise).
                0x01 | 0x03 | 0x05 => (u64::from(unsafe { value.cast::<u32>().read_unaligned() }), 4),
                0x07 => {
                    // SAFETY: 8 value bytes follow (caller's promise).
                    let window = unsafe { value.cast::<u64>().read_unaligned() };
                    let offset = u64::from_le(window) as u32 as usize;
                    (memory_base.wrapping_add(offset) as usize as u64, 8)
                }
                // SAFETY: 8 value bytes follow (caller's promise).
                _ => (unsafe { value.cast::<u64>().read_unaligned() }, 8),
            };
            // SAFETY: `i < N` (caller's promise), so every write is in bounds of its array.
            unsafe {
                let slot = slots.add(i);
                slot.cast::<u64>().write(bits);
                sizes.add(i).write(size);
                ptrs.add(i).write(slot.cast::<c_void>());
            }
            // SAFETY: the record is `1 + size` bytes, inside `buf` (caller's promise).
            p = unsafe { value.add(usize::from(size)) };
            i += 1;
        }
        out.len = i;
    }
}

/// Ours, the functions both the benchmark and `cuda-backend/examples/parse_build_loop.rs` measure.
pub mod ours {
    use std::hint::black_box;

    use kernel_args_core::GuestMemory;
    use kernel_args_cuda::KernelParamStorage;

    /// Ours, end to end, as the CUDA launcher runs a direct-mode launch: parse straight into
    /// the storage it keeps ([`KernelParamStorage::parse_direct`], one pass), then make the
    /// `void**` table in place ([`KernelParamStorage::with_params`]). Returns the table's length
    /// so nothing is optimised away.
    #[inline(never)]
    pub fn ours(buf: &[u8], guest: &GuestMemory<'_>, storage: &mut KernelParamStorage) -> usize {
        storage.parse_direct(buf, guest).expect("valid argv");
        storage.with_params(|table| {
            black_box(table.as_mut_ptr());
            table.len()
        })
    }

    /// The host function's whole path for one launch, up to where `cuLaunchKernel` would be
    /// called: a [`LaunchHost`](kernel_args::LaunchHost) over a
    /// [`DirectLauncher`](crate::reference::ours::host::DirectLauncher), which parses the argv
    /// once (its storage is the host's argv sink) or twice (it parses the request itself).
    pub mod host {
        use std::hint::black_box;

        use kernel_args::{
            Detail, HostError, LaunchCall, LaunchHost, LaunchOutcome, LaunchRequest, LaunchSnapshot,
            Launcher, PointerMode, SignatureCheck,
        };
        use kernel_args_core::{Arg, GuestMemory, ParsedArgv, parse_argv};
        use kernel_args_cuda::KernelParamStorage;

        use crate::argvs;

        /// Does what the CUDA launcher does in direct mode for a kernel whose parameter sizes
        /// are known (from its PTX or the driver), up to `cuLaunchKernel`: the arguments into
        /// the parameter storage it keeps, the check that every pointer has a writable host
        /// pointer, the parameter count and sizes against the kernel's, and the `void**` table
        /// made in place. The driver calls around it (the context, the kernel's lookup, the
        /// launch itself) are not made: there is no GPU.
        ///
        /// [`one_pass`](Self::one_pass) offers the storage as its
        /// [`parse_recorded`](Launcher::parse_recorded), as `CudaLauncher` does, so the host
        /// function's own pass over the argv fills it and the argv is parsed once per call;
        /// [`two_pass`](Self::two_pass) offers none and parses the request into the storage
        /// itself ([`KernelParamStorage::parse_direct`]), so the argv is parsed twice: once
        /// into the host's record, once into the slots.
        pub struct DirectLauncher {
            storage: Box<KernelParamStorage>,
            one_pass: bool,
            /// The kernel's parameter sizes.
            param_sizes: Vec<usize>,
        }

        impl DirectLauncher {
            /// The launcher whose storage is the host function's argv sink.
            pub fn one_pass() -> DirectLauncher {
                DirectLauncher { storage: Box::default(), one_pass: true, param_sizes: Vec::new() }
            }

            /// The launcher that parses each request itself.
            pub fn two_pass() -> DirectLauncher {
                DirectLauncher { one_pass: false, ..DirectLauncher::one_pass() }
            }

            /// Launches from now on a kernel whose parameters are those of `argv` (a valid argv
            /// of [`argvs`]), as a guest that passes the right arguments does.
            pub fn set_kernel_for(&mut self, argv: &[u8]) {
                let memory = GuestMemory::length_only(argvs::MEMORY_LEN as u64);
                let args: ParsedArgv = parse_argv(argv, &memory).expect("valid argv");
                self.param_sizes = args
                    .iter()
                    .map(|arg| match arg {
                        Arg::I32(_) | Arg::U32(_) | Arg::F32(_) => 4,
                        Arg::I64(_) | Arg::U64(_) | Arg::F64(_) | Arg::Ptr(_) => 8,
                    })
                    .collect();
            }
        }

        /// The CUDA launcher's size check: the count, then each size in order.
        fn check_sizes(param_sizes: &[usize], arg_sizes: &[u8]) -> Result<(), HostError> {
            if param_sizes.len() != arg_sizes.len() {
                return Err(HostError::new(Detail::ParamCount {
                    expected: param_sizes.len(),
                    got: arg_sizes.len(),
                }));
            }
            for (index, (&expected, &got)) in param_sizes.iter().zip(arg_sizes).enumerate() {
                let got = usize::from(got);
                if expected != got {
                    return Err(HostError::new(Detail::ParamSize { index, expected, got }));
                }
            }
            Ok(())
        }

        impl Launcher for DirectLauncher {
            fn parse_recorded(
                &mut self,
                request: &LaunchRequest<'_, '_>,
                record: &mut LaunchSnapshot,
            ) -> Option<Result<(), HostError>> {
                self.one_pass.then(|| request.parse_recorded(record, &mut *self.storage))
            }

            fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
                let storage = &mut *self.storage;
                if request.in_sink() {
                    storage.direct_error()?;
                } else {
                    storage.parse_direct(request.argv, request.memory)?;
                }
                check_sizes(&self.param_sizes, storage.arg_sizes())?;
                storage.with_params(|table| black_box(table.as_mut_ptr()));
                Ok(LaunchOutcome { pointer_mode: PointerMode::Direct, signature: SignatureCheck::Ptx })
            }
        }

        /// A host over `launcher`, and a call for the argv `buf`, which it places at the end of
        /// `memory` (past the pointer windows of the benchmark's argvs); the launcher launches
        /// a kernel whose parameters are `buf`'s.
        pub fn setup(
            launcher: DirectLauncher,
            memory: &mut [u8],
            buf: &[u8],
        ) -> (LaunchHost<DirectLauncher>, LaunchCall) {
            let mut host = LaunchHost::new(launcher);
            host.launcher_mut().set_kernel_for(buf);
            (host, place(memory, buf))
        }

        /// A call for the argv `buf`, which it places at the end of `memory` (past the pointer
        /// windows of the benchmark's argvs).
        pub fn place(memory: &mut [u8], buf: &[u8]) -> LaunchCall {
            let args_ptr = memory.len() - buf.len();
            memory[args_ptr..].copy_from_slice(buf);
            LaunchCall {
                args_ptr: args_ptr as i32,
                args_len: buf.len() as i32,
                ..LaunchCall::new(1, [8, 1, 1], [256, 1, 1])
            }
        }

        /// One host call; its answer (0).
        #[inline(never)]
        pub fn call(host: &mut LaunchHost<DirectLauncher>, memory: &mut [u8], call: &LaunchCall) -> i32 {
            host.call(Some(memory), call)
        }
    }
}
