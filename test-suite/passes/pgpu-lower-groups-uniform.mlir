// RUN: pgpu-opt %s --pgpu-lower-groups | FileCheck %s

// The lowered program computes what the synchronous group computes, in
// the interpreter and natively on the CPU.
// RUN: pgpu-opt %s --pgpu-lower-groups -o %t.mlir
// RUN: pgpu run --interpret %t.mlir > %t.lowered
// RUN: pgpu run --interpret %s > %t.reference
// RUN: diff %t.reference %t.lowered
// RUN: pgpu run %s > %t.native
// RUN: diff %t.reference %t.native
// RUN: FileCheck %s --check-prefix=OUT < %t.lowered
// OUT: leaf 5 5 3 3 3 0
// OUT-NEXT: tickets 0 3 4 6 9 10
// OUT-NEXT: counters 0 0 0 11 0 5 0 0
// OUT-NEXT: side 1 1 1 1 1 1

// The uniformity analysis of pgpu-lower-groups: which values are the same
// in every member of a group.
memref.global @steps : memref<8xi32> = dense<[3, 1, 0, 2, 1, 0, 0, 0]>
memref.global @leaf : memref<8xi32> = dense<0>
memref.global @tickets : memref<8xi32> = dense<0>
memref.global @counters : memref<8xi32> = dense<0>
memref.global @side : memref<8xi32> = dense<0>

// Halves the group until one member is left; the lower half moves `lo` by
// steps[lo]. Every call passes a uniform `lo` (a constant, the parameter,
// the parameter plus a shared load at a uniform address): a host value of
// the group function. `me` is each member's own: a buffer.
// CHECK-LABEL: func.func @__group_walk(
// CHECK-SAME: %[[SIZE:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index, %[[LO:[a-z0-9]+]]: i32, %[[ME:[a-z0-9]+]]: memref<?xindex>)
// CHECK-NOT: pgpu.list.reduce
// A split on a uniform condition is a branch of the host.
// CHECK: %[[ALONE:.*]] = arith.cmpi ule, %[[SIZE]], %{{.*}} : index
// CHECK: scf.if %[[ALONE]] {
// CHECK: } else {
// The multiprefix's cell comes from a shared load at a uniform address:
// one cell for the group, a rank-order scan in a segment (no check of the
// members' cells on the device).
// CHECK: pgpu.spawn synchronous %[[SIZE]] {
// CHECK: pgpu.multiprefix add %{{.*}} to %{{.*}}[%{{.*}}] {pgpu.uniform_location}
// `$$ < size / 2`: the group rank is the position, so the halves are
// ranges of positions (no compaction).
// CHECK: %[[LOWER:.*]] = arith.minui %{{.*}}, %[[SIZE]] : index
// The step is read back once, before the subgroups' taskgroup, and the
// host computes the lower half's `lo`.
// CHECK: %[[STEP:.*]] = memref.load %{{.*}}[%{{.*}}] {pgpu.host_read} : memref<?xi32>
// CHECK: pgpu.taskgroup {
// CHECK-NOT: pgpu.list.compact
// CHECK: pgpu.task {
// CHECK: %[[NEXT:.*]] = arith.addi %[[LO]], %[[STEP]] : i32
// CHECK: func.call @__group_walk(%[[LOWER]], %{{.*}}, %{{.*}}, %[[NEXT]], %{{.*}})
// CHECK-NOT: pgpu.list.compact
// CHECK: pgpu.task {
// CHECK: func.call @__group_walk(%{{.*}}, %{{.*}}, %{{.*}}, %[[LO]], %{{.*}})
// CHECK-NOT: pgpu.list.reduce
// CHECK: return
func.func @walk(%lo: i32, %me: index) attributes {pgpu.synchronous} {
  %size = pgpu.group.size : index
  %rank = pgpu.group.rank : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %alone = arith.cmpi ule, %size, %c1 : index
  pgpu.group.split %alone {
    %leaf = memref.get_global @leaf : memref<8xi32>
    memref.store %lo, %leaf[%me] : memref<8xi32>
    pgpu.group.merge
  } else {
    %steps = memref.get_global @steps : memref<8xi32>
    %c7 = arith.constant 7 : index
    %at = arith.index_cast %lo : i32 to index
    %slot = arith.andi %at, %c7 : index
    %step = memref.load %steps[%slot] : memref<8xi32>
    // Sibling subgroups use different cells: (lo + step) % 8.
    %sum = arith.addi %lo, %step : i32
    %sum_index = arith.index_cast %sum : i32 to index
    %cell = arith.andi %sum_index, %c7 : index
    %counters = memref.get_global @counters : memref<8xi32>
    %one = arith.constant 1 : i32
    %ticket = pgpu.multiprefix add %one to %counters[%cell] : memref<8xi32>
    %tickets = memref.get_global @tickets : memref<8xi32>
    memref.store %ticket, %tickets[%me] : memref<8xi32>
    %half = arith.divui %size, %c2 : index
    %low = arith.cmpi ult, %rank, %half : index
    pgpu.group.split %low {
      %next = arith.addi %lo, %step : i32
      func.call @walk(%next, %me) : (i32, index) -> ()
      pgpu.group.merge
    } else {
      func.call @walk(%lo, %me) : (i32, index) -> ()
      pgpu.group.merge
    }
    pgpu.group.merge
  }
  return
}

// CHECK-LABEL: func.func @main
// A value loaded in asynchronous code (`farm`: the members read at
// different times) is not uniform: the split on it stays a split.
// CHECK: pgpu.list.compact
func.func @main() -> i32 {
  %c6 = arith.constant 6 : index
  pgpu.spawn synchronous %c6 {
    %me = pgpu.group.rank : index
    %zero = arith.constant 0 : i32
    func.call @walk(%zero, %me) : (i32, index) -> ()
    %first = pgpu.farm -> (i32) {
      %leaf = memref.get_global @leaf : memref<8xi32>
      %c0 = arith.constant 0 : index
      %x = memref.load %leaf[%c0] : memref<8xi32>
      pgpu.yield %x : i32
    }
    %c1_i32 = arith.constant 1 : i32
    %bit = arith.andi %first, %c1_i32 : i32
    %odd = arith.cmpi ne, %bit, %zero : i32
    %side = memref.get_global @side : memref<8xi32>
    pgpu.group.split %odd {
      memref.store %c1_i32, %side[%me] : memref<8xi32>
      pgpu.group.merge
    } else {
      %c2_i32 = arith.constant 2 : i32
      memref.store %c2_i32, %side[%me] : memref<8xi32>
      pgpu.group.merge
    }
    pgpu.yield
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %leaf = memref.get_global @leaf : memref<8xi32>
  %tickets = memref.get_global @tickets : memref<8xi32>
  %counters = memref.get_global @counters : memref<8xi32>
  %side = memref.get_global @side : memref<8xi32>
  pgpu.printf "leaf"
  scf.for %i = %c0 to %c6 step %c1 {
    %x = memref.load %leaf[%i] : memref<8xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf "\ntickets"
  scf.for %i = %c0 to %c6 step %c1 {
    %x = memref.load %tickets[%i] : memref<8xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf "\ncounters"
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %counters[%i] : memref<8xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf "\nside"
  scf.for %i = %c0 to %c6 step %c1 {
    %x = memref.load %side[%i] : memref<8xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf "\n"
  %ret = arith.constant 0 : i32
  return %ret : i32
}
