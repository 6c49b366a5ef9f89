//! What the NVVM-level passes (`pgpu-define-grid-barrier`,
//! `pgpu-wait-grid-dependencies`) share: finding the `gpu.module`s and
//! their kernels, and the marker globals the runtime looks up in a loaded
//! module (`cuModuleGetGlobal`).

use melior::Context;
use melior::ir::{
    Attribute, Identifier, Location, Operation, OperationRef, Region,
    operation::{OperationBuilder, OperationLike, WalkOrder, WalkResult},
};
use pgpu_pass_infra::{PassFailure, emit_error};

/// Every `gpu.module` under `operation` (not nested in one another).
pub(crate) fn gpu_modules<'c, 'a>(operation: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut modules = Vec::new();
    operation.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("gpu.module") {
            modules.push(op.to_raw());
            return WalkResult::Skip;
        }
        WalkResult::Advance
    });
    // SAFETY: collected from the live IR; the callers replace ops inside
    // the gpu.modules, never the gpu.modules themselves.
    modules
        .into_iter()
        .map(|raw| unsafe { OperationRef::from_raw(raw) })
        .collect()
}

/// Whether `op` is an NVVM kernel (`llvm.func` marked `gpu.kernel` or
/// `nvvm.kernel`).
pub(crate) fn is_kernel(op: OperationRef) -> bool {
    op.name().as_string_ref().as_str() == Ok("llvm.func")
        && (op.has_attribute("gpu.kernel") || op.has_attribute("nvvm.kernel"))
}

/// `llvm.mlir.global external constant @<name>(1 : i32)` in global memory:
/// a marker that the runtime finds in the loaded module.
pub(crate) fn marker_global<'c>(
    context: &'c Context,
    name: &str,
    location: Location<'c>,
) -> Result<Operation<'c>, PassFailure> {
    let parse = |text: &str| {
        Attribute::parse(context, text)
            .ok_or_else(|| emit_error(location, &format!("cannot parse attribute {text}")))
    };
    OperationBuilder::new("llvm.mlir.global", location)
        .add_attributes(&[
            (Identifier::new(context, "addr_space"), parse("1 : i32")?),
            (Identifier::new(context, "constant"), parse("unit")?),
            (Identifier::new(context, "global_type"), parse("i32")?),
            (
                Identifier::new(context, "linkage"),
                parse("#llvm.linkage<external>")?,
            ),
            (
                Identifier::new(context, "sym_name"),
                parse(&format!("\"{name}\""))?,
            ),
            (Identifier::new(context, "value"), parse("1 : i32")?),
        ])
        .add_regions([Region::new()])
        .build()
        .map_err(|_| emit_error(location, &format!("cannot build the marker @{name}")))
}
