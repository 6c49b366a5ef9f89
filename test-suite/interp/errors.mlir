// Run-time errors stop the run with a diagnostic at the op's location and
// exit status 1 (not a crash). Each entry function shows one error.
// RUN: %expect-exit 1 pgpu run --interpret --entry oob %s 2>&1 | FileCheck %s --check-prefix=OOB
// RUN: %expect-exit 1 pgpu run --interpret --entry uninit %s 2>&1 | FileCheck %s --check-prefix=UNINIT
// RUN: %expect-exit 1 pgpu run --interpret --entry write_write %s 2>&1 | FileCheck %s --check-prefix=WW
// RUN: %expect-exit 1 pgpu run --interpret --entry read_write %s 2>&1 | FileCheck %s --check-prefix=RW
// RUN: %expect-exit 1 pgpu run --interpret --entry null %s 2>&1 | FileCheck %s --check-prefix=NULL
// RUN: %expect-exit 1 pgpu run --interpret --entry unsupported %s 2>&1 | FileCheck %s --check-prefix=UNSUP
// RUN: %expect-exit 1 pgpu run --interpret --entry use_after_free %s 2>&1 | FileCheck %s --check-prefix=UAF
// RUN: %expect-exit 1 pgpu run --interpret --entry divide %s 2>&1 | FileCheck %s --check-prefix=DIV
// RUN: %expect-exit 1 pgpu run --interpret --entry bad_get %s 2>&1 | FileCheck %s --check-prefix=GET
// RUN: %expect-exit 1 pgpu run --interpret --entry divergent %s 2>&1 | FileCheck %s --check-prefix=DIVERGE
// RUN: %expect-exit 1 pgpu run --interpret --entry groups %s 2>&1 | FileCheck %s --check-prefix=GROUPS
// RUN: %expect-exit 1 pgpu run --interpret --entry bad_arg %s -- seven 2>&1 | FileCheck %s --check-prefix=ARG
// RUN: %expect-exit 1 pgpu run --interpret --entry fused_loc %s 2>&1 | FileCheck %s --check-prefix=FUSED
// RUN: %expect-exit 1 pgpu run --interpret --entry callsite_loc %s 2>&1 | FileCheck %s --check-prefix=CALLSITE
// RUN: %expect-exit 1 pgpu run --interpret --entry parallel_race %s 2>&1 | FileCheck %s --check-prefix=PARRACE
// RUN: %expect-exit 1 pgpu run --interpret --entry require_race %s 2>&1 | FileCheck %s --check-prefix=REQRACE
// RUN: pgpu run --interpret --entry require_writes %s | FileCheck %s --check-prefix=REQOK
// RUN: %expect-exit 1 pgpu run --interpret --entry different_barriers %s 2>&1 | FileCheck %s --check-prefix=DIFFERENT
// RUN: %expect-exit 1 pgpu run --interpret --entry before_start %s 2>&1 | FileCheck %s --check-prefix=BEFORE
// A barrier between the accesses makes the race go away.
// RUN: pgpu run --interpret --entry no_race %s | FileCheck %s --check-prefix=NORACE

// OOB: printed before
func.func @oob() {
  %c4 = arith.constant 4 : index
  %v = arith.constant 1 : i32
  %a = memref.alloc() : memref<4xi32>
  pgpu.printf "printed before\n"
  // OOB-NEXT: {{.*}}errors.mlir:[[@LINE+1]]:3: error: out-of-bounds access: index 4 of dimension 0 is outside the view's size 4
  memref.store %v, %a[%c4] : memref<4xi32>
  return
}

func.func @uninit() {
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %a = pgpu.dnew [%c8] : memref<?xf32>
  // UNINIT: {{.*}}errors.mlir:[[@LINE+1]]:8: error: read of uninitialised memory: element 2
  %x = memref.load %a[%c2] : memref<?xf32>
  return
}

func.func @write_write() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<1xindex>
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    // WW: {{.*}}errors.mlir:[[@LINE+1]]:5: error: data race: thread 1 writes element 0 that thread 0 wrote in the same superstep
    memref.store %r, %a[%c0] : memref<1xindex>
    // WW: {{.*}}errors.mlir:[[@LINE-1]]:5: note: the other thread's write
  }
  return
}

