// RUN: pgpu-opt %s --pgpu-forward-list-copies | FileCheck %s

// An input copy: the collective reads the list itself; the copy kernel,
// left without effects, goes away with its list.
// CHECK-LABEL: func.func @reduce_input(
// CHECK-SAME: %[[A:.*]]: memref<?xi32, strided<[1], offset: ?>>
// CHECK-NOT: scf.parallel
// CHECK-NOT: memref.alloc
// CHECK: pgpu.list.reduce add %[[A]][%{{.*}}] : memref<?xi32, strided<[1], offset: ?>> -> i32
// CHECK-NOT: memref.dealloc
func.func @reduce_input(%a: memref<?xi32, strided<[1], offset: ?>>, %n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %copy = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%i] : memref<?xi32, strided<[1], offset: ?>>
    memref.store %v, %copy[%i] : memref<?xi32>
    scf.reduce
  }
  %t = pgpu.list.reduce add %copy[%n] : memref<?xi32> -> i32
  memref.dealloc %copy : memref<?xi32>
  return %t : i32
}

// The copy kernel also fills a list with the ranks (sortby's carried
// thread ranks): the sort reads the source; loads of the ranks become the
// index itself; the gather of the keys through the permutation becomes a
// read of the keys the sort now also writes in sorted order; the kernel,
// left without effects, goes away.
// CHECK-LABEL: func.func @gather_input(
// CHECK-SAME: %[[A:[^:]*]]: memref<?xi32>
// CHECK: %[[IDX:.*]] = memref.alloc(%{{.*}}) : memref<?xindex>
// CHECK-NEXT: %[[SORTED:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK-NEXT: pgpu.list.sort_idx %[[A]], %[[IDX]][%{{.*}}] sorted %[[SORTED]] : memref<?xi32>, memref<?xindex>, memref<?xi32>
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: %[[J:.*]] = memref.load %[[IDX]][%[[I]]]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[SORTED]][%[[I]]]
// CHECK-NEXT: %[[W:.*]] = arith.index_cast %[[J]] : index to i32
// CHECK-NEXT: arith.addi %[[V]], %[[W]]
// CHECK: memref.dealloc %[[SORTED]]
func.func @gather_input(%a: memref<?xi32>, %n: index) -> memref<?xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %copy = memref.alloc(%n) : memref<?xi32>
  %other = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%i] : memref<?xi32>
    %r = arith.index_cast %i : index to i32
    memref.store %v, %copy[%i] : memref<?xi32>
    memref.store %r, %other[%i] : memref<?xi32>
    scf.reduce
  }
  %idx = memref.alloc(%n) : memref<?xindex>
  pgpu.list.sort_idx %copy, %idx[%n] : memref<?xi32>, memref<?xindex>
  %out = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = memref.load %idx[%i] : memref<?xindex>
    %v = memref.load %copy[%j] : memref<?xi32>
    %w = memref.load %other[%j] : memref<?xi32>
    %s = arith.addi %v, %w : i32
    memref.store %s, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %copy : memref<?xi32>
  memref.dealloc %other : memref<?xi32>
  memref.dealloc %idx : memref<?xindex>
  return %out : memref<?xi32>
}

// A later kernel that may write the source (a caller's list) keeps its
// loads on the copy.
// CHECK-LABEL: func.func @gather_may_clobber(
// CHECK: memref.store %{{.*}}, %[[COPY:.*]][%{{.*}}]
// CHECK: memref.load %[[COPY]]
func.func @gather_may_clobber(%a: memref<?xi32>, %out: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %copy = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%i] : memref<?xi32>
    memref.store %v, %copy[%i] : memref<?xi32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = arith.subi %n, %c1 : index
    %k = arith.subi %j, %i : index
    %v = memref.load %copy[%k] : memref<?xi32>
    memref.store %v, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %copy : memref<?xi32>
  return
}

