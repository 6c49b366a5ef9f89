//! `pgpu-split-private-control`: Fork's group splitting for control flow on
//! private values (seeds/fork-to-cuda.txt, Section 3, Figures 4 and 5).
//!
//! In synchronous code (the body of a `pgpu.spawn synchronous`, or of a
//! function marked `pgpu.synchronous`; not inside `pgpu.seq`, `pgpu.farm`
//! or `pgpu.require`), where every member of a group executes every
//! statement together, a branch or loop whose condition differs between
//! members cannot stay ordinary control flow:
//!
//! * `scf.if` on a private condition becomes `pgpu.group.split` (its
//!   regions moved, `scf.yield` becoming `pgpu.group.merge`): the members
//!   that take each side form a subgroup.
//! * `scf.while` on a private condition shrinks the group (Figure 5): a
//!   private cell `active` starts true; each evaluation of the condition
//!   does `active &= condition`; the loop goes on while any member is
//!   active (a group-wide `or` through `pgpu.multiprefix or` on a scratch
//!   cell); the body runs in `pgpu.group.split %active`, so that members
//!   that left the loop wait at the merge, passing their values on. A body
//!   in the condition region (`do { } while`) is split the same way.
//! * `scf.for` with private bounds runs the group's largest trip count
//!   (`pgpu.multiprefix max` on a scratch cell) with the body split on
//!   `iteration < own trip count`.
//!
//! A value is private unless it is defined outside synchronous code, is a
//! constant, `pgpu.group.size` or `pgpu.group.id`, an `arith`/`math` result
//! of values that are not private, the induction variable of an `scf.for`
//! whose bounds are not private, or a loop-carried value (iteration
//! argument or result) or `scf.if` result whose inputs (initial and
//! yielded values, bounds, condition) are not private; those are decided
//! optimistically around the loop's cycle and taken back if an input turns
//! out private. Loads are private (a shared value read into a condition
//! splits correctly, if needlessly).
//!
//! The scratch cells are the group's own (`pgpu.group.alloc` before the
//! loop): each use stores the identity, combines with a multiprefix and
//! reads the result back in three synchronous steps, so sibling subgroups
//! never share one. We write this pass because Fork's group semantics have
//! no upstream counterpart.

use crate::{
    build::{Builder, Built},
    ir::{Blk, Op, Val},
    unsynchronized::{is_private_memory, runs_unsynchronized},
};
use melior::ir::{OperationRef, Region, RegionLike, Type};
use pgpu_pass_infra::{Pass, PassFailure};
use std::collections::HashMap;

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct SplitPrivateControl;

impl Pass for SplitPrivateControl {
    const ARGUMENT: &'static str = "pgpu-split-private-control";
    const SUMMARY: &'static str =
        "Turn control flow on private values in synchronous code into Fork group splits";
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
        let mut splitter = Splitter {
            private: HashMap::new(),
            log: vec![],
        };
        let candidates: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| {
                matches!(op.name().as_str(), "scf.if" | "scf.while" | "scf.for")
                    && is_synchronous(*op)
            })
            .collect();
        // Decide on the original IR, then rewrite (rewriting adds values
        // the analysis need not see). Regions whose members cannot observe
        // each other run unsynchronized (in a `pgpu.farm`), and so does
        // everything inside them.
        let mut work = vec![];
        let mut unsynchronized: Vec<(Op, Vec<Op>)> = vec![];
        for op in candidates {
            if unsynchronized.iter().any(|(outer, _)| op.is_within(*outer)) {
                continue;
            }
            let Some(scope) = synchronous_scope(op) else {
                continue;
            };
            let private = match op.name().as_str() {
                "scf.if" => splitter.is_private(op.operand(0)),
                "scf.while" => splitter.while_condition_is_private(op),
                _ => (0..3).any(|index| splitter.is_private(op.operand(index))),
            };
            let stores_shared = op.nested().into_iter().any(|inner| {
                inner.is("memref.store") && !is_private_memory(inner.operand(1), scope)
            });
            let exchanges = (private || stores_shared)
                .then(|| runs_unsynchronized(op, scope))
                .flatten();
            if let Some(exchanges) = exchanges {
                unsynchronized.push((op, exchanges));
            } else if private {
                work.push(op);
            }
        }
        for (op, exchanges) in unsynchronized {
            run_in_farm(op)?;
            for store in exchanges {
                crate::lower_synchronous::common_write(store)?;
            }
        }
        for op in work {
            match op.name().as_str() {
                "scf.if" => split_if(op)?,
                "scf.while" => splitter.shrink_while(op)?,
                _ => splitter.shrink_for(op)?,
            }
        }
        Ok(())
    }
}

