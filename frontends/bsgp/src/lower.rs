//! Lowering of the BSGP constructs (seeds/bsgp.txt, Sections 3-5 and
//! Appendix A) to the `pgpu` dialect, as an [`Extension`] of the common
//! C-subset lowering (docs/frontend-ir.md, "SPMD constructs").
//!
//! - `spawn(n) { }` is one `pgpu.spawn` (count cast to `index`). Host
//!   variables are captured implicitly; a host variable that a `require`
//!   in the body assigns is kept in a `memref.alloca() : memref<T>` cell
//!   around the spawn (stored in the `require`, loaded after the spawn),
//!   since a spawn has no results.
//! - `require { }` is `pgpu.require` whose results are the host variables
//!   the block assigns (the HIR's `outputs`).
//! - `par { s1 s2 }` is `pgpu.par` with one region per statement; the
//!   variables a branch assigns or declares are its yields.
//! - `thread.*`, the collectives and `dnew`/`dtempnew`/`dtempfree` map one
//!   to one onto `pgpu` ops; `int` values are `arith.index_cast` to and
//!   from `index` where the ops take or give ranks and lengths.
//! - A list's length is tracked as a host value: 0 after `dnew`/`dtempnew`,
//!   the result of each `compact`/`split` on it afterwards. A length that a
//!   spawn changes reaches the code after it through a `memref<index>`
//!   cell that thread 0 writes at the end of the spawn.
//! - Functions that use SPMD constructs get `pgpu.spmd_inline`; functions
//!   that allocate with `dtempnew` (directly or through the inline functions
//!   their spawns call) end with `pgpu.dtempfree`.

use melior::ir::{
    Attribute, Block, Region, RegionLike, Type as MType, ValueLike,
    attribute::IntegerAttribute,
    r#type::{IntegerType, ShapedTypeLike},
};
use pgpu_csubset::{
    Diagnostic,
    hir::{CollectiveOp, Expr, ExprKind, FuncId, Function, Hir, Stmt, StmtKind, Type, VarId},
    lower::{
        Extension, Key, ListLen, LowerCx, LowerResult, Rv,
        builder::{Signedness, V, block_ref, result},
        control::for_each_child,
    },
    span::Span,
};
use pgpu_dialect::ops::pgpu as pg;
use std::collections::{BTreeSet, HashSet};

/// Code of a list whose length is not known where `compact`/`split`
/// appends to it.
pub const E_LIST_LENGTH: &str = "bsgp::E190";

/// Code of a per-thread query (`thread.rank`, `thread.oldrank`,
/// `thread.get/put`) in host code (`require`).
pub const E_THREAD_IN_HOST: &str = "bsgp::E191";

/// The BSGP constructs' lowering.
#[derive(Debug, Default, Clone, Copy)]
pub struct BsgpLowering;

impl Extension for BsgpLowering {
    fn lower_stmt<'c>(&self, cx: &mut LowerCx<'c, '_>, stmt: &Stmt) -> LowerResult<()> {
        match &stmt.kind {
            StmtKind::Spawn { count, body } => lower_spawn(cx, count, body, stmt.span),
            StmtKind::Barrier { rank_reassigned } => {
                cx.env.mark_sync();
                if *rank_reassigned {
                    // The program sets the old rank next.
                    cx.env.remove(Key::OldRank);
                }
                let location = cx.loc(stmt.span);
                let mut builder = pg::BarrierOperation::builder(cx.context, location);
                if *rank_reassigned {
                    builder = builder.rank_reassigned(Attribute::unit(cx.context));
                }
                cx.b().append(builder.build().into());
                Ok(())
            }
            StmtKind::Require { body, outputs } => lower_require(cx, body, outputs, stmt.span),
            StmtKind::Par { branches } => lower_par(cx, branches, stmt.span),
            _ => Err(cx.unsupported(stmt.span, "this statement (not BSGP)")),
        }
    }

    fn lower_expr<'c>(&self, cx: &mut LowerCx<'c, '_>, expr: &Expr) -> LowerResult<Rv<'c>> {
        lower_bsgp_expr(cx, expr)
    }

    fn assign_oldrank<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        value: V<'c>,
        span: Span,
    ) -> LowerResult<()> {
        if cx.in_host_region {
            return Err(Diagnostic::error(
                E_THREAD_IN_HOST,
                "assigning thread.oldrank in host code ('require' runs once, not per thread)",
                span,
            ));
        }
        let location = cx.loc(span);
        let rank = cx.b().to_index(value, Signedness::Signed, location)?;
        cx.b()
            .append(pg::set_oldrank(cx.context, rank, location).into());
        cx.env.set(Key::OldRank, Rv::Scalar(rank));
        Ok(())
    }

    fn after_rank_changing_call<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        span: Span,
    ) -> LowerResult<()> {
        let location = cx.loc(span);
        remember_old_rank(cx, location)
    }

    fn function_attributes(&self, _hir: &Hir, function: &Function) -> Vec<&'static str> {
        if function.spmd_inline || function.uses_spmd {
            vec!["pgpu.spmd_inline"]
        } else {
            Vec::new()
        }
    }

    fn finish_function<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        function: &Function,
    ) -> LowerResult<()> {
        if function.uses_spmd || !uses_dtempnew(cx.hir, function.id, &mut HashSet::new()) {
            return Ok(());
        }
        let end = Span::new(
            function.body.span.end.saturating_sub(1) as usize,
            function.body.span.end as usize,
        );
        let location = cx.loc(end);
        cx.b().append(pg::dtempfree(cx.context, location).into());
        Ok(())
    }
}

