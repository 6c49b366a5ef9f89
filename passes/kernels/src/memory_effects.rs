//! What host code and kernels may do to lists, for the passes that move
//! or drop memory operations (`pgpu-forward-list-copies`,
//! `pgpu-narrow-guarded-kernels`).
//!
//! [`Effects::of`] collects the lists an op and everything nested in it may
//! read and write: loads, stores, atomics, `memref.copy`, deallocations (a
//! write: the list is gone), and the `pgpu.list` collectives by their
//! operands' ODS effects. Calls and ops not known here make the effects
//! unknown (anything). Region ops (`scf` control flow, `pgpu.taskgroup`
//! and `pgpu.task`, whose body runs exactly once in place) have the
//! effects of what is nested in them. [`may_alias`] traces views to their
//! base: distinct `memref.alloc`/`alloca` results and distinct globals do
//! not alias; any other two lists may.

use crate::ir::{Op, Val};

/// The operand positions a collective reads and writes (lists only;
/// optional operands past the op's last are ignored).
pub(crate) fn list_effects(op: Op) -> Option<(&'static [usize], &'static [usize])> {
    Some(match op.name().as_str() {
        "pgpu.list.reduce" => (&[0], &[]),
        "pgpu.list.scan" => (&[0], &[1]),
        // The sorted keys (operand 3) are optional.
        "pgpu.list.sort_idx" => (&[0], &[1, 3]),
        "pgpu.list.compact" | "pgpu.list.split" => (&[0, 1], &[2]),
        "pgpu.list.expand" => (&[0], &[1, 2]),
        _ => return None,
    })
}

/// The base of a view: the value views of `list` were made from.
pub(crate) fn base_of(list: Val) -> Val {
    let mut current = list;
    while let Some(op) = current.defining_op() {
        match op.name().as_str() {
            "memref.cast"
            | "memref.subview"
            | "memref.reinterpret_cast"
            | "memref.view"
            | "memref.expand_shape"
            | "memref.collapse_shape" => current = op.operand(0),
            _ => break,
        }
    }
    current
}

fn is_fresh(base: Val) -> bool {
    base.defining_op()
        .is_some_and(|op| op.is("memref.alloc") || op.is("memref.alloca"))
}

fn global_name(base: Val) -> Option<String> {
    let op = base.defining_op().filter(|op| op.is("memref.get_global"))?;
    crate::inline_spmd::symbol_attribute(op, "name")
}

/// Whether two lists may share memory.
pub(crate) fn may_alias(a: Val, b: Val) -> bool {
    let (a, b) = (base_of(a), base_of(b));
    if a == b {
        return true;
    }
    if is_fresh(a) || is_fresh(b) {
        return false;
    }
    match (global_name(a), global_name(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// What an op (with everything nested in it) may do to lists.
#[derive(Default)]
pub(crate) struct Effects {
    pub reads: Vec<Val>,
    pub writes: Vec<Val>,
    /// A call or an op whose effects are unknown: anything.
    pub unknown: bool,
}

impl Effects {
    pub fn of(op: Op) -> Effects {
        let mut effects = Effects::default();
        effects.add(op);
        for nested in op.nested() {
            effects.add(nested);
        }
        effects
    }

    pub fn add(&mut self, op: Op) {
        let name = op.name();
        match name.as_str() {
            "memref.load" => self.reads.push(op.operand(0)),
            "memref.store" => self.writes.push(op.operand(1)),
            "memref.atomic_rmw" | "memref.generic_atomic_rmw" => {
                let list = if name == "memref.atomic_rmw" { 1 } else { 0 };
                self.reads.push(op.operand(list));
                self.writes.push(op.operand(list));
            }
            "memref.copy" => {
                self.reads.push(op.operand(0));
                self.writes.push(op.operand(1));
            }
            "memref.dealloc" => self.writes.push(op.operand(0)),
            _ if name.starts_with("pgpu.list.") => match list_effects(op) {
                Some((reads, writes)) => {
                    let present = |&&i: &&usize| i < op.num_operands();
                    self.reads
                        .extend(reads.iter().filter(present).map(|&i| op.operand(i)));
                    self.writes
                        .extend(writes.iter().filter(present).map(|&i| op.operand(i)));
                }
                None => self.unknown = true,
            },
            _ if is_effect_free(&name) => {}
            _ => self.unknown = true,
        }
    }

    pub fn may_write(&self, list: Val) -> bool {
        self.unknown || self.writes.iter().any(|&written| may_alias(written, list))
    }

    pub fn may_touch(&self, list: Val) -> bool {
        self.may_write(list) || self.reads.iter().any(|&read| may_alias(read, list))
    }
}

/// Ops that read or write no list memory (control flow is judged by what
/// is nested in it).
pub(crate) fn is_effect_free(name: &str) -> bool {
    let dialect = name.split('.').next().unwrap_or("");
    matches!(dialect, "arith" | "math" | "index" | "ub")
        || matches!(
            name,
            "scf.if"
                | "scf.for"
                | "scf.while"
                | "scf.parallel"
                | "scf.yield"
                | "scf.condition"
                | "scf.reduce"
                | "scf.reduce.return"
                | "pgpu.taskgroup"
                | "pgpu.task"
                | "pgpu.yield"
                | "memref.alloc"
                | "memref.alloca"
                | "memref.get_global"
                | "memref.dim"
                | "memref.cast"
                | "memref.subview"
                | "memref.reinterpret_cast"
                | "memref.view"
                | "memref.extract_aligned_pointer_as_index"
                | "memref.extract_strided_metadata"
                | "pgpu.wtime"
                | "pgpu.argi"
                | "pgpu.printf"
        )
}
