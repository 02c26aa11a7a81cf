//! `param_storage`: the `void**` parameter storage, filled from any accepted argv, against the
//! specification model.
//!
//! Input: the byte-level layout of `parse_argv` (8 bytes of little-endian memory length, then
//! the argv). The guest memory is a real one of `length % 4097` bytes. The argv is checked as the
//! host function checks it (parsed into pointer-free arguments against the memory's length;
//! the parse itself is held to the model by `differential`); for an argv the model accepts, what
//! every slot must hold is taken from the independent specification model
//! (`kernel_args_testkit::model`), never from the code under test: slot `i` holds the model's
//! value `i` in native byte order (floats by bits), 4 or 8 bytes as the kernel reads it, and a
//! pointer's slot the window's host address (direct) or its staged device address.
//!
//! **Direct** (each window's writable host pointer, as `CudaLauncher` places it), into a storage
//! kept across all inputs (as the launcher keeps one) and a 4-slot storage, which refuses more
//! than 4 arguments with `TooManyArgs` and is left empty.
//!
//! **Staged** (a device address per pointer, in order): in the kept storage, over the direct
//! fill; with one address too few, `Unplaced` names the last pointer and the kept storage is
//! left empty.
//!
//! **Not writable**: against a shared and a length-only memory of the same length, a direct
//! fill of an argv with a pointer is refused with `Unplaced` for its first pointer and leaves
//! the storage empty; an argv without pointers is stored as the model says.
//!
//! After every successful fill the `void**` table (`with_params`) holds `len()` entries, each
//! 8-aligned and addressing exactly the slot that `slot(i)` returned, and the
//! padded table (`with_padded_params`) one entry per argument, 32 KiB apart, then every entry
//! at the same zeros (checked by address, so this target needs no `unsafe`; the backend's
//! Miri-run tests read through both tables).
#![no_main]

use std::sync::Mutex;

use kernel_args_core::{GuestMemory, GuestRange, parse_argv_into};
use kernel_args_cuda::{
    KernelParamStorage, MAX_KERNEL_PARAMS, MAX_PARAM_BYTES, PaddingScratch, SLOT_SIZE, StorageError,
};
use kernel_args_fuzz::ArgvInput;
use kernel_args_testkit::model::{self, Value};
use libfuzzer_sys::fuzz_target;

/// The storage every fill writes, kept across inputs like the launcher's.
static REUSED: Mutex<KernelParamStorage> = Mutex::new(KernelParamStorage::new());

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

/// The index of the model's first and last pointer arguments.
fn pointers(args: &[model::Arg]) -> Option<(usize, usize)> {
    let is_ptr = |a: &model::Arg| matches!(a.value, Value::Ptr { .. });
    Some((args.iter().position(is_ptr)?, args.iter().rposition(is_ptr)?))
}

/// Direct placement, as the CUDA launcher makes it: the window's writable host pointer.
fn direct(guest: &GuestMemory<'_>, index: usize, range: GuestRange) -> Result<u64, StorageError> {
    let window = guest.window(range.guest_offset, range.len).ok_or(StorageError::Unplaced { index })?;
    let host = window.host_ptr_mut().ok_or(StorageError::Unplaced { index })?;
    Ok(host.expose_provenance() as u64)
}

/// Staged placement: device address `k` for the `k`-th pointer, `available` of them.
fn staged(available: usize) -> impl FnMut(usize, GuestRange) -> Result<u64, StorageError> {
    let mut k = 0;
    move |index, _| {
        if k == available {
            return Err(StorageError::Unplaced { index });
        }
        k += 1;
        Ok(device_address(k - 1))
    }
}

