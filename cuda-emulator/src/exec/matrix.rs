//! Tensor-core matrix instructions: `wmma.load`, `wmma.store` and `wmma.mma` of the half-precision
//! shapes (`m16n16k16`, `m32n8k16`, `m8n32k16`: `.f16` A and B, `.f16` or `.f32` C and D), in
//! the global and shared state spaces and through generic addresses.
//!
//! PTX leaves unspecified which lane holds which element of a fragment: a kernel may only hand a
//! fragment to the `wmma` instructions of its shape. Here the elements of a matrix, numbered in
//! row-major order whatever its layout in memory, are dealt to the lanes in turn: slot `j` of
//! lane `l` holds element `(l * per_lane + j) mod elements`, where `per_lane` is the fragment's
//! elements per lane (16 for A and B, 8 for C and D); a fragment with more slots than its
//! matrix has elements (B of `m32n8k16`, A of `m8n32k16`) holds them again from the start.
//!
//! A load or a store is each lane's own: it reads or writes its slots' elements from the
//! address and stride it holds itself, as ptxas compiles `wmma.load` into each lane's own loads.
//! The address must be aligned to 32 bytes and the stride (elements from the start of one row,
//! or column for `.col`, to the next; the line's length where none is written) a multiple of 16
//! bytes, or the kernel faults as misaligned, as on a GPU. `wmma.mma` is warp-synchronous: the
//! warp's lanes execute it together (the scheduler's warp gathering, `warp`), each result computed from every lane's
//! fragments in `f32` (each product exact, summed in `k` order onto C); a lane that has ended
//! contributes zeros. A GPU's tensor cores may round a sum in another order, so results agree
//! with a GPU's to the last bit only where every sum is exact.

use half::f16;
use kernel_args_ptx::{Operand as Src, OperandKind};

use super::error::DecodeError;
use super::memory_ops::{effective, load, store};
use super::operands::{Names, address, lanes as vector_lanes, operand, register};
use super::{AddrBase, Context, Operand, Registers, Space, Special, Ty, read};
use crate::memory::Fault;

/// Which matrix of `D = A × B + C` a fragment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matrix {
    /// `A`, `m × k`.
    A,
    /// `B`, `k × n`.
    B,
    /// `C` or `D`, `m × n`.
    Accumulator,
}

/// A shape, `m`, `n`, `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    m: usize,
    n: usize,
    k: usize,
}

impl Shape {
    fn parse(modifier: &str) -> Option<Shape> {
        Some(match modifier {
            "m16n16k16" => Shape { m: 16, n: 16, k: 16 },
            "m32n8k16" => Shape { m: 32, n: 8, k: 16 },
            "m8n32k16" => Shape { m: 8, n: 32, k: 16 },
            _ => return None,
        })
    }

    /// A matrix's rows and columns.
    fn dims(self, matrix: Matrix) -> (usize, usize) {
        match matrix {
            Matrix::A => (self.m, self.k),
            Matrix::B => (self.k, self.n),
            Matrix::Accumulator => (self.m, self.n),
        }
    }
}

/// A fragment: which matrix, of which shape, of `f16` (two to a register) or `f32` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    matrix: Matrix,
    shape: Shape,
    half: bool,
}

impl Fragment {
    /// Elements per lane.
    fn per_lane(self) -> usize {
        if self.matrix == Matrix::Accumulator { 8 } else { 16 }
    }

    /// Registers per lane.
    fn registers(self) -> usize {
        if self.half { self.per_lane() / 2 } else { self.per_lane() }
    }

    fn elements(self) -> usize {
        let (rows, cols) = self.shape.dims(self.matrix);
        rows * cols
    }

    fn bytes(self) -> usize {
        if self.half { 2 } else { 4 }
    }

