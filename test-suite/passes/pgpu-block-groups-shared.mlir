// RUN: pgpu-opt %s --split-input-file --pgpu-block-groups | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-block-groups='shared-bytes=16384' | FileCheck %s --check-prefix=SMALL
// Shared locals (pgpu.group.alloc, Fork's `sh`) of block versions live in
// the block's shared memory: workgroup globals. The lowered program runs
// the block version (the interpreter's block capacity is 1024) with the
// output of the synchronous one.
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-block-groups,pgpu-lower-groups)' -o %t.lowered.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.lowered.mlir
// RUN: split-file %s %t
// RUN: pgpu run --interpret %t/reverse.mlir > %t.reference
// RUN: pgpu-opt %t/reverse.mlir --pass-pipeline='builtin.module(pgpu-block-groups,pgpu-lower-groups)' -o %t.reverse.mlir
// RUN: pgpu run --interpret %t.reverse.mlir > %t.out
// RUN: diff %t.reference %t.out
// RUN: FileCheck %s --check-prefix=PRINTED < %t.out

//--- reverse.mlir
// A function with a shared array and a shared scalar, called twice by
// another one: both get block versions, and the array and the cell become
// uninitialized workgroup globals that the block version takes the
// address of (not arguments, unlike @out). Stores to them keep their
// barriers (the scalar's single writer included); the multiprefix whose
// results nobody reads is an atomic update of the workgroup cell; the one
// whose results are read scans as usual on the cell.
// CHECK-DAG: memref.global "private" @__shared_reverse_0 : memref<64xi32, #gpu.address_space<workgroup>> = uninitialized
// CHECK-DAG: memref.global "private" @__shared_reverse_1 : memref<i32, #gpu.address_space<workgroup>> = uninitialized
// CHECK-LABEL: func.func private @__block_reverse(
// CHECK-SAME: %[[V:[^:]*]]: i32, %{{[^:]*}}: index, %[[T:[^:]*]]: index, %[[FIRST:[^:]*]]: index, %[[COUNT:[^:]*]]: index, %[[SLOT:[^:]*]]: index, %[[SCRATCH:[^:]*]]: memref<?xi32>, %[[GLOBAL_OUT:[^:]*]]: memref<64xi32>) -> i32
// CHECK-SAME: pgpu.block_globals = [@out], pgpu.block_group, pgpu.block_scratch = [i32]
// CHECK-DAG: %[[A:.*]] = memref.get_global @__shared_reverse_0 : memref<64xi32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[S:.*]] = memref.get_global @__shared_reverse_1 : memref<i32, #gpu.address_space<workgroup>>
// CHECK-NOT: pgpu.group.alloc
// CHECK: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK-NEXT: memref.store %[[V]], %[[A]][%{{.*}}] : memref<64xi32, #gpu.address_space<workgroup>>
// CHECK-NEXT: pgpu.range_barrier %[[FIRST]], %[[COUNT]], %[[SLOT]]
// CHECK: arith.cmpi eq
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.store %{{.*}}, %[[S]][] : memref<i32, #gpu.address_space<workgroup>>
// CHECK: memref.atomic_rmw addi %[[V]], %[[S]][] : (i32, memref<i32, #gpu.address_space<workgroup>>) -> i32
// CHECK: memref.store %{{.*}}, %[[SCRATCH]][%[[T]]]
// CHECK: memref.load %[[S]][] : memref<i32, #gpu.address_space<workgroup>>
// CHECK: memref.load %[[A]][%{{.*}}] : memref<64xi32, #gpu.address_space<workgroup>>
// CHECK: memref.store %{{.*}}, %[[GLOBAL_OUT]][%{{.*}}] : memref<64xi32>
// CHECK: return
// CHECK-LABEL: func.func @reverse(
// CHECK-SAME: pgpu.block_version = "__block_reverse"
// The original (the host version's source) keeps its group memory.
// CHECK-NEXT: pgpu.group.alloc : memref<64xi32>
// CHECK-LABEL: func.func private @__block_twice(
// CHECK: call @__block_reverse(
// CHECK: call @__block_reverse(
// CHECK-LABEL: func.func @twice(
// CHECK-SAME: pgpu.block_version = "__block_twice"
// 260 bytes of shared locals, 8196 of barrier words: also fits 16 KiB.
// SMALL-LABEL: func.func @reverse(
// SMALL-SAME: pgpu.block_version = "__block_reverse"
// LOWERED-LABEL: func.func @__group_twice(
// LOWERED: pgpu.spawn block
// LOWERED: func.call @__block_twice(
// PRINTED: rank 0: 7 before 0
// PRINTED-NEXT: rank 1: 6 before 0
// PRINTED-NEXT: rank 2: 5 before 1
// PRINTED: rank 7: 0 before 21

