//! The program level: `memref.global` per global (one per leaf of a struct
//! global), one `func.func` per function, and the final verification.

use super::{
    E_INTERNAL, LowerCx, LowerResult,
    builder::{V, block_ref, detach},
    control::exits,
    env::{Env, Key, Rv},
};
use crate::{
    diag::Diagnostic,
    hir::{BinaryOp, CastKind, ExprKind, Function, GlobalId, Init, StmtKind, Type, UnaryOp},
    span::Span,
};
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Module, Region, RegionLike, Type as MType,
    attribute::{StringAttribute, TypeAttribute},
    operation::{OperationBuilder, OperationLike},
    r#type::FunctionType,
};
use std::{cell::RefCell, rc::Rc};

/// Lowers every global and function; errors go to `cx.diagnostics`.
pub fn lower_program(cx: &mut LowerCx<'_, '_>) {
    let hir = cx.hir;
    for global in &hir.globals {
        if let Err(d) = lower_global(cx, global.id) {
            cx.diagnostics.push(d);
        }
    }
    for function in &hir.functions {
        cx.env = Env::default();
        cx.function = Some(function);
        let lowered = lower_function(cx, function);
        cx.function = None;
        if let Err(mut d) = lowered {
            if d.code == E_INTERNAL && d.span() == Span::default() {
                d.labels[0].span = cx.span;
            }
            cx.diagnostics.push(d);
        }
    }
}

/// Verifies the module; a failure is an internal error that quotes MLIR's
/// diagnostics.
pub fn verify<'c>(cx: LowerCx<'c, '_>) -> Result<Module<'c>, Vec<Diagnostic>> {
    let records = Rc::new(RefCell::new(Vec::<(String, String)>::new()));
    let sink = records.clone();
    let id = cx.context.attach_diagnostic_handler(move |diagnostic| {
        sink.borrow_mut()
            .push((diagnostic.location().to_string(), diagnostic.to_string()));
        true
    });
    let ok = cx.module.as_operation().verify();
    cx.context.detach_diagnostic_handler(id);
    if ok {
        return Ok(cx.module);
    }
    let records = records.borrow();
    let mut diagnostics: Vec<Diagnostic> = records
        .iter()
        .map(|(location, message)| verifier_diagnostic(&cx, location, message))
        .collect();
    if diagnostics.is_empty() {
        diagnostics.push(Diagnostic::error(
            E_INTERNAL,
            "the lowered IR does not verify",
            Span::default(),
        ));
    }
    Err(diagnostics)
}

/// A verifier failure as a diagnostic: a rule of the `pgpu` dialect that
/// the program breaks (where a barrier stands, rank reassignment, ...) is
/// the program's error, anything else the lowering's.
fn verifier_diagnostic(cx: &LowerCx<'_, '_>, location: &str, message: &str) -> Diagnostic {
    let span = cx.span_of_mlir_location(location);
    if message.starts_with("'pgpu.") {
        Diagnostic::error(E_PGPU_RULE, message.to_string(), span).with_help(
            "the program breaks a rule of the pgpu dialect (docs/frontend-ir.md) that the \
             front end's checks do not catch yet",
        )
    } else {
        Diagnostic::error(
            E_INTERNAL,
            format!("the lowered IR does not verify: {location}: {message}"),
            span,
        )
        .with_help("this is a bug in pgpu's lowering; please report it")
    }
}

/// Code of a program that breaks a rule the `pgpu` dialect's verifier
/// checks.
pub const E_PGPU_RULE: &str = "csubset::E902";

