//! The control API for tests: the `kargs_emu_*` functions `export_driver_api!` exports beside
//! the driver's, to add devices, inject failures and read counts. C ABI, scalars (and one
//! name string) only; none of them needs `cuInit`, and none can fail the way a driver call
//! does: a bad argument gives `-1`, `0` or nothing, as each function says.
//!
//! Fault injection is per calling thread (`src/faults.rs`); devices, counts and
//! statistics belong to the library instance.

use std::ffi::{CStr, c_char, c_int, c_longlong, c_ulonglong};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::faults::{self, EntryPoint};
use crate::state::{self, DeviceConfig, Live};

/// Runs `body`; a panic gives `fallback`, so nothing unwinds into C.
fn guarded<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The entry point named by the NUL-terminated `name`, if any.
///
/// # Safety
///
/// `name` is null or a NUL-terminated string.
unsafe fn entry_named(name: *const c_char) -> Option<EntryPoint> {
    if name.is_null() {
        return None;
    }
    // SAFETY: non-null, and NUL-terminated (this function's contract).
    let name = unsafe { CStr::from_ptr(name) };
    EntryPoint::from_symbol(name.to_bytes())
}

/// `int kargs_emu_add_device(int pageable_memory_access, int uses_host_page_tables,
/// int cc_major, int cc_minor, int shared_memory_optin)`: adds a device (non-zero flags are
/// true): its ordinal. `-1` for a negative compute capability or opt-in size.
pub fn add_device(
    pageable_memory_access: c_int,
    uses_host_page_tables: c_int,
    cc_major: c_int,
    cc_minor: c_int,
    shared_memory_optin: c_int,
) -> c_int {
    guarded(-1, || {
        if cc_major < 0 || cc_minor < 0 || shared_memory_optin < 0 {
            return -1;
        }
        let config = DeviceConfig {
            pageable_memory_access: pageable_memory_access != 0,
            uses_host_page_tables: uses_host_page_tables != 0,
            compute_capability: (cc_major, cc_minor),
            shared_memory_optin,
        };
        c_int::try_from(state::lock().add_device(config)).unwrap_or(-1)
    })
}

/// `void kargs_emu_fail_call(const char *name, unsigned long long nth, int code)`: the `nth`
/// call (1-based) of entry point `name` (its exported symbol, e.g. `cuMemAlloc_v2`) on this
/// thread from now on returns `code` and has no effect. An unknown name or an `nth` of 0 arms
/// nothing.
///
/// # Safety
///
/// `name` is null or a NUL-terminated string.
pub unsafe fn fail_call(name: *const c_char, nth: c_ulonglong, code: c_int) {
    guarded((), || {
        // SAFETY: this function's contract.
        if let Some(entry) = unsafe { entry_named(name) } {
            faults::arm(entry, nth, code);
        }
    });
}

/// `void kargs_emu_clear_faults(void)`: disarms this thread's failures and zeroes its call
/// counts.
pub fn clear_faults() {
    guarded((), faults::clear);
}

/// `unsigned long long kargs_emu_call_count(const char *name)`: calls of entry point `name`
/// on this thread since the last clear, injected failures included; 0 for an unknown name.
///
/// # Safety
///
/// `name` is null or a NUL-terminated string.
pub unsafe fn call_count(name: *const c_char) -> c_ulonglong {
    guarded(0, || {
        // SAFETY: this function's contract.
        unsafe { entry_named(name) }.map_or(0, faults::call_count)
    })
}

/// `void kargs_emu_hold_call(const char *name)`: the next call of entry point `name` on this
/// thread waits on entry until `kargs_emu_release_held` (at most
/// `HOLD_LIMIT`), then runs as usual. An unknown name holds
/// nothing.
///
/// # Safety
///
/// `name` is null or a NUL-terminated string.
pub unsafe fn hold_call(name: *const c_char) {
    guarded((), || {
        // SAFETY: this function's contract.
        if let Some(entry) = unsafe { entry_named(name) } {
            faults::hold(entry);
        }
    });
}

/// `unsigned long long kargs_emu_held(void)`: how many calls wait in a hold now, on any
/// thread.
pub fn held() -> c_ulonglong {
    guarded(0, faults::held)
}

/// `void kargs_emu_release_held(void)`: lets every call waiting in a hold go on.
pub fn release_held() {
    guarded((), faults::release_held);
}