    /// Slot `j`'s element of `regs`, as an `f32`.
    fn get(self, regs: &Registers, slots: &[usize], j: usize) -> f32 {
        if self.half {
            let bits = slots.get(j / 2).map_or(0, |&s| regs.bits[s]);
            f16::from_bits((bits >> (16 * (j % 2))) as u16).to_f32()
        } else {
            f32::from_bits(slots.get(j).map_or(0, |&s| regs.bits[s]) as u32)
        }
    }

    /// Slot `j`'s element's bits, as memory holds them.
    fn bits(self, regs: &Registers, slots: &[usize], j: usize) -> u64 {
        if self.half {
            (slots.get(j / 2).map_or(0, |&s| regs.bits[s]) >> (16 * (j % 2))) & 0xffff
        } else {
            slots.get(j).map_or(0, |&s| regs.bits[s]) & 0xffff_ffff
        }
    }

    /// Sets slot `j`'s element to `bits` (an `f16`'s or `f32`'s).
    fn set(self, regs: &mut Registers, slots: &[usize], j: usize, bits: u64) {
        if self.half {
            let Some(&s) = slots.get(j / 2) else { return };
            let shift = 16 * (j % 2);
            regs.bits[s] = (regs.bits[s] & !(0xffff << shift)) | ((bits & 0xffff) << shift);
            regs.origin[s] = 0;
        } else if let Some(&s) = slots.get(j) {
            regs.bits[s] = bits & 0xffff_ffff;
            regs.origin[s] = 0;
        }
    }

    /// The element slot `j` of `lane` holds, as its row and column.
    fn element(self, lane: usize, j: usize) -> (usize, usize) {
        let (_, cols) = self.shape.dims(self.matrix);
        let e = (lane * self.per_lane() + j) % self.elements();
        (e / cols, e % cols)
    }
}

/// A decoded `wmma.load` or `wmma.store`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixMemory {
    /// Whether it stores (`wmma.store.d`).
    store: bool,
    fragment: Fragment,
    /// `.row`: rows are lines in memory; `.col`: columns are.
    row: bool,
    space: Space,
    /// The fragment's registers.
    slots: Vec<usize>,
    addr: (AddrBase, i64),
    /// Elements between the starts of consecutive lines (`None`: the line's length).
    stride: Option<Operand>,
}

/// A decoded `wmma.mma`: `D = A × B + C`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixMma {
    shape: Shape,
    /// Whether D and C hold `f16`.
    d_half: bool,
    c_half: bool,
    d: Vec<usize>,
    a: Vec<usize>,
    b: Vec<usize>,
    c: Vec<usize>,
}

fn fragment_registers(src: &Src, want: usize, names: &mut Names) -> Result<Vec<usize>, DecodeError> {
    let items = vector_lanes(src);
    if items.len() != want || !matches!(src.kind, OperandKind::Vector(_)) {
        return Err(DecodeError::Lanes { opcode: "wmma".to_owned(), lanes: want, operand: src.to_string() });
    }
    items.into_iter().map(|r| register(r, names)).collect()
}

/// A decoded `wmma` instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// `wmma.mma`: the warp's together (`warp`).
    Mma(MatrixMma),
    /// `wmma.load` or `wmma.store`: each lane's own.
    Memory(MatrixMemory),
}

