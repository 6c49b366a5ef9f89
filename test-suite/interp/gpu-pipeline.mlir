// The interpreter executes the gpu dialect the NVPTX pipeline produces:
// gpu.launch after mapping parallel loops, and gpu.launch_func of an
// outlined gpu.func; --pgpu-check-semantics compares them with the spawn.
// RUN: pgpu-opt %s --pgpu-check-semantics --pass-pipeline='builtin.module(func.func(pgpu-spawn-to-parallel),func.func(scf-parallel-loop-tiling{parallel-loop-tile-sizes=4 no-min-max-bounds=true},gpu-map-parallel-loops,convert-parallel-loops-to-gpu),lower-affine,canonicalize)' | FileCheck %s --check-prefix=LAUNCH
// RUN: pgpu-opt %s --pgpu-check-semantics --pass-pipeline='builtin.module(func.func(pgpu-spawn-to-parallel),func.func(scf-parallel-loop-tiling{parallel-loop-tile-sizes=4 no-min-max-bounds=true},gpu-map-parallel-loops,convert-parallel-loops-to-gpu),lower-affine,canonicalize,gpu-kernel-outlining)' | FileCheck %s --check-prefix=OUTLINED
// RUN: pgpu-opt %s --pass-pipeline='builtin.module(func.func(pgpu-spawn-to-parallel),func.func(scf-parallel-loop-tiling{parallel-loop-tile-sizes=4 no-min-max-bounds=true},gpu-map-parallel-loops,convert-parallel-loops-to-gpu),lower-affine,canonicalize,gpu-kernel-outlining)' | pgpu run --interpret - | FileCheck %s

// LAUNCH: gpu.launch
// OUTLINED: gpu.launch_func
// OUTLINED: gpu.func
// CHECK: c[0] = 0.5
// CHECK-NEXT: c[9] = 86
// CHECK-NEXT: sum = 312.5
func.func @vector_add(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) {
  pgpu.spawn %n {
    %i = pgpu.rank : index
    %x = memref.load %a[%i] : memref<?xf32>
    %y = memref.load %b[%i] : memref<?xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %c[%i] : memref<?xf32>
  }
  return
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %n = arith.constant 10 : index
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  %c = memref.alloc(%n) : memref<?xf32>
  %half = arith.constant 0.5 : f32
  scf.for %i = %c0 to %n step %c1 {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %sq = arith.mulf %f, %f : f32
    %h = arith.mulf %f, %half : f32
    %x = arith.addf %sq, %half : f32
    memref.store %x, %a[%i] : memref<?xf32>
    memref.store %h, %b[%i] : memref<?xf32>
  }
  func.call @vector_add(%a, %b, %c, %n) : (memref<?xf32>, memref<?xf32>, memref<?xf32>, index) -> ()
  %first = memref.load %c[%c0] : memref<?xf32>
  %last = memref.load %c[%c9] : memref<?xf32>
  %f0 = arith.extf %first : f32 to f64
  %f9 = arith.extf %last : f32 to f64
  pgpu.printf "c[0] = %g\nc[9] = %g\n"(%f0, %f9) : f64, f64
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %c[%i] : memref<?xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  pgpu.printf "sum = %g\n"(%sum) : f32
  %z = arith.constant 0 : i32
  return %z : i32
}