/// Whether `function` allocates with `dtempnew`, itself or through the
/// SPMD (inline) functions it calls.
fn uses_dtempnew(hir: &Hir, function: FuncId, seen: &mut HashSet<FuncId>) -> bool {
    if !seen.insert(function) {
        return false;
    }
    let Some(f) = hir.function(function) else {
        return false;
    };
    let mut found = false;
    let mut calls = Vec::new();
    visit_block_exprs(&f.body.stmts, &mut |e| match &e.kind {
        ExprKind::DNew { temp: true, .. } => found = true,
        ExprKind::Call { func, .. } => calls.push(*func),
        _ => {}
    });
    found
        || calls.into_iter().any(|callee| {
            hir.function(callee).is_some_and(|g| g.uses_spmd) && uses_dtempnew(hir, callee, seen)
        })
}

/// Calls `f` on every expression (recursively) in `stmts`.
fn visit_block_exprs(stmts: &[Stmt], f: &mut impl FnMut(&Expr)) {
    for stmt in stmts {
        visit_stmt_exprs(stmt, f);
    }
}

fn visit_stmt_exprs(stmt: &Stmt, f: &mut impl FnMut(&Expr)) {
    fn expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
        f(e);
        for_each_child(e, |child| expr(child, f));
    }
    match &stmt.kind {
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => expr(e, f),
        StmtKind::Decl { init, .. } => {
            fn init_exprs(i: &pgpu_csubset::hir::Init, f: &mut impl FnMut(&Expr)) {
                match i {
                    pgpu_csubset::hir::Init::Expr(e) => expr(e, f),
                    pgpu_csubset::hir::Init::List(items) => {
                        items.iter().for_each(|i| init_exprs(i, f))
                    }
                }
            }
            if let Some(i) = init {
                init_exprs(i, f);
            }
        }
        StmtKind::Block(b) => visit_block_exprs(&b.stmts, f),
        StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            expr(cond, f);
            visit_stmt_exprs(then_branch, f);
            if let Some(e) = else_branch {
                visit_stmt_exprs(e, f);
            }
        }
        StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
            expr(cond, f);
            visit_stmt_exprs(body, f);
        }
        StmtKind::For {
            init,
            cond,
            step,
            body,
            ..
        } => {
            visit_block_exprs(init, f);
            cond.iter().chain(step.iter()).for_each(|e| expr(e, f));
            visit_stmt_exprs(body, f);
        }
        StmtKind::Spawn { count, body } => {
            expr(count, f);
            visit_block_exprs(&body.stmts, f);
        }
        StmtKind::Require { body, .. } => visit_block_exprs(&body.stmts, f),
        StmtKind::Par { branches } => visit_block_exprs(branches, f),
        _ => {}
    }
}

