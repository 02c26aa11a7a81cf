//! The demo guest: a `no_std` wasm32 module that launches a `vector_add` kernel through the
//! wasi-cuda `wasi_cuda_launch` import, with its argv built by `kernel-args-core`.
//!
//! It keeps three `f32` buffers (`a`, `b`, `out`) of [`CAPACITY`] elements in its own linear
//! memory and hands the kernel
//!
//! ```text
//! vector_add(const float *a, const float *b, float *out, unsigned n)   // out[i] = a[i] + b[i]
//! ```
//!
//! as four records: three pointer windows of `4 * n` bytes and the `u32` element count.
//! The other exports send deliberately bad calls, so the host's answers can be tested
//! against a real module, and expose the buffers so a real backend's result can be checked.
//!
//! The buffers are arrays of atomics: the host (or a GPU) writes `out` during the import call,
//! and atomics make that interior mutation sound without any `unsafe` block. The only unsafe
//! tokens are the `unsafe(no_mangle)` export attributes and the `unsafe extern` import block,
//! which the language requires.
//!
//! Return values: `0` or a negative wasi-cuda ABI code from the host, or one of this guest's
//! own codes ([`ERR_BAD_COUNT`], [`ERR_ENCODE`]), which lie below the ABI's range.

#![no_std]

#[cfg(not(target_arch = "wasm32"))]
compile_error!("the demo guest is built for wasm32-unknown-unknown (scripts/build-guest.sh does this)");

use core::sync::atomic::{AtomicU8, AtomicU32, Ordering::Relaxed};

use kernel_args_core::{ArgvBuilder, EncodeError, MAX_KERNEL_ARGS, MAX_KERNEL_ARGS_BYTES};

/// Elements in each of `a`, `b` and `out`.
pub const CAPACITY: usize = 4096;

/// The kernel id the guest launches `vector_add` with.
pub const VECTOR_ADD_KERNEL_ID: i64 = 1;

/// Threads per block of the vector_add launch.
pub const THREADS_PER_BLOCK: i32 = 256;

/// Guest code: the element count is negative or larger than [`CAPACITY`].
pub const ERR_BAD_COUNT: i32 = -100;

/// Guest code: the argv could not be encoded (cannot happen for the sizes used here).
pub const ERR_ENCODE: i32 = -101;

/// Written into `out` before each launch, so an element no kernel wrote is visible (a NaN).
const OUT_SENTINEL: u32 = 0x7fc0_dead;

static A: [AtomicU32; CAPACITY] = [const { AtomicU32::new(0) }; CAPACITY];
static B: [AtomicU32; CAPACITY] = [const { AtomicU32::new(0) }; CAPACITY];
static OUT: [AtomicU32; CAPACITY] = [const { AtomicU32::new(0) }; CAPACITY];

/// A copy of the last argv sent, for the host's tests to compare with what it recorded.
static LAST_ARGV: [AtomicU8; MAX_KERNEL_ARGS_BYTES] = [const { AtomicU8::new(0) }; MAX_KERNEL_ARGS_BYTES];
static LAST_ARGV_LEN: AtomicU32 = AtomicU32::new(0);

