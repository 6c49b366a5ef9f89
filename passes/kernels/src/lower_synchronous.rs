//! `pgpu-lower-synchronous`: runs Fork's synchronous groups as BSGP spawns,
//! for groups that do not split (seeds/fork-to-cuda.txt, Section 3, the
//! single-group rules of Figure 3).
//!
//! A synchronous group executes every statement in lock step: the reads of
//! a step see memory from before it, and of concurrent writes to one
//! element the lowest rank's wins (Priority CRCW). A BSGP spawn gives the
//! same results when
//!
//! * every store to shared memory (anything but the processor's own
//!   `memref.alloca` cells) has a barrier before it (all earlier reads of
//!   every processor are done: no write-after-read across processors) and
//!   after it (all writes are visible to later reads): the paper's kernel
//!   split at every shared write, which `pgpu-form-supersteps` and
//!   `pgpu-split-kernels` then perform;
//! * a store whose index is not one element per processor (`rank`,
//!   `rank + c`, `rank - c` for a `c` equal in all processors, through
//!   integer casts) resolves its conflicts explicitly: every writer takes
//!   `atomic max` of its priority `INT32_MAX - rank` on a claim cell of the
//!   element, and after a barrier only the winner (the lowest rank) stores
//!   and then resets the cell. Claim cells start at 0, so that a global
//!   target's claim global is zero-initialized memory (no data in the
//!   executable); a list or cell from outside the group gets a claim list
//!   or cell filled by the host before the spawn and freed after it;
//! * a store of a value that is the same in every processor needs no
//!   claims (any winner writes that value);
//! * a multiprefix on one location of the group (Fork's `mpadd` etc.)
//!   whose results nobody reads becomes one atomic update per processor
//!   for the integer kinds whose total does not depend on the order;
//!   otherwise a read of the old value, a `pgpu.scan` in rank order (each
//!   processor's result is `old op prefix`) and the store of `old op
//!   total` (for integers by the last rank, as its result combined with
//!   its value, so that no kernel needs the scan's total), between
//!   barriers;
//! * `seq` (Fork's one-processor mode) becomes `if (rank == 0)` and `farm`
//!   (asynchronous mode: immediate writes, explicit barriers) its region
//!   inline, both between barriers; a multiprefix inside either is an
//!   atomic fetch-and-op (`memref.atomic_rmw`, which returns the old
//!   value: Fork's self-scheduling `i = mpadd(&next, 1)` in a `farm`), for
//!   integers and floats;
//! * `pgpu.group.rank` and `pgpu.group.size` become `pgpu.rank` and
//!   `pgpu.size`, and `pgpu.group.id` the initial group's 0.
//!
//! Groups the rules do not cover stay synchronous, the op that keeps one
//! so marked `pgpu.unlowered = "<the construct>"` (and `pgpu compile`
//! reports it at that op's source location). `pgpu-lower-groups`, which runs first, takes apart group
//! splits, `fork`, calls of synchronous functions, multiprefix on locations
//! that differ between processors and synchronization under control flow
//! (Figures 4 and 5), so that what reaches this pass unlowered is: a
//! barrier in a `farm` below other statements, a multiprefix on `index`
//! values in `farm` or `seq`, and conflicting stores to lists made inside
//! the group or to lists from outside of rank other than 1.
//!
//! Calls of ordinary functions: one that at most reads memory may be
//! anywhere; one that writes is a statement of its own between barriers,
//! run asynchronously in every processor (Fork's asynchronous functions).
//!
//! We write this pass because Fork's group semantics have no upstream
//! counterpart.

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::{Op, Val, string_ref},
    runtime_calls::RuntimeCalls,
    unsynchronized::{CallEffects, call_effects, is_private_memory, is_rank_injective, is_uniform},
};
use melior::ir::{
    OperationRef, TypeLike,
    attribute::IntegerAttribute,
    operation::OperationLike,
    r#type::{MemRefType, ShapedTypeLike},
};
use pgpu_pass_infra::{Pass, PassFailure};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct LowerSynchronous;

