// RUN: pgpu-opt %s --pgpu-offload-kernels | FileCheck %s
// RUN: pgpu-opt %s --pgpu-offload-kernels --pgpu-lower-to-runtime --gpu-kernel-outlining | FileCheck %s --check-prefix=OUTLINED
// RUN: pgpu-opt %S/Inputs/offload-block-errors.mlir --split-input-file --verify-diagnostics --pgpu-offload-kernels

// A block spawn (made by pgpu-block-groups for a Fork group call that fits
// one thread block) is one kernel of one block of %n threads: the rank is
// the thread id, the size %n, and the first call zeroes the barrier words.
// Its range barriers, and those of the block-group function it calls
// (recursive), call @pgpu_range_barrier; the function is device code, so
// its list accesses get no host syncs. The global array's address leaves
// the kernel as any kernel's does. The CPU device has no block spawns: its
// branch reports the misuse (code versioned on pgpu.block_capacity never
// gets there).
// CHECK-DAG: func.func private @pgpu_range_barrier(index, index, index)
// CHECK-DAG: func.func private @pgpu_block_enter()
// CHECK-DAG: func.func private @pgpu_rt_block_unavailable()
// CHECK-LABEL: func.func private @half(
// CHECK-SAME: %[[T:[^:]*]]: index, %[[FIRST:[^:]*]]: index, %[[COUNT:[^:]*]]: index, %[[SLOT:[^:]*]]: index, %[[A:[^:]*]]: memref<?xi32>) attributes {pgpu.block_group}
// A workgroup global (a block version's shared local) stays: the kernel
// reaches it directly.
// CHECK-NEXT: %[[SHARED:.*]] = memref.get_global @__shared_half_0 : memref<1024xi32, #gpu.address_space<workgroup>>
// CHECK-NOT: pgpu_rt_to_host
// CHECK: func.call @half(%[[T]], %[[FIRST]], %{{.*}}, %{{.*}}, %[[A]])
// CHECK-NEXT: func.call @pgpu_range_barrier(%[[FIRST]], %[[COUNT]], %[[SLOT]]) : (index, index, index) -> ()
// CHECK: memref.store %{{.*}}, %[[SHARED]][%[[T]]] : memref<1024xi32, #gpu.address_space<workgroup>>
// CHECK-NOT: pgpu_rt_to_host
// CHECK: return
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = arith.index_cast
// CHECK: %[[ALLOC:.*]] = memref.alloc(%[[N]])
// CHECK: %[[CAP:.*]] = pgpu.block_capacity : index
// CHECK: scf.if
// CHECK: %[[TABLE:.*]] = memref.get_global @table
// CHECK: %[[CUDA:.*]] = func.call @pgpu_rt_device_is_cuda() : () -> i32
// CHECK: scf.if %{{.*}} {
// CHECK: func.call @pgpu_rt_launch_site
// CHECK: %[[DEVICE_TABLE:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<{{.*}}> to memref<4xi32>
// CHECK: %[[VIEW:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<{{.*}}> to memref<?xi32>
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[POSITIVE:.*]] = arith.cmpi sgt, %[[N]], %{{.*}} : index
// CHECK: scf.if %[[POSITIVE]] {
// CHECK: gpu.launch async
// CHECK-SAME: blocks(%{{[^)]*}}) in (%{{[^ ]*}} = %[[ONE]], %{{[^)]*}})
// CHECK-SAME: threads(%[[TX:[^,]*]], %{{[^)]*}}) in (%{{[^ ]*}} = %[[N]], %{{[^)]*}})
// CHECK-NEXT: func.call @pgpu_block_enter() : () -> ()
// CHECK-NEXT: %[[K:.*]] = arith.remui %[[TX]], %{{.*}} : index
// CHECK-NEXT: %[[X:.*]] = memref.load %[[DEVICE_TABLE]][%[[K]]] : memref<4xi32>
// CHECK-NEXT: memref.store %[[X]], %[[VIEW]][%[[TX]]] : memref<?xi32>
// CHECK-NEXT: %[[TOP:.*]] = arith.muli %[[N]], %{{.*}} : index
// CHECK-NEXT: func.call @pgpu_range_barrier(%{{.*}}, %[[N]], %[[TOP]]) : (index, index, index) -> ()
// CHECK-NEXT: func.call @half(%[[TX]], %{{.*}}, %[[N]], %[[TOP]], %[[VIEW]])
// CHECK-NEXT: gpu.terminator
// CHECK: } else {
// CHECK-NEXT: func.call @pgpu_rt_block_unavailable() : () -> ()
// CHECK-NEXT: } {pgpu.device_dispatch}
// CHECK: call @pgpu_rt_to_host
// CHECK-NEXT: memref.load %[[ALLOC]]
// CHECK-NOT: pgpu.spawn
// CHECK-NOT: pgpu.range_barrier

