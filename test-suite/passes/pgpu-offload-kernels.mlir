// RUN: pgpu-opt %s --pgpu-offload-kernels | FileCheck %s
// RUN: pgpu-opt %s --pgpu-offload-kernels=block-size=128 | FileCheck %s --check-prefix=BLOCK
// RUN: not pgpu-opt %s --pgpu-offload-kernels=block-size=2048 2>&1 | FileCheck %s --check-prefix=BAD
// Running offloaded programs: test-suite/run/native/cuda-target.test (CPU
// device) and test-suite/gpu (GPU machines only).

func.func private @helper(i32) -> i32

func.func @program(%n: index, %in: memref<?xi32, strided<[1], offset: ?>>, %out: memref<?xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %seven = arith.constant 7 : i32
  // The host fills the input: one sync before the loop, for writing.
  scf.for %i = %c0 to %n step %c1 {
    memref.store %seven, %in[%i] : memref<?xi32, strided<[1], offset: ?>>
  }
  %cell = memref.alloca() : memref<index>
  // A kernel: reads %in, writes %out and the cell.
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xi32, strided<[1], offset: ?>>
    %y = arith.addi %x, %seven : i32
    memref.store %y, %out[%i] : memref<?xi32>
    memref.store %i, %cell[] : memref<index>
    scf.reduce
  }
  // A collective.
  %total = pgpu.list.scan add %out, %out[%n] : memref<?xi32>, memref<?xi32> -> i32
  // A kernel that calls a function stays on the host.
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %out[%i] : memref<?xi32>
    %y = func.call @helper(%x) : (i32) -> i32
    memref.store %y, %out[%i] : memref<?xi32>
    scf.reduce
  }
  // The host reads a result.
  %first = memref.load %out[%c0] : memref<?xi32>
  %sum = arith.addi %first, %total : i32
  return %sum : i32
}

// The block size is the runtime's choice, at most the option's.
// BLOCK: %[[MOST:.*]] = arith.constant 128 : index
// BLOCK-NEXT: %[[BS:.*]] = func.call @pgpu_rt_kernel_block_size(%{{.*}}, %[[MOST]]) : (index, index) -> index
// BLOCK: gpu.launch async [%{{.*}}] blocks({{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BS]],
// BAD: block-size 2048 is not between 1 and 1024

