//! Structured control flow with SSA locals.
//!
//! [`LowerCx::build_if`] lowers both branches against a copy of the
//! environment and makes every variable a branch changed a result of the
//! `scf.if`. [`LowerCx::build_while`] carries a given set of keys (found by
//! [`assigned_vars`] before the loop is built, since block arguments come
//! first) through `scf.while`. `break`, `continue` and early `return` are
//! `i1` flags in the environment ([`Key::Broke`], [`Key::Continued`],
//! [`Key::Returned`]); [`exits`] tells which flags a statement may set so
//! that the statements after it can be guarded.

use super::{
    LowerCx, LowerResult,
    builder::{V, block_ref, region_of},
    env::{Key, Rv},
};
use crate::{
    hir::{Block as HBlock, Expr, ExprKind, Init, Stmt, StmtKind, VarId},
    span::Span,
};
use melior::ir::{Block, BlockLike, Type as MType, ValueLike};
use std::collections::BTreeSet;

/// Which flags a statement may set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exits {
    /// `return` (anywhere below).
    pub ret: bool,
    /// `break` of the enclosing loop.
    pub brk: bool,
    /// `continue` of the enclosing loop.
    pub cont: bool,
}

impl Exits {
    fn or(self, other: Exits) -> Exits {
        Exits {
            ret: self.ret || other.ret,
            brk: self.brk || other.brk,
            cont: self.cont || other.cont,
        }
    }

    /// Whether any flag may be set.
    pub fn any(self) -> bool {
        self.ret || self.brk || self.cont
    }
}

/// The flags `stmt` may set (`break`/`continue` of nested loops do not
/// count; spawn bodies are not searched).
pub fn exits(stmt: &Stmt) -> Exits {
    match &stmt.kind {
        StmtKind::Return(_) => Exits {
            ret: true,
            ..Exits::default()
        },
        StmtKind::Break => Exits {
            brk: true,
            ..Exits::default()
        },
        StmtKind::Continue => Exits {
            cont: true,
            ..Exits::default()
        },
        StmtKind::Block(block) => exits_of_block(block),
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => exits(then_branch).or(else_branch.as_deref().map(exits).unwrap_or_default()),
        StmtKind::While { body, .. }
        | StmtKind::DoWhile { body, .. }
        | StmtKind::For { body, .. } => Exits {
            ret: exits(body).ret,
            ..Exits::default()
        },
        StmtKind::Require { body, .. } => exits_of_block(body),
        StmtKind::Par { branches } => branches
            .iter()
            .fold(Exits::default(), |acc, s| acc.or(exits(s))),
        StmtKind::Seq(body) | StmtKind::Farm(body) => exits(body),
        _ => Exits::default(),
    }
}

/// [`exits`] of every statement of a block.
pub fn exits_of_block(block: &HBlock) -> Exits {
    block
        .stmts
        .iter()
        .fold(Exits::default(), |acc, s| acc.or(exits(s)))
}

/// Variables that `stmts` and `exprs` assign (a superset is fine: the
/// lowering only carries those bound before the construct).
pub fn assigned_vars<'a>(
    stmts: impl IntoIterator<Item = &'a Stmt>,
    exprs: impl IntoIterator<Item = &'a Expr>,
) -> BTreeSet<VarId> {
    let mut out = BTreeSet::new();
    for stmt in stmts {
        stmt_assigns(stmt, &mut out);
    }
    for expr in exprs {
        expr_assigns(expr, &mut out);
    }
    out
}

fn block_assigns(block: &HBlock, out: &mut BTreeSet<VarId>) {
    block.stmts.iter().for_each(|s| stmt_assigns(s, out));
}

fn init_assigns(init: &Init, out: &mut BTreeSet<VarId>) {
    match init {
        Init::Expr(e) => expr_assigns(e, out),
        Init::List(items) => items.iter().for_each(|i| init_assigns(i, out)),
    }
}

