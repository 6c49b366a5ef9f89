//! Host code of compiled pgpu programs: from the kernel stage to a native
//! executable.
//!
//! 1. [`cpu_pipeline`] lowers the kernel stage (host code plus one
//!    `scf.parallel` per kernel, `pgpu emit --stage kernels`) to the LLVM
//!    dialect: `pgpu-lower-to-runtime` (host I/O, lists, collectives as
//!    `pgpu-runtime` calls), `pgpu-outline-cpu-kernels` (kernels on the
//!    runtime's thread pool), upstream's bounds checks reported with the
//!    kernel and source line (`pgpu-report-run-time-errors`; left out
//!    when unchecked), then upstream's conversions. It is one textual
//!    pipeline, so `pgpu-opt --pass-pipeline=` replays it.
//! 2. [`Machine::translate`] sets the host's data layout and target triple
//!    and turns the LLVM-dialect module into an LLVM module (MLIR's
//!    translation, in process, into an inkwell context).
//! 3. [`Machine::optimize`] runs LLVM's `default<On>` pipeline for the host
//!    (x86-64, the running CPU's features) and [`Machine::write_object`]
//!    writes the object file.
//! 4. [`link::link_executable`] links the object with the runtime's static
//!    library (`libpgpu_runtime.a`) through the system `cc`, into a
//!    temporary file renamed over the output only on success.

pub mod link;

pub use inkwell;

use inkwell::{
    OptimizationLevel,
    context::Context as LlvmContext,
    module::Module as LlvmModule,
    passes::PassBuilderOptions,
    targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine},
};
use melior::ir::Module;
use std::path::Path;

/// Upstream conversions from host code with our runtime calls to the LLVM
/// dialect (shared by the CPU and CUDA targets).
pub const LLVM_LOWERING: &str = "convert-scf-to-cf,arith-expand,expand-strided-metadata,\
convert-arith-to-llvm,finalize-memref-to-llvm{use-generic-functions=true},pgpu-relax-atomics{host=true},convert-math-to-llvm,\
convert-math-to-libm,convert-index-to-llvm,convert-ub-to-llvm,convert-func-to-llvm,\
convert-cf-to-llvm,reconcile-unrealized-casts";

/// Upstream's run-time checks (bounds of every memref access) and ours
/// (integer division by zero and signed overflow), reported
/// with the kernel's name and source position.
pub const RUN_TIME_CHECKS: &str = "generate-runtime-verification{verbose-level=0},\
pgpu-check-division,pgpu-report-run-time-errors";

/// The pipeline from the kernel stage to the LLVM dialect for executables
/// that run on a CUDA GPU or, when none is usable, on the CPU: every
/// kernel and collective gets a GPU version (`pgpu-offload-kernels`, the
/// collectives of `pgpu-link-gpu-collectives`, upstream's kernel
/// outlining and NVVM lowering with our libdevice math functions
/// (`pgpu-define-device-math`), PTX for `chip` from LLVM's NVPTX backend at
/// `opt_level`, embedded by `gpu-module-to-binary`) and keeps its CPU
/// version (`pgpu-outline-cpu-kernels`); the host code of tasks that may
/// run concurrently goes to functions the runtime runs on task threads
/// (`pgpu-outline-tasks`). Launches go through upstream's
/// `gpu-to-llvm`, i.e. the `mgpu*` functions of our runtime. Grid
/// kernels get our grid barrier and a cooperative launch
/// (`pgpu-define-grid-barrier`), block kernels our range barriers and a
/// larger stack (`pgpu-define-range-barrier`). With
/// `wait_grid_dependencies` (sm_90 and later) kernels may start as
/// programmatic dependent launches (`pgpu-wait-grid-dependencies`); with
/// `count_sm_cycles` kernels record their multiprocessors' busy cycles for
/// the runtime's profile (`pgpu-count-sm-cycles`).
pub fn cuda_pipeline(target: &CudaPipeline) -> String {
    let CudaPipeline {
        checked,
        chip,
        opt_level,
        block_size,
        wait_grid_dependencies,
        count_sm_cycles,
    } = *target;
    // Programmatic dependent launch (sm_90+): see pgpu-wait-grid-dependencies.
    let wait = if wait_grid_dependencies {
        "pgpu-wait-grid-dependencies,"
    } else {
        ""
    };
    let cycles = if count_sm_cycles {
        "pgpu-count-sm-cycles,"
    } else {
        ""
    };
    gpu_pipeline(
        checked,
        block_size,
        "pgpu-reconverge-warps,",
        &format!(
            "nvvm-attach-target{{chip={chip} O={opt_level}}},pgpu-nvptx-data-layout,gpu.module(convert-gpu-to-nvvm),\
pgpu-relax-atomics,pgpu-define-device-math,pgpu-define-grid-barrier,pgpu-define-range-barrier,{wait}{cycles}"
        ),
    )
}

