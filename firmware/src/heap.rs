//! The heap, for wasmi only (the parser and the host pipeline allocate nothing), with an
//! allocation counter: the method of the host crates' allocation tests (every `alloc`,
//! `alloc_zeroed` and `realloc` counted), here on the target, around the calls it measures.

#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU32, Ordering};

use embedded_alloc::LlffHeap;

/// Bytes of RAM given to the heap: the guest's linear memory (17 pages of 64 KiB) and wasmi's
/// compiled module and store fit with room to spare.
pub const HEAP_SIZE: usize = 3 * 1024 * 1024;

/// A heap that counts the allocations made through it.
pub struct CountingHeap {
    heap: LlffHeap,
    allocations: AtomicU32,
}

#[global_allocator]
static HEAP: CountingHeap = CountingHeap { heap: LlffHeap::empty(), allocations: AtomicU32::new(0) };

/// Gives the heap its memory. Call once, first thing in `main`, in a binary that allocates (a
/// binary that never allocates links none of this: the linker drops the heap and its memory).
pub fn init() {
    #[unsafe(link_section = ".uninit.HEAP")]
    static mut HEAP_MEM: [MaybeUninit<u8>; HEAP_SIZE] = [MaybeUninit::uninit(); HEAP_SIZE];
    // SAFETY: called once, before any allocation; HEAP_MEM is used by nothing but the heap, and
    // `&raw mut` takes its address without making a reference to the static.
    unsafe { HEAP.heap.init(&raw mut HEAP_MEM as usize, HEAP_SIZE) }
}

/// Runs `f` and returns its result and how many allocations it made.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, u32) {
    let before = HEAP.allocations.load(Ordering::SeqCst);
    let result = f();
    (result, HEAP.allocations.load(Ordering::SeqCst).wrapping_sub(before))
}

/// Bytes of the heap in use now.
pub fn used() -> usize {
    HEAP.heap.used()
}

// SAFETY: every method forwards to LlffHeap's, which upholds GlobalAlloc's contract; the
// counter is only an atomic increment.
unsafe impl GlobalAlloc for CountingHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocations.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { self.heap.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.allocations.fetch_add(1, Ordering::SeqCst);
        // SAFETY: as for `alloc`.
        unsafe { self.heap.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged.
        unsafe { self.heap.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.allocations.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the caller's contract for `realloc` is passed on unchanged.
        unsafe { self.heap.realloc(ptr, layout, new_size) }
    }
}
