// Interpreter benchmark: pgpu.spawn of 200000 threads with two barriers
// and a scan. Prints 15.
func.func @main() -> i32 {
  %n = arith.constant 200000 : index
  %a = memref.alloc(%n) : memref<?xi32>
  pgpu.spawn %n {
    %r = pgpu.rank : index
    %ri = arith.index_cast %r : index to i32
    memref.store %ri, %a[%r] : memref<?xi32>
    pgpu.barrier
    %s = pgpu.size : index
    %c1 = arith.constant 1 : index
    %r1 = arith.addi %r, %c1 : index
    %nx = arith.remui %r1, %s : index
    %v = memref.load %a[%nx] : memref<?xi32>
    %t, %tot = pgpu.scan add %v : i32
    pgpu.barrier
    memref.store %t, %a[%r] : memref<?xi32>
  }
  %c5 = arith.constant 5 : index
  %x = memref.load %a[%c5] : memref<?xi32>
  pgpu.printf "%d\n"(%x) : i32
  %z = arith.constant 0 : i32
  return %z : i32
}
