//! What code does that decides whether it may leave its place in program
//! order, for the passes that hand code to the runtime's threads
//! (`pgpu-outline-cpu-kernels`, `pgpu-outline-tasks`).
//!
//! [`Effects`] of a region op or function, callees included: whether it
//! prints, draws random numbers or reads the clock (`ordered`: its order
//! is the program's output), whether it calls a function with no body in
//! the module other than the runtime's thread-safe ones (`foreign`), the
//! memory its host code (not its kernels: see
//! [`crate::outline_cpu_kernels::is_host_code`]) writes that it did not
//! allocate itself (`writes`, by [`Place`]), the globals it uses, and
//! whether it allocates or frees temporary lists.
//! [`CallGraph::new`] summarizes every function of the module once, by a
//! fixpoint over the call graph (recursion included); a call maps its
//! callee's writes of parameters to its own operands, so that a function
//! filling a list its caller allocated is a write of the caller's own
//! memory.

use crate::{
    context_struct::functions_by_name,
    inline_spmd::symbol_attribute,
    ir::{Op, Val},
    memory_effects::{base_of, list_effects},
    outline_cpu_kernels::is_host_code,
};
use std::collections::{BTreeSet, HashMap};

/// Runtime calls whose order the program's output depends on.
pub(crate) fn is_ordered_runtime_call(callee: &str) -> bool {
    callee.starts_with("pgpu_rt_printf") || callee.starts_with("pgpu_rt_rand")
}

/// External functions that may run on any thread, in any order: the
/// runtime's (`pgpu_rt_*`, upstream's `mgpu*` launches), except printing,
/// random numbers and the clock.
fn is_thread_safe_runtime_call(callee: &str) -> bool {
    (callee.starts_with("pgpu_rt_")
        && !is_ordered_runtime_call(callee)
        && !callee.starts_with("pgpu_rt_wtime"))
        || callee.starts_with("mgpu")
}

/// pgpu ops of host I/O that `pgpu-lower-to-runtime` has not lowered yet
/// and whose order is the program's.
fn is_ordered_op(name: &str) -> bool {
    matches!(
        name,
        "pgpu.printf" | "pgpu.rand_u32" | "pgpu.rand_seed" | "pgpu.wtime"
    )
}

/// Ops that allocate the memory they return.
fn is_allocation(op: Op) -> bool {
    matches!(
        op.name().as_str(),
        "memref.alloc" | "memref.alloca" | "pgpu.dnew" | "pgpu.dtempnew" | "llvm.alloca"
    )
}

/// Memory that code writes and did not allocate.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Place {
    /// What parameter `i` of a function points to.
    Parameter(usize),
    /// A `memref.global`.
    Global(String),
    /// Anything else: memory from outside a region, a pointer of unknown
    /// origin.
    Other,
}

/// Where the memory of `list` (a memref or a pointer) lives, seen from
/// `scope`: `None` when `scope` allocated it.
pub(crate) fn place(list: Val, scope: Op) -> Option<Place> {
    let base = base_of(list);
    match base.defining_op() {
        Some(op) if is_allocation(op) => (!op.is_within(scope)).then_some(Place::Other),
        Some(op) if op.is("memref.get_global") => Some(
            symbol_attribute(op, "name")
                .map(Place::Global)
                .unwrap_or(Place::Other),
        ),
        Some(_) => Some(Place::Other),
        None => {
            let parameters = scope
                .is("func.func")
                .then(|| scope.entry_block(0))
                .flatten()
                .map(|entry| entry.arguments())
                .unwrap_or_default();
            Some(
                parameters
                    .iter()
                    .position(|parameter| *parameter == base)
                    .map_or(Place::Other, Place::Parameter),
            )
        }
    }
}

/// The lists (memrefs, pointers) `op` itself writes: stores, atomics,
/// copies, deallocations (the list is gone) and the `pgpu.list`
/// collectives' outputs. `None` for a `pgpu.list` op not known here.
pub(crate) fn written_lists(op: Op) -> Option<Vec<Val>> {
    let name = op.name();
    Some(match name.as_str() {
        "memref.store" | "memref.atomic_rmw" | "memref.copy" | "llvm.store" => vec![op.operand(1)],
        "memref.generic_atomic_rmw" | "memref.dealloc" => vec![op.operand(0)],
        _ if name.starts_with("pgpu.list.") => {
            let (_, writes) = list_effects(op)?;
            writes
                .iter()
                .filter(|&&i| i < op.num_operands())
                .map(|&i| op.operand(i))
                .collect()
        }
        _ => vec![],
    })
}

