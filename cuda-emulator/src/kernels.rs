//! The CPU implementations of the project's fixture kernels (`cuda-backend/kernels/*.cu`):
//! what a launch of one of them computes, thread by thread, over the whole grid.
//!
//! A kernel is recognised by its entry name *and* its parameter sizes, so a module that
//! declares an entry of the same name with other parameters gets `CUDA_ERROR_NOT_SUPPORTED`
//! rather than a CPU kernel reading the wrong bytes. Each implementation follows its `.cu`
//! source and the PTX nvcc made of it: the same parameter offsets, the same 32-bit index
//! arithmetic (`blockIdx.x * blockDim.x + threadIdx.x`, wrapping), the same conversions
//! (`cvt.rn`), and single-precision results as the GPU gives them (IEEE round-to-nearest,
//! subnormals kept, a NaN result is the GPU's canonical NaN `0x7fffffff`). Every load and
//! store goes through [`KernelMemory`]; the first illegal one stops the kernel.
//!
//! | entry | parameters (bytes) | computes |
//! |---|---|---|
//! | `vector_add`, `_Z18vector_add_mangledPKfS0_Pfj` | `a, b, out` (8 each), `n` (4) | `out[i] = a[i] + b[i]` for `i < n` |
//! | `every_scalar` | i32, i64, f32, f64, u32, u64 (4, 8, 4, 8, 4, 8), `out` (8) | `out[0..6]` = the six values as `double` |
//! | `narrow_scalars` | s8, u8, s16, u16 (1, 1, 2, 2), `out` (8) | `out[0..4]` = the four values as `int` |
//! | `affine` | `Affine` (24: f32 scale @0, f64 offset @8, i32 count @16), `in`, `out` (8 each) | `out[i] = (double)(in[i] * scale) + offset` for `i < count` |
//!
//! `every_scalar` and `narrow_scalars` write in every thread with `blockIdx.x == 0` and
//! `threadIdx.x == 0`, as their PTX tests only the x coordinates.

use crate::memory::{Fault, KernelMemory};
use crate::ptx::PtxEntry;

/// A kernel the emulator can run on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `vector_add` and its mangled twin `_Z18vector_add_mangledPKfS0_Pfj`.
    VectorAdd,
    /// `every_scalar`.
    EveryScalar,
    /// `narrow_scalars`.
    NarrowScalars,
    /// `affine`.
    Affine,
}

/// A launch's grid and block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
}

/// What running a kernel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Threads run (the one that faulted included).
    pub threads: u64,
    /// The fault a thread made, which stopped the kernel.
    pub fault: Option<Fault>,
}

/// A kernel's parameter buffer: each parameter at its PTX offset.
#[derive(Debug, Clone, Copy)]
pub struct KernelParams<'a> {
    /// The bytes copied from `kernelParams[i]`, each at its offset.
    pub buffer: &'a [u8],
    /// The entry whose layout the buffer follows.
    pub entry: &'a PtxEntry,
}

impl KernelParams<'_> {
    /// `N` bytes at byte `at` of parameter `index`. The layout was matched against the kernel
    /// before it runs, so the bytes are there; zeros otherwise, never a panic.
    fn bytes<const N: usize>(&self, index: usize, at: usize) -> [u8; N] {
        self.entry
            .params
            .get(index)
            .and_then(|param| self.buffer.get(param.offset + at..param.offset + at + N))
            .and_then(|bytes| bytes.try_into().ok())
            .unwrap_or([0; N])
    }

    fn u64(&self, index: usize) -> u64 {
        u64::from_le_bytes(self.bytes(index, 0))
    }

    fn u32(&self, index: usize) -> u32 {
        u32::from_le_bytes(self.bytes(index, 0))
    }
}

/// One thread's special registers.
#[derive(Debug, Clone, Copy)]
struct Thread {
    /// `%ctaid`: `blockIdx`.
    ctaid: [u32; 3],
    /// `%tid`: `threadIdx`.
    tid: [u32; 3],
    /// `%ntid`: `blockDim`.
    ntid: [u32; 3],
}

impl Thread {
    /// `blockIdx.x * blockDim.x + threadIdx.x` in 32 bits, as `mad.lo.s32` computes it.
    fn global_x(&self) -> u32 {
        self.ctaid[0].wrapping_mul(self.ntid[0]).wrapping_add(self.tid[0])
    }

    /// `(blockIdx.x | threadIdx.x) == 0`: the writer of `every_scalar` and `narrow_scalars`.
    fn is_first_in_x(&self) -> bool {
        self.ctaid[0] | self.tid[0] == 0
    }
}

