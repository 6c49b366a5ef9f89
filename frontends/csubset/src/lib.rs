//! The C-subset front end shared by every pgpu source language: lexer,
//! parser (with error recovery), semantic analysis into a typed [`hir::Hir`],
//! miette diagnostics and salsa queries.
//!
//! Entry point: [`check_source`].

pub mod ast;
pub mod diag;
pub mod hir;
pub mod lexer;
pub mod lower;
pub mod parser;
pub mod span;

pub use diag::{Diagnostic, Label, Severity};
pub use hir::{Hir, Language};
pub use span::{LineIndex, Span};

/// The result of parsing and checking one source file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CheckResult {
    /// The typed program; `None` when there were errors (warnings do not
    /// count).
    pub hir: Option<Hir>,
    /// Every diagnostic, errors and warnings, in source order per phase.
    pub diagnostics: Vec<Diagnostic>,
}

impl CheckResult {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Lex, parse and check `text` (named `path` in diagnostics) as `lang`.
pub fn check_source(path: &str, text: &str, lang: Language) -> CheckResult {
    let _ = (path, text, lang);
    CheckResult {
        hir: None,
        diagnostics: Vec::new(),
    }
}
