// RUN: pgpu-opt %s --pgpu-reconverge-warps | FileCheck %s
// Running it twice adds nothing more (the marker is gone after the first).
// RUN: pgpu-opt %s --pgpu-reconverge-warps --pgpu-reconverge-warps | FileCheck %s --check-prefix=TWICE

// A marked region in a kernel is bracketed: the lanes that arrive together
// are read before it, and exactly those are waited for after it. The
// region itself stays (convert-scf-to-cf lowers it) without its marker.
// CHECK-LABEL: gpu.func @probe(
// CHECK: %[[LANES:.*]] = llvm.inline_asm has_side_effects "activemask.b32 $0;", "=r" : () -> i32
// CHECK-NEXT: %[[FOUND:.*]] = scf.execute_region -> index no_inline {
// CHECK: scf.while
// CHECK: memref.atomic_rmw
// CHECK: } do {
// CHECK: scf.yield
// CHECK: scf.yield
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NEXT: nvvm.bar.warp.sync %[[LANES]] : i32
// CHECK-NEXT: memref.store %[[FOUND]]
// A region without results, nested in a loop, gets the same.
// CHECK: scf.for
// CHECK: %[[INNER:.*]] = llvm.inline_asm has_side_effects "activemask.b32 $0;"
// CHECK-NEXT: scf.execute_region no_inline {
// CHECK: nvvm.bar.warp.sync %[[INNER]] : i32
// An unmarked region is left alone.
// CHECK-LABEL: gpu.func @unmarked(
// CHECK-NOT: activemask
// CHECK-NOT: bar.warp.sync
// CHECK: gpu.return
// So is a marked region in host code (the CPU device has no lanes to wait
// for): only gpu.modules are rewritten.
// CHECK-LABEL: func.func @host(
// CHECK-NOT: activemask
// CHECK: } {pgpu.reconverge}
// CHECK-NOT: bar.warp.sync
// CHECK: return

// TWICE-COUNT-2: activemask
// TWICE-NOT: activemask

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @probe(%table: memref<?xi64>, %out: memref<?xindex>, %key: i64) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %found = scf.execute_region -> index no_inline {
        %slot = scf.while (%p = %c0) : (index) -> index {
          %old = memref.atomic_rmw maxs %key, %table[%p] : (i64, memref<?xi64>) -> i64
          %taken = arith.cmpi ne, %old, %key : i64
          scf.condition(%taken) %p : index
        } do {
        ^bb0(%p: index):
          %next = arith.addi %p, %c1 : index
          scf.yield %next : index
        }
        scf.yield %slot : index
      } {pgpu.reconverge}
      memref.store %found, %out[%c0] : memref<?xindex>
      scf.for %i = %c0 to %found step %c1 {
        scf.execute_region no_inline {
          %k = arith.index_cast %i : index to i64
          %old = memref.atomic_rmw addi %k, %table[%i] : (i64, memref<?xi64>) -> i64
          scf.yield
        } {pgpu.reconverge}
      }
      gpu.return
    }
    gpu.func @unmarked(%table: memref<?xi64>) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1 : i64
      scf.execute_region no_inline {
        %old = memref.atomic_rmw addi %one, %table[%c0] : (i64, memref<?xi64>) -> i64
        scf.yield
      }
      gpu.return
    }
  }
  func.func @host(%table: memref<?xi64>) {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1 : i64
    scf.execute_region no_inline {
      %old = memref.atomic_rmw addi %one, %table[%c0] : (i64, memref<?xi64>) -> i64
      scf.yield
    } {pgpu.reconverge}
    return
  }
}
