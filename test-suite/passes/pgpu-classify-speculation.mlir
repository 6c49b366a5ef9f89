// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-classify-speculation)' | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-classify-speculation{remarks=true})' -verify-diagnostics > /dev/null
// Loops that cannot be speculated are errors at the op that prevents it.
// RUN: pgpu-opt %S/Inputs/classify-speculation-errors.mlir --split-input-file --pass-pipeline='builtin.module(pgpu-classify-speculation)' -verify-diagnostics

// Read-only memory, an affine subscript used the same way everywhere
// (A[2i + 1], one element per iteration), memory of the iteration: direct.
// An indirect subscript, subscripts that differ (B[i] and B[i + 1]) and a
// scalar cell: speculative, with the memref's address hoisted out of the
// loop.
// CHECK-LABEL: func.func @classes
// CHECK: %[[B:.*]] = memref.get_global @B
// CHECK: %[[Y:.*]] = memref.get_global @Y
// CHECK: pgpu.spec.loop %[[I:.*]] =
// CHECK: memref.load %{{.*}}[%[[I]]] : memref<64xi32>
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<129xf64>
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<129xf64>
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<4xi32>
// CHECK: pgpu.spec.load %[[Y]][%{{.*}}] : memref<64xf64>
// CHECK: pgpu.spec.store %{{.*}}, %[[Y]][%{{.*}}] : memref<64xf64>
// CHECK: pgpu.spec.load %[[B]][%[[I]]] : memref<65xi32>
// CHECK: pgpu.spec.store %{{.*}}, %[[B]][%{{.*}}] : memref<65xi32>
// CHECK: pgpu.spec.load %{{.*}}[] : memref<i32>
// CHECK: pgpu.spec.store %{{.*}}, %{{.*}}[] : memref<i32>
memref.global "private" @R : memref<64xi32> = dense<3>
memref.global "private" @A : memref<129xf64> = dense<1.0>
memref.global "private" @Y : memref<64xf64> = dense<0.0>
memref.global "private" @B : memref<65xi32> = dense<0>

func.func @classes(%n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0 : i32
  %count = memref.alloca() : memref<i32>
  memref.store %zero, %count[] : memref<i32>
  pgpu.spec.loop %i = %c0 to %n step %c1 {
    %r = memref.get_global @R : memref<64xi32>
    // expected-remark @below {{direct access: read-only in the loop}}
    %k = memref.load %r[%i] : memref<64xi32>
    %a = memref.get_global @A : memref<129xf64>
    %twice = arith.muli %i, %c2 : index
    %slot = arith.addi %twice, %c1 : index
    // expected-remark @below {{direct access: subscript a * i + c: one element per iteration, no overlap}}
    %old = memref.load %a[%slot] : memref<129xf64>
    %one = arith.constant 1.0 : f64
    %new = arith.addf %old, %one : f64
    // expected-remark @below {{direct access: subscript a * i + c: one element per iteration, no overlap}}
    memref.store %new, %a[%slot] : memref<129xf64>
    %mine = memref.alloca() : memref<4xi32>
    // expected-remark @below {{direct access: memory of the iteration}}
    memref.store %k, %mine[%c0] : memref<4xi32>
    %y = memref.get_global @Y : memref<64xf64>
    %j = arith.index_cast %k : i32 to index
    // expected-remark @below {{speculative access: an indirect subscript (read from memory in the loop)}}
    %v = memref.load %y[%j] : memref<64xf64>
    %w = arith.addf %v, %new : f64
    // expected-remark @below {{speculative access: an indirect subscript (read from memory in the loop)}}
    memref.store %w, %y[%j] : memref<64xf64>
    %b = memref.get_global @B : memref<65xi32>
    // expected-remark @below {{speculative access: the loop reaches this memory with different subscripts (iterations may overlap)}}
    %here = memref.load %b[%i] : memref<65xi32>
    %next = arith.addi %i, %c1 : index
    // expected-remark @below {{speculative access: the loop reaches this memory with different subscripts (iterations may overlap)}}
    memref.store %here, %b[%next] : memref<65xi32>
    // expected-remark @below {{speculative access: a scalar the loop assigns (one cell for all iterations)}}
    %c = memref.load %count[] : memref<i32>
    %step = arith.constant 1 : i32
    %more = arith.addi %c, %step : i32
    // expected-remark @below {{speculative access: a scalar the loop assigns (one cell for all iterations)}}
    memref.store %more, %count[] : memref<i32>
  }
  %total = memref.load %count[] : memref<i32>
  return %total : i32
}

// -----

// A subscript that does not change with the iteration is speculative even
// when it is the same everywhere.
// CHECK-LABEL: func.func @invariant
// CHECK: pgpu.spec.load
// CHECK: pgpu.spec.store
memref.global "private" @S : memref<8xi32> = dense<0>
func.func @invariant(%n: index, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.spec.loop %i = %c0 to %n step %c1 {
    %s = memref.get_global @S : memref<8xi32>
    // expected-remark @below {{speculative access: a subscript that does not change with the iteration}}
    %v = memref.load %s[%k] : memref<8xi32>
    %w = arith.index_cast %i : index to i32
    %x = arith.addi %v, %w : i32
    // expected-remark @below {{speculative access: a subscript that does not change with the iteration}}
    memref.store %x, %s[%k] : memref<8xi32>
  }
  return
}
