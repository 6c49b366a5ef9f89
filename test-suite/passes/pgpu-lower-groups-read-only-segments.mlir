// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-inline-spmd,pgpu-lower-groups)' | FileCheck %s

// A split whose sides leave no values: the merge after the subgroups would
// only read the parent positions, so no segment follows the taskgroup (it
// would be an empty launch, and on the cuda device it made the group's
// stream wait for both subgroups' work before the group's task ended).
// The split is on a rank range (`$$ < 2`): its sides are ranges of
// positions, and no segment before it stores flags for a compaction.
// CHECK-LABEL: func.func @main(
// CHECK-NOT: pgpu.spawn synchronous
// CHECK: pgpu.taskgroup {
// CHECK: pgpu.task {
// CHECK: pgpu.spawn synchronous
// CHECK: memref.store %c1_i32
// CHECK: pgpu.task {
// CHECK: pgpu.spawn synchronous
// CHECK: memref.store %c2_i32
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: pgpu.spawn
// CHECK: memref.dealloc
// CHECK: pgpu.printf
module {
  memref.global @a : memref<8xi32> = dense<0>
  func.func @main() -> i32 {
    %c4 = arith.constant 4 : index
    pgpu.spawn synchronous %c4 {
      %8 = pgpu.group.rank : index
      %9 = arith.index_cast %8 : index to i32
      %c2_i32 = arith.constant 2 : i32
      %10 = arith.cmpi slt, %9, %c2_i32 : i32
      pgpu.group.split %10 {
        %11 = memref.get_global @a : memref<8xi32>
        %12 = pgpu.group.rank : index
        %13 = arith.index_cast %12 : index to i32
        %14 = arith.index_cast %13 : i32 to index
        %c1_i32 = arith.constant 1 : i32
        memref.store %c1_i32, %11[%14] : memref<8xi32>
      } else {
        %11 = memref.get_global @a : memref<8xi32>
        %12 = pgpu.group.rank : index
        %13 = arith.index_cast %12 : index to i32
        %14 = arith.index_cast %13 : i32 to index
        %c2_i32_0 = arith.constant 2 : i32
        memref.store %c2_i32_0, %11[%14] : memref<8xi32>
      }
    }
    %0 = memref.get_global @a : memref<8xi32>
    %c0 = arith.constant 0 : index
    %1 = memref.load %0[%c0] : memref<8xi32>
    %2 = memref.get_global @a : memref<8xi32>
    %c1 = arith.constant 1 : index
    %3 = memref.load %2[%c1] : memref<8xi32>
    %4 = memref.get_global @a : memref<8xi32>
    %c2 = arith.constant 2 : index
    %5 = memref.load %4[%c2] : memref<8xi32>
    %6 = memref.get_global @a : memref<8xi32>
    %c3 = arith.constant 3 : index
    %7 = memref.load %6[%c3] : memref<8xi32>
    pgpu.printf "%d %d %d %d\0A"(%1, %3, %5, %7) : i32, i32, i32, i32
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
}
