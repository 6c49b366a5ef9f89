// Interpreter benchmark: a host loop of 10^6 iterations (about ten ops
// each) with loads and stores. Prints 333332833333500000.
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000000 : index
  %z = arith.constant 0 : i64
  %a = memref.alloc() : memref<16xi64>
  scf.for %i = %c0 to %c1 step %c1 {
    %c16 = arith.constant 16 : index
    scf.for %j = %c0 to %c16 step %c1 {
      memref.store %z, %a[%j] : memref<16xi64>
    }
  }
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (i64) {
    %ii = arith.index_cast %i : index to i64
    %c15 = arith.constant 15 : index
    %k = arith.andi %i, %c15 : index
    %old = memref.load %a[%k] : memref<16xi64>
    %new = arith.addi %old, %ii : i64
    memref.store %new, %a[%k] : memref<16xi64>
    %sq = arith.muli %ii, %ii : i64
    %n2 = arith.addi %acc, %sq : i64
    scf.yield %n2 : i64
  }
  pgpu.printf "%ld\n"(%s) : i64
  %r = arith.constant 0 : i32
  return %r : i32
}
