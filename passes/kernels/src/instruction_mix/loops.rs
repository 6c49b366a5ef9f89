//! Loops in the instruction-mix analysis: trip counts of `scf.for` and
//! `scf.while`, and bodies whose work changes from one iteration to the
//! next.
//!
//! An `scf.for` runs `ceil((upper - lower) / step)` times. An `scf.while`
//! gets a closed form when it is a counted loop in disguise (what the
//! frontends make of `for (i = a; i < n; i += s)`): its condition compares
//! one carried value with a loop-invariant bound, and its body yields that
//! value plus or minus an invariant step. The count is the first iteration
//! at which the comparison fails, found by bisection over the variable's
//! range (the comparison is monotone as long as the variable does not
//! wrap, which the range check rules out). Any other `scf.while` is
//! stepped through: its carried values are bound iteration by iteration
//! and its condition evaluated, up to [`STEPPED_ITERATIONS`].
//!
//! A body is first counted once with the loop's variables unknown; when
//! that leaves nothing unknown, its work is the same every iteration and
//! is scaled by the trip count. Otherwise (a triangular nest, a loop whose
//! bounds are the outer loop's variable) the body is counted once per
//! iteration with the variables bound, while the kernel's budget of such
//! walks ([`ITERATION_WALKS`]) lasts; when binding does not make anything
//! known, or the budget is spent, the body counts once per iteration as
//! it was and stays a lower bound.

use super::{Analysis, Unknown, add, integer_width_of, scale, subtract};
use crate::ir::{Op, Val};
use pgpu_pass_infra::integer::{self, sign_extend, zero_extend};
use pgpu_perf_model::Mix;

/// Body walks with bound loop variables one sampled thread of a kernel
/// may take, nested loops included.
pub(super) const ITERATION_WALKS: u64 = 1 << 16;
/// Iterations an `scf.while` without a closed form is stepped through.
const STEPPED_ITERATIONS: u64 = 1 << 18;
/// The most iterations a closed-form count accepts.
const MAX_TRIPS: i128 = 1 << 40;

