//===- PgpuDialect.cpp - pgpu dialect, verifiers, C API handle ------------===//

#include "PgpuDialect.h"

#include "mlir/CAPI/Registration.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::pgpu;

#include "PgpuDialect.cpp.inc"
#include "PgpuEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "PgpuAttrs.cpp.inc"

void PgpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "PgpuOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "PgpuAttrs.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "PgpuOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// True when `op` is nested, at any depth, in an SPMD region.
static bool isInsideSpmdRegion(Operation *op) {
  return op->getParentOfType<SpawnOp>() != nullptr;
}

LogicalResult RankOp::verify() {
  if (!isInsideSpmdRegion(*this))
    return emitOpError("must be nested in an SPMD region ('pgpu.spawn')");
  return success();
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" {
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Pgpu, pgpu);
}
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Pgpu, pgpu, mlir::pgpu::PgpuDialect)
