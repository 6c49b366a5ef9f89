//! Statements: declarations, blocks with guards after statements that may
//! `break`/`continue`/`return`, `if`, and the three loops as `scf.while`
//! (`scf.for` when a `for` loop is canonical).

use super::{
    E_SPECULATE, LowerCx, LowerResult,
    builder::V,
    control::{Exits, assigned_vars, block_args, exits},
    env::{Key, ListLen, Rv},
};
use crate::{
    hir::{BinaryOp, Block as HBlock, Expr, ExprKind, Init, Stmt, StmtKind, Type, VarId},
    span::Span,
};
use melior::ir::{Type as MType, ValueLike};

/// Code of a barrier that an early exit may skip.
pub const E_SYNC_AFTER_EXIT: &str = "csubset::E901";

impl<'c> LowerCx<'c, '_> {
    /// Lowers a block's statements (the scope is the caller's business).
    pub fn lower_block(&mut self, block: &HBlock) -> LowerResult<()> {
        self.lower_stmts(&block.stmts)
    }

    /// Lowers `stmts` in order. After a statement that may set a control
    /// flag the rest is guarded by `scf.if` on the flags; after an
    /// unconditional `break`/`continue`/`return` the rest is dead.
    pub fn lower_stmts(&mut self, stmts: &[Stmt]) -> LowerResult<()> {
        for (i, stmt) in stmts.iter().enumerate() {
            self.lower_stmt(stmt)?;
            if matches!(
                stmt.kind,
                StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue
            ) {
                return Ok(());
            }
            let rest = &stmts[i + 1..];
            let flags = exits(stmt);
            if rest.is_empty() || !flags.any() {
                continue;
            }
            let Some(guard) = self.exit_guard(flags, stmt.span)? else {
                continue;
            };
            let span = rest.first().map_or(stmt.span, |s| s.span);
            if let Some(sync) = rest
                .iter()
                .find_map(|s| super::control::first_sync(self.hir, s))
            {
                return Err(self
                    .error(
                        E_SYNC_AFTER_EXIT,
                        "a barrier or collective after a conditional return, break or continue \
                         is not reached by every thread",
                        sync,
                    )
                    .with_label(stmt.span, "threads may leave here")
                    .with_help(
                        "move the barrier before the early exit, or restructure with if/else",
                    ));
            }
            self.build_if(
                guard,
                span,
                &[],
                |cx| cx.lower_stmts(rest).map(|_| vec![]),
                |_| Ok(vec![]),
            )?;
            return Ok(());
        }
        Ok(())
    }

    /// Lowers `stmts` in a scope: variables declared in it are unbound
    /// afterwards.
    pub fn lower_scoped(
        &mut self,
        f: impl FnOnce(&mut Self) -> LowerResult<()>,
    ) -> LowerResult<()> {
        let before: Vec<Key> = self.env.values.keys().copied().collect();
        f(self)?;
        self.env
            .values
            .retain(|key, _| !matches!(key, Key::Var(_)) || before.binary_search(key).is_ok());
        Ok(())
    }

    /// Lowers one statement.
    pub fn lower_stmt(&mut self, stmt: &Stmt) -> LowerResult<()> {
        self.span = stmt.span;
        match &stmt.kind {
            StmtKind::Expr(expr) => self.lower_expr(expr).map(|_| ()),
            StmtKind::Decl { var, init } => self.lower_decl(*var, init.as_ref(), stmt.span),
            StmtKind::Block(block) => self.lower_scoped(|cx| cx.lower_block(block)),
            StmtKind::Empty => Ok(()),
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.lower_scalar(cond)?;
                self.build_if(
                    c,
                    stmt.span,
                    &[],
                    |cx| {
                        cx.lower_scoped(|cx| cx.lower_stmt(then_branch))
                            .map(|_| vec![])
                    },
                    |cx| match else_branch {
                        Some(e) => cx.lower_scoped(|cx| cx.lower_stmt(e)).map(|_| vec![]),
                        None => Ok(vec![]),
                    },
                )?;
                Ok(())
            }
            StmtKind::While { cond, body } => {
                self.lower_loop(stmt.span, Some(cond), None, body, false)
            }
            StmtKind::DoWhile { body, cond } => {
                self.lower_loop(stmt.span, Some(cond), None, body, true)
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                speculate,
            } => {
                if let Some(pragma) = speculate {
                    return self.lower_scoped(|cx| {
                        cx.lower_speculative_for(init, cond.as_ref(), step.as_ref(), body, pragma)
                    });
                }
                self.lower_scoped(|cx| {
                    if cx.lower_canonical_for(
                        stmt.span,
                        init,
                        cond.as_ref(),
                        step.as_ref(),
                        body,
                    )? {
                        return Ok(());
                    }
                    cx.lower_stmts(init)?;
                    cx.lower_loop(stmt.span, cond.as_ref(), step.as_ref(), body, false)
                })
            }
            StmtKind::Break => self.set_flag(Key::Broke, stmt.span),
            StmtKind::Continue => self.set_flag(Key::Continued, stmt.span),
            StmtKind::Return(value) => {
                if let Some(value) = value {
                    let rv = self.lower_expr(value)?;
                    self.env.set(Key::ReturnValue, rv);
                }
                if self.env.has(Key::Returned) {
                    self.set_flag(Key::Returned, stmt.span)?;
                }
                Ok(())
            }
            _ => {
                let ext = self.ext;
                ext.lower_stmt(self, stmt)
            }
        }
    }

    fn set_flag(&mut self, key: Key, span: Span) -> LowerResult<()> {
        let location = self.loc(span);
        let t = self.b().const_bool(true, location)?;
        self.env.set(key, Rv::Scalar(t));
        Ok(())
    }

    /// `T x = init;` (or BSGP's `x = e;`).
    fn lower_decl(&mut self, var: VarId, init: Option<&Init>, span: Span) -> LowerResult<()> {
        let info = self
            .hir
            .var(var)
            .ok_or_else(|| self.internal("unknown variable"))?;
        let ty = info.ty.clone();
        if info.storage == Some(crate::hir::Storage::Shared) {
            return self.lower_shared_decl(var, &ty, init, span);
        }
        let rv = match init {
            None => self.uninitialized(&ty, span)?,
            Some(Init::Expr(expr)) => {
                if matches!(expr.kind, ExprKind::DNew { .. }) {
                    self.env.lists.insert(var, ListLen::Zero);
                } else {
                    self.env.lists.remove(&var);
                }
                self.lower_expr(expr)?
            }
            Some(Init::List(items)) => self.lower_init_list(&ty, items, span)?,
        };
        self.env.set(Key::Var(var), rv);
        Ok(())
    }

    /// A shared local (Fork's `sh`): memory the language extension provides
    /// for the group; arrays are that memory, scalars live in cells.
    fn lower_shared_decl(
        &mut self,
        var: VarId,
        ty: &Type,
        init: Option<&Init>,
        span: Span,
    ) -> LowerResult<()> {
        let value = match init {
            None => None,
            Some(Init::Expr(expr)) => Some(self.lower_expr(expr)?),
            Some(Init::List(_)) => {
                return Err(self.unsupported(span, "this initializer of a shared variable"));
            }
        };
        self.lower_shared_var(var, ty, value, span)
    }

    /// Gives the shared variable `var` its group memory, holding `value` if
    /// given (a scalar's).
    pub fn lower_shared_var(
        &mut self,
        var: VarId,
        ty: &Type,
        value: Option<Rv<'c>>,
        span: Span,
    ) -> LowerResult<()> {
        let shape = self.shape(ty, span)?;
        let location = self.loc(span);
        let ext = self.ext;
        let mut memrefs = Vec::new();
        let mut scalar = false;
        for leaf in shape.leaves() {
            let mlir = self.mlir_type(&leaf, span)?;
            let memref_type = match leaf {
                Type::Array(..) => mlir,
                _ => {
                    scalar = true;
                    self.parse_type(&format!("memref<{mlir}>"))?
                }
            };
            memrefs.push(ext.shared_local(self, memref_type, span)?);
        }
        let memory = self.rv_from_flat(ty, &memrefs, span)?;
        if !scalar {
            if value.is_some() {
                return Err(self.unsupported(span, "an initializer of a shared array"));
            }
            self.env.set(Key::Var(var), memory);
            return Ok(());
        }
        self.memory_vars.insert(var, memory);
        if let Some(value) = value {
            for (memref, leaf) in memrefs.iter().zip(value.flatten()) {
                self.b().store(leaf, *memref, &[], location)?;
            }
        }
        Ok(())
    }

    /// The value of a variable declared without initializer: `ub.poison`
    /// for scalars, `memref.alloca` for arrays.
    pub fn uninitialized(&mut self, ty: &Type, span: Span) -> LowerResult<Rv<'c>> {
        let shape = self.shape(ty, span)?;
        let location = self.loc(span);
        let mut values = Vec::new();
        for leaf in shape.leaves() {
            let mlir = self.mlir_type(&leaf, span)?;
            values.push(match leaf {
                Type::Array(..) => self.alloca(mlir, location)?,
                _ => self.b().poison(mlir, location)?,
            });
        }
        self.rv_from_flat(ty, &values, span)
    }

    /// `= { a, b, ... }` for a local array or struct.
    fn lower_init_list(&mut self, ty: &Type, items: &[Init], span: Span) -> LowerResult<Rv<'c>> {
        match ty {
            Type::Struct(id) => {
                let def = self
                    .hir
                    .struct_def(*id)
                    .ok_or_else(|| self.internal("unknown struct"))?;
                let fields: Vec<Type> = def.fields.iter().map(|f| f.ty.clone()).collect();
                let mut out = Vec::new();
                for (i, field_ty) in fields.iter().enumerate() {
                    out.push(match items.get(i) {
                        Some(Init::Expr(e)) => self.lower_expr(e)?,
                        Some(Init::List(sub)) => self.lower_init_list(field_ty, sub, span)?,
                        None => self.zero(field_ty, span)?,
                    });
                }
                Ok(Rv::Struct(out))
            }
            Type::Array(elem, _) if matches!(**elem, Type::Array(..)) => {
                Err(self.unsupported(span, "an initializer of a multi-dimensional array"))
            }
            Type::Array(elem, n) => {
                let array = self.uninitialized(ty, span)?;
                let location = self.loc(span);
                for i in 0..*n {
                    let value = match items.get(i as usize) {
                        Some(Init::Expr(e)) => self.lower_expr(e)?,
                        Some(Init::List(sub)) => self.lower_init_list(elem, sub, span)?,
                        None => self.zero(elem, span)?,
                    };
                    let index = self.b().const_index(i as i64, location)?;
                    for (memref, v) in array.flatten().into_iter().zip(value.flatten()) {
                        self.b().store(v, memref, &[index], location)?;
                    }
                }
                Ok(array)
            }
            _ => match items.first() {
                Some(Init::Expr(e)) => self.lower_expr(e),
                _ => self.zero(ty, span),
            },
        }
    }

    /// The zero value of a scalar or struct type.
    pub fn zero(&mut self, ty: &Type, span: Span) -> LowerResult<Rv<'c>> {
        let location = self.loc(span);
        let shape = self.shape(ty, span)?;
        let mut values = Vec::new();
        for leaf in shape.leaves() {
            let mlir = self.mlir_type(&leaf, span)?;
            values.push(match leaf {
                t if t.is_float() => self.b().const_float(mlir, 0.0, location)?,
                Type::Bool => self.b().const_bool(false, location)?,
                t if t.is_integer() => self.b().const_int(mlir, 0, location)?,
                Type::Array(..) => self.alloca(mlir, location)?,
                _ => self.b().poison(mlir, location)?,
            });
        }
        self.rv_from_flat(ty, &values, span)
    }

    /// `while`, `do`/`while` and non-canonical `for` loops as `scf.while`.
    fn lower_loop(
        &mut self,
        span: Span,
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
        do_while: bool,
    ) -> LowerResult<()> {
        let flags = exits(body);
        let outer_broke = self.env.remove(Key::Broke);
        let outer_continued = self.env.remove(Key::Continued);
        let location = self.loc(span);
        if flags.brk {
            let f = self.b().const_bool(false, location)?;
            self.env.set(Key::Broke, Rv::Scalar(f));
        }
        let assigned = assigned_vars([body], cond.into_iter().chain(step));
        let mut keys: Vec<Key> = assigned
            .into_iter()
            .map(Key::Var)
            .filter(|k| self.env.has(*k))
            .collect();
        if flags.ret {
            keys.extend(
                [Key::Returned, Key::ReturnValue]
                    .into_iter()
                    .filter(|k| self.env.has(*k)),
            );
        }
        if flags.brk {
            keys.push(Key::Broke);
        }
        keys.sort();
        let stop = Exits {
            ret: flags.ret,
            brk: flags.brk,
            cont: false,
        };
        let cond_span = cond.map_or(span, |c| c.span);
        let result = if do_while {
            self.build_while(
                span,
                &keys,
                |cx| {
                    cx.lower_body(body, flags)?;
                    cx.guarded_cond(cond, stop, cond_span)
                },
                |_| Ok(()),
            )
        } else {
            self.build_while(
                span,
                &keys,
                |cx| cx.guarded_cond(cond, stop, cond_span),
                |cx| {
                    cx.lower_body(body, flags)?;
                    if let Some(step) = step {
                        cx.guarded(stop, step.span, |cx| cx.lower_expr(step).map(|_| ()))?;
                    }
                    Ok(())
                },
            )
        };
        self.env.remove(Key::Broke);
        self.env.remove(Key::Continued);
        if let Some(v) = outer_broke {
            self.env.set(Key::Broke, v);
        }
        if let Some(v) = outer_continued {
            self.env.set(Key::Continued, v);
        }
        result
    }

    /// A loop body in its own scope with a fresh `continue` flag.
    fn lower_body(&mut self, body: &Stmt, flags: Exits) -> LowerResult<()> {
        if flags.cont {
            let location = self.loc(body.span);
            let f = self.b().const_bool(false, location)?;
            self.env.set(Key::Continued, Rv::Scalar(f));
        }
        self.lower_scoped(|cx| cx.lower_stmt(body))?;
        self.env.remove(Key::Continued);
        Ok(())
    }

    /// Runs `f` under `scf.if` on the negation of the `stop` flags (directly
    /// when none is bound).
    fn guarded(
        &mut self,
        stop: Exits,
        span: Span,
        f: impl FnOnce(&mut Self) -> LowerResult<()>,
    ) -> LowerResult<()> {
        match self.exit_guard(stop, span)? {
            None => f(self),
            Some(guard) => self
                .build_if(guard, span, &[], |cx| f(cx).map(|_| vec![]), |_| Ok(vec![]))
                .map(|_| ()),
        }
    }

    /// The loop condition, `false` without evaluating it once a `stop`
    /// flag is set.
    fn guarded_cond(&mut self, cond: Option<&Expr>, stop: Exits, span: Span) -> LowerResult<V<'c>> {
        let location = self.loc(span);
        let eval = |cx: &mut Self| -> LowerResult<V<'c>> {
            match cond {
                Some(c) => cx.lower_scalar(c),
                None => cx.b().const_bool(true, location),
            }
        };
        match self.exit_guard(stop, span)? {
            None => eval(self),
            Some(guard) => {
                let i1: MType = melior::ir::r#type::IntegerType::new(self.context, 1).into();
                let results = self.build_if(
                    guard,
                    span,
                    &[i1],
                    |cx| eval(cx).map(|v| vec![v]),
                    |cx| cx.b().const_bool(false, location).map(|v| vec![v]),
                )?;
                results
                    .first()
                    .copied()
                    .ok_or_else(|| self.internal("scf.if without result"))
            }
        }
    }

    /// `for (int i = a; i < b; i++) body` (also `<=`, `++i`, `i += c` with a
    /// positive constant `c`) where the body assigns neither `i` nor what
    /// `b` reads and has no `break`/`return`: an `scf.for` over `index`.
    /// Returns false (and lowers nothing) for any other loop.
    fn lower_canonical_for(
        &mut self,
        span: Span,
        init: &[Stmt],
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
    ) -> LowerResult<bool> {
        let Some(canonical) = canonical_for(init, cond, step, body) else {
            return Ok(false);
        };
        let location = self.loc(span);
        let iv_ty = self.mlir_type(&canonical.ty, span)?;
        let (lower, upper, step_value) = self.canonical_bounds(&canonical, location)?;

        let flags = exits(body);
        let outer_continued = self.env.remove(Key::Continued);
        let assigned = assigned_vars([body], []);
        let keys: Vec<Key> = assigned
            .into_iter()
            .map(Key::Var)
            .filter(|k| self.env.has(*k))
            .collect();
        let outer = self.env.clone();
        let types = self.key_types(&keys)?;
        let init_values = self.key_values(&keys)?;
        let mut args = vec![(melior::ir::Type::index(self.context), location)];
        args.extend(types.iter().map(|t| (*t, location)));
        let body_block = melior::ir::Block::new(&args);
        let block = super::builder::block_ref(&body_block);
        let arguments = block_args(&body_block)?;
        let (iv, carried) = (arguments[0], &arguments[1..]);
        self.rebind(&keys, carried)?;
        let entry = self.env.clone();
        self.at_block(block, |cx| {
            let i = cx.b().from_index(iv, iv_ty, location)?;
            cx.env.set(Key::Var(canonical.var), Rv::Scalar(i));
            cx.lower_body(body, flags)?;
            cx.check_carried(&entry, &keys)?;
            let yielded = cx.key_values(&keys)?;
            cx.b().scf_yield(&yielded, location)
        })?;
        let body_lists = self.env.lists.clone();
        self.env = outer;
        self.env
            .lists
            .retain(|var, len| body_lists.get(var) == Some(len));
        let mut operands = vec![lower, upper, step_value];
        operands.extend(init_values);
        let op = self.b().op(
            "scf.for",
            location,
            &operands,
            &types,
            &[],
            vec![super::builder::region_of(body_block)],
        )?;
        let results = super::builder::results(op)?;
        self.rebind(&keys, &results)?;
        if let Some(v) = outer_continued {
            self.env.set(Key::Continued, v);
        }
        Ok(true)
    }
}

