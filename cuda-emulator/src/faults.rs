//! Fault injection, held calls and call counts, per calling thread: the driver entry points by
//! name, how often each was called on this thread, and the failures and holds armed for this
//! thread's next calls.
//!
//! Tests run on threads of their own, so what one test arms can only affect its own calls.
//!
//! - [`arm`] makes the `nth` call of an entry point from now on (1-based) return a chosen code
//!   *without any effect*: an armed call is answered before the emulator looks at its
//!   arguments, so it writes no out-parameter and creates, allocates or frees nothing. The one
//!   effect is the driver's: a sticky code ([`crate::result::STICKY`]) becomes the calling
//!   thread's current context's sticky error, as a real fault's would; and a failing
//!   `cuStreamSynchronize` still waits for the stream's work before it answers, as the
//!   driver's does. Several
//!   failures may be armed at once; a call that two armed failures name returns the code armed
//!   first (and uses both up).
//! - [`hold`] makes the next call of an entry point on this thread wait, on entry (before it
//!   looks at anything, holding no lock), until another thread calls [`release_held`] — or
//!   [`HOLD_LIMIT`] has passed, so that a test that forgets to release cannot hang a run. It
//!   then runs as usual. [`held`] says how many calls wait now, library-wide: a test holds a
//!   call on one thread (a launch "in flight"), waits until `held() > 0`, acts on another,
//!   then releases it.
//! - [`clear`] disarms this thread's failures and holds and zeroes its counts.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::result::CuResult;

/// The longest a held call waits for [`release_held`].
pub const HOLD_LIMIT: Duration = Duration::from_secs(60);

/// A driver entry point the emulator exports, named as its exported symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryPoint {
    /// `cuInit`.
    Init,
    /// `cuDriverGetVersion`.
    DriverGetVersion,
    /// `cuDeviceGetCount`.
    DeviceGetCount,
    /// `cuDeviceGet`.
    DeviceGet,
    /// `cuDeviceGetAttribute`.
    DeviceGetAttribute,
    /// `cuDeviceGetName`.
    DeviceGetName,
    /// `cuDevicePrimaryCtxRetain`.
    DevicePrimaryCtxRetain,
    /// `cuDevicePrimaryCtxRelease_v2`.
    DevicePrimaryCtxRelease,
    /// `cuDevicePrimaryCtxReset_v2`.
    DevicePrimaryCtxReset,
    /// `cuCtxPushCurrent_v2`.
    CtxPushCurrent,
    /// `cuCtxPopCurrent_v2`.
    CtxPopCurrent,
    /// `cuModuleLoadDataEx`.
    ModuleLoadDataEx,
    /// `cuModuleUnload`.
    ModuleUnload,
    /// `cuModuleGetFunction`.
    ModuleGetFunction,
    /// `cuFuncGetParamInfo`.
    FuncGetParamInfo,
    /// `cuFuncGetParamCount`.
    FuncGetParamCount,
    /// `cuFuncGetAttribute`.
    FuncGetAttribute,
    /// `cuFuncSetAttribute`.
    FuncSetAttribute,
    /// `cuStreamCreate`.
    StreamCreate,
    /// `cuStreamDestroy_v2`.
    StreamDestroy,
    /// `cuStreamSynchronize`.
    StreamSynchronize,
    /// `cuStreamQuery`.
    StreamQuery,
    /// `cuMemAlloc_v2`.
    MemAlloc,
    /// `cuMemFree_v2`.
    MemFree,
    /// `cuMemHostAlloc`.
    MemHostAlloc,
    /// `cuMemHostGetDevicePointer_v2`.
    MemHostGetDevicePointer,
    /// `cuMemFreeHost`.
    MemFreeHost,
    /// `cuMemcpyHtoDAsync_v2`.
    MemcpyHtoDAsync,
    /// `cuMemcpyDtoHAsync_v2`.
    MemcpyDtoHAsync,
    /// `cuLaunchKernel`.
    LaunchKernel,
}

impl EntryPoint {
    /// Every entry point, in the order of the table in `export_driver_api!`.
    pub const ALL: [EntryPoint; 30] = [
        EntryPoint::Init,
        EntryPoint::DriverGetVersion,
        EntryPoint::DeviceGetCount,
        EntryPoint::DeviceGet,
        EntryPoint::DeviceGetAttribute,
        EntryPoint::DeviceGetName,
        EntryPoint::DevicePrimaryCtxRetain,
        EntryPoint::DevicePrimaryCtxRelease,
        EntryPoint::DevicePrimaryCtxReset,
        EntryPoint::CtxPushCurrent,
        EntryPoint::CtxPopCurrent,
        EntryPoint::ModuleLoadDataEx,
        EntryPoint::ModuleUnload,
        EntryPoint::ModuleGetFunction,
        EntryPoint::FuncGetParamInfo,
        EntryPoint::FuncGetParamCount,
        EntryPoint::FuncGetAttribute,
        EntryPoint::FuncSetAttribute,
        EntryPoint::StreamCreate,
        EntryPoint::StreamDestroy,
        EntryPoint::StreamSynchronize,
        EntryPoint::StreamQuery,
        EntryPoint::MemAlloc,
        EntryPoint::MemFree,
        EntryPoint::MemHostAlloc,
        EntryPoint::MemHostGetDevicePointer,
        EntryPoint::MemFreeHost,
        EntryPoint::MemcpyHtoDAsync,
        EntryPoint::MemcpyDtoHAsync,
        EntryPoint::LaunchKernel,
    ];

