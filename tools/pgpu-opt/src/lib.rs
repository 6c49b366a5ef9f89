//! `pgpu-opt`: reads MLIR (any upstream dialect and `pgpu`), runs a pass
//! pipeline and prints the result, with `mlir-opt`'s spellings:
//! `--pass-pipeline=`, one flag per registered pass, `--split-input-file`,
//! `--verify-diagnostics`, `--mlir-print-ir-*`, `--mlir-timing`,
//! `--list-passes`. Output goes through a temporary file renamed into place
//! only when everything succeeded.
//!
//! It is a library so that a crate can build its own `pgpu-opt` with more
//! passes in it: [`main_with`] takes a [`Registry`] whose pass
//! registrations ([`Registry::add_passes`]) run before the command line
//! is read, so that their passes are flags and pipeline elements like ours
//! (`examples/plugins/fuse-spawns`).

pub mod cli;
mod semantics;
mod verify;

use clap::{ArgAction, Parser};
use melior::{
    ir::operation::{OperationLike, OperationPrintingFlags},
    pass::PassManager,
    utility::parse_pass_pipeline,
};
use miette::Diagnostic;
use pgpu_pass_infra::diagnostics::{Collector, Record, SourceText};
use pgpu_pass_infra::tool::{self, FileError, IrPrinting, read_input, write_output};
use std::process::ExitCode;
use verify::Expectations;

pub use pgpu_plugin::Registry;

/// Passes of ours, one registration function per pass crate (every tool
/// registers these).
pub const PGPU_PASS_CRATES: &[fn()] = &[
    pgpu_kernel_passes::register_passes,
    pgpu_backend_nvptx::register_passes,
    pgpu_backend_amdgpu::register_passes,
];

#[derive(Parser, Debug)]
#[command(
    name = "pgpu-opt",
    version,
    about = "MLIR modular optimizer driver for pgpu",
    after_help = "Every registered pass is also a flag: --<pass>[=\"option=value ...\"]. \
                  See --list-passes."
)]
struct Options {
    /// Input file, or `-` for standard input.
    #[arg(default_value = "-")]
    input: String,
    /// Output file, or `-` for standard output.
    #[arg(short = 'o', default_value = "-")]
    output: String,
    /// A textual pass pipeline, e.g. `builtin.module(canonicalize,cse)`.
    #[arg(long = "pass-pipeline", value_name = "PIPELINE")]
    pass_pipeline: Option<String>,
    /// Split the input at lines of the marker (default `// -----`) and process each part alone.
    #[arg(long = "split-input-file", num_args = 0..=1, require_equals = true,
          default_missing_value = "// -----", value_name = "MARKER")]
    split_input_file: Option<String>,
    /// Marker written between the outputs of split input parts.
    #[arg(
        long = "output-split-marker",
        default_value = "// -----",
        value_name = "MARKER"
    )]
    output_split_marker: String,
    /// Check emitted diagnostics against `expected-*` comments in the input.
    #[arg(long = "verify-diagnostics")]
    verify_diagnostics: bool,
    /// Run the verifier after each pass.
    #[arg(long = "verify-each", action = ArgAction::Set, default_value_t = true, value_name = "BOOL")]
    verify_each: bool,
    /// Print the IR after each pass.
    #[arg(long = "mlir-print-ir-after-all")]
    print_ir_after_all: bool,
    /// Print the IR before each pass.
    #[arg(long = "mlir-print-ir-before-all")]
    print_ir_before_all: bool,
    /// Print the IR after the named passes (comma-separated pass arguments).
    #[arg(
        long = "mlir-print-ir-after",
        value_delimiter = ',',
        value_name = "PASS"
    )]
    print_ir_after: Vec<String>,
    /// Print the IR before the named passes (comma-separated pass arguments).
    #[arg(
        long = "mlir-print-ir-before",
        value_delimiter = ',',
        value_name = "PASS"
    )]
    print_ir_before: Vec<String>,
    /// With --mlir-print-ir-after*, print only when the pass changed the IR.
    #[arg(long = "mlir-print-ir-after-change")]
    print_ir_after_change: bool,
    /// Print the whole module, not only the operation a pass ran on.
    #[arg(long = "mlir-print-ir-module-scope")]
    print_ir_module_scope: bool,
    /// Print the time each pass took to standard error.
    #[arg(long = "mlir-timing")]
    timing: bool,
    /// Print locations (`loc(...)`) with the IR.
    #[arg(long = "mlir-print-debuginfo")]
    print_debuginfo: bool,
    /// Print locations in their pretty form (implies --mlir-print-debuginfo).
    #[arg(long = "mlir-pretty-debuginfo")]
    pretty_debuginfo: bool,
    /// Print operations in the generic form.
    #[arg(long = "mlir-print-op-generic")]
    print_op_generic: bool,
    /// Print with local scope (no module-level aliases).
    #[arg(long = "mlir-print-local-scope")]
    print_local_scope: bool,
    /// Run everything on one thread.
    #[arg(long = "mlir-disable-threading")]
    disable_threading: bool,
    /// Accept operations of dialects that are not registered.
    #[arg(long = "allow-unregistered-dialect")]
    allow_unregistered_dialect: bool,
    /// Print every registered pass and pipeline (upstream and pgpu) and exit.
    #[arg(long = "list-passes")]
    list_passes: bool,
    /// Load an MLIR pass plugin (a shared library exporting
    /// `mlirGetPassPluginInfo`) before reading the rest of the command line.
    #[arg(long = "load-pass-plugin", value_name = "PATH")]
    load_pass_plugin: Vec<String>,
    /// Load an MLIR dialect plugin (exporting `mlirGetDialectPluginInfo`).
    #[arg(long = "load-dialect-plugin", value_name = "PATH")]
    load_dialect_plugin: Vec<String>,
    /// Interpret `@main` before and after the pipeline (with the
    /// space-separated program ARGS) and fail if the output or exit code
    /// differ, or if either run fails.
    #[arg(long = "pgpu-check-semantics", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_name = "ARGS")]
    check_semantics: Option<String>,
}