fn stmt_assigns(stmt: &Stmt, out: &mut BTreeSet<VarId>) {
    match &stmt.kind {
        StmtKind::Expr(e) => expr_assigns(e, out),
        StmtKind::Decl { var, init } => {
            out.insert(*var);
            if let Some(init) = init {
                init_assigns(init, out);
            }
        }
        StmtKind::Block(b) => block_assigns(b, out),
        StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            expr_assigns(cond, out);
            stmt_assigns(then_branch, out);
            if let Some(e) = else_branch {
                stmt_assigns(e, out);
            }
        }
        StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
            expr_assigns(cond, out);
            stmt_assigns(body, out);
        }
        StmtKind::For {
            init,
            cond,
            step,
            body,
            ..
        } => {
            init.iter().for_each(|s| stmt_assigns(s, out));
            cond.iter()
                .chain(step.iter())
                .for_each(|e| expr_assigns(e, out));
            stmt_assigns(body, out);
        }
        StmtKind::Return(Some(e)) => expr_assigns(e, out),
        StmtKind::Spawn { count, body } => {
            expr_assigns(count, out);
            block_assigns(body, out);
        }
        StmtKind::Require { body, outputs } => {
            block_assigns(body, out);
            out.extend(outputs.iter().copied());
        }
        StmtKind::Par { branches } => branches.iter().for_each(|s| stmt_assigns(s, out)),
        StmtKind::Start { count: e, body }
        | StmtKind::Fork {
            groups: e, body, ..
        } => {
            expr_assigns(e, out);
            stmt_assigns(body, out);
        }
        StmtKind::Seq(body) | StmtKind::Farm(body) => stmt_assigns(body, out),
        StmtKind::Return(None)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Empty
        | StmtKind::Barrier { .. } => {}
    }
}

/// The span of the first synchronizing construct in `stmt` (a barrier, a
/// collective, a rank-changing `thread.*` op, `require`, `par`, or a call
/// of an SPMD-inline function): one that every thread must reach.
pub fn first_sync(hir: &crate::hir::Hir, stmt: &Stmt) -> Option<Span> {
    match &stmt.kind {
        StmtKind::Barrier { .. } | StmtKind::Require { .. } | StmtKind::Par { .. } => {
            Some(stmt.span)
        }
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => first_sync_expr(hir, e),
        StmtKind::Decl {
            init: Some(Init::Expr(e)),
            ..
        } => first_sync_expr(hir, e),
        StmtKind::Block(b) => b.stmts.iter().find_map(|s| first_sync(hir, s)),
        StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } => first_sync_expr(hir, cond)
            .or_else(|| first_sync(hir, then_branch))
            .or_else(|| else_branch.as_deref().and_then(|e| first_sync(hir, e))),
        StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
            first_sync_expr(hir, cond).or_else(|| first_sync(hir, body))
        }
        StmtKind::For { body, .. } => first_sync(hir, body),
        _ => None,
    }
}

/// Whether `expr` itself (not a subexpression) ends a superstep: a
/// collective, a thread-set operation, or a call of an `inline` function
/// with barriers.
pub(crate) fn is_sync_expr(hir: &crate::hir::Hir, expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Reduce { .. }
        | ExprKind::Scan { .. }
        | ExprKind::Compact { .. }
        | ExprKind::Split { .. }
        | ExprKind::SortIdx(_)
        | ExprKind::ThreadFork(_)
        | ExprKind::ThreadKill(_)
        | ExprKind::ThreadSortBy(_)
        | ExprKind::ThreadSplit(_) => true,
        ExprKind::Call { func, .. } => hir.function(*func).is_some_and(|f| f.spmd_inline),
        _ => false,
    }
}

/// Whether a call of `function` may change the threads' ranks
/// (`thread.fork/kill/sortby/split`, `barrier(RANK_REASSIGNED)`, in it or
/// in the functions it calls).
pub(crate) fn reassigns_ranks(hir: &crate::hir::Hir, function: crate::hir::FuncId) -> bool {
    struct Finder<'h> {
        hir: &'h crate::hir::Hir,
        seen: std::collections::HashSet<crate::hir::FuncId>,
        found: bool,
    }
    impl crate::hir::Visitor for Finder<'_> {
        fn visit_stmt(&mut self, s: &crate::hir::Stmt) {
            if matches!(
                s.kind,
                StmtKind::Barrier {
                    rank_reassigned: true
                }
            ) {
                self.found = true;
            }
            crate::hir::walk_stmt(self, s);
        }
        fn visit_expr(&mut self, e: &Expr) {
            match &e.kind {
                ExprKind::ThreadFork(_)
                | ExprKind::ThreadKill(_)
                | ExprKind::ThreadSortBy(_)
                | ExprKind::ThreadSplit(_) => self.found = true,
                ExprKind::Call { func, .. } => {
                    if self.seen.insert(*func)
                        && let Some(callee) = self.hir.function(*func)
                    {
                        crate::hir::walk_block(self, &callee.body);
                    }
                }
                _ => {}
            }
            crate::hir::walk_expr(self, e);
        }
    }
    let mut finder = Finder {
        hir,
        seen: std::collections::HashSet::from([function]),
        found: false,
    };
    if let Some(callee) = hir.function(function) {
        crate::hir::walk_block(&mut finder, &callee.body);
    }
    finder.found
}