/// Decodes `wmma.load`, `wmma.store` and `wmma.mma`.
///
/// # Errors
///
/// A form this interpreter does not run, named.
pub fn decode(modifiers: &[&str], operands: &[Src], names: &mut Names) -> Result<Decoded, DecodeError> {
    let unsupported = || DecodeError::Form { instruction: format!("wmma.{}", modifiers.join(".")) };
    match modifiers {
        ["mma", "sync", "aligned", _, _, shape, d, c] => {
            let shape = Shape::parse(shape).ok_or_else(unsupported)?;
            let half = |t: &str| match t {
                "f16" => Ok(true),
                "f32" => Ok(false),
                _ => Err(unsupported()),
            };
            let (d_half, c_half) = (half(d)?, half(c)?);
            let [d, a, b, c] = operands else {
                return Err(DecodeError::OperandCount { opcode: "wmma".to_owned(), count: operands.len() });
            };
            let accumulator = |h: bool| if h { 4 } else { 8 };
            Ok(Decoded::Mma(MatrixMma {
                shape,
                d_half,
                c_half,
                d: fragment_registers(d, accumulator(d_half), names)?,
                a: fragment_registers(a, 8, names)?,
                b: fragment_registers(b, 8, names)?,
                c: fragment_registers(c, accumulator(c_half), names)?,
            }))
        }
        [verb @ ("load" | "store"), which, "sync", "aligned", layout, shape, rest @ ..] => {
            let store = *verb == "store";
            let matrix = match (*which, store) {
                ("a", false) => Matrix::A,
                ("b", false) => Matrix::B,
                ("c", false) | ("d", true) => Matrix::Accumulator,
                _ => return Err(unsupported()),
            };
            let row = match *layout {
                "row" => true,
                "col" => false,
                _ => return Err(unsupported()),
            };
            let shape = Shape::parse(shape).ok_or_else(unsupported)?;
            let (space, ty) = match rest {
                [ty] => (Space::Generic, *ty),
                ["global", ty] => (Space::Global, *ty),
                ["shared" | "shared::cta", ty] => (Space::Shared, *ty),
                _ => return Err(unsupported()),
            };
            let half = match (ty, matrix) {
                ("f16", _) => true,
                ("f32", Matrix::Accumulator) => false,
                _ => return Err(unsupported()),
            };
            let fragment = Fragment { matrix, shape, half };
            let (regs, addr, stride) = match (store, operands) {
                (false, [r, a]) | (true, [a, r]) => (r, a, None),
                (false, [r, a, s]) | (true, [a, r, s]) => (r, a, Some(s)),
                _ => {
                    return Err(DecodeError::OperandCount {
                        opcode: "wmma".to_owned(),
                        count: operands.len(),
                    });
                }
            };
            Ok(Decoded::Memory(MatrixMemory {
                store,
                fragment,
                row,
                space,
                slots: fragment_registers(regs, fragment.registers(), names)?,
                addr: address(addr, space, names)?,
                stride: stride.map(|s| operand(s, Ty::U(32), names)).transpose()?,
            }))
        }
        _ => Err(unsupported()),
    }
}

/// Runs a lane's `wmma.load` or `wmma.store`.
///
/// # Errors
///
/// The [`Fault`] of a misaligned or faulting access.
pub fn execute(op: &MatrixMemory, regs: &mut Registers, cx: &mut Context<'_, '_>) -> Result<(), Fault> {
    let f = op.fragment;
    let (rows, cols) = f.shape.dims(f.matrix);
    let line = if op.row { cols } else { rows };
    let stride = op.stride.map_or(line as u64, |s| read(regs, cx, s).0 & 0xffff_ffff);
    let (at, _) = effective(regs, op.addr);
    let size = f.bytes() as u64;
    if !at.is_multiple_of(32) || !(stride * size).is_multiple_of(16) {
        return Err(Fault::Misaligned);
    }
    let lane = cx.special(Special::LaneId) as usize;
    for j in 0..f.per_lane() {
        let (r, c) = f.element(lane, j);
        let (line, within) = if op.row { (r, c) } else { (c, r) };
        let offset = (line as u64 * stride + within as u64) * size;
        if op.store {
            let bits = f.bits(regs, &op.slots, j);
            store(cx, op.space, at, offset, f.bytes(), bits)?;
        } else {
            let bits = load(cx, op.space, at.wrapping_add(offset), f.bytes())?;
            f.set(regs, &op.slots, j, bits);
        }
    }
    Ok(())
}

impl MatrixMma {
    /// Whether two lanes' `wmma.mma` are the same instruction form.
    pub fn same_form(&self, other: &MatrixMma) -> bool {
        (self.shape, self.d_half, self.c_half) == (other.shape, other.d_half, other.c_half)
    }

