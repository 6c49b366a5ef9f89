//! Native compilation in the driver: `pgpu compile`, `pgpu run` and
//! `pgpu emit --stage llvm`.
//!
//! The program goes through the kernel pipeline
//! (`pgpu_kernel_passes::kernel_pipeline`), the target's lowering to the
//! LLVM dialect (`pgpu_backend_host::cpu_pipeline`), MLIR's translation to
//! LLVM IR, LLVM's optimizer and code generator for the host, and the link
//! with the runtime library (`pgpu_backend_host::link`). Every step runs in
//! this process except the link (`cc`); the object file lives in a
//! temporary directory, and the executable appears only when all steps
//! succeeded.

use crate::{load_module, read, run_pipeline};
use clap::ValueEnum;
use melior::utility::parse_pass_pipeline;
use melior::{Context, ir::Module};
use pgpu_backend_host::{HostError, Machine, link};
use pgpu_pass_infra::diagnostics::{Collector, SourceText};
use pgpu_pass_infra::tool;
use std::path::Path;

/// The device code is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// Kernels run on the CPU's cores (the runtime's thread pool).
    Cpu,
    /// Kernels run on a CUDA GPU (PTX for `--chip`), or on the CPU when
    /// no GPU is usable or the program is run with `--device cpu`.
    Cuda,
}

/// Options of native compilation, shared by `compile`, `run` and `emit`.
#[derive(clap::Args, Debug, Clone)]
pub struct NativeOptions {
    /// The target device of the executable.
    #[arg(long, value_enum, default_value_t = Target::Cpu)]
    pub target: Target,
    /// The chip: NVIDIA's `sm_XX` for the cuda target (default sm_90), or
    /// AMD's `gfxNNN` for `emit --stage amdgcn` (default gfx942).
    #[arg(long)]
    pub chip: Option<String>,
    /// Lanes per wave of `emit --stage amdgcn` (32 or 64; default the
    /// chip's: 64 for gfx9, 32 for gfx10 and later).
    #[arg(long)]
    pub wave: Option<u32>,
    /// LLVM optimization level of the generated code (0 to 3).
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
    /// Leave out the run-time checks (bounds of every list access), which
    /// report a failing kernel's name and source line.
    #[arg(long)]
    pub unchecked: bool,
    /// Run spawns whose barriers need no host code between kernels as one
    /// kernel with grid-wide barriers when their threads fit the GPU at
    /// once (a cooperative launch; cuda target; `pgpu-grid-fuse`).
    #[arg(long)]
    pub grid_barriers: bool,
    /// Keep every Fork group call on the host path, also groups that fit
    /// one thread block (cuda target; without it such a call runs, its
    /// recursion included, as one kernel: `pgpu-block-groups`).
    #[arg(long)]
    pub no_block_groups: bool,
    /// The largest Fork group that runs in one thread block (1 to 1024):
    /// smaller ones leave more multiprocessors to their sibling groups,
    /// larger ones save launches.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub block_threads: u64,
    /// Choose each kernel's block size with the Petri-net performance
    /// model (`pgpu-model-block-size`; cuda target), with a remark per
    /// kernel. Kernels whose thread count depends on the program's
    /// arguments are chosen for `--model-args`, or left to the runtime.
    #[arg(long)]
    pub model_block_size: bool,
    /// The program's arguments the model's choices are tuned for
    /// (comma-separated integers, as `pgpu.argi` reads them).
    #[arg(long, requires = "model_block_size", value_name = "ARGS")]
    pub model_args: Option<String>,
    /// A calibration file (`pgpu perf-calibrate`) whose latencies the
    /// model predicts with (the device's fitted l1 and l2).
    #[arg(long, requires = "model_block_size", value_name = "FILE")]
    pub model_calibration: Option<String>,
    /// Make every kernel record its multiprocessors' first and last cycle
    /// (cuda target; `pgpu-count-sm-cycles`): with `PGPU_PROFILE=kernels`
    /// the profile then also reports each kernel's busiest multiprocessor
    /// span in cycles, without the launch's own time.
    #[arg(long)]
    pub count_sm_cycles: bool,
    /// Passes to run on the frontend's IR before the built-in pipeline,
    /// as a textual pipeline (`pgpu-fuse-spawns,cse` or
    /// `builtin.module(...)`): any registered pass, a plugin's or one built
    /// in with `main_with` included. `--print-pipeline` prints them too.
    #[arg(long, value_name = "PIPELINE")]
    pub passes: Option<String>,
}

