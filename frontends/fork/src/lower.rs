//! Lowering of the Fork constructs (seeds/fork-to-cuda.txt, Section 3) to
//! the `pgpu` group ops, as an [`Extension`] of the common C-subset
//! lowering (docs/frontend-ir.md):
//!
//! - `start(P) s` is `pgpu.spawn synchronous` (P cast to `index`). Host
//!   variables are captured read-only; locals of the body are private, and
//!   shared data lives in globals or arrays reached through pointers.
//! - `$$`, `@` are `pgpu.group.rank`/`pgpu.group.id` cast to `int`: the
//!   group rank is renumbered at every split, in the IR as in Fork.
//! - `$`, the group-relative processor ID (Keller, Kessler, Träff,
//!   *Practical PRAM Programming*, ch. 5), is a private value of the
//!   lowering, not an op: `pgpu.group.rank` read once at the start of the
//!   `start` body, the value of `e2` inside the body of `fork(k; @ = e1;
//!   $ = e2)`, and a hidden last `int` parameter of every function that
//!   reads it (directly or through calls), which every call passes. So the
//!   subgroups of a private `if`, `?:` or loop and called functions
//!   inherit it unchanged, whatever the optimizer proves uniform.
//! - `fork(k; @ = e1; $ = e2) s` is `pgpu.group.fork %k id %e1`; the
//!   private variables the body changes leave it through
//!   `pgpu.group.merge`.
//! - `seq s` is `pgpu.seq`; `farm s` is `pgpu.farm`, whose results are the
//!   private variables the body changes.
//! - `mpadd(p, v)` etc. are `pgpu.multiprefix add|max|and|or v to p[0]`.
//! - `sync` functions carry `pgpu.synchronous`.
//! - a shared (`sh`) local is `pgpu.group.alloc` memory: a cell for a
//!   scalar (every use loads or stores it), the array itself for an array.
//!
//! `if`/`?:` and loops whose condition is private are lowered by the common
//! lowering and then turned into group splitting by `pgpu-split-private-control`.

use melior::ir::{
    Attribute, Block, Region, RegionLike, Type as MType, attribute::IntegerAttribute,
    r#type::IntegerType,
};
use pgpu_csubset::{
    Diagnostic,
    hir::{Expr, ExprKind, FnMode, FuncId, Function, Hir, MpOp, Stmt, StmtKind, Type},
    lower::{
        Extension, Key, LowerCx, LowerResult, Rv,
        builder::{V, block_ref, results},
    },
    span::Span,
};
use std::{cell::OnceCell, collections::HashSet};

/// Code of a `seq` body that assigns a private variable of the group code
/// around it (only processor 0 runs it, so the value could not leave it).
pub const E_SEQ_ASSIGNS: &str = "fork::E210";

/// Code of a host variable assigned inside `start`.
pub const E_HOST_ASSIGNED: &str = "fork::E211";

/// Code of a call, outside group code, of a function that reads `$`.
pub const E_NO_PROCESSOR_ID: &str = "fork::E212";

/// The name under which the lowering binds `$` ([`LowerCx::hidden`]).
const PROCESSOR_ID: &str = "$";

/// The Fork constructs' lowering.
#[derive(Debug, Default)]
pub struct ForkLowering {
    /// The functions that read `$`, directly or through calls (computed
    /// once per program).
    reads_processor_id: OnceCell<HashSet<FuncId>>,
}

impl ForkLowering {
    /// Whether `function` reads `$`, directly or through calls.
    fn needs_processor_id(&self, hir: &Hir, function: FuncId) -> bool {
        self.reads_processor_id
            .get_or_init(|| functions_reading_processor_id(hir))
            .contains(&function)
    }

    /// Whether `body` reads `$`, directly or through a call.
    fn body_needs_processor_id(&self, hir: &Hir, body: &Stmt) -> bool {
        let set = self
            .reads_processor_id
            .get_or_init(|| functions_reading_processor_id(hir));
        let mut reads = ReadsProcessorId {
            found: false,
            callees: set,
        };
        pgpu_csubset::hir::walk_stmt(&mut reads, body);
        reads.found
    }
}

