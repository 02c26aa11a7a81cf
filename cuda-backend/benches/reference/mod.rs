//! The two references the end-to-end benchmark measures ours against.
//!
//! - [`heap`]: a checked parser and parameter builder written the way such hosts usually are:
//!   a `Vec` of arguments per parse, then one growable byte buffer for the values, a vector of
//!   their offsets and a vector of slot pointers. Same rules, same checks as the core parser.
//! - [`floor`]: a decoder that trusts its input completely (no length cap, no record cap, no
//!   tag check, no truncation check, no window check) and writes the same slot table as
//!   [`KernelParamStorage`](kernel_args_cuda::KernelParamStorage) plus its `void**` table: the
//!   least work any decoder producing that output can do.
//!
//! Both are benchmark fixtures, not API: they live next to the benchmarks that use them.

#![allow(dead_code)] // The bench and the instruction-count example use different parts.

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

/// The unchecked floor.
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

/// Ours, the functions both the benchmark and `examples/parse_build_loop.rs` measure.
pub mod ours {
    use std::hint::black_box;

    use kernel_args_core::{GuestMemory, ParsedArgv, parse_argv_into};
    use kernel_args_cuda::{KernelParamStorage, PointerPlacement};

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

    /// Ours in two passes: parse into a [`ParsedArgv`] of [`LoweredArg`](kernel_args_core::LoweredArg)s,
    /// then [`KernelParamStorage::build`] from it, then the table: the shape of a staged
    /// launch (whose device addresses are known only after the windows are read), and of any
    /// host that keeps the parsed list.
    #[inline(never)]
    pub fn ours_two_pass<'m>(
        buf: &[u8],
        guest: &GuestMemory<'m>,
        args: &mut ParsedArgv<'m>,
        storage: &mut KernelParamStorage,
    ) -> usize {
        parse_argv_into(buf, guest, args).expect("valid argv");
        storage.build(args, PointerPlacement::Direct).expect("fits");
        storage.with_params(|table| {
            black_box(table.as_mut_ptr());
            table.len()
        })
    }

    /// The host function's whole path for one launch, up to where `cuLaunchKernel` would be
    /// called: a [`LaunchHost`](kernel_args::LaunchHost) over [`DirectLauncher`].
    pub mod host {
        use std::hint::black_box;

        use kernel_args::{
            HostError, LaunchCall, LaunchHost, LaunchOutcome, LaunchRequest, Launcher, PointerMode,
            SignatureCheck,
        };
        use kernel_args_cuda::KernelParamStorage;

        /// Does what the CUDA launcher does in direct mode before `cuLaunchKernel`: parse the
        /// request into the storage it keeps, make the `void**` table in place.
        #[derive(Default)]
        pub struct DirectLauncher {
            storage: Box<KernelParamStorage>,
        }

        impl Launcher for DirectLauncher {
            fn launch(&mut self, request: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
                self.storage.parse_direct(request.argv, request.memory)?;
                self.storage.with_params(|table| black_box(table.as_mut_ptr()));
                Ok(LaunchOutcome { pointer_mode: PointerMode::Direct, signature: SignatureCheck::Skipped })
            }
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
