//===- CountSpawns.cpp - an out-of-tree pass as an MLIR pass plugin -------===//
//
// `pgpu-example-count-spawns` annotates every `pgpu.spawn` with the number
// of operations in its body (`example.body_ops`) and reports it as a
// remark. It knows the pgpu dialect only by operation name, so it builds
// against MLIR's headers alone:
//
//   clang++ -std=c++17 -fPIC -fno-rtti -shared \
//     -I/usr/lib/llvm-22/include CountSpawns.cpp -o libCountSpawns.so
//
// The library does not link MLIR: loaded with `pgpu-opt
// --load-pass-plugin=libCountSpawns.so` (or upstream `mlir-opt`'s flag of
// the same name), its MLIR symbols resolve to the tool's, and
// `mlirGetPassPluginInfo` registers the pass in the tool's registry.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

using namespace mlir;

namespace {
struct CountSpawnsPass
    : public PassWrapper<CountSpawnsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountSpawnsPass)

  StringRef getArgument() const final { return "pgpu-example-count-spawns"; }
  StringRef getDescription() const final {
    return "Annotate each pgpu.spawn with the number of operations in its "
           "body (an out-of-tree example pass)";
  }

  void runOnOperation() override {
    Builder builder(&getContext());
    getOperation().walk([&](Operation *op) {
      if (op->getName().getStringRef() != "pgpu.spawn")
        return;
      int64_t count = -1; // the spawn itself
      op->walk([&](Operation *) { ++count; });
      op->setAttr("example.body_ops", builder.getI64IntegerAttr(count));
      op->emitRemark() << "spawn with " << count << " operations in its body";
    });
  }
};
} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "CountSpawns", LLVM_VERSION_STRING,
          []() { PassRegistration<CountSpawnsPass>(); }};
}
