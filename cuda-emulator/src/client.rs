//! A client of an emulated driver library's control API, for tests in other crates: it loads
//! `libkargs_emulated_cuda.so` (or the 12.2 library) with `dlopen` — the same library
//! instance the launcher loads from that file — and calls its `kargs_emu_*` functions.
//!
//! ```no_run
//! use kernel_args_cuda_emulator::client::{DeviceConfig, Emulator, Live};
//!
//! let emulator = Emulator::load("target/debug/libkargs_emulated_cuda.so".as_ref()).unwrap();
//! let ordinal = emulator.add_device(DeviceConfig { pageable_memory_access: false, ..DeviceConfig::DEFAULT });
//! emulator.fail_call("cuMemAlloc_v2", 1, 2); // this thread's next cuMemAlloc_v2: out of memory
//! // ... open `ordinal` with the launcher, launch ...
//! assert_eq!(emulator.live(ordinal, Live::Allocations), 0);
//! ```
//!
//! A library is loaded once per process and never unloaded; loading it again (by any path to
//! the same file) gives the same [`Emulator`].

use std::ffi::{CStr, CString, c_char, c_int, c_longlong, c_ulonglong, c_void};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

pub use crate::control::Stat;
pub use crate::state::{DeviceConfig, Live};

/// The file name of the emulated CUDA 12.8 driver, the default (`cuda-emulator/driver`).
pub const LIBRARY: &str = "libkargs_emulated_cuda.so";
/// The file name of the emulated CUDA 13.2 driver (`cuda-emulator/driver-13-2`), built beside
/// [`LIBRARY`].
pub const LIBRARY_13_2: &str = "libkargs_emulated_cuda_13_2.so";
/// The file name of the emulated CUDA 12.2 driver (`cuda-emulator/driver-12-2`), built beside
/// [`LIBRARY`].
pub const LIBRARY_12_2: &str = "libkargs_emulated_cuda_12_2.so";

/// Why a library could not be used as an emulated driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(String);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// A loaded emulated driver's control API.
#[derive(Debug)]
pub struct Emulator {
    add_device: unsafe extern "C" fn(c_int, c_int, c_int, c_int, c_int) -> c_int,
    fail_call: unsafe extern "C" fn(*const c_char, c_ulonglong, c_int),
    clear_faults: unsafe extern "C" fn(),
    call_count: unsafe extern "C" fn(*const c_char) -> c_ulonglong,
    hold_call: unsafe extern "C" fn(*const c_char),
    held: unsafe extern "C" fn() -> c_ulonglong,
    release_held: unsafe extern "C" fn(),
    live: unsafe extern "C" fn(c_int, c_int) -> c_longlong,
    sticky_error: unsafe extern "C" fn(c_int) -> c_int,
    crossings: unsafe extern "C" fn(c_int) -> c_ulonglong,
    clear_crossings: unsafe extern "C" fn(c_int),
    set_delay: unsafe extern "C" fn(c_ulonglong),
    set_inline: unsafe extern "C" fn(c_int),
    stat: unsafe extern "C" fn(c_int) -> c_ulonglong,
}

/// Libraries loaded so far: the `dlopen` handle's address and the client.
static LOADED: Mutex<Vec<(usize, &'static Emulator)>> = Mutex::new(Vec::new());

/// The last `dlerror` message.
fn dl_error() -> String {
    // SAFETY: dlerror takes no arguments; it returns null or a NUL-terminated message.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return "unknown error".to_owned();
    }
    // SAFETY: non-null, and NUL-terminated (dlerror's contract); copied at once, before any
    // other dl* call can change it.
    unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
}

/// Looks up `name` in the library `handle` as an `F`.
///
/// # Safety
///
/// `handle` is a live `dlopen` handle, and `F` is the `unsafe extern "C" fn` type of `name`'s
/// prototype.
unsafe fn symbol<F: Copy>(handle: *mut c_void, name: &CStr) -> Result<F, LoadError> {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    // SAFETY: `handle` is live (this function's contract), `name` NUL-terminated.
    let found = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if found.is_null() {
        return Err(LoadError(format!(
            "no {}: not an emulated CUDA driver ({})",
            name.to_string_lossy(),
            dl_error()
        )));
    }
    // SAFETY: a non-null symbol of the library, and `F` is its function-pointer type (this
    // function's contract; same size, checked above).
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&found) })
}