impl NativeOptions {
    /// An error for options that do not go together.
    pub fn validate(&self) -> Result<(), ()> {
        if self.grid_barriers && self.target != Target::Cuda {
            eprintln!(
                "error: --grid-barriers needs --target cuda (the cpu device has no grid barriers)"
            );
            return Err(());
        }
        if self.count_sm_cycles && self.target != Target::Cuda {
            eprintln!("error: --count-sm-cycles needs --target cuda (it counts the GPU's cycles)");
            return Err(());
        }
        if self.model_block_size && self.target != Target::Cuda {
            eprintln!("error: --model-block-size needs --target cuda (block sizes are the GPU's)");
            return Err(());
        }
        if let Some(args) = &self.model_args
            && let Some(bad) = args
                .split(',')
                .map(str::trim)
                .find(|arg| arg.parse::<i64>().is_err())
        {
            eprintln!("error: --model-args: '{bad}' is not an integer");
            return Err(());
        }
        if let Some(path) = &self.model_calibration {
            // The path goes into a textual pass option.
            if path.contains([' ', '{', '}', '=', '\'', '"']) {
                eprintln!(
                    "error: --model-calibration: '{path}' has a space, brace, quote or '=', which a pass option cannot hold"
                );
                return Err(());
            }
            if let Err(error) = std::fs::read_to_string(path) {
                eprintln!("error: --model-calibration: cannot read '{path}': {error}");
                return Err(());
            }
        }
        Ok(())
    }

    /// `pipeline` (a `builtin.module(...)` pipeline of ours) after the
    /// `--passes`.
    pub fn after_passes(&self, pipeline: &str) -> Result<String, ()> {
        after_passes(self.passes.as_deref(), pipeline)
    }

    /// The NVIDIA chip of the cuda target.
    pub fn cuda_chip(&self) -> &str {
        self.chip.as_deref().unwrap_or("sm_90")
    }

    /// The AMDGPU target of `emit --stage amdgcn`.
    pub fn amdgpu(&self) -> Result<pgpu_backend_amdgpu::Options, ()> {
        let options = pgpu_backend_amdgpu::Options {
            chip: self.chip.clone().unwrap_or_else(|| "gfx942".to_string()),
            wave: self.wave,
            opt_level: self.opt_level,
            ..pgpu_backend_amdgpu::Options::default()
        };
        options
            .validate()
            .map_err(|error| eprintln!("error: {error}"))?;
        if self.grid_barriers {
            eprintln!(
                "error: --grid-barriers needs --target cuda (AMDGPU code has no grid barriers)"
            );
            return Err(());
        }
        Ok(options)
    }

    /// The pipeline from the frontend's IR to the kernel stage of the
    /// AMDGPU backend: Fork's groups stay on the host path (block kernels'
    /// range barriers would deadlock a lockstep wave whose lanes wait for
    /// different ranges), and nothing is grid-fused.
    pub fn amdgpu_kernel_pipeline(&self) -> Result<String, ()> {
        self.after_passes(&pgpu_kernel_passes::kernel_pipeline(false, None, None))
    }

    /// The pipeline from the frontend's IR to the kernel stage.
    pub fn kernel_pipeline(&self) -> Result<String, ()> {
        let block_groups =
            (self.target == Target::Cuda && !self.no_block_groups).then_some(self.block_threads);
        let model_block_size = self.model_block_size.then(|| {
            let mut options = format!("args={}", self.model_args.as_deref().unwrap_or(""));
            if let Some(path) = &self.model_calibration {
                options.push_str(&format!(" calibration={path}"));
            }
            options
        });
        self.after_passes(&pgpu_kernel_passes::kernel_pipeline(
            self.grid_barriers,
            block_groups,
            model_block_size.as_deref(),
        ))
    }
}

