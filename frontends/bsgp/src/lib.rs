//! The BSGP frontend (seeds/bsgp.txt): the C-subset front end parses and
//! checks BSGP source into the typed HIR, and [`lower`] lowers its BSGP
//! constructs to the `pgpu` dialect (docs/frontend-ir.md).
//!
//! Entry points: [`compile_to_module`] (a verified module or the
//! diagnostics), [`compile`] (also keeps the warnings of a successful
//! compilation), [`lower_to_mlir`] (source text in, MLIR text out) and the
//! salsa query [`lower_query`] on the C-subset front end's database.

pub mod check;
pub mod lower;

use melior::{Context, ir::Module};
pub use pgpu_csubset::Diagnostic;
pub use pgpu_csubset::frontend::{Compiled, create_context, load_dialects, print_module};

/// Parses, checks and lowers BSGP source `text` (named `path` in
/// diagnostics and locations) into a verified module of `context`, which
/// must have the upstream and `pgpu` dialects registered (as
/// [`create_context`] and `pgpu_pass_infra::tool::create_context` do).
pub fn compile<'c>(context: &'c Context, path: &str, text: &str) -> Compiled<'c> {
    let checked = check::check_source(path, text);
    pgpu_csubset::frontend::compile(
        context,
        checked,
        &lower::BsgpLowering,
        path,
        text,
        |_, _, module| Ok(module),
    )
}

/// Parses, checks and lowers BSGP source into a verified module, or
/// returns the diagnostics (errors and warnings) that stopped it.
pub fn compile_to_module<'c>(
    context: &'c Context,
    path: &str,
    text: &str,
) -> Result<Module<'c>, Vec<Diagnostic>> {
    compile(context, path, text).into_result()
}

/// The lowered module of `text` as MLIR text (with locations when
/// `debug_info`), or the diagnostics.
pub fn lower_to_mlir(path: &str, text: &str, debug_info: bool) -> Result<String, Vec<Diagnostic>> {
    pgpu_csubset::frontend::lower_to_mlir(compile, path, text, debug_info)
}

/// Salsa query: a BSGP source file lowered to MLIR text with locations
/// (`None` when there were errors), and every diagnostic (front end, BSGP
/// checks, lowering). Built on the front end's `check` query, so editing a
/// file re-lowers only what changed upstream.
#[salsa::tracked(returns(ref))]
pub fn lower_query(
    db: &dyn salsa::Database,
    file: pgpu_csubset::db::SourceFile,
) -> (Option<String>, Vec<Diagnostic>) {
    let (hir, front) = pgpu_csubset::db::check(db, file);
    let mut diagnostics = front.clone();
    diagnostics.extend(check::check(hir));
    diagnostics.sort_by_key(|d| d.span().start);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return (None, diagnostics);
    }
    let context = create_context();
    let lowered = pgpu_csubset::lower::lower_hir(
        &context,
        hir,
        &lower::BsgpLowering,
        file.path(db),
        file.text(db),
    );
    match lowered {
        Ok(module) => (Some(print_module(&module, true)), diagnostics),
        Err(errors) => {
            diagnostics.extend(errors);
            (None, diagnostics)
        }
    }
}
