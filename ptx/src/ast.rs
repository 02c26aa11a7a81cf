//! The parsed form of a module: what the parser makes, what every consumer reads, and what the
//! printer prints. Names and modifiers are kept as written; numbers as their values.

use crate::span::Span;

/// A PTX module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// `.version MAJOR.MINOR`.
    pub version: Version,
    /// Where `.version` is.
    pub version_span: Span,
    /// `.target`'s targets, in order (`sm_90`, `texmode_independent`, ...).
    pub targets: Vec<String>,
    /// `.address_size` (32 or 64), where the module says.
    pub address_size: Option<u32>,
    /// The module-scope statements, in order (`.file` is read and not kept).
    pub items: Vec<Item>,
}

impl Module {
    /// The functions (`.entry` and `.func`), in order.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.items.iter().filter_map(|item| match item {
            Item::Function(f) => Some(f),
            _ => None,
        })
    }

    /// The kernels: every `.entry` with a body, in order.
    pub fn entries(&self) -> impl Iterator<Item = &Function> {
        self.functions().filter(|f| f.kind == FunctionKind::Entry && f.body.is_some())
    }

    /// The kernel named `name`.
    pub fn entry(&self, name: &str) -> Option<&Function> {
        self.entries().find(|f| f.name == name)
    }

    /// The module-scope variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &Variable> {
        self.items.iter().filter_map(|item| match item {
            Item::Variable(v) => Some(v),
            _ => None,
        })
    }
}

/// A PTX ISA version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major number.
    pub major: u32,
    /// The minor number.
    pub minor: u32,
}

/// A module-scope statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A variable (`.global`, `.const`, `.shared`, `.local`, ...).
    Variable(Variable),
    /// An `.entry` or `.func`, defined or declared.
    Function(Function),
    /// A `.pragma`.
    Pragma(Pragma),
}

/// `.pragma "a", "b";`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pragma {
    /// Where it is.
    pub span: Span,
    /// Its strings, without quotes.
    pub strings: Vec<String>,
}

/// A declaration's linkage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Linkage {
    /// `.visible`.
    Visible,
    /// `.extern`.
    Extern,
    /// `.weak`.
    Weak,
    /// `.common`.
    Common,
}

/// A state space a declaration puts a variable in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateSpace {
    /// `.reg`.
    Reg,
    /// `.global`.
    Global,
    /// `.const`.
    Const,
    /// `.shared`.
    Shared,
    /// `.local`.
    Local,
    /// `.param`.
    Param,
    /// `.tex` (the old texture declarations).
    Tex,
}

impl StateSpace {
    /// The directive's name, without its dot.
    pub fn name(self) -> &'static str {
        match self {
            StateSpace::Reg => "reg",
            StateSpace::Global => "global",
            StateSpace::Const => "const",
            StateSpace::Shared => "shared",
            StateSpace::Local => "local",
            StateSpace::Param => "param",
            StateSpace::Tex => "tex",
        }
    }

    /// The state space a directive names (without its dot).
    pub fn from_name(name: &str) -> Option<StateSpace> {
        Some(match name {
            "reg" => StateSpace::Reg,
            "global" => StateSpace::Global,
            "const" => StateSpace::Const,
            "shared" => StateSpace::Shared,
            "local" => StateSpace::Local,
            "param" => StateSpace::Param,
            "tex" => StateSpace::Tex,
            _ => return None,
        })
    }
}

/// A declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // each variant is the type its name spells
pub enum Type {
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    BF16,
    BF16x2,
    F32,
    F64,
    Pred,
    /// `.texref`.
    TexRef,
    /// `.samplerref`.
    SamplerRef,
    /// `.surfref`.
    SurfRef,
}

impl Type {
    /// The type a name spells (without its dot).
    pub fn from_name(name: &str) -> Option<Type> {
        Some(match name {
            "b8" => Type::B8,
            "b16" => Type::B16,
            "b32" => Type::B32,
            "b64" => Type::B64,
            "b128" => Type::B128,
            "u8" => Type::U8,
            "u16" => Type::U16,
            "u32" => Type::U32,
            "u64" => Type::U64,
            "s8" => Type::S8,
            "s16" => Type::S16,
            "s32" => Type::S32,
            "s64" => Type::S64,
            "f16" => Type::F16,
            "f16x2" => Type::F16x2,
            "bf16" => Type::BF16,
            "bf16x2" => Type::BF16x2,
            "f32" => Type::F32,
            "f64" => Type::F64,
            "pred" => Type::Pred,
            "texref" => Type::TexRef,
            "samplerref" => Type::SamplerRef,
            "surfref" => Type::SurfRef,
            _ => return None,
        })
    }

