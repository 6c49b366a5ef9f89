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
  }];
}

/// Models the per-thread state that ranks and thread counts are read from:
/// barriers that reassign ranks and thread fork/kill write it, so rank
/// queries on either side of them are never merged.
def Pgpu_ThreadStateResource : Resource<"::mlir::pgpu::ThreadStateResource">;

class Pgpu_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pgpu_Dialect, mnemonic, traits>;

#endif // PGPU_DIALECT_TD
