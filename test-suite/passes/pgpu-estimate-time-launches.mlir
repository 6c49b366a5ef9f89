// Launches per run of the program (pgpu-estimate-time's `launches`): the
// trip counts of the host loops around a kernel, times the runs of its
// function (the sum over its calls). With a warm latency (`warm-l1`), a
// kernel launched more than once is predicted per launch, its later
// launches waiting the warm latency when what its loop touches between
// them fits the cache (`cache-bytes`).
// RUN: pgpu-opt %s --split-input-file --pgpu-estimate-time -o /dev/null 2>&1 | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --pgpu-estimate-time 2>/dev/null | FileCheck %s --check-prefix=ATTR
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-estimate-time{l1=400 warm-l1=100})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=WARM
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-estimate-time{l1=400 warm-l1=100 cache-bytes=10000})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: not pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-estimate-time{warm-l1=x})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: option 'warm-l1' has the invalid value 'x'

// Loops: 10 iterations; 3 x 4 nested; a while loop counted in closed form
// (its condition region runs 8 times, its body 7). 1000 threads, one load
// and one store each: 8000 bytes a launch.
// CHECK: remark: loops kernel 0: predicted {{[0-9]+}} steps {{.*}}; 10 launches per run;
// CHECK: remark: loops kernel 1: predicted {{[0-9]+}} steps {{.*}}; 12 launches per run;
// CHECK: remark: loops kernel 2: predicted {{[0-9]+}} steps {{.*}}; 8 launches per run;
// CHECK: remark: loops kernel 3: predicted {{[0-9]+}} steps {{.*}}; 7 launches per run;
// CHECK: remark: loops kernel 4: predicted {{[0-9]+}} steps {{.*}}; per thread
// ATTR-LABEL: func.func @loops
// ATTR: launches = 10 : i64
// ATTR-NOT: warm_steps
// ATTR: launches = 12 : i64
// ATTR: launches = 8 : i64
// ATTR: launches = 7 : i64
// ATTR: launches = 1 : i64
//
// Warm: kernel 0 is alone in its loop (8000 bytes), so its 9 launches
// after the first are warm; so are kernel 1's in its inner loop. Kernel 4
// runs once. With a cache of 10000 bytes kernel 0 still fits, but kernels
// 2 and 3 share the while loop: 16000 bytes, cold.
// WARM: remark: loops kernel 0: predicted {{[0-9]+}} steps {{.*}}; 10 launches per run (steps per launch: the first cold, the others warm at {{[0-9]+}} steps)
// WARM: remark: loops kernel 2: predicted {{[0-9]+}} steps {{.*}}; 8 launches per run (steps per launch: the first cold, the others warm at
// WARM: remark: loops kernel 4: predicted {{[0-9]+}} steps {{.*}}; per thread
// SMALL: remark: loops kernel 0: predicted {{[0-9]+}} steps {{.*}}; 10 launches per run (steps per launch: the first cold, the others warm at
// SMALL: remark: loops kernel 2: predicted {{[0-9]+}} steps {{.*}}; 8 launches per run; per thread
// SMALL: remark: loops kernel 3: predicted {{[0-9]+}} steps {{.*}}; 7 launches per run; per thread
func.func @loops(%a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c10 = arith.constant 10 : index
  %c1000 = arith.constant 1000 : index
  scf.for %r = %c0 to %c10 step %c1 {
    scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
      %x = memref.load %a[%i] : memref<?xf32>
      memref.store %x, %a[%i] : memref<?xf32>
      scf.reduce
    }
  }
  scf.for %r = %c0 to %c3 step %c1 {
    scf.for %s = %c0 to %c4 step %c1 {
      scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
        %x = memref.load %a[%i] : memref<?xf32>
        memref.store %x, %a[%i] : memref<?xf32>
        scf.reduce
      }
    }
  }
  %end = scf.while (%v = %c0) : (index) -> index {
    scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
      %x = memref.load %a[%i] : memref<?xf32>
      memref.store %x, %a[%i] : memref<?xf32>
      scf.reduce
    }
    %more = arith.cmpi ult, %v, %c7 : index
    scf.condition(%more) %v : index
  } do {
  ^bb0(%v: index):
    scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
      %x = memref.load %a[%i] : memref<?xf32>
      memref.store %x, %a[%i] : memref<?xf32>
      scf.reduce
    }
    %next = arith.addi %v, %c1 : index
    scf.yield %next : index
  }
  scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
func.func @main() -> i32 {
  %c0 = arith.constant 0 : i32
  %c1000 = arith.constant 1000 : index
  %a = memref.alloc(%c1000) : memref<?xf32>
  func.call @loops(%a) : (memref<?xf32>) -> ()
  return %c0 : i32
}

// -----

// Calls: @step runs once per call, and is called twice in @main and 5
// times in a loop: 7 runs. A while loop bounded by memory runs an unknown
// number of times, and so does a recursive function; with a warm latency
// such kernels are taken to run many times (every launch warm). A
// gpu.launch_func counts the same way.
// CHECK: remark: step kernel 0: predicted {{[0-9]+}} steps {{.*}}; 7 launches per run;
// CHECK: remark: unbounded kernel 0: predicted {{[0-9]+}} steps {{.*}}; launches per run unknown ({{.*}}the value of 'memref.load' is not known at compile time);
// CHECK: remark: recursive kernel 0: predicted {{[0-9]+}} steps {{.*}}; launches per run unknown ({{.*}}a recursive function launches it);
// CHECK: remark: @kernels::@copy: predicted {{[0-9]+}} steps {{.*}}; 6 launches per run;
// WARM: remark: unbounded kernel 0: predicted [[WARM:[0-9]+]] steps {{.*}} (taken as many launches, all warm at [[WARM]] steps)
module attributes {gpu.container_module} {
func.func @step(%a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
func.func @unbounded(%a: memref<?xf32>, %flag: memref<1xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.while : () -> () {
    %more = memref.load %flag[%c0] : memref<1xi1>
    scf.condition(%more)
  } do {
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      %x = memref.load %a[%i] : memref<?xf32>
      memref.store %x, %a[%i] : memref<?xf32>
      scf.reduce
    }
    scf.yield
  }
  return
}
func.func @recursive(%a: memref<?xf32>, %depth: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%i] : memref<?xf32>
    scf.reduce
  }
  %deeper = arith.cmpi ugt, %depth, %c0 : index
  scf.if %deeper {
    %less = arith.subi %depth, %c1 : index
    func.call @recursive(%a, %less) : (memref<?xf32>, index) -> ()
  }
  return
}
gpu.module @kernels {
  gpu.func @copy(%a: memref<?xf32>) kernel {
    %i = gpu.thread_id x
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%i] : memref<?xf32>
    gpu.return
  }
}
func.func @main() -> i32 {
  %c0 = arith.constant 0 : i32
  %c0i = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c64 = arith.constant 64 : index
  %a = memref.alloc(%c64) : memref<?xf32>
  %flag = memref.alloc() : memref<1xi1>
  func.call @step(%a) : (memref<?xf32>) -> ()
  func.call @step(%a) : (memref<?xf32>) -> ()
  scf.for %r = %c0i to %c5 step %c1 {
    func.call @step(%a) : (memref<?xf32>) -> ()
  }
  func.call @unbounded(%a, %flag) : (memref<?xf32>, memref<1xi1>) -> ()
  func.call @recursive(%a, %c3) : (memref<?xf32>, index) -> ()
  scf.for %r = %c0i to %c6 step %c1 {
    gpu.launch_func @kernels::@copy blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%a : memref<?xf32>)
  }
  return %c0 : i32
}
}
