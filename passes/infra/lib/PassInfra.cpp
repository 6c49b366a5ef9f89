//===- PassInfra.cpp - Rust passes in MLIR's registry; tool hooks ---------===//
//
// The MLIR C API can build an external pass object but cannot put a pass in
// the global registry (so textual pipelines could name it), give it options,
// or reach the pass-manager features mlir-opt's flags use (implicit nesting
// for pass flags, IR printing filtered by pass, parsing with a buffer name).
// This file adds exactly those hooks, and the loading of MLIR's pass and
// dialect plugins (`mlirGetPassPluginInfo`, `mlirGetDialectPluginInfo`),
// which the C API does not have; everything else is Rust.
//
//===----------------------------------------------------------------------===//

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

using namespace mlir;

extern "C" {
/// A pass written in Rust, described once for the whole process.
typedef struct PgpuPassDefinition {
  const char *argument;
  const char *description;
  /// Operation name the pass is anchored on, or "" for any operation.
  const char *anchor;
  intptr_t numOptions;
  const char *const *optionNames;
  const char *const *optionDescriptions;
  const char *const *optionDefaults;
  intptr_t numDependentDialects;
  const MlirDialectHandle *dependentDialects;
  /// Runs the pass on `op` with the option values in declaration order.
  MlirLogicalResult (*run)(MlirOperation op, intptr_t numOptions,
                           const MlirStringRef *optionValues);
} PgpuPassDefinition;
}

namespace {
/// An MLIR pass whose body is a Rust function; its options are string
/// options declared from the definition, so that pipelines can set and
/// print them like those of any C++ pass.
class RustPass : public Pass {
public:
  explicit RustPass(const PgpuPassDefinition *definition)
      : Pass(TypeID::getFromOpaquePointer(definition),
             *definition->anchor ? std::optional<StringRef>(definition->anchor)
                                 : std::nullopt),
        definition(definition) {
    for (intptr_t i = 0; i < definition->numOptions; ++i)
      options.push_back(std::make_unique<Option<std::string>>(
          *this, definition->optionNames[i],
          llvm::cl::desc(definition->optionDescriptions[i]),
          llvm::cl::init(std::string(definition->optionDefaults[i]))));
  }

  StringRef getName() const override { return definition->argument; }
  StringRef getArgument() const override { return definition->argument; }
  StringRef getDescription() const override {
    return definition->description;
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    for (intptr_t i = 0; i < definition->numDependentDialects; ++i)
      mlirDialectHandleInsertDialect(definition->dependentDialects[i],
                                     wrap(&registry));
  }

  bool canScheduleOn(RegisteredOperationName) const override { return true; }

  void runOnOperation() override {
    std::vector<MlirStringRef> values;
    values.reserve(options.size());
    for (const auto &option : options)
      values.push_back(wrap(StringRef(option->getValue())));
    if (mlirLogicalResultIsFailure(definition->run(
            wrap(getOperation()), static_cast<intptr_t>(values.size()),
            values.data())))
      signalPassFailure();
  }

  std::unique_ptr<Pass> clonePass() const override {
    auto copy = std::make_unique<RustPass>(definition);
    copy->copyOptionValuesFrom(this);
    return copy;
  }

private:
  const PgpuPassDefinition *definition;
  std::vector<std::unique_ptr<Option<std::string>>> options;
};

/// Pass names given to --mlir-print-ir-before= / --mlir-print-ir-after=.
llvm::StringSet<> toSet(const MlirStringRef *names, intptr_t count) {
  llvm::StringSet<> set;
  for (intptr_t i = 0; i < count; ++i)
    set.insert(unwrap(names[i]));
  return set;
}
} // namespace

