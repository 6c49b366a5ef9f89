// RUN: pgpu-opt %s --split-input-file --pgpu-block-groups | FileCheck %s
// Running it again changes nothing: versioned functions are skipped.
// RUN: pgpu-opt %s --split-input-file --pgpu-block-groups > %t.once
// RUN: pgpu-opt %t.once --split-input-file --pgpu-block-groups > %t.twice
// RUN: diff %t.once %t.twice
// The host versions' dispatch: pgpu-lower-groups-block.mlir.

// A recursive group function: a rank-range split, a multiprefix whose
// results are used, one whose results are not, a concurrent write and a
// `seq` that writes.

memref.global "private" @cells : memref<64xi32> = dense<0>
memref.global "private" @counts : memref<64xi32> = dense<0>

// CHECK-LABEL: func.func private @__block_halves(
// CHECK-SAME: %[[LO:[^:]*]]: i32, %[[V:[^:]*]]: i32, %[[ID:[^:]*]]: index, %[[T:[^:]*]]: index, %[[FIRST:[^:]*]]: index, %[[COUNT:[^:]*]]: index, %[[SLOT:[^:]*]]: index, %[[SCRATCH:[^:]*]]: memref<?xi32>, %[[CLAIM:[^:]*]]: memref<64xi32>, %[[CELLS:[^:]*]]: memref<64xi32>, %[[COUNTS:[^:]*]]: memref<64xi32>) -> i32
// CHECK-SAME: pgpu.block_globals = [@__crcw_claim_cells, @cells, @counts], pgpu.block_group, pgpu.block_scratch = [i32]
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<i32>
// The group queries read the context.
// CHECK: %[[RANK:.*]] = arith.subi %[[T]], %[[FIRST]] : index
// CHECK-NOT: pgpu.group
// The multiprefix with used results: a scan in the scratch list between
// three barriers of the group's range; the last rank stores the total.
// CHECK: memref.store %{{.*}}, %[[SCRATCH]][%[[T]]]
// CHECK-NEXT: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK: scf.if
// CHECK: scf.for
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK: scf.for
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK: arith.subi %[[COUNT]], %{{.*}} : index
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1xi32, strided<[1], offset: ?>>
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// The multiprefix nobody reads: an atomic update, between barriers.
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[COUNTS]]
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// The concurrent write: the claim protocol on the claim global.
// CHECK: memref.atomic_rmw maxs %{{.*}}, %[[CLAIM]]
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK: memref.store %{{.*}}, %[[CELLS]]
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// The split on a uniform condition: a branch of the whole range; its
// `seq` runs on the first member.
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK: arith.subi %[[T]], %[[FIRST]] : index
// CHECK: arith.cmpi eq
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[COUNTS]]
// CHECK: } else {
// The split on the rank: below the threshold (the bound clamped to the
// group) and from it, each side with its own slot when both are
// non-empty.
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK: %[[CLAMPED:.*]] = arith.minsi
// CHECK: %[[THRESHOLD:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK: %[[SPLIT:.*]] = arith.addi %[[FIRST]], %[[THRESHOLD]] : index
// CHECK: %[[REST:.*]] = arith.subi %[[COUNT]], %[[THRESHOLD]] : index
// CHECK: %[[PROPER:.*]] = arith.andi
// CHECK: %[[BELOW_WORD:.*]] = arith.muli %[[SPLIT]], %{{.*}} : index
// CHECK: %[[ABOVE_WORD:.*]] = arith.addi %[[BELOW_WORD]], %{{.*}} : index
// CHECK: %[[BELOW_SLOT:.*]] = arith.select %[[PROPER]], %[[BELOW_WORD]], %[[SLOT]] : index
// CHECK: %[[ABOVE_SLOT:.*]] = arith.select %[[PROPER]], %[[ABOVE_WORD]], %[[SLOT]] : index
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK: pgpu.range_barrier %[[FIRST]], %[[THRESHOLD]], %[[BELOW_SLOT]]
// CHECK: func.call @__block_halves(%[[LO]], %{{.*}}, %[[ID]], %[[T]], %[[FIRST]], %[[THRESHOLD]], %[[BELOW_SLOT]], %[[SCRATCH]], %[[CLAIM]], %[[CELLS]], %[[COUNTS]])
// CHECK: pgpu.range_barrier %[[FIRST]], %[[THRESHOLD]], %[[BELOW_SLOT]]
// CHECK: } else {
// CHECK: pgpu.range_barrier %[[SPLIT]], %[[REST]], %[[ABOVE_SLOT]]
// CHECK: func.call @__block_halves(%{{.*}}, %{{.*}}, %[[ID]], %[[T]], %[[SPLIT]], %[[REST]], %[[ABOVE_SLOT]], %[[SCRATCH]], %[[CLAIM]], %[[CELLS]], %[[COUNTS]])
// CHECK: pgpu.range_barrier %[[SPLIT]], %[[REST]], %[[ABOVE_SLOT]]
// CHECK: }
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK: return
// CHECK-LABEL: func.func @halves(
// CHECK-SAME: pgpu.block_splits
// CHECK-SAME: pgpu.block_version = "__block_halves"

