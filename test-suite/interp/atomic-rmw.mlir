// memref.atomic_rmw kinds by MLIR 22's numbering (arith::AtomicRMWKind).
// RUN: pgpu run --interpret %s | FileCheck %s
// memref.generic_atomic_rmw: the body gets the current element, the element
// becomes what it yields, the result is the element before the update.
// RUN: pgpu run --interpret --entry cas %s | FileCheck %s --check-prefix=CAS
// RUN: pgpu run --interpret --entry saturate %s | FileCheck %s --check-prefix=SAT
// RUN: %expect-exit 1 pgpu run --interpret --entry generic_uninit %s 2>&1 | FileCheck %s --check-prefix=UNINIT
// RUN: %expect-exit 1 pgpu run --interpret --entry generic_oob %s 2>&1 | FileCheck %s --check-prefix=OOB
// llvm.fence (the direct update's, around its first-writer atomic) orders
// nothing more in the interpreter, which performs every memory operation
// at once: the atomic's old value and the stores around it are as written.
// RUN: pgpu run --interpret --entry fenced %s | FileCheck %s --check-prefix=FENCE
// CHECK: addi 12 andi 5 assign 7 maxs 7 maxu -1 mins -3 minu 5 muli 35 ori 7 xori 2
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %m = memref.alloc() : memref<10xi32>
  %five = arith.constant 5 : i32
  %seven = arith.constant 7 : i32
  %minus1 = arith.constant -1 : i32
  %minus3 = arith.constant -3 : i32
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  scf.for %i = %c0 to %c9 step %c1 {
    memref.store %five, %m[%i] : memref<10xi32>
  }
  memref.store %five, %m[%c9] : memref<10xi32>
  %r0 = memref.atomic_rmw addi %seven, %m[%c0] : (i32, memref<10xi32>) -> i32
  %r1 = memref.atomic_rmw andi %seven, %m[%c1] : (i32, memref<10xi32>) -> i32
  %r2 = memref.atomic_rmw assign %seven, %m[%c2] : (i32, memref<10xi32>) -> i32
  %r3 = memref.atomic_rmw maxs %seven, %m[%c3] : (i32, memref<10xi32>) -> i32
  %r4 = memref.atomic_rmw maxu %minus1, %m[%c4] : (i32, memref<10xi32>) -> i32
  %r5 = memref.atomic_rmw mins %minus3, %m[%c5] : (i32, memref<10xi32>) -> i32
  %r6 = memref.atomic_rmw minu %minus1, %m[%c6] : (i32, memref<10xi32>) -> i32
  %r7 = memref.atomic_rmw muli %seven, %m[%c7] : (i32, memref<10xi32>) -> i32
  %r8 = memref.atomic_rmw ori %seven, %m[%c8] : (i32, memref<10xi32>) -> i32
  %r9 = memref.atomic_rmw xori %seven, %m[%c9] : (i32, memref<10xi32>) -> i32
  %v0 = memref.load %m[%c0] : memref<10xi32>
  %v1 = memref.load %m[%c1] : memref<10xi32>
  %v2 = memref.load %m[%c2] : memref<10xi32>
  %v3 = memref.load %m[%c3] : memref<10xi32>
  %v4 = memref.load %m[%c4] : memref<10xi32>
  %v5 = memref.load %m[%c5] : memref<10xi32>
  %v6 = memref.load %m[%c6] : memref<10xi32>
  %v7 = memref.load %m[%c7] : memref<10xi32>
  %v8 = memref.load %m[%c8] : memref<10xi32>
  %v9 = memref.load %m[%c9] : memref<10xi32>
  pgpu.printf "addi %d andi %d assign %d maxs %d maxu %d mins %d minu %d muli %d ori %d xori %d\n"(%v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7, %v8, %v9) : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32
  %z = arith.constant 0 : i32
  return %z : i32
}

