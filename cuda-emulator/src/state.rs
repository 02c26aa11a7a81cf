//! The emulated driver's state: its devices, their primary contexts, and the modules,
//! functions, streams and allocations that live in a context. Every handle the C ABI hands out
//! is looked up here.
//!
//! One [`State`] per loaded library, behind one `Mutex` ([`lock`]); device memory behind an
//! `RwLock` of its own ([`memory`], [`memory_mut`]), so that kernels of several streams run at
//! once; the current-context stack is per thread ([`push_current`], [`pop_current`],
//! [`current_context`]).
//!
//! ## Handles
//!
//! `CUcontext`, `CUmodule`, `CUfunction` and `CUstream` are tokens: non-null addresses that
//! are never dereferenced, made from ids from [`FIRST_HANDLE`] up. A destroyed object's handle
//! is handed out again, the most recently freed first, as a driver reuses its handles: a stale
//! handle then names another object, possibly of another kind, which is what a launcher that
//! keeps one must never use. The stream handles `0` (the NULL stream), `1`
//! (`CU_STREAM_LEGACY`) and `2` (`CU_STREAM_PER_THREAD`) are the current context's default
//! stream, whose work runs at once.
//!
//! ## Contexts
//!
//! A device has only its primary context. `cuDevicePrimaryCtxRetain` creates it when there is
//! none and counts a retain; `cuDevicePrimaryCtxRelease_v2` uncounts one, and the last one
//! destroys the context with everything in it. `cuDevicePrimaryCtxReset_v2` destroys the
//! context with everything in it (its sticky error too) and leaves the retain count alone: the
//! old handle is dead, and the next retain makes a fresh context (whose handle may be the old
//! one's, reused).
//!
//! A kernel's illegal memory access gives its context the sticky error
//! `CUDA_ERROR_ILLEGAL_ADDRESS` (and every other code of [`crate::result::STICKY`] it answers,
//! its own): from then on every call that works in that context answers it
//! ([`State::current`]), until the context is reset or destroyed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::exec::Program;
use crate::memory::DeviceMemory;
use crate::ptx::{PtxEntry, PtxModule, STATIC_SHARED_LIMIT};
use crate::result::{
    CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_OUT_OF_MEMORY, CuResult,
};
use crate::stream::Queue;

/// The first handle id; ids below it are never handed out (0, 1 and 2 name default streams).
pub const FIRST_HANDLE: usize = 0x1000;

/// The device name `cuDeviceGetName` reports: nothing may mistake the emulator for a GPU.
pub const DEVICE_NAME: &str = "kernel-args emulated CUDA device (CPU, not a GPU)";

/// What distinguishes one emulated device from another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceConfig {
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`: kernels may read and write host memory.
    pub pageable_memory_access: bool,
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES` (reported only).
    pub uses_host_page_tables: bool,
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` and `_MINOR`.
    pub compute_capability: (i32, i32),
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`, in bytes.
    pub shared_memory_optin: i32,
}

impl DeviceConfig {
    /// Device 0, present at load: ATS-like pageable memory access, compute capability 9.0 and
    /// an H100's 227 KiB opt-in shared memory.
    pub const DEFAULT: DeviceConfig = DeviceConfig {
        pageable_memory_access: true,
        uses_host_page_tables: true,
        compute_capability: (9, 0),
        shared_memory_optin: 232_448,
    };
}

/// One emulated device.
#[derive(Debug)]
pub struct Device {
    /// Its attributes.
    pub config: DeviceConfig,
    /// The primary context's retain count.
    pub retain_count: u32,
    /// The primary context's handle, while it exists.
    pub primary: Option<usize>,
}

/// A (primary) context.
#[derive(Debug)]
pub struct Context {
    /// The device's ordinal.
    pub device: usize,
    /// The sticky error, 0 for none.
    pub sticky_error: CuResult,
    /// Set when the context is destroyed: its kernels still running stop.
    pub stop: Arc<AtomicBool>,
}

/// A loaded module.
#[derive(Debug)]
pub struct Module {
    /// The context it was loaded in.
    pub context: usize,
    /// Its kernels' function handles by entry name.
    pub functions: HashMap<String, usize>,
    /// The device address of its `.global` variables' allocation, if it defines any.
    pub globals: Option<u64>,
}

