// A module for NVPTX (see ../dispatch-sizes.mlir).
module attributes {gpu.container_module} {
  gpu.module @nvidia [#nvvm.target<chip = "sm_90">] {
    llvm.func @untouched() -> i32 {
      %size = rocdl.workgroup.dim.x : i32
      llvm.return %size : i32
    }
  }
}
