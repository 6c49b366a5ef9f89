// A group that does not split runs as kernels with Fork's lock-step
// semantics: the interpreter's output before and after the kernel pipeline
// is the same (--pgpu-check-semantics), and it is the expected one.
// RUN: pgpu-opt %s --pgpu-check-semantics --pass-pipeline='builtin.module(pgpu-lower-synchronous,pgpu-inline-spmd,pgpu-eliminate-barriers,pgpu-form-supersteps,pgpu-save-values,pgpu-split-kernels)' -o %t.mlir
// RUN: pgpu run --interpret %t.mlir | FileCheck %s
// RUN: pgpu compile %s -o %t.exe
// RUN: %t.exe | FileCheck %s
// Rotation reads before it writes; the lowest rank wins the scalar and
// every pair of the outside list.
// CHECK: rotated 10 20 30 0 winner 0 pairs 0 2 4

memref.global @a : memref<4xi32> = dense<0>
memref.global @c : memref<i32> = dense<0>

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %ten = arith.constant 10 : i32
  %a = memref.get_global @a : memref<4xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    %i32 = arith.index_cast %i : index to i32
    %v = arith.muli %i32, %ten : i32
    memref.store %v, %a[%i] : memref<4xi32>
  }
  %pairs = memref.alloc(%c3) : memref<?xi32>
  pgpu.spawn synchronous %c6 {
    %r = pgpu.group.rank : index
    %r32 = arith.index_cast %r : index to i32
    %small = arith.cmpi ult, %r, %c4 : index
    %g = memref.get_global @a : memref<4xi32>
    // a[r] = a[(r + 1) % 4] for the first four ranks (the others write
    // a[r % 4] too: conflicting, the lower rank wins).
    %next = arith.addi %r, %c1 : index
    %wrapped = arith.remui %next, %c4 : index
    %v = memref.load %g[%wrapped] : memref<4xi32>
    %slot = arith.remui %r, %c4 : index
    memref.store %v, %g[%slot] : memref<4xi32>
    %c = memref.get_global @c : memref<i32>
    %r100 = arith.addi %r32, %ten : i32
    %winner = arith.subi %r100, %ten : i32
    memref.store %winner, %c[] : memref<i32>
    %half = arith.divui %r, %c2 : index
    memref.store %r32, %pairs[%half] : memref<?xi32>
    pgpu.yield
  }
  %a0 = memref.load %a[%c0] : memref<4xi32>
  %a1 = memref.load %a[%c1] : memref<4xi32>
  %a2 = memref.load %a[%c2] : memref<4xi32>
  %a3 = memref.load %a[%c3] : memref<4xi32>
  %cg = memref.get_global @c : memref<i32>
  %cv = memref.load %cg[] : memref<i32>
  %p0 = memref.load %pairs[%c0] : memref<?xi32>
  %p1 = memref.load %pairs[%c1] : memref<?xi32>
  %p2 = memref.load %pairs[%c2] : memref<?xi32>
  pgpu.printf "rotated %d %d %d %d winner %d pairs %d %d %d\n"(%a0, %a1, %a2, %a3, %cv, %p0, %p1, %p2) : i32, i32, i32, i32, i32, i32, i32, i32
  %z = arith.constant 0 : i32
  return %z : i32
}
