//! `pgpu`: the driver for users.
//!
//! * `pgpu compile FILE -o PROG [--target cpu|cuda] [--chip sm_XX] [-O N]`
//!   compiles FILE (MLIR; BSGP source for `.bsgp`; C-subset source for
//!   `.c`) to a native executable (`compile.rs`, docs/backends.md);
//!   `--print-pipeline` shows the pass pipeline as one replayable line,
//!   `--unchecked` leaves out the run-time checks.
//! * `pgpu run FILE [-- ARGS...]` compiles FILE into a temporary directory,
//!   runs it with ARGS and exits with its status; `--interpret` runs `@main`
//!   with the reference interpreter (`pgpu-interp`) instead, which reports a
//!   run-time error as `file:line:col: error: ...` with the source line and
//!   exit status 1.
//! * `pgpu emit FILE --stage pgpu|supersteps|kernels|lowered|llvm|ptx|amdgcn`
//!   prints the module at that stage: the frontend's output
//!   (docs/frontend-ir.md; after `--passes` when given), after the
//!   pipelines of `pgpu-kernel-passes`, the LLVM dialect, the optimized
//!   host LLVM IR, the kernels' PTX (cuda target), or their AMDGCN
//!   assembly (AMDGPU backend, `--chip gfxNNN`, `--wave`);
//!   `--print-pipeline` prints the pipeline that leads there.
//!
//! * `pgpu perf-model FILE [-- ARGS]` predicts each kernel's time with the
//!   Petri-net model (table, `--dot`, `--emit-net`; a `.pn` net is
//!   simulated), and `pgpu perf-calibrate` fits its steps-to-seconds
//!   scale to measurements (`perf_model.rs`).
//!
//! Source languages are chosen by file extension in `load_module`: a
//! frontend of the plugin registry first (`pgpu_plugin`: `--load-plugin`
//! libraries, or those a crate built in through [`main_with`]), then the
//! built-in ones. `pgpu compile --backend NAME` compiles with a registered
//! backend instead of the native targets. `--passes PIPELINE` runs more
//! passes (a registry's, upstream's, ours) on the frontend's IR before
//! the built-in pipeline, in every command that compiles or interprets.
//!
//! The driver is a library so that a crate can build its own `pgpu` with
//! plugins registered at build time: `pgpu::main_with(registry)`.

use clap::{Parser, Subcommand, ValueEnum};
use melior::{Context, ir::Module, ir::operation::OperationLike};
use pgpu_pass_infra::diagnostics::{Collector, SourceText};
use pgpu_pass_infra::tool;
pub use pgpu_plugin::Registry;
use std::path::Path;
use std::process::ExitCode;

mod compile;
mod perf_model;
mod plugins;
mod run_ptx;

#[derive(Parser, Debug)]
#[command(
    name = "pgpu",
    version,
    about = "The pgpu driver: compile, run and emit programs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Explain how each memory access of a `#pragma pgpu speculate` loop is
    /// classified (direct or speculative) and why, as remarks.
    #[arg(long = "pgpu-remark-speculation", global = true)]
    remark_speculation: bool,
    /// Load a plugin library (frontends and backends; see the
    /// `pgpu-plugin` crate) before anything else.
    #[arg(long = "load-plugin", global = true, value_name = "PATH")]
    load_plugin: Vec<String>,
}

