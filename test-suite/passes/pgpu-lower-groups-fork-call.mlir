// RUN: pgpu-opt %s --pgpu-lower-groups | FileCheck %s

// The lowered program computes what the synchronous group computes.
// RUN: pgpu-opt %s --pgpu-lower-groups -o %t.mlir
// RUN: pgpu run --interpret %t.mlir > %t.lowered
// RUN: pgpu run --interpret %s > %t.reference
// RUN: diff %t.reference %t.lowered
// RUN: FileCheck %s --check-prefix=OUT < %t.lowered
// OUT: ids 0 1 0 1 0 1 0 | ranks 0 0 1 1 2 2 3
// OUT-NEXT: counts 0 0 1 1 2 2 3 | cells 4 3
// OUT-NEXT: depth 2 3 3 3 3 3 3 | winner 0

memref.global @ids : memref<8xindex> = dense<0>
memref.global @ranks : memref<8xindex> = dense<0>
memref.global @counts : memref<8xi32> = dense<0>
memref.global @cells : memref<2xi32> = dense<0>
memref.global @depth : memref<8xi32> = dense<0>
memref.global @winner : memref<index> = dense<7>

// A synchronous function that recurses: halves its group until one member
// is left, and returns the number of halvings plus its argument.
// CHECK-LABEL: func.func @__group_halve(
// Every call passes a uniform argument (a constant, then the caller's
// argument plus one): the host version takes it as a host value.
// CHECK-SAME: %[[SIZE:[a-z0-9]+]]: index, %[[ID:[a-z0-9]+]]: index, %[[WHOLE:[a-z0-9]+]]: index, %[[ARG:[a-z0-9]+]]: i32, %[[RESULT:[a-z0-9]+]]: memref<?xi32>)
// The argument of the recursive calls is host code.
// `$$ < size / 2` splits at a rank the host knows (the group rank is the
// position): the sides are ranges of positions, no compaction.
// CHECK: %[[HALF:.*]] = arith.divui %[[SIZE]], %{{.*}} : index
// CHECK: %[[DEEPER:.*]] = arith.addi %[[ARG]], %{{.*}} : i32
// CHECK: %[[COUNT:.*]] = arith.minui %[[HALF]], %[[SIZE]] : index
// CHECK-NOT: pgpu.list.compact
// The recursive call is a host call with the subgroup's size.
// CHECK: call @__group_halve(%[[COUNT]], %[[ID]], %[[WHOLE]], %[[DEEPER]], %{{.*}}) : (index, index, index, i32, memref<?xi32>) -> ()
// CHECK: return
func.func @halve(%d: i32) -> i32 attributes {pgpu.synchronous} {
  %size = pgpu.group.size : index
  %rank = pgpu.group.rank : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %alone = arith.cmpi ule, %size, %c1 : index
  %result = pgpu.group.split %alone -> (i32) {
    pgpu.group.merge %d : i32
  } else {
    %half = arith.divui %size, %c2 : index
    %low = arith.cmpi ult, %rank, %half : index
    %one = arith.constant 1 : i32
    %deeper = arith.addi %d, %one : i32
    %inner = pgpu.group.split %low -> (i32) {
      %r = func.call @halve(%deeper) : (i32) -> i32
      pgpu.group.merge %r : i32
    } else {
      %r = func.call @halve(%deeper) : (i32) -> i32
      pgpu.group.merge %r : i32
    }
    pgpu.group.merge %inner : i32
  }
  return %result : i32
}

