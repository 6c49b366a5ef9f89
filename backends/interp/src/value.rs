//! Run-time values and the compact types the interpreter decodes from MLIR
//! types.
//!
//! Integers of every width (`i1` .. `i64`, `index`) are held as an `i64` in
//! *canonical form*: sign-extended from their width. Operations that need
//! the unsigned view zero-extend with [`zext`]. Floats keep their own
//! precision (`f32` arithmetic rounds to `f32` after every operation).
//! A memref is a descriptor (allocation id, offset, sizes, strides) shared
//! by reference counting. `Unset` marks an SSA slot that was never defined
//! and `Uninit` a memory element that was never written.

use std::rc::Rc;

/// A memref descriptor: a strided view into one allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct MemDesc {
    pub alloc: u32,
    pub offset: i64,
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
}

/// A run-time value.
#[derive(Debug, Clone, Default)]
pub enum Val {
    /// An SSA slot that has not been defined (yet).
    #[default]
    Unset,
    /// A memory element that was never written.
    Uninit,
    Int(i64),
    F32(f32),
    F64(f64),
    Mem(Rc<MemDesc>),
    Poison,
}

impl Val {
    pub fn is_set(&self) -> bool {
        !matches!(self, Val::Unset)
    }

    /// Identity of values (floats by bits, memrefs by descriptor).
    pub fn same(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::Int(a), Val::Int(b)) => a == b,
            (Val::F32(a), Val::F32(b)) => a.to_bits() == b.to_bits(),
            (Val::F64(a), Val::F64(b)) => a.to_bits() == b.to_bits(),
            (Val::Mem(a), Val::Mem(b)) => Rc::ptr_eq(a, b) || a == b,
            (Val::Unset, Val::Unset) | (Val::Uninit, Val::Uninit) | (Val::Poison, Val::Poison) => {
                true
            }
            _ => false,
        }
    }
}

/// The static type of an operand or result, as far as execution needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ty {
    /// A signless integer of the given width (1..=64).
    I(u32),
    Index,
    F32,
    F64,
    /// A ranked memref; the index is into `Program::memtys`.
    Mem(u32),
    /// Anything else (wider integers, vectors, tensors, ...).
    #[default]
    Other,
}

impl Ty {
    /// The bit width of an integer or index type.
    pub fn int_width(self) -> Option<u32> {
        match self {
            Ty::I(w) => Some(w),
            Ty::Index => Some(64),
            _ => None,
        }
    }
}

/// A ranked memref type: shape (`None` = dynamic), layout and element type.
#[derive(Debug, Clone, PartialEq)]
pub struct MemTy {
    pub shape: Vec<Option<i64>>,
    /// Static strides (`None` = dynamic); `None` overall for a non-strided layout.
    pub strides: Option<Vec<Option<i64>>>,
    pub offset: Option<i64>,
    pub elem: Ty,
}

impl MemTy {
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

pub use pgpu_pass_infra::integer::{sign_extend as sext, zero_extend as zext};

/// Row-major strides of a contiguous array of `sizes`.
pub fn contiguous_strides(sizes: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; sizes.len()];
    for index in (0..sizes.len().saturating_sub(1)).rev() {
        strides[index] = strides[index + 1] * sizes[index + 1].max(1);
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension() {
        assert_eq!(sext(0xff, 8), -1);
        assert_eq!(sext(1, 1), -1);
        assert_eq!(zext(-1, 1), 1);
        assert_eq!(zext(-1, 32), 0xffff_ffff);
        assert_eq!(sext(0x7fff_ffff, 32), 0x7fff_ffff);
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
    }
}