func.func @halves(%lo: i32, %v: i32) -> i32 attributes {pgpu.synchronous} {
  %size = pgpu.group.size : index
  %p = arith.index_cast %size : index to i32
  %rank = pgpu.group.rank : index
  %me = arith.index_cast %rank : index to i32
  %cells = memref.get_global @cells : memref<64xi32>
  %counts = memref.get_global @counts : memref<64xi32>
  %i = arith.index_cast %lo : i32 to index
  %view = memref.subview %cells[%i] [1] [1] : memref<64xi32> to memref<1xi32, strided<[1], offset: ?>>
  %c0 = arith.constant 0 : index
  %before = pgpu.multiprefix add %v to %view[%c0] : memref<1xi32, strided<[1], offset: ?>>
  %counted = pgpu.multiprefix add %v to %counts[%i] : memref<64xi32>
  %mine = arith.addi %me, %v : i32
  memref.store %mine, %cells[%i] : memref<64xi32>
  %one = arith.constant 1 : i32
  %alone = arith.cmpi eq, %p, %one : i32
  %r = pgpu.group.split %alone -> (i32) {
    pgpu.seq {
      %old = memref.load %counts[%i] : memref<64xi32>
      %new = arith.addi %old, %one : i32
      memref.store %new, %counts[%i] : memref<64xi32>
    }
    pgpu.group.merge %before : i32
  } else {
    %two = arith.constant 2 : i32
    %half = arith.divsi %p, %two : i32
    %rank2 = pgpu.group.rank : index
    %me2 = arith.index_cast %rank2 : index to i32
    %below = arith.cmpi slt, %me2, %half : i32
    %s = pgpu.group.split %below -> (i32) {
      %x = func.call @halves(%lo, %v) : (i32, i32) -> i32
      pgpu.group.merge %x : i32
    } else {
      %next = arith.addi %lo, %half : i32
      %y = func.call @halves(%next, %me) : (i32, i32) -> i32
      pgpu.group.merge %y : i32
    }
    pgpu.group.merge %s : i32
  }
  return %r : i32
}

func.func @main() {
  %p = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  pgpu.spawn synchronous %p {
    %rank = pgpu.group.rank : index
    %me = arith.index_cast %rank : index to i32
    %r = func.call @halves(%zero, %me) : (i32, i32) -> i32
  }
  return
}

// -----

// Whether a block version splits (pgpu.block_splits, which the dispatch
// of pgpu-lower-groups reads): a function with no split of its own does
// not, one that calls a function that splits does.
// CHECK-LABEL: func.func @sum_only(
// CHECK-NOT: pgpu.block_splits
// CHECK-SAME: pgpu.block_version = "__block_sum_only"
func.func @sum_only(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %sums = memref.get_global @sums : memref<4xi32>
  %c0 = arith.constant 0 : index
  %before = pgpu.multiprefix add %v to %sums[%c0] : memref<4xi32>
  return %before : i32
}

// CHECK-LABEL: func.func @splits(
// CHECK-SAME: pgpu.block_splits
// CHECK-SAME: pgpu.block_version = "__block_splits"
func.func @splits(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %rank = pgpu.group.rank : index
  %c1 = arith.constant 1 : index
  %first = arith.cmpi ult, %rank, %c1 : index
  %r = pgpu.group.split %first -> (i32) {
    %x = func.call @sum_only(%v) : (i32) -> i32
    pgpu.group.merge %x : i32
  } else {
    pgpu.group.merge %v : i32
  }
  return %r : i32
}

