//! Fork's own static rules (seeds/fork-to-cuda.txt, Sections 2-3), on top
//! of the C-subset front end's checks:
//!
//! - `$`, `$$`, `@`, `fork`, `seq`, `farm` and the multiprefix operations only in
//!   group code: a `start` body or a `sync` function (not in host code);
//!   `fork` and `seq` not inside `farm`/`seq` or `async` functions.
//! - `start` only in host code (groups do not nest through `start`).
//! - `sync` functions are called only from synchronous group code.
//! - `barrier` only in asynchronous code (`farm` or an `async` function).
//! - `sh` local variables and parameters only in synchronous code, where a
//!   group shares them (globals are shared by all groups).
//!
//! Every violation is a diagnostic with the construct's span.

use pgpu_csubset::{
    Diagnostic,
    hir::{
        Expr, ExprKind, FnMode, Hir, Language, Stmt, StmtKind, Storage, Visitor, walk_block,
        walk_expr, walk_stmt,
    },
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
    /// Where the code being visited runs.
    mode: Mode,
}

/// Checks the Fork rules on a checked program.
pub fn check(program: &Hir) -> Vec<Diagnostic> {
    let mut c = Checker {
        hir: program,
        diags: Vec::new(),
        mode: Mode::Host,
    };
    for f in &program.functions {
        c.mode = match f.mode {
            Some(FnMode::Sync) => Mode::Sync,
            Some(FnMode::Async) => Mode::Async,
            None => Mode::Host,
        };
        for param in &f.params {
            c.shared_outside_sync(*param);
        }
        walk_block(&mut c, &f.body);
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
    fn shared_outside_sync(&mut self, var: pgpu_csubset::hir::VarId) {
        if let Some(v) = self.hir.var(var)
            && v.storage == Some(Storage::Shared)
            && self.mode != Mode::Sync
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

    fn group_only(&mut self, what: &str, span: pgpu_csubset::span::Span) {
        if self.mode == Mode::Host {
            self.error(
                E_NOT_GROUP_CODE,
                format!(
                    "{what} is only allowed in group code (a 'start' body or a 'sync' function)"
                ),
                span,
            );
        }
    }

    fn sync_only(&mut self, what: &str, span: pgpu_csubset::span::Span) {
        match self.mode {
            Mode::Host => self.group_only(what, span),
            Mode::Async | Mode::Seq => self.error(
                E_ASYNC,
                format!("{what} is only allowed in synchronous group code, not in asynchronous ('farm', 'async') or 'seq' code"),
                span,
            ),
            Mode::Sync => {}
        }
    }

    /// Visits `stmt` as code that runs in `mode`.
    fn visit_in(&mut self, mode: Mode, stmt: &Stmt) {
        let outer = std::mem::replace(&mut self.mode, mode);
        self.visit_stmt(stmt);
        self.mode = outer;
    }
}

impl Visitor for Checker<'_> {
    fn visit_stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Decl { var, .. } => self.shared_outside_sync(*var),
            StmtKind::Start { count, body } => {
                self.visit_expr(count);
                if self.mode != Mode::Host {
                    self.error(
                        E_NESTED_START,
                        "'start' is only allowed in host code (use 'fork' or a private 'if' to split a group)".into(),
                        stmt.span,
                    );
                }
                self.visit_in(Mode::Sync, body);
                return;
            }
            StmtKind::Fork { .. } => self.sync_only("'fork'", stmt.span),
            StmtKind::Seq(body) => {
                self.sync_only("'seq'", stmt.span);
                self.visit_in(Mode::Seq, body);
                return;
            }
            StmtKind::Farm(body) => {
                self.sync_only("'farm'", stmt.span);
                self.visit_in(Mode::Async, body);
                return;
            }
            StmtKind::Barrier { .. } if self.mode != Mode::Async => {
                self.error(
                    E_BARRIER,
                    "'barrier' is only allowed in asynchronous code ('farm' or an 'async' function); synchronous code is synchronized statement by statement".into(),
                    stmt.span,
                );
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::ProcessorId => self.group_only("'$'", expr.span),
            ExprKind::GroupRank => self.group_only("'$$'", expr.span),
            ExprKind::GroupId => self.group_only("'@'", expr.span),
            ExprKind::GroupSize => self.group_only("'groupsize()'", expr.span),
            ExprKind::MultiPrefix { .. } => self.group_only("a multiprefix operation", expr.span),
            ExprKind::Call { func, .. } => {
                if let Some(f) = self.hir.function(*func)
                    && f.mode == Some(FnMode::Sync)
                    && self.mode != Mode::Sync
                {
                    let where_ = match self.mode {
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
        walk_expr(self, expr);
    }
}
