//===- PgpuPlugin.cpp - the pgpu dialect as an mlir-opt plugin ------------===//
//
// `mlir-opt --load-dialect-plugin=libPgpuDialectPlugin.so` calls
// `mlirGetDialectPluginInfo` and registers the dialect with its registry.
//
//===----------------------------------------------------------------------===//

#include "PgpuDialect.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "pgpu", LLVM_VERSION_STRING,
          [](::mlir::DialectRegistry *registry) {
            registry->insert<::mlir::pgpu::PgpuDialect>();
          }};
}
