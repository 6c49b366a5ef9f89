//! A readable C-like dump of the typed HIR, for debugging and tests: every
//! variable is printed as `name#id`, implicit conversions as `{T}(e)`,
//! explicit ones as `(T)(e)`, and declarations by assignment as
//! `auto T x#id = ...`.

use crate::hir::*;
use std::fmt::Write;

/// The whole program as text.
pub fn print(hir: &Hir) -> String {
    let mut p = Printer {
        hir,
        out: String::new(),
        indent: 0,
    };
    p.program();
    p.out
}

struct Printer<'h> {
    hir: &'h Hir,
    out: String,
    indent: usize,
}

/// A type as C spells it.
pub fn type_str(hir: &Hir, t: &Type) -> String {
    match t {
        Type::Void => "void".into(),
        Type::Bool => "bool".into(),
        Type::Char => "char".into(),
        Type::Int => "int".into(),
        Type::UInt => "unsigned".into(),
        Type::Long => "long".into(),
        Type::ULong => "unsigned long".into(),
        Type::Float => "float".into(),
        Type::Double => "double".into(),
        Type::Ptr(e) => format!("{}*", type_str(hir, e)),
        Type::Array(e, n) => format!("{}[{n}]", type_str(hir, e)),
        Type::Struct(id) => format!(
            "struct {}",
            hir.struct_def(*id).map(|s| s.name.as_str()).unwrap_or("?")
        ),
        Type::Null => "NULL".into(),
        Type::Error => "<error>".into(),
    }
}

fn bin_str(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        BinaryOp::Rem => "%",
        BinaryOp::Shl => "<<",
        BinaryOp::Shr => ">>",
        BinaryOp::BitAnd => "&",
        BinaryOp::BitOr => "|",
        BinaryOp::BitXor => "^",
        BinaryOp::Eq => "==",
        BinaryOp::Ne => "!=",
        BinaryOp::Lt => "<",
        BinaryOp::Le => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::Ge => ">=",
        BinaryOp::LogAnd => "&&",
        BinaryOp::LogOr => "||",
    }
}

fn coll_str(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::Add => "+",
        CollectiveOp::Mul => "*",
        CollectiveOp::Min => "min",
        CollectiveOp::Max => "max",
        CollectiveOp::And => "&",
        CollectiveOp::Or => "|",
        CollectiveOp::Xor => "^",
    }
}

