//! `pgpu run-ptx`: runs a kernel of a PTX file on the CPU, translated with
//! the lockstep semantics of waves of 32 or 64 lanes
//! ([`pgpu_ptx_llvm::cpu`]), and prints its buffers afterwards in the
//! format of the results recorded on the H200 (`test-suite/ptx/expected`).
//! A launch is given by flags, or by name from a cases file
//! (`test-suite/ptx/cases.txt`, whose PTX lies in `nvcc/` beside it).

use miette::{NamedSource, Report};
use pgpu_pass_infra::tool::{read_input, write_output};
use pgpu_ptx_llvm::run::format_buffers;
use std::path::Path;

/// The flags of `pgpu run-ptx`.
#[derive(clap::Args, Debug)]
pub struct RunPtxOptions {
    /// The PTX file (not with --cases).
    pub file: Option<String>,
    /// The kernel to launch.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Blocks: X[,Y[,Z]].
    #[arg(long, default_value = "1")]
    pub grid: String,
    /// Threads per block: X[,Y[,Z]].
    #[arg(long, default_value = "1")]
    pub block: String,
    /// Dynamic shared memory in bytes.
    #[arg(long, default_value_t = 0)]
    pub shared: u64,
    /// Lanes per wave of the emulation: 32 (one PTX warp per wave) or 64
    /// (two warps per wave, as on AMD CDNA GPUs).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(32..=64))]
    pub wave: u32,
    /// The kernel's arguments: TYPE:VALUE (u32:5) or TYPE[COUNT]:INIT
    /// with INIT zero, iota, rand(SEED) or randmod(SEED,M).
    #[arg(long, num_args = 1.., allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// A cases file: run its launch named by --case.
    #[arg(long, requires = "case", conflicts_with_all = ["file", "kernel", "args"])]
    pub cases: Option<String>,
    /// The case to run.
    #[arg(long, requires = "cases")]
    pub case: Option<String>,
    /// With --cases: the PTX variant `nvcc/<stem>.<VARIANT>.ptx` (e.g. sm_75).
    #[arg(long, requires = "cases")]
    pub variant: Option<String>,
    /// Where to run: `cpu` (the wave emulation) or `cuda` (the GPU, through
    /// `pgpu-run-ptx-cuda` beside `pgpu`, which needs no LLVM).
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "cuda"])]
    pub device: String,
    /// Where to write the buffers (default: standard output).
    #[arg(short = 'o', default_value = "-")]
    pub output: String,
}

/// `--device cuda`: the same launch by `pgpu-run-ptx-cuda`.
fn run_on_cuda(options: &RunPtxOptions) -> Result<(), ()> {
    let runner = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("pgpu-run-ptx-cuda")))
        .filter(|path| path.is_file())
        .ok_or_else(|| {
            eprintln!("error: pgpu-run-ptx-cuda is not beside pgpu (cargo build builds it)")
        })?;
    let mut command = std::process::Command::new(runner);
    if let (Some(cases), Some(case)) = (&options.cases, &options.case) {
        command.args(["--cases", cases, "--case", case]);
        if let Some(variant) = &options.variant {
            command.args(["--variant", variant]);
        }
    } else {
        command.args(options.file.iter());
        if let Some(kernel) = &options.kernel {
            command.args(["--kernel", kernel]);
        }
        command.args(["--grid", &options.grid, "--block", &options.block]);
        command.args(["--shared", &options.shared.to_string()]);
        if !options.args.is_empty() {
            command.arg("--args").args(&options.args);
        }
    }
    command.args(["-o", &options.output]);
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(_) => Err(()),
        Err(error) => {
            eprintln!("error: cannot run pgpu-run-ptx-cuda: {error}");
            Err(())
        }
    }
}

/// Runs the command; diagnostics go to stderr.
pub fn run_ptx(options: &RunPtxOptions) -> Result<(), ()> {
    pgpu_opt::cli::set_report_style();
    if options.device == "cuda" {
        return run_on_cuda(options);
    }
    let fail = |message: String| {
        eprintln!("error: {message}");
    };
    if !matches!(options.wave, 32 | 64) {
        fail(format!(
            "--wave {}: waves have 32 or 64 lanes",
            options.wave
        ));
        return Err(());
    }
    let (path, launch, case) = if let (Some(cases), Some(case)) = (&options.cases, &options.case) {
        let (path, launch) =
            pgpu_ptx::launch::case_file_launch(Path::new(cases), case, options.variant.as_deref())
                .map_err(|e| fail(e.0))?;
        (path.to_string_lossy().into_owned(), launch, case.clone())
    } else {
        let Some(file) = options.file.clone() else {
            fail("give a PTX file (or --cases FILE --case NAME)".into());
            return Err(());
        };
        let Some(kernel) = options.kernel.clone() else {
            fail("give the kernel to launch with --kernel".into());
            return Err(());
        };
        let launch = pgpu_ptx::launch::flag_launch(
            &kernel,
            &options.grid,
            &options.block,
            options.shared,
            &options.args,
        )
        .map_err(|e| fail(e.0))?;
        (file, launch, kernel)
    };
    let (name, text) = read_input(&path).map_err(|e| eprintln!("{:?}", Report::new(e)))?;
    let source = || NamedSource::new(&name, text.clone());
    let module = pgpu_ptx::parse_and_check(&text)
        .map_err(|e| eprintln!("{:?}", Report::new(e).with_source_code(source())))?;
    let context = pgpu_ptx_llvm::inkwell::context::Context::create();
    let translated = pgpu_ptx_llvm::cpu::translate(&context, &module, options.wave)
        .map_err(|e| eprintln!("{:?}", Report::new(e).with_source_code(source())))?;
    let buffers = pgpu_ptx_llvm::run::run(translated, &launch)
        .map_err(|e| eprintln!("{:?}", Report::new(e).with_source_code(source())))?;
    write_output(&options.output, &format_buffers(&case, &launch, &buffers))
        .map_err(|e| eprintln!("{:?}", Report::new(e)))
}
