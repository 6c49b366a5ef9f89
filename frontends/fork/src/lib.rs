//! The Fork frontend (seeds/fork-to-cuda.txt, Sections 2-3): the C-subset
//! front end parses and checks Fork source into the typed HIR, [`check`]
//! enforces Fork's own rules, [`lower`] lowers its constructs to the `pgpu`
//! group ops (docs/frontend-ir.md), `pgpu-split-private-control`
//! (passes/kernels) turns the control flow of synchronous code whose
//! condition is private into group splitting (`pgpu.group.split`, group
//! shrinking for loops), and `pgpu-propagate-group-ranks` makes `$` the
//! group rank in the `sync` functions that every call passes the caller's
//! group rank as `$`.
//!
//! Entry points: [`compile_to_module`] (a verified module or the
//! diagnostics), [`compile`] (also keeps the warnings of a successful
//! compilation) and [`lower_to_mlir`] (source text in, MLIR text out).

pub mod check;
pub mod lower;

use melior::{Context, ir::Module};
pub use pgpu_csubset::Diagnostic;
pub use pgpu_csubset::frontend::{Compiled, create_context, load_dialects, print_module};

/// Parses, checks and lowers Fork source `text` (named `path` in
/// diagnostics and locations) into a verified module of `context`, which
/// must have the upstream and `pgpu` dialects registered.
pub fn compile<'c>(context: &'c Context, path: &str, text: &str) -> Compiled<'c> {
    let checked = check::check_source(path, text);
    pgpu_csubset::frontend::compile(
        context,
        checked,
        &lower::ForkLowering::default(),
        path,
        text,
        |context, _, module| split_private_control(context, module, path),
    )
}

/// Runs `pgpu-split-private-control` (group splitting for control flow on
/// private values, `passes/kernels`) and then `pgpu-propagate-group-ranks`
/// on the lowered module.
fn split_private_control<'c>(
    context: &'c Context,
    mut module: Module<'c>,
    path: &str,
) -> Result<Module<'c>, Vec<Diagnostic>> {
    pgpu_kernel_passes::register_passes();
    let internal = |message: String| {
        vec![Diagnostic::error(
            "fork::E299",
            format!("internal error in Fork group splitting ({path}): {message}"),
            pgpu_csubset::span::Span::new(0, 0),
        )]
    };
    let manager = melior::pass::PassManager::new(context);
    melior::utility::parse_pass_pipeline(
        manager.as_operation_pass_manager(),
        "builtin.module(pgpu-split-private-control,pgpu-propagate-group-ranks)",
    )
    .and_then(|()| manager.run(&mut module))
    .map_err(|error| internal(error.to_string()))?;
    Ok(module)
}

/// Parses, checks and lowers Fork source into a verified module, or
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
