// RUN: pgpu-opt %s --split-input-file --pgpu-link-gpu-collectives | FileCheck %s
// The linked module compiles to PTX with upstream's NVVM pipeline.
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-link-gpu-collectives,convert-scf-to-cf,nvvm-attach-target{chip=sm_90 O=3},gpu.module(convert-gpu-to-nvvm),gpu-module-to-binary{format=isa})' | FileCheck %s --check-prefix=PTX

// A declared collective gets its definition (host launch code and
// kernels); the module becomes a GPU container.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: func.func private @pgpu_coll_reduce_add_i32(
// CHECK-DAG: func.func @pgpu_coll_reduce_add_i32(%{{.*}}: memref<?xi32>, %{{.*}}: index) -> i32
// CHECK-DAG: func.func @pgpu_coll_reduce_add_i32_scratch(
// CHECK-DAG: func.func @pgpu_coll_reduce_add_i32_scratch_bytes(
// CHECK-DAG: gpu.module @pgpu_coll_reduce_add_i32_kernels
// CHECK-DAG: gpu.launch_func {{.*}}@pgpu_coll_reduce_add_i32_kernels::
// CHECK-DAG: func.func @pgpu_coll_sort_idx_f32(%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xindex>, %{{.*}}: index)
// CHECK-DAG: gpu.module @pgpu_coll_sort_idx_f32_kernels
// PTX-DAG: gpu.binary @pgpu_coll_reduce_add_i32_kernels
// PTX-DAG: gpu.binary @pgpu_coll_sort_idx_f32_kernels
func.func private @pgpu_coll_reduce_add_i32(memref<?xi32>, index) -> i32
func.func private @pgpu_coll_sort_idx_f32(memref<?xf32>, memref<?xindex>, index)

func.func @use(%values: memref<?xi32>, %keys: memref<?xf32>, %order: memref<?xindex>, %n: index) -> i32 {
  %total = func.call @pgpu_coll_reduce_add_i32(%values, %n) : (memref<?xi32>, index) -> i32
  func.call @pgpu_coll_sort_idx_f32(%keys, %order, %n) : (memref<?xf32>, memref<?xindex>, index) -> ()
  return %total : i32
}

// -----

// Without declared collectives the module is left alone.
// CHECK-LABEL: module {
// CHECK-NEXT: func.func @nothing()
func.func @nothing() {
  return
}
