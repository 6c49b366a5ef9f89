// RUN: pgpu-opt %s --pgpu-narrow-guarded-kernels | FileCheck %s

// One thread publishes a result: the kernel runs the one iteration where
// the guard can hold (rank 0 as i32, the bound from an i32 count).
// CHECK-LABEL: func.func @publish(
// CHECK-SAME: %[[TOTAL:[^:]*]]: memref<?xi32>, %[[T:[^:]*]]: i32, %[[N32:[^:]*]]: i32
// CHECK: %[[N:.*]] = arith.index_cast %[[N32]] : i32 to index
// CHECK: arith.constant 1 : index
// CHECK-NEXT: %[[C:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.maxsi %{{.*}}, %[[C]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[FIRST]], %{{.*}} : index
// CHECK: %[[LAST:.*]] = arith.minsi %[[N]], %[[NEXT]] : index
// CHECK: scf.parallel (%{{.*}}) = (%[[FIRST]]) to (%[[LAST]])
// The guard stays.
// CHECK: scf.if
// CHECK-NEXT: memref.store %[[T]], %[[TOTAL]]
func.func @publish(%total: memref<?xi32>, %t: i32, %n32: i32) {
  %n = arith.index_cast %n32 : i32 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %r = arith.index_cast %i : index to i32
    %zero = arith.constant 0 : i32
    %first = arith.cmpi eq, %r, %zero : i32
    scf.if %first {
      memref.store %t, %total[%c0] : memref<?xi32>
    }
    scf.reduce
  }
  return
}

// A rank given by the host, compared with the induction variable itself.
// CHECK-LABEL: func.func @chosen_rank(
// CHECK-SAME: %{{[^:]*}}: index, %[[K:[^:]*]]: index
// CHECK: %[[FIRST:.*]] = arith.maxsi %{{.*}}, %[[K]] : index
// CHECK: scf.parallel (%{{.*}}) = (%[[FIRST]])
func.func @chosen_rank(%out: memref<?xf32>, %n: index, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %mine = arith.cmpi eq, %k, %i : index
    scf.if %mine {
      memref.store %v, %out[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// Unchanged: an effect outside the guard, a guard on something else than
// the rank, and a cast of the rank that could wrap (an index bound).
// CHECK-LABEL: func.func @not_narrowed(
// CHECK-NOT: arith.maxsi
// CHECK: return
func.func @not_narrowed(%out: memref<?xi32>, %n: index, %x: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %r = arith.index_cast %i : index to i32
    memref.store %r, %out[%i] : memref<?xi32>
    %first = arith.cmpi eq, %r, %zero : i32
    scf.if %first {
      memref.store %x, %out[%c0] : memref<?xi32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %out[%i] : memref<?xi32>
    %big = arith.cmpi eq, %v, %x : i32
    scf.if %big {
      memref.store %zero, %out[%i] : memref<?xi32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %r = arith.index_cast %i : index to i32
    %first = arith.cmpi eq, %r, %zero : i32
    scf.if %first {
      memref.store %x, %out[%c0] : memref<?xi32>
    }
    scf.reduce
  }
  return
}

// Every thread prints before the guarded store: printf is an effect (not
// on memory), so the kernel keeps its threads (it was narrowed to rank 0's,
// and compiled BSGP code printed one line after a compact; found by
// scripts/difftest, printf_after_compact.bsgp).
// CHECK-LABEL: func.func @prints(
// CHECK-SAME: %{{.*}}: memref<index>, %[[N:.*]]: index, %{{.*}}: index)
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[N]]) step
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: pgpu.printf
func.func @prints(%cell: memref<index>, %n: index, %len: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %r = arith.index_cast %i : index to i32
    pgpu.printf "t %d\n"(%r) : i32
    %first = arith.cmpi eq, %i, %c0 : index
    scf.if %first {
      memref.store %len, %cell[] : memref<index>
    }
    scf.reduce
  }
  return
}
