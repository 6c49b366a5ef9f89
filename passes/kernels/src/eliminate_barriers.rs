//! `pgpu-eliminate-barriers`: removes barriers that order nothing between
//! threads, so that superstep formation merges the supersteps around them
//! (one kernel launch and its saved values less).
//!
//! A plain `pgpu.barrier` directly in a spawn body separates the code since
//! the previous synchronization point (barrier, collective, thread
//! primitive or the start) from the code up to the next one. It is needed
//! only if some thread may observe, after it, what another thread did
//! before it. The pass removes it when every pair of memory accesses `a`
//! (before) and `b` (after), at least one of them a write, is one of:
//!
//! * both to the calling thread's own element: the one index is the
//!   unreassigned `pgpu.rank` itself (ranks do not change at a plain
//!   barrier), so `a` and `b` touch the same element only in one thread;
//! * to distinct allocations (two different `memref.alloc`,
//!   `memref.alloca`, `pgpu.dnew` or `pgpu.dtempnew` results, or globals);
//! * to different constant elements of one memref value.
//!
//! Anything it cannot see through keeps the barrier: calls, ops with
//! regions that are not `scf` control flow, memory ops other than
//! `memref.load`/`memref.store` (including views and casts, whose aliasing
//! is not tracked), `pgpu.printf` on both sides (output is ordered per
//! superstep), `pgpu.require` after it (host code would run before the
//! code before the barrier), `thread.put` near it, and a `thread.get`
//! after it of a value defined since the previous synchronization point (it
//! reads at the barrier; a value defined earlier is the same at both
//! points). Barriers in `par` branches, rank-
//! reassigning barriers and Fork's synchronous spawns are left alone.
//!
//! This goes beyond the BSGP paper, whose compiler keeps every barrier the
//! programmer wrote; upstream MLIR has no SPMD barrier to analyze.

use crate::{
    form_supersteps::is_boundary_op,
    ir::{Op, Val},
};
use melior::ir::OperationRef;
use pgpu_pass_infra::{Pass, PassFailure, PassOptions, Severity, emit_diagnostic};

/// The pass; `remarks` reports each removed barrier.
#[derive(Debug, Default)]
pub struct EliminateBarriers {
    remarks: bool,
}

impl Pass for EliminateBarriers {
    const ARGUMENT: &'static str = "pgpu-eliminate-barriers";
    const SUMMARY: &'static str =
        "Remove barriers with no cross-thread dependence across them (merging supersteps)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [pgpu_pass_infra::PassOption] = &[pgpu_pass_infra::PassOption {
        name: "remarks",
        description: "emit a remark at every barrier removed",
        default: "false",
    }];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        Ok(Self {
            remarks: options.flag("remarks")?,
        })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let spawns: Vec<Op> = Op::of(module)
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.spawn") && !op.has_attribute("synchronous"))
            .collect();
        for spawn in spawns {
            let Some(body) = spawn.entry_block(0) else {
                continue;
            };
            let mut ops = body.ops();
            let mut position = 0;
            while let Some(&op) = ops.get(position) {
                if !op.is("pgpu.barrier") || op.has_attribute("rank_reassigned") {
                    position += 1;
                    continue;
                }
                let before = segment(ops[..position].iter().rev().copied());
                let after = segment(ops[position + 1..].iter().copied());
                if !redundant(&before, &after) {
                    position += 1;
                    continue;
                }
                if self.remarks {
                    emit_diagnostic(
                        op.melior_location(),
                        Severity::Remark,
                        "barrier removed: no thread observes across it what another thread did",
                    );
                }
                // The next barrier's segments must not see the erased one.
                ops.remove(position);
                op.erase();
            }
        }
        Ok(())
    }
}

/// The ops from a barrier to the next synchronization point, in `ops`'
/// order, and whether that point is a `thread.get`-sensitive one.
fn segment(ops: impl Iterator<Item = Op>) -> Vec<Op> {
    ops.take_while(|op| !op.is("pgpu.barrier") && !is_boundary_op(*op) && !op.is("pgpu.yield"))
        .collect()
}

/// A memory access the analysis understands.
struct Access {
    memref: Val,
    write: bool,
    /// Indexed by the unreassigned rank alone.
    own_slot: bool,
    /// Its indices, when all are constants.
    constant: Option<Vec<i64>>,
}