    /// The name, without its dot.
    pub fn name(self) -> &'static str {
        match self {
            Type::B8 => "b8",
            Type::B16 => "b16",
            Type::B32 => "b32",
            Type::B64 => "b64",
            Type::B128 => "b128",
            Type::U8 => "u8",
            Type::U16 => "u16",
            Type::U32 => "u32",
            Type::U64 => "u64",
            Type::S8 => "s8",
            Type::S16 => "s16",
            Type::S32 => "s32",
            Type::S64 => "s64",
            Type::F16 => "f16",
            Type::F16x2 => "f16x2",
            Type::BF16 => "bf16",
            Type::BF16x2 => "bf16x2",
            Type::F32 => "f32",
            Type::F64 => "f64",
            Type::Pred => "pred",
            Type::TexRef => "texref",
            Type::SamplerRef => "samplerref",
            Type::SurfRef => "surfref",
        }
    }

    /// The size in bytes of a value of the type (`None` for a predicate or an opaque handle).
    pub fn size(self) -> Option<u64> {
        Some(match self {
            Type::B8 | Type::U8 | Type::S8 => 1,
            Type::B16 | Type::U16 | Type::S16 | Type::F16 | Type::BF16 => 2,
            Type::B32 | Type::U32 | Type::S32 | Type::F32 | Type::F16x2 | Type::BF16x2 => 4,
            Type::B64 | Type::U64 | Type::S64 | Type::F64 => 8,
            Type::B128 => 16,
            Type::Pred | Type::TexRef | Type::SamplerRef | Type::SurfRef => return None,
        })
    }
}

/// A variable: module scope, or a function's `.local`, `.shared` or `.param`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Where it is.
    pub span: Span,
    /// `.visible`, `.extern`, `.weak` or `.common`, where written.
    pub linkage: Option<Linkage>,
    /// Its state space.
    pub space: StateSpace,
    /// `.align N`, where written.
    pub align: Option<u32>,
    /// `.v2`, `.v4` or `.v8`, where written.
    pub vector: Option<u32>,
    /// The element type.
    pub ty: Type,
    /// The name.
    pub name: String,
    /// Array dimensions, outermost first; `None` for `[]`.
    pub dims: Vec<Option<u64>>,
    /// `= ...`, where written.
    pub init: Option<Initializer>,
}

impl Variable {
    /// The size in bytes (element × vector × dimensions), or `None` for an unsized array
    /// (`[]`), a predicate or a handle, or a size past `u64`.
    pub fn size(&self) -> Option<u64> {
        let mut size = self.ty.size()?.checked_mul(u64::from(self.vector.unwrap_or(1)))?;
        for dim in &self.dims {
            size = size.checked_mul((*dim)?)?;
        }
        Some(size)
    }

    /// The alignment in bytes: `.align N` where written, else the element's size × its vector
    /// length (1 for a type without a size).
    pub fn alignment(&self) -> u64 {
        match self.align {
            Some(align) => u64::from(align),
            None => self.ty.size().unwrap_or(1).saturating_mul(u64::from(self.vector.unwrap_or(1))),
        }
    }
}

/// A variable's initializer: a value, or a braced list of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Initializer {
    /// A number.
    Value(Immediate),
    /// `{a, b, ...}`.
    List(Vec<Initializer>),
}

/// `.entry` or `.func`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// A kernel (`.entry`).
    Entry,
    /// A device function (`.func`).
    Func,
}

/// An `.entry` or `.func`: a definition (with a body) or a declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Where its header starts.
    pub span: Span,
    /// Its linkage, where written.
    pub linkage: Option<Linkage>,
    /// `.entry` or `.func`.
    pub kind: FunctionKind,
    /// A `.func`'s return parameters (`.func (.param .b32 r) f(...)`); empty for an entry.
    pub returns: Vec<Param>,
    /// The name.
    pub name: String,
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// Performance directives and the like, in order (`.maxntid 256, 1, 1`, `.noreturn`).
    pub attributes: Vec<Attribute>,
    /// The body; `None` for a declaration.
    pub body: Option<Block>,
}

