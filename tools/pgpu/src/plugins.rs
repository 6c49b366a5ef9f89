//! The plugin registry (`pgpu_plugin`) as the driver uses it: installed
//! once at start-up with the built-in and loaded plugins, consulted by
//! [`crate::load_module`] for a file's frontend and by `pgpu compile
//! --backend` ([`compile_with`]).

use crate::{compile, load_module, read, run_pipeline};
use melior::{Context, ir::Module, ir::operation::OperationLike};
use pgpu_opt::PGPU_PASS_CRATES;
use pgpu_pass_infra::diagnostics::{Collector, SourceText};
use pgpu_pass_infra::tool;
use pgpu_plugin::{Diagnostic, Frontend, Registry};
use std::path::Path;
use std::sync::OnceLock;

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Makes `registry` the driver's, and registers its passes.
pub(crate) fn install(registry: Registry) {
    for register in registry.passes() {
        register();
    }
    let _ = REGISTRY.set(registry);
}

/// The driver's registry (empty before [`install`]).
pub(crate) fn registry() -> &'static Registry {
    REGISTRY.get_or_init(Registry::default)
}

/// A context with every dialect and pass: upstream, ours and the
/// registry's (which [`install`] registered).
pub(crate) fn create_context() -> Context {
    tool::create_context(PGPU_PASS_CRATES)
}

/// Prints `diagnostics` against `text` (named `name`) as the built-in
/// frontends print theirs.
fn print_diagnostics(diagnostics: &[Diagnostic], name: &str, text: &str) {
    for diagnostic in diagnostics {
        let report = match &diagnostic.span {
            Some(span) => {
                let start = span.start.min(text.len());
                let length = span.end.clamp(start, text.len()) - start;
                miette::miette!(
                    labels = vec![miette::LabeledSpan::at(start..start + length, "here")],
                    "{}",
                    diagnostic.message
                )
            }
            None => miette::miette!("{}", diagnostic.message),
        };
        let source = miette::NamedSource::new(name, text.to_string());
        eprintln!("{:?}", report.with_source_code(source));
    }
}

/// The module of `text` (file `name`) through a plugin's `frontend`.
pub(crate) fn translate<'c>(
    frontend: &dyn Frontend,
    context: &'c Context,
    name: &str,
    text: &str,
) -> Result<Module<'c>, ()> {
    let module_text = frontend
        .translate(name, text)
        .map_err(|diagnostics| print_diagnostics(&diagnostics, name, text))?;
    // Errors in the frontend's own output point into that text.
    let buffer = format!("{name} (the {} frontend's output)", frontend.name());
    let collector = Collector::attach(context);
    let module = tool::parse_module(context, &module_text, &buffer);
    let source = SourceText {
        name: &buffer,
        text: &module_text,
    };
    for record in collector.take() {
        eprint!("{}", record.render(&source));
    }
    module.ok_or(())
}

/// `pgpu compile --backend NAME FILE -o OUTPUT`: the kernel stage, the
/// backend's pipeline, and its artifact written to OUTPUT.
pub(crate) fn compile_with(
    backend_name: &str,
    file: &str,
    output: &Path,
    native: &compile::NativeOptions,
    print_pipeline: bool,
) -> Result<(), ()> {
    let Some(backend) = registry().backend(backend_name) else {
        let known = registry().backend_names();
        eprintln!(
            "error: no backend named '{backend_name}' (registered: {})",
            if known.is_empty() {
                "none; --load-plugin loads some".to_string()
            } else {
                known.join(", ")
            }
        );
        return Err(());
    };
    native.validate()?;
    let pipeline = compile::joined(&[&native.kernel_pipeline()?, &backend.pipeline()])?;
    if print_pipeline {
        eprintln!("{pipeline}");
    }
    let (name, text) = read(file)?;
    let context = create_context();
    let mut module = load_module(&context, &name, &text)?;
    run_pipeline(&context, &mut module, &pipeline, &name, &text)?;
    let flags = melior::ir::operation::OperationPrintingFlags::new().enable_debug_info(true, false);
    let printed = module
        .as_operation()
        .to_string_with_flags(flags)
        .map_err(|error| eprintln!("error: cannot print the module: {error}"))?;
    let artifact = backend.emit(&printed).map_err(|diagnostics| {
        let buffer = format!("{name} (the module given to the {backend_name} backend)");
        print_diagnostics(&diagnostics, &buffer, &printed);
    })?;
    tool::write_output_bytes(&output.to_string_lossy(), &artifact)
        .map_err(|error| eprintln!("{:?}", miette::Report::new(error)))
}
