// RUN: pgpu-opt %s --pgpu-lower-to-runtime | FileCheck %s

// Task groups and tasks become their bodies, in place, between calls of the
// runtime; nested groups and tasks in host control flow too.
// CHECK-DAG: func.func private @pgpu_rt_tasks_begin()
// CHECK-DAG: func.func private @pgpu_rt_tasks_end()
// CHECK-DAG: func.func private @pgpu_rt_task_begin()
// CHECK-DAG: func.func private @pgpu_rt_task_end()
// CHECK-LABEL: func.func @tasks
// CHECK-SAME: (%[[A:.*]]: memref<?xi32>, %[[N:.*]]: index, %[[C:.*]]: i1)
// CHECK: call @pgpu_rt_tasks_begin() : () -> ()
// CHECK-NEXT: call @pgpu_rt_task_begin() : () -> ()
// CHECK-NEXT: %[[L:.*]] = memref.alloc(%[[N]]) : memref<?xi32>
// CHECK-NEXT: memref.dealloc %[[L]] : memref<?xi32>
// CHECK-NEXT: call @pgpu_rt_task_end() : () -> ()
// CHECK-NEXT: scf.for %[[G:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT: call @pgpu_rt_task_begin() : () -> ()
// CHECK-NEXT: %[[V:.*]] = arith.index_cast %[[G]] : index to i32
// CHECK-NEXT: memref.store %[[V]], %[[A]][%[[G]]] : memref<?xi32>
// CHECK-NEXT: call @pgpu_rt_task_end() : () -> ()
// CHECK-NEXT: }
// CHECK-NEXT: scf.if %[[C]] {
// CHECK-NEXT: call @pgpu_rt_task_begin() : () -> ()
// CHECK-NEXT: call @pgpu_rt_tasks_begin() : () -> ()
// CHECK-NEXT: call @pgpu_rt_task_begin() : () -> ()
// CHECK-NEXT: llvm.mlir.addressof @pgpu_format_0
// CHECK-NEXT: arith.constant 7 : i64
// CHECK-NEXT: call @pgpu_rt_printf_begin
// CHECK-NEXT: call @pgpu_rt_printf_end() : () -> ()
// CHECK-NEXT: call @pgpu_rt_task_end() : () -> ()
// CHECK-NEXT: call @pgpu_rt_tasks_end() : () -> ()
// CHECK-NEXT: call @pgpu_rt_task_end() : () -> ()
// CHECK-NEXT: }
// CHECK-NEXT: call @pgpu_rt_tasks_end() : () -> ()
// CHECK-NEXT: return
// CHECK-NOT: pgpu.task
// CHECK-NOT: pgpu.yield
func.func @tasks(%a: memref<?xi32>, %n: index, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.taskgroup {
    pgpu.task {
      %l = pgpu.dnew [%n] : memref<?xi32>
      memref.dealloc %l : memref<?xi32>
    }
    scf.for %g = %c0 to %n step %c1 {
      pgpu.task {
        %v = arith.index_cast %g : index to i32
        memref.store %v, %a[%g] : memref<?xi32>
      }
    }
    scf.if %c {
      pgpu.task {
        pgpu.taskgroup {
          pgpu.task {
            pgpu.printf "nested\n"
          }
        }
      }
    }
  }
  return
}

// An empty group and an empty task keep their calls.
// CHECK-LABEL: func.func @empty
// CHECK-NEXT: call @pgpu_rt_tasks_begin() : () -> ()
// CHECK-NEXT: call @pgpu_rt_task_begin() : () -> ()
// CHECK-NEXT: call @pgpu_rt_task_end() : () -> ()
// CHECK-NEXT: call @pgpu_rt_tasks_end() : () -> ()
// CHECK-NEXT: return
func.func @empty() {
  pgpu.taskgroup {
    pgpu.task {
    }
  }
  return
}