/// A function's parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Where it is.
    pub span: Span,
    /// `.param`, or `.reg` for a `.func`'s register parameters.
    pub space: StateSpace,
    /// `.align N`, where written.
    pub align: Option<u32>,
    /// `.v2`, `.v4`, where written.
    pub vector: Option<u32>,
    /// The element type.
    pub ty: Type,
    /// `.ptr` with its state space and pointee alignment, where written.
    pub ptr: Option<PtrAttribute>,
    /// The name.
    pub name: String,
    /// Array dimensions, outermost first.
    pub dims: Vec<u64>,
}

impl Param {
    /// The size in bytes: the element's size × its vector length × the dimensions (`None` for a
    /// type without a size, or a size past `u64`).
    pub fn size(&self) -> Option<u64> {
        let mut size = self.ty.size()?.checked_mul(u64::from(self.vector.unwrap_or(1)))?;
        for dim in &self.dims {
            size = size.checked_mul(*dim)?;
        }
        Some(size)
    }

    /// The alignment in the parameter space: `.align N` where written (but for a `.ptr`
    /// parameter, whose `.align` is its pointee's), else the element's size × its vector length.
    pub fn alignment(&self) -> u64 {
        let natural = self.ty.size().unwrap_or(1).saturating_mul(u64::from(self.vector.unwrap_or(1)));
        match self.align {
            Some(align) if self.ptr.is_none() => u64::from(align),
            _ => natural,
        }
    }
}

/// `.ptr`, its state space and its pointee's alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtrAttribute {
    /// `.global`, `.const`, `.local` or `.shared`, where written.
    pub space: Option<StateSpace>,
    /// `.align N` after `.ptr`, where written.
    pub align: Option<u32>,
}

/// A directive in a function's header: its name (without its dot) and numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// Where it is.
    pub span: Span,
    /// `maxntid`, `reqntid`, `minnctapersm`, `maxnreg`, `noreturn`, ...
    pub name: String,
    /// Its numbers, in order.
    pub values: Vec<u64>,
}

/// `{ ... }`: a function's body, or a nested block (a scope for declarations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// From its `{` to its `}`.
    pub span: Span,
    /// Its statements, in order.
    pub statements: Vec<Statement>,
}

/// A statement of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `.reg .type names;`.
    Registers(RegisterDecl),
    /// `.local`, `.shared` or `.param` variable.
    Variable(Variable),
    /// `name:`.
    Label(Label),
    /// An instruction.
    Instruction(Instruction),
    /// A nested block.
    Block(Block),
    /// A `.pragma`.
    Pragma(Pragma),
}

/// `.reg .v4 .f32 %a, %b<8>;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterDecl {
    /// Where it is.
    pub span: Span,
    /// `.v2` or `.v4`, where written.
    pub vector: Option<u32>,
    /// The type.
    pub ty: Type,
    /// The names, each with its count for the `%r<N>` form.
    pub names: Vec<RegisterName>,
}

/// One name of a register declaration: `%r` alone, or `%r<N>` (`%r0` ... `%r{N-1}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterName {
    /// The name (the prefix for the `<N>` form).
    pub name: String,
    /// `N` of `<N>`.
    pub count: Option<u32>,
}

/// A label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Where it is.
    pub span: Span,
    /// Its name.
    pub name: String,
}

/// An instruction: `@%p opcode.modifiers operands;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// From its guard (or opcode) to its `;`.
    pub span: Span,
    /// `@%p` or `@!%p`, where written.
    pub guard: Option<Guard>,
    /// The opcode (`ld`).
    pub opcode: String,
    /// The modifiers in order, without their dots (`global`, `v4`, `f32`, `shared::cta`).
    pub modifiers: Vec<String>,
    /// The operands in order.
    pub operands: Vec<Operand>,
}

impl Instruction {
    /// Whether modifier `name` is written.
    pub fn has(&self, name: &str) -> bool {
        self.modifiers.iter().any(|m| m == name)
    }
}

/// An instruction's guard predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// Where it is.
    pub span: Span,
    /// `@!%p`: the instruction runs when the predicate is false.
    pub negated: bool,
    /// The predicate register.
    pub register: String,
}

/// An operand and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operand {
    /// Where it is.
    pub span: Span,
    /// What it is.
    pub kind: OperandKind,
}

impl Operand {
    /// An operand without a place in any text (what a rewriter makes).
    pub fn new(kind: OperandKind) -> Operand {
        Operand { span: Span::default(), kind }
    }

    /// The register, for a register operand.
    pub fn register(&self) -> Option<&Register> {
        match &self.kind {
            OperandKind::Register(r) => Some(r),
            _ => None,
        }
    }

