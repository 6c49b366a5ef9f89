//! The public lowering API: modules that verify, errors as values (front
//! end, unsupported constructs, several functions in one run), printing.

use melior::ir::operation::OperationLike;

const KERNEL: &str = "\
void kernel(int* a, int n) {
  spawn(n) {
    x = a[thread.rank];
    barrier;
    a[thread.rank] = reduce(+, x);
  }
}

int main() {
  int* a = dnew[4]int;
  kernel(a, 4);
  return a[0];
}
";

#[test]
fn compiles_to_a_verified_module() {
    let context = pgpu_bsgp::create_context();
    let module =
        pgpu_bsgp::compile_to_module(&context, "kernel.bsgp", KERNEL).expect("the program lowers");
    assert!(module.as_operation().verify());
    let text = module.as_operation().to_string();
    assert!(text.contains("pgpu.spawn"), "{text}");
    assert!(text.contains("pgpu.reduce add"), "{text}");
    assert!(text.contains("func.func @main() -> i32"), "{text}");
}

#[test]
fn prints_locations_that_point_into_the_source() {
    let text = pgpu_bsgp::lower_to_mlir("kernel.bsgp", KERNEL, true).expect("lowers");
    assert!(
        text.contains(r#"pgpu.barrier loc("kernel.bsgp":4:5)"#),
        "{text}"
    );
    let plain = pgpu_bsgp::lower_to_mlir("kernel.bsgp", KERNEL, false).expect("lowers");
    assert!(!plain.contains("loc("), "{plain}");
}

#[test]
fn front_end_errors_stop_before_the_lowering() {
    let context = pgpu_bsgp::create_context();
    let errors = pgpu_bsgp::compile_to_module(&context, "bad.bsgp", "int main() { return x; }")
        .expect_err("unknown name");
    assert!(errors.iter().any(|d| d.is_error()), "{errors:?}");
    assert!(
        errors.iter().all(|d| !d.code.starts_with("csubset::E9")),
        "{errors:?}"
    );
}

#[test]
fn reports_unsupported_constructs_of_every_function() {
    let source = "\
int f(int x) { int* p = &x; return p[0]; }
bool g(int* p, int* q) { return p == q; }
int main() { return 0; }
";
    let context = pgpu_bsgp::create_context();
    let errors =
        pgpu_bsgp::compile_to_module(&context, "unsupported.bsgp", source).expect_err("rejected");
    let codes: Vec<_> = errors.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["csubset::E900", "csubset::E900"], "{errors:?}");
    assert_eq!(
        errors[0].span().start as usize,
        source.find("&x").expect("&x")
    );
    assert_eq!(
        errors[1].span().start as usize,
        source.find("p == q").expect("p == q")
    );
}

#[test]
fn warnings_survive_a_successful_compilation() {
    let context = pgpu_bsgp::create_context();
    let compiled = pgpu_bsgp::compile(&context, "ok.bsgp", KERNEL);
    assert!(compiled.module.is_some());
    assert!(compiled.diagnostics.iter().all(|d| !d.is_error()));
}

#[test]
fn salsa_query_lowers_and_reports() {
    use pgpu_csubset::{
        Language,
        db::{Database, SourceFile},
    };
    let db = Database::default();
    let file = SourceFile::new(
        &db,
        "kernel.bsgp".to_string(),
        KERNEL.to_string(),
        Language::Bsgp,
    );
    let (text, diagnostics) = pgpu_bsgp::lower_query(&db, file);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let text = text.as_deref().expect("lowered");
    assert!(text.contains("pgpu.spawn"), "{text}");
    assert!(text.contains("loc(\"kernel.bsgp\""), "{text}");

    let bad = SourceFile::new(
        &db,
        "bad.bsgp".to_string(),
        "int main() { return y; }".to_string(),
        Language::Bsgp,
    );
    let (text, diagnostics) = pgpu_bsgp::lower_query(&db, bad);
    assert!(text.is_none());
    assert!(diagnostics.iter().any(|d| d.is_error()));
}
