//===- PgpuGroupOps.td - Fork's synchronous processor groups -*- tablegen -*-===//
//
// Group queries, group splitting and the execution modes of Fork
// (seeds/fork-to-cuda.txt, Sections 2 and 3).
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_GROUP_OPS_TD
#define PGPU_GROUP_OPS_TD

include "pgpu/PgpuDialect.td"

//===----------------------------------------------------------------------===//
// Group queries
//===----------------------------------------------------------------------===//

class Pgpu_GroupQueryOp<string mnemonic, string resultName>
    : Pgpu_Op<mnemonic, [MemoryEffects<[MemRead<Pgpu_ThreadStateResource>]>]> {
  let results = (outs Res<Index, resultName>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Pgpu_GroupRankOp : Pgpu_GroupQueryOp<"group.rank", "the group rank"> {
  let summary = "Fork's `$$`: the calling processor's rank in its current group";
  let description = [{
    Fork's group rank `$$` (Keller, Kessler, Träff, *Practical PRAM
    Programming*, ch. 5): the calling processor's rank `0 .. size-1` in its
    current group. In the group started by a synchronous `pgpu.spawn` it is
    the thread rank; every split renumbers it `0 .. size-1` in the order of
    the parent's ranks: the subgroups of `pgpu.group.split` ("new
    group-local IDs", seeds/fork-to-cuda.txt, Section 3) and of
    `pgpu.group.fork` alike. So the rank order of every group is the order
    of the spawn's threads, which Priority CRCW ("lowest rank wins"),
    multiprefix and `pgpu.seq` ("rank 0 runs it") follow.

    Fork's `$` (the group-relative processor ID, which `fork` sets to a
    value of the program's choosing and splits do not renumber) is not an
    op: the frontend keeps it as a private value (docs/frontend-ir.md).

    Only valid in synchronous code: inside a synchronous
    spawn or a function marked `pgpu.synchronous` (or read-only in a
    function marked `pgpu.spmd_inline`: Fork's `async` functions called
    from `pgpu.farm`), not in host code.

    ```mlir
    %me = pgpu.group.rank : index
    ```
  }];
}

def Pgpu_GroupIdOp : Pgpu_GroupQueryOp<"group.id", "the group id"> {
  let summary = "Fork's `@`: the id of the calling processor's current group";
  let description = [{
    Fork's `@` (seeds/fork-to-cuda.txt, Section 3): 0 in the group started
    by a synchronous `pgpu.spawn`; `pgpu.group.fork` sets it to its `id`
    operand; the subgroups of `pgpu.group.split` keep the id of the parent
    group. Valid where `pgpu.group.rank` is.

    ```mlir
    %g = pgpu.group.id : index
    ```
  }];
}

def Pgpu_GroupSizeOp : Pgpu_GroupQueryOp<"group.size", "the group size"> {
  let summary = "Fork's `groupsize()`: the number of processors in the current group";
  let description = [{
    Fork's `groupsize()` (seeds/fork-to-cuda.txt, Section 3; the host
    function `ComputeSubgroups` of Figure 4 computes it for the subgroups
    of a split). Valid where `pgpu.group.rank` is.

    ```mlir
    %p = pgpu.group.size : index
    ```
  }];
}

//===----------------------------------------------------------------------===//
// pgpu.group.merge
//===----------------------------------------------------------------------===//

