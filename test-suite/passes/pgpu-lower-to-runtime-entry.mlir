// RUN: pgpu-opt %s --pgpu-lower-to-runtime | FileCheck %s

// Lists: dnew is a memref.alloc for the program's life; a dtempnew list is
// recorded with the runtime, and dtempfree frees what the function recorded
// since its entry. @main becomes @pgpu_main behind a C entry.
// CHECK-LABEL: func.func @main(%{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK-NEXT: call @pgpu_rt_init(%{{.*}}, %{{.*}}) : (i32, !llvm.ptr) -> ()
// Global arrays become runtime blocks (device mirrors), with their sizes in
// bytes; a global list variable holds a descriptor and is not one.
// CHECK-NEXT: %[[TABLE:.*]] = memref.get_global @table : memref<4x5xi16>
// CHECK-NEXT: %[[TABLE_INDEX:.*]] = memref.extract_aligned_pointer_as_index %[[TABLE]]
// CHECK-NEXT: %[[TABLE_INT:.*]] = arith.index_cast %[[TABLE_INDEX]] : index to i64
// CHECK-NEXT: %[[TABLE_PTR:.*]] = llvm.inttoptr %[[TABLE_INT]] : i64 to !llvm.ptr
// CHECK-NEXT: %[[TABLE_BYTES:.*]] = arith.constant 40 : i64
// CHECK-NEXT: call @pgpu_rt_register_global(%[[TABLE_PTR]], %[[TABLE_BYTES]]) : (!llvm.ptr, i64) -> ()
// An array of zero bits is registered as such: its device copy is a memset.
// CHECK-NEXT: memref.get_global @count : memref<i32>
// CHECK: %[[COUNT_BYTES:.*]] = arith.constant 4 : i64
// CHECK-NEXT: call @pgpu_rt_register_zero_global(%{{.*}}, %[[COUNT_BYTES]])
// CHECK-NEXT: memref.get_global @weights : memref<2xf32>
// CHECK: call @pgpu_rt_register_zero_global(
// CHECK-NEXT: memref.get_global @flags : memref<3xi1>
// CHECK: call @pgpu_rt_register_zero_global(
// Minus zero is not zero bits.
// CHECK-NEXT: memref.get_global @minus_zero : memref<2xf64>
// CHECK: call @pgpu_rt_register_global(
// CHECK-NOT: @list
// CHECK: %[[STATUS:.*]] = call @pgpu_main() : () -> i32
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
memref.global @table : memref<4x5xi16> = dense<1>
memref.global @count : memref<i32> = dense<0>
memref.global @weights : memref<2xf32> = dense<0.0>
memref.global @flags : memref<3xi1> = dense<false>
memref.global @minus_zero : memref<2xf64> = dense<-0.0>
memref.global @list : memref<memref<?xi32>> = uninitialized
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
