//! `pgpu-translate`: translations between the levels and formats of pgpu.
//!
//! `--bsgp-to-mlir` parses, checks and lowers a BSGP source file to pgpu IR
//! (docs/frontend-ir.md) and prints it (`--mlir-print-debuginfo` adds the
//! source locations); diagnostics are rendered with miette and make the tool
//! exit with status 1.
//!
//! `--pgpu-to-ptx` runs the NVPTX backend's pipeline on pgpu IR (printable
//! with `--print-pipeline`, replayable with `pgpu-opt --pass-pipeline=`) and
//! writes the PTX of the resulting kernels. `--pgpu-to-amdgcn --chip
//! gfxNNN` runs the AMDGPU backend's pipeline (upstream's rocdl path) the
//! same way and writes AMDGCN assembly.

use clap::Parser;
use melior::pass::PassManager;
use miette::Diagnostic;
use pgpu_backend_nvptx as nvptx;
use pgpu_pass_infra::{
    diagnostics::{Collector, SourceText},
    tool::{self, FileError, read_input, write_output},
};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "pgpu-translate",
    version,
    about = "Translate pgpu IR between levels and formats"
)]
struct Options {
    /// Input file, or `-` for standard input.
    #[arg(default_value = "-")]
    input: String,
    /// Output file, or `-` for standard output.
    #[arg(short = 'o', default_value = "-")]
    output: String,
    /// Lower a BSGP source file to pgpu IR.
    #[arg(long = "bsgp-to-mlir")]
    bsgp_to_mlir: bool,
    /// Print the source locations of the ops (with --bsgp-to-mlir).
    #[arg(long = "mlir-print-debuginfo")]
    print_debuginfo: bool,
    /// Compile pgpu IR to PTX with the NVPTX backend.
    #[arg(long = "pgpu-to-ptx")]
    pgpu_to_ptx: bool,
    /// Compile pgpu IR to AMDGCN assembly with the AMDGPU backend
    /// (upstream's rocdl path; `--chip gfx942`, `--wave`).
    #[arg(long = "pgpu-to-amdgcn")]
    pgpu_to_amdgcn: bool,
    /// The chip to generate code for: NVIDIA's `sm_XX`, or AMD's `gfxNNN`
    /// with --pgpu-to-amdgcn and --ptx-to-amdgpu.
    #[arg(long, default_value = "sm_90")]
    chip: String,
    /// Threads per block for lowered SPMD regions.
    #[arg(long = "block-size", default_value_t = 256)]
    block_size: u32,
    /// LLVM optimization level.
    #[arg(long = "opt-level", default_value_t = 3)]
    opt_level: u8,
    /// Parse and check PTX, and print it back (canonical layout).
    #[arg(long = "ptx-to-ptx")]
    ptx_to_ptx: bool,
    /// With --ptx-to-ptx: also parse the printed text and fail unless it
    /// gives the same IR.
    #[arg(long = "verify-roundtrip")]
    verify_roundtrip: bool,
    /// With --ptx-to-ptx: the input holds several modules, each starting
    /// after a line that begins with `// -----`; each is translated on its
    /// own and the outputs are joined by `// -----` lines.
    #[arg(long = "split-input-file")]
    split_input_file: bool,
    /// Translate PTX to LLVM IR for the host CPU: each kernel runs one
    /// wave in lockstep (`pgpu run-ptx` executes it).
    #[arg(long = "ptx-to-cpu")]
    ptx_to_cpu: bool,
    /// Lanes per wave: 32 or 64 (--ptx-to-cpu: default 32;
    /// --ptx-to-amdgpu: default the chip's, 64 for gfx9, 32 for gfx10+).
    #[arg(long)]
    wave: Option<u32>,
    /// Translate PTX to an AMD GPU (`--chip gfx942`, `gfx90a`, `gfx1100`,
    /// ...): an HSA code object, or with -S AMDGCN assembly.
    #[arg(long = "ptx-to-amdgpu")]
    ptx_to_amdgpu: bool,
    /// With --ptx-to-amdgpu: write AMDGCN assembly instead of a code object.
    #[arg(short = 'S')]
    assembly: bool,
    /// With --ptx-to-amdgpu: write the optimized LLVM IR instead.
    #[arg(long = "emit-llvm")]
    emit_llvm: bool,
    /// Print the textual pass pipeline of the translation and exit.
    #[arg(long = "print-pipeline")]
    print_pipeline: bool,
}