// CHECK-LABEL: func.func @program(
// CHECK-SAME: %[[N:[^:]*]]: index, %[[IN:[^:]*]]: memref<?xi32, strided<[1], offset: ?>>, %[[OUT:[^:]*]]: memref<?xi32>)
// The host loop writing %in syncs once, before the loop.
// CHECK: %[[INPTR:.*]] = memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK: %[[INP:.*]] = llvm.inttoptr
// CHECK: call @pgpu_rt_to_host(%[[INP]], %[[W1:.*]]) : (!llvm.ptr, i32) -> ()
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// The stack cell a kernel writes becomes a runtime allocation.
// CHECK-NEXT: %[[CELL:.*]] = memref.alloc() : memref<index>
// The kernel: device choice, launch site, device views, launch.
// CHECK-NEXT: %[[CUDA:.*]] = call @pgpu_rt_device_is_cuda() : () -> i32
// CHECK: %[[ON:.*]] = arith.cmpi ne, %[[CUDA]]
// CHECK-NEXT: scf.if %[[ON]] {
// CHECK: func.call @pgpu_rt_launch_site(
// CHECK: %[[D0:.*]] = builtin.unrealized_conversion_cast %[[IN]] : memref<?xi32, strided<[1], offset: ?>> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK-NEXT: %[[A0:.*]] = llvm.extractvalue %[[D0]][1]
// CHECK-NEXT: %[[READ:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[DEV0:.*]] = func.call @pgpu_rt_to_device(%[[A0]], %[[READ]])
// CHECK-NEXT: %[[S0:.*]] = llvm.insertvalue %[[DEV0]], %[[D0]][0]
// CHECK-NEXT: %[[S1:.*]] = llvm.insertvalue %[[DEV0]], %[[S0]][1]
// CHECK-NEXT: %[[VIN:.*]] = builtin.unrealized_conversion_cast %[[S1]] : {{.*}} to memref<?xi32, strided<[1], offset: ?>>
// %out and the cell are written: their host copies become stale.
// CHECK: %[[WRITE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: func.call @pgpu_rt_to_device(%{{.*}}, %[[WRITE]])
// CHECK: %[[VOUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK: %[[VCELL:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<index>
// CHECK: %[[TRIPS:.*]] = arith.ceildivsi
// The runtime picks the block size: 256, or smaller blocks that spread a
// small kernel over every multiprocessor.
// CHECK-NEXT: %[[MOST:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[BS:.*]] = func.call @pgpu_rt_kernel_block_size(%[[TRIPS]], %[[MOST]]) : (index, index) -> index
// CHECK-NEXT: %[[BLOCKS:.*]] = arith.ceildivsi %[[TRIPS]], %[[BS]] : index
// Asynchronous: the runtime's one stream orders it, host accesses wait.
// CHECK: %[[STREAM:.*]] = gpu.wait async
// CHECK-NEXT: %{{.*}} = gpu.launch async [%[[STREAM]]] blocks(%[[BX:[^,]*]], %{{[^,]*}}, %{{[^)]*}}) in (%{{[^=]*}}= %[[BLOCKS]], {{.*}}) threads(%[[TX:[^,]*]], %{{[^,]*}}, %{{[^)]*}}) in (%[[BDX:[^ ]*]] = %[[BS]],
// CHECK-NEXT: %[[BASE:.*]] = arith.muli %[[BX]], %[[BDX]] : index
// CHECK-NEXT: %[[J:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK-NEXT: %[[INSIDE:.*]] = arith.cmpi slt, %[[J]], %[[TRIPS]] : index
// A unit range: the iteration is the thread's linear id.
// CHECK-NEXT: scf.if %[[INSIDE]] {
// CHECK-NEXT: memref.load %[[VIN]][%[[J]]]
// CHECK: memref.store %{{.*}}, %[[VOUT]][%[[J]]]
// CHECK-NEXT: memref.store %[[J]], %[[VCELL]][]
// CHECK: gpu.terminator
// The CPU version stays, on the host lists.
// CHECK: } else {
// CHECK-NEXT: scf.parallel
// CHECK-NEXT: memref.load %[[IN]]
// CHECK: } {pgpu.device_dispatch}
// The collective: dense device views (offset folded into the pointer).
// CHECK: %[[TOTAL:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK: %[[OFF:.*]] = llvm.extractvalue %{{.*}}[2]
// CHECK: %[[DEV:.*]] = func.call @pgpu_rt_to_device(
// CHECK-NEXT: %[[FIRST:.*]] = llvm.getelementptr %[[DEV]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: llvm.insertvalue %[[FIRST]], %{{.*}}[1]
// CHECK: %[[EXCLUSIVE:.*]] = arith.constant false
// CHECK-NEXT: %[[GPU:.*]] = func.call @pgpu_coll_scan_add_i32(%{{.*}}, %{{.*}}, %[[N]], %[[EXCLUSIVE]]) : (memref<?xi32>, memref<?xi32>, index, i1) -> i32
// CHECK-NEXT: scf.yield %[[GPU]] : i32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[CPU:.*]] = pgpu.list.scan add %[[OUT]], %[[OUT]][%[[N]]]
// CHECK-NEXT: scf.yield %[[CPU]] : i32
// CHECK-NEXT: } {pgpu.device_dispatch}
// A kernel calling a function stays on the host; a user function might
// launch kernels, so its accesses sync where they are.
// CHECK: scf.parallel
// CHECK: func.call @pgpu_rt_to_host(%{{.*}}, %{{.*}})
// CHECK-NEXT: memref.load %[[OUT]]
// CHECK-NEXT: func.call @helper
// CHECK: func.call @pgpu_rt_to_host(
// CHECK-NEXT: memref.store
// The host's read of the result.
// CHECK: call @pgpu_rt_to_host(%{{.*}}, %{{.*}}) : (!llvm.ptr, i32) -> ()
// CHECK-NEXT: %[[FIRSTVAL:.*]] = memref.load %[[OUT]][%{{.*}}]
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[FIRSTVAL]], %[[TOTAL]]
// CHECK-NEXT: memref.dealloc %[[CELL]] : memref<index>
// CHECK-NEXT: return %[[SUM]] : i32

// A global list variable read in a kernel: its descriptor is loaded before
// the kernel, which then runs on the GPU; a kernel that replaces the
// variable's list keeps its global accesses and stays on the host.
memref.global @list : memref<memref<?xi32>> = uninitialized