/// A kernel of a loaded module (`CUfunction`).
#[derive(Debug)]
pub struct Function {
    /// The context its module was loaded in.
    pub context: usize,
    /// Its module's handle.
    pub module: usize,
    /// Its declaration: name, parameter layout, static shared memory.
    pub entry: PtxEntry,
    /// Its PTX, decoded for the interpreter ([`crate::exec`]).
    pub program: Arc<Program>,
    /// PTX instructions its launches' threads executed, all launches together.
    pub instructions: u64,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: the most dynamic shared memory a
    /// launch may ask for.
    pub max_dynamic_shared_bytes: usize,
}

/// A stream: its context and the queue its worker runs (`src/stream.rs`).
#[derive(Debug)]
pub struct Stream {
    /// The context it was created in.
    pub context: usize,
    /// Its queued work.
    pub queue: Arc<Queue>,
}

/// Library-wide counters (`kargs_emu_stat`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Kernels run (launches whose PTX was interpreted).
    pub kernels_launched: u64,
    /// Nanoseconds spent running kernels on the CPU.
    pub kernel_nanos: u64,
    /// Threads run.
    pub threads: u64,
    /// PTX instructions the threads executed.
    pub instructions: u64,
}

/// Everything one library instance knows.
#[derive(Debug)]
pub struct State {
    /// Whether `cuInit(0)` has succeeded.
    pub initialized: bool,
    next_handle: usize,
    /// Handles given back (a destroyed context, module, function or stream), handed out again
    /// first, the most recent first, as a driver reuses its handles: a stale handle then names
    /// something else.
    free_handles: Vec<usize>,
    /// The devices, by ordinal.
    pub devices: Vec<Device>,
    /// Live contexts by handle.
    pub contexts: HashMap<usize, Context>,
    /// Loaded modules by handle.
    pub modules: HashMap<usize, Module>,
    /// Functions of loaded modules by handle.
    pub functions: HashMap<usize, Function>,
    /// Streams by handle.
    pub streams: HashMap<usize, Stream>,
    /// Counters.
    pub stats: Stats,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::new()));

/// Device memory, apart from the rest of the state so that kernels of several streams can run
/// at once, each reading the allocation table: a kernel holds it shared while it runs, and
/// allocating or freeing waits for the kernels running. Taken after [`lock`] where both are
/// needed, never before.
static MEMORY: RwLock<DeviceMemory> = RwLock::new(DeviceMemory::new());

/// Device memory, shared (kernels, copies, counts).
pub fn memory() -> RwLockReadGuard<'static, DeviceMemory> {
    MEMORY.read().unwrap_or_else(PoisonError::into_inner)
}

/// Device memory, exclusive (allocating, freeing).
pub fn memory_mut() -> RwLockWriteGuard<'static, DeviceMemory> {
    MEMORY.write().unwrap_or_else(PoisonError::into_inner)
}

/// The library's state, locked. A panic while it was locked (caught at the C ABI) does not
/// make it unusable: every change to it is complete before anything that could panic.
pub fn lock() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// This thread's current-context stack (handles; the top is current).
    static CURRENT: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// This thread's current context (the top of its stack), if any.
pub fn current_context() -> Option<usize> {
    CURRENT.try_with(|stack| stack.borrow().last().copied()).ok().flatten()
}

/// Pushes `context` on this thread's stack.
pub fn push_current(context: usize) {
    let _ = CURRENT.try_with(|stack| stack.borrow_mut().push(context));
}

/// Pops this thread's stack: the context that was current, if any.
pub fn pop_current() -> Option<usize> {
    CURRENT.try_with(|stack| stack.borrow_mut().pop()).ok().flatten()
}

/// What `kargs_emu_live` counts, for a device's primary context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// The primary context's retain count (`what` = 0).
    RetainCount,
    /// Loaded modules (1).
    Modules,
    /// Streams (2).
    Streams,
    /// Live allocations (3).
    Allocations,
    /// Bytes allocated (4).
    AllocatedBytes,
}

impl Live {
    /// Every count, in the order of their codes.
    pub const ALL: [Live; 5] =
        [Live::RetainCount, Live::Modules, Live::Streams, Live::Allocations, Live::AllocatedBytes];