fn first_sync_expr(hir: &crate::hir::Hir, expr: &Expr) -> Option<Span> {
    if is_sync_expr(hir, expr) {
        return Some(expr.span);
    }
    let mut found = None;
    for_each_child(expr, |child| {
        if found.is_none() {
            found = first_sync_expr(hir, child);
        }
    });
    found
}

/// The local variable an lvalue expression designates storage of, if any.
pub fn lvalue_var(expr: &Expr) -> Option<VarId> {
    match &expr.kind {
        ExprKind::Var(v) => Some(*v),
        ExprKind::Field { base, .. } => lvalue_var(base),
        _ => None,
    }
}

fn expr_assigns(expr: &Expr, out: &mut BTreeSet<VarId>) {
    match &expr.kind {
        ExprKind::Assign { target, value } | ExprKind::CompoundAssign { target, value, .. } => {
            out.extend(lvalue_var(target));
            expr_assigns(target, out);
            expr_assigns(value, out);
        }
        ExprKind::IncDec { target, .. } => {
            out.extend(lvalue_var(target));
            expr_assigns(target, out);
        }
        ExprKind::ThreadPut { var, rank, value } => {
            out.insert(*var);
            expr_assigns(rank, out);
            expr_assigns(value, out);
        }
        ExprKind::Scan { var, .. } => {
            out.insert(*var);
        }
        _ => for_each_child(expr, |child| expr_assigns(child, out)),
    }
}

/// Calls `f` on every direct subexpression of `expr`.
pub fn for_each_child<'a>(expr: &'a Expr, mut f: impl FnMut(&'a Expr)) {
    match &expr.kind {
        ExprKind::Unary { operand: a, .. }
        | ExprKind::Cast { expr: a, .. }
        | ExprKind::Deref(a)
        | ExprKind::AddrOf(a)
        | ExprKind::Field { base: a, .. }
        | ExprKind::ThreadFork(a)
        | ExprKind::ThreadKill(a)
        | ExprKind::ThreadSortBy(a)
        | ExprKind::ThreadSplit(a)
        | ExprKind::ThreadGet { rank: a, .. }
        | ExprKind::Reduce { value: a, .. }
        | ExprKind::SortIdx(a)
        | ExprKind::DNew { count: a, .. }
        | ExprKind::IncDec { target: a, .. } => f(a),
        ExprKind::Binary { lhs: a, rhs: b, .. }
        | ExprKind::PtrAdd {
            ptr: a, offset: b, ..
        }
        | ExprKind::PtrDiff { lhs: a, rhs: b }
        | ExprKind::Assign {
            target: a,
            value: b,
        }
        | ExprKind::CompoundAssign {
            target: a,
            value: b,
            ..
        }
        | ExprKind::Index { base: a, index: b }
        | ExprKind::Comma { lhs: a, rhs: b }
        | ExprKind::ThreadPut {
            rank: a, value: b, ..
        }
        | ExprKind::MultiPrefix {
            ptr: a, value: b, ..
        } => {
            f(a);
            f(b);
        }
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            f(cond);
            f(then_expr);
            f(else_expr);
        }
        ExprKind::Compact {
            list,
            src,
            keep: c,
            flag,
        }
        | ExprKind::Split {
            list,
            src,
            side: c,
            flag,
        } => {
            f(list);
            f(src);
            f(c);
            f(flag);
        }
        ExprKind::Call { args, .. } => args.iter().for_each(f),
        ExprKind::Builtin(builtin) => match builtin {
            crate::hir::Builtin::Printf { args, .. } => args.iter().for_each(f),
            crate::hir::Builtin::Argi { index, default } => {
                f(index);
                if let Some(d) = default {
                    f(d);
                }
            }
            crate::hir::Builtin::RandSeed(a) => f(a),
            crate::hir::Builtin::Wtime | crate::hir::Builtin::RandU32 => {}
            crate::hir::Builtin::Math { args, .. } => args.iter().for_each(f),
        },
        _ => {}
    }
}

