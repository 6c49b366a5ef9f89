// Thread primitives on x = [5, 3, 8, 1, 9, 2]: sortby, split, fork, kill,
// a rank-reassigning barrier with set_oldrank, thread.get and thread.put.
// RUN: pgpu run --interpret %s | FileCheck %s

memref.global "private" @xs : memref<6xi32> = dense<[5, 3, 8, 1, 9, 2]>

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %xs = memref.get_global @xs : memref<6xi32>
  // sortby: ranks follow the keys; private values move with the thread.
  // CHECK-LABEL: sortby: rank 0 x 1 oldrank 3
  // CHECK-NEXT: sortby: rank 1 x 2 oldrank 5
  // CHECK-NEXT: sortby: rank 2 x 3 oldrank 1
  // CHECK-NEXT: sortby: rank 3 x 5 oldrank 0
  // CHECK-NEXT: sortby: rank 4 x 8 oldrank 2
  // CHECK-NEXT: sortby: rank 5 x 9 oldrank 4
  // split: even x (side false) first, stable.
  // CHECK-NEXT: split: rank 0 x 2 oldrank 1
  // CHECK-NEXT: split: rank 1 x 8 oldrank 4
  // CHECK-NEXT: split: rank 2 x 1 oldrank 0
  // CHECK-NEXT: split: rank 3 x 3 oldrank 2
  // CHECK-NEXT: split: rank 4 x 5 oldrank 3
  // CHECK-NEXT: split: rank 5 x 9 oldrank 5
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %x = memref.load %xs[%r] : memref<6xi32>
    pgpu.thread.sortby %x : i32
    %r2 = pgpu.rank : index
    %o2 = pgpu.oldrank : index
    pgpu.printf "sortby: rank %d x %d oldrank %d\n"(%r2, %x, %o2) : index, i32, index
    %one = arith.constant 1 : i32
    %low = arith.andi %x, %one : i32
    %odd = arith.trunci %low : i32 to i1
    pgpu.thread.split %odd
    %r3 = pgpu.rank : index
    %o3 = pgpu.oldrank : index
    pgpu.printf "split: rank %d x %d oldrank %d\n"(%r3, %x, %o3) : index, i32, index
  }
  // fork: thread r forks r % 3 children; kill: children with id 1 die.
  // CHECK-NEXT: fork: size 6 rank 0 parent 1 x 3 child 0
  // CHECK-NEXT: fork: size 6 rank 1 parent 2 x 8 child 0
  // CHECK-NEXT: fork: size 6 rank 2 parent 2 x 8 child 1
  // CHECK-NEXT: fork: size 6 rank 3 parent 4 x 9 child 0
  // CHECK-NEXT: fork: size 6 rank 4 parent 5 x 2 child 0
  // CHECK-NEXT: fork: size 6 rank 5 parent 5 x 2 child 1
  // CHECK-NEXT: kill: size 4 rank 0 oldrank 0 x 3
  // CHECK-NEXT: kill: size 4 rank 1 oldrank 1 x 8
  // CHECK-NEXT: kill: size 4 rank 2 oldrank 3 x 9
  // CHECK-NEXT: kill: size 4 rank 3 oldrank 4 x 2
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %x = memref.load %xs[%r] : memref<6xi32>
    %c3 = arith.constant 3 : index
    %k = arith.remui %r, %c3 : index
    %child = pgpu.thread.fork %k : index
    %n = pgpu.size : index
    %rf = pgpu.rank : index
    %of = pgpu.oldrank : index
    pgpu.printf "fork: size %d rank %d parent %d x %d child %d\n"(%n, %rf, %of, %x, %child) : index, index, index, i32, index
    %die = arith.cmpi eq, %child, %c1 : index
    pgpu.thread.kill %die
    %nk = pgpu.size : index
    %rk = pgpu.rank : index
    %ok = pgpu.oldrank : index
    pgpu.printf "kill: size %d rank %d oldrank %d x %d\n"(%nk, %rk, %ok, %x) : index, index, index, i32
  }
  // A rank-reassigning barrier: thread r continues the context of the
  // thread that had rank 5 - r (it states so with set_oldrank).
  // CHECK-NEXT: reassigned: rank 0 oldrank 5 x 2
  // CHECK-NEXT: reassigned: rank 1 oldrank 4 x 9
  // CHECK-NEXT: reassigned: rank 5 oldrank 0 x 5
  // thread.get reads the previous superstep's value of another thread;
  // thread.put's value (put to the previous rank) arrives after the next
  // barrier.
  // CHECK-NEXT: get: rank 0 prev 2 got 3
  // CHECK-NEXT: get: rank 1 prev 5 got 8
  // CHECK-NEXT: get: rank 2 prev 3 got 1
  // CHECK-NEXT: get: rank 3 prev 8 got 9
  // CHECK-NEXT: get: rank 4 prev 1 got 2
  // CHECK-NEXT: get: rank 5 prev 9 got 5
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %x = memref.load %xs[%r] : memref<6xi32>
    pgpu.barrier rank_reassigned
    %rr = pgpu.rank : index
    %n = pgpu.size : index
    %n1 = arith.subi %n, %c1 : index
    %old = arith.subi %n1, %rr : index
    pgpu.set_oldrank %old
    %c2 = arith.constant 2 : index
    %show = arith.cmpi ult, %rr, %c2 : index
    %last = arith.cmpi eq, %rr, %n1 : index
    %s = arith.ori %show, %last : i1
    scf.if %s {
      %o = pgpu.oldrank : index
      pgpu.printf "reassigned: rank %d oldrank %d x %d\n"(%rr, %o, %x) : index, index, i32
    }
    pgpu.barrier
    %y = memref.load %xs[%rr] : memref<6xi32>
    pgpu.barrier
    %rp = arith.addi %rr, %n1 : index
    %prev = arith.remui %rp, %n : index
    %got = pgpu.thread.get %prev, %y : i32
    %p = pgpu.thread.put %prev, %y, %y : i32
    pgpu.barrier
    pgpu.printf "get: rank %d prev %d got %d\n"(%rr, %got, %p) : index, i32, i32
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
