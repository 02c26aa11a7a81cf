//! `param_storage`: the `void**` parameter storage, filled from any argv, against the
//! specification model.
//!
//! Input: the byte-level layout of `parse_argv` (8 bytes of little-endian memory length, then
//! the argv). The guest memory is a real one of `length % 4097` bytes. What every slot must
//! hold is taken from the independent specification model (`kernel_args_testkit::model`) with
//! the same memory length and capacity, never from the code under test: slot `i` holds the
//! model's value `i` in native byte order (floats by bits), 4 or 8 bytes as the kernel reads
//! it, and a pointer's slot the window's host address (direct) or its staged device address.
//!
//! **Direct** (the memory borrowed exclusively), through both of the storage's direct paths:
//! `KernelParamStorage::parse_direct` (in a storage kept across all inputs, as the CUDA
//! launcher keeps one, and in a 4-slot storage) and the storage as the core parser's sink
//! followed by `direct_error` (the host function's one pass, in a second kept storage):
//!
//! - an argv the model refuses is refused with the model's kind, record and byte (the 4-slot
//!   storage as the model with capacity 4 refuses it: its record cap is 4), and the storage is
//!   left empty, whatever an earlier input left in it;
//! - an argv the model accepts is stored slot by slot as the model says.
//!
//! **Staged** (`build_staged`, from the parser's output of the same argv): with a device
//! address for every pointer, pointer slots hold those addresses in order (in the kept storage,
//! over the direct fill, and in the 4-slot one, which refuses more than 4 arguments with
//! `TooManyArgs`); with one address too few, `MissingDeviceAddress` names the last pointer and
//! the kept storage is left empty.
//!
//! **Not writable**: against a shared and a length-only memory of the same length,
//! `parse_direct` refuses an argv the model accepts with `NotWritable` for its first pointer and
//! leaves the storage empty; filled as a sink, `direct_error` names the same argument; an argv
//! without pointers is stored as the model says; the model's refusals come first; staging needs
//! no writable host pointer and builds.
//!
//! After every successful fill the `void**` table (`with_params`, and `with_padded_params`)
//! holds `len()` pointers, each 8-aligned and addressing exactly the slot whose bytes
//! `value_bytes(i)` returned (checked by address, so this target needs no `unsafe`; the
//! backend's Miri-run tests read through the table).
#![no_main]

use std::sync::Mutex;

use kernel_args_core::{Arg, GuestMemory, ParsedArgv, parse_argv, parse_argv_into};
use kernel_args_cuda::{KernelParamStorage, ParseError, SLOT_SIZE, StorageError};
use kernel_args_fuzz::ArgvInput;
use kernel_args_testkit::model::{self, Rejection, Value};
use libfuzzer_sys::fuzz_target;

/// The storage `parse_direct` and the staged builds fill, kept across inputs like the
/// launcher's.
static REUSED: Mutex<KernelParamStorage> = Mutex::new(KernelParamStorage::new());
/// The storage the parser fills as its sink, kept across inputs.
static SINK: Mutex<KernelParamStorage> = Mutex::new(KernelParamStorage::new());

/// The model's reading of an argv.
type Model = Result<Vec<model::Arg>, Rejection>;

/// A made-up device address for pointer number `k`: distinct, 256-aligned, never a host one.
fn device_address(k: usize) -> u64 {
    0x7f00_dead_0000 + 0x100 * k as u64
}

/// What the slots must hold for the model's `args`: each value's native bytes, pointer `k`
/// (counting pointers only) as `pointer(k, guest_offset)`.
fn expected(args: &[model::Arg], pointer: impl Fn(usize, u32) -> u64) -> Vec<Vec<u8>> {
    let mut k = 0;
    args.iter()
        .map(|arg| match arg.value {
            Value::I32(v) => v.to_ne_bytes().to_vec(),
            Value::I64(v) => v.to_ne_bytes().to_vec(),
            Value::F32(bits) | Value::U32(bits) => bits.to_ne_bytes().to_vec(),
            Value::F64(bits) | Value::U64(bits) => bits.to_ne_bytes().to_vec(),
            Value::Ptr { guest_offset, .. } => {
                k += 1;
                pointer(k - 1, guest_offset).to_ne_bytes().to_vec()
            }
        })
        .collect()
}

