//! Parser: precedence and associativity, language-specific constructs,
//! error recovery.

#![allow(clippy::unwrap_used, clippy::panic)]

use pgpu_csubset::ast::*;
use pgpu_csubset::{Language, parse_source};

fn sexp(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int { value, .. } => value.to_string(),
        ExprKind::Ident(s) => s.clone(),
        ExprKind::Unary { op, operand } => {
            let o = match op {
                UnOp::Neg => "neg",
                UnOp::Plus => "pos",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
                UnOp::Deref => "deref",
                UnOp::AddrOf => "addr",
                UnOp::PreInc => "pre++",
                UnOp::PreDec => "pre--",
                UnOp::PostInc => "post++",
                UnOp::PostDec => "post--",
            };
            format!("({o} {})", sexp(operand))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", binop(*op), sexp(lhs), sexp(rhs))
        }
        ExprKind::Assign { op, lhs, rhs } => {
            let o = op
                .map(|o| format!("{}=", binop(o)))
                .unwrap_or_else(|| "=".into());
            format!("({o} {} {})", sexp(lhs), sexp(rhs))
        }
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            format!("(? {} {} {})", sexp(cond), sexp(then_expr), sexp(else_expr))
        }
        ExprKind::Cast { ty, expr } => format!(
            "(cast {:?}{} {})",
            ty.base,
            "*".repeat(ty.pointers as usize),
            sexp(expr)
        ),
        ExprKind::SizeofType(t) => format!("(sizeof {:?})", t.base),
        ExprKind::SizeofExpr(e) => format!("(sizeof {})", sexp(e)),
        ExprKind::Index { base, index } => format!("([] {} {})", sexp(base), sexp(index)),
        ExprKind::Call { callee, args } => {
            let a: Vec<String> = args.iter().map(sexp).collect();
            format!("(call {} {})", sexp(callee), a.join(" "))
        }
        ExprKind::Member { base, field, arrow } => {
            format!(
                "({} {} {})",
                if *arrow { "->" } else { "." },
                sexp(base),
                field.text
            )
        }
        ExprKind::Comma { lhs, rhs } => format!("(, {} {})", sexp(lhs), sexp(rhs)),
        ExprKind::Thread => "thread".into(),
        ExprKind::DNew { temp, count, ty } => {
            format!(
                "({} {} {:?})",
                if *temp { "dtempnew" } else { "dnew" },
                sexp(count),
                ty.base
            )
        }
        ExprKind::OpArg(op) => format!("op{}", binop(*op)),
        other => format!("{other:?}"),
    }
}

fn binop(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Rem => "%",
        BinOp::Shl => "<<",
        BinOp::Shr => ">>",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::LogAnd => "&&",
        BinOp::LogOr => "||",
    }
}

fn parse_expr(src: &str, lang: Language) -> String {
    let text = format!("void f() {{ {src}; }}");
    let (ast, diags) = parse_source(&text, lang);
    assert!(diags.is_empty(), "{src}: {diags:?}");
    let Item::Function(f) = &ast.items[0] else {
        panic!()
    };
    let StmtKind::Expr(e) = &f.body.as_ref().unwrap().stmts[0].kind else {
        panic!("{src}")
    };
    sexp(e)
}