/// `--pgpu-remark-speculation`.
static REMARK_SPECULATION: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[derive(Subcommand, Debug)]
enum Command {
    /// Compile a program to a native executable.
    Compile {
        /// The program: `.mlir`, `.bsgp` (BSGP source) or `.c` (C-subset source).
        file: String,
        /// The executable to write.
        #[arg(short = 'o', long = "output")]
        output: String,
        #[command(flatten)]
        native: compile::NativeOptions,
        /// Print the pass pipeline to stderr, as one line that `pgpu-opt
        /// --pass-pipeline=` replays on `pgpu emit --stage pgpu
        /// --debug-info` (giving `pgpu emit --stage lowered`).
        #[arg(long = "print-pipeline")]
        print_pipeline: bool,
        /// Compile with this registered backend (a plugin's) instead of a
        /// native target: OUTPUT is then its artifact.
        #[arg(long, value_name = "NAME")]
        backend: Option<String>,
    },
    /// Compile and run a program (or interpret it) and exit with its status.
    Run {
        /// Run `@main` with the reference interpreter instead of compiling.
        #[arg(long)]
        interpret: bool,
        /// The device of a compiled program (passed on as `--device`):
        /// `cpu` or `cuda`; by default the program's own choice.
        #[arg(long)]
        device: Option<String>,
        #[command(flatten)]
        native: compile::NativeOptions,
        /// Do not check data races between SPMD threads.
        #[arg(long = "no-race-check", requires = "interpret")]
        no_race_check: bool,
        /// Stop with an error after this many executed operations (0: no limit).
        #[arg(long = "max-steps", default_value_t = 0, requires = "interpret")]
        max_steps: u64,
        /// The entry function.
        #[arg(long, default_value = "main", requires = "interpret")]
        entry: String,
        /// Print every executed operation (location, thread, name) to stderr.
        #[arg(long, requires = "interpret")]
        trace: bool,
        /// The program: `.mlir`, `.bsgp` (BSGP source) or `.c` (C-subset source).
        file: String,
        /// Program arguments (read by `argi`), after `--`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Run a kernel of a PTX file on the CPU with the lockstep semantics
    /// of 32- or 64-lane waves, and print its buffers afterwards.
    #[command(name = "run-ptx")]
    RunPtx(run_ptx::RunPtxOptions),
    /// Predict each kernel's time with the Petri-net GPU model (or
    /// simulate a net given in the `.pn` text format).
    #[command(name = "perf-model")]
    PerfModel(perf_model::PerfModelOptions),
    /// Fit the perf model's steps-to-seconds scale to measured kernels and
    /// write it to a calibration file.
    #[command(name = "perf-calibrate")]
    PerfCalibrate(perf_model::CalibrateOptions),
    /// Print the program at a stage of the pipeline.
    Emit {
        /// The program: `.mlir`, `.bsgp` (BSGP source) or `.c` (C-subset source).
        file: String,
        /// The stage to print.
        #[arg(long, value_enum, default_value_t = Stage::Pgpu)]
        stage: Stage,
        /// Print locations.
        #[arg(long = "debug-info")]
        debug_info: bool,
        /// Print operations in MLIR's generic form. With `--debug-info`
        /// that keeps every location (custom forms leave out some block
        /// arguments'), which an exact replay with `pgpu-opt` needs.
        #[arg(long)]
        generic: bool,
        /// Print the pass pipeline from the `pgpu` stage to this one to
        /// stderr, as one line for `pgpu-opt --pass-pipeline=`.
        #[arg(long = "print-pipeline")]
        print_pipeline: bool,
        #[command(flatten)]
        native: compile::NativeOptions,
    },
}

/// Pipeline stages `emit` can print.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Stage {
    /// The frontend's output: pgpu dialect plus upstream ops.
    Pgpu,
    /// After inlining, superstep formation and value saving.
    Supersteps,
    /// Host code plus one kernel (`scf.parallel`) per superstep.
    Kernels,
    /// The LLVM dialect module the target's lowering makes (what `pgpu
    /// compile` translates to LLVM IR; for cuda, with the kernels' PTX).
    Lowered,
    /// The optimized LLVM IR of the executable's host code.
    Llvm,
    /// The PTX of the kernels (the cuda target's).
    Ptx,
    /// The AMDGCN assembly of the kernels (upstream's rocdl path).
    Amdgcn,
}

