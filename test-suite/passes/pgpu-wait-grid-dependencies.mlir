// RUN: pgpu-opt %s --pgpu-wait-grid-dependencies | FileCheck %s
// Running it twice adds nothing more.
// RUN: pgpu-opt %s --pgpu-wait-grid-dependencies --pgpu-wait-grid-dependencies | FileCheck %s --check-prefix=TWICE

// Every kernel starts by waiting for its grid dependencies; its module gets
// the marker global the runtime looks up; other functions are untouched.
// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.mlir.global external constant @pgpu_waits_for_grid_dependencies(1 : i32) {addr_space = 1 : i32} : i32
// CHECK-LABEL: llvm.func @scale(
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: llvm.load
// CHECK-LABEL: llvm.func @helper(
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @other(
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NOT: griddepcontrol launch_dependents
// A kernel marked pgpu.launch_dependents (the collectives' kernels) also
// lets its dependents launch before each of its returns.
// CHECK-LABEL: llvm.func @marked(
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: llvm.cond_br
// CHECK: ^bb1:
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: llvm.return
// CHECK: ^bb2:
// CHECK: llvm.store
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: llvm.return
// A module without kernels gets no marker.
// CHECK-LABEL: gpu.module @no_kernels
// CHECK-NOT: pgpu_waits_for_grid_dependencies
// CHECK: llvm.func @only_helper

// TWICE-COUNT-1: pgpu_waits_for_grid_dependencies
// TWICE-NOT: pgpu_waits_for_grid_dependencies
// TWICE: llvm.func @scale(
// TWICE-NEXT: nvvm.griddepcontrol wait
// TWICE-NEXT: llvm.load
// TWICE-COUNT-2: griddepcontrol launch_dependents
// TWICE-NOT: griddepcontrol launch_dependents

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @scale(%p: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %x = llvm.load %p : !llvm.ptr<1> -> f32
      %y = llvm.fmul %x, %x : f32
      llvm.store %y, %p : f32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func @helper(%x: f32) -> f32 {
      llvm.return %x : f32
    }
    llvm.func @other() attributes {nvvm.kernel} {
      llvm.return
    }
    llvm.func @marked(%p: !llvm.ptr<1>, %c: i1) attributes {gpu.kernel, nvvm.kernel, pgpu.launch_dependents} {
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
