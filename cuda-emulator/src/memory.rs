//! Device memory: the emulated device's allocations, the copies between them and host memory,
//! and the one checked accessor through which every kernel load and store goes.
//!
//! Device memory is real host memory, in an address range of its own: on the first
//! `cuMemAlloc`, the library reserves 1 TiB of address space (less where the system refuses
//! that much: 64 GiB, then 4 GiB) with no access and no backing, and maps parts of it as a
//! GPU's driver maps its virtual address space. A `CUdeviceptr` is the allocation's address
//! (provenance exposed once, for the whole range).
//!
//! - **Small allocations share pages.** An allocation of up to [`SMALL_MAX`] bytes is carved,
//!   256-byte aligned (as `cuMemAlloc` promises), out of a [`CHUNK`]-byte mapping of its
//!   context that other small allocations share; a larger one gets a mapping of its own, in
//!   whole pages. A kernel may access any byte of a mapping of its context, so an overrun
//!   into a neighbouring allocation does not fault, as on a GPU: instead every kernel store
//!   that lands outside the allocation its pointer came from is recorded ([`Crossing`]), and
//!   tests read the record. An access outside every mapping of the context is an illegal
//!   address.
//! - **Memory is not cleared.** Every new allocation is filled with [`POISON`], so a kernel
//!   that reads what nobody wrote reads garbage, as on a GPU, not zeros.
//! - **Addresses are reused.** A freed small allocation's bytes go back to its mapping (which
//!   stays mapped) and a freed large one's pages back to the system, its address range to be
//!   handed out again: the next allocation that fits takes the lowest free address. A stale
//!   device pointer therefore reaches whatever lives there now, as on a GPU; the record shows
//!   the writes that went through one. When the range is used up, `cuMemAlloc` answers
//!   `CUDA_ERROR_OUT_OF_MEMORY`.
//!
//! A range outside the device range is host memory: on a device with pageable memory access,
//! an address from 64 KiB up to the end of the user address space (2^47) is read or written
//! directly, as the GPU reads the host's pages; below or above, or without pageable memory
//! access, it is an illegal address.
//! **The emulator cannot tell mapped from unmapped host memory the way the GPU's page faults
//! do:** a host address that is not mapped (or no longer owned by the caller) faults the host
//! process, where the GPU would report an illegal address.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::result::{CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CuResult};

/// Address space reserved for device memory, tried in this order.
const RESERVATION_BYTES: [usize; 3] = [1 << 40, 1 << 36, 1 << 32];

/// Below this address, memory is never host memory a kernel may reach (the null page and
/// its neighbours: Linux's default `vm.mmap_min_addr`).
pub const LOWEST_HOST_ADDRESS: u64 = 64 * 1024;

/// At and above this address, memory is never host memory (x86-64's canonical user addresses
/// end below it; the generic windows of shared and local memory are above it).
pub const HIGHEST_HOST_ADDRESS: u64 = 1 << 47;

/// The size of a mapping that small allocations share: a GPU's 2 MiB page.
pub const CHUNK: usize = 2 << 20;

/// The largest allocation that shares a mapping with others.
pub const SMALL_MAX: usize = 1 << 20;

/// What a new allocation holds before anything is written to it.
pub const POISON: u8 = 0xa5;

/// The alignment of every allocation (`cuMemAlloc`'s promise).
const ALIGN: usize = 256;

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
    /// Bytes it takes: `size` rounded up to 256 in a shared mapping, else to whole pages (its
    /// own mapping, which starts where it does).
    span: usize,
    /// Whether it shares a mapping ([`CHUNK`]) with other small allocations.
    shared: bool,
    /// Whether a module holds it (its `.global` variables): freed with the module, not by
    /// `cuMemFree`, and not counted among the context's allocations.
    module: bool,
}

