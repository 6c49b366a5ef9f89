//===- PgpuOps.td - pgpu dialect operations ------------------*- tablegen -*-===//
//
// Every operation of the pgpu dialect, by category. This is the file that
// mlir-tblgen and melior's `dialect!` macro read.
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_OPS_TD
#define PGPU_OPS_TD

include "pgpu/PgpuDialect.td"
include "pgpu/PgpuSpmdOps.td"
include "pgpu/PgpuGroupOps.td"
include "pgpu/PgpuThreadOps.td"
include "pgpu/PgpuCollectiveOps.td"
include "pgpu/PgpuListOps.td"
include "pgpu/PgpuHostOps.td"
include "pgpu/PgpuSpeculationOps.td"
include "pgpu/PgpuIoOps.td"

#endif // PGPU_OPS_TD
