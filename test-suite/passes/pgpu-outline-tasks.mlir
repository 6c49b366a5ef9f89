// RUN: pgpu-opt %s --pgpu-outline-tasks | FileCheck %s
// RUN: pgpu-opt %s --pgpu-outline-tasks --pgpu-lower-to-runtime | FileCheck %s --check-prefix=LOWER
// Running outlined tasks: test-suite/run/native/fork-examples.test (the
// cuda target on the cpu device); the quicksort's tasks in LLVM IR:
// test-suite/run/native/taskgroup.test.

func.func private @external(memref<?xi32>)
func.func private @pgpu_rt_to_host(!llvm.ptr, i32)

// CHECK-DAG: func.func private @pgpu_rt_task_spawn((!llvm.ptr) -> (), !llvm.ptr, i64)

// Two tasks: an index, an i32, an i1 and a memref travel in the first
// one's context, the constant is cloned; each task gets its struct on the
// stack at the function's entry. New functions go right after their host
// function, so the second comes first.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[A:[^:]*]]: memref<?xi32>, %[[N:[^:]*]]: index, %[[X:[^:]*]]: i32, %[[C:[^:]*]]: i1)
// CHECK: %[[CTX1:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>, i64)>
// CHECK: %[[CTX0:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, i32, i1, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: %[[F0:.*]] = llvm.getelementptr %[[CTX0]][0, 0]
// CHECK-NEXT: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT: llvm.store %[[N64]], %[[F0]] : i64, !llvm.ptr
// CHECK-NEXT: %[[F1:.*]] = llvm.getelementptr %[[CTX0]][0, 1]
// CHECK-NEXT: llvm.store %[[X]], %[[F1]] : i32, !llvm.ptr
// CHECK-NEXT: %[[F2:.*]] = llvm.getelementptr %[[CTX0]][0, 2]
// CHECK-NEXT: llvm.store %[[C]], %[[F2]] : i1, !llvm.ptr
// CHECK-NEXT: %[[F3:.*]] = llvm.getelementptr %[[CTX0]][0, 3]
// CHECK-NEXT: %[[DESC:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<?xi32> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK-NEXT: llvm.store %[[DESC]], %[[F3]]
// The struct's size: element 1 of an array at null.
// CHECK-NEXT: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[END:.*]] = llvm.getelementptr %[[NULL]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, i32, i1, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
// CHECK-NEXT: %[[BYTES:.*]] = llvm.ptrtoint %[[END]] : !llvm.ptr to i64
// CHECK-NEXT: %[[BODY0:.*]] = func.constant @f_task0 : (!llvm.ptr) -> ()
// CHECK-NEXT: call @pgpu_rt_task_spawn(%[[BODY0]], %[[CTX0]], %[[BYTES]]) : ((!llvm.ptr) -> (), !llvm.ptr, i64) -> ()
// CHECK: %[[BODY1:.*]] = func.constant @f_task1 : (!llvm.ptr) -> ()
// CHECK-NEXT: call @pgpu_rt_task_spawn(%[[BODY1]], %[[CTX1]], %{{.*}})
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @f_task1(
// CHECK: memref.load
// CHECK-LABEL: func.func private @f_task0(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr)
// CHECK-NEXT: %[[G0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK-NEXT: %[[L0:.*]] = llvm.load %[[G0]] : !llvm.ptr -> i64
// CHECK-NEXT: %[[TN:.*]] = arith.index_cast %[[L0]] : i64 to index
// CHECK-NEXT: %[[G1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK-NEXT: %[[TX:.*]] = llvm.load %[[G1]] : !llvm.ptr -> i32
// CHECK-NEXT: %[[G2:.*]] = llvm.getelementptr %[[CTX]][0, 2]
// CHECK-NEXT: %[[TC:.*]] = llvm.load %[[G2]] : !llvm.ptr -> i1
// CHECK-NEXT: %[[G3:.*]] = llvm.getelementptr %[[CTX]][0, 3]
// CHECK-NEXT: %[[L3:.*]] = llvm.load %[[G3]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK-NEXT: %[[TA:.*]] = builtin.unrealized_conversion_cast %[[L3]] : {{.*}} to memref<?xi32>
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// The body, in order, on the task's own list and the captured ones.
// CHECK-NEXT: %[[L:.*]] = memref.alloc(%[[TN]]) : memref<?xi32>
// CHECK-NEXT: %[[Y:.*]] = arith.addi %[[TX]], %[[C7]] : i32
// CHECK-NEXT: %[[V:.*]] = arith.select %[[TC]], %[[Y]], %[[TX]] : i32
// CHECK-NEXT: %[[W:.*]] = memref.load %[[TA]][%[[C0]]] : memref<?xi32>
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[V]], %[[W]] : i32
// CHECK-NEXT: memref.store %[[S]], %[[L]][%[[C0]]] : memref<?xi32>
// CHECK-NEXT: memref.dealloc %[[L]] : memref<?xi32>
// CHECK-NEXT: return
// LOWER-LABEL: func.func @f(
// LOWER: call @pgpu_rt_tasks_begin() : () -> ()
// LOWER-NOT: pgpu_rt_task_begin
// LOWER: call @pgpu_rt_task_spawn(
// LOWER: call @pgpu_rt_task_spawn(
// LOWER-NEXT: call @pgpu_rt_tasks_end() : () -> ()
func.func @f(%a: memref<?xi32>, %n: index, %x: i32, %c: i1) {
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : i32
  pgpu.taskgroup {
    pgpu.task {
      %l = memref.alloc(%n) : memref<?xi32>
      %y = arith.addi %x, %c7 : i32
      %v = arith.select %c, %y, %x : i32
      %w = memref.load %a[%c0] : memref<?xi32>
      %s = arith.addi %v, %w : i32
      memref.store %s, %l[%c0] : memref<?xi32>
      memref.dealloc %l : memref<?xi32>
    }
    pgpu.task {
      %w = memref.load %a[%n] : memref<?xi32>
    }
  }
  return
}