impl Emulator {
    /// Loads the emulated driver library at `path` (or finds it loaded already).
    ///
    /// # Errors
    ///
    /// When `dlopen` fails or the library lacks the control API (it is not an emulated
    /// driver); the library stays loaded either way.
    pub fn load(path: &Path) -> Result<&'static Emulator, LoadError> {
        let name = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| LoadError(format!("{}: a path with a NUL byte", path.display())))?;
        // SAFETY: loading runs the library's initialisers; the emulated drivers have none but
        // Rust's, and any other library is one the caller chose to load.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(LoadError(format!("{}: {}", path.display(), dl_error())));
        }
        let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&(_, emulator)) = loaded.iter().find(|(known, _)| *known == handle.addr()) {
            return Ok(emulator);
        }
        let in_path = |e: LoadError| LoadError(format!("{}: {e}", path.display()));
        // Each field: the type is the prototype of the named control function (`control.rs`),
        // and the library is never unloaded.
        let emulator = Emulator {
            // SAFETY: as just said.
            add_device: unsafe { symbol(handle, c"kargs_emu_add_device") }.map_err(in_path)?,
            // SAFETY: as above.
            fail_call: unsafe { symbol(handle, c"kargs_emu_fail_call") }.map_err(in_path)?,
            // SAFETY: as above.
            clear_faults: unsafe { symbol(handle, c"kargs_emu_clear_faults") }.map_err(in_path)?,
            // SAFETY: as above.
            call_count: unsafe { symbol(handle, c"kargs_emu_call_count") }.map_err(in_path)?,
            // SAFETY: as above.
            hold_call: unsafe { symbol(handle, c"kargs_emu_hold_call") }.map_err(in_path)?,
            // SAFETY: as above.
            held: unsafe { symbol(handle, c"kargs_emu_held") }.map_err(in_path)?,
            // SAFETY: as above.
            release_held: unsafe { symbol(handle, c"kargs_emu_release_held") }.map_err(in_path)?,
            // SAFETY: as above.
            live: unsafe { symbol(handle, c"kargs_emu_live") }.map_err(in_path)?,
            // SAFETY: as above.
            sticky_error: unsafe { symbol(handle, c"kargs_emu_sticky_error") }.map_err(in_path)?,
            // SAFETY: as above.
            crossings: unsafe { symbol(handle, c"kargs_emu_crossings") }.map_err(in_path)?,
            // SAFETY: as above.
            clear_crossings: unsafe { symbol(handle, c"kargs_emu_clear_crossings") }.map_err(in_path)?,
            // SAFETY: as above.
            set_delay: unsafe { symbol(handle, c"kargs_emu_set_delay") }.map_err(in_path)?,
            // SAFETY: as above.
            set_inline: unsafe { symbol(handle, c"kargs_emu_set_inline") }.map_err(in_path)?,
            // SAFETY: as above.
            stat: unsafe { symbol(handle, c"kargs_emu_stat") }.map_err(in_path)?,
        };
        let emulator: &'static Emulator = Box::leak(Box::new(emulator));
        loaded.push((handle.addr(), emulator));
        Ok(emulator)
    }

    /// Adds a device with `config`: its ordinal.
    ///
    /// # Panics
    ///
    /// If the library refuses the configuration (a negative compute capability or opt-in size).
    pub fn add_device(&self, config: DeviceConfig) -> u32 {
        // SAFETY: scalars only.
        let ordinal = unsafe {
            (self.add_device)(
                c_int::from(config.pageable_memory_access),
                c_int::from(config.uses_host_page_tables),
                config.compute_capability.0,
                config.compute_capability.1,
                config.shared_memory_optin,
            )
        };
        u32::try_from(ordinal).unwrap_or_else(|_| panic!("the emulated driver refused the device {config:?}"))
    }

    /// Makes the `nth` call (1-based) of entry point `entry` (its symbol, e.g. `cuMemAlloc_v2`)
    /// on this thread from now on return `code`, with no effect.
    pub fn fail_call(&self, entry: &str, nth: u64, code: i32) {
        if let Ok(entry) = CString::new(entry) {
            // SAFETY: `entry` is NUL-terminated.
            unsafe { (self.fail_call)(entry.as_ptr(), nth, code) };
        }
    }

    /// Disarms this thread's failures and holds and zeroes its call counts.
    pub fn clear_faults(&self) {
        // SAFETY: no arguments.
        unsafe { (self.clear_faults)() };
    }

    /// Calls of `entry` on this thread since the last [`clear_faults`](Emulator::clear_faults).
    pub fn call_count(&self, entry: &str) -> u64 {
        let Ok(entry) = CString::new(entry) else { return 0 };
        // SAFETY: `entry` is NUL-terminated.
        unsafe { (self.call_count)(entry.as_ptr()) }
    }

    /// Makes the next call of `entry` on this thread wait until
    /// [`release_held`](Emulator::release_held).
    pub fn hold_call(&self, entry: &str) {
        if let Ok(entry) = CString::new(entry) {
            // SAFETY: `entry` is NUL-terminated.
            unsafe { (self.hold_call)(entry.as_ptr()) };
        }
    }

    /// How many calls wait in a hold now, on any thread.
    pub fn held(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { (self.held)() }
    }

    /// Lets every held call go on.
    pub fn release_held(&self) {
        // SAFETY: no arguments.
        unsafe { (self.release_held)() };
    }

    /// A count of device `ordinal`'s primary context; -1 for a bad ordinal.
    pub fn live(&self, ordinal: u32, what: Live) -> i64 {
        let Ok(ordinal) = c_int::try_from(ordinal) else { return -1 };
        // SAFETY: scalars only.
        unsafe { (self.live)(ordinal, what.code()) }
    }

    /// Every count of device `ordinal`'s primary context, in [`Live::ALL`]'s order: retain
    /// count, modules, streams, allocations, bytes allocated.
    pub fn live_all(&self, ordinal: u32) -> [i64; 5] {
        Live::ALL.map(|what| self.live(ordinal, what))
    }

    /// The sticky error of device `ordinal`'s primary context (0 for none).
    pub fn sticky_error(&self, ordinal: u32) -> i32 {
        let Ok(ordinal) = c_int::try_from(ordinal) else { return 0 };
        // SAFETY: scalars only.
        unsafe { (self.sticky_error)(ordinal) }
    }

    /// How many kernel stores on device `ordinal` landed outside the allocation their pointer
    /// came from (a neighbour on a shared page, freed bytes, a stale pointer): 0 means no write
    /// crossed an allocation.
    pub fn crossings(&self, ordinal: u32) -> u64 {
        let Ok(ordinal) = c_int::try_from(ordinal) else { return 0 };
        // SAFETY: scalars only.
        unsafe { (self.crossings)(ordinal) }
    }

    /// Forgets device `ordinal`'s crossings.
    pub fn clear_crossings(&self, ordinal: u32) {
        let Ok(ordinal) = c_int::try_from(ordinal) else { return };
        // SAFETY: scalars only.
        unsafe { (self.clear_crossings)(ordinal) }
    }

    /// A slow device: every operation queued on a stream waits `delay` before it runs (zero for
    /// none), for the whole library.
    pub fn set_delay(&self, delay: std::time::Duration) {
        let micros = c_ulonglong::try_from(delay.as_micros()).unwrap_or(c_ulonglong::MAX);
        // SAFETY: a scalar.
        unsafe { (self.set_delay)(micros) }
    }

    /// Work queued on a stream runs on the calling thread before the call returns (`true`), or
    /// on the stream's worker (`false`, the default), for the whole library: for measuring the
    /// host's own costs without the emulator's hand-offs between threads.
    pub fn set_inline(&self, inline: bool) {
        // SAFETY: a scalar.
        unsafe { (self.set_inline)(c_int::from(inline)) }
    }

    /// A statistic of the whole library.
    pub fn stat(&self, what: Stat) -> u64 {
        // SAFETY: scalars only.
        unsafe { (self.stat)(what.code()) }
    }
}