/// A mapped part of the device range: accessible to kernels of its context.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mapping {
    context: usize,
    len: usize,
    /// A shared mapping's free bytes, by start address (none for a large allocation's own).
    free: BTreeMap<usize, usize>,
    shared: bool,
}

/// A kernel store that landed outside the allocation its pointer came from: in a neighbour on
/// the same mapping, in freed bytes, or through a pointer that is no allocation's at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossing {
    /// The context the kernel ran in.
    pub context: usize,
    /// The pointer the kernel's address came from (a kernel parameter).
    pub base: u64,
    /// The live allocation `base` lies in, by start address (`None`: none).
    pub from: Option<u64>,
    /// Where the store landed, and how many bytes.
    pub addr: u64,
    /// The store's size.
    pub len: usize,
    /// The live allocation the store landed in, by start address (`None`: freed or never
    /// allocated bytes of a mapping).
    pub into: Option<u64>,
}

/// All device memory of one library instance: the reserved range, its mappings and live
/// allocations, and the record of stores that crossed an allocation.
#[derive(Debug, Default)]
pub struct DeviceMemory {
    region: Option<Region>,
    /// Live allocations by start address.
    allocations: BTreeMap<usize, Allocation>,
    /// Mapped ranges by start address.
    mappings: BTreeMap<usize, Mapping>,
    /// Unmapped ranges below the region's high-water mark, free to map again: start to length.
    released: BTreeMap<usize, usize>,
    /// The allocations `cuMemHostAlloc` made (a subset of `allocations`): whether each is
    /// mapped into the device's address space.
    host: BTreeMap<usize, bool>,
    /// Every crossing store since the library was loaded (or the device's record was
    /// cleared), with the index of the device the kernel ran on. Behind a lock of its own:
    /// kernels add to it while they share the table.
    pub crossings: Mutex<Vec<(usize, Crossing)>>,
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
    /// `trap` or `brkpt`: `CUDA_ERROR_LAUNCH_FAILED` (719).
    Trap,
    /// A failed device-side `assert` (a call of `__assertfail`): `CUDA_ERROR_ASSERT` (710). The
    /// emulator does not print its message.
    Assert,
    /// The kernel cannot end: warp-synchronous instructions that never gather their members
    /// (a hang on a GPU). Reported as a display watchdog reports a kernel that runs too long:
    /// `CUDA_ERROR_LAUNCH_TIMEOUT` (702).
    Hang,
    /// Its context was destroyed while it ran (`cuDevicePrimaryCtxReset`): the kernel stops
    /// where it is, as a GPU stops the work of a context it tears down. Nothing is reported:
    /// the context is gone.
    Stopped,
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
        // Should the system refuse, the pages stay accessible: they are mapped again (and
        // filled) before the range is handed out again, and no kernel reaches them meanwhile,
        // as they are in no mapping of the table.
        let _ = replaced;
    }
}

impl DeviceMemory {
    /// No memory reserved, no allocations.
    pub const fn new() -> DeviceMemory {
        DeviceMemory {
            region: None,
            allocations: BTreeMap::new(),
            mappings: BTreeMap::new(),
            released: BTreeMap::new(),
            host: BTreeMap::new(),
            crossings: Mutex::new(Vec::new()),
        }
    }