/// Finds reads of the `$` of the code around: reads of `$` and calls of
/// functions in `callees`, outside `start` bodies (which have their own)
/// and `fork` bodies (whose `$` is the fork's `e2`).
struct ReadsProcessorId<'a> {
    found: bool,
    callees: &'a HashSet<FuncId>,
}

impl pgpu_csubset::hir::Visitor for ReadsProcessorId<'_> {
    fn visit_stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Start { count, .. } => self.visit_expr(count),
            StmtKind::Fork {
                groups,
                group_id,
                rank,
                ..
            } => {
                self.visit_expr(groups);
                self.visit_expr(group_id);
                self.visit_expr(rank);
            }
            _ => pgpu_csubset::hir::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::ProcessorId => self.found = true,
            ExprKind::Call { func, .. } if self.callees.contains(func) => self.found = true,
            _ => {}
        }
        pgpu_csubset::hir::walk_expr(self, expr);
    }
}

/// The group functions (`sync`, `async`) of `hir` that read `$`, directly
/// or through calls: the least fixed point over the call graph. Host
/// functions have no `$` (a call there of one that needs it is an error).
fn functions_reading_processor_id(hir: &Hir) -> HashSet<FuncId> {
    let mut set = HashSet::new();
    loop {
        let before = set.len();
        for function in &hir.functions {
            if set.contains(&function.id) || function.mode.is_none() {
                continue;
            }
            let mut reads = ReadsProcessorId {
                found: false,
                callees: &set,
            };
            pgpu_csubset::hir::walk_block(&mut reads, &function.body);
            if reads.found {
                set.insert(function.id);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

impl Extension for ForkLowering {
    fn shared_local<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        memref_type: MType<'c>,
        span: Span,
    ) -> LowerResult<V<'c>> {
        let location = cx.loc(span);
        let op = cx.b().op(
            "pgpu.group.alloc",
            location,
            &[],
            &[memref_type],
            &[],
            vec![],
        )?;
        pgpu_csubset::lower::builder::result(op, 0)
    }

    fn lower_stmt<'c>(&self, cx: &mut LowerCx<'c, '_>, stmt: &Stmt) -> LowerResult<()> {
        match &stmt.kind {
            StmtKind::Start { count, body } => lower_start(self, cx, count, body, stmt.span),
            StmtKind::Fork {
                groups,
                group_id,
                rank,
                body,
            } => lower_fork(cx, [groups, group_id, rank], body, stmt.span),
            StmtKind::Seq(body) => lower_seq(cx, body, stmt.span),
            StmtKind::Farm(body) => lower_farm(cx, body, stmt.span),
            StmtKind::Barrier {
                rank_reassigned: false,
            } => {
                let location = cx.loc(stmt.span);
                cx.b().op("pgpu.barrier", location, &[], &[], &[], vec![])?;
                Ok(())
            }
            _ => Err(cx.unsupported(stmt.span, "this statement (not Fork)")),
        }
    }

    fn lower_expr<'c>(&self, cx: &mut LowerCx<'c, '_>, expr: &Expr) -> LowerResult<Rv<'c>> {
        let location = cx.loc(expr.span);
        let index = MType::index(cx.context);
        match &expr.kind {
            ExprKind::ProcessorId => {
                let value = *cx.hidden.get(PROCESSOR_ID).ok_or_else(|| {
                    cx.internal("'$' has no value here (its function was not given one)")
                })?;
                Ok(Rv::Scalar(value))
            }
            ExprKind::GroupRank | ExprKind::GroupId | ExprKind::GroupSize => {
                let name = match expr.kind {
                    ExprKind::GroupRank => "pgpu.group.rank",
                    ExprKind::GroupId => "pgpu.group.id",
                    _ => "pgpu.group.size",
                };
                let value = cx.b().op1(name, location, &[], index, &[])?;
                let ty = cx.mlir_type(&expr.ty, expr.span)?;
                Ok(Rv::Scalar(cx.b().from_index(value, ty, location)?))
            }
            ExprKind::MultiPrefix { op, ptr, value } => {
                let memref = cx
                    .lower_expr(ptr)?
                    .scalar()
                    .ok_or_else(|| cx.unsupported(ptr.span, "a multiprefix on a struct"))?;
                let v = cx.lower_scalar(value)?;
                let zero = cx.b().const_index(0, location)?;
                let unsigned = expr.ty.is_unsigned();
                let kind = match op {
                    MpOp::Add => 0,
                    MpOp::Max if unsigned => 5,
                    MpOp::Max => 3,
                    MpOp::And => 6,
                    MpOp::Or => 7,
                };
                let kind: Attribute =
                    IntegerAttribute::new(IntegerType::new(cx.context, 32).into(), kind).into();
                let ty = cx.mlir_type(&expr.ty, expr.span)?;
                let out = cx.b().op1(
                    "pgpu.multiprefix",
                    location,
                    &[v, memref, zero],
                    ty,
                    &[("kind", kind)],
                )?;
                Ok(Rv::Scalar(out))
            }
            _ => Err(cx.unsupported(expr.span, "this expression (not Fork)")),
        }
    }

    fn hidden_parameters(&self, hir: &Hir, function: &Function) -> Vec<(&'static str, Type)> {
        if self.needs_processor_id(hir, function.id) {
            vec![(PROCESSOR_ID, Type::Int)]
        } else {
            Vec::new()
        }
    }

    fn hidden_arguments<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        callee: &Function,
        span: Span,
    ) -> LowerResult<Vec<V<'c>>> {
        if !self.needs_processor_id(cx.hir, callee.id) {
            return Ok(Vec::new());
        }
        match cx.hidden.get(PROCESSOR_ID) {
            Some(value) => Ok(vec![*value]),
            None => Err(Diagnostic::error(
                E_NO_PROCESSOR_ID,
                format!(
                    "'{}' reads '$' (directly or through calls), but it is called outside group code, where there is no processor ID",
                    callee.name
                ),
                span,
            )
            .with_help(
                "call it from a 'start' body or a 'sync' or 'async' function (host functions have no '$')",
            )),
        }
    }

    fn function_attributes(&self, _hir: &Hir, function: &Function) -> Vec<&'static str> {
        match function.mode {
            Some(FnMode::Sync) => vec!["pgpu.synchronous"],
            // The dialect allows a barrier outside a spawn only in functions
            // marked `pgpu.synchronous` or `pgpu.spmd_inline`: an `async`
            // function with a barrier is SPMD code inlined into its callers.
            // The same for an `async` function that reads the group
            // structure (`$`, `@`, `groupsize()`), read-only in async code.
            Some(FnMode::Async)
                if function.body.stmts.iter().any(has_barrier) || reads_group(&function.body) =>
            {
                vec!["pgpu.spmd_inline"]
            }
            _ => Vec::new(),
        }
    }
}

