//! Salsa queries: an input [`SourceFile`] and the tracked queries
//! [`parse`] and [`check`]. The lowering adds its own query on top.

use crate::ast::Ast;
use crate::diag::Diagnostic;
use crate::hir::{Hir, Language};

/// One source file.
#[salsa::input]
pub struct SourceFile {
    /// The path as given on the command line.
    #[returns(ref)]
    pub path: String,
    /// The text.
    #[returns(ref)]
    pub text: String,
    /// The language to parse it as.
    pub language: Language,
}

/// Lex and parse a file.
#[salsa::tracked(returns(ref))]
pub fn parse(db: &dyn salsa::Database, file: SourceFile) -> (Ast, Vec<Diagnostic>) {
    let (text, lang) = (file.text(db), file.language(db));
    crate::with_big_stack(|| crate::parse_source(text, lang))
}

/// Check a file: the HIR (with `Error` nodes if there were errors) and all
/// diagnostics so far (parse diagnostics included).
#[salsa::tracked(returns(ref))]
pub fn check(db: &dyn salsa::Database, file: SourceFile) -> (Hir, Vec<Diagnostic>) {
    let (ast, pdiags) = parse(db, file);
    let lang = file.language(db);
    let (hir, sdiags) = crate::with_big_stack(|| crate::sema::analyze(ast, lang));
    let mut diags = pdiags.clone();
    diags.extend(sdiags);
    (hir, diags)
}

/// A ready-to-use database.
#[salsa::db]
#[derive(Default, Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Database")
    }
}

#[salsa::db]
impl salsa::Database for Database {}
