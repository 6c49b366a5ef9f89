//! Host-level list operations (`pgpu.list.*`): the global phases of BSGP's
//! collectives (`reduce`, `scan`, `sort_idx`, `compact`, `split`) and of
//! `thread.fork` (`expand`) on rank-1 lists of `count` elements.
//!
//! They are host code. Every element goes through the checked memory as a
//! `memref.load`/`memref.store` of the op would: bounds (view and
//! allocation), use after free, reads of uninitialised elements and, inside
//! `pgpu.require`, the race detector's check against the accesses of the
//! superstep's threads. An op reads all of its inputs before it writes an
//! output; an output element that the op also reads as an input, or writes
//! twice, is an error (the lists overlap), except that a scan may write
//! `scanned[i]` over `values[i]` (the scan in place). Poison flags, keys
//! and counts are errors; poison values propagate through reduce and scan
//! and are moved by compact and split like any value, as the collectives
//! do.

use crate::exec::{Activation, Interp, R};
use crate::ir::{ListOp, Op};
use crate::scalar::{combine, identity};
use crate::value::{MemDesc, Val};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// What one list op accessed, for the overlap checks of its writes.
struct Accesses {
    /// The allocations the op writes.
    outputs: Vec<u32>,
    /// Input elements of those allocations, with the list index each was
    /// read at.
    read: HashMap<(u32, usize), i64>,
    written: HashSet<(u32, usize)>,
}

impl Accesses {
    fn new(outputs: &[&MemDesc]) -> Self {
        Self {
            outputs: outputs.iter().map(|d| d.alloc).collect(),
            read: HashMap::new(),
            written: HashSet::new(),
        }
    }
}

/// The key order of `pgpu.list.sort_idx`, `pgpu.sort_idx` and
/// `pgpu.thread.sortby` (a total order, so sorting never misbehaves): integers compare as signed (canonical values are
/// sign-extended), floats numerically with -0.0 equal to +0.0, and NaNs
/// with a clear sign bit after every number, with a set one before.
pub(crate) fn compare_keys(a: &Val, b: &Val) -> Ordering {
    /// -1 for a negative NaN, 1 for a positive one, 0 for a number.
    fn nan_class(nan: bool, negative: bool) -> i8 {
        match (nan, negative) {
            (false, _) => 0,
            (true, true) => -1,
            (true, false) => 1,
        }
    }
    fn floats<T: PartialOrd>(a: T, b: T, class_a: i8, class_b: i8) -> Ordering {
        match (class_a, class_b) {
            (0, 0) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            _ => class_a.cmp(&class_b),
        }
    }
    match (a, b) {
        (Val::Int(a), Val::Int(b)) => a.cmp(b),
        (Val::F32(a), Val::F32(b)) => floats(
            *a,
            *b,
            nan_class(a.is_nan(), a.is_sign_negative()),
            nan_class(b.is_nan(), b.is_sign_negative()),
        ),
        (Val::F64(a), Val::F64(b)) => floats(
            *a,
            *b,
            nan_class(a.is_nan(), a.is_sign_negative()),
            nan_class(b.is_nan(), b.is_sign_negative()),
        ),
        _ => Ordering::Equal,
    }
}

