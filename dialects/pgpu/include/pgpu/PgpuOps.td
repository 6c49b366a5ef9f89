//===- PgpuOps.td - pgpu dialect operations ------------------*- tablegen -*-===//

#ifndef PGPU_OPS_TD
#define PGPU_OPS_TD

include "pgpu/PgpuDialect.td"

//===----------------------------------------------------------------------===//
// SPMD regions
//===----------------------------------------------------------------------===//

def Pgpu_YieldOp : Pgpu_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["SpawnOp"]>]> {
  let summary = "Ends the body of an SPMD region";
  let description = [{
    Terminates the region of `pgpu.spawn`. It is implicit in the custom
    syntax.
  }];
  let assemblyFormat = "attr-dict";
}

def Pgpu_SpawnOp : Pgpu_Op<"spawn", [RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Runs its body once for each of `n` logical threads";
  let description = [{
    BSGP's `spawn(n) { ... }` (seeds/bsgp.txt, Section 3): the body runs as
    `n` logical threads that execute the same code; `pgpu.rank` and
    `pgpu.size` give each its rank and the thread count. Barriers in the body
    separate supersteps.

    ```mlir
    pgpu.spawn %n {
      %r = pgpu.rank : index
      pgpu.barrier
    }
    ```
  }];
  let arguments = (ins Index:$count);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$count $body attr-dict";
}

def Pgpu_BarrierOp : Pgpu_Op<"barrier", [ParentOneOf<["SpawnOp"]>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Ends a superstep of an SPMD region";
  let description = [{
    BSGP's `barrier`: every thread of the enclosing SPMD region finishes the
    code before it before any thread runs the code after it.
  }];
  let arguments = (ins UnitAttr:$rank_reassigned);
  let assemblyFormat = "(`rank_reassigned` $rank_reassigned^)? attr-dict";
}

def Pgpu_RankOp : Pgpu_Op<"rank", [MemoryEffects<[MemRead<Pgpu_ThreadStateResource>]>]> {
  let summary = "The calling thread's rank in its SPMD region";
  let description = [{ BSGP's `thread.rank`. }];
  let results = (outs Index:$rank);
  let assemblyFormat = "attr-dict `:` type($rank)";
  let hasVerifier = 1;
}

#endif // PGPU_OPS_TD
