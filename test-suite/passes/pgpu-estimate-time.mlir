// RUN: pgpu-opt %s --split-input-file --pgpu-estimate-time 2>/dev/null | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-estimate-time -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The launch arguments of the program (argi 0 is 4096, not its default):
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-estimate-time{args=4096})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ARGS
// Bad options are errors.
// RUN: not pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-estimate-time{args=x})' 2>&1 | FileCheck %s --check-prefix=BAD-ARGS
// RUN: not pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-estimate-time{schedulers=0})' 2>&1 | FileCheck %s --check-prefix=BAD-SCHEDULERS
// RUN: not pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-estimate-time{calibration=%t.missing})' 2>&1 | FileCheck %s --check-prefix=BAD-CALIBRATION
// BAD-ARGS: 'x' is not an integer
// BAD-SCHEDULERS: option 'schedulers' must be at least 1
// BAD-CALIBRATION: option 'calibration': cannot read

// A gpu.func kernel with a workgroup buffer and a loop whose trip count is
// the launch's third argument (64). Per thread: arithmetic 1 (thread id)
// + 2 barriers + 64 x 3 (andi, index_cast, addi) = 195; shared 1 + 64 x 2
// + 1 = 130; global 64 + 1 = 65. 2 blocks of 256 threads: 16 warps, 8 on
// each of 2 multiprocessors.
// CHECK-LABEL: gpu.func @histogram
// CHECK-SAME: pgpu.estimate = {idle_steps = {{[0-9]+}} : i64, launches = 1 : i64, steps = {{[0-9]+}} : i64, warps = 16 : i64, x_a = 195 : i64, x_g = 65 : i64, x_s = 130 : i64}
// REMARK: remark: @kernels::@histogram: predicted {{[0-9]+}} steps (16 warps, 8 per multiprocessor, 1 round, {{.*}}% idle); per thread x_a = 195, x_s = 130, x_g = 65
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @histogram(%keys: memref<?xi32>, %counts: memref<?xi32>, %n: index)
        workgroup(%local: memref<256xi32, #gpu.address_space<workgroup>>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %mask = arith.constant 255 : i32
      memref.store %zero, %local[%tid] : memref<256xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %i = %c0 to %n step %c1 {
        %key = memref.load %keys[%i] : memref<?xi32>
        %bucket = arith.andi %key, %mask : i32
        %slot = arith.index_cast %bucket : i32 to index
        %old = memref.load %local[%slot] : memref<256xi32, #gpu.address_space<workgroup>>
        %new = arith.addi %old, %one : i32
        memref.store %new, %local[%slot] : memref<256xi32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %count = memref.load %local[%tid] : memref<256xi32, #gpu.address_space<workgroup>>
      memref.store %count, %counts[%tid] : memref<?xi32>
      gpu.return
    }
  }
  func.func @launch(%keys: memref<?xi32>, %counts: memref<?xi32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c256 = arith.constant 256 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @kernels::@histogram blocks in (%c2, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%keys : memref<?xi32>, %counts : memref<?xi32>, %c64 : index)
    return
  }
}

// -----

