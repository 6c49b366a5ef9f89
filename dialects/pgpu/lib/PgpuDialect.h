//===- PgpuDialect.h - the pgpu dialect in C++ ------------------*- C++ -*-===//
//
// Generated from include/pgpu/*.td; shared by the static library linked into
// the Rust tools and by the mlir-opt dialect plugin.
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_DIALECT_H
#define PGPU_DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::pgpu {
/// The per-thread state (rank, thread count) read by rank queries and written
/// by rank reassignment and thread fork/kill.
struct ThreadStateResource
    : public SideEffects::Resource::Base<ThreadStateResource> {
  llvm::StringRef getName() final { return "pgpu.thread_state"; }
};

/// The process's output stream, command line and clock (pgpu.printf, ...).
struct HostIoResource : public SideEffects::Resource::Base<HostIoResource> {
  llvm::StringRef getName() final { return "pgpu.host_io"; }
};

/// The state of the generator behind pgpu.rand_u32.
struct RandomStateResource
    : public SideEffects::Resource::Base<RandomStateResource> {
  llvm::StringRef getName() final { return "pgpu.random_state"; }
};
} // namespace mlir::pgpu

#include "PgpuDialect.h.inc"
#include "PgpuEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "PgpuAttrs.h.inc"
#define GET_OP_CLASSES
#include "PgpuOps.h.inc"

#endif // PGPU_DIALECT_H