    /// Executes it for the lanes of a warp with `Some` registers (lane `l` at index `l`).
    pub fn execute(&self, lanes: &mut [Option<&mut Registers>]) {
        let frag = |matrix, half| Fragment { matrix, shape: self.shape, half };
        let (a, b) = (frag(Matrix::A, true), frag(Matrix::B, true));
        let (c, d) = (frag(Matrix::Accumulator, self.c_half), frag(Matrix::Accumulator, self.d_half));
        // Element (r, col) of a matrix: from the first lane that holds it.
        let value = |f: Fragment, slots: &[usize], lanes: &[Option<&mut Registers>], r: usize, col: usize| {
            let (_, cols) = f.shape.dims(f.matrix);
            let e = r * cols + col;
            match lanes.get(e / f.per_lane()) {
                Some(Some(regs)) => f.get(regs, slots, e % f.per_lane()),
                _ => 0.0,
            }
        };
        let Shape { m, n, k } = self.shape;
        let mut out = vec![0f32; m * n];
        for r in 0..m {
            for col in 0..n {
                let mut sum = value(c, &self.c, lanes, r, col);
                for i in 0..k {
                    sum += value(a, &self.a, lanes, r, i) * value(b, &self.b, lanes, i, col);
                }
                out[r * n + col] = sum;
            }
        }
        for (lane, regs) in lanes.iter_mut().enumerate() {
            let Some(regs) = regs else { continue };
            for j in 0..d.per_lane() {
                let (r, col) = d.element(lane, j);
                let v = out[r * n + col];
                let bits =
                    if self.d_half { u64::from(f16::from_f32(v).to_bits()) } else { u64::from(v.to_bits()) };
                d.set(regs, &self.d, j, bits);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::run;
    use half::f16;

    /// A warp's `m16n16k16` product of A (row-major at `out`) and B (column-major at
    /// `out + 512`), C zero, stored row-major as `f32` at `out + 1024` with a stride of
    /// `stride`: the buffer after the run, and the fault.
    fn product(stride: &str, a: &[f32], b: &[f32], store_at: u64) -> (Vec<u8>, Option<crate::memory::Fault>) {
        let (bytes, fault) = run_with(|body| body.to_owned(), stride, a, b, store_at);
        (bytes, fault)
    }

    /// [`product`], its body edited by `edit` first.
    fn run_with(
        edit: impl Fn(&str) -> String,
        stride: &str,
        a: &[f32],
        b: &[f32],
        store_at: u64,
    ) -> (Vec<u8>, Option<crate::memory::Fault>) {
        let mut init = String::new();
        for (i, v) in a.iter().chain(b).enumerate() {
            let bits = f16::from_f32(*v).to_bits();
            init.push_str(&format!("\tmov.u16 %rs1, {bits};\n\tst.global.u16 [%out+{}], %rs1;\n", i * 2));
        }
        let body = format!(
            "{init}\tmov.u32 %r30, 16;\n\
             \twmma.load.a.sync.aligned.row.m16n16k16.global.f16 {{%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}}, [%out], %r30;\n\
             \tadd.s64 %rd1, %out, 512;\n\
             \twmma.load.b.sync.aligned.col.m16n16k16.global.f16 {{%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}}, [%rd1], %r30;\n\
             \tmov.f32 %f1, 0f00000000;\n\
             \twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {{%f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9}}, \
             {{%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}}, {{%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}}, \
             {{%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1}};\n\
             \tadd.s64 %rd2, %out, {store_at};\n\
             \twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd2], {{%f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9}}, {stride};\n"
        );
        let (bytes, outcome) = run(&edit(&body), 32, 4096);
        (bytes, outcome.fault)
    }

    #[test]
    fn a_warp_multiplies_its_fragments_as_the_matrices_say() {
        // Small integers: every product and sum is exact in f16 and f32.
        let a: Vec<f32> = (0..256).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
        let b: Vec<f32> = (0..256).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
        let (bytes, fault) = product("24", &a, &b, 1024);
        assert_eq!(fault, None);
        for r in 0..16 {
            for c in 0..16 {
                // A row-major: a[r*16+k]; B column-major: b[c*16+k].
                let want: f32 = (0..16).map(|k| a[r * 16 + k] * b[c * 16 + k]).sum();
                let at = 1024 + (r * 24 + c) * 4;
                let got = f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
                assert_eq!(got, want, "D[{r}][{c}]");
            }
            // The stride's gap between rows is left as it was.
            let gap = 1024 + (r * 24 + 16) * 4;
            assert!(bytes[gap..gap + 32].iter().all(|&x| x == 0), "row {r}'s gap");
        }
    }

    #[test]
    fn generic_fragments_reach_global_memory() {
        // The same product with every fragment's address generic (no state space written).
        let a: Vec<f32> = (0..256).map(|i| (i % 3) as f32).collect();
        let (global, fault) = product("16", &a, &a, 1024);
        assert_eq!(fault, None);
        let generic = |body: &str| body.replace(".global.f16", ".f16").replace(".global.f32", ".f32");
        let (bytes, outcome) = run_with(generic, "16", &a, &a, 1024);
        assert_eq!((outcome, bytes), (None, global));
    }

    #[test]
    fn a_misaligned_address_or_stride_faults_as_on_a_gpu() {
        let a = vec![1.0; 256];
        let (_, fault) = product("16", &a, &a, 1040);
        assert_eq!(
            fault,
            Some(crate::memory::Fault::Misaligned),
            "an address 16 bytes past a 32-byte boundary"
        );
        let (_, fault) = product("18", &a, &a, 1024);
        assert_eq!(fault, Some(crate::memory::Fault::Misaligned), "a stride of 72 bytes");
        let (bytes, fault) = product("16", &a, &a, 1024);
        assert_eq!(fault, None);
        assert_eq!(f32::from_le_bytes(bytes[1024..1028].try_into().unwrap()), 16.0);
    }

    /// Dynamic shared memory starts at its declaration's alignment (32, as the fence asks of a
    /// module with a shared fragment), not only 16, past the static variables.
    #[test]
    fn dynamic_shared_memory_starts_at_its_alignment() {
        let text = super::super::testing::module("\t.shared .align 16 .b8 small[16];\n")
            .replace(".visible .entry", ".extern .shared .align 32 .b8 dynamic[];\n.visible .entry");
        let ptx = crate::ptx::read_ptx(&text).unwrap();
        let program = super::super::compile(&ptx, &ptx.entries[0], &Default::default()).unwrap();
        assert_eq!((program.shared_bytes, program.dynamic_at), (16, 32));
    }

    /// A warp's fragments loaded from a tile in shared memory (every element 1.0): each of
    /// D's elements is 16.
    #[test]
    fn fragments_load_from_shared_memory() {
        let body = "\t.shared .align 32 .b8 tile[512];\n\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 16;\n\tmov.u64 %rd5, tile;\n\tadd.s64 %rd6, %rd5, %rd3;\n\tmov.u32 %r2, 0x3c003c00;\n\tst.shared.v4.u32 [%rd6], {%r2, %r2, %r2, %r2};\n\tbar.sync 0;\n\tmov.u32 %r6, 16;\n\twmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14}, [%rd5], %r6;\n\twmma.load.b.sync.aligned.col.m16n16k16.shared.f16 {%r15, %r16, %r17, %r18, %r19, %r20, %r21, %r22}, [%rd5], %r6;\n\tmov.f32 %f1, 0f00000000;\n\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9}, {%r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14}, {%r15, %r16, %r17, %r18, %r19, %r20, %r21, %r22}, {%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1};\n\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%out], {%f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9}, %r6;\n";
        let (bytes, outcome) = run(body, 32, 1024);
        assert_eq!(outcome.fault, None);
        assert!(bytes.chunks(4).all(|w| f32::from_le_bytes(w.try_into().unwrap()) == 16.0));
    }
}