impl Stage {
    /// The textual pipeline from the `pgpu` stage to this one, `--passes`
    /// first; `None` when nothing runs.
    fn pipeline(self, native: &compile::NativeOptions) -> Result<Option<String>, ()> {
        let ours = match self {
            Stage::Pgpu => "builtin.module()",
            Stage::Supersteps => pgpu_kernel_passes::SUPERSTEP_PIPELINE,
            Stage::Kernels | Stage::Lowered | Stage::Llvm | Stage::Ptx => {
                return native.kernel_pipeline().map(Some);
            }
            Stage::Amdgcn => return native.amdgpu_kernel_pipeline().map(Some),
        };
        let pipeline = native.after_passes(ours)?;
        Ok((pipeline != "builtin.module()").then_some(pipeline))
    }

    /// The whole textual pipeline from the `pgpu` stage to this one (for
    /// `llvm`, `ptx` and `amdgcn`: to the module they are taken from).
    fn full_pipeline(
        self,
        native: &compile::NativeOptions,
        amdgpu: Option<&pgpu_backend_amdgpu::Options>,
    ) -> Result<String, ()> {
        let kernels = self.pipeline(native)?.unwrap_or_default();
        let rest = match (self, amdgpu) {
            (Stage::Lowered | Stage::Llvm, _) => compile::Native::new(native)?.lowering_pipeline(),
            (Stage::Ptx, _) => compile::Native::new(native)?.cuda_pipeline(),
            (Stage::Amdgcn, Some(amdgpu)) => compile::amdgcn_pipeline(amdgpu, !native.unchecked),
            _ => String::new(),
        };
        let parts: Vec<&str> = [kernels.as_str(), rest.as_str()]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect();
        compile::joined(&parts)
    }
}

/// The driver with the frontends, backends and passes of `registry` (and
/// of the plugin libraries the command line loads) besides its own.
pub fn main_with(mut registry: Registry) -> ExitCode {
    let cli = match pgpu_opt::cli::arguments().and_then(pgpu_opt::cli::parse::<Cli>) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    REMARK_SPECULATION.store(cli.remark_speculation, std::sync::atomic::Ordering::Relaxed);
    for path in &cli.load_plugin {
        if let Err(message) = registry.load(path) {
            eprintln!("error: cannot load the plugin '{path}': {message}");
            return ExitCode::FAILURE;
        }
    }
    plugins::install(registry);
    match cli.command {
        Command::Compile {
            file,
            output,
            native,
            print_pipeline,
            backend: Some(backend),
        } => exit_code(plugins::compile_with(
            &backend,
            &file,
            Path::new(&output),
            &native,
            print_pipeline,
        )),
        Command::Compile {
            file,
            output,
            native,
            print_pipeline,
            backend: None,
        } => exit_code(compile::compile_file(
            &file,
            Path::new(&output),
            &native,
            print_pipeline,
        )),
        Command::Run {
            interpret: false,
            device,
            native,
            file,
            args,
            ..
        } => {
            let mut args = args;
            if let Some(device) = device {
                args.splice(0..0, ["--device".to_string(), device]);
            }
            match compile::run_native(&file, &native, &args) {
                Ok(code) => std::process::exit(code),
                Err(()) => ExitCode::FAILURE,
            }
        }
        Command::Run {
            interpret: true,
            no_race_check,
            max_steps,
            entry,
            trace,
            file,
            args,
            native,
            ..
        } => {
            let options = pgpu_interp::Options {
                race_detection: !no_race_check,
                echo_stdout: true,
                max_steps,
                trace,
                ..pgpu_interp::Options::default()
            };
            match run(&file, &entry, &args, &options, &native) {
                Ok(code) => std::process::exit(code),
                Err(()) => ExitCode::FAILURE,
            }
        }
        Command::PerfModel(options) => exit_code(perf_model::perf_model(&options)),
        Command::PerfCalibrate(options) => exit_code(perf_model::calibrate(&options)),
        Command::RunPtx(options) => exit_code(run_ptx::run_ptx(&options)),
        Command::Emit {
            file,
            stage,
            debug_info,
            generic,
            print_pipeline,
            native,
        } => exit_code(emit(
            &file,
            stage,
            Printing {
                debug_info,
                generic,
                print_pipeline,
            },
            &native,
        )),
    }
}