/// The choices of [`cuda_pipeline`].
#[derive(Debug, Clone, Copy)]
pub struct CudaPipeline<'a> {
    /// Run-time checks ([`RUN_TIME_CHECKS`]).
    pub checked: bool,
    /// The `sm_XX` chip of the PTX.
    pub chip: &'a str,
    /// LLVM's optimization level of the device code.
    pub opt_level: u8,
    /// Threads per block of offloaded kernels.
    pub block_size: u32,
    /// Programmatic dependent launches (sm_90 and later).
    pub wait_grid_dependencies: bool,
    /// Per-kernel cycle counts on the multiprocessors.
    pub count_sm_cycles: bool,
}

/// The pipeline from the kernel stage to `gpu.binary` ops holding AMDGCN
/// assembly (`pgpu emit --stage amdgcn`): [`cuda_pipeline`]'s steps with
/// `device_lowering` (the AMDGPU backend's, `pgpu_backend_amdgpu::device_lowering`)
/// in place of the NVVM ones. Nothing runs it: there is no AMD runtime.
pub fn amdgpu_pipeline(checked: bool, block_size: u32, device_lowering: &str) -> String {
    gpu_pipeline(checked, block_size, "", &format!("{device_lowering},"))
}

/// The steps the GPU pipelines share, with a target's steps on the
/// outlined kernels before (`structured`, ending in a comma) and after
/// (`device`, likewise) the lowering of `scf` to `cf`.
fn gpu_pipeline(checked: bool, block_size: u32, structured: &str, device: &str) -> String {
    let checks = if checked {
        format!("{RUN_TIME_CHECKS},")
    } else {
        String::new()
    };
    format!(
        "builtin.module(pgpu-offload-kernels{{block-size={block_size}}},pgpu-link-gpu-collectives,\
pgpu-outline-tasks,pgpu-lower-to-runtime,pgpu-outline-cpu-kernels,{checks}gpu-kernel-outlining,{structured}convert-scf-to-cf,arith-expand,\
expand-strided-metadata,{device}\
convert-arith-to-llvm,finalize-memref-to-llvm{{use-generic-functions=true}},pgpu-relax-atomics{{host=true}},convert-math-to-llvm,\
convert-math-to-libm,convert-index-to-llvm,convert-ub-to-llvm,convert-func-to-llvm,\
convert-cf-to-llvm,gpu-to-llvm,reconcile-unrealized-casts,gpu-module-to-binary{{format=isa}})"
    )
}

/// The pipeline from the kernel stage to the LLVM dialect for the CPU
/// device, with run-time checks when `checked`.
pub fn cpu_pipeline(checked: bool) -> String {
    let checks = if checked {
        format!("{RUN_TIME_CHECKS},")
    } else {
        String::new()
    };
    format!(
        "builtin.module(pgpu-lower-to-runtime,pgpu-outline-cpu-kernels,{checks}{LLVM_LOWERING})"
    )
}

/// What can go wrong between the LLVM dialect and an executable.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot translate the module to LLVM IR (is it all in the LLVM dialect?)")]
    Translate,
    #[error(
        "'{op}'{position} has no lowering to LLVM on this target (not supported in compiled programs)"
    )]
    Unlowered { op: String, position: String },
    #[error("the generated LLVM IR is invalid: {0}")]
    InvalidIr(String),
    #[error("LLVM has no target for this host: {0}")]
    Target(String),
    #[error("LLVM optimization failed: {0}")]
    Optimize(String),
    #[error("cannot write the object file {path}: {message}")]
    Object { path: String, message: String },
    #[error(transparent)]
    Link(#[from] link::LinkError),
}

