//! Value saving (seeds/bsgp.txt, Section 4.2, steps 2, 5 and 6; Table 1):
//! which values cross supersteps, and which of them must be saved.
//!
//! After `pgpu-form-supersteps` every value used outside the superstep that
//! defines it is a result of that superstep. For each such value the
//! analysis records its defining superstep and its using supersteps, and
//! decides:
//!
//! * **dead**: no superstep uses it (nothing to save);
//! * **recomputed**: it is computed from constants, global addresses
//!   (`memref.get_global`), values of the host and rank or size queries by
//!   pure ops, and no rank reassignment (for
//!   `pgpu.rank`) or thread fork/kill (for `pgpu.size`) lies between its
//!   definition and any use. This is the paper's constant propagation of
//!   `thread.rank` (step 2: "rk1 can be replaced by thread.rank");
//! * **saved**: everything else, exactly the values used outside their
//!   defining superstep (step 5). A saved value is *uniform* when every
//!   thread holds the same one (computed from host values, `pgpu.require`
//!   results, sizes and collective totals): one copy suffices. A per-thread
//!   value used after a rank reassignment is loaded with the old rank there
//!   (Listing 4, `pass2`) and, if used later still, saved again under the
//!   new rank.
//!
//! `pgpu-save-values` applies the decisions: it clones recomputed chains
//! into their using supersteps and drops dead and recomputed results, so
//! that the results left are exactly the saved values.
//! `pgpu-print-saved-values` prints the analysis as a table per spawn.

use crate::{
    form_supersteps::THREAD_PRIMITIVES,
    ir::{Blk, Op, Val},
};
use melior::ir::{
    Identifier, OperationRef, Region,
    attribute::Attribute,
    operation::{OperationBuilder, OperationLike},
};
use mlir_sys::{mlirOperationSetOperands, mlirRegionTakeBody};
use pgpu_pass_infra::{Pass, PassFailure, emit_error};
use std::{collections::HashMap, fmt::Write};

/// Longest chain of ops recomputed instead of saving one value.
const MAX_RECOMPUTED_OPS: usize = 16;

/// What happens to a value that crosses supersteps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Dead,
    Recomputed,
    Saved { uniform: bool },
}

/// One result of one superstep.
#[derive(Debug, Clone)]
pub(crate) struct CrossingValue {
    /// Index of the defining superstep in its spawn (0-based).
    pub step: usize,
    /// Result number of the value in the superstep.
    pub result: usize,
    /// The value inside the superstep (the yield's operand).
    pub value: Val,
    /// Supersteps that use it, ascending.
    pub uses: Vec<usize>,
    pub decision: Decision,
    /// Supersteps in which it is loaded with the old rank.
    pub reloaded_by_old_rank: Vec<usize>,
}

/// The supersteps of a spawn and where ranks and sizes change.
pub(crate) struct Supersteps {
    pub spawn: Op,
    pub steps: Vec<Op>,
    /// `ranks_change[i]`: ranks are new when superstep `i` starts.
    pub ranks_change: Vec<bool>,
    /// `size_changes[i]`: the thread count is new when superstep `i` starts.
    pub size_changes: Vec<bool>,
}

impl Supersteps {
    /// The supersteps of `spawn`, if its body is made of supersteps.
    pub fn of(spawn: Op) -> Option<Self> {
        let steps: Vec<Op> = spawn
            .entry_block(0)?
            .ops()
            .into_iter()
            .filter(|op| op.is("pgpu.superstep"))
            .collect();
        if steps.is_empty() {
            return None;
        }
        let mut ranks_change = vec![false; steps.len()];
        let mut size_changes = vec![false; steps.len()];
        for (index, step) in steps.iter().enumerate() {
            ranks_change[index] = step.has_attribute("rank_reassigned");
            if index == 0 {
                continue;
            }
            for op in steps[index - 1]
                .entry_block(0)
                .map(Blk::ops)
                .unwrap_or_default()
            {
                let name = op.name();
                if THREAD_PRIMITIVES.contains(&name.as_str()) {
                    ranks_change[index] = true;
                }
                if name == "pgpu.thread.fork" || name == "pgpu.thread.kill" {
                    size_changes[index] = true;
                }
            }
        }
        Some(Self {
            spawn,
            steps,
            ranks_change,
            size_changes,
        })
    }