/// A pass given as its own flag, `--name` or `--name="options"`.
#[derive(Debug, Clone)]
struct PassFlag {
    name: String,
    options: String,
}

/// Errors of the tool itself (the IR's own diagnostics are printed as MLIR
/// prints them).
#[derive(Debug, thiserror::Error, Diagnostic)]
enum ToolError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    File(#[from] FileError),
    #[error("invalid pass pipeline: {message}")]
    #[diagnostic(code(pgpu_opt::pipeline))]
    Pipeline { message: String },
    #[error("{0}")]
    #[diagnostic(code(pgpu_opt::usage))]
    Usage(String),
    #[error("cannot load the plugin '{path}': {message}")]
    #[diagnostic(code(pgpu_opt::plugin))]
    Plugin { path: String, message: String },
}

/// The plugins the command line names (`--load-pass-plugin=PATH` or
/// `--load-pass-plugin PATH`, and the same for dialect plugins), in order.
fn plugin_arguments(arguments: &[String]) -> Vec<(tool::PluginKind, String)> {
    let flags = [
        ("load-pass-plugin", tool::PluginKind::Pass),
        ("load-dialect-plugin", tool::PluginKind::Dialect),
    ];
    let mut plugins = Vec::new();
    let mut words = arguments.iter().skip(1);
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let body = word.trim_start_matches('-');
        for (flag, kind) in flags {
            if body == flag {
                if let Some(path) = words.next() {
                    plugins.push((kind, path.clone()));
                }
            } else if let Some(path) = body
                .strip_prefix(flag)
                .and_then(|rest| rest.strip_prefix('='))
            {
                plugins.push((kind, path.to_string()));
            }
        }
    }
    plugins
}

/// Splits pass flags from the tool's own options. A flag is a pass flag
/// when its name is a registered pass or pipeline; single-dash long options
/// (`-split-input-file`) are accepted as LLVM's command line does.
fn split_arguments(arguments: Vec<String>) -> (Vec<String>, Vec<PassFlag>) {
    let mut tool_arguments = Vec::new();
    let mut pass_flags = Vec::new();
    let mut rest_are_positional = false;
    for argument in arguments {
        if rest_are_positional || argument == "-" || !argument.starts_with('-') || argument == "-o"
        {
            tool_arguments.push(argument);
            continue;
        }
        if argument == "--" {
            rest_are_positional = true;
            tool_arguments.push(argument);
            continue;
        }
        let body = argument.trim_start_matches('-');
        let (name, options) = body.split_once('=').unwrap_or((body, ""));
        if tool::is_registered_pass(name) {
            let mut options = options.trim_matches(|c| c == '"' || c == '\'').to_string();
            // `--pass=value` for a pass with a single option.
            if !options.is_empty()
                && !options.contains('=')
                && let Some(option) = pgpu_pass_infra::sole_option(name)
            {
                options = format!("{option}={options}");
            }
            pass_flags.push(PassFlag {
                name: name.to_string(),
                options,
            });
        } else if !argument.starts_with("--") && body.len() > 1 && !argument.starts_with("-o") {
            tool_arguments.push(format!("--{body}"));
        } else {
            tool_arguments.push(argument);
        }
    }
    (tool_arguments, pass_flags)
}