/// Checks every slot of `storage` and both of its tables against `want`.
fn check_storage<const N: usize>(storage: &mut KernelParamStorage<N>, want: &[Vec<u8>]) {
    assert_eq!(storage.len(), want.len());
    let mut slot_addresses = Vec::with_capacity(want.len());
    for (i, want) in want.iter().enumerate() {
        let slot = storage.slot(i).unwrap_or_else(|| panic!("no slot for argument {i}"));
        assert!(want.len() <= SLOT_SIZE);
        assert_eq!(&slot[..want.len()], want.as_slice(), "slot {i}");
        assert!(slot[want.len()..].iter().all(|&b| b == 0), "slot {i} is zero-padded");
        slot_addresses.push(slot.as_ptr().addr() as u64);
    }
    assert_eq!(storage.slot(want.len()), None, "a slot past the last argument");

    let pointers = storage.with_params(|table| {
        assert_eq!(table.len(), want.len());
        assert!(!table.as_mut_ptr().is_null());
        table.entries().to_vec()
    });
    assert_eq!(pointers, slot_addresses, "table pointers do not address the slots");
    for (i, p) in pointers.iter().enumerate() {
        assert_eq!(p % 8, 0, "slot {i} at {p:#x} is not 8-aligned");
    }
    // The padded table: one entry per argument, each MAX_PARAM_BYTES (rounded to 8) past the
    // last, then every entry at the same zeros, for the most parameters a kernel can have.
    let entries =
        storage.with_padded_params(&mut PaddingScratch::default(), |table| table.entries().to_vec());
    assert_eq!(entries.len(), MAX_KERNEL_PARAMS);
    let stride = MAX_PARAM_BYTES.div_ceil(8) as u64 * 8;
    for (i, e) in entries.iter().enumerate().take(want.len()) {
        assert_eq!(*e, entries[0] + stride * i as u64, "padded entry {i}");
    }
    let past = &entries[want.len()..];
    assert!(past.iter().all(|e| *e == past[0]), "entries past the arguments address the same zeros");
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = ArgvInput::split(data) else { return };
    let mut memory = vec![0u8; usize::try_from(input.memory_len % 4097).unwrap()];
    let mem_len = memory.len() as u64;
    let host_base = memory.as_ptr().addr() as u64;
    let Ok(model_args) = model::parse_with_capacity(input.argv, mem_len, 128) else { return };
    // The host function's check: the argv into pointer-free arguments.
    let mut args = kernel_args::LaunchArgs::new();
    parse_argv_into(input.argv, &GuestMemory::length_only(mem_len), &mut args).expect("the model accepts it");
    let mut reused = REUSED.lock().unwrap();
    let pointers = pointers(&model_args);

    // Not writable: the first pointer is named, nothing is left; scalars alone are stored.
    for guest in [GuestMemory::shared(&memory), GuestMemory::length_only(mem_len)] {
        let result = reused.fill(&args, |index, range| direct(&guest, index, range));
        match pointers {
            Some((first, _)) => {
                assert_eq!(result, Err(StorageError::Unplaced { index: first }));
                assert!(reused.is_empty(), "a refused fill left {} parameters", reused.len());
            }
            None => {
                assert_eq!(result, Ok(()));
                check_storage(&mut reused, &expected(&model_args, |_, _| unreachable!("no pointer")));
            }
        }
    }

    // Direct.
    let guest = GuestMemory::exclusive(&mut memory);
    let want = expected(&model_args, |_, guest_offset| host_base + u64::from(guest_offset));
    reused.fill(&args, |index, range| direct(&guest, index, range)).expect("a direct fill");
    check_storage(&mut reused, &want);
    let mut small = KernelParamStorage::<4>::new();
    match small.fill(&args, |index, range| direct(&guest, index, range)) {
        Ok(()) => {
            assert!(args.len() <= 4);
            check_storage(&mut small, &want);
        }
        Err(e) => {
            assert_eq!(e, StorageError::TooManyArgs { capacity: 4, got: args.len() });
            assert!(small.is_empty());
        }
    }

    // Staged: one address short, then every address, in place over the direct fill.
    let count = model_args.iter().filter(|a| matches!(a.value, Value::Ptr { .. })).count();
    if let Some((_, last)) = pointers {
        assert_eq!(reused.fill(&args, staged(count - 1)), Err(StorageError::Unplaced { index: last }));
        assert!(reused.is_empty(), "a refused staged fill left {} parameters", reused.len());
    }
    reused.fill(&args, staged(count)).expect("a staged fill");
    check_storage(&mut reused, &expected(&model_args, |k, _| device_address(k)));
});
