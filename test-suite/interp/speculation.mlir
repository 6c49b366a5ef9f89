// A pgpu.spec.loop keeps sequential semantics: the interpreter runs it as a
// sequential loop (gpu-tls.txt Listing 2, the CFD update).
// RUN: pgpu run --interpret %s | FileCheck %s

// CHECK: y = 1 1 1 1 -4
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %left = memref.alloc() : memref<4xindex>
  %right = memref.alloc() : memref<4xindex>
  %x = memref.alloc() : memref<4xf64>
  %y = memref.alloc() : memref<5xf64>
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  scf.for %i = %c0 to %c5 step %c1 {
    memref.store %zero, %y[%i] : memref<5xf64>
  }
  // Edge i joins nodes i and i + 1 and carries x[i] = i + 1.
  scf.for %i = %c0 to %c4 step %c1 {
    %n = arith.addi %i, %c1 : index
    memref.store %i, %left[%i] : memref<4xindex>
    memref.store %n, %right[%i] : memref<4xindex>
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f64
    %v = arith.addf %f, %one : f64
    memref.store %v, %x[%i] : memref<4xf64>
  }
  pgpu.spec.loop %i = %c0 to %c4 step %c1 window(2) {
    %n1 = memref.load %left[%i] : memref<4xindex>
    %n2 = memref.load %right[%i] : memref<4xindex>
    %x1 = memref.load %x[%n1] : memref<4xf64>
    %y1 = pgpu.spec.load %y[%n1] : memref<5xf64>
    %s1 = arith.addf %y1, %x1 : f64
    pgpu.spec.store %s1, %y[%n1] : memref<5xf64>
    %y2 = pgpu.spec.load %y[%n2] : memref<5xf64>
    %s2 = arith.subf %y2, %x1 : f64
    pgpu.spec.store %s2, %y[%n2] : memref<5xf64>
  }
  pgpu.printf "y ="
  scf.for %i = %c0 to %c5 step %c1 {
    %v = memref.load %y[%i] : memref<5xf64>
    pgpu.printf " %g"(%v) : f64
  }
  pgpu.printf "\n"
  %z = arith.constant 0 : i32
  return %z : i32
}
