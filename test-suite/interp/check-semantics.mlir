// pgpu-opt --pgpu-check-semantics interprets @main before and after the
// pipeline and compares output and exit code.
// RUN: pgpu-opt %s --pgpu-check-semantics --pgpu-spawn-to-parallel | FileCheck %s
// RUN: pgpu-opt %s --pgpu-check-semantics="3" --canonicalize --cse | FileCheck %s --check-prefix=CANON
// RUN: pgpu-opt %s --pgpu-check-semantics --pass-pipeline='builtin.module(pgpu-spawn-to-parallel,canonicalize,convert-scf-to-cf)' | FileCheck %s --check-prefix=CF
// The output must run too: llvm ops are not interpreted.
// RUN: not pgpu-opt %s --pgpu-check-semantics --convert-arith-to-llvm 2>&1 | FileCheck %s --check-prefix=LLVM
// The input must run: here it reads uninitialised memory.
// RUN: not pgpu-opt %S/Inputs/uninitialised.mlir --pgpu-check-semantics --canonicalize 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @main
// CHECK: scf.parallel
// CHECK-NOT: pgpu.spawn
// CANON-LABEL: func.func @main
// CANON: pgpu.spawn
// CF-LABEL: func.func @main
// CF: cf.cond_br
// LLVM: error: semantic check: the output module fails to run: unsupported operation 'llvm.
// BAD: uninitialised.mlir:[[#]]:{{[0-9]+}}: error: semantic check: the input module fails to run: read of uninitialised memory
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %k0 = arith.constant 0 : i32
  %d = arith.constant 2 : i32
  %scale = pgpu.argi %k0 default %d : i32, i32
  %a = memref.alloc(%c8) : memref<?xi32>
  pgpu.spawn %c8 {
    %r = pgpu.rank : index
    %n = pgpu.size : index
    %ri = arith.index_cast %r : index to i32
    %ni = arith.index_cast %n : index to i32
    %sq = arith.muli %ri, %ri : i32
    %v = arith.muli %sq, %scale : i32
    %w = arith.addi %v, %ni : i32
    memref.store %w, %a[%r] : memref<?xi32>
  }
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %k0) -> (i32) {
    %x = memref.load %a[%i] : memref<?xi32>
    pgpu.printf "a[%d] = %d\n"(%i, %x) : index, i32
    %s = arith.addi %acc, %x : i32
    scf.yield %s : i32
  }
  memref.dealloc %a : memref<?xi32>
  %c7 = arith.constant 7 : i32
  %code = arith.andi %sum, %c7 : i32
  return %code : i32
}
