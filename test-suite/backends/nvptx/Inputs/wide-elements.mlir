// 64-bit elements: c[i] = a[i] + (i64) b[i].
func.func @wide(%a: memref<?xi64>, %b: memref<?xf64>, %c: memref<?xi64>, %n: index) {
  pgpu.spawn %n {
    %i = pgpu.rank : index
    %x = memref.load %a[%i] : memref<?xi64>
    %y = memref.load %b[%i] : memref<?xf64>
    %z = arith.fptosi %y : f64 to i64
    %s = arith.addi %x, %z : i64
    memref.store %s, %c[%i] : memref<?xi64>
  }
  return
}
