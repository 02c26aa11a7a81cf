//! # kernel-args-ptx
//!
//! The one reader of PTX text in kernel-args: every part of the project that reads a kernel's
//! PTX (the parameter-list reader, the fence and its checker, the emulated driver) reads it
//! through [`parse`], so that no two of them can disagree about what a text says. A sandbox
//! that rewrites a kernel prints the module it checked with the printer (`Display` on
//! [`Module`]); the driver never sees text the checks did not see.
//!
//! ```
//! use kernel_args_ptx::{OperandKind, Statement, parse};
//!
//! // Whitespace and comments may stand between any two tokens, as ptxas reads them.
//! let text = ".version 7.8\n.target sm_90\n.address_size 64\n\
//!     .visible .entry k(.param .u64 p)\n{\n\t.reg .b64 %rd<2>; .reg .pred %p1;\n\
//!     \tld.param.u64 %rd1, [p];\n\t@ ! %p1 st /* a comment */ .global\n.u32 [%rd1 + 4], 7;\n\tret;\n}\n";
//! let module = parse(text)?;
//! let entry = module.entry("k").expect("an entry");
//! let body = entry.body.as_ref().expect("a body");
//! let Statement::Instruction(store) = &body.statements[3] else { unreachable!() };
//! assert_eq!((store.opcode.as_str(), store.modifiers.as_slice()), ("st", &["global".to_owned(), "u32".to_owned()][..]));
//! assert!(store.guard.as_ref().is_some_and(|g| g.negated && g.register == "%p1"));
//! assert!(matches!(&store.operands[0].kind, OperandKind::Address(a) if a.offset == 4));
//! assert_eq!(store.span.line, 8);
//!
//! // The printer writes one statement per line; its text parses to the same module.
//! let printed = module.to_string();
//! assert!(printed.contains("\t@!%p1 st.global.u32\t[%rd1+4], 7;\n"));
//! assert_eq!(parse(&printed)?, module);
//! # Ok::<(), kernel_args_ptx::ParseError>(())
//! ```
//!
//! ## Where to find what
//!
//! - the lexical rules (whitespace, comments, strings, identifiers, numbers): `src/lex.rs`;
//! - the grammar, and what it refuses by name: [`parse`] (`src/parse.rs`);
//! - the parsed form: [`Module`], [`Function`], [`Statement`], [`Instruction`], [`Operand`]
//!   (`src/ast.rs`), each with its [`Span`];
//! - the printer: `Display` on [`Module`] and its parts (`src/print.rs`);
//! - registers resolved through nested scopes, and the special registers: [`flatten`]
//!   (`src/scope.rs`);
//! - the one error: [`ParseError`] (`src/error.rs`).
//!
//! ## Contract
//!
//! - **The whole text is read.** A text the grammar does not cover is refused with its line,
//!   column and what was expected there; nothing is passed over but `.file` and `.loc` (debug
//!   line information), which are read whole and not kept.
//! - **No panics, no `unsafe`.** No input makes [`parse`], [`flatten`] or the printer panic
//!   (the no-panic lints are denied in this crate, and the `ptx_roundtrip` fuzz target drives
//!   it); nesting is limited to [`MAX_DEPTH`].
//! - **Round trips.** For every module [`parse`] returns, parsing its printed text gives an
//!   equal module ([`Span`]s do not take part in equality).

#![forbid(unsafe_code)]
// Tests may compute without checks (clippy.toml lets them unwrap, panic and index): a panic
// there is a failing test, not a broken contract.
#![cfg_attr(test, allow(clippy::arithmetic_side_effects))]

mod ast;
mod error;
mod lex;
mod parse;
mod print;
mod scope;
mod span;

pub use ast::*;
pub use error::{ParseError, ParseErrorKind};
pub use parse::parse;
pub use scope::{
    Flat, FlatItem, RegisterId, RegisterType, Resolved, SPECIAL_REGISTERS, flatten, is_special, resolved_in,
};
pub use span::Span;

/// How deep blocks, and braces in initializers, may nest.
pub const MAX_DEPTH: usize = 64;
