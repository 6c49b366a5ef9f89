// memref.atomic_rmw kinds by MLIR 22's numbering (arith::AtomicRMWKind).
// RUN: pgpu run --interpret %s | FileCheck %s
// CHECK: addi 12 andi 5 assign 7 maxs 7 maxu -1 mins -3 minu 5 muli 35 ori 7 xori 2
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %m = memref.alloc() : memref<10xi32>
  %five = arith.constant 5 : i32
  %seven = arith.constant 7 : i32
  %minus1 = arith.constant -1 : i32
  %minus3 = arith.constant -3 : i32
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  scf.for %i = %c0 to %c9 step %c1 {
    memref.store %five, %m[%i] : memref<10xi32>
  }
  memref.store %five, %m[%c9] : memref<10xi32>
  %r0 = memref.atomic_rmw addi %seven, %m[%c0] : (i32, memref<10xi32>) -> i32
  %r1 = memref.atomic_rmw andi %seven, %m[%c1] : (i32, memref<10xi32>) -> i32
  %r2 = memref.atomic_rmw assign %seven, %m[%c2] : (i32, memref<10xi32>) -> i32
  %r3 = memref.atomic_rmw maxs %seven, %m[%c3] : (i32, memref<10xi32>) -> i32
  %r4 = memref.atomic_rmw maxu %minus1, %m[%c4] : (i32, memref<10xi32>) -> i32
  %r5 = memref.atomic_rmw mins %minus3, %m[%c5] : (i32, memref<10xi32>) -> i32
  %r6 = memref.atomic_rmw minu %minus1, %m[%c6] : (i32, memref<10xi32>) -> i32
  %r7 = memref.atomic_rmw muli %seven, %m[%c7] : (i32, memref<10xi32>) -> i32
  %r8 = memref.atomic_rmw ori %seven, %m[%c8] : (i32, memref<10xi32>) -> i32
  %r9 = memref.atomic_rmw xori %seven, %m[%c9] : (i32, memref<10xi32>) -> i32
  %v0 = memref.load %m[%c0] : memref<10xi32>
  %v1 = memref.load %m[%c1] : memref<10xi32>
  %v2 = memref.load %m[%c2] : memref<10xi32>
  %v3 = memref.load %m[%c3] : memref<10xi32>
  %v4 = memref.load %m[%c4] : memref<10xi32>
  %v5 = memref.load %m[%c5] : memref<10xi32>
  %v6 = memref.load %m[%c6] : memref<10xi32>
  %v7 = memref.load %m[%c7] : memref<10xi32>
  %v8 = memref.load %m[%c8] : memref<10xi32>
  %v9 = memref.load %m[%c9] : memref<10xi32>
  pgpu.printf "addi %d andi %d assign %d maxs %d maxu %d mins %d minu %d muli %d ori %d xori %d\n"(%v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7, %v8, %v9) : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32
  %z = arith.constant 0 : i32
  return %z : i32
}
