// RUN: pgpu-opt %s --split-input-file --pgpu-lower-synchronous | FileCheck %s
// Equivalence with Fork's semantics: pgpu-lower-synchronous-semantics.mlir.

memref.global @a : memref<8xi32> = dense<0>
memref.global @c : memref<i32> = dense<0>

// CHECK-DAG: memref.global "private" @__crcw_claim_c : memref<i32> = dense<0>
// CHECK-LABEL: func.func @main
// The group becomes a BSGP spawn; its queries the spawn's.
// CHECK: pgpu.spawn %{{.*}} {
// CHECK-NOT: synchronous
// CHECK: %[[RANK:.*]] = pgpu.rank : index
// A read, then a store one element per processor: barriers around it.
// CHECK: memref.load
// CHECK: pgpu.barrier
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[RANK]]] : memref<8xi32>
// CHECK-NEXT: pgpu.barrier
// A conflicting store: claims by atomic max of the priority INT32_MAX - rank
// (the lowest rank wins; unclaimed cells hold 0), the winner stores and
// resets its claim.
// CHECK: pgpu.barrier
// CHECK-NEXT: %[[CLAIM:.*]] = memref.get_global @__crcw_claim_c
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[R32:.*]] = arith.index_cast %[[R]] : index to i32
// CHECK-NEXT: %[[TOP:.*]] = arith.constant 2147483647 : i32
// CHECK-NEXT: %[[PRIORITY:.*]] = arith.subi %[[TOP]], %[[R32]] : i32
// CHECK-NEXT: memref.atomic_rmw maxs %[[PRIORITY]], %[[CLAIM]][] : (i32, memref<i32>) -> i32
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[WINNER:.*]] = memref.load %[[CLAIM]][]
// CHECK-NEXT: %[[WINS:.*]] = arith.cmpi eq, %[[WINNER]], %[[PRIORITY]] : i32
// CHECK-NEXT: scf.if %[[WINS]] {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[] : memref<i32>
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: scf.if %[[WINS]] {
// CHECK-NEXT: %[[UNCLAIMED:.*]] = arith.constant 0 : i32
// CHECK-NEXT: memref.store %[[UNCLAIMED]], %[[CLAIM]][] : memref<i32>
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.barrier
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    %r = pgpu.group.rank : index
    %a = memref.get_global @a : memref<8xi32>
    %size = pgpu.group.size : index
    %next = arith.addi %r, %size : index
    %v = memref.load %a[%next] : memref<8xi32>
    memref.store %v, %a[%r] : memref<8xi32>
    %c = memref.get_global @c : memref<i32>
    %r32 = arith.index_cast %r : index to i32
    memref.store %r32, %c[] : memref<i32>
    pgpu.yield
  }
  %c = memref.get_global @c : memref<i32>
  %winner = memref.load %c[] : memref<i32>
  pgpu.printf "winner %d\n"(%winner) : i32
  %z = arith.constant 0 : i32
  return %z : i32
}

// -----