// CHECK-LABEL: func.func @strided(
// CHECK: gpu.launch async
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: %[[SCALED:.*]] = arith.muli %{{.*}}, %[[STEP:.*]] : index
// CHECK-NEXT: %[[K:.*]] = arith.addi %[[LB:.*]], %[[SCALED]] : index
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[K]]]
func.func @strided(%out: memref<?xf32>, %lb: index, %ub: index, %step: index, %v: f32) {
  scf.parallel (%i) = (%lb) to (%ub) step (%step) {
    memref.store %v, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// CHECK-LABEL: func.func @globals(
// CHECK: %[[G:.*]] = memref.get_global @list
// CHECK-NEXT: %[[L:.*]] = memref.load %[[G]][] : memref<memref<?xi32>>
// CHECK-NEXT: call @pgpu_rt_device_is_cuda
// CHECK: builtin.unrealized_conversion_cast %[[L]] : memref<?xi32> to !llvm.struct
// CHECK: gpu.launch async
// CHECK-NOT: memref.get_global
// CHECK: } else {
// CHECK-NEXT: scf.parallel
// CHECK-NEXT: memref.store %{{.*}}, %[[L]]
// CHECK: {pgpu.device_dispatch}
// CHECK-NEXT: scf.parallel
// CHECK-NEXT: memref.get_global @list
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[] : memref<memref<?xi32>>
func.func @globals(%n: index, %other: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %seven = arith.constant 7 : i32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %g = memref.get_global @list : memref<memref<?xi32>>
    %l = memref.load %g[] : memref<memref<?xi32>>
    memref.store %seven, %l[%i] : memref<?xi32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %g = memref.get_global @list : memref<memref<?xi32>>
    memref.store %other, %g[] : memref<memref<?xi32>>
    scf.reduce
  }
  return
}

// A global array (a Fork program's shared array) used in a kernel: its
// address moves before the kernel and reaches the GPU through the runtime's
// mirror (the runtime registers global arrays at start-up); the host's
// later read of it syncs like a list's.
memref.global @flags : memref<100xi32> = dense<0>

// CHECK-LABEL: func.func @global_array(
// CHECK: %[[FLAGS:.*]] = memref.get_global @flags : memref<100xi32>
// CHECK-NEXT: call @pgpu_rt_device_is_cuda
// CHECK: builtin.unrealized_conversion_cast %[[FLAGS]] : memref<100xi32> to !llvm.struct
// CHECK: call @pgpu_rt_to_device(%{{.*}}, %{{.*}}) : (!llvm.ptr, i32) -> !llvm.ptr
// CHECK: gpu.launch async
// CHECK-NOT: memref.get_global
// CHECK: {pgpu.device_dispatch}
// CHECK: %[[AGAIN:.*]] = memref.get_global @flags
// CHECK: call @pgpu_rt_to_host(
// CHECK-NEXT: memref.load %[[AGAIN]]
func.func @global_array(%n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %flags = memref.get_global @flags : memref<100xi32>
    memref.store %one, %flags[%i] : memref<100xi32>
    scf.reduce
  }
  %flags = memref.get_global @flags : memref<100xi32>
  %first = memref.load %flags[%c0] : memref<100xi32>
  return %first : i32
}

// A sort that also writes its keys in sorted order: integer keys call the
// GPU sort with that output; float keys (canonicalized inside the GPU
// sort) call the plain sort and gather the keys in a kernel after it.
// CHECK-LABEL: func.func @sorted_keys(
// CHECK: call @pgpu_coll_sort_idx_sorted_i32(
// CHECK: } else {
// CHECK-NEXT: pgpu.list.sort_idx %{{.*}}, %{{.*}}[%{{.*}}] sorted %{{.*}} : memref<?xi32>, memref<?xindex>, memref<?xi32>
// CHECK: call @pgpu_coll_sort_idx_f32(
// CHECK: } else {
// CHECK-NEXT: pgpu.list.sort_idx %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xf32>, memref<?xindex>
// CHECK: gpu.launch async
// CHECK: memref.load
// CHECK: memref.load
// CHECK: memref.store
func.func @sorted_keys(%k: memref<?xi32>, %f: memref<?xf32>, %idx: memref<?xindex>, %ks: memref<?xi32>, %fs: memref<?xf32>, %n: index) {
  pgpu.list.sort_idx %k, %idx[%n] sorted %ks : memref<?xi32>, memref<?xindex>, memref<?xi32>
  pgpu.list.sort_idx %f, %idx[%n] sorted %fs : memref<?xf32>, memref<?xindex>, memref<?xf32>
  return
}

// A host loop storing into a global array whose address it takes in every
// iteration (the front ends' form): the sync moves before the loop, with
// a copy of the address, so the loop syncs once, not once per element
// (Fork's quicksort filling 10^7 elements spent seconds here).
// CHECK-LABEL: func.func @global_fill(
// CHECK: %[[ADDRESS:.*]] = memref.get_global @flags : memref<100xi32>
// CHECK: call @pgpu_rt_to_host(%{{.*}}, %{{.*}}) : (!llvm.ptr, i32) -> ()
// CHECK-NEXT: scf.for
// CHECK-NOT: pgpu_rt_to_host
// CHECK: memref.store
// CHECK: return
func.func @global_fill(%n: index, %value: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %flags = memref.get_global @flags : memref<100xi32>
    memref.store %value, %flags[%i] : memref<100xi32>
  }
  return
}

// A scan whose total nobody uses (a multiprefix's, whose new value the last
// rank stores): the GPU collective that does not read the total back, so
// the host does not wait for the scan.
// CHECK-LABEL: func.func @scan_values(
// CHECK: %[[UNUSED:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK: func.call @pgpu_coll_scan_values_add_i32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xi32>, memref<?xi32>, index, i1) -> ()
// CHECK-NEXT: %[[NONE:.*]] = ub.poison : i32
// CHECK-NEXT: scf.yield %[[NONE]] : i32
// CHECK-NEXT: } else {
// CHECK-NEXT: pgpu.list.scan add
// CHECK: } {pgpu.device_dispatch}
func.func @scan_values(%values: memref<?xi32>, %scanned: memref<?xi32>, %n: index) {
  %total = pgpu.list.scan add %values, %scanned[%n] : memref<?xi32>, memref<?xi32> -> i32
  return
}
