// pgpu-amdgpu-assert-to-trap makes the kernels' cf.assert ops (the
// run-time checks) call a function that traps when the condition is
// false; modules for other targets keep their asserts.
// RUN: pgpu-opt %s --pgpu-amdgpu-assert-to-trap | FileCheck %s
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-amdgpu-assert-to-trap,gpu.module(convert-gpu-to-rocdl{chipset=gfx942}),gpu-module-to-binary{format=isa})' | FileCheck %s --check-prefix=ISA

// CHECK-LABEL: gpu.module @checked
// CHECK: llvm.func internal @__pgpu_amdgpu_check(%[[HOLDS:.+]]: i1) attributes {always_inline} {
// CHECK-NEXT: llvm.cond_br %[[HOLDS]], ^[[DONE:bb[0-9]+]], ^[[FAILED:bb[0-9]+]]
// CHECK-NEXT: ^[[FAILED]]:
// CHECK-NEXT: llvm.call_intrinsic "llvm.trap"() : () -> ()
// CHECK-NEXT: llvm.unreachable
// CHECK-LABEL: gpu.func @bounds(
// CHECK: %[[IN:.+]] = arith.cmpi ult
// CHECK-NEXT: llvm.call @__pgpu_amdgpu_check(%[[IN]]) : (i1) -> ()
// CHECK-NOT: cf.assert
// RUN: pgpu-opt %S/Inputs/assert-to-trap-nvvm.mlir --pgpu-amdgpu-assert-to-trap | FileCheck %s --check-prefix=NVVM
// NVVM: cf.assert
// NVVM-NOT: __pgpu_amdgpu_check

// ISA-LABEL: bounds:
// ISA-SAME: s_trap 2

module attributes {gpu.container_module} {
  gpu.module @checked [#rocdl.target<chip = "gfx942">] {
    gpu.func @bounds(%data: memref<?xi32>, %index: index, %size: index) kernel {
      %in = arith.cmpi ult, %index, %size : index
      cf.assert %in, "index out of bounds"
      %c7 = arith.constant 7 : i32
      memref.store %c7, %data[%index] : memref<?xi32>
      gpu.return
    }
  }
}
