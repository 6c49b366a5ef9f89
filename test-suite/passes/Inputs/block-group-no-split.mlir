// A synchronous function whose block version does not split (it calls one
// that runs a multiprefix): pgpu-lower-groups-block.mlir checks its dispatch.
memref.global "private" @sums : memref<4xi32> = dense<0>
func.func @sum_only(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %sums = memref.get_global @sums : memref<4xi32>
  %c0 = arith.constant 0 : index
  %before = pgpu.multiprefix add %v to %sums[%c0] : memref<4xi32>
  return %before : i32
}
func.func @twice(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %a = func.call @sum_only(%v) : (i32) -> i32
  %b = func.call @sum_only(%a) : (i32) -> i32
  return %b : i32
}
memref.global "private" @out : memref<4xi32> = dense<0>
func.func @main() {
  %p = arith.constant 4 : index
  %out = memref.get_global @out : memref<4xi32>
  pgpu.spawn synchronous %p {
    %rank = pgpu.group.rank : index
    %me = arith.index_cast %rank : index to i32
    %r = func.call @twice(%me) : (i32) -> i32
    memref.store %r, %out[%rank] : memref<4xi32>
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %r = memref.load %out[%i] : memref<4xi32>
    pgpu.printf "%d: %d\n"(%i, %r) : index, i32
  }
  return
}
