// Passes as flags (implicitly nested), with options, and as a pipeline.
// RUN: pgpu-opt %s --canonicalize --cse | FileCheck %s
// RUN: pgpu-opt %s -canonicalize -cse | FileCheck %s
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(func.func(canonicalize,cse))' | FileCheck %s
// RUN: pgpu-opt %s --canonicalize="max-iterations=0 region-simplify=disabled" | FileCheck %s --check-prefix=NOITER
// RUN: pgpu-opt %s | FileCheck %s --check-prefix=NONE

// CHECK-LABEL: func.func @fold
// CHECK-NEXT: %[[C:.*]] = arith.constant 5 : i32
// CHECK-NEXT: return %[[C]], %[[C]] : i32, i32
// NOITER-LABEL: func.func @fold
// NOITER: arith.addi
// NONE-COUNT-2: arith.addi
func.func @fold() -> (i32, i32) {
  %a = arith.constant 2 : i32
  %b = arith.constant 3 : i32
  %x = arith.addi %a, %b : i32
  %y = arith.addi %a, %b : i32
  return %x, %y : i32, i32
}
