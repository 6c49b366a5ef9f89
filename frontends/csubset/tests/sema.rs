//! Semantic analysis: every diagnostic code, and the shape of the HIR
//! (implicit conversions, declaration by assignment, require outputs).

#![allow(clippy::unwrap_used, clippy::panic)]

use pgpu_csubset::hir::*;
use pgpu_csubset::{Language, analyze_source, check_source};

fn first_code(lang: Language, src: &str) -> Option<&'static str> {
    let (_, d) = analyze_source(src, lang);
    d.first().map(|d| d.code)
}

#[test]
fn every_code() {
    use Language::{Bsgp, C};
    let cases: &[(Language, &str, &str)] = &[
        (C, "int main() { return `; }", "csubset::E001"),
        (C, "int main() { /* x", "csubset::E002"),
        (C, "int main() { printf(\"x); }", "csubset::E003"),
        (C, "int main() { int c = 'ab'; }", "csubset::E004"),
        (C, "int main() { int c = 0x; }", "csubset::E005"),
        (
            C,
            "int main() { printf(\"\\q\"); return 0; }",
            "csubset::E006",
        ),
        (
            C,
            "#include <stdio.h>\nint main() { return 0; }",
            "csubset::W001",
        ),
        (
            C,
            "#pragma pgpu speculate window(0)\nint main() { return 0; }",
            "csubset::W002",
        ),
        (
            C,
            "int main() {\n#pragma pgpu speculate\n return 0; }",
            "csubset::W003",
        ),
        (C, "int main() { return 0 }", "csubset::E010"),
        (C, "int main() { return 1 + ; }", "csubset::E011"),
        (
            C,
            "int f(int x); int main() { return f(1); }",
            "csubset::E012",
        ),
        (C, "f() { }", "csubset::E013"),
        (C, "int main() { short s; }", "csubset::E017"),
        (C, "int main() { int (; }", "csubset::E010"),
        (C, "int main() { unsigned float x; }", "csubset::E015"),
        (C, "int main() { int if = 1; }", "csubset::E018"),
        (C, "int main() { return y; }", "csubset::E020"),
        (C, "int main() { return g(); }", "csubset::E021"),
        (C, "int main() { int a; int a; return 0; }", "csubset::E022"),
        (
            C,
            "int main() { int* p = 0; float f = p; return 0; }",
            "csubset::E023",
        ),
        (C, "int main() { int* p; return p * 2; }", "csubset::E024"),
        (C, "int main() { float f; return ~f; }", "csubset::E025"),
        (
            C,
            "int f(int a) { return a; } int main() { return f(1, 2); }",
            "csubset::E026",
        ),
        (C, "int main() { 1 = 2; return 0; }", "csubset::E027"),
        (C, "int main() { break; }", "csubset::E028"),
        (C, "int main() { continue; }", "csubset::E029"),
        (C, "int main() { return; }", "csubset::E030"),
        (C, "void f() { return 1; }", "csubset::E031"),
        (
            C,
            "int main() { printf(\"%d\\n\", 1.5); return 0; }",
            "csubset::E032",
        ),
        (
            C,
            "struct S { int a; }; int main() { struct S s; return s.b; }",
            "csubset::E033",
        ),
        (C, "int main() { int x = 1; return x(); }", "csubset::E034"),
        (
            C,
            "struct S { int a; }; int main() { struct S s; if (s) return 1; return 0; }",
            "csubset::E035",
        ),
        (
            C,
            "struct S { int a; }; int main() { struct S s; return (int)s; }",
            "csubset::E036",
        ),
        (C, "int main() { int x = 1; return x[0]; }", "csubset::E037"),
        (C, "int main() { int x = 1; return *x; }", "csubset::E038"),
        (Bsgp, "void f() { p = NULL; }", "csubset::E040"),
        (C, "int main() { void v; return 0; }", "csubset::E041"),
        (
            C,
            "int main(int n) { int a[n]; return 0; }",
            "csubset::E042",
        ),
        (
            Bsgp,
            "void f(int x) { spawn(1) { y = reduce(-, x); } }",
            "csubset::E045",
        ),
        (
            C,
            "int main() { char* s = \"x\"; return 0; }",
            "csubset::E046",
        ),
        (
            Bsgp,
            "void f(int* a) { spawn(1) { b = thread.get(0, a[0]); } }",
            "csubset::E047",
        ),
        (
            Bsgp,
            "void f() { spawn(1) { x = thread.color; } }",
            "csubset::E049",
        ),
        (
            C,
            "int main() { int a[2] = {1, 2, 3}; return 0; }",
            "csubset::E050",
        ),
        (
            C,
            "struct S { struct S s; }; int main() { return 0; }",
            "csubset::E051",
        ),
    ];
    for (lang, src, code) in cases {
        assert_eq!(first_code(*lang, src), Some(*code), "{src}");
    }
}

