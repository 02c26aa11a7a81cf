//! `differential`: the core against the plainly written specification model,
//! `kernel_args_testkit::model` (`testkit/src/model.rs`).
//!
//! Input: 8 bytes of little-endian memory length, then the argv buffer (see `ArgvInput`).
//! For the full capacity (128) and two small ones, the core and the model must both accept
//! with the same values (floats by bits, windows by offset and length), or both refuse with
//! the same code, record index, byte offset and kind (with the kind's details).
#![no_main]

use kernel_args_core::{GuestMemory, ParsedArgv, parse_argv};
use kernel_args_fuzz::ArgvInput;
use kernel_args_testkit::model::{self, Rejection, Value};
use libfuzzer_sys::fuzz_target;

fn compare<const N: usize>(argv: &[u8], memory_len: u64) {
    let memory = GuestMemory::length_only(memory_len);
    let core: Result<ParsedArgv<'_, N>, _> = parse_argv(argv, &memory);
    let model = model::parse_with_capacity(argv, memory_len, N);
    match (core, model) {
        (Ok(args), Ok(model_args)) => {
            let args: Vec<Value> = args.iter().map(|a| Value::from(a.snapshot())).collect();
            let values: Vec<Value> = model_args.iter().map(|a| a.value).collect();
            assert_eq!(args, values, "accepted with different values (capacity {N})");
        }
        (Err(e), Err(m)) => {
            let e = Rejection::from(&e);
            assert_eq!(e.failure.code(), m.failure.code(), "different codes: core {e:?}, model {m:?}");
            assert_eq!((e.index, e.offset), (m.index, m.offset), "different places: core {e:?}, model {m:?}");
            assert_eq!(e.failure.kind(), m.failure.kind(), "different kinds: core {e:?}, model {m:?}");
            assert_eq!(e, m, "different details (capacity {N})");
        }
        (core, model) => panic!("capacity {N}: core {core:?}, model {model:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = ArgvInput::split(data) else { return };
    compare::<128>(input.argv, input.memory_len);
    compare::<1>(input.argv, input.memory_len);
    compare::<5>(input.argv, input.memory_len);
});
