//===- ExampleDialect.cpp - an out-of-tree dialect as an MLIR plugin ------===//
//
// The `example` dialect has one operation, `example.note`, which carries a
// string attribute `text` (its verifier insists). It is written in plain
// C++ (no ODS) and built against MLIR's headers alone:
//
//   clang++ -std=c++17 -fPIC -fno-rtti -shared \
//     -I/usr/lib/llvm-22/include ExampleDialect.cpp -o libExampleDialect.so
//
// `pgpu-opt --load-dialect-plugin=libExampleDialect.so` calls
// `mlirGetDialectPluginInfo`, which adds the dialect to the registry of
// every context the tool makes; its MLIR symbols resolve to the tool's.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"

using namespace mlir;

namespace example {
/// `"example.note"() {text = "..."} : () -> ()`: a remark in the IR.
class NoteOp : public Op<NoteOp, OpTrait::ZeroOperands, OpTrait::ZeroResults,
                         OpTrait::ZeroRegions> {
public:
  using Op::Op;
  static StringRef getOperationName() { return "example.note"; }
  static ArrayRef<StringRef> getAttributeNames() {
    static StringRef names[] = {"text"};
    return names;
  }
  LogicalResult verify() {
    if (!isa_and_nonnull<StringAttr>((*this)->getAttr("text")))
      return emitOpError("needs a string attribute 'text'");
    return success();
  }
};

class ExampleDialect : public Dialect {
public:
  explicit ExampleDialect(MLIRContext *context)
      : Dialect(getDialectNamespace(), context, TypeID::get<ExampleDialect>()) {
    addOperations<NoteOp>();
  }
  static StringRef getDialectNamespace() { return "example"; }
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExampleDialect)
};
} // namespace example

MLIR_DECLARE_EXPLICIT_TYPE_ID(example::NoteOp)
MLIR_DEFINE_EXPLICIT_TYPE_ID(example::NoteOp)

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Example", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            registry->insert<example::ExampleDialect>();
          }};
}