impl Pass for LowerSynchronous {
    const ARGUMENT: &'static str = "pgpu-lower-synchronous";
    const SUMMARY: &'static str = "Run Fork groups that do not split as BSGP spawns (barriers at shared writes, Priority CRCW)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::arith(),
            DialectHandle::memref(),
            DialectHandle::scf(),
        ]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let mut runtime = RuntimeCalls::new(module);
        let spawns: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.spawn") && op.has_attribute("synchronous"))
            .collect();
        for spawn in spawns {
            match plan(spawn) {
                Ok(plan) => lower(&mut runtime, spawn, plan)?,
                // Left synchronous; the op says why (`pgpu compile`
                // reports it there).
                Err((op, what)) => {
                    let at = Builder::before(op);
                    op.set_attribute(UNLOWERED, at.string_attribute(what));
                }
            }
        }
        Ok(())
    }
}

/// A shared store (or a multiprefix, `seq`, `farm` between barriers) and
/// how its writers' conflicts resolve.
struct SharedStore {
    op: Op,
    writers: Writers,
}

/// Who writes the elements of a shared store.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writers {
    /// Each processor its own element (or the op resolves it itself).
    Own,
    /// Different values to elements that may coincide: Priority CRCW
    /// claims.
    Claims,
    /// One value to one element in every processor: the first writes
    /// (the others' writes would race, though with the same value).
    First,
    /// One value everywhere, to elements that may coincide: an atomic
    /// exchange ([`common_write`]).
    Exchange,
}

/// The attribute naming, on the op that kept its group synchronous, what
/// the native backends cannot compile there (`pgpu compile` reports it at
/// the op's location).
pub const UNLOWERED: &str = "pgpu.unlowered";

