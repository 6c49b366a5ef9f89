// RUN: pgpu-opt %s --split-input-file --pgpu-split-kernels | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-split-kernels -o /dev/null
// RUN: pgpu-opt %S/Inputs/split-kernels-errors.mlir --split-input-file --verify-diagnostics --pgpu-split-kernels

// A rank-reassigning barrier (Listing 3/4): saved values are loaded with the
// old rank right after it is set, and a value used later still is moved to
// a new buffer under the new rank. Requires run on the host before their
// kernel; their results are host values. The require's dtempnew list, used
// by this spawn alone, is freed after its last kernel.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: scf.for
// CHECK: %[[T0:.*]] = memref.alloc(%[[N:.*]]) : memref<?xi32>
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[R]]]
// CHECK: memref.store %[[X]], %[[T0]][%[[R]]]
// CHECK: scf.reduce
// CHECK: %[[LIST:.*]] = memref.alloc(%[[N]]) : memref<?xi32>
// CHECK: %[[T1:.*]] = memref.alloc(%[[N]]) : memref<?xi32>
// CHECK: scf.parallel (%[[R2:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK-NEXT: arith.subi
// CHECK-NEXT: %[[OLD:.*]] = arith.subi
// CHECK-NEXT: %[[X2:.*]] = memref.load %[[T0]][%[[OLD]]]
// CHECK: memref.store %[[X2]], %[[LIST]][%[[R2]]]
// CHECK: memref.store %[[X2]], %[[T1]][%[[R2]]]
// CHECK: memref.dealloc %[[T0]]
// CHECK: scf.parallel (%[[R3:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK-NEXT: %[[X3:.*]] = memref.load %[[T1]][%[[R3]]]
// CHECK: memref.load %[[LIST]]
// CHECK: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[LIST]]
// CHECK: memref.dealloc %[[T1]]
// CHECK-NOT: pgpu.spawn
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    %iv = arith.index_cast %i : index to i32
    %sq = arith.muli %iv, %iv : i32
    memref.store %sq, %a[%i] : memref<?xi32>
  }
  pgpu.spawn %c4 {
    %s = pgpu.superstep -> (i32) {
      %r = pgpu.rank : index
      %x = memref.load %a[%r] : memref<?xi32>
      pgpu.yield %x : i32
    }
    // Thread r takes over the context of thread 3 - r.
    %l:2 = pgpu.superstep rank_reassigned -> (memref<?xi32>, i32) {
      %r = pgpu.rank : index
      %n = pgpu.size : index
      %n1 = arith.subi %n, %c1 : index
      %old = arith.subi %n1, %r : index
      pgpu.set_oldrank %old
      %list = pgpu.require -> (memref<?xi32>) {
        %m = pgpu.dtempnew [%n] : memref<?xi32>
        pgpu.yield %m : memref<?xi32>
      }
      memref.store %s, %list[%r] : memref<?xi32>
      pgpu.yield %list, %s : memref<?xi32>, i32
    }
    pgpu.superstep {
      %r = pgpu.rank : index
      %next = arith.addi %r, %c1 : index
      %wrap = arith.remui %next, %c4 : index
      %y = memref.load %l#0[%wrap] : memref<?xi32>
      %ri = arith.index_cast %r : index to i32
      pgpu.printf "%d: %d %d\n"(%ri, %l#1, %y) : i32, i32, i32
    }
  }
  pgpu.dtempfree
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Collectives end their superstep: each thread writes its operand to the
// collective's list in the kernel, the host runs the pgpu.list op after it.
// A reduce's total is a host value; a scan's prefix list is read by rank.
// thread.kill becomes a compaction of the surviving ranks: the next kernel
// runs over the survivors and finds each one's old rank in the permutation.
// CHECK-LABEL: func.func @main
// CHECK: %[[IN:.*]] = memref.alloc(%[[N:.*]]) : memref<?xi32>
// CHECK: %[[SIN:.*]] = memref.alloc(%[[N]]) : memref<?xi32>
// CHECK: %[[IOTA:.*]] = memref.alloc(%[[N]]) : memref<?xindex>
// CHECK: %[[KEEP:.*]] = memref.alloc(%[[N]]) : memref<?xi1>
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK-DAG: memref.store %{{.*}}, %[[IN]][%[[R]]]
// CHECK-DAG: memref.store %{{.*}}, %[[SIN]][%[[R]]]
// CHECK-DAG: memref.store %[[R]], %[[IOTA]][%[[R]]]
// CHECK-DAG: memref.store %{{.*}}, %[[KEEP]][%[[R]]]
// CHECK: %[[SUM:.*]] = pgpu.list.reduce add %[[IN]][%[[N]]] : memref<?xi32> -> i32
// CHECK: %[[PREFIX:.*]] = memref.alloc(%[[N]]) : memref<?xi32>
// CHECK: pgpu.list.scan add %[[SIN]], %[[PREFIX]][%[[N]]]
// CHECK: %[[PERM:.*]] = memref.alloc(%[[N]]) : memref<?xindex>
// CHECK: %[[ALIVE:.*]] = pgpu.list.compact %[[IOTA]], %[[KEEP]], %[[PERM]][%[[N]]] base %{{.*}}
// CHECK: scf.parallel (%[[R2:.*]]) = (%{{.*}}) to (%[[ALIVE]])
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[PERM]][%[[R2]]]
// CHECK-NEXT: %[[P:.*]] = memref.load %[[PREFIX]][%[[OLD]]]
// CHECK: pgpu.printf "%d %d %d\0A"(%{{.*}}, %[[SUM]], %[[P]])
func.func @main() -> i32 {
  %c6 = arith.constant 6 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  pgpu.spawn %c6 {
    %s:2 = pgpu.superstep -> (i32, i32) {
      %r = pgpu.rank : index
      %x = arith.index_cast %r : index to i32
      %rem = arith.remui %r, %c2 : index
      %odd = arith.cmpi ne, %rem, %c0 : index
      %sum = pgpu.reduce add %x : i32
      %excl, %total = pgpu.scan add %x : i32
      pgpu.thread.kill %odd
      pgpu.yield %sum, %excl : i32, i32
    }
    pgpu.superstep {
      %r = pgpu.rank : index
      %ri = arith.index_cast %r : index to i32
      pgpu.printf "%d %d %d\n"(%ri, %s#0, %s#1) : i32, i32, i32
    }
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// thread.fork: the counts are summed on the host, the ranks expanded into
// a parent list (the new ranks' old ranks) and a child index list; the next
// kernel runs over the children, which inherit their parent's saved values.
// CHECK-LABEL: func.func @main
// CHECK: %[[SAVED:.*]] = memref.alloc(%[[N:.*]]) : memref<?xi32>
// CHECK: %[[COUNTS:.*]] = memref.alloc(%[[N]]) : memref<?xi32>
// CHECK: scf.parallel
// CHECK: %[[TOTAL:.*]] = pgpu.list.reduce add %[[COUNTS]][%[[N]]]
// CHECK: %[[M:.*]] = arith.index_cast %[[TOTAL]] : i32 to index
// CHECK: %[[PARENTS:.*]] = memref.alloc(%[[M]]) : memref<?xindex>
// CHECK: %[[CHILDREN:.*]] = memref.alloc(%[[M]]) : memref<?xi32>
// CHECK: %[[FORKED:.*]] = pgpu.list.expand %[[COUNTS]], %[[PARENTS]], %[[CHILDREN]][%[[N]]]
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[FORKED]])
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[PARENTS]][%[[R]]]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[SAVED]][%[[OLD]]]
// CHECK-NEXT: %[[C:.*]] = memref.load %[[CHILDREN]][%[[R]]]
// CHECK: pgpu.printf "%d %d %d\0A"(%{{.*}}, %[[V]], %[[C]])
func.func @main() -> i32 {
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : i32
  pgpu.spawn %c3 {
    %s:2 = pgpu.superstep -> (i32, i32) {
      %r = pgpu.rank : index
      %x = arith.index_cast %r : index to i32
      %v = arith.muli %x, %c10 : i32
      %child = pgpu.thread.fork %x : i32
      pgpu.yield %v, %child : i32, i32
    }
    pgpu.superstep {
      %r = pgpu.rank : index
      %ri = arith.index_cast %r : index to i32
      pgpu.printf "%d %d %d\n"(%ri, %s#0, %s#1) : i32, i32, i32
    }
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// thread.put stores into the receiver's slot of the put variable's list,
// which starts out poison (a kernel of its own); thread.get loads the
// sender's slot, both guarded by the rank being valid.
// CHECK-LABEL: func.func @main
// CHECK: %[[LIST:.*]] = memref.alloc(%[[N:.*]]) : memref<?xi32>
// CHECK: scf.parallel (%[[F:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK-NEXT: %[[POISON:.*]] = ub.poison : i32
// CHECK-NEXT: memref.store %[[POISON]], %[[LIST]][%[[F]]]
// CHECK: scf.parallel
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[TARGET:.*]], %[[N]] : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[LIST]][%[[TARGET]]]
// CHECK: scf.parallel
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[FROM:.*]], %[[N]] : index
// CHECK-NEXT: scf.if %[[IN]] -> (i32) {
// CHECK-NEXT: memref.load %[[LIST]][%[[FROM]]]
// CHECK: } else {
// CHECK-NEXT: ub.poison : i32
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  pgpu.spawn %c4 {
    %s = pgpu.superstep -> (i32) {
      %r = pgpu.rank : index
      %x = arith.index_cast %r : index to i32
      %next = arith.addi %r, %c1 : index
      %p = pgpu.thread.put %next, %x, %x : i32
      pgpu.yield %p : i32
    }
    pgpu.superstep {
      %r = pgpu.rank : index
      %first = arith.cmpi eq, %r, %c0 : index
      scf.if %first {
        pgpu.printf "rank 0 gets no put\n"
      } else {
        %v = pgpu.thread.get %c1, %s : i32
        %ri = arith.index_cast %r : index to i32
        pgpu.printf "%d %d\n"(%ri, %v) : i32, i32
      }
    }
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A superstep that starts with a thread.get whose rank is itself a saved
// value: the loads go before the get, which is lowered after them (the
// pass used to lower the get first and then insert the loads before the
// erased op: a segmentation fault; shared/bugs/reliability/
// split_kernels_segv.mlir).
// CHECK-LABEL: func.func @main
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.parallel (%[[T:.*]]) =
// CHECK-DAG: %[[RANK:.*]] = memref.load %{{.*}}[%[[T]]] : memref<?xindex>
// CHECK-DAG: %[[Y:.*]] = memref.load %{{.*}}[%[[T]]] : memref<?xi32>
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[RANK]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[IN]] -> (i32) {
// CHECK-NEXT: memref.load %{{.*}}[%[[RANK]]] : memref<?xi32>
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %x = pgpu.superstep -> (i32) {
      %r = pgpu.rank : index
      %xi = arith.index_cast %r : index to i32
      memref.store %xi, %a[%r] : memref<?xi32>
      pgpu.yield %xi : i32
    }
    %s:3 = pgpu.superstep -> (index, i32, i32) {
      %r = pgpu.rank : index
      %r1 = arith.addi %r, %c1 : index
      %next = arith.remui %r1, %c4 : index
      %y = memref.load %a[%next] : memref<?xi32>
      %g = pgpu.thread.get %next, %x : i32
      pgpu.yield %next, %y, %g : index, i32, i32
    }
    pgpu.superstep {
      %h = pgpu.thread.get %s#0, %s#1 : i32
      pgpu.printf "%d %d\n"(%s#2, %h) : i32, i32
    }
  }
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A multiprefix in an ordinary spawn is asynchronous: an atomic
// fetch-and-op in the kernel (it was left outside any SPMD region;
// shared/bugs/reliability/multiprefix_plain_spawn.mlir).
// CHECK-LABEL: func.func @main
// CHECK: scf.parallel
// CHECK: %{{.*}} = memref.atomic_rmw addi %{{.*}}, %[[CELL:.*]][%{{.*}}] : (i32, memref<4xi32>) -> i32
// CHECK-NOT: pgpu.multiprefix
// CHECK: memref.load %[[CELL]]
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1 : i32
  %m = memref.alloc() : memref<4xi32>
  memref.store %one, %m[%c0] : memref<4xi32>
  pgpu.spawn %c4 {
    pgpu.superstep {
      %old = pgpu.multiprefix add %one to %m[%c0] : memref<4xi32>
    }
  }
  %total = memref.load %m[%c0] : memref<4xi32>
  pgpu.printf "%d\n"(%total) : i32
  memref.dealloc %m : memref<4xi32>
  %z = arith.constant 0 : i32
  return %z : i32
}
