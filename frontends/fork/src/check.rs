//! Fork's own static rules (seeds/fork-to-cuda.txt, Sections 2-3), on top
//! of the C-subset front end's checks:
//!
//! - `$`, `@`, `fork`, `seq`, `farm` and the multiprefix operations only in
//!   group code: a `start` body or a `sync` function (not in host code);
//!   `fork` and `seq` not inside `farm`/`seq` or `async` functions.
//! - `start` only in host code (groups do not nest through `start`).
//! - `sync` functions are called only from synchronous group code.
//! - `barrier` only in asynchronous code (`farm` or an `async` function).
//! - No `sh` local variables yet (they need one cell per group; globals
//!   are shared).
//!
//! Every violation is a diagnostic with the construct's span.

use pgpu_csubset::{
    Diagnostic,
    hir::{Block, Expr, ExprKind, FnMode, Hir, Init, Language, Stmt, StmtKind, Storage},
    lower::control::for_each_child,
};

/// Code of a group construct outside group code.
pub const E_NOT_GROUP_CODE: &str = "fork::E200";
/// Code of `start` inside group code.
pub const E_NESTED_START: &str = "fork::E201";
/// Code of a `sync` function called outside synchronous code.
pub const E_SYNC_CALL: &str = "fork::E202";
/// Code of `barrier` outside asynchronous code.
pub const E_BARRIER: &str = "fork::E203";
/// Code of a synchronous-only construct in asynchronous code.
pub const E_ASYNC: &str = "fork::E204";
/// Code of a shared (`sh`) local variable or parameter outside synchronous
/// code.
pub const E_SHARED_LOCAL: &str = "fork::E205";

/// Where a statement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Host code: one processor, outside any group.
    Host,
    /// Synchronous group code.
    Sync,
    /// Asynchronous code in a group (`farm`, `async` functions).
    Async,
    /// `seq`: one processor of a group.
    Seq,
}

struct Checker<'h> {
    hir: &'h Hir,
    diags: Vec<Diagnostic>,
}

/// Checks the Fork rules on a checked program.
pub fn check(program: &Hir) -> Vec<Diagnostic> {
    let mut c = Checker {
        hir: program,
        diags: Vec::new(),
    };
    for f in &program.functions {
        let mode = match f.mode {
            Some(FnMode::Sync) => Mode::Sync,
            Some(FnMode::Async) => Mode::Async,
            None => Mode::Host,
        };
        for param in &f.params {
            c.shared_outside_sync(*param, mode);
        }
        c.block(&f.body, mode);
    }
    c.diags
}

/// Parses and checks Fork source (front end and Fork rules).
pub fn check_source(path: &str, text: &str) -> pgpu_csubset::CheckResult {
    let _ = path;
    pgpu_csubset::frontend::check_source(text, Language::Fork, check)
}

