// --verify-diagnostics accepts exactly the expected diagnostics and reports
// every mismatch with file:line.
// RUN: pgpu-opt %s --split-input-file --verify-diagnostics
// RUN: not pgpu-opt %S/Inputs/mismatched-diagnostics.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// CHECK-DAG: mismatched-diagnostics.mlir:5:3: error: unexpected error: 'func.return' op has 1 operands, but enclosing function (@g) returns 0
// CHECK-DAG: mismatched-diagnostics.mlir:4:6: error: expected error "this is not the message" was not produced
// CHECK-DAG: mismatched-diagnostics.mlir:9:6: error: expected warning "never emitted" was not produced

func.func @f(%x: i32) -> i64 {
  // expected-error @+1 {{type of return operand 0 ('i32') doesn't match function result type ('i64') in function @f}}
  return %x : i32
}

// -----

func.func @g(%x: i32) {
  return %x : i32 // expected-error {{has 1 operands}}
}

// -----

// expected-error @below {{custom op 'pgpu.no_such_op' is unknown}}
pgpu.no_such_op