memref.global "private" @out : memref<64xi32> = dense<0>

func.func @reverse(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<64xi32>
  %s = pgpu.group.alloc : memref<i32>
  %rank = pgpu.group.rank : index
  memref.store %v, %a[%rank] : memref<64xi32>
  %zero = arith.constant 0 : i32
  memref.store %zero, %s[] : memref<i32>
  %unused = pgpu.multiprefix add %v to %s[] : memref<i32>
  %before = pgpu.multiprefix add %v to %s[] : memref<i32>
  %total = memref.load %s[] : memref<i32>
  %size = pgpu.group.size : index
  %c1 = arith.constant 1 : index
  %last = arith.subi %size, %c1 : index
  %mirror = arith.subi %last, %rank : index
  %x = memref.load %a[%mirror] : memref<64xi32>
  %out = memref.get_global @out : memref<64xi32>
  memref.store %x, %out[%rank] : memref<64xi32>
  %r = arith.subi %before, %total : i32
  return %r : i32
}

func.func @twice(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %a = func.call @reverse(%v) : (i32) -> i32
  %b = func.call @reverse(%v) : (i32) -> i32
  return %b : i32
}

func.func @main() {
  %p = arith.constant 8 : index
  pgpu.spawn synchronous %p {
    %rank = pgpu.group.rank : index
    %me = arith.index_cast %rank : index to i32
    %r = func.call @twice(%me) : (i32) -> i32
    %out = memref.get_global @out : memref<64xi32>
    %x = memref.load %out[%rank] : memref<64xi32>
    %total = arith.constant 28 : i32
    %before = arith.addi %r, %total : i32
    pgpu.printf "rank %d: %d before %d\n"(%rank, %x, %before) : index, i32, i32
  }
  return
}

// -----

//--- recursion.mlir
// No shared memory where two activations of a function with shared
// locals may be live in one block: a recursive function (the inner call
// would use the outer's array) ...
// CHECK-LABEL: func.func @recurses(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @calls_recurses(
// CHECK-NOT: pgpu.block_version
// ... mutual recursion ...
// CHECK-LABEL: func.func @ping(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @pong(
// CHECK-NOT: pgpu.block_version
// ... but a recursive function without shared locals may call one that
// has them (one activation of the callee at a time).
// CHECK-LABEL: func.func @leaf(
// CHECK-SAME: pgpu.block_version = "__block_leaf"
// CHECK-LABEL: func.func @outer(
// CHECK-SAME: pgpu.block_version = "__block_outer"
// CHECK-NOT: __shared_recurses
// CHECK-NOT: __shared_ping
// CHECK-NOT: __shared_pong

func.func @recurses() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<8xi32>
  %size = pgpu.group.size : index
  %c4 = arith.constant 4 : index
  %more = arith.cmpi ult, %size, %c4 : index
  scf.if %more {
    func.call @recurses() : () -> ()
  }
  return
}

func.func @calls_recurses() attributes {pgpu.synchronous} {
  func.call @recurses() : () -> ()
  return
}

func.func @ping() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<i32>
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[] : memref<i32>
  func.call @pong() : () -> ()
  return
}

func.func @pong() attributes {pgpu.synchronous} {
  %size = pgpu.group.size : index
  %c4 = arith.constant 4 : index
  %more = arith.cmpi ult, %size, %c4 : index
  scf.if %more {
    func.call @ping() : () -> ()
  }
  return
}

func.func @leaf() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<8xi32>
  return
}

func.func @outer() attributes {pgpu.synchronous} {
  func.call @leaf() : () -> ()
  %size = pgpu.group.size : index
  %c4 = arith.constant 4 : index
  %more = arith.cmpi ult, %size, %c4 : index
  scf.if %more {
    func.call @outer() : () -> ()
  }
  return
}