// Not forwarded: the source may change between the copy and the reader
// (a store into a list that may alias it), and a copy over part of the
// list only.
// CHECK-LABEL: func.func @source_written(
// CHECK: memref.store %{{.*}}, %[[COPY:.*]][%{{.*}}]
// CHECK: pgpu.list.reduce add %[[COPY]]
// CHECK-LABEL: func.func @partial_copy(
// CHECK: memref.store %{{.*}}, %[[COPY:.*]][%{{.*}}]
// CHECK: pgpu.list.reduce add %[[COPY]]
func.func @source_written(%a: memref<?xi32>, %b: memref<?xi32>, %n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %seven = arith.constant 7 : i32
  %copy = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%i] : memref<?xi32>
    memref.store %v, %copy[%i] : memref<?xi32>
    scf.reduce
  }
  memref.store %seven, %b[%c0] : memref<?xi32>
  %t = pgpu.list.reduce add %copy[%n] : memref<?xi32> -> i32
  memref.dealloc %copy : memref<?xi32>
  return %t : i32
}
func.func @partial_copy(%a: memref<?xi32>, %n: index, %m: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %copy = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    %v = memref.load %a[%i] : memref<?xi32>
    memref.store %v, %copy[%i] : memref<?xi32>
    scf.reduce
  }
  %t = pgpu.list.reduce add %copy[%n] : memref<?xi32> -> i32
  memref.dealloc %copy : memref<?xi32>
  return %t : i32
}

// An output copy into a list that cannot overlap the input: the scan
// writes it directly; the kernel keeps its other store.
// CHECK-LABEL: func.func @scan_output(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?xi32>, %[[TOTAL:[^:]*]]: memref<?xi32>
// CHECK: %[[FRESH:.*]] = memref.alloc
// CHECK: %[[T:.*]] = pgpu.list.scan add %[[FRESH]], %[[OUT]][%{{.*}}]
// CHECK-NOT: scf.if
// CHECK: scf.parallel
// CHECK-NOT: memref.load
// CHECK: memref.store %[[T]], %[[TOTAL]]
func.func @scan_output(%out: memref<?xi32>, %total: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %fresh = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = arith.index_cast %i : index to i32
    memref.store %v, %fresh[%i] : memref<?xi32>
    scf.reduce
  }
  %tmp = memref.alloc(%n) : memref<?xi32>
  %t = pgpu.list.scan add %fresh, %tmp[%n] : memref<?xi32>, memref<?xi32> -> i32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %tmp[%i] : memref<?xi32>
    memref.store %v, %out[%i] : memref<?xi32>
    %first = arith.cmpi eq, %i, %c0 : index
    scf.if %first {
      memref.store %t, %total[%c0] : memref<?xi32>
    }
    scf.reduce
  }
  memref.dealloc %tmp : memref<?xi32>
  memref.dealloc %fresh : memref<?xi32>
  return
}

// Input and output both lists of the caller: they may overlap, so a
// run-time test of the address ranges picks the direct scan (also in
// place) or the old path through the scan's own list and a copy.
// CHECK-LABEL: func.func @scan_both(
// CHECK-SAME: %[[A:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?xi32>
// CHECK-NOT: memref.alloc
// CHECK: %[[A_START:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[A_END:.*]] = arith.addi %[[A_START]], %{{.*}} : index
// CHECK: %[[O_START:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[O_END:.*]] = arith.addi %[[O_START]], %{{.*}} : index
// CHECK: %[[BEFORE:.*]] = arith.cmpi ule, %[[A_END]], %[[O_START]]
// CHECK: %[[AFTER:.*]] = arith.cmpi ule, %[[O_END]], %[[A_START]]
// CHECK: %[[DISJOINT:.*]] = arith.ori %[[BEFORE]], %[[AFTER]]
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[A_START]], %[[O_START]]
// CHECK: %[[OK:.*]] = arith.ori %[[DISJOINT]], %[[SAME]]
// CHECK: %[[T:.*]] = scf.if %[[OK]] -> (i32) {
// CHECK-NEXT: %[[DIRECT:.*]] = pgpu.list.scan add %[[A]], %[[OUT]][%{{.*}}]
// CHECK-NEXT: scf.yield %[[DIRECT]]
// CHECK-NEXT: } else {
// The scan's own list exists on the fallback path only.
// CHECK-NEXT: %[[TMP:.*]] = memref.alloc
// CHECK-NEXT: %[[OLD:.*]] = pgpu.list.scan add %[[A]], %[[TMP]][%{{.*}}] {pgpu.overlap_fallback}
// CHECK: scf.parallel
// CHECK-NEXT: %[[V:.*]] = memref.load %[[TMP]]
// CHECK-NEXT: memref.store %[[V]], %[[OUT]]
// CHECK: memref.dealloc %[[TMP]]
// CHECK-NEXT: scf.yield %[[OLD]]
// CHECK-NOT: memref.dealloc
// CHECK: return %[[T]]
func.func @scan_both(%a: memref<?xi32>, %out: memref<?xi32>, %n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %copy = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%i] : memref<?xi32>
    memref.store %v, %copy[%i] : memref<?xi32>
    scf.reduce
  }
  %tmp = memref.alloc(%n) : memref<?xi32>
  %t = pgpu.list.scan add %copy, %tmp[%n] : memref<?xi32>, memref<?xi32> -> i32
  memref.dealloc %copy : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %tmp[%i] : memref<?xi32>
    memref.store %v, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %tmp : memref<?xi32>
  return %t : i32
}