/// Whether `body` reads the group structure: `$$`, `@` or `groupsize()`
/// (`$` is a value the function receives).
fn reads_group(body: &pgpu_csubset::hir::Block) -> bool {
    struct Reads(bool);
    impl pgpu_csubset::hir::Visitor for Reads {
        fn visit_expr(&mut self, expr: &Expr) {
            if matches!(
                expr.kind,
                ExprKind::GroupRank | ExprKind::GroupId | ExprKind::GroupSize
            ) {
                self.0 = true;
            }
            pgpu_csubset::hir::walk_expr(self, expr);
        }
    }
    let mut reads = Reads(false);
    pgpu_csubset::hir::walk_block(&mut reads, body);
    reads.0
}

/// Whether `stmt` contains a `barrier` statement.
fn has_barrier(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::Barrier { .. } => true,
        StmtKind::Block(b)
        | StmtKind::Spawn { body: b, .. }
        | StmtKind::Require { body: b, .. } => b.stmts.iter().any(has_barrier),
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => has_barrier(then_branch) || else_branch.as_deref().is_some_and(has_barrier),
        StmtKind::While { body, .. }
        | StmtKind::DoWhile { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::Start { body, .. }
        | StmtKind::Fork { body, .. }
        | StmtKind::Seq(body)
        | StmtKind::Farm(body) => has_barrier(body),
        StmtKind::Par { branches } => branches.iter().any(has_barrier),
        _ => false,
    }
}