impl Analysis<'_> {
    pub(super) fn for_mix(&mut self, op: Op, unknown: &mut Vec<Unknown>) -> Mix {
        let trips = match self.trips(op, op.operand(0), op.operand(1), op.operand(2)) {
            Ok(trips) => trips,
            Err(why) => return self.counted_once(op, "loop", why, unknown),
        };
        let mut unbound = Vec::new();
        let body = self.region_mix(op, 0, &mut unbound);
        // After the first iteration the carried loads read registers.
        let carried = scale(self.carried_loads(op), trips.saturating_sub(1));
        if !unbound.is_empty() {
            if let Some(mix) = self.for_by_iteration(op, trips, unbound.len(), unknown) {
                return subtract(mix, carried);
            }
            unknown.extend(unbound);
        }
        subtract(scale(body, trips), carried)
    }

    /// The loads of an `scf.for` body that LLVM serves from a register from
    /// the second iteration on: the body's only memory write is one store,
    /// to an element whose memref and indices the loop does not change, and
    /// a load of that element comes before it (the previous iteration's
    /// store reaches it with no other write between). A body with regions,
    /// calls or other ops with effects has none.
    fn carried_loads(&self, op: Op) -> Mix {
        let Some(body) = op.entry_block(0) else {
            return Mix::default();
        };
        let ops = body.ops();
        let mut stores = ops.iter().filter(|inner| inner.is("memref.store"));
        let (Some(store), None) = (stores.next(), stores.next()) else {
            return Mix::default();
        };
        let has_effects = ops.iter().any(|inner| {
            let name = inner.name();
            name != "memref.load"
                && name != "memref.store"
                && name != "scf.yield"
                && !writes_no_memory(&name)
        });
        let Some(element) = accessed_element(*store) else {
            return Mix::default();
        };
        let defined_inside = |value: &Val| value.is_defined_within(op);
        if has_effects || defined_inside(&element.0) || element.1.iter().any(defined_inside) {
            return Mix::default();
        }
        let mut mix = Mix::default();
        for inner in ops.iter().take_while(|inner| *inner != store) {
            if inner.is("memref.load") && accessed_element(*inner).as_ref() == Some(&element) {
                add(&mut mix, self.access(*inner));
            }
        }
        mix
    }

    /// A loop whose trip count is unknown (`why`): its regions once, and
    /// the report of it.
    fn counted_once(
        &mut self,
        op: Op,
        what: &str,
        why: Unknown,
        unknown: &mut Vec<Unknown>,
    ) -> Mix {
        let mix = self.regions(op, unknown);
        unknown.push(self.unknown(
            op,
            &format!("{what} with an unknown trip count, counted once ({why})"),
        ));
        mix
    }

    /// The body of `scf.for` counted per iteration; `None` when binding
    /// the variables leaves as much unknown as `unbound` (or the budget
    /// does not reach).
    fn for_by_iteration(
        &mut self,
        op: Op,
        trips: u64,
        unbound: usize,
        unknown: &mut Vec<Unknown>,
    ) -> Option<Mix> {
        if trips > self.walks_left {
            return None;
        }
        let arguments = op.entry_block(0)?.arguments();
        let yielded = op.entry_block(0)?.terminator()?.operands();
        let step = self.value(op.operand(2)).ok()?;
        let operands = op.operands();
        let mut state: Vec<Result<i64, Unknown>> = std::iter::once(operands[0])
            .chain(operands.iter().skip(3).copied())
            .map(|value| self.value(value))
            .collect();
        let mut total = Mix::default();
        let mut first = Vec::new();
        for iteration in 0..trips {
            self.walks_left -= 1;
            self.bind(&arguments, &state);
            let mut local = Vec::new();
            add(&mut total, self.region_mix(op, 0, &mut local));
            if iteration == 0 {
                if local.len() >= unbound {
                    self.unbind(&arguments);
                    return None;
                }
                first = local;
            }
            let mut next = vec![state[0].clone().map(|iv| iv.wrapping_add(step))];
            next.extend(yielded.iter().map(|&value| self.value(value)));
            self.unbind(&arguments);
            state = next;
        }
        unknown.extend(first);
        Some(total)
    }

    pub(super) fn while_mix(&mut self, op: Op, unknown: &mut Vec<Unknown>) -> Mix {
        let trips = match self.while_trips(op) {
            Ok(trips) => trips,
            Err(why) => return self.counted_once(op, "'scf.while' loop", why, unknown),
        };
        let mut unbound = Vec::new();
        let before = self.region_mix(op, 0, &mut unbound);
        let after = self.region_mix(op, 1, &mut unbound);
        if !unbound.is_empty() {
            if let Some(mix) = self.while_by_iteration(op, trips, unbound.len(), unknown) {
                return mix;
            }
            unknown.extend(unbound);
        }
        // The condition runs once more than the body.
        let mut mix = scale(before, trips.saturating_add(1));
        add(&mut mix, scale(after, trips));
        mix
    }

    /// The trip count of an `scf.while`: its closed form, else stepped.
    pub(super) fn while_trips(&mut self, op: Op) -> Result<u64, Unknown> {
        match self.while_trips_closed(op) {
            Some(Ok(trips)) => Ok(trips),
            Some(Err(reason)) => Err(self.unknown(op, reason)),
            None => self.while_trips_stepped(op),
        }
    }

    /// The closed form of a counted `scf.while`; `None` when the loop is
    /// not one (or its count needs stepping).
    fn while_trips_closed(&mut self, op: Op) -> Option<Result<u64, &'static str>> {
        let (before, after) = (op.entry_block(0)?, op.entry_block(1)?);
        let condition = before.terminator()?;
        let compare = condition.operand(0).defining_op()?;
        if !compare.is("arith.cmpi") {
            return None;
        }
        let carried = before.arguments();
        let predicate = compare.integer_attribute("predicate")?;
        let (lhs, rhs) = (compare.operand(0), compare.operand(1));
        let position = |value: Val| carried.iter().position(|&arg| arg == value);
        let (variable, bound, predicate) = match (position(lhs), position(rhs)) {
            (Some(variable), None) => (variable, rhs, predicate),
            (None, Some(variable)) => (variable, lhs, swapped(predicate)?),
            _ => return None,
        };
        // The variable as the body sees it, and what the body yields for it.
        let forwarded = condition
            .operands()
            .iter()
            .skip(1)
            .position(|&value| value == carried[variable])?;
        let in_body = *after.arguments().get(forwarded)?;
        let next = after
            .terminator()?
            .operands()
            .get(variable)?
            .defining_op()?;
        let step = match next.name().as_str() {
            "arith.addi" if next.operand(0) == in_body => self.value(next.operand(1)).ok()?,
            "arith.addi" if next.operand(1) == in_body => self.value(next.operand(0)).ok()?,
            "arith.subi" if next.operand(0) == in_body => {
                self.value(next.operand(1)).ok()?.checked_neg()?
            }
            _ => return None,
        };
        let bound = self.value(bound).ok()?;
        let initial = self.value(op.operand(variable)).ok()?;
        counted_trips(
            predicate,
            initial,
            step,
            bound,
            integer_width_of(carried[variable]),
        )
    }

    /// The trip count of an `scf.while` found by running its condition.
    fn while_trips_stepped(&mut self, op: Op) -> Result<u64, Unknown> {
        let blocks = op.entry_block(0).zip(op.entry_block(1));
        let terminators =
            blocks.and_then(|(before, after)| before.terminator().zip(after.terminator()));
        let (Some((before, after)), Some((condition, yielded))) = (blocks, terminators) else {
            return Err(self.unknown(op, "an 'scf.while' without its regions"));
        };
        let (carried, in_body) = (before.arguments(), after.arguments());
        let mut state: Vec<Result<i64, Unknown>> = op
            .operands()
            .into_iter()
            .map(|value| self.value(value))
            .collect();
        for trips in 0..STEPPED_ITERATIONS {
            self.bind(&carried, &state);
            let holds = self.value(condition.operand(0));
            let forwarded: Vec<_> = (1..condition.num_operands())
                .map(|index| self.value(condition.operand(index)))
                .collect();
            self.unbind(&carried);
            if holds? & 1 == 0 {
                return Ok(trips);
            }
            self.bind(&in_body, &forwarded);
            state = yielded
                .operands()
                .into_iter()
                .map(|value| self.value(value))
                .collect();
            self.unbind(&in_body);
        }
        Err(self.unknown(
            op,
            &format!("more than {STEPPED_ITERATIONS} iterations to step through"),
        ))
    }

    /// The regions of `scf.while` counted per iteration; `None` as for
    /// [`Self::for_by_iteration`].
    fn while_by_iteration(
        &mut self,
        op: Op,
        trips: u64,
        unbound: usize,
        unknown: &mut Vec<Unknown>,
    ) -> Option<Mix> {
        if trips >= self.walks_left {
            return None;
        }
        let (before, after) = (op.entry_block(0)?, op.entry_block(1)?);
        let (condition, yielded) = (before.terminator()?, after.terminator()?);
        let (carried, in_body) = (before.arguments(), after.arguments());
        let mut state: Vec<Result<i64, Unknown>> = op
            .operands()
            .into_iter()
            .map(|value| self.value(value))
            .collect();
        let mut total = Mix::default();
        let mut first = Vec::new();
        for iteration in 0..=trips {
            self.walks_left -= 1;
            let mut local = Vec::new();
            self.bind(&carried, &state);
            add(&mut total, self.region_mix(op, 0, &mut local));
            let forwarded: Vec<_> = (1..condition.num_operands())
                .map(|index| self.value(condition.operand(index)))
                .collect();
            self.unbind(&carried);
            if iteration < trips {
                self.bind(&in_body, &forwarded);
                add(&mut total, self.region_mix(op, 1, &mut local));
                state = yielded
                    .operands()
                    .into_iter()
                    .map(|value| self.value(value))
                    .collect();
                self.unbind(&in_body);
            }
            if iteration == 0 {
                if local.len() >= unbound {
                    return None;
                }
                first = local;
            }
        }
        unknown.extend(first);
        Some(total)
    }

    /// The mix of region `index` of `op`.
    pub(super) fn region_mix(&mut self, op: Op, index: usize, unknown: &mut Vec<Unknown>) -> Mix {
        let mut mix = Mix::default();
        let mut block = op.entry_block(index);
        while let Some(current) = block {
            let mut in_registers = Forwarding::default();
            for inner in current.ops() {
                if in_registers.forwards(inner) {
                    continue;
                }
                add(&mut mix, self.op_mix(inner, unknown));
            }
            block = current.next_in_region();
        }
        mix
    }

    pub(super) fn bind(&mut self, arguments: &[Val], values: &[Result<i64, Unknown>]) {
        for (&argument, value) in arguments.iter().zip(values) {
            self.bindings.insert(argument, value.clone());
        }
    }

    pub(super) fn unbind(&mut self, arguments: &[Val]) {
        for argument in arguments {
            self.bindings.remove(argument);
        }
    }
}

