//! `pgpu-nvptx-data-layout`: gives every `gpu.module` with an NVVM target
//! the data layout of LLVM's 64-bit NVPTX target ([`NVPTX_DATA_LAYOUT`],
//! as the `llvm.data_layout` attribute), unless it has one.
//!
//! `gpu-module-to-binary` translates a `gpu.module` to LLVM IR first and
//! sets the target machine's data layout on the result afterwards. A module
//! without a layout of its own is therefore translated with LLVM's default
//! one, in which `i64` and `f64` are only 4-byte aligned: every 64-bit load
//! and store that has no explicit alignment (all of the memref lowering's)
//! gets `align 4`, and the NVPTX backend splits it into two 32-bit accesses
//! (twice the memory instructions, and no 64-bit vector accesses).
//! Upstream's ROCDL lowering sets the AMDGPU layout on its modules, but
//! nothing on the NVVM path sets NVPTX's, hence this pass. It runs right
//! after `nvvm-attach-target`.

use crate::nvvm_modules::gpu_modules;
use melior::ir::{
    OperationRef,
    attribute::StringAttribute,
    operation::{OperationLike, OperationMutLike, OperationRefMut},
};
use pgpu_pass_infra::{Pass, PassFailure};

/// LLVM 22's data layout of `nvptx64-nvidia-cuda` (the same for every
/// chip; a unit test of `pgpu-backend-host` compares it with LLVM's).
pub const NVPTX_DATA_LAYOUT: &str = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64";

/// The attribute MLIR's translation to LLVM IR reads the layout from.
const DATA_LAYOUT_ATTRIBUTE: &str = "llvm.data_layout";

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct NvptxDataLayout;

impl Pass for NvptxDataLayout {
    const ARGUMENT: &'static str = "pgpu-nvptx-data-layout";
    const SUMMARY: &'static str = "Give NVVM gpu.modules NVPTX's data layout, so that 64-bit \
         accesses are translated 8-byte aligned";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        for gpu_module in gpu_modules(module) {
            if gpu_module.has_attribute(DATA_LAYOUT_ATTRIBUTE) || !targets_nvvm(gpu_module) {
                continue;
            }
            let context_ref = gpu_module.context();
            // SAFETY: the context outlives the pass run.
            let context = unsafe { context_ref.to_ref() };
            let layout = StringAttribute::new(context, NVPTX_DATA_LAYOUT);
            // SAFETY: the gpu.module is live and only its attributes change.
            let mut gpu_module = unsafe { OperationRefMut::from_raw(gpu_module.to_raw()) };
            gpu_module.set_discardable_attribute(DATA_LAYOUT_ATTRIBUTE, layout.into());
        }
        Ok(())
    }
}

/// Whether one of the module's `targets` is an `#nvvm.target`.
fn targets_nvvm(gpu_module: OperationRef) -> bool {
    gpu_module
        .attribute("targets")
        .is_ok_and(|targets| targets.to_string().contains("#nvvm.target"))
}
