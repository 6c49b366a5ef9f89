// Trip counts of the instruction-mix analysis (passes/kernels/src/
// instruction_mix/loops.rs): counted scf.while loops in closed form, other
// while loops stepped through, loops whose bounds are an enclosing loop's
// variable counted iteration by iteration, and bounds that depend on the
// thread taken for the busiest sampled thread.
// RUN: pgpu-opt %s --split-input-file --pgpu-estimate-time -o /dev/null 2>&1 | FileCheck %s

// A counted while loop, i = 0; i < 10; i += 2: 5 iterations, 6 compares,
// 5 x (index_cast, addi) and 5 stores.
// CHECK: remark: counted kernel 0: predicted {{[0-9]+}} steps (1 warps, {{.*}}); per thread x_a = 16, x_s = 0, x_g = 5{{$}}
// Counting down, i = 20; i >= 0; i -= 3: 20, 17, .., 2 are 7 iterations,
// 8 compares, 7 x (index_cast, subi) and 7 loads.
// CHECK: remark: counted kernel 1: predicted {{[0-9]+}} steps (1 warps, {{.*}}); per thread x_a = 22, x_s = 0, x_g = 7{{$}}
// Doubling, v = 1; v < 1000; v *= 2, has no closed form and is stepped
// through: 10 iterations, 11 compares, 10 x (index_cast, muli), 10 stores.
// CHECK: remark: counted kernel 2: predicted {{[0-9]+}} steps (1 warps, {{.*}}); per thread x_a = 31, x_s = 0, x_g = 10{{$}}
func.func @counted(%a: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %three = arith.constant 3 : i32
  %ten = arith.constant 10 : i32
  %twenty = arith.constant 20 : i32
  %thousand = arith.constant 1000 : i32
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    %w = scf.while (%v = %zero) : (i32) -> i32 {
      %more = arith.cmpi slt, %v, %ten : i32
      scf.condition(%more) %v : i32
    } do {
    ^bb0(%v: i32):
      %slot = arith.index_cast %v : i32 to index
      memref.store %v, %a[%slot] : memref<?xi32>
      %next = arith.addi %v, %two : i32
      scf.yield %next : i32
    }
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    %w = scf.while (%v = %twenty) : (i32) -> i32 {
      %more = arith.cmpi sle, %zero, %v : i32
      scf.condition(%more) %v : i32
    } do {
    ^bb0(%v: i32):
      %slot = arith.index_cast %v : i32 to index
      %x = memref.load %a[%slot] : memref<?xi32>
      %next = arith.subi %v, %three : i32
      scf.yield %next : i32
    }
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    %w = scf.while (%v = %one) : (i32) -> i32 {
      %more = arith.cmpi slt, %v, %thousand : i32
      scf.condition(%more) %v : i32
    } do {
    ^bb0(%v: i32):
      %slot = arith.index_cast %v : i32 to index
      memref.store %v, %a[%slot] : memref<?xi32>
      %next = arith.muli %v, %two : i32
      scf.yield %next : i32
    }
    scf.reduce
  }
  return
}

// -----

// A triangular nest, j < i for i < 10: 0 + 1 + .. + 9 = 45 loads.
// CHECK: remark: nests kernel 0: predicted {{[0-9]+}} steps (1 warps, {{.*}}); per thread x_a = 0, x_s = 0, x_g = 45{{$}}
// A while loop stepping by the enclosing loop's k = 1, 2, 3 to 12: 12 + 6
// + 4 = 22 iterations, 13 + 7 + 5 = 25 compares, 22 x (index_cast, addi),
// 22 stores, and the step's index_cast for each k.
// CHECK: remark: nests kernel 1: predicted {{[0-9]+}} steps (1 warps, {{.*}}); per thread x_a = 72, x_s = 0, x_g = 22{{$}}
func.func @nests(%a: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0 : i32
  %twelve = arith.constant 12 : i32
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    scf.for %i = %c0 to %c10 step %c1 {
      scf.for %j = %c0 to %i step %c1 {
        %x = memref.load %a[%j] : memref<?xi32>
      }
    }
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    scf.for %k = %c1 to %c4 step %c1 {
      %step = arith.index_cast %k : index to i32
      %w = scf.while (%m = %zero) : (i32) -> i32 {
        %more = arith.cmpi slt, %m, %twelve : i32
        scf.condition(%more) %m : i32
      } do {
      ^bb0(%m: i32):
        %slot = arith.index_cast %m : i32 to index
        memref.store %m, %a[%slot] : memref<?xi32>
        %next = arith.addi %m, %step : i32
        scf.yield %next : i32
      }
    }
    scf.reduce
  }
  return
}

