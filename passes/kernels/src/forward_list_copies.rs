//! `pgpu-forward-list-copies`: collectives and kernels read and write the
//! lists themselves instead of temporary copies that kernel formation made.
//!
//! `pgpu-split-kernels` gives every collective fresh lists: the superstep
//! before it copies the threads' values into a new list, and the superstep
//! after it copies the result out. When those values are just a list's
//! elements in rank order, each copy is a whole pass over memory (for a
//! scan of 256M integers, two of its three passes). This pass removes them
//! where the program cannot tell the difference:
//!
//! * **Inputs.** A kernel over `[0, n)` (step 1) whose body stores
//!   `src[i]` into `copy[i]` at its top level, with `copy` a
//!   `memref.alloc` of `n` elements, copies `src`. Later readers of `copy`
//!   in the same block (loads, and collectives' read operands) read `src`
//!   instead, provided nothing from the kernel to the last reader may
//!   write `src` (stores, atomics, collectives' outputs, deallocations; an
//!   unknown op or a call counts as writing anything; a deallocation of a
//!   fresh `src` moves after the last reader) and `copy` has no other
//!   uses. The store (and then `copy`) goes away.
//! * **Duplicates.** Two fresh lists such a kernel fills with the same
//!   value at `i`, read-only afterwards, are one list (a value saved for
//!   later supersteps that is also a sort's keys).
//! * **Outputs.** A `pgpu.list.scan` or `pgpu.list.sort_idx` writing a
//!   fresh list `tmp` of `count` elements, followed in the same block by a
//!   kernel over `[0, count)` whose top level stores `tmp[i]` into
//!   `dst[i]`, writes `dst` directly, provided `dst` does not alias the
//!   collective's inputs, nothing between the two ops touches `dst`, the
//!   kernel uses `dst` only for that store, and `tmp` is read only in that
//!   kernel (where `tmp[j]` equals the new `dst[j]`).
//!
//! * **Index functions.** A list that such a kernel fills with a function
//!   of `i` alone (arithmetic on `i` and values from outside the kernel:
//!   the thread ranks `r[i] = i` that `sortby` carries through a sort, a
//!   face number `f[i] = i / 3`) is recomputed where it is read: later
//!   loads `list[j]` become the function of `j`, not a gather from memory.
//!
//! * **Sorted keys.** A kernel after a `pgpu.list.sort_idx` of integer
//!   keys that reads `keys[idx[j]]` (the keys, or a fresh copy of them made
//!   before the sort, unchanged since; `j` the kernel's index or any other,
//!   as a `thread.get` of a neighbour's key reads) reads `sorted[j]`
//!   instead, a list the sort now also writes: no gather through the
//!   permutation.
//!
//! Lists nothing reads any more are dropped with their stores, and kernels
//! left without side effects (writes or output) are erased. The bodies of `pgpu.taskgroup`
//! and `pgpu.task` are host code run once in place (like
//! `scf.execute_region`): kernels there are kernels, and a task group
//! between two ops writes what its body may write. A reader in a task is
//! judged with its whole task group (the reader's ancestor in the kernel's
//! block), so no task's read of a source is forwarded while a sibling task
//! writes it. Two lists may alias
//! unless one is a distinct `memref.alloc`/`alloca` or both are distinct
//! globals; views (`cast`, `subview`, ...) are traced to their base.
//! Collectives read lists with unit stride only, so a strided source stays
//! copied. Upstream has no equivalent: its copy elimination works on
//! `memref.copy` and buffer deallocation, not on loops that copy and our
//! collectives' memory effects.

use crate::{
    build::{Builder, Built, memref_element_type},
    ir::{Op, Use, Val, element_bytes, sort_writes_keys},
    memory_effects::{Effects, list_effects, may_alias},
    outline_cpu_kernels::is_host_code,
};
use melior::ir::{OperationRef, r#type::MemRefType};
use pgpu_pass_infra::{Pass, PassFailure};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct ForwardListCopies;

impl Pass for ForwardListCopies {
    const ARGUMENT: &'static str = "pgpu-forward-list-copies";
    const SUMMARY: &'static str = "Let collectives and kernels use lists directly instead of the copies kernel formation made";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![DialectHandle::memref(), DialectHandle::scf()]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        // Each forwarding erases ops; start over until nothing changes, one
        // function at a time (a forwarding stays inside its function, and a
        // module of many functions made restarting the whole module's walk
        // quadratic in its size).
        let functions: Vec<Op> = module
            .entry_block(0)
            .map(|body| body.ops())
            .unwrap_or_default()
            .into_iter()
            .filter(|op| op.is("func.func"))
            .collect();
        for function in functions {
            while forward_one(function)? {}
        }
        Ok(())
    }
}

