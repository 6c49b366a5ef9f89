// The host-level list ops (pgpu.list.*) on small lists; the expected values
// are computed by hand (see each CHECK). xs = [5, -3, 8, 1, -9, 2].
// RUN: pgpu run --interpret %s | FileCheck %s
// Run-time errors, each at the op's location:
// RUN: %expect-exit 1 pgpu run --interpret --entry list_oob %s 2>&1 | FileCheck %s --check-prefix=OOB
// RUN: %expect-exit 1 pgpu run --interpret --entry list_uninit %s 2>&1 | FileCheck %s --check-prefix=UNINIT
// RUN: %expect-exit 1 pgpu run --interpret --entry list_poison_flag %s 2>&1 | FileCheck %s --check-prefix=POISON
// RUN: %expect-exit 1 pgpu run --interpret --entry list_overlap %s 2>&1 | FileCheck %s --check-prefix=OVERLAP
// RUN: %expect-exit 1 pgpu run --interpret --entry list_require_race %s 2>&1 | FileCheck %s --check-prefix=RACE

memref.global "private" @xs : memref<6xi32> = dense<[5, -3, 8, 1, -9, 2]>
memref.global "private" @fs : memref<3xf64> = dense<[1.5, -2.0, 4.25]>
memref.global "private" @keys : memref<6xi32> = dense<[3, -1, 3, 0, -1, 7]>
memref.global "private" @fkeys : memref<5xf32> = dense<[2.5, -0.0, 1.0, 0.0, -3.5]>
memref.global "private" @counts : memref<5xi32> = dense<[2, 0, 3, -1, 1]>

func.func @print_i32(%l: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %l[%i] : memref<?xi32>
    pgpu.printf " %d"(%v) : i32
  }
  pgpu.printf "\n"
  return
}

func.func @print_index(%l: memref<?xindex>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %l[%i] : memref<?xindex>
    pgpu.printf " %d"(%v) : index
  }
  pgpu.printf "\n"
  return
}

