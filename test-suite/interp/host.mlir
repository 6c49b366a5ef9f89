// Host code: loops, calls, recursion, memrefs, globals, branches, printf.
// RUN: %expect-exit 3 pgpu run --interpret %s -- 7 | FileCheck %s

memref.global "private" @table : memref<4xi32> = dense<[10, 20, 30, 40]>
memref.global "private" @counter : memref<i32> = dense<0>

// CHECK-LABEL: fib(7) = 13
func.func @fib(%n: i32) -> i32 {
  %c2 = arith.constant 2 : i32
  %small = arith.cmpi slt, %n, %c2 : i32
  %r = scf.if %small -> (i32) {
    scf.yield %n : i32
  } else {
    %c1 = arith.constant 1 : i32
    %a = arith.subi %n, %c1 : i32
    %b = arith.subi %n, %c2 : i32
    %fa = func.call @fib(%a) : (i32) -> i32
    %fb = func.call @fib(%b) : (i32) -> i32
    %s = arith.addi %fa, %fb : i32
    scf.yield %s : i32
  }
  return %r : i32
}

// Euclid with cf branches and block arguments.
func.func @gcd(%a: i32, %b: i32) -> i32 {
  cf.br ^loop(%a, %b : i32, i32)
^loop(%x: i32, %y: i32):
  %zero = arith.constant 0 : i32
  %done = arith.cmpi eq, %y, %zero : i32
  cf.cond_br %done, ^exit(%x : i32), ^step
^step:
  %m = arith.remsi %x, %y : i32
  cf.br ^loop(%y, %m : i32, i32)
^exit(%g: i32):
  return %g : i32
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %d5 = arith.constant 5 : i32
  %k0 = arith.constant 0 : i32
  %n = pgpu.argi %k0 default %d5 : i32, i32
  %f = func.call @fib(%n) : (i32) -> i32
  pgpu.printf "fib(%d) = %d\n"(%n, %f) : i32, i32
  // CHECK-NEXT: gcd = 6
  %a = arith.constant 48 : i32
  %b = arith.constant 18 : i32
  %g = func.call @gcd(%a, %b) : (i32, i32) -> i32
  pgpu.printf "gcd = %d\n"(%g) : i32
  // A heap array filled by scf.for and summed by scf.while.
  // CHECK-NEXT: squares: 0 1 4 9 16 25 36 49 sum=140
  %c8 = arith.constant 8 : index
  %buf = memref.alloc(%c8) : memref<?xi64>
  scf.for %i = %c0 to %c8 step %c1 {
    %ii = arith.index_cast %i : index to i64
    %sq = arith.muli %ii, %ii : i64
    memref.store %sq, %buf[%i] : memref<?xi64>
  }
  pgpu.printf "squares:"
  %zero64 = arith.constant 0 : i64
  %end:2 = scf.while (%i = %c0, %acc = %zero64) : (index, i64) -> (index, i64) {
    %more = arith.cmpi ult, %i, %c8 : index
    scf.condition(%more) %i, %acc : index, i64
  } do {
  ^bb0(%i: index, %acc: i64):
    %v = memref.load %buf[%i] : memref<?xi64>
    pgpu.printf " %ld"(%v) : i64
    %acc2 = arith.addi %acc, %v : i64
    %i2 = arith.addi %i, %c1 : index
    scf.yield %i2, %acc2 : index, i64
  }
  pgpu.printf " sum=%ld\n"(%end#1) : i64
  memref.dealloc %buf : memref<?xi64>
  // Globals, pointer arithmetic through reinterpret_cast.
  // CHECK-NEXT: table[2] = 30, p[1] = 40, counter = 2
  %t = memref.get_global @table : memref<4xi32>
  %tp = memref.cast %t : memref<4xi32> to memref<?xi32, strided<[1], offset: ?>>
  %c2 = arith.constant 2 : index
  %x = memref.load %tp[%c2] : memref<?xi32, strided<[1], offset: ?>>
  %base, %off, %size, %stride = memref.extract_strided_metadata %tp : memref<?xi32, strided<[1], offset: ?>> -> memref<i32>, index, index, index
  %off2 = arith.addi %off, %c2 : index
  %size2 = arith.subi %size, %c2 : index
  %p = memref.reinterpret_cast %base to offset: [%off2], sizes: [%size2], strides: [1] : memref<i32> to memref<?xi32, strided<[1], offset: ?>>
  %y = memref.load %p[%c1] : memref<?xi32, strided<[1], offset: ?>>
  %ctr = memref.get_global @counter : memref<i32>
  scf.for %i = %c0 to %c2 step %c1 {
    %v = memref.load %ctr[] : memref<i32>
    %one = arith.constant 1 : i32
    %v1 = arith.addi %v, %one : i32
    memref.store %v1, %ctr[] : memref<i32>
  }
  %cv = memref.load %ctr[] : memref<i32>
  pgpu.printf "table[2] = %d, p[1] = %d, counter = %d\n"(%x, %y, %cv) : i32, i32, i32
  // Formatting, casts and floats.
  // CHECK-NEXT: [  -42] [0x2a] [3.14] [2.500000e-01] [1e+06] [255] [-1] [4294967295] [A]
  %m42 = arith.constant -42 : i32
  %pi = arith.constant 3.14159 : f64
  %q = arith.constant 0.25 : f32
  %mil = arith.constant 1.0e6 : f64
  %u8 = arith.constant 255 : i8
  %u8ext = arith.extui %u8 : i8 to i32
  %s8ext = arith.extsi %u8 : i8 to i32
  %chr = arith.constant 65 : i32
  %fifteen = arith.constant 42 : i32
  pgpu.printf "[%5d] [%#x] [%.2f] [%e] [%g] [%d] [%d] [%u] [%c]\n"(%m42, %fifteen, %pi, %q, %mil, %u8ext, %s8ext, %s8ext, %chr) : i32, i32, f64, f32, f64, i32, i32, i32, i32
  // CHECK-NEXT: 7 -1 -4 -3 -2 1 1.5 2147483644
  %s7 = arith.constant -7 : i32
  %two = arith.constant 2 : i32
  %d1 = arith.divui %s7, %two : i32
  %half = arith.constant 1.5 : f64
  %fl = arith.fptosi %half : f64 to i32
  %neg = arith.negf %half : f64
  %nfl = math.floor %neg : f64
  %nfi = arith.fptosi %nfl : f64 to i32
  %abs = math.absi %s7 : i32
  %rem = arith.remsi %s7, %two : i32
  %fd = arith.floordivsi %s7, %two : i32
  %cd = arith.ceildivsi %s7, %two : i32
  pgpu.printf "%d %d %d %d %d %d %.1f %u\n"(%abs, %rem, %fd, %cd, %nfi, %fl, %half, %d1) : i32, i32, i32, i32, i32, i32, f64, i32
  %ret = arith.constant 3 : i32
  return %ret : i32
}
