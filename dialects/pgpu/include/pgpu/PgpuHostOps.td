//===- PgpuHostOps.td - host code and device allocation ------*- tablegen -*-===//
//
// BSGP's `require` blocks and `dnew`/`dtempnew`/`dtempfree`
// (seeds/bsgp.txt, Sections 3-5); task groups, whose tasks' device work may
// overlap (Fork's sibling subgroups, seeds/fork-to-cuda.txt, Section 3).
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_HOST_OPS_TD
#define PGPU_HOST_OPS_TD

include "pgpu/PgpuDialect.td"

def Pgpu_RequireOp : Pgpu_Op<"require", [RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "BSGP's `require { }`: host code run before the superstep";
  let description = [{
    BSGP's `require` block (seeds/bsgp.txt, Section 5, Listings 1, 6 and 7;
    Section 4.2, step 3): control-processor code inside GPU code, such as
    resource allocation. "At run time, code inserted this way is executed
    before the containing superstep is launched", once, not per thread. Its
    results (e.g. a list allocated with `pgpu.dtempnew`) are uniform values
    that the GPU code of the spawn may use; they become kernel parameters
    (Section 4.2, step 4). The body is host code: per-thread queries
    (`pgpu.rank`, group queries, ...) are not allowed in it, `pgpu.size` is.

    It may appear wherever a barrier may, and directly in a
    `pgpu.superstep`.

    ```mlir
    %owner = pgpu.require -> (memref<?xi32>) {
      %l = pgpu.dtempnew [%n] : memref<?xi32>
      pgpu.yield %l : memref<?xi32>
    }
    ```
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`->` `(` type($results)^ `)`)? $body attr-dict";
  let hasVerifier = 1;
}

