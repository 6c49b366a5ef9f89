// pgpu-amdgpu-dispatch-sizes reads block and grid sizes from the HSA
// dispatch packet: the 16-bit workgroup_size at byte 4 + 2d, the 32-bit
// grid_size (work items) at byte 12 + 4d divided by the block size and
// rounded up; no call of ROCm's device library is left.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(rocdl-attach-target{chip=gfx942 module=sizes},gpu.module(convert-gpu-to-rocdl{chipset=gfx942}),pgpu-amdgpu-dispatch-sizes)' | FileCheck %s --implicit-check-not=rocdl.workgroup.dim --implicit-check-not=rocdl.grid.dim
// Running it again changes nothing.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(rocdl-attach-target{chip=gfx942 module=sizes},gpu.module(convert-gpu-to-rocdl{chipset=gfx942}),pgpu-amdgpu-dispatch-sizes)' -o %t.once
// RUN: pgpu-opt %t.once --pgpu-amdgpu-dispatch-sizes -o %t.twice
// RUN: diff %t.once %t.twice
// The code object reads the packet (s[0:1] is the dispatch pointer).
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(rocdl-attach-target{chip=gfx942 module=sizes},gpu.module(convert-gpu-to-rocdl{chipset=gfx942}),pgpu-amdgpu-dispatch-sizes,gpu-module-to-binary{format=isa})' | FileCheck %s --check-prefix=ISA

// CHECK-LABEL: gpu.module @sizes
// Only the helpers used are inserted.
// CHECK-NOT: @__pgpu_amdgpu_workgroup_size_z
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_workgroup_size_x() -> i32 attributes {always_inline} {
// CHECK-NEXT: %[[PACKET:.+]] = llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"() : () -> !llvm.ptr<4>
// CHECK-NEXT: %[[FIELD:.+]] = llvm.getelementptr inbounds %[[PACKET]][4] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK-NEXT: %[[SIZE:.+]] = llvm.load %[[FIELD]] invariant {alignment = 2 : i64} : !llvm.ptr<4> -> i16
// CHECK-NEXT: llvm.zext %[[SIZE]] : i16 to i32
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_workgroup_size_y() -> i32 attributes {always_inline} {
// CHECK: llvm.getelementptr inbounds %{{.+}}[6] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_workgroup_count_y() -> i32 attributes {always_inline} {
// CHECK: llvm.getelementptr inbounds %{{.+}}[16] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: %[[ITEMS:.+]] = llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<4> -> i32
// CHECK: %[[BLOCK:.+]] = llvm.call @__pgpu_amdgpu_workgroup_size_y() : () -> i32
// CHECK: %[[ROUNDED:.+]] = llvm.add %[[ITEMS]], %{{.+}} : i32
// CHECK: llvm.udiv %[[ROUNDED]], %[[BLOCK]] : i32
// CHECK-LABEL: llvm.func @sizes(
// CHECK: llvm.call @__pgpu_amdgpu_workgroup_size_x() : () -> i32
// CHECK: llvm.call @__pgpu_amdgpu_workgroup_count_y() : () -> i32

// Modules for other targets are left alone.
// RUN: pgpu-opt %S/Inputs/dispatch-sizes-nvvm.mlir --pgpu-amdgpu-dispatch-sizes | FileCheck %s --check-prefix=NVVM
// NVVM: rocdl.workgroup.dim.x
// NVVM-NOT: __pgpu_amdgpu

// ISA-LABEL: sizes:
// ISA: s_load_dword {{s[0-9]+}}, s[0:1], 0x4
// ISA: s_load_dword {{s[0-9]+}}, s[0:1], 0x10
// ISA-NOT: __ockl

module attributes {gpu.container_module} {
  gpu.module @sizes {
    gpu.func @sizes(%out: memref<?xindex>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %block = gpu.block_dim x
      %grid = gpu.grid_dim y
      memref.store %block, %out[%c0] : memref<?xindex>
      memref.store %grid, %out[%c1] : memref<?xindex>
      gpu.return
    }
  }
}