func.func @read_write() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<2xindex>
  memref.store %c0, %a[%c0] : memref<2xindex>
  memref.store %c0, %a[%c1] : memref<2xindex>
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    %x = memref.load %a[%c0] : memref<2xindex>
    %one = arith.cmpi eq, %r, %c1 : index
    scf.if %one {
      // RW: {{.*}}errors.mlir:[[@LINE+1]]:7: error: data race: thread 1 writes element 0 that thread 0 read in the same superstep
      memref.store %r, %a[%c0] : memref<2xindex>
      // RW: {{.*}}errors.mlir:[[@LINE-5]]:10: note: the other thread's read
    }
  }
  return
}

// NORACE: no race: 1
func.func @no_race() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<1xindex>
  memref.store %c0, %a[%c0] : memref<1xindex>
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    %x = memref.load %a[%c0] : memref<1xindex>
    pgpu.barrier
    %c1 = arith.constant 1 : index
    %one = arith.cmpi eq, %r, %c1 : index
    scf.if %one {
      memref.store %r, %a[%c0] : memref<1xindex>
    }
    pgpu.barrier
    %y = memref.load %a[%c0] : memref<1xindex>
    %is0 = arith.cmpi eq, %r, %c0 : index
    scf.if %is0 {
      pgpu.printf "no race: %d\n"(%y) : index
    }
  }
  return
}

func.func @null() {
  %c0 = arith.constant 0 : index
  %p = ub.poison : memref<?xi32, strided<[1], offset: ?>>
  // NULL: {{.*}}errors.mlir:[[@LINE+1]]:8: error: dereference of a null or poison pointer
  %x = memref.load %p[%c0] : memref<?xi32, strided<[1], offset: ?>>
  return
}

func.func @unsupported() {
  %c0 = arith.constant 0 : index
  pgpu.printf "start\n"
  // UNSUP: {{.*}}errors.mlir:[[@LINE+1]]:8: error: unsupported operation 'tensor.empty'
  %t = tensor.empty() : tensor<4xf32>
  return
}

func.func @use_after_free() {
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4xi32>
  memref.dealloc %a : memref<4xi32>
  // UAF: {{.*}}errors.mlir:[[@LINE+1]]:8: error: use after free: access to element 1 of a freed heap (memref.alloc) allocation
  %x = memref.load %a[%c1] : memref<4xi32>
  return
}

func.func @divide() -> i32 {
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  // DIV: {{.*}}errors.mlir:[[@LINE+1]]:8: error: division by zero in 'arith.divsi'
  %q = arith.divsi %one, %zero : i32
  return %q : i32
}

func.func @bad_get() {
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    pgpu.barrier
    %m = arith.constant -1 : index
    // GET: {{.*}}errors.mlir:[[@LINE+1]]:10: error: pgpu.thread.get of rank -1, which is not a valid rank: undefined result
    %v = pgpu.thread.get %m, %r : index
  }
  return
}

func.func @wait(%r: index) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %zero = arith.cmpi eq, %r, %c0 : index
  scf.if %zero {
    func.call @wait_inner() : () -> ()
  }
  return
}
func.func @wait_inner() attributes {pgpu.spmd_inline} {
  // DIVERGE: {{.*}}errors.mlir:[[@LINE+1]]:3: error: 'pgpu.barrier' reached by 1 of 2 threads; the others finished the SPMD region
  pgpu.barrier
  return
}
func.func @divergent() {
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    func.call @wait(%r) : (index) -> ()
  }
  return
}

// Group queries need synchronous (Fork) code.
func.func @sync_query() -> index attributes {pgpu.synchronous} {
  // GROUPS: {{.*}}errors.mlir:[[@LINE+1]]:8: error: 'pgpu.group.rank' outside synchronous (Fork) code
  %g = pgpu.group.rank : index
  return %g : index
}
func.func @groups() {
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    %g = func.call @sync_query() : () -> index
  }
  return
}

func.func @bad_arg() -> i32 {
  %c0 = arith.constant 0 : i32
  // ARG: {{.*}}errors.mlir:[[@LINE+1]]:8: error: program argument 0 ('seven') is not an i32 integer
  %n = pgpu.argi %c0 default %c0 : i32, i32
  return %n : i32
}

