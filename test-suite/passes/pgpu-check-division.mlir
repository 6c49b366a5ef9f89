// RUN: pgpu-opt %s --pgpu-check-division | FileCheck %s

// CHECK-LABEL: func.func @signed(
// CHECK-SAME: %[[A:[^:]*]]: i32, %[[B:[^:]*]]: i32)
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[NZ:.*]] = arith.cmpi ne, %[[B]], %[[ZERO]] : i32
// CHECK-NEXT: cf.assert %[[NZ]], "division by zero in 'arith.divsi'"
// CHECK-NEXT: %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK-NEXT: %[[M1:.*]] = arith.constant -1 : i32
// CHECK-NEXT: %[[ISMIN:.*]] = arith.cmpi eq, %[[A]], %[[MIN]] : i32
// CHECK-NEXT: %[[ISM1:.*]] = arith.cmpi eq, %[[B]], %[[M1]] : i32
// CHECK-NEXT: %[[OVF:.*]] = arith.andi %[[ISMIN]], %[[ISM1]] : i1
// CHECK-NEXT: %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT: %[[OK:.*]] = arith.xori %[[OVF]], %[[TRUE]] : i1
// CHECK-NEXT: cf.assert %[[OK]], "signed division overflow in 'arith.divsi'"
// CHECK-NEXT: arith.divsi %[[A]], %[[B]] : i32
func.func @signed(%a: i32, %b: i32) -> i32 {
  %q = arith.divsi %a, %b : i32
  return %q : i32
}

// Unsigned: only the zero check; index is 64 bits.
// CHECK-LABEL: func.func @unsigned(
// CHECK: cf.assert %{{.*}}, "division by zero in 'arith.remui'"
// CHECK-NOT: overflow
// CHECK: arith.remui
// CHECK: %[[MIN64:.*]] = arith.constant -9223372036854775808 : index
// CHECK: cf.assert %{{.*}}, "signed division overflow in 'arith.floordivsi'"
func.func @unsigned(%a: index, %b: index) -> index {
  %r = arith.remui %a, %b : index
  %f = arith.floordivsi %a, %b : index
  %s = arith.addi %r, %f : index
  return %s : index
}

// Constant divisors other than 0 and -1 need no check; -1 keeps the
// overflow check, 0 the zero check; floats are not checked.
// CHECK-LABEL: func.func @constants(
// CHECK-NOT: cf.assert
// CHECK: arith.divsi %{{.*}}, %c3
// CHECK: cf.assert %{{.*}}, "signed division overflow in 'arith.remsi'"
// CHECK-NEXT: arith.remsi
// CHECK: cf.assert %{{.*}}, "division by zero in 'arith.divui'"
// CHECK-NOT: cf.assert
// CHECK: return
func.func @constants(%a: i64, %x: f32) -> (i64, i64, i64, f32) {
  %c3 = arith.constant 3 : i64
  %cm1 = arith.constant -1 : i64
  %c0 = arith.constant 0 : i64
  %q = arith.divsi %a, %c3 : i64
  %r = arith.remsi %a, %cm1 : i64
  %u = arith.divui %a, %c0 : i64
  %f = arith.divf %x, %x : f32
  return %q, %r, %u, %f : i64, i64, i64, f32
}
