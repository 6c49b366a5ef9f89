// A task group whose two tasks each launch a spawn writing one half of a
// list: the interpreter runs the tasks in program order; host code after the
// group reads what both wrote. test-suite/run/native/taskgroup.test compiles
// this program and checks the same output on the CPU device.
// RUN: pgpu run --interpret %s | FileCheck %s
// The kernel stage keeps the meaning (the tasks hold host code and kernels).
// RUN: pgpu-opt %s --pgpu-check-semantics --pass-pipeline='builtin.module(pgpu-inline-spmd,pgpu-lower-groups,pgpu-lower-synchronous,pgpu-eliminate-barriers,pgpu-form-supersteps,pgpu-save-values,pgpu-split-kernels,pgpu-forward-list-copies,pgpu-narrow-guarded-kernels)' | FileCheck %s --check-prefix=KERNELS
// KERNELS-LABEL: func.func @main
// KERNELS: pgpu.taskgroup {
// KERNELS-NEXT: pgpu.task {
// KERNELS: %[[SAVED:.*]] = memref.alloc
// KERNELS: scf.parallel
// KERNELS: memref.store %{{.*}}, %[[SAVED]]
// KERNELS: scf.parallel
// KERNELS: memref.load %[[SAVED]]
// KERNELS: memref.dealloc %[[SAVED]]
// KERNELS: pgpu.task {
// KERNELS: scf.parallel
// KERNELS: pgpu.list.reduce

// CHECK: task 0
// CHECK-NEXT: task 1
// CHECK-NEXT: a = 17 13 13 17 100 101 102 103
// CHECK-NEXT: sum of the second half = 406
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc(%c8) : memref<?xi32>
  %b = memref.alloc(%c4) : memref<?xi32>
  %squares = memref.alloc(%c4) : memref<?xi32>
  %total = memref.alloc() : memref<1xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    %ii = arith.index_cast %i : index to i32
    %one = arith.constant 1 : i32
    %next = arith.addi %ii, %one : i32
    memref.store %next, %b[%i] : memref<?xi32>
  }
  pgpu.taskgroup {
    // The first half: a[r] = b[r]^2 + b[3 - r]^2, the own square saved
    // across a barrier (a buffer of the task's kernels).
    pgpu.task {
      %k0 = arith.constant 0 : i32
      pgpu.printf "task %d\n"(%k0) : i32
      pgpu.spawn %c4 {
        %r = pgpu.rank : index
        %x = memref.load %b[%r] : memref<?xi32>
        %v = arith.muli %x, %x : i32
        memref.store %v, %squares[%r] : memref<?xi32>
        pgpu.barrier
        %mirror = arith.subi %c3, %r : index
        %w = memref.load %squares[%mirror] : memref<?xi32>
        %sum = arith.addi %v, %w : i32
        memref.store %sum, %a[%r] : memref<?xi32>
      }
    }
    // The second half, and its sum by a collective.
    pgpu.task {
      %k1 = arith.constant 1 : i32
      pgpu.printf "task %d\n"(%k1) : i32
      pgpu.spawn %c4 {
        %r = pgpu.rank : index
        %ri = arith.index_cast %r : index to i32
        %hundred = arith.constant 100 : i32
        %v = arith.addi %hundred, %ri : i32
        %slot = arith.addi %c4, %r : index
        memref.store %v, %a[%slot] : memref<?xi32>
        %sum = pgpu.reduce add %v : i32
        %first = arith.cmpi eq, %r, %c0 : index
        scf.if %first {
          memref.store %sum, %total[%c0] : memref<1xi32>
        }
      }
    }
  }
  pgpu.printf "a ="
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<?xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf "\n"
  %s = memref.load %total[%c0] : memref<1xi32>
  pgpu.printf "sum of the second half = %d\n"(%s) : i32
  memref.dealloc %total : memref<1xi32>
  memref.dealloc %squares : memref<?xi32>
  memref.dealloc %b : memref<?xi32>
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}