#[link(wasm_import_module = "wasi:cuda/host@0.2.0")]
unsafe extern "C" {
    /// Launches kernel `kernel_id` over the grid with the argv at `args_ptr`/`args_len`;
    /// returns 0 or a negative wasi-cuda ABI code.
    safe fn wasi_cuda_launch(
        kernel_id: i64,
        grid_x: i32,
        grid_y: i32,
        grid_z: i32,
        block_x: i32,
        block_y: i32,
        block_z: i32,
        shared_mem: i32,
        args_ptr: i32,
        args_len: i32,
    ) -> i32;
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// Grid, block and shared memory of a launch.
#[derive(Clone, Copy)]
struct Shape {
    grid: [i32; 3],
    block: [i32; 3],
    shared_mem: i32,
}

/// One block of [`THREADS_PER_BLOCK`] threads per 256 elements (at least one block).
fn vector_add_shape(n: usize) -> Shape {
    let blocks = n.div_ceil(THREADS_PER_BLOCK as usize).max(1);
    Shape { grid: [blocks as i32, 1, 1], block: [THREADS_PER_BLOCK, 1, 1], shared_mem: 0 }
}

/// The guest's linear-memory offset of `data` (on wasm32 an address is that offset).
fn offset_of<T>(data: &[T]) -> i32 {
    data.as_ptr().addr() as i32
}

/// The linear memory's size in bytes.
fn memory_bytes() -> u32 {
    (core::arch::wasm32::memory_size::<0>() as u32).wrapping_mul(65_536)
}

/// Sends `argv` from where it lies in linear memory, keeping a copy in [`LAST_ARGV`].
fn launch(kernel_id: i64, shape: Shape, argv: &[u8]) -> i32 {
    for (slot, &byte) in LAST_ARGV.iter().zip(argv) {
        slot.store(byte, Relaxed);
    }
    LAST_ARGV_LEN.store(argv.len().min(MAX_KERNEL_ARGS_BYTES) as u32, Relaxed);
    launch_raw(
        kernel_id,
        shape.grid[0],
        shape.grid[1],
        shape.grid[2],
        shape.block[0],
        shape.block[1],
        shape.block[2],
        shape.shared_mem,
        offset_of(argv),
        argv.len() as i32,
    )
}

/// `n` as an element count, if `0 <= n <= CAPACITY`.
fn count(n: i32) -> Option<usize> {
    usize::try_from(n).ok().filter(|&n| n <= CAPACITY)
}

/// `a[i] = i`, `b[i] = 2i + 1`, `out[i] = sentinel` for `i < n`.
fn fill(n: usize) {
    for i in 0..n {
        A[i].store((i as f32).to_bits(), Relaxed);
        B[i].store((2.0 * i as f32 + 1.0).to_bits(), Relaxed);
        OUT[i].store(OUT_SENTINEL, Relaxed);
    }
}

/// The vector_add argv for the first `n` elements: `a`, `b`, `out`, `n`.
fn vector_add_argv(argv: &mut ArgvBuilder<'_>, n: usize) -> Result<(), EncodeError> {
    argv.slice(&A[..n])?.slice(&B[..n])?.slice(&OUT[..n])?.u32(n as u32)?;
    Ok(())
}

/// Fills `a` and `b` for `n` elements, builds the vector_add argv and launches it.
#[unsafe(no_mangle)]
pub extern "C" fn run_vector_add(n: i32) -> i32 {
    let Some(n) = count(n) else { return ERR_BAD_COUNT };
    fill(n);
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    if vector_add_argv(&mut argv, n).is_err() {
        return ERR_ENCODE;
    }
    launch(VECTOR_ADD_KERNEL_ID, vector_add_shape(n), argv.finish())
}

/// The index of the first `out[i]` (`i < n`) that is not bit-for-bit `a[i] + b[i]`, or `-1`
/// when all are (so `-1` after a real launch means the kernel ran correctly).
#[unsafe(no_mangle)]
pub extern "C" fn first_mismatch(n: i32) -> i32 {
    let Some(n) = count(n) else { return ERR_BAD_COUNT };
    for i in 0..n {
        let want = f32::from_bits(A[i].load(Relaxed)) + f32::from_bits(B[i].load(Relaxed));
        if OUT[i].load(Relaxed) != want.to_bits() {
            return i as i32;
        }
    }
    -1
}

/// `out[i]`, or NaN when `i` is out of range.
#[unsafe(no_mangle)]
pub extern "C" fn out_at(i: i32) -> f32 {
    count(i).and_then(|i| OUT.get(i)).map_or(f32::NAN, |v| f32::from_bits(v.load(Relaxed)))
}

/// Offset of `a` in linear memory.
#[unsafe(no_mangle)]
pub extern "C" fn a_ptr() -> i32 {
    offset_of(&A)
}

/// Offset of `b` in linear memory.
#[unsafe(no_mangle)]
pub extern "C" fn b_ptr() -> i32 {
    offset_of(&B)
}

/// Offset of `out` in linear memory.
#[unsafe(no_mangle)]
pub extern "C" fn out_ptr() -> i32 {
    offset_of(&OUT)
}

/// Elements in each buffer.
#[unsafe(no_mangle)]
pub extern "C" fn capacity() -> i32 {
    CAPACITY as i32
}

/// Offset of the copy of the last argv sent.
#[unsafe(no_mangle)]
pub extern "C" fn last_argv_ptr() -> i32 {
    offset_of(&LAST_ARGV)
}

/// Length of the last argv sent.
#[unsafe(no_mangle)]
pub extern "C" fn last_argv_len() -> i32 {
    LAST_ARGV_LEN.load(Relaxed) as i32
}

/// Calls the import with exactly these values.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the import's own signature
pub extern "C" fn launch_raw(
    kernel_id: i64,
    grid_x: i32,
    grid_y: i32,
    grid_z: i32,
    block_x: i32,
    block_y: i32,
    block_z: i32,
    shared_mem: i32,
    args_ptr: i32,
    args_len: i32,
) -> i32 {
    wasi_cuda_launch(
        kernel_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, args_ptr, args_len,
    )
}

/// vector_add over 16 elements whose `out` window starts at the end of linear memory:
/// the host must answer InvalidPointer (-2).
#[unsafe(no_mangle)]
pub extern "C" fn send_ptr_past_memory() -> i32 {
    let n = 16;
    fill(n);
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    let built = (|| -> Result<(), EncodeError> {
        argv.slice(&A[..n])?.slice(&B[..n])?.ptr(memory_bytes(), 4 * n as u32)?.u32(n as u32)?;
        Ok(())
    })();
    if built.is_err() {
        return ERR_ENCODE;
    }
    launch(VECTOR_ADD_KERNEL_ID, vector_add_shape(n), argv.finish())
}

/// The vector_add argv followed by a record with the unknown tag `0xff`: the host must
/// answer InvalidArgs (-9).
#[unsafe(no_mangle)]
pub extern "C" fn send_unknown_tag() -> i32 {
    let n = 16;
    fill(n);
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    if vector_add_argv(&mut argv, n).is_err() {
        return ERR_ENCODE;
    }
    let len = argv.len();
    let bad = [0xff, 0, 0, 0, 0];
    buf[len..len + bad.len()].copy_from_slice(&bad);
    launch(VECTOR_ADD_KERNEL_ID, vector_add_shape(n), &buf[..len + bad.len()])
}

/// 129 `u32` records, one more than the ABI allows (the encoder refuses the 129th, so it is
/// written by hand): the host must answer KernelArgsUnsupported (-10).
#[unsafe(no_mangle)]
pub extern "C" fn send_too_many_args() -> i32 {
    const RECORD: usize = 5;
    let mut buf = [0u8; (MAX_KERNEL_ARGS + 1) * RECORD];
    let mut argv = ArgvBuilder::new(&mut buf);
    for i in 0..MAX_KERNEL_ARGS {
        if argv.u32(i as u32).is_err() {
            return ERR_ENCODE;
        }
    }
    let len = argv.len();
    buf[len..len + RECORD].copy_from_slice(&[0x05, 128, 0, 0, 0]);
    launch(VECTOR_ADD_KERNEL_ID, vector_add_shape(1), &buf[..len + RECORD])
}

/// An argument region that starts 8 bytes before the end of linear memory and is 32 bytes
/// long: the host must answer InvalidPointer (-2) without reading it.
#[unsafe(no_mangle)]
pub extern "C" fn send_args_region_past_memory() -> i32 {
    let shape = vector_add_shape(16);
    let args_ptr = memory_bytes().wrapping_sub(8) as i32;
    launch_raw(VECTOR_ADD_KERNEL_ID, shape.grid[0], 1, 1, shape.block[0], 1, 1, 0, args_ptr, 32)
}

/// A valid vector_add argv with a block of 2048 threads: the host must answer
/// InvalidDimensions (-8).
#[unsafe(no_mangle)]
pub extern "C" fn send_bad_dimensions() -> i32 {
    let n = 16;
    fill(n);
    let mut buf = [0u8; 64];
    let mut argv = ArgvBuilder::new(&mut buf);
    if vector_add_argv(&mut argv, n).is_err() {
        return ERR_ENCODE;
    }
    let shape = Shape { block: [2048, 1, 1], ..vector_add_shape(n) };
    launch(VECTOR_ADD_KERNEL_ID, shape, argv.finish())
}
