// RUN: pgpu-opt %s --pgpu-split-private-control | FileCheck %s

// The rewritten program runs with Fork's semantics in the interpreter.
// RUN: pgpu-opt %s --pgpu-split-private-control -o %t.mlir
// RUN: pgpu run --interpret %t.mlir | FileCheck %s --check-prefix=OUT
// OUT: rank 0 while 0 for 0 side 0
// OUT-NEXT: rank 1 while 2 for 0 side 1
// OUT-NEXT: rank 2 while 4 for 1 side 0
// OUT-NEXT: rank 3 while 6 for 3 side 1

// CHECK-DAG: memref.global "private" @__fork_any_i32 : memref<i32> = dense<0>
// CHECK-DAG: memref.global "private" @__fork_max_index : memref<index> = dense<0>
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn synchronous
// A condition on a host value stays an scf.if.
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: pgpu.printf "uniform\0A"
// The private while: active cell, group-wide or, body in a split.
// CHECK: %[[ACTIVE:.*]] = memref.alloca() : memref<i1>
// CHECK: scf.while
// CHECK: %[[WAS:.*]] = memref.load %[[ACTIVE]][]
// CHECK-NEXT: %[[STILL:.*]] = arith.andi %{{.*}}, %[[WAS]] : i1
// CHECK-NEXT: memref.store %[[STILL]], %[[ACTIVE]][]
// CHECK: %[[ANYCELL:.*]] = memref.get_global @__fork_any_i32
// CHECK: pgpu.multiprefix or %{{.*}} to %[[ANYCELL]][] : memref<i32>
// CHECK: scf.condition
// CHECK: %[[NOW:.*]] = memref.load %[[ACTIVE]][]
// CHECK-NEXT: %{{.*}} = pgpu.group.split %[[NOW]] -> (index, i32) {
// CHECK: pgpu.group.merge
// CHECK: } else {
// CHECK-NEXT: pgpu.group.merge
// The private for: the group's largest trip count, own iterations split.
// CHECK: %[[MAXCELL:.*]] = memref.get_global @__fork_max_index
// CHECK: pgpu.multiprefix max %{{.*}} to %[[MAXCELL]][] : memref<index>
// CHECK: scf.for
// CHECK: pgpu.group.split
// The private if.
// CHECK: pgpu.group.split %{{.*}} -> (i32) {
// CHECK: pgpu.group.merge %{{.*}} : i32
// CHECK: } else {
// CHECK: pgpu.group.merge %{{.*}} : i32
func.func @main() -> i32 {
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
      %t1 = arith.addi %t, %two32 : i32
      scf.yield %k1, %t1 : index, i32
    }
    // for (j = 0; j < me; j++) s += j;
    %s = scf.for %j = %c0 to %me step %c1 iter_args(%acc = %zero32) -> (i32) {
      %j32 = arith.index_cast %j : index to i32
      %acc1 = arith.addi %acc, %j32 : i32
      scf.yield %acc1 : i32
    }
    %odd = arith.remui %me, %c4 : index
    %is_odd = arith.andi %me, %c1 : index
    %cond = arith.cmpi ne, %is_odd, %c0 : index
    %side = scf.if %cond -> (i32) {
      %one = arith.constant 1 : i32
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
