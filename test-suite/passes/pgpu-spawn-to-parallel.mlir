// RUN: pgpu-opt %s --split-input-file --pgpu-spawn-to-parallel | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(pgpu-spawn-to-parallel))' | FileCheck %s
// RUN: pgpu-opt %S/Inputs/spawn-with-barrier.mlir --split-input-file --verify-diagnostics --pgpu-spawn-to-parallel

// The rank becomes the induction variable of a parallel loop over the
// thread count; the body moves into the loop unchanged.
// CHECK-LABEL: func.func @vector_add
// CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[B:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: scf.parallel (%[[RANK:.*]]) = (%[[ZERO]]) to (%[[N]]) step (%[[ONE]]) {
// CHECK-NEXT: %[[X:.*]] = memref.load %[[A]][%[[RANK]]]
// CHECK-NEXT: memref.store %[[X]], %[[B]][%[[RANK]]]
// CHECK-NEXT: scf.reduce
// CHECK-NOT: pgpu.
func.func @vector_add(%a: memref<?xf32>, %b: memref<?xf32>, %n: index) {
  pgpu.spawn %n {
    %i = pgpu.rank : index
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %b[%i] : memref<?xf32>
  }
  return
}

// -----

// pgpu.size is the thread count; several spawns lower independently.
// CHECK-LABEL: func.func @reverse_twice
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK: arith.subi %[[N]], %[[R]] : index
// CHECK: scf.parallel (%[[R2:.*]]) = (%{{.*}}) to (%[[M]])
// CHECK: arith.subi %[[M]], %[[R2]] : index
func.func @reverse_twice(%a: memref<?xi32>, %n: index, %m: index) {
  pgpu.spawn %n {
    %r = pgpu.rank : index
    %s = pgpu.size : index
    %j = arith.subi %s, %r : index
    %v = arith.index_cast %j : index to i32
    memref.store %v, %a[%r] : memref<?xi32>
  }
  pgpu.spawn %m {
    %r = pgpu.rank : index
    %s = pgpu.size : index
    %j = arith.subi %s, %r : index
    %v = arith.index_cast %j : index to i32
    memref.store %v, %a[%r] : memref<?xi32>
  }
  return
}

// -----

// A body of one superstep without results (what pgpu-form-supersteps makes
// of a barrier-free body) lowers like the plain body.
// CHECK-LABEL: func.func @one_superstep
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[N:.*]]: index)
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[N]])
// CHECK-NEXT: %[[V:.*]] = arith.index_cast %[[R]] : index to i32
// CHECK-NEXT: memref.store %[[V]], %[[A]][%[[R]]] : memref<?xi32>
// CHECK-NEXT: scf.reduce
// CHECK-NOT: pgpu.
func.func @one_superstep(%a: memref<?xi32>, %n: index) {
  pgpu.spawn %n {
    pgpu.superstep {
      %r = pgpu.rank : index
      %v = arith.index_cast %r : index to i32
      memref.store %v, %a[%r] : memref<?xi32>
    }
  }
  return
}
