// RUN: pgpu-opt %s --pgpu-relax-atomics | FileCheck %s
// The AMDGPU pipeline names its own scope for the same atomics.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-relax-atomics{scope=agent})' | FileCheck %s --check-prefix=AGENT
// AGENT-LABEL: llvm.func @probe(
// AGENT: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} syncscope("agent") monotonic monotonic : !llvm.ptr<1>, i64
// AGENT: llvm.atomicrmw min %{{.*}}, %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, i64
// AGENT: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("block") acq_rel : !llvm.ptr<1>, i32
// With host=true the host functions' atomics become relaxed at system
// scope (no syncscope) and the kernels' stay as they are.
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-relax-atomics{host=true})' | FileCheck %s --check-prefix=HOST
// HOST-LABEL: llvm.func @probe(
// HOST: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} acq_rel monotonic : !llvm.ptr<1>, i64
// HOST: llvm.atomicrmw xchg %{{.*}}, %{{.*}} acq_rel : !llvm.ptr<1>, i32
// HOST-LABEL: llvm.func @host(
// HOST: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i64
// HOST-NEXT: llvm.store %{{.*}}, %{{.*}} atomic monotonic {alignment = 8 : i64} : f64, !llvm.ptr
// HOST-NEXT: %{{.*}} = llvm.atomicrmw xchg %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i64
// HOST-NEXT: llvm.return %{{.*}} : i64
// A scope that is not a name is an error.
// RUN: %expect-exit 1 pgpu-opt %s --pass-pipeline='builtin.module(pgpu-relax-atomics{scope="a b"})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: option 'scope' has the invalid value 'a b'

// The memref lowering's atomics (acq_rel, no scope) in a kernel become
// relaxed at device scope, as CUDA's atomic functions are.
// CHECK-LABEL: llvm.func @probe(
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} syncscope("device") monotonic monotonic : !llvm.ptr<1>, i64
// CHECK: llvm.atomicrmw min %{{.*}}, %{{.*}} syncscope("device") monotonic : !llvm.ptr<1>, i64
// An atomic that names its scope keeps scope and ordering; a relaxed one
// without scope (the collectives' shared-memory counters) stays as it is.
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("block") acq_rel : !llvm.ptr<1>, i32
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} monotonic : !llvm.ptr<3>, i32
// An exchange whose old value nobody reads (a Fork common write) is a
// relaxed atomic store, aligned to its size; one whose value is read stays
// an exchange.
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} atomic syncscope("device") monotonic {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK-NEXT: %[[OLD:.*]] = llvm.atomicrmw xchg %{{.*}}, %{{.*}} syncscope("device") monotonic : !llvm.ptr<1>, i32
// CHECK-NEXT: llvm.store %[[OLD]]
// Host code is not rewritten.
// CHECK-LABEL: llvm.func @host(
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} acq_rel monotonic : !llvm.ptr, i64

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @probe(%table: !llvm.ptr<1>, %counters: !llvm.ptr<3>, %key: i64, %one: i32) attributes {gpu.kernel, nvvm.kernel} {
      %zero = llvm.mlir.constant(0 : i64) : i64
      %pair = llvm.cmpxchg %table, %zero, %key acq_rel monotonic : !llvm.ptr<1>, i64
      %old = llvm.atomicrmw min %table, %key acq_rel : !llvm.ptr<1>, i64
      %scoped = llvm.atomicrmw add %table, %one syncscope("block") acq_rel : !llvm.ptr<1>, i32
      %shared = llvm.atomicrmw add %counters, %one monotonic : !llvm.ptr<3>, i32
      %common = llvm.atomicrmw xchg %table, %one acq_rel : !llvm.ptr<1>, i32
      %read = llvm.atomicrmw xchg %table, %one acq_rel : !llvm.ptr<1>, i32
      llvm.store %read, %table : i32, !llvm.ptr<1>
      llvm.return
    }
  }
  llvm.func @host(%table: !llvm.ptr, %key: i64, %real: f64) -> i64 {
    %zero = llvm.mlir.constant(0 : i64) : i64
    %pair = llvm.cmpxchg %table, %zero, %key acq_rel monotonic : !llvm.ptr, i64
    %common = llvm.atomicrmw xchg %table, %real acq_rel : !llvm.ptr, f64
    %read = llvm.atomicrmw xchg %table, %key acq_rel : !llvm.ptr, i64
    llvm.return %read : i64
  }
}