def Pgpu_GroupMergeOp : Pgpu_Op<"group.merge", [Pure, Terminator, ReturnLike,
    ParentOneOf<["GroupSplitOp", "GroupForkOp"]>]> {
  let summary = "Ends a subgroup region: the subgroups merge into the parent group";
  let description = [{
    The implicit end of a group-splitting statement in Fork
    (seeds/fork-to-cuda.txt, Section 3): "After the statement, the
    subgroups are automatically synchronized and again form the previous
    group, which resumes execution" (Figure 4, `Sync` and `RestoreGroup`).
    Its operands are the calling processor's private values that leave the
    region; they become the results of the parent. Without operands it is
    implicit in the custom syntax.

    ```mlir
    %v = pgpu.group.split %c -> (i32) {
      pgpu.group.merge %a : i32
    } else {
      pgpu.group.merge %b : i32
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let builders = [OpBuilder<(ins), [{ /* nothing to do */ }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pgpu.group.split
//===----------------------------------------------------------------------===//

def Pgpu_GroupSplitOp : Pgpu_Op<"group.split", [RecursiveMemoryEffects,
    MemoryEffects<[MemRead, MemWrite, MemWrite<Pgpu_ThreadStateResource>]>,
    SingleBlockImplicitTerminator<"GroupMergeOp">]> {
  let summary = "Splits the current group by a private condition";
  let description = [{
    Fork's two-sided `if` on a private condition (seeds/fork-to-cuda.txt,
    Section 2, Figure 1; Section 3, Figure 4): the current group splits into
    the processors whose `condition` is true, which run the `then` region,
    and those whose condition is false, which run the `else` region. The
    two subgroups run concurrently and each is synchronous; in each,
    `pgpu.group.rank` is renumbered `0 .. size-1` in parent rank order,
    `pgpu.group.size` is the subgroup's size and `pgpu.group.id` is
    inherited. At the implicit `pgpu.group.merge` the subgroups synchronize
    and form the previous group again. A one-sided `if` omits the else
    region (processors with a false condition wait); the else region is
    required when the op has results.

    Valid in synchronous code (a synchronous spawn or a `pgpu.synchronous`
    function), not in asynchronous code (`pgpu.farm`), `pgpu.seq` or host
    code. A condition that is the same in all processors needs no split:
    use `scf.if` (the one subgroup would be the whole group, with the same
    ranks).

    ```mlir
    %r = pgpu.rank : index
    %c = arith.cmpi ult, %r, %two : index
    pgpu.group.split %c {
      func.call @function1() : () -> ()
    } else {
      func.call @function2() : () -> ()
    }
    ```
  }];
  let arguments = (ins I1:$condition);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$thenRegion,
                        MaxSizedRegion<1>:$elseRegion);
  let assemblyFormat = [{
    $condition (`->` `(` type($results)^ `)`)? $thenRegion
    (`else` $elseRegion^)? attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// pgpu.group.fork
//===----------------------------------------------------------------------===//

def Pgpu_GroupForkOp : Pgpu_Op<"group.fork", [RecursiveMemoryEffects,
    MemoryEffects<[MemRead, MemWrite, MemWrite<Pgpu_ThreadStateResource>]>,
    SingleBlockImplicitTerminator<"GroupMergeOp">]> {
  let summary = "Fork's `fork(k; @ = e1; $ = e2)`: splits the group into k subgroups";
  let description = [{
    Fork's `fork` statement (seeds/fork-to-cuda.txt, Section 3): every
    processor evaluates the private expression `id` (its new group id `@`);
    the current group splits into `count` subgroups, subgroup `i` holding
    the processors whose `id` is `i`, with `pgpu.group.rank` renumbered
    `0 .. size-1` in the parent's rank order (as a split does). Each
    subgroup runs the region synchronously and concurrently with the
    others; processors whose `id` is not in `0 .. count-1` skip the region.
    At the implicit `pgpu.group.merge` the subgroups synchronize and form
    the previous group again. `count` must be positive; a constant count is
    checked.

    The statement's `$ = e2` (the group-relative processor ID inside the
    body) is not an operand: the frontend evaluates `e2` before the op and
    uses that value for `$` in the body.

    Valid where `pgpu.group.split` is.

    ```mlir
    pgpu.group.fork %k id %e1 {
      %g = pgpu.group.id : index
    }
    ```
  }];
  let arguments = (ins Index:$count, Index:$id);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $count `id` $id (`->` `(` type($results)^ `)`)? $body attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Group memory
//===----------------------------------------------------------------------===//

def Pgpu_GroupAllocOp : Pgpu_Op<"group.alloc"> {
  let summary = "Fork's shared (`sh`) local: memory the whole group shares";
  let description = [{
    A shared local variable of synchronous code (seeds/fork-to-cuda.txt,
    Section 2: `sh` variables are shared by the group of processors that
    executes their declaration). All members of the current group reach
    the op together and get the same memref, a fresh allocation for this
    group (a recursive call's group gets its own); subgroups formed later in
    the region use the same memory. It lives until the region of the group
    that made it ends. Statically shaped; a scalar variable is a rank-0
    memref. Valid in synchronous code, not in `pgpu.farm` or `pgpu.seq`.

    ```mlir
    %flag = pgpu.group.alloc : memref<i32>
    %a = pgpu.group.alloc : memref<16xi32>
    ```
  }];
  let results = (outs Res<AnyStaticShapeMemRef, "the group's memory",
                          [MemAlloc]>:$memref);
  let assemblyFormat = "attr-dict `:` type($memref)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Execution modes
//===----------------------------------------------------------------------===//

def Pgpu_SeqOp : Pgpu_Op<"seq", [RecursiveMemoryEffects,
    MemoryEffects<[MemRead, MemWrite]>,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Fork's `seq { }`: one processor of the group runs the region";
  let description = [{
    Fork's sequential mode (seeds/fork-to-cuda.txt, Sections 2-3): the
    processor with group rank 0 (`pgpu.group.rank`, Fork's `$$`: the
    member first in the spawn's order) runs the region while the other members of
    the group wait; the group is synchronized before and after. The paper
    notes that it "can be implemented on the host" and that I/O happens in
    this mode. Valid in synchronous code, not in `pgpu.farm`, another
    `pgpu.seq` or host code.

    ```mlir
    pgpu.seq {
      memref.store %v, %shared[%c0] : memref<1xi32>
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
  let hasVerifier = 1;
}

def Pgpu_FarmOp : Pgpu_Op<"farm", [RecursiveMemoryEffects,
    MemoryEffects<[MemRead, MemWrite]>,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Fork's `farm { }`: an asynchronous region in synchronous code";
  let description = [{
    Fork's asynchronous mode (seeds/fork-to-cuda.txt, Section 2: "the group
    structure is read-only and the automatic group splitting and
    synchronization are temporarily disabled"; Section 3: shared writes "do
    not split a function"). Every member of the current group runs the
    region independently; only explicit `pgpu.barrier`s synchronize them,
    and the group synchronizes again at the end. Group queries are allowed
    inside; `pgpu.group.split`, `pgpu.group.fork` and `pgpu.seq` are not.
    The results are each processor's private values yielded by the region.

    ```mlir
    %x = pgpu.farm -> (i32) {
      %v = memref.load %a[%me] : memref<?xi32>
      pgpu.yield %v : i32
    }
    ```
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`->` `(` type($results)^ `)`)? $body attr-dict";
  let hasVerifier = 1;
}

#endif // PGPU_GROUP_OPS_TD