/// The elements a thread has just loaded or stored in a block, whose value
/// LLVM keeps in a register (GVN forwards a store to a later load of the
/// same address, and reuses a load): a `memref.load` of the same memref
/// and index values, with nothing between that may write memory, reaches
/// no memory. A store may write any element (a kernel's buffers may
/// alias, so LLVM cannot see past one either), and so may an op that is
/// not pure arithmetic, a view or a thread query: each forgets the rest.
#[derive(Default)]
struct Forwarding {
    elements: Vec<(Val, Vec<Val>)>,
}

impl Forwarding {
    /// Whether `op` is a load of an element in registers; notes what `op`
    /// makes available and what it may overwrite.
    fn forwards(&mut self, op: Op) -> bool {
        let name = op.name();
        match (name.as_str(), accessed_element(op)) {
            ("memref.load", Some(element)) => {
                if self.elements.contains(&element) {
                    return true;
                }
                self.elements.push(element);
            }
            ("memref.store", Some(element)) => {
                self.elements.clear();
                self.elements.push(element);
            }
            _ if writes_no_memory(&name) => {}
            _ => self.elements.clear(),
        }
        false
    }
}

/// The memref and index values a `memref.load` or `memref.store` reaches.
fn accessed_element(op: Op) -> Option<(Val, Vec<Val>)> {
    let operands = op.operands();
    let first = match op.name().as_str() {
        "memref.load" => 0,
        "memref.store" => 1,
        _ => return None,
    };
    Some((*operands.get(first)?, operands.get(first + 1..)?.to_vec()))
}

