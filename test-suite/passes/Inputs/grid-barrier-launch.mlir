// A grid kernel as pgpu-offload-kernels leaves it: a gpu.launch whose
// threads past %n skip the code between the grid barriers, not the
// barriers, which call the host module's declaration @pgpu_grid_barrier
// (pgpu-define-grid-barrier.mlir compiles it to PTX).
module attributes {gpu.container_module} {
  func.func private @pgpu_grid_barrier()
  func.func @phases(%a: memref<?xf32>, %n: index, %blocks: index) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %c256 : index
      %j = arith.addi %base, %tx : index
      %active = arith.cmpi ult, %j, %n : index
      scf.if %active {
        %one = arith.constant 1.0 : f32
        memref.store %one, %a[%j] : memref<?xf32>
      }
      func.call @pgpu_grid_barrier() : () -> ()
      scf.if %active {
        %next = arith.addi %j, %c1 : index
        %wrapped = arith.remui %next, %n : index
        %x = memref.load %a[%wrapped] : memref<?xf32>
        memref.store %x, %a[%j] : memref<?xf32>
      }
      func.call @pgpu_grid_barrier() : () -> ()
      gpu.terminator
    }
    return
  }
}
