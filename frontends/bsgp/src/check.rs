//! BSGP semantic checks on the typed HIR (seeds/bsgp.txt, Section 5):
//!
//! - GPU code (a spawn body outside `require`, an `inline` SPMD function, or
//!   a function called from a spawn) never writes a host variable: a
//!   variable declared outside the spawn, or a global (`bsgp::E101`);
//! - barriers, collectives, rank-changing `thread.*` operations and calls of
//!   functions containing them are not under control flow (`if`, loops,
//!   `?:`, `&&`, `||`) in SPMD code (`bsgp::E102`);
//! - `thread.get(r, v)` reads a spawn-local `v` that was assigned before the
//!   most recent preceding barrier (`bsgp::E103`); the branches of a `par`
//!   run side by side, so each starts from the barriers before the `par`;
//! - `require` only inside a spawn or an `inline` function (`bsgp::E104`);
//!   `thread.*`, barriers and collectives only in spawn code or `inline`
//!   functions, never in host code (`bsgp::E105`); no spawn inside a spawn
//!   (`bsgp::E106`); SPMD functions are called only from SPMD code
//!   (`bsgp::E107`); no `return` inside a spawn (`bsgp::E108`).
//!
//! One walk per function in program order; the "assigned before the last
//! barrier" test keeps, per variable, the barrier epoch of its first
//! assignment, so the whole check is linear in the program size.

use pgpu_csubset::Diagnostic;
use pgpu_csubset::hir::*;
use std::collections::{HashMap, HashSet};

/// Diagnostic codes of the BSGP checks.
pub mod codes {
    /// GPU code writes a host variable.
    pub const HOST_WRITE: &str = "bsgp::E101";
    /// A barrier or collective under control flow.
    pub const BARRIER_IN_CONTROL_FLOW: &str = "bsgp::E102";
    /// `thread.get` of a variable not live across a barrier.
    pub const GET_NOT_LIVE: &str = "bsgp::E103";
    /// `require` outside a spawn.
    pub const REQUIRE_OUTSIDE_SPAWN: &str = "bsgp::E104";
    /// `thread.*`, barrier or collective outside a spawn.
    pub const SPMD_OUTSIDE_SPAWN: &str = "bsgp::E105";
    /// `spawn` inside a spawn.
    pub const NESTED_SPAWN: &str = "bsgp::E106";
    /// An SPMD function called from host code.
    pub const SPMD_CALL_FROM_HOST: &str = "bsgp::E107";
    /// `return` inside a spawn.
    pub const RETURN_IN_SPAWN: &str = "bsgp::E108";
}

/// Run every BSGP check on a checked program (it may contain `Error` nodes;
/// they are skipped).
pub fn check(program: &Hir) -> Vec<Diagnostic> {
    let device = device_functions(program);
    let mut c = Checker {
        hir: program,
        diags: Vec::new(),
    };
    for f in &program.functions {
        let mut cx = Cx {
            in_spawn: false,
            in_require: false,
            ctrl: 0,
            spmd_fn: f.is_inline,
            device_fn: device.get(f.id.0 as usize).copied().unwrap_or(false),
            spawn_vars: HashSet::new(),
            epoch: 0,
            first_assign: HashMap::new(),
        };
        // Parameters and locals of an inline SPMD function are per-thread
        // and assigned on entry (before any barrier of the function).
        if f.is_inline {
            for p in &f.params {
                cx.spawn_vars.insert(*p);
                cx.first_assign.insert(*p, 0);
            }
        }
        c.block(&mut cx, &f.body);
    }
    c.diags
}

/// Functions whose calls must be inlined into SPMD code by the lowering
/// (`pgpu.spmd_inline`): those containing barriers or collectives, directly
/// or through calls.
pub fn spmd_inline_functions(program: &Hir) -> Vec<FuncId> {
    program
        .functions
        .iter()
        .filter(|f| f.spmd_inline)
        .map(|f| f.id)
        .collect()
}

/// Parse, check (C subset and BSGP) `text` as BSGP. The HIR is `Some` only
/// when there is no error.
pub fn check_source(path: &str, text: &str) -> pgpu_csubset::CheckResult {
    let _ = path;
    pgpu_csubset::frontend::check_source(text, Language::Bsgp, check)
}