/// Ops that write no memory and have no regions: arithmetic, views and
/// queries of the thread's position.
fn writes_no_memory(name: &str) -> bool {
    ["arith.", "index.", "math."]
        .iter()
        .any(|dialect| name.starts_with(dialect))
        || matches!(
            name,
            "affine.apply"
                | "memref.dim"
                | "memref.cast"
                | "memref.subview"
                | "memref.reinterpret_cast"
                | "memref.extract_strided_metadata"
                | "memref.extract_aligned_pointer_as_index"
                | "memref.alloca"
                | "gpu.thread_id"
                | "gpu.block_id"
                | "gpu.block_dim"
                | "gpu.grid_dim"
                | "gpu.lane_id"
                | "pgpu.rank"
                | "pgpu.size"
                | "ub.poison"
        )
}

/// `predicate` with its operands swapped (`a < b` is `b > a`).
fn swapped(predicate: i64) -> Option<i64> {
    Some(match predicate {
        0 | 1 => predicate,
        2 => 4,
        3 => 5,
        4 => 2,
        5 => 3,
        6 => 8,
        7 => 9,
        8 => 6,
        9 => 7,
        _ => return None,
    })
}

/// Iterations of a loop whose `width`-bit variable starts at `initial`,
/// moves by `step` and continues while `predicate(variable, bound)`;
/// `None` for a predicate this does not know.
fn counted_trips(
    predicate: i64,
    initial: i64,
    step: i64,
    bound: i64,
    width: u32,
) -> Option<Result<u64, &'static str>> {
    let width = width.clamp(1, 64);
    let unsigned = predicate >= 6;
    let (low, high): (i128, i128) = if unsigned {
        (0, (1i128 << width) - 1)
    } else {
        (-(1i128 << (width - 1)), (1i128 << (width - 1)) - 1)
    };
    let extend = |value: i64| -> i128 {
        if unsigned {
            zero_extend(value, width) as i128
        } else {
            sign_extend(value, width) as i128
        }
    };
    let (initial, step) = (extend(initial), sign_extend(step, width) as i128);
    let holds = |value: i128| integer::compare(predicate, value as i64, bound, width);
    if !holds(initial)? {
        return Some(Ok(0));
    }
    if step == 0 {
        return Some(Err("the loop's variable does not change, so it never ends"));
    }
    // The last iteration whose variable is still in range (no wrap).
    let last = if step > 0 {
        (high - initial) / step
    } else {
        (initial - low) / -step
    };
    let at = |iteration: i128| initial + iteration * step;
    match predicate {
        0 => return Some(Ok(1)),
        1 => {
            let distance = extend(bound) - initial;
            return Some(
                if distance % step == 0 && distance / step <= last.min(MAX_TRIPS) {
                    Ok((distance / step) as u64)
                } else {
                    Err("the loop's variable steps over its bound")
                },
            );
        }
        _ => {}
    }
    let last = last.min(MAX_TRIPS);
    if holds(at(last))? {
        return Some(Err(if last == MAX_TRIPS {
            "more than 2^40 iterations"
        } else {
            "the loop's variable wraps around before the loop ends"
        }));
    }
    // holds(at(passing)) and !holds(at(failing)); the comparison is
    // monotone along the variable.
    let (mut passing, mut failing) = (0i128, last);
    while failing - passing > 1 {
        let middle = passing + (failing - passing) / 2;
        if holds(at(middle))? {
            passing = middle;
        } else {
            failing = middle;
        }
    }
    Some(Ok(failing as u64))
}