impl<'c> LowerCx<'c, '_> {
    /// The MLIR types of the leaves of the values bound to `keys`.
    pub fn key_types(&self, keys: &[Key]) -> LowerResult<Vec<MType<'c>>> {
        let mut types = Vec::new();
        for key in keys {
            let rv = self
                .env
                .get(*key)
                .ok_or_else(|| self.internal(format!("{key:?} is not bound")))?;
            types.extend(rv.flatten().iter().map(|v| v.r#type()));
        }
        Ok(types)
    }

    /// The leaves of the values bound to `keys`.
    pub fn key_values(&self, keys: &[Key]) -> LowerResult<Vec<V<'c>>> {
        let mut values = Vec::new();
        for key in keys {
            let rv = self
                .env
                .get(*key)
                .ok_or_else(|| self.internal(format!("{key:?} is not bound")))?;
            values.extend(rv.flatten());
        }
        Ok(values)
    }

    /// Rebinds `keys` (shaped as now) to consecutive `values`.
    pub fn rebind(&mut self, keys: &[Key], values: &[V<'c>]) -> LowerResult<()> {
        let mut iter = values.iter().copied();
        for key in keys {
            let shape = self
                .env
                .get(*key)
                .ok_or_else(|| self.internal(format!("{key:?} is not bound")))?;
            let rv = shape
                .rebuild(&mut iter)
                .ok_or_else(|| self.internal("too few values to rebind"))?;
            self.env.set(*key, rv);
        }
        Ok(())
    }

    /// `scf.if %cond` with the given branches. Each branch returns the
    /// values of `extra` (the `scf.if`'s first results); every variable
    /// either branch changed becomes a further result and is rebound.
    pub fn build_if(
        &mut self,
        cond: V<'c>,
        span: Span,
        extra: &[MType<'c>],
        then: impl FnOnce(&mut Self) -> LowerResult<Vec<V<'c>>>,
        otherwise: impl FnOnce(&mut Self) -> LowerResult<Vec<V<'c>>>,
    ) -> LowerResult<Vec<V<'c>>> {
        let location = self.loc(span);
        let before = self.env.clone();
        let then_block = Block::new(&[]);
        let then_extra = self.at_block(block_ref(&then_block), then)?;
        let then_env = std::mem::replace(&mut self.env, before.clone());
        let else_block = Block::new(&[]);
        let else_extra = self.at_block(block_ref(&else_block), otherwise)?;
        let else_env = std::mem::replace(&mut self.env, before.clone());

        let mut keys: Vec<Key> = then_env.changed_since(&before);
        keys.extend(else_env.changed_since(&before));
        keys.sort();
        keys.dedup();

        let mut types = extra.to_vec();
        types.extend(self.key_types(&keys)?);
        let mut then_values = then_extra;
        let mut else_values = else_extra;
        self.env = then_env.clone();
        then_values.extend(self.key_values(&keys)?);
        self.env = else_env.clone();
        else_values.extend(self.key_values(&keys)?);
        self.env = before;
        self.env.lists.retain(|var, len| {
            then_env.lists.get(var) == Some(len) && else_env.lists.get(var) == Some(len)
        });

        let b = self.b();
        let else_empty = else_block.first_operation().is_none();
        b.at(block_ref(&then_block))
            .scf_yield(&then_values, location)?;
        b.at(block_ref(&else_block))
            .scf_yield(&else_values, location)?;
        let else_region = if else_empty && types.is_empty() {
            melior::ir::Region::new()
        } else {
            region_of(else_block)
        };
        let op = b.op(
            "scf.if",
            location,
            &[cond],
            &types,
            &[],
            vec![region_of(then_block), else_region],
        )?;
        let results = super::builder::results(op)?;
        let (extra_results, threaded) = results.split_at(extra.len());
        self.rebind(&keys, threaded)?;
        Ok(extra_results.to_vec())
    }

    /// `scf.while` carrying `keys`. `before` lowers the condition (it may
    /// change carried variables) and returns it; `after` lowers the body.
    pub fn build_while(
        &mut self,
        span: Span,
        keys: &[Key],
        before: impl FnOnce(&mut Self) -> LowerResult<V<'c>>,
        after: impl FnOnce(&mut Self) -> LowerResult<()>,
    ) -> LowerResult<()> {
        let location = self.loc(span);
        let outer = self.env.clone();
        let types = self.key_types(keys)?;
        let init = self.key_values(keys)?;
        let args: Vec<_> = types.iter().map(|t| (*t, location)).collect();

        let before_block = Block::new(&args);
        let before_args = block_args(&before_block)?;
        self.rebind(keys, &before_args)?;
        let entry = self.env.clone();
        let cond = self.at_block(block_ref(&before_block), before)?;
        self.check_carried(&entry, keys)?;
        let forwarded = self.key_values(keys)?;
        self.b().at(block_ref(&before_block)).op(
            "scf.condition",
            location,
            &[&[cond], &forwarded[..]].concat(),
            &[],
            &[],
            vec![],
        )?;

        let after_block = Block::new(&args);
        let after_args = block_args(&after_block)?;
        self.rebind(keys, &after_args)?;
        let entry = self.env.clone();
        self.at_block(block_ref(&after_block), after)?;
        self.check_carried(&entry, keys)?;
        let yielded = self.key_values(keys)?;
        self.b()
            .at(block_ref(&after_block))
            .scf_yield(&yielded, location)?;
        let body_lists = self.env.lists.clone();

        self.env = outer;
        self.env
            .lists
            .retain(|var, len| body_lists.get(var) == Some(len));
        let op = self.b().op(
            "scf.while",
            location,
            &init,
            &types,
            &[],
            vec![region_of(before_block), region_of(after_block)],
        )?;
        let results = super::builder::results(op)?;
        self.rebind(keys, &results)
    }

    /// Fails if a variable bound at `entry` of a loop region changed but is
    /// not carried by the loop: the assignment analysis missed it, and the
    /// new value would be lost.
    pub fn check_carried(&self, entry: &super::env::Env<'c>, keys: &[Key]) -> LowerResult<()> {
        let lost: Vec<Key> = self
            .env
            .changed_since(entry)
            .into_iter()
            .filter(|k| matches!(k, Key::Var(_)) && !keys.contains(k))
            .collect();
        match lost.first() {
            None => Ok(()),
            Some(key) => Err(self.internal(format!(
                "the loop does not carry {key:?}, which its body assigns"
            ))),
        }
    }

    /// `!(flag1 || flag2 ...)` over the flags of `exits` that are bound;
    /// `None` when none is.
    pub fn exit_guard(
        &mut self,
        exits: super::control::Exits,
        span: Span,
    ) -> LowerResult<Option<V<'c>>> {
        let location = self.loc(span);
        let mut any: Option<V<'c>> = None;
        for (wanted, key) in [
            (exits.ret, Key::Returned),
            (exits.brk, Key::Broke),
            (exits.cont, Key::Continued),
        ] {
            if !wanted {
                continue;
            }
            let Some(Rv::Scalar(flag)) = self.env.get(key).cloned() else {
                continue;
            };
            any = Some(match any {
                None => flag,
                Some(acc) => self.b().binary("arith.ori", acc, flag, location)?,
            });
        }
        match any {
            None => Ok(None),
            Some(flag) => Ok(Some(self.b().not(flag, location)?)),
        }
    }
}

/// The arguments of a fresh block.
pub(super) fn block_args<'c>(block: &Block<'c>) -> LowerResult<Vec<V<'c>>> {
    (0..block.argument_count())
        .map(|i| {
            block
                .argument(i)
                .map(|a| super::builder::detach(a.into()))
                .map_err(|e| {
                    crate::diag::Diagnostic::error(
                        super::E_INTERNAL,
                        e.to_string(),
                        Span::default(),
                    )
                })
        })
        .collect()
}
