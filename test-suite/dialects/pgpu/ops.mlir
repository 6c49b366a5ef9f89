// Every pgpu op in each of its syntactic forms: the custom syntax round-trips,
// and so does the generic form.
// RUN: pgpu-opt %s | pgpu-opt | FileCheck %s
// RUN: pgpu-opt %s --mlir-print-op-generic | pgpu-opt | FileCheck %s
// RUN: mlir-opt --load-dialect-plugin=%pgpu_dialect_plugin %s | mlir-opt --load-dialect-plugin=%pgpu_dialect_plugin | FileCheck %s

//===----------------------------------------------------------------------===//
// SPMD regions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @spawn_rank_size
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[N:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[S:.*]] = pgpu.size : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[S]], %[[R]] : index
// CHECK-NEXT: %[[V:.*]] = arith.index_cast %[[D]] : index to i32
// CHECK-NEXT: memref.store %[[V]], %[[A]][%[[R]]] : memref<?xi32>
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: memref.load %[[A]][%[[R]]] : memref<?xi32>
// CHECK-NEXT: }
func.func @spawn_rank_size(%a: memref<?xi32>, %n: index) {
  pgpu.spawn %n {
    %r = pgpu.rank : index
    %s = pgpu.size : index
    %d = arith.subi %s, %r : index
    %v = arith.index_cast %d : index to i32
    memref.store %v, %a[%r] : memref<?xi32>
    pgpu.barrier
    %w = memref.load %a[%r] : memref<?xi32>
  }
  return
}

// The three kinds of rank reassignment of bsgp.txt Listing 3: an explicit
// rank-reassigning barrier that states the old rank, and the library
// primitives (here thread.sortby) that define it themselves.
// CHECK-LABEL: func.func @rank_reassigning_barrier
// CHECK-SAME: (%[[IB:.*]]: memref<?xi32>, %[[SORTED:.*]]: memref<?xindex>, %[[N:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK: %[[V:.*]] = memref.load %[[IB]]
// CHECK-NEXT: pgpu.barrier rank_reassigned
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[SORTED]][%[[R]]] : memref<?xindex>
// CHECK-NEXT: pgpu.set_oldrank %[[OLD]]
// CHECK-NEXT: %[[O:.*]] = pgpu.oldrank : index
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: pgpu.thread.sortby %[[V]] : i32
// CHECK-NEXT: pgpu.oldrank : index
func.func @rank_reassigning_barrier(%ib: memref<?xi32>, %sorted_id: memref<?xindex>, %n: index) {
  pgpu.spawn %n {
    %rk0 = pgpu.rank : index
    %v = memref.load %ib[%rk0] : memref<?xi32>
    pgpu.barrier rank_reassigned
    %rk = pgpu.rank : index
    %old = memref.load %sorted_id[%rk] : memref<?xindex>
    pgpu.set_oldrank %old
    %o = pgpu.oldrank : index
    pgpu.barrier
    pgpu.thread.sortby %v : i32
    %o2 = pgpu.oldrank : index
  }
  return
}

