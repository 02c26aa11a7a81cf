//! `param_storage`: parse → the `void**` parameter storage → every slot holds the argument.
//!
//! Input: the byte-level layout of `parse_argv` (8 bytes of little-endian memory length, then
//! the argv). The argv is parsed against a real guest memory of `length % 4097` bytes,
//! borrowed exclusively; when it is accepted, the storage is built four ways:
//!
//! - direct placement: slot `i` holds the argument's value in native byte order (floats by
//!   bits), 4 or 8 bytes as the kernel reads it; a pointer's slot holds the window's host
//!   address inside guest memory;
//! - staged placement with a device address for every pointer: pointer slots hold those
//!   addresses, in order;
//! - staged with one address too few: `MissingDeviceAddress` naming the last pointer;
//! - a capacity of 4: `TooManyArgs` past it, the same slots below it;
//! - in place, into one storage kept across all inputs (as the CUDA launcher keeps one): after
//!   a refused build it must be empty, and after a good one it must equal a fresh build, so no
//!   parameter of an earlier launch survives into a later one.
//!
//! The one-pass `KernelParamStorage::parse_direct` (what the CUDA launcher runs in direct mode)
//! must agree with all of that: on a refused argv the core parser's exact error and an empty
//! storage, on an accepted one the same slots as parse + direct build (in a fresh storage, in
//! the reused one, and with a capacity of 4, whose cap is then the parser's record cap), and
//! against a shared or length-only memory `NotWritable` for the first pointer.
//!
//! The `void**` table must hold `len()` pointers, each 8-aligned and addressing exactly the
//! slot whose bytes `value_bytes(i)` returned (checked by address, so this target needs no
//! `unsafe`; the backend's Miri-run tests read through the table). A shared or length-only
//! memory must be refused with `NotWritable` for direct placement.
#![no_main]

use kernel_args_core::{Arg, GuestMemory, LoweredArg, ParsedArgv, parse_argv};
use kernel_args_core::{ArgvError, ErrorKind};
use kernel_args_cuda::{
    KernelParamStorage, ParseError, PointerPlacement, SLOT_SIZE, StorageError, arg_size,
    build_kernel_param_storage,
};
use std::sync::Mutex;

use kernel_args_fuzz::ArgvInput;
use libfuzzer_sys::fuzz_target;

/// The storage reused across inputs, rebuilt in place like the launcher's.
static REUSED: Mutex<KernelParamStorage> = Mutex::new(KernelParamStorage::new());

/// A made-up device address for pointer number `k`: distinct, 256-aligned, never a host one.
fn device_address(k: usize) -> u64 {
    0x7f00_dead_0000 + 0x100 * k as u64
}

/// What slot `i` must hold: the value's native bytes, a pointer as `address`.
fn expected_bytes(arg: &LoweredArg<'_>, address: u64) -> Vec<u8> {
    match *arg {
        Arg::I32(v) => v.to_ne_bytes().to_vec(),
        Arg::I64(v) => v.to_ne_bytes().to_vec(),
        Arg::F32(v) => v.0.to_ne_bytes().to_vec(),
        Arg::F64(v) => v.0.to_ne_bytes().to_vec(),
        Arg::U32(v) => v.to_ne_bytes().to_vec(),
        Arg::U64(v) => v.to_ne_bytes().to_vec(),
        Arg::Ptr(_) => address.to_ne_bytes().to_vec(),
    }
}

