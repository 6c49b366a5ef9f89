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

// ---------------------------------------------------------------------------
// Block spawns: ranges of one thread block synchronize independently.
// ---------------------------------------------------------------------------

fn run_error(source: &str) -> InterpError {
    match run(source, &[]) {
        Ok(outcome) => panic!(
            "the run succeeded: {}",
            String::from_utf8_lossy(&outcome.stdout)
        ),
        Err(error) => error,
    }
}

/// The line of an error's location.
fn line(error: &InterpError) -> u32 {
    error.location.as_ref().map_or(0, |p| p.line)
}

/// The (1-based) line of `source` where `needle` first occurs.
fn line_of(source: &str, needle: &str) -> u32 {
    let position = source.find(needle).expect("the needle occurs");
    source[..position].matches('\n').count() as u32 + 1
}

#[test]
fn block_capacity_is_a_cuda_block_on_one_multiprocessor() {
    // A CUDA GPU's largest thread block; the interpreter runs one thing at
    // a time, so it is one multiprocessor.
    let out = output(
        r#"
func.func @main() -> i32 {
  %max = pgpu.block_capacity : index
  %sms = pgpu.multiprocessors : index
  pgpu.printf "%d %d\n"(%max, %sms) : index, index
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(out, "1024 1\n");
}

#[test]
fn one_thread_runs_in_lockstep() {
    // The interpreter runs one thread at a time: no two threads of a
    // kernel run in lockstep, as on the runtime's CPU device.
    let out = output(
        r#"
func.func @main() -> i32 {
  %lanes = pgpu.lockstep_width : index
  pgpu.printf "%d\n"(%lanes) : index
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(out, "1\n");
}

#[test]
fn block_halves_synchronize_separately() {
    // Threads 0..3 pass three barriers of their half while threads 4..7
    // pass one of theirs and wait for the whole block: each half advances
    // on its own, and the whole-block barrier waits for both. Memory
    // written before a barrier is read after it by other threads of the
    // range (no race).
    let out = output(
        r#"
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c16 = arith.constant 16 : index
  %a = memref.alloc() : memref<8xindex>
  pgpu.spawn block %c8 {
    %t = pgpu.rank : index
    %n = pgpu.size : index
    memref.store %t, %a[%t] : memref<8xindex>
    %left = arith.cmpi ult, %t, %c4 : index
    scf.if %left {
      scf.for %i = %c0 to %c3 step %c1 {
        pgpu.printf "L%d.%d "(%t, %i) : index, index
        pgpu.range_barrier %c0, %c4, %c8
        %t1 = arith.addi %t, %c1 : index
        %next = arith.remui %t1, %c4 : index
        %v = memref.load %a[%next] : memref<8xindex>
        pgpu.range_barrier %c0, %c4, %c8
        memref.store %v, %a[%t] : memref<8xindex>
      }
    } else {
      pgpu.printf "R%d "(%t) : index
      pgpu.range_barrier %c4, %c4, %c9
    }
    pgpu.range_barrier %c0, %n, %c16
    %v = memref.load %a[%t] : memref<8xindex>
    pgpu.printf "%d:%d/%d "(%t, %v, %n) : index, index, index
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(
        out,
        "L0.0 L1.0 L2.0 L3.0 R4 R5 R6 R7 \
         L0.1 L1.1 L2.1 L3.1 \
         L0.2 L1.2 L2.2 L3.2 \
         0:3/8 1:0/8 2:1/8 3:2/8 4:4/8 5:5/8 6:6/8 7:7/8 "
    );
}

/// A recursive block-group function: the range synchronizes, every
/// thread writes its element, the range splits at `s = first + count/2`
/// into halves with slots `2s` and `2s+1` (the whole block has `2n`),
/// each half recurses, and the range synchronizes again, after which its
/// first thread combines the halves' results.
const RECURSIVE_SUM: &str = r#"
func.func private @level(%t: index, %first: index, %count: index, %slot: index, %a: memref<?xi32>, %d: memref<?xi32>) attributes {pgpu.block_group} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pgpu.range_barrier %first, %count, %slot
  %depth = memref.load %d[%t] : memref<?xi32>
  %one = arith.constant 1 : i32
  %deeper = arith.addi %depth, %one : i32
  memref.store %deeper, %d[%t] : memref<?xi32>
  %split = arith.cmpi ugt, %count, %c1 : index
  scf.if %split {
    %half = arith.divui %count, %c2 : index
    %s = arith.addi %first, %half : index
    %left_slot = arith.muli %s, %c2 : index
    %in_left = arith.cmpi ult, %t, %s : index
    scf.if %in_left {
      func.call @level(%t, %first, %half, %left_slot, %a, %d) : (index, index, index, index, memref<?xi32>, memref<?xi32>) -> ()
    } else {
      %rest = arith.subi %count, %half : index
      %right_slot = arith.addi %left_slot, %c1 : index
      func.call @level(%t, %s, %rest, %right_slot, %a, %d) : (index, index, index, index, memref<?xi32>, memref<?xi32>) -> ()
    }
    pgpu.range_barrier %first, %count, %slot
    %lead = arith.cmpi eq, %t, %first : index
    scf.if %lead {
      %x = memref.load %a[%first] : memref<?xi32>
      %y = memref.load %a[%s] : memref<?xi32>
      %sum = arith.addi %x, %y : i32
      memref.store %sum, %a[%first] : memref<?xi32>
      pgpu.printf "[%d+%d)=%d "(%first, %count, %sum) : index, index, i32
    }
  }
  return
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %k = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %arg = pgpu.argi %k default %one : i32, i32
  %n = arith.index_cast %arg : i32 to index
  %a = memref.alloc(%n) : memref<?xi32>
  %d = memref.alloc(%n) : memref<?xi32>
  %zero = arith.constant 0 : i32
  scf.for %i = %c0 to %n step %c1 {
    %i1 = arith.addi %i, %c1 : index
    %v = arith.index_cast %i1 : index to i32
    memref.store %v, %a[%i] : memref<?xi32>
    memref.store %zero, %d[%i] : memref<?xi32>
  }
  %whole = arith.muli %n, %c2 : index
  pgpu.spawn block %n {
    %t = pgpu.rank : index
    func.call @level(%t, %c0, %n, %whole, %a, %d) : (index, index, index, index, memref<?xi32>, memref<?xi32>) -> ()
  }
  %total = memref.load %a[%c0] : memref<?xi32>
  pgpu.printf "total %d depths"(%total) : i32
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %d[%i] : memref<?xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf "\n"
  %z = arith.constant 0 : i32
  return %z : i32
}
"#;

#[test]
fn recursive_block_group_halves_its_range() {
    let outcome = run(RECURSIVE_SUM, &["8"]).unwrap();
    // The ranges of one level finish in the same step, the smaller first
    // (they are released together; their first threads run in rank order).
    assert_eq!(
        String::from_utf8(outcome.stdout).unwrap(),
        "[0+2)=3 [2+2)=7 [4+2)=11 [6+2)=15 [0+4)=10 [4+4)=26 [0+8)=36 \
         total 36 depths 4 4 4 4 4 4 4 4\n"
    );
    // Uneven splits: 5 = 2 + 3, 3 = 1 + 2.
    let outcome = run(RECURSIVE_SUM, &["5"]).unwrap();
    assert_eq!(
        String::from_utf8(outcome.stdout).unwrap(),
        "[0+2)=3 [3+2)=9 [2+3)=12 [0+5)=15 total 15 depths 3 3 3 4 4\n"
    );
    // The largest block, and one thread.
    let outcome = run(RECURSIVE_SUM, &["1024"]).unwrap();
    let text = String::from_utf8(outcome.stdout).unwrap();
    assert!(text.contains("total 524800 depths 11 11"), "{text}");
    let outcome = run(RECURSIVE_SUM, &["1"]).unwrap();
    assert_eq!(outcome.stdout, b"total 1 depths 1\n");
}

#[test]
fn block_races_follow_range_barriers() {
    // Threads of different halves are ordered only by the whole-block
    // barrier: thread 4 reading what thread 0 wrote before it is fine,
    // reading it in the same phase (after only its own half's barrier) is
    // a race.
    let source = |barrier: &str| {
        format!(
            r#"
func.func @main() -> i32 {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c16 = arith.constant 16 : index
  %a = memref.alloc() : memref<1xindex>
  pgpu.spawn block %c8 {{
    %t = pgpu.rank : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {{
      memref.store %t, %a[%c0] : memref<1xindex>
    }}
    %left = arith.cmpi ult, %t, %c4 : index
    scf.if %left {{
      pgpu.range_barrier %c0, %c4, %c8
    }} else {{
      pgpu.range_barrier %c4, %c4, %c9
    }}
    {barrier}
    %four = arith.cmpi eq, %t, %c4 : index
    scf.if %four {{
      %v = memref.load %a[%c0] : memref<1xindex>
      pgpu.printf "%d\n"(%v) : index
    }}
  }}
  %z = arith.constant 0 : i32
  return %z : i32
}}
"#
        )
    };
    let ordered = source("pgpu.range_barrier %c0, %c8, %c16");
    assert_eq!(output(&ordered), "0\n");
    let error = run_error(&source(""));
    assert!(
        error.message.starts_with(
            "data race: thread 4 reads element 0 that thread 0 wrote, and no range barrier orders the two accesses"
        ),
        "{}",
        error.message
    );
    assert_eq!(error.notes.len(), 1);
    assert_eq!(error.notes[0].message, "the other thread's write");
    // Without the detector the program runs.
    let context = tool::create_context(&[]);
    let module = tool::parse_module(&context, &source(""), "test.mlir").unwrap();
    let options = Options {
        race_detection: false,
        ..Options::default()
    };
    let outcome = run_module(&module, "main", &[], &options).unwrap();
    assert_eq!(outcome.stdout, b"0\n");
}

/// A block of `n` threads whose body is `body` (with `%t` the rank and
/// constants `%c0` .. `%c5`, `%c8`, `%c9`), after the functions `functions`.
fn block_program(functions: &str, n: usize, body: &str) -> String {
    format!(
        r#"
{functions}
func.func @main() -> i32 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %n = arith.constant {n} : index
  pgpu.spawn block %n {{
    %t = pgpu.rank : index
{body}
  }}
  %z = arith.constant 0 : i32
  return %z : i32
}}
"#
    )
}

#[test]
fn block_range_must_contain_the_thread() {
    let source = block_program(
        "",
        4,
        "    %left = arith.cmpi ult, %t, %c2 : index
    scf.if %left {
      pgpu.range_barrier %c0, %c2, %c4
    } else {
      pgpu.range_barrier %c0, %c3, %c5
    }",
    );
    let error = run_error(&source);
    assert_eq!(
        error.message,
        "thread 3 reaches a range barrier of threads 0..2, which does not contain it"
    );
    assert_eq!(line(&error), line_of(&source, "%c0, %c3, %c5"));
    let error = error_of_range("%c2, %c4, %c1");
    assert!(
        error
            .message
            .contains("threads 2..5 (count 4), but the block has 4 threads"),
        "{}",
        error.message
    );
    let error = error_of_range("%c0, %c0, %c1");
    assert!(
        error.message.contains("no threads (count 0)"),
        "{}",
        error.message
    );
    let error = error_of_range("%c0, %c4, %c9");
    assert!(
        error
            .message
            .contains("slot 9 is outside the block's synchronization words 0..8"),
        "{}",
        error.message
    );
}

/// The error of a block of 4 threads (slots 0 ..= 8) whose threads reach
/// one range barrier with `operands`.
fn error_of_range(operands: &str) -> InterpError {
    run_error(&block_program(
        "",
        4,
        &format!("    pgpu.range_barrier {operands}"),
    ))
}

#[test]
fn block_range_members_share_one_slot() {
    let source = block_program(
        "",
        4,
        "    %low = arith.cmpi ult, %t, %c3 : index
    scf.if %low {
      pgpu.range_barrier %c0, %c4, %c8
    } else {
      pgpu.range_barrier %c0, %c4, %c5
    }",
    );
    let error = run_error(&source);
    assert_eq!(
        error.message,
        "thread 3 waits at the range barrier of threads 0..3 with slot 5, but thread 0 waits at it with slot 8: the threads of a range must use one slot"
    );
    assert_eq!(line(&error), line_of(&source, "%c0, %c4, %c5"));
    assert_eq!(error.notes[0].message, "thread 0 waits here with slot 8");
    let note = error.notes[0].location.as_ref().map_or(0, |p| p.line);
    assert_eq!(note, line_of(&source, "%c0, %c4, %c8"));
}

#[test]
fn block_ranges_waiting_together_need_different_slots() {
    // The halves split at thread 2 (slots 4 and 5 would be right) both use
    // slot 4, and wait at the same time.
    let source = block_program(
        "",
        4,
        "    %left = arith.cmpi ult, %t, %c2 : index
    scf.if %left {
      pgpu.range_barrier %c0, %c2, %c4
    } else {
      pgpu.range_barrier %c2, %c2, %c4
    }",
    );
    let error = run_error(&source);
    assert_eq!(
        error.message,
        "slot 4 is used by two ranges waiting at the same time: threads 2..3 (thread 2 waits here) and threads 0..1 (thread 0); ranges that may wait at the same time need different slots"
    );
    assert_eq!(line(&error), line_of(&source, "%c2, %c2, %c4"));
    let note = error.notes[0].location.as_ref().map_or(0, |p| p.line);
    assert_eq!(note, line_of(&source, "%c0, %c2, %c4"));
    // The right slots run.
    let fixed = source.replace("%c2, %c2, %c4", "%c2, %c2, %c5");
    output(&fixed);
    // One slot for ranges that never wait together is fine: the whole
    // block's barrier and, after it, a half's.
    output(&block_program(
        "",
        4,
        "    pgpu.range_barrier %c0, %c4, %c8
    %left = arith.cmpi ult, %t, %c2 : index
    scf.if %left {
      pgpu.range_barrier %c0, %c2, %c8
    }",
    ));
}

#[test]
fn block_deadlocks_name_a_missing_thread() {
    // Thread 3 finishes without the whole block's barrier.
    let source = block_program(
        "",
        4,
        "    %early = arith.cmpi ult, %t, %c3 : index
    scf.if %early {
      pgpu.range_barrier %c0, %c4, %c8
    }",
    );
    let error = run_error(&source);
    assert_eq!(
        error.message,
        "deadlock in a block spawn: no thread can run and no range is complete; 3 of the 4 threads of the range barrier of threads 0..3 (slot 8) wait; thread 3 has finished"
    );
    assert_eq!(line(&error), line_of(&source, "%c0, %c4, %c8"));
    assert!(error.notes.is_empty());
    // Threads 0 and 1 wait for the whole block, threads 2 and 3 for a range
    // 1..3 that needs thread 1.
    let source = block_program(
        "",
        4,
        "    %left = arith.cmpi ult, %t, %c2 : index
    scf.if %left {
      pgpu.range_barrier %c0, %c4, %c8
    } else {
      pgpu.range_barrier %c1, %c3, %c3
    }",
    );
    let error = run_error(&source);
    assert_eq!(
        error.message,
        "deadlock in a block spawn: no thread can run and no range is complete; 2 of the 4 threads of the range barrier of threads 0..3 (slot 8) wait; thread 2 waits at the range barrier of threads 1..3 (slot 3)"
    );
    assert_eq!(error.notes[0].message, "thread 2 waits here");
    let note = error.notes[0].location.as_ref().map_or(0, |p| p.line);
    assert_eq!(note, line_of(&source, "%c1, %c3, %c3"));
}

#[test]
fn block_spawn_fits_one_block() {
    let error = run_error(
        r#"
func.func @main() -> i32 {
  %n = arith.constant 1025 : index
  pgpu.spawn block %n {
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
"#,
    );
    assert_eq!(
        error.message,
        "pgpu.spawn block of 1025 threads exceeds the block capacity of 1024 (pgpu.block_capacity): its threads must form one thread block"
    );
    assert_eq!(line(&error), 4);
}

#[test]
fn block_spawn_rejects_whole_spawn_synchronization() {
    // A barrier and a collective reached through calls (the verifier
    // forbids them in the body itself).
    let functions = r#"
func.func private @sync() attributes {pgpu.spmd_inline} {
  pgpu.barrier
  return
}
func.func private @total(%x: index) -> index attributes {pgpu.spmd_inline} {
  %s = pgpu.reduce add %x : index
  return %s : index
}
func.func private @branches() attributes {pgpu.spmd_inline} {
  pgpu.par {
    pgpu.barrier
  }, {
    pgpu.barrier
  }
  return
}
"#;
    let source = block_program(functions, 2, "    func.call @sync() : () -> ()");
    let error = run_error(&source);
    assert_eq!(
        error.message,
        "'pgpu.barrier' synchronizes all threads of a spawn: it cannot be reached in a block spawn, whose threads synchronize in ranges with 'pgpu.range_barrier' (thread 0)"
    );
    assert_eq!(line(&error), line_of(&source, "pgpu.barrier"));
    let source = block_program(
        functions,
        2,
        "    %s = func.call @total(%t) : (index) -> index",
    );
    let error = run_error(&source);
    assert!(
        error
            .message
            .starts_with("'pgpu.reduce' synchronizes all threads"),
        "{}",
        error.message
    );
    assert_eq!(line(&error), line_of(&source, "pgpu.reduce"));
    let source = block_program(functions, 2, "    func.call @branches() : () -> ()");
    let error = run_error(&source);
    assert!(
        error
            .message
            .starts_with("'pgpu.par' cannot run in a block spawn"),
        "{}",
        error.message
    );
}

#[test]
fn range_barriers_need_a_block_spawn() {
    // A block-group function called from an ordinary spawn.
    let source = r#"
func.func private @half(%first: index, %count: index, %slot: index) attributes {pgpu.block_group} {
  pgpu.range_barrier %first, %count, %slot
  return
}
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    func.call @half(%c0, %c2, %c0) : (index, index, index) -> ()
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
"#;
    let error = run_error(source);
    assert!(
        error
            .message
            .starts_with("'pgpu.range_barrier' outside a block spawn"),
        "{}",
        error.message
    );
    assert_eq!(line(&error), 3);
}