// Inserts `key` into an open-addressing table of 8 slots (-1 is empty) with
// a compare-and-swap: the body stores the key only into an empty slot. The
// probe stops at an empty slot (inserted) or one holding the key (found).
// Returns the slot and the value the swap saw there.
func.func @insert(%table: memref<8xi32>, %key: i32) -> (index, i32) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %empty = arith.constant -1 : i32
  %true = arith.constant true
  %k = arith.index_cast %key : i32 to index
  %home = arith.remui %k, %c8 : index
  %slot, %seen = scf.while (%s = %home) : (index) -> (index, i32) {
    %old = memref.generic_atomic_rmw %table[%s] : memref<8xi32> {
    ^bb0(%current: i32):
      %free = arith.cmpi eq, %current, %empty : i32
      %new = arith.select %free, %key, %current : i32
      memref.atomic_yield %new : i32
    }
    %free = arith.cmpi eq, %old, %empty : i32
    %same = arith.cmpi eq, %old, %key : i32
    %done = arith.ori %free, %same : i1
    %more = arith.xori %done, %true : i1
    scf.condition(%more) %s, %old : index, i32
  } do {
  ^bb0(%s: index, %old: i32):
    %next = arith.addi %s, %c1 : index
    %wrapped = arith.remui %next, %c8 : index
    scf.yield %wrapped : index
  }
  return %slot, %seen : index, i32
}

// 13 lands in its home slot 5; 21 and 5 (home 5 too) probe on to 6 and 7;
// inserting 13 again finds it in slot 5 and leaves the table unchanged.
// CAS: 13 -> slot 5 (saw -1)
// CAS-NEXT: 21 -> slot 6 (saw -1)
// CAS-NEXT: 5 -> slot 7 (saw -1)
// CAS-NEXT: 13 -> slot 5 (saw 13)
// CAS-NEXT: table -1 -1 -1 -1 -1 13 21 5
func.func @cas() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %empty = arith.constant -1 : i32
  %table = memref.alloc() : memref<8xi32>
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %empty, %table[%i] : memref<8xi32>
  }
  %k13 = arith.constant 13 : i32
  %k21 = arith.constant 21 : i32
  %k5 = arith.constant 5 : i32
  %s0, %o0 = func.call @insert(%table, %k13) : (memref<8xi32>, i32) -> (index, i32)
  pgpu.printf "%d -> slot %d (saw %d)\n"(%k13, %s0, %o0) : i32, index, i32
  %s1, %o1 = func.call @insert(%table, %k21) : (memref<8xi32>, i32) -> (index, i32)
  pgpu.printf "%d -> slot %d (saw %d)\n"(%k21, %s1, %o1) : i32, index, i32
  %s2, %o2 = func.call @insert(%table, %k5) : (memref<8xi32>, i32) -> (index, i32)
  pgpu.printf "%d -> slot %d (saw %d)\n"(%k5, %s2, %o2) : i32, index, i32
  %s3, %o3 = func.call @insert(%table, %k13) : (memref<8xi32>, i32) -> (index, i32)
  pgpu.printf "%d -> slot %d (saw %d)\n"(%k13, %s3, %o3) : i32, index, i32
  pgpu.printf "table"
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %table[%i] : memref<8xi32>
    pgpu.printf " %d"(%v) : i32
  }
  pgpu.printf "\n"
  memref.dealloc %table : memref<8xi32>
  %z = arith.constant 0 : i32
  return %z : i32
}

