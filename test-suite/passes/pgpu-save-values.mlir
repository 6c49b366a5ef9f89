// RUN: pgpu-opt %s --split-input-file --pgpu-save-values | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-save-values -o /dev/null

// Rank-derived values are recomputed where ranks did not change (the
// chain rank -> index_cast -> muli is cloned into the using superstep);
// a dead result is dropped; a loaded value stays saved.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NEXT: %[[S1:.*]] = pgpu.superstep -> (i32) {
// CHECK: %[[X:.*]] = memref.load
// CHECK: pgpu.yield %[[X]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[RI:.*]] = arith.index_cast %[[R]] : index to i32
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[D:.*]] = arith.muli %[[RI]], %[[TWO]] : i32
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[D]], %[[S1]] : i32
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    %iv = arith.index_cast %i : index to i32
    memref.store %iv, %a[%i] : memref<?xi32>
  }
  pgpu.spawn %c4 {
    %s:3 = pgpu.superstep -> (i32, i32, i32) {
      %r = pgpu.rank : index
      %ri = arith.index_cast %r : index to i32
      %c2 = arith.constant 2 : i32
      %d = arith.muli %ri, %c2 : i32
      %x = memref.load %a[%r] : memref<?xi32>
      %unused = arith.addi %x, %x : i32
      pgpu.yield %d, %x, %unused : i32, i32, i32
    }
    pgpu.superstep {
      %sum = arith.addi %s#0, %s#1 : i32
      pgpu.printf "%d\n"(%sum) : i32
    }
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A rank used after a thread primitive is saved (the ranks changed); a size
// used after thread.kill is saved too, as a uniform value; a value that
// thread.get reads is saved even though it could be recomputed.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NEXT: %[[S1:.*]]:3 = pgpu.superstep -> (index, index, i32) {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[N:.*]] = pgpu.size : index
// CHECK-NEXT: %[[RI:.*]] = arith.index_cast %[[R]] : index to i32
// CHECK: pgpu.thread.kill
// CHECK-NEXT: pgpu.yield %[[R]], %[[N]], %[[RI]] : index, index, i32
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep {
// CHECK: pgpu.thread.get %{{.*}}, %[[S1]]#2 : i32
func.func @main() -> i32 {
  %c6 = arith.constant 6 : index
  %c0 = arith.constant 0 : index
  pgpu.spawn %c6 {
    %s:3 = pgpu.superstep -> (index, index, i32) {
      %r = pgpu.rank : index
      %n = pgpu.size : index
      %ri = arith.index_cast %r : index to i32
      %c2 = arith.constant 2 : index
      %rem = arith.remui %r, %c2 : index
      %odd = arith.cmpi ne, %rem, %c0 : index
      pgpu.thread.kill %odd
      pgpu.yield %r, %n, %ri : index, index, i32
    }
    pgpu.superstep {
      %now = pgpu.rank : index
      %first = pgpu.thread.get %c0, %s#2 : i32
      %n32 = arith.index_cast %s#1 : index to i32
      %r32 = arith.index_cast %s#0 : index to i32
      pgpu.printf "%d %d %d\n"(%r32, %n32, %first) : i32, i32, i32
    }
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}