// The flags x > 0 of xs: [1, 0, 1, 1, 0, 1].
func.func @positive(%xs: memref<?xi32>, %n: index) -> memref<?xi1> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %flags = memref.alloc(%n) : memref<?xi1>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %xs[%i] : memref<?xi32>
    %f = arith.cmpi sgt, %v, %zero : i32
    memref.store %f, %flags[%i] : memref<?xi1>
  }
  return %flags : memref<?xi1>
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %xs6 = memref.get_global @xs : memref<6xi32>
  %xs = memref.cast %xs6 : memref<6xi32> to memref<?xi32>

  // add 5-3+8+1-9+2 = 4; mul 5*-3*8*1*-9*2 = 2160; min -9; max 8;
  // umin: -3 and -9 are huge unsigned, so 1; umax 0xfffffffd = -3;
  // and: 5 & 8 = 0; or: -3 | -9 = -1; xor: 5^-3 = -8, ^8 = -16, ^1 = -15,
  // ^-9 = 6, ^2 = 4.
  // CHECK-LABEL: reduce: add 4 mul 2160 min -9 max 8 umin 1 umax -3 and 0 or -1 xor 4
  %add = pgpu.list.reduce add %xs[%c6] : memref<?xi32> -> i32
  %mul = pgpu.list.reduce mul %xs[%c6] : memref<?xi32> -> i32
  %min = pgpu.list.reduce min %xs[%c6] : memref<?xi32> -> i32
  %max = pgpu.list.reduce max %xs[%c6] : memref<?xi32> -> i32
  %umin = pgpu.list.reduce umin %xs[%c6] : memref<?xi32> -> i32
  %umax = pgpu.list.reduce umax %xs[%c6] : memref<?xi32> -> i32
  %and = pgpu.list.reduce and %xs[%c6] : memref<?xi32> -> i32
  %or = pgpu.list.reduce or %xs[%c6] : memref<?xi32> -> i32
  %xor = pgpu.list.reduce xor %xs[%c6] : memref<?xi32> -> i32
  pgpu.printf "reduce: add %d mul %d min %d max %d umin %d umax %d and %d or %d xor %d\n"(%add, %mul, %min, %max, %umin, %umax, %and, %or, %xor) : i32, i32, i32, i32, i32, i32, i32, i32, i32

  // n = 0: the identities. A prefix: 5-3+8 = 10. The frontend's strided
  // view xs[1 .. 5): -3+8+1-9 = -3.
  // CHECK-NEXT: empty: add 0 mul 1 min 2147483647 max -2147483648 and -1; prefix 10; view -3
  %e_add = pgpu.list.reduce add %xs[%c0] : memref<?xi32> -> i32
  %e_mul = pgpu.list.reduce mul %xs[%c0] : memref<?xi32> -> i32
  %e_min = pgpu.list.reduce min %xs[%c0] : memref<?xi32> -> i32
  %e_max = pgpu.list.reduce max %xs[%c0] : memref<?xi32> -> i32
  %e_and = pgpu.list.reduce and %xs[%c0] : memref<?xi32> -> i32
  %prefix = pgpu.list.reduce add %xs[%c3] : memref<?xi32> -> i32
  %view = memref.subview %xs[%c1] [%c4] [1] : memref<?xi32> to memref<?xi32, strided<[1], offset: ?>>
  %v_add = pgpu.list.reduce add %view[%c4] : memref<?xi32, strided<[1], offset: ?>> -> i32
  pgpu.printf "empty: add %d mul %d min %d max %d and %d; prefix %d; view %d\n"(%e_add, %e_mul, %e_min, %e_max, %e_and, %prefix, %v_add) : i32, i32, i32, i32, i32, i32, i32

  // fs = [1.5, -2.0, 4.25]: add 3.75, mul -12.75, min -2, max 4.25; n = 0:
  // min +inf, max -inf.
  // CHECK-NEXT: floats: add 3.75 mul -12.75 min -2.00 max 4.25 empty min inf max -inf
  %fs3 = memref.get_global @fs : memref<3xf64>
  %fs = memref.cast %fs3 : memref<3xf64> to memref<?xf64>
  %f_add = pgpu.list.reduce add %fs[%c3] : memref<?xf64> -> f64
  %f_mul = pgpu.list.reduce mul %fs[%c3] : memref<?xf64> -> f64
  %f_min = pgpu.list.reduce min %fs[%c3] : memref<?xf64> -> f64
  %f_max = pgpu.list.reduce max %fs[%c3] : memref<?xf64> -> f64
  %f_emin = pgpu.list.reduce min %fs[%c0] : memref<?xf64> -> f64
  %f_emax = pgpu.list.reduce max %fs[%c0] : memref<?xf64> -> f64
  pgpu.printf "floats: add %.2f mul %.2f min %.2f max %.2f empty min %f max %f\n"(%f_add, %f_mul, %f_min, %f_max, %f_emin, %f_emax) : f64, f64, f64, f64, f64, f64

  // Exclusive add into another list: [0, 5, 2, 10, 11, 2], total 4.
  // CHECK-NEXT: scan add total 4: 0 5 2 10 11 2
  %scanned = memref.alloc(%c6) : memref<?xi32>
  %s_total = pgpu.list.scan add %xs, %scanned[%c6] : memref<?xi32>, memref<?xi32> -> i32
  pgpu.printf "scan add total %d:"(%s_total) : i32
  func.call @print_i32(%scanned, %c6) : (memref<?xi32>, index) -> ()

  // Inclusive max in place on a copy: [5, 5, 8, 8, 8, 8], total 8.
  // CHECK-NEXT: scan max inclusive in place total 8: 5 5 8 8 8 8
  %ys = memref.alloc(%c6) : memref<?xi32>
  memref.copy %xs, %ys : memref<?xi32> to memref<?xi32>
  %m_total = pgpu.list.scan max %ys, %ys[%c6] inclusive : memref<?xi32>, memref<?xi32> -> i32
  pgpu.printf "scan max inclusive in place total %d:"(%m_total) : i32
  func.call @print_i32(%ys, %c6) : (memref<?xi32>, index) -> ()

  // Exclusive add in place on another copy: as above; n = 0 writes nothing
  // and returns the identity (mul: 1).
  // CHECK-NEXT: scan add in place total 4: 0 5 2 10 11 2
  // CHECK-NEXT: scan mul empty total 1: 0 5
  %zs = memref.alloc(%c6) : memref<?xi32>
  memref.copy %xs, %zs : memref<?xi32> to memref<?xi32>
  %z_total = pgpu.list.scan add %zs, %zs[%c6] : memref<?xi32>, memref<?xi32> -> i32
  pgpu.printf "scan add in place total %d:"(%z_total) : i32
  func.call @print_i32(%zs, %c6) : (memref<?xi32>, index) -> ()
  %e_total = pgpu.list.scan mul %xs, %zs[%c0] : memref<?xi32>, memref<?xi32> -> i32
  pgpu.printf "scan mul empty total %d:"(%e_total) : i32
  func.call @print_i32(%zs, %c2) : (memref<?xi32>, index) -> ()

  // keys = [3, -1, 3, 0, -1, 7]: -1 at 1 and 4, 0 at 3, 3 at 0 and 2, 7 at
  // 5; ties keep index order: [1, 4, 3, 0, 2, 5].
  // CHECK-NEXT: sort_idx: 1 4 3 0 2 5
  %keys6 = memref.get_global @keys : memref<6xi32>
  %keys = memref.cast %keys6 : memref<6xi32> to memref<?xi32>
  %order = memref.alloc(%c6) : memref<?xindex>
  pgpu.list.sort_idx %keys, %order[%c6] : memref<?xi32>, memref<?xindex>
  pgpu.printf "sort_idx:"
  func.call @print_index(%order, %c6) : (memref<?xindex>, index) -> ()

  // fkeys = [2.5, -0.0, 1.0, 0.0, -3.5]: -3.5 (4), then -0.0 (1) and 0.0
  // (3) compare equal and keep index order, 1.0 (2), 2.5 (0).
  // CHECK-NEXT: sort_idx floats: 4 1 3 2 0
  %fkeys5 = memref.get_global @fkeys : memref<5xf32>
  %fkeys = memref.cast %fkeys5 : memref<5xf32> to memref<?xf32>
  pgpu.list.sort_idx %fkeys, %order[%c5] : memref<?xf32>, memref<?xindex>
  pgpu.printf "sort_idx floats:"
  func.call @print_index(%order, %c5) : (memref<?xindex>, index) -> ()

  // [1.0, NaN, -inf, -NaN, 0.5]: -NaN (3) first, -inf (2), 0.5 (4), 1.0
  // (0), NaN (1) last. n = 0 leaves the list as it was.
  // CHECK-NEXT: sort_idx nan: 3 2 4 0 1
  // CHECK-NEXT: sort_idx empty: 3 2 4 0 1
  %nk = memref.alloc(%c5) : memref<?xf64>
  %one = arith.constant 1.0 : f64
  %nan = arith.constant 0x7FF8000000000000 : f64
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %nnan = arith.constant 0xFFF8000000000000 : f64
  %half = arith.constant 0.5 : f64
  memref.store %one, %nk[%c0] : memref<?xf64>
  memref.store %nan, %nk[%c1] : memref<?xf64>
  memref.store %ninf, %nk[%c2] : memref<?xf64>
  memref.store %nnan, %nk[%c3] : memref<?xf64>
  memref.store %half, %nk[%c4] : memref<?xf64>
  pgpu.list.sort_idx %nk, %order[%c5] : memref<?xf64>, memref<?xindex>
  pgpu.printf "sort_idx nan:"
  func.call @print_index(%order, %c5) : (memref<?xindex>, index) -> ()
  pgpu.list.sort_idx %nk, %order[%c0] : memref<?xf64>, memref<?xindex>
  pgpu.printf "sort_idx empty:"
  func.call @print_index(%order, %c5) : (memref<?xindex>, index) -> ()

  // The list holds [100, 101]; compact appends the positive xs at base 2:
  // 5 8 1 2, length 6; split appends the negative ones, then the positive
  // ones at base 6: -3 -9 5 8 1 2, length 12. n = 0 returns the base.
  // CHECK-NEXT: compact 6 split 12 empty 3 4: 100 101 5 8 1 2 -3 -9 5 8 1 2
  %flags = func.call @positive(%xs, %c6) : (memref<?xi32>, index) -> memref<?xi1>
  %list = memref.alloc(%c12) : memref<?xi32>
  %c100 = arith.constant 100 : i32
  %c101 = arith.constant 101 : i32
  memref.store %c100, %list[%c0] : memref<?xi32>
  memref.store %c101, %list[%c1] : memref<?xi32>
  %len = pgpu.list.compact %xs, %flags, %list[%c6] base %c2 : memref<?xi32>, memref<?xi1>, memref<?xi32>
  %len2 = pgpu.list.split %xs, %flags, %list[%c6] base %len : memref<?xi32>, memref<?xi1>, memref<?xi32>
  %e_len = pgpu.list.compact %xs, %flags, %list[%c0] base %c3 : memref<?xi32>, memref<?xi1>, memref<?xi32>
  %e_len2 = pgpu.list.split %xs, %flags, %list[%c0] base %c4 : memref<?xi32>, memref<?xi1>, memref<?xi32>
  pgpu.printf "compact %d split %d empty %d %d:"(%len, %len2, %e_len, %e_len2) : index, index, index, index
  func.call @print_i32(%list, %len2) : (memref<?xi32>, index) -> ()

  // Compact reads only the kept values: elements 0 and 2 are never
  // written. flags [0, 1, 0, 1] keep 1.5 and -2.5.
  // CHECK-NEXT: compact kept only 2: 1.50 -2.50
  %vals = memref.alloc(%c4) : memref<?xf32>
  %keep = memref.alloc(%c4) : memref<?xi1>
  %out = memref.alloc(%c4) : memref<?xf32>
  %true = arith.constant true
  %false = arith.constant false
  %a = arith.constant 1.5 : f32
  %b = arith.constant -2.5 : f32
  memref.store %a, %vals[%c1] : memref<?xf32>
  memref.store %b, %vals[%c3] : memref<?xf32>
  memref.store %false, %keep[%c0] : memref<?xi1>
  memref.store %true, %keep[%c1] : memref<?xi1>
  memref.store %false, %keep[%c2] : memref<?xi1>
  memref.store %true, %keep[%c3] : memref<?xi1>
  %k_len = pgpu.list.compact %vals, %keep, %out[%c4] base %c0 : memref<?xf32>, memref<?xi1>, memref<?xf32>
  %o0 = memref.load %out[%c0] : memref<?xf32>
  %o1 = memref.load %out[%c1] : memref<?xf32>
  %o0d = arith.extf %o0 : f32 to f64
  %o1d = arith.extf %o1 : f32 to f64
  pgpu.printf "compact kept only %d: %.2f %.2f\n"(%k_len, %o0d, %o1d) : index, f64, f64

  // counts = [2, 0, 3, -1, 1]: parent 0 has children 0 1, parent 2 has
  // 0 1 2, parent 4 has 0; 1 has none and -1 counts as 0: 6 children.
  // CHECK-NEXT: expand 6 parents: 0 0 2 2 2 4
  // CHECK-NEXT: children: 0 1 0 1 2 0
  %counts5 = memref.get_global @counts : memref<5xi32>
  %counts = memref.cast %counts5 : memref<5xi32> to memref<?xi32>
  %parents = memref.alloc(%c6) : memref<?xindex>
  %children = memref.alloc(%c6) : memref<?xi32>
  %m = pgpu.list.expand %counts, %parents, %children[%c5] : memref<?xi32>, memref<?xindex>, memref<?xi32> -> index
  pgpu.printf "expand %d parents:"(%m) : index
  func.call @print_index(%parents, %m) : (memref<?xindex>, index) -> ()
  pgpu.printf "children:"
  func.call @print_i32(%children, %m) : (memref<?xi32>, index) -> ()

  // Index counts [1, 2]: parents 0 1 1, children 0 0 1; n = 0: none.
  // CHECK-NEXT: expand index 3 empty 0: 0 1 1 / 0 0 1
  %icounts = memref.alloc(%c2) : memref<?xindex>
  memref.store %c1, %icounts[%c0] : memref<?xindex>
  memref.store %c2, %icounts[%c1] : memref<?xindex>
  %ichildren = memref.alloc(%c3) : memref<?xindex>
  %im = pgpu.list.expand %icounts, %parents, %ichildren[%c2] : memref<?xindex>, memref<?xindex>, memref<?xindex> -> index
  %em = pgpu.list.expand %icounts, %parents, %ichildren[%c0] : memref<?xindex>, memref<?xindex>, memref<?xindex> -> index
  %p0 = memref.load %parents[%c0] : memref<?xindex>
  %p1 = memref.load %parents[%c1] : memref<?xindex>
  %p2 = memref.load %parents[%c2] : memref<?xindex>
  %h0 = memref.load %ichildren[%c0] : memref<?xindex>
  %h1 = memref.load %ichildren[%c1] : memref<?xindex>
  %h2 = memref.load %ichildren[%c2] : memref<?xindex>
  pgpu.printf "expand index %d empty %d: %d %d %d / %d %d %d\n"(%im, %em, %p0, %p1, %p2, %h0, %h1, %h2) : index, index, index, index, index, index, index, index

  // In pgpu.require (host code inside a spawn), on what the threads wrote
  // in an earlier superstep: ranks 0..3 squared, 0+1+4+9 = 14.
  // CHECK-NEXT: require: 14
  %sq = memref.alloc(%c4) : memref<?xindex>
  pgpu.spawn %c4 {
    %r = pgpu.rank : index
    %r2 = arith.muli %r, %r : index
    memref.store %r2, %sq[%r] : memref<?xindex>
    pgpu.barrier
    %t = pgpu.require -> (index) {
      %n = pgpu.size : index
      %sum = pgpu.list.reduce add %sq[%n] : memref<?xindex> -> index
      pgpu.yield %sum : index
    }
    %is0 = arith.cmpi eq, %r, %c0 : index
    scf.if %is0 {
      pgpu.printf "require: %d\n"(%t) : index
    }
  }
  %ret = arith.constant 0 : i32
  return %ret : i32
}