/// The op that keeps a group from being lowered, and the construct it is.
type Unlowered = (Op, &'static str);

/// The shared stores of a group the pass can lower, or the op that keeps
/// it synchronous.
fn plan(spawn: Op) -> Result<Vec<SharedStore>, Unlowered> {
    let Some(body) = spawn.entry_block(0) else {
        return Err((spawn, "a synchronous spawn without a body"));
    };
    let mut stores = vec![];
    for op in spawn.nested() {
        let name = op.name();
        let unsupported = match name.as_str() {
            "pgpu.group.split" | "pgpu.group.fork" => {
                Some("a group split or fork that pgpu-lower-groups left in place")
            }
            "func.call_indirect" => Some("an indirect call in synchronous group code"),
            "memref.copy" => Some("a copy of arrays in synchronous group code"),
            // In `farm` or `seq` an atomic update is immediate, as there
            // (`pgpu-split-private-control` makes common writes ones).
            "memref.atomic_rmw" if mode_ancestor(op, spawn).is_none() => {
                Some("an atomic update in synchronous group code")
            }
            "pgpu.spawn" => Some("a spawn inside synchronous group code"),
            _ => None,
        };
        if let Some(what) = unsupported {
            return Err((op, what));
        }
        // `seq`, `farm` and calls of functions that write memory (run
        // asynchronously, as Fork runs asynchronous functions) are
        // statements of their own at the top level, between barriers;
        // calls that at most read may be anywhere. Barriers only directly
        // in a top-level `farm`.
        let writing_call = op.is("func.call") && call_effects(op) == CallEffects::Writes;
        if writing_call || matches!(name.as_str(), "pgpu.seq" | "pgpu.farm") {
            if op.block_of() != body {
                return Err((
                    op,
                    match name.as_str() {
                        "pgpu.seq" => {
                            "a `seq` below other statements (under control flow the group does not split at)"
                        }
                        "pgpu.farm" => {
                            "a `farm` below other statements (under control flow the group does not split at)"
                        }
                        _ => {
                            "a call of a function that writes memory below other statements (under control flow the group does not split at)"
                        }
                    },
                ));
            }
            stores.push(SharedStore {
                op,
                writers: Writers::Own,
            });
            continue;
        }
        if op.is("func.call") {
            continue;
        }
        let mode = mode_ancestor(op, spawn);
        if name == "pgpu.barrier"
            && !op
                .parent()
                .is_some_and(|parent| parent.is("pgpu.farm") && parent.block_of() == body)
        {
            return Err((
                op,
                "a `barrier` below other statements of a `farm` (under control flow)",
            ));
        }
        if op.is("pgpu.multiprefix") {
            if mode.is_some() {
                // Asynchronous code (`farm`) or one processor (`seq`): an
                // atomic fetch-and-op, immediate as the mode's writes.
                if fetch_and_op_kind(op).is_none() {
                    return Err((
                        op,
                        "a multiprefix of this type in `farm` or `seq` (no atomic fetch-and-op for it)",
                    ));
                }
                continue;
            }
            // One location for the whole group, at the top level.
            let uniform = op.has_attribute(crate::lower_groups::UNIFORM_LOCATION)
                || op.operands()[1..]
                    .iter()
                    .all(|operand| is_same_everywhere(*operand, spawn));
            if combine_op(op).is_none() {
                return Err((op, "a multiprefix of this kind and type"));
            }
            if op.block_of() != body || !uniform {
                return Err((
                    op,
                    "a multiprefix below other statements or on a location that differs between members",
                ));
            }
            stores.push(SharedStore {
                op,
                writers: Writers::Own,
            });
            continue;
        }
        if !op.is("memref.store") || is_private_memory(op.operand(1), spawn) {
            continue;
        }
        // In `seq` one processor writes; in `farm` writes are immediate.
        if mode.is_some() {
            continue;
        }
        if op.block_of() != body {
            return Err((
                op,
                "a store to shared memory below other statements (under control flow the group does not split at)",
            ));
        }
        let indices: Vec<Val> = op.operands()[2..].to_vec();
        // Writers of one value everywhere need no claims: whoever wins, the
        // element gets that value.
        let own_element = indices.len() == 1 && is_rank_injective(indices[0], spawn);
        let writers = if own_element {
            Writers::Own
        } else if !is_same_everywhere(op.operand(0), spawn) {
            Writers::Claims
        } else if op
            .operands()
            .into_iter()
            .all(|operand| is_same_everywhere(operand, spawn))
        {
            Writers::First
        } else {
            Writers::Exchange
        };
        let conflicting = writers == Writers::Claims;
        // Claims for a global scalar or list, or a list from outside.
        let target = op.operand(1);
        let global = target
            .defining_op()
            .is_some_and(|op| op.is("memref.get_global"));
        // Claim cells: a global of the target's shape, or a list (one
        // dimension) or cell from outside.
        if conflicting && indices.len() > 1 && !global {
            return Err((
                op,
                "concurrent writes to an array of several dimensions from outside the group (Priority CRCW claims need a global or a list of one dimension)",
            ));
        }
        if conflicting && !global && target.is_defined_within(spawn) {
            return Err((
                op,
                "concurrent writes to an array the group made (Priority CRCW claims need a global or a list from outside)",
            ));
        }
        stores.push(SharedStore { op, writers });
    }
    Ok(stores)
}

/// The `pgpu.seq` or `pgpu.farm` that `op` is nested in, below `spawn`.
fn mode_ancestor(op: Op, spawn: Op) -> Option<Op> {
    let mut current = op.parent();
    while let Some(parent) = current {
        if parent == spawn {
            return None;
        }
        if parent.is("pgpu.seq") || parent.is("pgpu.farm") {
            return Some(parent);
        }
        current = parent.parent();
    }
    None
}

/// How lowered synchronous code names its member's rank and the group's
/// barrier: the spawn's threads here, a range of a block's
/// threads in `pgpu-block-groups`.
pub(crate) trait Members {
    fn rank(&self, at: &Builder) -> Built<Val>;
    fn barrier(&self, at: &Builder) -> Built<()>;
}

/// The group is the whole spawn.
struct SpawnMembers;

impl Members for SpawnMembers {
    fn rank(&self, at: &Builder) -> Built<Val> {
        at.value("pgpu.rank", &[], at.index_type(), &[])
    }

    fn barrier(&self, at: &Builder) -> Built<()> {
        at.op("pgpu.barrier", &[], &[], &[]).map(|_| ())
    }
}

/// `if (rank == 0)` before `op`: the `scf.if` and its then-yield.
fn if_first_member(op: Op, members: &dyn Members) -> Built<(Op, Op)> {
    let at = Builder::before(op);
    let rank = members.rank(&at)?;
    let zero = at.index(0)?;
    let first = at.cmpi(0, rank, zero)?;
    let (guard, then_yield, _) = at.if_op(first, &[], false)?;
    Ok((guard, then_yield))
}

/// Fork's `seq`: rank 0 runs the region, between barriers. Returns the
/// `scf.if` that replaces it.
pub(crate) fn sequential(op: Op, members: &dyn Members) -> Built<Op> {
    let (only, then_yield) = if_first_member(op, members)?;
    move_body(op, then_yield)?;
    op.erase();
    Ok(only)
}

/// The shared `store` of one value to one element, by the first member
/// alone. Returns the `scf.if` around it.
pub(crate) fn first_member_only(store: Op, members: &dyn Members) -> Built<Op> {
    let (guard, then_yield) = if_first_member(store, members)?;
    store.move_before(then_yield);
    Ok(guard)
}

/// The shared `store` of one value from every member to elements that
/// may coincide (Fork's Common CRCW case: whoever wins, the element gets
/// that value): an atomic exchange, so that the members' writes of one
/// element do not race (`memref.atomic_rmw assign`, for 32- and 64-bit
/// integers and floats; other types keep the plain store). Returns the op
/// that replaces it.
pub(crate) fn common_write(store: Op) -> Built<Op> {
    if !has_common_write(store.operand(0).melior_type()) {
        return Ok(store);
    }
    // arith::AtomicRMWKind::assign in MLIR 22's numbering (addf, addi,
    // andi, assign, ...).
    atomic_rmw(store, 3)
}

/// Whether [`common_write`] makes a store of `ty` atomic.
pub(crate) fn has_common_write(ty: melior::ir::Type) -> bool {
    matches!(ty.to_string().as_str(), "i32" | "i64" | "f32" | "f64")
}

/// Fork's `farm`: every processor runs the region, between barriers, its
/// explicit barriers now the spawn's. Returns the last op moved out (or
/// the barrier before it).
pub(crate) fn farm(op: Op) -> Built<Op> {
    let at = Builder::before(op);
    let yielded = move_body(op, op)?;
    for (result, value) in op.results().into_iter().zip(yielded) {
        result.replace_all_uses(value);
    }
    let last = op
        .block_of()
        .ops()
        .into_iter()
        .take_while(|other| *other != op)
        .last();
    op.erase();
    last.ok_or_else(|| at.fail("internal error: an empty farm"))
}

/// Moves the body of the one-region `op` (without its `pgpu.yield`) before
/// `before`; returns the yielded values.
fn move_body(op: Op, before: Op) -> Built<Vec<Val>> {
    let Some(block) = op.entry_block(0) else {
        return Ok(vec![]);
    };
    let mut yielded = vec![];
    for inner in block.ops() {
        if inner.is("pgpu.yield") {
            yielded = inner.operands();
            continue;
        }
        inner.move_before(before);
    }
    Ok(yielded)
}

/// Whether `value` is the same in every processor: uniform, a global's
/// address, or a view or pure computation of such values.
pub(crate) fn is_same_everywhere(value: Val, spawn: Op) -> bool {
    if is_uniform(value, spawn) {
        return true;
    }
    let Some(op) = value.defining_op() else {
        return false;
    };
    let name = op.name();
    let transparent = name == "memref.get_global"
        || matches!(
            name.as_str(),
            "memref.reinterpret_cast" | "memref.cast" | "memref.subview"
        )
        || (name.starts_with("arith.") && op.num_regions() == 0);
    transparent
        && op
            .operands()
            .into_iter()
            .all(|operand| is_same_everywhere(operand, spawn))
}

/// The combining kind of a multiprefix (the dialect's numbering).
pub(crate) fn combining_kind(op: Op) -> Option<i64> {
    op.integer_attribute("kind")
}

/// The `arith` op combining two values of a multiprefix's kind and type.
pub(crate) fn combine_op(op: Op) -> Option<&'static str> {
    let kind = combining_kind(op)?;
    let float = op.result(0).melior_type().is_float();
    Some(match (kind, float) {
        (0, false) => "arith.addi",
        (0, true) => "arith.addf",
        (1, false) => "arith.muli",
        (1, true) => "arith.mulf",
        (2, false) => "arith.minsi",
        (2, true) => "arith.minimumf",
        (3, false) => "arith.maxsi",
        (3, true) => "arith.maximumf",
        (4, false) => "arith.minui",
        (5, false) => "arith.maxui",
        (6, false) => "arith.andi",
        (7, false) => "arith.ori",
        (8, false) => "arith.xori",
        _ => return None,
    })
}

