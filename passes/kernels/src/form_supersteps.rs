//! `pgpu-form-supersteps`: splits every BSGP `pgpu.spawn` body into
//! `pgpu.superstep` regions at its barriers and collectives.
//!
//! Step 3 of the BSGP compilation algorithm (seeds/bsgp.txt, Section 4.2),
//! after inlining (`pgpu-inline-spmd`). The algorithm:
//!
//! 1. **par alignment** (Section 5, Listing 8, Figure 5). Each branch of a
//!    `pgpu.par` is cut after every synchronization op (barrier, collective,
//!    thread primitive) into segments. The k-th segments of all branches are
//!    moved, in branch order, in front of the par, followed by their k-th
//!    synchronization ops: the collectives and thread primitives of all
//!    branches, and one barrier standing for the branches' barriers (so the
//!    k-th barriers are aligned and the k-th supersteps bundled). The par's
//!    results become the values its branches yield. Inner pars go first.
//! 2. **splitting**. The flat body is cut into supersteps. A barrier ends a
//!    superstep and disappears; a `rank_reassigned` one marks the next
//!    superstep `rank_reassigned`. A collective or thread primitive stays at
//!    the end of the superstep it ends, so that its first phase is bundled
//!    with the code before it and its result is a value of that superstep
//!    used by the next (Figure 3b); consecutive ones share a superstep unless
//!    one uses another's result or a rank-changing thread primitive comes
//!    first. Empty supersteps are dropped (two barriers in a row are one),
//!    except an empty one before a `rank_reassigned` superstep that follows
//!    a thread primitive or starts the body (its ranks change once, from
//!    the ranks before it).
//! 3. **values across supersteps**. Every value defined in one superstep and
//!    used in a later one becomes a result of its superstep (yielded), and
//!    the later uses read that result. Deciding which of them are saved,
//!    recomputed or dead is `pgpu-save-values`' job.
//!
//! Fork's synchronous spawns are left alone (they are split by the group
//! lowering), and so are `grid` spawns (one kernel with grid barriers),
//! `block` spawns (one kernel of one thread block, synchronizing ranges of
//! its threads with `pgpu.range_barrier`) and bodies already made of
//! supersteps. A body that
//! still calls an inline function is an error: inline first.

use crate::ir::{Blk, Op, Val};
use melior::ir::{
    Block, Identifier, Location, OperationRef, Region, RegionLike, attribute::Attribute,
    operation::OperationBuilder, operation::OperationLike,
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error};
use std::collections::HashMap;

/// Collectives: every thread calls them; they end a superstep.
pub(crate) const COLLECTIVES: [&str; 5] = [
    "pgpu.reduce",
    "pgpu.scan",
    "pgpu.compact",
    "pgpu.split",
    "pgpu.sort_idx",
];

/// Thread primitives: collectives that give the threads new ranks (and, for
/// fork and kill, a new thread count).
pub(crate) const THREAD_PRIMITIVES: [&str; 4] = [
    "pgpu.thread.fork",
    "pgpu.thread.kill",
    "pgpu.thread.sortby",
    "pgpu.thread.split",
];

/// Whether `op` is a collective or a thread primitive.
pub(crate) fn is_boundary_op(op: Op) -> bool {
    let name = op.name();
    COLLECTIVES.contains(&name.as_str()) || THREAD_PRIMITIVES.contains(&name.as_str())
}

/// Whether `op` is a barrier, a collective or a thread primitive.
fn is_synchronization(op: Op) -> bool {
    op.is("pgpu.barrier") || is_boundary_op(op)
}

fn is_rank_reassigning_barrier(op: Op) -> bool {
    op.is("pgpu.barrier") && op.has_attribute("rank_reassigned")
}

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct FormSupersteps;

impl Pass for FormSupersteps {
    const ARGUMENT: &'static str = "pgpu-form-supersteps";
    const SUMMARY: &'static str = "Split pgpu.spawn bodies into pgpu.superstep regions at barriers and collectives, aligning par";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let spawns: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| {
                op.is("pgpu.spawn")
                    && !op.has_attribute("synchronous")
                    && !op.has_attribute("grid")
                    && !op.has_attribute("block")
            })
            .collect();
        for spawn in spawns {
            let Some(body) = spawn.entry_block(0) else {
                continue;
            };
            if body.ops().iter().any(|op| op.is("pgpu.superstep")) {
                continue;
            }
            check_inlined(module, spawn)?;
            for op in body.ops() {
                if op.is("pgpu.par") {
                    flatten_par(op)?;
                }
            }
            split(spawn, body)?;
        }
        Ok(())
    }
}

