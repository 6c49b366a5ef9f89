//===- PgpuCollectiveOps.td - collectives and multiprefix ----*- tablegen -*-===//
//
// BSGP's data-parallel primitives (seeds/bsgp.txt, Section 3 and Appendix A)
// and Fork's multiprefix operations (seeds/fork-to-cuda.txt; DESIGN.md).
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_COLLECTIVE_OPS_TD
#define PGPU_COLLECTIVE_OPS_TD

include "pgpu/PgpuDialect.td"

def Pgpu_ScalarLike : AnyTypeOf<[AnySignlessIntegerOrIndex, AnyFloat]>;

/// A collective: every thread of the SPMD region calls it at the same point
/// (where a barrier may stand); it synchronizes the threads internally.
class Pgpu_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Pgpu_Op<mnemonic, !listconcat(traits, [MemoryEffects<[MemRead, MemWrite]>])> {
  let hasVerifier = 1;
}

def Pgpu_ReduceOp : Pgpu_CollectiveOp<"reduce",
    [AllTypesMatch<["value", "result"]>]> {
  let summary = "BSGP's `reduce(op, x)`: the reduction of x over all threads";
  let description = [{
    BSGP's `reduce(op, x)` (seeds/bsgp.txt, Appendix A): "Collective
    reduction of x using operator op. The returned value is the reduction
    result." Every thread receives the result. `min`/`max` compare integers
    as signed, `umin`/`umax` as unsigned; `umin`, `umax`, `and`, `or` and
    `xor` need integer or index operands. The result type is the operand
    type.

    ```mlir
    %total = pgpu.reduce add %x : f32
    ```
  }];
  let arguments = (ins Pgpu_CombiningKind:$kind, Pgpu_ScalarLike:$value);
  let results = (outs Pgpu_ScalarLike:$result);
  let assemblyFormat = "$kind $value attr-dict `:` type($value)";
}

def Pgpu_ScanOp : Pgpu_CollectiveOp<"scan",
    [AllTypesMatch<["value", "scanned", "total"]>]> {
  let summary = "BSGP's `scan(op, x)`: prefix combination in rank order";
  let description = [{
    BSGP's `scan(op, x)` (seeds/bsgp.txt, Section 3 and Appendix A):
    "Collective forward exclusive scan of x using associative operator op.
    Scan result overwrites x. The returned value is the reduction result as
    a byproduct". In SSA form both are results: `scanned` is, in the thread
    of rank i, `x_0 op ... op x_(i-1)` (the identity of `op` in rank 0:
    0 for add/or/xor/umax, 1 for mul, all ones for and/umin, the largest
    value for min, the smallest for max, +/-infinity for floats), and
    `total` is the reduction of all `x` in every thread. With `inclusive`
    `scanned` also includes `x_i`; the paper's scan is exclusive. Kinds and
    types are checked as for `pgpu.reduce`.

    ```mlir
    %offset, %count = pgpu.scan add %n : index
    %running, %max = pgpu.scan max %x inclusive : f32
    ```
  }];
  let arguments = (ins Pgpu_CombiningKind:$kind, Pgpu_ScalarLike:$value,
                       UnitAttr:$inclusive);
  let results = (outs Pgpu_ScalarLike:$scanned, Pgpu_ScalarLike:$total);
  let assemblyFormat = [{
    $kind $value (`inclusive` $inclusive^)? attr-dict `:` type($value)
  }];
}

def Pgpu_CompactOp : Pgpu_CollectiveOp<"compact", [
    TypesMatchWith<"source type matches the list's element type",
                   "list", "source",
                   "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">]> {
  let summary = "BSGP's `compact(list, src, keep, flag)`: stream compaction";
  let description = [{
    BSGP's `compact(list, src, keep, flag)` (seeds/bsgp.txt, Appendix A):
    "Each src whose keep is true is compacted and appended to list. flag
    specifies whether list should be cleared before appending". The kept
    values are written in rank order to `list[base ..]`; the result, the
    same in every thread, is the new length `base + (number kept)`. A list
    is a one-dimensional memref plus its length, so appending passes the
    current length as `base` and clearing first (`flag`) passes 0. The list
    must have room for `base + pgpu.size` elements.

    ```mlir
    %len = pgpu.compact %x if %keep into %list at %c0 : memref<?xf32>
    ```
  }];
  let arguments = (ins AnyType:$source, I1:$keep,
                       MemRefRankOf<[AnyType], [1]>:$list, Index:$base);
  let results = (outs Index:$length);
  let assemblyFormat = [{
    $source `if` $keep `into` $list `at` $base attr-dict `:` type($list)
  }];
}

