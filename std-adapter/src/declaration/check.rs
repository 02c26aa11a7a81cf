//! The check of a launch against a declaration: the types as one run of tag bytes, then each
//! window's alignment and length against its extent, evaluated on a fixed stack (the plan is
//! made once, when the declaration is parsed).

use super::*;

impl Declaration {
    /// Checks a launch's arguments (as the host parsed them) and shape against the declaration,
    /// in this order: the number of arguments; each argument's type, in argv order; then for
    /// each pointer, in argv order, its window's alignment for its elements and its length
    /// against the bytes its extent says the kernel may touch. The first failure decides.
    ///
    /// # Errors
    ///
    /// A [`Mismatch`]: what and where (record index, byte offset, parameter name).
    pub fn check(&self, args: &LaunchArgs, shape: &LaunchShape) -> Result<(), Mismatch> {
        // The types, as one run of tag bytes (the first that differs is looked for only when
        // one does).
        let declared = self.tag_bytes.get(..self.params.len()).unwrap_or_default();
        self.check_typed(args, args.tag_bytes() == declared, shape)
    }

    /// [`check`](Self::check), told whether every argument's tag is its parameter's.
    fn check_typed(&self, args: &LaunchArgs, types_match: bool, shape: &LaunchShape) -> Result<(), Mismatch> {
        if args.len() != self.tags.len() {
            return Err(self.mismatch(
                args,
                args.len().min(self.params.len()),
                None,
                MismatchKind::Count { declared: self.params.len(), got: args.len() },
            ));
        }
        if !types_match && let Some(index) = first_wrong_type(&self.tags, args) {
            return Err(self.type_mismatch(args, index));
        }
        for pointer in &self.pointers {
            let index = usize::from(pointer.index);
            let Some(window) = args.window(index) else {
                return Err(self.type_mismatch(args, index));
            };
            let size = pointer.element.size();
            // `size` is a power of two: the offset is aligned when its low bits are zero.
            if window.guest_offset & size.wrapping_sub(1) != 0 {
                return Err(self.window_mismatch(args, index, Failure::Misaligned));
            }
            let bytes = match pointer.extent {
                Extent::Bytes(Some(bytes)) => Ok(bytes),
                Extent::Bytes(None) => Err(Failure::Overflow),
                Extent::Scaled(scalar) => scalar_value(args, usize::from(scalar))
                    .and_then(|count| count.checked_mul(u64::from(size)).ok_or(Failure::Overflow)),
                Extent::Program => self
                    .params
                    .get(index)
                    .map_or(Err(Failure::Overflow), |param| self.evaluate(param, args, shape))
                    .and_then(|count| count.checked_mul(u64::from(size)).ok_or(Failure::Overflow)),
            };
            match bytes {
                Ok(bytes) if bytes <= u64::from(window.len) => {}
                Ok(bytes) => return Err(self.window_mismatch(args, index, Failure::Short(bytes))),
                Err(failure) => return Err(self.window_mismatch(args, index, failure)),
            }
        }
        Ok(())
    }

    /// Argument `index`'s type is not its parameter's.
    #[cold]
    #[inline(never)]
    fn type_mismatch(&self, args: &LaunchArgs, index: usize) -> Mismatch {
        let param = self.params.get(index);
        let declared = param.map(|p| self.type_text(p)).unwrap_or_default();
        let got = args.get(index).map_or(ArgTag::Ptr, |arg| arg.tag());
        let expected = param.map_or(ArgTag::Ptr, |p| p.ty.tag());
        self.mismatch(args, index, param, MismatchKind::Type { declared, expected, got })
    }

    /// Pointer argument `index`'s window fails its check.
    #[cold]
    #[inline(never)]
    fn window_mismatch(&self, args: &LaunchArgs, index: usize, failure: Failure) -> Mismatch {
        let param = self.params.get(index);
        let (element, guest_offset, len) = match (param.map(|p| p.ty), args.window(index)) {
            (Some(ParamType::Pointer { element, .. }), Some(w)) => (element, w.guest_offset, w.len),
            _ => (Element::U8, 0, 0),
        };
        let touches = param.map(|p| self.touches_text(p, element)).unwrap_or_default();
        let kind = match failure {
            Failure::Misaligned => MismatchKind::Misaligned { guest_offset, element },
            Failure::Short(bytes) => MismatchKind::WindowTooShort { len, touches, bytes },
            Failure::Overflow => MismatchKind::Overflow { touches },
            Failure::Negative(scalar) => {
                MismatchKind::Negative { touches, scalar: self.name_text(scalar), scalar_index: scalar }
            }
        };
        self.mismatch(args, index, param, kind)
    }

    /// The check's plan: each parameter's tag, and each pointer's fastest extent form.
    pub(super) fn plan(&mut self) {
        self.tags.clear();
        self.pointers.clear();
        self.tag_bytes = [0; MAX_KERNEL_ARGS];
        for (index, param) in self.params.iter().enumerate() {
            // At most MAX_KERNEL_ARGS parameters, so neither push can fail and the index fits.
            let _ = self.tags.push(param.ty.tag());
            if let Some(byte) = self.tag_bytes.get_mut(index) {
                *byte = param.ty.tag().byte();
            }
            let ParamType::Pointer { element, .. } = param.ty else { continue };
            let (start, len) = (usize::from(param.ops.0), usize::from(param.ops.1));
            let program = self.ops.get(start..start.saturating_add(len)).unwrap_or_default();
            let extent = match program {
                [Op::Const(count)] => Extent::Bytes(u64::from(*count).checked_mul(u64::from(element.size()))),
                [Op::Param(scalar)] => Extent::Scaled(*scalar),
                _ => Extent::Program,
            };
            let index = u8::try_from(index).unwrap_or(u8::MAX);
            let _ = self.pointers.push(PointerCheck { index, element, extent });
        }
    }