// A list from outside the group: its claim list is filled before the spawn
// and freed after it.
// CHECK-LABEL: func.func @outside(
// CHECK-SAME: %[[LIST:[^:]*]]: memref<?xi32>
// CHECK: %[[LEN:.*]] = memref.dim %[[LIST]], %{{.*}} : memref<?xi32>
// CHECK-NEXT: %[[CL:.*]] = memref.alloc(%[[LEN]]) : memref<?xi32>
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[CL]][
// CHECK: pgpu.spawn
// CHECK: memref.atomic_rmw maxs %{{.*}}, %[[CL]][
// CHECK: memref.dealloc %[[CL]] : memref<?xi32>
func.func @outside(%list: memref<?xi32>) {
  %c6 = arith.constant 6 : index
  %c2 = arith.constant 2 : index
  pgpu.spawn synchronous %c6 {
    %r = pgpu.group.rank : index
    %half = arith.divui %r, %c2 : index
    %r32 = arith.index_cast %r : index to i32
    memref.store %r32, %list[%half] : memref<?xi32>
    pgpu.yield
  }
  return
}

// -----

// Groups that split stay synchronous.
// CHECK-LABEL: func.func @splits
// CHECK: pgpu.spawn synchronous
func.func @splits() {
  %c4 = arith.constant 4 : index
  %c2 = arith.constant 2 : index
  pgpu.spawn synchronous %c4 {
    %r = pgpu.group.rank : index
    %low = arith.cmpi ult, %r, %c2 : index
    pgpu.group.split %low {
      pgpu.group.merge
    }
    pgpu.yield
  }
  return
}

// -----

// A multiprefix on one location: the old value, a rank-order scan, the
// last rank stores the new value (its own result plus its value: no kernel
// needs the scan's total, which the host would read back).
// CHECK-LABEL: func.func @tickets(
// CHECK-SAME: %[[CELL:[^:]*]]: memref<1xi32>
// CHECK: pgpu.barrier
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[CELL]][%{{.*}}] : memref<1xi32>
// CHECK-NEXT: %[[PREFIX:.*]], %{{.*}} = pgpu.scan add %[[VALUE:.*]] : i32
// CHECK-NEXT: %[[MINE:.*]] = arith.addi %[[OLD]], %[[PREFIX]] : i32
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[SIZE:.*]] = pgpu.size : index
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[SIZE]], %[[ONE]] : index
// CHECK-NEXT: %[[NEW:.*]] = arith.addi %[[MINE]], %[[VALUE]] : i32
// CHECK-NEXT: %[[IS_LAST:.*]] = arith.cmpi eq, %[[R]], %[[LAST]] : index
// CHECK-NEXT: scf.if %[[IS_LAST]] {
// CHECK-NEXT: memref.store %[[NEW]], %[[CELL]][%{{.*}}] : memref<1xi32>
// CHECK: pgpu.barrier
// CHECK: memref.store %[[MINE]]
func.func @tickets(%cell: memref<1xi32>, %out: memref<4xi32>) {
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  pgpu.spawn synchronous %c4 {
    %t = pgpu.multiprefix add %one to %cell[%c0] : memref<1xi32>
    %r = pgpu.group.rank : index
    memref.store %t, %out[%r] : memref<4xi32>
    pgpu.yield
  }
  return
}

// -----

// seq: rank 0 alone, between barriers; farm: its region inline, its
// barrier the spawn's, its results the values it yields.
// CHECK-LABEL: func.func @modes(
// CHECK: pgpu.spawn
// CHECK: pgpu.barrier
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[R]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: pgpu.printf "once\0A"
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[ME:.*]] = pgpu.rank : index
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[V:.*]] = memref.load %{{.*}}[%[[ME]]]
// CHECK-NEXT: pgpu.barrier
// CHECK: memref.store %[[V]], %{{.*}}[%[[ME]]]
// CHECK-NEXT: pgpu.barrier
// CHECK-NOT: pgpu.farm
// CHECK-NOT: pgpu.seq
func.func @modes(%list: memref<4xi32>) {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    pgpu.seq {
      pgpu.printf "once\n"
    }
    %r = pgpu.group.rank : index
    %v = pgpu.farm -> (i32) {
      %x = memref.load %list[%r] : memref<4xi32>
      pgpu.barrier
      pgpu.yield %x : i32
    }
    memref.store %v, %list[%r] : memref<4xi32>
    pgpu.yield
  }
  return
}

// -----

// A multiprefix whose prefixes nobody reads is one atomic update per
// processor; a store of one value everywhere needs no claims: the first
// member writes it (the others' writes of the same value would race).
memref.global @total : memref<i32> = dense<0>
memref.global @flag : memref<i32> = dense<0>

