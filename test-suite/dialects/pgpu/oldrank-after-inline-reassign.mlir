// pgpu.oldrank is defined after a call of an inline SPMD function that
// reassigns ranks (directly, or through another inline function), as BSGP
// builds thread.sortby: the verifier accepts it (issue 39, point 5; it
// rejected the module with an internal message).
// RUN: pgpu-opt %s | FileCheck %s

func.func private @reverse_ranks() attributes {pgpu.spmd_inline} {
  pgpu.barrier rank_reassigned
  %r = pgpu.rank : index
  %n = pgpu.size : index
  %c1 = arith.constant 1 : index
  %last = arith.subi %n, %c1 : index
  %old = arith.subi %last, %r : index
  pgpu.set_oldrank %old
  return
}

func.func private @twice() attributes {pgpu.spmd_inline} {
  func.call @reverse_ranks() : () -> ()
  func.call @reverse_ranks() : () -> ()
  return
}

// CHECK-LABEL: func.func @direct
// CHECK: func.call @reverse_ranks()
// CHECK-NEXT: pgpu.oldrank : index
func.func @direct(%n: index) {
  pgpu.spawn %n {
    func.call @reverse_ranks() : () -> ()
    %o = pgpu.oldrank : index
  }
  return
}

// CHECK-LABEL: func.func @nested
// CHECK: func.call @twice()
// CHECK-NEXT: pgpu.oldrank : index
func.func @nested(%n: index) {
  pgpu.spawn %n {
    func.call @twice() : () -> ()
    %o = pgpu.oldrank : index
  }
  return
}