#[test]
fn clean_c_program() {
    let src = r#"
struct P { int x; float y; };
int g = 3;
double arr[4] = {1.0, 2.0};
inline int sq(int v) { return v * v; }
int main() {
  struct P p;
  p.x = 1; p.y = 2.5f;
  struct P* q = &p;
  q->x += 2;
  int a[3] = {1, 2, 3}, *pa = a;
  unsigned u = 10u;
  long l = 5L;
  char c = 'a';
  bool b = u > 3 && !(l < 0);
  for (int i = 0; i < 3; i++) { a[i] <<= 1; if (a[i] == 4) continue; }
  int k = 0;
  do { k++; } while (k < 3);
  while (true) { break; }
  pa = pa + 1;
  long d = pa - a;
  u = u >> 1;
  float f = (float)sq(2) / 3;
  double t = wtime();
  rand_seed(42);
  unsigned r = rand_u32();
  int n = argi(0) + argi(1, 7);
  printf("%d %u %ld %c %f %p %% %5.2f\n", a[0], u, l, c, f, pa, t);
  return b ? (int)c + g + (int)sizeof(struct P) + (int)d + (int)r + n : 0;
}
"#;
    let r = check_source("t.c", src, Language::C);
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let errs = pgpu_csubset::hir_verify::verify(r.hir.as_ref().unwrap());
    assert!(errs.is_empty(), "{errs:?}");
}

/// The first initialiser of `main` named `name`.
fn init_of<'h>(hir: &'h Hir, func: &str, name: &str) -> &'h Expr {
    let f = hir.function_by_name(func).unwrap();
    fn find<'h>(hir: &'h Hir, stmts: &'h [Stmt], name: &str) -> Option<&'h Expr> {
        for s in stmts {
            match &s.kind {
                StmtKind::Decl {
                    var,
                    init: Some(Init::Expr(e)),
                } if hir.var(*var).unwrap().name == name => {
                    return Some(e);
                }
                StmtKind::Spawn { body, .. } => {
                    if let Some(e) = find(hir, &body.stmts, name) {
                        return Some(e);
                    }
                }
                StmtKind::Block(b) | StmtKind::Require { body: b, .. } => {
                    if let Some(e) = find(hir, &b.stmts, name) {
                        return Some(e);
                    }
                }
                StmtKind::Par { branches } => {
                    if let Some(e) = find(hir, branches, name) {
                        return Some(e);
                    }
                }
                _ => {}
            }
        }
        None
    }
    find(hir, &f.body.stmts, name).unwrap()
}

#[test]
fn implicit_conversions_are_explicit() {
    let src = "int main() { char c = 'x'; unsigned u = 1u; float f = c + 1.5f; long l = u + 1; double d = f; return 0; }";
    let hir = check_source("t", src, Language::C).hir.unwrap();
    // c + 1.5f: char -> float, added in float.
    let e = init_of(&hir, "main", "f");
    let ExprKind::Binary {
        op: BinaryOp::Add,
        lhs,
        rhs,
    } = &e.kind
    else {
        panic!("{e:?}")
    };
    assert_eq!(e.ty, Type::Float);
    assert!(matches!(
        lhs.kind,
        ExprKind::Cast {
            kind: CastKind::IntToFloat,
            explicit: false,
            ..
        }
    ));
    assert_eq!(rhs.ty, Type::Float);
    // u + 1 in unsigned, then extended to long.
    let e = init_of(&hir, "main", "l");
    let ExprKind::Cast {
        kind: CastKind::IntExtend,
        expr,
        ..
    } = &e.kind
    else {
        panic!("{e:?}")
    };
    assert_eq!(expr.ty, Type::UInt);
    let e = init_of(&hir, "main", "d");
    assert!(matches!(
        e.kind,
        ExprKind::Cast {
            kind: CastKind::FloatExtend,
            ..
        }
    ));
}