/// Functions called (transitively) from spawn bodies outside `require`.
fn device_functions(hir: &Hir) -> Vec<bool> {
    struct Calls {
        in_spawn: u32,
        in_require: u32,
        gpu: Vec<FuncId>,
        plain: Vec<FuncId>,
    }
    impl Visitor for Calls {
        fn visit_stmt(&mut self, s: &Stmt) {
            match &s.kind {
                StmtKind::Spawn { count, body } => {
                    self.visit_expr(count);
                    self.in_spawn += 1;
                    let saved = std::mem::replace(&mut self.in_require, 0);
                    walk_block(self, body);
                    self.in_require = saved;
                    self.in_spawn -= 1;
                }
                StmtKind::Require { body, .. } => {
                    self.in_require += 1;
                    walk_block(self, body);
                    self.in_require -= 1;
                }
                _ => walk_stmt(self, s),
            }
        }
        fn visit_expr(&mut self, e: &Expr) {
            if let ExprKind::Call { func, .. } = &e.kind
                && self.in_require == 0
            {
                if self.in_spawn > 0 {
                    self.gpu.push(*func);
                } else {
                    self.plain.push(*func);
                }
            }
            walk_expr(self, e);
        }
    }
    let n = hir.functions.len();
    let mut edges: Vec<Vec<FuncId>> = Vec::with_capacity(n);
    let mut work = Vec::new();
    for f in &hir.functions {
        let mut c = Calls {
            in_spawn: 0,
            in_require: 0,
            gpu: Vec::new(),
            plain: Vec::new(),
        };
        walk_block(&mut c, &f.body);
        work.extend(c.gpu);
        edges.push(c.plain);
    }
    let mut device = vec![false; n];
    while let Some(f) = work.pop() {
        let i = f.0 as usize;
        if i < n && !device[i] {
            device[i] = true;
            work.extend(edges[i].iter().copied());
        }
    }
    device
}

struct Checker<'h> {
    hir: &'h Hir,
    diags: Vec<Diagnostic>,
}

struct Cx {
    in_spawn: bool,
    in_require: bool,
    /// Nesting of control flow inside the current SPMD code.
    ctrl: u32,
    /// `inline` function: SPMD constructs allowed outside spawns.
    spmd_fn: bool,
    /// Called from a spawn: GPU code.
    device_fn: bool,
    /// Per-thread variables of the current spawn (or inline function).
    spawn_vars: HashSet<VarId>,
    /// Barriers (and barrier-containing operations) passed so far.
    epoch: u32,
    /// Epoch of each per-thread variable's first assignment.
    first_assign: HashMap<VarId, u32>,
}

impl Cx {
    /// Code that runs on the GPU (per thread).
    fn gpu(&self) -> bool {
        !self.in_require && (self.in_spawn || self.spmd_fn || self.device_fn)
    }
    /// SPMD constructs are allowed here.
    fn spmd_ok(&self) -> bool {
        !self.in_require && (self.in_spawn || self.spmd_fn)
    }
}