/// A multiprefix on one location of the group: every processor reads the
/// old value, a `pgpu.scan` of the values in rank order gives each its
/// prefix and the total, the result is `old op prefix`, and one processor
/// stores `old op total`. Returns the last op (the store's `scf.if`).
fn multiprefix(op: Op) -> Built<Op> {
    let at = Builder::before(op);
    let Some(combine) = combine_op(op) else {
        return Err(at.fail("internal error: an unsupported multiprefix"));
    };
    if let Some(update) = as_atomic_update(op)? {
        return Ok(update);
    }
    let ty = op.result(0).melior_type();
    let mut cell = op.operands()[1..].to_vec();
    let value = op.operand(0);
    let old = at.value("memref.load", &cell, ty, &[])?;
    let kind = op
        .melior()
        .attribute("kind")
        .map_err(|_| at.fail("multiprefix without a kind"))?;
    let scan = at.op("pgpu.scan", &[value], &[ty, ty], &[("kind", kind)])?;
    let result = at.value(combine, &[old, scan.result(0)], ty, &[])?;
    let rank = at.value("pgpu.rank", &[], at.index_type(), &[])?;
    // Integers: the last rank stores its own result combined with its value
    // (the same total; the scan's total would be read back by the host
    // between the kernels). Floats keep the scan's total, whose order of
    // additions the runtime defines.
    let (storer, total) = if ty.is_float() {
        let total = at.value(combine, &[old, scan.result(1)], ty, &[])?;
        (at.index(0)?, total)
    } else {
        let size = at.value("pgpu.size", &[], at.index_type(), &[])?;
        let one = at.index(1)?;
        let last = at.value("arith.subi", &[size, one], at.index_type(), &[])?;
        (last, at.value(combine, &[result, value], ty, &[])?)
    };
    let stores = at.cmpi(0, rank, storer)?;
    let (store_if, then_yield, _) = at.if_op(stores, &[], false)?;
    let mut operands = vec![total];
    operands.append(&mut cell);
    at.moved_to(then_yield)
        .op("memref.store", &operands, &[], &[])?;
    op.result(0).replace_all_uses(result);
    op.erase();
    Ok(store_if)
}

