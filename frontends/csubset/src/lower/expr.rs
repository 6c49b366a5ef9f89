//! Expressions: arithmetic on `arith`, memory on `memref` (pointers are
//! `memref<?xT, strided<[1], offset: ?>>`, see [`super::builder::Builder::ptr_add`]),
//! short-circuit logic and `?:` on `scf.if`, calls on `func.call`, the host
//! I/O builtins on `pgpu`, assignments on the SSA environment or memory.

use super::{
    LowerCx, LowerResult,
    builder::{Signedness, V},
    env::{Key, ListLen, Rv},
};
use crate::{
    diag::Diagnostic,
    hir::{BinaryOp, Builtin, CastKind, Expr, ExprKind, Type, UnaryOp},
    span::Span,
};
use melior::ir::{Type as MType, ValueLike, attribute::StringAttribute};
use pgpu_dialect::ops::pgpu as pg;

/// Storage an lvalue designates.
#[derive(Clone, Debug)]
pub enum Place<'c> {
    /// A local (or a field of one, by field path).
    Local {
        /// The variable.
        var: crate::hir::VarId,
        /// Field indices.
        path: Vec<u32>,
    },
    /// Memory cells, one per leaf.
    Cells(Cells<'c>),
    /// `thread.oldrank`.
    OldRank,
}

/// Memory cells mirroring a type's shape.
#[derive(Clone, Debug)]
pub enum Cells<'c> {
    /// One cell: `memref[indices]` holding a `ty`.
    Leaf {
        /// The memref.
        memref: V<'c>,
        /// Its indices (empty for a scalar global).
        indices: Vec<V<'c>>,
        /// The element type.
        ty: MType<'c>,
    },
    /// A struct's fields.
    Struct(Vec<Cells<'c>>),
}