#[derive(Debug, thiserror::Error, Diagnostic)]
enum TranslateError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    #[diagnostic(code(pgpu_translate::target))]
    Target(#[from] nvptx::OptionsError),
    #[error(transparent)]
    #[diagnostic(code(pgpu_translate::target))]
    AmdgpuTarget(#[from] pgpu_backend_amdgpu::OptionsError),
    #[error("no translation chosen")]
    #[diagnostic(
        code(pgpu_translate::usage),
        help(
            "pass --bsgp-to-mlir, --pgpu-to-ptx, --pgpu-to-amdgcn, --ptx-to-ptx, --ptx-to-cpu or --ptx-to-amdgpu"
        )
    )]
    NoTranslation,
    #[error("--wave {0}: waves have 32 or 64 lanes")]
    #[diagnostic(code(pgpu_translate::wave))]
    Wave(u32),
    #[error("the AMDGPU translations need an AMD chip such as --chip gfx942 (not `{0}`)")]
    #[diagnostic(code(pgpu_translate::chip))]
    Chip(String),
    #[error("a code object is binary: give -o FILE (or -S for assembly)")]
    #[diagnostic(code(pgpu_translate::binary_output))]
    BinaryToStdout,
    #[error("the printed PTX does not parse back to the same module")]
    #[diagnostic(
        code(pgpu_translate::roundtrip),
        help("this is a bug in the PTX printer or parser")
    )]
    Roundtrip,
    #[error("the input has no kernels: nothing to translate")]
    #[diagnostic(
        code(pgpu_translate::no_kernels),
        help("PTX comes from pgpu.spawn regions or gpu.launch/gpu.module ops")
    )]
    NoKernels,
}

fn main() -> ExitCode {
    pgpu_opt::cli::set_report_style();
    let options = match pgpu_opt::cli::arguments().and_then(pgpu_opt::cli::parse::<Options>) {
        Ok(options) => options,
        Err(code) => return code,
    };
    match run(&options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("{:?}", miette::Report::new(error));
            ExitCode::FAILURE
        }
    }
}

/// `Ok(false)` when the IR's own diagnostics (already printed) failed it.
fn run(options: &Options) -> Result<bool, TranslateError> {
    if options.bsgp_to_mlir {
        return bsgp_to_mlir(options);
    }
    if options.ptx_to_ptx {
        return ptx_to_ptx(options);
    }
    if options.ptx_to_cpu {
        return ptx_to_cpu(options);
    }
    if options.ptx_to_amdgpu {
        return ptx_to_amdgpu(options);
    }
    if options.pgpu_to_amdgcn {
        if !options.chip.starts_with("gfx") {
            return Err(TranslateError::Chip(options.chip.clone()));
        }
        let target = pgpu_backend_amdgpu::Options {
            chip: options.chip.clone(),
            wave: options.wave,
            block_size: options.block_size,
            opt_level: options.opt_level,
        };
        target.validate()?;
        return compile_kernels(options, &pgpu_backend_amdgpu::pipeline(&target));
    }
    if !options.pgpu_to_ptx {
        return Err(TranslateError::NoTranslation);
    }
    let target = nvptx::Options {
        chip: options.chip.clone(),
        block_size: options.block_size,
        opt_level: options.opt_level,
    };
    target.validate_syntax()?;
    compile_kernels(options, &nvptx::pipeline(&target))
}

