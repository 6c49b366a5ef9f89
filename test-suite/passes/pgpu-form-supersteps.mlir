// RUN: pgpu-opt %s --split-input-file --pgpu-form-supersteps | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-form-supersteps -o /dev/null
// RUN: pgpu-opt %S/Inputs/form-supersteps-errors.mlir --split-input-file --verify-diagnostics --pgpu-form-supersteps

// Barriers cut the body into supersteps; a value used after a barrier is
// a result of the superstep defining it; a rank-reassigning barrier marks
// the next superstep. Two barriers in a row make no empty superstep.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NEXT: %[[S1:.*]]:2 = pgpu.superstep -> (index, i32) {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[X:.*]] = memref.load
// CHECK-NEXT: memref.store
// CHECK-NEXT: pgpu.yield %[[R]], %[[X]] : index, i32
// CHECK-NEXT: }
// CHECK-NEXT: %[[S2:.*]] = pgpu.superstep -> (i32) {
// CHECK: %[[Y:.*]] = memref.load %{{.*}}[%{{.*}}]
// CHECK: %[[Z:.*]] = arith.addi %[[Y]], %[[S1]]#1 : i32
// CHECK-NEXT: pgpu.yield %[[Z]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep rank_reassigned {
// CHECK-NEXT: pgpu.set_oldrank %[[S1]]#0
// CHECK-NEXT: %[[R2:.*]] = pgpu.rank : index
// CHECK-NEXT: memref.store %[[S2]], %{{.*}}[%[[R2]]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: pgpu.barrier
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  %b = memref.alloc(%c4) : memref<?xi32>
  %c0 = arith.constant 0 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %iv = arith.index_cast %i : index to i32
    memref.store %iv, %a[%i] : memref<?xi32>
  }
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = memref.load %a[%r] : memref<?xi32>
    memref.store %x, %b[%r] : memref<?xi32>
    pgpu.barrier
    pgpu.barrier
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %c4 : index
    %y = memref.load %b[%next] : memref<?xi32>
    %z = arith.addi %y, %x : i32
    pgpu.barrier rank_reassigned
    pgpu.set_oldrank %r
    %r2 = pgpu.rank : index
    memref.store %z, %a[%r2] : memref<?xi32>
  }
  %v = memref.load %a[%c0] : memref<?xi32>
  pgpu.printf "%d\n"(%v) : i32
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A collective ends the superstep it stands in (its first phase is bundled
// with the code before it, Fig. 3b); independent collectives in a row share
// that superstep, a collective using another's result starts a new one, and
// so does anything after a thread primitive.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NEXT: %[[S1:.*]]:4 = pgpu.superstep -> (i32, i32, i32, i32) {
// CHECK-NEXT: pgpu.rank
// CHECK-NEXT: %[[X:.*]] = arith.index_cast
// CHECK-NEXT: %[[SUM:.*]] = pgpu.reduce add %[[X]] : i32
// CHECK-NEXT: %[[EXCL:.*]], %[[TOTAL:.*]] = pgpu.scan add %[[X]] : i32
// CHECK-NEXT: pgpu.yield %[[X]], %[[SUM]], %[[EXCL]], %[[TOTAL]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[S2:.*]] = pgpu.superstep -> (i32) {
// CHECK-NEXT: %[[MAX:.*]] = pgpu.reduce max %[[S1]]#2 : i32
// CHECK-NEXT: pgpu.thread.sortby %[[S1]]#2 : i32
// CHECK-NEXT: pgpu.yield %[[MAX]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: %[[S3:.*]] = pgpu.superstep -> (i32) {
// CHECK-NEXT: %[[MIN:.*]] = pgpu.reduce min %[[S1]]#0 : i32
// CHECK-NEXT: pgpu.yield %[[MIN]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep {
// CHECK-NEXT: pgpu.printf "%d %d %d %d %d\0A"(%[[S1]]#1, %[[S1]]#2, %[[S1]]#3, %[[S2]], %[[S3]])
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    %sum = pgpu.reduce add %x : i32
    %excl, %total = pgpu.scan add %x : i32
    %max = pgpu.reduce max %excl : i32
    pgpu.thread.sortby %excl : i32
    %min = pgpu.reduce min %x : i32
    pgpu.printf "%d %d %d %d %d\n"(%sum, %excl, %total, %max, %min) : i32, i32, i32, i32, i32
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// par (Listing 8, Fig. 5): the k-th synchronization points of the branches
// are aligned and the k-th segments bundled; the par's results are the
// branches' yields. Branch 1's sort_idx is aligned with branch 2's barrier
// (a collective ends a superstep, so no barrier is kept), branch 1's
// barrier with branch 2's sort_idx; the two independent collectives then
// end the same superstep, and both loads run in the second.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NEXT: %[[S1:.*]]:3 = pgpu.superstep -> (index, index, index) {
// CHECK: %[[NEXT:.*]] = arith.remui
// CHECK-NEXT: memref.store
// CHECK-NEXT: arith.muli
// CHECK-NEXT: memref.store
// CHECK-NEXT: %[[IA:.*]] = pgpu.sort_idx
// CHECK-NEXT: %[[IB:.*]] = pgpu.sort_idx
// CHECK-NEXT: pgpu.yield %[[NEXT]], %[[IA]], %[[IB]] : index, index, index
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep {
// CHECK-NEXT: %[[VA:.*]] = memref.load %{{.*}}[%[[S1]]#0]
// CHECK-NEXT: %[[VB:.*]] = memref.load %{{.*}}[%[[S1]]#0]
// CHECK-NEXT: %[[A32:.*]] = arith.index_cast %[[S1]]#1
// CHECK-NEXT: %[[B32:.*]] = arith.index_cast %[[S1]]#2
// CHECK-NEXT: pgpu.printf "%d %d %d %d\0A"(%[[A32]], %[[VA]], %[[B32]], %[[VB]])
// CHECK-NOT: pgpu.par
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  %b = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %c4 : index
    %ia, %va, %ib, %vb = pgpu.par -> (index, i32, index, i32) {
      memref.store %x, %a[%r] : memref<?xi32>
      %i = pgpu.sort_idx %x : i32
      pgpu.barrier
      %v = memref.load %a[%next] : memref<?xi32>
      pgpu.yield %i, %v : index, i32
    }, {
      %y = arith.muli %x, %x : i32
      memref.store %y, %b[%r] : memref<?xi32>
      pgpu.barrier
      %j = pgpu.sort_idx %y : i32
      %w = memref.load %b[%next] : memref<?xi32>
      pgpu.yield %j, %w : index, i32
    }
    %ia32 = arith.index_cast %ia : index to i32
    %ib32 = arith.index_cast %ib : index to i32
    pgpu.printf "%d %d %d %d\n"(%ia32, %va, %ib32, %vb) : i32, i32, i32, i32
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A rank reassignment right after a thread primitive: the ranks would
// change twice where the reassigned superstep begins, and its loads by old
// rank undo one change only; an empty superstep between takes the
// primitive's change (a value saved before the kill was read at its
// pre-kill rank: silent wrong code, scripts/difftest's
// primitive_then_reassign).
// CHECK-LABEL: func.func @main
// CHECK: %[[V:.*]] = pgpu.superstep -> (i32) {
// CHECK: pgpu.thread.kill
// CHECK: pgpu.yield %{{.*}} : i32
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep {
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep rank_reassigned {
// CHECK: pgpu.set_oldrank
// CHECK: pgpu.printf "%d\0A"(%[[V]]) : i32
func.func @main() -> i32 {
  %c6 = arith.constant 6 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %v = arith.index_cast %r : index to i32
    %m = arith.remui %r, %c3 : index
    %k = arith.cmpi eq, %m, %c1 : index
    pgpu.thread.kill %k
    pgpu.barrier rank_reassigned
    %r2 = pgpu.rank : index
    %n = pgpu.size : index
    %r3 = arith.addi %r2, %c1 : index
    %o = arith.remui %r3, %n : index
    pgpu.set_oldrank %o
    pgpu.printf "%d\n"(%v) : i32
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A rank reassignment before any thread code (what came before the
// barrier was uniform and is outside the spawn) gets an empty superstep
// first, from whose ranks the new ones are computed.
// CHECK-LABEL: func.func @main
// CHECK: pgpu.spawn
// CHECK-NEXT: pgpu.superstep {
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep rank_reassigned {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK: pgpu.set_oldrank
// CHECK: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %out = memref.alloc(%c4) : memref<?xindex>
  pgpu.spawn %c4 {
    pgpu.barrier rank_reassigned
    %r = pgpu.rank : index
    %r1 = arith.addi %r, %c1 : index
    %old = arith.remui %r1, %c4 : index
    pgpu.set_oldrank %old
    memref.store %old, %out[%r] : memref<?xindex>
  }
  %v = memref.load %out[%c0] : memref<?xindex>
  %w = arith.index_cast %v : index to i32
  pgpu.printf "%d\n"(%w) : i32
  %ok = arith.constant 0 : i32
  return %ok : i32
}