// Locations are found through fused, name and call-site locations.
// FUSED: src.bsgp:7:9: error: out-of-bounds access
func.func @fused_loc() {
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<4xi32>
  %x = memref.load %a[%c4] : memref<4xi32> loc(fused["src.bsgp":7:9, "other.c":1:1])
  return
}

// CALLSITE: inlined.c:2:3: error: read of uninitialised memory
func.func @callsite_loc() {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xi32>
  %x = memref.load %a[%c0] : memref<4xi32> loc(callsite("helper"("inlined.c":2:3) at "caller.c":9:1))
  return
}

// Iterations of scf.parallel are threads for the race detector too.
func.func @parallel_race() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<1xindex>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    // PARRACE: errors.mlir:[[@LINE+1]]:5: error: data race: thread 1 writes element 0 that thread 0 wrote
    memref.store %i, %a[%c0] : memref<1xindex>
    scf.reduce
  }
  return
}

// pgpu.require runs before its superstep: reading what the threads write in
// that superstep is a race; threads reading what it wrote is not.
func.func @require_race() {
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<2xindex>
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    memref.store %r, %a[%r] : memref<2xindex>
    %v = pgpu.require -> (index) {
      %c0 = arith.constant 0 : index
      // REQRACE: errors.mlir:[[@LINE+1]]:12: error: data race: the host code of pgpu.require (which runs before the superstep) reads element 0 that thread 0 wrote in the same superstep
      %x = memref.load %a[%c0] : memref<2xindex>
      pgpu.yield %x : index
    }
  }
  return
}

// REQOK: thread 1 reads 7
func.func @require_writes() {
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    %l = pgpu.require -> (memref<1xi32>) {
      %m = pgpu.dnew [] : memref<1xi32>
      %c0 = arith.constant 0 : index
      %seven = arith.constant 7 : i32
      memref.store %seven, %m[%c0] : memref<1xi32>
      pgpu.yield %m : memref<1xi32>
    }
    %c0 = arith.constant 0 : index
    %x = memref.load %l[%c0] : memref<1xi32>
    %c1 = arith.constant 1 : index
    %is1 = arith.cmpi eq, %r, %c1 : index
    scf.if %is1 {
      pgpu.printf "thread 1 reads %d\n"(%x) : i32
    }
  }
  return
}

// Threads that wait at different barriers diverged.
func.func @then_sync() attributes {pgpu.spmd_inline} {
  // DIFFERENT: errors.mlir:[[@LINE+1]]:3: error: thread 1 waits at 'pgpu.barrier' while thread 0 waits at 'pgpu.barrier' (divergent synchronization)
  pgpu.barrier
  return
}
func.func @else_sync() attributes {pgpu.spmd_inline} {
  // DIFFERENT: errors.mlir:[[@LINE+1]]:3: note: thread 0 waits here
  pgpu.barrier
  return
}
func.func @different_barriers() {
  %c2 = arith.constant 2 : index
  pgpu.spawn %c2 {
    %r = pgpu.rank : index
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %r, %c0 : index
    scf.if %first {
      func.call @else_sync() : () -> ()
    } else {
      func.call @then_sync() : () -> ()
    }
  }
  return
}

// A C pointer may index before its start, but not before its allocation.
func.func @before_start() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m1 = arith.constant -1 : index
  %a = memref.alloc() : memref<4xi32>
  %p = memref.cast %a : memref<4xi32> to memref<?xi32, strided<[1], offset: ?>>
  %base, %off, %size, %stride = memref.extract_strided_metadata %p : memref<?xi32, strided<[1], offset: ?>> -> memref<i32>, index, index, index
  %off1 = arith.addi %off, %c1 : index
  %size1 = arith.subi %size, %c1 : index
  %q = memref.reinterpret_cast %base to offset: [%off1], sizes: [%size1], strides: [1] : memref<i32> to memref<?xi32, strided<[1], offset: ?>>
  %seven = arith.constant 7 : i32
  memref.store %seven, %q[%m1] : memref<?xi32, strided<[1], offset: ?>>
  %x = memref.load %a[%c0] : memref<4xi32>
  // BEFORE: errors.mlir:[[@LINE+1]]:3: error: out-of-bounds access: element -1 of an allocation of 4 elements
  memref.store %x, %p[%m1] : memref<?xi32, strided<[1], offset: ?>>
  return
}