impl Checker<'_> {
    /// A shared (`sh`) variable or parameter outside synchronous code:
    /// there is no group to share it with (host code), or the group
    /// structure is read-only (asynchronous code).
    fn shared_outside_sync(&mut self, var: pgpu_csubset::hir::VarId, mode: Mode) {
        if let Some(v) = self.hir.var(var)
            && v.storage == Some(Storage::Shared)
            && mode != Mode::Sync
        {
            self.diags.push(
                Diagnostic::error(
                    E_SHARED_LOCAL,
                    format!(
                        "the shared local variable '{}' must be declared in synchronous code, where the group executing the declaration shares it",
                        v.name
                    ),
                    v.span,
                )
                .with_help("declare it in a `start` body or a `sync` function, or as a global (shared by all groups)"),
            );
        }
    }

    fn error(&mut self, code: &'static str, message: String, span: pgpu_csubset::span::Span) {
        self.diags.push(Diagnostic::error(code, message, span));
    }

    fn group_only(&mut self, what: &str, mode: Mode, span: pgpu_csubset::span::Span) {
        if mode == Mode::Host {
            self.error(
                E_NOT_GROUP_CODE,
                format!(
                    "{what} is only allowed in group code (a 'start' body or a 'sync' function)"
                ),
                span,
            );
        }
    }

    fn sync_only(&mut self, what: &str, mode: Mode, span: pgpu_csubset::span::Span) {
        match mode {
            Mode::Host => self.group_only(what, mode, span),
            Mode::Async | Mode::Seq => self.error(
                E_ASYNC,
                format!("{what} is only allowed in synchronous group code, not in asynchronous ('farm', 'async') or 'seq' code"),
                span,
            ),
            Mode::Sync => {}
        }
    }

    fn block(&mut self, block: &Block, mode: Mode) {
        for s in &block.stmts {
            self.stmt(s, mode);
        }
    }

    fn init(&mut self, init: &Init, mode: Mode) {
        match init {
            Init::Expr(e) => self.expr(e, mode),
            Init::List(items) => items.iter().for_each(|i| self.init(i, mode)),
        }
    }

    fn stmt(&mut self, stmt: &Stmt, mode: Mode) {
        match &stmt.kind {
            StmtKind::Expr(e) => self.expr(e, mode),
            StmtKind::Decl { var, init } => {
                self.shared_outside_sync(*var, mode);
                if let Some(i) = init {
                    self.init(i, mode);
                }
            }
            StmtKind::Block(b) => self.block(b, mode),
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.expr(cond, mode);
                self.stmt(then_branch, mode);
                if let Some(e) = else_branch {
                    self.stmt(e, mode);
                }
            }
            StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
                self.expr(cond, mode);
                self.stmt(body, mode);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                ..
            } => {
                init.iter().for_each(|s| self.stmt(s, mode));
                if let Some(c) = cond {
                    self.expr(c, mode);
                }
                if let Some(s) = step {
                    self.expr(s, mode);
                }
                self.stmt(body, mode);
            }
            StmtKind::Return(Some(e)) => self.expr(e, mode),
            StmtKind::Start { count, body } => {
                self.expr(count, mode);
                if mode != Mode::Host {
                    self.error(
                        E_NESTED_START,
                        "'start' is only allowed in host code (use 'fork' or a private 'if' to split a group)".into(),
                        stmt.span,
                    );
                }
                self.stmt(body, Mode::Sync);
            }
            StmtKind::Fork {
                groups,
                group_id,
                rank,
                body,
            } => {
                self.sync_only("'fork'", mode, stmt.span);
                for e in [groups, group_id, rank] {
                    self.expr(e, mode);
                }
                self.stmt(body, mode);
            }
            StmtKind::Seq(body) => {
                self.sync_only("'seq'", mode, stmt.span);
                self.stmt(body, Mode::Seq);
            }
            StmtKind::Farm(body) => {
                self.sync_only("'farm'", mode, stmt.span);
                self.stmt(body, Mode::Async);
            }
            StmtKind::Barrier { .. } => {
                if mode != Mode::Async {
                    self.error(
                        E_BARRIER,
                        "'barrier' is only allowed in asynchronous code ('farm' or an 'async' function); synchronous code is synchronized statement by statement".into(),
                        stmt.span,
                    );
                }
            }
            StmtKind::Spawn { body, .. } => self.block(body, mode),
            StmtKind::Require { body, .. } => self.block(body, mode),
            StmtKind::Par { branches } => branches.iter().for_each(|s| self.stmt(s, mode)),
            StmtKind::Return(None) | StmtKind::Break | StmtKind::Continue | StmtKind::Empty => {}
        }
    }

    fn expr(&mut self, expr: &Expr, mode: Mode) {
        match &expr.kind {
            ExprKind::GroupRank => self.group_only("'$'", mode, expr.span),
            ExprKind::GroupId => self.group_only("'@'", mode, expr.span),
            ExprKind::GroupSize => self.group_only("'groupsize()'", mode, expr.span),
            ExprKind::MultiPrefix { .. } => {
                self.group_only("a multiprefix operation", mode, expr.span)
            }
            ExprKind::Call { func, .. } => {
                if let Some(f) = self.hir.function(*func)
                    && f.mode == Some(FnMode::Sync)
                    && mode != Mode::Sync
                {
                    let where_ = match mode {
                        Mode::Host => "host code",
                        Mode::Async => "asynchronous code",
                        _ => "'seq' code",
                    };
                    self.error(
                        E_SYNC_CALL,
                        format!(
                            "the sync function '{}' can only be called from synchronous group code, not from {where_}",
                            f.name
                        ),
                        expr.span,
                    );
                }
            }
            _ => {}
        }
        for_each_child(expr, |child| self.expr(child, mode));
    }
}
