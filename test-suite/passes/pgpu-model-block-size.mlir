// RUN: pgpu-opt %s --split-input-file --pgpu-model-block-size 2>/dev/null | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-model-block-size -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The program's arguments (argi 0 is 36864) make the last kernel's choice:
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-model-block-size{args=36864})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ARGS
// pgpu-offload-kernels launches a chosen block size as a constant instead
// of asking the runtime:
// RUN: pgpu-opt %s --split-input-file --pgpu-model-block-size --pgpu-offload-kernels 2>/dev/null | FileCheck %s --check-prefix=OFFLOAD
// RUN: not pgpu-opt %s --pass-pipeline='builtin.module(pgpu-model-block-size{l1=x})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error

// 36864 threads, each 64 iterations of a global load: the runtime spreads
// 36864 / 132 = 280 threads per multiprocessor and caps blocks at 256, so
// 144 blocks leave 12 multiprocessors with two; blocks of one warp give
// every multiprocessor 8 or 9 warps, which the model predicts 16% faster.
// CHECK-LABEL: func.func @kernels
// CHECK: scf.parallel
// CHECK: } {pgpu.block_size = 32 : i64}
// REMARK: remark: kernels kernel 0: block size 32 (36864 threads; predicted steps by block size 32: {{[0-9]+}}, 64: {{[0-9]+}}, 128: {{[0-9]+}}, 256: {{[0-9]+}}, 512: {{[0-9]+}}, 1024: {{[0-9]+}}; the runtime's heuristic would take 256: {{[0-9.]+}}% more steps)
// A kernel that fills the device at any block size keeps the heuristic's
// (no candidate saves 5% of its steps).
// CHECK: } {pgpu.block_size = 256 : i64}
// REMARK: remark: kernels kernel 1: block size 256 (1048576 threads; {{.*}}; the runtime's heuristic's choice, no other saves 5%)
// A thread count the module does not know stays the runtime's choice.
// REMARK: remark: kernels kernel 2: the runtime chooses the block size: thread count unknown ({{.*}}argument 1 of @kernels, which nothing in the module calls)
// OFFLOAD: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c32,
// OFFLOAD: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256,
// OFFLOAD: %[[B:.*]] = func.call @pgpu_rt_kernel_block_size
// OFFLOAD: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %[[B]],
func.func @kernels(%a: memref<?xf32>, %unknown: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = arith.constant 36864 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %s = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %c0) -> (index) {
      %x = memref.load %a[%k] : memref<?xf32>
      %y = arith.mulf %x, %x : f32
      %z = arith.addi %acc, %k : index
      scf.yield %z : index
    }
    %f = arith.index_cast %s : index to i32
    %g = arith.sitofp %f : i32 to f32
    memref.store %g, %a[%i] : memref<?xf32>
    scf.reduce
  }
  %big = arith.constant 1048576 : index
  scf.parallel (%i) = (%c0) to (%big) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%unknown) step (%c1) {
    %x = memref.load %a[%c0] : memref<?xf32>
    memref.store %x, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Threads read from the program's arguments: only with 'args' does the
// model choose (for those arguments: here a loop of loads only, where
// no block size saves 5% over the heuristic).
// CHECK-LABEL: func.func @main
// CHECK-NOT: pgpu.block_size
// REMARK: remark: main kernel 0: the runtime chooses the block size: its 1000 threads depend on the program's arguments (give them with 'args')
// ARGS: remark: main kernel 0: block size 256 (36864 threads; {{.*}}; the runtime's heuristic's choice, no other saves 5%) for the given arguments
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0 : i32
  %d = arith.constant 1000 : i32
  %n32 = pgpu.argi %z default %d : i32, i32
  %n = arith.index_cast %n32 : i32 to index
  %a = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %x = memref.load %a[%k] : memref<?xf32>
      memref.store %x, %a[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return %z : i32
}