/// A single-precision result as the GPU gives it: a NaN is the canonical `0x7fffffff`.
fn gpu_f32(value: f32) -> f32 {
    if value.is_nan() { f32::from_bits(0x7fff_ffff) } else { value }
}

/// Runs `body` for every thread of the grid, block by block, until one faults.
fn each_thread(shape: LaunchShape, mut body: impl FnMut(&Thread) -> Result<(), Fault>) -> Outcome {
    let [grid_x, grid_y, grid_z] = shape.grid;
    let [block_x, block_y, block_z] = shape.block;
    let mut threads = 0u64;
    for bz in 0..grid_z {
        for by in 0..grid_y {
            for bx in 0..grid_x {
                for tz in 0..block_z {
                    for ty in 0..block_y {
                        for tx in 0..block_x {
                            threads = threads.saturating_add(1);
                            let thread = Thread { ctaid: [bx, by, bz], tid: [tx, ty, tz], ntid: shape.block };
                            if let Err(fault) = body(&thread) {
                                return Outcome { threads, fault: Some(fault) };
                            }
                        }
                    }
                }
            }
        }
    }
    Outcome { threads, fault: None }
}

impl Kernel {
    /// Every kernel, with its entry names and parameter sizes.
    const TABLE: [(Kernel, &'static [&'static str], &'static [usize]); 4] = [
        (Kernel::VectorAdd, &["vector_add", "_Z18vector_add_mangledPKfS0_Pfj"], &[8, 8, 8, 4]),
        (Kernel::EveryScalar, &["every_scalar"], &[4, 8, 4, 8, 4, 8, 8]),
        (Kernel::NarrowScalars, &["narrow_scalars"], &[1, 1, 2, 2, 8]),
        (Kernel::Affine, &["affine"], &[24, 8, 8]),
    ];

    /// The CPU kernel for `entry`, if the emulator has one with that name and those
    /// parameter sizes.
    pub fn for_entry(entry: &PtxEntry) -> Option<Kernel> {
        Kernel::TABLE.iter().find_map(|&(kernel, names, sizes)| {
            let same_params = entry.params.len() == sizes.len()
                && entry.params.iter().zip(sizes).all(|(param, &size)| param.size == size);
            (names.contains(&entry.name.as_str()) && same_params).then_some(kernel)
        })
    }

