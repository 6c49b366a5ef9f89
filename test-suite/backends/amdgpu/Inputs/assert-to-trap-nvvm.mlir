// A module for NVPTX (see ../assert-to-trap.mlir).
module attributes {gpu.container_module} {
  gpu.module @nvidia [#nvvm.target<chip = "sm_90">] {
    gpu.func @bounds(%index: index, %size: index) kernel {
      %in = arith.cmpi ult, %index, %size : index
      cf.assert %in, "index out of bounds"
      gpu.return
    }
  }
}
