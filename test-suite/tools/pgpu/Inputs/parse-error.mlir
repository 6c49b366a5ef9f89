func.func @main() -> i32 {
  %x = arith.constant 1 : i32
  return %y : i32
}