    /// Runs the kernel over every thread of `shape` with `params`, its memory accesses
    /// checked by `memory`.
    pub fn run(self, shape: LaunchShape, params: &KernelParams<'_>, memory: &KernelMemory<'_>) -> Outcome {
        match self {
            Kernel::VectorAdd => {
                let (a, b, out, n) = (params.u64(0), params.u64(1), params.u64(2), params.u32(3));
                each_thread(shape, |thread| {
                    let i = thread.global_x();
                    if i < n {
                        let offset = u64::from(i) * 4;
                        let y = f32::from_le_bytes(memory.load(b.wrapping_add(offset))?);
                        let x = f32::from_le_bytes(memory.load(a.wrapping_add(offset))?);
                        memory.store(out, offset, gpu_f32(x + y).to_le_bytes())?;
                    }
                    Ok(())
                })
            }
            Kernel::EveryScalar => {
                let values: [f64; 6] = [
                    f64::from(i32::from_le_bytes(params.bytes(0, 0))),
                    i64::from_le_bytes(params.bytes(1, 0)) as f64,
                    f64::from(f32::from_le_bytes(params.bytes(2, 0))),
                    f64::from_le_bytes(params.bytes(3, 0)),
                    f64::from(params.u32(4)),
                    params.u64(5) as f64,
                ];
                // `out[3] = f64` stores the parameter's bits unchanged.
                let f64_bits: [u8; 8] = params.bytes(3, 0);
                let out = params.u64(6);
                each_thread(shape, |thread| {
                    if thread.is_first_in_x() {
                        for (slot, value) in (0u64..).zip(values) {
                            let bytes = if slot == 3 { f64_bits } else { value.to_le_bytes() };
                            memory.store(out, slot * 8, bytes)?;
                        }
                    }
                    Ok(())
                })
            }
            Kernel::NarrowScalars => {
                let values: [i32; 4] = [
                    i32::from(i8::from_le_bytes(params.bytes(0, 0))),
                    i32::from(u8::from_le_bytes(params.bytes(1, 0))),
                    i32::from(i16::from_le_bytes(params.bytes(2, 0))),
                    i32::from(u16::from_le_bytes(params.bytes(3, 0))),
                ];
                let out = params.u64(4);
                each_thread(shape, |thread| {
                    if thread.is_first_in_x() {
                        for (slot, value) in (0u64..).zip(values) {
                            memory.store(out, slot * 4, value.to_le_bytes())?;
                        }
                    }
                    Ok(())
                })
            }
            Kernel::Affine => {
                let scale = f32::from_le_bytes(params.bytes(0, 0));
                let offset = f64::from_le_bytes(params.bytes(0, 8));
                // `(unsigned)p.count`: compared unsigned.
                let count = u32::from_le_bytes(params.bytes(0, 16));
                let (input, out) = (params.u64(1), params.u64(2));
                each_thread(shape, |thread| {
                    let i = thread.global_x();
                    if i < count {
                        let x = f32::from_le_bytes(memory.load(input.wrapping_add(u64::from(i) * 4))?);
                        // mul.f32, cvt.f64.f32, add.f64: no fused multiply-add across the types.
                        let product = gpu_f32(scale * x);
                        let result = offset + f64::from(product);
                        memory.store(out, u64::from(i) * 8, result.to_le_bytes())?;
                    }
                    Ok(())
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Crossing, DeviceMemory};
    use crate::ptx::read_ptx;

    const VECTOR_ADD: &str = include_str!("../../cuda-backend/kernels/vector_add.ptx");

    fn vector_add_params(a: u64, b: u64, out: u64, n: u32) -> Vec<u8> {
        [a.to_le_bytes(), b.to_le_bytes(), out.to_le_bytes()]
            .concat()
            .into_iter()
            .chain(n.to_le_bytes())
            .collect()
    }

    #[test]
    fn kernels_are_matched_by_name_and_parameter_sizes() {
        let module = read_ptx(VECTOR_ADD).unwrap();
        assert!(module.entries.iter().all(|entry| Kernel::for_entry(entry) == Some(Kernel::VectorAdd)));
        let other =
            read_ptx(".version 7.8\n.target sm_52\n.entry vector_add(.param .u64 a)\n{\n}\n").unwrap();
        assert_eq!(Kernel::for_entry(&other.entries[0]), None);
    }

    #[test]
    fn vector_add_runs_every_thread_and_stops_at_an_illegal_access() {
        let module = read_ptx(VECTOR_ADD).unwrap();
        let entry = &module.entries[0];
        let mut memory = DeviceMemory::new();
        let a = memory.alloc(1, 16).unwrap() as u64;
        let out = memory.alloc(1, 16).unwrap() as u64;
        let b = [1.5f32, f32::from_bits(0x7fc0_0001), -0.0, f32::MIN_POSITIVE / 2.0];
        let b_addr = b.as_ptr().expose_provenance() as u64;
        let view = memory.kernel_view(1, true);
        for (i, x) in (0u64..).zip([2.0f32, 1.0, 0.0, f32::MIN_POSITIVE / 2.0]) {
            view.store(a, i * 4, x.to_le_bytes()).unwrap();
        }
        let shape = LaunchShape { grid: [2, 1, 1], block: [3, 1, 1] };
        let buffer = vector_add_params(a, b_addr, out, 4);
        let outcome = Kernel::VectorAdd.run(shape, &KernelParams { buffer: &buffer, entry }, &view);
        assert_eq!(outcome, Outcome { threads: 6, fault: None });
        let result: Vec<u32> = (0..4).map(|i| u32::from_le_bytes(view.load(out + i * 4).unwrap())).collect();
        assert_eq!(result, [3.5f32.to_bits(), 0x7fff_ffff, 0, f32::MIN_POSITIVE.to_bits()]);

        assert!(view.crossings().is_empty());

        // `out` one element short: thread 3 writes past the allocation, into the bytes of its
        // shared mapping after it. No fault, as on a GPU; the store is recorded.
        let short = memory.alloc(1, 12).unwrap() as u64;
        let view = memory.kernel_view(1, true);
        let buffer = vector_add_params(a, b_addr, short, 4);
        let outcome = Kernel::VectorAdd.run(shape, &KernelParams { buffer: &buffer, entry }, &view);
        assert_eq!(outcome, Outcome { threads: 6, fault: None });
        let crossing =
            Crossing { context: 1, base: short, from: Some(short), addr: short + 12, len: 4, into: None };
        assert_eq!(view.crossings(), [crossing]);

        // A null `out`: thread 0's store is outside every mapping, and stops the kernel.
        let view = memory.kernel_view(1, true);
        let buffer = vector_add_params(a, b_addr, 0, 4);
        let outcome = Kernel::VectorAdd.run(shape, &KernelParams { buffer: &buffer, entry }, &view);
        assert_eq!(outcome, Outcome { threads: 1, fault: Some(Fault::IllegalAddress) });
    }
}