// Host kernels (the kernel stage): the thread count and the inner trip
// count come from @main through @scale's arguments; argi 0 defaults to
// 1000. Per thread: index_cast + 5 x mulf = 6 arithmetic; 5 stores and
// one load: from the second iteration on, the load reads what the last
// iteration stored, which LLVM keeps in a register (the loop's only
// store, at an element the loop does not move): 6 global accesses. The
// runtime's block size for 1000 threads
// on 132 multiprocessors is one warp (8 threads each, rounded up to 32):
// 32 blocks on 32 multiprocessors, one warp each; 4096 threads are 128
// such blocks.
// CHECK-LABEL: func.func @scale
// CHECK: scf.parallel
// CHECK: pgpu.estimate = {idle_steps = {{[0-9]+}} : i64, launches = 1 : i64, steps = {{[0-9]+}} : i64, warps = 32 : i64, x_a = 6 : i64, x_g = 6 : i64, x_s = 0 : i64}
// REMARK: remark: scale kernel 0: predicted {{[0-9]+}} steps (32 warps, 1 per multiprocessor, 1 round, {{.*}}% idle); per thread x_a = 6, x_s = 0, x_g = 6
// ARGS: remark: scale kernel 0: predicted {{[0-9]+}} steps (128 warps, 1 per multiprocessor, 1 round, {{.*}}% idle); per thread x_a = 6, x_s = 0, x_g = 6
// One thread loading and storing once, by hand as in the model's unit
// tests: per access t4, t1, t5, 20 x t8, t9, t11 (25 steps), then t16:
// 51 steps. t0 fires whenever a scheduler is free and the warp is not
// ready (p2 empty): steps 3-25 and 28-50, 46 idle steps.
// REMARK: remark: scale kernel 1: predicted 51 steps (1 warps, 1 per multiprocessor, 1 round, 90.2% idle); per thread x_a = 0, x_s = 0, x_g = 2
func.func @scale(%a: memref<?xf32>, %n: index, %reps: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %r = arith.index_cast %reps : i32 to index
    scf.for %j = %c0 to %r step %c1 {
      %x = memref.load %a[%i] : memref<?xf32>
      %y = arith.mulf %x, %x : f32
      memref.store %y, %a[%i] : memref<?xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%c1] : memref<?xf32>
    scf.reduce
  }
  return
}
func.func @main() -> i32 {
  %c0 = arith.constant 0 : i32
  %c1000 = arith.constant 1000 : i32
  %c5 = arith.constant 5 : i32
  %n32 = pgpu.argi %c0 default %c1000 : i32, i32
  %n = arith.index_cast %n32 : i32 to index
  %a = memref.alloc(%n) : memref<?xf32>
  func.call @scale(%a, %n, %c5) : (memref<?xf32>, index, i32) -> ()
  return %c0 : i32
}

// -----

// A load of an element the thread has just stored or loaded reaches no
// memory (LLVM keeps the value in a register), unless something between
// may write it: any store (a kernel's buffers may alias) or an op with
// effects. Per thread: 3 stores, and of 6 loads the 2 after the store to
// %b and after the call: x_g = 5; x_a = index_cast + call = 2.
// CHECK-LABEL: func.func @forwarded
// CHECK: pgpu.estimate = {{.*}} x_a = 2 : i64, x_g = 5 : i64
func.func private @opaque()
func.func @forwarded(%a: memref<?xi64>, %b: memref<?xi64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = arith.index_cast %i : index to i64
    memref.store %v, %a[%i] : memref<?xi64>
    %x = memref.load %a[%i] : memref<?xi64>
    %y = memref.load %a[%i] : memref<?xi64>
    memref.store %x, %b[%i] : memref<?xi64>
    %z = memref.load %a[%i] : memref<?xi64>
    %w = memref.load %b[%i] : memref<?xi64>
    func.call @opaque() : () -> ()
    %u = memref.load %b[%i] : memref<?xi64>
    %s = memref.load %b[%i] : memref<?xi64>
    memref.store %u, %a[%i] : memref<?xi64>
    scf.reduce
  }
  return
}
func.func @main() -> i32 {
  %c0 = arith.constant 0 : i32
  %c4096 = arith.constant 4096 : index
  %a = memref.alloc(%c4096) : memref<?xi64>
  %b = memref.alloc(%c4096) : memref<?xi64>
  func.call @forwarded(%a, %b, %c4096) : (memref<?xi64>, memref<?xi64>, index) -> ()
  return %c0 : i32
}

// -----

// Across iterations: in the first loop the only store is to a[i], which
// the loop does not move, so from the second iteration on its load reads
// a register: 8 x (load a[i], load b[j], store a[i]) - 7 = 17. A second
// store in the loop (8 x 3 = 24) or an element that moves with the loop
// (8 x 2 = 16) keeps every load. x_g = 57; x_a = 3 x 8 addf = 24.
// CHECK-LABEL: func.func @carried
// CHECK: pgpu.estimate = {{.*}} x_a = 24 : i64, x_g = 57 : i64
func.func @carried(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i] : memref<?xf32>
      %y = memref.load %b[%j] : memref<?xf32>
      %s = arith.addf %x, %y : f32
      memref.store %s, %a[%i] : memref<?xf32>
    }
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i] : memref<?xf32>
      %s = arith.addf %x, %x : f32
      memref.store %s, %a[%i] : memref<?xf32>
      memref.store %s, %c[%j] : memref<?xf32>
    }
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%j] : memref<?xf32>
      %s = arith.addf %x, %x : f32
      memref.store %s, %a[%j] : memref<?xf32>
    }
    scf.reduce
  }
  return
}
func.func @main() -> i32 {
  %c0 = arith.constant 0 : i32
  %c4096 = arith.constant 4096 : index
  %a = memref.alloc(%c4096) : memref<?xf32>
  %b = memref.alloc(%c4096) : memref<?xf32>
  %c = memref.alloc(%c4096) : memref<?xf32>
  func.call @carried(%a, %b, %c, %c4096) : (memref<?xf32>, memref<?xf32>, memref<?xf32>, index) -> ()
  return %c0 : i32
}

