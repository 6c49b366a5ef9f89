//! `pgpu-propagate-group-ranks`: a parameter of a Fork synchronous function
//! that every call passes the calling group's rank becomes the callee's
//! own group rank.
//!
//! Fork's `$` (the group-relative processor ID) reaches a `sync` function
//! as a hidden parameter (frontends/fork): splits do not renumber it, so it
//! is a value, not `pgpu.group.rank`. Called at the statement level of a
//! `start` body, though, it *is* the group rank (`start` sets `$` to the
//! rank, and the called function runs in the caller's group, ranked the
//! same). Seen as a parameter it is just a divergent value: stores
//! `a[$]` need Priority CRCW claims, and `if ($ < k)` compacts its sides.
//! Seen as `pgpu.group.rank` the passes know that it names one element
//! per member and that `$ < k` splits at a rank (`pgpu-lower-synchronous`,
//! `pgpu-lower-groups`, `pgpu-block-groups`).
//!
//! The pass finds, as the greatest fixed point over the calls, the
//! parameters (of type `i32`, `i64` or `index`) of the functions marked
//! `pgpu.synchronous` for which every `func.call` passes
//!
//! * a `pgpu.group.rank` (through value-preserving integer casts) read in
//!   the group that makes the call: the same split, fork, synchronous spawn
//!   or function region, not an enclosing one whose subgroup the call is
//!   in; or
//! * such a parameter of the calling function, with the call directly in
//!   that function's group (not inside a split or fork there).
//!
//! Each such parameter's uses become a `pgpu.group.rank` read at the
//! function's entry (cast to the parameter's type). A function whose
//! address is taken (`func.constant`) keeps its parameters, and so does
//! one without calls. The result is the same in every member, whatever the optimizer
//! later proves: the group at a function's entry is the group at its call.
//!
//! We write this pass because Fork's group ranks have no upstream
//! counterpart.

use crate::{
    build::Builder,
    inline_spmd::symbol_attribute,
    ir::{Blk, Op, Val},
    lower_groups::group_context,
    unsynchronized::strip_casts,
};
use melior::ir::{TypeLike, r#type::IntegerType};
use pgpu_pass_infra::{Pass, PassFailure};
use std::collections::{HashMap, HashSet};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct PropagateGroupRanks;

impl Pass for PropagateGroupRanks {
    const ARGUMENT: &'static str = "pgpu-propagate-group-ranks";
    const SUMMARY: &'static str = "Turn parameters of Fork synchronous functions that every call passes the caller's group rank into the callee's group rank";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        vec![melior::dialect::DialectHandle::arith()]
    }

    fn run(&self, module: melior::ir::OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let nested = module.nested();
        let functions: HashMap<String, Op> = nested
            .iter()
            .filter(|op| op.is("func.func") && op.has_attribute("pgpu.synchronous"))
            .filter_map(|op| Some((symbol_attribute(*op, "sym_name")?, *op)))
            .collect();
        let mut calls: HashMap<String, Vec<Op>> = HashMap::new();
        let mut referenced = HashSet::new();
        for op in &nested {
            if op.is("func.call") {
                if let Some(callee) = symbol_attribute(*op, "callee") {
                    calls.entry(callee).or_default().push(*op);
                }
            } else if op.is("func.constant")
                && let Some(name) = symbol_attribute(*op, "value")
            {
                // The function's address: called indirectly.
                referenced.insert(name);
            }
        }
        // Optimistic start: every parameter of a suitable type of a
        // function with calls and no other references.
        let mut ranks: HashSet<(String, usize)> = HashSet::new();
        for (name, function) in &functions {
            if referenced.contains(name) || !calls.contains_key(name) {
                continue;
            }
            let Some(entry) = function.entry_block(0) else {
                continue;
            };
            for (index, argument) in entry.arguments().into_iter().enumerate() {
                if is_rank_type(argument) {
                    ranks.insert((name.clone(), index));
                }
            }
        }
        loop {
            let kept: HashSet<(String, usize)> = ranks
                .iter()
                .filter(|(name, index)| {
                    calls[name].iter().all(|call| {
                        call.operands()
                            .get(*index)
                            .is_some_and(|value| is_callers_rank(*value, *call, &ranks, &functions))
                    })
                })
                .cloned()
                .collect();
            if kept.len() == ranks.len() {
                break;
            }
            ranks = kept;
        }
        for (name, index) in ranks {
            let function = functions[&name];
            let Some(entry) = function.entry_block(0) else {
                continue;
            };
            let argument = entry.arguments()[index];
            if argument.uses().is_empty() {
                continue;
            }
            replace_by_rank(entry, argument).map_err(|_| PassFailure)?;
        }
        Ok(())
    }
}

/// Whether `value` has a type a rank is passed as.
fn is_rank_type(value: Val) -> bool {
    let ty = value.melior_type();
    ty.is_index()
        || IntegerType::try_from(ty).is_ok_and(|int| int.width() == 32 || int.width() == 64)
}

/// Whether `value`, an operand of `call`, is the group rank of the group
/// that makes the call.
fn is_callers_rank(
    value: Val,
    call: Op,
    ranks: &HashSet<(String, usize)>,
    functions: &HashMap<String, Op>,
) -> bool {
    let value = strip_casts(value);
    let group = group_context(call);
    if group.is_none() {
        return false;
    }
    match value.defining_op() {
        Some(op) => op.is("pgpu.group.rank") && group_context(op) == group,
        None => {
            // SAFETY: a live block argument.
            let (block, number) = unsafe {
                (
                    Blk(mlir_sys::mlirBlockArgumentGetOwner(value.0)),
                    mlir_sys::mlirBlockArgumentGetArgNumber(value.0) as usize,
                )
            };
            let Some(owner) = block.parent_op() else {
                return false;
            };
            owner.is("func.func")
                && group == Some(owner)
                && owner.entry_block(0) == Some(block)
                && symbol_attribute(owner, "sym_name").is_some_and(|name| {
                    functions.contains_key(&name) && ranks.contains(&(name, number))
                })
        }
    }
}

/// Replaces the uses of the entry block argument `argument` by the group
/// rank read at the start of `entry`.
fn replace_by_rank(entry: Blk, argument: Val) -> crate::build::Built<()> {
    let first = entry.first().ok_or(PassFailure)?;
    let at = Builder::before(first);
    let index_type = at.index_type();
    let rank = at.value("pgpu.group.rank", &[], index_type, &[])?;
    let ty = argument.melior_type();
    let value = if ty.is_index() {
        rank
    } else {
        at.value("arith.index_cast", &[rank], ty, &[])?
    };
    argument.replace_all_uses(value);
    Ok(())
}
