// pgpu.spawn with barriers: private values survive barriers, memory written
// before a barrier is visible after it, output is printed in rank order per
// superstep, and barriers inside pgpu.spmd_inline functions and
// pgpu.superstep regions synchronize all threads.
// RUN: pgpu run --interpret %s | FileCheck %s

// Rotates values through shared memory: thread r reads what r+1 wrote.
func.func @rotate(%a: memref<?xi32>, %v: i32) -> i32 attributes {pgpu.spmd_inline} {
  %r = pgpu.rank : index
  %n = pgpu.size : index
  memref.store %v, %a[%r] : memref<?xi32>
  pgpu.barrier
  %c1 = arith.constant 1 : index
  %r1 = arith.addi %r, %c1 : index
  %next = arith.remui %r1, %n : index
  %w = memref.load %a[%next] : memref<?xi32>
  pgpu.barrier
  return %w : i32
}

func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  pgpu.printf "before\n"
  // CHECK-LABEL: before
  // CHECK-NEXT: step 1: rank 0 square 0
  // CHECK-NEXT: step 1: rank 1 square 1
  // CHECK-NEXT: step 1: rank 2 square 4
  // CHECK-NEXT: step 1: rank 3 square 9
  // CHECK-NEXT: step 2: rank 0 sees 1 keeps 0
  // CHECK-NEXT: step 2: rank 1 sees 4 keeps 1
  // CHECK-NEXT: step 2: rank 2 sees 9 keeps 4
  // CHECK-NEXT: step 2: rank 3 sees 0 keeps 9
  // CHECK-NEXT: inline: rank 0 got 4
  // CHECK-NEXT: inline: rank 1 got 9
  // CHECK-NEXT: inline: rank 2 got 0
  // CHECK-NEXT: inline: rank 3 got 1
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %ri = arith.index_cast %r : index to i32
    %sq = arith.muli %ri, %ri : i32
    memref.store %sq, %a[%r] : memref<?xi32>
    pgpu.printf "step 1: rank %d square %d\n"(%ri, %sq) : i32, i32
    pgpu.barrier
    %n = pgpu.size : index
    %c1 = arith.constant 1 : index
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %n : index
    %seen = memref.load %a[%next] : memref<?xi32>
    pgpu.printf "step 2: rank %d sees %d keeps %d\n"(%ri, %seen, %sq) : i32, i32, i32
    pgpu.barrier
    %got = func.call @rotate(%a, %seen) : (memref<?xi32>, i32) -> i32
    pgpu.printf "inline: rank %d got %d\n"(%ri, %got) : i32, i32
  }
  // After superstep formation: values cross supersteps as results.
  // CHECK-NEXT: superstep: rank 0 old 30 new 10
  // CHECK-NEXT: superstep: rank 1 old 31 new 20
  // CHECK-NEXT: superstep: rank 2 old 32 new 30
  // CHECK-NEXT: superstep: rank 3 old 33 new 0
  pgpu.spawn %c4 {
    %v:2 = pgpu.superstep -> (index, i32) {
      %r = pgpu.rank : index
      %ri = arith.index_cast %r : index to i32
      %c10 = arith.constant 10 : i32
      %x = arith.muli %ri, %c10 : i32
      %c30 = arith.constant 30 : i32
      %y = arith.addi %ri, %c30 : i32
      memref.store %x, %a[%r] : memref<?xi32>
      pgpu.yield %r, %y : index, i32
    }
    pgpu.superstep {
      %c1 = arith.constant 1 : index
      %n = pgpu.size : index
      %r1 = arith.addi %v#0, %c1 : index
      %next = arith.remui %r1, %n : index
      %w = memref.load %a[%next] : memref<?xi32>
      %ri = arith.index_cast %v#0 : index to i32
      pgpu.printf "superstep: rank %d old %d new %d\n"(%ri, %v#1, %w) : i32, i32, i32
    }
  }
  // CHECK-NEXT: after
  pgpu.printf "after\n"
  memref.dealloc %a : memref<?xi32>
  %z = arith.constant 0 : i32
  return %z : i32
}