    /// The exported symbol's name.
    pub const fn symbol(self) -> &'static str {
        match self {
            EntryPoint::Init => "cuInit",
            EntryPoint::DriverGetVersion => "cuDriverGetVersion",
            EntryPoint::DeviceGetCount => "cuDeviceGetCount",
            EntryPoint::DeviceGet => "cuDeviceGet",
            EntryPoint::DeviceGetAttribute => "cuDeviceGetAttribute",
            EntryPoint::DeviceGetName => "cuDeviceGetName",
            EntryPoint::DevicePrimaryCtxRetain => "cuDevicePrimaryCtxRetain",
            EntryPoint::DevicePrimaryCtxRelease => "cuDevicePrimaryCtxRelease_v2",
            EntryPoint::DevicePrimaryCtxReset => "cuDevicePrimaryCtxReset_v2",
            EntryPoint::CtxPushCurrent => "cuCtxPushCurrent_v2",
            EntryPoint::CtxPopCurrent => "cuCtxPopCurrent_v2",
            EntryPoint::ModuleLoadDataEx => "cuModuleLoadDataEx",
            EntryPoint::ModuleUnload => "cuModuleUnload",
            EntryPoint::ModuleGetFunction => "cuModuleGetFunction",
            EntryPoint::FuncGetParamInfo => "cuFuncGetParamInfo",
            EntryPoint::FuncGetParamCount => "cuFuncGetParamCount",
            EntryPoint::FuncGetAttribute => "cuFuncGetAttribute",
            EntryPoint::FuncSetAttribute => "cuFuncSetAttribute",
            EntryPoint::StreamCreate => "cuStreamCreate",
            EntryPoint::StreamDestroy => "cuStreamDestroy_v2",
            EntryPoint::StreamSynchronize => "cuStreamSynchronize",
            EntryPoint::StreamQuery => "cuStreamQuery",
            EntryPoint::MemAlloc => "cuMemAlloc_v2",
            EntryPoint::MemFree => "cuMemFree_v2",
            EntryPoint::MemHostAlloc => "cuMemHostAlloc",
            EntryPoint::MemHostGetDevicePointer => "cuMemHostGetDevicePointer_v2",
            EntryPoint::MemFreeHost => "cuMemFreeHost",
            EntryPoint::MemcpyHtoDAsync => "cuMemcpyHtoDAsync_v2",
            EntryPoint::MemcpyDtoHAsync => "cuMemcpyDtoHAsync_v2",
            EntryPoint::LaunchKernel => "cuLaunchKernel",
        }
    }

    /// The entry point exported as `symbol`.
    pub fn from_symbol(symbol: &[u8]) -> Option<EntryPoint> {
        EntryPoint::ALL.into_iter().find(|entry| entry.symbol().as_bytes() == symbol)
    }

    /// Its index in [`EntryPoint::ALL`].
    const fn index(self) -> usize {
        self as usize
    }
}

/// One armed failure.
#[derive(Debug, Clone, Copy)]
struct Armed {
    entry: EntryPoint,
    /// The call count at which it fires.
    at_call: u64,
    code: CuResult,
}

/// This thread's counts, armed failures and armed holds.
#[derive(Debug)]
struct ThreadFaults {
    calls: [u64; EntryPoint::ALL.len()],
    armed: Vec<Armed>,
    /// Entry points and the call count at which the call is held.
    holds: Vec<(EntryPoint, u64)>,
}

thread_local! {
    static FAULTS: RefCell<ThreadFaults> = const {
        RefCell::new(ThreadFaults { calls: [0; EntryPoint::ALL.len()], armed: Vec::new(), holds: Vec::new() })
    };
}

/// Calls waiting in [`hold`] now, and how many times [`release_held`] was called.
#[derive(Debug)]
struct Holds {
    waiting: u64,
    releases: u64,
}

static HOLDS: Mutex<Holds> = Mutex::new(Holds { waiting: 0, releases: 0 });
static RELEASED: Condvar = Condvar::new();

/// Counts a call of `entry` on this thread, waits if a hold is armed for it, and returns the
/// code of an armed failure it triggers, if any.
pub fn on_call(entry: EntryPoint) -> Option<CuResult> {
    // A thread being torn down has no thread-locals left: its calls are neither counted nor
    // failed.
    let (held, fired) = FAULTS
        .try_with(|faults| {
            let mut faults = faults.borrow_mut();
            let Some(calls) = faults.calls.get_mut(entry.index()) else { return (false, None) };
            *calls = calls.saturating_add(1);
            let call = *calls;
            let holds = faults.holds.len();
            faults.holds.retain(|&(held, at_call)| !(held == entry && at_call == call));
            let held = faults.holds.len() != holds;
            let mut fired = None;
            faults.armed.retain(|armed| {
                let fires = armed.entry == entry && armed.at_call == call;
                if fires && fired.is_none() {
                    fired = Some(armed.code);
                }
                !fires
            });
            (held, fired)
        })
        .unwrap_or((false, None));
    if held {
        wait_for_release();
    }
    fired
}

