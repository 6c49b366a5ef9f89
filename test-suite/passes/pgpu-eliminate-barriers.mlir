// RUN: pgpu-opt %s --split-input-file --pgpu-eliminate-barriers | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-eliminate-barriers=remarks=true --verify-diagnostics -o /dev/null
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-eliminate-barriers -o /dev/null

// Each thread reads back only its own element: no thread observes another
// across the barrier, which goes.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NOT: pgpu.barrier
// CHECK: pgpu.printf
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %a[%r] : memref<?xi32>
    // expected-remark @+1 {{barrier removed: no thread observes across it what another thread did}}
    pgpu.barrier
    %y = memref.load %a[%r] : memref<?xi32>
    %z = arith.addi %y, %x : i32
    pgpu.printf "%d\n"(%z) : i32
  }
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A neighbour's element is read after the barrier: it stays. So does the
// barrier before a require (host code would run too early), and the one
// between two printing segments (output is ordered per superstep).
// CHECK-LABEL: func.func @main
// CHECK: memref.store
// CHECK-NEXT: pgpu.barrier
// CHECK: memref.load
// CHECK: pgpu.barrier
// CHECK-NEXT: pgpu.size
// CHECK-NEXT: pgpu.require
// CHECK: pgpu.printf "a
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: pgpu.printf "b
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %a[%r] : memref<?xi32>
    pgpu.barrier
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %c4 : index
    %y = memref.load %a[%next] : memref<?xi32>
    pgpu.barrier
    %n = pgpu.size : index
    %l = pgpu.require -> (memref<?xi32>) {
      %m = pgpu.dtempnew [%n] : memref<?xi32>
      pgpu.yield %m : memref<?xi32>
    }
    memref.store %y, %l[%r] : memref<?xi32>
    pgpu.printf "a %d\n"(%y) : i32
    pgpu.barrier
    pgpu.printf "b %d\n"(%x) : i32
  }
  pgpu.dtempfree
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Writes to two distinct allocations do not order each other; a barrier
// right after a collective synchronizes nothing more; a rank-reassigning
// barrier always stays.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.reduce
// CHECK-NOT: pgpu.barrier{{$}}
// CHECK: pgpu.barrier rank_reassigned
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  %b = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %a[%r] : memref<?xi32>
    // expected-remark @+1 {{barrier removed}}
    pgpu.barrier
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %c4 : index
    memref.store %x, %b[%next] : memref<?xi32>
    %s = pgpu.reduce add %x : i32
    // expected-remark @+1 {{barrier removed}}
    pgpu.barrier
    pgpu.barrier rank_reassigned
    pgpu.set_oldrank %r
    pgpu.printf "%d\n"(%s) : i32
  }
  memref.dealloc %a : memref<?xi32>
  memref.dealloc %b : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Different constant elements of one memref do not meet; the same one does.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NEXT: memref.store %{{.*}}, %[[A:.*]][%[[C0:.*]]]
// CHECK-NEXT: memref.load %[[A]][%[[C1:.*]]]
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: memref.load %[[A]][%[[C0]]]
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %v = arith.constant 7 : i32
  %a = memref.alloc(%c2) : memref<?xi32>
  memref.store %v, %a[%c1] : memref<?xi32>
  pgpu.spawn %c1 {
    memref.store %v, %a[%c0] : memref<?xi32>
    // expected-remark @+1 {{barrier removed}}
    pgpu.barrier
    %x = memref.load %a[%c1] : memref<?xi32>
    pgpu.barrier
    %y = memref.load %a[%c0] : memref<?xi32>
    pgpu.printf "%d %d\n"(%x, %y) : i32, i32
  }
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A thread.get after the barrier of a value defined before the previous
// synchronization point reads the same value at both points: the second
// barrier goes. One of a value defined between the two barriers (%y) keeps
// the third.
// CHECK-LABEL: func.func @main
// CHECK: memref.store
// CHECK-NEXT: pgpu.barrier
// CHECK: memref.load
// CHECK-NOT: pgpu.barrier
// CHECK: pgpu.thread.get %{{.*}}, %[[X:.*]] : i32
// CHECK: pgpu.barrier
// CHECK-NEXT: pgpu.thread.get
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %a[%r] : memref<?xi32>
    pgpu.barrier
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %c4 : index
    %y = memref.load %a[%next] : memref<?xi32>
    // expected-remark @+1 {{barrier removed}}
    pgpu.barrier
    %g = pgpu.thread.get %next, %x : i32
    pgpu.barrier
    %h = pgpu.thread.get %next, %y : i32
    pgpu.printf "%d %d\n"(%g, %h) : i32, i32
  }
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}
