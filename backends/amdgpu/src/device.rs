//! What the AMDGPU passes share: finding the `gpu.module`s compiled for
//! AMDGPU and their wave size, inserting our helper functions (LLVM
//! dialect text, `always_inline`) into a module, and replacing an op by a
//! call of one of them.

use melior::ir::{
    Attribute, BlockLike, Identifier, OperationRef, Value, ValueLike,
    operation::{OperationBuilder, OperationLike},
};
use pgpu_backend_nvptx::nvvm_modules::{
    block_ops, erase, gpu_modules, insert_definition, module_body, symbol,
};
use pgpu_pass_infra::{PassFailure, emit_error};
use std::collections::{BTreeSet, HashSet};

/// The `gpu.module`s under `operation` whose target is `#rocdl.target`,
/// with their lanes per wave (32 where the target's flags say
/// `no_wave64`).
pub fn rocdl_modules<'c, 'a>(operation: OperationRef<'c, 'a>) -> Vec<(OperationRef<'c, 'a>, u32)> {
    gpu_modules(operation)
        .into_iter()
        .filter_map(|module| {
            let targets = module.attribute("targets").ok()?.to_string();
            targets.contains("#rocdl.target").then(|| {
                let wave = if targets.contains("no_wave64") {
                    32
                } else {
                    64
                };
                (module, wave)
            })
        })
        .collect()
}

/// Inserts, at the start of `module`, the functions of `library` named in
/// `needed` that the module does not define yet.
pub fn insert_helpers(
    module: OperationRef,
    library: &str,
    needed: &BTreeSet<&str>,
) -> Result<(), PassFailure> {
    if needed.is_empty() {
        return Ok(());
    }
    let location = module.location();
    let Some(body) = module_body(module) else {
        return Err(emit_error(location, "a gpu.module without a body"));
    };
    let ops = block_ops(body);
    let Some(anchor) = ops.first().copied() else {
        return Ok(());
    };
    let existing: HashSet<String> = ops.iter().filter_map(|op| symbol(*op)).collect();
    let context_ref = module.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    insert_definition(
        context,
        library,
        "pgpu's AMDGPU helper functions",
        |name| needed.contains(name) && !existing.contains(name),
        anchor,
        location,
    )
}

/// Replaces `op` by `llvm.call @callee(operands)` with `op`'s result
/// types, and its results' uses by the call's.
pub fn replace_with_call(
    op: OperationRef,
    callee: &str,
    operands: &[Value],
) -> Result<(), PassFailure> {
    let location = op.location();
    let context_ref = op.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let attribute = |text: &str| {
        Attribute::parse(context, text)
            .ok_or_else(|| emit_error(location, &format!("cannot parse attribute {text}")))
    };
    let results: Vec<_> = op.results().map(|result| result.r#type()).collect();
    let call = OperationBuilder::new("llvm.call", location)
        .add_operands(operands)
        .add_results(&results)
        .add_attributes(&[
            (
                Identifier::new(context, "callee"),
                attribute(&format!("@{callee}"))?,
            ),
            (
                Identifier::new(context, "operandSegmentSizes"),
                attribute(&format!("array<i32: {}, 0>", operands.len()))?,
            ),
            (
                Identifier::new(context, "op_bundle_sizes"),
                attribute("array<i32>")?,
            ),
        ])
        .build()
        .map_err(|_| emit_error(location, &format!("cannot build the call of @{callee}")))?;
    let Some(block) = op.block() else {
        return Err(emit_error(location, "an op outside a block"));
    };
    let call = block.insert_operation_before(op, call);
    for (old, new) in op.results().zip(call.results()) {
        // SAFETY: two live values of the same type.
        unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), new.to_raw()) };
    }
    erase(op);
    Ok(())
}

/// Every op under `module` whose name `select` accepts, in walk order.
pub fn ops_named<'c, 'a>(
    module: OperationRef<'c, 'a>,
    select: impl Fn(&str) -> bool,
) -> Vec<OperationRef<'c, 'a>> {
    use melior::ir::operation::{WalkOrder, WalkResult};
    let mut found = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str().is_ok_and(&select) {
            found.push(op.to_raw());
        }
        WalkResult::Advance
    });
    // SAFETY: collected from the live module; the callers replace each op
    // once and never one of the others.
    found
        .into_iter()
        .map(|raw| unsafe { OperationRef::from_raw(raw) })
        .collect()
}
