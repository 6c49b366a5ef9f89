// Unregistered operations are errors unless allowed.
// RUN: pgpu-opt %s --allow-unregistered-dialect | FileCheck %s
// RUN: not pgpu-opt %s 2>&1 | FileCheck %s --check-prefix=ERROR

// CHECK: "mystery.op"() {answer = 42 : i64} : () -> ()
// ERROR: unregistered-dialect.mlir:[[@LINE+2]]:15: error: operation being parsed with an unregistered dialect
func.func @f() {
  "mystery.op"() {answer = 42} : () -> ()
  return
}