// After outlining: the kernel's gpu.module holds the kernel, the two
// declarations that pgpu-define-range-barrier defines and a copy of the
// recursive block-group function and of the workgroup global it uses; the
// host asks the runtime for the capacity and launches one block of %n
// threads. The runtime learns of the global array @table (16 bytes), not of
// the workgroup global, which has no host or device copy.
// OUTLINED-LABEL: func.func @main(
// OUTLINED: call @pgpu_rt_register_global(%{{.*}}, %c16_i64)
// OUTLINED-NOT: call @pgpu_rt_register
// OUTLINED: call @pgpu_main()
// OUTLINED-LABEL: func.func @pgpu_main
// OUTLINED: %[[N:.*]] = arith.index_cast
// OUTLINED: call @pgpu_rt_block_capacity() : () -> index
// OUTLINED: gpu.launch_func async [%{{.*}}] @[[KERNEL:.*]]::@{{.*}} blocks in (%[[ONE:.*]], %[[ONE2:.*]], %[[ONE2]]) threads in (%[[N]], %[[ONE2]], %[[ONE2]])
// OUTLINED: gpu.module @[[KERNEL]]
// OUTLINED: gpu.func
// OUTLINED-SAME: kernel
// OUTLINED: func.call @pgpu_block_enter() : () -> ()
// OUTLINED: func.call @pgpu_range_barrier(
// OUTLINED: func.call @half(
// OUTLINED-DAG: func.func private @pgpu_block_enter()
// OUTLINED-DAG: func.func private @pgpu_range_barrier(index, index, index)
// OUTLINED-DAG: func.func private @half(
// OUTLINED-DAG: func.call @half(
// OUTLINED-DAG: memref.global "private" @__shared_half_0 : memref<1024xi32, #gpu.address_space<workgroup>> = uninitialized

memref.global "private" constant @table : memref<4xi32> = dense<[1, 2, 3, 4]>
memref.global "private" @__shared_half_0 : memref<1024xi32, #gpu.address_space<workgroup>> = uninitialized

// Each range [first, first + count) hands its left half to the recursion,
// synchronizes, and copies its first element over itself, keeping a copy
// in the block's shared memory.
func.func private @half(%t: index, %first: index, %count: index, %slot: index, %a: memref<?xi32>) attributes {pgpu.block_group} {
  %shared = memref.get_global @__shared_half_0 : memref<1024xi32, #gpu.address_space<workgroup>>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %more = arith.cmpi ugt, %count, %c1 : index
  scf.if %more {
    %left = arith.divui %count, %c2 : index
    %split = arith.addi %first, %left : index
    %even = arith.muli %split, %c2 : index
    func.call @half(%t, %first, %left, %even, %a) : (index, index, index, index, memref<?xi32>) -> ()
    pgpu.range_barrier %first, %count, %slot
    %x = memref.load %a[%first] : memref<?xi32>
    memref.store %x, %a[%t] : memref<?xi32>
    memref.store %x, %shared[%t] : memref<1024xi32, #gpu.address_space<workgroup>>
  }
  return
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c0_i32 = arith.constant 0 : i32
  %c64_i32 = arith.constant 64 : i32
  %p = pgpu.argi %c0_i32 default %c64_i32 : i32, i32
  %n = arith.index_cast %p : i32 to index
  %a = memref.alloc(%n) : memref<?xi32>
  %max = pgpu.block_capacity : index
  %fits = arith.cmpi ule, %n, %max : index
  scf.if %fits {
    pgpu.spawn block %n {
      %r = pgpu.rank : index
      %size = pgpu.size : index
      %table = memref.get_global @table : memref<4xi32>
      %k = arith.remui %r, %c4 : index
      %x = memref.load %table[%k] : memref<4xi32>
      memref.store %x, %a[%r] : memref<?xi32>
      %slot = arith.muli %size, %c2 : index
      pgpu.range_barrier %c0, %size, %slot
      func.call @half(%r, %c0, %size, %slot, %a) : (index, index, index, index, memref<?xi32>) -> ()
    }
  }
  %first = memref.load %a[%c0] : memref<?xi32>
  pgpu.printf "%d\n"(%first) : i32
  return %c0_i32 : i32
}