/// Whether `op` is in synchronous code.
fn is_synchronous(op: Op) -> bool {
    synchronous_scope(op).is_some()
}

/// The synchronous spawn or function whose synchronous code `op` is in.
fn synchronous_scope(op: Op) -> Option<Op> {
    let mut current = op.parent();
    while let Some(parent) = current {
        match parent.name().as_str() {
            "pgpu.seq" | "pgpu.farm" | "pgpu.require" => return None,
            "pgpu.spawn" => return parent.has_attribute("synchronous").then_some(parent),
            "func.func" => return parent.has_attribute("pgpu.synchronous").then_some(parent),
            _ => {}
        }
        current = parent.parent();
    }
    None
}

/// The types of `op`'s results.
fn result_types<'c>(op: Op) -> Vec<Type<'c>> {
    op.results()
        .iter()
        .map(|value| value.melior_type())
        .collect()
}

/// Wraps `op` in a `pgpu.farm` with its results: every member runs it on
/// its own, and the group synchronizes at the end.
fn run_in_farm(op: Op) -> Built<()> {
    let at = Builder::before(op);
    let types = result_types(op);
    let region = Region::new();
    region.append_block(melior::ir::Block::new(&[]));
    let farm = at.op_with_regions("pgpu.farm", &[], &types, &[], vec![region])?;
    for (old, new) in op.results().into_iter().zip(farm.results()) {
        old.replace_all_uses(new);
    }
    let Some(body) = farm.entry_block(0) else {
        return Err(at.fail("internal error: a farm without its block"));
    };
    op.move_before(at.append_to(body, "pgpu.yield", &op.results())?);
    Ok(())
}

/// The values a loop-carried value (an `scf.for`/`scf.while` iteration
/// argument or result) or an `scf.if` result depends on in synchronous
/// code: it is uniform when they all are. `None` for other values.
fn carried_inputs(value: Val) -> Option<Vec<Val>> {
    let terminator = |op: Op, region: usize| op.entry_block(region).and_then(Blk::terminator);
    if let Some(op) = value.defining_op() {
        if !is_synchronous(op) {
            return None;
        }
        let index = op.results().iter().position(|result| *result == value)?;
        return match op.name().as_str() {
            "scf.for" => {
                let yielded = terminator(op, 0)?.operand(index);
                Some(vec![
                    op.operand(0),
                    op.operand(1),
                    op.operand(2),
                    op.operand(3 + index),
                    yielded,
                ])
            }
            "scf.while" => {
                let condition = terminator(op, 0)?;
                Some(vec![condition.operand(0), condition.operand(index + 1)])
            }
            "scf.if" => {
                let mut inputs = vec![op.operand(0)];
                for region in 0..2 {
                    inputs.push(terminator(op, region)?.operand(index));
                }
                Some(inputs)
            }
            _ => None,
        };
    }
    let (owner, number) = argument_owner(value)?;
    if !is_synchronous(owner) {
        return None;
    }
    // SAFETY: a live block argument.
    let block = Blk(unsafe { mlir_sys::mlirBlockArgumentGetOwner(value.0) });
    match owner.name().as_str() {
        "scf.for" if number > 0 => {
            let yielded = terminator(owner, 0)?.operand(number - 1);
            Some(vec![
                owner.operand(0),
                owner.operand(1),
                owner.operand(2),
                owner.operand(3 + number - 1),
                yielded,
            ])
        }
        "scf.while" => {
            let condition = terminator(owner, 0)?;
            if Some(block) == owner.entry_block(0) {
                let yielded = terminator(owner, 1)?.operand(number);
                Some(vec![condition.operand(0), owner.operand(number), yielded])
            } else {
                Some(vec![condition.operand(0), condition.operand(number + 1)])
            }
        }
        _ => None,
    }
}