impl Checker<'_> {
    fn var_name(&self, v: VarId) -> &str {
        self.hir.var(v).map(|i| i.name.as_str()).unwrap_or("?")
    }

    fn block(&mut self, cx: &mut Cx, b: &Block) {
        for s in &b.stmts {
            self.stmt(cx, s);
        }
    }

    fn controlled(&mut self, cx: &mut Cx, f: impl FnOnce(&mut Self, &mut Cx)) {
        cx.ctrl += 1;
        f(self, cx);
        cx.ctrl -= 1;
    }

    fn stmt(&mut self, cx: &mut Cx, s: &Stmt) {
        match &s.kind {
            StmtKind::Expr(e) => self.expr(cx, e),
            StmtKind::Decl { var, init } => {
                if let Some(i) = init {
                    self.init(cx, i);
                }
                // Per-thread: declared in a spawn or in an inline function,
                // outside `require`.
                if !cx.in_require && (cx.in_spawn || cx.spmd_fn) {
                    cx.spawn_vars.insert(*var);
                }
                if init.is_some() {
                    cx.first_assign.entry(*var).or_insert(cx.epoch);
                }
            }
            StmtKind::Block(b) => self.block(cx, b),
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.expr(cx, cond);
                self.controlled(cx, |c, cx| {
                    c.stmt(cx, then_branch);
                    if let Some(e) = else_branch {
                        c.stmt(cx, e);
                    }
                });
            }
            StmtKind::While { cond, body } => self.controlled(cx, |c, cx| {
                c.expr(cx, cond);
                c.stmt(cx, body);
            }),
            StmtKind::DoWhile { body, cond } => self.controlled(cx, |c, cx| {
                c.stmt(cx, body);
                c.expr(cx, cond);
            }),
            StmtKind::For {
                init,
                cond,
                step,
                body,
                ..
            } => {
                for s in init {
                    self.stmt(cx, s);
                }
                self.controlled(cx, |c, cx| {
                    if let Some(e) = cond {
                        c.expr(cx, e);
                    }
                    c.stmt(cx, body);
                    if let Some(e) = step {
                        c.expr(cx, e);
                    }
                });
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Empty => {}
            StmtKind::Return(e) => {
                if cx.in_spawn {
                    self.diags.push(
                        Diagnostic::error(
                            codes::RETURN_IN_SPAWN,
                            "`return` inside a spawn block",
                            s.span,
                        )
                        .with_help("a spawn block ends at its closing brace; use a flag instead"),
                    );
                }
                if let Some(e) = e {
                    self.expr(cx, e);
                }
            }
            StmtKind::Spawn { count, body } => {
                self.expr(cx, count);
                if cx.in_spawn && !cx.in_require {
                    self.diags.push(
                        Diagnostic::error(
                            codes::NESTED_SPAWN,
                            "`spawn` inside a spawn block",
                            s.span,
                        )
                        .with_help("spawn blocks cannot nest; use `thread.fork` to create threads"),
                    );
                }
                if cx.in_spawn {
                    return;
                }
                let saved_vars = std::mem::take(&mut cx.spawn_vars);
                let saved_first = std::mem::take(&mut cx.first_assign);
                let saved_epoch = std::mem::replace(&mut cx.epoch, 0);
                let saved_ctrl = std::mem::replace(&mut cx.ctrl, 0);
                let saved_req = std::mem::replace(&mut cx.in_require, false);
                cx.in_spawn = true;
                self.block(cx, body);
                cx.in_spawn = false;
                cx.in_require = saved_req;
                cx.ctrl = saved_ctrl;
                cx.epoch = saved_epoch;
                cx.first_assign = saved_first;
                cx.spawn_vars = saved_vars;
            }
            StmtKind::Barrier { .. } => self.sync_op(cx, "`barrier`", s.span),
            StmtKind::Require { body, .. } => {
                if !cx.in_spawn && !cx.spmd_fn {
                    self.diags.push(
                        Diagnostic::error(codes::REQUIRE_OUTSIDE_SPAWN, "`require` outside a spawn block", s.span)
                            .with_help("`require` inserts host code into a spawn; outside one, write the code directly"),
                    );
                }
                let saved = std::mem::replace(&mut cx.in_require, true);
                self.block(cx, body);
                cx.in_require = saved;
            }
            StmtKind::Par { branches } => {
                // The branches run side by side, their barriers shared:
                // each starts in the par's superstep, and the par ends
                // after the most barriers any branch passed.
                let start = cx.epoch;
                let mut end = start;
                for b in branches {
                    cx.epoch = start;
                    self.stmt(cx, b);
                    end = end.max(cx.epoch);
                }
                cx.epoch = end;
            }
            StmtKind::Start { count, body } => {
                self.expr(cx, count);
                self.stmt(cx, body);
            }
            StmtKind::Fork {
                groups,
                group_id,
                rank,
                body,
            } => {
                self.expr(cx, groups);
                self.expr(cx, group_id);
                self.expr(cx, rank);
                self.stmt(cx, body);
            }
            StmtKind::Seq(b) | StmtKind::Farm(b) => self.stmt(cx, b),
        }
    }

    fn init(&mut self, cx: &mut Cx, i: &Init) {
        match i {
            Init::Expr(e) => self.expr(cx, e),
            Init::List(l) => {
                for i in l {
                    self.init(cx, i);
                }
            }
        }
    }

    /// A barrier or a barrier-containing operation.
    fn sync_op(&mut self, cx: &mut Cx, what: &str, span: pgpu_csubset::Span) {
        if !cx.spmd_ok() {
            let where_ = if cx.in_require {
                "inside `require` (host code)"
            } else {
                "outside a spawn block"
            };
            self.diags.push(
                Diagnostic::error(codes::SPMD_OUTSIDE_SPAWN, format!("{what} {where_}"), span)
                    .with_help("barriers and collectives belong in spawn blocks or `inline` functions called from them"),
            );
        } else if cx.ctrl > 0 {
            self.diags.push(
                Diagnostic::error(
                    codes::BARRIER_IN_CONTROL_FLOW,
                    format!("{what} under control flow in SPMD code"),
                    span,
                )
                .with_label_text("inside an `if`, a loop or a conditional expression")
                .with_help(
                    "every thread must reach every barrier: move it out of the branch or loop",
                ),
            );
        }
        cx.epoch += 1;
    }

    fn thread_attr(&mut self, cx: &mut Cx, what: &str, span: pgpu_csubset::Span) {
        // `thread.size` etc. are fine in `require` inside a spawn (Listing 3).
        if !cx.in_spawn && !cx.spmd_fn {
            self.diags.push(
                Diagnostic::error(codes::SPMD_OUTSIDE_SPAWN, format!("{what} outside a spawn block"), span)
                    .with_help("thread attributes exist only in spawn blocks and `inline` functions called from them"),
            );
        }
    }

    fn assigned(&mut self, cx: &mut Cx, v: VarId) {
        cx.first_assign.entry(v).or_insert(cx.epoch);
    }

    /// A write to `target` (an lvalue).
    fn write(&mut self, cx: &mut Cx, target: &Expr, span: pgpu_csubset::Span) {
        let mut root = target;
        while let ExprKind::Field { base, .. } = &root.kind {
            if base.category == ValueCategory::Memory {
                return;
            }
            root = base;
        }
        match &root.kind {
            ExprKind::Var(v) => {
                if cx.gpu() && cx.in_spawn && !cx.spawn_vars.contains(v) {
                    self.host_write(
                        self.var_name(*v).to_string(),
                        "declared outside the spawn",
                        span,
                        *v,
                    );
                }
                self.assigned(cx, *v);
            }
            ExprKind::Global(g) if cx.gpu() => {
                let name = self
                    .hir
                    .global(*g)
                    .map(|g| g.name.clone())
                    .unwrap_or_default();
                self.diags.push(
                    Diagnostic::error(
                        codes::HOST_WRITE,
                        format!("GPU code writes the global `{name}`"),
                        span,
                    )
                    .with_help("globals are host variables: assign them in a `require` block"),
                );
            }
            _ => {}
        }
    }

    fn host_write(&mut self, name: String, why: &str, span: pgpu_csubset::Span, v: VarId) {
        let decl = self.hir.var(v).map(|i| i.span);
        let mut d = Diagnostic::error(
            codes::HOST_WRITE,
            format!("spawn code writes the host variable `{name}`"),
            span,
        )
        .with_label_text(format!("`{name}` is {why}"))
        .with_help("host variables are kernel parameters: assign them in a `require` block, or use a new spawn-local variable");
        if let Some(ds) = decl {
            d = d.with_label(ds, "declared here");
        }
        self.diags.push(d);
    }

    fn expr(&mut self, cx: &mut Cx, e: &Expr) {
        match &e.kind {
            ExprKind::Assign { target, value } => {
                self.expr(cx, value);
                self.lvalue_children(cx, target);
                self.write(cx, target, e.span);
            }
            ExprKind::CompoundAssign { target, value, .. } => {
                self.lvalue_children(cx, target);
                self.expr(cx, value);
                self.write(cx, target, e.span);
            }
            ExprKind::IncDec { target, .. } => {
                self.lvalue_children(cx, target);
                self.write(cx, target, e.span);
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                self.expr(cx, cond);
                self.controlled(cx, |c, cx| {
                    c.expr(cx, then_expr);
                    c.expr(cx, else_expr);
                });
            }
            ExprKind::Binary {
                op: BinaryOp::LogAnd | BinaryOp::LogOr,
                lhs,
                rhs,
            } => {
                self.expr(cx, lhs);
                self.controlled(cx, |c, cx| c.expr(cx, rhs));
            }
            ExprKind::ThreadRank => self.thread_attr(cx, "`thread.rank`", e.span),
            ExprKind::ThreadSize => self.thread_attr(cx, "`thread.size`", e.span),
            ExprKind::ThreadOldRank => self.thread_attr(cx, "`thread.oldrank`", e.span),
            ExprKind::ThreadFork(x)
            | ExprKind::ThreadKill(x)
            | ExprKind::ThreadSortBy(x)
            | ExprKind::ThreadSplit(x)
            | ExprKind::SortIdx(x) => {
                self.expr(cx, x);
                let what = match &e.kind {
                    ExprKind::ThreadFork(_) => "`thread.fork`",
                    ExprKind::ThreadKill(_) => "`thread.kill`",
                    ExprKind::ThreadSortBy(_) => "`thread.sortby`",
                    ExprKind::ThreadSplit(_) => "`thread.split`",
                    _ => "`sort_idx`",
                };
                self.sync_op(cx, what, e.span);
            }
            ExprKind::Reduce { value, .. } => {
                self.expr(cx, value);
                self.sync_op(cx, "`reduce`", e.span);
            }
            ExprKind::Scan { var, .. } => {
                self.sync_op(cx, "`scan`", e.span);
                if cx.spmd_ok() && !cx.spawn_vars.contains(var) {
                    self.host_write(
                        self.var_name(*var).to_string(),
                        "not a spawn-local variable",
                        e.span,
                        *var,
                    );
                }
                self.assigned(cx, *var);
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
                self.expr(cx, list);
                self.expr(cx, src);
                self.expr(cx, keep);
                self.expr(cx, flag);
                let what = if matches!(e.kind, ExprKind::Compact { .. }) {
                    "`compact`"
                } else {
                    "`split`"
                };
                self.sync_op(cx, what, e.span);
            }
            ExprKind::ThreadGet { rank, var } => {
                self.expr(cx, rank);
                self.thread_attr(cx, "`thread.get`", e.span);
                let name = self.var_name(*var).to_string();
                if cx.spmd_ok() {
                    if !cx.spawn_vars.contains(var) {
                        self.diags.push(
                            Diagnostic::error(
                                codes::GET_NOT_LIVE,
                                format!("`thread.get` reads `{name}`, which is not a spawn-local variable"),
                                e.span,
                            )
                            .with_help("`thread.get(r, v)` reads another thread's local `v`; host values are the same in every thread"),
                        );
                    } else if cx.first_assign.get(var).is_none_or(|&ep| ep >= cx.epoch) {
                        let mut d = Diagnostic::error(
                            codes::GET_NOT_LIVE,
                            format!("`thread.get` reads `{name}`, which is not assigned before a preceding barrier"),
                            e.span,
                        )
                        .with_label_text("no barrier between the assignment and this read")
                        .with_help(format!(
                            "`thread.get(r, {name})` returns `{name}` as it was before the last barrier: assign `{name}` and then `barrier;`"
                        ));
                        if let Some(i) = self.hir.var(*var) {
                            d = d.with_label(i.span, "declared here");
                        }
                        self.diags.push(d);
                    }
                }
            }
            ExprKind::ThreadPut { rank, var, value } => {
                self.expr(cx, rank);
                self.expr(cx, value);
                self.thread_attr(cx, "`thread.put`", e.span);
                if cx.spmd_ok() && !cx.spawn_vars.contains(var) {
                    self.host_write(
                        self.var_name(*var).to_string(),
                        "not a spawn-local variable",
                        e.span,
                        *var,
                    );
                }
                self.assigned(cx, *var);
            }
            ExprKind::Call { func, args } => {
                for a in args {
                    self.expr(cx, a);
                }
                let Some(f) = self.hir.function(*func) else {
                    return;
                };
                if f.uses_spmd && !cx.spmd_ok() {
                    let fs = f.name_span;
                    self.diags.push(
                        Diagnostic::error(
                            codes::SPMD_CALL_FROM_HOST,
                            format!(
                                "`{}` uses SPMD constructs but is called from host code",
                                f.name
                            ),
                            e.span,
                        )
                        .with_label(fs, "defined here")
                        .with_help("call it from a spawn block (outside `require`)"),
                    );
                } else if f.spmd_inline {
                    let what = format!("call of `{}`, which contains barriers,", f.name);
                    self.sync_op(cx, &what, e.span);
                }
            }
            _ => walk_children(self, cx, e),
        }
    }

    /// The sub-expressions an lvalue evaluates (indices, pointers), not the
    /// variable itself.
    fn lvalue_children(&mut self, cx: &mut Cx, target: &Expr) {
        match &target.kind {
            ExprKind::Var(_) | ExprKind::Global(_) => {}
            ExprKind::Field { base, .. } => self.lvalue_children(cx, base),
            _ => walk_children(self, cx, target),
        }
    }
}

