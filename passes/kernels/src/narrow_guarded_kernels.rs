//! `pgpu-narrow-guarded-kernels`: a kernel whose every effect is guarded
//! by `rank == c` runs one iteration instead of one per thread.
//!
//! BSGP code often lets one thread publish a collective's result
//! (`if (thread.rank == 0) total[0] = t;`). When that is all a superstep
//! does, kernel formation still gives it a kernel over every thread, each
//! of which compares its rank and does nothing (268M threads for a 256M
//! reduction, more time than the reduction). For a one-dimensional kernel
//! `scf.parallel (%i) = (%lb) to (%ub) step (1)` whose body is pure ops
//! (arithmetic, loads; no output) plus one `scf.if` without results or else branch
//! whose condition is `%i == %c` (or `index_cast %i == %c` when the cast
//! cannot wrap: `%ub` comes from a narrower integer), with `%c` a constant
//! or defined outside the kernel, the bounds become `(max(%lb, c))` to
//! `(min(%ub, max(%lb, c) + 1))`: the one iteration where the condition
//! can hold, or none. The condition stays, so an out-of-range `c` still
//! does nothing. Upstream's `scf.parallel` canonicalizations fold
//! constant trip counts only; they cannot see that the guard makes all
//! other iterations empty.

use crate::{
    build::{Builder, Built},
    ir::{Op, Val, integer_width},
    memory_effects::Effects,
    outline_cpu_kernels::is_host_code,
};
use melior::ir::{OperationRef, Type, TypeLike, operation::OperationLike};
use pgpu_pass_infra::{Pass, PassFailure};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct NarrowGuardedKernels;

impl Pass for NarrowGuardedKernels {
    const ARGUMENT: &'static str = "pgpu-narrow-guarded-kernels";
    const SUMMARY: &'static str =
        "Run kernels whose every effect is guarded by rank == c as one iteration";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![DialectHandle::arith(), DialectHandle::scf()]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        for kernel in Op::of(module).nested() {
            if kernel.is("scf.parallel")
                && is_host_code(kernel)
                && let Some(chosen) = guarded_rank(kernel)
            {
                narrow(kernel, chosen)?;
            }
        }
        Ok(())
    }
}

/// The rank `c` (as an index value or an integer to cast) when every
/// effect of `kernel` is under `if (rank == c)`.
fn guarded_rank(kernel: Op) -> Option<Val> {
    if kernel.num_operands() != 3
        || kernel.num_results() != 0
        || kernel.operand(2).constant_integer() != Some(1)
    {
        return None;
    }
    let body = kernel.entry_block(0)?;
    let rank = *body.arguments().first()?;
    let mut guard = None;
    for op in body.ops() {
        if op.is("scf.if") && guard.is_none() && op.num_results() == 0 {
            let else_empty = op
                .entry_block(1)
                .is_none_or(|block| block.ops().iter().all(|op| op.is("scf.yield")));
            if else_empty && let Some(chosen) = compared_rank(op.operand(0), rank, kernel) {
                guard = Some(chosen);
                continue;
            }
        }
        let effects = Effects::of(op);
        // Output is an effect too, though not on memory.
        let prints = std::iter::once(op)
            .chain(op.nested())
            .any(|op| op.is("pgpu.printf"));
        if effects.unknown || !effects.writes.is_empty() || prints {
            return None;
        }
    }
    guard
}

/// `c` when `condition` is `rank == c` (either order), directly or on a
/// cast of the rank that cannot wrap.
fn compared_rank(condition: Val, rank: Val, kernel: Op) -> Option<Val> {
    let compare = condition.defining_op().filter(|op| op.is("arith.cmpi"))?;
    if compare.melior().attribute("predicate").ok()?.to_string() != "0 : i64" {
        return None;
    }
    let outside =
        |value: Val| !value.is_defined_within(kernel) || value.constant_integer().is_some();
    let (a, b) = (compare.operand(0), compare.operand(1));
    let (chosen, mine) = if outside(b) && !outside(a) {
        (b, a)
    } else {
        (a, b)
    };
    let (chosen, mine) = if outside(chosen) {
        (chosen, mine)
    } else {
        (mine, chosen)
    };
    if !outside(chosen) || outside(mine) {
        return None;
    }
    if mine == rank {
        return Some(chosen);
    }
    let cast = mine.defining_op().filter(|op| op.is("arith.index_cast"))?;
    (cast.operand(0) == rank && bound_fits(kernel.operand(1), mine.melior_type())).then_some(chosen)
}

/// Whether every rank below `upper` fits the integer type `ty` (so that
/// the cast of the rank does not wrap): `upper` is a cast from a type no
/// wider than `ty` (a signed value, so below 2^(bits-1)).
fn bound_fits(upper: Val, ty: Type) -> bool {
    let Some(target) = integer_width(ty) else {
        return false;
    };
    upper
        .defining_op()
        .filter(|op| op.is("arith.index_cast"))
        .and_then(|cast| integer_width(cast.operand(0).melior_type()))
        .is_some_and(|source| source <= target)
}

fn narrow(kernel: Op, chosen: Val) -> Built<()> {
    let at = Builder::before(kernel).at_location_of(kernel);
    let index = at.index_type();
    let chosen = if let Some(value) = chosen.constant_integer() {
        at.index(value)?
    } else if chosen.melior_type().is_index() {
        chosen
    } else {
        at.value("arith.index_cast", &[chosen], index, &[])?
    };
    let (lower, upper) = (kernel.operand(0), kernel.operand(1));
    let first = at.value("arith.maxsi", &[lower, chosen], index, &[])?;
    let one = at.index(1)?;
    let next = at.value("arith.addi", &[first, one], index, &[])?;
    let last = at.value("arith.minsi", &[upper, next], index, &[])?;
    kernel.set_operand(0, first);
    kernel.set_operand(1, last);
    Ok(())
}
