//! C types to MLIR types (docs/frontend-ir.md, "Types").
//!
//! Structs are flattened: a [`Shape`] mirrors a type's struct structure,
//! and its leaves are the C types that map to one MLIR type each. Pointers
//! to and arrays of structs become one pointer or array per field
//! (structure of arrays).

use super::{LowerCx, LowerResult, env::Rv};
use crate::{hir::Type, span::Span};
use melior::ir::Type as MType;

/// The struct structure of a C type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `void`: no value.
    Void,
    /// One MLIR value of this C type.
    Leaf(Type),
    /// A struct (or a pointer to/array of one): one shape per field.
    Struct(Vec<Shape>),
}

impl Shape {
    /// The leaf C types in order.
    pub fn leaves(&self) -> Vec<Type> {
        let mut out = Vec::new();
        self.leaves_into(&mut out);
        out
    }

    fn leaves_into(&self, out: &mut Vec<Type>) {
        match self {
            Shape::Void => {}
            Shape::Leaf(ty) => out.push(ty.clone()),
            Shape::Struct(fields) => fields.iter().for_each(|f| f.leaves_into(out)),
        }
    }

    fn map_leaves(self, f: &impl Fn(Type) -> Type) -> Shape {
        match self {
            Shape::Void => Shape::Void,
            Shape::Leaf(ty) => Shape::Leaf(f(ty)),
            Shape::Struct(fields) => {
                Shape::Struct(fields.into_iter().map(|s| s.map_leaves(f)).collect())
            }
        }
    }
}

impl<'c> LowerCx<'c, '_> {
    /// The shape of `ty`.
    pub fn shape(&self, ty: &Type, span: Span) -> LowerResult<Shape> {
        Ok(match ty {
            Type::Void => Shape::Void,
            Type::Struct(id) => {
                let def = self.hir.struct_def(*id).ok_or_else(|| {
                    crate::diag::Diagnostic::error(super::E_INTERNAL, "unknown struct", span)
                })?;
                Shape::Struct(
                    def.fields
                        .iter()
                        .map(|f| self.shape(&f.ty, span))
                        .collect::<LowerResult<_>>()?,
                )
            }
            Type::Ptr(inner) => self
                .shape(inner, span)?
                .map_leaves(&|t| Type::Ptr(Box::new(t))),
            Type::Array(inner, n) => {
                let n = *n;
                self.shape(inner, span)?
                    .map_leaves(&|t| Type::Array(Box::new(t), n))
            }
            other => Shape::Leaf(other.clone()),
        })
    }

    /// The MLIR spelling of a leaf C type.
    pub fn type_text(&self, ty: &Type, span: Span) -> LowerResult<String> {
        Ok(match ty {
            Type::Bool => "i1".into(),
            Type::Char => "i8".into(),
            Type::Int | Type::UInt => "i32".into(),
            Type::Long | Type::ULong => "i64".into(),
            Type::Float => "f32".into(),
            Type::Double => "f64".into(),
            Type::Ptr(inner) => {
                if matches!(**inner, Type::Array(..)) {
                    return Err(self.unsupported(span, "a pointer to an array"));
                }
                format!(
                    "memref<?x{}, strided<[1], offset: ?>>",
                    self.type_text(inner, span)?
                )
            }
            Type::Array(..) => {
                let (dims, scalar) = array_dims(ty);
                if matches!(scalar, Type::Struct(_)) {
                    return Err(self.unsupported(span, "a multi-dimensional array of structs"));
                }
                let dims: String = dims.iter().map(|d| format!("{d}x")).collect();
                format!("memref<{dims}{}>", self.type_text(scalar, span)?)
            }
            Type::Void => return Err(self.unsupported(span, "a 'void' value")),
            Type::Null | Type::Error | Type::Struct(_) => {
                return Err(self.internal(format!("no MLIR type for {ty:?}")));
            }
        })
    }

    /// The MLIR type of a leaf C type.
    pub fn mlir_type(&mut self, ty: &Type, span: Span) -> LowerResult<MType<'c>> {
        let text = self.type_text(ty, span)?;
        self.parse_type(&text)
    }

    /// The MLIR types of `ty`'s leaves.
    pub fn flat_types(&mut self, ty: &Type, span: Span) -> LowerResult<Vec<MType<'c>>> {
        self.shape(ty, span)?
            .leaves()
            .iter()
            .map(|leaf| self.mlir_type(leaf, span))
            .collect()
    }

    /// The pointer type `memref<?xT', strided<[1], offset: ?>>` of `elem`.
    pub fn ptr_type(&mut self, elem: &Type, span: Span) -> LowerResult<MType<'c>> {
        self.mlir_type(&Type::Ptr(Box::new(elem.clone())), span)
    }

    /// A value of type `ty` built from its flattened leaves.
    pub fn rv_from_flat(
        &self,
        ty: &Type,
        values: &[super::builder::V<'c>],
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        let shape = self.shape(ty, span)?;
        let mut iter = values.iter().copied();
        let rv = rv_of_shape(&shape, &mut iter).ok_or_else(|| self.internal("too few values"))?;
        Ok(rv)
    }
}

/// Builds an [`Rv`] of `shape` from `values`.
pub fn rv_of_shape<'c>(
    shape: &Shape,
    values: &mut impl Iterator<Item = super::builder::V<'c>>,
) -> Option<Rv<'c>> {
    Some(match shape {
        Shape::Void => Rv::Void,
        Shape::Leaf(_) => Rv::Scalar(values.next()?),
        Shape::Struct(fields) => Rv::Struct(
            fields
                .iter()
                .map(|f| rv_of_shape(f, values))
                .collect::<Option<Vec<_>>>()?,
        ),
    })
}

/// The dimensions of a (multi-dimensional) array type and its scalar
/// element: `T[N][M]` is `([N, M], T)`.
pub fn array_dims(ty: &Type) -> (Vec<u64>, &Type) {
    let mut dims = Vec::new();
    let mut current = ty;
    while let Type::Array(inner, n) = current {
        dims.push(*n);
        current = inner;
    }
    (dims, current)
}

/// Whether integer operations on `ty` are unsigned.
pub fn is_unsigned(ty: &Type) -> bool {
    ty.is_unsigned()
}