/// The op owning a block argument.
fn argument_owner(value: Val) -> Option<(Op, usize)> {
    if value.defining_op().is_some() {
        return None;
    }
    // SAFETY: a live block argument.
    let (block, number) = unsafe {
        (
            mlir_sys::mlirBlockArgumentGetOwner(value.0),
            mlir_sys::mlirBlockArgumentGetArgNumber(value.0),
        )
    };
    Some((Blk(block).parent_op()?, usize::try_from(number).ok()?))
}

struct Splitter {
    private: HashMap<Val, bool>,
    /// The values `private` learned, in order (to take tentative ones back).
    log: Vec<Val>,
}

impl Splitter {
    fn is_private(&mut self, value: Val) -> bool {
        if let Some(known) = self.private.get(&value) {
            return *known;
        }
        if let Some(inputs) = carried_inputs(value) {
            // A value carried around a loop (or out of a branch): assume it
            // is uniform, and take back everything concluded meanwhile if an
            // input turns out private (the only cycles in SSA are these).
            let mark = self.log.len();
            self.remember(value, false);
            if inputs.into_iter().any(|input| self.is_private(input)) {
                for tentative in self.log.drain(mark..) {
                    self.private.remove(&tentative);
                }
                self.remember(value, true);
                return true;
            }
            return false;
        }
        let private = match value.defining_op() {
            Some(op) => {
                let name = op.name();
                let outside = !is_synchronous(op) && !op.is("pgpu.spawn");
                let uniform_op = matches!(
                    name.as_str(),
                    "arith.constant" | "pgpu.group.size" | "pgpu.group.id"
                );
                if outside || uniform_op {
                    false
                } else if (name.starts_with("arith.") || name.starts_with("math."))
                    && op.num_regions() == 0
                {
                    op.operands()
                        .into_iter()
                        .any(|operand| self.is_private(operand))
                } else {
                    true
                }
            }
            None => match argument_owner(value) {
                Some((owner, 0)) if owner.is("scf.for") => {
                    (0..3).any(|index| self.is_private(owner.operand(index)))
                }
                Some((owner, _)) if owner.is("func.func") => {
                    owner.has_attribute("pgpu.synchronous")
                }
                Some((owner, _)) => is_synchronous(owner) || owner.is("pgpu.spawn"),
                None => true,
            },
        };
        self.remember(value, private);
        private
    }

    fn remember(&mut self, value: Val, private: bool) {
        self.private.insert(value, private);
        self.log.push(value);
    }

    /// Whether the condition of an `scf.while` is private.
    fn while_condition_is_private(&mut self, op: Op) -> bool {
        op.entry_block(0)
            .and_then(|block| block.terminator())
            .is_some_and(|condition| self.is_private(condition.operand(0)))
    }

    /// The group-wide combination of the private `value` with `kind`
    /// (`or`, `max`) through the group's scratch `cell` holding `identity`.
    fn group_combine(at: &Builder, cell: Val, value: Val, kind: i64, identity: i64) -> Built<Val> {
        let ty = value.melior_type();
        let start = at.constant(ty, identity)?;
        at.op("memref.store", &[start, cell], &[], &[])?;
        let i32_type = at.parse_type("i32")?;
        let kind = melior::ir::attribute::IntegerAttribute::new(i32_type, kind).into();
        at.op("pgpu.multiprefix", &[value, cell], &[ty], &[("kind", kind)])?;
        at.value("memref.load", &[cell], ty, &[])
    }

    /// A scratch cell of the group for values of `ty`, made at `at`.
    fn scratch_cell(at: &Builder, ty: Type) -> Built<Val> {
        at.value(
            "pgpu.group.alloc",
            &[],
            at.parse_type(&format!("memref<{ty}>"))?,
            &[],
        )
    }