def Pgpu_SplitOp : Pgpu_CollectiveOp<"split", [
    TypesMatchWith<"source type matches the list's element type",
                   "list", "source",
                   "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">]> {
  let summary = "BSGP's `split(list, src, side, flag)`: stream splitting";
  let description = [{
    BSGP's collective `split(list, src, side, flag)` (seeds/bsgp.txt,
    Appendix A): "Every src is split according to side into two pieces,
    which are then appended to list, with the false piece preceding the
    true one." Each piece keeps rank order. The values are written to
    `list[base ..]`; the result, the same in every thread, is the new length
    `base + pgpu.size`. `base` replaces `flag` as in `pgpu.compact`.

    The op keeps the paper's name: its dotted relatives `pgpu.thread.split`
    (rank reassignment) and `pgpu.group.split` (Fork group splitting) are
    different ops in different namespaces of the dialect, and the front end
    maps BSGP's `split` onto `pgpu.split` one to one like the other
    primitives of Appendix A.

    ```mlir
    %len = pgpu.split %x by %side into %list at %c0 : memref<?xi32>
    ```
  }];
  let arguments = (ins AnyType:$source, I1:$side,
                       MemRefRankOf<[AnyType], [1]>:$list, Index:$base);
  let results = (outs Index:$length);
  let assemblyFormat = [{
    $source `by` $side `into` $list `at` $base attr-dict `:` type($list)
  }];
}

def Pgpu_SortIdxOp : Pgpu_CollectiveOp<"sort_idx"> {
  let summary = "BSGP's `sort_idx(key)`: the rank holding the i-th smallest key";
  let description = [{
    BSGP's `sort_idx(key)` (seeds/bsgp.txt, Section 5, Listing 7;
    Appendix A): "Let Ki be key in thread with rank i and ri be sort_idx's
    return value. Then ri satisfies K_ri <= K_rj for i <= j". That is, the
    thread of rank i receives the rank of the thread holding the i-th
    smallest key. Equal keys keep rank order (the paper leaves ties open;
    we fix them so that results are deterministic). Integer keys compare as
    signed (frontends flip the sign bit of unsigned keys, which maps
    unsigned order onto signed order). Unlike `pgpu.thread.sortby`, ranks
    do not change.

    ```mlir
    %idx = pgpu.sort_idx %key : i32
    ```
  }];
  let arguments = (ins Pgpu_ScalarLike:$key);
  let results = (outs Index:$index);
  let assemblyFormat = "$key attr-dict `:` type($key)";
}

def Pgpu_MultiprefixOp : Pgpu_Op<"multiprefix", [
    MemoryEffects<[MemRead, MemWrite]>,
    TypesMatchWith<"value type matches the memref's element type",
                   "memref", "value",
                   "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">,
    TypesMatchWith<"result type matches the memref's element type",
                   "memref", "result",
                   "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">]> {
  let summary = "Fork's multiprefix `mpadd/mpmax/mpand/mpor` on a shared location";
  let description = [{
    Fork's multiprefix operations (`mpadd`, `mpmax`, `mpand`, `mpor`; see
    DESIGN.md and seeds/fork-to-cuda.txt, Section 2 on the SB-PRAM): all
    processors that execute it in the same step combine their `value`s into
    the shared location `memref[indices]` in rank order; each receives the
    location's value just before its own contribution, i.e. the old value
    combined with the values of all lower-ranked participants; the location
    ends up holding the old value combined with all of them. In
    asynchronous code the order of the participants is unspecified (an
    atomic fetch-and-op). `add`, `max`, `and` and `or` are Fork's four; the
    other kinds generalize them and are checked as for `pgpu.reduce`.

    ```mlir
    %ticket = pgpu.multiprefix add %c1_i32 to %counter[%c0] : memref<1xi32>
    ```
  }];
  let arguments = (ins Pgpu_CombiningKind:$kind, Pgpu_ScalarLike:$value,
                       AnyMemRef:$memref, Variadic<Index>:$indices);
  let results = (outs Pgpu_ScalarLike:$result);
  let assemblyFormat = [{
    $kind $value `to` $memref `[` $indices `]` attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

#endif // PGPU_COLLECTIVE_OPS_TD