extern "C" {

void pgpuRegisterPass(const PgpuPassDefinition *definition) {
  registerPass([definition]() -> std::unique_ptr<Pass> {
    return std::make_unique<RustPass>(definition);
  });
}

void pgpuPrintRegisteredPasses(void) {
  printRegisteredPasses();
  llvm::outs().flush();
}

bool pgpuIsRegisteredPassOrPipeline(MlirStringRef name) {
  return PassInfo::lookup(unwrap(name)) ||
         PassPipelineInfo::lookup(unwrap(name));
}

/// Adds the pass or pipeline named by a command-line flag, with mlir-opt's
/// implicit nesting: an op-specific pass is nested under its operation.
MlirLogicalResult pgpuAddPassFromFlag(MlirPassManager passManager,
                                      MlirStringRef name,
                                      MlirStringRef options,
                                      MlirStringCallback errorCallback,
                                      void *userData) {
  PassManager *pm = unwrap(passManager);
  pm->setNesting(OpPassManager::Nesting::Implicit);
  const PassRegistryEntry *entry = PassInfo::lookup(unwrap(name));
  if (!entry)
    entry = PassPipelineInfo::lookup(unwrap(name));
  auto reportError = [&](const Twine &message) {
    std::string text = message.str();
    errorCallback(wrap(StringRef(text)), userData);
    return failure();
  };
  if (!entry)
    return wrap(reportError("'" + unwrap(name) + "' is not a registered pass"));
  LogicalResult result =
      entry->addToPipeline(*pm, unwrap(options), reportError);
  pm->setNesting(OpPassManager::Nesting::Explicit);
  return wrap(result);
}

void pgpuEnableIRPrinting(MlirPassManager passManager, bool beforeAll,
                          bool afterAll, const MlirStringRef *beforeNames,
                          intptr_t numBefore, const MlirStringRef *afterNames,
                          intptr_t numAfter, bool moduleScope,
                          bool afterOnlyOnChange,
                          MlirOpPrintingFlags printingFlags) {
  auto before = std::make_shared<llvm::StringSet<>>(
      toSet(beforeNames, numBefore));
  auto after =
      std::make_shared<llvm::StringSet<>>(toSet(afterNames, numAfter));
  unwrap(passManager)
      ->enableIRPrinting(
          [=](Pass *pass, Operation *) {
            return beforeAll || before->contains(pass->getArgument());
          },
          [=](Pass *pass, Operation *) {
            return afterAll || after->contains(pass->getArgument());
          },
          moduleScope, afterOnlyOnChange,
          /*printAfterOnlyOnFailure=*/false, llvm::errs(),
          *unwrap(printingFlags));
}

/// Parses `source` as a module whose locations name `bufferName`; top-level
/// operations other than one `builtin.module` are wrapped in one. Returns a
/// null operation (after emitting diagnostics) on failure.
MlirOperation pgpuParseModule(MlirContext context, MlirStringRef source,
                              MlirStringRef bufferName) {
  ParserConfig config(unwrap(context));
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(unwrap(source), config, unwrap(bufferName));
  if (!module)
    return MlirOperation{nullptr};
  return wrap(module.release().getOperation());
}
}

extern "C" {
/// Emits a diagnostic of any severity (the C API has only errors).
void pgpuEmitDiagnostic(MlirLocation location, int severity,
                        MlirStringRef message) {
  Location loc = unwrap(location);
  switch (severity) {
  case 1:
    emitWarning(loc, unwrap(message));
    break;
  case 2:
    loc.getContext()->getDiagEngine().emit(loc, DiagnosticSeverity::Note)
        << unwrap(message);
    break;
  case 3:
    emitRemark(loc, unwrap(message));
    break;
  default:
    emitError(loc, unwrap(message));
  }
}
}

extern "C" {
/// Whether diagnostics on an operation get a "see current operation" note
/// (off under --verify-diagnostics, as in mlir-opt).
void pgpuContextSetPrintOpOnDiagnostic(MlirContext context, bool enable) {
  unwrap(context)->printOpOnDiagnostic(enable);
}
}

namespace {
/// Dialect plugins loaded so far: every context made afterwards gets their
/// dialects.
std::vector<DialectPlugin> &loadedDialectPlugins() {
  static std::vector<DialectPlugin> plugins;
  return plugins;
}

/// Writes `error`'s message through `onError`.
void report(llvm::Error error, void (*onError)(MlirStringRef, void *),
            void *userData) {
  std::string message = llvm::toString(std::move(error));
  onError(mlirStringRefCreate(message.data(), message.size()), userData);
}
} // namespace

extern "C" {
/// Loads the pass plugin at `path` and registers its passes; on failure
/// calls `onError` with the loader's message and returns false.
bool pgpuLoadPassPlugin(MlirStringRef path,
                        void (*onError)(MlirStringRef, void *),
                        void *userData) {
  auto plugin = PassPlugin::load(unwrap(path).str());
  if (!plugin) {
    report(plugin.takeError(), onError, userData);
    return false;
  }
  plugin->registerPassRegistryCallbacks();
  return true;
}

/// Loads the dialect plugin at `path` for the contexts made from now on.
bool pgpuLoadDialectPlugin(MlirStringRef path,
                           void (*onError)(MlirStringRef, void *),
                           void *userData) {
  auto plugin = DialectPlugin::load(unwrap(path).str());
  if (!plugin) {
    report(plugin.takeError(), onError, userData);
    return false;
  }
  loadedDialectPlugins().push_back(*plugin);
  return true;
}

/// Gives `context` the dialects of every loaded dialect plugin.
void pgpuAppendPluginDialects(MlirContext context) {
  if (loadedDialectPlugins().empty())
    return;
  DialectRegistry registry;
  for (DialectPlugin &plugin : loadedDialectPlugins())
    plugin.registerDialectRegistryCallbacks(registry);
  unwrap(context)->appendDialectRegistry(registry);
}
}
