//! What every language frontend on the C subset shares: checking source
//! with the language's own rules added, the MLIR context with the dialects
//! the lowering emits, a compilation that keeps warnings, and printing.
//!
//! A frontend crate (BSGP, Fork) supplies its checks (a function over the
//! HIR), its [`crate::lower::Extension`] and, optionally, a rewrite of the
//! lowered module; [`compile`] does the rest.

use crate::{CheckResult, Diagnostic, Hir, Language, lower::Extension};
use melior::{
    Context,
    dialect::DialectRegistry,
    ir::{Module, operation::OperationLike},
    utility::register_all_dialects,
};

/// The dialects the lowerings emit.
const DIALECTS: &[&str] = &["arith", "math", "func", "scf", "memref", "ub", "pgpu"];

/// A compilation's module (if it succeeded) and every diagnostic, warnings
/// included.
#[derive(Debug)]
pub struct Compiled<'c> {
    /// The verified module; `None` when there were errors.
    pub module: Option<Module<'c>>,
    /// Errors and warnings, front end first.
    pub diagnostics: Vec<Diagnostic>,
}

impl<'c> Compiled<'c> {
    /// The module, or the diagnostics (errors and warnings) that stopped it.
    pub fn into_result(self) -> Result<Module<'c>, Vec<Diagnostic>> {
        self.module.ok_or(self.diagnostics)
    }
}

/// A frontend's compile function (`pgpu_bsgp::compile`, ...).
pub type CompileFn = for<'c> fn(&'c Context, &str, &str) -> Compiled<'c>;

/// The module `compile` makes of `text` as MLIR text (with locations when
/// `debug_info`), or the diagnostics. Creates its own context, so it is a
/// pure function of its arguments.
pub fn lower_to_mlir(
    compile: CompileFn,
    path: &str,
    text: &str,
    debug_info: bool,
) -> Result<String, Vec<Diagnostic>> {
    let context = create_context();
    let module = compile(&context, path, text).into_result()?;
    Ok(print_module(&module, debug_info))
}

/// Loads the dialects the lowerings emit into `context` (their dialects
/// must be registered, as [`create_context`] does).
pub fn load_dialects(context: &Context) {
    for name in DIALECTS {
        context.get_or_load_dialect(name);
    }
}

/// A context with every upstream dialect and the `pgpu` dialect
/// registered, and the dialects the lowerings emit loaded.
pub fn create_context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    pgpu_dialect::register(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    load_dialects(&context);
    context
}

/// Parses and checks `text` as `language`, with the language's own
/// `checks` after the C subset's; the HIR is `Some` only without errors.
pub fn check_source(
    text: &str,
    language: Language,
    checks: impl FnOnce(&Hir) -> Vec<Diagnostic>,
) -> CheckResult {
    let (hir, mut diagnostics) = crate::analyze_source(text, language);
    diagnostics.extend(checks(&hir));
    diagnostics.sort_by_key(|d| d.span().start);
    let hir = if diagnostics.iter().any(Diagnostic::is_error) {
        None
    } else {
        Some(hir)
    };
    CheckResult { hir, diagnostics }
}

/// Lowers a checked program with `extension`, then `rewrite` (the
/// language's own module rewrite, or `Ok`), into a verified module of
/// `context` (which must have the upstream and `pgpu` dialects
/// registered).
pub fn compile<'c>(
    context: &'c Context,
    checked: CheckResult,
    extension: &dyn Extension,
    path: &str,
    text: &str,
    rewrite: impl FnOnce(&'c Context, &Hir, Module<'c>) -> Result<Module<'c>, Vec<Diagnostic>>,
) -> Compiled<'c> {
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
    let lowered = crate::lower::lower_hir(context, &hir, extension, path, text)
        .and_then(|module| rewrite(context, &hir, module));
    match lowered {
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
