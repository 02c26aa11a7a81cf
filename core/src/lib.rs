//! # kernel-args-core
//!
//! The allocation-free heart of the wasi-cuda `launch` ABI: it turns a guest's tagged
//! kernel-argument buffer (`args_ptr`, `args_len`) into bounds-checked arguments, and back.
//!
//! A guest packs its kernel parameters into one byte buffer of records, each a tag byte and a
//! little-endian value ([`ArgTag`]). The host parses it without trusting a byte: every pointer
//! window is checked against the guest's linear memory ([`GuestMemory`]), every error says what
//! and where ([`ArgvError`]), and the result lands in a fixed-capacity [`heapless::Vec`]
//! ([`ParsedArgv`]) whose capacity the host chooses, or, through [`parse_argv_into`], in any
//! [`ArgSink`]: a launcher's own parameter slots, filled in the same pass that checks each
//! record.
//!
//! ```
//! use kernel_args_core::{ArgvBuilder, GuestMemory, LoweredArg, ParsedArgv, parse_argv};
//!
//! // Guest side: encode two buffers and an element count.
//! let mut buf = [0u8; 32];
//! let mut argv = ArgvBuilder::new(&mut buf);
//! argv.ptr(0, 64)?.ptr(64, 64)?.u32(16)?;
//! let argv = argv.finish();
//!
//! // Host side: parse against the guest's memory.
//! let mut memory = vec![0u8; 128];
//! let guest = GuestMemory::exclusive(&mut memory);
//! let args: ParsedArgv = parse_argv(argv, &guest).expect("valid argv");
//! assert_eq!(args.len(), 3);
//! assert_eq!(args[2], LoweredArg::U32(16));
//! # Ok::<(), kernel_args_core::EncodeError>(())
//! ```
//!
//! ## Where to find what
//!
//! Every item is at the crate root; each rule lives in one file:
//!
//! - the wire format (tags, record layouts, sizes): [`ArgTag`], in code `src/wire.rs`, in prose
//!   `docs/wire-format.md`;
//! - the limits: [`MAX_KERNEL_ARGS`], [`MAX_KERNEL_ARGS_BYTES`], [`MAX_RECORD_SIZE`],
//!   [`MAX_GUEST_MEMORY_BYTES`] (`src/limits.rs`), and the byte cap's check, [`check_argv_len`];
//! - the error table and its ABI codes: [`ErrorKind`] (`src/error.rs`);
//! - guest memory, windows and the lifetime that ties them: [`GuestMemory`] (`src/memory.rs`);
//! - the parser and the reader: [`parse_argv_into`] (into any [`ArgSink`]), [`parse_argv`] (into
//!   a new [`ParsedArgv`]) and [`RecordReader`] (record by record, with each record's place),
//!   one decoder behind all three (`src/reader.rs`); the rules and their precedence are
//!   `docs/wire-format.md`'s;
//! - the encoder and the guest-side builder: [`encode_argv`], [`ArgvBuilder`] (`src/encode.rs`).
//!
//! ## Contract
//!
//! - **No panics.** No input makes any public function of this crate panic. Non-test code is
//!   compiled with `clippy::unwrap_used`, `expect_used`, `panic`, `indexing_slicing` and
//!   `arithmetic_side_effects` denied, and the fuzz targets check it.
//! - **No allocation, no `unsafe`.** `#![no_std]` without `alloc`; `unsafe` is forbidden.
//!   Host pointers are carried, never dereferenced.
//! - **No stale state.** Parsing returns a fresh vector, and [`parse_argv_into`] leaves its
//!   output empty on error.
//! - **Exact round trips.** Floats are kept as raw bits; for every accepted buffer,
//!   [`encode_argv`] of the parsed arguments gives back the same bytes.
//!
//! ## Features
//!
//! - `defmt`: derives `defmt::Format` for every public type, for embedded hosts.

#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Tests may compute without checks (clippy.toml lets them unwrap, panic and index): a panic
// there is a failing test, not a broken contract.
#![cfg_attr(test, allow(clippy::arithmetic_side_effects))]

mod arg;
mod encode;
mod error;
mod limits;
mod memory;
mod reader;
mod wire;

pub use arg::{Arg, AsGuestRange, F32Bits, F64Bits, LoweredArg, LoweredArgSnapshot};
pub use encode::{ArgvBuilder, encode_argv, encoded_len};
pub use error::{ArgvError, EncodeError, ErrorCode, ErrorKind};
pub use limits::{MAX_GUEST_MEMORY_BYTES, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES, MAX_RECORD_SIZE};
pub use memory::{Access, GuestMemory, GuestRange, GuestWindow};
pub use reader::{
    ArgSink, ParsedArgv, Record, RecordReader, SinkFull, check_argv_len, parse_argv, parse_argv_into,
};
pub use wire::ArgTag;

/// The README's code, run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