impl<'c> LowerCx<'c, '_> {
    /// The symbols of a global's leaves: its name, or `name.field...` for
    /// the leaves of a struct.
    pub fn global_symbols(&self, id: GlobalId, span: Span) -> LowerResult<Vec<String>> {
        let global = self
            .hir
            .global(id)
            .ok_or_else(|| self.internal("unknown global"))?;
        let mut names = Vec::new();
        self.leaf_names(&global.ty, global.name.clone(), &mut names, span)?;
        Ok(names)
    }

    fn leaf_names(
        &self,
        ty: &Type,
        prefix: String,
        out: &mut Vec<String>,
        span: Span,
    ) -> LowerResult<()> {
        let inner = match ty {
            Type::Ptr(t) | Type::Array(t, _) => t,
            other => other,
        };
        match inner {
            Type::Struct(id) => {
                let def = self
                    .hir
                    .struct_def(*id)
                    .ok_or_else(|| Diagnostic::error(E_INTERNAL, "unknown struct", span))?;
                for field in &def.fields {
                    let field_ty = match ty {
                        Type::Ptr(_) => Type::Ptr(Box::new(field.ty.clone())),
                        Type::Array(_, n) => Type::Array(Box::new(field.ty.clone()), *n),
                        _ => field.ty.clone(),
                    };
                    self.leaf_names(&field_ty, format!("{prefix}.{}", field.name), out, span)?;
                }
                Ok(())
            }
            _ => {
                out.push(prefix);
                Ok(())
            }
        }
    }

    /// The value of global `id`: loaded scalars, the memrefs of arrays.
    pub fn global_value(&mut self, id: GlobalId, span: Span) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        let ty = self
            .hir
            .global(id)
            .ok_or_else(|| self.internal("unknown global"))?
            .ty
            .clone();
        let shape = self.shape(&ty, span)?;
        let names = self.global_symbols(id, span)?;
        let mut values = Vec::new();
        for (leaf, name) in shape.leaves().iter().zip(names) {
            let elem = self.mlir_type(leaf, span)?;
            if matches!(leaf, Type::Array(..)) {
                values.push(self.b().get_global(&name, elem, location)?);
            } else {
                let cell = self.parse_type(&format!("memref<{elem}>"))?;
                let memref = self.b().get_global(&name, cell, location)?;
                values.push(self.b().load(memref, &[], elem, location)?);
            }
        }
        self.rv_from_flat(&ty, &values, span)
    }

    /// The span whose start has the line and column of an MLIR location
    /// printed as `loc("file":line:col)` in `message`.
    fn span_of_mlir_location(&self, message: &str) -> Span {
        let Some(start) = message.find("\":") else {
            return Span::default();
        };
        let mut numbers = message[start + 2..]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse::<u32>().ok());
        match (numbers.next(), numbers.next()) {
            (Some(line), Some(column)) => {
                let offset = self.offset_of(line, column);
                Span::new(offset, offset + 1)
            }
            _ => Span::default(),
        }
    }
}

fn lower_global(cx: &mut LowerCx<'_, '_>, id: GlobalId) -> LowerResult<()> {
    let global = cx
        .hir
        .global(id)
        .ok_or_else(|| cx.internal("unknown global"))?;
    let span = global.span;
    cx.span = span;
    let location = cx.loc(span);
    let shape = cx.shape(&global.ty, span)?;
    let names = cx.global_symbols(id, span)?;
    let leaves = shape.leaves();
    let inits = leaf_inits(global.init.as_ref(), leaves.len());
    for ((leaf, name), init) in leaves.iter().zip(names).zip(inits) {
        let (memref_text, init_text) = match leaf {
            Type::Array(elem, _) if matches!(**elem, Type::Array(..)) => {
                if init.is_some() {
                    return Err(cx.unsupported(span, "an initializer of a multi-dimensional array"));
                }
                let memref = cx.type_text(leaf, span)?;
                let (_, scalar) = super::types::array_dims(leaf);
                let tensor = memref.replacen("memref", "tensor", 1);
                let text = format!("dense<{}> : {tensor}", zero_text(scalar));
                (memref, Some(text))
            }
            Type::Array(elem, n) => {
                let elem_text = cx.type_text(elem, span)?;
                let values = match init {
                    Some(Init::List(items)) => items
                        .iter()
                        .map(|i| match i {
                            Init::Expr(e) => const_text(cx, e, elem),
                            Init::List(_) => Err(cx.unsupported(span, "a nested initializer")),
                        })
                        .collect::<LowerResult<Vec<_>>>()?,
                    None => Vec::new(),
                    Some(Init::Expr(e)) => {
                        return Err(cx.unsupported(e.span, "this array initializer"));
                    }
                };
                let zero = zero_text(elem);
                let text = if values.is_empty() {
                    format!("dense<{zero}> : tensor<{n}x{elem_text}>")
                } else {
                    let mut all = values;
                    all.resize(*n as usize, zero.to_string());
                    format!("dense<[{}]> : tensor<{n}x{elem_text}>", all.join(", "))
                };
                (format!("memref<{n}x{elem_text}>"), Some(text))
            }
            Type::Ptr(_) => {
                if let Some(Init::Expr(e)) = init
                    && !matches!(
                        e.kind,
                        ExprKind::Cast {
                            kind: CastKind::NullToPtr,
                            ..
                        } | ExprKind::Null
                    )
                {
                    return Err(cx
                        .unsupported(
                            e.span,
                            "initializing a global pointer with anything but NULL",
                        )
                        .with_help("assign it in main instead"));
                }
                let text = cx.type_text(leaf, span)?;
                (format!("memref<{text}>"), None)
            }
            scalar => {
                let text = cx.type_text(scalar, span)?;
                let value = match init {
                    Some(Init::Expr(e)) => const_text(cx, e, scalar)?,
                    None => zero_text(scalar).to_string(),
                    Some(Init::List(_)) => {
                        return Err(cx.unsupported(span, "a brace initializer for a scalar"));
                    }
                };
                (
                    format!("memref<{text}>"),
                    Some(format!("dense<{value}> : tensor<{text}>")),
                )
            }
        };
        let memref_type = cx.parse_type(&memref_text)?;
        let initial = match init_text {
            Some(text) => cx.b().attr(&text)?,
            None => Attribute::unit(cx.context),
        };
        let op = OperationBuilder::new("memref.global", location)
            .add_attributes(&[
                (
                    Identifier::new(cx.context, "sym_name"),
                    StringAttribute::new(cx.context, &name).into(),
                ),
                (
                    Identifier::new(cx.context, "type"),
                    TypeAttribute::new(memref_type).into(),
                ),
                (Identifier::new(cx.context, "initial_value"), initial),
            ])
            .build()
            .map_err(|e| cx.internal(e.to_string()))?;
        cx.module.body().append_operation(op);
    }
    Ok(())
}

