//===- PgpuListOps.td - host-level list operations ---------*- tablegen -*-===//
//
// The global phases of BSGP's collectives and thread primitives
// (seeds/bsgp.txt, Appendix A) as host operations on lists: rank-1 buffers
// holding `count` elements. Section 3 (Fig. 2(b)) describes a collective
// this way: the threads' `x` are "collected to form a vector. After a
// barrier synchronization, the prefix sum is computed using the vector. The
// result is then redistributed"; Section 5 emulates fork and kill "through
// a set of collective APIs using a multi-superstep algorithm". Kernel
// splitting emits these ops between the parallel loops of the supersteps
// around a collective; backends give them fast implementations.
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_LIST_OPS_TD
#define PGPU_LIST_OPS_TD

include "pgpu/PgpuDialect.td"
include "pgpu/PgpuCollectiveOps.td"

/// A list of integers, indices or floats (reduction and scan values, sort
/// keys).
def Pgpu_ScalarList : MemRefRankOf<[AnySignlessIntegerOrIndex, AnyFloat], [1]>;
/// A list of any element type (the values that compaction moves).
def Pgpu_AnyList : MemRefRankOf<[AnyType], [1]>;
/// A list of flags (`keep` of compact, `side` of split).
def Pgpu_FlagList : MemRefRankOf<[I1], [1]>;
/// A list of positions (sort results, parent ranks).
def Pgpu_IndexList : MemRefRankOf<[Index], [1]>;
/// A list of integer counts or child ids.
def Pgpu_IntegerList : MemRefRankOf<[AnySignlessIntegerOrIndex], [1]>;

/// A host-level list operation: host code (outside SPMD regions or inside
/// `pgpu.require`) that reads the elements `0 .. count-1` of its input
/// lists and writes its output lists.
class Pgpu_ListOp<string mnemonic, list<Trait> traits = []>
    : Pgpu_Op<!strconcat("list.", mnemonic), traits> {
  let hasVerifier = 1;
}

def Pgpu_ListReduceOp : Pgpu_ListOp<"reduce"> {
  let summary = "the reduction of a list: the global phase of `pgpu.reduce`";
  let description = [{
    The host-level form of BSGP's `reduce(op, x)` (seeds/bsgp.txt,
    Appendix A: "Collective reduction of x using operator op"), with `x_i`
    the i-th list element: the result is
    `values[0] op values[1] op ... op values[count-1]`, combined in index
    order (the rank order of `pgpu.reduce`), and the identity of `op` when
    `count` is 0 (0 for add/or/xor/umax, 1 for mul, all ones for
    and/umin, the largest value for min, the smallest for max, +/-infinity
    for floats; as `pgpu.scan` documents). `min`/`max` compare integers as
    signed, `umin`/`umax` as unsigned; float `min`/`max` propagate NaN as
    `arith.minimumf`/`arith.maximumf`. Kinds are checked against the
    element type as for `pgpu.reduce`; the result type is the element type.

    Host code: outside SPMD regions or inside `pgpu.require`. `count` must
    not be negative. It reads `values[0 .. count)`.

    ```mlir
    %total = pgpu.list.reduce add %values[%n] : memref<?xi32> -> i32
    ```
  }];
  let arguments = (ins Pgpu_CombiningKind:$kind,
                       Arg<Pgpu_ScalarList, "the values", [MemRead]>:$values,
                       Index:$count);
  let results = (outs Pgpu_ScalarLike:$result);
  let assemblyFormat = [{
    $kind $values `[` $count `]` attr-dict `:` type($values) `->`
    type($result)
  }];
}

