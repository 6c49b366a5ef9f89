//! NVPTX backend: lowers pgpu IR to PTX for an NVIDIA chip.
//!
//! The whole lowering is one textual pipeline ([`pipeline`]), so that
//! `pgpu-opt --pass-pipeline='<it>'` replays it exactly:
//!
//! 1. `pgpu-spawn-to-parallel` turns single-superstep SPMD regions into
//!    `scf.parallel` loops over the ranks;
//! 2. upstream tiling by the block size, `gpu-map-parallel-loops` and
//!    `convert-parallel-loops-to-gpu` make them `gpu.launch` with one thread
//!    per rank and a bounds guard;
//! 3. `gpu-kernel-outlining`, `pgpu-reconverge-warps` (warp lanes leave
//!    marked regions together), `nvvm-attach-target`,
//!    `pgpu-nvptx-data-layout` (NVPTX's data layout on the modules, so
//!    that 64-bit accesses stay whole), `convert-gpu-to-nvvm`,
//!    `pgpu-relax-atomics` (memref atomics relaxed at device scope, as
//!    CUDA's), `pgpu-define-device-math` (our definitions of the libdevice math
//!    functions that the NVVM lowering calls),
//!    `pgpu-define-grid-barrier` and `pgpu-define-range-barrier` (the
//!    barriers of grid and of block kernels), then, for sm_90 and later,
//!    `pgpu-wait-grid-dependencies`, and the host conversions to the LLVM
//!    dialect;
//! 4. `gpu-module-to-binary{format=isa}` runs LLVM's NVPTX backend and
//!    leaves the PTX text in each `gpu.binary`, which [`extract_ptx`] reads.

pub mod collectives;
mod count_sm_cycles;
mod data_layout;
mod define_device_math;
mod define_grid_barrier;
mod define_range_barrier;
mod link_collectives;
pub mod nvvm_modules;
mod reconverge_warps;
mod relax_atomics;
mod wait_grid_dependencies;

pub use count_sm_cycles::{CountSmCycles, TABLE as SM_CYCLES_TABLE};
pub use data_layout::{NVPTX_DATA_LAYOUT, NvptxDataLayout};
pub use define_device_math::{
    DefineDeviceMath, EXACT as EXACT_MATH_FUNCTIONS, LIBDEVICE_PREFIX,
    PREFIX as DEVICE_MATH_PREFIX, WIDENED as WIDENED_MATH_FUNCTIONS,
    library as device_math_library,
};
pub use define_grid_barrier::{
    DefineGridBarrier, FUNCTION as GRID_BARRIER_FUNCTION, MARKER as COOPERATIVE_LAUNCH_MARKER,
};
pub use define_range_barrier::{
    DefineRangeBarrier, ENTER as BLOCK_ENTER_FUNCTION, FUNCTION as RANGE_BARRIER_FUNCTION,
    MARKER as BLOCK_KERNEL_MARKER,
};
pub use link_collectives::LinkGpuCollectives;
pub use reconverge_warps::ReconvergeWarps;
pub use relax_atomics::RelaxAtomics;
pub use wait_grid_dependencies::{MARKER as GRID_DEPENDENCY_MARKER, WaitGridDependencies};

pgpu_pass_infra::declare_passes![
    LinkGpuCollectives,
    DefineDeviceMath,
    DefineGridBarrier,
    DefineRangeBarrier,
    ReconvergeWarps,
    RelaxAtomics,
    WaitGridDependencies,
    CountSmCycles,
    NvptxDataLayout
];

/// Whether kernels for `chip` (`sm_XX`) get `pgpu-wait-grid-dependencies`:
/// programmatic dependent launch exists from sm_90.
pub fn waits_for_grid_dependencies(chip: &str) -> bool {
    nvvm_modules::chip_number(chip).is_some_and(|number| number >= 90)
}

use melior::ir::{
    Module,
    attribute::AttributeLike,
    operation::{OperationLike, WalkOrder, WalkResult},
};
use mlir_sys::{
    mlirArrayAttrGetElement, mlirArrayAttrGetNumElements, mlirAttributeIsAArray,
    mlirAttributeIsAGPUObjectAttr, mlirGPUObjectAttrGetObject,
};

