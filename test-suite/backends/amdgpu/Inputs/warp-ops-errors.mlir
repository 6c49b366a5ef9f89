// NVVM ops that pgpu-amdgpu-warp-ops has no lowering for are errors at
// their location (see ../warp-ops.mlir).
gpu.module @unknown [#rocdl.target<chip = "gfx942">] {
  llvm.func @f(%mask: i32, %v: i32) -> i32 {
    // expected-error @+1 {{'nvvm.read.ptx.sreg.tid.x' has no lowering to AMDGPU}}
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    // expected-error @+1 {{'nvvm.match.sync' all has no lowering to AMDGPU}}
    %m = nvvm.match.sync all %mask, %v : i32 -> !llvm.struct<(i32, i1)>
    llvm.return %tid : i32
  }
}

// -----

// A module for another target keeps its NVVM ops and scopes.
gpu.module @nvidia [#nvvm.target<chip = "sm_90">] {
  llvm.func @g(%mask: i32) {
    nvvm.bar.warp.sync %mask : i32
    llvm.fence syncscope("block") acq_rel
    llvm.return
  }
}
