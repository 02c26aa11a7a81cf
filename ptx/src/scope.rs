//! Names in a function body: each register an instruction names resolved to the declaration
//! that is in scope there, as ptxas resolves it (a nested block's `.reg` hides an outer one of
//! the same name, for that block only).
//!
//! [`flatten`] gives a body's statements in order, nested blocks opened, each instruction with
//! the declaration of every register it names; a register no enclosing scope declares and that
//! is not a special register is an error.

use std::collections::HashMap;

use crate::ast::{
    Block, Function, Instruction, Label, Pragma, RegisterDecl, StateSpace, Statement, Type, Variable,
};
use crate::error::{ParseError, ParseErrorKind};
use crate::span::Span;

/// The special registers PTX predefines (read-only; `.x`, `.y`, `.z` where they have them).
pub const SPECIAL_REGISTERS: &[&str] = &[
    "%tid",
    "%ntid",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%ctaid",
    "%nctaid",
    "%smid",
    "%nsmid",
    "%gridid",
    "%is_explicit_cluster",
    "%clusterid",
    "%nclusterid",
    "%cluster_ctaid",
    "%cluster_nctaid",
    "%cluster_ctarank",
    "%cluster_nctarank",
    "%lanemask_eq",
    "%lanemask_le",
    "%lanemask_lt",
    "%lanemask_ge",
    "%lanemask_gt",
    "%clock",
    "%clock_hi",
    "%clock64",
    "%globaltimer",
    "%globaltimer_lo",
    "%globaltimer_hi",
    "%total_smem_size",
    "%aggr_smem_size",
    "%dynamic_smem_size",
    "%warpsize",
];

/// Whether `name` is a special register (the list above, `%pm0`-`%pm7`, `%pm0_64`-`%pm7_64`,
/// `%envreg0`-`%envreg31`).
pub fn is_special(name: &str) -> bool {
    if SPECIAL_REGISTERS.contains(&name) {
        return true;
    }
    let numbered = |prefix: &str, below: u32| {
        name.strip_prefix(prefix)
            .and_then(|n| {
                if n.len() <= 2 && n.bytes().all(|b| b.is_ascii_digit()) {
                    n.parse::<u32>().ok()
                } else {
                    None
                }
            })
            .is_some_and(|n| n < below)
    };
    numbered("%pm", 8)
        || name
            .strip_prefix("%pm")
            .and_then(|n| n.strip_suffix("_64"))
            .is_some_and(|n| matches!(n, "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7"))
        || numbered("%envreg", 32)
}

/// A declared register: which declaration, and which of its `<N>` registers (0 for a plain
/// name). Unique within a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegisterId {
    /// The declaration's index in [`Flat::declarations`].
    pub declaration: usize,
    /// The register's index among the declaration's name's `<N>`.
    pub index: u32,
}

/// What a register name in an instruction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolved {
    /// A declared register.
    Declared(RegisterId),
    /// A special register.
    Special,
}

/// One declaration of registers (a function's `.reg` parameter is one too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisterType {
    /// The type.
    pub ty: Type,
    /// `.v2`/`.v4`, where declared.
    pub vector: Option<u32>,
}

/// A statement of a flattened body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlatItem<'b> {
    /// A label.
    Label(&'b Label),
    /// An instruction, with every register it names (its guard's too) resolved.
    Instruction(&'b Instruction, Vec<(&'b str, Resolved)>),
    /// A `.local`, `.shared` or `.param` variable of the body.
    Variable(&'b Variable),
    /// A `.pragma`.
    Pragma(&'b Pragma),
}

/// A body's statements in order, nested blocks opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flat<'b> {
    /// The statements.
    pub items: Vec<FlatItem<'b>>,
    /// Every register declaration, by [`RegisterId::declaration`].
    pub declarations: Vec<RegisterType>,
}

impl Flat<'_> {
    /// The type of a declared register.
    pub fn type_of(&self, id: RegisterId) -> Option<RegisterType> {
        self.declarations.get(id.declaration).copied()
    }
}

/// One scope's names: plain ones, and `<N>` prefixes with their counts.
#[derive(Default)]
struct Scope<'b> {
    plain: HashMap<&'b str, usize>,
    numbered: HashMap<&'b str, (usize, u32)>,
}