/// The accesses of `ops` (nested ones too); `None` if some op is opaque.
/// A `thread.get` is understood when `reads_unchanged` says the value it
/// reads is the same at the barrier as at the previous synchronization
/// point.
fn accesses(ops: &[Op], reads_unchanged: impl Fn(Op) -> bool) -> Option<(Vec<Access>, bool)> {
    let mut found = vec![];
    let mut prints = false;
    for op in ops
        .iter()
        .flat_map(|op| std::iter::once(*op).chain(op.nested()))
    {
        let name = op.name();
        match name.as_str() {
            "memref.load" => found.push(access(op, op.operand(0), false, &op.operands()[1..])),
            "memref.store" => found.push(access(op, op.operand(1), true, &op.operands()[2..])),
            "pgpu.printf" => prints = true,
            "memref.get_global" | "memref.cast" => {}
            "pgpu.thread.get" if reads_unchanged(op) => {}
            "pgpu.require" | "pgpu.thread.get" | "pgpu.thread.put" | "pgpu.par" | "func.call"
            | "pgpu.set_oldrank" | "pgpu.oldrank" => return None,
            _ if name.starts_with("memref.") => return None,
            _ if op.num_regions() > 0 && !name.starts_with("scf.") => return None,
            _ => {}
        }
    }
    Some((found, prints))
}

fn access(_op: Op, memref: Val, write: bool, indices: &[Val]) -> Access {
    let own_slot =
        matches!(indices, [index] if index.defining_op().is_some_and(|op| op.is("pgpu.rank")));
    Access {
        memref,
        write,
        own_slot,
        constant: indices.iter().map(|index| constant_index(*index)).collect(),
    }
}

/// The value of an `arith.constant` index.
fn constant_index(value: Val) -> Option<i64> {
    let op = value.defining_op().filter(|op| op.is("arith.constant"))?;
    op.integer_attribute("value")
}

/// The memory a memref certainly points into, when the analysis knows it.
#[derive(PartialEq)]
enum Memory {
    /// A fresh allocation (`memref.alloc`/`alloca`, `pgpu.dnew`/`dtempnew`).
    Allocation(Op),
    /// A global, by its symbol.
    Global(String),
}

fn memory(memref: Val) -> Option<Memory> {
    let mut value = memref;
    loop {
        let op = value.defining_op()?;
        match op.name().as_str() {
            "memref.alloc" | "memref.alloca" | "pgpu.dnew" | "pgpu.dtempnew" => {
                return Some(Memory::Allocation(op));
            }
            "memref.get_global" => {
                return crate::inline_spmd::symbol_attribute(op, "name").map(Memory::Global);
            }
            // A cast keeps the memory.
            "memref.cast" => value = op.operand(0),
            _ => return None,
        }
    }
}

fn may_alias(a: Val, b: Val) -> bool {
    if a == b {
        return true;
    }
    match (memory(a), memory(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// Whether nothing after the barrier depends on another thread's work
/// before it.
fn redundant(before: &[Op], after: &[Op]) -> bool {
    // A thread.get before the barrier reads at the previous synchronization
    // point, which stays; one after it reads at the barrier, which becomes
    // the previous point: the same value unless it is defined in between.
    let defined_before: std::collections::HashSet<Val> = before
        .iter()
        .flat_map(|op| std::iter::once(*op).chain(op.nested()))
        .flat_map(Op::results)
        .collect();
    let (Some((first, prints_before)), Some((second, prints_after))) = (
        accesses(before, |_| true),
        accesses(after, |get| !defined_before.contains(&get.operand(1))),
    ) else {
        return false;
    };
    if prints_before && prints_after {
        return false;
    }
    first.iter().all(|a| {
        second.iter().all(|b| {
            let same_memref = a.memref == b.memref;
            let disjoint_constants =
                same_memref && matches!((&a.constant, &b.constant), (Some(x), Some(y)) if x != y);
            !(a.write || b.write)
                || !may_alias(a.memref, b.memref)
                || (a.own_slot && b.own_slot && same_memref)
                || disjoint_constants
        })
    })
}