/// A multiprefix whose prefixes nobody reads, of a kind whose total does
/// not depend on the order: one atomic update per processor instead of a
/// scan. Returns the update (replacing `op`), or `None` when `op` stays.
pub(crate) fn as_atomic_update(op: Op) -> Built<Option<Op>> {
    match atomic_kind(op).filter(|_| op.result(0).uses().is_empty()) {
        Some(kind) => atomic_rmw(op, kind).map(Some),
        None => Ok(None),
    }
}

/// Replaces `op` (a multiprefix, or a store: value, memref, indices) by a
/// `memref.atomic_rmw` of `kind` (an `arith::AtomicRMWKind`) on its cell,
/// whose result, the old value, replaces the multiprefix's.
fn atomic_rmw(op: Op, kind: i64) -> Built<Op> {
    let at = Builder::before(op);
    let i64_type = at.parse_type("i64")?;
    let kind: melior::ir::Attribute = IntegerAttribute::new(i64_type, kind).into();
    let ty = op.operand(0).melior_type();
    let update = at.op(
        "memref.atomic_rmw",
        &op.operands(),
        &[ty],
        &[("kind", kind)],
    )?;
    if op.num_results() == 1 {
        op.result(0).replace_all_uses(update.result(0));
    }
    op.erase();
    Ok(update)
}

/// A multiprefix in asynchronous code (`farm`, an `async` function) or in
/// `seq`: there Fork's multiprefix is an atomic fetch-and-op (each member
/// gets the value before its own contribution, in the order the members
/// reach the cell, which asynchronous code does not define): a
/// `memref.atomic_rmw` returning the old value. `None` (and `op` kept)
/// for a kind or type it has none for.
pub(crate) fn as_fetch_and_op(op: Op) -> Built<Option<Op>> {
    match fetch_and_op_kind(op) {
        Some(kind) => atomic_rmw(op, kind).map(Some),
        None => Ok(None),
    }
}