    /// The address, for an address operand.
    pub fn address(&self) -> Option<&Address> {
        match &self.kind {
            OperandKind::Address(a) => Some(a),
            _ => None,
        }
    }

    /// Every register this operand names, nested ones and address bases included.
    pub fn registers(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_registers(&mut out);
        out
    }

    fn collect_registers<'a>(&'a self, out: &mut Vec<&'a str>) {
        match &self.kind {
            OperandKind::Register(r) | OperandKind::Not(r) => out.push(&r.name),
            OperandKind::Pair(a, b) => {
                out.push(&a.name);
                out.push(&b.name);
            }
            OperandKind::Address(Address { base: AddressBase::Register(r), .. }) => out.push(r),
            OperandKind::Vector(items) | OperandKind::List(items) | OperandKind::Brackets(items) => {
                for item in items {
                    item.collect_registers(out);
                }
            }
            OperandKind::Immediate(_)
            | OperandKind::Symbol { .. }
            | OperandKind::Address(_)
            | OperandKind::Sink => {}
        }
    }

    /// Every symbol this operand names (a variable, label or function), address bases included.
    pub fn symbols(&self) -> Vec<&str> {
        match &self.kind {
            OperandKind::Symbol { name, .. } => vec![name],
            OperandKind::Address(Address { base: AddressBase::Symbol(s), .. }) => vec![s],
            OperandKind::Vector(items) | OperandKind::List(items) | OperandKind::Brackets(items) => {
                items.iter().flat_map(Operand::symbols).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// What an operand is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperandKind {
    /// A register, a special register (`%tid.x`) or a vector register's element.
    Register(Register),
    /// A number.
    Immediate(Immediate),
    /// A variable, label or function name, with a byte offset (`tile+4`).
    Symbol {
        /// The name.
        name: String,
        /// The offset (0 where none is written).
        offset: i64,
    },
    /// `[base+offset]`.
    Address(Address),
    /// `{a, b, ...}`: a vector's elements.
    Vector(Vec<Operand>),
    /// `(a, b, ...)`: a call's arguments or results.
    List(Vec<Operand>),
    /// `[a, b, ...]` of more than one operand (a texture's handle and coordinates).
    Brackets(Vec<Operand>),
    /// `%p|%q`: `setp`'s two results.
    Pair(Register, Register),
    /// `!%p`: a predicate's negation.
    Not(Register),
    /// `_`: a result nobody reads.
    Sink,
}

/// A register operand.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Register {
    /// The name (`%r1`, `%tid`).
    pub name: String,
    /// `.x`, `.y`, ... where written.
    pub component: Option<Component>,
}

impl Register {
    /// A register without a component.
    pub fn new(name: impl Into<String>) -> Register {
        Register { name: name.into(), component: None }
    }
}

/// An element of a vector or special register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // each variant is the letter its name spells
pub enum Component {
    X,
    Y,
    Z,
    W,
    R,
    G,
    B,
    A,
}

impl Component {
    /// The component a modifier spells (`x`, ...).
    pub fn from_name(name: &str) -> Option<Component> {
        Some(match name {
            "x" => Component::X,
            "y" => Component::Y,
            "z" => Component::Z,
            "w" => Component::W,
            "r" => Component::R,
            "g" => Component::G,
            "b" => Component::B,
            "a" => Component::A,
            _ => return None,
        })
    }

    /// The letter.
    pub fn name(self) -> &'static str {
        match self {
            Component::X => "x",
            Component::Y => "y",
            Component::Z => "z",
            Component::W => "w",
            Component::R => "r",
            Component::G => "g",
            Component::B => "b",
            Component::A => "a",
        }
    }
}

/// `[base+offset]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// What the offset is added to.
    pub base: AddressBase,
    /// The byte offset (the address itself for [`AddressBase::Absolute`]).
    pub offset: i64,
}

/// What an address's offset is added to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressBase {
    /// A register's value.
    Register(String),
    /// A variable's (or parameter's) address.
    Symbol(String),
    /// Nothing: the offset is the address (`[4096]`).
    Absolute,
}

/// A number operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Immediate {
    /// An integer, with its sign (`-1`, `0xff`, `017`, `0b101`).
    Int(i128),
    /// `0fXXXXXXXX`: a single-precision float's bits.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`: a double-precision float's bits.
    F64(u64),
    /// A decimal float as written (`1.5`, `-2.5e-3`), which PTX reads as double precision.
    Decimal(String),
}
