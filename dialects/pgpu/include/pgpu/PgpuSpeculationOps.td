//===- PgpuSpeculationOps.td - speculative loops (GPU-TLS) ---*- tablegen -*-===//
//
// Loops run with thread-level speculation on the GPU (seeds/gpu-tls.txt,
// Sections III-V).
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_SPECULATION_OPS_TD
#define PGPU_SPECULATION_OPS_TD

include "pgpu/PgpuDialect.td"

def Pgpu_SpecCommitOp : Pgpu_Op<"spec.commit", [Terminator,
    MemoryEffects<[MemWrite]>, HasParent<"SpecLoopOp">]> {
  let summary = "Ends an iteration of a speculative loop: its writes commit in order";
  let description = [{
    The end of one iteration of `pgpu.spec.loop` (seeds/gpu-tls.txt,
    Sections III.A and III.D): once the iteration has passed dependency
    checking, its buffered speculative writes are copied to master memory.
    Iterations may commit out of order, but a write to an address is
    discarded when a later iteration has already committed to it
    (Algorithm 4), so memory ends as in sequential order. An iteration that
    violated a dependency commits nothing and is re-executed. Implicit in
    the custom syntax.
  }];
  let assemblyFormat = "attr-dict";
}

def Pgpu_SpecLoopOp : Pgpu_Op<"spec.loop", [RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"SpecCommitOp">]> {
  let summary = "A sequential loop whose iterations run speculatively in parallel";
  let description = [{
    A `for` loop marked `#pragma pgpu speculate` (DESIGN.md), run with
    GPU-TLS (seeds/gpu-tls.txt, Section III): the iterations
    `lowerBound, lowerBound + step, ... < upperBound` keep sequential
    semantics whatever the data does. The loop is chopped into sub-loops of
    `window` iterations, one thread per iteration, executed by one kernel
    each with a sliding window that re-executes mis-speculated iterations
    together with new ones (Section III.A, Figure 1). `warp` is the scope
    of intra-warp value forwarding and eager dependency checking, `W` of
    Algorithms 1-3 (Sections III.B and III.C). Both are optional (the
    lowering picks them) and positive, and the window holds whole warps:
    `warp` divides `window`.

    The body block has the induction variable as its only argument. Memory
    the compiler cannot prove independent across iterations is accessed
    with `pgpu.spec.load` and `pgpu.spec.store`; all other memory accesses
    must be iteration-private, read-only in the loop, or reach one element
    per iteration (the same subscripts everywhere, one of them `a * i + c`):
    `pgpu-classify-speculation` decides which, from the frontend's plain
    loads and stores. The body ends with the implicit
    `pgpu.spec.commit`. The loop is sequential (host-level) code: it cannot
    be nested in an SPMD region or in another speculative loop. A constant
    step must be positive.

    ```mlir
    pgpu.spec.loop %i = %c0 to %n step %c1 window(1024) warp(32) {
      %n1 = memref.load %left[%i] : memref<?xindex>
      %y = pgpu.spec.load %Y[%n1] : memref<?xf64>
      %y2 = arith.addf %y, %f : f64
      pgpu.spec.store %y2, %Y[%n1] : memref<?xf64>
    }
    ```
  }];
  let arguments = (ins Index:$lowerBound, Index:$upperBound, Index:$step,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<I64Attr>:$warp);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The induction variable: the body block's only argument.
    ::mlir::Value getInductionVar() { return getBody().getArgument(0); }
  }];
}

def Pgpu_SpecLoadOp : Pgpu_Op<"spec.load", [
    TypesMatchWith<"result type matches the memref's element type",
                   "memref", "result",
                   "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">]> {
  let summary = "A speculative read inside a speculative loop";
  let description = [{
    A read that may depend on a write of an earlier iteration
    (seeds/gpu-tls.txt, Section III.B, Algorithm 1): it returns the value
    written by the latest earlier iteration of the same warp or by this
    iteration if there is one (intra-warp value forwarding), else the value
    in master memory, and records the address in the iteration's read set
    for dependency checking. Nested (at any depth) in a `pgpu.spec.loop`;
    the memref must be defined outside the loop (memory defined inside is
    private to the iteration and needs no speculation).

    ```mlir
    %y = pgpu.spec.load %Y[%n1] : memref<?xf64>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "the memory read", [MemRead]>:$memref,
                       Variadic<Index>:$indices);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$memref `[` $indices `]` attr-dict `:` type($memref)";
  let hasVerifier = 1;
}

def Pgpu_SpecStoreOp : Pgpu_Op<"spec.store", [
    TypesMatchWith<"value type matches the memref's element type",
                   "memref", "value",
                   "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">]> {
  let summary = "A buffered speculative write inside a speculative loop";
  let description = [{
    A write that may conflict with other iterations (seeds/gpu-tls.txt,
    Section III.C, Algorithm 2): it goes to the iteration's write buffer,
    not to master memory (deferred update, so WAR and WAW dependencies never
    cause mis-speculation), and eagerly checks whether a later iteration of
    the same warp already read the address; `pgpu.spec.commit` copies the
    buffer to memory. Nested in a `pgpu.spec.loop`; the memref must be
    defined outside the loop.

    ```mlir
    pgpu.spec.store %y2, %Y[%n1] : memref<?xf64>
    ```
  }];
  let arguments = (ins AnyType:$value,
                       Arg<AnyMemRef, "the memory written", [MemWrite]>:$memref,
                       Variadic<Index>:$indices);
  let assemblyFormat = [{
    $value `,` $memref `[` $indices `]` attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

#endif // PGPU_SPECULATION_OPS_TD
