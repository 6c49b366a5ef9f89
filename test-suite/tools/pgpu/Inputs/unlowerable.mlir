// Input of compile.test: an atomic multiply, which has no LLVM lowering.
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %m = memref.alloc() : memref<4xi32>
  %v = arith.constant 3 : i32
  %r = memref.atomic_rmw muli %v, %m[%c0] : (i32, memref<4xi32>) -> i32
  return %r : i32
}