impl<'c> Cells<'c> {
    fn leaves(&self, out: &mut Vec<(V<'c>, Vec<V<'c>>, MType<'c>)>) {
        match self {
            Cells::Leaf {
                memref,
                indices,
                ty,
            } => out.push((*memref, indices.clone(), *ty)),
            Cells::Struct(fields) => fields.iter().for_each(|f| f.leaves(out)),
        }
    }
}

fn signedness(ty: &Type) -> Signedness {
    if ty.is_unsigned() {
        Signedness::Unsigned
    } else {
        Signedness::Signed
    }
}

impl<'c> LowerCx<'c, '_> {
    /// Lowers an expression that has one MLIR value.
    pub fn lower_scalar(&mut self, expr: &Expr) -> LowerResult<V<'c>> {
        let rv = self.lower_expr(expr)?;
        rv.scalar()
            .ok_or_else(|| self.internal(format!("expected a scalar value, got {rv:?}")))
    }

    /// Lowers an expression.
    pub fn lower_expr(&mut self, expr: &Expr) -> LowerResult<Rv<'c>> {
        if !super::control::is_sync_expr(self.hir, expr) {
            return self.lower_plain_expr(expr);
        }
        // A superstep boundary: its operands belong to the superstep it
        // ends (a `thread.get` among them reads the boundary before), and
        // the variables' values at it are those after its operands. A
        // `scan` replaces its variable at the boundary: the value before
        // is the boundary's.
        if matches!(expr.kind, ExprKind::Scan { .. }) {
            self.env.mark_sync();
            return self.lower_plain_expr(expr);
        }
        let value = match &expr.kind {
            ExprKind::Call { func, .. } if super::control::reassigns_ranks(self.hir, *func) => {
                // The callee changes ranks: thread.oldrank after the call
                // is the callee's old rank.
                self.env.remove(Key::OldRank);
                let value = self.lower_plain_expr(expr)?;
                self.ext.after_rank_changing_call(self, expr.span)?;
                value
            }
            _ => self.lower_plain_expr(expr)?,
        };
        self.env.mark_sync();
        Ok(value)
    }

    /// `expr` without the superstep bookkeeping of [`Self::lower_expr`].
    fn lower_plain_expr(&mut self, expr: &Expr) -> LowerResult<Rv<'c>> {
        let span = expr.span;
        let location = self.loc(span);
        Ok(match &expr.kind {
            ExprKind::IntLit(_) | ExprKind::FloatLit { .. } => self.lower_number(expr)?,
            ExprKind::BoolLit(value) => Rv::Scalar(self.b().const_bool(*value, location)?),
            ExprKind::StrLit(_) => {
                return Err(self.unsupported(span, "a string literal outside 'printf'"));
            }
            ExprKind::Null => Rv::Void,
            ExprKind::Var(var) if self.memory_vars.contains_key(var) => {
                let place = self.lower_place(expr)?;
                self.read_place(&place, span)?
            }
            ExprKind::Var(var) => self
                .env
                .get(Key::Var(*var))
                .cloned()
                .ok_or_else(|| self.unbound(*var, span))?,
            ExprKind::Global(_) | ExprKind::Index { .. } | ExprKind::Deref(_) => {
                if expr.ty.element().is_some() && matches!(expr.ty, Type::Array(..)) {
                    return self.lower_array(expr);
                }
                let place = self.lower_place(expr)?;
                self.read_place(&place, span)?
            }
            ExprKind::Field { base, field } => {
                if matches!(expr.ty, Type::Array(..)) {
                    return self.lower_array(expr);
                }
                if base.category.is_lvalue() {
                    let place = self.lower_place(expr)?;
                    self.read_place(&place, span)?
                } else {
                    let rv = self.lower_expr(base)?;
                    rv.field(*field)
                        .cloned()
                        .ok_or_else(|| self.internal("no such field"))?
                }
            }
            ExprKind::Unary { op, operand } => {
                if let Some(value) = fold_int(expr) {
                    let ty = self.mlir_type(&expr.ty, span)?;
                    return Ok(Rv::Scalar(self.b().const_int(ty, value, location)?));
                }
                let v = self.lower_scalar(operand)?;
                Rv::Scalar(self.lower_unary(*op, v, &operand.ty, location)?)
            }
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinaryOp::LogAnd | BinaryOp::LogOr => {
                    Rv::Scalar(self.lower_logical(*op, lhs, rhs, span)?)
                }
                _ => {
                    let l = self.lower_scalar(lhs)?;
                    let r = self.lower_scalar(rhs)?;
                    Rv::Scalar(self.lower_binary(*op, l, r, &lhs.ty, span)?)
                }
            },
            ExprKind::PtrAdd { ptr, offset } => {
                let p = self.lower_expr(ptr)?;
                let o = self.lower_index(offset)?;
                self.ptr_add(&p, &ptr.ty, o, &Type::Long, span)?
            }
            ExprKind::PtrDiff { lhs, rhs } => {
                let l = self.lower_expr(lhs)?;
                let r = self.lower_expr(rhs)?;
                let (Some(l), Some(r)) =
                    (l.flatten().first().copied(), r.flatten().first().copied())
                else {
                    return Err(self.internal("pointer difference of empty values"));
                };
                let lo = self.ptr_offset(l, &lhs.ty, span)?;
                let ro = self.ptr_offset(r, &rhs.ty, span)?;
                let diff = self.b().binary("arith.subi", lo, ro, location)?;
                let ty = self.mlir_type(&expr.ty, span)?;
                Rv::Scalar(self.b().from_index(diff, ty, location)?)
            }
            ExprKind::Assign { target, value } => {
                let place = self.lower_place(target)?;
                let rv = self.lower_expr(value)?;
                self.note_list_assignment(target, value);
                self.write_place(&place, rv.clone(), target.span)?;
                rv
            }
            ExprKind::CompoundAssign {
                op,
                target,
                value,
                op_ty,
            } => self.lower_compound(*op, target, value, op_ty, span)?,
            ExprKind::IncDec {
                target,
                increment,
                prefix,
            } => self.lower_incdec(target, *increment, *prefix, span)?,
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => self.lower_conditional(cond, then_expr, else_expr, &expr.ty, span)?,
            ExprKind::Cast {
                kind,
                expr: operand,
                ..
            } => {
                if let Some(value) = fold_int(expr) {
                    let ty = self.mlir_type(&expr.ty, span)?;
                    if expr.ty.is_float() {
                        return Ok(Rv::Scalar(self.b().const_float(
                            ty,
                            value as f64,
                            location,
                        )?));
                    }
                    if expr.ty.is_integer() && expr.ty != Type::Bool {
                        return Ok(Rv::Scalar(self.b().const_int(ty, value, location)?));
                    }
                }
                self.lower_cast(*kind, operand, &expr.ty, span)?
            }
            ExprKind::AddrOf(inner) => self.lower_addr_of(inner, span)?,
            ExprKind::Call { func, args } => self.lower_call(*func, args, span)?,
            ExprKind::Builtin(builtin) => self.lower_builtin(builtin, &expr.ty, span)?,
            ExprKind::Comma { lhs, rhs } => {
                self.lower_expr(lhs)?;
                self.lower_expr(rhs)?
            }
            ExprKind::ProcessorId
            | ExprKind::GroupRank
            | ExprKind::GroupId
            | ExprKind::GroupSize
            | ExprKind::MultiPrefix { .. } => {
                let ext = self.ext;
                ext.lower_expr(self, expr)?
            }
            ExprKind::Error => {
                return Err(self.internal("an erroneous expression reached the lowering"));
            }
            _ => {
                let ext = self.ext;
                ext.lower_expr(self, expr)?
            }
        })
    }

    /// An integer or float literal in its C type.
    fn lower_number(&mut self, expr: &Expr) -> LowerResult<Rv<'c>> {
        let location = self.loc(expr.span);
        let ty = self.mlir_type(&expr.ty, expr.span)?;
        let value = match (&expr.kind, &expr.ty) {
            (ExprKind::FloatLit { bits }, _) => {
                return Ok(Rv::Scalar(self.b().const_float(
                    ty,
                    f64::from_bits(*bits),
                    location,
                )?));
            }
            (ExprKind::IntLit(value), Type::Bool) => {
                return Ok(Rv::Scalar(self.b().const_bool(*value != 0, location)?));
            }
            (ExprKind::IntLit(value), Type::Char) => *value as u8 as i8 as i64,
            (ExprKind::IntLit(value), Type::Int | Type::UInt) => *value as u32 as i32 as i64,
            (ExprKind::IntLit(value), _) => *value as i64,
            _ => return Err(self.internal("not a number literal")),
        };
        Ok(Rv::Scalar(self.b().const_int(ty, value, location)?))
    }

    /// `func.call` of a user function with flattened arguments and results.
    fn lower_call(
        &mut self,
        func: crate::hir::FuncId,
        args: &[Expr],
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        let callee = self
            .hir
            .function(func)
            .ok_or_else(|| self.internal("unknown function"))?;
        let mut values = Vec::new();
        for arg in args {
            values.extend(self.lower_expr(arg)?.flatten());
        }
        let ext = self.ext;
        values.extend(ext.hidden_arguments(self, callee, span)?);
        let name = callee.name.clone();
        let ret = callee.ret.clone();
        let types = self.flat_types(&ret, span)?;
        let results = self.b().call(&name, &values, &types, location)?;
        self.rv_from_flat(&ret, &results, span)
    }

    /// `c ? a : b` as an `scf.if` with results (either side may trap or
    /// have effects).
    fn lower_conditional(
        &mut self,
        cond: &Expr,
        then_expr: &Expr,
        else_expr: &Expr,
        ty: &Type,
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        let c = self.lower_scalar(cond)?;
        let types = self.flat_types(ty, span)?;
        let results = self.build_if(
            c,
            span,
            &types,
            |cx| cx.lower_expr(then_expr).map(|rv| rv.flatten()),
            |cx| cx.lower_expr(else_expr).map(|rv| rv.flatten()),
        )?;
        self.rv_from_flat(ty, &results, span)
    }

    fn unbound(&self, var: crate::hir::VarId, span: Span) -> Diagnostic {
        let name = self.hir.var(var).map_or("?", |v| v.name.as_str());
        self.internal(format!("variable '{name}' has no value here"))
            .with_label(span, "used here")
    }

    /// Records that a list variable was (re)allocated or reassigned.
    fn note_list_assignment(&mut self, target: &Expr, value: &Expr) {
        if let ExprKind::Var(var) = target.kind {
            if matches!(value.kind, ExprKind::DNew { .. }) {
                self.env.lists.insert(var, ListLen::Zero);
            } else {
                self.env.lists.remove(&var);
            }
        }
    }

    /// An integer expression as an `index`: constants directly, and
    /// `(long)i` of an `int` `i` as one `arith.index_cast[ui]` of `i`.
    pub fn lower_index(&mut self, expr: &Expr) -> LowerResult<V<'c>> {
        let location = self.loc(expr.span);
        if let Some(constant) = fold_int(expr) {
            return self.b().const_index(constant, location);
        }
        let inner = match &expr.kind {
            ExprKind::Cast {
                kind: CastKind::IntExtend,
                expr: inner,
                ..
            } if inner.ty != Type::Bool => inner,
            _ => expr,
        };
        let value = self.lower_scalar(inner)?;
        self.b().to_index(value, signedness(&inner.ty), location)
    }

    /// The memref(s) of an array lvalue (a local, global or field).
    pub fn lower_array(&mut self, expr: &Expr) -> LowerResult<Rv<'c>> {
        let span = expr.span;
        match &expr.kind {
            ExprKind::Var(var) => self
                .env
                .get(Key::Var(*var))
                .cloned()
                .ok_or_else(|| self.unbound(*var, span)),
            ExprKind::Global(id) => self.global_value(*id, span),
            ExprKind::Field { base, field } => {
                let rv = self.lower_array(base)?;
                rv.field(*field)
                    .cloned()
                    .ok_or_else(|| self.internal("no such field"))
            }
            _ => Err(self.unsupported(span, "this array expression")),
        }
    }

    /// The memref(s) of an array lvalue and the indices of the sub-array it
    /// designates (`a[i]` of `int a[N][M]` is `a`'s memref and `[i]`).
    fn lower_array_indexed(&mut self, expr: &Expr) -> LowerResult<(Rv<'c>, Vec<V<'c>>)> {
        match &expr.kind {
            ExprKind::Index { base, index } if matches!(base.ty, Type::Array(..)) => {
                let (memrefs, mut indices) = self.lower_array_indexed(base)?;
                indices.push(self.lower_index(index)?);
                Ok((memrefs, indices))
            }
            _ => Ok((self.lower_array(expr)?, Vec::new())),
        }
    }

    /// The storage `expr` designates.
    pub fn lower_place(&mut self, expr: &Expr) -> LowerResult<Place<'c>> {
        let span = expr.span;
        let location = self.loc(span);
        match &expr.kind {
            ExprKind::Var(var) if self.memory_vars.contains_key(var) => {
                let memory = self.memory_vars[var].clone();
                let mut cells = Vec::new();
                for memref in memory.flatten() {
                    use melior::ir::r#type::ShapedTypeLike;
                    let ty = melior::ir::r#type::MemRefType::try_from(memref.r#type())
                        .map_err(|_| self.internal("a memory variable that is not a memref"))?
                        .element();
                    cells.push(Cells::Leaf {
                        memref,
                        indices: Vec::new(),
                        ty,
                    });
                }
                let shape = self.shape(&expr.ty, span)?;
                Ok(Place::Cells(
                    cells_of_shape(&shape, &mut cells.into_iter())
                        .ok_or_else(|| self.internal("memory variable shape"))?,
                ))
            }
            ExprKind::Var(var) => Ok(Place::Local {
                var: *var,
                path: Vec::new(),
            }),
            ExprKind::ThreadOldRank => Ok(Place::OldRank),
            ExprKind::Field { base, field } => match self.lower_place(base)? {
                Place::Local { var, mut path } => {
                    path.push(*field);
                    Ok(Place::Local { var, path })
                }
                Place::Cells(Cells::Struct(mut fields)) => {
                    let index = *field as usize;
                    if index >= fields.len() {
                        return Err(self.internal("no such field"));
                    }
                    Ok(Place::Cells(fields.swap_remove(index)))
                }
                _ => Err(self.internal("field of a non-struct place")),
            },
            ExprKind::Global(id) => {
                let shape = self.shape(&expr.ty, span)?;
                let symbols = self.global_symbols(*id, span)?;
                let mut cells = Vec::new();
                for (leaf, name) in shape.leaves().iter().zip(symbols) {
                    if matches!(leaf, Type::Array(..)) {
                        return Err(self.unsupported(span, "assigning a whole array"));
                    }
                    let elem = self.mlir_type(leaf, span)?;
                    let cell_ty = self.parse_type(&format!("memref<{elem}>"))?;
                    let memref = self.b().get_global(&name, cell_ty, location)?;
                    cells.push(Cells::Leaf {
                        memref,
                        indices: Vec::new(),
                        ty: elem,
                    });
                }
                let shape_rv = self.shape(&expr.ty, span)?;
                Ok(Place::Cells(
                    cells_of_shape(&shape_rv, &mut cells.into_iter())
                        .ok_or_else(|| self.internal("global shape"))?,
                ))
            }
            ExprKind::Index { base, index } => {
                let (memrefs, mut indices) = if matches!(base.ty, Type::Array(..)) {
                    self.lower_array_indexed(base)?
                } else {
                    (self.lower_expr(base)?, Vec::new())
                };
                indices.push(self.lower_index(index)?);
                self.cells_at(&memrefs, indices, &expr.ty, span)
            }
            ExprKind::Deref(pointer) => {
                let memrefs = self.lower_expr(pointer)?;
                let zero = self.b().const_index(0, location)?;
                self.cells_at(&memrefs, vec![zero], &expr.ty, span)
            }
            _ => Err(self.internal("not an lvalue")),
        }
    }

    /// The cells `memrefs[index]` of element type `elem`.
    fn cells_at(
        &mut self,
        memrefs: &Rv<'c>,
        indices: Vec<V<'c>>,
        elem: &Type,
        span: Span,
    ) -> LowerResult<Place<'c>> {
        if matches!(elem, Type::Array(..)) {
            return Err(
                self.unsupported(span, "a sub-array of a multi-dimensional array as a value")
            );
        }
        let shape = self.shape(elem, span)?;
        let mut cells = Vec::new();
        for (memref, leaf) in memrefs.flatten().into_iter().zip(shape.leaves()) {
            let ty = self.mlir_type(&leaf, span)?;
            cells.push(Cells::Leaf {
                memref,
                indices: indices.clone(),
                ty,
            });
        }
        Ok(Place::Cells(
            cells_of_shape(&shape, &mut cells.into_iter())
                .ok_or_else(|| self.internal("cell shape"))?,
        ))
    }

    /// Reads the value stored at `place`.
    pub fn read_place(&mut self, place: &Place<'c>, span: Span) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        match place {
            Place::Local { var, path } => {
                let mut rv = self
                    .env
                    .get(Key::Var(*var))
                    .cloned()
                    .ok_or_else(|| self.unbound(*var, span))?;
                for index in path {
                    rv = rv
                        .field(*index)
                        .cloned()
                        .ok_or_else(|| self.internal("no such field"))?;
                }
                Ok(rv)
            }
            Place::Cells(cells) => self.load_cells(cells, location),
            Place::OldRank => Err(self.internal("reading thread.oldrank as a place")),
        }
    }

    fn load_cells(
        &mut self,
        cells: &Cells<'c>,
        location: melior::ir::Location<'c>,
    ) -> LowerResult<Rv<'c>> {
        Ok(match cells {
            Cells::Leaf {
                memref,
                indices,
                ty,
            } => Rv::Scalar(self.b().load(*memref, indices, *ty, location)?),
            Cells::Struct(fields) => Rv::Struct(
                fields
                    .iter()
                    .map(|f| self.load_cells(f, location))
                    .collect::<LowerResult<_>>()?,
            ),
        })
    }

    /// Writes `value` to `place`.
    pub fn write_place(&mut self, place: &Place<'c>, value: Rv<'c>, span: Span) -> LowerResult<()> {
        let location = self.loc(span);
        match place {
            Place::Local { var, path } => {
                let key = Key::Var(*var);
                let mut current = match self.env.get(key).cloned() {
                    Some(rv) => rv,
                    None if path.is_empty() => Rv::Void,
                    None => return Err(self.unbound(*var, span)),
                };
                let slot = current
                    .at_path_mut(path)
                    .ok_or_else(|| self.internal("no such field"))?;
                *slot = value;
                self.env.set(key, current);
                Ok(())
            }
            Place::Cells(cells) => {
                let mut leaves = Vec::new();
                cells.leaves(&mut leaves);
                for ((memref, indices, _), v) in leaves.into_iter().zip(value.flatten()) {
                    self.b().store(v, memref, &indices, location)?;
                }
                Ok(())
            }
            Place::OldRank => {
                let v = value
                    .scalar()
                    .ok_or_else(|| self.internal("thread.oldrank takes an int"))?;
                let ext = self.ext;
                ext.assign_oldrank(self, v, span)
            }
        }
    }

    fn lower_unary(
        &mut self,
        op: UnaryOp,
        v: V<'c>,
        ty: &Type,
        location: melior::ir::Location<'c>,
    ) -> LowerResult<V<'c>> {
        let mlir = v.r#type();
        Ok(match op {
            UnaryOp::Neg if ty.is_float() => self.b().cast("arith.negf", v, mlir, location)?,
            UnaryOp::Neg => {
                let zero = self.b().const_int(mlir, 0, location)?;
                self.b().binary("arith.subi", zero, v, location)?
            }
            UnaryOp::Not => self.b().not(v, location)?,
            UnaryOp::BitNot => {
                let ones = self.b().const_int(mlir, -1, location)?;
                self.b().binary("arith.xori", v, ones, location)?
            }
        })
    }

    /// `lhs op rhs` on operands of C type `ty` (not `&&`/`||`).
    pub fn lower_binary(
        &mut self,
        op: BinaryOp,
        l: V<'c>,
        r: V<'c>,
        ty: &Type,
        span: Span,
    ) -> LowerResult<V<'c>> {
        let location = self.loc(span);
        if matches!(ty, Type::Ptr(_) | Type::Null) {
            return Err(self
                .error(
                    super::E_UNSUPPORTED,
                    "comparing pointers is not supported by the MLIR lowering",
                    span,
                )
                .with_help("compare indices instead of pointers"));
        }
        let float = ty.is_float();
        let unsigned = ty.is_unsigned();
        let name = match (op, float, unsigned) {
            (BinaryOp::Add, true, _) => "arith.addf",
            (BinaryOp::Add, false, _) => "arith.addi",
            (BinaryOp::Sub, true, _) => "arith.subf",
            (BinaryOp::Sub, false, _) => "arith.subi",
            (BinaryOp::Mul, true, _) => "arith.mulf",
            (BinaryOp::Mul, false, _) => "arith.muli",
            (BinaryOp::Div, true, _) => "arith.divf",
            (BinaryOp::Div, false, false) => "arith.divsi",
            (BinaryOp::Div, false, true) => "arith.divui",
            (BinaryOp::Rem, true, _) => "arith.remf",
            (BinaryOp::Rem, false, false) => "arith.remsi",
            (BinaryOp::Rem, false, true) => "arith.remui",
            (BinaryOp::Shl, _, _) => "arith.shli",
            (BinaryOp::Shr, _, false) => "arith.shrsi",
            (BinaryOp::Shr, _, true) => "arith.shrui",
            (BinaryOp::BitAnd, _, _) => "arith.andi",
            (BinaryOp::BitOr, _, _) => "arith.ori",
            (BinaryOp::BitXor, _, _) => "arith.xori",
            (cmp, true, _) => {
                let predicate = match cmp {
                    BinaryOp::Eq => "oeq",
                    BinaryOp::Ne => "une",
                    BinaryOp::Lt => "olt",
                    BinaryOp::Le => "ole",
                    BinaryOp::Gt => "ogt",
                    _ => "oge",
                };
                return self.b().cmpf(predicate, l, r, location);
            }
            (cmp, false, unsigned) => {
                let predicate = match (cmp, unsigned) {
                    (BinaryOp::Eq, _) => "eq",
                    (BinaryOp::Ne, _) => "ne",
                    (BinaryOp::Lt, false) => "slt",
                    (BinaryOp::Le, false) => "sle",
                    (BinaryOp::Gt, false) => "sgt",
                    (BinaryOp::Ge, false) => "sge",
                    (BinaryOp::Lt, true) => "ult",
                    (BinaryOp::Le, true) => "ule",
                    (BinaryOp::Gt, true) => "ugt",
                    _ => "uge",
                };
                return self.b().cmpi(predicate, l, r, location);
            }
        };
        self.b().binary(name, l, r, location)
    }

    /// `a && b`, `a || b` with C's short-circuit: `scf.if` unless `b` is
    /// trivially safe to evaluate, and then `arith.select` (`a ? b : false`,
    /// `a ? true : b`), which takes nothing from the arm it does not choose:
    /// a `b` that is undefined (poison) where `a` decides, such as a
    /// `thread.get` the guard `a` excludes, does not reach the result as it
    /// would through `arith.andi`/`arith.ori`.
    fn lower_logical(
        &mut self,
        op: BinaryOp,
        lhs: &Expr,
        rhs: &Expr,
        span: Span,
    ) -> LowerResult<V<'c>> {
        let location = self.loc(span);
        let l = self.lower_scalar(lhs)?;
        if is_trivial(rhs) {
            let r = self.lower_scalar(rhs)?;
            let decided = self.b().const_bool(op == BinaryOp::LogOr, location)?;
            return if op == BinaryOp::LogAnd {
                self.b().select(l, r, decided, location)
            } else {
                self.b().select(l, decided, r, location)
            };
        }
        let i1: MType = melior::ir::r#type::IntegerType::new(self.context, 1).into();
        let and = op == BinaryOp::LogAnd;
        let results = self.build_if(
            l,
            span,
            &[i1],
            |cx| {
                if and {
                    cx.lower_scalar(rhs).map(|v| vec![v])
                } else {
                    cx.b().const_bool(true, location).map(|v| vec![v])
                }
            },
            |cx| {
                if and {
                    cx.b().const_bool(false, location).map(|v| vec![v])
                } else {
                    cx.lower_scalar(rhs).map(|v| vec![v])
                }
            },
        )?;
        results
            .first()
            .copied()
            .ok_or_else(|| self.internal("scf.if without result"))
    }

    /// `p + offset` on every leaf of a pointer value.
    fn ptr_add(
        &mut self,
        p: &Rv<'c>,
        ptr_ty: &Type,
        offset: V<'c>,
        offset_ty: &Type,
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        let delta = self.b().to_index(offset, signedness(offset_ty), location)?;
        let shape = self.shape(ptr_ty, span)?;
        let mut out = Vec::new();
        for (leaf, ty) in p.flatten().into_iter().zip(shape.leaves()) {
            let elem = match ty.element() {
                Some(e) => self.mlir_type(e, span)?,
                None => return Err(self.internal("pointer arithmetic on a non-pointer")),
            };
            out.push(self.b().ptr_add(leaf, elem, delta, location)?);
        }
        self.rv_from_flat(ptr_ty, &out, span)
    }

    /// The offset of a pointer into its allocation (`index`).
    fn ptr_offset(&mut self, p: V<'c>, ptr_ty: &Type, span: Span) -> LowerResult<V<'c>> {
        let location = self.loc(span);
        let shape = self.shape(ptr_ty, span)?;
        let leaf = shape
            .leaves()
            .into_iter()
            .next()
            .ok_or_else(|| self.internal("empty pointer"))?;
        let elem = leaf
            .element()
            .ok_or_else(|| self.internal("not a pointer"))?
            .clone();
        let elem = self.mlir_type(&elem, span)?;
        let index = melior::ir::Type::index(self.context);
        let base = self.parse_type(&format!("memref<{elem}>"))?;
        let meta = self.b().op(
            "memref.extract_strided_metadata",
            location,
            &[p],
            &[base, index, index, index],
            &[],
            vec![],
        )?;
        super::builder::result(meta, 1)
    }

    fn lower_compound(
        &mut self,
        op: BinaryOp,
        target: &Expr,
        value: &Expr,
        op_ty: &Type,
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        // The operand first, then the target's current value, as GCC and
        // Clang do: `x += ++x` reads the incremented `x`.
        let place = self.lower_place(target)?;
        let v = self.lower_scalar(value)?;
        let old = self.read_place(&place, span)?;
        let new = if let Type::Ptr(_) = target.ty {
            let location = self.loc(span);
            let delta = if op == BinaryOp::Sub {
                let zero = self.b().const_int(v.r#type(), 0, location)?;
                self.b().binary("arith.subi", zero, v, location)?
            } else {
                v
            };
            self.ptr_add(&old, &target.ty, delta, &value.ty, span)?
        } else {
            let o = old
                .scalar()
                .ok_or_else(|| self.internal("compound assignment to a struct"))?;
            let o = self.convert(o, &target.ty, op_ty, span)?;
            let r = self.lower_binary(op, o, v, op_ty, span)?;
            Rv::Scalar(self.convert(r, op_ty, &target.ty, span)?)
        };
        self.write_place(&place, new.clone(), target.span)?;
        Ok(new)
    }

    fn lower_incdec(
        &mut self,
        target: &Expr,
        increment: bool,
        prefix: bool,
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        let place = self.lower_place(target)?;
        let old = self.read_place(&place, span)?;
        let new = match &target.ty {
            Type::Ptr(_) => {
                let long = self.mlir_type(&Type::Long, span)?;
                let delta = self
                    .b()
                    .const_int(long, if increment { 1 } else { -1 }, location)?;
                self.ptr_add(&old, &target.ty, delta, &Type::Long, span)?
            }
            ty => {
                let o = old
                    .scalar()
                    .ok_or_else(|| self.internal("++/-- on a struct"))?;
                let mlir = o.r#type();
                let r = if ty.is_float() {
                    let one = self.b().const_float(mlir, 1.0, location)?;
                    let name = if increment {
                        "arith.addf"
                    } else {
                        "arith.subf"
                    };
                    self.b().binary(name, o, one, location)?
                } else if *ty == Type::Bool {
                    self.b().const_bool(increment, location)?
                } else {
                    let one = self.b().const_int(mlir, 1, location)?;
                    let name = if increment {
                        "arith.addi"
                    } else {
                        "arith.subi"
                    };
                    self.b().binary(name, o, one, location)?
                };
                Rv::Scalar(r)
            }
        };
        self.write_place(&place, new.clone(), target.span)?;
        Ok(if prefix { new } else { old })
    }

    /// Converts a scalar of C type `from` to C type `to`.
    pub fn convert(&mut self, v: V<'c>, from: &Type, to: &Type, span: Span) -> LowerResult<V<'c>> {
        if from == to {
            return Ok(v);
        }
        let location = self.loc(span);
        let target = self.mlir_type(to, span)?;
        if *to == Type::Bool {
            return self.truth_value(v, from, span);
        }
        let b = self.b();
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) => {
                if v.r#type() == target {
                    v
                } else if *to == Type::Double {
                    b.cast("arith.extf", v, target, location)?
                } else {
                    b.cast("arith.truncf", v, target, location)?
                }
            }
            (false, true) => {
                let name = if from.is_unsigned() {
                    "arith.uitofp"
                } else {
                    "arith.sitofp"
                };
                b.cast(name, v, target, location)?
            }
            (true, false) => {
                let name = if to.is_unsigned() {
                    "arith.fptoui"
                } else {
                    "arith.fptosi"
                };
                b.cast(name, v, target, location)?
            }
            (false, false) => {
                if !from.is_integer() || !to.is_integer() {
                    if v.r#type() == target {
                        return Ok(v);
                    }
                    return Err(self.unsupported(span, "this conversion"));
                }
                let from_bits = int_bits(from);
                let to_bits = int_bits(to);
                if from_bits == to_bits {
                    v
                } else if from_bits > to_bits {
                    b.cast("arith.trunci", v, target, location)?
                } else if from.is_unsigned() {
                    b.cast("arith.extui", v, target, location)?
                } else {
                    b.cast("arith.extsi", v, target, location)?
                }
            }
        })
    }

    /// `v != 0` for a scalar of C type `from`.
    fn truth_value(&mut self, v: V<'c>, from: &Type, span: Span) -> LowerResult<V<'c>> {
        let location = self.loc(span);
        if *from == Type::Bool {
            return Ok(v);
        }
        if from.is_float() {
            let zero = self.b().const_float(v.r#type(), 0.0, location)?;
            return self.b().cmpf("une", v, zero, location);
        }
        if from.is_integer() {
            let zero = self.b().const_int(v.r#type(), 0, location)?;
            return self.b().cmpi("ne", v, zero, location);
        }
        Err(self
            .error(
                super::E_UNSUPPORTED,
                "testing a pointer for NULL is not supported by the MLIR lowering",
                span,
            )
            .with_help("NULL is a poison value at this level; keep a separate flag"))
    }

    fn lower_cast(
        &mut self,
        kind: CastKind,
        operand: &Expr,
        to: &Type,
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        match kind {
            CastKind::ToVoid => {
                self.lower_expr(operand)?;
                Ok(Rv::Void)
            }
            CastKind::NullToPtr => {
                self.lower_expr(operand)?;
                let types = self.flat_types(to, span)?;
                let mut values = Vec::new();
                for ty in types {
                    values.push(self.b().poison(ty, location)?);
                }
                self.rv_from_flat(to, &values, span)
            }
            CastKind::ArrayDecay => {
                let array = self.lower_array(operand)?;
                let types = self.flat_types(to, span)?;
                let mut values = Vec::new();
                for (v, ty) in array.flatten().into_iter().zip(types) {
                    values.push(self.b().memref_cast(v, ty, location)?);
                }
                self.rv_from_flat(to, &values, span)
            }
            CastKind::NoOp | CastKind::PtrToPtr => {
                let rv = self.lower_expr(operand)?;
                let types = self.flat_types(to, span)?;
                let same = rv
                    .flatten()
                    .iter()
                    .map(|v| v.r#type())
                    .eq(types.iter().copied());
                if same {
                    Ok(rv)
                } else {
                    Err(self.unsupported(span, "a conversion between pointers to different types"))
                }
            }
            _ => {
                let v = self.lower_scalar(operand)?;
                Ok(Rv::Scalar(self.convert(v, &operand.ty, to, span)?))
            }
        }
    }

    /// `&lvalue`: the pointer to each memory cell the lvalue designates.
    fn lower_addr_of(&mut self, inner: &Expr, span: Span) -> LowerResult<Rv<'c>> {
        if let ExprKind::Deref(p) = &inner.kind {
            return self.lower_expr(p);
        }
        let place = self.lower_place(inner)?;
        let cells = match place {
            Place::Cells(cells) => cells,
            Place::Local { .. } => {
                return Err(self
                    .error(
                        super::E_UNSUPPORTED,
                        "taking the address of a local variable is not supported by the MLIR lowering",
                        span,
                    )
                    .with_help("locals are SSA values; use an array of one element"));
            }
            Place::OldRank => return Err(self.unsupported(span, "taking this address")),
        };
        let mut leaves = Vec::new();
        cells.leaves(&mut leaves);
        let ptr_ty = Type::Ptr(Box::new(inner.ty.clone()));
        let types = self.flat_types(&ptr_ty, span)?;
        let location = self.loc(span);
        let mut pointers = Vec::new();
        for ((memref, indices, elem), ty) in leaves.into_iter().zip(types) {
            let pointer = match indices.as_slice() {
                [] => self.b().ptr_of_cell(memref, ty, location)?,
                [index] => {
                    let whole = self.b().memref_cast(memref, ty, location)?;
                    self.b().ptr_add(whole, elem, *index, location)?
                }
                _ => {
                    return Err(self.unsupported(
                        span,
                        "the address of an element of a multi-dimensional array",
                    ));
                }
            };
            pointers.push(pointer);
        }
        self.rv_from_flat(&ptr_ty, &pointers, span)
    }

    fn lower_builtin(
        &mut self,
        builtin: &Builtin,
        result_type: &Type,
        span: Span,
    ) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        let i32t = self.mlir_type(&Type::Int, span)?;
        match builtin {
            Builtin::Printf { format, args } => {
                let mut values = Vec::new();
                for arg in args {
                    values.push(self.lower_scalar(arg)?);
                }
                let op = pg::PrintfOperation::builder(self.context, location)
                    .format(StringAttribute::new(self.context, format))
                    .args(&values)
                    .build();
                self.b().append(op.into());
                Ok(Rv::Void)
            }
            Builtin::Argi { index, default } => {
                let k = self.lower_scalar(index)?;
                let d = match default {
                    Some(d) => self.lower_scalar(d)?,
                    None => self.b().const_int(i32t, 0, location)?,
                };
                let op = pg::argi(self.context, i32t, k, d, location);
                let op = self.b().append(op.into());
                Ok(Rv::Scalar(super::builder::result(op, 0)?))
            }
            Builtin::Wtime => {
                let f64t = melior::ir::Type::float64(self.context);
                let op = self
                    .b()
                    .append(pg::wtime(self.context, f64t, location).into());
                Ok(Rv::Scalar(super::builder::result(op, 0)?))
            }
            Builtin::RandSeed(seed) => {
                let s = self.lower_scalar(seed)?;
                self.b()
                    .append(pg::rand_seed(self.context, s, location).into());
                Ok(Rv::Void)
            }
            Builtin::RandU32 => {
                let op = self
                    .b()
                    .append(pg::rand_u_32(self.context, i32t, location).into());
                Ok(Rv::Scalar(super::builder::result(op, 0)?))
            }
            Builtin::Math { func, args } => {
                let mut operands = Vec::new();
                for arg in args {
                    operands.push(self.lower_scalar(arg)?);
                }
                let ty = self.mlir_type(result_type, span)?;
                Ok(Rv::Scalar(self.b().op1(
                    func.op_name(),
                    location,
                    &operands,
                    ty,
                    &[],
                )?))
            }
        }
    }
}

/// The value of an integer constant expression (literals, negation and
/// integer conversions of them), wrapped to the expression's type; floats
/// converted from such a constant fold too.
pub fn fold_int(expr: &Expr) -> Option<i64> {
    let value = match &expr.kind {
        ExprKind::IntLit(v) => *v as i64,
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } if operand.ty.is_integer() => fold_int(operand)?.wrapping_neg(),
        ExprKind::Cast {
            kind: CastKind::IntExtend | CastKind::IntTrunc | CastKind::NoOp | CastKind::IntToFloat,
            expr: inner,
            ..
        } if inner.ty.is_integer() && inner.ty != Type::Bool => fold_int(inner)?,
        _ => return None,
    };
    Some(match expr.ty {
        Type::Char => value as i8 as i64,
        Type::Int => value as i32 as i64,
        Type::UInt => value as u32 as i64,
        Type::Long | Type::ULong => value,
        Type::Float | Type::Double => value,
        _ => return None,
    })
}

