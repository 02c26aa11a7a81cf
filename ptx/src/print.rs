//! The printer: a [`Module`] as PTX text, one statement per line, in one canonical spelling.
//!
//! What it prints is what the module holds and nothing else: a consumer that rewrote the module
//! gets text made from its parsed form, never a copy of the input. Parsing the printed text
//! gives the same module (spans aside), which the tests and the `ptx_roundtrip` fuzz target hold
//! it to.

use std::fmt::{self, Display, Formatter, Write as _};

use crate::ast::*;

impl Display for Module {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, ".version {}.{}", self.version.major, self.version.minor)?;
        writeln!(f, ".target {}", self.targets.join(", "))?;
        if let Some(size) = self.address_size {
            writeln!(f, ".address_size {size}")?;
        }
        for item in &self.items {
            writeln!(f)?;
            match item {
                Item::Variable(v) => writeln!(f, "{v}")?,
                Item::Function(function) => write!(f, "{function}")?,
                Item::Pragma(p) => writeln!(f, "{p}")?,
            }
        }
        Ok(())
    }
}

impl Display for Pragma {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(".pragma ")?;
        for (i, s) in self.strings.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "\"{s}\"")?;
        }
        f.write_char(';')
    }
}

impl Display for Linkage {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Linkage::Visible => ".visible",
            Linkage::Extern => ".extern",
            Linkage::Weak => ".weak",
            Linkage::Common => ".common",
        })
    }
}

impl Display for Variable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(linkage) = self.linkage {
            write!(f, "{linkage} ")?;
        }
        write!(f, ".{}", self.space.name())?;
        if let Some(align) = self.align {
            write!(f, " .align {align}")?;
        }
        if let Some(v) = self.vector {
            write!(f, " .v{v}")?;
        }
        write!(f, " .{} {}", self.ty.name(), self.name)?;
        for dim in &self.dims {
            match dim {
                Some(n) => write!(f, "[{n}]")?,
                None => f.write_str("[]")?,
            }
        }
        if let Some(init) = &self.init {
            write!(f, " = {init}")?;
        }
        f.write_char(';')
    }
}

impl Display for Initializer {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Initializer::Value(v) => write!(f, "{v}"),
            Initializer::List(items) => {
                f.write_char('{')?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_char('}')
            }
        }
    }
}

impl Display for Immediate {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Immediate::Int(v) => write!(f, "{v}"),
            Immediate::F32(bits) => write!(f, "0f{bits:08X}"),
            Immediate::F64(bits) => write!(f, "0d{bits:016X}"),
            Immediate::Decimal(text) => f.write_str(text),
        }
    }
}

impl Display for Param {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, ".{}", self.space.name())?;
        if let Some(align) = self.align {
            write!(f, " .align {align}")?;
        }
        if let Some(v) = self.vector {
            write!(f, " .v{v}")?;
        }
        write!(f, " .{}", self.ty.name())?;
        if let Some(ptr) = self.ptr {
            f.write_str(" .ptr")?;
            if let Some(space) = ptr.space {
                write!(f, " .{}", space.name())?;
            }
            if let Some(align) = ptr.align {
                write!(f, " .align {align}")?;
            }
        }
        write!(f, " {}", self.name)?;
        for dim in &self.dims {
            write!(f, "[{dim}]")?;
        }
        Ok(())
    }
}

fn param_list(f: &mut Formatter<'_>, params: &[Param]) -> fmt::Result {
    f.write_char('(')?;
    for (i, p) in params.iter().enumerate() {
        f.write_str(if i > 0 { ",\n\t" } else { "\n\t" })?;
        write!(f, "{p}")?;
    }
    if !params.is_empty() {
        f.write_char('\n')?;
    }
    f.write_char(')')
}

