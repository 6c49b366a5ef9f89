func.func @main() -> i32 {
  %k = arith.constant 0 : i32
  %d = arith.constant 42 : i32
  %v = pgpu.argi %k default %d : i32, i32
  pgpu.printf "exiting with %d\n"(%v) : i32
  return %v : i32
}