/// What `$` is in a region the Fork lowering makes.
#[derive(Clone, Copy)]
enum ProcessorId<'c> {
    /// The value around it (`seq`, `farm`).
    Inherited,
    /// This value (`fork`'s `$ = e2`).
    Value(V<'c>),
    /// The group rank at the region's start, read there (`start`; the
    /// span is the construct's).
    Rank(Span),
}

/// Lowers `body` into a fresh block; returns the block and the keys whose
/// values the body changed (the environment is restored).
fn lower_region<'c>(
    cx: &mut LowerCx<'c, '_>,
    body: &Stmt,
    private_scope: bool,
    processor_id: ProcessorId<'c>,
) -> LowerResult<(Block<'c>, Vec<Key>, pgpu_csubset::lower::env::Env<'c>)> {
    let before = cx.env.clone();
    let block = Block::new(&[]);
    let outer_scope = if private_scope {
        cx.alloca_scope.replace(block_ref(&block))
    } else {
        cx.alloca_scope
    };
    let outer_id = cx.hidden.get(PROCESSOR_ID).copied();
    let lowered = cx.at_block(block_ref(&block), |cx| {
        match processor_id {
            ProcessorId::Inherited => {}
            ProcessorId::Value(value) => {
                cx.hidden.insert(PROCESSOR_ID, value);
            }
            ProcessorId::Rank(span) => {
                let location = cx.loc(span);
                let index = MType::index(cx.context);
                let rank = cx.b().op1("pgpu.group.rank", location, &[], index, &[])?;
                let int = cx.mlir_type(&Type::Int, span)?;
                let value = cx.b().from_index(rank, int, location)?;
                cx.hidden.insert(PROCESSOR_ID, value);
            }
        }
        cx.lower_scoped(|cx| cx.lower_stmt(body))
    });
    match outer_id {
        Some(value) => cx.hidden.insert(PROCESSOR_ID, value),
        None => cx.hidden.remove(PROCESSOR_ID),
    };
    cx.alloca_scope = outer_scope;
    let after = std::mem::replace(&mut cx.env, before.clone());
    lowered?;
    let keys = after.changed_since(&before);
    Ok((block, keys, after))
}

fn key_name(cx: &LowerCx<'_, '_>, key: Key) -> String {
    match key {
        Key::Var(var) => cx
            .hir
            .var(var)
            .map_or_else(|| "a variable".into(), |v| format!("'{}'", v.name)),
        _ => "control flow (break/continue/return)".into(),
    }
}

fn lower_start<'c>(
    fork: &ForkLowering,
    cx: &mut LowerCx<'c, '_>,
    count: &Expr,
    body: &Stmt,
    span: Span,
) -> LowerResult<()> {
    let location = cx.loc(span);
    let n = cx.lower_index(count)?;
    // `$` is the rank at the start (0 .. P-1), read once at the top of the
    // body (where the body needs it): subgroups and calls inherit it.
    let processor_id = if fork.body_needs_processor_id(cx.hir, body) {
        ProcessorId::Rank(span)
    } else {
        ProcessorId::Inherited
    };
    let (block, keys, _) = lower_region(cx, body, true, processor_id)?;
    if let Some(&key) = keys.first() {
        return Err(Diagnostic::error(
            E_HOST_ASSIGNED,
            format!(
                "{} is a host variable and cannot be assigned inside 'start'",
                key_name(cx, key)
            ),
            span,
        )
        .with_help("declare it as a global (shared by the group) or inside the start body"));
    }
    let end = cx.loc(Span::new(
        span.end.saturating_sub(1) as usize,
        span.end as usize,
    ));
    cx.b()
        .at(block_ref(&block))
        .op("pgpu.yield", end, &[], &[], &[], vec![])?;
    let region = Region::new();
    region.append_block(block);
    let unit = Attribute::unit(cx.context);
    cx.b().op(
        "pgpu.spawn",
        location,
        &[n],
        &[],
        &[("synchronous", unit)],
        vec![region],
    )?;
    Ok(())
}

