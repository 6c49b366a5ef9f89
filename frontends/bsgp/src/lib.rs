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

use melior::{
    Context,
    dialect::DialectRegistry,
    ir::{Module, operation::OperationLike},
    utility::register_all_dialects,
};
pub use pgpu_csubset::Diagnostic;

/// The dialects the lowering emits.
const DIALECTS: &[&str] = &["arith", "func", "scf", "memref", "ub", "pgpu"];

/// A compilation's module (if it succeeded) and every diagnostic, warnings
/// included.
#[derive(Debug)]
pub struct Compiled<'c> {
    /// The verified module; `None` when there were errors.
    pub module: Option<Module<'c>>,
    /// Errors and warnings, front end first.
    pub diagnostics: Vec<Diagnostic>,
}

/// Loads the dialects the lowering emits into `context` (their dialects
/// must be registered, as [`create_context`] does).
pub fn load_dialects(context: &Context) {
    for name in DIALECTS {
        context.get_or_load_dialect(name);
    }
}

/// A context with every upstream dialect and the `pgpu` dialect
/// registered, and the dialects the lowering emits loaded.
pub fn create_context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    pgpu_dialect::register(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    load_dialects(&context);
    context
}

/// Parses, checks and lowers BSGP source `text` (named `path` in
/// diagnostics and locations) into a verified module of `context`, which
/// must have the upstream and `pgpu` dialects registered (as
/// [`create_context`] and `pgpu_pass_infra::tool::create_context` do).
pub fn compile<'c>(context: &'c Context, path: &str, text: &str) -> Compiled<'c> {
    let checked = check::check_source(path, text);
    let mut diagnostics = checked.diagnostics;
    let hir = match checked.hir {
        Some(hir) if !diagnostics.iter().any(Diagnostic::is_error) => hir,
        _ => {
            return Compiled {
                module: None,
                diagnostics,
            };
        }
    };
    load_dialects(context);
    match pgpu_csubset::lower::lower_hir(context, &hir, &lower::BsgpLowering, path, text) {
        Ok(module) => Compiled {
            module: Some(module),
            diagnostics,
        },
        Err(errors) => {
            diagnostics.extend(errors);
            Compiled {
                module: None,
                diagnostics,
            }
        }
    }
}

/// Parses, checks and lowers BSGP source into a verified module, or
/// returns the diagnostics (errors and warnings) that stopped it.
pub fn compile_to_module<'c>(
    context: &'c Context,
    path: &str,
    text: &str,
) -> Result<Module<'c>, Vec<Diagnostic>> {
    let compiled = compile(context, path, text);
    compiled.module.ok_or(compiled.diagnostics)
}

/// The lowered module of `text` as MLIR text (with locations when
/// `debug_info`), or the diagnostics. Creates its own context, so it is a
/// pure function of its arguments.
pub fn lower_to_mlir(path: &str, text: &str, debug_info: bool) -> Result<String, Vec<Diagnostic>> {
    let context = create_context();
    let module = compile_to_module(&context, path, text)?;
    Ok(print_module(&module, debug_info))
}

/// Prints a module in the custom syntax; with `debug_info`, every op's
/// location follows it inline (`loc("file":line:col)`), which re-parses.
pub fn print_module(module: &Module, debug_info: bool) -> String {
    if !debug_info {
        return module.as_operation().to_string();
    }
    let flags = melior::ir::operation::OperationPrintingFlags::new()
        .enable_debug_info(true, false)
        .use_local_scope();
    match module.as_operation().to_string_with_flags(flags) {
        Ok(text) => text,
        Err(_) => module.as_operation().to_string(),
    }
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
