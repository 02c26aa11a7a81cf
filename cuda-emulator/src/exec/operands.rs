//! Reading one instruction's operands: the leaf the instruction families and the decoder share.
//! [`Names`] holds the register slots, the variables' places and the labels of the entry being
//! decoded; the functions here turn a front-end operand into the interpreter's [`Operand`],
//! destination register, address or immediate bits. Nothing here knows an instruction family.

use std::collections::HashMap;

use kernel_args_ptx::{AddressBase, Immediate, Operand as Src, OperandKind, RegisterId, Resolved};

use super::error::{DecodeError, Role};
use super::{AddrBase, Operand, Space, Special, Ty};

/// What decoding one instruction needs: the slots, places and labels, and the resolution of
/// the registers the instruction names.
pub struct Names {
    /// Register slots by declaration, of the function being decoded.
    pub(super) slots: HashMap<RegisterId, usize>,
    /// The next register slot: every function's registers have slots of their own.
    pub(super) next_slot: usize,
    /// The registers of the instruction being decoded, resolved.
    pub(super) current: Vec<(String, Resolved)>,
    /// Parameters by name: their offset in the parameter buffer.
    pub(super) params: HashMap<String, usize>,
    /// Shared variables by name: their offset in the block's shared memory.
    pub(super) shared: HashMap<String, u64>,
    /// Local variables by name: their offset in a thread's local memory.
    pub(super) local: HashMap<String, u64>,
    /// Constant variables by name: their offset in the module's constant memory.
    pub(super) constant: HashMap<String, u64>,
    /// The module's `.global` variables by name: their device address (global and generic
    /// addresses of global memory are the same).
    pub(super) global: HashMap<String, u64>,
    /// Labels by name: the index of the instruction after them.
    pub(super) labels: HashMap<String, usize>,
    /// The `.param` variables of the function being decoded (a call's arguments and return
    /// values, and a `.func`'s own parameters) by name: their offset and size in the thread's
    /// local memory.
    pub(super) frame: HashMap<String, (u64, u64)>,
    /// The `.func`s the entry calls, by name.
    pub(super) callees: HashMap<String, Callee>,
    /// Whether the function being decoded is a `.func` (its `ret` returns to its caller).
    pub(super) in_callee: bool,
}

/// A `.func` the entry calls: where its body starts among the program's instructions, and its
/// return values' and parameters' places in local memory (offset, size), in order.
#[derive(Debug, Clone, Default)]
pub struct Callee {
    /// The index of its first instruction.
    pub start: usize,
    /// Its return values.
    pub returns: Vec<(u64, u64)>,
    /// Its parameters.
    pub params: Vec<(u64, u64)>,
}

impl Names {
    /// The slot of register `name` of the instruction being decoded.
    pub fn register(&mut self, name: &str) -> Result<usize, DecodeError> {
        match self.current.iter().find(|(n, _)| n == name).map(|(_, r)| *r) {
            Some(Resolved::Declared(id)) => {
                let next = self.next_slot;
                let slot = *self.slots.entry(id).or_insert(next);
                if slot == next {
                    self.next_slot += 1;
                }
                Ok(slot)
            }
            _ => Err(DecodeError::Operand { operand: name.to_owned(), role: Role::RegisterRead }),
        }
    }
}

/// A type suffix (`u32`, `f64`, `pred`, ...).
pub fn ty(suffix: &str) -> Option<Ty> {
    Some(match suffix {
        "b8" => Ty::B(8),
        "b16" => Ty::B(16),
        "b32" => Ty::B(32),
        "b64" => Ty::B(64),
        "u8" => Ty::U(8),
        "u16" => Ty::U(16),
        "u32" => Ty::U(32),
        "u64" => Ty::U(64),
        "s8" => Ty::S(8),
        "s16" => Ty::S(16),
        "s32" => Ty::S(32),
        "s64" => Ty::S(64),
        "f32" => Ty::F32,
        "f64" => Ty::F64,
        "pred" => Ty::Pred,
        _ => return None,
    })
}

/// A register or immediate operand of type `ty` (a variable's name gives its offset in its
/// state space; a `.global` variable's, its device address).
pub fn operand(src: &Src, ty: Ty, names: &mut Names) -> Result<Operand, DecodeError> {
    match &src.kind {
        OperandKind::Register(r) => {
            if let Some(special) = special(&r.name, r.component.map(|c| c.name())) {
                return Ok(Operand::Special(special));
            }
            if r.component.is_some() {
                return Err(value_operand(src));
            }
            Ok(Operand::Reg(names.register(&r.name)?))
        }
        OperandKind::Symbol { name, offset } => {
            if name == "WARP_SZ" && *offset == 0 {
                return Ok(Operand::Special(Special::WarpSize));
            }
            let base = names
                .shared
                .get(name)
                .or_else(|| names.local.get(name))
                .or_else(|| names.constant.get(name))
                .or_else(|| names.global.get(name))
                .copied()
                .ok_or_else(|| value_operand(src))?;
            Ok(Operand::Symbol(base.wrapping_add(*offset as u64)))
        }
        OperandKind::Immediate(value) => {
            immediate_value(value, ty).map(Operand::Imm).ok_or_else(|| value_operand(src))
        }
        _ => Err(value_operand(src)),
    }
}