fn lower_fork<'c>(
    cx: &mut LowerCx<'c, '_>,
    [groups, id, rank]: [&Expr; 3],
    body: &Stmt,
    span: Span,
) -> LowerResult<()> {
    let location = cx.loc(span);
    let k = cx.lower_index(groups)?;
    let id = cx.lower_index(id)?;
    // `$ = e2`: the body's `$` (the group rank `$$` is renumbered by the
    // fork in the parent's order).
    let rank = cx.lower_scalar(rank)?;
    // Members whose `@` is not in 0..k-1 skip the body: the private
    // variables it changes keep their values in them.
    let inside = cx.b().cmpi("ult", id, k, location)?;
    region_with_results(
        cx,
        body,
        location,
        "pgpu.group.merge",
        "pgpu.group.fork",
        &[k, id],
        ProcessorId::Value(rank),
        Some(inside),
    )
}

fn lower_seq<'c>(cx: &mut LowerCx<'c, '_>, body: &Stmt, span: Span) -> LowerResult<()> {
    let location = cx.loc(span);
    let (block, keys, _) = lower_region(cx, body, false, ProcessorId::Inherited)?;
    if let Some(&key) = keys.first() {
        return Err(Diagnostic::error(
            E_SEQ_ASSIGNS,
            format!(
                "'seq' assigns {}, a private variable of the group code around it",
                key_name(cx, key)
            ),
            span,
        )
        .with_help(
            "only group rank 0 runs a seq body: pass results through a shared (global) variable",
        ));
    }
    cx.b()
        .at(block_ref(&block))
        .op("pgpu.yield", location, &[], &[], &[], vec![])?;
    let region = Region::new();
    region.append_block(block);
    cx.b()
        .op("pgpu.seq", location, &[], &[], &[], vec![region])?;
    Ok(())
}

fn lower_farm<'c>(cx: &mut LowerCx<'c, '_>, body: &Stmt, span: Span) -> LowerResult<()> {
    let location = cx.loc(span);
    region_with_results(
        cx,
        body,
        location,
        "pgpu.yield",
        "pgpu.farm",
        &[],
        ProcessorId::Inherited,
        None,
    )
}

/// Lowers `body` into the one region of a new `op` (with `operands`) whose
/// results are the private variables the body changes, passed out through
/// `terminator`, with `$` as `processor_id` says; rebinds those variables
/// to the results, or, where `ran_body` is false, to their values before.
#[allow(clippy::too_many_arguments)]
fn region_with_results<'c>(
    cx: &mut LowerCx<'c, '_>,
    body: &Stmt,
    location: melior::ir::Location<'c>,
    terminator: &str,
    op: &str,
    operands: &[V<'c>],
    processor_id: ProcessorId<'c>,
    ran_body: Option<V<'c>>,
) -> LowerResult<()> {
    let (block, keys, after) = lower_region(cx, body, false, processor_id)?;
    let types = cx.key_types(&keys)?;
    // Values before the op, for members that skip the body (a variable
    // without one stays the op's result).
    let previous: Vec<Option<V<'c>>> = keys
        .iter()
        .map(|key| {
            cx.key_values(std::slice::from_ref(key))
                .ok()
                .and_then(|v| v.first().copied())
        })
        .collect();
    let before = std::mem::replace(&mut cx.env, after);
    let values = cx.key_values(&keys)?;
    cx.env = before;
    cx.b()
        .at(block_ref(&block))
        .op(terminator, location, &values, &[], &[], vec![])?;
    let region = Region::new();
    region.append_block(block);
    let op = cx
        .b()
        .op(op, location, operands, &types, &[], vec![region])?;
    let mut out = results(op)?;
    if let Some(ran_body) = ran_body {
        for (value, previous) in out.iter_mut().zip(&previous) {
            if let Some(previous) = previous {
                *value = cx.b().select(ran_body, *value, *previous, location)?;
            }
        }
    }
    cx.rebind(&keys, &out)?;
    Ok(())
}