// -----

//--- split.mlir
// ... a function called from inside a split on a rank range (both sides
// may run it at once), directly or through another function, and so its
// callers; a call on a uniform branch is fine.
// CHECK-LABEL: func.func @inner(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @splits(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @inner2(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @middle(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @splits_through(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @inner3(
// CHECK-SAME: pgpu.block_version = "__block_inner3"
// CHECK-LABEL: func.func @uniform_branch(
// CHECK-SAME: pgpu.block_version = "__block_uniform_branch"

func.func @inner() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<8xi32>
  return
}

func.func @splits() attributes {pgpu.synchronous} {
  %rank = pgpu.group.rank : index
  %c2 = arith.constant 2 : index
  %low = arith.cmpi ult, %rank, %c2 : index
  pgpu.group.split %low {
    func.call @inner() : () -> ()
    pgpu.group.merge
  } else {
    pgpu.group.merge
  }
  return
}

func.func @inner2() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<8xi32>
  return
}

func.func @middle() attributes {pgpu.synchronous} {
  func.call @inner2() : () -> ()
  return
}

func.func @splits_through() attributes {pgpu.synchronous} {
  %rank = pgpu.group.rank : index
  %c2 = arith.constant 2 : index
  %low = arith.cmpi ult, %rank, %c2 : index
  pgpu.group.split %low {
    pgpu.group.merge
  } else {
    func.call @middle() : () -> ()
    pgpu.group.merge
  }
  return
}

func.func @inner3() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<8xi32>
  return
}

func.func @uniform_branch() attributes {pgpu.synchronous} {
  %size = pgpu.group.size : index
  %c2 = arith.constant 2 : index
  %big = arith.cmpi ugt, %size, %c2 : index
  pgpu.group.split %big {
    func.call @inner3() : () -> ()
    pgpu.group.merge
  } else {
    pgpu.group.merge
  }
  return
}

// -----

//--- size.mlir
// ... shared locals that do not fit the block's shared memory beside the
// range barriers' 8196 bytes of words (48 KiB: 40956 bytes left, each
// array rounded up to 16 bytes), counting those of the callees.
// CHECK-LABEL: func.func @fits(
// CHECK-SAME: pgpu.block_version = "__block_fits"
// CHECK-LABEL: func.func @too_large(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @callee_half(
// CHECK-SAME: pgpu.block_version = "__block_callee_half"
// CHECK-LABEL: func.func @caller_half(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @barely(
// CHECK-SAME: pgpu.block_version = "__block_barely"
// CHECK-LABEL: func.func @just_over(
// CHECK-SAME: pgpu.block_version = "__block_just_over"
// With shared-bytes=16384, 8188 bytes are left: 8192 are too many.
// SMALL-LABEL: func.func @fits(
// SMALL-NOT: pgpu.block_version
// SMALL-LABEL: func.func @barely(
// SMALL-SAME: pgpu.block_version = "__block_barely"
// SMALL-LABEL: func.func @just_over(
// SMALL-NOT: pgpu.block_version

// 10236 x 4 = 40944 bytes.
func.func @fits() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<10236xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<10236xi32>
  return
}

// 10240 x 4 = 40960 bytes.
func.func @too_large() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<10240xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<10240xi32>
  return
}

// 3000 x 8 = 24000 bytes, and 20000 more in the caller.
func.func @callee_half() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<3000xi64>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i64
  memref.store %c0, %a[%rank] : memref<3000xi64>
  return
}

func.func @caller_half() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<5000xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<5000xi32>
  func.call @callee_half() : () -> ()
  return
}

// 2044 x 4 = 8176 bytes.
func.func @barely() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<2044xi32>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<2044xi32>
  return
}

// 8176 bytes and 1, rounded up to 16.
func.func @just_over() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<2044xi32>
  %b = pgpu.group.alloc : memref<i8>
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<2044xi32>
  %c1 = arith.constant 1 : i8
  memref.store %c1, %b[] : memref<i8>
  return
}

// -----