/// Integer width in bits of an integer C type.
fn int_bits(ty: &Type) -> u32 {
    match ty {
        Type::Bool => 1,
        Type::Char => 8,
        Type::Int | Type::UInt => 32,
        _ => 64,
    }
}

/// Cells shaped like `shape`, from consecutive leaves.
fn cells_of_shape<'c>(
    shape: &super::types::Shape,
    leaves: &mut impl Iterator<Item = Cells<'c>>,
) -> Option<Cells<'c>> {
    use super::types::Shape;
    match shape {
        Shape::Void => None,
        Shape::Leaf(_) => leaves.next(),
        Shape::Struct(fields) => Some(Cells::Struct(
            fields
                .iter()
                .map(|f| cells_of_shape(f, leaves))
                .collect::<Option<Vec<_>>>()?,
        )),
    }
}

/// Expressions that are cheap, cannot trap and have no side effects, so
/// `&&`/`||` may evaluate them unconditionally.
fn is_trivial(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::IntLit(_)
        | ExprKind::BoolLit(_)
        | ExprKind::FloatLit { .. }
        | ExprKind::Var(_)
        | ExprKind::ThreadRank
        | ExprKind::ThreadSize => true,
        ExprKind::Unary { operand, .. } => is_trivial(operand),
        ExprKind::Cast { expr, kind, .. } => {
            !matches!(kind, CastKind::ArrayDecay | CastKind::NullToPtr) && is_trivial(expr)
        }
        ExprKind::Binary { op, lhs, rhs } => {
            !matches!(op, BinaryOp::Div | BinaryOp::Rem)
                && !matches!(lhs.ty, Type::Ptr(_))
                && is_trivial(lhs)
                && is_trivial(rhs)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::fold_int;
    use crate::{
        hir::{CastKind, Expr, ExprKind, Type, UnaryOp, ValueCategory},
        span::Span,
    };

    fn expr(kind: ExprKind, ty: Type) -> Expr {
        Expr {
            kind,
            ty,
            category: ValueCategory::RValue,
            span: Span::default(),
        }
    }

    #[test]
    fn folds_integer_literals_through_negation_and_conversions() {
        let one = expr(ExprKind::IntLit(1), Type::Int);
        let minus_one = expr(
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand: Box::new(one),
            },
            Type::Int,
        );
        assert_eq!(fold_int(&minus_one), Some(-1));
        let widened = expr(
            ExprKind::Cast {
                kind: CastKind::IntExtend,
                explicit: false,
                expr: Box::new(minus_one),
            },
            Type::Long,
        );
        assert_eq!(fold_int(&widened), Some(-1));
        let big = expr(ExprKind::IntLit(u64::from(u32::MAX)), Type::UInt);
        assert_eq!(fold_int(&big), Some(i64::from(u32::MAX)));
        let char_wrap = expr(ExprKind::IntLit(200), Type::Char);
        assert_eq!(fold_int(&char_wrap), Some(-56));
        let var = expr(ExprKind::Var(crate::hir::VarId(0)), Type::Int);
        assert_eq!(fold_int(&var), None);
    }
}