    /// The count's `what` code in `kargs_emu_live`.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The count with `what` code `code`.
    pub fn from_code(code: i32) -> Option<Live> {
        Live::ALL.into_iter().find(|live| live.code() == code)
    }
}

/// Adds `handle` to the handles to hand out again; `true`, so that a `retain` that drops the
/// object can give its handle back in one expression.
fn give_back(free: &mut Vec<usize>, handle: usize) -> bool {
    free.push(handle);
    true
}

impl State {
    /// A fresh library: not initialised, one device ([`DeviceConfig::DEFAULT`]).
    pub fn new() -> State {
        State {
            initialized: false,
            next_handle: FIRST_HANDLE,
            free_handles: Vec::new(),
            devices: vec![Device { config: DeviceConfig::DEFAULT, retain_count: 0, primary: None }],
            contexts: HashMap::new(),
            modules: HashMap::new(),
            functions: HashMap::new(),
            streams: HashMap::new(),
            stats: Stats::default(),
        }
    }

    fn new_handle(&mut self) -> usize {
        if let Some(handle) = self.free_handles.pop() {
            return handle;
        }
        let handle = self.next_handle;
        self.next_handle += 1;
        handle
    }

    /// `CUDA_ERROR_NOT_INITIALIZED` before `cuInit`.
    pub fn require_initialized(&self) -> Result<(), CuResult> {
        if self.initialized { Ok(()) } else { Err(CUDA_ERROR_NOT_INITIALIZED) }
    }

    /// Adds a device: its ordinal.
    pub fn add_device(&mut self, config: DeviceConfig) -> usize {
        self.devices.push(Device { config, retain_count: 0, primary: None });
        self.devices.len() - 1
    }

    /// The device with ordinal `ordinal`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_DEVICE` when there is none.
    pub fn device(&self, ordinal: i32) -> Result<&Device, CuResult> {
        usize::try_from(ordinal).ok().and_then(|i| self.devices.get(i)).ok_or(CUDA_ERROR_INVALID_DEVICE)
    }

    fn device_mut(&mut self, ordinal: i32) -> Result<&mut Device, CuResult> {
        usize::try_from(ordinal).ok().and_then(|i| self.devices.get_mut(i)).ok_or(CUDA_ERROR_INVALID_DEVICE)
    }

    /// `cuDevicePrimaryCtxRetain`: the primary context's handle, created if there is none.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_DEVICE`.
    pub fn retain_primary(&mut self, ordinal: i32) -> Result<usize, CuResult> {
        let index = usize::try_from(ordinal).map_err(|_| CUDA_ERROR_INVALID_DEVICE)?;
        let primary = self.device(ordinal)?.primary;
        let context = match primary {
            Some(context) => context,
            None => {
                let context = self.new_handle();
                self.contexts
                    .insert(context, Context { device: index, sticky_error: 0, stop: Arc::default() });
                context
            }
        };
        let device = self.device_mut(ordinal)?;
        device.primary = Some(context);
        device.retain_count = device.retain_count.saturating_add(1);
        Ok(context)
    }

    /// `cuDevicePrimaryCtxRelease_v2`: one retain less; the last destroys the context.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_DEVICE`; `CUDA_ERROR_INVALID_CONTEXT` when the count is 0.
    pub fn release_primary(&mut self, ordinal: i32) -> Result<(), CuResult> {
        let device = self.device_mut(ordinal)?;
        device.retain_count = device.retain_count.checked_sub(1).ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if device.retain_count == 0
            && let Some(context) = device.primary.take()
        {
            self.destroy_context(context);
        }
        Ok(())
    }

    /// `cuDevicePrimaryCtxReset_v2`: destroys the primary context, keeps the retain count.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_DEVICE`.
    pub fn reset_primary(&mut self, ordinal: i32) -> Result<(), CuResult> {
        if let Some(context) = self.device_mut(ordinal)?.primary.take() {
            self.destroy_context(context);
        }
        Ok(())
    }

