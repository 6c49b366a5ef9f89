// RUN: pgpu-opt %s --pgpu-propagate-group-ranks | FileCheck %s
// The program computes the same before and after.
// RUN: pgpu-opt %s --pgpu-propagate-group-ranks -o %t.mlir
// RUN: pgpu run --interpret %t.mlir > %t.after
// RUN: pgpu run --interpret %s > %t.before
// RUN: diff %t.before %t.after
// RUN: FileCheck %s --check-prefix=OUT < %t.after
// OUT: direct 0 1 2 3 | chained 0 1 2 3 | in split 0 1 0 1 | outer 0 1 2 3

memref.global @direct : memref<4xi32> = dense<0>
memref.global @chained : memref<4xi32> = dense<0>
memref.global @insplit : memref<4xi32> = dense<0>
memref.global @outer : memref<4xi32> = dense<0>

// Every call passes the calling group's rank (Fork's `$` at a start body's
// statement level): the parameter's uses become the callee's own rank,
// read at its entry and cast to the parameter's type.
// CHECK-LABEL: func.func @direct_rank(
// CHECK-SAME: %[[ME:[^:]*]]: i32)
// CHECK-NEXT: %[[RANK:.*]] = pgpu.group.rank : index
// CHECK-NEXT: %[[CAST:.*]] = arith.index_cast %[[RANK]] : index to i32
// CHECK: memref.store %[[CAST]]
// The call passes the propagated parameter on at the function's statement
// level: the callee's parameter is a rank too.
// CHECK: call @chained_rank(%[[CAST]])
func.func @direct_rank(%me: i32) attributes {pgpu.synchronous} {
  %g = memref.get_global @direct : memref<4xi32>
  %i = arith.index_cast %me : i32 to index
  memref.store %me, %g[%i] : memref<4xi32>
  func.call @chained_rank(%me) : (i32) -> ()
  return
}

// CHECK-LABEL: func.func @chained_rank(
// CHECK-NEXT: %[[RANK:.*]] = pgpu.group.rank : index
// CHECK-NEXT: %[[CAST:.*]] = arith.index_cast %[[RANK]] : index to i32
// CHECK: memref.store %[[CAST]]
func.func @chained_rank(%me: i32) attributes {pgpu.synchronous} {
  %g = memref.get_global @chained : memref<4xi32>
  %i = arith.index_cast %me : i32 to index
  memref.store %me, %g[%i] : memref<4xi32>
  return
}

// Called inside a split with the rank read in that subgroup: the rank of
// the calling group.
// CHECK-LABEL: func.func @split_rank(
// CHECK-SAME: %[[ME:[^:]*]]: index, %[[SLOT:[^:]*]]: index)
// CHECK-NEXT: %[[RANK:.*]] = pgpu.group.rank : index
// CHECK: arith.index_cast %[[RANK]] : index to i32
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[SLOT]]]
func.func @split_rank(%me: index, %slot: index) attributes {pgpu.synchronous} {
  %g = memref.get_global @insplit : memref<4xi32>
  %v = arith.index_cast %me : index to i32
  memref.store %v, %g[%slot] : memref<4xi32>
  return
}

// Called inside a split with the rank of the enclosing group (what Fork's
// `$` is in a subgroup): not the callee's rank, the parameter stays.
// CHECK-LABEL: func.func @outer_rank(
// CHECK-SAME: %[[ME:[^:]*]]: index)
// CHECK-NOT: pgpu.group.rank
// CHECK: arith.index_cast %[[ME]] : index to i32
func.func @outer_rank(%me: index) attributes {pgpu.synchronous} {
  %g = memref.get_global @outer : memref<4xi32>
  %v = arith.index_cast %me : index to i32
  memref.store %v, %g[%me] : memref<4xi32>
  return
}

// A function without calls keeps its parameters.
// CHECK-LABEL: func.func @uncalled(
// CHECK-NOT: pgpu.group.rank
// CHECK: return
func.func @uncalled(%me: i32) attributes {pgpu.synchronous} {
  %g = memref.get_global @outer : memref<4xi32>
  %c0 = arith.constant 0 : index
  memref.store %me, %g[%c0] : memref<4xi32>
  return
}

// CHECK-LABEL: func.func @main
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  pgpu.spawn synchronous %c4 {
    %rank = pgpu.group.rank : index
    %me = arith.index_cast %rank : index to i32
    func.call @direct_rank(%me) : (i32) -> ()
    %c2 = arith.constant 2 : index
    %low = arith.cmpi ult, %rank, %c2 : index
    pgpu.group.split %low {
      %sub = pgpu.group.rank : index
      func.call @split_rank(%sub, %rank) : (index, index) -> ()
      func.call @outer_rank(%rank) : (index) -> ()
    } else {
      %sub = pgpu.group.rank : index
      func.call @split_rank(%sub, %rank) : (index, index) -> ()
      func.call @outer_rank(%rank) : (index) -> ()
    }
    pgpu.yield
  }
  %direct = memref.get_global @direct : memref<4xi32>
  %chained = memref.get_global @chained : memref<4xi32>
  %insplit = memref.get_global @insplit : memref<4xi32>
  %outer = memref.get_global @outer : memref<4xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.printf "direct"
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %direct[%i] : memref<4xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf " | chained"
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %chained[%i] : memref<4xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf " | in split"
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %insplit[%i] : memref<4xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf " | outer"
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %outer[%i] : memref<4xi32>
    pgpu.printf " %d"(%x) : i32
  }
  pgpu.printf "\n"
  %z = arith.constant 0 : i32
  return %z : i32
}
