// RUN: pgpu-opt %s --pgpu-count-sm-cycles | FileCheck %s
// Running it twice adds nothing more.
// RUN: pgpu-opt %s --pgpu-count-sm-cycles --pgpu-count-sm-cycles | FileCheck %s --check-prefix=TWICE
// A module that already has one of the pass's symbols is an error.
// RUN: %expect-exit 1 pgpu-opt %S/Inputs/count-sm-cycles-clash.mlir --pgpu-count-sm-cycles 2>&1 | FileCheck %s --check-prefix=CLASH

// The module gets the zeroed table the runtime looks up (8 ways for each
// of 256 multiprocessors, starts then ends), the shared count of a block's
// finished warps, and the two recorders. A block's first thread zeroes the
// count, the block waits at a barrier, then the first thread folds its
// clock (read before) into its slot ((smid & 255) * 8 + (block & 7)) as
// the earliest start; at the end lane 0 of each warp counts its warp, and
// the warp that completes the count folds its clock in as the latest end.
// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.mlir.global external @pgpu_sm_cycles() {addr_space = 1 : i32} : !llvm.array<4096 x i64>
// CHECK: llvm.mlir.zero : !llvm.array<4096 x i64>
// CHECK: llvm.mlir.global internal @pgpu_sm_cycles_warps_done() {addr_space = 3 : i32} : i32
// CHECK-LABEL: llvm.func internal @pgpu_sm_cycles_slot(
// CHECK: nvvm.read.ptx.sreg.smid
// CHECK: llvm.mlir.constant(255 : i32)
// CHECK: llvm.and
// CHECK: llvm.shl
// CHECK: nvvm.read.ptx.sreg.ctaid.x
// CHECK: llvm.mlir.constant(7 : i32)
// CHECK: llvm.and
// CHECK: llvm.or
// CHECK: llvm.getelementptr
// CHECK-LABEL: llvm.func internal @pgpu_sm_cycles_start(
// CHECK: nvvm.read.ptx.sreg.tid.x
// CHECK: llvm.icmp "eq"
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.call @pgpu_sm_cycles_slot
// CHECK: llvm.atomicrmw umin
// CHECK-LABEL: llvm.func internal @pgpu_sm_cycles_end(
// CHECK: nvvm.read.ptx.sreg.laneid
// CHECK: llvm.atomicrmw add %{{.*}} monotonic : !llvm.ptr<3>, i32
// CHECK: nvvm.read.ptx.sreg.ntid.x
// CHECK: llvm.lshr
// CHECK: llvm.icmp "eq"
// CHECK: llvm.mlir.constant(2048 : i32)
// CHECK: llvm.call @pgpu_sm_cycles_slot
// CHECK: llvm.atomicrmw umax
// A kernel reads the clock first (after its wait for the previous kernel)
// and again before each return.
// CHECK-LABEL: llvm.func @scale(
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: %[[START:.*]] = nvvm.read.ptx.sreg.clock64 : i64
// CHECK-NEXT: llvm.call @pgpu_sm_cycles_start(%[[START]])
// CHECK-NEXT: llvm.load
// CHECK: llvm.store
// CHECK-NEXT: %[[END:.*]] = nvvm.read.ptx.sreg.clock64 : i64
// CHECK-NEXT: llvm.call @pgpu_sm_cycles_end(%[[END]])
// CHECK-NEXT: llvm.return
// Other functions are not instrumented.
// CHECK-LABEL: llvm.func @helper(
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func @two_returns(
// CHECK-NEXT: nvvm.read.ptx.sreg.clock64
// CHECK-NEXT: llvm.call @pgpu_sm_cycles_start
// CHECK-NEXT: llvm.cond_br
// CHECK: ^bb1:
// CHECK-NEXT: nvvm.read.ptx.sreg.clock64
// CHECK-NEXT: llvm.call @pgpu_sm_cycles_end
// CHECK-NEXT: llvm.return
// CHECK: ^bb2:
// CHECK: llvm.store
// CHECK-NEXT: nvvm.read.ptx.sreg.clock64
// CHECK-NEXT: llvm.call @pgpu_sm_cycles_end
// CHECK-NEXT: llvm.return
// A module without kernels gets no table.
// CHECK-LABEL: gpu.module @no_kernels
// CHECK-NOT: pgpu_sm_cycles
// CHECK: llvm.func @only_helper

// TWICE-COUNT-1: llvm.mlir.global external @pgpu_sm_cycles
// TWICE-NOT: llvm.mlir.global external @pgpu_sm_cycles
// TWICE-LABEL: llvm.func @scale(
// TWICE-COUNT-1: llvm.call @pgpu_sm_cycles_start
// TWICE-NOT: llvm.call @pgpu_sm_cycles_start
// TWICE-LABEL: llvm.func @helper(

// CLASH: error: cannot count cycles: the module already has a symbol @pgpu_sm_cycles_start

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @scale(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      nvvm.griddepcontrol wait
      %x = llvm.load %p : !llvm.ptr<1> -> f32
      %y = llvm.fmul %x, %x : f32
      llvm.store %y, %p : f32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func @helper(%x: f32) -> f32 {
      llvm.return %x : f32
    }
    llvm.func @two_returns(%p: !llvm.ptr<1>, %c: i1) attributes {nvvm.kernel} {
      llvm.cond_br %c, ^bb1, ^bb2
    ^bb1:
      llvm.return
    ^bb2:
      %z = llvm.mlir.constant(0 : i32) : i32
      llvm.store %z, %p : i32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @no_kernels {
    llvm.func @only_helper() {
      llvm.return
    }
  }
}