#[test]
fn precedence_table() {
    let cases = [
        ("a + b * c", "(+ a (* b c))"),
        ("a * b + c", "(+ (* a b) c)"),
        ("a - b - c", "(- (- a b) c)"),
        ("a / b % c", "(% (/ a b) c)"),
        ("a << b + c", "(<< a (+ b c))"),
        ("a < b << c", "(< a (<< b c))"),
        ("a == b < c", "(== a (< b c))"),
        ("a & b == c", "(& a (== b c))"),
        ("a ^ b & c", "(^ a (& b c))"),
        ("a | b ^ c", "(| a (^ b c))"),
        ("a && b | c", "(&& a (| b c))"),
        ("a || b && c", "(|| a (&& b c))"),
        ("a ? b : c ? d : e", "(? a b (? c d e))"),
        ("a || b ? c : d", "(? (|| a b) c d)"),
        ("a = b = c", "(= a (= b c))"),
        ("a += b *= c", "(+= a (*= b c))"),
        ("a = b ? c : d", "(= a (? b c d))"),
        ("a ? b = c : d", "(? a (= b c) d)"),
        ("a, b = c, d", "(, (, a (= b c)) d)"),
        ("a <<= b >>= c", "(<<= a (>>= b c))"),
        ("a %= b &= c |= d ^= e", "(%= a (&= b (|= c (^= d e))))"),
        ("-a * b", "(* (neg a) b)"),
        ("!a && ~b", "(&& (! a) (~ b))"),
        ("*p++", "(deref (post++ p))"),
        ("++*p", "(pre++ (deref p))"),
        ("&a[i]", "(addr ([] a i))"),
        ("a[i][j]", "([] ([] a i) j)"),
        ("p->x.y", "(. (-> p x) y)"),
        ("f(a, b)(c)", "(call (call f a b) c)"),
        ("(int)a + b", "(+ (cast Int a) b)"),
        ("(float*)p", "(cast Float* p)"),
        ("(unsigned long)x", "(cast ULong x)"),
        ("sizeof(int) * 2", "(* (sizeof Int) 2)"),
        ("sizeof x + 1", "(+ (sizeof x) 1)"),
        ("(a + b) * c", "(* (+ a b) c)"),
        ("a - -b", "(- a (neg b))"),
        ("x--  - --y", "(- (post-- x) (pre-- y))"),
        ("a < b == c > d", "(== (< a b) (> c d))"),
        ("a >= b != c <= d", "(!= (>= a b) (<= c d))"),
    ];
    for (src, want) in cases {
        assert_eq!(parse_expr(src, Language::C), want, "{src}");
    }
}

#[test]
fn bsgp_expressions() {
    let b = Language::Bsgp;
    assert_eq!(parse_expr("x = thread.rank", b), "(= x (. thread rank))");
    assert_eq!(
        parse_expr("thread.get(r - 1, v)", b),
        "(call (. thread get) (- r 1) v)"
    );
    assert_eq!(
        parse_expr("s = reduce(+, x)", b),
        "(= s (call reduce op+ x))"
    );
    assert_eq!(parse_expr("scan(^, x)", b), "(call scan op^ x)");
    assert_eq!(parse_expr("reduce(max, x)", b), "(call reduce max x)");
    assert_eq!(
        parse_expr("p = dnew[n*3]int", b),
        "(= p (dnew (* n 3) Int))"
    );
    assert_eq!(
        parse_expr("p = dtempnew[thread.size]float", b),
        "(= p (dtempnew (. thread size) Float))"
    );
    // In C, `thread` is an identifier and `spawn` a function name.
    assert_eq!(parse_expr("thread.rank", Language::C), "(. thread rank)");
    assert_eq!(parse_expr("spawn(n)", Language::C), "(call spawn n)");
}

fn stmt_kinds(src: &str, lang: Language) -> (Vec<String>, usize) {
    let (ast, diags) = parse_source(src, lang);
    let mut out = Vec::new();
    for item in &ast.items {
        if let Item::Function(f) = item {
            for s in &f.body.as_ref().unwrap().stmts {
                let k = format!("{:?}", s.kind);
                out.push(k.split([' ', '(', '{']).next().unwrap().to_string());
            }
        }
    }
    (out, diags.iter().filter(|d| d.is_error()).count())
}

#[test]
fn bsgp_statements() {
    let src = "f(int* a, int n) { spawn(n) { barrier; } barrier(RANK_REASSIGNED); require x = 1; require { y = 2; } par { a = 1; b = 2; } }";
    let (k, errs) = stmt_kinds(src, Language::Bsgp);
    assert_eq!(errs, 0);
    assert_eq!(k, ["Spawn", "Barrier", "Require", "Require", "Par"]);
    // In C the same words are not keywords: errors.
    let (_, errs) = stmt_kinds("void f() { spawn(n) { } }", Language::C);
    assert!(errs > 0);
}