/// The initializer of each leaf of a global (structs: by field).
fn leaf_inits(init: Option<&Init>, leaves: usize) -> Vec<Option<&Init>> {
    match init {
        Some(Init::List(items)) if leaves > 1 => {
            let mut out: Vec<Option<&Init>> = items.iter().map(Some).collect();
            out.resize(leaves, None);
            out
        }
        other => {
            let mut out = vec![other];
            out.resize(leaves, None);
            out
        }
    }
}

fn zero_text(ty: &Type) -> &'static str {
    match ty {
        Type::Bool => "false",
        t if t.is_float() => "0.0",
        _ => "0",
    }
}

/// A compile-time constant.
#[derive(Clone, Copy, Debug)]
enum Const {
    Int(i128),
    Float(f64),
}

fn eval_const(e: &crate::hir::Expr) -> Option<Const> {
    Some(match &e.kind {
        ExprKind::IntLit(v) => Const::Int(i128::from(*v)),
        ExprKind::BoolLit(b) => Const::Int(i128::from(*b)),
        ExprKind::FloatLit { bits } => Const::Float(f64::from_bits(*bits)),
        ExprKind::Unary { op, operand } => match (op, eval_const(operand)?) {
            (UnaryOp::Neg, Const::Int(v)) => Const::Int(-v),
            (UnaryOp::Neg, Const::Float(v)) => Const::Float(-v),
            (UnaryOp::Not, Const::Int(v)) => Const::Int(i128::from(v == 0)),
            (UnaryOp::BitNot, Const::Int(v)) => Const::Int(!v),
            _ => return None,
        },
        ExprKind::Cast { kind, expr, .. } => {
            let v = eval_const(expr)?;
            match (kind, v) {
                (CastKind::IntToFloat | CastKind::BoolToFloat, Const::Int(i)) => {
                    Const::Float(i as f64)
                }
                (CastKind::FloatToInt, Const::Float(f)) => Const::Int(f as i128),
                (CastKind::ToBool, Const::Int(i)) => Const::Int(i128::from(i != 0)),
                (CastKind::ToBool, Const::Float(f)) => Const::Int(i128::from(f != 0.0)),
                (CastKind::FloatExtend | CastKind::FloatTrunc, f @ Const::Float(_)) => f,
                (
                    CastKind::NoOp | CastKind::IntExtend | CastKind::IntTrunc | CastKind::BoolToInt,
                    i @ Const::Int(_),
                ) => i,
                _ => return None,
            }
        }
        ExprKind::Binary { op, lhs, rhs } => match (eval_const(lhs)?, eval_const(rhs)?) {
            (Const::Int(a), Const::Int(b)) => Const::Int(match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div if b != 0 => a / b,
                BinaryOp::Rem if b != 0 => a % b,
                BinaryOp::Shl => a << (b & 63),
                BinaryOp::Shr => a >> (b & 63),
                BinaryOp::BitAnd => a & b,
                BinaryOp::BitOr => a | b,
                BinaryOp::BitXor => a ^ b,
                _ => return None,
            }),
            (Const::Float(a), Const::Float(b)) => Const::Float(match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div => a / b,
                _ => return None,
            }),
            _ => return None,
        },
        _ => return None,
    })
}