impl<'c> LowerCx<'c, '_> {
    /// A `for` loop marked `#pragma pgpu speculate`: `pgpu.spec.loop` over
    /// the loop's index range (DESIGN.md; seeds/gpu-tls.txt). The loop must
    /// be counted (`for (int i = a; i < b; i += c)`) and run every iteration
    /// (no `break` or `return`). Scalars declared before the loop and
    /// assigned in it live in memory cells (`memref<T>`) during the loop, so
    /// that `pgpu-classify-speculation` can make their accesses
    /// speculative; their values after the loop are the cells'. Local arrays
    /// of the body are allocated in the body (private to the iteration).
    fn lower_speculative_for(
        &mut self,
        init: &[Stmt],
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
        pragma: &crate::hir::Speculate,
    ) -> LowerResult<()> {
        let span = pragma.span;
        let flags = exits(body);
        if flags.brk || flags.ret {
            let what = if flags.brk { "`break`" } else { "`return`" };
            return Err(self
                .error(
                    E_SPECULATE,
                    format!("{what} leaves this speculative loop early"),
                    span,
                )
                .with_help("every iteration of a speculative loop runs; move the exit out of it"));
        }
        let Some(canonical) = canonical_for(init, cond, step, body) else {
            return Err(self
                .error(
                    E_SPECULATE,
                    "a speculative loop must be a counted `for` loop",
                    span,
                )
                .with_help(
                    "write it as `for (int i = a; i < b; i += c)` with a constant step and `i` \
                     not assigned in the body",
                ));
        };
        if let (Some(window), Some(warp)) = (pragma.window, pragma.warp)
            && (warp == 0 || window == 0 || window % warp != 0)
        {
            return Err(self.error(
                E_SPECULATE,
                format!("`window({window})` must be a positive multiple of `warp({warp})`"),
                span,
            ));
        }
        for (clause, value) in [("window", pragma.window), ("warp", pragma.warp)] {
            if value == Some(0) {
                return Err(self.error(
                    E_SPECULATE,
                    format!("`{clause}(0)`: the clause needs a positive count"),
                    span,
                ));
            }
        }
        let location = self.loc(span);
        let iv_ty = self.mlir_type(&canonical.ty, span)?;
        let (lower, upper, step_value) = self.canonical_bounds(&canonical, location)?;
        // Scalars bound before the loop and assigned in it: memory cells.
        let mut cells = Vec::new();
        for var in assigned_vars([body], []) {
            if self.memory_vars.contains_key(&var) {
                continue;
            }
            let Some(value) = self.env.get(Key::Var(var)).cloned() else {
                continue;
            };
            let leaves = value.flatten();
            if leaves
                .iter()
                .any(|leaf| melior::ir::r#type::MemRefType::try_from(leaf.r#type()).is_ok())
            {
                continue; // an array: its elements are memory already
            }
            let ty = self
                .hir
                .var(var)
                .ok_or_else(|| self.internal("unknown variable"))?
                .ty
                .clone();
            let mut memrefs = Vec::new();
            for leaf in leaves {
                let cell_type = self.parse_type(&format!("memref<{}>", leaf.r#type()))?;
                let cell = self.alloca(cell_type, location)?;
                self.b().store(leaf, cell, &[], location)?;
                memrefs.push(cell);
            }
            let memory = self.rv_from_flat(&ty, &memrefs, span)?;
            self.memory_vars.insert(var, memory);
            cells.push((var, ty, memrefs));
        }
        let outer = self.env.clone();
        let body_block =
            melior::ir::Block::new(&[(melior::ir::Type::index(self.context), location)]);
        let block = super::builder::block_ref(&body_block);
        let iv = block_args(&body_block)?[0];
        let saved_scope = self.alloca_scope.replace(block);
        let lowered = self.at_block(block, |cx| {
            let i = cx.b().from_index(iv, iv_ty, location)?;
            cx.env.set(Key::Var(canonical.var), Rv::Scalar(i));
            cx.lower_body(body, flags)?;
            cx.b()
                .op("pgpu.spec.commit", location, &[], &[], &[], vec![])?;
            Ok(())
        });
        self.alloca_scope = saved_scope;
        lowered?;
        let body_lists = self.env.lists.clone();
        self.env = outer;
        self.env
            .lists
            .retain(|var, len| body_lists.get(var) == Some(len));
        let mut attributes = Vec::new();
        for (name, value) in [("window", pragma.window), ("warp", pragma.warp)] {
            if let Some(value) = value {
                attributes.push((name, self.b().attr(&format!("{value} : i64"))?));
            }
        }
        self.b().op(
            "pgpu.spec.loop",
            location,
            &[lower, upper, step_value],
            &[],
            &attributes,
            vec![super::builder::region_of(body_block)],
        )?;
        for (var, ty, memrefs) in cells {
            self.memory_vars.remove(&var);
            let mut values = Vec::new();
            for memref in memrefs {
                use melior::ir::r#type::ShapedTypeLike;
                let element = melior::ir::r#type::MemRefType::try_from(memref.r#type())
                    .map_err(|_| self.internal("a cell that is not a memref"))?
                    .element();
                values.push(self.b().load(memref, &[], element, location)?);
            }
            let value = self.rv_from_flat(&ty, &values, span)?;
            self.env.set(Key::Var(var), value);
        }
        Ok(())
    }
}

impl<'c> LowerCx<'c, '_> {
    /// The index-typed lower bound, exclusive upper bound and step of a
    /// counted loop.
    fn canonical_bounds(
        &mut self,
        canonical: &Canonical,
        location: melior::ir::Location<'c>,
    ) -> LowerResult<(V<'c>, V<'c>, V<'c>)> {
        let lower = self.lower_index(canonical.start)?;
        let mut upper = self.lower_index(canonical.bound)?;
        if canonical.inclusive {
            let one = self.b().const_index(1, location)?;
            upper = self.b().binary("arith.addi", upper, one, location)?;
        }
        let step = self.b().const_index(canonical.step as i64, location)?;
        Ok((lower, upper, step))
    }
}

/// A canonical counted `for` loop.
struct Canonical<'a> {
    var: VarId,
    ty: Type,
    start: &'a Expr,
    bound: &'a Expr,
    inclusive: bool,
    step: u64,
}

