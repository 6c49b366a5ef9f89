// gpu.launch with workgroup (per block) and private (per thread) memory
// attributions and gpu.barrier; the outlined gpu.func behaves the same.
// RUN: pgpu run --interpret %s | FileCheck %s
// RUN: pgpu-opt %s --pgpu-check-semantics --gpu-kernel-outlining | FileCheck %s --check-prefix=OUTLINED
// A missing barrier is a race between the threads of a block.
// RUN: %expect-exit 1 pgpu run --interpret --entry racy %s 2>&1 | FileCheck %s --check-prefix=RACE

// CHECK: block sums 6 46
// OUTLINED: gpu.launch_func
// OUTLINED: gpu.func @{{.*}} workgroup(%{{.*}} : memref<4xi32, #gpu.address_space<workgroup>>) private(%{{.*}} : memref<1xi32, #gpu.address_space<private>>)
func.func @main() -> i32 {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %out = memref.alloc() : memref<2xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1)
             workgroup(%sh : memref<4xi32, #gpu.address_space<workgroup>>)
             private(%pv : memref<1xi32, #gpu.address_space<private>>) {
    %c0 = arith.constant 0 : index
    %c10 = arith.constant 10 : index
    %b10 = arith.muli %bx, %c10 : index
    %vi = arith.addi %b10, %tx : index
    %v = arith.index_cast %vi : index to i32
    memref.store %v, %pv[%c0] : memref<1xi32, #gpu.address_space<private>>
    %p = memref.load %pv[%c0] : memref<1xi32, #gpu.address_space<private>>
    memref.store %p, %sh[%tx] : memref<4xi32, #gpu.address_space<workgroup>>
    gpu.barrier
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      %c1i = arith.constant 1 : index
      %zero = arith.constant 0 : i32
      %sum = scf.for %i = %c0 to %sx step %c1i iter_args(%acc = %zero) -> (i32) {
        %x = memref.load %sh[%i] : memref<4xi32, #gpu.address_space<workgroup>>
        %s = arith.addi %acc, %x : i32
        scf.yield %s : i32
      }
      memref.store %sum, %out[%bx] : memref<2xi32>
    }
    gpu.terminator
  }
  %c0 = arith.constant 0 : index
  %s0 = memref.load %out[%c0] : memref<2xi32>
  %s1 = memref.load %out[%c1] : memref<2xi32>
  pgpu.printf "block sums %d %d\n"(%s0, %s1) : i32, i32
  %z = arith.constant 0 : i32
  return %z : i32
}

func.func @racy() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1)
             workgroup(%sh : memref<2xindex, #gpu.address_space<workgroup>>) {
    memref.store %tx, %sh[%tx] : memref<2xindex, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    // RACE: gpu-memory.mlir:[[@LINE+1]]:10: error: data race: thread 1 reads element 0 that thread 0 wrote in the same superstep
    %x = memref.load %sh[%c0] : memref<2xindex, #gpu.address_space<workgroup>>
    gpu.terminator
  }
  return
}
