//! `pgpu-link-gpu-collectives`: defines the GPU collectives that host code
//! declares.
//!
//! `pgpu-offload-kernels` gives every host `pgpu.list.*` collective a GPU
//! branch that calls `@pgpu_coll_<collective>_<T>` (e.g.
//! `@pgpu_coll_scan_add_i32`), declared as a private function. This pass
//! replaces each such declaration by the definition [`crate::collectives`]
//! generates: the host functions (which allocate scratch and launch with
//! `gpu.launch_func`) and the `gpu.module` of kernels, parsed from the
//! generated text and moved into the module, which becomes a
//! `gpu.container_module`. A declaration of an unknown collective is an
//! error. The generated code is our own IR (upstream has no list
//! collectives to link instead).

use crate::collectives::{self, Config};
use melior::ir::{OperationRef, operation::OperationLike};
use mlir_sys::{
    MlirOperation, MlirStringRef, mlirBlockAppendOwnedOperation, mlirBlockGetFirstOperation,
    mlirIdentifierStr, mlirModuleCreateParse, mlirModuleDestroy, mlirModuleGetBody,
    mlirOperationDestroy, mlirOperationGetAttributeByName, mlirOperationGetBlock,
    mlirOperationGetContext, mlirOperationGetName, mlirOperationGetNextInBlock,
    mlirOperationGetNumRegions, mlirOperationGetRegion, mlirOperationRemoveFromParent,
    mlirOperationSetAttributeByName, mlirRegionGetFirstBlock, mlirStringAttrGetValue,
    mlirUnitAttrGet,
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error, string_ref_to_string};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct LinkGpuCollectives;

fn string_ref(text: &str) -> MlirStringRef {
    MlirStringRef {
        data: text.as_ptr().cast(),
        length: text.len(),
    }
}

/// The operations of a block, in order.
///
/// # Safety
/// `first` is null or a live op whose block is not changed meanwhile.
unsafe fn ops_from(first: MlirOperation) -> Vec<MlirOperation> {
    let mut ops = vec![];
    let mut current = first;
    while !current.ptr.is_null() {
        ops.push(current);
        // SAFETY: the caller's contract.
        current = unsafe { mlirOperationGetNextInBlock(current) };
    }
    ops
}

/// The op's name and its `sym_name`, if any.
///
/// # Safety
/// `op` is live.
unsafe fn name_and_symbol(op: MlirOperation) -> (String, Option<String>) {
    // SAFETY: the caller's contract.
    unsafe {
        let name = string_ref_to_string(mlirIdentifierStr(mlirOperationGetName(op)));
        let symbol = mlirOperationGetAttributeByName(op, string_ref("sym_name"));
        let symbol =
            (!symbol.ptr.is_null()).then(|| string_ref_to_string(mlirStringAttrGetValue(symbol)));
        (name, symbol)
    }
}

/// Whether the function op has no body.
///
/// # Safety
/// `op` is live.
unsafe fn is_declaration(op: MlirOperation) -> bool {
    // SAFETY: the caller's contract.
    unsafe {
        mlirOperationGetNumRegions(op) == 0
            || mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0))
                .ptr
                .is_null()
    }
}

impl Pass for LinkGpuCollectives {
    const ARGUMENT: &'static str = "pgpu-link-gpu-collectives";
    const SUMMARY: &'static str =
        "Define the declared @pgpu_coll_* GPU collectives (kernels and host launch code)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::func(),
            DialectHandle::gpu(),
            DialectHandle::llvm(),
            DialectHandle::memref(),
            DialectHandle::arith(),
            DialectHandle::scf(),
        ]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module_op = module.to_raw();
        let location = module.location();
        // SAFETY: the pass owns the module during its run; ops are moved
        // between live blocks and the parsed module is destroyed once empty
        // of what we took.
        unsafe {
            let body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module_op, 0));
            let context = mlirOperationGetContext(module_op);
            let top: Vec<MlirOperation> = ops_from(mlirBlockGetFirstOperation(body));
            let mut defined: Vec<String> =
                top.iter().filter_map(|op| name_and_symbol(*op).1).collect();
            let mut linked = false;
            for op in top {
                let (name, Some(symbol)) = name_and_symbol(op) else {
                    continue;
                };
                if name != "func.func" || !symbol.starts_with("pgpu_coll_") || !is_declaration(op) {
                    continue;
                }
                let Some((collective, elem)) = collectives::all()
                    .into_iter()
                    .find(|(collective, elem)| collectives::symbol(*collective, *elem) == symbol)
                else {
                    return Err(emit_error(
                        location,
                        &format!("no GPU implementation of the collective @{symbol}"),
                    ));
                };
                let generated = collectives::generate(collective, elem, &Config::default())
                    .map_err(|error| emit_error(location, &format!("@{symbol}: {error}")))?;
                let text = format!("{}\0", generated.text);
                let parsed =
                    mlirModuleCreateParse(context, string_ref(&text[..generated.text.len()]));
                if parsed.ptr.is_null() {
                    return Err(emit_error(
                        location,
                        &format!("internal error: the generated @{symbol} does not parse"),
                    ));
                }
                let parsed_body = mlirModuleGetBody(parsed);
                for generated_op in ops_from(mlirBlockGetFirstOperation(parsed_body)) {
                    let (_, generated_symbol) = name_and_symbol(generated_op);
                    if let Some(generated_symbol) = &generated_symbol {
                        if *generated_symbol == symbol {
                            // Replaces the declaration below.
                        } else if defined.contains(generated_symbol) {
                            continue;
                        } else {
                            defined.push(generated_symbol.clone());
                        }
                    }
                    mlirOperationRemoveFromParent(generated_op);
                    mlirBlockAppendOwnedOperation(body, generated_op);
                }
                mlirModuleDestroy(parsed);
                debug_assert_eq!(mlirOperationGetBlock(op).ptr, body.ptr);
                mlirOperationRemoveFromParent(op);
                mlirOperationDestroy(op);
                linked = true;
            }
            if linked {
                mlirOperationSetAttributeByName(
                    module_op,
                    string_ref("gpu.container_module"),
                    mlirUnitAttrGet(context),
                );
            }
        }
        Ok(())
    }
}
