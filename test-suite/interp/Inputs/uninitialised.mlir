// Input of check-semantics.mlir: reads memory nobody wrote.
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xi32>
  %x = memref.load %a[%c0] : memref<4xi32>
  return %x : i32
}