#[cfg(test)]
mod tests {
    use super::counted_trips;

    #[test]
    fn counted_loops() {
        // for (i = 0; i < 10; i++), i <= 10, i += 3, i32.
        assert_eq!(counted_trips(2, 0, 1, 10, 32), Some(Ok(10)));
        assert_eq!(counted_trips(3, 0, 1, 10, 32), Some(Ok(11)));
        assert_eq!(counted_trips(2, 0, 3, 10, 32), Some(Ok(4)));
        // for (i = 10; i > 0; i--) and i >= 0.
        assert_eq!(counted_trips(4, 10, -1, 0, 32), Some(Ok(10)));
        assert_eq!(counted_trips(5, 10, -1, 0, 32), Some(Ok(11)));
        // Never entered; i != 9 by 3; unsigned.
        assert_eq!(counted_trips(2, 5, 1, 5, 32), Some(Ok(0)));
        assert_eq!(counted_trips(1, 0, 3, 9, 32), Some(Ok(3)));
        assert_eq!(counted_trips(6, 0, 4, 100, 8), Some(Ok(25)));
    }

    #[test]
    fn loops_without_end() {
        // i < 10 moving down wraps at the width; a fixed variable; i != 10 by 3.
        assert!(matches!(counted_trips(2, 0, -1, 10, 32), Some(Err(_))));
        assert!(matches!(counted_trips(2, 0, 0, 10, 32), Some(Err(_))));
        assert!(matches!(counted_trips(1, 0, 3, 10, 32), Some(Err(_))));
        // i8 i <= 127 never fails before the wrap.
        assert!(matches!(counted_trips(3, 0, 1, 127, 8), Some(Err(_))));
    }
}