/// What a region op or a function does, callees included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Prints, draws random numbers or reads the clock.
    pub ordered: bool,
    /// Calls a function the module has no body of (other than the
    /// runtime's thread-safe ones), or calls indirectly.
    pub foreign: bool,
    /// Memory its host code writes that it did not allocate.
    pub writes: BTreeSet<Place>,
    /// The globals it uses (read or written, kernels included).
    pub globals: BTreeSet<String>,
    /// Allocates or frees temporary lists (`pgpu.dtempnew`,
    /// `pgpu.dtempfree`): a `dtempfree` frees what the thread allocated
    /// since its function's entry, callees' lists included.
    pub temporaries: bool,
}

/// Every function's [`Effects`].
pub(crate) struct CallGraph {
    functions: HashMap<String, Op>,
    summaries: HashMap<String, Effects>,
}

impl CallGraph {
    pub fn new(module: Op) -> CallGraph {
        let functions: HashMap<String, Op> = functions_by_name(module)
            .into_iter()
            .filter(|(_, function)| function.entry_block(0).is_some())
            .collect();
        let mut graph = CallGraph {
            functions,
            summaries: HashMap::new(),
        };
        // Effects only grow with the callees' summaries: a fixpoint.
        loop {
            let mut changed = false;
            for (name, function) in &graph.functions {
                let effects = graph.effects(*function);
                if graph.summaries.get(name) != Some(&effects) {
                    graph.summaries.insert(name.clone(), effects);
                    changed = true;
                }
            }
            if !changed {
                return graph;
            }
        }
    }

    /// The effects of the ops nested in `scope` (a function or a region
    /// op), with those of the functions they call.
    pub fn effects(&self, scope: Op) -> Effects {
        let mut effects = Effects::default();
        for op in scope.nested() {
            let name = op.name();
            if is_ordered_op(&name) {
                effects.ordered = true;
            }
            match name.as_str() {
                "func.call" | "llvm.call" => self.call(op, scope, &mut effects),
                "func.call_indirect" => effects.foreign = true,
                "memref.get_global" => {
                    effects.globals.extend(symbol_attribute(op, "name"));
                }
                "pgpu.dtempnew" | "pgpu.dtempfree" => effects.temporaries = true,
                _ if is_host_code(op) => match written_lists(op) {
                    Some(lists) => effects
                        .writes
                        .extend(lists.into_iter().filter_map(|list| place(list, scope))),
                    None => {
                        effects.writes.insert(Place::Other);
                    }
                },
                _ => {}
            }
        }
        effects
    }

    /// Adds the effects of the call `op` in `scope`.
    fn call(&self, op: Op, scope: Op, effects: &mut Effects) {
        let Some(callee) = symbol_attribute(op, "callee") else {
            effects.foreign = true;
            return;
        };
        if is_ordered_runtime_call(&callee) && op.is("func.call") {
            effects.ordered = true;
        }
        if !self.functions.contains_key(&callee) {
            effects.foreign |= !is_thread_safe_runtime_call(&callee);
            return;
        }
        let Some(summary) = self.summaries.get(&callee) else {
            return;
        };
        effects.ordered |= summary.ordered;
        effects.foreign |= summary.foreign;
        effects.temporaries |= summary.temporaries;
        effects.globals.extend(summary.globals.iter().cloned());
        if is_host_code(op) {
            let (lists, places) = self.call_writes(op);
            effects
                .writes
                .extend(lists.into_iter().filter_map(|list| place(list, scope)));
            effects.writes.extend(places);
        }
    }

    /// What the call `op` writes that its callee did not allocate: the
    /// operands whose parameters it writes through, and other places. A
    /// function the module has no body of may write anything, unless it
    /// is the runtime's (`pgpu_rt_*`, `mgpu*`: they write no list of the
    /// program's before `pgpu-lower-to-runtime`).
    pub fn call_writes(&self, op: Op) -> (Vec<Val>, Vec<Place>) {
        let callee = symbol_attribute(op, "callee");
        let Some(summary) = callee
            .as_ref()
            .and_then(|callee| self.summaries.get(callee))
        else {
            let runtime = callee
                .is_some_and(|callee| callee.starts_with("pgpu_rt_") || callee.starts_with("mgpu"));
            return (vec![], if runtime { vec![] } else { vec![Place::Other] });
        };
        let (mut lists, mut places) = (vec![], vec![]);
        for written in &summary.writes {
            match written {
                Place::Parameter(index) if *index < op.num_operands() => {
                    lists.push(op.operand(*index));
                }
                Place::Parameter(_) => places.push(Place::Other),
                other => places.push(other.clone()),
            }
        }
        (lists, places)
    }
}