fn report(error: HostError) {
    eprintln!("error: {error}");
}

/// The native code generator for one set of options.
pub struct Native {
    options: NativeOptions,
    machine: Machine,
}

impl Native {
    pub fn new(options: &NativeOptions) -> Result<Self, ()> {
        options.validate()?;
        let nvptx = pgpu_backend_nvptx::Options {
            chip: options.cuda_chip().to_string(),
            opt_level: options.opt_level,
            ..pgpu_backend_nvptx::Options::default()
        };
        nvptx
            .validate()
            .map_err(|error| eprintln!("error: {error}"))?;
        let machine = Machine::host(options.opt_level).map_err(report)?;
        Ok(Self {
            options: options.clone(),
            machine,
        })
    }

    /// The pipeline from the kernel stage to the LLVM dialect.
    pub fn lowering_pipeline(&self) -> String {
        match self.options.target {
            Target::Cpu => pgpu_backend_host::cpu_pipeline(!self.options.unchecked),
            Target::Cuda => self.cuda_pipeline(),
        }
    }

    /// The whole pipeline `pgpu compile` runs, from the frontend's IR to
    /// the LLVM dialect, as one line: `pgpu-opt --pass-pipeline=` on `pgpu
    /// emit --stage pgpu --debug-info` replays it (`--stage lowered`).
    pub fn full_pipeline(&self) -> Result<String, ()> {
        joined(&[&self.options.kernel_pipeline()?, &self.lowering_pipeline()])
    }

    /// The cuda target's lowering pipeline (also what `--stage ptx` runs).
    pub fn cuda_pipeline(&self) -> String {
        pgpu_backend_host::cuda_pipeline(&pgpu_backend_host::CudaPipeline {
            checked: !self.options.unchecked,
            chip: self.options.cuda_chip(),
            opt_level: self.options.opt_level,
            block_size: pgpu_backend_nvptx::Options::default().block_size,
            wait_grid_dependencies: pgpu_backend_nvptx::waits_for_grid_dependencies(
                self.options.cuda_chip(),
            ),
            count_sm_cycles: self.options.count_sm_cycles,
        })
    }

    /// Lowers `module` (at the kernel stage) to optimized LLVM IR and hands
    /// it to `use_module`.
    fn with_llvm<T>(
        &self,
        context: &Context,
        module: &mut Module,
        name: &str,
        text: &str,
        use_module: impl FnOnce(&pgpu_backend_host::inkwell::module::Module) -> Result<T, HostError>,
    ) -> Result<T, ()> {
        run_pipeline(context, module, &self.lowering_pipeline(), name, text)?;
        let llvm = pgpu_backend_host::inkwell::context::Context::create();
        let translated = self.machine.translate(module, &llvm).map_err(report)?;
        self.machine.optimize(&translated).map_err(report)?;
        use_module(&translated).map_err(report)
    }

    /// The PTX of `module`'s kernels (at the kernel stage; cuda target).
    pub fn to_ptx(
        &self,
        context: &Context,
        module: &mut Module,
        name: &str,
        text: &str,
    ) -> Result<String, ()> {
        run_pipeline(context, module, &self.cuda_pipeline(), name, text)?;
        Ok(binary_listing(module))
    }

    /// The optimized LLVM IR of `module` (at the kernel stage) as text.
    pub fn to_llvm_ir(
        &self,
        context: &Context,
        module: &mut Module,
        name: &str,
        text: &str,
    ) -> Result<String, ()> {
        self.with_llvm(context, module, name, text, |llvm| {
            Ok(llvm.print_to_string().to_string())
        })
    }

    /// Compiles `module` (at the kernel stage) into the executable `output`.
    fn build_executable(
        &self,
        context: &Context,
        module: &mut Module,
        name: &str,
        text: &str,
        output: &Path,
    ) -> Result<(), ()> {
        let scratch = tempfile::tempdir()
            .map_err(|error| eprintln!("error: cannot create a temporary directory: {error}"))?;
        let object = scratch.path().join("program.o");
        self.with_llvm(context, module, name, text, |llvm| {
            self.machine.write_object(llvm, &object)
        })?;
        link::link_executable(&[object.as_path()], output)
            .map_err(|error| report(HostError::Link(error)))
    }
}

