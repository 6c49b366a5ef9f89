// RUN: pgpu-opt %s --split-input-file --pgpu-grid-fuse | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-grid-fuse=max-threads=8 | FileCheck %s --check-prefix=BOUND
// Both versions keep the output: the interpreter's capacity is unbounded
// (the grid version runs), and 4 threads exceed a bound of 2 (the split
// version runs).
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-grid-fuse -o /dev/null
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pgpu-grid-fuse=max-threads=2 -o /dev/null
// And after kernel splitting, which leaves the grid version alone.
// RUN: pgpu-opt %s --split-input-file --pgpu-check-semantics --pass-pipeline='builtin.module(pgpu-grid-fuse,pgpu-form-supersteps,pgpu-save-values,pgpu-split-kernels)' | FileCheck %s --check-prefix=SPLIT

// A spawn with only plain barriers runs, when its threads fit the device,
// as one kernel with grid-wide barriers; else it is split as usual.
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = arith.constant 4 : index
// CHECK: %[[MAX:.*]] = pgpu.grid_capacity : index
// CHECK-NEXT: %[[FITS:.*]] = arith.cmpi ule, %[[N]], %[[MAX]] : index
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[GRID:.*]] = arith.cmpi ugt, %[[MAX]], %[[ZERO]] : index
// CHECK-NEXT: %[[USE_GRID:.*]] = arith.andi %[[FITS]], %[[GRID]] : i1
// CHECK-NEXT: scf.if %[[USE_GRID]] {
// CHECK-NEXT: pgpu.spawn grid %[[N]] {
// CHECK: pgpu.barrier
// CHECK: } else {
// CHECK-NEXT: pgpu.spawn %[[N]] {
// CHECK: pgpu.barrier
// A bound of its own, besides the device's capacity.
// BOUND-LABEL: func.func @main
// BOUND: %[[N:.*]] = arith.constant 4 : index
// BOUND: %[[MAX:.*]] = pgpu.grid_capacity : index
// BOUND-NEXT: %[[FITS:.*]] = arith.cmpi ule, %[[N]], %[[MAX]] : index
// BOUND-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// BOUND-NEXT: %[[GRID:.*]] = arith.cmpi ugt, %[[MAX]], %[[ZERO]] : index
// BOUND-NEXT: %[[USE_GRID:.*]] = arith.andi %[[FITS]], %[[GRID]] : i1
// BOUND-NEXT: %[[EIGHT:.*]] = arith.constant 8 : index
// BOUND-NEXT: %[[BOUNDED:.*]] = arith.cmpi ule, %[[N]], %[[EIGHT]] : index
// BOUND-NEXT: %[[BOTH:.*]] = arith.andi %[[USE_GRID]], %[[BOUNDED]] : i1
// BOUND-NEXT: scf.if %[[BOTH]] {
// BOUND-NEXT: pgpu.spawn grid %[[N]] {
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
  %out = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %a[%r] : memref<?xi32>
    pgpu.barrier
    %r1 = arith.addi %r, %c1 : index
    %next = arith.remui %r1, %c4 : index
    %y = memref.load %a[%next] : memref<?xi32>
    %z = arith.muli %y, %x : i32
    memref.store %z, %out[%r] : memref<?xi32>
  }
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %first = memref.load %out[%c0] : memref<?xi32>
  %last = memref.load %out[%c3] : memref<?xi32>
  pgpu.printf "%d %d\n"(%first, %last) : i32, i32
  memref.dealloc %a : memref<?xi32>
  memref.dealloc %out : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Host code in `pgpu.require` before the first barrier runs before the
// launch: the spawn is fused.
// CHECK-LABEL: func.func @main
// CHECK: scf.if
// CHECK-NEXT: pgpu.spawn grid
// CHECK: pgpu.require
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %b = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %list = pgpu.require -> (memref<?xi32>) {
      %n = pgpu.size : index
      %l = pgpu.dtempnew [%n] : memref<?xi32>
      pgpu.yield %l : memref<?xi32>
    }
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %list[%r] : memref<?xi32>
    pgpu.barrier
    %c3 = arith.constant 3 : index
    %other = arith.subi %c3, %r : index
    %y = memref.load %list[%other] : memref<?xi32>
    memref.store %y, %b[%r] : memref<?xi32>
  }
  %c0 = arith.constant 0 : index
  %first = memref.load %b[%c0] : memref<?xi32>
  pgpu.printf "%d\n"(%first) : i32
  memref.dealloc %b : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Collectives and rank reassignment need the host between kernels; code
// that needs the host (printf, calls) cannot run in a grid kernel: such
// spawns are not fused.
// CHECK-LABEL: func.func @main
// CHECK-NOT: grid
// CHECK: return
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

// -----

// CHECK-LABEL: func.func @main
// CHECK-NOT: grid
// CHECK: return
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    pgpu.barrier
    pgpu.printf "%d\n"(%x) : i32
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A spawn without barriers is one kernel anyway; synchronous (Fork) spawns
// are the group lowering's.
// CHECK-LABEL: func.func @main
// CHECK-NOT: grid
// CHECK: return
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %a = memref.alloc(%c4) : memref<?xi32>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    memref.store %x, %a[%r] : memref<?xi32>
  }
  memref.dealloc %a : memref<?xi32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}