// Eight threads of one superstep increment a counter that saturates at 5
// (an f32 one beside it doubles): each sees the value the threads of lower
// rank left. Atomics are no accesses for the race detector.
// SAT: thread 0 saw 0 1.000000
// SAT-NEXT: thread 1 saw 1 2.000000
// SAT-NEXT: thread 2 saw 2 4.000000
// SAT-NEXT: thread 3 saw 3 8.000000
// SAT-NEXT: thread 4 saw 4 16.000000
// SAT-NEXT: thread 5 saw 5 32.000000
// SAT-NEXT: thread 6 saw 5 64.000000
// SAT-NEXT: thread 7 saw 5 128.000000
// SAT-NEXT: counter 5 doubled 256.000000
func.func @saturate() -> i32 {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %counter = memref.alloc() : memref<1xi32>
  %doubled = memref.alloc() : memref<1xf32>
  memref.store %zero, %counter[%c0] : memref<1xi32>
  memref.store %one, %doubled[%c0] : memref<1xf32>
  pgpu.spawn %c8 {
    %r = pgpu.rank : index
    %old = memref.generic_atomic_rmw %counter[%c0] : memref<1xi32> {
    ^bb0(%current: i32):
      %c1_i32 = arith.constant 1 : i32
      %c5_i32 = arith.constant 5 : i32
      %next = arith.addi %current, %c1_i32 : i32
      %capped = arith.minsi %next, %c5_i32 : i32
      memref.atomic_yield %capped : i32
    }
    %f = memref.generic_atomic_rmw %doubled[%c0] : memref<1xf32> {
    ^bb0(%current: f32):
      %twice = arith.addf %current, %current : f32
      memref.atomic_yield %twice : f32
    }
    %f64 = arith.extf %f : f32 to f64
    pgpu.printf "thread %d saw %d %f\n"(%r, %old, %f64) : index, i32, f64
  }
  %final = memref.load %counter[%c0] : memref<1xi32>
  %last = memref.load %doubled[%c0] : memref<1xf32>
  %last64 = arith.extf %last : f32 to f64
  pgpu.printf "counter %d doubled %f\n"(%final, %last64) : i32, f64
  %z = arith.constant 0 : i32
  return %z : i32
}

// As for memref.atomic_rmw, the element must have been written and lie in
// the view.
func.func @generic_uninit() {
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<4xi32>
  // UNINIT: {{.*}}atomic-rmw.mlir:[[@LINE+1]]:8: error: read of uninitialised memory: element 2
  %x = memref.generic_atomic_rmw %a[%c2] : memref<4xi32> {
  ^bb0(%current: i32):
    memref.atomic_yield %current : i32
  }
  return
}

func.func @generic_oob() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = arith.constant 1 : i32
  %a = memref.alloc() : memref<2x4xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %v, %a[%c0, %i] : memref<2x4xi32>
    memref.store %v, %a[%c1, %i] : memref<2x4xi32>
  }
  // OOB: {{.*}}atomic-rmw.mlir:[[@LINE+1]]:8: error: out-of-bounds access: index 4 of dimension 1 is outside the view's size 4
  %x = memref.generic_atomic_rmw %a[%c0, %c4] : memref<2x4xi32> {
  ^bb0(%current: i32):
    memref.atomic_yield %current : i32
  }
  return
}

// FENCE: before 9 first 1 after 4
func.func @fenced() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %max = arith.constant 9 : i64
  %four = arith.constant 4 : i64
  %a = memref.alloc() : memref<2xi64>
  memref.store %max, %a[%c0] : memref<2xi64>
  memref.store %max, %a[%c1] : memref<2xi64>
  %before = memref.load %a[%c1] : memref<2xi64>
  llvm.fence syncscope("device") acq_rel
  %old = memref.atomic_rmw mins %four, %a[%c0] : (i64, memref<2xi64>) -> i64
  llvm.fence syncscope("device") acq_rel
  %first = arith.cmpi eq, %old, %max : i64
  %firsti = arith.extui %first : i1 to i32
  memref.store %four, %a[%c1] : memref<2xi64>
  %after = memref.load %a[%c1] : memref<2xi64>
  pgpu.printf "before %ld first %d after %ld\n"(%before, %firsti, %after) : i64, i32, i64
  %z = arith.constant 0 : i32
  return %z : i32
}