// CHECK-LABEL: func.func @calls_splits(
// CHECK-SAME: pgpu.block_splits
// CHECK-SAME: pgpu.block_version = "__block_calls_splits"
func.func @calls_splits(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %r = func.call @splits(%v) : (i32) -> i32
  return %r : i32
}

memref.global "private" @sums : memref<4xi32> = dense<0>

func.func @main() {
  %p = arith.constant 4 : index
  %one = arith.constant 1 : i32
  pgpu.spawn synchronous %p {
    %a = func.call @sum_only(%one) : (i32) -> i32
    %b = func.call @calls_splits(%a) : (i32) -> i32
  }
  return
}

// -----

// No block version: a split on a private condition that is not a rank
// range (its sides are not ranges of threads) ...
// CHECK-LABEL: func.func @private_split
// CHECK-NOT: pgpu.block_version
// CHECK-NOT: __block_
func.func @private_split() attributes {pgpu.synchronous} {
  %rank = pgpu.group.rank : index
  %one = arith.constant 1 : index
  %second = arith.cmpi eq, %rank, %one : index
  pgpu.group.split %second {
    pgpu.group.merge
  }
  return
}

// -----

// ... a fork ...
// CHECK-LABEL: func.func @forks
// CHECK-NOT: pgpu.block_version
func.func @forks(%v: index) attributes {pgpu.synchronous} {
  %two = arith.constant 2 : index
  pgpu.group.fork %two id %v {
    pgpu.group.merge
  }
  return
}

// -----

// ... host-only code (printf), and a caller of such a function.
// CHECK-LABEL: func.func @prints
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @calls_prints
// CHECK-NOT: pgpu.block_version
func.func @prints(%v: i32) attributes {pgpu.synchronous} {
  pgpu.seq {
    pgpu.printf "%d\n"(%v) : i32
  }
  return
}

func.func @calls_prints(%v: i32) attributes {pgpu.synchronous} {
  func.call @prints(%v) : (i32) -> ()
  return
}

// -----

// ... a multiprefix of floats (the scan would add in another order than
// the host's collective) ...
memref.global "private" @total : memref<f32> = dense<0.0>
// CHECK-LABEL: func.func @float_sum
// CHECK-NOT: pgpu.block_version
func.func @float_sum(%v: f32) -> f32 attributes {pgpu.synchronous} {
  %total = memref.get_global @total : memref<f32>
  %r = pgpu.multiprefix add %v to %total[] : memref<f32>
  return %r : f32
}

// -----

// ... and synchronization under a loop on a private bound (a shrinking
// group).
memref.global "private" @out : memref<8xi32> = dense<0>
// CHECK-LABEL: func.func @shrinks
// CHECK-NOT: pgpu.block_version
func.func @shrinks(%n: index) attributes {pgpu.synchronous} {
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %out = memref.get_global @out : memref<8xi32>
  scf.for %i = %c0 to %rank step %c1 {
    %x = arith.index_cast %i : index to i32
    memref.store %x, %out[%c0] : memref<8xi32>
  }
  return
}

// -----

// A multiprefix in `farm` or `seq` is an atomic fetch-and-op in the block
// version too (as in pgpu-lower-synchronous): the function gets one.
memref.global "private" @next : memref<i32> = dense<0>

// CHECK-LABEL: func.func private @__block_tickets(
// CHECK-NOT: pgpu.multiprefix
// CHECK: %[[TICKET:.*]] = memref.atomic_rmw addi
// CHECK: scf.if
// CHECK-NEXT: memref.atomic_rmw maxs
// CHECK: return %[[TICKET]] : i32
// CHECK-LABEL: func.func @tickets(
// CHECK-SAME: pgpu.block_version = "__block_tickets"
func.func @tickets(%one: i32) -> i32 attributes {pgpu.synchronous} {
  %next = memref.get_global @next : memref<i32>
  %t = pgpu.farm -> (i32) {
    %ticket = pgpu.multiprefix add %one to %next[] : memref<i32>
    pgpu.yield %ticket : i32
  }
  pgpu.seq {
    %high = pgpu.multiprefix max %one to %next[] : memref<i32>
  }
  return %t : i32
}