impl<'b> Scope<'b> {
    fn lookup(&self, name: &str) -> Option<RegisterId> {
        if let Some(&declaration) = self.plain.get(name) {
            return Some(RegisterId { declaration, index: 0 });
        }
        let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
        let split = name.len().checked_sub(digits)?;
        let (prefix, number) = (name.get(..split)?, name.get(split..)?);
        if number.is_empty() || (number.len() > 1 && number.starts_with('0')) {
            return None;
        }
        let index: u32 = number.parse().ok()?;
        match self.numbered.get(prefix) {
            Some(&(declaration, count)) if index < count => Some(RegisterId { declaration, index }),
            _ => None,
        }
    }
}

struct Flattener<'b> {
    scopes: Vec<Scope<'b>>,
    flat: Flat<'b>,
}

fn error(span: Span, kind: ParseErrorKind) -> ParseError {
    ParseError { line: span.line, column: span.column, kind }
}

impl<'b> Flattener<'b> {
    fn declare(
        &mut self,
        span: Span,
        decl: RegisterType,
        name: &'b str,
        count: Option<u32>,
    ) -> Result<(), ParseError> {
        let index = self.flat.declarations.len();
        self.flat.declarations.push(decl);
        let Some(scope) = self.scopes.last_mut() else { return Ok(()) };
        let taken = scope.lookup(name).is_some()
            || scope.plain.contains_key(name)
            || (count.is_some() && scope.numbered.contains_key(name));
        if taken {
            return Err(error(span, ParseErrorKind::Duplicate(name.to_owned())));
        }
        match count {
            Some(n) => {
                scope.numbered.insert(name, (index, n));
            }
            None => {
                scope.plain.insert(name, index);
            }
        }
        Ok(())
    }

    fn resolve(&self, span: Span, name: &str) -> Result<Resolved, ParseError> {
        for scope in self.scopes.iter().rev() {
            if let Some(id) = scope.lookup(name) {
                return Ok(Resolved::Declared(id));
            }
        }
        if is_special(name) {
            return Ok(Resolved::Special);
        }
        Err(error(span, ParseErrorKind::UndeclaredRegister(name.to_owned())))
    }

    fn block(&mut self, block: &'b Block) -> Result<(), ParseError> {
        self.scopes.push(Scope::default());
        for statement in &block.statements {
            match statement {
                Statement::Registers(RegisterDecl { span, vector, ty, names }) => {
                    for name in names {
                        self.declare(
                            *span,
                            RegisterType { ty: *ty, vector: *vector },
                            &name.name,
                            name.count,
                        )?;
                    }
                }
                Statement::Variable(v) => self.flat.items.push(FlatItem::Variable(v)),
                Statement::Label(l) => self.flat.items.push(FlatItem::Label(l)),
                Statement::Pragma(p) => self.flat.items.push(FlatItem::Pragma(p)),
                Statement::Block(b) => self.block(b)?,
                Statement::Instruction(instruction) => {
                    let mut resolved = Vec::new();
                    if let Some(guard) = &instruction.guard {
                        resolved.push((guard.register.as_str(), self.resolve(guard.span, &guard.register)?));
                    }
                    for operand in &instruction.operands {
                        for name in operand.registers() {
                            resolved.push((name, self.resolve(operand.span, name)?));
                        }
                    }
                    self.flat.items.push(FlatItem::Instruction(instruction, resolved));
                }
            }
        }
        self.scopes.pop();
        Ok(())
    }
}

/// `function`'s body flattened (see the module's documentation); an empty list for a
/// declaration.
///
/// # Errors
///
/// A [`ParseError`] for a register declared twice in one scope, or named where it is not
/// declared.
pub fn flatten(function: &Function) -> Result<Flat<'_>, ParseError> {
    let mut flattener = Flattener {
        scopes: vec![Scope::default()],
        flat: Flat { items: Vec::new(), declarations: Vec::new() },
    };
    for param in function.returns.iter().chain(&function.params) {
        if param.space == StateSpace::Reg {
            flattener.declare(
                param.span,
                RegisterType { ty: param.ty, vector: param.vector },
                &param.name,
                None,
            )?;
        }
    }
    if let Some(body) = &function.body {
        flattener.block(body)?;
    }
    Ok(flattener.flat)
}

/// The instruction with its resolved registers: the resolution of `name`.
pub fn resolved_in(registers: &[(&str, Resolved)], name: &str) -> Option<Resolved> {
    registers.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}
