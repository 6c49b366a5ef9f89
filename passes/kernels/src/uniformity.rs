//! Which values of Fork's synchronous code are *uniform*: equal in every
//! member of the group that computes them (an analysis for
//! `pgpu-lower-groups`, which keeps such values on the host instead of
//! reading them back per group, and turns a split on a uniform condition
//! into a branch).
//!
//! A synchronous group runs each statement in lock step, so a value is
//! uniform when it is computed from uniform values by pure operations:
//! constants, the group's size and id, values from outside the group's
//! code, globals' addresses, and *loads of shared memory at a uniform
//! address* (all members read in the same step, so they read the same
//! value). Divergence starts at the group rank, at loads of a processor's
//! own cells, at loads in asynchronous code (`farm`, `seq`: the members
//! read at different times), at multiprefix results, at the merge values of
//! splits and forks, at the results of calls and of any operation not
//! named here; it flows forward through operands, through `scf.if`,
//! `scf.for` and `scf.while` (a result on a divergent condition or bound
//! diverges: the members leave at different times) and through `farm`
//! results. Inside a region run by some of the members (a branch on a
//! divergent condition), uniform means equal among those members.
//!
//! Across functions: a parameter of a synchronous function is uniform when
//! every call passes a uniform argument. The analysis starts from all
//! parameters uniform and marks divergent ones until nothing changes (a
//! recursive quicksort's `qs(lo, lo + nl[lo])` keeps both parameters
//! uniform); a synchronous function called from outside synchronous code
//! has no uniform parameters.
//!
//! The answers are about the values present when the analysis ran: a value
//! made later is not known, and counts as divergent.

use crate::{
    inline_spmd::symbol_attribute,
    ir::{Blk, Op, Val},
    unsynchronized::is_private_memory,
};
use std::collections::{HashMap, HashSet};

/// The analysis of a module: see the module documentation.
pub(crate) struct Uniformity {
    /// For each synchronous function (by name), which parameters are
    /// uniform.
    parameters: HashMap<String, Vec<bool>>,
    /// The uniform values of the synchronous code.
    uniform: HashSet<Val>,
}

