//! Device memory: the emulated device's allocations, the copies between them and host memory,
//! and the one checked accessor through which every kernel load and store goes.
//!
//! Device memory is real host memory, in an address range of its own: on the first
//! `cuMemAlloc`, the library reserves 1 TiB of address space (less where the system refuses
//! that much: 64 GiB, then 4 GiB) with no access and no backing, and hands out allocations from
//! it in order, each made readable and writable when allocated. A `CUdeviceptr` is the
//! allocation's address (provenance exposed once, for the whole range). The range is used
//! like a GPU's virtual address space:
//!
//! - allocations start on a page boundary (so 256-byte aligned, as `cuMemAlloc` promises) and
//!   are zero-filled (their pages were never used before);
//! - an address is never handed out twice: `cuMemFree` returns the pages to the system and
//!   leaves them reserved without access, so a stale device pointer can never reach memory
//!   that something else owns now — the accessor reports it as an illegal address, as the
//!   GPU would, instead of reading the host's heap. When the range is used up, `cuMemAlloc`
//!   answers `CUDA_ERROR_OUT_OF_MEMORY`.
//!
//! A kernel's access of `len` bytes at `addr` ([`KernelMemory`]) is allowed when the range
//! lies inside one live allocation of the launch's context. Any other range that touches the
//! device range is an illegal address. A range outside it is host memory: on a device with
//! pageable memory access, a non-null address at or above 64 KiB is read or written
//! directly, as the GPU reads the host's pages; below 64 KiB, or without pageable memory
//! access, it is an illegal address. **The emulator cannot tell mapped from unmapped host
//! memory the way the GPU's page faults do:** a host address that is not mapped (or no longer
//! owned by the caller) faults the host process, where the GPU would report an illegal
//! address.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ptr;

use crate::result::{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CuResult};

/// Address space reserved for device memory, tried in this order.
const RESERVATION_BYTES: [usize; 3] = [1 << 40, 1 << 36, 1 << 32];

/// Below this address, memory is never host memory a kernel may reach (the null page and
/// its neighbours: Linux's default `vm.mmap_min_addr`).
pub const LOWEST_HOST_ADDRESS: u64 = 64 * 1024;

/// The device's address range, reserved on first use.
#[derive(Debug)]
struct Region {
    /// First address (page-aligned).
    base: usize,
    /// One past the last address.
    end: usize,
    /// Where the next allocation starts (page-aligned, only ever grows).
    next: usize,
    /// The system's page size.
    page: usize,
}

/// One live device allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// The context that owns it (its handle).
    pub context: usize,
    /// Bytes asked for.
    pub size: usize,
    /// Bytes made accessible: `size` rounded up to whole pages.
    mapped: usize,
}

/// All device memory of one library instance: the reserved range and its live allocations.
#[derive(Debug, Default)]
pub struct DeviceMemory {
    region: Option<Region>,
    /// Live allocations by start address.
    allocations: BTreeMap<usize, Allocation>,
}

/// A kernel's access that the device refuses, as a GPU does: the kernel stops and the context
/// gets the fault's sticky error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Outside every allocation of the context (and not host memory the device may reach):
    /// `CUDA_ERROR_ILLEGAL_ADDRESS` (700).
    IllegalAddress,
    /// An address that is not a multiple of the access's size: `CUDA_ERROR_MISALIGNED_ADDRESS`
    /// (716). Checked before the address is looked up, as the load and store instructions
    /// require their natural alignment.
    Misaligned,
}

