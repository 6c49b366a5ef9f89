// A multiprefix on `index` values in a `farm`: asynchronous code runs a
// multiprefix as an atomic fetch-and-op, and `memref.atomic_rmw` takes no
// `index` (tools/pgpu/compile.test).
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %cell = memref.alloc() : memref<index>
  %c0 = arith.constant 0 : index
  memref.store %c0, %cell[] : memref<index>
  pgpu.spawn synchronous %c4 {
    %one = arith.constant 1 : index
    pgpu.farm {
      %t = pgpu.multiprefix add %one to %cell[] : memref<index>
    }
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