/// Runs a backend's `pipeline` on pgpu IR and writes the code of every
/// `gpu.binary` (PTX or assembly), each after a `// ----- gpu.binary`
/// line when there are several.
fn compile_kernels(options: &Options, pipeline: &str) -> Result<bool, TranslateError> {
    if options.print_pipeline {
        write_output(&options.output, &format!("{pipeline}\n"))?;
        return Ok(true);
    }
    let (name, text) = read_input(&options.input)?;
    let context = tool::create_context(pgpu_opt::PGPU_PASS_CRATES);
    let collector = Collector::attach(&context);
    let source = SourceText {
        name: &name,
        text: &text,
    };
    let translated = tool::parse_module(&context, &text, &name).and_then(|mut module| {
        let pass_manager = PassManager::new(&context);
        melior::utility::parse_pass_pipeline(pass_manager.as_operation_pass_manager(), pipeline)
            .ok()?;
        pass_manager.run(&mut module).ok()?;
        Some(nvptx::extract_ptx(&module))
    });
    for record in collector.take() {
        eprint!("{}", record.render(&source));
    }
    let Some(kernels) = translated else {
        return Ok(false);
    };
    let ptx = match kernels.as_slice() {
        [] => return Err(TranslateError::NoKernels),
        [only] => only.ptx.clone(),
        several => several
            .iter()
            .map(|kernel| format!("// ----- gpu.binary @{}\n{}", kernel.name, kernel.ptx))
            .collect(),
    };
    write_output(&options.output, &ptx)?;
    Ok(true)
}

/// `--bsgp-to-mlir`: prints the lowered module, or renders the diagnostics
/// (all of them: front-end errors of every function, lowering errors) and
/// returns `Ok(false)`.
fn bsgp_to_mlir(options: &Options) -> Result<bool, TranslateError> {
    let (name, text) = read_input(&options.input)?;
    let context = pgpu_bsgp::create_context();
    let compiled = pgpu_bsgp::compile(&context, &name, &text);
    for diagnostic in &compiled.diagnostics {
        eprintln!("{:?}", diagnostic.clone().with_source(&name, &text));
    }
    let Some(module) = compiled.module else {
        return Ok(false);
    };
    let printed = pgpu_bsgp::print_module(&module, options.print_debuginfo);
    write_output(&options.output, &printed)?;
    Ok(true)
}

/// `--ptx-to-ptx`: parses and checks PTX and prints it; with
/// `--verify-roundtrip`, also checks that the printed text parses to the
/// same module. Diagnostics point into the input (with
/// `--split-input-file`, every module's are reported and nothing is
/// written unless all succeed).
fn ptx_to_ptx(options: &Options) -> Result<bool, TranslateError> {
    let (name, text) = read_input(&options.input)?;
    let chunks = if options.split_input_file {
        split_ptx_input(&text)
    } else {
        vec![text.clone()]
    };
    let mut printed = Vec::new();
    let mut failed = false;
    for chunk in chunks {
        let module = match pgpu_ptx::parse_and_check(&chunk) {
            Ok(module) => module,
            Err(error) => {
                let report = miette::Report::new(error)
                    .with_source_code(miette::NamedSource::new(&name, text.clone()));
                eprintln!("{report:?}");
                failed = true;
                continue;
            }
        };
        let text = pgpu_ptx::print(&module);
        if options.verify_roundtrip && pgpu_ptx::parse(&text).ok().as_ref() != Some(&module) {
            return Err(TranslateError::Roundtrip);
        }
        printed.push(text);
    }
    if failed {
        return Ok(false);
    }
    write_output(&options.output, &printed.join("// -----\n"))?;
    Ok(true)
}