/// Target options of the NVPTX pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The `sm_XX` chip LLVM generates code for.
    pub chip: String,
    /// Threads per block for lowered SPMD regions.
    pub block_size: u32,
    /// LLVM optimization level (0 to 3).
    pub opt_level: u8,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            chip: "sm_90".to_string(),
            block_size: 256,
            opt_level: 3,
        }
    }
}

/// Bad target options.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionsError {
    #[error("'{0}' is not an NVIDIA chip name of the form sm_XX (e.g. sm_90)")]
    Chip(String),
    #[error("'{0}' is not an NVPTX processor of LLVM 22 (sm_20 to sm_121f)")]
    UnknownChip(String),
    #[error(
        "'{0}' is older than sm_70, which pgpu's GPU collectives need (warp-synchronous match and vote)"
    )]
    ChipTooOld(String),
    #[error("block size {0} is not between 1 and 1024")]
    BlockSize(u32),
    #[error("optimization level {0} is not between 0 and 3")]
    OptLevel(u8),
}

/// The NVPTX processors of LLVM 22 (`llc -march=nvptx64 -mcpu=help`),
/// without their `a`/`f` variants; LLVM only warns about an unknown one.
pub const KNOWN_CHIPS: &[u32] = &[
    20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101,
    103, 110, 120, 121,
];

/// The oldest chip the generated collectives run on.
pub const MINIMUM_CHIP: u32 = 70;

impl Options {
    /// Checks the options; `chip` must be a processor LLVM knows, and at
    /// least [`MINIMUM_CHIP`] (use [`Options::validate_syntax`] where the
    /// collectives are not involved).
    pub fn validate(&self) -> Result<(), OptionsError> {
        let number = self.validate_syntax()?;
        if number < MINIMUM_CHIP {
            return Err(OptionsError::ChipTooOld(self.chip.clone()));
        }
        Ok(())
    }

    /// Checks the options without the collectives' minimum chip; returns
    /// the chip's number.
    pub fn validate_syntax(&self) -> Result<u32, OptionsError> {
        let chip_number = self
            .chip
            .strip_prefix("sm_")
            .map(|rest| rest.trim_end_matches(['a', 'f']));
        let Some(number) = chip_number
            .filter(|number| !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
            .and_then(|number| number.parse::<u32>().ok())
        else {
            return Err(OptionsError::Chip(self.chip.clone()));
        };
        let variant = &self.chip["sm_".len() + number.to_string().len()..];
        // `a` variants exist from sm_90, `f` variants from sm_100.
        let variant_known = match variant {
            "" => true,
            "a" => number >= 90,
            "f" => number >= 100,
            _ => false,
        };
        if !KNOWN_CHIPS.contains(&number) || !variant_known {
            return Err(OptionsError::UnknownChip(self.chip.clone()));
        }
        if !(1..=1024).contains(&self.block_size) {
            return Err(OptionsError::BlockSize(self.block_size));
        }
        if self.opt_level > 3 {
            return Err(OptionsError::OptLevel(self.opt_level));
        }
        Ok(number)
    }
}

/// The textual pipeline from pgpu IR to `gpu.binary` ops holding PTX.
pub fn pipeline(options: &Options) -> String {
    let Options {
        chip, opt_level, ..
    } = options;
    let mut target_steps = vec![
        "pgpu-reconverge-warps".to_string(),
        format!("nvvm-attach-target{{chip={chip} O={opt_level}}}"),
        "pgpu-nvptx-data-layout".to_string(),
        "gpu.module(convert-gpu-to-nvvm)".to_string(),
        "pgpu-relax-atomics".to_string(),
        "pgpu-define-device-math".to_string(),
        "pgpu-define-grid-barrier".to_string(),
        "pgpu-define-range-barrier".to_string(),
    ];
    if waits_for_grid_dependencies(chip) {
        target_steps.push("pgpu-wait-grid-dependencies".to_string());
    }
    target_steps.push("convert-scf-to-cf".to_string());
    spawn_pipeline(options.block_size, &target_steps)
}

/// The pipeline from pgpu IR's SPMD regions to `gpu.binary` ops that GPU
/// backends share: the regions become outlined `gpu.module` kernels, then
/// `target_steps` (which lower `scf` to `cf` and the kernels to a GPU
/// dialect), then the host conversions and `gpu-module-to-binary`.
pub fn spawn_pipeline(block_size: u32, target_steps: &[String]) -> String {
    let front = [
        "func.func(pgpu-spawn-to-parallel)".to_string(),
        format!(
            "func.func(scf-parallel-loop-tiling{{parallel-loop-tile-sizes={block_size} no-min-max-bounds=true}},\
             gpu-map-parallel-loops,convert-parallel-loops-to-gpu)"
        ),
        "lower-affine".to_string(),
        "canonicalize".to_string(),
        "gpu-kernel-outlining".to_string(),
    ];
    let tail = [
        "finalize-memref-to-llvm",
        "convert-arith-to-llvm",
        "convert-cf-to-llvm",
        "convert-func-to-llvm",
        "gpu-to-llvm",
        "reconcile-unrealized-casts",
        "gpu-module-to-binary{format=isa}",
    ];
    let steps: Vec<&str> = front
        .iter()
        .chain(target_steps)
        .map(String::as_str)
        .chain(tail)
        .collect();
    format!("builtin.module({})", steps.join(","))
}

/// The PTX of one `gpu.binary` (one outlined kernel module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxModule {
    pub name: String,
    pub ptx: String,
}