def Pgpu_GridCapacityOp : Pgpu_Op<"grid_capacity", [Pure]> {
  let summary = "Threads one grid spawn can run at once on the device";
  let description = [{
    The number of threads that a `pgpu.spawn grid` may have on the device
    the program runs on: all of them must be co-resident, as its barriers
    are grid-wide (a cooperative launch). 0 on a device without grid
    barriers (the runtime's CPU device). `pgpu-grid-fuse` versions a spawn
    on it; it is constant during a run. Host code only.

    ```mlir
    %max = pgpu.grid_capacity : index
    ```
  }];
  let results = (outs Index:$capacity);
  let assemblyFormat = "attr-dict `:` type($capacity)";
}

def Pgpu_BlockCapacityOp : Pgpu_Op<"block_capacity", [Pure]> {
  let summary = "Threads one block spawn can have on the device";
  let description = [{
    The largest thread count of a `pgpu.spawn block` on the device the
    program runs on: its threads form one thread block (1024 on CUDA
    GPUs; the interpreter also answers 1024). 0 on a device without
    block spawns (the runtime's CPU device). `pgpu-lower-groups` versions
    a Fork group call on it; it is constant during a run. Host code only.

    ```mlir
    %max = pgpu.block_capacity : index
    ```
  }];
  let results = (outs Index:$capacity);
  let assemblyFormat = "attr-dict `:` type($capacity)";
}

def Pgpu_MultiprocessorsOp : Pgpu_Op<"multiprocessors", [Pure]> {
  let summary = "Multiprocessors of the device";
  let description = [{
    How many multiprocessors the device the program runs on has (the SM
    count on CUDA GPUs, or `PGPU_MULTIPROCESSORS` when set, to study the
    dispatch below). 1 in the interpreter, which runs one thing at a time;
    0 on the runtime's CPU device, which has no block spawns.
    `pgpu-lower-groups` runs a group whose block version splits in one
    block only when the program has at least 4 processors (warp
    schedulers) per multiprocessor. Constant during a run. Host code only.

    ```mlir
    %sms = pgpu.multiprocessors : index
    ```
  }];
  let results = (outs Index:$count);
  let assemblyFormat = "attr-dict `:` type($count)";
}

def Pgpu_LockstepWidthOp : Pgpu_Op<"lockstep_width", [Pure]> {
  let summary = "Threads of a kernel the device runs in lockstep";
  let description = [{
    How many consecutive threads of a kernel the device the program runs
    on executes in lockstep: the warp size on CUDA GPUs (32, the device's
    `CU_DEVICE_ATTRIBUTE_WARP_SIZE`); 1 on the runtime's CPU device and in
    the interpreter, which run one thread at a time. It is the scope of
    GPU-TLS's intra-warp value forwarding and eager intra-warp dependency
    checking (seeds/gpu-tls.txt, Sections III.B and III.C, `W` of
    Algorithms 1-3), which need no explicit synchronization because the
    threads of a warp run in lockstep. Constant during a run. Host code
    only.

    ```mlir
    %lanes = pgpu.lockstep_width : index
    ```
  }];
  let results = (outs Index:$width);
  let assemblyFormat = "attr-dict `:` type($width)";
}

class Pgpu_AllocOp<string mnemonic> : Pgpu_Op<mnemonic> {
  let arguments = (ins Variadic<Index>:$dynamicSizes);
  let results = (outs Res<AnyMemRef, "the new list",
                          [MemAlloc<DefaultResource, 0, FullEffect>]>:$memref);
  let assemblyFormat = "` ` `[` $dynamicSizes `]` attr-dict `:` type($memref)";
  let hasVerifier = 1;
}

def Pgpu_DNewOp : Pgpu_AllocOp<"dnew"> {
  let summary = "BSGP's `dnew[n]T`: allocates a list in device memory";
  let description = [{
    BSGP's `dnew` (seeds/bsgp.txt, Section 5, Listing 6:
    `ret = dnew[thread.size]float`): allocates device (video) memory that
    lives until the program frees it, e.g. a list returned to the caller.
    One size operand per dynamic dimension of the result. Host code only:
    outside SPMD regions or inside `pgpu.require`.

    ```mlir
    %ret = pgpu.dnew [%n] : memref<?xf32>
    ```
  }];
}

def Pgpu_DTempNewOp : Pgpu_AllocOp<"dtempnew"> {
  let summary = "BSGP's `dtempnew[n]T`: allocates a temporary device list";
  let description = [{
    BSGP's `dtempnew` (seeds/bsgp.txt, Section 3.1, Listing 1; Section 4.2,
    Listings 3 and 4): like `pgpu.dnew`, but the list is temporary: the next
    `pgpu.dtempfree` of the function frees it ("free lists allocated by
    dtempnew", Listing 4). Host code only.

    ```mlir
    %owner = pgpu.dtempnew [%n] : memref<?xi32>
    ```
  }];
}

def Pgpu_DTempFreeOp : Pgpu_Op<"dtempfree", [MemoryEffects<[MemFree]>]> {
  let summary = "BSGP's `dtempfree()`: frees every temporary list";
  let description = [{
    BSGP's `dtempfree()` (seeds/bsgp.txt, Section 4.2, Listing 4): frees
    every list that `pgpu.dtempnew` allocated in the current function
    invocation and that is not freed yet. The compiler inserts it at the end
    of a spawning function. Host code only.

    ```mlir
    pgpu.dtempfree
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tasks
//===----------------------------------------------------------------------===//

def Pgpu_TaskGroupOp : Pgpu_Op<"taskgroup", [RecursiveMemoryEffects,
    NoRegionArguments, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Host code whose `pgpu.task`s may run in any order";
  let description = [{
    Host code. Runs its body; every `pgpu.task` inside it (at any depth of
    host control flow, e.g. inside an `scf.for` or `scf.if`, but not inside
    a nested `pgpu.taskgroup`) is a task of this group: tasks may run in any
    order and their device work may overlap; the taskgroup completes when
    its body and all its tasks have. The tasks must not depend on one
    another (no task reads what another writes). Fork's sibling subgroups
    (`pgpu.group.split`, `pgpu.group.fork`) are such tasks
    (seeds/fork-to-cuda.txt, Section 3).

    The reference interpreter and the CPU device run the tasks one after
    the other, in program order; on the CUDA device each task's device work
    goes to its own stream, forked from the taskgroup's stream and joined
    back at its end, and `pgpu-outline-tasks` runs the host code of the
    tasks that may run concurrently on threads of their own; the other
    tasks' host code stays sequential. `pgpu-lower-to-runtime` brackets
    the body with `pgpu_rt_tasks_begin()` and `pgpu_rt_tasks_end()`.

    ```mlir
    pgpu.taskgroup {
      scf.for %g = %c0 to %groups step %c1 {
        pgpu.task {
          pgpu.spawn %n { ... }
        }
      }
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
  let hasVerifier = 1;
}

def Pgpu_TaskOp : Pgpu_Op<"task", [RecursiveMemoryEffects,
    NoRegionArguments, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Host code: one task of the enclosing `pgpu.taskgroup`";
  let description = [{
    Host code. Its body is one task of the nearest enclosing
    `pgpu.taskgroup` (see there): it must be nested in one, at any depth of
    host control flow, and not in another `pgpu.task` of the same group.
    `pgpu-lower-to-runtime` brackets the body with `pgpu_rt_task_begin()`
    and `pgpu_rt_task_end()`.

    ```mlir
    pgpu.task {
      pgpu.spawn %n { ... }
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
  let hasVerifier = 1;
}

#endif // PGPU_HOST_OPS_TD