#[test]
fn prototypes_of_math_builtins_declare_them() {
    // What `#include <math.h>` says: accepted, and the call is the builtin.
    let src = "double sqrt(double); float powf(float, float);\n\
               int main() { double a = sqrt(2.0); float b = powf(2.0f, 3.0f); return 0; }";
    let (hir, diagnostics) = analyze_source(src, Language::C);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let e = init_of(&hir, "main", "a");
    assert!(matches!(
        e.kind,
        ExprKind::Builtin(Builtin::Math {
            func: MathFn::Sqrt,
            ..
        })
    ));
    // A prototype that says another signature is an error.
    for bad in [
        "float sqrtf(double); int main() { return 0; }",
        "double pow(double); int main() { return 0; }",
        "int floor(double); int main() { return 0; }",
    ] {
        let (_, diagnostics) = analyze_source(bad, Language::C);
        assert_eq!(
            diagnostics.first().map(|d| d.code),
            Some("csubset::E012"),
            "{bad}"
        );
        assert!(
            diagnostics[0]
                .message
                .contains("does not match its C signature"),
            "{}",
            diagnostics[0].message
        );
    }
}

#[test]
fn math_builtins_convert_like_prototyped_calls() {
    let src = "int main() { int n = 4; float f = 0.5f; double a = sqrt(n); double b = pow(f, 2); \
               float c = sqrtf(1.0); int d = floor(2.5); return 0; }";
    let hir = check_source("t", src, Language::C).hir.unwrap();
    // sqrt(n): the int converts to double.
    let e = init_of(&hir, "main", "a");
    let ExprKind::Builtin(Builtin::Math {
        func: MathFn::Sqrt,
        args,
    }) = &e.kind
    else {
        panic!("{e:?}")
    };
    assert_eq!(e.ty, Type::Double);
    assert!(matches!(
        args[..],
        [Expr {
            kind: ExprKind::Cast {
                kind: CastKind::IntToFloat,
                ..
            },
            ty: Type::Double,
            ..
        }]
    ));
    // pow(f, 2): the float is promoted, the int converted.
    let e = init_of(&hir, "main", "b");
    let ExprKind::Builtin(Builtin::Math {
        func: MathFn::Pow,
        args,
    }) = &e.kind
    else {
        panic!("{e:?}")
    };
    let kinds: Vec<_> = args
        .iter()
        .map(|a| match a.kind {
            ExprKind::Cast { kind, .. } => Some(kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [Some(CastKind::FloatExtend), Some(CastKind::IntToFloat)]
    );
    // sqrtf(1.0): the float form, its argument narrowed to float.
    let e = init_of(&hir, "main", "c");
    let ExprKind::Builtin(Builtin::Math { args, .. }) = &e.kind else {
        panic!("{e:?}")
    };
    assert_eq!(e.ty, Type::Float);
    assert_eq!(args[0].ty, Type::Float);
    // int d = floor(2.5): the double result converts to int.
    let e = init_of(&hir, "main", "d");
    let ExprKind::Cast {
        kind: CastKind::FloatToInt,
        expr,
        ..
    } = &e.kind
    else {
        panic!("{e:?}")
    };
    assert!(matches!(
        expr.kind,
        ExprKind::Builtin(Builtin::Math {
            func: MathFn::Floor,
            ..
        })
    ));
}

#[test]
fn declaration_by_assignment_and_require_outputs() {
    let src = "void f(int* a, int n) { spawn(n) { rk = thread.rank; rk = rk + 1; require { t = dtempnew[n]int; } t[rk] = a[rk]; } }";
    let r = check_source("t", src, Language::Bsgp);
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let hir = r.hir.unwrap();
    let rk: Vec<&VarInfo> = hir.vars.iter().filter(|v| v.name == "rk").collect();
    assert_eq!(rk.len(), 1, "second assignment reuses rk");
    assert!(rk[0].by_assignment);
    assert_eq!(rk[0].ty, Type::Int);
    assert_eq!(rk[0].space, Space::Thread);
    let t = hir.vars.iter().find(|v| v.name == "t").unwrap();
    assert_eq!(t.space, Space::Host);
    assert_eq!(t.ty, Type::Ptr(Box::new(Type::Int)));
    let f = hir.function_by_name("f").unwrap();
    let StmtKind::Spawn { body, .. } = &f.body.stmts[0].kind else {
        panic!()
    };
    let StmtKind::Require { outputs, .. } = &body.stmts[2].kind else {
        panic!()
    };
    assert_eq!(outputs, &vec![t.id]);
    assert!(f.has_spawn && !f.uses_spmd);
    // In C, the same assignment is an unknown name.
    assert_eq!(
        first_code(Language::C, "void f() { x = 1; }"),
        Some("csubset::E020")
    );
}

#[test]
fn lvalue_categories() {
    let src = "int g; int main() { int x; int* p = &g; x = 1; *p = 2; g = 3; p[1] = 4; return 0; }";
    let hir = check_source("t", src, Language::C).hir.unwrap();
    let main = hir.function_by_name("main").unwrap();
    let cats: Vec<ValueCategory> = main
        .body
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Expr(Expr {
                kind: ExprKind::Assign { target, .. },
                ..
            }) => Some(target.category),
            _ => None,
        })
        .collect();
    assert_eq!(
        cats,
        [
            ValueCategory::Local,
            ValueCategory::Memory,
            ValueCategory::Global,
            ValueCategory::Memory
        ]
    );
}