/// The `arith::AtomicRMWKind` (MLIR 22 numbering) of the multiprefix `op`
/// as a fetch-and-op: integers and floats, not `index`.
pub(crate) fn fetch_and_op_kind(op: Op) -> Option<i64> {
    let ty = op.result(0).melior_type();
    if ty.is_index() {
        return None;
    }
    let kind = combining_kind(op)?;
    Some(match (kind, ty.is_float()) {
        (0, true) => 0,   // addf
        (1, true) => 12,  // mulf
        (2, true) => 8,   // minimumf
        (3, true) => 4,   // maximumf
        (0, false) => 1,  // addi
        (1, false) => 13, // muli
        (2, false) => 10, // mins
        (3, false) => 6,  // maxs
        (4, false) => 11, // minu
        (5, false) => 7,  // maxu
        (6, false) => 2,  // andi
        (7, false) => 14, // ori
        (8, false) => 15, // xori
        _ => return None,
    })
}

/// The `arith::AtomicRMWKind` (MLIR 22 numbering) that combines like the
/// integer multiprefix `op` in any order, if there is one.
pub(crate) fn atomic_kind(op: Op) -> Option<i64> {
    // `memref.atomic_rmw` takes signless integers and floats (floats not
    // here: the order of additions would differ), not `index`.
    let ty = op.result(0).melior_type();
    if ty.is_float() || ty.is_index() {
        return None;
    }
    let kind = combining_kind(op)?;
    Some(match kind {
        0 => 1,  // add: addi
        2 => 10, // min: mins
        3 => 6,  // max: maxs
        4 => 11, // minu
        5 => 7,  // maxu
        6 => 2,  // and: andi
        7 => 14, // or: ori
        _ => return None,
    })
}

fn lower(runtime: &mut RuntimeCalls, spawn: Op, stores: Vec<SharedStore>) -> Built<()> {
    // Multiprefix operations in `farm` and `seq`: atomic fetch-and-ops.
    for op in spawn.nested() {
        if op.is("pgpu.multiprefix") && mode_ancestor(op, spawn).is_some() {
            as_fetch_and_op(op)?;
        }
    }
    // Group queries of the one group.
    for op in spawn.nested() {
        let replacement = match op.name().as_str() {
            "pgpu.group.rank" => "pgpu.rank",
            "pgpu.group.size" => "pgpu.size",
            "pgpu.group.id" => "arith.constant",
            _ => continue,
        };
        let at = Builder::before(op);
        let index = at.index_type();
        let value = if replacement == "arith.constant" {
            at.index(0)?
        } else {
            at.value(replacement, &[], index, &[])?
        };
        op.result(0).replace_all_uses(value);
        op.erase();
    }
    for store in stores {
        let at = Builder::before(store.op);
        SpawnMembers.barrier(&at)?;
        let last = if store.op.is("pgpu.multiprefix") {
            multiprefix(store.op)?
        } else if store.op.is("pgpu.seq") {
            sequential(store.op, &SpawnMembers)?
        } else if store.op.is("pgpu.farm") {
            farm(store.op)?
        } else {
            match store.writers {
                Writers::Own => store.op,
                Writers::Claims => resolve_conflicts(runtime, spawn, store.op, &SpawnMembers)?,
                Writers::First => first_member_only(store.op, &SpawnMembers)?,
                Writers::Exchange => common_write(store.op)?,
            }
        };
        let after = last
            .next()
            .ok_or_else(|| at.fail("internal error: a store ends the group"))?;
        SpawnMembers.barrier(&at.moved_to(after))?;
    }
    // SAFETY: live op; removes the attribute by name.
    unsafe {
        mlir_sys::mlirOperationRemoveAttributeByName(spawn.0, string_ref("synchronous"));
    }
    Ok(())
}

