// RUN: pgpu-opt %s --pgpu-split-private-control | FileCheck %s

// The rewritten program runs with Fork's semantics in the interpreter.
// RUN: pgpu-opt %s --pgpu-split-private-control -o %t.mlir
// RUN: pgpu run --interpret %t.mlir | FileCheck %s --check-prefix=OUT
// OUT: rank 0 while 0 for 0 side 0
// OUT-NEXT: rank 1 while 2 for 0 side 1
// OUT-NEXT: rank 2 while 4 for 1 side 0
// OUT-NEXT: rank 3 while 6 for 3 side 1

// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn synchronous
// A condition on a host value stays an scf.if.
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: pgpu.printf "uniform\0A"
// The private while: active cell, the group's scratch cell, group-wide or,
// body in a split.
// CHECK: %[[ACTIVE:.*]] = memref.alloca() : memref<i1>
// CHECK: %[[ANYCELL:.*]] = pgpu.group.alloc : memref<i32>
// CHECK: scf.while
// CHECK: %[[WAS:.*]] = memref.load %[[ACTIVE]][]
// CHECK-NEXT: %[[STILL:.*]] = arith.andi %{{.*}}, %[[WAS]] : i1
// CHECK-NEXT: memref.store %[[STILL]], %[[ACTIVE]][]
// CHECK: pgpu.multiprefix or %{{.*}} to %[[ANYCELL]][] : memref<i32>
// CHECK: scf.condition
// CHECK: %[[NOW:.*]] = memref.load %[[ACTIVE]][]
// CHECK-NEXT: %{{.*}} = pgpu.group.split %[[NOW]] -> (index, i32) {
// CHECK: pgpu.group.merge
// CHECK: } else {
// CHECK-NEXT: pgpu.group.merge
// The private for: the group's largest trip count, own iterations split.
// CHECK: %[[MAXCELL:.*]] = pgpu.group.alloc : memref<index>
// CHECK: pgpu.multiprefix max %{{.*}} to %[[MAXCELL]][] : memref<index>
// CHECK: scf.for
// CHECK: pgpu.group.split
// The private if.
// CHECK: pgpu.group.split %{{.*}} -> (i32) {
// CHECK: pgpu.group.merge %{{.*}} : i32
// CHECK: } else {
// CHECK: pgpu.group.merge %{{.*}} : i32
// Every region below counts its steps with a multiprefix: a group
// operation, so the regions keep the group's lock step and split.
memref.global @steps : memref<i32> = dense<0>

func.func @main() -> i32 {
  %steps = memref.get_global @steps : memref<i32>
  %one32 = arith.constant 1 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %big = arith.constant 100 : index
  %uniform = arith.cmpi ugt, %c4, %big : index
  pgpu.spawn synchronous %c4 {
    %me = pgpu.group.rank : index
    scf.if %uniform {
      pgpu.printf "uniform\n"
    }
    // while (k > 0) { k--; t += 2; }
    %zero32 = arith.constant 0 : i32
    %two32 = arith.constant 2 : i32
    %w:2 = scf.while (%k = %me, %t = %zero32) : (index, i32) -> (index, i32) {
      %more = arith.cmpi ugt, %k, %c0 : index
      scf.condition(%more) %k, %t : index, i32
    } do {
    ^bb0(%k: index, %t: i32):
      %k1 = arith.subi %k, %c1 : index
      %n1 = pgpu.multiprefix add %one32 to %steps[] : memref<i32>
      %t1 = arith.addi %t, %two32 : i32
      scf.yield %k1, %t1 : index, i32
    }
    // for (j = 0; j < me; j++) s += j;
    %s = scf.for %j = %c0 to %me step %c1 iter_args(%acc = %zero32) -> (i32) {
      %j32 = arith.index_cast %j : index to i32
      %n2 = pgpu.multiprefix add %one32 to %steps[] : memref<i32>
      %acc1 = arith.addi %acc, %j32 : i32
      scf.yield %acc1 : i32
    }
    %odd = arith.remui %me, %c4 : index
    %is_odd = arith.andi %me, %c1 : index
    %cond = arith.cmpi ne, %is_odd, %c0 : index
    %side = scf.if %cond -> (i32) {
      %one = arith.constant 1 : i32
      %n3 = pgpu.multiprefix add %one32 to %steps[] : memref<i32>
      scf.yield %one : i32
    } else {
      scf.yield %zero32 : i32
    }
    pgpu.printf "rank %d while %d for %d side %d\n"(%me, %w#1, %s, %side) : index, i32, i32, i32
    pgpu.yield
  }
  %r = arith.constant 0 : i32
  return %r : i32
}

// A loop-carried value that stays the same in all members (it starts and
// changes uniformly) keeps the loop ordinary: no shrinking, no split.
// CHECK-LABEL: func.func @uniform_doubling
// CHECK: scf.while
// CHECK-NOT: pgpu.multiprefix
// CHECK-NOT: pgpu.group.split
// CHECK: return
func.func @uniform_doubling(%n: i32, %out: memref<8xi32>) {
  %c8 = arith.constant 8 : index
  pgpu.spawn synchronous %c8 {
    %one = arith.constant 1 : i32
    %two = arith.constant 2 : i32
    %d = scf.while (%x = %one) : (i32) -> i32 {
      %more = arith.cmpi slt, %x, %n : i32
      scf.condition(%more) %x : i32
    } do {
    ^bb0(%x: i32):
      %y = arith.muli %x, %two : i32
      scf.yield %y : i32
    }
    %r = pgpu.group.rank : index
    memref.store %d, %out[%r] : memref<8xi32>
    pgpu.yield
  }
  return
}

// Regions whose members cannot observe each other run unsynchronized: a
// `pgpu.farm` instead of splits, with nothing inside rewritten.
memref.global @flags : memref<64xi32> = dense<0>
memref.global @grid : memref<8x8xi32> = dense<0>
memref.global @last : memref<i32> = dense<0>

// The sieve's strike-out loop: every store writes the same constant.
// CHECK-LABEL: func.func @same_constant
// CHECK: pgpu.spawn synchronous
// CHECK: %{{.*}} = pgpu.farm -> (index) {
// CHECK-NEXT: %[[K:.*]] = scf.while
// CHECK-NOT: pgpu.multiprefix
// CHECK-NOT: pgpu.group.split
// CHECK: pgpu.yield %[[K]] : index
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @same_constant(%n: index) {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    %me = pgpu.group.rank : index
    %flags = memref.get_global @flags : memref<64xi32>
    %zero = arith.constant 0 : i32
    %k = scf.while (%m = %me) : (index) -> index {
      %more = arith.cmpi ult, %m, %n : index
      scf.condition(%more) %m : index
    } do {
    ^bb0(%m: index):
      memref.store %zero, %flags[%m] : memref<64xi32>
      %next = arith.addi %m, %c4 : index
      scf.yield %next : index
    }
    pgpu.yield
  }
  return
}