// CHECK-LABEL: func.func @totals
// CHECK: pgpu.spawn
// CHECK-NOT: pgpu.scan
// CHECK: memref.atomic_rmw addi %{{.*}}, %{{.*}}[] : (i32, memref<i32>) -> i32
// CHECK-NEXT: pgpu.barrier
// CHECK-NOT: __crcw_claim
// CHECK: %[[RANK:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[RANK]], %[[ZERO]] : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[] : memref<i32>
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.barrier
// CHECK: return
func.func @totals(%one: i32) {
  %c6 = arith.constant 6 : index
  pgpu.spawn synchronous %c6 {
    %r = pgpu.group.rank : index
    %r32 = arith.index_cast %r : index to i32
    %total = memref.get_global @total : memref<i32>
    %unused = pgpu.multiprefix add %r32 to %total[] : memref<i32>
    %flag = memref.get_global @flag : memref<i32>
    memref.store %one, %flag[] : memref<i32>
    pgpu.yield
  }
  return
}

// -----

// One value from every member to elements that may coincide (the index is
// neither one element per member nor the same in all): whoever wins, the
// element gets that value, and an atomic exchange keeps the members'
// writes of one element from racing.
memref.global @cells : memref<8xi32> = dense<0>

// CHECK-LABEL: func.func @common_value
// CHECK: pgpu.spawn
// CHECK-NOT: __crcw_claim
// CHECK: pgpu.barrier
// CHECK-NEXT: %{{.*}} = memref.atomic_rmw assign %{{.*}}, %{{.*}}[%{{.*}}] : (i32, memref<8xi32>) -> i32
// CHECK-NEXT: pgpu.barrier
func.func @common_value(%seven: i32) {
  %c6 = arith.constant 6 : index
  %c2 = arith.constant 2 : index
  pgpu.spawn synchronous %c6 {
    %r = pgpu.group.rank : index
    %half = arith.divui %r, %c2 : index
    %cells = memref.get_global @cells : memref<8xi32>
    memref.store %seven, %cells[%half] : memref<8xi32>
    pgpu.yield
  }
  return
}

// -----

// A multiprefix in `farm` (asynchronous) or `seq` (one processor) is an
// atomic fetch-and-op whose result is the old value (Fork's self-scheduling
// `i = mpadd(&next, 1)`): no scan, no barriers of its own; floats too.
memref.global @next : memref<i32> = dense<0>
memref.global @sum : memref<f32> = dense<0.0>

// CHECK-LABEL: func.func @asynchronous
// CHECK: pgpu.spawn
// CHECK-NOT: pgpu.scan
// CHECK: %[[TICKET:.*]] = memref.atomic_rmw addi %{{.*}}, %{{.*}}[] : (i32, memref<i32>) -> i32
// CHECK-NEXT: memref.atomic_rmw maxs %[[TICKET]], %{{.*}}[] : (i32, memref<i32>) -> i32
// CHECK: memref.atomic_rmw addf %{{.*}}, %{{.*}}[] : (f32, memref<f32>) -> f32
// CHECK: pgpu.barrier
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.atomic_rmw ori %{{.*}}, %{{.*}}[] : (i32, memref<i32>) -> i32
// CHECK-NOT: pgpu.multiprefix
// CHECK: return
func.func @asynchronous(%one: i32, %half: f32) {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    %next = memref.get_global @next : memref<i32>
    %sum = memref.get_global @sum : memref<f32>
    pgpu.farm {
      %ticket = pgpu.multiprefix add %one to %next[] : memref<i32>
      %high = pgpu.multiprefix max %ticket to %next[] : memref<i32>
      %old = pgpu.multiprefix add %half to %sum[] : memref<f32>
    }
    pgpu.seq {
      %bits = pgpu.multiprefix or %one to %next[] : memref<i32>
    }
    pgpu.yield
  }
  return
}

// -----

// `memref.atomic_rmw` takes no `index`: such a multiprefix in a `farm`
// keeps its group synchronous, marked with the construct (`pgpu compile`
// reports it at the multiprefix).
// CHECK-LABEL: func.func @no_atomic
// CHECK: pgpu.spawn synchronous
// CHECK: pgpu.multiprefix add %{{.*}} {pgpu.unlowered = "a multiprefix of this type in `farm` or `seq` (no atomic fetch-and-op for it)"}
func.func @no_atomic(%cell: memref<index>) {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    %one = arith.constant 1 : index
    pgpu.farm {
      %t = pgpu.multiprefix add %one to %cell[] : memref<index>
    }
    pgpu.yield
  }
  return
}
