// pgpu.spawn block: one thread block whose threads synchronize in ranges
// with pgpu.range_barrier, also in recursive pgpu.block_group functions.
// Ranges run independently: the scheduler runs every thread to its next
// range barrier and releases the ranges whose threads all wait; output is
// printed per scheduling step in rank order. The race detector orders
// accesses by the range barriers between them (no false races here).
// RUN: pgpu run --interpret %s | FileCheck %s
// Ranges waiting at the same time must use different slots.
// RUN: not pgpu run --interpret --entry shared_slot %s 2>&1 | FileCheck %s --check-prefix=SLOT
// RUN: not pgpu run --interpret --entry deadlock %s 2>&1 | FileCheck %s --check-prefix=DEADLOCK

// Sums a[first .. first+count-1] into a[first]: the range synchronizes,
// splits at s = first + count/2 (slots 2s and 2s+1 for the two sides),
// each side sums itself, and after the range's barrier its first thread
// adds the right side's sum to the left side's.
func.func private @tree_sum(%t: index, %first: index, %count: index, %slot: index, %a: memref<?xi32>) attributes {pgpu.block_group} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pgpu.range_barrier %first, %count, %slot
  %last = arith.addi %first, %count : index
  %last1 = arith.subi %last, %c1 : index
  %lead = arith.cmpi eq, %t, %first : index
  scf.if %lead {
    pgpu.printf "enter %d..%d (slot %d)\n"(%first, %last1, %slot) : index, index, index
  }
  %split = arith.cmpi ugt, %count, %c1 : index
  scf.if %split {
    %half = arith.divui %count, %c2 : index
    %s = arith.addi %first, %half : index
    %left_slot = arith.muli %s, %c2 : index
    %in_left = arith.cmpi ult, %t, %s : index
    scf.if %in_left {
      func.call @tree_sum(%t, %first, %half, %left_slot, %a) : (index, index, index, index, memref<?xi32>) -> ()
    } else {
      %rest = arith.subi %count, %half : index
      %right_slot = arith.addi %left_slot, %c1 : index
      func.call @tree_sum(%t, %s, %rest, %right_slot, %a) : (index, index, index, index, memref<?xi32>) -> ()
    }
    pgpu.range_barrier %first, %count, %slot
    scf.if %lead {
      %x = memref.load %a[%first] : memref<?xi32>
      %y = memref.load %a[%s] : memref<?xi32>
      %sum = arith.addi %x, %y : i32
      memref.store %sum, %a[%first] : memref<?xi32>
      pgpu.printf "sum %d..%d = %d\n"(%first, %last1, %sum) : index, index, i32
    }
  }
  return
}

// CHECK-LABEL: capacity 1024
// CHECK-NEXT: enter 0..5 (slot 12)
// CHECK-NEXT: enter 0..2 (slot 6)
// CHECK-NEXT: enter 3..5 (slot 7)
// CHECK-NEXT: enter 0..0 (slot 2)
// CHECK-NEXT: enter 1..2 (slot 3)
// CHECK-NEXT: enter 3..3 (slot 8)
// CHECK-NEXT: enter 4..5 (slot 9)
// CHECK-NEXT: enter 1..1 (slot 4)
// CHECK-NEXT: enter 2..2 (slot 5)
// CHECK-NEXT: enter 4..4 (slot 10)
// CHECK-NEXT: enter 5..5 (slot 11)
// CHECK-NEXT: sum 1..2 = 5
// CHECK-NEXT: sum 4..5 = 11
// CHECK-NEXT: sum 0..2 = 6
// CHECK-NEXT: sum 3..5 = 15
// CHECK-NEXT: sum 0..5 = 21
// CHECK-NEXT: thread 0 of 6 done
// CHECK-NEXT: thread 1 of 6 done
// CHECK-NEXT: thread 2 of 6 done
// CHECK-NEXT: thread 3 of 6 done
// CHECK-NEXT: thread 4 of 6 done
// CHECK-NEXT: thread 5 of 6 done
// CHECK-NEXT: total 21
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %max = pgpu.block_capacity : index
  pgpu.printf "capacity %d\n"(%max) : index
  %a = memref.alloc(%c6) : memref<?xi32>
  scf.for %i = %c0 to %c6 step %c1 {
    %i1 = arith.addi %i, %c1 : index
    %v = arith.index_cast %i1 : index to i32
    memref.store %v, %a[%i] : memref<?xi32>
  }
  %slot = arith.muli %c6, %c2 : index
  pgpu.spawn block %c6 {
    %t = pgpu.rank : index
    %n = pgpu.size : index
    func.call @tree_sum(%t, %c0, %n, %slot, %a) : (index, index, index, index, memref<?xi32>) -> ()
    pgpu.range_barrier %c0, %n, %slot
    pgpu.printf "thread %d of %d done\n"(%t, %n) : index, index
  }
  %total = memref.load %a[%c0] : memref<?xi32>
  pgpu.printf "total %d\n"(%total) : i32
  memref.dealloc %a : memref<?xi32>
  %z = arith.constant 0 : i32
  return %z : i32
}

// Both halves of the block use slot 1 at the same time.
func.func @shared_slot() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  pgpu.spawn block %c4 {
    %t = pgpu.rank : index
    %left = arith.cmpi ult, %t, %c2 : index
    scf.if %left {
      // SLOT: {{.*}}block-spawn.mlir:[[@LINE+4]]:7: error: slot 1 is used by two ranges waiting at the same time: threads 2..3 (thread 2 waits here) and threads 0..1 (thread 0); ranges that may wait at the same time need different slots
      // SLOT: {{.*}}block-spawn.mlir:[[@LINE+1]]:7: note: thread 0 waits here at the range barrier of threads 0..1 with slot 1
      pgpu.range_barrier %c0, %c2, %c1
    } else {
      pgpu.range_barrier %c2, %c2, %c1
    }
  }
  return
}

// Thread 3 never reaches the barrier of the whole block.
func.func @deadlock() {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  pgpu.spawn block %c4 {
    %t = pgpu.rank : index
    %early = arith.cmpi ult, %t, %c3 : index
    scf.if %early {
      // DEADLOCK: {{.*}}block-spawn.mlir:[[@LINE+1]]:7: error: deadlock in a block spawn: no thread can run and no range is complete; 3 of the 4 threads of the range barrier of threads 0..3 (slot 8) wait; thread 3 has finished
      pgpu.range_barrier %c0, %c4, %c8
    }
  }
  return
}
