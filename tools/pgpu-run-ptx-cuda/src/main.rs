//! `pgpu-run-ptx-cuda`: runs one kernel of a PTX file on a CUDA GPU and
//! prints its buffers afterwards, exactly as `pgpu run-ptx` prints those of
//! the CPU wave emulation, so that the two can be compared with `diff`.
//! It needs only libc and loads `libcuda.so.1` at run time (it runs on a
//! GPU machine without LLVM); `pgpu run-ptx --device cuda` runs it.
//!
//! The PTX is JIT-compiled by the driver (`cuModuleLoadDataEx`, whose log
//! is shown when it fails); kernel parameters are laid out from the PTX
//! declaration (a buffer argument is a device pointer, a scalar its
//! bytes); buffers are uploaded, the kernel launched with the grid, block
//! and dynamic shared memory given, and every buffer read back.

use clap::Parser;
use pgpu_ptx::ir::FunctionKind;
use pgpu_ptx::launch::{Argument, Launch, case_file_launch, flag_launch, format_buffers};
use pgpu_runtime::cuda::driver::{CUdeviceptr, CUfunction, CUmodule, Driver, LIBRARY};
use std::ffi::{CString, c_void};
use std::path::Path;
use std::process::ExitCode;

/// Run a PTX kernel on a CUDA GPU.
#[derive(Parser, Debug)]
#[command(name = "pgpu-run-ptx-cuda", version)]
struct Options {
    /// The PTX file (not with --cases).
    file: Option<String>,
    /// The kernel to launch.
    #[arg(long)]
    kernel: Option<String>,
    /// Blocks: `X[,Y[,Z]]`.
    #[arg(long, default_value = "1")]
    grid: String,
    /// Threads per block: `X[,Y[,Z]]`.
    #[arg(long, default_value = "1")]
    block: String,
    /// Dynamic shared memory in bytes.
    #[arg(long, default_value_t = 0)]
    shared: u64,
    /// The kernel's arguments: `TYPE:VALUE` or `TYPE[COUNT]:INIT`.
    #[arg(long, num_args = 1.., allow_hyphen_values = true)]
    args: Vec<String>,
    /// A cases file: run its launch named by --case.
    #[arg(long, requires = "case", conflicts_with_all = ["file", "kernel", "args"])]
    cases: Option<String>,
    /// The case to run.
    #[arg(long, requires = "cases")]
    case: Option<String>,
    /// With --cases: the PTX variant `nvcc/<stem>.<VARIANT>.ptx`.
    #[arg(long, requires = "cases")]
    variant: Option<String>,
    /// Accepted for `pgpu run-ptx`'s sake; the GPU's own warps run.
    #[arg(long, hide = true)]
    wave: Option<u32>,
    /// Where to write the buffers (default: standard output).
    #[arg(short = 'o', default_value = "-")]
    output: String,
}

