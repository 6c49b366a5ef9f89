// RUN: pgpu-opt %s --pgpu-outline-cpu-kernels | FileCheck %s
// Running the outlined kernels: test-suite/run/native/examples.test.

func.func private @pgpu_rt_printf_end()

// A kernel with a unit range: memrefs, an i32 and an index travel in the
// context; the constant is cloned.
func.func @scale(%out: memref<?xi32>, %in: memref<?xi32, strided<[1], offset: ?>>, %n: index, %factor: i32, %shift: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : i32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = arith.addi %i, %shift : index
    %x = memref.load %in[%j] : memref<?xi32, strided<[1], offset: ?>>
    %y = arith.muli %x, %factor : i32
    %z = arith.addi %y, %c7 : i32
    memref.store %z, %out[%i] : memref<?xi32>
    scf.reduce
  }
  return
}

// A kernel over 2, 5, 8, ...: lower bound and step travel too.
func.func @strided(%out: memref<?xf32>, %lb: index, %ub: index, %step: index, %v: f32) {
  scf.parallel (%i) = (%lb) to (%ub) step (%step) {
    memref.store %v, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// Loops that stay: one that prints, one with a reduction.
func.func @stay(%out: memref<?xi64>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    func.call @pgpu_rt_printf_end() : () -> ()
    scf.reduce
  }
  %sum = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%c0) -> index {
    scf.reduce(%i : index) {
    ^bb0(%a: index, %b: index):
      %s = arith.addi %a, %b : index
      scf.reduce.return %s : index
    }
  }
  return %sum : index
}

// CHECK-DAG: func.func private @pgpu_rt_parallel_for(i64, (!llvm.ptr, i64, i64) -> (), !llvm.ptr)
// CHECK-LABEL: func.func @scale(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?xi32>, %[[IN:[^:]*]]: memref<?xi32, strided<[1], offset: ?>>, %[[N:[^:]*]]: index, %[[FACTOR:[^:]*]]: i32, %[[SHIFT:[^:]*]]: index)
// One context struct per kernel, on the stack at the function's entry.
// CHECK: %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>, i32, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
// CHECK: %[[F0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK-NEXT: %[[SHIFT64:.*]] = arith.index_cast %[[SHIFT]] : index to i64
// CHECK-NEXT: llvm.store %[[SHIFT64]], %[[F0]] : i64, !llvm.ptr
// CHECK: %[[F1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK-NEXT: %[[DESC:.*]] = builtin.unrealized_conversion_cast %[[IN]] : memref<?xi32, strided<[1], offset: ?>> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK-NEXT: llvm.store %[[DESC]], %[[F1]]
// CHECK: llvm.store %[[FACTOR]], %{{.*}} : i32, !llvm.ptr
// CHECK: %[[TRIPS:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT: %[[BODY:.*]] = constant @scale_kernel0 : (!llvm.ptr, i64, i64) -> ()
// CHECK-NEXT: call @pgpu_rt_parallel_for(%[[TRIPS]], %[[BODY]], %[[CTX]])
// CHECK-NOT: scf.parallel
// CHECK: return

// CHECK-LABEL: func.func private @scale_kernel0(
// CHECK-SAME: %[[KCTX:[^:]*]]: !llvm.ptr, %[[BEGIN:[^:]*]]: i64, %[[END:[^:]*]]: i64)
// CHECK: %[[G0:.*]] = llvm.getelementptr %[[KCTX]][0, 0]
// CHECK-NEXT: %[[L0:.*]] = llvm.load %[[G0]] : !llvm.ptr -> i64
// CHECK-NEXT: %[[KSHIFT:.*]] = arith.index_cast %[[L0]] : i64 to index
// CHECK: %[[L1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK-NEXT: %[[KIN:.*]] = builtin.unrealized_conversion_cast %[[L1]] : {{.*}} to memref<?xi32, strided<[1], offset: ?>>
// CHECK: %[[KFACTOR:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: %[[KOUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// The constant is cloned, not captured.
// CHECK: %[[C7:.*]] = arith.constant 7 : i32
// CHECK: %[[LO:.*]] = arith.index_cast %[[BEGIN]] : i64 to index
// CHECK-NEXT: %[[HI:.*]] = arith.index_cast %[[END]] : i64 to index
// CHECK: scf.parallel (%[[I:.*]]) = (%[[LO]]) to (%[[HI]]) step
// CHECK-NEXT: %[[J:.*]] = arith.addi %[[I]], %[[KSHIFT]] : index
// CHECK-NEXT: %[[X:.*]] = memref.load %[[KIN]][%[[J]]]
// CHECK-NEXT: %[[Y:.*]] = arith.muli %[[X]], %[[KFACTOR]] : i32
// CHECK-NEXT: %[[Z:.*]] = arith.addi %[[Y]], %[[C7]] : i32
// CHECK-NEXT: memref.store %[[Z]], %[[KOUT]][%[[I]]]

// A general range: the host passes max(0, ceil((ub - lb) / step)) trips,
// the kernel maps iteration j to lb + j * step.
// CHECK-LABEL: func.func @strided(
// CHECK-SAME: %{{[^:]*}}: memref<?xf32>, %[[LB:[^:]*]]: index, %[[UB:[^:]*]]: index, %[[STEP:[^:]*]]: index
// CHECK: %[[SPAN:.*]] = arith.subi %[[UB]], %[[LB]] : index
// CHECK-NEXT: %[[CEIL:.*]] = arith.ceildivsi %[[SPAN]], %[[STEP]] : index
// CHECK: %[[COUNT:.*]] = arith.maxsi %[[CEIL]], %{{.*}} : index
// CHECK: %[[COUNT64:.*]] = arith.index_cast %[[COUNT]] : index to i64
// CHECK: call @pgpu_rt_parallel_for(%[[COUNT64]],
// CHECK-LABEL: func.func private @strided_kernel0(
// CHECK: %[[KLB:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[KSTEP:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: scf.parallel (%[[K:.*]]) =
// CHECK-NEXT: %[[SCALED:.*]] = arith.muli %[[K]], %[[KSTEP]] : index
// CHECK-NEXT: %[[ORIG:.*]] = arith.addi %[[KLB]], %[[SCALED]] : index
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[ORIG]]]

// CHECK-LABEL: func.func @stay(
// CHECK-NOT: pgpu_rt_parallel_for
// CHECK: scf.parallel
// CHECK-NEXT: func.call @pgpu_rt_printf_end()
// CHECK: scf.parallel {{.*}} init
// CHECK-NOT: pgpu_rt_parallel_for
// CHECK: return
