//! `pgpu-amdgpu-dispatch-sizes`: block and grid sizes from the HSA
//! dispatch packet.
//!
//! `convert-gpu-to-rocdl` lowers `gpu.block_dim` and `gpu.grid_dim` to
//! `rocdl.workgroup.dim.*` and `rocdl.grid.dim.*`, which MLIR translates
//! to calls of ROCm's device library (`__ockl_get_local_size`,
//! `__ockl_get_num_groups`); `gpu-module-to-binary` then looks for its
//! bitcode in a ROCm installation, which Debian's LLVM does not come with.
//! Upstream has no other lowering, hence this pass: run after
//! `convert-gpu-to-rocdl`, it replaces each of those ops in a `gpu.module`
//! for AMDGPU by a call of an always-inline function of ours that reads the
//! kernel's dispatch packet (`llvm.amdgcn.dispatch.ptr`, an
//! `hsa_kernel_dispatch_packet_t`):
//!
//! * the block size in dimension d is the 16-bit `workgroup_size` field at
//!   byte 4 + 2d;
//! * the grid size in blocks is the 32-bit `grid_size` (in work items) at
//!   byte 12 + 4d, divided by the block size and rounded up.
//!
//! These are the reads LLVM's AMDGPU backend knows: its
//! `amdgpu-lower-kernel-attributes` folds them to constants where the
//! kernel declares its block size (`known_block_size`), as the collectives'
//! kernels do. A CUDA block size is the size declared at launch, which is
//! what the packet holds (also for a last partial block, which CUDA's
//! uniform grids never have), so no remainder is taken into account.

use crate::device::{insert_helpers, ops_named, replace_with_call, rocdl_modules};
use melior::dialect::DialectHandle;
use melior::ir::{OperationRef, operation::OperationLike};
use pgpu_pass_infra::{Pass, PassFailure};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::LazyLock;

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct DispatchSizes;

const DIMENSIONS: [&str; 3] = ["x", "y", "z"];

/// The helper that replaces `op_name`, if it is one of the size ops.
fn helper_for(op_name: &str) -> Option<String> {
    let (kind, dimension) = if let Some(dimension) = op_name.strip_prefix("rocdl.workgroup.dim.") {
        ("workgroup_size", dimension)
    } else {
        ("workgroup_count", op_name.strip_prefix("rocdl.grid.dim.")?)
    };
    DIMENSIONS
        .contains(&dimension)
        .then(|| format!("__pgpu_amdgpu_{kind}_{dimension}"))
}

/// The helper functions, for every dimension.
fn library() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        let mut text = String::new();
        for (index, dimension) in DIMENSIONS.iter().enumerate() {
            let size_offset = 4 + 2 * index;
            let grid_offset = 12 + 4 * index;
            let _ = write!(
                text,
                r#"
llvm.func internal @__pgpu_amdgpu_workgroup_size_{dimension}() -> i32 attributes {{always_inline}} {{
  %packet = llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"() : () -> !llvm.ptr<4>
  %field = llvm.getelementptr inbounds %packet[{size_offset}] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
  %size = llvm.load %field invariant {{alignment = 2 : i64}} : !llvm.ptr<4> -> i16
  %wide = llvm.zext %size : i16 to i32
  llvm.return %wide : i32
}}
llvm.func internal @__pgpu_amdgpu_workgroup_count_{dimension}() -> i32 attributes {{always_inline}} {{
  %packet = llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"() : () -> !llvm.ptr<4>
  %field = llvm.getelementptr inbounds %packet[{grid_offset}] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
  %items = llvm.load %field invariant {{alignment = 4 : i64}} : !llvm.ptr<4> -> i32
  %size = llvm.call @__pgpu_amdgpu_workgroup_size_{dimension}() : () -> i32
  %one = llvm.mlir.constant(1 : i32) : i32
  %less = llvm.sub %size, %one : i32
  %rounded = llvm.add %items, %less : i32
  %count = llvm.udiv %rounded, %size : i32
  llvm.return %count : i32
}}
"#
            );
        }
        text
    });
    &TEXT
}

impl Pass for DispatchSizes {
    const ARGUMENT: &'static str = "pgpu-amdgpu-dispatch-sizes";
    const SUMMARY: &'static str = "Read block and grid sizes (rocdl.workgroup.dim.*, \
         rocdl.grid.dim.*) from the HSA dispatch packet instead of ROCm's device library";

    fn dependent_dialects() -> Vec<DialectHandle> {
        vec![DialectHandle::llvm()]
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for (module, _) in rocdl_modules(operation) {
            let replacements: Vec<(OperationRef, String)> =
                ops_named(module, |name| helper_for(name).is_some())
                    .into_iter()
                    .filter_map(|op| {
                        let helper = helper_for(op.name().as_string_ref().as_str().ok()?)?;
                        Some((op, helper))
                    })
                    .collect();
            // The counts divide by the sizes.
            let sizes: Vec<String> = replacements
                .iter()
                .map(|(_, helper)| helper.replace("workgroup_count", "workgroup_size"))
                .collect();
            let needed: BTreeSet<&str> = replacements
                .iter()
                .map(|(_, helper)| helper.as_str())
                .chain(sizes.iter().map(String::as_str))
                .collect();
            insert_helpers(module, library(), &needed)?;
            for (op, helper) in &replacements {
                replace_with_call(*op, helper, &[])?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_ops_name_their_helpers() {
        assert_eq!(
            helper_for("rocdl.workgroup.dim.y").as_deref(),
            Some("__pgpu_amdgpu_workgroup_size_y")
        );
        assert_eq!(
            helper_for("rocdl.grid.dim.x").as_deref(),
            Some("__pgpu_amdgpu_workgroup_count_x")
        );
        assert_eq!(helper_for("rocdl.grid.dim.w"), None);
        assert_eq!(helper_for("rocdl.workitem.id.x"), None);
        for name in [
            "__pgpu_amdgpu_workgroup_size_z",
            "__pgpu_amdgpu_workgroup_count_z",
        ] {
            let header = format!("llvm.func internal @{name}(");
            assert_eq!(library().matches(&header).count(), 1, "{header}");
        }
    }
}