/// Visit `e`'s children with the checker (the cases `expr` does not handle
/// itself).
fn walk_children(c: &mut Checker, cx: &mut Cx, e: &Expr) {
    let mut kids: Vec<&Expr> = Vec::new();
    direct_children(e, &mut kids);
    for k in kids {
        c.expr(cx, k);
    }
}

/// The direct sub-expressions of `e`, in evaluation order.
fn direct_children<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    use ExprKind::*;
    match &e.kind {
        IntLit(_)
        | FloatLit { .. }
        | BoolLit(_)
        | StrLit(_)
        | Null
        | Var(_)
        | Global(_)
        | ThreadRank
        | ThreadSize
        | ThreadOldRank
        | DTempFree
        | ProcessorId
        | GroupRank
        | GroupId
        | GroupSize
        | Error
        | Scan { .. } => {}
        Unary { operand, .. } => out.push(operand),
        Binary { lhs, rhs, .. } | PtrDiff { lhs, rhs } | Comma { lhs, rhs } => {
            out.push(lhs);
            out.push(rhs);
        }
        PtrAdd { ptr, offset } => {
            out.push(ptr);
            out.push(offset);
        }
        Assign { target, value } | CompoundAssign { target, value, .. } => {
            out.push(target);
            out.push(value);
        }
        IncDec { target, .. } => out.push(target),
        Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            out.push(cond);
            out.push(then_expr);
            out.push(else_expr);
        }
        Cast { expr, .. } | Deref(expr) | AddrOf(expr) => out.push(expr),
        Index { base, index } => {
            out.push(base);
            out.push(index);
        }
        Field { base, .. } => out.push(base),
        Call { args, .. } => out.extend(args.iter()),
        Builtin(b) => match b {
            pgpu_csubset::hir::Builtin::Printf { args, .. } => out.extend(args.iter()),
            pgpu_csubset::hir::Builtin::Argi { index, default } => {
                out.push(index);
                if let Some(d) = default {
                    out.push(d);
                }
            }
            pgpu_csubset::hir::Builtin::RandSeed(s) => out.push(s),
            pgpu_csubset::hir::Builtin::Wtime | pgpu_csubset::hir::Builtin::RandU32 => {}
            pgpu_csubset::hir::Builtin::Math { args, .. } => out.extend(args.iter()),
        },
        ThreadFork(x) | ThreadKill(x) | ThreadSortBy(x) | ThreadSplit(x) | SortIdx(x) => {
            out.push(x)
        }
        ThreadGet { rank, .. } => out.push(rank),
        ThreadPut { rank, value, .. } => {
            out.push(rank);
            out.push(value);
        }
        Reduce { value, .. } => out.push(value),
        Compact {
            list,
            src,
            keep,
            flag,
        }
        | Split {
            list,
            src,
            side: keep,
            flag,
        } => {
            out.push(list);
            out.push(src);
            out.push(keep);
            out.push(flag);
        }
        DNew { count, .. } => out.push(count),
        MultiPrefix { ptr, value, .. } => {
            out.push(ptr);
            out.push(value);
        }
    }
}
