//! The C-subset front end shared by every pgpu source language: lexer,
//! parser (with error recovery), semantic analysis into a typed [`hir::Hir`],
//! miette diagnostics and salsa queries.
//!
//! Entry points: [`check_source`] (everything at once), [`parse_source`],
//! [`analyze_source`] (HIR even when there are errors), and the salsa
//! queries in [`db`]. BSGP's own checks are `pgpu_bsgp::check`.
//! [`hir_print::print`] dumps a HIR as C-like text; [`hir_verify::verify`]
//! checks the invariants the lowering relies on.
//!
//! Language rules worth knowing:
//! - Prototypes are accepted and ignored when the file defines the function
//!   with the same signature, or when they declare a `<math.h>` builtin
//!   with its C signature (`double sqrt(double);`); a prototype without a
//!   definition, or with a different signature, is an error
//!   (`csubset::E012`). Functions may be called before their definition.
//! - `par` and `require` blocks do not open a scope; every other block does.
//! - BSGP `x = e;` with `x` unknown declares `x` (type of `e`) in the
//!   current scope; BSGP functions may omit the result type (`void`).
//! - Nesting is limited ([`parser::MAX_DEPTH`], [`parser::MAX_CHAIN`]);
//!   parsing and checking run on a thread with a large stack.
//!
//! Diagnostic codes: `csubset::E001`-`E006` lexer, `E010`-`E018` parser,
//! `E020`-`E051` semantic analysis, `W001`-`W004` warnings; each phase's
//! `codes` module lists them (`lexer::codes`, `parser::codes`,
//! `sema::codes`).

pub mod ast;
pub mod db;
pub mod diag;
pub mod frontend;
pub mod hir;
pub mod hir_print;
pub mod hir_verify;
pub mod lexer;
pub mod lower;
pub mod parser;
pub mod sema;
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
    /// Every diagnostic, errors and warnings: lexer and parser first, then
    /// semantic analysis.
    pub diagnostics: Vec<Diagnostic>,
}

impl CheckResult {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Run `f` on a thread with a large stack (the parser and the checker
/// recurse once per nesting level; debug builds have large frames). Falls
/// back to the current thread if no thread can be started.
pub fn with_big_stack<T: Send, F: FnOnce() -> T + Send>(f: F) -> T {
    const STACK: usize = 256 << 20;
    let mut slot = Some(f);
    let spawned = std::thread::scope(|s| {
        let slot_ref = &mut slot;
        let h = std::thread::Builder::new()
            .stack_size(STACK)
            .spawn_scoped(s, move || slot_ref.take().map(|f| f()));
        match h {
            Ok(h) => match h.join() {
                Ok(v) => v,
                Err(p) => std::panic::resume_unwind(p),
            },
            Err(_) => None,
        }
    });
    match (spawned, slot.take()) {
        (Some(v), _) => v,
        (None, Some(f)) => f(),
        // The thread ran and took `f` but returned nothing: impossible, as
        // `f` always returns; run nothing twice.
        (None, None) => unreachable!("the analysis thread took its closure and returned nothing"),
    }
}

/// Lex and parse `text` as `lang`.
pub fn parse_source(text: &str, lang: Language) -> (ast::Ast, Vec<Diagnostic>) {
    let (toks, mut diags) = lexer::lex(text);
    let (ast, pdiags) = parser::parse(&toks, lang);
    diags.extend(pdiags);
    (ast, diags)
}

/// Lex, parse and check; the HIR is returned even when there are errors
/// (with `Error` nodes), for tools that want to go on (the BSGP checks).
pub fn analyze_source(text: &str, lang: Language) -> (Hir, Vec<Diagnostic>) {
    with_big_stack(|| {
        let (ast, mut diags) = parse_source(text, lang);
        let (hir, sdiags) = sema::analyze(&ast, lang);
        diags.extend(sdiags);
        // Source order across phases (stable: same-place diagnostics keep
        // their phase order).
        diags.sort_by_key(|d| d.span().start);
        (hir, diags)
    })
}

/// Lex, parse and check `text` (named `path` in diagnostics) as `lang`.
/// Language-specific checks (BSGP's, in `pgpu-bsgp`) are not included.
pub fn check_source(path: &str, text: &str, lang: Language) -> CheckResult {
    let _ = path;
    let (hir, diagnostics) = analyze_source(text, lang);
    let hir = if diagnostics.iter().any(Diagnostic::is_error) {
        None
    } else {
        Some(hir)
    };
    CheckResult { hir, diagnostics }
}