/// `src` refused where a value is read.
fn value_operand(src: &Src) -> DecodeError {
    DecodeError::Operand { operand: src.to_string(), role: Role::Value }
}

/// `src` refused where its role says.
pub fn refused(src: &Src, role: Role) -> DecodeError {
    DecodeError::Operand { operand: src.to_string(), role }
}

/// A destination register.
pub fn register(src: &Src, names: &mut Names) -> Result<usize, DecodeError> {
    match &src.kind {
        OperandKind::Register(r) if r.component.is_none() && special(&r.name, None).is_none() => {
            names.register(&r.name)
        }
        _ => Err(refused(src, Role::RegisterWritten)),
    }
}

/// The elements of a vector operand (`{%f1, %f2}`), or the operand alone.
pub fn lanes(src: &Src) -> Vec<&Src> {
    match &src.kind {
        OperandKind::Vector(items) => items.iter().collect(),
        _ => vec![src],
    }
}

fn special(name: &str, component: Option<&str>) -> Option<Special> {
    let axis = |s: Option<&str>| match s {
        Some("x") => Some(0),
        Some("y") => Some(1),
        Some("z") => Some(2),
        _ => None,
    };
    Some(match name {
        "%tid" => Special::Tid(axis(component)?),
        "%ntid" => Special::Ntid(axis(component)?),
        "%ctaid" => Special::Ctaid(axis(component)?),
        "%nctaid" => Special::Nctaid(axis(component)?),
        "%laneid" if component.is_none() => Special::LaneId,
        "%warpsize" if component.is_none() => Special::WarpSize,
        "%lanemask_eq" if component.is_none() => Special::LanemaskEq,
        "%dynamic_smem_size" if component.is_none() => Special::DynamicSmemSize,
        _ => return None,
    })
}

/// An immediate's bits as type `ty` holds it: an integer (converted for a float type), a
/// float's bits (`0f`, `0d`, converted between widths), or a decimal float.
pub fn immediate_value(value: &Immediate, ty: Ty) -> Option<u64> {
    Some(match (value, ty) {
        (Immediate::Int(v), Ty::F32) => u64::from((*v as f32).to_bits()),
        (Immediate::Int(v), Ty::F64) => (*v as f64).to_bits(),
        (Immediate::Int(v), _) => (*v as u64) & ty.mask(),
        (Immediate::F32(bits), Ty::F64) => f64::from(f32::from_bits(*bits)).to_bits(),
        (Immediate::F32(bits), _) => u64::from(*bits) & ty.mask(),
        (Immediate::F64(bits), Ty::F32) => u64::from((f64::from_bits(*bits) as f32).to_bits()),
        (Immediate::F64(bits), _) => bits & ty.mask(),
        (Immediate::Decimal(text), _) => {
            let value: f64 = text.parse().ok()?;
            match ty {
                Ty::F32 => u64::from((value as f32).to_bits()),
                _ => value.to_bits() & ty.mask(),
            }
        }
    })
}

/// An address operand `[base]`, `[base+off]` in state space `space`.
pub fn address(src: &Src, space: Space, names: &mut Names) -> Result<(AddrBase, i64), DecodeError> {
    let OperandKind::Address(a) = &src.kind else { return Err(refused(src, Role::Address)) };
    match &a.base {
        AddressBase::Register(name) => Ok((AddrBase::Reg(names.register(name)?), a.offset)),
        AddressBase::Absolute => Ok((AddrBase::Imm(0), a.offset)),
        AddressBase::Symbol(name) => {
            let found = match space {
                Space::Param => names.params.get(name).map(|&o| AddrBase::Param(o)),
                Space::Local => names
                    .frame
                    .get(name)
                    .map(|&(o, _)| o)
                    .or_else(|| names.local.get(name).copied())
                    .map(AddrBase::Symbol),
                Space::Shared => names.shared.get(name).map(|&o| AddrBase::Symbol(o)),
                Space::Const => names.constant.get(name).map(|&o| AddrBase::Symbol(o)),
                Space::Global | Space::Generic => names.global.get(name).map(|&a| AddrBase::Imm(a)),
            };
            found
                .map(|base| (base, a.offset))
                .ok_or_else(|| DecodeError::NoVariable { space: space.name(), name: name.clone() })
        }
    }
}

/// Whether `src` is an address in a `.param` variable of the function's frame (`[param0+0]`):
/// an `ld.param` or `st.param` of it reaches the thread's local memory, not the kernel's
/// parameters.
pub fn in_frame(src: &Src, names: &Names) -> bool {
    matches!(&src.kind, OperandKind::Address(a) if matches!(&a.base, AddressBase::Symbol(name) if names.frame.contains_key(name)))
}