def Pgpu_ListScanOp : Pgpu_ListOp<"scan"> {
  let summary = "the prefix combination of a list: the global phase of `pgpu.scan`";
  let description = [{
    The host-level form of BSGP's `scan(op, x)` (seeds/bsgp.txt,
    Appendix A: "Collective forward exclusive scan of x using associative
    operator op. Scan result overwrites x. The returned value is the
    reduction result as a byproduct"). For `i` in `0 .. count-1`:
    `scanned[i] = values[0] op ... op values[i-1]` (the identity of `op`
    for `i = 0`, identities as in `pgpu.scan`); with `inclusive`,
    `scanned[i]` also includes `values[i]`. The result is the reduction of
    all `count` values (the identity when `count` is 0), as
    `pgpu.list.reduce` computes it. Kinds and element types are checked as
    for `pgpu.list.reduce`; `scanned` has the element type of `values`.

    `values` and `scanned` may be the same list (the scan in place, as the
    paper's `scan` overwrites `x`); otherwise they must not overlap. Host
    code; `count` must not be negative. It reads `values[0 .. count)` and
    writes `scanned[0 .. count)`.

    ```mlir
    %sum = pgpu.list.scan add %values, %offsets[%n] : memref<?xi32>, memref<?xi32> -> i32
    %max = pgpu.list.scan max %x, %x[%n] inclusive : memref<?xf32>, memref<?xf32> -> f32
    ```
  }];
  let arguments = (ins Pgpu_CombiningKind:$kind,
                       Arg<Pgpu_ScalarList, "the values", [MemRead]>:$values,
                       Arg<Pgpu_ScalarList, "the prefixes", [MemWrite]>:$scanned,
                       Index:$count, UnitAttr:$inclusive);
  let results = (outs Pgpu_ScalarLike:$total);
  let assemblyFormat = [{
    $kind $values `,` $scanned `[` $count `]` (`inclusive` $inclusive^)?
    attr-dict `:` type($values) `,` type($scanned) `->` type($total)
  }];
}

def Pgpu_ListSortIdxOp : Pgpu_ListOp<"sort_idx"> {
  let summary = "the stable sorting permutation of a list: the global phase of `pgpu.sort_idx`";
  let description = [{
    The host-level form of BSGP's `sort_idx(key)` (seeds/bsgp.txt,
    Section 5, Listing 7; Appendix A: "Let Ki be key in thread with rank i
    and ri be sort_idx's return value. Then ri satisfies K_ri <= K_rj for
    i <= j"), with `K_i = keys[i]` and `r_i = indices[i]`: `indices[i]` is
    the position of the i-th smallest key. The sort is stable: equal keys
    keep index order, as in `pgpu.sort_idx`. Integer and index keys compare
    as signed; floats compare numerically, `-0.0` equal to `+0.0`, and a
    NaN is larger than every number when its sign bit is clear and smaller
    than every number when it is set (NaNs of one sign are equal), which is
    where a radix sort of the IEEE bits places them.

    With `sorted`, the op also writes the keys in sorted order:
    `sorted[i] = keys[indices[i]]` (a sort moves them anyway, so this
    saves a gather through the permutation; `pgpu-forward-list-copies`
    adds it where a program reads the keys through the indices).

    `indices` and `sorted` must not overlap `keys` or each other. Host
    code; `count` must not be negative. It reads `keys[0 .. count)` and
    writes `indices[0 .. count)`, a permutation of `0 .. count-1`, and
    `sorted[0 .. count)`.

    ```mlir
    pgpu.list.sort_idx %keys, %order[%n] : memref<?xf32>, memref<?xindex>
    pgpu.list.sort_idx %keys, %order[%n] sorted %keys_sorted : memref<?xi32>, memref<?xindex>, memref<?xi32>
    ```
  }];
  let arguments = (ins Arg<Pgpu_ScalarList, "the keys", [MemRead]>:$keys,
                       Arg<Pgpu_IndexList, "the sorting permutation",
                           [MemWrite]>:$indices,
                       Index:$count,
                       Arg<Optional<Pgpu_ScalarList>, "the keys in sorted order",
                           [MemWrite]>:$sorted);
  let assemblyFormat = [{
    $keys `,` $indices `[` $count `]` (`sorted` $sorted^)? attr-dict `:`
    type($keys) `,` type($indices) (`,` type($sorted)^)?
  }];
}

def Pgpu_ListCompactOp : Pgpu_ListOp<"compact"> {
  let summary = "stream compaction of a list: the global phase of `pgpu.compact`";
  let description = [{
    The host-level form of BSGP's `compact(list, src, keep, flag)`
    (seeds/bsgp.txt, Appendix A: "Each src whose keep is true is compacted
    and appended to list"), with `src_i = values[i]` and
    `keep_i = flags[i]`, and the same meaning as `pgpu.compact`: with `k`
    starting at 0, for `i` in `0 .. count-1` in order, if `flags[i]` then
    `list[base + k] = values[i]` and `k` grows by one. The result is the
    new length `base + k`. Only the kept values are read; every flag is.
    `base` is the current length of the list when appending, 0 to clear it
    first (the paper's `flag`).

    `list` must not overlap `values` or `flags`, and must have room for
    `base + k` elements. Host code; `count` must not be negative.

    ```mlir
    %len = pgpu.list.compact %values, %keep, %list[%n] base %c0 : memref<?xf32>, memref<?xi1>, memref<?xf32>
    ```
  }];
  let arguments = (ins Arg<Pgpu_AnyList, "the values", [MemRead]>:$values,
                       Arg<Pgpu_FlagList, "the keep flags", [MemRead]>:$flags,
                       Arg<Pgpu_AnyList, "the output list", [MemWrite]>:$list,
                       Index:$count, Index:$base);
  let results = (outs Index:$length);
  let assemblyFormat = [{
    $values `,` $flags `,` $list `[` $count `]` `base` $base attr-dict `:`
    type($values) `,` type($flags) `,` type($list)
  }];
}

def Pgpu_ListSplitOp : Pgpu_ListOp<"split"> {
  let summary = "stream splitting of a list: the global phase of `pgpu.split`";
  let description = [{
    The host-level form of BSGP's collective `split(list, src, side, flag)`
    (seeds/bsgp.txt, Appendix A: "Every src is split according to side
    into two pieces, which are then appended to list, with the false piece
    preceding the true one"), with `src_i = values[i]` and
    `side_i = flags[i]`, and the same meaning as `pgpu.split`: the values
    whose flag is false, in index order, are written to `list[base ..]`,
    followed by those whose flag is true, in index order. The result is the
    new length `base + count`. `base` replaces the paper's `flag` as in
    `pgpu.list.compact`.

    `list` must not overlap `values` or `flags`, and must have room for
    `base + count` elements. Host code; `count` must not be negative.

    ```mlir
    %len = pgpu.list.split %values, %side, %list[%n] base %c0 : memref<?xi32>, memref<?xi1>, memref<?xi32>
    ```
  }];
  let arguments = (ins Arg<Pgpu_AnyList, "the values", [MemRead]>:$values,
                       Arg<Pgpu_FlagList, "the side flags", [MemRead]>:$flags,
                       Arg<Pgpu_AnyList, "the output list", [MemWrite]>:$list,
                       Index:$count, Index:$base);
  let results = (outs Index:$length);
  let assemblyFormat = [{
    $values `,` $flags `,` $list `[` $count `]` `base` $base attr-dict `:`
    type($values) `,` type($flags) `,` type($list)
  }];
}

def Pgpu_ListExpandOp : Pgpu_ListOp<"expand"> {
  let summary = "the parent and child id of every forked thread: the global phase of `pgpu.thread.fork`";
  let description = [{
    The host-level form of BSGP's `thread.fork(n)` (seeds/bsgp.txt,
    Section 5, Listing 6; Appendix A: "Fork n child threads. ... A unique
    ID between 0 and n-1 is returned to each child thread"; "fork ...
    reassign[s] resulting threads' ranks to numbers in the range of
    0...thread.size-1 while preserving parent threads' relative rank
    order"), with `n_i = counts[i]`: with `m` starting at 0, for `i` in
    `0 .. count-1` in order and for `c` in `0 .. counts[i]-1`:
    `parents[m] = i`, `children[m] = c`, and `m` grows by one. The result
    is the number of children `m`. A count of 0 or less gives no children
    (as `pgpu.thread.fork` does). So the child of new rank `m` has old rank
    `parents[m]` and id `children[m]`, and children of one parent are
    consecutive in id order. `children` has the element type of `counts`.

    `parents` and `children` must not overlap `counts` or each other, and
    must have room for `m` elements. Host code; `count` must not be
    negative.

    ```mlir
    %m = pgpu.list.expand %counts, %parents, %ids[%n] : memref<?xi32>, memref<?xindex>, memref<?xi32> -> index
    ```
  }];
  let arguments = (ins Arg<Pgpu_IntegerList, "the child counts", [MemRead]>:$counts,
                       Arg<Pgpu_IndexList, "the parent of each child",
                           [MemWrite]>:$parents,
                       Arg<Pgpu_IntegerList, "the id of each child",
                           [MemWrite]>:$children,
                       Index:$count);
  let results = (outs Index:$total);
  let assemblyFormat = [{
    $counts `,` $parents `,` $children `[` $count `]` attr-dict `:`
    type($counts) `,` type($parents) `,` type($children) `->` type($total)
  }];
}

#endif // PGPU_LIST_OPS_TD
