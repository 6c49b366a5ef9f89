// RUN: pgpu-opt %s --pgpu-lower-to-runtime | FileCheck %s

// Lists: dnew is a memref.alloc for the program's life; a dtempnew list is
// recorded with the runtime, and dtempfree frees what the function recorded
// since its entry. @main becomes @pgpu_main behind a C entry.
// CHECK-LABEL: func.func @main(%{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK-NEXT: call @pgpu_rt_init(%{{.*}}, %{{.*}}) : (i32, !llvm.ptr) -> ()
// CHECK-NEXT: %[[STATUS:.*]] = call @pgpu_main() : () -> i32
// Kernels still running on a GPU report their errors before the exit.
// CHECK-NEXT: call @pgpu_rt_fini() : () -> ()
// CHECK-NEXT: return %[[STATUS]] : i32
// CHECK-DAG: func.func private @pgpu_rt_init(i32, !llvm.ptr)
// CHECK-DAG: func.func private @pgpu_rt_dtemp_register(!llvm.ptr)
// CHECK-DAG: func.func private @pgpu_rt_dtemp_mark() -> i64
// CHECK-DAG: func.func private @pgpu_rt_dtempfree(i64)
// CHECK-LABEL: func.func @lists
// CHECK-NEXT: %[[MARK:.*]] = call @pgpu_rt_dtemp_mark() : () -> i64
// CHECK: %[[KEEP:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: %[[TEMP:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[TEMP]]
// CHECK: call @pgpu_rt_dtemp_register(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK: call @pgpu_rt_dtempfree(%[[MARK]]) : (i64) -> ()
// CHECK: return %[[KEEP]]
// CHECK-LABEL: func.func @pgpu_main() -> i32
// CHECK: call @lists
// CHECK-NOT: pgpu.
func.func @lists(%n: index) -> memref<?xi32> {
  %keep = pgpu.dnew [%n] : memref<?xi32>
  %temp = pgpu.dtempnew [%n] : memref<?xf32>
  pgpu.dtempfree
  return %keep : memref<?xi32>
}
func.func @main() -> i32 {
  %c4 = arith.constant 4 : index
  %l = func.call @lists(%c4) : (index) -> memref<?xi32>
  %zero = arith.constant 0 : i32
  return %zero : i32
}