// Not forwarded: the kernel reads the destination (it would see the new
// values early).
// CHECK-LABEL: func.func @output_read(
// CHECK: pgpu.list.scan add %{{.*}}, %[[TMP:.*]][
// CHECK: memref.load %[[TMP]]
func.func @output_read(%out: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %fresh = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = arith.index_cast %i : index to i32
    memref.store %v, %fresh[%i] : memref<?xi32>
    scf.reduce
  }
  %tmp = memref.alloc(%n) : memref<?xi32>
  %t = pgpu.list.scan add %fresh, %tmp[%n] : memref<?xi32>, memref<?xi32> -> i32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %old = memref.load %out[%c0] : memref<?xi32>
    %v = memref.load %tmp[%i] : memref<?xi32>
    %s = arith.addi %v, %old : i32
    memref.store %s, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %tmp : memref<?xi32>
  memref.dealloc %fresh : memref<?xi32>
  return
}

// The keys themselves, read through the permutation after the kernel's
// threads wrote a caller's list that may be the keys: the sort writes the
// sorted keys, and a run-time test of the two lists' extents picks the
// kernel reading them or the original one.
// CHECK-LABEL: func.func @sorted_keys_versioned(
// CHECK-SAME: %[[K:[^:]*]]: memref<?xi32>, %[[ORDER:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?xi32>
// CHECK: %[[IDX:.*]] = memref.alloc
// CHECK-NEXT: %[[SORTED:.*]] = memref.alloc
// CHECK-NEXT: pgpu.list.sort_idx %[[K]], %[[IDX]][%{{.*}}] sorted %[[SORTED]]
// CHECK: memref.dim %[[K]]
// CHECK: memref.dim %[[ORDER]]
// CHECK: %[[BEFORE:.*]] = arith.cmpi ule
// CHECK-NEXT: %[[AFTER:.*]] = arith.cmpi ule
// CHECK-NEXT: %[[APART:.*]] = arith.ori %[[BEFORE]], %[[AFTER]]
// CHECK-NEXT: scf.if %[[APART]] {
// CHECK: memref.store %{{.*}}, %[[ORDER]]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[SORTED]][%{{.*}}]
// CHECK-NEXT: memref.store %[[V]], %[[OUT]]
// CHECK: } else {
// CHECK: memref.store %{{.*}}, %[[ORDER]]
// CHECK-NEXT: %[[W:.*]] = memref.load %[[K]][%{{.*}}]
// CHECK-NEXT: memref.store %[[W]], %[[OUT]]
// CHECK: memref.dealloc %[[SORTED]]
func.func @sorted_keys_versioned(%k: memref<?xi32>, %order: memref<?xi32>, %out: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %idx = memref.alloc(%n) : memref<?xindex>
  pgpu.list.sort_idx %k, %idx[%n] : memref<?xi32>, memref<?xindex>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = memref.load %idx[%i] : memref<?xindex>
    %j32 = arith.index_cast %j : index to i32
    memref.store %j32, %order[%i] : memref<?xi32>
    %v = memref.load %k[%j] : memref<?xi32>
    memref.store %v, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %idx : memref<?xindex>
  return
}