/// The tool, with the passes `registry` registers besides ours.
pub fn main_with(registry: Registry) -> ExitCode {
    cli::set_report_style();
    // Passes must be registered before the command line can be split, the
    // registry's and the plugins' passes too.
    for register in registry.passes() {
        register();
    }
    let _ = tool::create_context(PGPU_PASS_CRATES);
    let arguments = match cli::arguments() {
        Ok(arguments) => arguments,
        Err(code) => return code,
    };
    for (kind, path) in plugin_arguments(&arguments) {
        if let Err(message) = tool::load_plugin(kind, &path) {
            let error = ToolError::Plugin { path, message };
            eprintln!("{:?}", miette::Report::new(error));
            return ExitCode::FAILURE;
        }
    }
    let (arguments, pass_flags) = split_arguments(arguments);
    let hint = "note: a flag is an option of pgpu-opt or a registered pass (`--list-passes`); \
                the passes of a plugin need `--load-pass-plugin=PATH` first";
    let options = match cli::parse_with_hint::<Options>(arguments, hint) {
        Ok(options) => options,
        Err(code) => return code,
    };
    match run(&options, &pass_flags) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("{:?}", miette::Report::new(error));
            ExitCode::FAILURE
        }
    }
}

/// Runs the tool; `Ok(false)` when diagnostics (already printed) failed it.
fn run(options: &Options, pass_flags: &[PassFlag]) -> Result<bool, ToolError> {
    if options.list_passes {
        tool::print_registered_passes();
        return Ok(true);
    }
    if options.pass_pipeline.is_some() && !pass_flags.is_empty() {
        return Err(ToolError::Usage(
            "'--pass-pipeline' cannot be combined with individual pass flags".into(),
        ));
    }
    check_pipeline(options, pass_flags)?;
    let (name, text) = read_input(&options.input)?;
    let chunks = match &options.split_input_file {
        Some(marker) => split_input(&text, marker),
        None => vec![Chunk {
            first_line: 1,
            text: text.clone(),
        }],
    };
    let source = SourceText {
        name: &name,
        text: &text,
    };
    let mut outputs = Vec::new();
    let mut succeeded = true;
    for chunk in &chunks {
        let outcome = process_chunk(options, pass_flags, &name, chunk);
        if options.verify_diagnostics {
            let expectations = Expectations::parse(&name, &chunk.text, chunk.first_line);
            let mismatches = expectations.check(&outcome.diagnostics);
            for mismatch in &mismatches {
                eprintln!("{mismatch}");
            }
            succeeded &= mismatches.is_empty();
        } else {
            for record in &outcome.diagnostics {
                eprint!("{}", record.render(&source));
            }
            succeeded &= outcome.output.is_some();
        }
        if let Some(output) = outcome.output {
            outputs.push(output);
        }
    }
    if !succeeded {
        return Ok(false);
    }
    let separator = format!("\n{}\n", options.output_split_marker);
    write_output(&options.output, &outputs.join(&separator))?;
    Ok(true)
}

/// Parses the pipeline once up front, so that a bad pipeline is reported
/// before any input is read.
fn check_pipeline(options: &Options, pass_flags: &[PassFlag]) -> Result<(), ToolError> {
    let context = tool::create_context(PGPU_PASS_CRATES);
    let collector = Collector::attach(&context);
    let pass_manager = PassManager::new(&context);
    build_pipeline(&pass_manager, options, pass_flags).map_err(|message| {
        let diagnostics: Vec<String> = collector
            .take()
            .iter()
            .map(|record| record.message.clone())
            .collect();
        let message = if diagnostics.is_empty() {
            message
        } else {
            format!("{message}\n{}", diagnostics.join("\n"))
        };
        ToolError::Pipeline { message }
    })
}

fn build_pipeline(
    pass_manager: &PassManager,
    options: &Options,
    pass_flags: &[PassFlag],
) -> Result<(), String> {
    if let Some(pipeline) = &options.pass_pipeline {
        return parse_pass_pipeline(pass_manager.as_operation_pass_manager(), pipeline)
            .map_err(|error| error.to_string());
    }
    for flag in pass_flags {
        tool::add_pass_from_flag(pass_manager, &flag.name, &flag.options)?;
    }
    Ok(())
}

/// One part of a split input; its lines keep their numbers in the file.
#[derive(Debug)]
struct Chunk {
    first_line: u32,
    text: String,
}

/// Splits `text` at lines that consist of `marker` (surrounding blanks
/// allowed), as `mlir-opt --split-input-file` does.
fn split_input(text: &str, marker: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut first_line = 1;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if line.trim() == marker {
            chunks.push(Chunk {
                first_line,
                text: std::mem::take(&mut current),
            });
            first_line = index as u32 + 2;
        } else {
            current.push_str(line);
        }
    }
    chunks.push(Chunk {
        first_line,
        text: current,
    });
    chunks
}

