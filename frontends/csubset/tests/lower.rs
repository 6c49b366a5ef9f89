//! The common lowering on plain C, and its error paths: a construct no
//! extension lowers is a diagnostic, and IR that fails verification is an
//! internal-error diagnostic, never a panic.

use melior::{
    Context, dialect::DialectRegistry, ir::operation::OperationLike, utility::register_all_dialects,
};
use pgpu_csubset::{
    Language, analyze_source,
    hir::{Expr, Stmt, StmtKind},
    lower::{
        E_INTERNAL, E_UNSUPPORTED, Extension, LowerCx, LowerResult, NoExtension, Rv, lower_hir,
        program::E_PGPU_RULE,
    },
};

fn context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    pgpu_dialect::register(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    context.load_all_available_dialects();
    context
}

#[test]
fn lowers_plain_c() {
    let source = "int main() { int s = 0; for (int i = 0; i < 10; i++) s += i; printf(\"%d\\n\", s); return s; }";
    let (hir, diagnostics) = analyze_source(source, Language::C);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let context = context();
    let module = lower_hir(&context, &hir, &NoExtension, "sum.c", source).expect("lowers");
    assert!(module.as_operation().verify());
    let text = module.as_operation().to_string();
    assert!(text.contains("scf.for"), "{text}");
    assert!(text.contains("pgpu.printf"), "{text}");
}

#[test]
fn language_constructs_without_an_extension_are_unsupported() {
    let source = "void f(int n) { spawn(n) { barrier; } }";
    let (hir, _) = analyze_source(source, Language::Bsgp);
    let context = context();
    let errors = lower_hir(&context, &hir, &NoExtension, "f.bsgp", source).expect_err("no BSGP");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].code, E_UNSUPPORTED);
    assert_eq!(
        errors[0].span().start as usize,
        source.find("spawn").expect("spawn")
    );
}

/// Lowers a spawn's body straight into host code, where its barrier breaks
/// a pgpu rule; and `dtempfree()` as a `func.return` in the middle of a
/// block, which no program can cause.
struct Broken;

impl Extension for Broken {
    fn lower_stmt<'c>(&self, cx: &mut LowerCx<'c, '_>, stmt: &Stmt) -> LowerResult<()> {
        match &stmt.kind {
            StmtKind::Spawn { body, .. } => cx.lower_block(body),
            StmtKind::Barrier { .. } => {
                let location = cx.loc(stmt.span);
                let op = pgpu_dialect::ops::pgpu::BarrierOperation::builder(cx.context, location)
                    .build();
                cx.b().append(op.into());
                Ok(())
            }
            _ => Err(cx.unsupported(stmt.span, "this statement")),
        }
    }

    fn lower_expr<'c>(&self, cx: &mut LowerCx<'c, '_>, expr: &Expr) -> LowerResult<Rv<'c>> {
        let location = cx.loc(expr.span);
        cx.b().op("func.return", location, &[], &[], &[], vec![])?;
        Ok(Rv::Void)
    }
}

#[test]
fn broken_pgpu_rules_are_errors_at_the_source() {
    let source = "void f(int n) {\n  spawn(n) {\n    barrier;\n  }\n}\n";
    let (hir, _) = analyze_source(source, Language::Bsgp);
    let context = context();
    let errors = lower_hir(&context, &hir, &Broken, "f.bsgp", source).expect_err("invalid IR");
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|d| d.code == E_PGPU_RULE), "{errors:?}");
    assert!(
        errors[0].message.contains("must be nested in"),
        "{errors:?}"
    );
    assert_eq!(
        errors[0].span().start as usize,
        source.find("barrier").expect("barrier")
    );
}

#[test]
fn other_verification_failures_are_internal_errors() {
    let source = "void f() {\n  dtempfree();\n  return;\n}\n";
    let (hir, _) = analyze_source(source, Language::Bsgp);
    let context = context();
    let errors = lower_hir(&context, &hir, &Broken, "f.bsgp", source).expect_err("invalid IR");
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|d| d.code == E_INTERNAL), "{errors:?}");
    assert_eq!(
        errors[0].span().start as usize,
        source.find("dtempfree").expect("dtempfree")
    );
}