    /// The number of elements `param`'s extent gives for `args` and `shape` (out of line: the
    /// common extents are evaluated in [`check`](Self::check)'s loop without it).
    #[inline(never)]
    fn evaluate(&self, param: &Param, args: &LaunchArgs, shape: &LaunchShape) -> Result<u64, Failure> {
        let (start, len) = (usize::from(param.ops.0), usize::from(param.ops.1));
        let program = self.ops.get(start..start.saturating_add(len)).unwrap_or_default();
        // The parser bounds the stack by the extent's operations.
        let mut stack: heapless::Vec<u64, MAX_EXTENT_DEPTH_STACK> = heapless::Vec::new();
        for op in program {
            let value = match *op {
                Op::Const(c) => u64::from(c),
                Op::Param(i) => scalar_value(args, usize::from(i))?,
                Op::Shape(axis) => u64::from(shape_value(shape, axis)),
                Op::Name(_) => return Err(Failure::Overflow), // resolved at parse time
                Op::Add | Op::Sub | Op::Mul | Op::Div => {
                    let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                        return Err(Failure::Overflow);
                    };
                    let result = match op {
                        Op::Add => a.checked_add(b),
                        Op::Sub => a.checked_sub(b),
                        Op::Mul => a.checked_mul(b),
                        _ => a.checked_div(b),
                    };
                    result.ok_or(Failure::Overflow)?
                }
            };
            stack.push(value).map_err(|_| Failure::Overflow)?;
        }
        match (stack.pop(), stack.is_empty()) {
            (Some(v), true) => Ok(v),
            _ => Err(Failure::Overflow),
        }
    }

    fn mismatch(
        &self,
        args: &LaunchArgs,
        record: usize,
        param: Option<&Param>,
        kind: MismatchKind,
    ) -> Mismatch {
        let offset = args.iter().take(record).fold(0usize, |at, a| at.saturating_add(a.tag().wire_size()));
        Mismatch {
            record,
            offset,
            param: param.map(|p| truncated(self.slice(p.name))).unwrap_or_default(),
            kind,
        }
    }

    fn name_text(&self, index: usize) -> Name {
        self.params.get(index).map(|p| truncated(self.slice(p.name))).unwrap_or_default()
    }

    /// The parameter's type as written (`&[f32; n]`, `u32`).
    fn type_text(&self, param: &Param) -> Text {
        match param.ty {
            ParamType::Scalar(s) => joined(&[s.name()]),
            ParamType::Pointer { element, access } => {
                joined(&[access.spelling(), "[", element.name(), "; ", self.slice(param.extent), "]"])
            }
        }
    }

    /// The bytes the kernel touches through `param`, as an expression: `n * 4`.
    fn touches_text(&self, param: &Param, element: Element) -> Text {
        let extent = self.slice(param.extent);
        let simple = extent.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        // An element is 1, 2, 4 or 8 bytes: one digit.
        let size = match element.size() {
            2 => "2",
            4 => "4",
            _ => "8",
        };
        match (element.size(), simple) {
            (1, _) => joined(&[extent]),
            (_, true) => joined(&[extent, " * ", size]),
            (_, false) => joined(&["(", extent, ") * ", size]),
        }
    }
}

/// The first argument whose tag is not its parameter's (`tags` and `args` are as long).
#[inline]
fn first_wrong_type(tags: &[ArgTag], args: &LaunchArgs) -> Option<usize> {
    tags.iter().zip(args.tag_bytes()).position(|(tag, byte)| tag.byte() != *byte)
}

/// The value of scalar argument `index` of `args`, as a count.
fn scalar_value(args: &LaunchArgs, index: usize) -> Result<u64, Failure> {
    let negative = || Failure::Negative(index);
    match args.get(index) {
        Some(LoweredArgSnapshot::U32(v)) => Ok(u64::from(v)),
        Some(LoweredArgSnapshot::U64(v)) => Ok(v),
        Some(LoweredArgSnapshot::I32(v)) => u64::try_from(v).map_err(|_| negative()),
        Some(LoweredArgSnapshot::I64(v)) => u64::try_from(v).map_err(|_| negative()),
        // The types were checked before any extent is evaluated, and an extent names only
        // integer parameters.
        _ => Err(Failure::Overflow),
    }
}

/// The value of a shape axis (0 to 2: grid x, y, z; 4 to 6: block x, y, z).
fn shape_value(shape: &LaunchShape, axis: u8) -> u32 {
    let dims = if axis & 4 == 0 { &shape.grid } else { &shape.block };
    dims.get(usize::from(axis & 3)).copied().unwrap_or(0)
}

/// The deepest an extent's evaluation stack can be: each level of parentheses holds a pending
/// sum and a pending product, and the innermost factor one more (a deeper stack would be a
/// refusal, not a panic).
const MAX_EXTENT_DEPTH_STACK: usize = 2 * MAX_EXTENT_DEPTH + 4;

/// Why a window failed its check.
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// Its guest offset is not aligned for its elements.
    Misaligned,
    /// It is shorter than these bytes, which the kernel may touch.
    Short(u64),
    /// The extent overflowed `u64`, or divided by zero.
    Overflow,
    /// A signed scalar the extent counts with is negative (its parameter index).
    Negative(usize),
}
