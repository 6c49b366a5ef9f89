//===- PgpuSpmdOps.td - SPMD regions, barriers, ranks --------*- tablegen -*-===//
//
// BSGP's spawn/barrier/superstep structure (seeds/bsgp.txt, Sections 3-5)
// and Fork's `start(P)` synchronous groups (seeds/fork-to-cuda.txt,
// Section 3).
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_SPMD_OPS_TD
#define PGPU_SPMD_OPS_TD

include "pgpu/PgpuDialect.td"

//===----------------------------------------------------------------------===//
// pgpu.yield
//===----------------------------------------------------------------------===//

def Pgpu_YieldOp : Pgpu_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["SpawnOp", "SuperstepOp", "ParOp", "SeqOp", "FarmOp",
                 "RequireOp", "TaskGroupOp", "TaskOp"]>]> {
  let summary = "Ends the body of an SPMD, superstep, par, seq, farm, require, taskgroup or task region";
  let description = [{
    Terminates the single block of `pgpu.spawn`, `pgpu.superstep`, each
    branch of `pgpu.par`, `pgpu.seq`, `pgpu.farm`, `pgpu.require`,
    `pgpu.taskgroup` and `pgpu.task`. Its operands become the results of
    the parent: all results for `pgpu.superstep`, `pgpu.farm` and
    `pgpu.require`; for `pgpu.par`, the results are the yields of all
    branches concatenated in branch order. `pgpu.spawn`, `pgpu.seq`,
    `pgpu.taskgroup` and `pgpu.task` have no results, so their yield has no
    operands. A yield without operands is implicit in the custom syntax.

    ```mlir
    %v = pgpu.superstep -> (i32) {
      %x = memref.load %a[%r] : memref<?xi32>
      pgpu.yield %x : i32
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let builders = [OpBuilder<(ins), [{ /* nothing to do */ }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pgpu.spawn
//===----------------------------------------------------------------------===//

def Pgpu_SpawnOp : Pgpu_Op<"spawn", [RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Runs its body once for each of `n` logical threads";
  let description = [{
    BSGP's `spawn(n) { ... }` (seeds/bsgp.txt, Section 3, Listing 1, and
    Section 5): the body runs as `n` logical threads that execute the same
    code; `pgpu.rank` gives each thread its rank in `0 .. n-1` and
    `pgpu.size` the thread count. Values defined in the body are private to
    each thread; memory is shared. Barriers directly in the body separate
    supersteps; after superstep formation the body holds only
    `pgpu.superstep` regions (a body is either all supersteps or none).

    With `synchronous` the threads form a Fork group started by `start(P)`
    (seeds/fork-to-cuda.txt, Sections 2-3): the group executes statement by
    statement in lock-step with PRAM semantics (a shared write is visible to
    the next statement of every member; concurrent writes resolve as
    Priority CRCW, lowest rank wins). Only a synchronous spawn (or a function
    marked `pgpu.synchronous`) may query and split groups.

    With `grid` the spawn runs as one kernel whose barriers are grid-wide
    barriers (a cooperative launch: all threads are co-resident on the
    device, so private values stay in registers across barriers and no
    superstep is split off). `pgpu-grid-fuse` makes such spawns where the
    thread count fits the device; the body then has no supersteps, no
    rank reassignment, collectives, thread primitives or `thread.get`/
    `thread.put`, and `pgpu.require` only before the first barrier (host
    code runs before the launch).

    With `block` the threads form one thread block (at most
    `pgpu.block_capacity` of them) and the body runs as one kernel: it
    synchronizes ranges of its threads with `pgpu.range_barrier` (directly
    or in the `pgpu.block_group` functions it calls), never all of them
    with `pgpu.barrier`. `pgpu-block-groups` and `pgpu-lower-groups` make
    such spawns for Fork group calls that fit a block.

    A spawn is host-level code: it cannot be nested in another SPMD region.

    ```mlir
    pgpu.spawn %n {
      %r = pgpu.rank : index
      pgpu.barrier
    }
    pgpu.spawn synchronous %p {
      %g = pgpu.group.rank : index
    }
    pgpu.spawn grid %n {
      pgpu.barrier
    }
    pgpu.spawn block %n {
      %t = pgpu.rank : index
      pgpu.range_barrier %c0, %n, %slot
    }
    ```
  }];
  let arguments = (ins Index:$count, UnitAttr:$synchronous, UnitAttr:$grid,
                   UnitAttr:$block);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "(`synchronous` $synchronous^)? (`grid` $grid^)? (`block` $block^)? "
      "$count $body attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pgpu.range_barrier
//===----------------------------------------------------------------------===//

def Pgpu_RangeBarrierOp : Pgpu_Op<"range_barrier"> {
  let summary = "Threads `first .. first+count-1` of a block spawn synchronize";
  let description = [{
    The barrier of a Fork group that runs inside a `pgpu.spawn block`: the
    threads whose ranks in the spawn are `first .. first + count - 1` all
    finish the code before it before any of them runs the code after it,
    and their memory writes before it are visible after it. Other threads
    of the block go on. Every thread of the range reaches it with the same
    operands; it may stand under control flow that is the same in all of
    them.

    `slot` names the synchronization word the barrier uses on the device:
    ranges that may be waiting at the same time must use different slots
    (ranges of one thread set may share one). `pgpu-block-groups` gives the
    whole block's range slot `2 * n` (n threads) and the two sides of a
    split at thread `s` slots `2 * s` and `2 * s + 1`: ranges alive at one
    time never split at the same thread. Slots are below `2 * n + 1`.

    ```mlir
    pgpu.range_barrier %first, %count, %slot
    ```
  }];
  let arguments = (ins Index:$first, Index:$count, Index:$slot);
  let assemblyFormat = "$first `,` $count `,` $slot attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pgpu.barrier
//===----------------------------------------------------------------------===//

def Pgpu_BarrierOp : Pgpu_Op<"barrier", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Ends a superstep: all threads of the region synchronize";
  let description = [{
    BSGP's `barrier` (seeds/bsgp.txt, Sections 3 and 5): every thread of the
    enclosing SPMD region finishes the code before it before any thread runs
    the code after it; memory written before it is visible after it. A
    barrier may appear directly in a `pgpu.spawn` body, directly in a
    `pgpu.par` branch (barriers of the branches are aligned), directly in a
    Fork group region (`pgpu.group.split`, `pgpu.group.fork`, `pgpu.farm`;
    it then synchronizes the current group) or directly in a function marked
    `pgpu.spmd_inline` or `pgpu.synchronous`. It cannot sit under other
    control flow (bsgp.txt, Section 4.4, "Limitation").

    `rank_reassigned` is BSGP's `barrier(RANK_REASSIGNED)` (Sections 4.1
    and 4.2, Listing 3): after it each thread gets a new rank, and it must
    state its rank before the barrier with `pgpu.set_oldrank` before the
    next barrier, so that the compiler can shuffle the saved thread contexts
    (Listing 4, `pass2`). It writes the thread state, so rank queries on its
    two sides are never merged.

    ```mlir
    pgpu.barrier
    pgpu.barrier rank_reassigned
    ```
  }];
  let arguments = (ins UnitAttr:$rank_reassigned);
  let assemblyFormat = "(`rank_reassigned` $rank_reassigned^)? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pgpu.superstep
//===----------------------------------------------------------------------===//

def Pgpu_SuperstepOp : Pgpu_Op<"superstep", [RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    HasParent<"SpawnOp">, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "One superstep of a spawn body, after superstep formation";
  let description = [{
    The code of a `pgpu.spawn` body between two barriers (seeds/bsgp.txt,
    Section 4.2, step 3; Listing 3 marks them "superstep 1..3"). Superstep
    formation replaces a body with barriers by a sequence of supersteps; a
    barrier lies between two consecutive supersteps, so each superstep
    becomes one kernel. The results are the values that later supersteps use:
    exactly the values that must be saved to temporary streams (Section 4.2,
    step 5, Table 1).

    `rank_reassigned` marks a superstep that follows a rank-reassigning
    barrier: it must set the old rank with `pgpu.set_oldrank`, and the first
    superstep of a spawn cannot carry it. A spawn body is either all
    supersteps or none.

    ```mlir
    pgpu.spawn %n {
      %v = pgpu.superstep -> (i32) {
        %r = pgpu.rank : index
        %x = memref.load %a[%r] : memref<?xi32>
        pgpu.yield %x : i32
      }
      pgpu.superstep rank_reassigned {
        %r2 = pgpu.rank : index
        %old = memref.load %ids[%r2] : memref<?xindex>
        pgpu.set_oldrank %old
      }
    }
    ```
  }];
  let arguments = (ins UnitAttr:$rank_reassigned);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`rank_reassigned` $rank_reassigned^)? (`->` `(` type($results)^ `)`)?
    $body attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pgpu.par
//===----------------------------------------------------------------------===//

def Pgpu_ParOp : Pgpu_Op<"par", [RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Independent statements whose barriers are aligned";
  let description = [{
    BSGP's `par { ... }` (seeds/bsgp.txt, Section 5, Listing 8, Figure 5):
    each region is one statement of the par block; the statements are
    independent of each other, so superstep formation aligns the k-th
    barrier of every branch and bundles the corresponding supersteps into
    one. Barriers and collectives may sit directly in a branch. A par may
    appear wherever a barrier may. The results are the operands of the
    branches' `pgpu.yield`s, concatenated in branch order.

    ```mlir
    %ia, %ib = pgpu.par -> (index, index) {
      %i = pgpu.sort_idx %a : i32
      pgpu.yield %i : index
    }, {
      %j = pgpu.sort_idx %b : i32
      pgpu.yield %j : index
    }
    ```
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region VariadicRegion<SizedRegion<1>>:$branches);
  let assemblyFormat = "(`->` `(` type($results)^ `)`)? $branches attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Ranks and sizes
//===----------------------------------------------------------------------===//

def Pgpu_RankOp : Pgpu_Op<"rank", [
    MemoryEffects<[MemRead<Pgpu_ThreadStateResource>]>]> {
  let summary = "The calling thread's rank in its SPMD region";
  let description = [{
    BSGP's `thread.rank` (seeds/bsgp.txt, Section 3): a unique integer in
    `0 .. thread.size-1`. Rank-reassigning barriers and the thread
    primitives (`pgpu.thread.fork/kill/sortby/split`) change it, so it reads
    the thread state. Valid anywhere in an SPMD region except in host code
    (`pgpu.require`).

    ```mlir
    %r = pgpu.rank : index
    ```
  }];
  let results = (outs Index:$rank);
  let assemblyFormat = "attr-dict `:` type($rank)";
  let hasVerifier = 1;
}

def Pgpu_SizeOp : Pgpu_Op<"size", [
    MemoryEffects<[MemRead<Pgpu_ThreadStateResource>]>]> {
  let summary = "The number of threads of the SPMD region";
  let description = [{
    BSGP's `thread.size` (seeds/bsgp.txt, Section 3): the number of threads
    currently alive in the enclosing SPMD region. `pgpu.thread.fork` and
    `pgpu.thread.kill` change it. It is uniform, so host code in
    `pgpu.require` may use it too (Listing 6: `dnew[thread.size]float`).

    ```mlir
    %n = pgpu.size : index
    ```
  }];
  let results = (outs Index:$size);
  let assemblyFormat = "attr-dict `:` type($size)";
  let hasVerifier = 1;
}

def Pgpu_OldRankOp : Pgpu_Op<"oldrank", [
    MemoryEffects<[MemRead<Pgpu_ThreadStateResource>]>]> {
  let summary = "The calling thread's rank before the last rank reassignment";
  let description = [{
    BSGP's `thread.oldrank` (seeds/bsgp.txt, Section 4.2, Listings 3 and 4):
    the rank the calling thread had before the most recent rank
    reassignment, as set by `pgpu.set_oldrank` after a rank-reassigning
    barrier, or implicitly by `pgpu.thread.sortby/split` (the thread's rank
    before the call) and `pgpu.thread.fork/kill` (the rank of the parent or
    surviving thread before the call). The compiler addresses the saved
    contexts of earlier supersteps with it.

    It is only valid after such a reassignment: some rank-reassigning op
    must precede it in its SPMD region, or it must be in a superstep marked
    `rank_reassigned` (or after one), or in a function marked
    `pgpu.spmd_inline` (the caller reassigns).

    ```mlir
    pgpu.thread.sortby %key : i32
    %old = pgpu.oldrank : index
    ```
  }];
  let results = (outs Index:$oldrank);
  let assemblyFormat = "attr-dict `:` type($oldrank)";
  let hasVerifier = 1;
}

def Pgpu_SetOldRankOp : Pgpu_Op<"set_oldrank", [
    MemoryEffects<[MemWrite<Pgpu_ThreadStateResource>]>]> {
  let summary = "States the calling thread's rank before a rank-reassigning barrier";
  let description = [{
    BSGP's assignment `thread.oldrank = e` (seeds/bsgp.txt, Section 4.2,
    Listing 3): "We require each thread to set thread.oldrank to its
    previous rank after a barrier(RANK_REASSIGNED)". The compiler then moves
    the loading of saved values to right after it and addresses them with
    the old rank (Listing 4, `pass2`). It must follow a
    `pgpu.barrier rank_reassigned` with no other barrier in between, or be
    in a superstep marked `rank_reassigned`.

    ```mlir
    pgpu.barrier rank_reassigned
    %r = pgpu.rank : index
    %old = memref.load %sorted_id[%r] : memref<?xindex>
    pgpu.set_oldrank %old
    ```
  }];
  let arguments = (ins Index:$oldrank);
  let assemblyFormat = "$oldrank attr-dict";
  let hasVerifier = 1;
}

#endif // PGPU_SPMD_OPS_TD