// A neighbour's key read through the permutation (a `thread.get` of the
// key at rank i - 1, guarded) and the thread's own: both read the sorted
// keys, at their own positions; the copy of the keys goes.
// CHECK-LABEL: func.func @sorted_keys_of_neighbour(
// CHECK-SAME: %[[K:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?xi32>
// CHECK-NOT: memref.store %{{.*}}, %{{.*}} : memref<?xi32>{{$}}
// CHECK: pgpu.list.sort_idx %[[K]], %{{.*}} sorted %[[SORTED:[^ ]*]]
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: %[[OWN:.*]] = memref.load %[[SORTED]][%[[I]]]
// CHECK: %[[PREV:.*]] = arith.subi %[[I]]
// CHECK: scf.if
// CHECK: memref.load %[[SORTED]][%[[PREV]]]
// CHECK-NOT: memref.load %[[K]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
func.func @sorted_keys_of_neighbour(%k: memref<?xi32>, %out: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %copy = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %k[%i] : memref<?xi32>
    memref.store %x, %copy[%i] : memref<?xi32>
    scf.reduce
  }
  %idx = memref.alloc(%n) : memref<?xindex>
  pgpu.list.sort_idx %k, %idx[%n] : memref<?xi32>, memref<?xindex>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = memref.load %idx[%i] : memref<?xindex>
    %own = memref.load %copy[%j] : memref<?xi32>
    %prev = arith.subi %i, %c1 : index
    %first = arith.cmpi eq, %i, %c0 : index
    %p = scf.if %first -> (i32) {
      scf.yield %zero : i32
    } else {
      %q = memref.load %idx[%prev] : memref<?xindex>
      %v = memref.load %copy[%q] : memref<?xi32>
      scf.yield %v : i32
    }
    %sum = arith.addi %own, %p : i32
    memref.store %sum, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %idx : memref<?xindex>
  memref.dealloc %copy : memref<?xi32>
  return
}

// A list nothing reads goes with its stores, two of them in one kernel,
// and the kernel left without effects goes too.
// CHECK-LABEL: func.func @unread_list(
// CHECK-NOT: memref.alloc
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @unread_list(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %seven = arith.constant 7 : i32
  %unread = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %seven, %unread[%i] : memref<?xi32>
    memref.store %seven, %unread[%c0] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %unread : memref<?xi32>
  return
}

