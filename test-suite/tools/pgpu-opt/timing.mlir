// --mlir-timing reports the time of each pass on standard error.
// RUN: pgpu-opt %s --canonicalize --cse --mlir-timing -o /dev/null 2>&1 | FileCheck %s

// CHECK: Execution time report
// CHECK-DAG: Canonicalizer
// CHECK-DAG: CSE
// CHECK: Total
func.func @f() {
  return
}
