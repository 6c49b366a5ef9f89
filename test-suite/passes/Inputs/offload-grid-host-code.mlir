// A grid spawn whose body needs the host (pgpu-grid-fuse never makes one).
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  pgpu.spawn grid %c4 {
    %r = pgpu.rank : index
    pgpu.barrier
    %x = arith.index_cast %r : index to i32
    pgpu.printf "%d\n"(%x) : i32
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}