fn main() -> ExitCode {
    let options = Options::parse();
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

struct Gpu {
    driver: Driver,
}

impl Gpu {
    fn check(&self, what: &str, code: i32) -> Result<(), String> {
        if code == 0 {
            return Ok(());
        }
        let (name, text) = self.driver.error_text(code);
        Err(format!("{what}: {name} ({text})"))
    }
}

fn run(options: &Options) -> Result<(), String> {
    let (path, launch, case) = match (&options.cases, &options.case) {
        (Some(cases), Some(case)) => {
            let (path, launch) =
                case_file_launch(Path::new(cases), case, options.variant.as_deref())
                    .map_err(|e| e.0)?;
            (path.to_string_lossy().into_owned(), launch, case.clone())
        }
        _ => {
            let file = options
                .file
                .clone()
                .ok_or("give a PTX file (or --cases FILE --case NAME)")?;
            let kernel = options
                .kernel
                .clone()
                .ok_or("give the kernel to launch with --kernel")?;
            let launch = flag_launch(
                &kernel,
                &options.grid,
                &options.block,
                options.shared,
                &options.args,
            )
            .map_err(|e| e.0)?;
            (file, launch, kernel)
        }
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let module = pgpu_ptx::parse_and_check(&text)
        .map_err(|e| format!("{path}:{}: {e}", e.span.line(&text)))?;
    let kernel = module
        .functions()
        .find(|f| f.kind == FunctionKind::Entry && f.name == launch.kernel)
        .ok_or_else(|| format!("{path} has no kernel `{}`", launch.kernel))?;
    if kernel.params.len() != launch.arguments.len() {
        return Err(format!(
            "kernel `{}` takes {} arguments, {} given",
            launch.kernel,
            kernel.params.len(),
            launch.arguments.len()
        ));
    }
    let buffers = launch_on_gpu(&text, &launch, kernel)?;
    let printed = format_buffers(&case, &launch, &buffers);
    if options.output == "-" {
        print!("{printed}");
        Ok(())
    } else {
        let temporary = format!("{}.tmp{}", options.output, std::process::id());
        std::fs::write(&temporary, printed)
            .map_err(|e| format!("cannot write {temporary}: {e}"))?;
        std::fs::rename(&temporary, &options.output)
            .map_err(|e| format!("cannot write {}: {e}", options.output))
    }
}

/// Uploads the buffers, launches, and reads them back.
fn launch_on_gpu(
    text: &str,
    launch: &Launch,
    kernel: &pgpu_ptx::ir::Function,
) -> Result<Vec<Option<Vec<u8>>>, String> {
    let gpu = Gpu {
        driver: Driver::load(LIBRARY)?,
    };
    let d = &gpu.driver;
    let mut context = std::ptr::null_mut();
    let mut device = 0;
    // SAFETY: driver calls with out-pointers to locals.
    unsafe {
        gpu.check("cuInit", (d.cuInit)(0))?;
        gpu.check("cuDeviceGet", (d.cuDeviceGet)(&mut device, 0))?;
        gpu.check(
            "cuDevicePrimaryCtxRetain",
            (d.cuDevicePrimaryCtxRetain)(&mut context, device),
        )?;
        gpu.check("cuCtxSetCurrent", (d.cuCtxSetCurrent)(context))?;
    }
    let source = CString::new(text).map_err(|_| "the PTX contains a NUL byte".to_string())?;
    let mut module: CUmodule = std::ptr::null_mut();
    let mut log = vec![0u8; 16384];
    let mut log_size = log.len();
    // CU_JIT_ERROR_LOG_BUFFER (5) and its size (6).
    let mut keys = [5i32, 6];
    let mut values = [
        log.as_mut_ptr() as *mut c_void,
        &mut log_size as *mut usize as *mut c_void,
    ];
    // SAFETY: NUL-terminated PTX; option arrays of equal length.
    let loaded = unsafe {
        (d.cuModuleLoadDataEx)(
            &mut module,
            source.as_ptr().cast(),
            2,
            keys.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if loaded != 0 {
        let message =
            String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)])
                .into_owned();
        gpu.check("cuModuleLoadDataEx", loaded)
            .map_err(|e| format!("{e}\n{message}"))?;
    }
    let name = CString::new(launch.kernel.as_str()).map_err(|_| "bad kernel name".to_string())?;
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: a loaded module and a NUL-terminated name.
    unsafe {
        gpu.check(
            "cuModuleGetFunction",
            (d.cuModuleGetFunction)(&mut function, module, name.as_ptr()),
        )?
    };
    // Device buffers and the parameter values (each 8-byte aligned).
    let mut pointers: Vec<CUdeviceptr> = Vec::new();
    let mut values: Vec<[u64; 2]> = Vec::new();
    for (argument, param) in launch.arguments.iter().zip(&kernel.params) {
        match argument {
            Argument::Buffer(_, _, bytes) => {
                let mut pointer: CUdeviceptr = 0;
                // SAFETY: out-pointer; host bytes of the stated length.
                unsafe {
                    gpu.check(
                        "cuMemAlloc",
                        (d.cuMemAlloc_v2)(&mut pointer, bytes.len().max(1)),
                    )?;
                    gpu.check(
                        "cuMemcpyHtoD",
                        (d.cuMemcpyHtoD_v2)(pointer, bytes.as_ptr().cast(), bytes.len()),
                    )?;
                }
                pointers.push(pointer);
                values.push([pointer, 0]);
            }
            Argument::Ref(target) => {
                let pointer = pointers
                    .get(*target)
                    .copied()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| {
                        format!("ref({target}) does not name an earlier buffer argument")
                    })?;
                pointers.push(0);
                values.push([pointer, 0]);
            }
            Argument::Scalar(_, bytes) => {
                let size = param.ty.scalar.bytes() as usize;
                if bytes.len() != size {
                    return Err(format!(
                        "argument for `{}` is {} bytes, the parameter {size}",
                        param.name,
                        bytes.len()
                    ));
                }
                let mut word = [0u8; 16];
                word[..bytes.len()].copy_from_slice(bytes);
                values.push([
                    u64::from_le_bytes(word[..8].try_into().unwrap_or_default()),
                    0,
                ]);
                pointers.push(0);
            }
        }
    }
    let mut params: Vec<*mut c_void> = values
        .iter_mut()
        .map(|v| v.as_mut_ptr() as *mut c_void)
        .collect();
    let [gx, gy, gz] = launch.grid;
    let [bx, by, bz] = launch.block;
    // SAFETY: a function of the loaded module; one pointer per parameter.
    unsafe {
        gpu.check(
            "cuLaunchKernel",
            (d.cuLaunchKernel)(
                function,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                u32::try_from(launch.shared).map_err(|_| "too much shared memory".to_string())?,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            ),
        )?;
        gpu.check("the kernel", (d.cuCtxSynchronize)())?;
    }
    let mut results = Vec::new();
    for (argument, pointer) in launch.arguments.iter().zip(&pointers) {
        match argument {
            Argument::Buffer(_, _, bytes) => {
                let mut back = vec![0u8; bytes.len()];
                // SAFETY: a device buffer of this length.
                unsafe {
                    gpu.check(
                        "cuMemcpyDtoH",
                        (d.cuMemcpyDtoH_v2)(back.as_mut_ptr().cast(), *pointer, back.len()),
                    )?;
                    gpu.check("cuMemFree", (d.cuMemFree_v2)(*pointer))?;
                }
                results.push(Some(back));
            }
            Argument::Scalar(..) | Argument::Ref(_) => results.push(None),
        }
    }
    Ok(results)
}