    /// Allocates `size` bytes for `context`, filled with [`POISON`]: their device address.
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
        let page = self.region.as_ref().ok_or(CUDA_ERROR_OUT_OF_MEMORY)?.page;
        let (start, allocation) = if size <= SMALL_MAX {
            let span = size.next_multiple_of(ALIGN);
            let start = match self.carve(context, span) {
                Some(start) => start,
                None => {
                    let chunk = self.map(CHUNK)?;
                    let free = BTreeMap::from([(chunk, CHUNK)]);
                    self.mappings.insert(chunk, Mapping { context, len: CHUNK, free, shared: true });
                    self.carve(context, span).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?
                }
            };
            (start, Allocation { context, size, span, shared: true, module: false })
        } else {
            let span = size.checked_next_multiple_of(page).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
            let start = self.map(span)?;
            self.mappings.insert(start, Mapping { context, len: span, free: BTreeMap::new(), shared: false });
            (start, Allocation { context, size, span, shared: false, module: false })
        };
        // SAFETY: `[start, start + size)` lies in a mapping just made accessible or kept so,
        // and in no other live allocation (carved from free bytes, or a mapping of its own).
        unsafe { ptr::write_bytes(ptr::with_exposed_provenance_mut::<u8>(start), POISON, size) };
        self.allocations.insert(start, allocation);
        Ok(start)
    }

    /// Takes `span` bytes from the lowest free block of a shared mapping of `context`.
    fn carve(&mut self, context: usize, span: usize) -> Option<usize> {
        let mapping = self
            .mappings
            .values_mut()
            .find(|m| m.shared && m.context == context && m.free.values().any(|&len| len >= span))?;
        let (&start, &len) = mapping.free.iter().find(|&(_, &len)| len >= span)?;
        mapping.free.remove(&start);
        if len > span {
            mapping.free.insert(start + span, len - span);
        }
        Some(start)
    }

    /// Maps `len` bytes (whole pages) at the lowest free address of the device range.
    fn map(&mut self, len: usize) -> Result<usize, CuResult> {
        let region = self.region.as_mut().ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        let reused =
            self.released.iter().find(|&(_, &free)| free >= len).map(|(&start, &free)| (start, free));
        let start = match reused {
            Some((start, free)) => {
                if !region.commit(start, len) {
                    return Err(CUDA_ERROR_OUT_OF_MEMORY);
                }
                self.released.remove(&start);
                if free > len {
                    self.released.insert(start + len, free - len);
                }
                start
            }
            None => {
                let start = region.next;
                if region.end - start < len || !region.commit(start, len) {
                    return Err(CUDA_ERROR_OUT_OF_MEMORY);
                }
                region.next = start + len;
                start
            }
        };
        Ok(start)
    }

    /// Unmaps the mapping at `start`: its pages go back to the system and its range is free to
    /// map again.
    fn unmap(&mut self, start: usize) {
        let Some(mapping) = self.mappings.remove(&start) else { return };
        if let Some(region) = &self.region {
            region.decommit(start, mapping.len);
        }
        insert_merged(&mut self.released, start, mapping.len);
    }

    /// Frees the allocation of `context` that starts at `addr`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` when no live allocation of `context` starts there, or a host
    /// allocation does (freed by [`free_host`](Self::free_host) only).
    pub(crate) fn free(&mut self, context: usize, addr: u64) -> Result<(), CuResult> {
        let addr = usize::try_from(addr).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
        if self.host.contains_key(&addr) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        match self.allocations.get(&addr) {
            Some(allocation) if allocation.context == context && !allocation.module => {}
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        self.release(addr);
        Ok(())
    }

    /// Allocates `image.len()` bytes for a module of `context` and copies `image` there (its
    /// `.global` variables): their device address. Freed by [`free_module`](Self::free_module)
    /// or with the context.
    ///
    /// # Errors
    ///
    /// As [`alloc`](Self::alloc).
    pub(crate) fn alloc_module(&mut self, context: usize, image: &[u8]) -> Result<u64, CuResult> {
        let start = self.alloc(context, image.len())?;
        if let Some(allocation) = self.allocations.get_mut(&start) {
            allocation.module = true;
        }
        // SAFETY: `[start, start + image.len())` is the allocation just made, accessible and
        // in no other allocation; `image` is a slice of that many bytes.
        unsafe {
            ptr::copy_nonoverlapping(
                image.as_ptr(),
                ptr::with_exposed_provenance_mut::<u8>(start),
                image.len(),
            )
        };
        Ok(start as u64)
    }

    /// Frees the module allocation of `context` at `addr` (a module unloaded); nothing when no
    /// such allocation is live (its context already destroyed).
    pub(crate) fn free_module(&mut self, context: usize, addr: u64) {
        let Ok(addr) = usize::try_from(addr) else { return };
        if self.allocations.get(&addr).is_some_and(|a| a.context == context && a.module) {
            self.release(addr);
        }
    }

    /// Removes the allocation at `addr` from the table and gives its bytes back.
    fn release(&mut self, addr: usize) {
        let Some(allocation) = self.allocations.remove(&addr) else { return };
        if allocation.shared {
            // Back to its mapping, which stays mapped (a GPU's allocator keeps its pages).
            if let Some((_, mapping)) = self.mappings.range_mut(..=addr).next_back() {
                insert_merged(&mut mapping.free, addr, allocation.span);
            }
        } else {
            self.unmap(addr);
        }
    }

    /// Allocates `size` bytes of host memory for `context` (`cuMemHostAlloc`): a device
    /// allocation the host reads and writes at the same address, `mapped` where the device may
    /// be given it too (see [`host_device_pointer`](Self::host_device_pointer)).
    ///
    /// # Errors
    ///
    /// As [`alloc`](Self::alloc).
    pub(crate) fn alloc_host(
        &mut self,
        context: usize,
        size: usize,
        mapped: bool,
    ) -> Result<usize, CuResult> {
        let addr = self.alloc(context, size)?;
        self.host.insert(addr, mapped);
        Ok(addr)
    }

    /// Whether the `len` host bytes at `addr` lie inside one live `cuMemHostAlloc` allocation
    /// (page-locked memory): the only host memory an asynchronous copy leaves before it runs.
    pub(crate) fn is_page_locked(&self, addr: usize, len: usize) -> bool {
        let Some((&start, _)) = self.host.range(..=addr).next_back() else { return false };
        self.allocations
            .get(&start)
            .is_some_and(|a| addr.checked_add(len).is_some_and(|end| end <= start.saturating_add(a.size)))
    }

    /// The device address of the mapped host allocation that starts at `addr`: `addr`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` where no live host allocation starts there, or it is not
    /// mapped.
    pub(crate) fn host_device_pointer(&self, addr: usize) -> Result<u64, CuResult> {
        match self.host.get(&addr) {
            Some(true) => u64::try_from(addr).map_err(|_| CUDA_ERROR_INVALID_VALUE),
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }

    /// Frees the host allocation that starts at `addr`, of whichever context made it.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` where no live host allocation starts there.
    pub(crate) fn free_host(&mut self, addr: usize) -> Result<(), CuResult> {
        let context = match (self.host.contains_key(&addr), self.allocations.get(&addr)) {
            (true, Some(allocation)) => allocation.context,
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        };
        self.host.remove(&addr);
        self.free(context, u64::try_from(addr).map_err(|_| CUDA_ERROR_INVALID_VALUE)?)
    }

    /// Frees every allocation of `context` and unmaps its mappings (the context is being
    /// destroyed).
    pub fn free_context(&mut self, context: usize) {
        let allocations = &self.allocations;
        self.host.retain(|addr, _| allocations.get(addr).is_some_and(|a| a.context != context));
        self.allocations.retain(|_, a| a.context != context);
        let owned: Vec<usize> =
            self.mappings.iter().filter(|(_, m)| m.context == context).map(|(&start, _)| start).collect();
        for start in owned {
            self.unmap(start);
        }
    }

    /// How many allocations `context` has, and how many bytes they hold (its modules' variables
    /// not counted).
    pub(crate) fn usage(&self, context: usize) -> (usize, usize) {
        self.allocations
            .values()
            .filter(|a| a.context == context && !a.module)
            .fold((0, 0), |(count, bytes), a| (count + 1, bytes + a.size))
    }

    /// The live allocation `[start, start + size)` that holds `[addr, addr + len)`, if any.
    fn holding(&self, addr: usize, len: usize) -> Option<(usize, &Allocation)> {
        let (&start, allocation) = self.allocations.range(..=addr).next_back()?;
        let end = addr.checked_add(len)?;
        (end <= start + allocation.size).then_some((start, allocation))
    }

    /// The mapping `[start, start + len)` that holds `[addr, addr + len)`, if any.
    fn mapped(&self, addr: usize, len: usize) -> Option<(usize, &Mapping)> {
        let (&start, mapping) = self.mappings.range(..=addr).next_back()?;
        let end = addr.checked_add(len)?;
        (end <= start + mapping.len).then_some((start, mapping))
    }

    /// The address of `[addr, addr + len)` when it lies inside one live allocation of
    /// `context`: what `cuMemcpy*` may copy to or from.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_VALUE` otherwise.
    pub(crate) fn device_range(&self, context: usize, addr: u64, len: usize) -> Result<usize, CuResult> {
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
    pub(crate) unsafe fn copy_to_device(
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
    pub(crate) unsafe fn copy_from_device(
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
    /// memory access. The stores it records as crossings ([`KernelMemory::crossings`]) are
    /// the caller's to add to [`crossings`](DeviceMemory::crossings) once it has run.
    pub fn kernel_view(&self, context: usize, pageable_memory_access: bool) -> KernelMemory<'_> {
        let (base, end) = self.region.as_ref().map_or((0, 0), |region| (region.base, region.end));
        KernelMemory {
            memory: self,
            context,
            pageable_memory_access,
            base,
            end,
            recent: Default::default(),
            crossings: RefCell::new(Vec::new()),
            stop: None,
        }
    }
}

/// Adds the free range `[start, start + len)` to `free`, merged with its neighbours.
fn insert_merged(free: &mut BTreeMap<usize, usize>, mut start: usize, mut len: usize) {
    if let Some((&before, &before_len)) = free.range(..start).next_back()
        && before + before_len == start
    {
        free.remove(&before);
        start = before;
        len += before_len;
    }
    if let Some(after_len) = free.remove(&(start + len)) {
        len += after_len;
    }
    free.insert(start, len);
}

/// A kernel's view of memory during one launch: every global load and store of a kernel goes
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
    /// The mappings `[start, end)` of the latest device accesses, most recent first: a
    /// kernel's accesses cluster in a few buffers.
    recent: [Cell<(usize, usize)>; RECENT],
    /// The stores that crossed an allocation, in order.
    crossings: RefCell<Vec<Crossing>>,
    /// Set when the kernel's context is destroyed while it runs ([`Fault::Stopped`]).
    stop: Option<Arc<AtomicBool>>,
}

/// How many mappings [`KernelMemory`] remembers.
const RECENT: usize = 4;

impl KernelMemory<'_> {
    /// The view, with the kernel stopping ([`Fault::Stopped`]) once `stop` is set.
    #[must_use]
    pub(crate) fn stopped_by(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Whether the kernel's context was destroyed under it: it must stop.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(|stop| stop.load(Ordering::Acquire))
    }

    /// The address of `[addr, addr + len)` if the kernel may access it, and whether it is
    /// device memory.
    fn resolve(&self, addr: u64, len: usize) -> Result<(usize, bool), Fault> {
        let start = usize::try_from(addr).map_err(|_| Fault::IllegalAddress)?;
        let end = start.checked_add(len).ok_or(Fault::IllegalAddress)?;
        if start < self.end && self.base < end {
            for slot in &self.recent {
                let (low, high) = slot.get();
                if low <= start && end <= high {
                    return Ok((start, true));
                }
            }
            return match self.memory.mapped(start, len) {
                Some((base, mapping)) if mapping.context == self.context => {
                    let mut newer = (base, base + mapping.len);
                    for slot in &self.recent {
                        newer = slot.replace(newer);
                    }
                    Ok((start, true))
                }
                _ => Err(Fault::IllegalAddress),
            };
        }
        if self.pageable_memory_access && (LOWEST_HOST_ADDRESS..HIGHEST_HOST_ADDRESS).contains(&addr) {
            Ok((start, false))
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
        let (at, _) = self.resolve(addr, N)?;
        // SAFETY: `resolve` allowed the range: either inside a mapping of this context
        // (accessible pages, kept mapped by the borrowed table), or host memory on a device
        // with pageable memory access, which the launch's caller vouches for (module docs).
        // Unaligned reads are fine for a byte array.
        Ok(unsafe { ptr::with_exposed_provenance::<[u8; N]>(at).read_unaligned() })
    }

    /// Stores `bytes` at `base + offset` (wrapping), which must be a multiple of `N`; `base`
    /// is the pointer the kernel's address comes from (one of its parameters). A store in
    /// device memory outside the allocation `base` lies in is recorded as a [`Crossing`].
    ///
    /// # Errors
    ///
    /// The [`Fault`] the device would raise for the access.
    pub fn store<const N: usize>(&self, base: u64, offset: u64, bytes: [u8; N]) -> Result<(), Fault> {
        let at = self.write_target(base, offset, N)?;
        // SAFETY: as in `load`.
        unsafe { ptr::with_exposed_provenance_mut::<[u8; N]>(at).write_unaligned(bytes) };
        Ok(())
    }

    /// Replaces the 4-byte word at `base + offset` by `update(old)` atomically (a
    /// compare-and-swap loop on the host, so that kernels running at once lose no update),
    /// recorded as a store is ([`store`](KernelMemory::store)): the old value.
    ///
    /// # Errors
    ///
    /// The [`Fault`] the device would raise for the access.
    pub(crate) fn atomic_u32(
        &self,
        base: u64,
        offset: u64,
        mut update: impl FnMut(u32) -> u32,
    ) -> Result<u32, Fault> {
        let at = self.write_target(base, offset, 4)?;
        // SAFETY: `at` is 4-aligned (checked) and inside memory the kernel may access (as in
        // `load`); every access to device memory while kernels run goes through this view, by
        // reads, writes and these atomics, so treating the word as an atomic is sound for the
        // emulator's own accesses (a host thread racing on guest memory is the embedder's
        // contract, as on a GPU).
        let word = unsafe { AtomicU32::from_ptr(ptr::with_exposed_provenance_mut::<u32>(at)) };
        Ok(word
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| Some(update(old)))
            .unwrap_or_else(|old| old))
    }

    /// [`atomic_u32`](KernelMemory::atomic_u32) for an 8-byte word.
    ///
    /// # Errors
    ///
    /// The [`Fault`] the device would raise for the access.
    pub(crate) fn atomic_u64(
        &self,
        base: u64,
        offset: u64,
        mut update: impl FnMut(u64) -> u64,
    ) -> Result<u64, Fault> {
        let at = self.write_target(base, offset, 8)?;
        // SAFETY: as in `atomic_u32`, for an 8-aligned word.
        let word = unsafe { AtomicU64::from_ptr(ptr::with_exposed_provenance_mut::<u64>(at)) };
        Ok(word
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| Some(update(old)))
            .unwrap_or_else(|old| old))
    }

    /// Where a write of `len` bytes at `base + offset` goes, checked (alignment, then reach)
    /// and recorded as a crossing when it leaves `base`'s allocation.
    fn write_target(&self, base: u64, offset: u64, len: usize) -> Result<usize, Fault> {
        let addr = base.wrapping_add(offset);
        if !addr.is_multiple_of(len as u64) {
            return Err(Fault::Misaligned);
        }
        let (at, device) = self.resolve(addr, len)?;
        if device {
            let from = usize::try_from(base).ok().and_then(|b| self.memory.holding(b, 1));
            let inside = from.is_some_and(|(start, allocation)| {
                start <= at && at.checked_add(len).is_some_and(|end| end <= start + allocation.size)
            });
            if !inside {
                self.crossings.borrow_mut().push(Crossing {
                    context: self.context,
                    base,
                    from: from.map(|(start, _)| start as u64),
                    addr,
                    len,
                    into: self.memory.holding(at, 1).map(|(start, _)| start as u64),
                });
            }
        }
        Ok(at)
    }

    /// The stores of this launch that crossed an allocation, in order.
    pub fn crossings(self) -> Vec<Crossing> {
        self.crossings.into_inner()
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
    fn small_allocations_share_a_mapping_are_poisoned_aligned_and_reused() {
        let mut memory = DeviceMemory::new();
        let a = memory.alloc(1, 100).unwrap();
        let b = memory.alloc(1, 100).unwrap();
        assert_eq!(a % 256, 0);
        assert_eq!(b, a + 256, "the next 256-byte slot of the same mapping");
        let view = memory.kernel_view(1, false);
        // Not cleared: every byte is the poison until written.
        assert_eq!(view.load::<4>(a as u64 + 96), Ok([POISON; 4]));
        view.store(a as u64, 0, [1u8, 2, 3, 4]).unwrap();
        assert_eq!(view.load::<4>(a as u64), Ok([1, 2, 3, 4]));
        // Past the end of `a`, into `b`: no fault (one mapping), but the store is recorded.
        assert_eq!(view.load::<4>(a as u64 + 256), Ok([POISON; 4]));
        view.store(a as u64, 256, [9u8; 4]).unwrap();
        // Inside `a` but not a multiple of the access's size: misaligned, whatever the address.
        assert_eq!(view.load::<4>(a as u64 + 2), Err(Fault::Misaligned));
        assert_eq!(view.store(a as u64, 4, [0u8; 8]), Err(Fault::Misaligned));
        assert_eq!(view.load::<1>(a as u64 + 97), Ok([POISON]));
        let crossing = Crossing {
            context: 1,
            base: a as u64,
            from: Some(a as u64),
            addr: a as u64 + 256,
            len: 4,
            into: Some(b as u64),
        };
        assert_eq!(view.crossings(), [crossing]);
        assert_eq!(memory.usage(1), (2, 200));

        memory.free(1, a as u64).unwrap();
        assert_eq!(memory.usage(1), (1, 100));
        assert_eq!(memory.free(1, a as u64), Err(CUDA_ERROR_INVALID_VALUE));
        // The freed address is handed out again, poisoned again.
        let c = memory.alloc(1, 64).unwrap();
        assert_eq!(c, a);
        let view = memory.kernel_view(1, true);
        assert_eq!(view.load::<4>(c as u64), Ok([POISON; 4]));
        // A store through a pointer that is no allocation's is recorded as such.
        view.store(c as u64 + 128, 0, [0u8; 4]).unwrap();
        assert_eq!(view.crossings()[0].from, None);
        assert_eq!(memory.usage(1), (2, 164));
    }

    #[test]
    fn large_allocations_have_their_own_mapping_and_their_range_is_reused() {
        let mut memory = DeviceMemory::new();
        let big = memory.alloc(1, SMALL_MAX + 1).unwrap();
        let view = memory.kernel_view(1, false);
        assert_eq!(view.load::<8>(big as u64 + SMALL_MAX as u64 - 8), Ok([POISON; 8]));
        drop(view);
        memory.free(1, big as u64).unwrap();
        let view = memory.kernel_view(1, true);
        // Unmapped: a stale pointer is an illegal address, even with pageable memory access.
        assert_eq!(view.load::<1>(big as u64), Err(Fault::IllegalAddress));
        drop(view);
        assert_eq!(memory.alloc(1, SMALL_MAX + 1).unwrap(), big, "the range is handed out again");
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
        // Another context's mapping is not this one's.
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
        let view = memory.kernel_view(1, true);
        assert_eq!(view.load::<1>(mine), Err(Fault::IllegalAddress), "the context's mappings are gone");
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
