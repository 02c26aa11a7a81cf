//! What this interpreter refuses to decode, typed: [`DecodeError`] (what), [`Role`] (where an
//! operand stood), [`Unsupported`] (the whole refusal, with its line and statement). A module
//! load that meets one answers `CUDA_ERROR_NOT_SUPPORTED` (801) and writes its `Display` to
//! the JIT log, after "the emulated driver does not run this: ". Most are limits of the emulator
//! that a GPU runs; a few ([`DecodeError::Body`], [`DecodeError::NoBody`],
//! [`DecodeError::TooMuchMemory`], [`DecodeError::Unsized`]) are modules a GPU's JIT refuses too.

use core::fmt;

use kernel_args_ptx::ParseError;

use crate::ptx::PtxError;

/// What of a statement this interpreter does not run (or cannot place).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// An opcode no instruction family decodes (`ex2`, `cp`, `tex`).
    Instruction {
        /// The opcode, without modifiers.
        opcode: String,
    },
    /// An opcode with a modifier it does not take (`` `mov` with `.v2` ``).
    Modifier {
        /// The opcode.
        opcode: String,
        /// The modifier, without its dot.
        modifier: String,
    },
    /// An opcode whose modifiers together make no form this interpreter runs, as written
    /// (`` `cvta.to.const.u64` ``, `` `st.param.u32` ``).
    Form {
        /// The opcode and its modifiers, dot-separated.
        instruction: String,
    },
    /// An atomic operation other than `add` and `exch` on a float type.
    FloatAtomic {
        /// The opcode and its modifiers, dot-separated.
        instruction: String,
    },
    /// An opcode with a number of operands it does not take.
    OperandCount {
        /// The opcode.
        opcode: String,
        /// The operands the statement has.
        count: usize,
    },
    /// `mov` with other than one type modifier, or `cvt` with other than two.
    Types {
        /// The opcode.
        opcode: String,
        /// The statement's modifiers.
        modifiers: Vec<String>,
    },
    /// An opcode without something it needs.
    Missing {
        /// The opcode.
        opcode: String,
        /// What it lacks.
        what: Needed,
    },
    /// A vector operand whose element count is not the opcode's `.v2` or `.v4`.
    Lanes {
        /// The opcode.
        opcode: String,
        /// The lanes the modifiers say.
        lanes: usize,
        /// The operand as written.
        operand: String,
    },
    /// `popc` or `clz` of a type other than `.b32` and `.b64`.
    BitCountType {
        /// The opcode.
        opcode: String,
    },
    /// An operand where the instruction cannot take it.
    Operand {
        /// The operand as written.
        operand: String,
        /// Where it stood.
        role: Role,
    },
    /// A branch to a label the entry does not have.
    NoLabel {
        /// The label.
        label: String,
    },
    /// A branch whose target is not a label.
    BranchTarget,
    /// A barrier other than `bar.sync 0` (a named barrier, a thread count).
    Barrier {
        /// The statement, on one line.
        instruction: String,
    },
    /// An address naming no variable of its state space.
    NoVariable {
        /// The state space, as the interpreter names it (`Shared`, `Local`, ...).
        space: &'static str,
        /// The name.
        name: String,
    },
    /// A variable of a state space this interpreter places only at module scope, declared in a
    /// kernel's body (`.global`, `.const`).
    VariableSpace {
        /// The state space, without its dot.
        space: &'static str,
    },
    /// A variable whose size is not known (an array without a length).
    Unsized {
        /// The variable's name.
        name: String,
    },
    /// Variables that together need more than 2^64 bytes of a state space.
    TooMuchMemory,
    /// A `.const` or `.global` variable of an element type the interpreter has no register type
    /// for.
    ConstantType,
    /// A `.const` or `.global` variable's initializer value that is not of its type.
    Initializer,
    /// A `.const` or `.global` variable's initializer with more values than the variable has
    /// elements.
    InitializerTooLong,
    /// A `call` this interpreter does not make: of a function without a body in the module
    /// (`vprintf`; `__assertfail` is a device assert), a recursive one, or of a function with
    /// `.reg` parameters.
    Call {
        /// The function called.
        callee: String,
        /// Why not.
        why: &'static str,
    },
    /// A `.extern .global` variable: defined in another module, which the emulated driver does
    /// not link.
    ExternGlobal {
        /// The variable's name.
        name: String,
    },
    /// The kernel's body refused by the front end's scoping (an undeclared register, ...).
    Body(ParseError),
    /// An entry the module does not define.
    NoBody {
        /// The entry's name.
        entry: String,
    },
}

/// Something an opcode needs and a statement lacks (see [`DecodeError::Missing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// A type modifier (`.u32`, ...).
    Type,
    /// `setp`'s comparison (`.lt`, ...).
    Comparison,
    /// An atomic's operation (`.add`, ...).
    Operation,
    /// Any operand.
    Operands,
}