/// Waits until [`release_held`] is called (at most [`HOLD_LIMIT`]).
fn wait_for_release() {
    let mut holds = HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
    let releases = holds.releases;
    holds.waiting += 1;
    let (mut holds, _) = RELEASED
        .wait_timeout_while(holds, HOLD_LIMIT, |holds| holds.releases == releases)
        .unwrap_or_else(PoisonError::into_inner);
    holds.waiting -= 1;
}

/// Holds the next call of `entry` on this thread until [`release_held`].
pub fn hold(entry: EntryPoint) {
    let _ = FAULTS.try_with(|faults| {
        let mut faults = faults.borrow_mut();
        let done = faults.calls.get(entry.index()).copied().unwrap_or(0);
        faults.holds.push((entry, done.saturating_add(1)));
    });
}

/// How many calls wait in a hold now, on any thread.
pub fn held() -> u64 {
    HOLDS.lock().unwrap_or_else(PoisonError::into_inner).waiting
}

/// Lets every call waiting in a hold go on.
pub fn release_held() {
    HOLDS.lock().unwrap_or_else(PoisonError::into_inner).releases += 1;
    RELEASED.notify_all();
}

/// Arms a failure: the `nth` call (1-based) of `entry` on this thread from now on returns
/// `code`. An `nth` of 0 arms nothing.
pub fn arm(entry: EntryPoint, nth: u64, code: CuResult) {
    if nth == 0 {
        return;
    }
    let _ = FAULTS.try_with(|faults| {
        let mut faults = faults.borrow_mut();
        let done = faults.calls.get(entry.index()).copied().unwrap_or(0);
        faults.armed.push(Armed { entry, at_call: done.saturating_add(nth), code });
    });
}

/// Disarms this thread's failures and holds and zeroes its call counts.
pub fn clear() {
    let _ = FAULTS.try_with(|faults| {
        let mut faults = faults.borrow_mut();
        faults.calls = [0; EntryPoint::ALL.len()];
        faults.armed.clear();
        faults.holds.clear();
    });
}

/// Calls of `entry` on this thread since the last [`clear`] (injected failures included).
pub fn call_count(entry: EntryPoint) -> u64 {
    FAULTS.try_with(|faults| faults.borrow().calls.get(entry.index()).copied().unwrap_or(0)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_round_trip_and_are_in_order() {
        for (index, entry) in EntryPoint::ALL.into_iter().enumerate() {
            assert_eq!(entry.index(), index);
            assert_eq!(EntryPoint::from_symbol(entry.symbol().as_bytes()), Some(entry));
        }
        assert_eq!(EntryPoint::from_symbol(b"cuMemAlloc"), None);
    }

    #[test]
    fn every_entry_point_is_in_the_export_table() {
        let table = include_str!("lib.rs");
        for entry in EntryPoint::ALL {
            assert!(table.contains(&format!("fn {}(", entry.symbol())), "{} is not exported", entry.symbol());
        }
    }

    #[test]
    fn the_nth_call_from_now_fails_once() {
        clear();
        on_call(EntryPoint::MemAlloc);
        arm(EntryPoint::MemAlloc, 2, 2);
        arm(EntryPoint::MemAlloc, 2, 9999);
        arm(EntryPoint::MemFree, 1, i32::MIN);
        arm(EntryPoint::MemFree, 0, 1);
        assert_eq!(on_call(EntryPoint::MemAlloc), None);
        assert_eq!(on_call(EntryPoint::MemAlloc), Some(2));
        assert_eq!(on_call(EntryPoint::MemAlloc), None);
        assert_eq!(call_count(EntryPoint::MemAlloc), 4);
        assert_eq!(on_call(EntryPoint::MemFree), Some(i32::MIN));
        assert_eq!(on_call(EntryPoint::MemFree), None);
        arm(EntryPoint::LaunchKernel, 1, 700);
        clear();
        assert_eq!(call_count(EntryPoint::MemAlloc), 0);
        assert_eq!(on_call(EntryPoint::LaunchKernel), None);
    }

    #[test]
    fn a_held_call_waits_for_the_release() {
        let waiter = std::thread::spawn(|| {
            hold(EntryPoint::StreamSynchronize);
            arm(EntryPoint::StreamSynchronize, 1, 700);
            let started = std::time::Instant::now();
            let code = on_call(EntryPoint::StreamSynchronize);
            // The next call is not held.
            assert_eq!(on_call(EntryPoint::StreamSynchronize), None);
            (code, started.elapsed())
        });
        while held() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        release_held();
        let (code, waited) = waiter.join().unwrap();
        assert_eq!(code, Some(700));
        assert!(waited >= Duration::from_millis(20), "{waited:?}");
    }
}
