// RUN: true
// CHECK-LABEL: @f
// CHECK-NEXT return
// CHECK %x
// CHECK: fine
