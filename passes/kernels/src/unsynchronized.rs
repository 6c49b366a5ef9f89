//! Which statements of Fork's synchronous code may run without the group's
//! lock step (an analysis shared by `pgpu-split-private-control` and
//! `pgpu-lower-synchronous`).
//!
//! A synchronous group runs every statement in lock step (reads of a step
//! see memory from before it; of concurrent writes, the lowest rank's
//! wins). Control flow on private values would split the group, and every
//! shared store would need a barrier before and after it
//! (seeds/fork-to-cuda.txt, Section 3). Neither is needed for a region whose
//! members cannot observe each other inside it: running it in every member
//! independently, with the group synchronized at its end (Fork's `farm`),
//! leaves memory exactly as the lock step does. That holds when the region
//!
//! * has no group operations, barriers, I/O or calls of functions that
//!   write memory (only `arith`, `math`, `index`, structured control flow,
//!   memory accesses and calls of functions that at most read), and
//! * accesses shared memory (anything but processors' own `alloca` cells)
//!   so that no member reads what another writes and conflicting writes do
//!   not depend on their order: for every shared array it stores to, either
//!   - every access to it (load or store) is at the same index tuple, and
//!     that tuple names one element per processor (contains a
//!     *processor-separating* index), or
//!   - nothing in the region reads it, and every store to it writes the same
//!     constant (the sieve's `flags[m] = 0`), or every store's index tuple
//!     is processor-separating.
//!
//! An index is processor-separating when no two members can produce the
//! same value: the group rank plus a uniform offset (the group rank,
//! Fork's `$$`, is `0 .. size-1` in every group, also after a `fork`; a
//! fork's `$ = e2` is the members' own expression, may repeat and is not
//! a rank in the IR); a loop variable that starts
//! at such a value and steps by the group's size (the cyclic distribution
//! `for (k = $; ...; k += p)`: members keep distinct residues modulo the
//! size); or the pair `x / n`, `x % n` of such an `x` (matrix rows and
//! columns of a linear index). Shared arrays that are not module globals
//! (lists from outside) may alias each other and every global: a region
//! that stores to one reads no shared memory at all.

use crate::ir::{Op, Val};
use melior::ir::operation::OperationLike;
use std::collections::HashMap;

/// Whether `memref` is a processor's own cell: an `alloca` inside the
/// synchronous `scope` (a `pgpu.spawn synchronous` or a function marked
/// `pgpu.synchronous`), or a per-processor buffer of `pgpu-lower-groups`.
pub(crate) fn is_private_memory(memref: Val, scope: Op) -> bool {
    memref.defining_op().is_some_and(|op| {
        (op.is("memref.alloca") && op.is_within(scope))
            || (op.is("memref.alloc") && op.has_attribute(crate::lower_groups::PER_PROCESSOR))
    })
}

/// A value equal in all processors: from outside `scope`, or a constant.
pub(crate) fn is_uniform(value: Val, scope: Op) -> bool {
    !value.is_defined_within(scope)
        || value
            .defining_op()
            .is_some_and(|op| op.is("arith.constant"))
}

/// `value` without integer casts that keep distinct values distinct.
pub(crate) fn strip_casts(value: Val) -> Val {
    match value.defining_op() {
        Some(op)
            if matches!(
                op.name().as_str(),
                "arith.index_cast" | "arith.index_castui" | "arith.extsi" | "arith.extui"
            ) =>
        {
            strip_casts(op.operand(0))
        }
        _ => value,
    }
}

/// Whether `index` is the group rank plus an offset equal in all members.
/// A group rank read in an enclosing group is distinct in the members of
/// its subgroups too.
pub(crate) fn is_rank_injective(index: Val, scope: Op) -> bool {
    let index = strip_casts(index);
    let Some(op) = index.defining_op() else {
        return false;
    };
    match op.name().as_str() {
        "pgpu.rank" | "pgpu.group.rank" => true,
        "arith.addi" => {
            let (a, b) = (op.operand(0), op.operand(1));
            (is_rank_injective(a, scope) && is_uniform(b, scope))
                || (is_rank_injective(b, scope) && is_uniform(a, scope))
        }
        "arith.subi" => is_rank_injective(op.operand(0), scope) && is_uniform(op.operand(1), scope),
        _ => false,
    }
}

/// What a called function may do to memory outside its own cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CallEffects {
    None,
    Reads,
    Writes,
}

/// The function `call` (a `func.call`) calls, found in its module.
pub(crate) fn callee(call: Op) -> Option<Op> {
    let name = crate::inline_spmd::symbol_attribute(call, "callee")?;
    module_function(call, &name)
}

