//! Lowered values and the SSA environment.
//!
//! A C value lowers to an [`Rv`]: one MLIR value for a scalar, a pointer or
//! an array, a tree of them for a struct (flattened: structure of arrays
//! for pointers to structs), nothing for `void`. The environment maps each
//! visible variable, and the control flags of the function being lowered,
//! to its current [`Rv`].

use super::builder::V;
use crate::hir::VarId;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A lowered value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rv<'c> {
    /// `void`, or `NULL` before its conversion.
    Void,
    /// One MLIR value.
    Scalar(V<'c>),
    /// A struct: one entry per field.
    Struct(Vec<Rv<'c>>),
}

impl<'c> Rv<'c> {
    /// The leaves in order.
    pub fn flatten(&self) -> Vec<V<'c>> {
        let mut out = Vec::new();
        self.flatten_into(&mut out);
        out
    }

    fn flatten_into(&self, out: &mut Vec<V<'c>>) {
        match self {
            Rv::Void => {}
            Rv::Scalar(v) => out.push(*v),
            Rv::Struct(fields) => fields.iter().for_each(|f| f.flatten_into(out)),
        }
    }

    /// The same shape as `self`, with leaves taken from `values` in order.
    pub fn rebuild(&self, values: &mut impl Iterator<Item = V<'c>>) -> Option<Rv<'c>> {
        Some(match self {
            Rv::Void => Rv::Void,
            Rv::Scalar(_) => Rv::Scalar(values.next()?),
            Rv::Struct(fields) => Rv::Struct(
                fields
                    .iter()
                    .map(|f| f.rebuild(values))
                    .collect::<Option<Vec<_>>>()?,
            ),
        })
    }

    /// The single value of a scalar.
    pub fn scalar(&self) -> Option<V<'c>> {
        match self {
            Rv::Scalar(v) => Some(*v),
            _ => None,
        }
    }

    /// Field `index` of a struct.
    pub fn field(&self, index: u32) -> Option<&Rv<'c>> {
        match self {
            Rv::Struct(fields) => fields.get(index as usize),
            _ => None,
        }
    }

    /// The value at `path` (field indices), mutable.
    pub fn at_path_mut(&mut self, path: &[u32]) -> Option<&mut Rv<'c>> {
        let mut current = self;
        for &index in path {
            current = match current {
                Rv::Struct(fields) => fields.get_mut(index as usize)?,
                _ => return None,
            };
        }
        Some(current)
    }
}

/// What the environment tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A local or parameter.
    Var(VarId),
    /// An early `return` happened (`i1`).
    Returned,
    /// The value an early `return` returns.
    ReturnValue,
    /// The innermost loop was left with `break` (`i1`).
    Broke,
    /// The innermost loop's iteration was cut short with `continue` (`i1`).
    Continued,
    /// BSGP's `thread.oldrank` as the last rank change left it (`index`):
    /// read in later supersteps too, where the rank-changing op's own
    /// old rank no longer exists.
    OldRank,
}

/// The length of a BSGP list (docs/frontend-ir.md, "A list is a pointer
/// variable that dnew/dtempnew allocated").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListLen<'c> {
    /// Just allocated.
    Zero,
    /// The result of the last `compact`/`split` (an `index`).
    Known(V<'c>),
}

/// The SSA environment of a function.
#[derive(Clone, Debug, Default)]
pub struct Env<'c> {
    /// Current values, ordered so that threaded values come in a fixed order.
    pub values: BTreeMap<Key, Rv<'c>>,
    /// Lengths of the lists the function allocated.
    pub lists: HashMap<VarId, ListLen<'c>>,
    /// Lists that a `compact`/`split` with a literal `true` flag cleared in
    /// the spawn being lowered: an empty thread set leaves them empty.
    pub cleared_lists: HashSet<VarId>,
    /// The variables' values at the last superstep boundary (a barrier, a
    /// collective, a call of an `inline` function with barriers): what
    /// BSGP's `thread.get(r, v)` reads ("v's value in the previous
    /// superstep"), also where `v` changed since (a loop around the get).
    pub at_last_sync: BTreeMap<Key, Rv<'c>>,
}

impl<'c> Env<'c> {
    /// The current value of `key`.
    pub fn get(&self, key: Key) -> Option<&Rv<'c>> {
        self.values.get(&key)
    }

    /// Binds `key` to `value`.
    pub fn set(&mut self, key: Key, value: Rv<'c>) {
        self.values.insert(key, value);
    }

    /// Records the current values as those of the last superstep
    /// boundary.
    pub fn mark_sync(&mut self) {
        self.at_last_sync = self.values.clone();
    }

    /// Unbinds `key`, returning its value.
    pub fn remove(&mut self, key: Key) -> Option<Rv<'c>> {
        self.values.remove(&key)
    }

    /// Whether `key` is bound.
    pub fn has(&self, key: Key) -> bool {
        self.values.contains_key(&key)
    }

    /// The keys bound in `before` whose values differ in `self`.
    pub fn changed_since(&self, before: &Env<'c>) -> Vec<Key> {
        before
            .values
            .iter()
            .filter(|(key, value)| self.values.get(key).is_some_and(|now| now != *value))
            .map(|(key, _)| *key)
            .collect()
    }

    /// Keeps only the list lengths that agree with `other`.
    pub fn merge_lists(&mut self, other: &Env<'c>) {
        self.lists
            .retain(|var, len| other.lists.get(var).is_some_and(|o| o == len));
    }
}