/// Fails on a call of an inline function left in `spawn`.
fn check_inlined(module: Op, spawn: Op) -> Result<(), PassFailure> {
    let inline_functions = crate::inline_spmd::spmd_functions(module);
    for call in spawn.nested().into_iter().filter(|op| op.is("func.call")) {
        if crate::inline_spmd::symbol_attribute(call, "callee")
            .is_some_and(|callee| inline_functions.contains_key(&callee))
        {
            return Err(emit_error(
                call.melior_location(),
                "calls an inline SPMD function: run pgpu-inline-spmd before pgpu-form-supersteps",
            ));
        }
    }
    Ok(())
}

/// A branch cut after each synchronization op: plain ops, then the op.
struct Segment {
    ops: Vec<Op>,
    synchronization: Option<Op>,
}

fn segments(block: Blk) -> Vec<Segment> {
    let mut segments = vec![];
    let mut ops = vec![];
    for op in block.ops() {
        if op.is("pgpu.yield") {
            continue;
        }
        if is_synchronization(op) {
            segments.push(Segment {
                ops: std::mem::take(&mut ops),
                synchronization: Some(op),
            });
        } else {
            ops.push(op);
        }
    }
    segments.push(Segment {
        ops,
        synchronization: None,
    });
    segments
}

/// Replaces `par` by its branches with aligned barriers (step 1).
fn flatten_par(par: Op) -> Result<(), PassFailure> {
    let branches: Vec<Blk> = (0..par.num_regions())
        .filter_map(|region| par.entry_block(region))
        .collect();
    for branch in &branches {
        for op in branch.ops() {
            if op.is("pgpu.par") {
                flatten_par(op)?;
            }
        }
    }
    let cut: Vec<Vec<Segment>> = branches.iter().map(|branch| segments(*branch)).collect();
    let depth = cut.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..depth {
        let mut barriers = vec![];
        let mut boundary_ops = 0;
        for segment in cut.iter().filter_map(|branch| branch.get(k)) {
            for op in &segment.ops {
                op.move_before(par);
            }
        }
        for op in cut
            .iter()
            .filter_map(|branch| branch.get(k)?.synchronization)
        {
            if op.is("pgpu.barrier") {
                barriers.push(op);
            } else {
                op.move_before(par);
                boundary_ops += 1;
            }
        }
        align_barriers(par, barriers, boundary_ops > 0)?;
    }
    let yielded: Vec<Val> = branches
        .iter()
        .filter_map(|branch| branch.terminator())
        .flat_map(|terminator| terminator.operands())
        .collect();
    for (result, value) in par.results().into_iter().zip(yielded) {
        result.replace_all_uses(value);
    }
    par.erase();
    Ok(())
}

/// Keeps one of the aligned `barriers` in front of `par` (none when a
/// collective already separates the supersteps), the rank-reassigning one
/// if there is one; erases the others.
fn align_barriers(par: Op, barriers: Vec<Op>, synchronized: bool) -> Result<(), PassFailure> {
    let reassigning: Vec<Op> = barriers
        .iter()
        .copied()
        .filter(|op| is_rank_reassigning_barrier(*op))
        .collect();
    if let [_, second, ..] = reassigning.as_slice() {
        return Err(emit_error(
            second.melior_location(),
            "two branches of a par reassign ranks at aligned barriers",
        ));
    }
    let kept = match reassigning.first() {
        Some(barrier) => Some(*barrier),
        None if synchronized => None,
        None => barriers.first().copied(),
    };
    for barrier in barriers {
        if Some(barrier) == kept {
            barrier.move_before(par);
        } else {
            barrier.erase();
        }
    }
    Ok(())
}

/// One superstep to build: its ops and whether ranks were reassigned first.
#[derive(Default)]
struct Step {
    ops: Vec<Op>,
    /// The `pgpu.barrier rank_reassigned` that starts it, if any.
    reassigned_by: Option<Op>,
    /// The collectives and thread primitives that end it.
    trailing: Vec<Op>,
}

impl Step {
    /// Whether `op`, a collective or thread primitive, must start a new
    /// superstep instead of joining this one's trailing ones.
    fn must_separate(&self, op: Op) -> bool {
        if self.trailing.is_empty() {
            return false;
        }
        let changes_ranks = self
            .trailing
            .iter()
            .any(|trailing| THREAD_PRIMITIVES.contains(&trailing.name().as_str()));
        let uses_trailing = std::iter::once(op)
            .chain(op.nested())
            .flat_map(|op| op.operands())
            .filter_map(Val::defining_op)
            .any(|definition| self.trailing.contains(&definition));
        changes_ranks || uses_trailing
    }
}

