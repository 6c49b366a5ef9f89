// Collectives of pgpu.spawn on x = [5, 3, 8, 1, 9, 2] (expected values
// computed by hand; see each CHECK).
// RUN: pgpu run --interpret %s | FileCheck %s

memref.global "private" @xs : memref<6xi32> = dense<[5, 3, 8, 1, 9, 2]>

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %xs = memref.get_global @xs : memref<6xi32>
  %list = memref.alloc(%c12) : memref<?xi32>
  %ctr = memref.alloc() : memref<i32>
  %zero = arith.constant 0 : i32
  memref.store %zero, %ctr[] : memref<i32>
  // CHECK-LABEL: reduce: add 28 mul 2160 min 1 max 9 umax 9 and 0 or 15 xor 4
  // CHECK-NEXT: rank 0: x 5 excl 0 of 28, incl max 5 of 9, sort_idx 3, ticket 0
  // CHECK-NEXT: rank 1: x 3 excl 5 of 28, incl max 5 of 9, sort_idx 5, ticket 5
  // CHECK-NEXT: rank 2: x 8 excl 8 of 28, incl max 8 of 9, sort_idx 1, ticket 8
  // CHECK-NEXT: rank 3: x 1 excl 16 of 28, incl max 8 of 9, sort_idx 0, ticket 16
  // CHECK-NEXT: rank 4: x 9 excl 17 of 28, incl max 9 of 9, sort_idx 2, ticket 17
  // CHECK-NEXT: rank 5: x 2 excl 26 of 28, incl max 9 of 9, sort_idx 4, ticket 26
  // CHECK-NEXT: compact 3 split 9
  // CHECK-NEXT: list: 5 8 9 3 1 2 5 8 9
  // CHECK-NEXT: float sum 15.0 min -1.0
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %ri = arith.index_cast %r : index to i32
    %x = memref.load %xs[%r] : memref<6xi32>
    %add = pgpu.reduce add %x : i32
    %mul = pgpu.reduce mul %x : i32
    %min = pgpu.reduce min %x : i32
    %max = pgpu.reduce max %x : i32
    %umax = pgpu.reduce umax %x : i32
    %and = pgpu.reduce and %x : i32
    %or = pgpu.reduce or %x : i32
    %xor = pgpu.reduce xor %x : i32
    %is0 = arith.cmpi eq, %r, %c0 : index
    scf.if %is0 {
      pgpu.printf "reduce: add %d mul %d min %d max %d umax %d and %d or %d xor %d\n"(%add, %mul, %min, %max, %umax, %and, %or, %xor) : i32, i32, i32, i32, i32, i32, i32, i32
    }
    %excl, %total = pgpu.scan add %x : i32
    %incl, %top = pgpu.scan max %x inclusive : i32
    %idx = pgpu.sort_idx %x : i32
    %idxi = arith.index_cast %idx : index to i32
    %ticket = pgpu.multiprefix add %x to %ctr[] : memref<i32>
    pgpu.printf "rank %d: x %d excl %d of %d, incl max %d of %d, sort_idx %d, ticket %d\n"(%ri, %x, %excl, %total, %incl, %top, %idxi, %ticket) : i32, i32, i32, i32, i32, i32, i32, i32
    pgpu.barrier
    %four = arith.constant 4 : i32
    %big = arith.cmpi sgt, %x, %four : i32
    %len = pgpu.compact %x if %big into %list at %c0 : memref<?xi32>
    %len2 = pgpu.split %x by %big into %list at %len : memref<?xi32>
    scf.if %is0 {
      pgpu.printf "compact %d split %d\n"(%len, %len2) : index, index
    }
    // Floats: sum of (x - 3) / 2 and the minimum.
    %xf = arith.sitofp %x : i32 to f64
    %three = arith.constant 3.0 : f64
    %two = arith.constant 2.0 : f64
    %d = arith.subf %xf, %three : f64
    %h = arith.divf %d, %two : f64
    %fs = pgpu.reduce add %xf : f64
    %fm = pgpu.reduce min %h : f64
    pgpu.barrier
    scf.if %is0 {
      pgpu.printf "list:"
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %len2 step %c1 {
        %v = memref.load %list[%i] : memref<?xi32>
        pgpu.printf " %d"(%v) : i32
      }
      pgpu.printf "\n"
      %c13 = arith.constant 13.0 : f64
      %fs2 = arith.subf %fs, %c13 : f64
      pgpu.printf "float sum %.1f min %.1f\n"(%fs2, %fm) : f64, f64
    }
  }
  // pgpu.par: the branches' collectives and barriers are aligned.
  // CHECK-NEXT: par: rank 0 sum 28 excl 0
  // CHECK-NEXT: par: rank 5 sum 28 excl 26
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %x = memref.load %xs[%r] : memref<6xi32>
    %s:2 = pgpu.par -> (i32, i32) {
      %sum = pgpu.reduce add %x : i32
      pgpu.yield %sum : i32
    }, {
      pgpu.barrier
      %e, %t = pgpu.scan add %x : i32
      pgpu.yield %e : i32
    }
    %ri = arith.index_cast %r : index to i32
    %c5 = arith.constant 5 : index
    %first = arith.cmpi eq, %r, %c0 : index
    %last = arith.cmpi eq, %r, %c5 : index
    %edge = arith.ori %first, %last : i1
    scf.if %edge {
      pgpu.printf "par: rank %d sum %d excl %d\n"(%ri, %s#0, %s#1) : i32, i32, i32
    }
  }
  // Both par branches call one inline function: its reduce is reached by
  // two fibers of each thread, two instances resolved on their own.
  // CHECK-NEXT: par call: rank 0 sum 28 doubled 56
  // CHECK-NEXT: par call: rank 5 sum 28 doubled 56
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %x = memref.load %xs[%r] : memref<6xi32>
    %x2 = arith.addi %x, %x : i32
    %s:2 = pgpu.par -> (i32, i32) {
      %a = func.call @sum_all(%x) : (i32) -> i32
      pgpu.yield %a : i32
    }, {
      %b = func.call @sum_all(%x2) : (i32) -> i32
      pgpu.yield %b : i32
    }
    %ri = arith.index_cast %r : index to i32
    %c5 = arith.constant 5 : index
    %first = arith.cmpi eq, %r, %c0 : index
    %last = arith.cmpi eq, %r, %c5 : index
    %edge = arith.ori %first, %last : i1
    scf.if %edge {
      pgpu.printf "par call: rank %d sum %d doubled %d\n"(%ri, %s#0, %s#1) : i32, i32, i32
    }
  }
  // pgpu.require runs once; its list is shared by all threads.
  // CHECK-NEXT: require: allocating 6
  // CHECK-NEXT: require: rank 0 reads 4
  // CHECK-NEXT: require: rank 1 reads 18
  // CHECK-NEXT: require: rank 5 reads 10
  pgpu.spawn %c6 {
    %r = pgpu.rank : index
    %x = memref.load %xs[%r] : memref<6xi32>
    %n = pgpu.size : index
    %tmp = pgpu.require -> (memref<?xi32>) {
      pgpu.printf "require: allocating %d\n"(%n) : index
      %l = pgpu.dtempnew [%n] : memref<?xi32>
      pgpu.yield %l : memref<?xi32>
    }
    %x2 = arith.addi %x, %x : i32
    memref.store %x2, %tmp[%r] : memref<?xi32>
    pgpu.barrier
    %c1 = arith.constant 1 : index
    %n1 = arith.subi %n, %c1 : index
    %mirror = arith.subi %n1, %r : index
    %y = memref.load %tmp[%mirror] : memref<?xi32>
    %ri = arith.index_cast %r : index to i32
    %c2 = arith.constant 2 : index
    %show = arith.cmpi ult, %r, %c2 : index
    %lastr = arith.cmpi eq, %r, %n1 : index
    %s = arith.ori %show, %lastr : i1
    scf.if %s {
      pgpu.printf "require: rank %d reads %d\n"(%ri, %y) : i32, i32
    }
  }
  pgpu.dtempfree
  memref.dealloc %list : memref<?xi32>
  return %zero : i32
}

func.func @sum_all(%v: i32) -> i32 attributes {pgpu.spmd_inline} {
  %n = pgpu.size : index
  %l = pgpu.require -> (memref<?xi32>) {
    %t = pgpu.dtempnew [%n] : memref<?xi32>
    pgpu.yield %t : memref<?xi32>
  }
  %s = pgpu.reduce add %v : i32
  pgpu.barrier
  return %s : i32
}