// -----

// Unknown trip counts are reported, not guessed: a loop bounded by a value
// loaded from memory counts once (the figures are lower bounds: the
// bound's load, the inner load and store), and a kernel whose thread count
// is read from memory gets no prediction. The while loop from the thread's
// index to 100 is counted: thread 0, the busiest, runs it 100 times (101
// compares and 100 adds).
// REMARK: remark: unknown kernel 0: predicted {{[0-9]+}} steps (4 warps, 1 per multiprocessor, 1 round, {{.*}}% idle); per thread x_a = 201, x_s = 0, x_g = 3 (lower bounds: {{[0-9]+}}:{{[0-9]+}}: loop with an unknown trip count, counted once ({{.*}}the value of 'memref.load' is not known at compile time))
// REMARK: remark: unknown kernel 1: no prediction: thread count unknown ({{.*}}the value of 'memref.load' is not known at compile time); per thread x_a = 0, x_s = 0, x_g = 1
func.func @unknown(%a: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i) = (%c0) to (%c100) step (%c1) {
    %w = scf.while (%v = %i) : (index) -> index {
      %more = arith.cmpi ult, %v, %c100 : index
      scf.condition(%more) %v : index
    } do {
    ^bb0(%v: index):
      %next = arith.addi %v, %c1 : index
      scf.yield %next : index
    }
    %bound = memref.load %a[%c0] : memref<?xindex>
    scf.for %j = %c0 to %bound step %c1 {
      %x = memref.load %a[%j] : memref<?xindex>
      memref.store %x, %a[%i] : memref<?xindex>
    }
    scf.reduce
  }
  %count = memref.load %a[%c0] : memref<?xindex>
  scf.parallel (%i) = (%c0) to (%count) step (%c1) {
    memref.store %c0, %a[%i] : memref<?xindex>
    scf.reduce
  }
  return
}

// -----

// Trip counts fold with the width's semantics (shared with the reference
// interpreter): -2 as an i8 is 254 unsigned, so divui by 2 is 127 threads
// (4 warps); remui 254 % 100 is 54 iterations of one store. A shift by
// the width is poison: that loop's trip count is unknown, counted once
// (one more store). The addi is the one arithmetic operation.
// REMARK: remark: narrow kernel 0: predicted {{[0-9]+}} steps (4 warps, 1 per multiprocessor, 1 round, {{.*}}% idle); per thread x_a = 1, x_s = 0, x_g = 55 (lower bounds: {{.*}}loop with an unknown trip count, counted once ({{.*}}a shift by the width or more (poison)))
func.func @narrow(%a: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %minus2 = arith.constant -2 : i8
  %two = arith.constant 2 : i8
  %hundred = arith.constant 100 : i8
  %eight = arith.constant 8 : i8
  %threads8 = arith.divui %minus2, %two : i8
  %threads = arith.index_castui %threads8 : i8 to index
  %trips8 = arith.remui %minus2, %hundred : i8
  %trips = arith.index_castui %trips8 : i8 to index
  %poison8 = arith.shrui %minus2, %eight : i8
  %poison = arith.index_castui %poison8 : i8 to index
  scf.parallel (%i) = (%c0) to (%threads) step (%c1) {
    scf.for %j = %c0 to %trips step %c1 {
      memref.store %two, %a[%j] : memref<?xi8>
    }
    %x = arith.addi %two, %two : i8
    scf.for %j = %c0 to %poison step %c1 {
      memref.store %x, %a[%j] : memref<?xi8>
    }
    scf.reduce
  }
  return
}
