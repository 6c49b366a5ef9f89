// pgpu-lower-groups runs a synchronous function that has a block version
// (pgpu-block-groups) as one block spawn when its group fits a block (the
// group rank is always the position), and as host code otherwise.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-block-groups,pgpu-lower-groups)' | FileCheck %s --check-prefix=HOST
// The lowered program (the interpreter's block capacity is 1024, so the
// block version runs) prints what the synchronous one does.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-block-groups,pgpu-lower-groups)' -o %t.mlir
// RUN: pgpu run --interpret %t.mlir > %t.lowered
// RUN: pgpu run --interpret %s > %t.reference
// RUN: diff %t.reference %t.lowered
// RUN: FileCheck %s --check-prefix=OUT < %t.lowered
// OUT: 0: result
// OUT: 7: result
// The examples with recursive group functions, the same way: groups of
// more than 256 members (the pass's default max-threads) on the host path,
// smaller ones in a block; with max-threads=1024, bisection's whole group.
// RUN: pgpu emit --stage pgpu %repo_root/examples/fork/quicksort.fork > %t.qs.mlir
// RUN: pgpu-opt %t.qs.mlir --pass-pipeline='builtin.module(pgpu-inline-spmd,pgpu-block-groups,pgpu-lower-groups)' -o %t.qs.lowered.mlir
// RUN: FileCheck %s --check-prefix=QS < %t.qs.lowered.mlir
// QS: pgpu.spawn block
// QS: func.call @__block_qs
// RUN: pgpu run --interpret %t.qs.lowered.mlir -- 3000 1000 5 > %t.qs.out
// RUN: pgpu run --interpret %repo_root/test-suite/run/fork/ref/quicksort.c -- 3000 1000 5 > %t.qs.ref
// RUN: diff %t.qs.ref %t.qs.out
// RUN: pgpu emit --stage pgpu %repo_root/examples/fork/bisection.fork > %t.bis.mlir
// RUN: pgpu-opt %t.bis.mlir --pass-pipeline='builtin.module(pgpu-inline-spmd,pgpu-block-groups,pgpu-lower-groups)' -o %t.bis.lowered.mlir
// RUN: pgpu run --interpret %t.bis.lowered.mlir -- 4096 1024 > %t.bis.out
// RUN: pgpu run --interpret %repo_root/test-suite/run/fork/ref/bisection.c -- 4096 1024 > %t.bis.ref
// RUN: diff %t.bis.ref %t.bis.out
// RUN: pgpu-opt %t.bis.mlir --pass-pipeline='builtin.module(pgpu-inline-spmd,pgpu-block-groups{max-threads=1024},pgpu-lower-groups)' -o %t.bis.whole.mlir
// RUN: pgpu run --interpret %t.bis.whole.mlir -- 4096 1024 > %t.bis.out
// RUN: diff %t.bis.ref %t.bis.out
// RUN: pgpu run --interpret %t.bis.lowered.mlir -- 300 7 > %t.bis.out
// RUN: pgpu run --interpret %repo_root/test-suite/run/fork/ref/bisection.c -- 300 7 > %t.bis.ref
// RUN: diff %t.bis.ref %t.bis.out
// A block version that does not split runs whenever the group fits,
// whatever the program's processors. Its callee, defined first, is found.
// RUN: pgpu-opt %S/Inputs/block-group-no-split.mlir --pass-pipeline='builtin.module(pgpu-block-groups,pgpu-lower-groups)' -o %t.nosplit.mlir
// RUN: FileCheck %s --check-prefix=NOSPLIT < %t.nosplit.mlir
// RUN: pgpu run --interpret %t.nosplit.mlir | FileCheck %s --check-prefix=NOSPLIT-OUT
// NOSPLIT-LABEL: func.func @__group_twice(
// NOSPLIT-SAME: %[[SIZE:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index,
// NOSPLIT: %[[SOME:.*]] = arith.cmpi ugt, %[[SIZE]], %{{.*}} : index
// NOSPLIT: %[[FITS:.*]] = arith.cmpi ule, %[[SIZE]], %{{.*}} : index
// NOSPLIT: %[[BOTH:.*]] = arith.andi %[[SOME]], %[[FITS]] : i1
// NOSPLIT-NOT: pgpu.multiprocessors
// NOSPLIT: scf.if %[[BOTH]] {
// NOSPLIT: pgpu.spawn block
// NOSPLIT: func.call @__block_twice(
// NOSPLIT: } else {
// NOSPLIT: func.call @__group_sum_only(
// NOSPLIT-OUT: 0: 6
// NOSPLIT-OUT-NEXT: 1: 6
// NOSPLIT-OUT-NEXT: 2: 6
// NOSPLIT-OUT-NEXT: 3: 7