/// The dense-literal text of a constant initializer of type `ty`.
fn const_text(cx: &LowerCx<'_, '_>, e: &crate::hir::Expr, ty: &Type) -> LowerResult<String> {
    let value = eval_const(e).ok_or_else(|| {
        cx.error(
            super::E_UNSUPPORTED,
            "a global's initializer must be a constant expression",
            e.span,
        )
    })?;
    Ok(match (value, ty) {
        (Const::Int(v), Type::Bool) => (v != 0).to_string(),
        (Const::Int(v), Type::Char) => (v as i8).to_string(),
        (Const::Int(v), Type::Int | Type::UInt) => (v as i32).to_string(),
        (Const::Int(v), _) if ty.is_integer() => (v as i64).to_string(),
        (Const::Int(v), _) => super::builder::float_text(v as f64),
        (Const::Float(f), Type::Float) => super::builder::float_text(f64::from(f as f32)),
        (Const::Float(f), _) if ty.is_float() => super::builder::float_text(f),
        (Const::Float(f), _) => (f as i64).to_string(),
    })
}

/// Whether `function` has a `return` that is not its last top-level
/// statement (it needs the `Returned` flag).
fn has_early_return(function: &Function) -> bool {
    let stmts = &function.body.stmts;
    stmts.iter().enumerate().any(|(i, s)| {
        let last = i + 1 == stmts.len();
        !(last && matches!(s.kind, StmtKind::Return(_))) && exits(s).ret
    })
}

fn lower_function(cx: &mut LowerCx<'_, '_>, function: &Function) -> LowerResult<()> {
    cx.span = function.span;
    let result_ty = if function.name == "main" && function.ret == Type::Void {
        Type::Int
    } else {
        function.ret.clone()
    };
    let result_types = cx.flat_types(&result_ty, function.name_span)?;
    let (entry, arg_types) = entry_block(cx, function)?;
    cx.alloca_scope = Some(block_ref(&entry));
    let body = cx.at_block(block_ref(&entry), |cx| lower_body(cx, function, &result_ty));
    cx.alloca_scope = None;
    body?;
    append_func(cx, function, entry, &arg_types, &result_types)
}

/// The entry block, with one argument per leaf of each parameter, and the
/// parameters bound in the environment.
fn entry_block<'c>(
    cx: &mut LowerCx<'c, '_>,
    function: &Function,
) -> LowerResult<(Block<'c>, Vec<MType<'c>>)> {
    let mut params = Vec::new();
    let mut arg_types = Vec::new();
    cx.hidden.clear();
    for param in &function.params {
        let info = cx
            .hir
            .var(*param)
            .ok_or_else(|| cx.internal("unknown parameter"))?;
        let (ty, param_span) = (info.ty.clone(), info.span);
        let location = cx.loc(param_span);
        let types = cx.flat_types(&ty, param_span)?;
        arg_types.extend(types.iter().map(|t| (*t, location)));
        params.push((*param, ty, types.len(), param_span));
    }
    let entry = Block::new(&arg_types);
    let mut index = 0;
    for (var, ty, count, param_span) in params {
        let mut values = Vec::new();
        for _ in 0..count {
            let arg = entry
                .argument(index)
                .map_err(|e| cx.internal(e.to_string()))?;
            values.push(detach(arg.into()));
            index += 1;
        }
        let rv = cx.rv_from_flat(&ty, &values, param_span)?;
        cx.env.set(Key::Var(var), rv);
    }
    // Hidden parameters after the function's own.
    let ext = cx.ext;
    let location = cx.loc(function.name_span);
    let mut all_types: Vec<MType<'c>> = arg_types.into_iter().map(|(t, _)| t).collect();
    for (name, ty) in ext.hidden_parameters(cx.hir, function) {
        let types = cx.flat_types(&ty, function.name_span)?;
        let [ty] = types[..] else {
            return Err(cx.internal("a hidden parameter that is not a scalar"));
        };
        let arg = entry.add_argument(ty, location);
        cx.hidden.insert(name, detach(arg));
        all_types.push(ty);
    }
    Ok((entry, all_types))
}