#[test]
fn many_errors_in_one_run() {
    let src = "int f(int x) { int y = ; return x +* 2; }\nint g() { return unknown; }\nint h(int a, int b) { return f(a, b); }\nint main() { break; printf(\"%d %f\\n\", 1); return g(; }";
    let r = check_source("t", src, Language::C);
    let codes: Vec<&str> = r.diagnostics.iter().map(|d| d.code).collect();
    assert!(codes.len() >= 6, "{codes:?}");
    // Source order.
    let starts: Vec<u32> = r.diagnostics.iter().map(|d| d.span().start).collect();
    let mut sorted = starts.clone();
    sorted.sort();
    assert_eq!(starts, sorted);
}

#[test]
fn salsa_queries() {
    use pgpu_csubset::db::{Database, SourceFile, check, parse};
    let mut db = Database::default();
    let file = SourceFile::new(
        &db,
        "a.c".into(),
        "int main() { return 0; }".into(),
        Language::C,
    );
    assert!(parse(&db, file).1.is_empty());
    assert!(check(&db, file).1.is_empty());
    use salsa::Setter;
    file.set_text(&mut db).to("int main() { return x; }".into());
    assert_eq!(check(&db, file).1[0].code, "csubset::E020");
}

#[test]
fn rendering() {
    let src = "int main() {\n  return y;\n}\n";
    let r = check_source("t.c", src, Language::C);
    let idx = pgpu_csubset::LineIndex::new(src);
    assert_eq!(
        r.diagnostics[0].render_short("t.c", &idx),
        "t.c:2:10: error[csubset::E020]: unknown name `y`"
    );
    let report = r.diagnostics[0].clone().with_source("t.c", src);
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .render_report(&mut out, report.as_ref())
        .unwrap();
    assert!(
        out.contains("csubset::E020") && out.contains("not declared"),
        "{out}"
    );
}

#[test]
fn missing_return_warning() {
    let warn = |src: &str| {
        let r = check_source("t", src, Language::C);
        assert!(!r.has_errors(), "{:?}", r.diagnostics);
        r.diagnostics.iter().any(|d| d.code == "csubset::W004")
    };
    assert!(warn("int f(int x) { if (x) return 1; }"));
    assert!(!warn("int f(int x) { if (x) return 1; else return 2; }"));
    assert!(!warn("int f(int x) { while (1) { x++; } }"));
    assert!(warn("int f(int x) { while (1) { break; } }"));
    assert!(!warn("int f(int x) { for (;;) { if (x) return x; } }"));
    assert!(!warn("int main() { }"));
    assert!(!warn("void f() { }"));
}