/// The PTX text of every `gpu.binary` object in `module`, in IR order.
pub fn extract_ptx(module: &Module) -> Vec<PtxModule> {
    let mut found = Vec::new();
    module
        .as_operation()
        .walk(WalkOrder::PreOrder, |operation| {
            if operation.name().as_string_ref().as_str() != Ok("gpu.binary") {
                return WalkResult::Advance;
            }
            let name = operation
                .attribute("sym_name")
                .ok()
                .map(|attribute| attribute.to_string().trim_matches('"').to_string())
                .unwrap_or_default();
            if let Ok(objects) = operation.attribute("objects") {
                let objects = objects.to_raw();
                // SAFETY: attribute queries of the C API on live attributes.
                unsafe {
                    if mlirAttributeIsAArray(objects) {
                        for index in 0..mlirArrayAttrGetNumElements(objects) {
                            let object = mlirArrayAttrGetElement(objects, index);
                            if mlirAttributeIsAGPUObjectAttr(object) {
                                found.push(PtxModule {
                                    name: name.clone(),
                                    ptx: pgpu_pass_infra::string_ref_to_string(
                                        mlirGPUObjectAttrGetObject(object),
                                    ),
                                });
                            }
                        }
                    }
                }
            }
            WalkResult::Skip
        });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_names_chip_and_block_size() {
        let text = pipeline(&Options {
            chip: "sm_80".into(),
            block_size: 128,
            opt_level: 2,
        });
        assert!(text.starts_with("builtin.module(func.func(pgpu-spawn-to-parallel),"));
        assert!(text.contains("parallel-loop-tile-sizes=128"));
        assert!(text.contains("nvvm-attach-target{chip=sm_80 O=2}"));
        assert!(text.ends_with("gpu-module-to-binary{format=isa})"));
        assert!(text.contains(
            "gpu.module(convert-gpu-to-nvvm),pgpu-relax-atomics,pgpu-define-device-math,\
             pgpu-define-grid-barrier,pgpu-define-range-barrier,"
        ));
        assert!(text.contains("gpu-kernel-outlining,pgpu-reconverge-warps,"));
    }

    #[test]
    fn options_are_validated() {
        assert!(Options::default().validate().is_ok());
        let bad_chip = Options {
            chip: "gfx942".into(),
            ..Options::default()
        };
        assert_eq!(
            bad_chip.validate(),
            Err(OptionsError::Chip("gfx942".into()))
        );
        let bad_block = Options {
            block_size: 0,
            ..Options::default()
        };
        assert_eq!(bad_block.validate(), Err(OptionsError::BlockSize(0)));
        assert!(
            Options {
                chip: "sm_90a".into(),
                ..Options::default()
            }
            .validate()
            .is_ok()
        );
        let chip = |chip: &str| Options {
            chip: chip.into(),
            ..Options::default()
        };
        assert_eq!(
            chip("sm_999").validate(),
            Err(OptionsError::UnknownChip("sm_999".into()))
        );
        assert_eq!(
            chip("sm_80a").validate(),
            Err(OptionsError::UnknownChip("sm_80a".into()))
        );
        assert_eq!(
            chip("sm_60").validate(),
            Err(OptionsError::ChipTooOld("sm_60".into()))
        );
        assert_eq!(chip("sm_60").validate_syntax(), Ok(60));
        assert!(chip("sm_100f").validate().is_ok());
        assert!(chip("sm_121a").validate().is_ok());
    }
}