fn canonical_for<'a>(
    init: &'a [Stmt],
    cond: Option<&'a Expr>,
    step: Option<&'a Expr>,
    body: &'a Stmt,
) -> Option<Canonical<'a>> {
    let [
        Stmt {
            kind:
                StmtKind::Decl {
                    var,
                    init: Some(Init::Expr(start)),
                },
            ..
        },
    ] = init
    else {
        return None;
    };
    if !matches!(start.ty, Type::Int | Type::Long) {
        return None;
    }
    let ExprKind::Binary { op, lhs, rhs } = &cond?.kind else {
        return None;
    };
    let inclusive = match op {
        BinaryOp::Lt => false,
        BinaryOp::Le => true,
        _ => return None,
    };
    if !matches!(lhs.kind, ExprKind::Var(v) if v == *var) || lhs.ty != start.ty {
        return None;
    }
    let step = match &step?.kind {
        ExprKind::IncDec {
            target,
            increment: true,
            ..
        } if matches!(target.kind, ExprKind::Var(v) if v == *var) => 1,
        ExprKind::CompoundAssign {
            op: BinaryOp::Add,
            target,
            value,
            ..
        } if matches!(target.kind, ExprKind::Var(v) if v == *var) => match value.kind {
            ExprKind::IntLit(c) if c > 0 => c,
            _ => return None,
        },
        _ => return None,
    };
    let exits = exits(body);
    if exits.brk || exits.ret {
        return None;
    }
    let assigned = assigned_vars([body], []);
    if assigned.contains(var) || !is_pure(rhs) || reads_any(rhs, &assigned) {
        return None;
    }
    Some(Canonical {
        var: *var,
        ty: start.ty.clone(),
        start,
        bound: rhs,
        inclusive,
        step,
    })
}

/// Literals, variables and arithmetic on them: no memory, no calls, no
/// side effects, no traps.
fn is_pure(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::IntLit(_)
        | ExprKind::BoolLit(_)
        | ExprKind::FloatLit { .. }
        | ExprKind::Var(_) => true,
        ExprKind::Unary { operand, .. } => is_pure(operand),
        ExprKind::Cast { expr, .. } => is_pure(expr),
        ExprKind::Binary { op, lhs, rhs } => {
            !matches!(
                op,
                BinaryOp::Div | BinaryOp::Rem | BinaryOp::LogAnd | BinaryOp::LogOr
            ) && is_pure(lhs)
                && is_pure(rhs)
        }
        _ => false,
    }
}

fn reads_any(expr: &Expr, vars: &std::collections::BTreeSet<VarId>) -> bool {
    if let ExprKind::Var(v) = expr.kind {
        return vars.contains(&v);
    }
    let mut found = false;
    super::control::for_each_child(expr, |child| found |= reads_any(child, vars));
    found
}