#[test]
fn suggestions() {
    let r = check_source(
        "t",
        "int count; int main() { int total = 0; return totl + cont; }",
        Language::C,
    );
    let helps: Vec<&str> = r
        .diagnostics
        .iter()
        .filter_map(|d| d.help.as_deref())
        .collect();
    assert_eq!(
        helps,
        [
            "a name with a similar spelling exists: `total`",
            "a name with a similar spelling exists: `count`"
        ]
    );
    let r = check_source(
        "t",
        "int helper() { return 1; } int main() { return helpr(); }",
        Language::C,
    );
    assert_eq!(
        r.diagnostics[0].help.as_deref(),
        Some("a function with a similar name exists: `helper`")
    );
}

#[test]
fn hir_dump() {
    let src = "void f(int* a, int n) { spawn(n) { rk = thread.rank; s = reduce(+, a[rk]); require t = dtempnew[n]float; t[rk] = s; barrier; x = thread.get(rk, rk); a[rk] = x; } }";
    let hir = check_source("t", src, Language::Bsgp).hir.unwrap();
    let text = pgpu_csubset::hir_print::print(&hir);
    let want = "\
void f(int* a#0, int n#1) [has_spawn] {
  spawn (n#1) {
    auto int rk#2 /*thread*/ = thread.rank;
    auto int s#3 /*thread*/ = reduce(+, a#0[{long}(rk#2)]);
    require -> (t#4) {
      auto float* t#4 = dtempnew[n#1]float;
    }
    t#4[{long}(rk#2)] = {float}(s#3);
    barrier;
    auto int x#5 /*thread*/ = thread.get(rk#2, rk#2);
    a#0[{long}(rk#2)] = x#5;
  }
}
";
    assert_eq!(text, want);
}

#[test]
fn mixed_arithmetic_is_well_typed() {
    let src = r#"
struct P { int x; double w[2]; };
struct P ps[3];
int main() {
  char c = 'a'; bool b = false; int i = 1; unsigned u = 2u; long l = 3; unsigned long ul = 4ul;
  float f = 1.0f; double d = 2.0;
  c += 1; b += 1; i += 1.5; u <<= 2; l -= u; ul *= i; f /= 3; d -= f; i %= 3; l >>= c;
  i = c + b + i; l = i * u + l; d = f * c; ul = ul / l; u = ~u ^ (unsigned)i;
  i = -c; f = -f; b = !i && (f < d || c == 'x'); i = b ? c : i; d = i > 0 ? f : d;
  int a[4]; int* p = a; p += 2; p--; ++p; i = (int)(p - a); i = *p + p[1] + a[2];
  ps[1].x = i; ps[2].w[1] = d; struct P q = ps[0]; q.x++; ps[0] = q;
  struct P* pp = &ps[1]; pp->w[0] += 1; i = pp->x << 2 >> 1;
  i = (i, c); i = sizeof(struct P) + sizeof i;
  return i & 0xff | (int)(l % 7);
}
"#;
    let r = check_source("t.c", src, Language::C);
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let errs = pgpu_csubset::hir_verify::verify(r.hir.as_ref().unwrap());
    assert!(errs.is_empty(), "{errs:?}");
    // And some that are not.
    for bad in [
        "int main() { float f = 1; f <<= 1; return 0; }",
        "int main() { double d = 1; d %= 2; return 0; }",
        "int main() { int* p; p *= 2; return 0; }",
        "struct P { int x; }; int main() { struct P a; a += 1; return 0; }",
        "int main() { int a[2]; int b[2]; a = b; return 0; }",
        "int main() { int* p; float* q = p; return 0; }",
    ] {
        let r = check_source("t.c", bad, Language::C);
        assert!(r.has_errors(), "{bad}");
    }
}