impl Interp<'_> {
    /// Executes a `pgpu.list.*` op of the host code whose frame is `act`.
    pub(crate) fn exec_list(&mut self, op: &Op, kind: ListOp, act: &mut Activation) -> R<()> {
        let result = match kind {
            ListOp::Reduce(comb) => {
                let values = self.mem_desc(op, act, 0)?;
                let count = self.list_count(op, act, 1)?;
                let mut accesses = Accesses::new(&[]);
                let width = op.out_ty.int_width().unwrap_or(64);
                let mut acc = identity(comb, op.out_ty);
                for index in 0..count {
                    let value = self.list_read(op, &values, index, &mut accesses)?;
                    acc = combine(comb, &acc, &value, width).ok_or_else(|| {
                        self.fail(op, format!("'{}' of mismatched values", op.name))
                    })?;
                }
                acc
            }
            ListOp::Scan { kind, inclusive } => {
                let values = self.mem_desc(op, act, 0)?;
                let scanned = self.mem_desc(op, act, 1)?;
                let count = self.list_count(op, act, 2)?;
                let mut accesses = Accesses::new(&[&scanned]);
                let inputs = (0..count)
                    .map(|index| self.list_read(op, &values, index, &mut accesses))
                    .collect::<R<Vec<_>>>()?;
                let width = op.out_ty.int_width().unwrap_or(64);
                let mut acc = identity(kind, op.out_ty);
                for (index, value) in (0..count).zip(inputs) {
                    let next = combine(kind, &acc, &value, width).ok_or_else(|| {
                        self.fail(op, format!("'{}' of mismatched values", op.name))
                    })?;
                    let prefix = if inclusive { next.clone() } else { acc };
                    acc = next;
                    self.list_write(op, &scanned, index, prefix, &mut accesses, true)?;
                }
                acc
            }
            ListOp::SortIdx => {
                let keys = self.mem_desc(op, act, 0)?;
                let indices = self.mem_desc(op, act, 1)?;
                let count = self.list_count(op, act, 2)?;
                let sorted = if op.operands.len() > 3 {
                    Some(self.mem_desc(op, act, 3)?)
                } else {
                    None
                };
                let outputs: Vec<&MemDesc> = std::iter::once(&*indices)
                    .chain(sorted.as_deref())
                    .collect();
                let mut accesses = Accesses::new(&outputs);
                let mut list = Vec::new();
                for index in 0..count {
                    let key = self.list_read(op, &keys, index, &mut accesses)?;
                    if matches!(key, Val::Poison) {
                        return Err(self.fail(
                            op,
                            format!("'{}' of a poison key (element {index})", op.name),
                        ));
                    }
                    list.push(key);
                }
                let mut order: Vec<usize> = (0..list.len()).collect();
                order.sort_by(|&a, &b| compare_keys(&list[a], &list[b]));
                for (index, position) in (0..count).zip(order) {
                    if let Some(sorted) = &sorted {
                        let key = list[position].clone();
                        self.list_write(op, sorted, index, key, &mut accesses, false)?;
                    }
                    let position = Val::Int(position as i64);
                    self.list_write(op, &indices, index, position, &mut accesses, false)?;
                }
                return Ok(());
            }
            ListOp::Compact | ListOp::Split => {
                let values = self.mem_desc(op, act, 0)?;
                let flags = self.mem_desc(op, act, 1)?;
                let list = self.mem_desc(op, act, 2)?;
                let count = self.list_count(op, act, 3)?;
                let base = self.int_strict(op, act, 4)?;
                let mut accesses = Accesses::new(&[&list]);
                let mut set = Vec::new();
                for index in 0..count {
                    let flag = self.list_read(op, &flags, index, &mut accesses)?;
                    set.push(self.list_flag(op, &flag, index)?);
                }
                let set = &set;
                let chosen = |wanted: bool| (0..count).filter(move |&i| set[i as usize] == wanted);
                let order: Vec<i64> = if kind == ListOp::Compact {
                    chosen(true).collect()
                } else {
                    chosen(false).chain(chosen(true)).collect()
                };
                let moved = order
                    .into_iter()
                    .map(|index| self.list_read(op, &values, index, &mut accesses))
                    .collect::<R<Vec<_>>>()?;
                let mut position = base;
                for value in moved {
                    self.list_write(op, &list, position, value, &mut accesses, false)?;
                    position += 1;
                }
                Val::Int(position)
            }
            ListOp::Expand => {
                let counts = self.mem_desc(op, act, 0)?;
                let parents = self.mem_desc(op, act, 1)?;
                let children = self.mem_desc(op, act, 2)?;
                let count = self.list_count(op, act, 3)?;
                let mut accesses = Accesses::new(&[&parents, &children]);
                let mut forks = Vec::new();
                for index in 0..count {
                    match self.list_read(op, &counts, index, &mut accesses)? {
                        Val::Int(n) => forks.push(n.max(0)),
                        Val::Poison => {
                            return Err(self.fail(
                                op,
                                format!("'{}' of a poison count (element {index})", op.name),
                            ));
                        }
                        other => {
                            return Err(self.fail(
                                op,
                                format!("'{}' expects integer counts, got {other:?}", op.name),
                            ));
                        }
                    }
                }
                let mut total = 0i64;
                for (parent, n) in (0..count).zip(forks) {
                    for child in 0..n {
                        let parent = Val::Int(parent);
                        self.list_write(op, &parents, total, parent, &mut accesses, false)?;
                        let child = Val::Int(child);
                        self.list_write(op, &children, total, child, &mut accesses, false)?;
                        total += 1;
                    }
                }
                Val::Int(total)
            }
        };
        act.slots[op.results[0] as usize] = result;
        Ok(())
    }

    /// The `count` operand at `index`: not poison, not negative.
    fn list_count(&self, op: &Op, act: &Activation, index: usize) -> R<i64> {
        let count = self.int_strict(op, act, index)?;
        if count < 0 {
            return Err(self.fail(op, format!("'{}' with a negative count ({count})", op.name)));
        }
        Ok(count)
    }

    /// A flag element as a bool; poison is an error.
    fn list_flag(&self, op: &Op, flag: &Val, index: i64) -> R<bool> {
        match flag {
            Val::Int(value) => Ok(*value != 0),
            Val::Poison => Err(self.fail(
                op,
                format!("'{}' of a poison flag (element {index})", op.name),
            )),
            other => Err(self.fail(op, format!("'{}' expects i1 flags, got {other:?}", op.name))),
        }
    }

    /// Reads `list[index]` through the checked memory.
    fn list_read(
        &mut self,
        op: &Op,
        list: &MemDesc,
        index: i64,
        accesses: &mut Accesses,
    ) -> R<Val> {
        let value = self
            .mem
            .load(list, &[index], op.loc)
            .map_err(|e| self.access_error(op, e))?;
        if accesses.outputs.contains(&list.alloc) {
            let element = self
                .mem
                .element(list, &[index])
                .map_err(|m| self.fail(op, m))?;
            accesses.read.entry((list.alloc, element)).or_insert(index);
        }
        Ok(value)
    }

    /// Writes `list[index]` through the checked memory, after checking that
    /// the element is no input of the op (but `in_place`: the input at the
    /// same list index) and was not written by it yet.
    fn list_write(
        &mut self,
        op: &Op,
        list: &MemDesc,
        index: i64,
        value: Val,
        accesses: &mut Accesses,
        in_place: bool,
    ) -> R<()> {
        let element = self
            .mem
            .element(list, &[index])
            .map_err(|m| self.fail(op, m))?;
        if let Some(&read_at) = accesses.read.get(&(list.alloc, element))
            && !(in_place && read_at == index)
        {
            return Err(self.fail(
                op,
                format!(
                    "'{}' writes element {element} of an allocation that it also reads (at input index {read_at}): its output list overlaps an input",
                    op.name
                ),
            ));
        }
        if !accesses.written.insert((list.alloc, element)) {
            return Err(self.fail(
                op,
                format!(
                    "'{}' writes element {element} of an allocation twice: its output lists overlap",
                    op.name
                ),
            ));
        }
        self.mem
            .store(list, &[index], value, op.loc)
            .map_err(|e| self.access_error(op, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_total_and_stable() {
        let keys = [
            Val::F64(1.0),
            Val::F64(f64::NAN),
            Val::F64(-0.0),
            Val::F64(f64::NEG_INFINITY),
            Val::F64(-f64::NAN),
            Val::F64(0.0),
            Val::F64(f64::NAN),
        ];
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&a, &b| compare_keys(&keys[a], &keys[b]));
        assert_eq!(order, vec![4, 3, 2, 5, 0, 1, 6]);
        assert_eq!(compare_keys(&Val::Int(-1), &Val::Int(0)), Ordering::Less);
        assert_eq!(
            compare_keys(&Val::F32(-f32::NAN), &Val::F32(f32::NEG_INFINITY)),
            Ordering::Less
        );
    }
}
