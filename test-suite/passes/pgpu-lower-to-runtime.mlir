// RUN: pgpu-opt %s --pgpu-lower-to-runtime | FileCheck %s --implicit-check-not=@square
// Compiled through upstream's LLVM lowering and linked with the runtime
// library, the program prints what the interpreter prints.
// RUN: pgpu run --interpret --entry pgpu_main %s -- 7 > %t.expected
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(pgpu-lower-to-runtime,convert-scf-to-cf,expand-strided-metadata,finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-ub-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)' -o %t.llvm.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.llvm.mlir -o %t.ll
// RUN: %clang -Wno-override-module -O1 %t.ll %S/Inputs/runtime-main.c %pgpu_runtime_lib -lpthread -ldl -lm -o %t.exe
// RUN: %t.exe 7 > %t.actual
// RUN: diff %t.expected %t.actual
// RUN: FileCheck %s --check-prefix=OUT < %t.actual

// CHECK-DAG: func.func private @pgpu_rt_argi(i32, i32) -> i32
// CHECK-DAG: func.func private @pgpu_rt_printf_begin(!llvm.ptr, i64)
// CHECK-DAG: func.func private @pgpu_rt_list_reduce(i32, i32, !llvm.ptr, i64) -> i64
// CHECK-DAG: llvm.mlir.global internal constant @pgpu_format_{{[0-9]+}}("n %d sum %d max %f first %ld wtime-ok %d\0A\00")
// CHECK-LABEL: func.func @pgpu_main
// CHECK: %[[N:.*]] = call @pgpu_rt_argi(%{{.*}}, %{{.*}}) : (i32, i32) -> i32
// CHECK: call @pgpu_rt_rand_seed(%{{.*}}) : (i64) -> ()
// CHECK: call @pgpu_rt_rand_u32() : () -> i32
// The list's element 0: aligned pointer plus the view's offset.
// CHECK: %[[ALIGNED:.*]] = memref.extract_aligned_pointer_as_index %[[LIST:.*]] :
// CHECK: %{{.*}}, %[[OFFSET:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[LIST]]
// CHECK: %[[BITS:.*]] = call @pgpu_rt_list_reduce(%{{.*}}) : (i32, i32, !llvm.ptr, i64) -> i64
// CHECK-NEXT: %[[SUM:.*]] = arith.trunci %[[BITS]] : i64 to i32
// CHECK: call @pgpu_rt_grid_capacity() : () -> index
// A block spawn left to this pass (the CPU target's) reports its misuse;
// code versioned on the block capacity (0 on the CPU device) never runs
// it. Its block-group function, which nothing else calls, is erased.
// CHECK: %[[BLOCK_MAX:.*]] = call @pgpu_rt_block_capacity() : () -> index
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %{{.*}}, %[[BLOCK_MAX]] : index
// CHECK-NEXT: %[[SMS:.*]] = call @pgpu_rt_multiprocessors() : () -> index
// CHECK-NEXT: %[[BUSY:.*]] = arith.cmpi uge, %{{.*}}, %[[SMS]] : index
// CHECK-NEXT: %[[TAKEN:.*]] = arith.andi %[[FITS]], %[[BUSY]] : i1
// CHECK-NEXT: scf.if %[[TAKEN]] {
// CHECK-NEXT: call @pgpu_rt_block_unavailable() : () -> ()
// CHECK-NEXT: } else {
// CHECK: call @pgpu_rt_list_scan
// CHECK: call @pgpu_rt_list_sort_idx
// CHECK: call @pgpu_rt_list_compact
// CHECK: call @pgpu_rt_list_split
// CHECK: call @pgpu_rt_list_expand
// CHECK: %[[LANES:.*]] = call @pgpu_rt_lockstep_width() : () -> index
// CHECK-NEXT: %[[LOCKSTEP:.*]] = arith.cmpi uge, %[[LANES]], %{{.*}} : index
// CHECK: call @pgpu_rt_printf_begin
// CHECK: call @pgpu_rt_printf_i64
// CHECK: call @pgpu_rt_printf_f64
// CHECK: call @pgpu_rt_printf_end() : () -> ()
// CHECK-NOT: pgpu.
// OUT: n 7 sum {{[0-9-]+}} max {{.*}} first {{[0-9]+}} wtime-ok 1
// OUT-NEXT: scan total 21 prefix 15 sorted first {{[0-6]}} compacted 3 split 7 expanded 21
// OUT-NEXT: squares 0 36 lockstep-ok 1

// Thread t of the range [0, count) of a block spawn stores t * t.
func.func private @square(%t: index, %count: index, %a: memref<?xi32>) attributes {pgpu.block_group} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %x = arith.index_cast %t : index to i32
  %y = arith.muli %x, %x : i32
  memref.store %y, %a[%t] : memref<?xi32>
  %slot = arith.muli %count, %c2 : index
  pgpu.range_barrier %c0, %count, %slot
  return
}