//--- uses.mlir
// Views of a shared local (Fork's `mpadd(&s, v)` views the cell; casts
// and subviews) move to workgroup memory with it ...
// CHECK: memref.global "private" @__shared_views_0 : memref<i32, #gpu.address_space<workgroup>> = uninitialized
// CHECK: memref.global "private" @__shared_views_1 : memref<8xi32, #gpu.address_space<workgroup>> = uninitialized
// CHECK-LABEL: func.func private @__block_views(
// SMALL-LABEL: func.func private @__block_views(
// CHECK-DAG: %[[CELL:.*]] = memref.get_global @__shared_views_0 : memref<i32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[ARRAY:.*]] = memref.get_global @__shared_views_1 : memref<8xi32, #gpu.address_space<workgroup>>
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[CELL]] to offset: [%{{.*}}], sizes: [%{{.*}}], strides: [1] : memref<i32, #gpu.address_space<workgroup>> to memref<?xi32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[VIEW]][%{{.*}}] : (i32, memref<?xi32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>) -> i32
// CHECK: %[[CAST:.*]] = memref.cast %[[ARRAY]] : memref<8xi32, #gpu.address_space<workgroup>> to memref<?xi32, #gpu.address_space<workgroup>>
// CHECK: %[[PART:.*]] = memref.subview %[[CAST]][4] [4] [1] : memref<?xi32, #gpu.address_space<workgroup>> to memref<4xi32, strided<[1], offset: 4>, #gpu.address_space<workgroup>>
// CHECK: memref.load %[[PART]][%{{.*}}] : memref<4xi32, strided<[1], offset: 4>, #gpu.address_space<workgroup>>
// ... but not shared locals used otherwise than through such views as the
// memory of loads, stores, atomic updates and multiprefix cells (a call's
// argument, directly or through a cast), or stored to by members that may
// conflict (the claims would need their own memory).
// CHECK-LABEL: func.func @takes(
// CHECK-SAME: pgpu.block_version = "__block_takes"
// CHECK-LABEL: func.func @passes_array(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @takes_list(
// CHECK-SAME: pgpu.block_version = "__block_takes_list"
// CHECK-LABEL: func.func @passes_cast(
// CHECK-NOT: pgpu.block_version
// CHECK-LABEL: func.func @conflicts(
// CHECK-NOT: pgpu.block_version

func.func @views(%v: i32) -> i32 attributes {pgpu.synchronous} {
  %cell = pgpu.group.alloc : memref<i32>
  %array = pgpu.group.alloc : memref<8xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %view = memref.reinterpret_cast %cell to offset: [%c0], sizes: [%c1], strides: [1] : memref<i32> to memref<?xi32, strided<[1], offset: ?>>
  %unused = pgpu.multiprefix add %v to %view[%c0] : memref<?xi32, strided<[1], offset: ?>>
  %rank = pgpu.group.rank : index
  memref.store %v, %array[%rank] : memref<8xi32>
  %cast = memref.cast %array : memref<8xi32> to memref<?xi32>
  %part = memref.subview %cast[4] [4] [1] : memref<?xi32> to memref<4xi32, strided<[1], offset: 4>>
  %x = memref.load %part[%c1] : memref<4xi32, strided<[1], offset: 4>>
  return %x : i32
}

func.func @takes(%a: memref<8xi32>) attributes {pgpu.synchronous} {
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<8xi32>
  return
}

func.func @passes_array() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  func.call @takes(%a) : (memref<8xi32>) -> ()
  return
}

func.func @takes_list(%a: memref<?xi32>) attributes {pgpu.synchronous} {
  %rank = pgpu.group.rank : index
  %c0 = arith.constant 0 : i32
  memref.store %c0, %a[%rank] : memref<?xi32>
  return
}

func.func @passes_cast() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  %d = memref.cast %a : memref<8xi32> to memref<?xi32>
  func.call @takes_list(%d) : (memref<?xi32>) -> ()
  return
}

func.func @conflicts() attributes {pgpu.synchronous} {
  %a = pgpu.group.alloc : memref<8xi32>
  %rank = pgpu.group.rank : index
  %me = arith.index_cast %rank : index to i32
  %c0 = arith.constant 0 : index
  memref.store %me, %a[%c0] : memref<8xi32>
  return
}
