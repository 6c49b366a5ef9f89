//! Checks the invariants the lowering relies on (see [`crate::hir`]) on an
//! error-free HIR: operand types agree, conditions are `bool`, values are
//! converted to their targets, indices and offsets are `long`, ids are in
//! range, and no `Error` node is left. Used by tests; cheap enough for
//! debug assertions.

use crate::hir::*;

/// Every violated invariant, as text (empty when the HIR is well formed).
pub fn verify(hir: &Hir) -> Vec<String> {
    let mut v = Verifier {
        hir,
        errors: Vec::new(),
        ret: Type::Void,
    };
    for g in &hir.globals {
        if let Some(i) = &g.init {
            v.init(i, &g.ty);
        }
    }
    for f in &hir.functions {
        v.ret = f.ret.clone();
        for p in &f.params {
            if hir.var(*p).is_none() {
                v.err(format!("{}: parameter id {} out of range", f.name, p.0));
            }
        }
        walk_block(&mut v, &f.body);
    }
    v.errors
}

struct Verifier<'h> {
    hir: &'h Hir,
    errors: Vec<String>,
    ret: Type,
}

impl Verifier<'_> {
    fn err(&mut self, msg: String) {
        if self.errors.len() < 50 {
            self.errors.push(msg);
        }
    }

    fn expect_ty(&mut self, what: &str, e: &Expr, t: &Type) {
        if e.ty != *t {
            self.err(format!(
                "{what} at {}..{} has type {:?}, expected {:?}",
                e.span.start, e.span.end, e.ty, t
            ));
        }
    }

    fn init(&mut self, i: &Init, t: &Type) {
        match (i, t) {
            (Init::Expr(e), t) => {
                self.expect_ty("initialiser", e, t);
                self.visit_expr(e);
            }
            (Init::List(l), Type::Array(elem, _)) => {
                for i in l {
                    self.init(i, elem);
                }
            }
            (Init::List(l), Type::Struct(id)) => {
                let fields: Vec<Type> = self
                    .hir
                    .struct_def(*id)
                    .map(|s| s.fields.iter().map(|f| f.ty.clone()).collect())
                    .unwrap_or_default();
                for (i, t) in l.iter().zip(&fields) {
                    self.init(i, t);
                }
            }
            (Init::List(_), t) => self.err(format!("initialiser list for {t:?}")),
        }
    }
}

impl Visitor for Verifier<'_> {
    fn visit_stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Decl { var, init } => {
                let Some(info) = self.hir.var(*var) else {
                    self.err(format!("variable id {} out of range", var.0));
                    return;
                };
                let t = info.ty.clone();
                if let Some(i) = init {
                    self.init(i, &t);
                }
                return;
            }
            StmtKind::If { cond, .. }
            | StmtKind::While { cond, .. }
            | StmtKind::DoWhile { cond, .. } => self.expect_ty("condition", cond, &Type::Bool),
            StmtKind::For { cond: Some(c), .. } => self.expect_ty("condition", c, &Type::Bool),
            StmtKind::Return(Some(e)) => {
                let r = self.ret.clone();
                self.expect_ty("return value", e, &r);
            }
            StmtKind::Spawn { count, .. } | StmtKind::Start { count, .. } => {
                self.expect_ty("count", count, &Type::Int)
            }
            _ => {}
        }
        walk_stmt(self, s);
    }

    fn visit_expr(&mut self, e: &Expr) {
        use ExprKind::*;
        match &e.kind {
            Error => self.err(format!("Error node at {}..{}", e.span.start, e.span.end)),
            Var(v) => {
                if let Some(i) = self.hir.var(*v) {
                    let t = i.ty.clone();
                    self.expect_ty("variable", e, &t);
                } else {
                    self.err(format!("variable id {} out of range", v.0));
                }
            }
            Binary { op, lhs, rhs } => match op {
                BinaryOp::LogAnd | BinaryOp::LogOr => {
                    self.expect_ty("logical operand", lhs, &Type::Bool);
                    self.expect_ty("logical operand", rhs, &Type::Bool);
                    self.expect_ty("logical result", e, &Type::Bool);
                }
                op if op.is_comparison() => {
                    let t = lhs.ty.clone();
                    self.expect_ty("comparison operand", rhs, &t);
                    self.expect_ty("comparison result", e, &Type::Bool);
                }
                _ => {
                    let t = e.ty.clone();
                    self.expect_ty("operand", lhs, &t);
                    self.expect_ty("operand", rhs, &t);
                    if !t.is_arithmetic() {
                        self.err(format!("arithmetic on {t:?}"));
                    }
                }
            },
            Unary {
                op: UnaryOp::Not,
                operand,
            } => {
                self.expect_ty("`!` operand", operand, &Type::Bool);
            }
            Unary { operand, .. } => {
                let t = e.ty.clone();
                self.expect_ty("operand", operand, &t);
            }
            PtrAdd { ptr, offset } => {
                self.expect_ty("offset", offset, &Type::Long);
                let t = e.ty.clone();
                self.expect_ty("pointer", ptr, &t);
            }
            Assign { target, value } => {
                let t = target.ty.clone();
                self.expect_ty("assigned value", value, &t);
                if !target.category.is_lvalue() {
                    self.err("assignment to an rvalue".into());
                }
            }
            CompoundAssign { value, op_ty, .. } => {
                let t = op_ty.clone();
                self.expect_ty("compound operand", value, &t);
            }
            Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                self.expect_ty("condition", cond, &Type::Bool);
                let t = e.ty.clone();
                self.expect_ty("branch", then_expr, &t);
                self.expect_ty("branch", else_expr, &t);
            }
            Index { base, index } => {
                self.expect_ty("index", index, &Type::Long);
                if base.ty.element() != Some(&e.ty) {
                    self.err(format!("index of {:?} typed {:?}", base.ty, e.ty));
                }
            }
            Call { func, args } => match self.hir.function(*func) {
                Some(f) => {
                    let ptys: Vec<Type> = f
                        .params
                        .iter()
                        .filter_map(|p| self.hir.var(*p).map(|i| i.ty.clone()))
                        .collect();
                    if ptys.len() != args.len() {
                        self.err(format!("call of {} with {} arguments", f.name, args.len()));
                    }
                    for (a, t) in args.iter().zip(&ptys) {
                        self.expect_ty("argument", a, t);
                    }
                }
                None => self.err(format!("function id {} out of range", func.0)),
            },
            ThreadKill(x) | ThreadSplit(x) => self.expect_ty("flag", x, &Type::Bool),
            _ => {}
        }
        if matches!(e.ty, Type::Error | Type::Null) && !matches!(e.kind, Null) {
            self.err(format!("{:?} typed {:?}", e.kind, e.ty));
        }
        walk_expr(self, e);
    }
}
