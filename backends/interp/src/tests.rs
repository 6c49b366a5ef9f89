//! Unit tests: whole programs parsed from MLIR text and interpreted.

use super::*;
use pgpu_pass_infra::tool;

fn run(source: &str, args: &[&str]) -> Result<RunOutcome, InterpError> {
    let context = tool::create_context(&[]);
    let module = tool::parse_module(&context, source, "test.mlir").expect("parses");
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    run_module(&module, "main", &args, &Options::default())
}

fn output(source: &str) -> String {
    match run(source, &[]) {
        Ok(outcome) => String::from_utf8(outcome.stdout).unwrap(),
        Err(error) => panic!("run failed: {error}"),
    }
}

#[test]
fn host_loop_and_printf() {
    let out = output(
        r#"
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %z = arith.constant 0 : i32
  %s = scf.for %i = %c0 to %c10 step %c1 iter_args(%acc = %z) -> (i32) {
    %ii = arith.index_cast %i : index to i32
    %n = arith.addi %acc, %ii : i32
    scf.yield %n : i32
  }
  pgpu.printf "sum=%d\n"(%s) : i32
  %r = arith.constant 3 : i32
  return %r : i32
}
"#,
    );
    assert_eq!(out, "sum=45\n");
}
