//! The bundled demo guest (`kernel_args::guest::GUEST_WASM`, the same module the host tests
//! run on wasmtime and wasmi) instantiated on wasmi on this Cortex-M, its launches answered by
//! the `no_std` host pipeline (`LaunchHost`) with the [`ForwardingLauncher`].
//!
//! Checked, as the host's end-to-end tests check them on both runtimes: the good launch's
//! argv arrives intact (kernel id, shape, three pointer windows of `4n` bytes at the guest's
//! buffers, `n`) and the frame sent over the link decodes to exactly the record; each bad
//! launch gets its code (-2, -9, -10, -8) and leaves no record behind; a disabled capability
//! answers -1 and records nothing.

use kernel_args::guest::{
    GUEST_WASM, THREADS_PER_BLOCK, VECTOR_ADD_DECLARATION, VECTOR_ADD_KERNEL_ID, exports,
};
use kernel_args::wasmi_host::{add_to_linker, wasmi};
use kernel_args::{AbiError, Declaration, LaunchHost, MEMORY_EXPORT};
use kernel_args_core::{GuestRange, LoweredArgSnapshot};
use wasmi::{Engine, Instance, Linker, Module, Store, WasmParams, WasmResults};

use kernel_args_firmware::link::{self, ForwardingLauncher};

/// The guest on wasmi, with the host state as its store's data.
pub struct Guest {
    store: Store<LaunchHost<ForwardingLauncher>>,
    instance: Instance,
}

impl Guest {
    /// Compiles and instantiates the guest with `wasi_cuda_launch` served by a forwarding host.
    pub fn new() -> Result<Guest, wasmi::Error> {
        let engine = Engine::default();
        let module = Module::new(&engine, GUEST_WASM)?;
        let mut linker = Linker::new(&engine);
        add_to_linker(&mut linker, |host: &mut LaunchHost<ForwardingLauncher>| host)?;
        let mut forwarding = ForwardingLauncher::new();
        // The bundled declaration parses; a new launcher has room for it.
        if let Ok(declaration) = Declaration::parse(VECTOR_ADD_DECLARATION) {
            let _ = forwarding.kernels_mut().declare(VECTOR_ADD_KERNEL_ID, declaration);
        }
        let mut store = Store::new(&engine, LaunchHost::new(forwarding));
        let instance = linker.instantiate_and_start(&mut store, &module)?;
        Ok(Guest { store, instance })
    }

    /// Calls the guest export `name`.
    pub fn call<P: WasmParams, R: WasmResults>(&mut self, name: &str, params: P) -> Result<R, wasmi::Error> {
        let func = self.instance.get_typed_func::<P, R>(&self.store, name)?;
        func.call(&mut self.store, params)
    }

    /// The host state.
    pub fn host(&self) -> &LaunchHost<ForwardingLauncher> {
        self.store.data()
    }

    /// The host state, mutably.
    pub fn host_mut(&mut self) -> &mut LaunchHost<ForwardingLauncher> {
        self.store.data_mut()
    }

    /// The guest's linear memory size in bytes.
    pub fn memory_len(&self) -> u64 {
        self.instance
            .get_memory(&self.store, MEMORY_EXPORT)
            .map_or(0, |m| u64::try_from(m.data(&self.store).len()).unwrap_or(u64::MAX))
    }
}

/// One failed expectation.
pub type Failure = &'static str;

/// Runs every check; returns how many passed, or the first failure.
pub fn run(guest: &mut Guest) -> Result<u32, Failure> {
    let mut passed = 0u32;
    let mut check = |ok: bool, what: Failure| -> Result<(), Failure> {
        if ok {
            passed += 1;
            Ok(())
        } else {
            Err(what)
        }
    };
    let call = |guest: &mut Guest, name: &str| -> Result<i32, Failure> {
        guest.call::<(), i32>(name, ()).map_err(|_| "a guest export trapped")
    };

    // The good launch: argv intact, the frame is the record.
    let n = 1000i32;
    let code = guest.call::<i32, i32>(exports::RUN_VECTOR_ADD, n).map_err(|_| "run_vector_add trapped")?;
    check(code == AbiError::NotAvailable.code(), "vector_add: the forwarding launcher answers -1")?;
    let (a, b, out) =
        (call(guest, exports::A_PTR)?, call(guest, exports::B_PTR)?, call(guest, exports::OUT_PTR)?);
    let window = |at: i32| {
        LoweredArgSnapshot::Ptr(GuestRange {
            guest_offset: u32::try_from(at).unwrap_or(u32::MAX),
            len: 4 * n.unsigned_abs(),
        })
    };
    let expected = [window(a), window(b), window(out), LoweredArgSnapshot::U32(n.unsigned_abs())];
    let record = guest.host().last_launch().ok_or("vector_add: a launch is recorded")?;
    let snapshot = record.snapshot();
    check(snapshot.kernel_id() == VECTOR_ADD_KERNEL_ID, "vector_add: kernel id")?;
    check(snapshot.shape().grid == [n.unsigned_abs().div_ceil(THREADS_PER_BLOCK), 1, 1], "vector_add: grid")?;
    check(snapshot.shape().block == [THREADS_PER_BLOCK, 1, 1], "vector_add: block")?;
    check(*snapshot.args() == expected, "vector_add: the argv arrives intact")?;
    check(record.result() == Err(AbiError::NotAvailable), "vector_add: the record keeps the answer")?;
    let frame = guest.host().launcher().last_frame().ok_or("vector_add: a frame was sent")?;
    let received = link::decode(frame, guest.memory_len()).map_err(|_| "vector_add: the frame decodes")?;
    check(received.kernel_id == snapshot.kernel_id(), "link: kernel id")?;
    check(received.shape == snapshot.shape(), "link: shape")?;
    check(*received.args.as_slice() == *snapshot.args(), "link: arguments")?;

    // Each refusal: its code, and nothing left from the launch before.
    for (export, code, what) in [
        (exports::SEND_PTR_PAST_MEMORY, AbiError::InvalidPointer, "a window past memory is -2"),
        (exports::SEND_ARGS_REGION_PAST_MEMORY, AbiError::InvalidPointer, "an args region past memory is -2"),
        (exports::SEND_UNKNOWN_TAG, AbiError::InvalidArgs, "an unknown tag is -9"),
        (exports::SEND_TOO_MANY_ARGS, AbiError::KernelArgsUnsupported, "129 arguments are -10"),
        (exports::SEND_BAD_DIMENSIONS, AbiError::InvalidDimensions, "a 2048-thread block is -8"),
    ] {
        let sent = guest.host().launcher().sent();
        check(call(guest, export)? == code.code(), what)?;
        check(guest.host().last_launch().is_none(), "a refused call leaves no record")?;
        check(guest.host().last_error().map(|e| e.code()) == Some(code), "the error is kept with its code")?;
        check(guest.host().launcher().sent() == sent, "a refused call reaches no launcher")?;
    }

    // The capability withheld: -1, nothing recorded, nothing sent.
    guest.host_mut().set_enabled(false);
    let sent = guest.host().launcher().sent();
    let code = guest.call::<i32, i32>(exports::RUN_VECTOR_ADD, n).map_err(|_| "run_vector_add trapped")?;
    check(code == AbiError::NotAvailable.code(), "disabled: -1")?;
    check(guest.host().last_launch().is_none(), "disabled: nothing recorded")?;
    check(guest.host().launcher().sent() == sent, "disabled: nothing sent")?;
    guest.host_mut().set_enabled(true);
    Ok(passed)
}