// CHECK-LABEL: func.func @main
// CHECK: %[[SHARED:.*]] = memref.alloc() : memref<index>
// fork(2; @ = $$ % 2; ...): for each subgroup id, the members compacted
// in the parent's order, which is the subgroup's rank order (the fork
// renumbers the group rank as a split does): no sort.
// CHECK-NOT: pgpu.list.sort_idx
// CHECK: pgpu.taskgroup {
// CHECK: scf.for %[[G:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[FOUND:.*]] = pgpu.list.compact
// CHECK-NOT: pgpu.list.sort_idx
// CHECK: scf.if
// Each subgroup is a task of the loop's taskgroup.
// CHECK: pgpu.task {
// CHECK: pgpu.spawn synchronous %[[FOUND]] {
// A multiprefix on a cell that may differ between members: when the cells
// are one (the indices' min and max agree), a rank-order multiprefix of the
// group; otherwise one thread in rank order.
// CHECK: %[[LOW:.*]] = pgpu.list.reduce min %[[CELLS:.*]][%{{.*}}] : memref<?xindex> -> index
// CHECK: %[[HIGH:.*]] = pgpu.list.reduce max %[[CELLS]]
// CHECK: %[[ONE_CELL:.*]] = arith.cmpi eq, %[[LOW]], %[[HIGH]]
// CHECK: scf.if %[[ONE_CELL]] {
// CHECK: pgpu.spawn synchronous
// CHECK: pgpu.multiprefix add %{{.*}} to %{{.*}}[%[[LOW]]]
// CHECK: } else {
// CHECK: pgpu.spawn %c1{{.*}} {
// CHECK: scf.for
// CHECK: arith.addi
// The call of the synchronous function.
// CHECK: call @__group_halve(
// A shared local: memory of the group, on the host (allocated with the
// group's buffers), freed at the end.
// CHECK: pgpu.spawn synchronous
// CHECK: memref.store %{{.*}}, %[[SHARED]][] : memref<index>
// CHECK: memref.dealloc %[[SHARED]] : memref<index>
func.func @main() -> i32 {
  %c7 = arith.constant 7 : index
  pgpu.spawn synchronous %c7 {
    %me = pgpu.group.rank : index
    %c2 = arith.constant 2 : index
    %id = arith.remui %me, %c2 : index
    pgpu.group.fork %c2 id %id {
      %g = pgpu.group.id : index
      %r = pgpu.group.rank : index
      %ids = memref.get_global @ids : memref<8xindex>
      %ranks = memref.get_global @ranks : memref<8xindex>
      memref.store %g, %ids[%me] : memref<8xindex>
      memref.store %r, %ranks[%me] : memref<8xindex>
      pgpu.group.merge
    }
    // counts[me] = mpadd(&cells[me % 2], 1), in rank order per cell.
    %cells = memref.get_global @cells : memref<2xi32>
    %one = arith.constant 1 : i32
    %old = pgpu.multiprefix add %one to %cells[%id] : memref<2xi32>
    %counts = memref.get_global @counts : memref<8xi32>
    memref.store %old, %counts[%me] : memref<8xi32>
    %zero = arith.constant 0 : i32
    %d = func.call @halve(%zero) : (i32) -> i32
    %depth = memref.get_global @depth : memref<8xi32>
    memref.store %d, %depth[%me] : memref<8xi32>
    // A shared local all members write: the lowest rank wins.
    %shared = pgpu.group.alloc : memref<index>
    memref.store %me, %shared[] : memref<index>
    %w = memref.load %shared[] : memref<index>
    %winner = memref.get_global @winner : memref<index>
    memref.store %w, %winner[] : memref<index>
    pgpu.yield
  }
  %ids = memref.get_global @ids : memref<8xindex>
  %ranks = memref.get_global @ranks : memref<8xindex>
  %counts = memref.get_global @counts : memref<8xi32>
  %cells = memref.get_global @cells : memref<2xi32>
  %depth = memref.get_global @depth : memref<8xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.printf "ids"
  scf.for %i = %c0 to %c7 step %c1 {
    %x = memref.load %ids[%i] : memref<8xindex>
    pgpu.printf " %d"(%x) : index
  }
  pgpu.printf " | ranks"
  scf.for %i = %c0 to %c7 step %c1 {
    %x = memref.load %ranks[%i] : memref<8xindex>
    pgpu.printf " %d"(%x) : index
  }
  pgpu.printf "\ncounts"
  scf.for %i = %c0 to %c7 step %c1 {
    %x = memref.load %counts[%i] : memref<8xi32>
    pgpu.printf " %d"(%x) : i32
  }
  %c0_cell = memref.load %cells[%c0] : memref<2xi32>
  %c1_cell = memref.load %cells[%c1] : memref<2xi32>
  pgpu.printf " | cells %d %d\ndepth"(%c0_cell, %c1_cell) : i32, i32
  scf.for %i = %c0 to %c7 step %c1 {
    %x = memref.load %depth[%i] : memref<8xi32>
    pgpu.printf " %d"(%x) : i32
  }
  %winner = memref.get_global @winner : memref<index>
  %wv = memref.load %winner[] : memref<index>
  pgpu.printf " | winner %d\n"(%wv) : index
  %ret = arith.constant 0 : i32
  return %ret : i32
}