impl Display for Function {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(linkage) = self.linkage {
            write!(f, "{linkage} ")?;
        }
        match self.kind {
            FunctionKind::Entry => f.write_str(".entry ")?,
            FunctionKind::Func => {
                f.write_str(".func ")?;
                if !self.returns.is_empty() {
                    param_list(f, &self.returns)?;
                    f.write_char(' ')?;
                }
            }
        }
        f.write_str(&self.name)?;
        param_list(f, &self.params)?;
        f.write_char('\n')?;
        for attribute in &self.attributes {
            write!(f, ".{}", attribute.name)?;
            for (i, v) in attribute.values.iter().enumerate() {
                f.write_str(if i > 0 { ", " } else { " " })?;
                write!(f, "{v}")?;
            }
            f.write_char('\n')?;
        }
        match &self.body {
            Some(body) => {
                block(f, body, 0)?;
                f.write_char('\n')
            }
            None => f.write_str(";\n"),
        }
    }
}

fn indent(f: &mut Formatter<'_>, depth: usize) -> fmt::Result {
    for _ in 0..depth {
        f.write_char('\t')?;
    }
    Ok(())
}

/// A block whose braces are at `depth` tabs.
fn block(f: &mut Formatter<'_>, block_: &Block, depth: usize) -> fmt::Result {
    indent(f, depth)?;
    f.write_str("{\n")?;
    let inner = depth.saturating_add(1);
    for statement in &block_.statements {
        match statement {
            Statement::Label(label) => writeln!(f, "{}:", label.name)?,
            Statement::Block(b) => {
                block(f, b, inner)?;
                f.write_char('\n')?;
            }
            Statement::Registers(r) => {
                indent(f, inner)?;
                writeln!(f, "{r}")?;
            }
            Statement::Variable(v) => {
                indent(f, inner)?;
                writeln!(f, "{v}")?;
            }
            Statement::Pragma(p) => {
                indent(f, inner)?;
                writeln!(f, "{p}")?;
            }
            Statement::Instruction(i) => {
                indent(f, inner)?;
                writeln!(f, "{i}")?;
            }
        }
    }
    indent(f, depth)?;
    f.write_char('}')
}

impl Display for Block {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        block(f, self, 0)
    }
}

impl Display for RegisterDecl {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(".reg")?;
        if let Some(v) = self.vector {
            write!(f, " .v{v}")?;
        }
        write!(f, " .{} ", self.ty.name())?;
        for (i, name) in self.names.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&name.name)?;
            if let Some(n) = name.count {
                write!(f, "<{n}>")?;
            }
        }
        f.write_char(';')
    }
}

impl Display for Instruction {
    /// The instruction as one line, with its `;`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(guard) = &self.guard {
            f.write_char('@')?;
            if guard.negated {
                f.write_char('!')?;
            }
            write!(f, "{} ", guard.register)?;
        }
        f.write_str(&self.opcode)?;
        for m in &self.modifiers {
            write!(f, ".{m}")?;
        }
        for (i, operand) in self.operands.iter().enumerate() {
            f.write_str(if i > 0 { ", " } else { "\t" })?;
            write!(f, "{operand}")?;
        }
        f.write_char(';')
    }
}

impl Display for Register {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(c) = self.component {
            write!(f, ".{}", c.name())?;
        }
        Ok(())
    }
}

fn list(f: &mut Formatter<'_>, open: char, items: &[Operand], close: char) -> fmt::Result {
    f.write_char(open)?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    f.write_char(close)
}

impl Display for Address {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('[')?;
        match &self.base {
            AddressBase::Register(name) | AddressBase::Symbol(name) => {
                f.write_str(name)?;
                if self.offset != 0 {
                    write!(f, "+{}", self.offset)?;
                }
            }
            AddressBase::Absolute => write!(f, "{}", self.offset)?,
        }
        f.write_char(']')
    }
}

impl Display for Operand {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            OperandKind::Register(r) => write!(f, "{r}"),
            OperandKind::Immediate(v) => write!(f, "{v}"),
            OperandKind::Symbol { name, offset } => {
                f.write_str(name)?;
                if *offset != 0 {
                    write!(f, "+{offset}")?;
                }
                Ok(())
            }
            OperandKind::Address(a) => write!(f, "{a}"),
            OperandKind::Vector(items) => list(f, '{', items, '}'),
            OperandKind::List(items) => list(f, '(', items, ')'),
            OperandKind::Brackets(items) => list(f, '[', items, ']'),
            OperandKind::Pair(a, b) => write!(f, "{a}|{b}"),
            OperandKind::Not(r) => write!(f, "!{r}"),
            OperandKind::Sink => f.write_char('_'),
        }
    }
}