#[test]
fn fork_statements() {
    let src = "sync void f(sh int* a) { sh int x = 0; pr int y; start(4) { fork(2; @ = $ % 2; $ = $ / 2) { seq { x = mpadd(a, 1); } } } farm { y = @; } barrier; }";
    let (k, errs) = stmt_kinds(src, Language::Fork);
    assert_eq!(errs, 0);
    assert_eq!(k, ["Decl", "Decl", "Start", "Farm", "Barrier"]);
}

#[test]
fn pragma_attaches_to_for() {
    let src = "void f(int* a) {\n#pragma pgpu speculate window(16)\n  for (int i = 0; i < 10; i++) a[i] = i;\n}";
    let (ast, diags) = parse_source(src, Language::C);
    assert!(diags.is_empty(), "{diags:?}");
    let Item::Function(f) = &ast.items[0] else {
        panic!()
    };
    let StmtKind::For { pragma, .. } = &f.body.as_ref().unwrap().stmts[0].kind else {
        panic!()
    };
    assert_eq!(pragma.as_ref().unwrap().window, Some(16));
    // A pragma before something else is a warning.
    let (_, diags) = parse_source(
        "void f() {\n#pragma pgpu speculate\n  return;\n}",
        Language::C,
    );
    assert_eq!(diags.len(), 1);
    assert!(!diags[0].is_error());
}

#[test]
fn recovery_reports_many_errors() {
    let src = "
int f(int x) {
  int y = ;
  y = (x + ;
  return x
}
int g() { return 1 +; }
int h( { }
int k() { int z = 3; return z; }
";
    let (ast, diags) = parse_source(src, Language::C);
    let errors = diags.iter().filter(|d| d.is_error()).count();
    assert!(errors >= 4, "{diags:?}");
    // The good function after the bad ones still parses.
    assert!(
        ast.items
            .iter()
            .any(|i| matches!(i, Item::Function(f) if f.name.text == "k" && f.body.is_some()))
    );
}

#[test]
fn declarations() {
    let src = "struct P { int x; float y[3]; }; int g = 1, *h, a[4] = {1, 2}; unsigned long u; inline int f(int a[], struct P* p, char c) { const int k = 2; return k; } void proto(int);";
    let (ast, diags) = parse_source(src, Language::C);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(ast.items.len(), 5);
    let Item::Global(d) = &ast.items[1] else {
        panic!()
    };
    assert_eq!(d.declarators.len(), 3);
    let Item::Function(f) = &ast.items[3] else {
        panic!()
    };
    assert!(f.is_inline);
    assert_eq!(f.params[0].ty.pointers, 1);
    // BSGP functions may omit the result type; C may not.
    let (_, d) = parse_source("f(int n) { }", Language::Bsgp);
    assert!(d.is_empty());
    let (_, d) = parse_source("f(int n) { }", Language::C);
    assert_eq!(d[0].code, "csubset::E013");
}

#[test]
fn missing_brace_hint() {
    let src = "void f(int* a) {\n  if (a) {\n    a[0] = 1;\n\nint main() {\n  return 0;\n}\n";
    let (_, diags) = parse_source(src, Language::C);
    assert!(
        diags
            .iter()
            .any(|d| d.help.as_deref() == Some("is a `}` missing before this line?")),
        "{diags:?}"
    );
}

#[test]
fn fork_paper_example_checks() {
    let src = "
sync void f(sh int* out) {
  sh int a[16];
  pr int loc;
  pr int myID = $;
  loc = a[myID];
  if (myID % 2 == 0) a[myID] = myID; else a[myID] = loc + 1;
  loc = a[myID] + a[(myID + 1) % 16];
  fork(2; @ = $ % 2; $ = $ / 2) { out[@] = mpadd(&a[0], loc); }
  seq { out[0] = 1; }
  barrier;
}
int main() { start(16) farm { } return 0; }
";
    let r = pgpu_csubset::check_source("f.fork", src, Language::Fork);
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let hir = r.hir.unwrap();
    let f = hir.function_by_name("f").unwrap();
    assert_eq!(f.mode, Some(pgpu_csubset::hir::FnMode::Sync));
    let a = hir.vars.iter().find(|v| v.name == "a").unwrap();
    assert_eq!(a.storage, Some(pgpu_csubset::hir::Storage::Shared));
}