// -----

// Bounds from the thread's index: the mix is the busiest of threads 0, 4
// and 7 (first, middle, last). j < i: thread 7 with 7 loads.
// CHECK: remark: threads kernel 0: predicted {{[0-9]+}} steps (1 warps, {{.*}}); per thread x_a = 0, x_s = 0, x_g = 7{{$}}
// Chunks of 4 of 30 items, i * 4 to min(i * 4 + 4, 30): threads 0 and 4
// load 4, the last 2; 3 operations compute the bounds.
// CHECK: remark: threads kernel 1: predicted {{[0-9]+}} steps (1 warps, {{.*}}); per thread x_a = 3, x_s = 0, x_g = 4{{$}}
// A block spawn's rank: j < rank for 64 threads, 63 loads (and reading
// the rank).
// CHECK: remark: threads kernel 2: predicted {{[0-9]+}} steps (2 warps, {{.*}}); per thread x_a = 1, x_s = 0, x_g = 63{{$}}
func.func @threads(%a: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c30 = arith.constant 30 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %i step %c1 {
      %x = memref.load %a[%j] : memref<?xi32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %begin = arith.muli %i, %c4 : index
    %end = arith.addi %begin, %c4 : index
    %clamped = arith.minsi %end, %c30 : index
    scf.for %j = %begin to %clamped step %c1 {
      %x = memref.load %a[%j] : memref<?xi32>
    }
    scf.reduce
  }
  pgpu.spawn block %c64 {
    %rank = pgpu.rank : index
    scf.for %j = %c0 to %rank step %c1 {
      %x = memref.load %a[%j] : memref<?xi32>
    }
  }
  return
}

// -----

// A while loop that never ends (i < 10 counting down from 0 wraps first)
// and one whose condition reads memory stay unknown: counted once (a
// compare and an add, and the load).
// CHECK: remark: endless kernel 0: {{.*}}x_a = 2, x_s = 0, x_g = 0 (lower bounds: {{[0-9]+}}:{{[0-9]+}}: 'scf.while' loop with an unknown trip count, counted once ({{.*}}the loop's variable wraps around before the loop ends))
// CHECK: remark: endless kernel 1: {{.*}}x_a = 2, x_s = 0, x_g = 1 (lower bounds: {{[0-9]+}}:{{[0-9]+}}: 'scf.while' loop with an unknown trip count, counted once ({{.*}}the value of 'memref.load' is not known at compile time))
func.func @endless(%a: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %ten = arith.constant 10 : i32
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    %w = scf.while (%v = %zero) : (i32) -> i32 {
      %more = arith.cmpi slt, %v, %ten : i32
      scf.condition(%more) %v : i32
    } do {
    ^bb0(%v: i32):
      %next = arith.subi %v, %one : i32
      scf.yield %next : i32
    }
    scf.reduce
  }
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    %w = scf.while (%v = %c0) : (index) -> index {
      %x = memref.load %a[%v] : memref<?xi32>
      %more = arith.cmpi slt, %x, %ten : i32
      scf.condition(%more) %v : index
    } do {
    ^bb0(%v: index):
      %next = arith.addi %v, %c1 : index
      scf.yield %next : index
    }
    scf.reduce
  }
  return
}