/// Cuts the flat `body` into steps (step 2).
fn plan(body: Blk) -> (Vec<Step>, Vec<Op>) {
    let mut steps = vec![];
    let mut barriers = vec![];
    let mut current = Step::default();
    for op in body.ops() {
        if op.is("pgpu.yield") {
            continue;
        }
        if op.is("pgpu.barrier") {
            steps.push(std::mem::take(&mut current));
            current.reassigned_by = is_rank_reassigning_barrier(op).then_some(op);
            barriers.push(op);
        } else if is_boundary_op(op) {
            if current.must_separate(op) {
                steps.push(std::mem::take(&mut current));
            }
            current.ops.push(op);
            current.trailing.push(op);
        } else {
            if !current.trailing.is_empty() {
                steps.push(std::mem::take(&mut current));
            }
            current.ops.push(op);
        }
    }
    steps.push(current);
    steps.retain(|step| !step.ops.is_empty());
    // A superstep that starts after a thread primitive and a rank
    // reassignment would see the ranks change twice, but its loads by old
    // rank undo one change only: an empty superstep between takes the
    // primitive's change (saved values move to the new ranks there). A
    // reassignment before any thread code (everything before the barrier
    // was uniform and stayed outside) gets an empty superstep first too,
    // so that its new ranks are computed like any other's.
    let mut planned: Vec<Step> = Vec::with_capacity(steps.len() + 1);
    for step in steps {
        let after_primitive = planned.last().is_some_and(|previous| {
            previous
                .trailing
                .iter()
                .any(|op| THREAD_PRIMITIVES.contains(&op.name().as_str()))
        });
        if step.reassigned_by.is_some() && (after_primitive || planned.is_empty()) {
            planned.push(Step::default());
        }
        planned.push(step);
    }
    (planned, barriers)
}

/// Builds the supersteps of `spawn` (steps 2 and 3).
fn split(spawn: Op, body: Blk) -> Result<(), PassFailure> {
    let (steps, barriers) = plan(body);
    let step_of: HashMap<Op, usize> = steps
        .iter()
        .enumerate()
        .flat_map(|(index, step)| step.ops.iter().map(move |op| (*op, index)))
        .collect();
    let Some(terminator) = body.terminator() else {
        return Ok(());
    };
    for (index, step) in steps.iter().enumerate() {
        let crossing = crossing_values(spawn, step, index, &step_of);
        // An empty step goes where the next step's ops begin.
        let before = steps[index..]
            .iter()
            .find_map(|step| step.ops.first().copied())
            .unwrap_or(terminator);
        let superstep = build_superstep(body, before, step, &crossing)?;
        for (position, value) in crossing.into_iter().enumerate() {
            let result = superstep.result(position);
            for found in value.uses() {
                if !found.owner.is_within(superstep) {
                    found.owner.set_operand(found.index, result);
                }
            }
        }
    }
    for barrier in barriers {
        barrier.erase();
    }
    Ok(())
}

/// Values of `step` used by later steps, in definition order.
fn crossing_values(spawn: Op, step: &Step, index: usize, step_of: &HashMap<Op, usize>) -> Vec<Val> {
    step.ops
        .iter()
        .flat_map(|op| op.results())
        .filter(|value| {
            value.uses().iter().any(|found| {
                found
                    .owner
                    .ancestor_under(spawn)
                    .and_then(|user| step_of.get(&user))
                    .is_some_and(|user_step| *user_step != index)
            })
        })
        .collect()
}

/// Creates the `pgpu.superstep` for `step` before `terminator` and moves the
/// step's ops into it, yielding `crossing`.
fn build_superstep(body: Blk, first: Op, step: &Step, crossing: &[Val]) -> Result<Op, PassFailure> {
    let context_ref = first.melior().context();
    // SAFETY: `context_ref` lives until the end of this function.
    let context = unsafe { context_ref.to_ref() };
    let location: Location = first.melior_location();
    let types: Vec<_> = crossing.iter().map(|value| value.melior_type()).collect();
    let region = Region::new();
    region.append_block(Block::new(&[]));
    let mut builder = OperationBuilder::new("pgpu.superstep", location)
        .add_results(&types)
        .add_regions([region]);
    if step.reassigned_by.is_some() {
        builder = builder.add_attributes(&[(
            Identifier::new(context, "rank_reassigned"),
            Attribute::unit(context),
        )]);
    }
    let built = builder
        .build()
        .map_err(|error| emit_error(location, &format!("cannot build pgpu.superstep: {error}")))?;
    let superstep = body.insert_before(first, built);
    let Some(inner) = superstep.entry_block(0) else {
        return Err(emit_error(location, "pgpu.superstep without a body"));
    };
    let operands: Vec<_> = crossing.iter().map(|value| value.melior()).collect();
    let yield_op = OperationBuilder::new("pgpu.yield", location)
        .add_operands(&operands)
        .build()
        .map_err(|error| emit_error(location, &format!("cannot build pgpu.yield: {error}")))?;
    let yield_op = inner.append(yield_op);
    for op in &step.ops {
        op.move_before(yield_op);
    }
    Ok(superstep)
}
