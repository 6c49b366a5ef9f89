//===- PgpuThreadOps.td - BSGP thread manipulation -----------*- tablegen -*-===//
//
// Dynamic thread counts, rank reassignment and remote access of BSGP
// (seeds/bsgp.txt, Section 5 and Appendix A).
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_THREAD_OPS_TD
#define PGPU_THREAD_OPS_TD

include "pgpu/PgpuDialect.td"

/// A collective primitive that changes the set of threads or their ranks: it
/// synchronizes all threads (it contains barriers) and writes the thread
/// state.
class Pgpu_ThreadPrimitiveOp<string mnemonic, list<Trait> traits = []>
    : Pgpu_Op<mnemonic, !listconcat(traits, [MemoryEffects<[MemRead, MemWrite,
        MemRead<Pgpu_ThreadStateResource>,
        MemWrite<Pgpu_ThreadStateResource>]>])> {
  let hasVerifier = 1;
}

def Pgpu_ThreadForkOp : Pgpu_ThreadPrimitiveOp<"thread.fork",
    [AllTypesMatch<["count", "child"]>]> {
  let summary = "BSGP's `thread.fork(n)`: replaces the thread by n children";
  let description = [{
    BSGP's `thread.fork(n)` (seeds/bsgp.txt, Section 5, Listing 6;
    Appendix A): "Fork n child threads. All child threads inherit the
    parent's local variables. A unique ID between 0 and n-1 is returned to
    each child thread. The parent thread no longer exists after fork." A
    thread with `n <= 0` leaves no children. Afterwards `pgpu.size` is the
    total number of children, and ranks are reassigned to `0 .. size-1`
    preserving the parents' relative rank order (children of one parent in
    the order of their ids); `pgpu.oldrank` is the parent's rank. It is a
    collective (all threads call it, at a position where a barrier may
    stand).

    ```mlir
    %len = arith.subi %e, %s : index
    %id = pgpu.thread.fork %len : index
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$count);
  let results = (outs AnySignlessIntegerOrIndex:$child);
  let assemblyFormat = "$count attr-dict `:` type($count)";
}

def Pgpu_ThreadKillOp : Pgpu_ThreadPrimitiveOp<"thread.kill"> {
  let summary = "BSGP's `thread.kill(flag)`: ends the calling thread if flag is true";
  let description = [{
    BSGP's `thread.kill(flag)` (seeds/bsgp.txt, Section 5, Listing 6;
    Appendix A): "Kill the calling thread if flag is true". The surviving
    threads get ranks `0 .. size-1` preserving their relative rank order;
    `pgpu.size` is their number and `pgpu.oldrank` their rank before the
    call. It is a collective.

    ```mlir
    pgpu.thread.kill %not_a_number
    ```
  }];
  let arguments = (ins I1:$flag);
  let assemblyFormat = "$flag attr-dict";
}

def Pgpu_ThreadSortByOp : Pgpu_ThreadPrimitiveOp<"thread.sortby"> {
  let summary = "BSGP's `thread.sortby(key)`: reassigns ranks in key order";
  let description = [{
    BSGP's `thread.sortby(key)` (seeds/bsgp.txt, Section 3.1, Listing 1;
    Section 4.2, Listing 3; Appendix A): "Let Ki be key in thread with rank
    i. Thread ranks are adjusted such that after thread.sortby returns,
    Ki <= Kj for all i <= j. Relative rank order is preserved among threads
    with the same key, i.e., the sort is stable". Each thread keeps its
    private values; `pgpu.oldrank` is its rank before the call. Integer keys
    compare as signed (frontends flip the sign bit of unsigned keys, which
    maps unsigned order onto signed order). It is a collective; its library implementation is a
    local sort, a `pgpu.barrier rank_reassigned` and a global merge.

    ```mlir
    %v = memref.load %ib[%rk] : memref<?xi32>
    pgpu.thread.sortby %v : i32
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnySignlessIntegerOrIndex, AnyFloat]>:$key);
  let assemblyFormat = "$key attr-dict `:` type($key)";
}

def Pgpu_ThreadSplitOp : Pgpu_ThreadPrimitiveOp<"thread.split"> {
  let summary = "BSGP's `thread.split(side)`: ranks false-side threads first";
  let description = [{
    BSGP's `thread.split(side)` (seeds/bsgp.txt, Appendix A): "The rank is
    reassigned such that a thread with a false side has a smaller rank than
    a thread with a true side. Relative rank order is preserved among
    threads of the same side." `pgpu.oldrank` is the rank before the call.
    It is a collective. (The collective that splits a stream into a list is
    `pgpu.split`.)

    ```mlir
    pgpu.thread.split %is_leaf
    ```
  }];
  let arguments = (ins I1:$side);
  let assemblyFormat = "$side attr-dict";
}

def Pgpu_ThreadGetOp : Pgpu_Op<"thread.get", [MemoryEffects<[MemRead]>,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "BSGP's `thread.get(r, v)`: another thread's value from the previous superstep";
  let description = [{
    BSGP's communication intrinsic `thread.get(r, v)` (seeds/bsgp.txt,
    Section 5, Listing 9): "gets v's value in the previous superstep from
    the thread with rank r. If r is not a valid rank, an undefined result is
    returned." The result has the type of `value`. The compiler turns it
    into a read of the temporary stream that saves `value`, indexed by `r`,
    so `value` must be defined before the last barrier.

    ```mlir
    %prev = arith.subi %rk, %c1 : index
    %pv = pgpu.thread.get %prev, %v : i32
    ```
  }];
  let arguments = (ins Index:$rank, AnyType:$value);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$rank `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Pgpu_ThreadPutOp : Pgpu_Op<"thread.put", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["target", "value", "updated"]>]> {
  let summary = "BSGP's `thread.put(r, p, v)`: stores v into p of thread r";
  let description = [{
    BSGP's communication intrinsic `thread.put(r, p, v)` (seeds/bsgp.txt,
    Section 5): "stores v's value to p in the thread with rank r. The stored
    value can only be read after the next barrier. If r is not a valid rank,
    no operation is performed. put is considered to be an assignment to p."

    In SSA form the assignment is explicit: the result is the new version of
    `p` in the calling thread, readable after the next barrier. It holds the
    `v` of a thread that put to the calling thread (which one is unspecified
    if several did). If no thread did, it is undefined: as in the paper, the
    lowering writes `v` into the temporary stream of `p` at index `r` and
    drops `p`'s own saving code.

    ```mlir
    %p1 = pgpu.thread.put %next, %p, %v : f32
    pgpu.barrier
    ```
  }];
  let arguments = (ins Index:$rank, AnyType:$target, AnyType:$value);
  let results = (outs AnyType:$updated);
  let assemblyFormat = "$rank `,` $target `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

#endif // PGPU_THREAD_OPS_TD