    fn index_of(&self, op: Op) -> Option<usize> {
        let ancestor = op.ancestor_under(self.spawn)?;
        self.steps.iter().position(|step| *step == ancestor)
    }

    fn changes_between(flags: &[bool], from: usize, to: usize) -> bool {
        flags
            .iter()
            .take(to + 1)
            .skip(from + 1)
            .any(|changed| *changed)
    }

    /// The crossing values of every superstep with their decisions.
    pub fn crossing_values(&self) -> Vec<CrossingValue> {
        let mut found = vec![];
        for (step, superstep) in self.steps.iter().enumerate() {
            let Some(terminator) = superstep.entry_block(0).and_then(Blk::terminator) else {
                continue;
            };
            for (result, value) in terminator.operands().into_iter().enumerate() {
                let mut uses: Vec<usize> = superstep
                    .result(result)
                    .uses()
                    .iter()
                    .filter_map(|found| self.index_of(found.owner))
                    .collect();
                uses.sort_unstable();
                uses.dedup();
                let decision = self.decide(superstep.result(result), value, step, &uses);
                // A thread primitive's own result (fork's child index) is
                // produced for the new ranks already.
                let produced_for_new_ranks = value
                    .defining_op()
                    .is_some_and(|op| THREAD_PRIMITIVES.contains(&op.name().as_str()));
                let reloaded_by_old_rank = match decision {
                    Decision::Saved { uniform: false } => (step + 1
                        ..=uses.last().copied().unwrap_or(step))
                        .filter(|index| self.ranks_change[*index])
                        .filter(|index| !(produced_for_new_ranks && *index == step + 1))
                        .collect(),
                    _ => vec![],
                };
                found.push(CrossingValue {
                    step,
                    result,
                    value,
                    uses,
                    decision,
                    reloaded_by_old_rank,
                });
            }
        }
        found
    }

    fn decide(&self, outside: Val, value: Val, step: usize, uses: &[usize]) -> Decision {
        let Some(last) = uses.last().copied() else {
            return Decision::Dead;
        };
        let communicated = outside
            .uses()
            .iter()
            .any(|found| found.owner.is("pgpu.thread.get") || found.owner.is("pgpu.thread.put"));
        if !communicated && self.recomputable(value, step, last).is_some() {
            return Decision::Recomputed;
        }
        Decision::Saved {
            uniform: self.is_uniform(value),
        }
    }

    /// The ops to clone, definitions first, to recompute `value` of superstep
    /// `step` in a superstep up to `last`; `None` if it cannot be recomputed.
    pub fn recomputable(&self, value: Val, step: usize, last: usize) -> Option<Vec<Op>> {
        let mut chain = vec![];
        self.collect_recomputable(value, step, last, &mut chain)
            .then_some(chain)
    }

    fn collect_recomputable(
        &self,
        value: Val,
        step: usize,
        last: usize,
        chain: &mut Vec<Op>,
    ) -> bool {
        let Some(op) = value.defining_op() else {
            // A block argument: the spawn's own arguments are host values.
            return !value_is_inside(value, self.spawn);
        };
        if !op.is_within(self.spawn) || chain.contains(&op) {
            return true;
        }
        // Only ops of the defining superstep itself, not values it received.
        if op.parent() != Some(self.steps[step]) {
            return false;
        }
        let name = op.name();
        let allowed = match name.as_str() {
            "pgpu.rank" => !Self::changes_between(&self.ranks_change, step, last),
            "pgpu.size" => !Self::changes_between(&self.size_changes, step, last),
            // A global's address, the same everywhere.
            "memref.get_global" => true,
            _ => is_pure(op),
        };
        if !allowed || chain.len() >= MAX_RECOMPUTED_OPS {
            return false;
        }
        for operand in op.operands() {
            if !self.collect_recomputable(operand, step, last, chain) {
                return false;
            }
        }
        chain.push(op);
        true
    }

    /// Whether all threads hold the same `value`.
    pub fn is_uniform(&self, value: Val) -> bool {
        let Some(op) = value.defining_op() else {
            return !value_is_inside(value, self.spawn);
        };
        if !op.is_within(self.spawn) {
            return true;
        }
        if host_defined(op, value) {
            return true;
        }
        match op.name().as_str() {
            "memref.get_global" => true,
            "pgpu.superstep" => op
                .entry_block(0)
                .and_then(Blk::terminator)
                .and_then(|terminator| {
                    let index = op.results().iter().position(|result| *result == value)?;
                    Some(self.is_uniform(terminator.operand(index)))
                })
                .unwrap_or(false),
            _ => {
                is_pure(op)
                    && op
                        .operands()
                        .into_iter()
                        .all(|operand| self.is_uniform(operand))
            }
        }
    }
}