/// The function `name` of the module that holds `op`.
pub(crate) fn module_function(op: Op, name: &str) -> Option<Op> {
    let module = std::iter::successors(op.parent(), |parent| parent.parent())
        .find(|parent| parent.is("builtin.module"))?;
    module.entry_block(0)?.ops().into_iter().find(|function| {
        function.is("func.func")
            && crate::inline_spmd::symbol_attribute(*function, "sym_name").as_deref() == Some(name)
    })
}

/// What the function `call` calls (and what it calls in turn) may do to
/// memory other than its own `alloca` cells. Group code, functions without
/// a body and ops this analysis does not know count as writing.
pub(crate) fn call_effects(call: Op) -> CallEffects {
    effects_of_call(call, &mut vec![])
}

fn effects_of_call(call: Op, seen: &mut Vec<Op>) -> CallEffects {
    let Some(function) = callee(call) else {
        return CallEffects::Writes;
    };
    if function.has_attribute("pgpu.synchronous")
        || function.has_attribute(crate::inline_spmd::SPMD_INLINE)
        || function.entry_block(0).is_none()
    {
        return CallEffects::Writes;
    }
    if seen.contains(&function) {
        return CallEffects::None;
    }
    seen.push(function);
    let own = |memref: Val| is_private_memory(memref, function);
    let mut effects = CallEffects::None;
    for op in function.nested() {
        let name = op.name();
        let effect = match name.as_str() {
            "memref.load" if own(op.operand(0)) => CallEffects::None,
            "memref.load" => CallEffects::Reads,
            "memref.store" if own(op.operand(1)) => CallEffects::None,
            "func.call" => effects_of_call(op, seen),
            "func.return" => CallEffects::None,
            _ if is_local_computation(&name) => CallEffects::None,
            _ => CallEffects::Writes,
        };
        effects = effects.max(effect);
    }
    effects
}

/// A class of shared memory: one module global, or any other array.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Memory {
    Global(String),
    Other,
}

/// One access to shared memory in the region.
struct Access {
    op: Op,
    store: bool,
    indices: Vec<Val>,
    /// The stored value, for stores.
    value: Option<Val>,
}

/// Whether running `region_op` (in synchronous code of `scope`) in every
/// member independently leaves memory as the lock step does: `None` if
/// not, else the stores that must then be atomic exchanges
/// ([`crate::lower_synchronous::common_write`]). Those write one constant
/// to elements that members may share: any order leaves the constant, but
/// plain stores of one element by several threads are a data race.
pub(crate) fn runs_unsynchronized(region_op: Op, scope: Op) -> Option<Vec<Op>> {
    let mut accesses: HashMap<Memory, Vec<Access>> = HashMap::new();
    for op in std::iter::once(region_op).chain(region_op.nested()) {
        let name = op.name();
        let (memref, first_index, store) = match name.as_str() {
            "memref.load" => (op.operand(0), 1, false),
            "memref.store" => (op.operand(1), 2, true),
            "func.call" => match call_effects(op) {
                CallEffects::None => continue,
                // Reads of anything: a load of the class that aliases all.
                CallEffects::Reads => {
                    accesses.entry(Memory::Other).or_default().push(Access {
                        op,
                        store: false,
                        indices: vec![],
                        value: None,
                    });
                    continue;
                }
                CallEffects::Writes => return None,
            },
            _ if is_local_computation(&name) => continue,
            _ => return None,
        };
        if is_private_memory(memref, scope) {
            continue;
        }
        accesses.entry(memory_of(memref)).or_default().push(Access {
            op,
            store,
            indices: op.operands()[first_index..].to_vec(),
            value: store.then(|| op.operand(0)),
        });
    }
    let stores_anywhere = accesses.values().flatten().any(|access| access.store);
    if stores_anywhere && accesses.contains_key(&Memory::Other) && accesses.len() > 1 {
        return None;
    }
    let separating = |access: &Access| is_processor_separating(&access.indices, region_op, scope);
    let mut exchanges = vec![];
    for list in accesses.values() {
        if !list.iter().any(|access| access.store) {
            continue;
        }
        let same_tuple = list.iter().all(|access| {
            access.indices.len() == list[0].indices.len()
                && access
                    .indices
                    .iter()
                    .zip(&list[0].indices)
                    .all(|(a, b)| strip_casts(*a) == strip_casts(*b))
        });
        if same_tuple && separating(&list[0]) {
            continue;
        }
        if list.iter().any(|access| !access.store) {
            return None;
        }
        if list.iter().all(separating) {
            continue;
        }
        let constants: Vec<Option<i64>> = list
            .iter()
            .map(|access| access.value.and_then(Val::constant_integer))
            .collect();
        let same_constant = constants[0].is_some() && constants.iter().all(|c| *c == constants[0]);
        let exchangeable = list.iter().all(|access| {
            access.value.is_some_and(|value| {
                crate::lower_synchronous::has_common_write(value.melior_type())
            })
        });
        if !(same_constant && exchangeable) {
            return None;
        }
        exchanges.extend(list.iter().map(|access| access.op));
    }
    Some(exchanges)
}