/// The host variables bound before the spawn that a `require` in `stmts`
/// assigns.
fn require_outputs(stmts: &[Stmt], out: &mut BTreeSet<VarId>) {
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Require { body, outputs } => {
                out.extend(outputs.iter().copied());
                require_outputs(&body.stmts, out);
            }
            StmtKind::Block(b) => require_outputs(&b.stmts, out),
            StmtKind::Par { branches } => require_outputs(branches, out),
            StmtKind::If {
                then_branch,
                else_branch,
                ..
            } => {
                require_outputs(std::slice::from_ref(then_branch), out);
                if let Some(e) = else_branch {
                    require_outputs(std::slice::from_ref(e), out);
                }
            }
            StmtKind::While { body, .. }
            | StmtKind::DoWhile { body, .. }
            | StmtKind::For { body, .. } => require_outputs(std::slice::from_ref(body), out),
            _ => {}
        }
    }
}

/// After a rank change, binds the old rank (a `pgpu.oldrank` right after
/// it) for the `thread.oldrank` reads of later supersteps.
fn remember_old_rank<'c>(
    cx: &mut LowerCx<'c, '_>,
    location: melior::ir::Location<'c>,
) -> LowerResult<()> {
    struct ReadsOldRank(bool);
    impl pgpu_csubset::hir::Visitor for ReadsOldRank {
        fn visit_expr(&mut self, e: &Expr) {
            self.0 |= matches!(e.kind, ExprKind::ThreadOldRank);
            pgpu_csubset::hir::walk_expr(self, e);
        }
    }
    let mut reads = ReadsOldRank(false);
    if let Some(function) = cx.function {
        pgpu_csubset::hir::walk_block(&mut reads, &function.body);
    }
    if !reads.0 {
        return Ok(());
    }
    let index = MType::index(cx.context);
    let op = cx
        .b()
        .append(pg::oldrank(cx.context, index, location).into());
    cx.env.set(Key::OldRank, Rv::Scalar(result(op, 0)?));
    Ok(())
}

