// RUN: pgpu-opt %s --pgpu-lower-groups | FileCheck %s

// The lowered program computes what the synchronous group computes.
// RUN: pgpu-opt %s --pgpu-lower-groups -o %t.mlir
// RUN: pgpu run --interpret %t.mlir > %t.lowered
// RUN: pgpu run --interpret %s > %t.reference
// RUN: diff %t.reference %t.lowered
// RUN: FileCheck %s --check-prefix=OUT < %t.lowered
// OUT: 3 8 3 4 3 6 0 0 | 0 3 2 103 4 203 0 0 | rounds 3

memref.global @a : memref<8xi32> = dense<0>
memref.global @b : memref<8xi32> = dense<0>
memref.global @rounds : memref<i32> = dense<0>

// The paper's Figure 4: a private condition splits the group; each side
// runs as a subgroup (ranks renumbered, sizes from the split); the merged
// value is stored back at the members' parent positions.
// CHECK-LABEL: func.func @main
// The value the split needs, and the loop-carried private value, live in
// per-processor buffers of the group.
// CHECK-DAG: %[[FLAGS:.*]] = memref.alloc(%{{.*}}) {pgpu.per_processor} : memref<?xi1>
// CHECK-DAG: %[[IOTA:.*]] = memref.alloc(%{{.*}}) {pgpu.per_processor} : memref<?xindex>
// CHECK-DAG: %[[THEN_MAP:.*]] = memref.alloc(%{{.*}}) {pgpu.per_processor} : memref<?xindex>
// CHECK-DAG: %[[ELSE_MAP:.*]] = memref.alloc(%{{.*}}) {pgpu.per_processor} : memref<?xindex>
// Devicefunc1: the code before the split, including the condition.
// CHECK: pgpu.spawn synchronous %[[P:.*]] {
// CHECK: %[[RANK:.*]] = pgpu.rank : index
// CHECK: memref.store %{{.*}}, %[[FLAGS]][%[[RANK]]] : memref<?xi1>
// The two sides are the tasks of one taskgroup (on the GPU, their device
// work may overlap). ComputeSubgroups on the device: compaction of each
// side's positions.
// CHECK: pgpu.taskgroup {
// CHECK: %[[N1:.*]] = pgpu.list.compact %[[IOTA]], %[[FLAGS]], %[[THEN_MAP]][%[[P]]]
// CHECK: %[[ANY1:.*]] = arith.cmpi ugt, %[[N1]]
// CHECK: scf.if %[[ANY1]] {
// CHECK-NEXT: pgpu.task {
// Devicefunc2then: a subgroup of N1 members.
// CHECK: pgpu.spawn synchronous %[[N1]] {
// CHECK: pgpu.rank : index
// RestoreGroup: the merge value stored at the member's parent position.
// CHECK: %[[PARENT:.*]] = memref.load %[[THEN_MAP]][%{{.*}}]
// CHECK: memref.store %{{.*}}, %[[MERGED:.*]][%[[PARENT]]] : memref<?xi32>
// CHECK: }
// CHECK: %[[N0:.*]] = pgpu.list.compact %[[IOTA]], %{{.*}}, %[[ELSE_MAP]][%[[P]]]
// CHECK: scf.if
// CHECK-NEXT: pgpu.task {
// CHECK: pgpu.spawn synchronous %[[N0]] {
// Figure 5: a loop whose body synchronizes runs on the host; its uniform
// counter stays a host value.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[COUNT:.*]] = %{{.*}}) -> (i32) {
// CHECK: %[[MORE:.*]] = arith.addi %[[COUNT]]
// CHECK: pgpu.spawn synchronous %[[P]] {
// CHECK: memref.store
// CHECK: }
// CHECK-NEXT: scf.yield %[[MORE]] : i32
// CHECK: memref.dealloc %[[FLAGS]]
func.func @main() -> i32 {
  %c8 = arith.constant 8 : index
  %c6 = arith.constant 6 : index
  pgpu.spawn synchronous %c6 {
    %me = pgpu.group.rank : index
    %me32 = arith.index_cast %me : index to i32
    %a = memref.get_global @a : memref<8xi32>
    %b = memref.get_global @b : memref<8xi32>
    %c1 = arith.constant 1 : index
    %low = arith.andi %me, %c1 : index
    %odd = arith.cmpi eq, %low, %c1 : index
    // if ($ odd) v = $' * 100 + groupsize'; else { a[$] = $ + 1; v = $; }
    %v = pgpu.group.split %odd -> (i32) {
      %sub = pgpu.group.rank : index
      %size = pgpu.group.size : index
      %sub32 = arith.index_cast %sub : index to i32
      %size32 = arith.index_cast %size : index to i32
      %hundred = arith.constant 100 : i32
      %scaled = arith.muli %sub32, %hundred : i32
      %sum = arith.addi %scaled, %size32 : i32
      pgpu.group.merge %sum : i32
    } else {
      %one = arith.constant 1 : i32
      %next = arith.addi %me32, %one : i32
      memref.store %next, %a[%me] : memref<8xi32>
      pgpu.group.merge %me32 : i32
    }
    memref.store %v, %b[%me] : memref<8xi32>
    // Three rounds of a[($ + 1) % 6] = a[$] + 1: every round reads before
    // anyone writes.
    %c0_i32 = arith.constant 0 : i32
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %rounds_done = scf.for %round = %c0 to %c3 step %c1 iter_args(%count = %c0_i32) -> (i32) {
      %x = memref.load %a[%me] : memref<8xi32>
      %one = arith.constant 1 : i32
      %y = arith.addi %x, %one : i32
      %right = arith.addi %me, %c1 : index
      %wrapped = arith.remui %right, %c6 : index
      memref.store %y, %a[%wrapped] : memref<8xi32>
      %more = arith.addi %count, %one : i32
      scf.yield %more : i32
    }
    %rounds = memref.get_global @rounds : memref<i32>
    memref.store %rounds_done, %rounds[] : memref<i32>
    pgpu.yield
  }
  %a = memref.get_global @a : memref<8xi32>
  %b = memref.get_global @b : memref<8xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xi32>
    pgpu.printf "%d "(%x) : i32
  }
  pgpu.printf "| "
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %b[%i] : memref<8xi32>
    pgpu.printf "%d "(%x) : i32
  }
  %rounds = memref.get_global @rounds : memref<i32>
  %r = memref.load %rounds[] : memref<i32>
  pgpu.printf "| rounds %d\n"(%r) : i32
  %ret = arith.constant 0 : i32
  return %ret : i32
}