impl Uniformity {
    pub fn of_module(module: Op) -> Self {
        let all = module.nested();
        let functions: Vec<Op> = all
            .iter()
            .copied()
            .filter(|op| op.is("func.func") && op.has_attribute("pgpu.synchronous"))
            .collect();
        let mut parameters: HashMap<String, Vec<bool>> = functions
            .iter()
            .filter_map(|function| {
                let name = symbol_attribute(*function, "sym_name")?;
                let count = function.entry_block(0)?.arguments().len();
                Some((name, vec![true; count]))
            })
            .collect();
        // The synchronous code: functions and the spawns outside them.
        let mut scopes = functions.clone();
        scopes.extend(all.iter().copied().filter(|op| {
            op.is("pgpu.spawn")
                && op.has_attribute("synchronous")
                && !functions.iter().any(|function| op.is_within(*function))
        }));
        let in_scope = |op: Op| scopes.iter().any(|scope| op.is_within(*scope));
        for call in all.iter().filter(|op| op.is("func.call")) {
            if !in_scope(*call)
                && let Some(name) = symbol_attribute(*call, "callee")
                && let Some(uniform) = parameters.get_mut(&name)
            {
                uniform.fill(false);
            }
        }
        loop {
            let mut divergent = HashSet::new();
            for scope in &scopes {
                let arguments = scope_arguments(*scope, &parameters);
                mark_divergent(*scope, &arguments, &mut divergent);
            }
            let mut changed = false;
            for scope in &scopes {
                for call in scope.nested().into_iter().filter(|op| op.is("func.call")) {
                    let Some(name) = symbol_attribute(call, "callee") else {
                        continue;
                    };
                    let Some(uniform) = parameters.get_mut(&name) else {
                        continue;
                    };
                    for (index, argument) in call.operands().into_iter().enumerate() {
                        if uniform.get(index) == Some(&true) && divergent.contains(&argument) {
                            uniform[index] = false;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                let uniform = scopes
                    .iter()
                    .flat_map(|scope| values_of(*scope))
                    .filter(|value| !divergent.contains(value))
                    .collect();
                return Self {
                    parameters,
                    uniform,
                };
            }
        }
    }

    /// Whether `value` is uniform (false for values the analysis did not
    /// see).
    pub fn is_uniform(&self, value: Val) -> bool {
        self.uniform.contains(&value)
    }

    /// Which parameters of the synchronous function `name` are uniform.
    pub fn uniform_parameters(&self, name: &str) -> Option<&[bool]> {
        self.parameters.get(name).map(Vec::as_slice)
    }
}

/// The entry arguments of `scope` with whether each is divergent.
fn scope_arguments(scope: Op, parameters: &HashMap<String, Vec<bool>>) -> Vec<(Val, bool)> {
    let Some(entry) = scope.entry_block(0) else {
        return vec![];
    };
    let uniform = if scope.is("func.func") {
        symbol_attribute(scope, "sym_name").and_then(|name| parameters.get(&name).cloned())
    } else {
        None
    };
    entry
        .arguments()
        .into_iter()
        .enumerate()
        .map(|(index, argument)| {
            let known = uniform
                .as_ref()
                .and_then(|uniform| uniform.get(index).copied());
            (argument, !known.unwrap_or(false))
        })
        .collect()
}

/// Every value defined in `scope`: results of nested ops and arguments of
/// its blocks and nested blocks.
fn values_of(scope: Op) -> Vec<Val> {
    let mut values: Vec<Val> = scope.entry_block(0).map(Blk::arguments).unwrap_or_default();
    for op in scope.nested() {
        values.extend(op.results());
        values.extend(region_arguments(op));
    }
    values
}

/// The arguments of the entry blocks of `op`'s regions.
fn region_arguments(op: Op) -> Vec<Val> {
    (0..op.num_regions())
        .filter_map(|region| op.entry_block(region))
        .flat_map(Blk::arguments)
        .collect()
}

/// Adds the values of `scope` that may differ between members to
/// `divergent`, `arguments` saying which entry arguments do.
fn mark_divergent(scope: Op, arguments: &[(Val, bool)], divergent: &mut HashSet<Val>) {
    for (argument, differs) in arguments {
        if *differs {
            divergent.insert(*argument);
        }
    }
    let ops = scope.nested();
    // Loops feed values back: repeat until nothing changes.
    loop {
        let before = divergent.len();
        for op in &ops {
            propagate(*op, scope, divergent);
        }
        if divergent.len() == before {
            return;
        }
    }
}

/// Marks the results and region arguments of `op` that diverge.
fn propagate(op: Op, scope: Op, divergent: &mut HashSet<Val>) {
    let differs = |value: Val, divergent: &HashSet<Val>| divergent.contains(&value);
    let any_operand = |divergent: &HashSet<Val>| {
        op.operands()
            .into_iter()
            .any(|operand| differs(operand, divergent))
    };
    let mark_all = |divergent: &mut HashSet<Val>| {
        divergent.extend(op.results());
        divergent.extend(region_arguments(op));
    };
    let name = op.name();
    match name.as_str() {
        "arith.constant" | "ub.poison" | "pgpu.group.size" | "pgpu.group.id"
        | "memref.get_global" | "pgpu.group.alloc" => {}
        "memref.load" => {
            if in_asynchronous_code(op, scope)
                || is_private_memory(op.operand(0), scope)
                || any_operand(divergent)
            {
                mark_all(divergent);
            }
        }
        "memref.cast"
        | "memref.reinterpret_cast"
        | "memref.subview"
        | "memref.extract_strided_metadata"
        | "memref.dim"
        | "pgpu.argi" => {
            if any_operand(divergent) {
                mark_all(divergent);
            }
        }
        _ if op.num_regions() == 0
            && ["arith.", "math.", "index."]
                .iter()
                .any(|dialect| name.starts_with(dialect)) =>
        {
            if any_operand(divergent) {
                mark_all(divergent);
            }
        }
        "scf.if" => {
            let condition = differs(op.operand(0), divergent);
            let yields: Vec<Vec<Val>> = (0..2)
                .filter_map(|region| op.entry_block(region)?.terminator())
                .map(Op::operands)
                .collect();
            for (index, result) in op.results().into_iter().enumerate() {
                let fed = yields
                    .iter()
                    .any(|values| values.get(index).is_some_and(|v| differs(*v, divergent)));
                if condition || fed {
                    divergent.insert(result);
                }
            }
        }
        "scf.for" => {
            let Some(body) = op.entry_block(0) else {
                return mark_all(divergent);
            };
            let bounds = op.operands()[..3]
                .iter()
                .any(|bound| differs(*bound, divergent));
            let arguments = body.arguments();
            let inits = op.operands()[3..].to_vec();
            let yields = body.terminator().map(Op::operands).unwrap_or_default();
            if bounds {
                divergent.insert(arguments[0]);
            }
            for (index, result) in op.results().into_iter().enumerate() {
                let fed = differs(inits[index], divergent)
                    || yields.get(index).is_some_and(|v| differs(*v, divergent));
                if bounds || fed {
                    divergent.insert(result);
                    divergent.insert(arguments[1 + index]);
                }
            }
        }
        "scf.while" => {
            let (Some(before), Some(after)) = (op.entry_block(0), op.entry_block(1)) else {
                return mark_all(divergent);
            };
            let inits = op.operands();
            let yields = after.terminator().map(Op::operands).unwrap_or_default();
            for (index, argument) in before.arguments().into_iter().enumerate() {
                let fed = differs(inits[index], divergent)
                    || yields.get(index).is_some_and(|v| differs(*v, divergent));
                if fed {
                    divergent.insert(argument);
                }
            }
            let condition = before.terminator().map(Op::operands).unwrap_or_default();
            let leaves_apart = condition.first().is_some_and(|c| differs(*c, divergent));
            for (index, argument) in after.arguments().into_iter().enumerate() {
                let forwarded = condition
                    .get(index + 1)
                    .is_some_and(|v| differs(*v, divergent));
                if forwarded {
                    divergent.insert(argument);
                }
                if forwarded || leaves_apart {
                    divergent.insert(op.result(index));
                }
            }
        }
        "pgpu.farm" => {
            let yields = op
                .entry_block(0)
                .and_then(Blk::terminator)
                .map(Op::operands)
                .unwrap_or_default();
            for (index, result) in op.results().into_iter().enumerate() {
                if yields.get(index).is_none_or(|v| differs(*v, divergent)) {
                    divergent.insert(result);
                }
            }
        }
        _ => mark_all(divergent),
    }
}

/// Whether `op` runs in asynchronous code of `scope`: in a `farm` or `seq`.
fn in_asynchronous_code(op: Op, scope: Op) -> bool {
    let mut current = op.parent();
    while let Some(parent) = current {
        if parent == scope {
            return false;
        }
        if parent.is("pgpu.farm") || parent.is("pgpu.seq") {
            return true;
        }
        current = parent.parent();
    }
    false
}