/// The exit status of a command whose errors are already printed.
fn exit_code(outcome: Result<(), ()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(()) => ExitCode::FAILURE,
    }
}

fn print_diagnostics(diagnostics: Vec<pgpu_csubset::Diagnostic>, name: &str, text: &str) {
    for diagnostic in diagnostics {
        eprintln!("{:?}", diagnostic.with_source(name, text));
    }
}

/// Loads FILE into a module of `context`, printing diagnostics on failure.
/// The extension picks the frontend: `.bsgp` is BSGP source
/// (`pgpu_bsgp::compile_to_module`), `.fork` Fork source
/// (`pgpu_fork::compile_to_module`), `.c` the plain C subset, anything else
/// MLIR text. A source program's speculative loops then get their accesses
/// classified (`pgpu-classify-speculation`, part of the frontend: a loop
/// that cannot be speculated is an error on every path).
fn load_module<'c>(context: &'c Context, name: &str, text: &str) -> Result<Module<'c>, ()> {
    let mut module = load_source(context, name, text)?;
    let is_source = [".bsgp", ".fork", ".c"]
        .iter()
        .any(|extension| name.ends_with(extension));
    if is_source && has_op(&module, "pgpu.spec.loop") {
        let remarks = REMARK_SPECULATION.load(std::sync::atomic::Ordering::Relaxed);
        let pipeline = format!("builtin.module(pgpu-classify-speculation{{remarks={remarks}}})");
        run_pipeline(context, &mut module, &pipeline, name, text)?;
    }
    Ok(module)
}

/// Whether `module` has an op named `name`.
fn has_op(module: &Module, name: &str) -> bool {
    use melior::ir::operation::{WalkOrder, WalkResult};
    let mut found = false;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        found = op.name().as_string_ref().as_str() == Ok(name);
        if found {
            WalkResult::Interrupt
        } else {
            WalkResult::Advance
        }
    });
    found
}

/// The frontend's module of FILE (see [`load_module`]).
fn load_source<'c>(context: &'c Context, name: &str, text: &str) -> Result<Module<'c>, ()> {
    if let Some(frontend) = plugins::registry().frontend_for(name) {
        return plugins::translate(frontend, context, name, text);
    }
    if name.ends_with(".bsgp") {
        return pgpu_bsgp::compile_to_module(context, name, text)
            .map_err(|diagnostics| print_diagnostics(diagnostics, name, text));
    }
    if name.ends_with(".fork") {
        return pgpu_fork::compile_to_module(context, name, text)
            .map_err(|diagnostics| print_diagnostics(diagnostics, name, text));
    }
    if name.ends_with(".c") {
        let checked = pgpu_csubset::check_source(name, text, pgpu_csubset::Language::C);
        let Some(hir) = checked
            .hir
            .filter(|_| !checked.diagnostics.iter().any(|d| d.is_error()))
        else {
            print_diagnostics(checked.diagnostics, name, text);
            return Err(());
        };
        pgpu_bsgp::load_dialects(context);
        let extension = pgpu_csubset::lower::NoExtension;
        return pgpu_csubset::lower::lower_hir(context, &hir, &extension, name, text)
            .map_err(|diagnostics| print_diagnostics(diagnostics, name, text));
    }
    let collector = Collector::attach(context);
    let module = tool::parse_module(context, text, name);
    let source = SourceText { name, text };
    for record in collector.take() {
        eprint!("{}", record.render(&source));
    }
    module.ok_or(())
}

fn read(file: &str) -> Result<(String, String), ()> {
    tool::read_input(file).map_err(|error| eprintln!("{:?}", miette::Report::new(error)))
}