/// The index of the model's first pointer argument.
fn first_pointer(args: &[model::Arg]) -> Option<usize> {
    args.iter().position(|a| matches!(a.value, Value::Ptr { .. }))
}

/// Checks every slot of `storage` and both of its tables against `want`.
fn check_storage<const N: usize>(storage: &mut KernelParamStorage<N>, want: &[Vec<u8>]) {
    assert_eq!(storage.len(), want.len());
    assert_eq!(storage.arg_sizes().len(), want.len());
    let mut slot_addresses = Vec::with_capacity(want.len());
    for (i, want) in want.iter().enumerate() {
        let bytes = storage.value_bytes(i).unwrap_or_else(|| panic!("no value for argument {i}"));
        assert_eq!(bytes, want.as_slice(), "slot {i}");
        assert_eq!(usize::from(storage.arg_sizes()[i]), bytes.len());
        assert!(bytes.len() <= SLOT_SIZE);
        slot_addresses.push(bytes.as_ptr().addr());
    }
    assert_eq!(storage.value_bytes(want.len()), None, "a value past the last argument");

    let pointers = storage.with_params(|table| {
        assert_eq!(table.len(), want.len());
        assert!(!table.as_mut_ptr().is_null() || want.is_empty());
        table.pointers().iter().map(|p| p.addr()).collect::<Vec<usize>>()
    });
    assert_eq!(pointers, slot_addresses, "table pointers do not address the slots");
    for (i, p) in pointers.iter().enumerate() {
        assert_eq!(p % 8, 0, "slot {i} at {p:#x} is not 8-aligned");
    }
    let padded =
        storage.with_padded_params(|table| table.pointers().iter().map(|p| p.addr()).collect::<Vec<_>>());
    assert_eq!(padded, slot_addresses, "the padded table's pointers do not address the slots");
}

/// A `parse_direct` result that must be the model's refusal `m`.
fn assert_refused_as(result: Result<(), ParseError>, m: &Rejection, what: &str) {
    match result {
        Err(ParseError::Argv(e)) => assert_eq!(Rejection::from(&e), *m, "{what}: refused unlike the model"),
        other => panic!("{what}: the model refuses with {m:?}, got {other:?}"),
    }
}

/// Staged builds of `args` (the parser's output, which the model accepted as `model_args`)
/// into `reused` and a 4-slot storage: one address short, then with every address.
fn check_staged(reused: &mut KernelParamStorage, args: &ParsedArgv<'_>, model_args: &[model::Arg]) {
    let pointer_count = args.iter().filter(|a| matches!(a, Arg::Ptr(_))).count();
    let device: Vec<u64> = (0..pointer_count).map(device_address).collect();
    let want = expected(model_args, |k, _| device_address(k));

    if pointer_count > 0 {
        let short = &device[..pointer_count - 1];
        let last_ptr = model_args.iter().rposition(|a| matches!(a.value, Value::Ptr { .. })).unwrap();
        let err = reused.build_staged(args, short).unwrap_err();
        assert_eq!(err, StorageError::MissingDeviceAddress { index: last_ptr });
        assert!(reused.is_empty(), "a refused staged build left {} parameters", reused.len());
    }
    // In place, over whatever the last fill left; kept for the next input's direct fill.
    reused.build_staged(args, &device).expect("staged build");
    check_storage(reused, &want);

    let mut small = KernelParamStorage::<4>::new();
    match small.build_staged(args, &device) {
        Ok(()) => {
            assert!(args.len() <= 4);
            check_storage(&mut small, &want);
        }
        Err(e) => {
            assert_eq!(e, StorageError::TooManyArgs { capacity: 4, got: args.len() });
            assert!(small.is_empty());
        }
    }
}