/// `pgpu.spawn`.
fn lower_spawn<'c>(
    cx: &mut LowerCx<'c, '_>,
    count: &Expr,
    body: &pgpu_csubset::hir::Block,
    span: Span,
) -> LowerResult<()> {
    let location = cx.loc(span);
    let n = cx.lower_index(count)?;

    // Cells for host variables that requires in the body assign.
    let mut assigned = BTreeSet::new();
    require_outputs(&body.stmts, &mut assigned);
    let outer_cells = std::mem::take(&mut cx.cells);
    for var in assigned {
        let Some(current) = cx.env.get(Key::Var(var)).cloned() else {
            continue;
        };
        let mut cells = Vec::new();
        for value in current.flatten() {
            let cell_type = cx.parse_type(&format!("memref<{}>", value.r#type()))?;
            let cell = cx.alloca(cell_type, location)?;
            cx.b().store(value, cell, &[], location)?;
            cells.push(cell);
        }
        let shape = current.clone();
        let rv = shape
            .rebuild(&mut cells.into_iter())
            .ok_or_else(|| cx.internal("cell shape"))?;
        cx.cells.insert(var, rv);
    }

    let length_cells = list_length_cells(cx, body, location)?;

    let outer = cx.env.clone();
    cx.env.cleared_lists.clear();
    cx.env.at_last_sync.clear();
    cx.env.remove(Key::OldRank);
    let block = Block::new(&[]);
    let outer_scope = cx.alloca_scope.replace(block_ref(&block));
    let result = cx.at_block(block_ref(&block), |cx| {
        cx.lower_scoped(|cx| cx.lower_block(body))?;
        let end = cx.loc(Span::new(
            body.span.end.saturating_sub(1) as usize,
            body.span.end as usize,
        ));
        // The final lengths of the lists the body appended to (the same
        // in every thread) reach the host through their cells; thread 0
        // writes them.
        let finals: Vec<(V<'c>, V<'c>)> = length_cells
            .iter()
            .filter_map(|(var, cell, _)| match cx.env.lists.get(var) {
                Some(ListLen::Known(length)) => Some((*length, *cell)),
                _ => None,
            })
            .collect();
        if !finals.is_empty() {
            let index = MType::index(cx.context);
            let rank = cx.b().append(pg::rank(cx.context, index, end).into());
            let rank = result(rank, 0)?;
            let zero = cx.b().const_index(0, end)?;
            let first = cx.b().cmpi("eq", rank, zero, end)?;
            cx.build_if(
                first,
                Span::new(
                    body.span.end.saturating_sub(1) as usize,
                    body.span.end as usize,
                ),
                &[],
                |cx| {
                    for (length, cell) in &finals {
                        cx.b().store(*length, *cell, &[], end)?;
                    }
                    Ok(vec![])
                },
                |_| Ok(vec![]),
            )?;
        }
        cx.b().append(pg::r#yield(cx.context, &[], end).into());
        Ok(())
    });
    cx.alloca_scope = outer_scope;
    let inner_lists = cx.env.lists.clone();
    let cleared = std::mem::take(&mut cx.env.cleared_lists);
    cx.env = outer;
    cx.env
        .lists
        .retain(|var, len| inner_lists.get(var) == Some(len));
    let cells = std::mem::replace(&mut cx.cells, outer_cells);
    result?;
    // Thread 0 writes the final lengths; what the cells hold before the
    // spawn is the length an empty thread set leaves (docs/models.md): 0
    // for a list some compact cleared, else the length on entry.
    for (var, cell, on_entry) in &length_cells {
        let empty_set_length = match on_entry {
            _ if cleared.contains(var) => Some(cx.b().const_index(0, location)?),
            Some(ListLen::Zero) => Some(cx.b().const_index(0, location)?),
            Some(ListLen::Known(length)) => Some(*length),
            None => None,
        };
        if let Some(length) = empty_set_length {
            cx.b().store(length, *cell, &[], location)?;
        }
    }
    let region = Region::new();
    region.append_block(block);
    let op = pg::SpawnOperation::builder(cx.context, location)
        .count(n)
        .body(region)
        .build();
    cx.b().append(op.into());

    for (var, cell) in cells {
        let mut values = Vec::new();
        for memref in cell.flatten() {
            let ty = element_of_cell(cx, memref)?;
            values.push(cx.b().load(memref, &[], ty, location)?);
        }
        let shape = cell.clone();
        let rv = shape
            .rebuild(&mut values.into_iter())
            .ok_or_else(|| cx.internal("cell shape"))?;
        cx.env.set(Key::Var(var), rv);
        cx.env.lists.remove(&var);
    }
    for (var, cell, _) in length_cells {
        if inner_lists
            .get(&var)
            .is_some_and(|len| matches!(len, ListLen::Known(_)))
        {
            let index = MType::index(cx.context);
            let length = cx.b().load(cell, &[], index, location)?;
            cx.env.lists.insert(var, ListLen::Known(length));
        }
    }
    Ok(())
}

/// A `memref<index>` cell for each list bound before the spawn that
/// `compact`/`split` in `body` append to, with the list's length on entry
/// when it is known.
fn list_length_cells<'c>(
    cx: &mut LowerCx<'c, '_>,
    body: &pgpu_csubset::hir::Block,
    location: melior::ir::Location<'c>,
) -> LowerResult<Vec<(VarId, V<'c>, Option<ListLen<'c>>)>> {
    let mut lists = BTreeSet::new();
    visit_block_exprs(&body.stmts, &mut |e| {
        if let ExprKind::Compact { list, .. } | ExprKind::Split { list, .. } = &e.kind
            && let ExprKind::Var(var) = list.kind
        {
            lists.insert(var);
        }
    });
    let mut cells = Vec::new();
    for var in lists {
        if !cx.env.has(Key::Var(var)) {
            continue;
        }
        let cell_type = cx.parse_type("memref<index>")?;
        let cell = cx.alloca(cell_type, location)?;
        cells.push((var, cell, cx.env.lists.get(&var).copied()));
    }
    Ok(cells)
}

/// The element type of a `memref<T>` cell.
fn element_of_cell<'c>(cx: &LowerCx<'c, '_>, memref: V<'c>) -> LowerResult<MType<'c>> {
    let ty = melior::ir::r#type::MemRefType::try_from(memref.r#type())
        .map_err(|e| cx.internal(e.to_string()))?;
    Ok(ty.element())
}