/// `pipeline` (a `builtin.module(...)` pipeline of ours) after `passes`,
/// a `--passes` option: a textual pipeline, anchored on `builtin.module`
/// or not.
pub fn after_passes(passes: Option<&str>, pipeline: &str) -> Result<String, ()> {
    let Some(passes) = passes.map(str::trim) else {
        return Ok(pipeline.to_string());
    };
    let passes = if passes.starts_with("builtin.module(") {
        passes.to_string()
    } else {
        format!("builtin.module({passes})")
    };
    let joined = tool::join_module_pipelines(&[&passes, pipeline]).map_err(|_| {
        eprintln!(
            "error: --passes: '{passes}' is not a pipeline on builtin.module (it must end with its ')')"
        )
    })?;
    check_passes(&passes)?;
    Ok(joined)
}

/// Parses the `--passes` pipeline alone, so that an error in it is
/// reported against it rather than against the whole pipeline.
fn check_passes(passes: &str) -> Result<(), ()> {
    let context = crate::plugins::create_context();
    let collector = Collector::attach(&context);
    let pass_manager = melior::pass::PassManager::new(&context);
    let parsed = parse_pass_pipeline(pass_manager.as_operation_pass_manager(), passes);
    let source = SourceText {
        name: "--passes",
        text: passes,
    };
    for record in collector.take() {
        eprint!("{}", record.render(&source));
    }
    parsed.map_err(|error| eprintln!("error: --passes: {error}"))
}

/// `pipelines` run in turn, as one textual pipeline.
pub fn joined(pipelines: &[&str]) -> Result<String, ()> {
    tool::join_module_pipelines(pipelines).map_err(|error| eprintln!("error: {error}"))
}

/// The pipeline `--stage amdgcn` runs after the AMDGPU kernel stage.
pub fn amdgcn_pipeline(amdgpu: &pgpu_backend_amdgpu::Options, checked: bool) -> String {
    pgpu_backend_host::amdgpu_pipeline(
        checked,
        amdgpu.block_size,
        &pgpu_backend_amdgpu::device_lowering(amdgpu),
    )
}

/// The AMDGCN assembly of `module`'s kernels (at the AMDGPU kernel stage,
/// [`NativeOptions::amdgpu_kernel_pipeline`]) for `amdgpu` (validated by
/// [`NativeOptions::amdgpu`]).
pub fn to_amdgcn(
    amdgpu: &pgpu_backend_amdgpu::Options,
    checked: bool,
    context: &Context,
    module: &mut Module,
    name: &str,
    text: &str,
) -> Result<String, ()> {
    run_pipeline(
        context,
        module,
        &amdgcn_pipeline(amdgpu, checked),
        name,
        text,
    )?;
    Ok(binary_listing(module))
}

/// The text of every `gpu.binary` object in `module` (PTX or AMDGCN
/// assembly), each after a `// ----- gpu.binary @NAME` line.
fn binary_listing(module: &Module) -> String {
    pgpu_backend_nvptx::extract_ptx(module)
        .iter()
        .map(|object| format!("// ----- gpu.binary @{}\n{}\n", object.name, object.ptx))
        .collect()
}

/// `pgpu compile FILE -o OUTPUT`.
pub fn compile_file(
    file: &str,
    output: &Path,
    options: &NativeOptions,
    print_pipeline: bool,
) -> Result<(), ()> {
    let (name, text) = read(file)?;
    let native = Native::new(options)?;
    if print_pipeline {
        eprintln!("{}", native.full_pipeline()?);
    }
    let context = crate::plugins::create_context();
    let mut module = load_module(&context, &name, &text)?;
    check_entry(&module, &name)?;
    run_pipeline(
        &context,
        &mut module,
        &options.kernel_pipeline()?,
        &name,
        &text,
    )?;
    check_lowerable(&module, &name, &text)?;
    native.build_executable(&context, &mut module, &name, &text, output)
}