/// Checks every slot and the table of `storage` against `args`; `address(i, k)` is the
/// address pointer argument `i` (the `k`-th pointer) must hold.
fn check_storage<const N: usize>(
    storage: &mut KernelParamStorage<N>,
    args: &[LoweredArg<'_>],
    address: impl Fn(usize, usize, &LoweredArg<'_>) -> u64,
) {
    assert_eq!(storage.len(), args.len());
    assert_eq!(storage.arg_sizes().len(), args.len());
    let mut slot_addresses = Vec::with_capacity(args.len());
    let mut pointers_seen = 0;
    for (i, arg) in args.iter().enumerate() {
        let bytes = storage.value_bytes(i).unwrap_or_else(|| panic!("no value for argument {i}"));
        let want = expected_bytes(arg, address(i, pointers_seen, arg));
        if matches!(arg, Arg::Ptr(_)) {
            pointers_seen += 1;
        }
        assert_eq!(bytes, want.as_slice(), "slot {i} for {arg:?}");
        assert_eq!(bytes.len(), arg_size(arg));
        assert_eq!(usize::from(storage.arg_sizes()[i]), bytes.len());
        assert!(bytes.len() <= SLOT_SIZE);
        slot_addresses.push(bytes.as_ptr().addr());
    }
    assert_eq!(storage.value_bytes(args.len()), None, "a value past the last argument");

    let mut table = storage.params();
    assert_eq!(table.len(), args.len());
    let pointers: Vec<usize> = table.pointers().iter().map(|p| p.addr()).collect();
    assert_eq!(pointers, slot_addresses, "table pointers do not address the slots");
    for (i, p) in pointers.iter().enumerate() {
        assert_eq!(p % 8, 0, "slot {i} at {p:#x} is not 8-aligned");
    }
    let base = table.as_mut_ptr();
    assert!(!base.is_null() || args.is_empty());
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = ArgvInput::split(data) else { return };
    let mut memory = vec![0u8; usize::try_from(input.memory_len % 4097).unwrap()];
    let host_base = memory.as_ptr().addr() as u64;

    // Direct placement against a shared or length-only memory is refused: the kernel might
    // write through the pointer.
    let shared = GuestMemory::shared(&memory);
    if let Ok(args) = parse_argv::<128>(input.argv, &shared) {
        let first_ptr = args.iter().position(|a| matches!(a, Arg::Ptr(_)));
        let built = build_kernel_param_storage::<128>(&args, PointerPlacement::Direct);
        match (first_ptr, built) {
            (Some(index), Err(e)) => assert_eq!(e, StorageError::NotWritable { index }),
            (None, Ok(_)) => {}
            (first_ptr, built) => panic!("first pointer {first_ptr:?}, built {:?}", built.map(|s| s.len())),
        }
        let mut reused = REUSED.lock().unwrap();
        match (first_ptr, reused.build(&args, PointerPlacement::Direct)) {
            (Some(index), Err(e)) => {
                assert_eq!(e, StorageError::NotWritable { index });
                assert!(reused.is_empty(), "a refused in-place build left {} parameters", reused.len());
                assert_eq!(reused.value_bytes(0), None);
            }
            (None, Ok(())) => assert_eq!(reused.len(), args.len()),
            (first_ptr, built) => panic!("first pointer {first_ptr:?}, in-place build {built:?}"),
        }
        // One pass: the same refusal, for the same argument.
        match (first_ptr, reused.parse_direct(input.argv, &shared)) {
            (Some(index), Err(e)) => {
                assert_eq!(e, ParseError::Storage(StorageError::NotWritable { index }));
                assert!(reused.is_empty(), "a refused parse_direct left {} parameters", reused.len());
            }
            (None, Ok(())) => assert_eq!(reused.len(), args.len()),
            (first_ptr, parsed) => panic!("first pointer {first_ptr:?}, parse_direct {parsed:?}"),
        }
    }

    let guest = GuestMemory::exclusive(&mut memory);
    let parsed: Result<ParsedArgv, ArgvError> = parse_argv(input.argv, &guest);

    // The one-pass parse into the storage the launcher keeps, over whatever the previous input
    // left in it.
    let mut reused = REUSED.lock().unwrap();
    let one_pass = reused.parse_direct(input.argv, &guest);
    let mut small = KernelParamStorage::<4>::new();
    let small_pass = small.parse_direct(input.argv, &guest);
    let args = match parsed {
        Err(e) => {
            assert_eq!(one_pass, Err(ParseError::Argv(e)), "parse_direct must refuse as the parser does");
            assert!(reused.is_empty(), "a refused parse_direct left {} parameters", reused.len());
            assert!(matches!(small_pass, Err(ParseError::Argv(_))) && small.is_empty());
            return;
        }
        Ok(args) => args,
    };
    assert_eq!(one_pass, Ok(()), "parse_direct refused an argv the parser accepts");
    let host_address = |_: usize, _: usize, arg: &LoweredArg<'_>| match arg {
        Arg::Ptr(w) => host_base + u64::from(w.guest_offset()),
        _ => 0,
    };
    check_storage(&mut reused, &args, host_address);
    drop(reused);
    if args.len() <= 4 {
        assert_eq!(small_pass, Ok(()));
        check_storage(&mut small, &args, host_address);
    } else {
        // The fifth record is the first past the cap; it starts where the first four end.
        let offset: usize = args[..4].iter().map(|a| 1 + a.tag().value_size()).sum();
        let want = ArgvError::new(ErrorKind::TooManyRecords { max: 4 }, 4, offset);
        assert_eq!(small_pass, Err(ParseError::Argv(want)));
        assert!(small.is_empty());
    }
    let pointer_count = args.iter().filter(|a| matches!(a, Arg::Ptr(_))).count();

    let mut direct: KernelParamStorage =
        build_kernel_param_storage(&args, PointerPlacement::Direct).expect("direct placement");
    check_storage(&mut direct, &args, |_, _, arg| match arg {
        Arg::Ptr(w) => host_base + u64::from(w.guest_offset()),
        _ => 0,
    });

    let device: Vec<u64> = (0..pointer_count).map(device_address).collect();
    let mut staged: KernelParamStorage =
        build_kernel_param_storage(&args, PointerPlacement::Staged(&device)).expect("staged placement");
    check_storage(&mut staged, &args, |_, k, _| device_address(k));

    if pointer_count > 0 {
        let short = &device[..pointer_count - 1];
        let last_ptr = args.iter().rposition(|a| matches!(a, Arg::Ptr(_))).unwrap();
        let err = build_kernel_param_storage::<128>(&args, PointerPlacement::Staged(short)).unwrap_err();
        assert_eq!(err, StorageError::MissingDeviceAddress { index: last_ptr });
        let mut reused = REUSED.lock().unwrap();
        let err = reused.build(&args, PointerPlacement::Staged(short)).unwrap_err();
        assert_eq!(err, StorageError::MissingDeviceAddress { index: last_ptr });
        assert!(reused.is_empty(), "a refused in-place build left {} parameters", reused.len());
    }

    // In place, over whatever the previous input left: the same slots as a fresh build.
    let mut reused = REUSED.lock().unwrap();
    reused.build(&args, PointerPlacement::Staged(&device)).expect("in-place staged build");
    check_storage(&mut reused, &args, |_, k, _| device_address(k));
    drop(reused);

    match build_kernel_param_storage::<4>(&args, PointerPlacement::Direct) {
        Ok(mut small) => {
            assert!(args.len() <= 4);
            check_storage(&mut small, &args, |_, _, arg| match arg {
                Arg::Ptr(w) => host_base + u64::from(w.guest_offset()),
                _ => 0,
            });
        }
        Err(e) => assert_eq!(e, StorageError::TooManyArgs { capacity: 4, got: args.len() }),
    }
});