/// Ops whose result `value` every thread shares and the host computes:
/// require results, sizes, collective totals and list lengths.
pub(crate) fn host_defined(op: Op, value: Val) -> bool {
    match op.name().as_str() {
        "pgpu.require" | "pgpu.size" | "pgpu.reduce" | "pgpu.compact" | "pgpu.split" => true,
        "pgpu.scan" => value == op.result(1),
        _ => false,
    }
}

/// Whether `value` is a block argument of a block nested in `scope`.
pub(crate) fn value_is_inside(value: Val, scope: Op) -> bool {
    // SAFETY: live value; only its owner block is read.
    let block = unsafe { mlir_sys::mlirBlockArgumentGetOwner(value.0) };
    Blk(block)
        .parent_op()
        .is_some_and(|parent| parent.is_within(scope))
}

/// Side-effect-free ops without regions that can be recomputed anywhere.
pub(crate) fn is_pure(op: Op) -> bool {
    let name = op.name();
    op.num_regions() == 0 && matches!(name.split('.').next(), Some("arith" | "math" | "index"))
}

/// Every non-synchronous spawn made of supersteps in `module`.
pub(crate) fn superstep_spawns(module: Op) -> Vec<Supersteps> {
    module
        .nested()
        .into_iter()
        .filter(|op| op.is("pgpu.spawn") && !op.has_attribute("synchronous"))
        .filter_map(Supersteps::of)
        .collect()
}

/// `pgpu-save-values`: recomputes and drops the values that need no saving.
#[derive(Debug, Default)]
pub struct SaveValues;