    /// `scf.while` on a private condition: the group shrinks.
    fn shrink_while(&mut self, op: Op) -> Built<()> {
        let at = Builder::before(op);
        let (Some(before), Some(after)) = (op.entry_block(0), op.entry_block(1)) else {
            return Err(at.fail("scf.while without its two regions"));
        };
        let Some(condition) = before.terminator() else {
            return Err(at.fail("scf.while without scf.condition"));
        };
        let Some(yield_op) = after.terminator() else {
            return Err(at.fail("scf.while without scf.yield"));
        };
        let i1 = at.parse_type("i1")?;
        let cell_type = at.parse_type("memref<i1>")?;
        let segments = at.segment_sizes(&[0, 0])?;
        let active = at.value(
            "memref.alloca",
            &[],
            cell_type,
            &[("operandSegmentSizes", segments)],
        )?;
        let all = at.constant(i1, 1)?;
        let any_cell = Self::scratch_cell(&at, at.parse_type("i32")?)?;
        at.op("memref.store", &[all, active], &[], &[])?;

        // Before: a body there (`do { } while`) runs in the active members
        // only; members that left pass their values on.
        let effects = before
            .ops()
            .into_iter()
            .any(|inner| inner != condition && has_effects(inner));
        if effects {
            let first = before.first();
            let start = Builder::before(first.ok_or(PassFailure)?);
            let was = start.value("memref.load", &[active], i1, &[])?;
            let no = start.constant(i1, 0)?;
            let mut carried = vec![no];
            carried.extend(before.arguments());
            let types: Vec<Type> = condition
                .operands()
                .iter()
                .map(|value| value.melior_type())
                .collect();
            let split = self.split_ops(&start, was, first, condition, &carried, &types)?;
            condition.set_operands(&split.results());
        }

        // Active members: active &= condition; go on while any is active.
        let check = Builder::before(condition);
        let was = check.value("memref.load", &[active], i1, &[])?;
        let still = check.value("arith.andi", &[condition.operand(0), was], i1, &[])?;
        check.op("memref.store", &[still, active], &[], &[])?;
        let as_i32 = check.value("arith.extui", &[still], check.parse_type("i32")?, &[])?;
        let any_i32 = Self::group_combine(&check, any_cell, as_i32, 7, 0)?;
        let zero = check.constant(check.parse_type("i32")?, 0)?;
        let any = check.cmpi(1, any_i32, zero)?;
        condition.set_operand(0, any);

        // After: the body in a split on `active`; members that left pass
        // their values on.
        let body = Builder::before(yield_op);
        let now = body.value("memref.load", &[active], i1, &[])?;
        let carried = after.arguments();
        let types: Vec<Type> = yield_op
            .operands()
            .iter()
            .map(|value| value.melior_type())
            .collect();
        let split = self.split_around(&body, now, after, yield_op, &carried, &types)?;
        yield_op.set_operands(&split.results());
        Ok(())
    }

    /// `scf.for` with private bounds: the group runs its largest trip
    /// count, each member its own iterations.
    fn shrink_for(&mut self, op: Op) -> Built<()> {
        let at = Builder::before(op);
        let (lower, upper, step) = (op.operand(0), op.operand(1), op.operand(2));
        let ty = lower.melior_type();
        let Some(body) = op.entry_block(0) else {
            return Err(at.fail("scf.for without a body"));
        };
        let Some(yield_op) = body.terminator() else {
            return Err(at.fail("scf.for without scf.yield"));
        };
        // trips = max(0, ceil((upper - lower) / step)); step > 0.
        let span = at.value("arith.subi", &[upper, lower], ty, &[])?;
        let trips = at.value("arith.ceildivsi", &[span, step], ty, &[])?;
        let zero = at.constant(ty, 0)?;
        let trips = at.value("arith.maxsi", &[trips, zero], ty, &[])?;
        let cell = Self::scratch_cell(&at, ty)?;
        let most = Self::group_combine(&at, cell, trips, 3, 0)?;
        let one = at.constant(ty, 1)?;
        op.set_operand(0, zero);
        op.set_operand(1, most);
        op.set_operand(2, one);

        let arguments = body.arguments();
        let iteration = arguments[0];
        let Some(first) = body.first() else {
            return Err(at.fail("scf.for without a body"));
        };
        let inside = Builder::before(first);
        let scaled = inside.value("arith.muli", &[iteration, step], ty, &[])?;
        let induction = inside.value("arith.addi", &[lower, scaled], ty, &[])?;
        for found in iteration.uses() {
            if Some(found.owner) != scaled.defining_op() {
                found.owner.set_operand(found.index, induction);
            }
        }
        let active = inside.cmpi(2, iteration, trips)?;
        let tail = Builder::before(yield_op);
        let carried: Vec<Val> = arguments[1..].to_vec();
        let types: Vec<Type> = yield_op
            .operands()
            .iter()
            .map(|value| value.melior_type())
            .collect();
        // The split covers what follows the induction computation.
        let after = active.defining_op().ok_or(PassFailure)?;
        let split = self.split_ops(&tail, active, after.next(), yield_op, &carried, &types)?;
        yield_op.set_operands(&split.results());
        Ok(())
    }

