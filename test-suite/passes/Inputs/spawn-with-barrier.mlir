// Regions that are not a single superstep are rejected, unchanged.
func.func @two_supersteps(%a: memref<?xf32>, %n: index) {
  pgpu.spawn %n {
    %i = pgpu.rank : index
    %x = memref.load %a[%i] : memref<?xf32>
    // expected-error @+1 {{'pgpu.barrier' cannot be lowered by pgpu-spawn-to-parallel: the enclosing pgpu.spawn must first be split into supersteps and kernels}}
    pgpu.barrier
    memref.store %x, %a[%i] : memref<?xf32>
  }
  return
}