// The list has room for 3 elements; compact at base 1 keeps 3 values and
// writes list[3].
// OOB: before
func.func @list_oob() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %xs6 = memref.get_global @xs : memref<6xi32>
  %xs = memref.cast %xs6 : memref<6xi32> to memref<?xi32>
  %flags = func.call @positive(%xs, %c6) : (memref<?xi32>, index) -> memref<?xi1>
  %list = memref.alloc(%c3) : memref<?xi32>
  pgpu.printf "before\n"
  // OOB-NEXT: {{.*}}list-ops.mlir:[[@LINE+1]]:10: error: out-of-bounds access: index 3 of dimension 0 is outside the view's size 3
  %len = pgpu.list.compact %xs, %flags, %list[%c6] base %c1 : memref<?xi32>, memref<?xi1>, memref<?xi32>
  return
}

func.func @list_uninit() {
  %c4 = arith.constant 4 : index
  %a = memref.alloc(%c4) : memref<?xf32>
  // UNINIT: {{.*}}list-ops.mlir:[[@LINE+1]]:8: error: read of uninitialised memory: element 0 of a heap (memref.alloc) allocation (indices [0])
  %t = pgpu.list.reduce add %a[%c4] : memref<?xf32> -> f32
  return
}

func.func @list_poison_flag() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %true = arith.constant true
  %p = ub.poison : i1
  %v = arith.constant 7 : i32
  %vals = memref.alloc(%c2) : memref<?xi32>
  %flags = memref.alloc(%c2) : memref<?xi1>
  %list = memref.alloc(%c2) : memref<?xi32>
  memref.store %v, %vals[%c0] : memref<?xi32>
  memref.store %v, %vals[%c1] : memref<?xi32>
  memref.store %true, %flags[%c0] : memref<?xi1>
  memref.store %p, %flags[%c1] : memref<?xi1>
  // POISON: {{.*}}list-ops.mlir:[[@LINE+1]]:8: error: 'pgpu.list.split' of a poison flag (element 1)
  %n = pgpu.list.split %vals, %flags, %list[%c2] base %c0 : memref<?xi32>, memref<?xi1>, memref<?xi32>
  return
}