    /// Moves the ops of `block` before `yield_op` into the then-region of a
    /// new `pgpu.group.split %condition` (built before `yield_op`), which
    /// merges the yielded values; the else-region merges `carried`.
    fn split_around(
        &mut self,
        at: &Builder,
        condition: Val,
        block: Blk,
        yield_op: Op,
        carried: &[Val],
        types: &[Type],
    ) -> Built<Op> {
        let first = block.first();
        self.split_ops(at, condition, first, yield_op, carried, types)
    }

    fn split_ops(
        &mut self,
        at: &Builder,
        condition: Val,
        first: Option<Op>,
        yield_op: Op,
        carried: &[Val],
        types: &[Type],
    ) -> Built<Op> {
        // The ops to move: from `first` up to the split's own setup.
        let mut moving = vec![];
        let mut current = first;
        while let Some(op) = current {
            if op == yield_op {
                break;
            }
            moving.push(op);
            current = op.next();
        }
        let (split, then_merge, else_merge) = group_split(at, condition, types)?;
        for op in moving {
            // The split's condition stays outside.
            if condition.defining_op() != Some(op) {
                op.move_before(then_merge);
            }
        }
        then_merge.set_operands(&yield_op.operands());
        else_merge.set_operands(carried);
        Ok(split)
    }
}

/// Whether `op` (or an op in it) changes memory or talks to the group or
/// the outside world.
fn has_effects(op: Op) -> bool {
    std::iter::once(op).chain(op.nested()).any(|inner| {
        let name = inner.name();
        let pure = name.starts_with("arith.")
            || name.starts_with("math.")
            || name.starts_with("index.")
            || name.starts_with("scf.")
            || matches!(
                name.as_str(),
                "memref.load"
                    | "memref.get_global"
                    | "memref.cast"
                    | "memref.dim"
                    | "ub.poison"
                    | "pgpu.group.rank"
                    | "pgpu.group.size"
                    | "pgpu.group.id"
            );
        !pure
    })
}

/// `pgpu.group.split %condition -> (types) { merge } else { merge }`
/// before `at`; returns it and its two merges.
fn group_split(at: &Builder, condition: Val, types: &[Type]) -> Built<(Op, Op, Op)> {
    let regions = vec![Region::new(), Region::new()];
    for region in &regions {
        region.append_block(melior::ir::Block::new(&[]));
    }
    let split = at.op_with_regions("pgpu.group.split", &[condition], types, &[], regions)?;
    let mut merges = vec![];
    for index in 0..2 {
        let Some(block) = split.entry_block(index) else {
            return Err(at.fail("internal error: group.split without a region"));
        };
        merges.push(
            at.at_location_of(split)
                .append_to(block, "pgpu.group.merge", &[])?,
        );
    }
    Ok((split, merges[0], merges[1]))
}

/// `scf.if` on a private condition becomes `pgpu.group.split`.
fn split_if(op: Op) -> Built<()> {
    let at = Builder::before(op);
    let types = result_types(op);
    let regions = vec![Region::new(), Region::new()];
    let split = at.op_with_regions("pgpu.group.split", &[op.operand(0)], &types, &[], regions)?;
    for index in 0..2 {
        // SAFETY: live ops; the bodies move from the scf.if to the split.
        unsafe { mlir_sys::mlirRegionTakeBody(split.region(index), op.region(index)) };
        let Some(block) = split.entry_block(index) else {
            continue;
        };
        if let Some(terminator) = block.terminator().filter(|t| t.is("scf.yield")) {
            Builder::before(terminator).op("pgpu.group.merge", &terminator.operands(), &[], &[])?;
            terminator.erase();
        }
    }
    for (old, new) in op.results().into_iter().zip(split.results()) {
        old.replace_all_uses(new);
    }
    op.erase();
    Ok(())
}
