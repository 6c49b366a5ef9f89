func.func @f() {
  %0 = arith.constant 1 : i32