func.func @pgpu_main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %four = arith.constant 4 : i32
  %n32 = pgpu.argi %zero default %four : i32, i32
  %n = arith.index_cast %n32 : i32 to index
  %seed = arith.constant 3 : i64
  pgpu.rand_seed %seed : i64
  %values = memref.alloc(%n) : memref<?xi32>
  %floats = memref.alloc(%n) : memref<?xf32>
  %flags = memref.alloc(%n) : memref<?xi1>
  scf.for %i = %c0 to %n step %c1 {
    %r = pgpu.rand_u32 : i32
    memref.store %r, %values[%i] : memref<?xi32>
    %f = arith.uitofp %r : i32 to f32
    memref.store %f, %floats[%i] : memref<?xf32>
    %i32 = arith.index_cast %i : index to i32
    %two = arith.constant 2 : i32
    %rem = arith.remsi %i32, %two : i32
    %odd = arith.cmpi ne, %rem, %zero : i32
    memref.store %odd, %flags[%i] : memref<?xi1>
  }
  %sum = pgpu.list.reduce add %values[%n] : memref<?xi32> -> i32
  %max = pgpu.list.reduce max %floats[%n] : memref<?xf32> -> f32
  %max64 = arith.extf %max : f32 to f64
  %capacity = pgpu.grid_capacity : index
  %squares = memref.alloc(%n) : memref<?xi32>
  %block_max = pgpu.block_capacity : index
  %fits = arith.cmpi ule, %n, %block_max : index
  %sms = pgpu.multiprocessors : index
  %busy = arith.cmpi uge, %n, %sms : index
  %run = arith.andi %fits, %busy : i1
  scf.if %run {
    pgpu.spawn block %n {
      %t = pgpu.rank : index
      %size = pgpu.size : index
      func.call @square(%t, %size, %squares) : (index, index, memref<?xi32>) -> ()
    }
  } else {
    scf.for %i = %c0 to %n step %c1 {
      %x = arith.index_cast %i : index to i32
      %y = arith.muli %x, %x : i32
      memref.store %y, %squares[%i] : memref<?xi32>
    }
  }
  %start = pgpu.wtime : f64
  %later = pgpu.wtime : f64
  %ok = arith.cmpf oge, %later, %start : f64
  %ok32 = arith.extui %ok : i1 to i32
  // Counts 0 .. n-1: scan, sort, compact, split, expand.
  %counts = memref.alloc(%n) : memref<?xi32>
  scf.for %i = %c0 to %n step %c1 {
    %i32 = arith.index_cast %i : index to i32
    memref.store %i32, %counts[%i] : memref<?xi32>
  }
  %scanned = memref.alloc(%n) : memref<?xi32>
  %total = pgpu.list.scan add %counts, %scanned[%n] : memref<?xi32>, memref<?xi32> -> i32
  %c6 = arith.constant 6 : index
  %prefix = memref.load %scanned[%c6] : memref<?xi32>
  %order = memref.alloc(%n) : memref<?xindex>
  pgpu.list.sort_idx %values, %order[%n] : memref<?xi32>, memref<?xindex>
  %first = memref.load %order[%c0] : memref<?xindex>
  %kept = memref.alloc(%n) : memref<?xi32>
  %compacted = pgpu.list.compact %counts, %flags, %kept[%n] base %c0 : memref<?xi32>, memref<?xi1>, memref<?xi32>
  %halves = memref.alloc(%n) : memref<?xi32>
  %splitted = pgpu.list.split %counts, %flags, %halves[%n] base %c0 : memref<?xi32>, memref<?xi1>, memref<?xi32>
  %c64 = arith.constant 64 : index
  %parents = memref.alloc(%c64) : memref<?xindex>
  %children = memref.alloc(%c64) : memref<?xi32>
  %expanded = pgpu.list.expand %counts, %parents, %children[%n] : memref<?xi32>, memref<?xindex>, memref<?xi32> -> index
  %first64 = arith.index_cast %first : index to i64
  // At least one thread (the warp size on the cuda device, 1 on the CPU
  // device and in the interpreter).
  %lanes = pgpu.lockstep_width : index
  %lockstep = arith.cmpi uge, %lanes, %c1 : index
  %lockstep32 = arith.extui %lockstep : i1 to i32
  pgpu.printf "n %d sum %d max %f first %ld wtime-ok %d\n"(%n32, %sum, %max64, %first64, %ok32) : i32, i32, f64, i64, i32
  pgpu.printf "scan total %d prefix %d sorted first %d compacted %d split %d expanded %d\n"(%total, %prefix, %first, %compacted, %splitted, %expanded) : i32, i32, index, index, index, index
  %square0 = memref.load %squares[%c0] : memref<?xi32>
  %square6 = memref.load %squares[%c6] : memref<?xi32>
  pgpu.printf "squares %d %d lockstep-ok %d\n"(%square0, %square6, %lockstep32) : i32, i32, i32
  memref.dealloc %squares : memref<?xi32>
  memref.dealloc %values : memref<?xi32>
  memref.dealloc %floats : memref<?xf32>
  memref.dealloc %flags : memref<?xi1>
  memref.dealloc %counts : memref<?xi32>
  memref.dealloc %scanned : memref<?xi32>
  memref.dealloc %order : memref<?xindex>
  memref.dealloc %kept : memref<?xi32>
  memref.dealloc %halves : memref<?xi32>
  memref.dealloc %parents : memref<?xindex>
  memref.dealloc %children : memref<?xi32>
  %exit = arith.constant 0 : i32
  return %exit : i32
}