    /// Destroys `context` and everything in it.
    /// Its kernels still running stop first (they check at least every
    /// [`STOP_CHECK_INSTRUCTIONS`](crate::exec::STOP_CHECK_INSTRUCTIONS) instructions), and the
    /// memory is freed once every running kernel has let it go, so no kernel of it touches
    /// memory after this returns. **Not a GPU's behaviour for a healthy context:** on an H200
    /// (driver 580) `cuDevicePrimaryCtxReset` and `cuCtxDestroy` waited for the running kernel
    /// to end (`docs/gpu-validation.md`); a GPU stops a context's kernels only on a sticky
    /// error, which is when the CUDA backend resets one.
    fn destroy_context(&mut self, context: usize) {
        let free = &mut self.free_handles;
        if let Some(destroyed) = self.contexts.remove(&context) {
            destroyed.stop.store(true, Ordering::Release);
            free.push(context);
        }
        self.modules.retain(|&handle, module| module.context != context || !give_back(free, handle));
        self.functions.retain(|&handle, function| function.context != context || !give_back(free, handle));
        self.streams.retain(|&handle, stream| {
            stream.context != context || {
                stream.queue.close();
                !give_back(free, handle)
            }
        });
        memory_mut().free_context(context);
    }

    /// The context a call works in: `current` (the calling thread's), which must exist and
    /// have no sticky error.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_NOT_INITIALIZED` before `cuInit`; `CUDA_ERROR_INVALID_CONTEXT` without a
    /// current context or with a destroyed one; the context's sticky error.
    pub fn current(&self, current: Option<usize>) -> Result<usize, CuResult> {
        self.require_initialized()?;
        let context = current.ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        match self.contexts.get(&context) {
            None => Err(CUDA_ERROR_INVALID_CONTEXT),
            Some(found) if found.sticky_error != 0 => Err(found.sticky_error),
            Some(_) => Ok(context),
        }
    }

    /// The index (ordinal) of `context`'s device; `usize::MAX` for a context that does not
    /// exist.
    pub fn context_index(&self, context: usize) -> usize {
        self.contexts.get(&context).map_or(usize::MAX, |c| c.device)
    }

    /// The configuration of `context`'s device.
    pub fn context_device(&self, context: usize) -> Option<DeviceConfig> {
        let device = self.contexts.get(&context)?.device;
        self.devices.get(device).map(|device| device.config)
    }

    /// Gives `context` the sticky error `code`.
    pub fn poison(&mut self, context: usize, code: CuResult) {
        if let Some(context) = self.contexts.get_mut(&context) {
            context.sticky_error = code;
        }
    }

    /// Adds a module of `ptx` to `context`, its `.global` variables at `globals` where it has
    /// any: its handle. Each kernel gets its function handle now, so `cuModuleGetFunction`
    /// answers the same handle every time.
    pub fn load_module(
        &mut self,
        context: usize,
        ptx: PtxModule,
        programs: Vec<Program>,
        globals: Option<u64>,
    ) -> usize {
        let module = self.new_handle();
        let mut functions = HashMap::new();
        for (entry, program) in ptx.entries.into_iter().zip(programs) {
            let handle = self.new_handle();
            functions.insert(entry.name.clone(), handle);
            let function = Function {
                context,
                module,
                program: Arc::new(program),
                instructions: 0,
                max_dynamic_shared_bytes: STATIC_SHARED_LIMIT.saturating_sub(entry.static_shared_bytes),
                entry,
            };
            self.functions.insert(handle, function);
        }
        self.modules.insert(module, Module { context, functions, globals });
        module
    }

    /// The module `handle` of `context`.
    fn module(&self, context: usize, handle: usize) -> Result<&Module, CuResult> {
        self.modules.get(&handle).filter(|module| module.context == context).ok_or(CUDA_ERROR_INVALID_HANDLE)
    }

    /// Unloads module `handle` of `context` and its functions; its `.global` variables are
    /// freed.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_HANDLE` for an unknown module or one of another context.
    pub fn unload_module(&mut self, context: usize, handle: usize) -> Result<(), CuResult> {
        self.module(context, handle)?;
        if let Some(globals) = self.modules.remove(&handle).and_then(|module| module.globals) {
            memory_mut().free_module(context, globals);
        }
        let free = &mut self.free_handles;
        self.functions.retain(|&f, function| function.module != handle || !give_back(free, f));
        free.push(handle);
        Ok(())
    }

