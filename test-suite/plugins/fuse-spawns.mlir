// An out-of-tree Rust pass registered at build time (issue 10):
// examples/plugins/fuse-spawns builds `fuse-spawns-opt`, pgpu-opt with
// pgpu-fuse-spawns in it, through pgpu_opt::main_with.
// RUN: fuse-spawns-opt %s --split-input-file --pgpu-fuse-spawns | FileCheck %s
// RUN: fuse-spawns-opt %s --split-input-file --pgpu-fuse-spawns="remarks=true" --verify-diagnostics > /dev/null
// It is a pipeline element like ours, and listed with them.
// RUN: fuse-spawns-opt %s --split-input-file --pass-pipeline="builtin.module(pgpu-fuse-spawns,canonicalize)" | FileCheck %s --check-prefix=PIPELINE
// RUN: fuse-spawns-opt --list-passes | FileCheck %s --check-prefix=LIST
// LIST: --pgpu-fuse-spawns {{.*}}Fuse adjacent spawns of one thread count
// LIST: --pgpu-inline-spmd
// The plain pgpu-opt does not have it.
// RUN: not pgpu-opt %s --pgpu-fuse-spawns 2>&1 | FileCheck %s --check-prefix=ABSENT
// ABSENT: unexpected argument '--pgpu-fuse-spawns'
// ABSENT: note: a flag is an option of pgpu-opt or a registered pass (`--list-passes`)

// Allocations and constants between the spawns move above the first; the
// second's body follows a barrier.
// CHECK-LABEL: func.func @pair
// CHECK-NEXT: %[[A:.*]] = pgpu.dnew
// CHECK-NEXT: %[[B:.*]] = pgpu.dnew
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-NEXT: pgpu.spawn %arg0 {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank
// CHECK: memref.store {{.*}}, %[[A]][%[[R]]]
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[S:.*]] = pgpu.rank
// CHECK-NEXT: memref.load %[[A]][%[[S]]]
// CHECK: memref.store {{.*}}, %[[B]][%[[S]]]
// CHECK-NEXT: }
// CHECK-NEXT: return
// PIPELINE-LABEL: func.func @pair
// PIPELINE-COUNT-1: pgpu.spawn
// PIPELINE-NOT: pgpu.spawn
// PIPELINE: return
func.func @pair(%n: index) {
  %a = pgpu.dnew [%n] : memref<?xi64>
  pgpu.spawn %n {
    %r = pgpu.rank : index
    %v = arith.index_cast %r : index to i64
    memref.store %v, %a[%r] : memref<?xi64>
  }
  %b = pgpu.dnew [%n] : memref<?xi64>
  %one = arith.constant 1 : i64
  // expected-remark @+1 {{spawn fused into the previous spawn of the same thread count}}
  pgpu.spawn %n {
    %r = pgpu.rank : index
    %v = memref.load %a[%r] : memref<?xi64>
    %w = arith.addi %v, %one : i64
    memref.store %w, %b[%r] : memref<?xi64>
  }
  return
}

// -----

// A run of three becomes one, in a loop body too.
// CHECK-LABEL: func.func @run_of_three
// CHECK: scf.for
// CHECK-COUNT-1: pgpu.spawn
// CHECK-NOT: pgpu.spawn
// CHECK: pgpu.printf "first"
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: pgpu.size
// CHECK-NEXT: pgpu.printf "second"
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: pgpu.printf "third"
// CHECK-NEXT: }
func.func @run_of_three(%n: index, %trips: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %trips step %c1 {
    pgpu.spawn %n {
      pgpu.printf "first"
    }
    // expected-remark @+1 {{spawn fused}}
    pgpu.spawn %n {
      %s = pgpu.size : index
      pgpu.printf "second"
    }
    // expected-remark @+1 {{spawn fused}}
    pgpu.spawn %n {
      pgpu.printf "third"
    }
  }
  return
}

// -----

// Not fused: different counts, a synchronous spawn, a body that kills
// threads, a call (the callee could), a store between the spawns (it must
// not run before the first), a division between them (it may trap).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-12: pgpu.spawn
// CHECK-NOT: pgpu.barrier
func.func private @helper()
func.func @kept(%n: index, %m: index, %flag: i1, %buffer: memref<4xi32>, %x: i32) {
  pgpu.spawn %n {
    pgpu.printf "n"
  }
  pgpu.spawn %m {
    pgpu.printf "m"
  }
  pgpu.spawn synchronous %m {
    pgpu.printf "synchronous"
  }
  pgpu.spawn %m {
    pgpu.printf "m"
  }
  pgpu.spawn %n {
    pgpu.thread.kill %flag
  }
  pgpu.spawn %n {
    pgpu.printf "after kill"
  }
  pgpu.spawn %m {
    func.call @helper() : () -> ()
  }
  pgpu.spawn %m {
    pgpu.printf "after call"
  }
  %c0 = arith.constant 0 : index
  memref.store %x, %buffer[%c0] : memref<4xi32>
  pgpu.spawn %m {
    pgpu.printf "after store"
  }
  %q = arith.divsi %x, %x : i32
  pgpu.spawn %m {
    pgpu.printf "after division"
  }
  pgpu.spawn %n {
    pgpu.barrier rank_reassigned
    %r = pgpu.rank : index
    pgpu.set_oldrank %r
  }
  pgpu.spawn %n {
    pgpu.printf "after reassignment"
  }
  return
}