/// Ops the native backends cannot compile yet (some of Fork's synchronous
/// group code): a diagnostic at the first one, instead of a failure deep
/// in the lowering. An op that `pgpu-lower-synchronous` marked
/// (`pgpu.unlowered`) names the construct that kept its group
/// synchronous, at the construct's location; otherwise the first op left
/// over.
fn check_lowerable(module: &Module, name: &str, text: &str) -> Result<(), ()> {
    use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
    let mut found = None;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let op_name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        if let Ok(what) = op.attribute(pgpu_kernel_passes::UNLOWERED)
            && let Ok(what) = melior::ir::attribute::StringAttribute::try_from(what)
        {
            found = Some((
                op_name,
                pgpu_pass_infra::diagnostics::file_position(op.location()),
                what.value().to_string(),
            ));
            return WalkResult::Interrupt;
        }
        WalkResult::Advance
    });
    if found.is_none() {
        module.as_operation().walk(WalkOrder::PreOrder, |op| {
            let op_name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
            // Grid spawns are the cuda target's kernels (`pgpu-grid-fuse` makes
            // them only there); block spawns are too, and the CPU target
            // reports them unavailable (`pgpu-lower-to-runtime`).
            let unsupported = (op_name == "pgpu.spawn"
                && !op.has_attribute("grid")
                && !op.has_attribute("block"))
                || op_name.starts_with("pgpu.group.")
                || matches!(
                    op_name.as_str(),
                    "pgpu.seq" | "pgpu.farm" | "pgpu.multiprefix"
                );
            if unsupported && found.is_none() {
                let what = match op_name.as_str() {
                    "pgpu.spawn" => "this synchronous group",
                    "pgpu.seq" => "this `seq`",
                    "pgpu.farm" => "this `farm`",
                    "pgpu.multiprefix" => "this multiprefix operation",
                    _ => "this group operation",
                };
                found = Some((
                    op_name,
                    pgpu_pass_infra::diagnostics::file_position(op.location()),
                    format!("{what} here"),
                ));
                return WalkResult::Interrupt;
            }
            WalkResult::Advance
        });
    }
    let Some((op_name, position, what)) = found else {
        return Ok(());
    };
    use pgpu_pass_infra::diagnostics::{Record, Severity};
    let record = Record {
        severity: Severity::Error,
        position,
        message: format!(
            "'{op_name}': the native backends do not compile {what} yet; run the program with `pgpu run --interpret`"
        ),
        notes: vec![],
    };
    let source = pgpu_pass_infra::diagnostics::SourceText { name, text };
    eprint!("{}", record.render(&source));
    Err(())
}

/// An executable needs the program's `@main() -> i32`.
fn check_entry(module: &Module, name: &str) -> Result<(), ()> {
    use melior::ir::{BlockLike, operation::OperationLike};
    let mut current = module.body().first_operation();
    while let Some(op) = current {
        let is_main = op.name().as_string_ref().as_str() == Ok("func.func")
            && op
                .attribute("sym_name")
                .is_ok_and(|symbol| symbol.to_string() == "\"main\"");
        if is_main {
            let signature = op
                .attribute("function_type")
                .map(|ty| ty.to_string())
                .unwrap_or_default();
            if signature == "() -> i32" {
                return Ok(());
            }
            eprintln!("{name}: error: the program's @main must be () -> i32, not {signature}");
            return Err(());
        }
        current = op.next_in_block();
    }
    eprintln!("{name}: error: the program has no @main() -> i32 to build an executable from");
    Err(())
}

/// `pgpu run FILE -- ARGS`: compiles into a temporary directory and runs;
/// returns the program's exit status (128 + N after signal N).
pub fn run_native(file: &str, options: &NativeOptions, args: &[String]) -> Result<i32, ()> {
    let scratch = tempfile::tempdir()
        .map_err(|error| eprintln!("error: cannot create a temporary directory: {error}"))?;
    let program = scratch.path().join("program");
    compile_file(file, &program, options, false)?;
    let status = std::process::Command::new(&program)
        .args(args)
        .status()
        .map_err(|error| eprintln!("error: cannot run the compiled program: {error}"))?;
    if let Some(code) = status.code() {
        return Ok(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Ok(128 + signal);
        }
    }
    Ok(1)
}