// A list filled with a function of the index alone (a face number
// `i / 3`, from the constant and the cast in the kernel) is recomputed
// where it is read through the permutation: no list, no gather; the
// kernel that filled it goes away. A list of loaded values stays.
// CHECK-LABEL: func.func @index_function(
// CHECK-SAME: %[[A:[^:]*]]: memref<?xi32>, %[[B:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?xi32>
// CHECK: %[[LOADED:.*]] = memref.alloc
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[LOADED]]
// CHECK: pgpu.list.sort_idx
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: %[[J:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xindex>
// CHECK-NEXT: %[[J32:.*]] = arith.index_cast %[[J]] : index to i32
// CHECK-NEXT: %[[THREE:.*]] = arith.constant 3 : i32
// CHECK-NEXT: %[[F:.*]] = arith.divsi %[[J32]], %[[THREE]] : i32
// CHECK-NEXT: %[[G:.*]] = memref.load %[[LOADED]][%[[J]]]
// CHECK-NEXT: arith.addi %[[F]], %[[G]]
// CHECK-NOT: memref.alloc
func.func @index_function(%a: memref<?xi32>, %b: memref<?xi32>, %out: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %face = memref.alloc(%n) : memref<?xi32>
  %loaded = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %three = arith.constant 3 : i32
    %r = arith.index_cast %i : index to i32
    %f = arith.divsi %r, %three : i32
    memref.store %f, %face[%i] : memref<?xi32>
    %v = memref.load %b[%i] : memref<?xi32>
    memref.store %v, %loaded[%i] : memref<?xi32>
    memref.store %f, %b[%i] : memref<?xi32>
    scf.reduce
  }
  %idx = memref.alloc(%n) : memref<?xindex>
  pgpu.list.sort_idx %a, %idx[%n] : memref<?xi32>, memref<?xindex>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = memref.load %idx[%i] : memref<?xindex>
    %f = memref.load %face[%j] : memref<?xi32>
    %g = memref.load %loaded[%j] : memref<?xi32>
    %s = arith.addi %f, %g : i32
    memref.store %s, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %face : memref<?xi32>
  memref.dealloc %loaded : memref<?xi32>
  memref.dealloc %idx : memref<?xindex>
  return
}

// A copy of a fresh list that is deallocated before the copy's reader:
// the reader reads the list itself, whose deallocation moves after it.
// CHECK-LABEL: func.func @copy_of_freed_list(
// CHECK: %[[SRC:.*]] = memref.alloc
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.load %[[SRC]]
// CHECK: scf.parallel
// CHECK: arith.subi
// CHECK-NEXT: %[[J:.*]] = arith.subi
// CHECK-NEXT: memref.load %[[SRC]][%[[J]]]
// CHECK: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[SRC]]
// CHECK-NEXT: return
func.func @copy_of_freed_list(%in: memref<?xi32>, %out: memref<?xi32>, %heads: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %src = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %r = memref.load %in[%i] : memref<?xi32>
    %x = arith.muli %r, %r : i32
    memref.store %x, %src[%i] : memref<?xi32>
    scf.reduce
  }
  %copy = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %src[%i] : memref<?xi32>
    memref.store %v, %out[%i] : memref<?xi32>
    memref.store %v, %copy[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %src : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %k = arith.subi %n, %c1 : index
    %j = arith.subi %k, %i : index
    %v = memref.load %copy[%j] : memref<?xi32>
    memref.store %v, %heads[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %copy : memref<?xi32>
  return
}

// Two fresh lists filled with the same value and only read afterwards
// (a saved value that is also the sort's keys) are one list, freed at
// the later of the two deallocations; its gather through the permutation
// then reads the keys the sort writes in sorted order.
// CHECK-LABEL: func.func @duplicate_lists(
// CHECK: %[[KEYS:.*]] = memref.alloc
// CHECK-NEXT: scf.parallel
// CHECK: memref.store %{{.*}}, %[[KEYS]]
// CHECK-NOT: memref.store
// CHECK: scf.reduce
// CHECK: pgpu.list.sort_idx %[[KEYS]], %{{.*}} sorted %[[SORTED:[^ ]*]]
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: memref.load %{{.*}}[%[[I]]] : memref<?xindex>
// CHECK-NEXT: %[[V:.*]] = memref.load %[[SORTED]][%[[I]]]
// CHECK-NEXT: memref.store %[[V]]
// CHECK: memref.dealloc %[[SORTED]]
// CHECK: memref.dealloc %[[KEYS]] :
// CHECK-NOT: memref.dealloc %[[KEYS]] :
func.func @duplicate_lists(%x: memref<?xi32>, %out: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %saved = memref.alloc(%n) : memref<?xi32>
  %keys = memref.alloc(%n) : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<?xi32>
    %c = arith.muli %v, %v : i32
    memref.store %c, %saved[%i] : memref<?xi32>
    memref.store %c, %keys[%i] : memref<?xi32>
    scf.reduce
  }
  %idx = memref.alloc(%n) : memref<?xindex>
  pgpu.list.sort_idx %keys, %idx[%n] : memref<?xi32>, memref<?xindex>
  memref.dealloc %keys : memref<?xi32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = memref.load %idx[%i] : memref<?xindex>
    %v = memref.load %saved[%j] : memref<?xi32>
    memref.store %v, %out[%i] : memref<?xi32>
    scf.reduce
  }
  memref.dealloc %saved : memref<?xi32>
  memref.dealloc %idx : memref<?xindex>
  return
}