/// `pgpu run --interpret`: the `pgpu` stage (after `--passes`) in the
/// reference interpreter.
fn run(
    file: &str,
    entry: &str,
    args: &[String],
    options: &pgpu_interp::Options,
    native: &compile::NativeOptions,
) -> Result<i32, ()> {
    pgpu_opt::cli::set_report_style();
    let (name, text) = read(file)?;
    let context = plugins::create_context();
    let mut module = load_module(&context, &name, &text)?;
    if let Some(pipeline) = Stage::Pgpu.pipeline(native)? {
        run_pipeline(&context, &mut module, &pipeline, &name, &text)?;
    }
    match pgpu_interp::run_module(&module, entry, args, options) {
        Ok(outcome) => Ok(outcome.exit_code),
        Err(error) => {
            use std::io::Write;
            let _ = std::io::stdout().flush();
            let source = SourceText {
                name: &name,
                text: &text,
            };
            eprint!("{}", error.to_record().render(&source));
            Err(())
        }
    }
}

/// Runs `pipeline` on `module`, printing diagnostics against the source.
fn run_pipeline(
    context: &Context,
    module: &mut Module,
    pipeline: &str,
    name: &str,
    text: &str,
) -> Result<(), ()> {
    let collector = Collector::attach(context);
    let pass_manager = melior::pass::PassManager::new(context);
    let outcome =
        melior::utility::parse_pass_pipeline(pass_manager.as_operation_pass_manager(), pipeline)
            .and_then(|()| pass_manager.run(module));
    let source = SourceText { name, text };
    for record in collector.take() {
        eprint!("{}", record.render(&source));
    }
    outcome.map_err(|error| eprintln!("error: the {pipeline} pipeline failed: {error}"))
}

/// How `emit` prints.
struct Printing {
    debug_info: bool,
    generic: bool,
    print_pipeline: bool,
}

fn emit(
    file: &str,
    stage: Stage,
    printing: Printing,
    native: &compile::NativeOptions,
) -> Result<(), ()> {
    let amdgpu = if let Stage::Amdgcn = stage {
        Some(native.amdgpu()?)
    } else {
        native.validate()?;
        None
    };
    if printing.print_pipeline {
        eprintln!("{}", stage.full_pipeline(native, amdgpu.as_ref())?);
    }
    let (name, text) = read(file)?;
    let context = plugins::create_context();
    let mut module = load_module(&context, &name, &text)?;
    if let Some(pipeline) = stage.pipeline(native)? {
        run_pipeline(&context, &mut module, &pipeline, &name, &text)?;
    }
    if let Stage::Llvm = stage {
        let llvm = compile::Native::new(native)?;
        let ir = llvm.to_llvm_ir(&context, &mut module, &name, &text)?;
        return write_stdout(&ir);
    }
    if let Some(amdgpu) = amdgpu {
        let assembly = compile::to_amdgcn(
            &amdgpu,
            !native.unchecked,
            &context,
            &mut module,
            &name,
            &text,
        )?;
        return write_stdout(&assembly);
    }
    if let Stage::Lowered = stage {
        let lowering = compile::Native::new(native)?.lowering_pipeline();
        run_pipeline(&context, &mut module, &lowering, &name, &text)?;
    }
    if let Stage::Ptx = stage {
        let ptx = compile::Native::new(native)?.to_ptx(&context, &mut module, &name, &text)?;
        return write_stdout(&ptx);
    }
    let mut flags = melior::ir::operation::OperationPrintingFlags::new()
        .enable_debug_info(printing.debug_info, false);
    if printing.generic {
        flags = flags.print_generic_operation_form();
    }
    let printed = module
        .as_operation()
        .to_string_with_flags(flags)
        .map_err(|error| eprintln!("error: cannot print the module: {error}"))?;
    write_stdout(&format!("{}\n", printed.trim_end()))
}

/// Writes `text` to standard output; a reader that went away (a closed
/// pipe, as with `| head`) is not an error.
fn write_stdout(text: &str) -> Result<(), ()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write the output: {error}");
            Err(())
        }
        _ => Ok(()),
    }
}