/// The first op the lowering left outside the LLVM dialect (the module
/// itself, `gpu.binary` and `gpu.launch_func`, which the translation
/// handles, excepted), as an
/// error naming it and its source position.
fn check_lowered(module: &Module) -> Result<(), HostError> {
    use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
    // The first op left over; casts only when nothing else is (they are
    // left around an op the lowering could not convert).
    let mut found: Option<(String, String)> = None;
    let mut cast: Option<(String, String)> = None;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        // The translation handles `gpu.binary` and `gpu.launch_func` itself.
        let lowered = name.starts_with("llvm.")
            || matches!(
                name.as_str(),
                "builtin.module" | "gpu.binary" | "gpu.launch_func"
            );
        if lowered {
            return if name == "gpu.binary" {
                WalkResult::Skip
            } else {
                WalkResult::Advance
            };
        }
        let position = location_text(op.location());
        if name == "builtin.unrealized_conversion_cast" {
            cast.get_or_insert((name, position));
            return WalkResult::Advance;
        }
        found = Some((name, position));
        WalkResult::Interrupt
    });
    match found.or(cast) {
        Some((op, position)) => Err(HostError::Unlowered { op, position }),
        None => Ok(()),
    }
}

/// ` at file:line:col` of a location (inside callsite or fused locations
/// too), or nothing.
fn location_text(location: melior::ir::Location) -> String {
    let text = location.to_string();
    // `loc("file":line:col)`, possibly wrapped (callsite, fused).
    let Some(start) = text.find("loc(\"") else {
        return String::new();
    };
    let rest = &text[start + 5..];
    let Some(quote) = rest.find('"') else {
        return String::new();
    };
    let file = &rest[..quote];
    let numbers: String = rest[quote + 1..]
        .trim_start_matches(':')
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ':')
        .collect();
    if numbers.is_empty() {
        return String::new();
    }
    format!(" at {file}:{}", numbers.trim_end_matches(':'))
}

/// Translates an LLVM-dialect module into an LLVM module of `context`.
/// Only through [`Machine::translate`], which gives the module the host's
/// data layout first: the translation folds type sizes (`ptrtoint` of a
/// `getelementptr` of null, a task context's bytes) with the layout the
/// module has then, and LLVM's default aligns `i64` to 4 bytes, x86-64
/// to 8.
fn translate<'l>(module: &Module, context: &'l LlvmContext) -> Result<LlvmModule<'l>, HostError> {
    check_lowered(module)?;
    // SAFETY: melior and inkwell use the same libLLVM, so the context
    // handle types agree; the translation returns a new module owned by
    // `context` (null on failure).
    let raw = unsafe {
        mlir_sys::mlirTranslateModuleToLLVMIR(
            module.as_operation().to_raw(),
            context.raw() as mlir_sys::LLVMContextRef,
        )
    };
    if raw.is_null() {
        return Err(HostError::Translate);
    }
    // SAFETY: a fresh module of `context`, owned from here by the wrapper.
    let module = unsafe { LlvmModule::new(raw as inkwell::llvm_sys::prelude::LLVMModuleRef) };
    module
        .verify()
        .map_err(|message| HostError::InvalidIr(message.to_string()))?;
    Ok(module)
}

/// An LLVM target machine for the host.
pub struct Machine {
    machine: TargetMachine,
    opt_level: u8,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Machine")
            .field("triple", &self.machine.get_triple())
            .field("opt_level", &self.opt_level)
            .finish()
    }
}

impl Machine {
    /// The machine for the running CPU at optimization level `opt_level`
    /// (0 to 3).
    pub fn host(opt_level: u8) -> Result<Self, HostError> {
        Target::initialize_native(&InitializationConfig::default()).map_err(HostError::Target)?;
        let triple = TargetMachine::get_default_triple();
        let target = Target::from_triple(&triple).map_err(|e| HostError::Target(e.to_string()))?;
        let level = match opt_level {
            0 => OptimizationLevel::None,
            1 => OptimizationLevel::Less,
            2 => OptimizationLevel::Default,
            _ => OptimizationLevel::Aggressive,
        };
        let cpu = TargetMachine::get_host_cpu_name();
        let features = TargetMachine::get_host_cpu_features();
        let machine = target
            .create_target_machine(
                &triple,
                &cpu.to_string_lossy(),
                &features.to_string_lossy(),
                level,
                RelocMode::PIC,
                CodeModel::Default,
            )
            .ok_or_else(|| HostError::Target(format!("no target machine for {triple}")))?;
        Ok(Self {
            machine,
            opt_level: opt_level.min(3),
        })
    }