/// Where an operand stood (see [`DecodeError::Operand`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A value read: a register, an immediate of the instruction's type, a variable's address.
    Value,
    /// A register read (a guard, an address's base): not a special register or a vector.
    RegisterRead,
    /// The register written.
    RegisterWritten,
    /// The address of a load, store or atomic (`[...]`).
    Address,
    /// An operand of `shfl.sync`: a register or a 32-bit immediate.
    Warp,
    /// The predicate `vote.sync` reads.
    Vote,
    /// `setp`'s last operand with `.and`, `.or` or `.xor`: a predicate register.
    SetpCombine,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Instruction { opcode } => write!(f, "the instruction `{opcode}`"),
            DecodeError::Modifier { opcode, modifier } => write!(f, "`{opcode}` with `.{modifier}`"),
            DecodeError::Form { instruction } => write!(f, "`{instruction}`"),
            DecodeError::FloatAtomic { instruction } => write!(f, "`{instruction}` on a float"),
            DecodeError::OperandCount { opcode, count } => write!(f, "`{opcode}` with {count} operands"),
            DecodeError::Types { opcode, modifiers } => write!(f, "`{opcode}` with the types {modifiers:?}"),
            DecodeError::Missing { opcode, what } => {
                let what = match what {
                    Needed::Type => "a type",
                    Needed::Comparison => "a comparison",
                    Needed::Operation => "an operation",
                    Needed::Operands => "operands",
                };
                write!(f, "`{opcode}` without {what}")
            }
            DecodeError::Lanes { opcode, lanes, operand } => {
                write!(f, "`{opcode}` with {lanes} lanes and `{operand}`")
            }
            DecodeError::BitCountType { opcode } => {
                write!(f, "`{opcode}` of a type other than .b32 and .b64")
            }
            DecodeError::Operand { operand, role } => match role {
                Role::Value => write!(f, "the operand `{operand}`"),
                Role::RegisterRead => write!(f, "`{operand}` where a register is used"),
                Role::RegisterWritten => write!(f, "`{operand}` where a register is written"),
                Role::Address => write!(f, "`{operand}` where an address is read"),
                Role::Warp => write!(f, "the operand `{operand}` of a warp-synchronous instruction"),
                Role::Vote => write!(f, "the operand `{operand}` of `vote`"),
                Role::SetpCombine => {
                    write!(f, "`setp`'s boolean operand `{operand}`, not a predicate register")
                }
            },
            DecodeError::NoLabel { label } => write!(f, "no label {label}"),
            DecodeError::BranchTarget => f.write_str("`bra` without a label"),
            DecodeError::Barrier { instruction } => {
                write!(f, "a barrier other than `bar.sync 0`: {instruction}")
            }
            DecodeError::NoVariable { space, name } => write!(f, "no {space} variable {name}"),
            DecodeError::VariableSpace { space } => write!(f, "a .{space} variable in a kernel"),
            DecodeError::Unsized { name } => write!(f, "the variable `{name}` has no size"),
            DecodeError::TooMuchMemory => f.write_str("too much memory"),
            DecodeError::ConstantType => f.write_str("a constant of this type"),
            DecodeError::Initializer => f.write_str("an initializer"),
            DecodeError::InitializerTooLong => f.write_str("an initializer longer than its variable"),
            DecodeError::Call { callee, why } => write!(f, "a call of `{callee}`: {why}"),
            DecodeError::ExternGlobal { name } => write!(f, "the .extern .global variable `{name}`"),
            DecodeError::Body(e) => write!(f, "{}", e.kind),
            DecodeError::NoBody { entry } => write!(f, "no body of `{entry}`"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A kernel this interpreter does not run: the first statement it cannot decode. What
/// [`compile`](super::compile) answers; the module load writes it to the JIT log as a
/// [`PtxError`] on `line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The statement's line in the module (1-based); `None` for [`DecodeError::NoBody`].
    pub line: Option<u32>,
    /// The instruction, on one line without its `;`; `None` for a declaration or the body.
    pub statement: Option<String>,
    /// What of it is not run.
    pub error: DecodeError,
}

impl fmt::Display for Unsupported {
    /// What the JIT log says after "the emulated driver does not run this: ".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.statement {
            Some(statement) => write!(f, "`{statement}` ({})", self.error),
            None => write!(f, "{}", self.error),
        }
    }
}

impl std::error::Error for Unsupported {}

impl From<Unsupported> for PtxError {
    /// The JIT log's line for a kernel the interpreter does not run.
    fn from(unsupported: Unsupported) -> PtxError {
        PtxError {
            line: unsupported.line.map(|line| line as usize),
            message: format!("the emulated driver does not run this: {unsupported}"),
        }
    }
}