// The keys and the sorting permutation share one allocation.
func.func @list_overlap() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc(%c2) : memref<?xindex>
  memref.store %c1, %a[%c0] : memref<?xindex>
  memref.store %c0, %a[%c1] : memref<?xindex>
  // OVERLAP: {{.*}}list-ops.mlir:[[@LINE+1]]:3: error: 'pgpu.list.sort_idx' writes element 0 of an allocation that it also reads (at input index 0): its output list overlaps an input
  pgpu.list.sort_idx %a, %a[%c2] : memref<?xindex>, memref<?xindex>
  return
}

// Host code in pgpu.require runs before its superstep: reading what a
// thread writes in that superstep is a race.
func.func @list_require_race() {
  %c2 = arith.constant 2 : index
  %a = memref.alloc(%c2) : memref<?xindex>
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    // RACE: {{.*}}list-ops.mlir:[[@LINE+4]]:12: error: data race: the host code of pgpu.require (which runs before the superstep) reads element 0 that thread 0 wrote in the same superstep
    // RACE: {{.*}}list-ops.mlir:[[@LINE+1]]:5: note: the other thread's write
    memref.store %r, %a[%r] : memref<?xindex>
    %t = pgpu.require -> (index) {
      %s = pgpu.list.reduce add %a[%c2] : memref<?xindex> -> index
      pgpu.yield %s : index
    }
  }
  return
}