// Loads and stores of one element per processor (its rank).
// CHECK-LABEL: func.func @own_element
// CHECK: pgpu.farm {
// CHECK-NEXT: scf.if
// CHECK-NOT: pgpu.group.split
// CHECK: return
func.func @own_element() {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    %me = pgpu.group.rank : index
    %flags = memref.get_global @flags : memref<64xi32>
    %c1 = arith.constant 1 : index
    %odd = arith.andi %me, %c1 : index
    %is_odd = arith.cmpi ne, %odd, %c1 : index
    scf.if %is_odd {
      %v = memref.load %flags[%me] : memref<64xi32>
      %w = arith.addi %v, %v : i32
      memref.store %w, %flags[%me] : memref<64xi32>
    }
    pgpu.yield
  }
  return
}

// The cyclic distribution `for (k = $; k < n * n; k += P)` storing at
// (k / n, k % n): members write disjoint elements.
// CHECK-LABEL: func.func @cyclic_rows_columns
// CHECK: pgpu.farm -> (i32) {
// CHECK-NOT: pgpu.group.split
// CHECK: return
func.func @cyclic_rows_columns(%p: i32, %n: i32) {
  %count = arith.index_cast %p : i32 to index
  pgpu.spawn synchronous %count {
    %me = pgpu.group.rank : index
    %me32 = arith.index_cast %me : index to i32
    %grid = memref.get_global @grid : memref<8x8xi32>
    %nn = arith.muli %n, %n : i32
    %k = scf.while (%x = %me32) : (i32) -> i32 {
      %more = arith.cmpi slt, %x, %nn : i32
      scf.condition(%more) %x : i32
    } do {
    ^bb0(%x: i32):
      %row = arith.divsi %x, %n : i32
      %column = arith.remsi %x, %n : i32
      %i = arith.index_cast %row : i32 to index
      %j = arith.index_cast %column : i32 to index
      memref.store %x, %grid[%i, %j] : memref<8x8xi32>
      %next = arith.addi %x, %p : i32
      scf.yield %next : i32
    }
    pgpu.yield
  }
  return
}

// Members that may write one element with different values in different
// steps (the last step's write wins), a store another member may read,
// and a stride that is not the group size all keep the lock step.
// CHECK-LABEL: func.func @synchronized
// CHECK-NOT: pgpu.farm
// CHECK: pgpu.group.split
// CHECK: pgpu.group.split
// CHECK: pgpu.group.split
// CHECK-NOT: pgpu.farm
// CHECK: return
func.func @synchronized(%n: i32) {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    %me = pgpu.group.rank : index
    %me32 = arith.index_cast %me : index to i32
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : i32
    %last = memref.get_global @last : memref<i32>
    %flags = memref.get_global @flags : memref<64xi32>
    %odd = arith.andi %me, %c1 : index
    %is_odd = arith.cmpi ne, %odd, %c1 : index
    scf.if %is_odd {
      memref.store %me32, %last[] : memref<i32>
    }
    scf.if %is_odd {
      %next = arith.addi %me, %c1 : index
      %v = memref.load %flags[%next] : memref<64xi32>
      memref.store %v, %flags[%me] : memref<64xi32>
    }
    %k = scf.while (%x = %me32) : (i32) -> i32 {
      %more = arith.cmpi slt, %x, %n : i32
      scf.condition(%more) %x : i32
    } do {
    ^bb0(%x: i32):
      %i = arith.index_cast %x : i32 to index
      memref.store %me32, %flags[%i] : memref<64xi32>
      %next = arith.addi %x, %c2 : i32
      scf.yield %next : i32
    }
    pgpu.yield
  }
  return
}