/// Ops that compute on values and private cells only (memory accesses are
/// judged separately).
fn is_local_computation(name: &str) -> bool {
    name.starts_with("arith.")
        || name.starts_with("math.")
        || name.starts_with("index.")
        || matches!(
            name,
            "scf.if"
                | "scf.for"
                | "scf.while"
                | "scf.yield"
                | "scf.condition"
                | "memref.alloca"
                | "memref.get_global"
                | "memref.dim"
                | "ub.poison"
        )
}

fn memory_of(memref: Val) -> Memory {
    match memref.defining_op() {
        Some(op) if op.is("memref.get_global") => op
            .melior()
            .attribute("name")
            .map(|name| Memory::Global(name.to_string()))
            .unwrap_or(Memory::Other),
        Some(op) if op.is("memref.cast") => memory_of(op.operand(0)),
        _ => Memory::Other,
    }
}

/// Whether the index tuple names elements no two members share.
fn is_processor_separating(indices: &[Val], region_op: Op, scope: Op) -> bool {
    let separating = |value: Val| {
        is_rank_injective(value, scope) || is_cyclic_distribution(value, region_op, scope)
    };
    if indices.iter().any(|index| separating(*index)) {
        return true;
    }
    // `x / n` and `x % n` of one separating `x` and one `n`.
    let parts: Vec<(String, Val, Val)> = indices
        .iter()
        .filter_map(|index| {
            let op = strip_casts(*index).defining_op()?;
            let name = op.name();
            matches!(
                name.as_str(),
                "arith.divsi" | "arith.remsi" | "arith.divui" | "arith.remui"
            )
            .then(|| (name, strip_casts(op.operand(0)), op.operand(1)))
        })
        .collect();
    parts.iter().any(|(name, x, n)| {
        name.contains("div")
            && separating(*x)
            && parts
                .iter()
                .any(|(other, y, m)| other.contains("rem") && y == x && m == n)
    })
}

/// Whether `value` is the variable of a loop `for (k = start; ...; k += s)`
/// whose start is rank-injective and whose step `s` is the group's size:
/// members then keep distinct residues of `k` modulo the size. The loop
/// is an `scf.while` (the C-subset front end's shape: the condition
/// forwards `k` unchanged, the body yields `k + s`).
fn is_cyclic_distribution(value: Val, region_op: Op, scope: Op) -> bool {
    let value = strip_casts(value);
    if value.defining_op().is_some() {
        return false;
    }
    // SAFETY: a live block argument.
    let (block, number) = unsafe {
        (
            mlir_sys::mlirBlockArgumentGetOwner(value.0),
            mlir_sys::mlirBlockArgumentGetArgNumber(value.0) as usize,
        )
    };
    let block = crate::ir::Blk(block);
    let Some(loop_op) = block.parent_op().filter(|op| op.is("scf.while")) else {
        return false;
    };
    let (Some(before), Some(after)) = (loop_op.entry_block(0), loop_op.entry_block(1)) else {
        return false;
    };
    if block != after {
        return false;
    }
    let (Some(condition), Some(yield_op)) = (before.terminator(), after.terminator()) else {
        return false;
    };
    let Some(&carried) = before.arguments().get(number) else {
        return false;
    };
    if condition.num_operands() != before.arguments().len() + 1
        || condition.operand(number + 1) != carried
        || !is_rank_injective(loop_op.operand(number), scope)
    {
        return false;
    }
    let Some(step) = yield_op
        .operand(number)
        .defining_op()
        .filter(|op| op.is("arith.addi"))
    else {
        return false;
    };
    let stride = if step.operand(0) == value {
        step.operand(1)
    } else if step.operand(1) == value {
        step.operand(0)
    } else {
        return false;
    };
    is_group_size(stride, region_op, scope)
}

/// Whether `value` equals the size of the group `region_op` runs in: a
/// `pgpu.group.size` of that group, or the count of the spawn when no
/// split or fork lies between.
fn is_group_size(value: Val, region_op: Op, scope: Op) -> bool {
    let value = strip_casts(value);
    let group_of = |op: Op| {
        let mut current = op.parent();
        while let Some(parent) = current {
            if parent == scope || parent.is("pgpu.group.split") || parent.is("pgpu.group.fork") {
                return Some(parent);
            }
            current = parent.parent();
        }
        None
    };
    if let Some(op) = value.defining_op().filter(|op| op.is("pgpu.group.size")) {
        return group_of(op).is_some() && group_of(op) == group_of(region_op);
    }
    scope.is("pgpu.spawn")
        && group_of(region_op) == Some(scope)
        && is_uniform(value, scope)
        && strip_casts(scope.operand(0)) == value
}