// The host version runs a group of 1 ..= capacity members as one block
// spawn: thread = rank, the whole range, slot
// 2 * size, one scratch list per scan type. The block version splits, so
// the outermost group must also have at least 4 members (warp schedulers)
// per multiprocessor (the interpreter is one multiprocessor).
// HOST-LABEL: func.func @__group_halves(
// HOST-SAME: %[[SIZE:[^:]*]]: index, %[[ID:[^:]*]]: index, %[[WHOLE:[^:]*]]: index, %[[LO:[^:]*]]: i32, %[[VS:[^:]*]]: memref<?xi32>, %[[RESULTS:[^:]*]]: memref<?xi32>)
// HOST: %[[CAPACITY:.*]] = pgpu.block_capacity : index
// HOST: %[[MAX:.*]] = arith.constant 256 : index
// HOST: %[[LIMIT:.*]] = arith.minui %[[CAPACITY]], %[[MAX]] : index
// HOST: %[[SOME:.*]] = arith.cmpi ugt, %[[SIZE]], %[[ZERO:.*]] : index
// HOST: %[[FITS:.*]] = arith.cmpi ule, %[[SIZE]], %[[LIMIT]] : index
// HOST: %[[BOTH:.*]] = arith.andi %[[SOME]], %[[FITS]] : i1
// HOST: %[[SMS:.*]] = pgpu.multiprocessors : index
// HOST: %[[FOUR:.*]] = arith.constant 4 : index
// HOST: %[[SCHEDULERS:.*]] = arith.muli %[[SMS]], %[[FOUR]] : index
// HOST: %[[CROWDED:.*]] = arith.cmpi uge, %[[WHOLE]], %[[SCHEDULERS]] : index
// HOST: %[[BLOCK:.*]] = arith.andi %[[BOTH]], %[[CROWDED]] : i1
// HOST: scf.if %[[BLOCK]] {
// HOST: %[[SCRATCH:.*]] = memref.alloc(%[[SIZE]]) : memref<?xi32>
// HOST: %[[WHOLE:.*]] = arith.muli %[[SIZE]], %{{.*}} : index
// HOST: pgpu.spawn block %[[SIZE]] {
// HOST: %[[T:.*]] = pgpu.rank : index
// HOST: %[[V:.*]] = memref.load %[[VS]][%[[T]]]
// HOST: %[[CLAIM:.*]] = memref.get_global @__crcw_claim_cells
// HOST: %[[CELLS:.*]] = memref.get_global @cells
// HOST: %[[COUNTS:.*]] = memref.get_global @counts
// HOST: %[[R:.*]] = func.call @__block_halves(%[[LO]], %[[V]], %[[ID]], %[[T]], %[[ZERO]], %[[SIZE]], %[[WHOLE]], %[[SCRATCH]], %[[CLAIM]], %[[CELLS]], %[[COUNTS]])
// HOST: memref.store %[[R]], %[[RESULTS]][%[[T]]]
// HOST: }
// HOST: memref.dealloc %[[SCRATCH]]
// HOST: } else {
// HOST: pgpu.spawn synchronous
// HOST: }
// HOST: return
memref.global "private" @cells : memref<64xi32> = dense<0>
memref.global "private" @counts : memref<64xi32> = dense<0>

// The group queries read the context.
// The multiprefix with used results: a scan in the scratch list between
// three barriers of the group's range; the last rank stores the total.
// The multiprefix nobody reads: an atomic update, between barriers.
// The concurrent write: the claim protocol on the claim global.
// The split on a uniform condition: a branch of the whole range; its
// `seq` runs on the first member.
// The split on the rank: below the threshold (the bound clamped to the
// group) and from it, each side with its own slot when both are
// non-empty.

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

memref.global "private" @results : memref<8xi32> = dense<0>

// Eight members (the block path) and, with all of them, the cells.
func.func @main() {
  %p = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %results = memref.get_global @results : memref<8xi32>
  pgpu.spawn synchronous %p {
    %rank = pgpu.group.rank : index
    %me = arith.index_cast %rank : index to i32
    %r = func.call @halves(%zero, %me) : (i32, i32) -> i32
    memref.store %r, %results[%rank] : memref<8xi32>
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cells = memref.get_global @cells : memref<64xi32>
  %counts = memref.get_global @counts : memref<64xi32>
  scf.for %i = %c0 to %c8 step %c1 {
    %r = memref.load %results[%i] : memref<8xi32>
    %c = memref.load %cells[%i] : memref<64xi32>
    %n = memref.load %counts[%i] : memref<64xi32>
    pgpu.printf "%d: result %d cell %d count %d\n"(%i, %r, %c, %n) : index, i32, i32, i32
  }
  return
}