/// `pgpu.require -> (outputs) { body; pgpu.yield outputs }`.
fn lower_require<'c>(
    cx: &mut LowerCx<'c, '_>,
    body: &pgpu_csubset::hir::Block,
    outputs: &[VarId],
    span: Span,
) -> LowerResult<()> {
    let location = cx.loc(span);
    let before = cx.env.clone();
    let block = Block::new(&[]);
    let outer_host = std::mem::replace(&mut cx.in_host_region, true);
    // Host arrays of the require live in it, not in every thread.
    let outer_scope = cx.alloca_scope.take();
    let inner = cx.at_block(block_ref(&block), |cx| {
        cx.lower_block(body)?;
        let mut values = Vec::new();
        let mut shapes = Vec::new();
        for var in outputs {
            let rv = cx
                .env
                .get(Key::Var(*var))
                .cloned()
                .ok_or_else(|| cx.internal("a require output has no value"))?;
            if let Some(cell) = cx.cells.get(var).cloned() {
                for (value, memref) in rv.flatten().into_iter().zip(cell.flatten()) {
                    cx.b().store(value, memref, &[], location)?;
                }
            }
            values.extend(rv.flatten());
            shapes.push(rv);
        }
        let end = cx.loc(Span::new(
            body.span.end.saturating_sub(1) as usize,
            body.span.end as usize,
        ));
        let op = pg::YieldOperation::builder(cx.context, end)
            .operands(&values)
            .build();
        cx.b().append(op.into());
        Ok((values, shapes))
    });
    cx.in_host_region = outer_host;
    cx.alloca_scope = outer_scope;
    let inner_env = std::mem::replace(&mut cx.env, before);
    let (values, shapes) = inner?;
    let types: Vec<MType> = values.iter().map(|v| v.r#type()).collect();
    let region = Region::new();
    region.append_block(block);
    let op = pg::RequireOperation::builder(cx.context, location)
        .results(&types)
        .body(region)
        .build();
    let op = cx.b().append(op.into());
    let mut results = Vec::new();
    for i in 0..types.len() {
        results.push(result(op, i)?);
    }
    let mut iter = results.into_iter();
    for (var, shape) in outputs.iter().zip(shapes) {
        let rv = shape
            .rebuild(&mut iter)
            .ok_or_else(|| cx.internal("require result shape"))?;
        cx.env.set(Key::Var(*var), rv);
        match inner_env.lists.get(var) {
            Some(ListLen::Zero) => {
                cx.env.lists.insert(*var, ListLen::Zero);
            }
            _ => {
                cx.env.lists.remove(var);
            }
        }
    }
    Ok(())
}

/// `pgpu.par` with one region per branch.
fn lower_par<'c>(cx: &mut LowerCx<'c, '_>, branches: &[Stmt], span: Span) -> LowerResult<()> {
    let location = cx.loc(span);
    let before = cx.env.clone();
    let mut regions = Vec::new();
    let mut types = Vec::new();
    let mut bindings: Vec<(Key, Rv<'c>)> = Vec::new();
    let mut branch_lists = Vec::new();
    for branch in branches {
        cx.env = before.clone();
        let block = Block::new(&[]);
        let outcome = cx.at_block(block_ref(&block), |cx| {
            cx.lower_stmt(branch)?;
            let mut keys: Vec<Key> = cx.env.changed_since(&before);
            keys.extend(
                cx.env
                    .values
                    .keys()
                    .filter(|k| matches!(k, Key::Var(_)) && !before.has(**k)),
            );
            keys.sort();
            keys.dedup();
            let mut values = Vec::new();
            let mut shapes = Vec::new();
            for key in keys {
                let rv = cx
                    .env
                    .get(key)
                    .cloned()
                    .ok_or_else(|| cx.internal("par branch value"))?;
                values.extend(rv.flatten());
                shapes.push((key, rv));
            }
            let end = cx.loc(branch.span);
            let op = pg::YieldOperation::builder(cx.context, end)
                .operands(&values)
                .build();
            cx.b().append(op.into());
            Ok((values, shapes))
        });
        branch_lists.push(cx.env.lists.clone());
        let (values, shapes) = match outcome {
            Ok(v) => v,
            Err(e) => {
                cx.env = before;
                return Err(e);
            }
        };
        types.extend(values.iter().map(|v| v.r#type()));
        bindings.extend(shapes);
        let region = Region::new();
        region.append_block(block);
        regions.push(region);
    }
    cx.env = before;
    cx.env
        .lists
        .retain(|var, len| branch_lists.iter().all(|l| l.get(var) == Some(len)));
    if branches
        .iter()
        .any(|branch| pgpu_csubset::lower::control::first_sync(cx.hir, branch).is_some())
    {
        // The par's last (aligned) barrier is the last superstep boundary:
        // a variable the par leaves alone had its value from before the
        // par there; one a branch changes is read as the par left it (its
        // value at the barrier is inside the branch).
        let mut at_sync = cx.env.values.clone();
        for (key, _) in &bindings {
            at_sync.remove(key);
        }
        cx.env.at_last_sync = at_sync;
    }
    let op = cx.b().op("pgpu.par", location, &[], &types, &[], regions)?;
    let mut results = Vec::new();
    for i in 0..types.len() {
        results.push(result(op, i)?);
    }
    let mut iter = results.into_iter();
    for (key, shape) in bindings {
        let rv = shape
            .rebuild(&mut iter)
            .ok_or_else(|| cx.internal("par result shape"))?;
        cx.env.set(key, rv);
    }
    Ok(())
}

/// The `CombiningKind` attribute of a collective operator on `ty`.
fn combining_kind<'c>(cx: &LowerCx<'c, '_>, op: CollectiveOp, ty: &Type) -> Attribute<'c> {
    let unsigned = ty.is_unsigned() && *ty != Type::Bool;
    let kind = match op {
        CollectiveOp::Add => 0,
        CollectiveOp::Mul => 1,
        CollectiveOp::Min if unsigned => 4,
        CollectiveOp::Min => 2,
        CollectiveOp::Max if unsigned => 5,
        CollectiveOp::Max => 3,
        CollectiveOp::And => 6,
        CollectiveOp::Or => 7,
        CollectiveOp::Xor => 8,
    };
    IntegerAttribute::new(IntegerType::new(cx.context, 32).into(), kind).into()
}

/// An `index` result converted to the expression's `int` type.
fn index_to_int<'c>(cx: &mut LowerCx<'c, '_>, value: V<'c>, expr: &Expr) -> LowerResult<Rv<'c>> {
    let location = cx.loc(expr.span);
    let ty = cx.mlir_type(&expr.ty, expr.span)?;
    Ok(Rv::Scalar(cx.b().from_index(value, ty, location)?))
}

/// A sort key as the pgpu ops compare it: integers as signed. An unsigned
/// key (or `bool`) gets its sign bit flipped, which maps unsigned order onto
/// signed order (0 -> MIN, 2^(w-1) -> 0, 2^w - 1 -> MAX).
fn sort_key<'c>(
    cx: &mut LowerCx<'c, '_>,
    key: &Expr,
    location: melior::ir::Location<'c>,
) -> LowerResult<V<'c>> {
    let value = cx.lower_scalar(key)?;
    if !key.ty.is_unsigned() {
        return Ok(value);
    }
    let ty = value.r#type();
    let bits = melior::ir::r#type::IntegerType::try_from(ty)
        .map_err(|_| cx.internal(format!("an unsigned sort key of type {ty}")))?
        .width();
    // The sign bit as a signed constant of the key's width.
    let sign_bit = i64::MIN >> (64 - bits);
    let b = cx.b();
    let flip = b.const_int(ty, sign_bit, location)?;
    b.binary("arith.xori", value, flip, location)
}