impl Printer<'_> {
    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn ty(&self, t: &Type) -> String {
        type_str(self.hir, t)
    }

    fn var(&self, v: VarId) -> String {
        let name = self.hir.var(v).map(|i| i.name.as_str()).unwrap_or("?");
        format!("{name}#{}", v.0)
    }

    fn program(&mut self) {
        for s in &self.hir.structs {
            let mut line = format!("struct {} {{", s.name);
            for f in &s.fields {
                let _ = write!(line, " {} {};", type_str(self.hir, &f.ty), f.name);
            }
            line.push_str(" };");
            self.line(&line);
        }
        for g in &self.hir.globals {
            let init = g
                .init
                .as_ref()
                .map(|i| format!(" = {}", self.init(i)))
                .unwrap_or_default();
            let line = format!("{} {}{init};", self.ty(&g.ty), g.name);
            self.line(&line);
        }
        for f in &self.hir.functions {
            let params: Vec<String> = f
                .params
                .iter()
                .map(|p| {
                    let t = self.hir.var(*p).map(|i| self.ty(&i.ty)).unwrap_or_default();
                    format!("{t} {}", self.var(*p))
                })
                .collect();
            let mut attrs = Vec::new();
            if f.is_inline {
                attrs.push("inline");
            }
            if f.spmd_inline {
                attrs.push("spmd_inline");
            } else if f.uses_spmd {
                attrs.push("uses_spmd");
            }
            if f.has_spawn {
                attrs.push("has_spawn");
            }
            let attrs = if attrs.is_empty() {
                String::new()
            } else {
                format!(" [{}]", attrs.join(", "))
            };
            let line = format!(
                "{} {}({}){attrs} {{",
                self.ty(&f.ret),
                f.name,
                params.join(", ")
            );
            self.line(&line);
            self.indent += 1;
            for s in &f.body.stmts {
                self.stmt(s);
            }
            self.indent -= 1;
            self.line("}");
        }
    }

    fn init(&self, i: &Init) -> String {
        match i {
            Init::Expr(e) => self.expr(e),
            Init::List(l) => {
                let items: Vec<String> = l.iter().map(|i| self.init(i)).collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    fn block(&mut self, head: &str, b: &Block) {
        self.line(&format!("{head} {{"));
        self.indent += 1;
        for s in &b.stmts {
            self.stmt(s);
        }
        self.indent -= 1;
        self.line("}");
    }

    fn sub(&mut self, head: &str, s: &Stmt) {
        match &s.kind {
            StmtKind::Block(b) => self.block(head, b),
            _ => {
                self.line(head);
                self.indent += 1;
                self.stmt(s);
                self.indent -= 1;
            }
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Expr(e) => {
                let l = format!("{};", self.expr(e));
                self.line(&l);
            }
            StmtKind::Decl { var, init } => {
                let info = self.hir.var(*var);
                let t = info.map(|i| self.ty(&i.ty)).unwrap_or_default();
                let auto = if info.is_some_and(|i| i.by_assignment) {
                    "auto "
                } else {
                    ""
                };
                let space = match info.map(|i| i.space) {
                    Some(Space::Thread) => " /*thread*/",
                    _ => "",
                };
                let init = init
                    .as_ref()
                    .map(|i| format!(" = {}", self.init(i)))
                    .unwrap_or_default();
                let l = format!("{auto}{t} {}{space}{init};", self.var(*var));
                self.line(&l);
            }
            StmtKind::Block(b) => self.block("", b),
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let h = format!("if ({})", self.expr(cond));
                self.sub(&h, then_branch);
                if let Some(e) = else_branch {
                    self.sub("else", e);
                }
            }
            StmtKind::While { cond, body } => {
                let h = format!("while ({})", self.expr(cond));
                self.sub(&h, body);
            }
            StmtKind::DoWhile { body, cond } => {
                self.sub("do", body);
                let l = format!("while ({});", self.expr(cond));
                self.line(&l);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                speculate,
            } => {
                if let Some(sp) = speculate {
                    let mut l = "#pragma pgpu speculate".to_string();
                    if let Some(w) = sp.window {
                        let _ = write!(l, " window({w})");
                    }
                    if let Some(w) = sp.warp {
                        let _ = write!(l, " warp({w})");
                    }
                    self.line(&l);
                }
                if !init.is_empty() {
                    self.line("for-init {");
                    self.indent += 1;
                    for s in init {
                        self.stmt(s);
                    }
                    self.indent -= 1;
                    self.line("}");
                }
                let c = cond.as_ref().map(|c| self.expr(c)).unwrap_or_default();
                let st = step.as_ref().map(|c| self.expr(c)).unwrap_or_default();
                let h = format!("for (; {c}; {st})");
                self.sub(&h, body);
            }
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Return(None) => self.line("return;"),
            StmtKind::Return(Some(e)) => {
                let l = format!("return {};", self.expr(e));
                self.line(&l);
            }
            StmtKind::Empty => self.line(";"),
            StmtKind::Spawn { count, body } => {
                let h = format!("spawn ({})", self.expr(count));
                self.block(&h, body);
            }
            StmtKind::Barrier { rank_reassigned } => {
                if *rank_reassigned {
                    self.line("barrier(RANK_REASSIGNED);");
                } else {
                    self.line("barrier;");
                }
            }
            StmtKind::Require { body, outputs } => {
                let outs: Vec<String> = outputs.iter().map(|v| self.var(*v)).collect();
                let h = format!("require -> ({})", outs.join(", "));
                self.block(&h, body);
            }
            StmtKind::Par { branches } => {
                self.line("par {");
                self.indent += 1;
                for b in branches {
                    self.stmt(b);
                }
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::Start { count, body } => {
                let h = format!("start ({})", self.expr(count));
                self.sub(&h, body);
            }
            StmtKind::Fork {
                groups,
                group_id,
                rank,
                body,
            } => {
                let h = format!(
                    "fork ({}; @ = {}; $ = {})",
                    self.expr(groups),
                    self.expr(group_id),
                    self.expr(rank)
                );
                self.sub(&h, body);
            }
            StmtKind::Seq(b) => self.sub("seq", b),
            StmtKind::Farm(b) => self.sub("farm", b),
        }
    }

    fn args(&self, args: &[Expr]) -> String {
        args.iter()
            .map(|a| self.expr(a))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn expr(&self, e: &Expr) -> String {
        use ExprKind::*;
        match &e.kind {
            IntLit(v) => format!("{v}"),
            FloatLit { bits } => format!("{:?}", f64::from_bits(*bits)),
            BoolLit(b) => format!("{b}"),
            StrLit(s) => format!("{s:?}"),
            Null => "NULL".into(),
            Var(v) => self.var(*v),
            Global(g) => self
                .hir
                .global(*g)
                .map(|g| g.name.clone())
                .unwrap_or_default(),
            Unary { op, operand } => {
                let o = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Not => "!",
                    UnaryOp::BitNot => "~",
                };
                format!("{o}{}", self.expr(operand))
            }
            Binary { op, lhs, rhs } => {
                format!("({} {} {})", self.expr(lhs), bin_str(*op), self.expr(rhs))
            }
            PtrAdd { ptr, offset } => format!("ptradd({}, {})", self.expr(ptr), self.expr(offset)),
            PtrDiff { lhs, rhs } => format!("ptrdiff({}, {})", self.expr(lhs), self.expr(rhs)),
            Assign { target, value } => format!("{} = {}", self.expr(target), self.expr(value)),
            CompoundAssign {
                op,
                target,
                value,
                op_ty,
            } => format!(
                "{} {}=[{}] {}",
                self.expr(target),
                bin_str(*op),
                self.ty(op_ty),
                self.expr(value)
            ),
            IncDec {
                target,
                increment,
                prefix,
            } => {
                let o = if *increment { "++" } else { "--" };
                if *prefix {
                    format!("{o}{}", self.expr(target))
                } else {
                    format!("{}{o}", self.expr(target))
                }
            }
            Cond {
                cond,
                then_expr,
                else_expr,
            } => format!(
                "({} ? {} : {})",
                self.expr(cond),
                self.expr(then_expr),
                self.expr(else_expr)
            ),
            Cast { explicit, expr, .. } => {
                let t = self.ty(&e.ty);
                if *explicit {
                    format!("({t})({})", self.expr(expr))
                } else {
                    format!("{{{t}}}({})", self.expr(expr))
                }
            }
            Index { base, index } => format!("{}[{}]", self.expr(base), self.expr(index)),
            Field { base, field } => {
                let name = match &base.ty {
                    Type::Struct(id) => self
                        .hir
                        .struct_def(*id)
                        .and_then(|s| s.fields.get(*field as usize))
                        .map(|f| f.name.clone())
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                format!("{}.{name}", self.expr(base))
            }
            Deref(p) => format!("*{}", self.expr(p)),
            AddrOf(x) => format!("&{}", self.expr(x)),
            Call { func, args } => {
                let name = self
                    .hir
                    .function(*func)
                    .map(|f| f.name.as_str())
                    .unwrap_or("?");
                format!("{name}({})", self.args(args))
            }
            Builtin(b) => match b {
                self::Builtin::Printf { format, args } => {
                    if args.is_empty() {
                        format!("printf({format:?})")
                    } else {
                        format!("printf({format:?}, {})", self.args(args))
                    }
                }
                self::Builtin::Argi { index, default } => match default {
                    Some(d) => format!("argi({}, {})", self.expr(index), self.expr(d)),
                    None => format!("argi({})", self.expr(index)),
                },
                self::Builtin::Wtime => "wtime()".into(),
                self::Builtin::RandSeed(s) => format!("rand_seed({})", self.expr(s)),
                self::Builtin::RandU32 => "rand_u32()".into(),
                self::Builtin::Math { func, args } => {
                    let suffix = if e.ty == Type::Float { "f" } else { "" };
                    format!("{}{suffix}({})", func.name(), self.args(args))
                }
            },
            Comma { lhs, rhs } => format!("({}, {})", self.expr(lhs), self.expr(rhs)),
            ThreadRank => "thread.rank".into(),
            ThreadSize => "thread.size".into(),
            ThreadOldRank => "thread.oldrank".into(),
            ThreadFork(x) => format!("thread.fork({})", self.expr(x)),
            ThreadKill(x) => format!("thread.kill({})", self.expr(x)),
            ThreadSortBy(x) => format!("thread.sortby({})", self.expr(x)),
            ThreadSplit(x) => format!("thread.split({})", self.expr(x)),
            ThreadGet { rank, var } => {
                format!("thread.get({}, {})", self.expr(rank), self.var(*var))
            }
            ThreadPut { rank, var, value } => format!(
                "thread.put({}, {}, {})",
                self.expr(rank),
                self.var(*var),
                self.expr(value)
            ),
            Reduce { op, value } => format!("reduce({}, {})", coll_str(*op), self.expr(value)),
            Scan { op, var } => format!("scan({}, {})", coll_str(*op), self.var(*var)),
            Compact {
                list,
                src,
                keep,
                flag,
            } => format!(
                "compact({}, {}, {}, {})",
                self.expr(list),
                self.expr(src),
                self.expr(keep),
                self.expr(flag)
            ),
            Split {
                list,
                src,
                side,
                flag,
            } => format!(
                "split({}, {}, {}, {})",
                self.expr(list),
                self.expr(src),
                self.expr(side),
                self.expr(flag)
            ),
            SortIdx(k) => format!("sort_idx({})", self.expr(k)),
            DNew { temp, count, elem } => format!(
                "{}[{}]{}",
                if *temp { "dtempnew" } else { "dnew" },
                self.expr(count),
                self.ty(elem)
            ),
            DTempFree => "dtempfree()".into(),
            ProcessorId => "$".into(),
            GroupRank => "$$".into(),
            GroupId => "@".into(),
            GroupSize => "groupsize()".into(),
            MultiPrefix { op, ptr, value } => {
                let n = match op {
                    MpOp::Add => "mpadd",
                    MpOp::Max => "mpmax",
                    MpOp::And => "mpand",
                    MpOp::Or => "mpor",
                };
                format!("{n}({}, {})", self.expr(ptr), self.expr(value))
            }
            Error => "<error>".into(),
        }
    }
}
