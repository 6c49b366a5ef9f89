// pgpu-nvptx-data-layout: NVVM gpu.modules get NVPTX's data layout, so
// that their 64-bit loads and stores are translated 8-byte aligned and
// stay whole in the PTX.
// RUN: pgpu-opt %s --split-input-file --pgpu-nvptx-data-layout | FileCheck %s
// The pipelines run it right after attaching the target.
// RUN: pgpu-translate --pgpu-to-ptx --print-pipeline | FileCheck %s --check-prefix=PIPELINE
// RUN: pgpu emit --stage ptx --target cuda --print-pipeline %S/Inputs/wide-elements.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: nvvm-attach-target{chip=sm_90 O=3},pgpu-nvptx-data-layout,gpu.module(convert-gpu-to-nvvm)
// The kernel loads each i64 and f64 element with one 64-bit load and
// stores with one 64-bit store.
// RUN: pgpu-translate --pgpu-to-ptx %S/Inputs/wide-elements.mlir | FileCheck %s --check-prefix=PTX
// PTX: .entry wide_kernel(
// PTX-DAG: ld.global.b64
// PTX-DAG: ld.global.b64
// PTX: st.global.b64
// PTX-NOT: ld.global.b32
// PTX-NOT: st.global.b32
// RUN: pgpu emit --stage ptx --target cuda %S/Inputs/wide-elements.mlir | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: gpu.module @nvvm [#nvvm.target<chip = "sm_90">]
// CHECK-SAME: attributes {llvm.data_layout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"}
module attributes {gpu.container_module} {
  gpu.module @nvvm [#nvvm.target<chip = "sm_90">] {
  }
}

// -----

// Other targets, and a module without one, are left alone; a layout that
// is there stays.
// CHECK-LABEL: gpu.module @rocdl [#rocdl.target<chip = "gfx942">] {
// CHECK-LABEL: gpu.module @untargeted {
// CHECK-LABEL: gpu.module @given [#nvvm.target<chip = "sm_90">]
// CHECK-SAME: attributes {llvm.data_layout = "e-i64:32"}
module attributes {gpu.container_module} {
  gpu.module @rocdl [#rocdl.target<chip = "gfx942">] {
  }
  gpu.module @untargeted {
  }
  gpu.module @given [#nvvm.target<chip = "sm_90">] attributes {llvm.data_layout = "e-i64:32"} {
  }
}