/// The body at the cursor, then the extension's epilogue and `func.return`
/// of the returned value (0 for `main` without one, poison otherwise).
fn lower_body(cx: &mut LowerCx<'_, '_>, function: &Function, result_ty: &Type) -> LowerResult<()> {
    // Shared (`sh`) parameters: memory of the calling group, holding the
    // argument (of concurrent writes, the first member's).
    for param in &function.params {
        let Some(info) = cx.hir.var(*param) else {
            continue;
        };
        if info.storage == Some(crate::hir::Storage::Shared) {
            let (ty, span) = (info.ty.clone(), info.span);
            let value = cx
                .env
                .get(Key::Var(*param))
                .cloned()
                .ok_or_else(|| cx.internal("a parameter without its value"))?;
            cx.lower_shared_var(*param, &ty, Some(value), span)?;
        }
    }
    if has_early_return(function) {
        let location = cx.loc(function.body.span);
        let f = cx.b().const_bool(false, location)?;
        cx.env.set(Key::Returned, Rv::Scalar(f));
        if *result_ty != Type::Void {
            let poison = poison_of(cx, result_ty, function.name_span)?;
            cx.env.set(Key::ReturnValue, poison);
        }
    }
    cx.lower_scoped(|cx| cx.lower_block(&function.body))?;
    let ext = cx.ext;
    ext.finish_function(cx, function)?;
    let end = cx.loc(Span::new(
        function.body.span.end.saturating_sub(1) as usize,
        function.body.span.end as usize,
    ));
    let values: Vec<V> = match cx.env.get(Key::ReturnValue) {
        Some(rv) if function.ret != Type::Void => rv.flatten(),
        _ if function.name == "main" => {
            let i32_type = cx.mlir_type(&Type::Int, function.name_span)?;
            vec![cx.b().const_int(i32_type, 0, end)?]
        }
        _ => poison_of(cx, result_ty, function.name_span)?.flatten(),
    };
    cx.b().op("func.return", end, &values, &[], &[], vec![])?;
    Ok(())
}

/// Appends `func.func @name` with `entry` as its body and the extension's
/// unit attributes.
fn append_func<'c>(
    cx: &mut LowerCx<'c, '_>,
    function: &Function,
    entry: Block<'c>,
    arg_types: &[MType<'c>],
    result_types: &[MType<'c>],
) -> LowerResult<()> {
    let function_type = FunctionType::new(cx.context, arg_types, result_types);
    let mut attributes = vec![
        (
            Identifier::new(cx.context, "sym_name"),
            StringAttribute::new(cx.context, &function.name).into(),
        ),
        (
            Identifier::new(cx.context, "function_type"),
            TypeAttribute::new(function_type.into()).into(),
        ),
    ];
    let ext = cx.ext;
    for name in ext.function_attributes(cx.hir, function) {
        attributes.push((
            Identifier::new(cx.context, name),
            Attribute::unit(cx.context),
        ));
    }
    let region = Region::new();
    region.append_block(entry);
    let op = OperationBuilder::new("func.func", cx.loc(function.span))
        .add_attributes(&attributes)
        .add_regions([region])
        .build()
        .map_err(|e| cx.internal(e.to_string()))?;
    cx.module.body().append_operation(op);
    Ok(())
}

fn poison_of<'c>(cx: &mut LowerCx<'c, '_>, ty: &Type, span: Span) -> LowerResult<Rv<'c>> {
    let location = cx.loc(span);
    let types = cx.flat_types(ty, span)?;
    let mut values = Vec::new();
    for t in types {
        values.push(cx.b().poison(t, location)?);
    }
    cx.rv_from_flat(ty, &values, span)
}
