// Upstream ops beyond the frontend's output: scf.parallel with reductions,
// scf.execute_region, scf.index_switch, memref views and copies, math.
// RUN: pgpu run --interpret %s | FileCheck %s

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  // CHECK-LABEL: parallel: sum 66 max 11
  %zero = arith.constant 0 : i32
  %min = arith.constant -2147483648 : i32
  %m = memref.alloc() : memref<3x4xi32>
  %sum, %max = scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c4) step (%c1, %c1) init (%zero, %min) -> (i32, i32) {
    %k = arith.muli %i, %c4 : index
    %l = arith.addi %k, %j : index
    %v = arith.index_cast %l : index to i32
    memref.store %v, %m[%i, %j] : memref<3x4xi32>
    scf.reduce(%v, %v : i32, i32) {
    ^bb0(%a: i32, %b: i32):
      %s = arith.addi %a, %b : i32
      scf.reduce.return %s : i32
    }, {
    ^bb0(%a: i32, %b: i32):
      %s = arith.maxsi %a, %b : i32
      scf.reduce.return %s : i32
    }
  }
  pgpu.printf "parallel: sum %d max %d\n"(%sum, %max) : i32, i32
  // A subview of row 1, columns 1..3, and a copy of it.
  // CHECK-NEXT: subview: 5 6 7 copy: 5 6 7 dim 3
  %sv = memref.subview %m[1, 1] [1, 3] [1, 1] : memref<3x4xi32> to memref<3xi32, strided<[1], offset: 5>>
  %dst = memref.alloca() : memref<3xi32>
  memref.copy %sv, %dst : memref<3xi32, strided<[1], offset: 5>> to memref<3xi32>
  %a0 = memref.load %sv[%c0] : memref<3xi32, strided<[1], offset: 5>>
  %a1 = memref.load %sv[%c1] : memref<3xi32, strided<[1], offset: 5>>
  %a2 = memref.load %sv[%c2] : memref<3xi32, strided<[1], offset: 5>>
  %b0 = memref.load %dst[%c0] : memref<3xi32>
  %b1 = memref.load %dst[%c1] : memref<3xi32>
  %b2 = memref.load %dst[%c2] : memref<3xi32>
  %dyn = memref.cast %dst : memref<3xi32> to memref<?xi32>
  %d = memref.dim %dyn, %c0 : memref<?xi32>
  pgpu.printf "subview: %d %d %d copy: %d %d %d dim %d\n"(%a0, %a1, %a2, %b0, %b1, %b2, %d) : i32, i32, i32, i32, i32, i32, index
  // A column subview with a stride.
  // CHECK-NEXT: column: 2 6 10
  %col = memref.subview %m[0, 2] [3, 1] [1, 1] : memref<3x4xi32> to memref<3xi32, strided<[4], offset: 2>>
  %e0 = memref.load %col[%c0] : memref<3xi32, strided<[4], offset: 2>>
  %e1 = memref.load %col[%c1] : memref<3xi32, strided<[4], offset: 2>>
  %e2 = memref.load %col[%c2] : memref<3xi32, strided<[4], offset: 2>>
  pgpu.printf "column: %d %d %d\n"(%e0, %e1, %e2) : i32, i32, i32
  // CHECK-NEXT: switch: 20 30 0 region 7
  %s1 = scf.index_switch %c1 -> i32
  case 1 {
    %x = arith.constant 20 : i32
    scf.yield %x : i32
  }
  case 2 {
    %x = arith.constant 30 : i32
    scf.yield %x : i32
  }
  default {
    scf.yield %zero : i32
  }
  %s2 = scf.index_switch %c2 -> i32
  case 1 {
    %x = arith.constant 20 : i32
    scf.yield %x : i32
  }
  case 2 {
    %x = arith.constant 30 : i32
    scf.yield %x : i32
  }
  default {
    scf.yield %zero : i32
  }
  %s3 = scf.index_switch %c4 -> i32
  default {
    scf.yield %zero : i32
  }
  %r = scf.execute_region -> i32 {
    %t = arith.constant true
    cf.cond_br %t, ^yes, ^no
  ^yes:
    %seven = arith.constant 7 : i32
    scf.yield %seven : i32
  ^no:
    scf.yield %zero : i32
  }
  pgpu.printf "switch: %d %d %d region %d\n"(%s1, %s2, %s3, %r) : i32, i32, i32, i32
  // CHECK-NEXT: math: 1.414214 2.718282 3.000000 -1 8.000000 0.500000 1 3
  %two = arith.constant 2.0 : f64
  %one = arith.constant 1.0 : f64
  %sqrt = math.sqrt %two : f64
  %e = math.exp %one : f64
  %nine = arith.constant 9.0 : f32
  %three = math.sqrt %nine : f32
  %three64 = arith.extf %three : f32 to f64
  %neg = arith.constant -1.5 : f64
  %ceil = math.ceil %neg : f64
  %ci = arith.fptosi %ceil : f64 to i32
  %c3f = arith.constant 3.0 : f64
  %p = math.powf %two, %c3f : f64
  %zf = arith.constant 0.5235987755982988 : f64
  %sin = math.sin %zf : f64
  %lt = arith.cmpf olt, %one, %two : f64
  %lti = arith.extui %lt : i1 to i32
  %sel = arith.select %lt, %c3, %c4 : index
  pgpu.printf "math: %f %f %f %d %f %f %d %d\n"(%sqrt, %e, %three64, %ci, %p, %sin, %lti, %sel) : f64, f64, f64, i32, f64, f64, i32, index
  memref.dealloc %m : memref<3x4xi32>
  return %zero : i32
}
