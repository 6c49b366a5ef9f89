//! The PTX frontend: PTX text to an IR ([`ir`]) and back ([`printer`]),
//! with diagnostics that name the line and span of anything malformed or
//! unsupported ([`error`]).
//!
//! It reads the PTX that nvcc and LLVM's NVPTX backend emit for ordinary
//! kernels (PTX ISA 6.0 to 9.x): module directives, variables of every
//! state space with initializers, `.entry`/`.func` with parameters,
//! predicates and guards, vectors, and the instruction families listed in
//! [`ir::Opcode`]; any other PTX instruction is reported by name
//! ([`ir::UNSUPPORTED_OPCODES`]). [`parse`] checks syntax;
//! [`check::check`] checks names and operand shapes. The printed text of a
//! module parses back to an equal module (spans aside), which is what
//! `pgpu-translate --ptx-to-ptx` and the round-trip tests rely on.
//!
//! The crate depends on nothing but its error types, so that fuzzing and
//! other tools can use it without LLVM.

pub mod check;
pub mod error;
pub mod ir;
pub mod launch;
pub mod lexer;
pub mod parser;
pub mod printer;

pub use error::{ErrorKind, PtxError, Span};
pub use parser::parse;
pub use printer::print;

/// Parses and checks `source`.
pub fn parse_and_check(source: &str) -> Result<ir::Module, PtxError> {
    let module = parse(source)?;
    check::check(&module)?;
    Ok(module)
}