impl Region {
    /// Reserves the largest of [`RESERVATION_BYTES`] the system grants, without access.
    fn reserve() -> Option<Region> {
        // SAFETY: sysconf reads a system constant; it takes no pointers.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page = usize::try_from(page).ok().filter(|p| p.is_power_of_two())?;
        RESERVATION_BYTES.into_iter().find_map(|len| {
            // SAFETY: a new anonymous mapping at an address of the system's choosing: it
            // cannot overlap or change any memory that exists.
            let base = unsafe {
                libc::mmap(
                    ptr::null_mut(),
                    len,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return None;
            }
            // Every device address is derived from this one pointer (`with_exposed_provenance`).
            let base = base.expose_provenance();
            Some(Region { base, end: base + len, next: base, page })
        })
    }

    /// Makes `[addr, addr + len)` (pages of this region, without access) readable and writable.
    fn commit(&self, addr: usize, len: usize) -> bool {
        // SAFETY: the pages lie inside the reservation, which this library owns and which no
        // Rust object or live allocation uses; changing their protection affects nothing else.
        let code = unsafe {
            libc::mprotect(ptr::with_exposed_provenance_mut(addr), len, libc::PROT_READ | libc::PROT_WRITE)
        };
        code == 0
    }

    /// Returns the pages of `[addr, addr + len)` to the system and leaves them reserved
    /// without access.
    fn decommit(&self, addr: usize, len: usize) {
        // SAFETY: the pages lie inside the reservation and belong to an allocation that has
        // just been removed from the table, so nothing reads or writes them any more; a fixed
        // mapping over them replaces exactly those pages.
        let replaced = unsafe {
            libc::mmap(
                ptr::with_exposed_provenance_mut(addr),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        // Should the system refuse, the pages stay accessible but unused: addresses are never
        // handed out again, so nothing can reach them through the emulator.
        let _ = replaced;
    }
}

impl DeviceMemory {
    /// No memory reserved, no allocations.
    pub const fn new() -> DeviceMemory {
        DeviceMemory { region: None, allocations: BTreeMap::new() }
    }

    /// Allocates `size` zeroed bytes for `context`: their device address.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` for 0 bytes; `CUDA_ERROR_OUT_OF_MEMORY` when the device range
    /// has no room left (or the system refuses the pages).
    pub fn alloc(&mut self, context: usize, size: usize) -> Result<usize, CuResult> {
        if size == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if self.region.is_none() {
            self.region = Region::reserve();
        }
        let region = self.region.as_mut().ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        let mapped = size.checked_next_multiple_of(region.page).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        let start = region.next;
        if region.end - start < mapped {
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        if !region.commit(start, mapped) {
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        region.next = start + mapped;
        self.allocations.insert(start, Allocation { context, size, mapped });
        Ok(start)
    }

    /// Frees the allocation of `context` that starts at `addr`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` when no live allocation of `context` starts there.
    pub fn free(&mut self, context: usize, addr: u64) -> Result<(), CuResult> {
        let addr = usize::try_from(addr).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
        match self.allocations.get(&addr) {
            Some(allocation) if allocation.context == context => {}
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        if let Some(allocation) = self.allocations.remove(&addr) {
            self.release(addr, allocation);
        }
        Ok(())
    }

    /// Frees every allocation of `context` (the context is being destroyed).
    pub fn free_context(&mut self, context: usize) {
        let owned: Vec<usize> =
            self.allocations.iter().filter(|(_, a)| a.context == context).map(|(&addr, _)| addr).collect();
        for addr in owned {
            if let Some(allocation) = self.allocations.remove(&addr) {
                self.release(addr, allocation);
            }
        }
    }

    fn release(&self, addr: usize, allocation: Allocation) {
        if let Some(region) = &self.region {
            region.decommit(addr, allocation.mapped);
        }
    }

    /// How many allocations `context` has, and how many bytes they hold.
    pub fn usage(&self, context: usize) -> (usize, usize) {
        self.allocations
            .values()
            .filter(|a| a.context == context)
            .fold((0, 0), |(count, bytes), a| (count + 1, bytes + a.size))
    }

    /// The live allocation `[start, start + size)` that holds `[addr, addr + len)`, if any.
    fn holding(&self, addr: usize, len: usize) -> Option<(usize, &Allocation)> {
        let (&start, allocation) = self.allocations.range(..=addr).next_back()?;
        let end = addr.checked_add(len)?;
        (end <= start + allocation.size).then_some((start, allocation))
    }

    /// The address of `[addr, addr + len)` when it lies inside one live allocation of
    /// `context`: what `cuMemcpy*` may copy to or from.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` otherwise.
    pub fn device_range(&self, context: usize, addr: u64, len: usize) -> Result<usize, CuResult> {
        let addr = usize::try_from(addr).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
        match self.holding(addr, len) {
            Some((_, allocation)) if allocation.context == context => Ok(addr),
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }

    /// Copies `len` host bytes from `src` to the device range at `dst` of `context`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` when the device range is not inside one live allocation of
    /// `context`.
    ///
    /// # Safety
    ///
    /// `src` must be valid for reading `len` bytes.
    pub unsafe fn copy_to_device(
        &self,
        context: usize,
        dst: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), CuResult> {
        let dst = self.device_range(context, dst, len)?;
        // SAFETY: `src` is readable for `len` bytes (the caller's contract); `dst` lies inside a
        // live, accessible allocation that the table (borrowed here) keeps alive; `copy`
        // allows the two ranges to overlap.
        unsafe { ptr::copy(src, ptr::with_exposed_provenance_mut::<u8>(dst), len) };
        Ok(())
    }

    /// Copies `len` bytes from the device range at `src` of `context` to host memory at `dst`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` when the device range is not inside one live allocation of
    /// `context`.
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writing `len` bytes.
    pub unsafe fn copy_from_device(
        &self,
        context: usize,
        dst: *mut u8,
        src: u64,
        len: usize,
    ) -> Result<(), CuResult> {
        let src = self.device_range(context, src, len)?;
        // SAFETY: as in `copy_to_device`, with the roles swapped: `dst` is writable for `len`
        // bytes (the caller's contract), `src` inside a live allocation.
        unsafe { ptr::copy(ptr::with_exposed_provenance::<u8>(src), dst, len) };
        Ok(())
    }

    /// What a kernel launched in `context` may access, on a device with or without pageable
    /// memory access.
    pub fn kernel_view(&self, context: usize, pageable_memory_access: bool) -> KernelMemory<'_> {
        let (base, end) = self.region.as_ref().map_or((0, 0), |region| (region.base, region.end));
        KernelMemory { memory: self, context, pageable_memory_access, base, end, recent: Default::default() }
    }
}

/// A kernel's view of memory during one launch: every load and store of a CPU kernel goes
/// through [`load`](KernelMemory::load) and [`store`](KernelMemory::store), which apply the
/// rules of the module docs. While it lives, the allocation table is borrowed, so no
/// allocation can be freed under a running kernel.
#[derive(Debug)]
pub struct KernelMemory<'m> {
    memory: &'m DeviceMemory,
    context: usize,
    pageable_memory_access: bool,
    /// The device range `[base, end)`.
    base: usize,
    end: usize,
    /// The allocations `[start, end)` of the latest device accesses, most recent first: a
    /// kernel's accesses cluster in a few buffers.
    recent: [Cell<(usize, usize)>; RECENT],
}

/// How many allocations [`KernelMemory`] remembers.
const RECENT: usize = 4;

impl KernelMemory<'_> {
    /// The address of `[addr, addr + len)` if the kernel may access it.
    fn resolve(&self, addr: u64, len: usize) -> Result<usize, Fault> {
        let start = usize::try_from(addr).map_err(|_| Fault::IllegalAddress)?;
        let end = start.checked_add(len).ok_or(Fault::IllegalAddress)?;
        if start < self.end && self.base < end {
            for slot in &self.recent {
                let (low, high) = slot.get();
                if low <= start && end <= high {
                    return Ok(start);
                }
            }
            return match self.memory.holding(start, len) {
                Some((base, allocation)) if allocation.context == self.context => {
                    let mut newer = (base, base + allocation.size);
                    for slot in &self.recent {
                        newer = slot.replace(newer);
                    }
                    Ok(start)
                }
                _ => Err(Fault::IllegalAddress),
            };
        }
        if self.pageable_memory_access && addr >= LOWEST_HOST_ADDRESS {
            Ok(start)
        } else {
            Err(Fault::IllegalAddress)
        }
    }

    /// Loads `N` bytes at `addr`, which must be a multiple of `N`.
    ///
    /// # Errors
    ///
    /// The [`Fault`] the device would raise for the access.
    pub fn load<const N: usize>(&self, addr: u64) -> Result<[u8; N], Fault> {
        aligned::<N>(addr)?;
        let at = self.resolve(addr, N)?;
        // SAFETY: `resolve` allowed the range: either inside a live allocation of this
        // context (accessible pages, kept alive by the borrowed table), or host memory on a
        // device with pageable memory access, which the launch's caller vouches for (module
        // docs). Unaligned reads are fine for a byte array.
        Ok(unsafe { ptr::with_exposed_provenance::<[u8; N]>(at).read_unaligned() })
    }

    /// Stores `bytes` at `addr`, which must be a multiple of `N`.
    ///
    /// # Errors
    ///
    /// The [`Fault`] the device would raise for the access.
    pub fn store<const N: usize>(&self, addr: u64, bytes: [u8; N]) -> Result<(), Fault> {
        aligned::<N>(addr)?;
        let at = self.resolve(addr, N)?;
        // SAFETY: as in `load`.
        unsafe { ptr::with_exposed_provenance_mut::<[u8; N]>(at).write_unaligned(bytes) };
        Ok(())
    }
}

/// An `N`-byte access's alignment: `addr` a multiple of `N` (1, 2, 4, 8 or 16 here).
fn aligned<const N: usize>(addr: u64) -> Result<(), Fault> {
    match (N as u64).checked_sub(1) {
        Some(mask) if addr & mask != 0 => Err(Fault::Misaligned),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_zeroed_aligned_and_never_reused() {
        let mut memory = DeviceMemory::new();
        let a = memory.alloc(1, 100).unwrap();
        assert_eq!(a % 256, 0);
        let view = memory.kernel_view(1, false);
        assert_eq!(view.load::<4>(a as u64 + 96), Ok([0; 4]));
        view.store(a as u64, [1u8, 2, 3, 4]).unwrap();
        assert_eq!(view.load::<4>(a as u64), Ok([1, 2, 3, 4]));
        // Past the end of the allocation (still inside its page): illegal.
        assert_eq!(view.load::<4>(a as u64 + 100), Err(Fault::IllegalAddress));
        // Inside it but not a multiple of the access's size: misaligned, whatever the address.
        assert_eq!(view.load::<4>(a as u64 + 2), Err(Fault::Misaligned));
        assert_eq!(view.store(a as u64 + 4, [0u8; 8]), Err(Fault::Misaligned));
        assert_eq!(view.load::<4>(a as u64 + 97), Err(Fault::Misaligned));
        assert_eq!(view.load::<1>(a as u64 + 97), Ok([0]));
        assert_eq!(memory.usage(1), (1, 100));

        memory.free(1, a as u64).unwrap();
        assert_eq!(memory.usage(1), (0, 0));
        assert_eq!(memory.free(1, a as u64), Err(CUDA_ERROR_INVALID_VALUE));
        let b = memory.alloc(1, 100).unwrap();
        assert_ne!(a, b);
        let view = memory.kernel_view(1, true);
        // A stale pointer is illegal, even with pageable memory access.
        assert_eq!(view.load::<1>(a as u64), Err(Fault::IllegalAddress));
        assert_eq!(view.load::<4>(b as u64), Ok([0; 4]));
    }

    #[test]
    fn other_contexts_host_memory_and_low_addresses() {
        let mut memory = DeviceMemory::new();
        let mine = memory.alloc(1, 64).unwrap() as u64;
        let theirs = memory.alloc(2, 64).unwrap() as u64;
        assert_eq!(memory.device_range(1, theirs, 4), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(memory.device_range(1, mine + 60, 5), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(memory.device_range(1, mine + 60, 4), Ok(mine as usize + 60));

        let host = [0x0707_0707_0707_0707u64];
        let host_addr = host.as_ptr().expose_provenance() as u64;
        let pageable = memory.kernel_view(1, true);
        assert_eq!(pageable.load::<1>(theirs), Err(Fault::IllegalAddress));
        assert_eq!(pageable.load::<8>(host_addr), Ok([7; 8]));
        assert_eq!(pageable.load::<1>(0), Err(Fault::IllegalAddress));
        assert_eq!(pageable.load::<1>(LOWEST_HOST_ADDRESS - 1), Err(Fault::IllegalAddress));
        assert_eq!(pageable.load::<2>(u64::MAX - 1), Err(Fault::IllegalAddress));
        let no_pageable = memory.kernel_view(1, false);
        assert_eq!(no_pageable.load::<8>(host_addr), Err(Fault::IllegalAddress));

        memory.free_context(1);
        assert_eq!(memory.usage(1), (0, 0));
        assert_eq!(memory.usage(2), (1, 64));
    }

    #[test]
    fn copies_check_the_device_range() {
        let mut memory = DeviceMemory::new();
        let dev = memory.alloc(3, 16).unwrap() as u64;
        let src = [5u8; 16];
        let mut dst = [0u8; 16];
        // SAFETY: `src` is readable for 16 bytes.
        unsafe { memory.copy_to_device(3, dev, src.as_ptr(), 16) }.unwrap();
        // SAFETY: `dst` is writable for 16 bytes.
        unsafe { memory.copy_from_device(3, dst.as_mut_ptr(), dev, 16) }.unwrap();
        assert_eq!(dst, src);
        let longer = [5u8; 17];
        // SAFETY: `longer` is readable for 17 bytes.
        let refused = unsafe { memory.copy_to_device(3, dev, longer.as_ptr(), 17) };
        assert_eq!(refused, Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(memory.alloc(3, 0), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(memory.alloc(3, usize::MAX), Err(CUDA_ERROR_OUT_OF_MEMORY));
    }
}
