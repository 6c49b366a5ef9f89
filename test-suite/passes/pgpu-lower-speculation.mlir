// pgpu-lower-speculation: a speculative loop becomes a host window loop of
// kernels (speculative execution, lazy check, commit, clean-up) on
// one meta-data list, its body a function of the iteration and thread whose
// speculative accesses call the GPU-TLS library; the serial commit is one
// thread committing the window in order; the direct-update scheme writes
// in place (its own load and store helpers), checks every dependence and
// undoes instead of committing. Runs are in run/speculate/.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-lower-speculation{window=128 warp=8})' | FileCheck %s
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-lower-speculation{commit=serial})' | FileCheck %s --check-prefix=SERIAL
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-lower-speculation{commit=direct})' | FileCheck %s --check-prefix=DIRECT
// RUN: not pgpu-opt %s --pass-pipeline='builtin.module(pgpu-lower-speculation{commit=sideways})' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-lower-speculation,pgpu-inline-spmd)' | FileCheck %s --check-prefix=INLINED

// CHECK-LABEL: func.func private @__pgpu_spec_body_0_0(
// CHECK-SAME: pgpu.spmd_inline
// The indirect store is tracked (site 0, true), the direct store of Out[i]
// buffered untracked (site 1, false), the load of Y speculative.
// CHECK: call @__pgpu_tls_load_memref__xf64_(
// CHECK: call @__pgpu_tls_store_memref__xf64_({{.*}}, %c0_i64, %true)
// CHECK: call @__pgpu_tls_store_memref__xf64_({{.*}}, %c1_i64, %false)
// CHECK: func.func private @__pgpu_spec_commit_0_0(
// CHECK: scf.index_switch
// CHECK: case 0
// CHECK: case 1
// CHECK-LABEL: func.func @scatter(
// CHECK-NOT: pgpu.spec.
// CHECK: %[[WINDOW:.*]] = arith.constant 128 : index
// CHECK: %[[WARP:.*]] = arith.constant 8 : index
// CHECK: memref.alloc({{.*}}) : memref<?xi64>
// CHECK: scf.while
// CHECK: pgpu.spawn
// CHECK: call @__pgpu_spec_body_0_0(
// CHECK: pgpu.spawn
// CHECK: call @__pgpu_tls_check(
// CHECK-NOT: __pgpu_tls_claim
// CHECK: pgpu.spawn
// CHECK: call @__pgpu_spec_commit_0_0(
// The clean-up is launched with the window's kernels unless the window
// covers the rest of the loop; then only when the read-back shows that
// another window follows (a violation without overflow).
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: } else {
// CHECK-NEXT: pgpu.spawn
// CHECK: call @__pgpu_tls_cleanup(
// CHECK: %[[SHORT:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[KEPT:.*]] = arith.xori %{{.*}}, %true
// CHECK-NEXT: %[[AGAIN:.*]] = arith.andi %[[SHORT]], %[[KEPT]] : i1
// CHECK-NEXT: %[[LATE:.*]] = arith.andi %[[LAST]], %[[AGAIN]] : i1
// CHECK-NEXT: scf.if %[[LATE]] {
// CHECK-NEXT: pgpu.spawn
// CHECK: call @__pgpu_tls_cleanup(

// SERIAL: pgpu.lockstep_width : index
// SERIAL: pgpu.spawn %c1{{(_[0-9]+)?}} {
// SERIAL: scf.for
// SERIAL: call @__pgpu_spec_commit_0_0({{.*}}, %true

// The first writer of an element loads its old value before the atomic
// that makes it the first, and every writer stores in place only after
// that atomic: fences order both (the kernels' atomics are relaxed).
// DIRECT-LABEL: func.func private @__pgpu_du_write(
// DIRECT: llvm.fence syncscope("device") acq_rel
// DIRECT-NEXT: memref.atomic_rmw mins
// DIRECT-NEXT: llvm.fence syncscope("device") acq_rel
// DIRECT-LABEL: func.func private @__pgpu_spec_body_0_0(
// Both stores are in place and tracked (an undone iteration must not leave
// its direct store behind), the load reads memory and is recorded.
// DIRECT: call @__pgpu_du_load_memref__xf64_(
// DIRECT: call @__pgpu_du_store_memref__xf64_({{.*}}, %c0_i64, %true)
// DIRECT: call @__pgpu_du_store_memref__xf64_({{.*}}, %c1_i64, %false)
// DIRECT-NOT: call @__pgpu_tls_load
// DIRECT: func.func private @__pgpu_spec_commit_0_0({{.*}}: index, %{{.*}}: index, %{{.*}}: memref<?xf64>, %{{.*}}: memref<?xf64>)
// DIRECT: call @__pgpu_du_entry(
// DIRECT: scf.index_switch
// DIRECT-LABEL: func.func @scatter(
// DIRECT: pgpu.spawn
// DIRECT: call @__pgpu_spec_body_0_0(
// DIRECT: pgpu.spawn
// DIRECT: call @__pgpu_du_check(
// DIRECT-NOT: __pgpu_tls_claim
// DIRECT: pgpu.spawn
// DIRECT: call @__pgpu_spec_commit_0_0(
// DIRECT: pgpu.spawn
// DIRECT: call @__pgpu_tls_cleanup(
// A window whose first thread must not commit (it read a value a later
// thread wrote in place) is followed by a window of that thread alone.
// DIRECT: %[[STUCK:.*]] = arith.cmpi eq, %{{.*}}, %c0{{(_[0-9]+)?}} : index
// DIRECT-NEXT: arith.select %[[STUCK]], %c1{{(_[0-9]+)?}}, %{{.*}} : index

// BAD: commit must be parallel, serial or direct, not `sideways`

// INLINED-NOT: call @__pgpu_tls
// INLINED-NOT: call @__pgpu_spec
// Each speculative access is a region whose lockstep lanes leave it
// together (pgpu-reconverge-warps brackets it on the GPU): the load, then
// both stores.
// INLINED: scf.execute_region -> f64 no_inline {
// INLINED: memref.generic_atomic_rmw
// INLINED: } {pgpu.reconverge}
// INLINED: scf.execute_region no_inline {
// INLINED: } {pgpu.reconverge}
// INLINED: scf.execute_region no_inline {
// INLINED: } {pgpu.reconverge}

func.func @scatter(%Y: memref<?xf64>, %Out: memref<?xf64>, %idx: memref<?xindex>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.spec.loop %i = %c0 to %n step %c1 {
    %j = memref.load %idx[%i] : memref<?xindex>
    %y = pgpu.spec.load %Y[%j] : memref<?xf64>
    %one = arith.constant 1.0 : f64
    %y1 = arith.addf %y, %one : f64
    pgpu.spec.store %y1, %Y[%j] : memref<?xf64>
    memref.store %y, %Out[%i] : memref<?xf64>
  }
  return
}