/// Forwards one copy in `scope`; whether it did.
fn forward_one(scope: Op) -> Built<bool> {
    let ops = scope.nested();
    for op in &ops {
        if op.is("scf.parallel")
            && is_host_code(*op)
            && (forward_input(*op) || forward_index_function(*op)? || merge_duplicate_lists(*op))
        {
            return Ok(true);
        }
    }
    for op in &ops {
        if (op.is("pgpu.list.scan") || op.is("pgpu.list.sort_idx")) && forward_output(*op)? {
            return Ok(true);
        }
    }
    for op in &ops {
        if op.is("pgpu.list.sort_idx") && forward_sorted_keys(*op)? {
            return Ok(true);
        }
    }
    for op in &ops {
        if op.is("memref.alloc") && drop_unread_list(*op) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Lets `sort` write its keys in sorted order where a later kernel over
/// the sort's count reads them through the permutation (`keys[idx[i]]`,
/// or the same through a copy of the keys made before the sort): such
/// loads become `sorted[i]`. Only for keys the GPU sort writes back itself
/// ([`sort_writes_keys`]); for others this would only move the gather.
fn forward_sorted_keys(sort: Op) -> Built<bool> {
    if sort.num_operands() != 3 {
        return Ok(false);
    }
    let (keys, indices, count) = (sort.operand(0), sort.operand(1), sort.operand(2));
    let Ok(element) = memref_element_type(keys) else {
        return Ok(false);
    };
    if !sort_writes_keys(element) || alloc_of_count(indices, count).is_none() {
        return Ok(false);
    }
    // Loads `x[idx[j]]` of a list with the keys' contents in one kernel
    // after the sort (`j` its own index, or any other, as a `thread.get`
    // reads), and the lists its threads may write before such a load.
    let mut chosen: Option<Op> = None;
    let mut gathers: Vec<(Op, Val)> = vec![];
    let mut checks: Vec<Val> = vec![];
    for found in indices.uses() {
        let position = found.owner;
        let Some(kernel) = enclosing_kernel(position) else {
            continue;
        };
        let Some((_, range)) = full_range(kernel) else {
            continue;
        };
        if !position.is("memref.load")
            || found.index != 0
            || chosen.is_some_and(|chosen| chosen != kernel)
            || !same_count(range, count)
            || !is_before(sort, kernel)
        {
            continue;
        }
        for found in position.result(0).uses() {
            let load = found.owner;
            if !(load.is("memref.load")
                && load.num_operands() == 2
                && load.operand(1) == position.result(0)
                && load.is_within(kernel))
            {
                continue;
            }
            if let Some(written) = holds_keys_of(load.operand(0), sort, kernel, load) {
                gathers.push((load, position.operand(1)));
                chosen = Some(kernel);
                for list in written {
                    if !checks.contains(&list) {
                        checks.push(list);
                    }
                }
            }
        }
    }
    let Some(kernel) = chosen else {
        return Ok(false);
    };
    let at = Builder::before(sort).at_location_of(sort);
    let sorted = at.alloc(element, count)?;
    let mut operands = sort.operands();
    operands.push(sorted);
    sort.set_operands(&operands);
    let last = if checks.is_empty() {
        kernel
    } else {
        version_on_disjoint(kernel, keys, &checks)?
    };
    for (load, slot) in gathers {
        load.set_operand(0, sorted);
        load.set_operand(1, slot);
    }
    if let Some(after) = last.next() {
        Builder::before(after)
            .at_location_of(sort)
            .dealloc(sorted)?;
    }
    Ok(true)
}

/// Runs `kernel` as it is when `keys` shares no memory with any of
/// `lists` at run time, and a copy of the kernel as it was otherwise:
///
/// ```text
/// scf.if %disjoint { kernel (to be changed by the caller) } else { original }
/// ```
///
/// Returns the `scf.if`.
fn version_on_disjoint(kernel: Op, keys: Val, lists: &[Val]) -> Built<Op> {
    let at = Builder::before(kernel).at_location_of(kernel);
    let (keys_start, keys_end) = whole_range(&at, keys)?;
    let mut disjoint = None;
    for &list in lists {
        let apart = apart(&at, (keys_start, keys_end), whole_range(&at, list)?)?;
        disjoint = Some(match disjoint {
            None => apart,
            Some(so_far) => at.value("arith.andi", &[so_far, apart], apart.melior_type(), &[])?,
        });
    }
    let Some(disjoint) = disjoint else {
        return Err(at.fail("internal error: versioning without lists"));
    };
    let (choice, _, _, _) = two_versions(&at, disjoint, kernel, &[])?;
    Ok(choice)
}

/// `scf.if %condition -> (types) { op } else { copy of op }` in place of
/// `op`; returns the `scf.if`, the two branches' `scf.yield`s (without
/// operands yet) and the copy.
fn two_versions<'c>(
    at: &Builder<'c>,
    condition: Val,
    op: Op,
    types: &[melior::ir::Type<'c>],
) -> Built<(Op, Op, Op, Op)> {
    let (choice, then_yield, else_yield) = at.if_op(condition, types, true)?;
    let Some(else_yield) = else_yield else {
        return Err(at.fail("internal error: scf.if without an else region"));
    };
    let copy = op.clone_detached();
    else_yield.block_of().insert_raw_before(else_yield, copy);
    op.move_before(then_yield);
    Ok((choice, then_yield, else_yield, copy))
}

/// Whether `list`, read by `load` in `kernel`, holds what `sort`'s keys
/// held when it ran, and under which run-time condition: it is the keys
/// list, unchanged from the sort to the kernel, and the kernel's threads
/// write before the load only lists from outside the kernel (returned: the
/// keys must not overlap them); or a fresh list a kernel before the sort
/// filled with a copy of the keys that nothing else writes, the keys
/// unchanged from that copy to the sort (no condition).
fn holds_keys_of(list: Val, sort: Op, kernel: Op, load: Op) -> Option<Vec<Val>> {
    let keys = sort.operand(0);
    if list == keys {
        if !unchanged_between(sort, kernel, keys) {
            return None;
        }
        let body = kernel.entry_block(0)?;
        let mut written = vec![];
        for op in body.ops().into_iter().take_while(|op| *op != load) {
            let effects = Effects::of(op);
            if effects.unknown {
                return None;
            }
            for list in effects.writes {
                if !may_alias(list, keys) {
                    continue;
                }
                if list.is_defined_within(kernel) || has_same_base(list, keys) {
                    return None;
                }
                written.push(list);
            }
        }
        return Some(written);
    }
    let alloc = list.defining_op().filter(|op| op.is("memref.alloc"))?;
    let stores: Vec<Op> = list
        .uses()
        .into_iter()
        .map(|found| found.owner)
        .filter(|user| !user.is("memref.load") && !user.is("memref.dealloc"))
        .collect();
    let [store] = stores.as_slice() else {
        return None;
    };
    let copier = enclosing_kernel(*store)?;
    let (induction, range) = full_range(copier)?;
    let copied = alloc_of_count(list, range).is_some()
        && same_count(range, sort.operand(2))
        && is_before(copier, sort)
        && copies_in(copier, induction)
            .iter()
            .any(|(from, to)| *to == *store && from.operand(0) == keys)
        && unchanged_between(copier, sort, keys)
        && alloc.block_of() == sort.block_of();
    copied.then(Vec::new)
}

/// Whether two lists are views of one base value (they surely overlap).
fn has_same_base(a: Val, b: Val) -> bool {
    crate::memory_effects::base_of(a) == crate::memory_effects::base_of(b)
}

/// Erases a fresh list that nothing reads (only stores in kernels and
/// deallocations use it), and the kernels left without effects; whether it
/// did.
fn drop_unread_list(alloc: Op) -> bool {
    let uses = alloc.result(0).uses();
    let only_written = uses.iter().all(|found| {
        found.owner.is("memref.dealloc")
            || (found.owner.is("memref.store")
                && found.index == 1
                && enclosing_kernel(found.owner).is_some())
    });
    if uses.is_empty() || !only_written {
        return false;
    }
    let mut kernels: Vec<Op> = vec![];
    for kernel in uses
        .iter()
        .filter_map(|found| enclosing_kernel(found.owner))
    {
        // One kernel may store into the list more than once.
        if !kernels.contains(&kernel) {
            kernels.push(kernel);
        }
    }
    for found in uses {
        found.owner.erase();
    }
    alloc.erase();
    for kernel in kernels {
        erase_if_dead(kernel);
    }
    true
}

/// Whether collectives can take `list` (unit stride).
fn has_unit_stride(list: Val) -> bool {
    let text = list.melior_type().to_string();
    MemRefType::try_from(list.melior_type()).is_ok()
        && (!text.contains("strided<") || text.contains("strided<[1]"))
}

/// The single-dimension kernel's induction variable when it runs over
/// `[0, n)` with step 1, and `n`.
fn full_range(kernel: Op) -> Option<(Val, Val)> {
    if kernel.num_operands() != 3 || kernel.num_results() != 0 {
        return None;
    }
    if kernel.operand(0).constant_integer() != Some(0)
        || kernel.operand(2).constant_integer() != Some(1)
    {
        return None;
    }
    let body = kernel.entry_block(0)?;
    Some((*body.arguments().first()?, kernel.operand(1)))
}

/// Whether `a` and `b` are the same count: one value, or equal constants.
fn same_count(a: Val, b: Val) -> bool {
    a == b
        || a.constant_integer()
            .is_some_and(|x| Some(x) == b.constant_integer())
}

/// The `memref.alloc` that made `list`, when it has `count` elements.
fn alloc_of_count(list: Val, count: Val) -> Option<Op> {
    list.defining_op().filter(|alloc| {
        alloc.is("memref.alloc") && alloc.num_operands() == 1 && same_count(alloc.operand(0), count)
    })
}

/// The top-level stores of `kernel`'s body at the induction variable
/// (`store v, list[i]`).
fn stores_at_index(kernel: Op, induction: Val) -> Vec<Op> {
    let Some(body) = kernel.entry_block(0) else {
        return vec![];
    };
    body.ops()
        .into_iter()
        .filter(|op| op.is("memref.store") && op.num_operands() == 3 && op.operand(2) == induction)
        .collect()
}

/// The top-level ops of `kernel`'s body of the form `store (load src[i]),
/// dst[i]`: (load, store).
fn copies_in(kernel: Op, induction: Val) -> Vec<(Op, Op)> {
    stores_at_index(kernel, induction)
        .into_iter()
        .filter_map(|store| {
            let load = store.operand(0).defining_op()?;
            (load.is("memref.load")
                && load.parent() == Some(kernel)
                && load.num_operands() == 2
                && load.operand(1) == induction
                && !load.operand(0).is_defined_within(kernel))
            .then_some((load, store))
        })
        .collect()
}

/// The ops of `from`'s block after `from`, up to `to` (inclusive) or to
/// the end.
fn ops_between(from: Op, to: Option<Op>) -> Vec<Op> {
    let mut found = vec![];
    let mut current = from.next();
    while let Some(op) = current {
        found.push(op);
        if Some(op) == to {
            break;
        }
        current = op.next();
    }
    found
}

/// The ops of a block strictly between `from` and `to` (`to` after `from`).
fn ops_strictly_between(from: Op, to: Op) -> Vec<Op> {
    let mut found = ops_between(from, Some(to));
    if found.last() == Some(&to) {
        found.pop();
    }
    found
}

/// Whether nothing strictly between `from` and `to` may write `list`.
fn unchanged_between(from: Op, to: Op, list: Val) -> bool {
    ops_strictly_between(from, to)
        .iter()
        .all(|op| !Effects::of(*op).may_write(list))
}

/// Whether `a` comes before `b` in their common block.
fn is_before(a: Op, b: Op) -> bool {
    a.block_of() == b.block_of() && ops_between(a, Some(b)).last() == Some(&b)
}

/// `op` or its ancestor that is a sibling of `anchor` (in its block, for
/// the single-block regions of host code).
fn top_in_block_of(op: Op, anchor: Op) -> Option<Op> {
    op.ancestor_under(anchor.parent()?)
        .filter(|top| top.block_of() == anchor.block_of())
}

/// The host kernel (`scf.parallel`) that `op` is nested in.
fn enclosing_kernel(op: Op) -> Option<Op> {
    let mut current = op.parent();
    while let Some(parent) = current {
        if parent.is("scf.parallel") && is_host_code(parent) {
            return Some(parent);
        }
        current = parent.parent();
    }
    None
}

/// The uses of `list` that read it after `kernel` (each with its ancestor
/// in the kernel's block), when every use but `store` and deallocations is
/// such a read (`reads` says which uses read); `None` otherwise.
fn readers_after(
    list: Val,
    store: Op,
    kernel: Op,
    reads: impl Fn(&Use) -> bool,
) -> Option<Vec<(Use, Op)>> {
    let mut readers = vec![];
    for found in list.uses() {
        let user = found.owner;
        if user == store || user.is("memref.dealloc") {
            continue;
        }
        let top = top_in_block_of(user, kernel).filter(|top| is_before(kernel, *top))?;
        if !reads(&found) {
            return None;
        }
        readers.push((found, top));
    }
    Some(readers)
}

/// Most ops a recomputed index function may have.
const INDEX_FUNCTION_OPS: usize = 16;

/// The ops of `kernel`'s body that compute `value` from the induction
/// variable and values from outside the kernel by arithmetic alone
/// (operands first), when it is such a function; `value` itself may be
/// the induction variable or come from outside (no ops).
fn index_function(value: Val, induction: Val, kernel: Op) -> Option<Vec<Op>> {
    fn visit(value: Val, induction: Val, kernel: Op, ops: &mut Vec<Op>) -> bool {
        if value == induction || !value.is_defined_within(kernel) {
            return true;
        }
        let Some(op) = value.defining_op() else {
            return false;
        };
        if ops.contains(&op) {
            return true;
        }
        let pure = op.parent() == Some(kernel)
            && op.name().starts_with("arith.")
            && op.num_regions() == 0
            && op.num_results() == 1;
        if !pure || ops.len() >= INDEX_FUNCTION_OPS {
            return false;
        }
        if !op
            .operands()
            .into_iter()
            .all(|operand| visit(operand, induction, kernel, ops))
        {
            return false;
        }
        ops.push(op);
        true
    }
    let mut ops = vec![];
    visit(value, induction, kernel, &mut ops).then_some(ops)
}

/// Forwards one list that `kernel` fills with a function of the index
/// alone ([`index_function`]: `ranks[i] = i`, `f[i] = i / 3`): later
/// loads `list[j]` compute the function of `j` instead; whether it did.
fn forward_index_function(kernel: Op) -> Built<bool> {
    let Some((induction, count)) = full_range(kernel) else {
        return Ok(false);
    };
    for store in stores_at_index(kernel, induction) {
        let value = store.operand(0);
        let Some(function) = index_function(value, induction, kernel) else {
            continue;
        };
        let list = store.operand(1);
        let Some(alloc) = alloc_of_count(list, count) else {
            continue;
        };
        let Some(loads) = readers_after(list, store, kernel, |found| {
            found.owner.is("memref.load") && found.index == 0
        }) else {
            continue;
        };
        if loads.is_empty() {
            continue;
        }
        for (Use { owner: load, .. }, _) in loads {
            let mut mapped = std::collections::HashMap::from([(induction, load.operand(1))]);
            for op in &function {
                let copy = op.clone_detached();
                load.block_of().insert_raw_before(load, copy);
                for (index, operand) in op.operands().into_iter().enumerate() {
                    if let Some(&replacement) = mapped.get(&operand) {
                        copy.set_operand(index, replacement);
                    }
                }
                copy.set_location(load.location());
                mapped.insert(op.result(0), copy.result(0));
            }
            let replacement = mapped.get(&value).copied().unwrap_or(value);
            load.result(0).replace_all_uses(replacement);
            load.erase();
        }
        remove_copy(store, alloc);
        erase_if_dead(kernel);
        return Ok(true);
    }
    Ok(false)
}

/// Whether `list` is only read after the kernel whose `store` wrote it:
/// every other use is a load outside that kernel, a collective's read
/// operand or its one deallocation (returned).
fn read_only_after(list: Val, store: Op, kernel: Op) -> Option<Op> {
    let mut deallocs = vec![];
    for found in list.uses() {
        let user = found.owner;
        if user == store {
            continue;
        }
        if user.is("memref.load") {
            if user.is_within(kernel) {
                return None;
            }
            continue;
        }
        if user.is("memref.dealloc") {
            deallocs.push(user);
            continue;
        }
        let read = list_effects(user).is_some_and(|(reads, writes)| {
            reads.contains(&found.index) && !writes.contains(&found.index)
        });
        if !read {
            return None;
        }
    }
    match deallocs.as_slice() {
        [dealloc] => Some(*dealloc),
        _ => None,
    }
}

/// Merges two fresh lists that `kernel` fills with the same value at the
/// same index and that nothing else writes (e.g. a value saved for later
/// supersteps and the same value as sort keys): the second list's readers
/// read the first, which lives until the later of the two deallocations;
/// whether it did.
fn merge_duplicate_lists(kernel: Op) -> bool {
    let Some((induction, count)) = full_range(kernel) else {
        return false;
    };
    let stores: Vec<Op> = stores_at_index(kernel, induction)
        .into_iter()
        .filter(|store| alloc_of_count(store.operand(1), count).is_some())
        .collect();
    for (k, &kept_store) in stores.iter().enumerate() {
        for &dropped_store in &stores[k + 1..] {
            let (kept, dropped) = (kept_store.operand(1), dropped_store.operand(1));
            if kept == dropped || kept_store.operand(0) != dropped_store.operand(0) {
                continue;
            }
            let (Some(kept_dealloc), Some(dropped_dealloc)) = (
                read_only_after(kept, kept_store, kernel),
                read_only_after(dropped, dropped_store, kernel),
            ) else {
                continue;
            };
            if kept_dealloc.block_of() != dropped_dealloc.block_of() {
                continue;
            }
            let Some(alloc) = dropped.defining_op() else {
                continue;
            };
            dropped_store.erase();
            if is_before(kept_dealloc, dropped_dealloc) {
                kept_dealloc.erase();
                dropped_dealloc.set_operand(0, kept);
            } else {
                dropped_dealloc.erase();
            }
            dropped.replace_all_uses(kept);
            alloc.erase();
            return true;
        }
    }
    false
}

/// Forwards one input copy made by `kernel`; whether it did.
fn forward_input(kernel: Op) -> bool {
    let Some((induction, count)) = full_range(kernel) else {
        return false;
    };
    for (load, store) in copies_in(kernel, induction) {
        let (src, copy) = (load.operand(0), store.operand(1));
        let Some(alloc) = alloc_of_count(copy, count) else {
            continue;
        };
        // Nothing else in the kernel may write the source.
        let others = kernel.nested().into_iter().filter(|op| *op != store).fold(
            Effects::default(),
            |mut effects, op| {
                effects.add(op);
                effects
            },
        );
        if others.may_write(src) {
            continue;
        }
        // The readers: loads and collective inputs after the kernel in
        // its block; otherwise only the store and deallocations.
        let Some(readers) = readers_after(copy, store, kernel, |found| {
            if found.owner.is("memref.load") {
                found.index == 0
            } else {
                list_effects(found.owner).is_some_and(|(reads, _)| reads.contains(&found.index))
                    && has_unit_stride(src)
            }
        }) else {
            continue;
        };
        if readers.is_empty() {
            continue;
        }
        // The ops from the kernel to its last reader.
        let after = ops_between(kernel, None);
        let Some(last) = after
            .iter()
            .rposition(|op| readers.iter().any(|(_, top)| top == op))
        else {
            continue;
        };
        // Deallocations of a fresh source before the last reader move
        // after it; any other write keeps the copy.
        let writers: Vec<Op> = after[..=last]
            .iter()
            .copied()
            .filter(|op| Effects::of(*op).may_write(src))
            .collect();
        if !writers
            .iter()
            .all(|op| op.is("memref.dealloc") && op.operand(0) == src)
        {
            continue;
        }
        if let Some(end) = after.get(last + 1) {
            for dealloc in writers {
                dealloc.move_before(*end);
            }
        } else if !writers.is_empty() {
            continue;
        }
        for (found, _) in readers {
            found.owner.set_operand(found.index, src);
        }
        remove_copy(store, alloc);
        erase_if_dead(kernel);
        return true;
    }
    false
}

/// Marks the collective of the overlapping case, whose copy stays.
const FALLBACK: &str = "pgpu.overlap_fallback";

/// Forwards the output of `collective` into the list a later kernel copies
/// it to; whether it did.
fn forward_output(collective: Op) -> Built<bool> {
    if collective.has_attribute(FALLBACK) {
        return Ok(false);
    }
    let (tmp, count) = (collective.operand(1), collective.operand(2));
    let Some(alloc) = tmp.defining_op().filter(|op| op.is("memref.alloc")) else {
        return Ok(false);
    };
    // Every read of `tmp` is in one kernel after the collective.
    let mut kernel = None;
    for found in tmp.uses() {
        let user = found.owner;
        if user == collective || user.is("memref.dealloc") {
            continue;
        }
        if !user.is("memref.load") {
            return Ok(false);
        }
        let Some(owner) = enclosing_kernel(user) else {
            return Ok(false);
        };
        if kernel.is_some_and(|k: Op| k != owner) {
            return Ok(false);
        }
        kernel = Some(owner);
    }
    let Some(kernel) = kernel else {
        return Ok(false);
    };
    if !is_before(collective, kernel) {
        return Ok(false);
    }
    let Some((induction, range)) = full_range(kernel) else {
        return Ok(false);
    };
    if !same_count(range, count) {
        return Ok(false);
    }
    let Some((_, store)) = copies_in(kernel, induction)
        .into_iter()
        .find(|(load, _)| load.operand(0) == tmp)
    else {
        return Ok(false);
    };
    let dst = store.operand(1);
    if dst.is_defined_within(kernel)
        || !has_unit_stride(dst)
        || dst
            .defining_op()
            .is_some_and(|op| op.block_of() == collective.block_of() && !is_before(op, collective))
    {
        return Ok(false);
    }
    // Nothing between the collective and the kernel touches `dst`; the
    // kernel uses it only for the copy.
    if ops_strictly_between(collective, kernel)
        .iter()
        .any(|op| Effects::of(*op).may_touch(dst))
    {
        return Ok(false);
    }
    if !copy_is_unobserved(kernel, store, dst) {
        return Ok(false);
    }
    let fallback_end = if may_alias(collective.operand(0), dst) {
        Some(write_unless_overlapping(collective, dst)?)
    } else {
        collective.set_operand(1, dst);
        None
    };
    for found in tmp.uses() {
        if found.owner.is("memref.load") && found.owner.is_within(kernel) {
            found.owner.set_operand(0, dst);
        }
    }
    remove_copy(store, alloc);
    erase_if_dead(kernel);
    if let Some(fallback_end) = fallback_end {
        confine_to_fallback(alloc, fallback_end);
    }
    Ok(true)
}

/// Moves the allocation and deallocations of the collective's own list
/// into the fallback branch that alone uses it now (its `scf.yield` is
/// `fallback_end`), so the direct path allocates nothing.
fn confine_to_fallback(alloc: Op, fallback_end: Op) {
    let Some(branch) = fallback_end.parent() else {
        return;
    };
    let uses = alloc.result(0).uses();
    if !uses
        .iter()
        .all(|found| found.owner.is_within(branch) || found.owner.is("memref.dealloc"))
    {
        return;
    }
    let Some(first) = fallback_end.block_of().first() else {
        return;
    };
    alloc.move_before(first);
    for found in uses {
        if found.owner.is("memref.dealloc") {
            found.owner.move_before(fallback_end);
        }
    }
}

/// Whether the rest of `kernel` cannot tell that `store` (of the copy into
/// `dst`) happened earlier, in the collective: nothing reads `dst`, and
/// writes that may hit `dst` come after the store in each thread (other
/// threads' writes in the superstep race with the copy's anyway, so the
/// collective's writes going first is one of the orders the kernel
/// allowed).
fn copy_is_unobserved(kernel: Op, store: Op, dst: Val) -> bool {
    let Some(body) = kernel.entry_block(0) else {
        return false;
    };
    let mut after_store = false;
    for op in body.ops() {
        if op == store {
            after_store = true;
            continue;
        }
        let effects = Effects::of(op);
        let reads = effects.reads.iter().any(|&read| may_alias(read, dst));
        if effects.unknown || reads || (!after_store && effects.may_write(dst)) {
            return false;
        }
    }
    true
}

/// Makes `collective` write `dst` when its input and `dst` do not
/// partially overlap at run time (the scan may also run in place), and
/// otherwise write its own list as before and copy that to `dst`; returns
/// the fallback branch's `scf.yield`:
///
/// ```text
/// %r = scf.if %no_overlap { collective(values -> dst) }
///      else { collective(values -> tmp); dst[i] = tmp[i] for i < count }
/// ```
fn write_unless_overlapping(collective: Op, dst: Val) -> Built<Op> {
    let (values, tmp, count) = (
        collective.operand(0),
        collective.operand(1),
        collective.operand(2),
    );
    let at = Builder::before(collective).at_location_of(collective);
    let in_place = collective.is("pgpu.list.scan");
    let ok = no_partial_overlap(&at, values, dst, count, in_place)?;
    let users: Vec<_> = collective
        .results()
        .iter()
        .enumerate()
        .flat_map(|(index, result)| result.uses().into_iter().map(move |found| (index, found)))
        .collect();
    let types: Vec<_> = collective
        .results()
        .iter()
        .map(|result| result.melior_type())
        .collect();
    let (choice, then_yield, else_yield, fallback) = two_versions(&at, ok, collective, &types)?;
    fallback.set_unit_attribute(FALLBACK);
    collective.set_operand(1, dst);
    let copy = Builder::before(else_yield).at_location_of(collective);
    let (_, reduce, i) = copy.parallel(count)?;
    let body = Builder::before(reduce).at_location_of(collective);
    let value = body.load(tmp, i)?;
    body.store(value, dst, i)?;
    then_yield.set_operands(&collective.results());
    else_yield.set_operands(&fallback.results());
    for (index, found) in users {
        found.owner.set_operand(found.index, choice.result(index));
    }
    Ok(else_yield)
}

/// Whether `a[0, count)` and `b[0, count)` are disjoint (or, with
/// `same_allowed`, the same elements), computed from their addresses.
fn no_partial_overlap(at: &Builder, a: Val, b: Val, count: Val, same_allowed: bool) -> Built<Val> {
    let (a, b) = (byte_range(at, a, count)?, byte_range(at, b, count)?);
    let mut ok = apart(at, a, b)?;
    if same_allowed {
        let same = at.cmpi(0, a.0, b.0)?;
        ok = at.value("arith.ori", &[ok, same], ok.melior_type(), &[])?;
    }
    Ok(ok)
}

/// Whether the address ranges `[start, end)` of `a` and `b` are disjoint.
fn apart(at: &Builder, a: (Val, Val), b: (Val, Val)) -> Built<Val> {
    let a_first = at.cmpi(7, a.1, b.0)?;
    let b_first = at.cmpi(7, b.1, a.0)?;
    at.value("arith.ori", &[a_first, b_first], a_first.melior_type(), &[])
}

/// The addresses of `list[0]` and `list[count]`.
fn byte_range(at: &Builder, list: Val, count: Val) -> Built<(Val, Val)> {
    let index = at.index_type();
    let element = memref_element_type(list)?;
    let bytes = element_bytes(&element.to_string()).unwrap_or(8);
    let base = at.parse_type(&format!("memref<{element}>"))?;
    let metadata = at.op(
        "memref.extract_strided_metadata",
        &[list],
        &[base, index, index, index],
        &[],
    )?;
    let size = at.index(i64::try_from(bytes).unwrap_or(8))?;
    let offset = at.value("arith.muli", &[metadata.result(1), size], index, &[])?;
    let start = at.value("arith.addi", &[at.aligned_index(list)?, offset], index, &[])?;
    let length = at.value("arith.muli", &[count, size], index, &[])?;
    let end = at.value("arith.addi", &[start, length], index, &[])?;
    Ok((start, end))
}

/// The addresses of a rank-1 list's first element and one past its last.
fn whole_range(at: &Builder, list: Val) -> Built<(Val, Val)> {
    let zero = at.index(0)?;
    let count = at.value("memref.dim", &[list, zero], at.index_type(), &[])?;
    byte_range(at, list, count)
}
/// Erases a copy's store, and the list it copied into when nothing else
/// uses it (deallocations aside).
fn remove_copy(store: Op, alloc: Op) {
    let load = store.operand(0).defining_op();
    store.erase();
    if let Some(load) = load.filter(|load| load.result(0).uses().is_empty()) {
        load.erase();
    }
    let list = alloc.result(0);
    let uses = list.uses();
    if uses.iter().all(|found| found.owner.is("memref.dealloc")) {
        for found in uses {
            found.owner.erase();
        }
        alloc.erase();
    }
}

/// Erases `kernel` when its body has no effect (only pure ops and loads:
/// no writes and no output, which `Effects` does not count).
fn erase_if_dead(kernel: Op) {
    let effects = Effects::of(kernel);
    let prints = kernel.nested().into_iter().any(|op| op.is("pgpu.printf"));
    if !effects.unknown && effects.writes.is_empty() && !prints {
        kernel.erase();
    }
}
