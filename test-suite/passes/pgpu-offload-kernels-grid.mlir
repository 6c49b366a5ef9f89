// RUN: pgpu-opt %s --split-input-file --pgpu-offload-kernels | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-offload-kernels --pgpu-lower-to-runtime --gpu-kernel-outlining | FileCheck %s --check-prefix=OUTLINED
// RUN: not pgpu-opt %S/Inputs/offload-grid-host-code.mlir --pgpu-offload-kernels 2>&1 | FileCheck %s --check-prefix=BAD

// A grid spawn (pgpu-grid-fuse) is one kernel whose barriers call
// @pgpu_grid_barrier. Every launched thread reaches every barrier: those
// past the count skip the code between them, and values that cross a
// barrier leave the guard as results (poison where skipped). The CPU
// device has no grid barriers: its branch reports the misuse.
// CHECK-DAG: func.func private @pgpu_rt_grid_unavailable()
// CHECK-DAG: func.func private @pgpu_grid_barrier()
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = arith.index_cast
// CHECK: %[[CAP:.*]] = pgpu.grid_capacity : index
// CHECK: scf.if
// CHECK: %[[CUDA:.*]] = func.call @pgpu_rt_device_is_cuda() : () -> i32
// CHECK: scf.if %{{.*}} {
// CHECK: func.call @pgpu_rt_launch_site
// CHECK: func.call @pgpu_rt_to_device
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[N]], %[[BS:.*]] : index
// CHECK: gpu.launch async
// CHECK-SAME: blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]]
// CHECK-SAME: threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[BDX:[^ ]*]] = %[[BS]]
// CHECK: %[[SCALED:.*]] = arith.muli %[[BX]], %[[BDX]] : index
// CHECK: %[[J:.*]] = arith.addi %[[SCALED]], %[[TX]] : index
// CHECK: %[[ACTIVE:.*]] = arith.cmpi slt, %[[J]], %[[N]] : index
// CHECK: %[[X:.*]] = scf.if %[[ACTIVE]] -> (i32) {
// CHECK: %[[R:.*]] = arith.index_cast %[[J]] : index to i32
// CHECK: memref.store %[[R]], %{{.*}}[%[[J]]]
// CHECK: scf.yield %[[R]] : i32
// CHECK: } else {
// CHECK: %[[P:.*]] = ub.poison : i32
// CHECK: scf.yield %[[P]] : i32
// CHECK: }
// CHECK-NEXT: func.call @pgpu_grid_barrier() : () -> ()
// CHECK-NEXT: scf.if %[[ACTIVE]] {
// CHECK: arith.subi %[[N]], %{{.*}} : index
// CHECK: arith.muli %{{.*}}, %[[X]] : i32
// CHECK: }
// CHECK-NEXT: gpu.terminator
// CHECK: } else {
// CHECK-NEXT: func.call @pgpu_rt_grid_unavailable() : () -> ()
// CHECK-NOT: pgpu.spawn grid
// After outlining: one gpu.module holding the kernel and the declaration
// that pgpu-define-grid-barrier defines; the host asks the runtime.
// OUTLINED-LABEL: func.func @pgpu_main
// OUTLINED: call @pgpu_rt_grid_capacity() : () -> index
// OUTLINED: gpu.launch_func
// OUTLINED: gpu.module
// OUTLINED: gpu.func
// OUTLINED: func.call @pgpu_grid_barrier() : () -> ()
// OUTLINED: func.func private @pgpu_grid_barrier()
func.func @main() -> i32 {
  %c1_i32 = arith.constant 1 : i32
  %c64_i32 = arith.constant 64 : i32
  %p = pgpu.argi %c1_i32 default %c64_i32 : i32, i32
  %n = arith.index_cast %p : i32 to index
  %a = memref.alloc(%n) : memref<?xi32>
  %out = memref.alloc(%n) : memref<?xi32>
  %max = pgpu.grid_capacity : index
  %fits = arith.cmpi ule, %n, %max : index
  scf.if %fits {
    pgpu.spawn grid %n {
      %r = pgpu.rank : index
      %x = arith.index_cast %r : index to i32
      memref.store %x, %a[%r] : memref<?xi32>
      pgpu.barrier
      %size = pgpu.size : index
      %c1 = arith.constant 1 : index
      %last = arith.subi %size, %c1 : index
      %mirror = arith.subi %last, %r : index
      %y = memref.load %a[%mirror] : memref<?xi32>
      %z = arith.muli %y, %x : i32
      memref.store %z, %out[%r] : memref<?xi32>
    }
  }
  %c0 = arith.constant 0 : index
  %first = memref.load %out[%c0] : memref<?xi32>
  pgpu.printf "%d\n"(%first) : i32
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// BAD: offload-grid-host-code.mlir:8:5: error: 'pgpu.printf' cannot run in a grid kernel (the body of a `pgpu.spawn grid`)