    /// Translates `module` (LLVM dialect) for this machine: its data layout
    /// and triple set on `module` first (`llvm.data_layout`,
    /// `llvm.target_triple`), so that sizes folded in the translation are
    /// the machine's.
    pub fn translate<'l>(
        &self,
        module: &Module,
        context: &'l LlvmContext,
    ) -> Result<LlvmModule<'l>, HostError> {
        let layout = self.machine.get_target_data().get_data_layout();
        let layout = layout.as_str().to_string_lossy().into_owned();
        let triple = self.machine.get_triple();
        let triple = triple.as_str().to_string_lossy().into_owned();
        let operation = module.as_operation().to_raw();
        for (name, value) in [("llvm.data_layout", layout), ("llvm.target_triple", triple)] {
            // SAFETY: a live module operation; the string refs point into
            // `name` and `value`, which outlive the calls (the attribute
            // copies its string into the context).
            unsafe {
                let context = mlir_sys::mlirOperationGetContext(operation);
                let attribute = mlir_sys::mlirStringAttrGet(
                    context,
                    mlir_sys::MlirStringRef {
                        data: value.as_ptr().cast(),
                        length: value.len(),
                    },
                );
                mlir_sys::mlirOperationSetDiscardableAttributeByName(
                    operation,
                    mlir_sys::MlirStringRef {
                        data: name.as_ptr().cast(),
                        length: name.len(),
                    },
                    attribute,
                );
            }
        }
        translate(module, context)
    }

    /// Sets the module's triple and data layout and runs `default<On>`.
    pub fn optimize(&self, module: &LlvmModule) -> Result<(), HostError> {
        module.set_triple(&self.machine.get_triple());
        module.set_data_layout(&self.machine.get_target_data().get_data_layout());
        let pipeline = format!("default<O{}>", self.opt_level);
        module
            .run_passes(&pipeline, &self.machine, PassBuilderOptions::create())
            .map_err(|message| HostError::Optimize(message.to_string()))
    }

    /// Writes `module` as an object file at `path`.
    pub fn write_object(&self, module: &LlvmModule, path: &Path) -> Result<(), HostError> {
        self.machine
            .write_to_file(module, FileType::Object, path)
            .map_err(|message| HostError::Object {
                path: path.display().to_string(),
                message: message.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvptx_data_layout_is_llvms() {
        use inkwell::targets::{CodeModel, RelocMode, TargetTriple};
        Target::initialize_nvptx(&InitializationConfig::default());
        let triple = TargetTriple::create("nvptx64-nvidia-cuda");
        let target = Target::from_triple(&triple).expect("LLVM has the NVPTX target");
        for chip in ["sm_80", "sm_90"] {
            let machine = target
                .create_target_machine(
                    &triple,
                    chip,
                    "",
                    OptimizationLevel::Default,
                    RelocMode::Default,
                    CodeModel::Default,
                )
                .expect("an NVPTX target machine");
            let layout = machine.get_target_data().get_data_layout();
            assert_eq!(
                layout.as_str().to_str(),
                Ok(pgpu_backend_nvptx::NVPTX_DATA_LAYOUT),
                "{chip}"
            );
        }
    }

    #[test]
    fn cuda_pipeline_defines_the_grid_barrier_after_the_nvvm_lowering() {
        let sm_90 = CudaPipeline {
            checked: true,
            chip: "sm_90",
            opt_level: 3,
            block_size: 256,
            wait_grid_dependencies: true,
            count_sm_cycles: false,
        };
        let waiting = cuda_pipeline(&sm_90);
        assert!(waiting.contains(
            "gpu.module(convert-gpu-to-nvvm),pgpu-relax-atomics,pgpu-define-device-math,\
             pgpu-define-grid-barrier,pgpu-define-range-barrier,pgpu-wait-grid-dependencies,"
        ));
        let older = cuda_pipeline(&CudaPipeline {
            checked: false,
            chip: "sm_80",
            wait_grid_dependencies: false,
            ..sm_90
        });
        assert!(older.contains(
            "gpu.module(convert-gpu-to-nvvm),pgpu-relax-atomics,pgpu-define-device-math,\
             pgpu-define-grid-barrier,pgpu-define-range-barrier,convert-arith-to-llvm,finalize-memref"
        ));
        // Warps reconverge after marked regions before the regions are
        // lowered to branches.
        assert!(waiting.contains("gpu-kernel-outlining,pgpu-reconverge-warps,convert-scf-to-cf,"));
        // Cycle counting comes last, after the wait for grid dependencies.
        let counting = cuda_pipeline(&CudaPipeline {
            count_sm_cycles: true,
            ..sm_90
        });
        assert!(
            counting.contains("pgpu-wait-grid-dependencies,pgpu-count-sm-cycles,convert-arith")
        );
        assert!(!waiting.contains("pgpu-count-sm-cycles"));
    }
}
