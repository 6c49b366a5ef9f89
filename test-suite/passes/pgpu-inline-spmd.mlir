// RUN: pgpu-opt %s --split-input-file --pgpu-inline-spmd | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-inline-spmd --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-inline-spmd)' | FileCheck %s
// RUN: pgpu-opt %S/Inputs/inline-spmd-errors.mlir --split-input-file --verify-diagnostics --pgpu-inline-spmd

// A function with a barrier is inlined into the spawn that calls it: the
// arguments become the call's operands and the result the returned value.
// The inline function itself is erased; host functions are not inlined.
// CHECK-LABEL: func.func @host
// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[N:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[V:.*]] = arith.index_cast %[[R]] : index to i32
// CHECK-NEXT: %[[R2:.*]] = pgpu.rank : index
// CHECK-NEXT: memref.store %[[V]], %[[A]][%[[R2]]] : memref<?xi32>
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[W:.*]] = memref.load %[[A]][%[[R2]]] : memref<?xi32>
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[W]], %[[V]] : i32
// CHECK-NEXT: memref.store %[[S]], %[[A]][%[[R]]] : memref<?xi32>
// CHECK-NOT: func.call
// CHECK: call @host
// CHECK-NOT: @exchange
// The inlined ops carry callsite(callee at caller) locations.
// LOC-LABEL: func.func @caller
// LOC: pgpu.barrier loc(callsite("inline.mlir":4:3 at "caller.mlir":9:10))
func.func private @exchange(%a: memref<?xi32>, %v: i32) -> i32 attributes {pgpu.spmd_inline} {
  %r = pgpu.rank : index loc("inline.mlir":2:3)
  memref.store %v, %a[%r] : memref<?xi32> loc("inline.mlir":3:3)
  pgpu.barrier loc("inline.mlir":4:3)
  %w = memref.load %a[%r] : memref<?xi32> loc("inline.mlir":5:3)
  %s = arith.addi %w, %v : i32 loc("inline.mlir":6:3)
  return %s : i32 loc("inline.mlir":7:3)
}
func.func @host(%n: index) -> index {
  return %n : index
}
func.func @caller(%a: memref<?xi32>, %n: index) {
  pgpu.spawn %n {
    %r = pgpu.rank : index
    %v = arith.index_cast %r : index to i32
    %s = func.call @exchange(%a, %v) : (memref<?xi32>, i32) -> i32 loc("caller.mlir":9:10)
    memref.store %s, %a[%r] : memref<?xi32>
  }
  %m = func.call @host(%n) : (index) -> index
  return
}

// -----

// Inline functions that call inline functions are inlined all the way down,
// in par branches too; each call gets its own copy.
// CHECK-LABEL: func.func @nested
// CHECK: pgpu.spawn
// CHECK: pgpu.par
// CHECK: pgpu.reduce add
// CHECK: pgpu.barrier
// CHECK: pgpu.yield
// CHECK: pgpu.reduce add
// CHECK: pgpu.barrier
// CHECK: pgpu.yield
// CHECK-NOT: func.call
// CHECK-NOT: @outer
// CHECK-NOT: @inner
func.func @inner(%v: i32) -> i32 attributes {pgpu.spmd_inline} {
  %s = pgpu.reduce add %v : i32
  return %s : i32
}
func.func @outer(%v: i32) -> i32 attributes {pgpu.spmd_inline} {
  %s = func.call @inner(%v) : (i32) -> i32
  pgpu.barrier
  return %s : i32
}
func.func @nested(%n: index, %v: i32) {
  pgpu.spawn %n {
    %a, %b = pgpu.par -> (i32, i32) {
      %x = func.call @outer(%v) : (i32) -> i32
      pgpu.yield %x : i32
    }, {
      %y = func.call @outer(%v) : (i32) -> i32
      pgpu.yield %y : i32
    }
  }
  return
}