impl Pass for SaveValues {
    const ARGUMENT: &'static str = "pgpu-save-values";
    const SUMMARY: &'static str = "Keep as superstep results exactly the values to save: recompute rank-derived values, drop dead ones";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let spawns: Vec<Op> = superstep_spawns(Op::of(module))
            .into_iter()
            .map(|supersteps| supersteps.spawn)
            .collect();
        for spawn in spawns {
            // A value computed from a recomputed one may become recomputable
            // itself: repeat until every result is saved. Each round drops
            // at least one result, so this ends.
            while let Some(supersteps) = Supersteps::of(spawn) {
                if !save_values_once(&supersteps)? {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// One round of recomputing and dropping; whether anything changed.
fn save_values_once(supersteps: &Supersteps) -> Result<bool, PassFailure> {
    let crossing = supersteps.crossing_values();
    if crossing
        .iter()
        .all(|value| matches!(value.decision, Decision::Saved { .. }))
    {
        return Ok(false);
    }
    for value in crossing
        .iter()
        .filter(|value| value.decision == Decision::Recomputed)
    {
        recompute(supersteps, value);
    }
    let mut kept: HashMap<usize, Vec<usize>> = HashMap::new();
    for value in &crossing {
        if matches!(value.decision, Decision::Saved { .. }) {
            kept.entry(value.step).or_default().push(value.result);
        }
    }
    for (index, superstep) in supersteps.steps.iter().enumerate() {
        let keep = kept.remove(&index).unwrap_or_default();
        if keep.len() != superstep.num_results() {
            shrink(*superstep, &keep)?;
        }
    }
    Ok(true)
}

/// Clones the chain computing `value` into each superstep that uses it.
fn recompute(supersteps: &Supersteps, value: &CrossingValue) {
    let superstep = supersteps.steps[value.step];
    let outside = superstep.result(value.result);
    let last = value.uses.last().copied().unwrap_or(value.step);
    let Some(chain) = supersteps.recomputable(value.value, value.step, last) else {
        return;
    };
    for user_index in &value.uses {
        let user = supersteps.steps[*user_index];
        let Some(first) = user.entry_block(0).and_then(Blk::first) else {
            continue;
        };
        let mut mapping: HashMap<Val, Val> = HashMap::new();
        for op in &chain {
            let copy = op.clone_detached();
            first.block_of().insert_raw_before(first, copy);
            for (index, operand) in copy.operands().into_iter().enumerate() {
                if let Some(mapped) = mapping.get(&operand) {
                    copy.set_operand(index, *mapped);
                }
            }
            for (original, cloned) in op.results().into_iter().zip(copy.results()) {
                mapping.insert(original, cloned);
            }
        }
        let Some(recomputed) = mapping.get(&value.value).copied() else {
            continue;
        };
        for found in outside.uses() {
            if found.owner.is_within(user) {
                found.owner.set_operand(found.index, recomputed);
            }
        }
    }
}

/// Rebuilds `superstep` with only the results at `keep` (ascending).
fn shrink(superstep: Op, keep: &[usize]) -> Result<(), PassFailure> {
    let location = superstep.melior_location();
    let context_ref = superstep.melior().context();
    // SAFETY: `context_ref` lives until the end of this function.
    let context = unsafe { context_ref.to_ref() };
    let results = superstep.results();
    let types: Vec<_> = keep
        .iter()
        .map(|index| results[*index].melior_type())
        .collect();
    let mut builder = OperationBuilder::new("pgpu.superstep", location)
        .add_results(&types)
        .add_regions([Region::new()]);
    if superstep.has_attribute("rank_reassigned") {
        builder = builder.add_attributes(&[(
            Identifier::new(context, "rank_reassigned"),
            Attribute::unit(context),
        )]);
    }
    let built = builder
        .build()
        .map_err(|error| emit_error(location, &format!("cannot build pgpu.superstep: {error}")))?;
    let replacement = superstep.block_of().insert_before(superstep, built);
    // SAFETY: both regions are live; the new one is empty.
    unsafe { mlirRegionTakeBody(replacement.region(0), superstep.region(0)) };
    if let Some(terminator) = replacement.entry_block(0).and_then(Blk::terminator) {
        let operands = terminator.operands();
        let kept: Vec<_> = keep.iter().map(|index| operands[*index].0).collect();
        // SAFETY: live terminator; the values outlive the call.
        unsafe { mlirOperationSetOperands(terminator.0, kept.len() as isize, kept.as_ptr()) };
    }
    for (position, index) in keep.iter().enumerate() {
        results[*index].replace_all_uses(replacement.result(position));
    }
    superstep.erase();
    Ok(())
}

/// `pgpu-print-saved-values`: prints the value-saving analysis (Table 1).
#[derive(Debug, Default)]
pub struct PrintSavedValues;

impl Pass for PrintSavedValues {
    const ARGUMENT: &'static str = "pgpu-print-saved-values";
    const SUMMARY: &'static str = "Print, per spawn, each value used across supersteps: definition, uses, saved or not (BSGP Table 1)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let mut text = String::new();
        for supersteps in superstep_spawns(Op::of(module)) {
            let _ = writeln!(
                text,
                "spawn at {}: {} supersteps",
                supersteps.spawn.source_position(),
                supersteps.steps.len()
            );
            for value in supersteps.crossing_values() {
                let uses: Vec<String> = value
                    .uses
                    .iter()
                    .map(|index| (index + 1).to_string())
                    .collect();
                let decision = match value.decision {
                    Decision::Dead => "dead".to_string(),
                    Decision::Recomputed => "recomputed".to_string(),
                    Decision::Saved { uniform: true } => "saved (uniform)".to_string(),
                    Decision::Saved { uniform: false } if value.reloaded_by_old_rank.is_empty() => {
                        "saved".to_string()
                    }
                    Decision::Saved { uniform: false } => {
                        let steps: Vec<String> = value
                            .reloaded_by_old_rank
                            .iter()
                            .map(|index| (index + 1).to_string())
                            .collect();
                        format!("saved, loaded by old rank in {}", steps.join(","))
                    }
                };
                let _ = writeln!(
                    text,
                    "  {}: defined {} used {}: {}",
                    value_name(&value),
                    value.step + 1,
                    uses.join(","),
                    decision
                );
            }
        }
        eprint!("{text}");
        Ok(())
    }
}

/// `op line:col` of the value's definition.
pub(crate) fn value_name(value: &CrossingValue) -> String {
    match value.value.defining_op() {
        Some(op) => format!("{} {}", op.name(), op.source_position()),
        None => "argument ?".to_string(),
    }
}
