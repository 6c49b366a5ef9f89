// Parsing, printing, standard input and -o.
// RUN: pgpu-opt %s | FileCheck %s
// RUN: pgpu-opt < %s - | FileCheck %s
// RUN: pgpu-opt %s -o %t.mlir && pgpu-opt %t.mlir | FileCheck %s
// RUN: pgpu-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: pgpu-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUGINFO

// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:.*]]: i32, %[[B:.*]]: i32) -> i32
// CHECK: %[[SUM:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK: return %[[SUM]] : i32
// GENERIC: "func.func"()
// GENERIC: "arith.addi"
// DEBUGINFO: arith.addi {{.*}} loc(#[[LOC:loc[0-9]*]])
// DEBUGINFO: #[[LOC]] = loc("{{.*}}round-trip.mlir":[[@LINE+3]]:8)
func.func @add(%a: i32, %b: i32) -> i32 {
  // A comment the printer drops.
  %s = arith.addi %a, %b : i32
  return %s : i32
}
