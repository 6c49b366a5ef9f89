//! `pgpu-inline-spmd`: inlines the functions that contain barriers and
//! collectives into the SPMD regions that call them.
//!
//! Step 1 of the BSGP compilation algorithm (seeds/bsgp.txt, Section 4.2):
//! "Inline all calls to functions containing barriers". The frontends mark
//! such functions `pgpu.spmd_inline`; their bodies are one block (control
//! flow is structured), so inlining a call moves a copy of that block in
//! front of the call, binds the arguments to the call's operands, and
//! replaces the call's results by the operands of its `func.return`. Every
//! inlined op gets the location `callsite(callee_loc at call_loc)`, so
//! diagnostics after inlining point at both. Calls are inlined until none
//! is left (an inline function may call another); a chain deeper than
//! [`MAX_DEPTH`] is reported as recursion. The marked functions are erased
//! afterwards: they can only be called from SPMD code, and none is left.
//!
//! We write this pass rather than run upstream `inline` because that would
//! inline every host function too (it has no way to select callees by an
//! attribute), and it would need an inliner interface for every pgpu op.

use crate::ir::{Op, string_ref};
use melior::ir::OperationRef;
use mlir_sys::{
    mlirAttributeIsAFlatSymbolRef, mlirAttributeIsAString, mlirFlatSymbolRefAttrGetValue,
    mlirLocationCallSiteGet, mlirOperationGetAttributeByName, mlirStringAttrGetValue,
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error, string_ref_to_string};
use std::collections::HashMap;

/// The attribute that marks functions to inline into SPMD code.
pub(crate) const SPMD_INLINE: &str = "pgpu.spmd_inline";

/// Longest chain of inline calls before we call it recursion.
const MAX_DEPTH: usize = 64;

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct InlineSpmd;

impl Pass for InlineSpmd {
    const ARGUMENT: &'static str = "pgpu-inline-spmd";
    const SUMMARY: &'static str =
        "Inline functions marked pgpu.spmd_inline (barriers, collectives) into their SPMD callers";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let functions = spmd_functions(module);
        check_not_recursive(&functions)?;
        for depth in 0.. {
            let calls = spmd_calls(module, &functions);
            let Some(&(first, _)) = calls.first() else {
                break;
            };
            if depth == MAX_DEPTH {
                return Err(emit_error(
                    first.melior_location(),
                    &format!(
                        "inline functions call each other more than {MAX_DEPTH} levels deep: \
                         recursion cannot be inlined into SPMD code"
                    ),
                ));
            }
            for (call, callee) in calls {
                inline_call(call, callee)?;
            }
        }
        // Only SPMD code may call them; keep any that other code still names.
        let still_called: Vec<String> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("func.call"))
            .filter(|call| !functions.values().any(|function| call.is_within(*function)))
            .filter_map(|call| symbol_attribute(call, "callee"))
            .collect();
        for (name, function) in functions {
            if !still_called.contains(&name) {
                function.erase();
            }
        }
        Ok(())
    }
}

/// The `sym_name` of a function, or the symbol a `func.call` calls.
pub(crate) fn symbol_attribute(op: Op, name: &str) -> Option<String> {
    // SAFETY: live operation; the attribute is only read.
    unsafe {
        let attribute = mlirOperationGetAttributeByName(op.0, string_ref(name));
        if attribute.ptr.is_null() {
            None
        } else if mlirAttributeIsAFlatSymbolRef(attribute) {
            Some(string_ref_to_string(mlirFlatSymbolRefAttrGetValue(
                attribute,
            )))
        } else if mlirAttributeIsAString(attribute) {
            Some(string_ref_to_string(mlirStringAttrGetValue(attribute)))
        } else {
            None
        }
    }
}

/// The module's functions marked [`SPMD_INLINE`], by name.
pub(crate) fn spmd_functions(module: Op) -> HashMap<String, Op> {
    let Some(body) = module.entry_block(0) else {
        return HashMap::new();
    };
    body.ops()
        .into_iter()
        .filter(|op| op.is("func.func") && op.has_attribute(SPMD_INLINE))
        .filter_map(|op| Some((symbol_attribute(op, "sym_name")?, op)))
        .collect()
}

/// The inline functions `function` calls directly.
fn callees(function: Op, functions: &HashMap<String, Op>) -> Vec<String> {
    function
        .nested()
        .into_iter()
        .filter(|op| op.is("func.call"))
        .filter_map(|call| symbol_attribute(call, "callee"))
        .filter(|callee| functions.contains_key(callee))
        .collect()
}

/// Fails on an inline function that can reach itself through calls.
fn check_not_recursive(functions: &HashMap<String, Op>) -> Result<(), PassFailure> {
    let mut names: Vec<&String> = functions.keys().collect();
    names.sort();
    for name in names {
        let mut seen = vec![];
        let mut pending = callees(functions[name], functions);
        while let Some(callee) = pending.pop() {
            if &callee == name {
                return Err(emit_error(
                    functions[name].melior_location(),
                    &format!(
                        "inline SPMD function '{name}' calls itself: recursion cannot be inlined into SPMD code"
                    ),
                ));
            }
            if !seen.contains(&callee) {
                pending.extend(callees(functions[&callee], functions));
                seen.push(callee);
            }
        }
    }
    Ok(())
}

/// Calls of `functions` inside `pgpu.spawn` regions, with their callees.
fn spmd_calls(module: Op, functions: &HashMap<String, Op>) -> Vec<(Op, Op)> {
    module
        .nested()
        .into_iter()
        .filter(|op| op.is("pgpu.spawn"))
        .flat_map(|spawn| spawn.nested())
        .filter(|op| op.is("func.call"))
        .filter_map(|call| {
            let callee = functions.get(&symbol_attribute(call, "callee")?)?;
            Some((call, *callee))
        })
        .collect()
}

/// Replaces `call` by a copy of the body of `callee`.
pub(crate) fn inline_call(call: Op, callee: Op) -> Result<(), PassFailure> {
    let copy = callee.clone_detached();
    let outcome = inline_copy(call, copy);
    // SAFETY: the copy is detached and owned here; nothing refers to it now.
    unsafe { mlir_sys::mlirOperationDestroy(copy.0) };
    outcome
}

fn inline_copy(call: Op, copy: Op) -> Result<(), PassFailure> {
    let body = match copy.entry_block(0) {
        Some(block) if block.next_in_region().is_none() => block,
        _ => {
            return Err(emit_error(
                call.melior_location(),
                "cannot inline a function without a body or with more than one block",
            ));
        }
    };
    for (argument, operand) in body.arguments().into_iter().zip(call.operands()) {
        argument.replace_all_uses(operand);
    }
    let call_location = call.location();
    let mut returned = Vec::new();
    for op in body.ops() {
        if op.is("func.return") {
            returned = op.operands();
            continue;
        }
        op.move_before(call);
        for inlined in std::iter::once(op).chain(op.nested()) {
            // SAFETY: both locations belong to the pass's context.
            inlined.set_location(unsafe {
                mlirLocationCallSiteGet(inlined.location(), call_location)
            });
        }
    }
    for (result, value) in call.results().into_iter().zip(returned) {
        result.replace_all_uses(value);
    }
    call.erase();
    Ok(())
}