// A spawn body after superstep formation: values that cross a superstep
// boundary are superstep results.
// CHECK-LABEL: func.func @supersteps
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[IDS:.*]]: memref<?xindex>, %[[N:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[V:.*]]:2 = pgpu.superstep -> (i32, index) {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[X:.*]] = memref.load %[[A]][%[[R]]] : memref<?xi32>
// CHECK-NEXT: pgpu.yield %[[X]], %[[R]] : i32, index
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep rank_reassigned {
// CHECK-NEXT: %[[R2:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[IDS]][%[[R2]]] : memref<?xindex>
// CHECK-NEXT: pgpu.set_oldrank %[[OLD]]
// CHECK-NEXT: memref.store %[[V]]#0, %[[A]][%[[R2]]] : memref<?xi32>
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.superstep {
// CHECK-NEXT: pgpu.oldrank : index
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @supersteps(%a: memref<?xi32>, %ids: memref<?xindex>, %n: index) {
  pgpu.spawn %n {
    %v:2 = pgpu.superstep -> (i32, index) {
      %r = pgpu.rank : index
      %x = memref.load %a[%r] : memref<?xi32>
      pgpu.yield %x, %r : i32, index
    }
    pgpu.superstep rank_reassigned {
      %r = pgpu.rank : index
      %old = memref.load %ids[%r] : memref<?xindex>
      pgpu.set_oldrank %old
      memref.store %v#0, %a[%r] : memref<?xi32>
    }
    pgpu.superstep {
      %o = pgpu.oldrank : index
    }
  }
  return
}

// bsgp.txt Listing 8: two independent sort_idx calls in a par block; their
// barriers are aligned.
// CHECK-LABEL: func.func @par
// CHECK-SAME: (%[[A:.*]]: i32, %[[B:.*]]: i32, %[[N:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[IDX:.*]]:2 = pgpu.par -> (index, index) {
// CHECK-NEXT: %[[IA:.*]] = pgpu.sort_idx %[[A]] : i32
// CHECK-NEXT: pgpu.yield %[[IA]] : index
// CHECK-NEXT: }, {
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[IB:.*]] = pgpu.sort_idx %[[B]] : i32
// CHECK-NEXT: pgpu.yield %[[IB]] : index
// CHECK-NEXT: }
// CHECK-NEXT: arith.addi %[[IDX]]#0, %[[IDX]]#1 : index
// CHECK-NEXT: pgpu.par {
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @par(%a: i32, %b: i32, %n: index) {
  pgpu.spawn %n {
    %idx:2 = pgpu.par -> (index, index) {
      %ia = pgpu.sort_idx %a : i32
      pgpu.yield %ia : index
    }, {
      pgpu.barrier
      %ib = pgpu.sort_idx %b : i32
      pgpu.yield %ib : index
    }
    %sum = arith.addi %idx#0, %idx#1 : index
    pgpu.par {
      pgpu.barrier
    }
  }
  return
}

// bsgp.txt Listing 7: an inline function with barriers and host code.
// CHECK-LABEL: func.func @sort_idx_inline
// CHECK-SAME: (%[[X:.*]]: i32) -> index attributes {pgpu.spmd_inline}
// CHECK: %[[N:.*]] = pgpu.size : index
// CHECK-NEXT: %[[SORTED:.*]] = pgpu.require -> (memref<?xindex>) {
// CHECK-NEXT: %[[L:.*]] = pgpu.dtempnew [%[[N]]] : memref<?xindex>
// CHECK-NEXT: pgpu.yield %[[L]] : memref<?xindex>
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: pgpu.require {
// CHECK-NEXT: pgpu.size : index
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[I:.*]] = memref.load %[[SORTED]][%[[R]]] : memref<?xindex>
// CHECK-NEXT: %[[O:.*]] = pgpu.oldrank : index
// CHECK-NEXT: return %[[I]] : index
func.func @sort_idx_inline(%x: i32) -> index attributes {pgpu.spmd_inline} {
  %n = pgpu.size : index
  %sorted_id = pgpu.require -> (memref<?xindex>) {
    %l = pgpu.dtempnew [%n] : memref<?xindex>
    pgpu.yield %l : memref<?xindex>
  }
  pgpu.barrier
  pgpu.require {
    %m = pgpu.size : index
  }
  %r = pgpu.rank : index
  %i = memref.load %sorted_id[%r] : memref<?xindex>
  %o = pgpu.oldrank : index
  return %i : index
}

//===----------------------------------------------------------------------===//
// Groups (Fork)
//===----------------------------------------------------------------------===//

// fork-to-cuda.txt Figure 1: a group splits on a private condition; the
// subgroups merge again.
// CHECK-LABEL: func.func @group_split
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[P:.*]]: index)
// CHECK: pgpu.spawn synchronous %[[P]] {
// CHECK-NEXT: %[[ME:.*]] = pgpu.group.rank : index
// CHECK-NEXT: %[[ID:.*]] = pgpu.group.id : index
// CHECK-NEXT: %[[GS:.*]] = pgpu.group.size : index
// CHECK-NEXT: %[[LOC:.*]] = memref.load %[[A]][%[[ME]]] : memref<?xi32>
// CHECK-NEXT: %[[C:.*]] = arith.cmpi ult, %[[ME]], %[[GS]] : index
// CHECK-NEXT: %[[W:.*]] = pgpu.group.split %[[C]] -> (i32) {
// CHECK-NEXT: %[[SUB:.*]] = pgpu.group.rank : index
// CHECK-NEXT: %[[SUBI:.*]] = arith.index_cast %[[SUB]] : index to i32
// CHECK-NEXT: pgpu.group.merge %[[SUBI]] : i32
// CHECK-NEXT: } else {
// CHECK-NEXT: pgpu.group.merge %[[LOC]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: memref.store %[[W]], %[[A]][%[[ME]]] : memref<?xi32>
// CHECK-NEXT: pgpu.group.split %[[C]] {
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.group.split %[[C]] {
// CHECK-NEXT: } else {
// CHECK-NEXT: pgpu.group.id : index
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @group_split(%a: memref<?xi32>, %p: index) {
  pgpu.spawn synchronous %p {
    %me = pgpu.group.rank : index
    %id = pgpu.group.id : index
    %gs = pgpu.group.size : index
    %loc = memref.load %a[%me] : memref<?xi32>
    %c = arith.cmpi ult, %me, %gs : index
    %w = pgpu.group.split %c -> (i32) {
      %sub = pgpu.group.rank : index
      %subi = arith.index_cast %sub : index to i32
      pgpu.group.merge %subi : i32
    } else {
      pgpu.group.merge %loc : i32
    }
    memref.store %w, %a[%me] : memref<?xi32>
    pgpu.group.split %c {
      pgpu.barrier
    }
    pgpu.group.split %c {
    } else {
      %gid = pgpu.group.id : index
    }
  }
  return
}

// Fork's shared locals: memory of the group.
// CHECK-LABEL: func.func @group_alloc
// CHECK: %[[CELL:.*]] = pgpu.group.alloc : memref<i32>
// CHECK-NEXT: %[[ARRAY:.*]] = pgpu.group.alloc : memref<16xf32>
func.func @group_alloc(%p: index) {
  pgpu.spawn synchronous %p {
    %cell = pgpu.group.alloc : memref<i32>
    %array = pgpu.group.alloc : memref<16xf32>
    %me = pgpu.group.rank : index
    %x = arith.constant 1.0 : f32
    memref.store %x, %array[%me] : memref<16xf32>
  }
  return
}

// Fork's fork(k; @ = e1; $ = e2) (`$` is the frontend's value, not an
// operand), seq and farm.
// CHECK-LABEL: func.func @group_fork_seq_farm
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[P:.*]]: index, %[[K:.*]]: index)
// CHECK: pgpu.spawn synchronous %[[P]] {
// CHECK-NEXT: %[[ME:.*]] = pgpu.group.rank : index
// CHECK-NEXT: %[[E1:.*]] = arith.remui %[[ME]], %[[K]] : index
// CHECK-NEXT: pgpu.group.fork %[[K]] id %[[E1]] {
// CHECK-NEXT: pgpu.group.id : index
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: %[[F:.*]] = pgpu.group.fork %[[K]] id %[[E1]] -> (index) {
// CHECK-NEXT: %[[SZ:.*]] = pgpu.group.size : index
// CHECK-NEXT: pgpu.group.merge %[[SZ]] : index
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.seq {
// CHECK-NEXT: %[[X:.*]] = arith.index_cast %[[F]] : index to i32
// CHECK-NEXT: memref.store %[[X]], %[[A]][%[[ME]]] : memref<?xi32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[Y:.*]] = pgpu.farm -> (i32) {
// CHECK-NEXT: %[[L:.*]] = memref.load %[[A]][%[[ME]]] : memref<?xi32>
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: pgpu.yield %[[L]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.farm {
// CHECK-NEXT: pgpu.group.rank : index
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @group_fork_seq_farm(%a: memref<?xi32>, %p: index, %k: index) {
  pgpu.spawn synchronous %p {
    %me = pgpu.group.rank : index
    %e1 = arith.remui %me, %k : index
    pgpu.group.fork %k id %e1 {
      %g = pgpu.group.id : index
      pgpu.barrier
    }
    %f = pgpu.group.fork %k id %e1 -> (index) {
      %sz = pgpu.group.size : index
      pgpu.group.merge %sz : index
    }
    pgpu.seq {
      %x = arith.index_cast %f : index to i32
      memref.store %x, %a[%me] : memref<?xi32>
    }
    %y = pgpu.farm -> (i32) {
      %l = memref.load %a[%me] : memref<?xi32>
      pgpu.barrier
      pgpu.yield %l : i32
    }
    pgpu.farm {
      %r = pgpu.group.rank : index
    }
  }
  return
}

// A Fork synchronous function: group code outside the spawn that calls it.
// CHECK-LABEL: func.func @sync_function
// CHECK-SAME: attributes {pgpu.synchronous}
// CHECK: %[[ME:.*]] = pgpu.group.rank : index
// CHECK-NEXT: %[[C:.*]] = arith.cmpi eq, %[[ME]], %{{.*}} : index
// CHECK-NEXT: pgpu.group.split %[[C]] {
// CHECK-NEXT: pgpu.seq {
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.barrier
func.func @sync_function(%z: index) attributes {pgpu.synchronous} {
  %me = pgpu.group.rank : index
  %c = arith.cmpi eq, %me, %z : index
  pgpu.group.split %c {
    pgpu.seq {
    }
  }
  pgpu.barrier
  return
}

//===----------------------------------------------------------------------===//
// Threads (BSGP)
//===----------------------------------------------------------------------===//

// bsgp.txt Listing 6: number extraction with thread.fork and thread.kill.
// CHECK-LABEL: func.func @get_numbers
// CHECK-SAME: (%[[BEGIN:.*]]: memref<?xindex>, %[[END:.*]]: memref<?xindex>, %[[TEXT:.*]]: memref<?xi8>, %[[N:.*]]: index) -> memref<?xf32>
// CHECK: %[[RET:.*]] = memref.alloca() : memref<memref<?xf32>>
// CHECK-NEXT: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[ID:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[S:.*]] = memref.load %[[BEGIN]][%[[ID]]] : memref<?xindex>
// CHECK-NEXT: %[[E:.*]] = memref.load %[[END]][%[[ID]]] : memref<?xindex>
// CHECK-NEXT: %[[LEN:.*]] = arith.subi %[[E]], %[[S]] : index
// CHECK-NEXT: %[[CHILD:.*]] = pgpu.thread.fork %[[LEN]] : index
// CHECK-NEXT: %[[PT:.*]] = arith.addi %[[S]], %[[CHILD]] : index
// CHECK-NEXT: %[[CH:.*]] = memref.load %[[TEXT]][%[[PT]]] : memref<?xi8>
// CHECK-NEXT: %[[SPACE:.*]] = arith.constant 32 : i8
// CHECK-NEXT: %[[KILL:.*]] = arith.cmpi eq, %[[CH]], %[[SPACE]] : i8
// CHECK-NEXT: pgpu.thread.kill %[[KILL]]
// CHECK-NEXT: pgpu.require {
// CHECK-NEXT: %[[SIZE:.*]] = pgpu.size : index
// CHECK-NEXT: %[[L:.*]] = pgpu.dnew [%[[SIZE]]] : memref<?xf32>
// CHECK-NEXT: memref.store %[[L]], %[[RET]][] : memref<memref<?xf32>>
// CHECK-NEXT: }
// CHECK: %[[I:.*]] = pgpu.thread.fork %{{.*}} : i32
func.func @get_numbers(%begin: memref<?xindex>, %end: memref<?xindex>, %text: memref<?xi8>, %n: index) -> memref<?xf32> {
  %ret = memref.alloca() : memref<memref<?xf32>>
  pgpu.spawn %n {
    %id = pgpu.rank : index
    %s = memref.load %begin[%id] : memref<?xindex>
    %e = memref.load %end[%id] : memref<?xindex>
    %len = arith.subi %e, %s : index
    %child = pgpu.thread.fork %len : index
    %pt = arith.addi %s, %child : index
    %ch = memref.load %text[%pt] : memref<?xi8>
    %space = arith.constant 32 : i8
    %kill = arith.cmpi eq, %ch, %space : i8
    pgpu.thread.kill %kill
    pgpu.require {
      %size = pgpu.size : index
      %l = pgpu.dnew [%size] : memref<?xf32>
      memref.store %l, %ret[] : memref<memref<?xf32>>
    }
    %two = arith.constant 2 : i32
    %i = pgpu.thread.fork %two : i32
  }
  %r = memref.load %ret[] : memref<memref<?xf32>>
  return %r : memref<?xf32>
}

// bsgp.txt Listing 9 (thread.get), thread.put, thread.split.
// CHECK-LABEL: func.func @communication
// CHECK-SAME: (%[[IB:.*]]: memref<?xi32>, %[[N:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[RK:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[V:.*]] = memref.load %[[IB]][%[[RK]]] : memref<?xi32>
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[V]] : i32 to f32
// CHECK-NEXT: pgpu.thread.sortby %[[V]] : i32
// CHECK-NEXT: pgpu.thread.sortby %[[F]] : f32
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[PREV:.*]] = arith.subi %[[RK]], %[[C1]] : index
// CHECK-NEXT: %[[PV:.*]] = pgpu.thread.get %[[PREV]], %[[V]] : i32
// CHECK-NEXT: %[[P1:.*]] = pgpu.thread.put %[[PREV]], %[[F]], %[[F]] : f32
// CHECK-NEXT: pgpu.barrier
// CHECK-NEXT: %[[SIDE:.*]] = arith.cmpi slt, %[[PV]], %[[V]] : i32
// CHECK-NEXT: pgpu.thread.split %[[SIDE]]
// CHECK-NEXT: }
func.func @communication(%ib: memref<?xi32>, %n: index) {
  pgpu.spawn %n {
    %rk = pgpu.rank : index
    %v = memref.load %ib[%rk] : memref<?xi32>
    %f = arith.sitofp %v : i32 to f32
    pgpu.thread.sortby %v : i32
    pgpu.thread.sortby %f : f32
    pgpu.barrier
    %c1 = arith.constant 1 : index
    %prev = arith.subi %rk, %c1 : index
    %pv = pgpu.thread.get %prev, %v : i32
    %p1 = pgpu.thread.put %prev, %f, %f : f32
    pgpu.barrier
    %side = arith.cmpi slt, %pv, %v : i32
    pgpu.thread.split %side
  }
  return
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @collectives
// CHECK-SAME: (%[[X:.*]]: f32, %[[K:.*]]: i32, %[[LIST:.*]]: memref<?xf32>, %[[CTR:.*]]: memref<4x?xi32>, %[[N:.*]]: index, %[[BASE:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[SUM:.*]] = pgpu.reduce add %[[X]] : f32
// CHECK-NEXT: pgpu.reduce mul %[[X]] : f32
// CHECK-NEXT: pgpu.reduce min %[[K]] : i32
// CHECK-NEXT: pgpu.reduce max %[[X]] : f32
// CHECK-NEXT: pgpu.reduce umin %[[K]] : i32
// CHECK-NEXT: pgpu.reduce umax %[[N]] : index
// CHECK-NEXT: pgpu.reduce and %[[K]] : i32
// CHECK-NEXT: pgpu.reduce or %[[K]] : i32
// CHECK-NEXT: pgpu.reduce xor %[[K]] : i32
// CHECK-NEXT: %[[OFF:.*]], %[[TOT:.*]] = pgpu.scan add %[[K]] : i32
// CHECK-NEXT: %{{.*}}, %{{.*}} = pgpu.scan max %[[SUM]] inclusive : f32
// CHECK-NEXT: %[[KEEP:.*]] = arith.cmpi sgt, %[[OFF]], %[[TOT]] : i32
// CHECK-NEXT: %[[LEN:.*]] = pgpu.compact %[[X]] if %[[KEEP]] into %[[LIST]] at %[[BASE]] : memref<?xf32>
// CHECK-NEXT: %{{.*}} = pgpu.split %[[X]] by %[[KEEP]] into %[[LIST]] at %[[LEN]] : memref<?xf32>
// CHECK-NEXT: %{{.*}} = pgpu.sort_idx %[[K]] : i32
// CHECK-NEXT: %{{.*}} = pgpu.sort_idx %[[X]] : f32
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %{{.*}} = pgpu.multiprefix add %[[K]] to %[[CTR]][%[[BASE]], %[[R]]] : memref<4x?xi32>
// CHECK-NEXT: %{{.*}} = pgpu.multiprefix max %[[K]] to %[[CTR]][%[[BASE]], %[[R]]] : memref<4x?xi32>
// CHECK-NEXT: %{{.*}} = pgpu.multiprefix and %[[K]] to %[[CTR]][%[[BASE]], %[[R]]] : memref<4x?xi32>
// CHECK-NEXT: %{{.*}} = pgpu.multiprefix or %[[K]] to %[[CTR]][%[[BASE]], %[[R]]] : memref<4x?xi32>
// CHECK-NEXT: }
func.func @collectives(%x: f32, %k: i32, %list: memref<?xf32>, %ctr: memref<4x?xi32>, %n: index, %base: index) {
  pgpu.spawn %n {
    %sum = pgpu.reduce add %x : f32
    %prod = pgpu.reduce mul %x : f32
    %min = pgpu.reduce min %k : i32
    %max = pgpu.reduce max %x : f32
    %umin = pgpu.reduce umin %k : i32
    %umax = pgpu.reduce umax %n : index
    %and = pgpu.reduce and %k : i32
    %or = pgpu.reduce or %k : i32
    %xor = pgpu.reduce xor %k : i32
    %off, %tot = pgpu.scan add %k : i32
    %run, %top = pgpu.scan max %sum inclusive : f32
    %keep = arith.cmpi sgt, %off, %tot : i32
    %len = pgpu.compact %x if %keep into %list at %base : memref<?xf32>
    %len2 = pgpu.split %x by %keep into %list at %len : memref<?xf32>
    %i = pgpu.sort_idx %k : i32
    %j = pgpu.sort_idx %x : f32
    %r = pgpu.rank : index
    %t0 = pgpu.multiprefix add %k to %ctr[%base, %r] : memref<4x?xi32>
    %t1 = pgpu.multiprefix max %k to %ctr[%base, %r] : memref<4x?xi32>
    %t2 = pgpu.multiprefix and %k to %ctr[%base, %r] : memref<4x?xi32>
    %t3 = pgpu.multiprefix or %k to %ctr[%base, %r] : memref<4x?xi32>
  }
  return
}

// Multiprefix in Fork group code, on a scalar shared location.
// CHECK-LABEL: func.func @multiprefix_in_group
// CHECK-SAME: (%[[CTR:.*]]: memref<i32>, %[[P:.*]]: index)
// CHECK: pgpu.spawn synchronous %[[P]] {
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: pgpu.farm {
// CHECK-NEXT: pgpu.multiprefix add %[[ONE]] to %[[CTR]][] : memref<i32>
// CHECK-NEXT: }
func.func @multiprefix_in_group(%ctr: memref<i32>, %p: index) {
  pgpu.spawn synchronous %p {
    %one = arith.constant 1 : i32
    pgpu.farm {
      %ticket = pgpu.multiprefix add %one to %ctr[] : memref<i32>
    }
  }
  return
}

//===----------------------------------------------------------------------===//
// List operations (host level)
//===----------------------------------------------------------------------===//

// The global phases of the collectives and of thread.fork on the plain
// lists of kernel splitting.
// CHECK-LABEL: func.func @list_ops
// CHECK-SAME: (%[[V:.*]]: memref<?xi32>, %[[F:.*]]: memref<?xf32>, %[[FLAGS:.*]]: memref<?xi1>, %[[IDX:.*]]: memref<?xindex>, %[[OUT:.*]]: memref<?xi32>, %[[N:.*]]: index, %[[B:.*]]: index)
// CHECK-NEXT: %{{.*}} = pgpu.list.reduce add %[[V]][%[[N]]] : memref<?xi32> -> i32
// CHECK-NEXT: %{{.*}} = pgpu.list.reduce umin %[[V]][%[[N]]] : memref<?xi32> -> i32
// CHECK-NEXT: %{{.*}} = pgpu.list.reduce max %[[F]][%[[N]]] : memref<?xf32> -> f32
// CHECK-NEXT: %{{.*}} = pgpu.list.scan add %[[V]], %[[OUT]][%[[N]]] : memref<?xi32>, memref<?xi32> -> i32
// CHECK-NEXT: %{{.*}} = pgpu.list.scan mul %[[F]], %[[F]][%[[N]]] inclusive : memref<?xf32>, memref<?xf32> -> f32
// CHECK-NEXT: pgpu.list.sort_idx %[[F]], %[[IDX]][%[[N]]] : memref<?xf32>, memref<?xindex>
// CHECK-NEXT: pgpu.list.sort_idx %[[V]], %[[IDX]][%[[N]]] sorted %[[OUT]] : memref<?xi32>, memref<?xindex>, memref<?xi32>
// CHECK-NEXT: %[[LEN:.*]] = pgpu.list.compact %[[V]], %[[FLAGS]], %[[OUT]][%[[N]]] base %[[B]] : memref<?xi32>, memref<?xi1>, memref<?xi32>
// CHECK-NEXT: %{{.*}} = pgpu.list.split %[[V]], %[[FLAGS]], %[[OUT]][%[[N]]] base %[[LEN]] : memref<?xi32>, memref<?xi1>, memref<?xi32>
// CHECK-NEXT: %{{.*}} = pgpu.list.expand %[[V]], %[[IDX]], %[[OUT]][%[[N]]] : memref<?xi32>, memref<?xindex>, memref<?xi32> -> index
// CHECK-NEXT: return
func.func @list_ops(%v: memref<?xi32>, %f: memref<?xf32>, %flags: memref<?xi1>, %idx: memref<?xindex>, %out: memref<?xi32>, %n: index, %b: index) {
  %sum = pgpu.list.reduce add %v[%n] : memref<?xi32> -> i32
  %umin = pgpu.list.reduce umin %v[%n] : memref<?xi32> -> i32
  %max = pgpu.list.reduce max %f[%n] : memref<?xf32> -> f32
  %total = pgpu.list.scan add %v, %out[%n] : memref<?xi32>, memref<?xi32> -> i32
  %prod = pgpu.list.scan mul %f, %f[%n] inclusive : memref<?xf32>, memref<?xf32> -> f32
  pgpu.list.sort_idx %f, %idx[%n] : memref<?xf32>, memref<?xindex>
  pgpu.list.sort_idx %v, %idx[%n] sorted %out : memref<?xi32>, memref<?xindex>, memref<?xi32>
  %len = pgpu.list.compact %v, %flags, %out[%n] base %b : memref<?xi32>, memref<?xi1>, memref<?xi32>
  %len2 = pgpu.list.split %v, %flags, %out[%n] base %len : memref<?xi32>, memref<?xi1>, memref<?xi32>
  %m = pgpu.list.expand %v, %idx, %out[%n] : memref<?xi32>, memref<?xindex>, memref<?xi32> -> index
  return
}

// In pgpu.require, on the frontend's strided views and static shapes.
// CHECK-LABEL: func.func @list_ops_in_require
// CHECK-SAME: (%[[K:.*]]: memref<?xi64, strided<[1], offset: ?>>, %[[I:.*]]: memref<?xindex, strided<[1], offset: ?>>, %[[S:.*]]: memref<8xf64>, %[[N:.*]]: index)
// CHECK: pgpu.spawn %[[N]] {
// CHECK-NEXT: pgpu.require {
// CHECK-NEXT: %[[SZ:.*]] = pgpu.size : index
// CHECK-NEXT: pgpu.list.sort_idx %[[K]], %[[I]][%[[SZ]]] : memref<?xi64, strided<[1], offset: ?>>, memref<?xindex, strided<[1], offset: ?>>
// CHECK-NEXT: %{{.*}} = pgpu.list.reduce xor %[[K]][%[[SZ]]] : memref<?xi64, strided<[1], offset: ?>> -> i64
// CHECK-NEXT: %{{.*}} = pgpu.list.scan min %[[S]], %[[S]][%[[SZ]]] : memref<8xf64>, memref<8xf64> -> f64
// CHECK-NEXT: %{{.*}} = pgpu.list.expand %[[K]], %[[I]], %[[K]][%[[SZ]]] : memref<?xi64, strided<[1], offset: ?>>, memref<?xindex, strided<[1], offset: ?>>, memref<?xi64, strided<[1], offset: ?>> -> index
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @list_ops_in_require(%k: memref<?xi64, strided<[1], offset: ?>>, %i: memref<?xindex, strided<[1], offset: ?>>, %s: memref<8xf64>, %n: index) {
  pgpu.spawn %n {
    pgpu.require {
      %size = pgpu.size : index
      pgpu.list.sort_idx %k, %i[%size] : memref<?xi64, strided<[1], offset: ?>>, memref<?xindex, strided<[1], offset: ?>>
      %x = pgpu.list.reduce xor %k[%size] : memref<?xi64, strided<[1], offset: ?>> -> i64
      %y = pgpu.list.scan min %s, %s[%size] : memref<8xf64>, memref<8xf64> -> f64
      %m = pgpu.list.expand %k, %i, %k[%size] : memref<?xi64, strided<[1], offset: ?>>, memref<?xindex, strided<[1], offset: ?>>, memref<?xi64, strided<[1], offset: ?>> -> index
    }
  }
  return
}

//===----------------------------------------------------------------------===//
// Host interaction
//===----------------------------------------------------------------------===//

// bsgp.txt Listing 1 with Listing 4's host code: require, dtempnew,
// dtempfree, and a statically sized dnew.
// CHECK-LABEL: func.func @find_faces
// CHECK-SAME: (%[[PF:.*]]: memref<?xi32>, %[[HD:.*]]: memref<?xi32>, %[[IB:.*]]: memref<?xi32>, %[[N:.*]]: index)
// CHECK: %[[N3:.*]] = arith.muli %[[N]], %{{.*}} : index
// CHECK-NEXT: pgpu.spawn %[[N3]] {
// CHECK: pgpu.thread.sortby %{{.*}} : i32
// CHECK-NEXT: %[[OWNER:.*]] = pgpu.require -> (memref<?xi32>) {
// CHECK-NEXT: %[[L:.*]] = pgpu.dtempnew [%[[N]]] : memref<?xi32>
// CHECK-NEXT: pgpu.yield %[[L]] : memref<?xi32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[RK:.*]] = pgpu.rank : index
// CHECK: memref.store %{{.*}}, %[[OWNER]][%[[RK]]] : memref<?xi32>
// CHECK-NEXT: pgpu.barrier
// CHECK: }
// CHECK-NEXT: pgpu.dtempfree
// CHECK-NEXT: %{{.*}} = pgpu.dnew [] : memref<16xf32>
// CHECK-NEXT: %{{.*}} = pgpu.dtempnew [%[[N]], %[[N]]] : memref<?x4x?xi64>
func.func @find_faces(%pf: memref<?xi32>, %hd: memref<?xi32>, %ib: memref<?xi32>, %n: index) {
  %c3 = arith.constant 3 : index
  %n3 = arith.muli %n, %c3 : index
  pgpu.spawn %n3 {
    %rk0 = pgpu.rank : index
    %f = arith.divui %rk0, %c3 : index
    %v = memref.load %ib[%rk0] : memref<?xi32>
    pgpu.thread.sortby %v : i32
    %owner = pgpu.require -> (memref<?xi32>) {
      %l = pgpu.dtempnew [%n] : memref<?xi32>
      pgpu.yield %l : memref<?xi32>
    }
    %rk = pgpu.rank : index
    %fi = arith.index_cast %f : index to i32
    memref.store %fi, %pf[%rk] : memref<?xi32>
    memref.store %v, %owner[%rk] : memref<?xi32>
    pgpu.barrier
  }
  pgpu.dtempfree
  %static = pgpu.dnew [] : memref<16xf32>
  %temp = pgpu.dtempnew [%n, %n] : memref<?x4x?xi64>
  return
}

// A task group: a task per loop iteration and one in a branch, each
// launching a spawn; the yields are implicit, a nested group is its own.
// CHECK-LABEL: func.func @taskgroup
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[N:.*]]: index, %[[C:.*]]: i1)
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: scf.for %[[G:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT: pgpu.task {
// CHECK-NEXT: pgpu.spawn %[[N]] {
// CHECK-NEXT: %[[R:.*]] = pgpu.rank : index
// CHECK-NEXT: %[[V:.*]] = arith.index_cast %[[G]] : index to i32
// CHECK-NEXT: memref.store %[[V]], %[[A]][%[[R]]] : memref<?xi32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.if %[[C]] {
// CHECK-NEXT: pgpu.task {
// CHECK-NEXT: pgpu.taskgroup {
// CHECK-NEXT: pgpu.task {
// CHECK-NEXT: pgpu.dtempfree
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @taskgroup(%a: memref<?xi32>, %n: index, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.taskgroup {
    scf.for %g = %c0 to %n step %c1 {
      pgpu.task {
        pgpu.spawn %n {
          %r = pgpu.rank : index
          %v = arith.index_cast %g : index to i32
          memref.store %v, %a[%r] : memref<?xi32>
        }
      }
    }
    scf.if %c {
      pgpu.task {
        pgpu.taskgroup {
          pgpu.task {
            pgpu.dtempfree
          }
        }
      }
    }
  }
  return
}

//===----------------------------------------------------------------------===//
// Speculation (GPU-TLS)
//===----------------------------------------------------------------------===//

// gpu-tls.txt Listing 2: the CFD loop, speculated with a window and a warp.
// CHECK-LABEL: func.func @cfd
// CHECK-SAME: (%[[LEFT:.*]]: memref<?xindex>, %[[RIGHT:.*]]: memref<?xindex>, %[[X:.*]]: memref<?xf64>, %[[Y:.*]]: memref<?xf64>, %[[N:.*]]: index)
// CHECK: pgpu.spec.loop %[[I:.*]] = %[[C0:.*]] to %[[N]] step %[[C1:.*]] window(1024) warp(32) {
// CHECK-NEXT: %[[N1:.*]] = memref.load %[[LEFT]][%[[I]]] : memref<?xindex>
// CHECK-NEXT: %[[N2:.*]] = memref.load %[[RIGHT]][%[[I]]] : memref<?xindex>
// CHECK-NEXT: %[[X1:.*]] = memref.load %[[X]][%[[N1]]] : memref<?xf64>
// CHECK-NEXT: %[[Y1:.*]] = pgpu.spec.load %[[Y]][%[[N1]]] : memref<?xf64>
// CHECK-NEXT: %[[S1:.*]] = arith.addf %[[Y1]], %[[X1]] : f64
// CHECK-NEXT: pgpu.spec.store %[[S1]], %[[Y]][%[[N1]]] : memref<?xf64>
// CHECK-NEXT: %[[Y2:.*]] = pgpu.spec.load %[[Y]][%[[N2]]] : memref<?xf64>
// CHECK-NEXT: %[[S2:.*]] = arith.subf %[[Y2]], %[[X1]] : f64
// CHECK-NEXT: pgpu.spec.store %[[S2]], %[[Y]][%[[N2]]] : memref<?xf64>
// CHECK-NEXT: }
func.func @cfd(%left: memref<?xindex>, %right: memref<?xindex>, %x: memref<?xf64>, %y: memref<?xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.spec.loop %i = %c0 to %n step %c1 window(1024) warp(32) {
    %n1 = memref.load %left[%i] : memref<?xindex>
    %n2 = memref.load %right[%i] : memref<?xindex>
    %x1 = memref.load %x[%n1] : memref<?xf64>
    %y1 = pgpu.spec.load %y[%n1] : memref<?xf64>
    %s1 = arith.addf %y1, %x1 : f64
    pgpu.spec.store %s1, %y[%n1] : memref<?xf64>
    %y2 = pgpu.spec.load %y[%n2] : memref<?xf64>
    %s2 = arith.subf %y2, %x1 : f64
    pgpu.spec.store %s2, %y[%n2] : memref<?xf64>
  }
  return
}

// The clauses are optional; accesses may be nested in other control flow.
// CHECK-LABEL: func.func @spec_forms
// CHECK-SAME: (%[[A:.*]]: memref<8x?xi32>, %[[LB:.*]]: index, %[[UB:.*]]: index, %[[ST:.*]]: index, %[[C:.*]]: i1)
// CHECK: pgpu.spec.loop %[[I:.*]] = %[[LB]] to %[[UB]] step %[[ST]] {
// CHECK-NEXT: scf.if %[[C]] {
// CHECK-NEXT: %[[V:.*]] = pgpu.spec.load %[[A]][%[[LB]], %[[I]]] : memref<8x?xi32>
// CHECK-NEXT: pgpu.spec.store %[[V]], %[[A]][%[[LB]], %[[UB]]] : memref<8x?xi32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.spec.loop %{{.*}} = %[[LB]] to %[[UB]] step %[[ST]] window(64) {
// CHECK-NEXT: }
// CHECK-NEXT: pgpu.spec.loop %{{.*}} = %[[LB]] to %[[UB]] step %[[ST]] warp(32) {
// CHECK-NEXT: } {unroll}
func.func @spec_forms(%a: memref<8x?xi32>, %lb: index, %ub: index, %st: index, %c: i1) {
  pgpu.spec.loop %i = %lb to %ub step %st {
    scf.if %c {
      %v = pgpu.spec.load %a[%lb, %i] : memref<8x?xi32>
      pgpu.spec.store %v, %a[%lb, %ub] : memref<8x?xi32>
    }
  }
  pgpu.spec.loop %i = %lb to %ub step %st window(64) {
  }
  pgpu.spec.loop %i = %lb to %ub step %st warp(32) {
  } {unroll}
  return
}

//===----------------------------------------------------------------------===//
// Host I/O
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @host_io
// CHECK-SAME: (%[[K:.*]]: i32, %[[D:.*]]: i64)
// CHECK: %[[N:.*]] = pgpu.argi %[[K]] default %[[D]] : i32, i64
// CHECK-NEXT: %[[T:.*]] = pgpu.wtime : f64
// CHECK-NEXT: pgpu.rand_seed %[[K]] : i32
// CHECK-NEXT: %[[R:.*]] = pgpu.rand_u32 : i32
// CHECK-NEXT: pgpu.printf "n=%ld t=%.3f r=%u %x %c 100%%\0A"(%[[N]], %[[T]], %[[R]], %[[R]], %[[K]]) : i64, f64, i32, i32, i32
// CHECK-NEXT: pgpu.printf "done\0A"
// CHECK: pgpu.spawn
// CHECK-NEXT: %[[I:.*]] = pgpu.rank : index
// CHECK-NEXT: pgpu.printf "rank %d\0A"(%[[I]]) : index
func.func @host_io(%k: i32, %d: i64) {
  %n = pgpu.argi %k default %d : i32, i64
  %t = pgpu.wtime : f64
  pgpu.rand_seed %k : i32
  %r = pgpu.rand_u32 : i32
  pgpu.printf "n=%ld t=%.3f r=%u %x %c 100%%\n"(%n, %t, %r, %r, %k) : i64, f64, i32, i32, i32
  pgpu.printf "done\n"
  %c4 = arith.constant 4 : index
  pgpu.spawn %c4 {
    %i = pgpu.rank : index
    pgpu.printf "rank %d\n"(%i) : index
  }
  return
}

// -----

// A grid spawn: one kernel whose barriers are grid-wide.
// CHECK-LABEL: func.func @grid_spawn
// CHECK: pgpu.spawn grid %{{.*}} {
// CHECK-NEXT: pgpu.rank
// CHECK-NEXT: pgpu.barrier
func.func @grid_spawn(%n: index) {
  pgpu.spawn grid %n {
    %r = pgpu.rank : index
    pgpu.barrier
  }
  return
}

// A block spawn: one thread block whose threads synchronize in ranges, also
// in the block-group functions it calls.
// CHECK-LABEL: func.func private @block_half
// CHECK-SAME: attributes {pgpu.block_group}
// CHECK: pgpu.range_barrier %{{.*}}, %{{.*}}, %{{.*}}
func.func private @block_half(%first: index, %count: index, %slot: index) attributes {pgpu.block_group} {
  pgpu.range_barrier %first, %count, %slot
  return
}

// CHECK-LABEL: func.func @block_spawn
// CHECK: pgpu.block_capacity : index
// CHECK: pgpu.multiprocessors : index
// CHECK: pgpu.lockstep_width : index
// CHECK: pgpu.spawn block %{{.*}} {
// CHECK-NEXT: pgpu.rank
// CHECK-NEXT: pgpu.range_barrier
// CHECK-NEXT: func.call @block_half
func.func @block_spawn(%n: index, %half: index, %slot: index) {
  %c0 = arith.constant 0 : index
  %max = pgpu.block_capacity : index
  %sms = pgpu.multiprocessors : index
  %lanes = pgpu.lockstep_width : index
  pgpu.spawn block %n {
    %r = pgpu.rank : index
    pgpu.range_barrier %c0, %n, %slot
    func.call @block_half(%c0, %half, %c0) : (index, index, index) -> ()
  }
  return
}

// Fork's async functions read the group structure.
// CHECK-LABEL: func.func @async_reads_group
// CHECK: pgpu.group.rank : index
// CHECK: pgpu.group.size : index
func.func @async_reads_group() -> index attributes {pgpu.spmd_inline} {
  %r = pgpu.group.rank : index
  %s = pgpu.group.size : index
  %t = arith.addi %r, %s : index
  return %t : index
}