    /// The function handle of entry `name` in module `handle` of `context`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_HANDLE` for an unknown module or one of another context;
    /// `CUDA_ERROR_NOT_FOUND` when the module has no such kernel.
    pub fn function_handle(&self, context: usize, handle: usize, name: &[u8]) -> Result<usize, CuResult> {
        let module = self.module(context, handle)?;
        let name = std::str::from_utf8(name).map_err(|_| CUDA_ERROR_NOT_FOUND)?;
        module.functions.get(name).copied().ok_or(CUDA_ERROR_NOT_FOUND)
    }

    /// The function `handle` of `context`.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_HANDLE` for an unknown function or one of another context.
    pub fn function(&self, context: usize, handle: usize) -> Result<&Function, CuResult> {
        self.functions
            .get(&handle)
            .filter(|function| function.context == context)
            .ok_or(CUDA_ERROR_INVALID_HANDLE)
    }

    /// The function `handle` of `context`, to change.
    ///
    /// # Errors
    ///
    /// As [`State::function`].
    pub fn function_mut(&mut self, context: usize, handle: usize) -> Result<&mut Function, CuResult> {
        self.functions
            .get_mut(&handle)
            .filter(|function| function.context == context)
            .ok_or(CUDA_ERROR_INVALID_HANDLE)
    }

    /// A new stream in `context`, with its worker: its handle.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_OUT_OF_MEMORY` when the system refuses the worker thread.
    pub fn create_stream(&mut self, context: usize) -> Result<usize, CuResult> {
        let queue = Queue::start().ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        let stream = self.new_handle();
        self.streams.insert(stream, Stream { context, queue });
        Ok(stream)
    }

    /// The queue of stream `handle` of `context`; `None` for a default stream (0, 1, 2), whose
    /// work runs at once.
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_HANDLE` for another context's stream or one that does not exist.
    pub fn stream_queue(&self, context: usize, handle: usize) -> Result<Option<Arc<Queue>>, CuResult> {
        if handle < 3 {
            return Ok(None);
        }
        match self.streams.get(&handle) {
            Some(stream) if stream.context == context => Ok(Some(Arc::clone(&stream.queue))),
            _ => Err(CUDA_ERROR_INVALID_HANDLE),
        }
    }

    /// Whether `context` exists and has no sticky error: queued work runs only then.
    pub fn usable(&self, context: usize) -> bool {
        self.contexts.get(&context).is_some_and(|c| c.sticky_error == 0)
    }

    /// Destroys stream `handle` of `context` (not a default stream).
    ///
    /// # Errors
    ///
    /// `CUDA_ERROR_INVALID_HANDLE`.
    pub fn destroy_stream(&mut self, context: usize, handle: usize) -> Result<(), CuResult> {
        match self.streams.get(&handle) {
            Some(stream) if stream.context == context => {
                // The call returns at once; what is queued still runs (`cuStreamDestroy`).
                stream.queue.close();
                self.streams.remove(&handle);
                self.free_handles.push(handle);
                Ok(())
            }
            _ => Err(CUDA_ERROR_INVALID_HANDLE),
        }
    }

    /// A count of device `ordinal`'s primary context (0 without one); `None` for a bad ordinal.
    pub fn live(&self, ordinal: i32, what: Live) -> Option<u64> {
        let device = self.device(ordinal).ok()?;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Some(match (what, device.primary) {
            (Live::RetainCount, _) => u64::from(device.retain_count),
            (_, None) => 0,
            (Live::Modules, Some(context)) => {
                count(self.modules.values().filter(|m| m.context == context).count())
            }
            (Live::Streams, Some(context)) => {
                count(self.streams.values().filter(|s| s.context == context).count())
            }
            (Live::Allocations, Some(context)) => count(memory().usage(context).0),
            (Live::AllocatedBytes, Some(context)) => count(memory().usage(context).1),
        })
    }

    /// The sticky error of device `ordinal`'s primary context (0 with none, or no context).
    pub fn sticky_error(&self, ordinal: i32) -> CuResult {
        self.device(ordinal)
            .ok()
            .and_then(|device| device.primary)
            .and_then(|context| self.contexts.get(&context))
            .map_or(0, |context| context.sticky_error)
    }
}

impl Default for DeviceConfig {
    /// [`DeviceConfig::DEFAULT`].
    fn default() -> DeviceConfig {
        DeviceConfig::DEFAULT
    }
}

impl Default for State {
    fn default() -> State {
        State::new()
    }
}