/// `long long kargs_emu_live(int ordinal, int what)`: for device `ordinal`'s primary context,
/// `what` = 0: the retain count, 1: loaded modules, 2: streams, 3: live allocations, 4: bytes
/// allocated (0 without a context; [`Live`]). `-1` for a bad ordinal or `what`.
pub fn live(ordinal: c_int, what: c_int) -> c_longlong {
    guarded(-1, || {
        let Some(what) = Live::from_code(what) else { return -1 };
        state::lock().live(ordinal, what).map_or(-1, |n| c_longlong::try_from(n).unwrap_or(c_longlong::MAX))
    })
}

/// `int kargs_emu_sticky_error(int ordinal)`: the sticky error of device `ordinal`'s primary
/// context; 0 for none, no context or a bad ordinal.
pub fn sticky_error(ordinal: c_int) -> c_int {
    guarded(0, || state::lock().sticky_error(ordinal))
}

/// `unsigned long long kargs_emu_crossings(int ordinal)`: how many kernel stores on device
/// `ordinal` landed outside the allocation their pointer came from
/// ([`Crossing`](crate::memory::Crossing)) since the library was loaded or the device's record
/// was cleared; 0 for a bad ordinal.
pub fn crossings(ordinal: c_int) -> c_ulonglong {
    guarded(0, || {
        let Ok(ordinal) = usize::try_from(ordinal) else { return 0 };
        let memory = state::memory();
        let crossings = memory.crossings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = crossings.iter().filter(|(device, _)| *device == ordinal).count();
        c_ulonglong::try_from(count).unwrap_or(c_ulonglong::MAX)
    })
}

/// `void kargs_emu_clear_crossings(int ordinal)`: forgets device `ordinal`'s crossings.
pub fn clear_crossings(ordinal: c_int) {
    guarded((), || {
        let Ok(ordinal) = usize::try_from(ordinal) else { return };
        let memory = state::memory();
        let mut crossings = memory.crossings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        crossings.retain(|(device, _)| *device != ordinal);
    });
}

/// `void kargs_emu_set_delay(unsigned long long micros)`: a slow device: every operation
/// queued on a stream waits `micros` microseconds before it runs (0: none), library-wide.
pub fn set_delay(micros: c_ulonglong) {
    guarded((), || crate::stream::set_delay(std::time::Duration::from_micros(micros)));
}

/// `void kargs_emu_set_inline(int inline)`: non-zero: work queued on a stream runs on the
/// calling thread before the call returns; 0: on the stream's worker (the default).
pub fn set_inline(inline: c_int) {
    guarded((), || crate::stream::set_inline(inline != 0));
}

/// `unsigned long long kargs_emu_function_instructions(CUfunction f)`: the PTX instructions the
/// threads of every launch of `f` executed so far (a kernel's cost as a number); 0 for a
/// handle that is not a loaded function.
pub fn function_instructions(f: *mut std::ffi::c_void) -> c_ulonglong {
    guarded(0, || state::lock().functions.get(&f.addr()).map_or(0, |function| function.instructions))
}

/// What `kargs_emu_stat` reports, for the whole library instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Kernels run: launches whose PTX was interpreted (`what` = 0).
    KernelsRun,
    /// Nanoseconds spent running kernels on the CPU (1).
    KernelNanos,
    /// Threads run (2).
    Threads,
    /// The most kernels that ran at the same time, on streams' workers (3).
    MostConcurrentKernels,
    /// PTX instructions executed by the kernels' threads (4): a launch's cost as a number.
    Instructions,
}

impl Stat {
    /// Every statistic, in the order of their codes.
    pub const ALL: [Stat; 5] =
        [Stat::KernelsRun, Stat::KernelNanos, Stat::Threads, Stat::MostConcurrentKernels, Stat::Instructions];

    /// The statistic's `what` code in `kargs_emu_stat`.
    pub const fn code(self) -> c_int {
        self as c_int
    }

    /// The statistic with `what` code `code`.
    pub fn from_code(code: c_int) -> Option<Stat> {
        Stat::ALL.into_iter().find(|stat| stat.code() == code)
    }
}

/// `unsigned long long kargs_emu_stat(int what)`: for this library instance, `what` = 0:
/// kernels run, 1: nanoseconds spent running them on the CPU, 2: threads run, 3: the most
/// kernels that ran at once, 4: PTX instructions executed ([`Stat`]). 0 for another `what`.
pub fn stat(what: c_int) -> c_ulonglong {
    guarded(0, || {
        let stats = state::lock().stats;
        match Stat::from_code(what) {
            Some(Stat::KernelsRun) => stats.kernels_launched,
            Some(Stat::KernelNanos) => stats.kernel_nanos,
            Some(Stat::Threads) => stats.threads,
            Some(Stat::MostConcurrentKernels) => crate::stream::most_concurrent_kernels(),
            Some(Stat::Instructions) => stats.instructions,
            None => 0,
        }
    })
}
