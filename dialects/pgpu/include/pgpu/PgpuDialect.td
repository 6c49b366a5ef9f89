//===- PgpuDialect.td - the pgpu dialect and its base classes -*- tablegen -*-===//
//
// The pgpu dialect: one IR for Fork (synchronous processor groups), BSGP
// (bulk-synchronous GPU programming) and loop speculation (GPU-TLS).
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_DIALECT_TD
#define PGPU_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Pgpu_Dialect : Dialect {
  let name = "pgpu";
  let cppNamespace = "::mlir::pgpu";
  let summary = "Groups, supersteps and speculative regions for parallel GPU programming";
  let description = [{
    The `pgpu` dialect is the shared level below the three source models of
    pgpu: Fork's synchronous processor groups (seeds/fork-to-cuda.txt),
    BSGP's bulk-synchronous SPMD programs (seeds/bsgp.txt) and annotated
    loops run with GPU thread-level speculation (seeds/gpu-tls.txt).

    An SPMD region (`pgpu.spawn`) runs its body once per logical thread.
    Barriers split the body into supersteps; groups describe the synchronous
    processor sets of Fork; thread ops change the set of threads and their
    ranks; collectives are whole-region operations; host regions and device
    allocation describe the CPU side; speculative loops keep sequential
    semantics while running iterations in parallel.

    Two unit attributes mark functions whose bodies are SPMD code although
    no `pgpu.spawn` encloses them:

    - `pgpu.spmd_inline`: a BSGP inline function (bsgp.txt, Sections 3.3
      and 5) that may contain barriers and collectives; it is inlined into
      every spawn that calls it before superstep formation.
    - `pgpu.synchronous`: a Fork `sync` function, called from synchronous
      group code (fork-to-cuda.txt, Section 3); group queries, group splits
      and barriers are allowed in it.

    A third marks device functions of one thread block:

    - `pgpu.block_group`: a function that `pgpu-block-groups` made from a
      Fork `sync` function to run a whole group inside a `pgpu.spawn
      block` (its members are the block's threads, its recursion stays in
      the kernel); it is called per thread, may recurse, and synchronizes
      with `pgpu.range_barrier`. It uses no rank query: the thread's index
      and its group's range are arguments.
  }];
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The unit attribute marking a BSGP inline function with barriers.
    static constexpr ::llvm::StringLiteral getSpmdInlineAttrName() {
      return ::llvm::StringLiteral("pgpu.spmd_inline");
    }
    /// The unit attribute marking a Fork synchronous function.
    static constexpr ::llvm::StringLiteral getSynchronousAttrName() {
      return ::llvm::StringLiteral("pgpu.synchronous");
    }
    /// The unit attribute marking a function run by one block's threads.
    static constexpr ::llvm::StringLiteral getBlockGroupAttrName() {
      return ::llvm::StringLiteral("pgpu.block_group");
    }
  }];
}

/// Models the per-thread state that ranks and thread counts are read from:
/// barriers that reassign ranks and thread fork/kill write it, so rank
/// queries on either side of them are never merged.
def Pgpu_ThreadStateResource : Resource<"::mlir::pgpu::ThreadStateResource">;

class Pgpu_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pgpu_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Pgpu_CombiningKind : I32EnumAttr<"CombiningKind",
    "the associative operator of a reduction, scan or multiprefix", [
      I32EnumAttrCase<"Add", 0, "add">,
      I32EnumAttrCase<"Mul", 1, "mul">,
      I32EnumAttrCase<"Min", 2, "min">,
      I32EnumAttrCase<"Max", 3, "max">,
      I32EnumAttrCase<"UMin", 4, "umin">,
      I32EnumAttrCase<"UMax", 5, "umax">,
      I32EnumAttrCase<"And", 6, "and">,
      I32EnumAttrCase<"Or", 7, "or">,
      I32EnumAttrCase<"Xor", 8, "xor">
    ]> {
  let cppNamespace = "::mlir::pgpu";
}

#endif // PGPU_DIALECT_TD
