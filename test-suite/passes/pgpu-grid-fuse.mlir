// RUN: pgpu-opt %s --split-input-file --pgpu-grid-fuse=max-threads=8 | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-grid-fuse=max-threads=0 | FileCheck %s --check-prefix=OFF
// Both versions keep the output: 4 threads fit 8, not 2.
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-grid-fuse=max-threads=8 -o /dev/null
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-grid-fuse=max-threads=2 -o /dev/null
// And after kernel splitting, which leaves the grid version alone.
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pass-pipeline='builtin.module(pgpu-grid-fuse{max-threads=8},pgpu-form-supersteps,pgpu-save-values,pgpu-split-kernels)' | FileCheck %s --check-prefix=SPLIT

// A spawn with only plain barriers runs, when its threads fit, as one
// kernel with grid-wide barriers; else it is split as usual.
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = arith.constant 4 : index
// CHECK: %[[MAX:.*]] = arith.constant 8 : index
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %[[N]], %[[MAX]] : index
// CHECK: scf.if %[[FITS]] {
// CHECK-NEXT: pgpu.spawn grid %[[N]] {
// CHECK: pgpu.barrier
// CHECK: } else {
// CHECK-NEXT: pgpu.spawn %[[N]] {
// CHECK: pgpu.barrier
// OFF-LABEL: func.func @main
// OFF-NOT: scf.if
// OFF-NOT: grid
// SPLIT-LABEL: func.func @main
// SPLIT: scf.if
// SPLIT-NEXT: pgpu.spawn grid
// SPLIT: pgpu.barrier
// SPLIT: } else {
// SPLIT-NOT: pgpu.spawn
// SPLIT: scf.parallel
// SPLIT: scf.parallel
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %a[%r] : memref<?xi32>
    pgpu.barrier
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %c4 : index
    %y = memref.load %a[%next] : memref<?xi32>
    %z = arith.muli %y, %x : i32
    pgpu.printf "%d %d\n"(%x, %z) : i32, i32
  }
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Collectives and rank reassignment need the host between kernels: such
// spawns are not fused.
// CHECK-LABEL: func.func @main
// CHECK-NOT: grid
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    pgpu.barrier
    %s = pgpu.reduce add %x : i32
    pgpu.printf "%d\n"(%s) : i32
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}