fn int_to_index<'c>(cx: &mut LowerCx<'c, '_>, expr: &Expr) -> LowerResult<V<'c>> {
    cx.lower_index(expr)
}

fn var_value<'c>(cx: &LowerCx<'c, '_>, var: VarId, span: Span) -> LowerResult<V<'c>> {
    cx.env
        .get(Key::Var(var))
        .and_then(Rv::scalar)
        .ok_or_else(|| {
            cx.unsupported(
                span,
                "a collective or thread.get/put on a struct or unbound variable",
            )
        })
}

fn lower_bsgp_expr<'c>(cx: &mut LowerCx<'c, '_>, expr: &Expr) -> LowerResult<Rv<'c>> {
    let span = expr.span;
    let location = cx.loc(span);
    let index = MType::index(cx.context);
    let context = cx.context;
    if cx.in_host_region
        && matches!(
            expr.kind,
            ExprKind::ThreadRank
                | ExprKind::ThreadOldRank
                | ExprKind::ThreadGet { .. }
                | ExprKind::ThreadPut { .. }
        )
    {
        return Err(Diagnostic::error(
            E_THREAD_IN_HOST,
            "a per-thread query in host code ('require' runs once, not per thread)",
            span,
        )
        .with_help("compute it outside the require block; only thread.size is uniform"));
    }
    // The old rank the last rank change left, where one is bound.
    if let (ExprKind::ThreadOldRank, Some(old)) =
        (&expr.kind, cx.env.get(Key::OldRank).and_then(Rv::scalar))
    {
        return index_to_int(cx, old, expr);
    }
    match &expr.kind {
        ExprKind::ThreadRank | ExprKind::ThreadSize | ExprKind::ThreadOldRank => {
            let op = match expr.kind {
                ExprKind::ThreadRank => pg::rank(context, index, location).into(),
                ExprKind::ThreadSize => pg::size(context, index, location).into(),
                _ => pg::oldrank(context, index, location).into(),
            };
            let op = cx.b().append(op);
            let value = result(op, 0)?;
            index_to_int(cx, value, expr)
        }
        ExprKind::ThreadFork(count) => {
            let n = cx.lower_scalar(count)?;
            let op = cx
                .b()
                .append(pg::thread_fork(context, n.r#type(), n, location).into());
            remember_old_rank(cx, location)?;
            Ok(Rv::Scalar(result(op, 0)?))
        }
        ExprKind::ThreadKill(flag) => {
            let f = cx.lower_scalar(flag)?;
            cx.b().append(pg::thread_kill(context, f, location).into());
            remember_old_rank(cx, location)?;
            Ok(Rv::Void)
        }
        ExprKind::ThreadSortBy(key) => {
            let k = sort_key(cx, key, location)?;
            cx.b()
                .append(pg::thread_sortby(context, k, location).into());
            remember_old_rank(cx, location)?;
            Ok(Rv::Void)
        }
        ExprKind::ThreadSplit(side) => {
            let s = cx.lower_scalar(side)?;
            cx.b().append(pg::thread_split(context, s, location).into());
            remember_old_rank(cx, location)?;
            Ok(Rv::Void)
        }
        ExprKind::ThreadGet { rank, var } => {
            let r = int_to_index(cx, rank)?;
            // v as the last barrier left it (bsgp::E103 checked that it was
            // assigned before), not as a loop around the get changed it.
            let v = match cx
                .env
                .at_last_sync
                .get(&Key::Var(*var))
                .and_then(Rv::scalar)
            {
                Some(at_sync) => at_sync,
                None => var_value(cx, *var, span)?,
            };
            let op = cx
                .b()
                .append(pg::thread_get(context, v.r#type(), r, v, location).into());
            Ok(Rv::Scalar(result(op, 0)?))
        }
        ExprKind::ThreadPut { rank, var, value } => {
            let r = int_to_index(cx, rank)?;
            let v = cx.lower_scalar(value)?;
            let target = var_value(cx, *var, span)?;
            let op = cx
                .b()
                .append(pg::thread_put(context, target.r#type(), r, target, v, location).into());
            let updated = result(op, 0)?;
            cx.env.set(Key::Var(*var), Rv::Scalar(updated));
            Ok(Rv::Void)
        }
        ExprKind::Reduce { op, value } => {
            let v = cx.lower_scalar(value)?;
            let kind = combining_kind(cx, *op, &value.ty);
            let op = cx
                .b()
                .append(pg::reduce(context, v.r#type(), v, kind, location).into());
            Ok(Rv::Scalar(result(op, 0)?))
        }
        ExprKind::Scan { op, var } => {
            let v = var_value(cx, *var, span)?;
            let ty = cx
                .hir
                .var(*var)
                .map(|info| info.ty.clone())
                .unwrap_or(Type::Int);
            let kind = combining_kind(cx, *op, &ty);
            let op = cx
                .b()
                .append(pg::scan(context, v.r#type(), v.r#type(), v, kind, location).into());
            let scanned = result(op, 0)?;
            let total = result(op, 1)?;
            cx.env.set(Key::Var(*var), Rv::Scalar(scanned));
            Ok(Rv::Scalar(total))
        }
        ExprKind::Compact {
            list,
            src,
            keep,
            flag,
        }
        | ExprKind::Split {
            list,
            src,
            side: keep,
            flag,
        } => {
            let is_compact = matches!(expr.kind, ExprKind::Compact { .. });
            lower_append(cx, expr, list, src, keep, flag, is_compact)
        }
        ExprKind::SortIdx(key) => {
            let k = sort_key(cx, key, location)?;
            let op = cx
                .b()
                .append(pg::sort_idx(context, index, k, location).into());
            let value = result(op, 0)?;
            index_to_int(cx, value, expr)
        }
        ExprKind::DNew { temp, count, elem } => {
            let n = int_to_index(cx, count)?;
            let shape = cx.shape(elem, span)?;
            let mut values = Vec::new();
            for leaf in shape.leaves() {
                let leaf_text = cx.type_text(&leaf, span)?;
                let alloc_type = cx.parse_type(&format!("memref<?x{leaf_text}>"))?;
                let ptr_type = cx.ptr_type(&leaf, span)?;
                let op = if *temp {
                    pg::DTempNewOperation::builder(context, location)
                        .dynamic_sizes(&[n])
                        .memref(alloc_type)
                        .build()
                        .into()
                } else {
                    pg::DNewOperation::builder(context, location)
                        .dynamic_sizes(&[n])
                        .memref(alloc_type)
                        .build()
                        .into()
                };
                let op = cx.b().append(op);
                let list = result(op, 0)?;
                values.push(cx.b().memref_cast(list, ptr_type, location)?);
            }
            cx.rv_from_flat(&expr.ty, &values, span)
        }
        ExprKind::DTempFree => {
            cx.b().append(pg::dtempfree(context, location).into());
            Ok(Rv::Void)
        }
        _ => Err(cx.unsupported(span, "this expression (not BSGP)")),
    }
}

/// `compact`/`split`: `pgpu.compact`/`pgpu.split` at base 0 (flag true) or
/// the list's tracked length.
fn lower_append<'c>(
    cx: &mut LowerCx<'c, '_>,
    expr: &Expr,
    list: &Expr,
    src: &Expr,
    keep: &Expr,
    flag: &Expr,
    is_compact: bool,
) -> LowerResult<Rv<'c>> {
    let span = expr.span;
    let location = cx.loc(span);
    let context = cx.context;
    let index = MType::index(context);
    let list_value = cx.lower_expr(list)?;
    let source = cx.lower_expr(src)?;
    let k = cx.lower_scalar(keep)?;
    let list_var = match list.kind {
        ExprKind::Var(v) => Some(v),
        _ => None,
    };
    let zero = cx.b().const_index(0, location)?;
    let known = list_var.and_then(|v| cx.env.lists.get(&v).copied());
    if let Some(var) = list_var
        && (matches!(flag.kind, ExprKind::BoolLit(true)) || known == Some(ListLen::Zero))
    {
        cx.env.cleared_lists.insert(var);
    }
    let base = match (&flag.kind, known) {
        (ExprKind::BoolLit(true), _) | (_, Some(ListLen::Zero)) => zero,
        (ExprKind::BoolLit(false), Some(ListLen::Known(length))) => length,
        (_, Some(ListLen::Known(length))) => {
            let f = cx.lower_scalar(flag)?;
            cx.b().select(f, zero, length, location)?
        }
        (_, None) => {
            let name = list_var
                .and_then(|v| cx.hir.var(v))
                .map_or("the list".to_string(), |info| {
                    format!("list '{}'", info.name)
                });
            return Err(Diagnostic::error(
                E_LIST_LENGTH,
                format!("the length of {name} is not known here"),
                list.span,
            )
            .with_help(
                "append only to a list that this function allocated with dnew/dtempnew \
                 (and compacted in the same spawn), or pass `true` to clear it first",
            ));
        }
    };
    let mut length = None;
    for (memref, value) in list_value.flatten().into_iter().zip(source.flatten()) {
        let op = if is_compact {
            pg::CompactOperation::builder(context, location)
                .length(index)
                .source(value)
                .keep(k)
                .list(memref)
                .base(base)
                .build()
                .into()
        } else {
            pg::SplitOperation::builder(context, location)
                .length(index)
                .source(value)
                .side(k)
                .list(memref)
                .base(base)
                .build()
                .into()
        };
        let op = cx.b().append(op);
        length.get_or_insert(result(op, 0)?);
    }
    let length = length.ok_or_else(|| cx.internal("compact of an empty value"))?;
    if let Some(var) = list_var {
        cx.env.lists.insert(var, ListLen::Known(length));
    }
    index_to_int(cx, length, expr)
}
