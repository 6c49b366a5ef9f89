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

#[test]
fn barriers_order_supersteps() {
    // Each thread appends its rank to a shared log slot per superstep; the
    // log shows that every thread finished superstep 1 before any thread
    // started superstep 2, also through an spmd_inline call.
    let out = output(
        r#"
func.func @sync() attributes {pgpu.spmd_inline} {
  pgpu.barrier
  return
}
func.func @main() -> i32 {
  %c3 = arith.constant 3 : index
  %log = memref.alloc() : memref<6xindex>
  %ctr = memref.alloc() : memref<index>
  %c0 = arith.constant 0 : index
  memref.store %c0, %ctr[] : memref<index>
  pgpu.spawn %c3 {
    %r = pgpu.rank : index
    pgpu.printf "a%d "(%r) : index
    func.call @sync() : () -> ()
    pgpu.printf "b%d "(%r) : index
    pgpu.barrier
  }
  pgpu.printf "\n"
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(out, "a0 a1 a2 b0 b1 b2 \n");
}

#[test]
fn par_branches_align_barriers() {
    let out = output(
        r#"
func.func @main() -> i32 {
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    pgpu.par {
      pgpu.printf "x%d "(%r) : index
      pgpu.barrier
      pgpu.printf "y%d "(%r) : index
    }, {
      pgpu.printf "p%d "(%r) : index
      pgpu.barrier
      pgpu.printf "q%d "(%r) : index
    }
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(out, "x0 p0 x1 p1 y0 q0 y1 q1 ");
}

#[test]
fn rand_matches_splitmix64() {
    let out = output(
        r#"
func.func @main() -> i32 {
  %first = pgpu.rand_u32 : i32
  %s = arith.constant 42 : i32
  pgpu.rand_seed %s : i32
  %a = pgpu.rand_u32 : i32
  %b = pgpu.rand_u32 : i32
  pgpu.printf "%u %u %u\n"(%first, %a, %b) : i32, i32, i32
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    let mut expected = Vec::new();
    for (seed, count) in [(0u64, 1), (42, 2)] {
        let mut state = seed;
        for _ in 0..count {
            state = state.wrapping_add(0x9E3779B97F4A7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
            z ^= z >> 31;
            expected.push(((z >> 32) as u32).to_string());
        }
    }
    assert_eq!(out, format!("{}\n", expected.join(" ")));
}

#[test]
fn exit_code_and_arguments() {
    let source = r#"
func.func @main() -> i32 {
  %k = arith.constant 1 : i32
  %d = arith.constant 9 : i32
  %v = pgpu.argi %k default %d : i32, i32
  return %v : i32
}
"#;
    assert_eq!(run(source, &[]).unwrap().exit_code, 9);
    assert_eq!(run(source, &["5", "-12"]).unwrap().exit_code, -12);
    assert!(run(source, &["5", "x"]).is_err());
}

#[test]
fn errors_carry_locations_and_output() {
    let error = run(
        r#"func.func @main() -> i32 {
  pgpu.printf "so far\n"
  %c4 = arith.constant 4 : index
  %a = memref.alloca() : memref<4xi32>
  %x = memref.load %a[%c4] : memref<4xi32>
  return %x : i32
}
"#,
        &[],
    )
    .unwrap_err();
    let position = error.location.clone().unwrap();
    assert_eq!(
        (position.file.as_str(), position.line, position.column),
        ("test.mlir", 5, 8)
    );
    assert!(error.message.contains("out-of-bounds"), "{}", error.message);
    assert_eq!(error.stdout, b"so far\n");
    assert!(
        error
            .to_string()
            .starts_with("test.mlir:5:8: error: out-of-bounds")
    );
}

#[test]
fn races_can_be_disabled() {
    let source = r#"
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<1xindex>
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    memref.store %r, %a[%c0] : memref<1xindex>
  }
  %v = memref.load %a[%c0] : memref<1xindex>
  %i = arith.index_cast %v : index to i32
  return %i : i32
}
"#;
    let error = run(source, &[]).unwrap_err();
    assert!(error.message.contains("data race"), "{}", error.message);
    assert_eq!(error.notes.len(), 1);
    let context = tool::create_context(&[]);
    let module = tool::parse_module(&context, source, "test.mlir").unwrap();
    let options = Options {
        race_detection: false,
        ..Options::default()
    };
    // Without the detector the last writer (rank 1) wins.
    assert_eq!(
        run_module(&module, "main", &[], &options)
            .unwrap()
            .exit_code,
        1
    );
}

#[test]
fn step_limit_stops_endless_loops() {
    let context = tool::create_context(&[]);
    let module = tool::parse_module(
        &context,
        r#"
func.func @main() -> i32 {
  %t = arith.constant true
  scf.while : () -> () {
    scf.condition(%t)
  } do {
    scf.yield
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
        "test.mlir",
    )
    .unwrap();
    let options = Options {
        max_steps: 1000,
        ..Options::default()
    };
    let error = run_module(&module, "main", &[], &options).unwrap_err();
    assert!(error.message.contains("step limit"), "{}", error.message);
}

#[test]
fn semantic_comparison_reports_the_first_difference() {
    let before = RunOutcome {
        stdout: b"a\nb\nc\n".to_vec(),
        exit_code: 0,
    };
    let same = before.clone();
    assert!(compare_outcomes(&before, &same).is_ok());
    let changed = RunOutcome {
        stdout: b"a\nB\nc\n".to_vec(),
        exit_code: 0,
    };
    let message = compare_outcomes(&before, &changed).unwrap_err();
    assert!(message.contains("line 2"), "{message}");
    assert!(
        message.contains("\"b\"") && message.contains("\"B\""),
        "{message}"
    );
    let shorter = RunOutcome {
        stdout: b"a\n".to_vec(),
        exit_code: 0,
    };
    let message = compare_outcomes(&before, &shorter).unwrap_err();
    assert!(message.contains("<end of output>"), "{message}");
    let exit = RunOutcome {
        stdout: before.stdout.clone(),
        exit_code: 1,
    };
    assert!(
        compare_outcomes(&before, &exit)
            .unwrap_err()
            .contains("exit code")
    );
}

#[test]
fn semantic_check_detects_a_changed_program() {
    // The same program before and after a (wrong) transformation that
    // changes a constant: the interpreter tells them apart.
    let original = r#"
func.func @main() -> i32 {
  %c = arith.constant 41 : i32
  pgpu.printf "%d\n"(%c) : i32
  %z = arith.constant 0 : i32
  return %z : i32
}
"#;
    let before = run(original, &[]).unwrap();
    let after = run(&original.replace("41", "42"), &[]).unwrap();
    let message = compare_outcomes(&before, &after).unwrap_err();
    assert!(
        message.contains("line 1") && message.contains("\"41\""),
        "{message}"
    );
}

#[test]
fn spawn_to_parallel_preserves_semantics() {
    // The interpreter runs scf.parallel (what pgpu-spawn-to-parallel makes)
    // with the same result as the spawn.
    let source = r#"
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %a = memref.alloc(%c5) : memref<?xindex>
  pgpu.spawn %c5 {
    %r = pgpu.rank : index
    %n = pgpu.size : index
    %v = arith.muli %r, %n : index
    memref.store %v, %a[%r] : memref<?xindex>
  }
  scf.for %i = %c0 to %c5 step %c1 {
    %x = memref.load %a[%i] : memref<?xindex>
    pgpu.printf "%d "(%x) : index
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
"#;
    let context = tool::create_context(&[pgpu_kernel_passes::register_passes]);
    let mut module = tool::parse_module(&context, source, "test.mlir").unwrap();
    let before = run_module(&module, "main", &[], &Options::default()).unwrap();
    let pass_manager = melior::pass::PassManager::new(&context);
    tool::add_pass_from_flag(&pass_manager, "pgpu-spawn-to-parallel", "").unwrap();
    pass_manager.run(&mut module).unwrap();
    assert!(module.as_operation().to_string().contains("scf.parallel"));
    let after = run_module(&module, "main", &[], &Options::default()).unwrap();
    assert_eq!(before.stdout, b"0 5 10 15 20 ");
    assert_eq!(before, after);
}

#[test]
fn fork_groups_are_pram_lock_step() {
    // Every processor reads its right neighbour and writes its own cell in
    // the same statement pair: lock-step reads see the old memory, so the
    // values rotate; concurrent writes to one cell keep the lowest rank's.
    let out = output(
        r#"
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %a = memref.alloc() : memref<3xindex>
  %w = memref.alloc() : memref<1xindex>
  scf.for %i = %c0 to %c3 step %c1 {
    memref.store %i, %a[%i] : memref<3xindex>
  }
  pgpu.spawn synchronous %c3 {
    %me = pgpu.group.rank : index
    %n = pgpu.group.size : index
    %m1 = arith.addi %me, %c1 : index
    %next = arith.remui %m1, %n : index
    %v = memref.load %a[%next] : memref<3xindex>
    memref.store %v, %a[%me] : memref<3xindex>
    %x = arith.addi %me, %c3 : index
    memref.store %x, %w[%c0] : memref<1xindex>
  }
  %a0 = memref.load %a[%c0] : memref<3xindex>
  %a1 = memref.load %a[%c1] : memref<3xindex>
  %c2 = arith.constant 2 : index
  %a2 = memref.load %a[%c2] : memref<3xindex>
  %win = memref.load %w[%c0] : memref<1xindex>
  pgpu.printf "%d %d %d %d\n"(%a0, %a1, %a2, %win) : index, index, index, index
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(out, "1 2 0 3\n");
}

#[test]
fn thread_fork_renumbers_in_parent_order() {
    let out = output(
        r#"
func.func @main() -> i32 {
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    %c1 = arith.constant 1 : index
    %k = arith.addi %r, %c1 : index
    %child = pgpu.thread.fork %k : index
    %nr = pgpu.rank : index
    %old = pgpu.oldrank : index
    %n = pgpu.size : index
    pgpu.printf "%d:%d.%d/%d "(%nr, %old, %child, %n) : index, index, index, index
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(out, "0:0.0/3 1:1.0/3 2:1.1/3 ");
}