// A task in host control flow of its group: the context is filled at each
// iteration, the runtime copies it at the spawn.
// CHECK-LABEL: func.func @loop(
// CHECK: %[[LCTX:.*]] = llvm.alloca
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: scf.for %[[G:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[G64:.*]] = arith.index_cast %[[G]] : index to i64
// CHECK: %[[LBODY:.*]] = func.constant @loop_task0
// CHECK-NEXT: call @pgpu_rt_task_spawn(%[[LBODY]], %[[LCTX]], %{{.*}})
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-LABEL: func.func private @loop_task0(
// CHECK: memref.load
func.func @loop(%a: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.taskgroup {
    scf.for %g = %c0 to %n step %c1 {
      pgpu.task {
        %v = memref.load %a[%g] : memref<?xi32>
      }
    }
  }
  return
}

// A callee's host writes through a parameter are the caller's: @fill
// writes the list the task allocated (and its own), so the task is
// outlined; a thread-safe runtime call is fine.
// CHECK-LABEL: func.func @fill(
// CHECK-LABEL: func.func @calls(
// CHECK: func.constant @calls_task0
// CHECK-LABEL: func.func private @calls_task0(
// CHECK: %[[CL:.*]] = memref.alloc
// CHECK-NEXT: call @fill(%[[CL]], %{{.*}})
// CHECK: call @pgpu_rt_to_host(
func.func @fill(%l: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = memref.alloc(%n) : memref<?xi32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %t[%i] : memref<?xi32>
    memref.store %v, %t[%i] : memref<?xi32>
    memref.store %v, %l[%i] : memref<?xi32>
  }
  memref.dealloc %t : memref<?xi32>
  return
}

func.func @calls(%n: index) {
  pgpu.taskgroup {
    pgpu.task {
      %l = memref.alloc(%n) : memref<?xi32>
      func.call @fill(%l, %n) : (memref<?xi32>, index) -> ()
      %p = llvm.mlir.zero : !llvm.ptr
      %z = arith.constant 0 : i32
      func.call @pgpu_rt_to_host(%p, %z) : (!llvm.ptr, i32) -> ()
      memref.dealloc %l : memref<?xi32>
    }
  }
  return
}

// Tasks that stay: one that prints through a callee, one that stores to
// a list from outside (directly, and through @fill), one capturing a
// memref in another memory space, one an unranked memref, one that reads
// the clock, one calling a function the module has no body of.
// CHECK-LABEL: func.func @say(
// CHECK-NEXT: pgpu.printf
// CHECK-LABEL: func.func @stay(
// CHECK-NOT: pgpu_rt_task_spawn
// CHECK: pgpu.task {
// CHECK-NEXT: call @say(
// CHECK: pgpu.task {
// CHECK-NEXT: memref.store
// CHECK: pgpu.task {
// CHECK-NEXT: call @fill(
// CHECK: pgpu.task {
// CHECK-NEXT: memref.load %{{.*}} : memref<?xi32, 1>
// CHECK: pgpu.task {
// CHECK-NEXT: memref.rank
// CHECK: pgpu.task {
// CHECK-NEXT: pgpu.wtime
// CHECK: pgpu.task {
// CHECK-NEXT: call @external(
// CHECK-NOT: pgpu_rt_task_spawn
// CHECK: return
// They are bracketed by pgpu-lower-to-runtime.
// LOWER-LABEL: func.func @stay(
// LOWER: call @pgpu_rt_tasks_begin() : () -> ()
// LOWER-NEXT: call @pgpu_rt_task_begin() : () -> ()
// LOWER-NEXT: call @say(
// LOWER-NEXT: call @pgpu_rt_task_end() : () -> ()
// LOWER-NOT: pgpu_rt_task_spawn
// LOWER: call @pgpu_rt_tasks_end() : () -> ()
func.func @say(%x: i32) {
  pgpu.printf "%d\n"(%x) : i32
  return
}

func.func @stay(%a: memref<?xi32>, %n: index, %x: i32, %s: memref<?xi32, 1>, %u: memref<*xi32>) {
  %c0 = arith.constant 0 : index
  pgpu.taskgroup {
    pgpu.task {
      func.call @say(%x) : (i32) -> ()
    }
    pgpu.task {
      memref.store %x, %a[%c0] : memref<?xi32>
    }
    pgpu.task {
      func.call @fill(%a, %n) : (memref<?xi32>, index) -> ()
    }
    pgpu.task {
      %v = memref.load %s[%c0] : memref<?xi32, 1>
    }
    pgpu.task {
      %r = memref.rank %u : memref<*xi32>
    }
    pgpu.task {
      %t = pgpu.wtime : f64
    }
    pgpu.task {
      func.call @external(%a) : (memref<?xi32>) -> ()
    }
  }
  return
}

// Host code of the group that may run after the spawn must not write what
// the task reads: a store after it, or before it in a loop holding both,
// keeps the task; stores before it, or in the other branch of its scf.if,
// do not.
// CHECK-LABEL: func.func @later(
// CHECK: pgpu.task {
// CHECK-NEXT: memref.load
// CHECK-LABEL: func.func @in_loop(
// CHECK: scf.for
// CHECK-NEXT: memref.store
// CHECK-NEXT: pgpu.task {
// CHECK-LABEL: func.func @before(
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: memref.store
// CHECK-NEXT: scf.if
// CHECK: call @pgpu_rt_task_spawn(
// CHECK-NEXT: } else {
// CHECK-NEXT: memref.store
// CHECK-LABEL: func.func private @before_task0(
// Calls after a task access what their callees access through their
// parameters: @fill writes only %b. A function without a body may access
// any memory whose address it can reach: %a, not %b, whose address never
// escapes; but %c's does (it is stored in a list of lists).
// CHECK-LABEL: func.func @later_calls(
// CHECK: call @external(
// CHECK-NEXT: llvm.getelementptr
// CHECK: call @pgpu_rt_task_spawn(
// CHECK-NEXT: call @fill(
// CHECK: pgpu.taskgroup {
// CHECK: call @pgpu_rt_task_spawn(
// CHECK-NEXT: call @external(
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: pgpu.task {
// CHECK-NEXT: memref.load
// CHECK: call @external(
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: pgpu.task {
// CHECK-NEXT: memref.load
// CHECK: call @external(
// CHECK-LABEL: func.func private @later_calls_task1(
// CHECK-LABEL: func.func private @later_calls_task0(
func.func @later(%a: memref<?xi32>, %n: index, %x: i32) {
  %c1 = arith.constant 1 : index
  pgpu.taskgroup {
    pgpu.task {
      %v = memref.load %a[%n] : memref<?xi32>
    }
    memref.store %x, %a[%c1] : memref<?xi32>
  }
  return
}

func.func @in_loop(%a: memref<?xi32>, %n: index, %x: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.taskgroup {
    scf.for %i = %c0 to %n step %c1 {
      memref.store %x, %a[%i] : memref<?xi32>
      pgpu.task {
        %v = memref.load %a[%n] : memref<?xi32>
      }
    }
  }
  return
}

func.func @before(%a: memref<?xi32>, %n: index, %x: i32, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.taskgroup {
    memref.store %x, %a[%c0] : memref<?xi32>
    scf.if %c {
      pgpu.task {
        %v = memref.load %a[%n] : memref<?xi32>
      }
    } else {
      memref.store %x, %a[%c1] : memref<?xi32>
    }
  }
  return
}

func.func @later_calls(%a: memref<?xi32>, %n: index) {
  %b = memref.alloc(%n) : memref<?xi32>
  pgpu.taskgroup {
    func.call @external(%a) : (memref<?xi32>) -> ()
    pgpu.task {
      %v = memref.load %a[%n] : memref<?xi32>
    }
    func.call @fill(%b, %n) : (memref<?xi32>, index) -> ()
  }
  pgpu.taskgroup {
    pgpu.task {
      %w = memref.load %b[%n] : memref<?xi32>
    }
    func.call @external(%a) : (memref<?xi32>) -> ()
  }
  pgpu.taskgroup {
    pgpu.task {
      %w = memref.load %a[%n] : memref<?xi32>
    }
    func.call @external(%a) : (memref<?xi32>) -> ()
  }
  %c = memref.alloc(%n) : memref<?xi32>
  %lists = memref.alloc(%n) : memref<?xmemref<?xi32>>
  memref.store %c, %lists[%n] : memref<?xmemref<?xi32>>
  pgpu.taskgroup {
    pgpu.task {
      %w = memref.load %c[%n] : memref<?xi32>
    }
    func.call @external(%a) : (memref<?xi32>) -> ()
  }
  memref.dealloc %b : memref<?xi32>
  return
}

// The members of each subgroup computed into one list that every
// iteration reuses: the next iteration's kernel (device work counts too)
// overwrites what the task reads, so the task stays.
// CHECK-LABEL: func.func @reused_list(
// CHECK: scf.for
// CHECK-NEXT: scf.parallel
// CHECK: pgpu.task {
func.func @reused_list(%a: memref<?xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.alloc(%n) : memref<?xi32>
  pgpu.taskgroup {
    scf.for %g = %c0 to %n step %c1 {
      scf.parallel (%i) = (%c0) to (%n) step (%c1) {
        %v = memref.load %a[%i] : memref<?xi32>
        memref.store %v, %m[%i] : memref<?xi32>
        scf.reduce
      }
      pgpu.task {
        %w = memref.load %m[%g] : memref<?xi32>
      }
    }
  }
  memref.dealloc %m : memref<?xi32>
  return
}

// Outer tasks first: the group nested in @nested's task is in
// @nested_task0 when its tasks are outlined, so they are named after it
// and their structs are on its stack.
// CHECK-LABEL: func.func @nested(
// CHECK: func.constant @nested_task0
// CHECK-LABEL: func.func private @nested_task0(
// CHECK-SAME: %[[NCTX:[^:]*]]: !llvm.ptr)
// CHECK: %[[ICTX1:.*]] = llvm.alloca
// CHECK: %[[ICTX0:.*]] = llvm.alloca
// CHECK: %[[LIST:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK: pgpu.taskgroup {
// CHECK: builtin.unrealized_conversion_cast %[[LIST]] : memref<?xi32> to
// CHECK: func.constant @nested_task0_task0
// CHECK-NEXT: call @pgpu_rt_task_spawn(%{{.*}}, %[[ICTX0]], %{{.*}})
// CHECK: func.constant @nested_task0_task1
// CHECK-NEXT: call @pgpu_rt_task_spawn(%{{.*}}, %[[ICTX1]], %{{.*}})
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @nested_task0_task1(
// CHECK-LABEL: func.func private @nested_task0_task0(
func.func @nested(%a: memref<?xi32>, %n: index) {
  pgpu.taskgroup {
    pgpu.task {
      pgpu.taskgroup {
        pgpu.task {
          %v = memref.load %a[%n] : memref<?xi32>
        }
        pgpu.task {
          %w = memref.load %a[%n] : memref<?xi32>
        }
      }
    }
  }
  return
}

// An outer task whose inner task prints stays (with the printing task);
// its other inner task is outlined from the host function.
// CHECK-LABEL: func.func @nested_stays(
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: pgpu.task {
// CHECK-NEXT: pgpu.taskgroup {
// CHECK: func.constant @nested_stays_task0
// CHECK-NEXT: call @pgpu_rt_task_spawn(
// CHECK-NEXT: pgpu.task {
// CHECK-NEXT: pgpu.printf
// CHECK-LABEL: func.func private @nested_stays_task0(
func.func @nested_stays(%a: memref<?xi32>, %n: index) {
  pgpu.taskgroup {
    pgpu.task {
      pgpu.taskgroup {
        pgpu.task {
          %v = memref.load %a[%n] : memref<?xi32>
        }
        pgpu.task {
          pgpu.printf "inner\n"
        }
      }
    }
  }
  return
}

// Nothing captured: a null context of 0 bytes.
// CHECK-LABEL: func.func @empty(
// CHECK: pgpu.taskgroup {
// CHECK-NEXT: %[[ZERO:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[NONE:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[EBODY:.*]] = func.constant @empty_task0 : (!llvm.ptr) -> ()
// CHECK-NEXT: call @pgpu_rt_task_spawn(%[[EBODY]], %[[ZERO]], %[[NONE]])
// CHECK-NEXT: }
// CHECK-LABEL: func.func private @empty_task0(
// CHECK-NEXT: return
func.func @empty() {
  pgpu.taskgroup {
    pgpu.task {
    }
  }
  return
}