/// The modules of a split input, each as the whole text with every other
/// module's bytes blanked (newlines kept), so that spans and line numbers
/// are those of the input.
fn split_ptx_input(text: &str) -> Vec<String> {
    let mut starts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("// -----") && offset > 0 {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts.push(text.len());
    starts
        .windows(2)
        .map(|range| {
            text.char_indices()
                .map(|(at, c)| {
                    if (range[0]..range[1]).contains(&at) || c == '\n' {
                        c
                    } else {
                        ' '
                    }
                })
                .collect()
        })
        .collect()
}

/// `--ptx-to-cpu`: the LLVM IR of the CPU wave emulation of every kernel.
fn ptx_to_cpu(options: &Options) -> Result<bool, TranslateError> {
    let wave = options.wave.unwrap_or(32);
    if !matches!(wave, 32 | 64) {
        return Err(TranslateError::Wave(wave));
    }
    let (name, text) = read_input(&options.input)?;
    let render = |report: miette::Report| render_ptx_report(report, &name, &text);
    let Some(module) = parse_ptx(&text, render) else {
        return Ok(false);
    };
    let context = pgpu_ptx_llvm::inkwell::context::Context::create();
    match pgpu_ptx_llvm::cpu::translate(&context, &module, wave) {
        Ok(translated) => {
            write_output(
                &options.output,
                &translated.module.print_to_string().to_string(),
            )?;
            Ok(true)
        }
        Err(error) => {
            render(miette::Report::new(error));
            Ok(false)
        }
    }
}

/// `--ptx-to-amdgpu`: an HSA code object (or `-S` assembly, or
/// `--emit-llvm` IR) of every kernel, for `--chip`.
fn ptx_to_amdgpu(options: &Options) -> Result<bool, TranslateError> {
    if !options.chip.starts_with("gfx") {
        return Err(TranslateError::Chip(options.chip.clone()));
    }
    if let Some(wave) = options.wave
        && !matches!(wave, 32 | 64)
    {
        return Err(TranslateError::Wave(wave));
    }
    let binary = !options.assembly && !options.emit_llvm;
    if binary && options.output == "-" {
        return Err(TranslateError::BinaryToStdout);
    }
    let (name, text) = read_input(&options.input)?;
    let render = |report: miette::Report| render_ptx_report(report, &name, &text);
    let Some(module) = parse_ptx(&text, render) else {
        return Ok(false);
    };
    let context = pgpu_ptx_llvm::inkwell::context::Context::create();
    let mut translated =
        match pgpu_ptx_llvm::amdgpu::translate(&context, &module, &options.chip, options.wave) {
            Ok(translated) => translated,
            Err(error) => {
                render(miette::Report::new(error));
                return Ok(false);
            }
        };
    if let Err(error) = translated.optimize() {
        render(miette::Report::new(error));
        return Ok(false);
    }
    let written = if options.emit_llvm {
        write_output(
            &options.output,
            &translated.module.print_to_string().to_string(),
        )
        .map_err(TranslateError::from)
    } else if options.assembly {
        match translated.assembly() {
            Ok(text) => write_output(&options.output, &text).map_err(TranslateError::from),
            Err(error) => {
                render(miette::Report::new(error));
                return Ok(false);
            }
        }
    } else {
        match translated.write_code_object(std::path::Path::new(&options.output)) {
            Ok(()) => Ok(()),
            Err(error) => {
                render(miette::Report::new(error));
                return Ok(false);
            }
        }
    };
    written.map(|()| true)
}

/// Prints a diagnostic about the PTX file `name` with its text.
fn render_ptx_report(report: miette::Report, name: &str, text: &str) {
    eprintln!(
        "{:?}",
        report.with_source_code(miette::NamedSource::new(name, text.to_string()))
    );
}

/// Parses and checks PTX; None (after rendering the error) when it fails.
fn parse_ptx(text: &str, render: impl Fn(miette::Report)) -> Option<pgpu_ptx::ir::Module> {
    pgpu_ptx::parse_and_check(text)
        .map_err(|error| render(miette::Report::new(error)))
        .ok()
}