/// Direct fills against a memory without writable host pointers (shared or length-only).
fn check_not_writable(
    argv: &[u8],
    guest: &GuestMemory<'_>,
    model: &Model,
    reused: &mut KernelParamStorage,
    sink: &mut KernelParamStorage,
) {
    let result = reused.parse_direct(argv, guest);
    let model_args = match model {
        Err(m) => {
            // The guest's own error comes before the host's.
            assert_refused_as(result, m, "parse_direct (not writable)");
            assert!(reused.is_empty());
            return;
        }
        Ok(model_args) => model_args,
    };
    match first_pointer(model_args) {
        Some(index) => {
            assert_eq!(result, Err(ParseError::Storage(StorageError::NotWritable { index })));
            assert!(reused.is_empty(), "a refused parse_direct left {} parameters", reused.len());
            assert_eq!(parse_argv_into(argv, guest, sink), Ok(()));
            assert_eq!(sink.direct_error(), Err(StorageError::NotWritable { index }));
            // Staging does not read the host pointer, so it builds.
            let args: ParsedArgv = parse_argv(argv, guest).expect("the model accepts it");
            check_staged(reused, &args, model_args);
        }
        None => {
            assert_eq!(result, Ok(()));
            check_storage(reused, &expected(model_args, |_, _| unreachable!("no pointer")));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = ArgvInput::split(data) else { return };
    let argv = input.argv;
    let mut memory = vec![0u8; usize::try_from(input.memory_len % 4097).unwrap()];
    let mem_len = memory.len() as u64;
    let host_base = memory.as_ptr().addr() as u64;
    let model = model::parse_with_capacity(argv, mem_len, 128);
    let model_small = model::parse_with_capacity(argv, mem_len, 4);

    let mut reused = REUSED.lock().unwrap();
    let mut sink = SINK.lock().unwrap();

    check_not_writable(argv, &GuestMemory::shared(&memory), &model, &mut reused, &mut sink);
    check_not_writable(argv, &GuestMemory::length_only(mem_len), &model, &mut reused, &mut sink);

    let guest = GuestMemory::exclusive(&mut memory);
    let one_pass = reused.parse_direct(argv, &guest);
    let as_sink = parse_argv_into(argv, &guest, &mut *sink);
    let mut small = KernelParamStorage::<4>::new();
    let small_pass = small.parse_direct(argv, &guest);

    let host_address = |_: usize, guest_offset: u32| host_base + u64::from(guest_offset);
    match &model_small {
        Err(m) => {
            assert_refused_as(small_pass, m, "parse_direct into 4 slots");
            assert!(small.is_empty());
        }
        Ok(model_args) => {
            assert_eq!(small_pass, Ok(()), "parse_direct into 4 slots refused an argv the model accepts");
            check_storage(&mut small, &expected(model_args, host_address));
        }
    }
    let model_args = match &model {
        Err(m) => {
            assert_refused_as(one_pass, m, "parse_direct");
            assert!(reused.is_empty(), "a refused parse_direct left {} parameters", reused.len());
            match as_sink {
                Err(e) => {
                    assert_eq!(Rejection::from(&e), *m, "the storage as a sink refused unlike the model")
                }
                Ok(()) => panic!("the storage as a sink accepted what the model refuses ({m:?})"),
            }
            assert!(sink.is_empty(), "a refused parse left {} parameters in the sink", sink.len());
            return;
        }
        Ok(model_args) => model_args,
    };
    assert_eq!(one_pass, Ok(()), "parse_direct refused an argv the model accepts");
    assert_eq!(as_sink, Ok(()), "the storage as a sink refused an argv the model accepts");
    assert_eq!(sink.direct_error(), Ok(()));
    let want = expected(model_args, host_address);
    check_storage(&mut reused, &want);
    check_storage(&mut sink, &want);

    let args: ParsedArgv = parse_argv(argv, &guest).expect("the model accepts it");
    check_staged(&mut reused, &args, model_args);
});