struct ChunkOutcome {
    output: Option<String>,
    diagnostics: Vec<Record>,
}

/// Parses, transforms and prints one chunk in a fresh context.
fn process_chunk(
    options: &Options,
    pass_flags: &[PassFlag],
    name: &str,
    chunk: &Chunk,
) -> ChunkOutcome {
    let context = tool::create_context(PGPU_PASS_CRATES);
    context.set_allow_unregistered_dialects(options.allow_unregistered_dialect);
    if options.disable_threading || options.print_ir_module_scope {
        context.enable_multi_threading(false);
    }
    tool::set_print_op_on_diagnostic(&context, !options.verify_diagnostics);
    let collector = Collector::attach(&context);
    // Blank lines in front keep line numbers those of the whole file.
    let padded = format!(
        "{}{}",
        "\n".repeat(chunk.first_line as usize - 1),
        chunk.text
    );
    let output = transform(&context, options, pass_flags, name, &padded);
    ChunkOutcome {
        output,
        diagnostics: collector.take(),
    }
}

fn printing_flags(options: &Options) -> OperationPrintingFlags {
    let mut flags = OperationPrintingFlags::new();
    if options.print_debuginfo || options.pretty_debuginfo {
        flags = flags.enable_debug_info(true, options.pretty_debuginfo);
    }
    if options.print_op_generic {
        flags = flags.print_generic_operation_form();
    }
    if options.print_local_scope {
        flags = flags.use_local_scope();
    }
    flags
}

fn transform(
    context: &melior::Context,
    options: &Options,
    pass_flags: &[PassFlag],
    name: &str,
    text: &str,
) -> Option<String> {
    let mut module = tool::parse_module(context, text, name)?;
    let pass_manager = PassManager::new(context);
    pass_manager.enable_verifier(options.verify_each);
    build_pipeline(&pass_manager, options, pass_flags).ok()?;
    let printing = IrPrinting {
        before_all: options.print_ir_before_all,
        after_all: options.print_ir_after_all,
        before: options.print_ir_before.clone(),
        after: options.print_ir_after.clone(),
        module_scope: options.print_ir_module_scope,
        after_only_on_change: options.print_ir_after_change,
    };
    if printing.is_enabled() {
        tool::enable_ir_printing(&pass_manager, &printing, &printing_flags(options));
    }
    if options.timing {
        // SAFETY: the pass manager is alive; timing prints when it is dropped.
        unsafe { mlir_sys::mlirPassManagerEnableTiming(pass_manager.to_raw()) };
    }
    let checked = match &options.check_semantics {
        Some(arguments) => {
            let arguments: Vec<String> = arguments.split_whitespace().map(String::from).collect();
            let before = semantics::interpret(&module, &arguments, "input", name, text)?;
            Some((arguments, before))
        }
        None => None,
    };
    pass_manager.run(&mut module).ok()?;
    drop(pass_manager);
    if let Some((arguments, before)) = checked {
        let after = semantics::interpret(&module, &arguments, "output", name, text)?;
        if let Err(difference) = pgpu_interp::compare_outcomes(&before, &after) {
            eprintln!("{name}: error: semantic check failed: {difference}");
            return None;
        }
    }
    let printed = module
        .as_operation()
        .to_string_with_flags(printing_flags(options))
        .ok()?;
    Some(format!("{}\n", printed.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_line_numbers() {
        let chunks = split_input("a\nb\n// -----\nc\n  // -----  \nd", "// -----");
        let lines: Vec<u32> = chunks.iter().map(|chunk| chunk.first_line).collect();
        assert_eq!(lines, [1, 4, 6]);
        assert_eq!(chunks[1].text, "c\n");
        assert_eq!(chunks[2].text, "d");
    }

    #[test]
    fn pass_flags_are_separated_from_tool_options() {
        let _ = tool::create_context(PGPU_PASS_CRATES);
        let arguments = [
            "pgpu-opt",
            "-split-input-file",
            "--cse",
            "--canonicalize=\"max-iterations=2\"",
            "-o",
            "out",
            "in.mlir",
        ];
        let (tool_arguments, flags) =
            split_arguments(arguments.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            tool_arguments,
            ["pgpu-opt", "--split-input-file", "-o", "out", "in.mlir"]
        );
        let names: Vec<(&str, &str)> = flags
            .iter()
            .map(|f| (f.name.as_str(), f.options.as_str()))
            .collect();
        assert_eq!(names, [("cse", ""), ("canonicalize", "max-iterations=2")]);
    }
}
