// RUN: pgpu-opt %s --pgpu-report-run-time-errors | FileCheck %s
// Upstream's checks (`generate-runtime-verification`) then ours.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(generate-runtime-verification{verbose-level=0},pgpu-report-run-time-errors)' | FileCheck %s --check-prefix=UPSTREAM

// CHECK-DAG: func.func private @pgpu_rt_kernel_error(!llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr)
// CHECK-DAG: func.func private @pgpu_rt_host_error(!llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr)
// CHECK-DAG: llvm.mlir.global internal constant @[[$KERNEL:pgpu_string_[0-9]+]]("scale_kernel3\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$FILE:pgpu_string_[0-9]+]]("prog.bsgp\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$WHY:pgpu_string_[0-9]+]]("out-of-bounds access\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$HOST:pgpu_string_[0-9]+]]("main\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$OTHER:pgpu_string_[0-9]+]]("a plain message\00")

// CHECK-LABEL: func.func private @scale_kernel3(
// CHECK-SAME: %[[OK:[^:]*]]: i1
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT: %[[FAILED:.*]] = arith.xori %[[OK]], %[[TRUE]] : i1
// CHECK-NEXT: scf.if %[[FAILED]] {
// CHECK-NEXT: %[[K:.*]] = llvm.mlir.addressof @[[$KERNEL]] : !llvm.ptr
// CHECK-NEXT: %[[F:.*]] = llvm.mlir.addressof @[[$FILE]] : !llvm.ptr
// CHECK-NEXT: %[[LINE:.*]] = arith.constant 12 : i32
// CHECK-NEXT: %[[COL:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[W:.*]] = llvm.mlir.addressof @[[$WHY]] : !llvm.ptr
// CHECK-NEXT: func.call @pgpu_rt_kernel_error(%[[K]], %[[F]], %[[LINE]], %[[COL]], %[[W]])
// CHECK-NOT: cf.assert
func.func private @scale_kernel3(%ok: i1) {
  cf.assert %ok, "ERROR: Runtime op verification failed\0A^ out-of-bounds access\0ALocation: loc(\22prog.bsgp\22:12:7)" loc("prog.bsgp":12:7)
  return
}

// Host code (the program's main, renamed pgpu_main) calls the host report;
// a message without upstream's `^ ` line is reported whole.
// CHECK-LABEL: func.func @pgpu_main(
// CHECK: llvm.mlir.addressof @[[$HOST]]
// CHECK: arith.constant 3 : i32
// CHECK: arith.constant 5 : i32
// CHECK: llvm.mlir.addressof @[[$OTHER]]
// CHECK: func.call @pgpu_rt_host_error(
func.func @pgpu_main(%ok: i1) {
  cf.assert %ok, "a plain message" loc("prog.bsgp":3:5)
  return
}

// UPSTREAM-LABEL: func.func @load(
// UPSTREAM: %[[IN:.*]] = arith.andi
// UPSTREAM: %[[OUT:.*]] = arith.xori %[[IN]]
// UPSTREAM: scf.if %[[OUT]] {
// UPSTREAM: func.call @pgpu_rt_host_error(
// UPSTREAM: memref.load
func.func @load(%m: memref<?xi32>, %i: index) -> i32 {
  %v = memref.load %m[%i] : memref<?xi32> loc("prog.bsgp":20:9)
  return %v : i32
}