/// Rewrites the shared `store` (one index) into the claim protocol:
/// `atomic min` of the rank on the element's claim cell, barrier, the
/// winner stores, barrier, the winner resets the cell. Returns the last op
/// (the reset).
pub(crate) fn resolve_conflicts(
    runtime: &mut RuntimeCalls,
    spawn: Op,
    store: Op,
    members: &dyn Members,
) -> Built<Op> {
    let at = Builder::before(store);
    let target = store.operand(1);
    let indices: Vec<Val> = store.operands()[2..].to_vec();
    let i32_type = at.parse_type("i32")?;
    let claim = claim_cells(runtime, spawn, target, &at)?;
    let rank = members.rank(&at)?;
    let rank = at.value("arith.index_cast", &[rank], i32_type, &[])?;
    // The priority INT32_MAX - rank: the lowest rank has the highest, and
    // unclaimed cells hold 0 (zero-initialized memory).
    let maximum = at.constant(i32_type, i64::from(i32::MAX))?;
    let priority = at.value("arith.subi", &[maximum, rank], i32_type, &[])?;
    let i64_type = at.parse_type("i64")?;
    // `maxs` in MLIR 22's `arith::AtomicRMWKind`.
    let max_kind: melior::ir::Attribute = IntegerAttribute::new(i64_type, 6).into();
    let mut operands = vec![priority, claim];
    operands.extend(&indices);
    at.op(
        "memref.atomic_rmw",
        &operands,
        &[i32_type],
        &[("kind", max_kind)],
    )?;
    members.barrier(&at)?;
    let mut cell = vec![claim];
    cell.extend(&indices);
    let winner = at.value("memref.load", &cell, i32_type, &[])?;
    let wins = at.cmpi(0, winner, priority)?;
    let (_, then_yield, _) = at.if_op(wins, &[], false)?;
    store.move_before(then_yield);
    let after = Builder::before(
        then_yield
            .parent()
            .and_then(|op| op.next())
            .ok_or_else(|| at.fail("internal error: nothing after the claim"))?,
    );
    members.barrier(&after)?;
    let (reset, reset_yield, _) = after.if_op(wins, &[], false)?;
    let inside = after.moved_to(reset_yield);
    let unclaimed = inside.constant(i32_type, 0)?;
    let mut reset_operands = vec![unclaimed];
    reset_operands.extend(&cell);
    inside.op("memref.store", &reset_operands, &[], &[])?;
    Ok(reset)
}

/// The claim cells of `target`'s elements, as a value usable at `at`.
fn claim_cells(runtime: &mut RuntimeCalls, spawn: Op, target: Val, at: &Builder) -> Built<Val> {
    let target_type =
        MemRefType::try_from(target.melior_type()).map_err(|_| at.fail("a store to a non-list"))?;
    // A global list: a claim global of the same shape.
    if let Some(global) = target.defining_op().filter(|op| op.is("memref.get_global"))
        && let Some(name) = symbol_attribute(global, "name")
    {
        let claim_name = format!("__crcw_claim_{name}");
        let claim_type = crate::block_groups::claim_type(target_type);
        let exists = runtime.module.entry_block(0).is_some_and(|block| {
            block
                .ops()
                .into_iter()
                .any(|op| symbol_attribute(op, "sym_name").as_deref() == Some(claim_name.as_str()))
        });
        if !exists {
            runtime.parse_into_module(&format!(
                "memref.global \"private\" @{claim_name} : {claim_type} = dense<0>"
            ))?;
        }
        return at.value(
            "memref.get_global",
            &[],
            at.parse_type(&claim_type)?,
            &[("name", at.parse_attribute(&format!("@{claim_name}"))?)],
        );
    }
    if target.is_defined_within(spawn) {
        return Err(at.fail("conflicting stores to a list made inside the group"));
    }
    // A cell from outside (a shared local of the group): a claim cell.
    let host = Builder::before(spawn);
    let i32_type = host.parse_type("i32")?;
    if target_type.rank() == 0 {
        let segments = host.segment_sizes(&[0, 0])?;
        let claim = host.value(
            "memref.alloc",
            &[],
            host.parse_type("memref<i32>")?,
            &[("operandSegmentSizes", segments)],
        )?;
        let unclaimed = host.constant(i32_type, 0)?;
        host.op("memref.store", &[unclaimed, claim], &[], &[])?;
        let next = spawn
            .next()
            .ok_or_else(|| host.fail("internal error: nothing after the group"))?;
        host.moved_to(next).dealloc(claim)?;
        return Ok(claim);
    }
    // A list from outside: a claim list filled before the spawn.
    let zero = host.index(0)?;
    let length = host.value("memref.dim", &[target, zero], host.index_type(), &[])?;
    let claim = host.alloc(i32_type, length)?;
    let one = host.index(1)?;
    let unclaimed = host.constant(i32_type, 0)?;
    let (_, induction, end) = host.for_loop(zero, length, one)?;
    host.moved_to(end).store(unclaimed, claim, induction)?;
    let next = spawn
        .next()
        .ok_or_else(|| host.fail("internal error: nothing after the group"))?;
    host.moved_to(next).dealloc(claim)?;
    Ok(claim)
}
