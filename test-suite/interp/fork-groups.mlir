// Fork's synchronous groups: lock-step PRAM execution (reads of a step see
// memory before the step; concurrent writes: lowest rank wins), group
// splitting by a private condition, fork (group ranks renumbered in the
// parent's order, as at a split), seq, farm and multiprefix.
// RUN: pgpu run --interpret %s | FileCheck %s

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<4xindex>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %i, %a[%i] : memref<4xindex>
  }
  %win_cell = memref.alloc() : memref<1xindex>
  %ctr = memref.alloc() : memref<i32>
  %zero = arith.constant 0 : i32
  memref.store %zero, %ctr[] : memref<i32>
  // CHECK-LABEL: rotated: 1 2 3 0 winner 10
  // CHECK-NEXT: split: rank 0 then group 0/2 id 0
  // CHECK-NEXT: split: rank 1 then group 1/2 id 0
  // CHECK-NEXT: split: rank 2 else group 0/2 id 0
  // CHECK-NEXT: split: rank 3 else group 1/2 id 0
  // CHECK-NEXT: merged: rank 0 got 100 group 0/4
  // CHECK-NEXT: merged: rank 1 got 101 group 1/4
  // CHECK-NEXT: merged: rank 2 got 200 group 2/4
  // CHECK-NEXT: merged: rank 3 got 201 group 3/4
  // CHECK-NEXT: fork: rank 0 id 0 group rank 0 size 2
  // CHECK-NEXT: fork: rank 2 id 0 group rank 1 size 2
  // CHECK-NEXT: fork: rank 1 id 1 group rank 0 size 2
  // CHECK-NEXT: fork: rank 3 id 1 group rank 1 size 2
  // CHECK-NEXT: seq: once, group size 4
  // CHECK-NEXT: farm: rank 0 ticket 0 sees 1
  // CHECK-NEXT: farm: rank 1 ticket 1 sees 2
  // CHECK-NEXT: farm: rank 2 ticket 2 sees 3
  // CHECK-NEXT: farm: rank 3 ticket 3 sees 0
  pgpu.spawn synchronous %c4 {
    %me = pgpu.group.rank : index
    %n = pgpu.group.size : index
    %m1 = arith.addi %me, %c1 : index
    %next = arith.remui %m1, %n : index
    %v = memref.load %a[%next] : memref<4xindex>
    memref.store %v, %a[%me] : memref<4xindex>
    %c10 = arith.constant 10 : index
    %mine = arith.addi %me, %c10 : index
    memref.store %mine, %win_cell[%c0] : memref<1xindex>
    %is0 = arith.cmpi eq, %me, %c0 : index
    scf.if %is0 {
      %x0 = memref.load %a[%c0] : memref<4xindex>
      %x1 = memref.load %a[%c1] : memref<4xindex>
      %x2 = memref.load %a[%c2] : memref<4xindex>
      %c3 = arith.constant 3 : index
      %x3 = memref.load %a[%c3] : memref<4xindex>
      %win = memref.load %win_cell[%c0] : memref<1xindex>
      pgpu.printf "rotated: %d %d %d %d winner %d\n"(%x0, %x1, %x2, %x3, %win) : index, index, index, index, index
    }
    %low = arith.cmpi ult, %me, %c2 : index
    %r = pgpu.group.split %low -> (index) {
      %sub = pgpu.group.rank : index
      %ss = pgpu.group.size : index
      %id = pgpu.group.id : index
      pgpu.printf "split: rank %d then group %d/%d id %d\n"(%me, %sub, %ss, %id) : index, index, index, index
      %c100 = arith.constant 100 : index
      %t = arith.addi %c100, %sub : index
      pgpu.group.merge %t : index
    } else {
      %sub = pgpu.group.rank : index
      %ss = pgpu.group.size : index
      %id = pgpu.group.id : index
      pgpu.printf "split: rank %d else group %d/%d id %d\n"(%me, %sub, %ss, %id) : index, index, index, index
      %c200 = arith.constant 200 : index
      %t = arith.addi %c200, %sub : index
      pgpu.group.merge %t : index
    }
    %back = pgpu.group.rank : index
    %bs = pgpu.group.size : index
    pgpu.printf "merged: rank %d got %d group %d/%d\n"(%me, %r, %back, %bs) : index, index, index, index
    %e1 = arith.remui %me, %c2 : index
    pgpu.group.fork %c2 id %e1 {
      %g = pgpu.group.id : index
      %gr = pgpu.group.rank : index
      %gs = pgpu.group.size : index
      pgpu.printf "fork: rank %d id %d group rank %d size %d\n"(%me, %g, %gr, %gs) : index, index, index, index
    }
    pgpu.seq {
      %s = pgpu.group.size : index
      pgpu.printf "seq: once, group size %d\n"(%s) : index
    }
    %one = arith.constant 1 : i32
    %ticket, %seen = pgpu.farm -> (i32, index) {
      %t = pgpu.multiprefix add %one to %ctr[] : memref<i32>
      %s = memref.load %a[%me] : memref<4xindex>
      pgpu.yield %t, %s : i32, index
    }
    pgpu.printf "farm: rank %d ticket %d sees %d\n"(%me, %ticket, %seen) : index, i32, index
  }
  %z = arith.constant 0 : i32
  return %z : i32
}
