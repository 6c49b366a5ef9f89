//===- PgpuDialect.cpp - pgpu dialect, verifiers, C API handle ------------===//
//
// The dialect's registration, the verifiers of every op, the custom syntax of
// `pgpu.spec.loop` and the memory effects that depend on attributes.
//
//===----------------------------------------------------------------------===//

#include "PgpuDialect.h"

#include "mlir/CAPI/Registration.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"

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
// Where an op may stand
//===----------------------------------------------------------------------===//

static constexpr const char kSpmdRegion[] =
    "an SPMD region ('pgpu.spawn', or a function marked 'pgpu.spmd_inline' "
    "or 'pgpu.synchronous')";

/// Whether `op` is a function whose body is SPMD code.
static bool isSpmdFunction(Operation *op) {
  return isa<FunctionOpInterface>(op) &&
         (op->hasAttr(PgpuDialect::getSpmdInlineAttrName()) ||
          op->hasAttr(PgpuDialect::getSynchronousAttrName()));
}

/// The innermost op whose body runs once per thread: a `pgpu.spawn` or an
/// SPMD function; null when `op` is host code outside of them.
static Operation *getSpmdScope(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (isa<SpawnOp>(parent) || isSpmdFunction(parent))
      return parent;
    if (parent->hasTrait<OpTrait::IsIsolatedFromAbove>())
      return nullptr;
  }
  return nullptr;
}

/// The innermost ancestor of `op` below `scope` that is one of `OpTys`.
template <typename... OpTys>
static Operation *getAncestorBelow(Operation *op, Operation *scope) {
  for (Operation *parent = op->getParentOp(); parent && parent != scope;
       parent = parent->getParentOp())
    if (isa<OpTys...>(parent))
      return parent;
  return nullptr;
}

/// Whether the SPMD scope `scope` runs as a Fork synchronous group.
static bool isSynchronousScope(Operation *scope) {
  if (auto spawn = dyn_cast<SpawnOp>(scope))
    return spawn.getSynchronous();
  return scope->hasAttr(PgpuDialect::getSynchronousAttrName());
}

/// Whether a barrier may stand directly in a region of `parent`: all threads
/// of the region (or of the current group) reach it together.
static bool isBarrierPosition(Operation *parent) {
  return parent && (isa<SpawnOp, ParOp, GroupSplitOp, GroupForkOp, FarmOp>(
                        parent) ||
                    isSpmdFunction(parent));
}

/// Checks that `op` runs per thread: in an SPMD region, not in host code.
static LogicalResult verifyPerThread(Operation *op,
                                     Operation **scopeOut = nullptr) {
  Operation *scope = getSpmdScope(op);
  if (!scope)
    return op->emitOpError() << "must be nested in " << kSpmdRegion;
  if (getAncestorBelow<RequireOp>(op, scope))
    return op->emitOpError("cannot be used in host code ('pgpu.require')");
  if (scopeOut)
    *scopeOut = scope;
  return success();
}

/// Whether `op` is a collective or a thread primitive: after superstep
/// formation these end the superstep they stand in.
static bool isSuperstepBoundary(Operation *op) {
  return isa<ReduceOp, ScanOp, CompactOp, SplitOp, SortIdxOp, ThreadForkOp,
             ThreadKillOp, ThreadSortByOp, ThreadSplitOp>(op);
}

/// Checks that collective `op` is at the end of its `pgpu.superstep`: only
/// other collectives and thread primitives follow it.
static LogicalResult verifyEndsSuperstep(Operation *op) {
  for (Operation *next = op->getNextNode(); next && !next->hasTrait<OpTrait::IsTerminator>();
       next = next->getNextNode())
    if (!isSuperstepBoundary(next))
      return op->emitOpError(
                 "ends its superstep: only collectives and thread primitives "
                 "may follow it in a 'pgpu.superstep'")
                 .attachNote(next->getLoc())
             << "this op follows it";
  return success();
}

/// Checks that `op` stands where a barrier may (barriers and collectives).
/// Collectives and thread primitives may also end a superstep.
static LogicalResult verifyBarrierPosition(Operation *op) {
  if (isBarrierPosition(op->getParentOp()))
    return success();
  if (isSuperstepBoundary(op) && isa<SuperstepOp>(op->getParentOp()))
    return verifyEndsSuperstep(op);
  return op->emitOpError(
      "must appear directly in a 'pgpu.spawn' body, a 'pgpu.par' branch, a "
      "group region ('pgpu.group.split', 'pgpu.group.fork', 'pgpu.farm') or "
      "a function marked 'pgpu.spmd_inline' or 'pgpu.synchronous'");
}

/// Checks that `op` is in Fork synchronous code; with `allowAsync` false also
/// that no `pgpu.farm` or `pgpu.seq` lies between it and its SPMD scope.
/// With `allowAsync`, a function marked `pgpu.spmd_inline` (Fork's `async`
/// functions, called from `pgpu.farm`, where the group structure is
/// read-only) is a valid scope too.
static LogicalResult verifySynchronousCode(Operation *op, bool allowAsync) {
  Operation *scope;
  if (failed(verifyPerThread(op, &scope)))
    return failure();
  bool asyncFunction =
      allowAsync && scope->hasAttr(PgpuDialect::getSpmdInlineAttrName());
  if (!isSynchronousScope(scope) && !asyncFunction)
    return op->emitOpError(
        "must be nested in synchronous code ('pgpu.spawn synchronous' or a "
        "function marked 'pgpu.synchronous')");
  if (allowAsync)
    return success();
  if (Operation *mode = getAncestorBelow<FarmOp, SeqOp>(op, scope))
    return op->emitOpError() << "cannot be nested in '" << mode->getName()
                             << "': the group structure is fixed there";
  return success();
}

/// Checks that `op` is host code: outside SPMD regions or in `pgpu.require`.
static LogicalResult verifyHostCode(Operation *op) {
  Operation *scope = getSpmdScope(op);
  if (scope && !getAncestorBelow<RequireOp>(op, scope))
    return op->emitOpError(
        "is host code: it must be outside SPMD regions or inside "
        "'pgpu.require'");
  return success();
}

/// Whether `root` or an op nested in it satisfies `pred`.
template <typename Pred>
static bool containsOp(Operation *root, Pred pred) {
  return root
      ->walk([&](Operation *op) {
        return pred(op) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

static bool isBarrier(Operation *op) { return isa<BarrierOp>(op); }

/// Whether `op` gives the threads new ranks and so defines `pgpu.oldrank`.
static bool definesOldRank(Operation *op) {
  if (auto barrier = dyn_cast<BarrierOp>(op))
    return barrier.getRankReassigned();
  if (auto superstep = dyn_cast<SuperstepOp>(op))
    return superstep.getRankReassigned();
  return isa<SetOldRankOp, ThreadForkOp, ThreadKillOp, ThreadSortByOp,
             ThreadSplitOp>(op);
}

/// Whether `root` gives the threads new ranks, itself or through a call of
/// an inline SPMD function that does (BSGP builds `thread.sortby` so, as an
/// inline function ending in `barrier(RANK_REASSIGNED)`).
static bool reassignsRanks(Operation *root,
                           SmallPtrSetImpl<Operation *> &visited) {
  return containsOp(root, [&](Operation *op) {
    if (definesOldRank(op))
      return true;
    auto call = dyn_cast<CallOpInterface>(op);
    if (!call)
      return false;
    Operation *callee = call.resolveCallable();
    return callee && isSpmdFunction(callee) &&
           callee->hasAttr(PgpuDialect::getSpmdInlineAttrName()) &&
           visited.insert(callee).second && reassignsRanks(callee, visited);
  });
}

/// Whether a rank reassignment precedes `op` in its SPMD region.
static bool followsRankReassignment(Operation *op) {
  SmallPtrSet<Operation *, 4> visited;
  for (Operation *current = op;;) {
    for (Operation *prev = current->getPrevNode(); prev;
         prev = prev->getPrevNode())
      if (reassignsRanks(prev, visited))
        return true;
    Operation *parent = current->getParentOp();
    if (!parent)
      return false;
    // An inline function's caller may have reassigned the ranks.
    if (isSpmdFunction(parent))
      return parent->hasAttr(PgpuDialect::getSpmdInlineAttrName());
    if (isa<SpawnOp>(parent) ||
        parent->hasTrait<OpTrait::IsIsolatedFromAbove>())
      return false;
    if (definesOldRank(parent))
      return true;
    current = parent;
  }
}

/// Whether the last barrier before `op` reassigns ranks, or `op` is in a
/// superstep that starts after such a barrier.
static bool isAfterRankReassigningBarrier(Operation *op) {
  for (Operation *current = op;;) {
    for (Operation *prev = current->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      if (auto barrier = dyn_cast<BarrierOp>(prev))
        return barrier.getRankReassigned();
      if (containsOp(prev, isBarrier))
        return false;
    }
    Operation *parent = current->getParentOp();
    if (!parent)
      return false;
    if (auto superstep = dyn_cast<SuperstepOp>(parent))
      return superstep.getRankReassigned();
    if (isa<SpawnOp>(parent) ||
        parent->hasTrait<OpTrait::IsIsolatedFromAbove>())
      return false;
    current = parent;
  }
}

/// Whether a `pgpu.set_oldrank` follows `barrier` before the next barrier.
static bool isFollowedBySetOldRank(Operation *barrier) {
  auto isSetOldRank = [](Operation *op) { return isa<SetOldRankOp>(op); };
  for (Operation *current = barrier;;) {
    for (Operation *next = current->getNextNode(); next;
         next = next->getNextNode()) {
      if (containsOp(next, isSetOldRank))
        return true;
      if (containsOp(next, isBarrier))
        return false;
    }
    Operation *parent = current->getParentOp();
    if (!parent || isa<SpawnOp>(parent) ||
        parent->hasTrait<OpTrait::IsIsolatedFromAbove>())
      return false;
    current = parent;
  }
}

/// `types` as a parenthesized list, without the quotes of diagnostics.
static std::string formatTypes(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '(';
  llvm::interleaveComma(types, os);
  os << ')';
  return text;
}

/// Checks that the yielded `types` match the results of `parent`.
static LogicalResult verifyYieldedTypes(Operation *terminator,
                                        TypeRange types, Operation *parent) {
  if (types == parent->getResultTypes())
    return success();
  return terminator->emitOpError()
         << "yields " << formatTypes(types) << " but the enclosing '"
         << parent->getName() << "' has results "
         << formatTypes(parent->getResultTypes());
}

/// Checks that `kind` applies to values of `type`.
static LogicalResult verifyCombiningKind(Operation *op, CombiningKind kind,
                                         Type type) {
  switch (kind) {
  case CombiningKind::UMin:
  case CombiningKind::UMax:
  case CombiningKind::And:
  case CombiningKind::Or:
  case CombiningKind::Xor:
    if (!type.isSignlessIntOrIndex())
      return op->emitOpError()
             << "'" << stringifyCombiningKind(kind)
             << "' needs an integer or index operand, but got " << type;
    break;
  default:
    break;
  }
  return success();
}

/// Adds the effects of a superstep boundary: all memory is synchronized and,
/// when ranks are reassigned, the thread state is rewritten.
static void
addBarrierEffects(bool rankReassigned,
                  SmallVectorImpl<SideEffects::EffectInstance<
                      MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Read::get());
  effects.emplace_back(MemoryEffects::Write::get());
  if (rankReassigned) {
    effects.emplace_back(MemoryEffects::Read::get(),
                         ThreadStateResource::get());
    effects.emplace_back(MemoryEffects::Write::get(),
                         ThreadStateResource::get());
  }
}

//===----------------------------------------------------------------------===//
// Dialect attributes
//===----------------------------------------------------------------------===//

LogicalResult PgpuDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name != getSpmdInlineAttrName() && name != getSynchronousAttrName() &&
      name != getBlockGroupAttrName())
    return success();
  if (!isa<UnitAttr>(attribute.getValue()))
    return op->emitError() << "'" << name << "' must be a unit attribute";
  if (!isa<FunctionOpInterface>(op))
    return op->emitError() << "'" << name << "' may only mark a function";
  return success();
}

//===----------------------------------------------------------------------===//
// SPMD regions
//===----------------------------------------------------------------------===//

LogicalResult YieldOp::verify() {
  Operation *parent = (*this)->getParentOp();
  // The branches of a par yield slices of its results; ParOp checks them.
  if (isa<ParOp>(parent))
    return success();
  return verifyYieldedTypes(*this, getOperandTypes(), parent);
}

/// Checks the body of a `grid` spawn: one kernel with grid-wide barriers.
static LogicalResult verifyGridSpawn(SpawnOp spawn) {
  if (spawn.getSynchronous())
    return spawn.emitOpError("cannot be both 'synchronous' and 'grid'");
  bool afterBarrier = false;
  for (Operation &op : spawn.getBody().front()) {
    if (isa<BarrierOp>(op))
      afterBarrier = true;
    if (isa<RequireOp>(op) && afterBarrier)
      return op.emitOpError(
          "cannot follow a barrier in a 'grid' spawn: host code runs before "
          "its one launch");
  }
  WalkResult result = spawn.getBody().walk([&](Operation *op) {
    auto barrier = dyn_cast<BarrierOp>(op);
    if (isa<SuperstepOp, ParOp, ThreadGetOp, ThreadPutOp, SetOldRankOp>(op) ||
        isSuperstepBoundary(op) || (barrier && barrier.getRankReassigned())) {
      op->emitOpError("cannot be in a 'grid' spawn (one kernel with "
                      "grid-wide barriers)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Checks the body of a `block` spawn: one kernel of one thread block whose
/// threads synchronize in ranges.
static LogicalResult verifyBlockSpawn(SpawnOp spawn) {
  if (spawn.getSynchronous() || spawn.getGrid())
    return spawn.emitOpError(
        "cannot be 'block' and 'synchronous' or 'grid' at once");
  WalkResult result = spawn.getBody().walk([&](Operation *op) {
    if (isa<BarrierOp, SuperstepOp, ParOp, ThreadGetOp, ThreadPutOp,
            SetOldRankOp, RequireOp>(op) ||
        isSuperstepBoundary(op)) {
      op->emitOpError("cannot be in a 'block' spawn (one thread block "
                      "synchronizing with 'pgpu.range_barrier')");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult SpawnOp::verify() {
  if (getSpmdScope(*this))
    return emitOpError("cannot be nested in another SPMD region");
  if (getGrid() && failed(verifyGridSpawn(*this)))
    return failure();
  if (getBlock() && failed(verifyBlockSpawn(*this)))
    return failure();
  Operation *superstep = nullptr, *other = nullptr;
  for (Operation &op : getBody().front().without_terminator()) {
    Operation *&slot = isa<SuperstepOp>(op) ? superstep : other;
    if (!slot)
      slot = &op;
  }
  if (!superstep || !other)
    return success();
  InFlightDiagnostic diag =
      emitOpError("body must be all 'pgpu.superstep' regions or none");
  diag.attachNote(other->getLoc()) << "this op is not in a superstep";
  return diag;
}

LogicalResult RangeBarrierOp::verify() {
  for (Operation *parent = (*this)->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (auto spawn = dyn_cast<SpawnOp>(parent)) {
      if (spawn.getBlock())
        return success();
      break;
    }
    if (isa<FunctionOpInterface>(parent)) {
      if (parent->hasAttr(PgpuDialect::getBlockGroupAttrName()))
        return success();
      break;
    }
  }
  return emitOpError("must be nested in a 'pgpu.spawn block' or a function "
                     "marked 'pgpu.block_group'");
}

LogicalResult BarrierOp::verify() {
  if (failed(verifyPerThread(*this)) || failed(verifyBarrierPosition(*this)))
    return failure();
  if (getRankReassigned() && !isFollowedBySetOldRank(*this))
    return emitOpError("with 'rank_reassigned' must be followed by "
                       "'pgpu.set_oldrank' before the next barrier");
  return success();
}

void BarrierOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addBarrierEffects(getRankReassigned(), effects);
}

LogicalResult SuperstepOp::verify() {
  if (!getRankReassigned())
    return success();
  if (!(*this)->getPrevNode())
    return emitOpError(
        "the first superstep of a spawn cannot be 'rank_reassigned'");
  if (!containsOp(*this, [](Operation *op) { return isa<SetOldRankOp>(op); }))
    return emitOpError(
        "with 'rank_reassigned' must set the old rank with 'pgpu.set_oldrank'");
  return success();
}

void SuperstepOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addBarrierEffects(getRankReassigned(), effects);
}

LogicalResult ParOp::verify() {
  if (failed(verifyPerThread(*this)) || failed(verifyBarrierPosition(*this)))
    return failure();
  if (getBranches().empty())
    return emitOpError("needs at least one branch");
  SmallVector<Type> yielded;
  for (Region &branch : getBranches())
    llvm::append_range(yielded,
                       branch.front().getTerminator()->getOperandTypes());
  if (TypeRange(yielded) != getResultTypes())
    return emitOpError() << "branches yield " << formatTypes(yielded)
                         << " in all, but the results are "
                         << formatTypes(getResultTypes());
  return success();
}

LogicalResult RankOp::verify() { return verifyPerThread(*this); }

LogicalResult SizeOp::verify() {
  // The thread count is uniform: host code in pgpu.require may read it.
  if (!getSpmdScope(*this))
    return emitOpError() << "must be nested in " << kSpmdRegion;
  return success();
}

LogicalResult OldRankOp::verify() {
  if (failed(verifyPerThread(*this)))
    return failure();
  if (!followsRankReassignment(*this))
    return emitOpError(
        "is only defined after a rank reassignment ('pgpu.barrier "
        "rank_reassigned', 'pgpu.set_oldrank' or a 'pgpu.thread' primitive)");
  return success();
}

LogicalResult SetOldRankOp::verify() {
  if (failed(verifyPerThread(*this)))
    return failure();
  if (!isAfterRankReassigningBarrier(*this))
    return emitOpError("must follow a 'pgpu.barrier rank_reassigned' with no "
                       "other barrier in between");
  return success();
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

LogicalResult GroupRankOp::verify() {
  return verifySynchronousCode(*this, /*allowAsync=*/true);
}

LogicalResult GroupIdOp::verify() {
  return verifySynchronousCode(*this, /*allowAsync=*/true);
}

LogicalResult GroupSizeOp::verify() {
  return verifySynchronousCode(*this, /*allowAsync=*/true);
}

LogicalResult GroupMergeOp::verify() {
  return verifyYieldedTypes(*this, getOperandTypes(), (*this)->getParentOp());
}

LogicalResult GroupSplitOp::verify() {
  if (failed(verifySynchronousCode(*this, /*allowAsync=*/false)))
    return failure();
  if (getElseRegion().empty() && getNumResults() != 0)
    return emitOpError("needs an 'else' region to produce results");
  return success();
}

LogicalResult GroupForkOp::verify() {
  if (failed(verifySynchronousCode(*this, /*allowAsync=*/false)))
    return failure();
  APInt count;
  if (matchPattern(getCount(), m_ConstantInt(&count)) &&
      !count.isStrictlyPositive())
    return emitOpError() << "needs a positive subgroup count, but got "
                         << count.getSExtValue();
  return success();
}

LogicalResult GroupAllocOp::verify() {
  return verifySynchronousCode(*this, /*allowAsync=*/false);
}

LogicalResult SeqOp::verify() {
  return verifySynchronousCode(*this, /*allowAsync=*/false);
}

LogicalResult FarmOp::verify() {
  return verifySynchronousCode(*this, /*allowAsync=*/false);
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

/// The thread primitives are collectives that every thread calls.
static LogicalResult verifyThreadPrimitive(Operation *op) {
  if (failed(verifyPerThread(op)))
    return failure();
  return verifyBarrierPosition(op);
}

LogicalResult ThreadForkOp::verify() { return verifyThreadPrimitive(*this); }
LogicalResult ThreadKillOp::verify() { return verifyThreadPrimitive(*this); }
LogicalResult ThreadSortByOp::verify() { return verifyThreadPrimitive(*this); }
LogicalResult ThreadSplitOp::verify() { return verifyThreadPrimitive(*this); }
LogicalResult ThreadGetOp::verify() { return verifyPerThread(*this); }
LogicalResult ThreadPutOp::verify() { return verifyPerThread(*this); }

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// A collective stands where a barrier may; `kind`, if any, fits `type`.
static LogicalResult
verifyCollective(Operation *op, std::optional<CombiningKind> kind = {},
                 Type type = {}) {
  if (failed(verifyPerThread(op)) || failed(verifyBarrierPosition(op)))
    return failure();
  return kind ? verifyCombiningKind(op, *kind, type) : success();
}

LogicalResult ReduceOp::verify() {
  return verifyCollective(*this, getKind(), getValue().getType());
}

LogicalResult ScanOp::verify() {
  return verifyCollective(*this, getKind(), getValue().getType());
}

LogicalResult CompactOp::verify() { return verifyCollective(*this); }
LogicalResult SplitOp::verify() { return verifyCollective(*this); }
LogicalResult SortIdxOp::verify() { return verifyCollective(*this); }

LogicalResult MultiprefixOp::verify() {
  if (failed(verifyPerThread(*this)))
    return failure();
  int64_t rank = getMemref().getType().getRank();
  if (static_cast<int64_t>(getIndices().size()) != rank)
    return emitOpError() << "needs " << rank << " indices for the memref, but got "
                         << getIndices().size();
  return verifyCombiningKind(*this, getKind(), getValue().getType());
}

//===----------------------------------------------------------------------===//
// Host interaction
//===----------------------------------------------------------------------===//

LogicalResult RequireOp::verify() {
  Operation *parent = (*this)->getParentOp();
  if (isBarrierPosition(parent) || isa<SuperstepOp>(parent))
    return success();
  return emitOpError(
      "must appear directly in a 'pgpu.spawn' body, a 'pgpu.superstep', a "
      "'pgpu.par' branch, a group region or an SPMD function");
}

/// Checks a device allocation: host code, one size per dynamic dimension.
static LogicalResult verifyDeviceAlloc(Operation *op, MemRefType type,
                                       ValueRange dynamicSizes) {
  if (failed(verifyHostCode(op)))
    return failure();
  if (static_cast<int64_t>(dynamicSizes.size()) != type.getNumDynamicDims())
    return op->emitOpError()
           << "needs one size per dynamic dimension of " << type << " ("
           << type.getNumDynamicDims() << "), but got " << dynamicSizes.size();
  return success();
}

LogicalResult DNewOp::verify() {
  return verifyDeviceAlloc(*this, getMemref().getType(), getDynamicSizes());
}

LogicalResult DTempNewOp::verify() {
  return verifyDeviceAlloc(*this, getMemref().getType(), getDynamicSizes());
}

LogicalResult DTempFreeOp::verify() { return verifyHostCode(*this); }

LogicalResult TaskGroupOp::verify() { return verifyHostCode(*this); }

/// A task belongs to the nearest enclosing taskgroup of its function; no
/// other task of that group may enclose it.
LogicalResult TaskOp::verify() {
  if (failed(verifyHostCode(*this)))
    return failure();
  for (Operation *parent = (*this)->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (isa<TaskGroupOp>(parent))
      return success();
    if (isa<TaskOp>(parent))
      return emitOpError("cannot be nested in another 'pgpu.task' of the "
                         "same 'pgpu.taskgroup'")
                 .attachNote(parent->getLoc())
             << "the enclosing task";
    if (parent->hasTrait<OpTrait::IsIsolatedFromAbove>())
      break;
  }
  return emitOpError("must be nested in a 'pgpu.taskgroup'");
}

//===----------------------------------------------------------------------===//
// Speculation
//===----------------------------------------------------------------------===//

ParseResult SpecLoopOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  Type index = builder.getIndexType();
  OpAsmParser::Argument inductionVar;
  OpAsmParser::UnresolvedOperand lowerBound, upperBound, step;
  if (parser.parseArgument(inductionVar) || parser.parseEqual() ||
      parser.parseOperand(lowerBound) || parser.parseKeyword("to") ||
      parser.parseOperand(upperBound) || parser.parseKeyword("step") ||
      parser.parseOperand(step))
    return failure();
  inductionVar.type = index;

  for (StringAttr name :
       {getWindowAttrName(result.name), getWarpAttrName(result.name)}) {
    if (failed(parser.parseOptionalKeyword(name.strref())))
      continue;
    int64_t value;
    if (parser.parseLParen() || parser.parseInteger(value) ||
        parser.parseRParen())
      return failure();
    result.addAttribute(name, builder.getI64IntegerAttr(value));
  }

  if (parser.resolveOperands({lowerBound, upperBound, step}, index,
                             result.operands))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, inductionVar))
    return failure();
  SpecLoopOp::ensureTerminator(*body, builder, result.location);
  return parser.parseOptionalAttrDict(result.attributes);
}

void SpecLoopOp::print(OpAsmPrinter &p) {
  p << ' ' << getInductionVar() << " = " << getLowerBound() << " to "
    << getUpperBound() << " step " << getStep();
  if (std::optional<int64_t> window = getWindow())
    p << " window(" << *window << ')';
  if (std::optional<int64_t> warp = getWarp())
    p << " warp(" << *warp << ')';
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getWindowAttrName(), getWarpAttrName()});
}

LogicalResult SpecLoopOp::verify() {
  if (getSpmdScope(*this))
    return emitOpError("cannot be nested in an SPMD region");
  if ((*this)->getParentOfType<SpecLoopOp>())
    return emitOpError("cannot be nested in another 'pgpu.spec.loop'");
  Block &body = getBody().front();
  if (body.getNumArguments() != 1 || !body.getArgument(0).getType().isIndex())
    return emitOpError(
        "body needs exactly one argument, the 'index' induction variable");
  APInt step;
  if (matchPattern(getStep(), m_ConstantInt(&step)) &&
      !step.isStrictlyPositive())
    return emitOpError() << "needs a positive step, but got "
                         << step.getSExtValue();
  std::optional<int64_t> window = getWindow(), warp = getWarp();
  if (window && *window <= 0)
    return emitOpError() << "window must be positive, but got " << *window;
  if (warp && *warp <= 0)
    return emitOpError() << "warp must be positive, but got " << *warp;
  if (window && warp && *window % *warp != 0)
    return emitOpError() << "window (" << *window
                         << ") must be a multiple of warp (" << *warp << ")";
  return success();
}

/// Checks a speculative access: in a spec.loop, on memory from outside it,
/// with one index per dimension.
static LogicalResult verifySpeculativeAccess(Operation *op, Value memref,
                                             ValueRange indices) {
  auto loop = op->getParentOfType<SpecLoopOp>();
  if (!loop)
    return op->emitOpError("must be nested in a 'pgpu.spec.loop'");
  if (loop.getBody().isAncestor(memref.getParentRegion()))
    return op->emitOpError(
        "accesses memory defined inside the speculative loop: it is private "
        "to the iteration, use 'memref.load'/'memref.store'");
  int64_t rank = cast<MemRefType>(memref.getType()).getRank();
  if (static_cast<int64_t>(indices.size()) != rank)
    return op->emitOpError() << "needs " << rank
                             << " indices for the memref, but got "
                             << indices.size();
  return success();
}

LogicalResult SpecLoadOp::verify() {
  return verifySpeculativeAccess(*this, getMemref(), getIndices());
}

LogicalResult SpecStoreOp::verify() {
  return verifySpeculativeAccess(*this, getMemref(), getIndices());
}

//===----------------------------------------------------------------------===//
// Host I/O
//===----------------------------------------------------------------------===//

/// The kind of operand a printf conversion character takes.
enum class PrintfOperand { SignedInteger, UnsignedInteger, Float, None };

static PrintfOperand classifyConversion(char conversion) {
  switch (conversion) {
  case 'd':
  case 'i':
    return PrintfOperand::SignedInteger;
  case 'u':
  case 'x':
  case 'X':
  case 'o':
  case 'c':
    return PrintfOperand::UnsignedInteger;
  case 'f':
  case 'F':
  case 'e':
  case 'E':
  case 'g':
  case 'G':
    return PrintfOperand::Float;
  default:
    return PrintfOperand::None;
  }
}

LogicalResult PrintfOp::verify() {
  StringRef format = getFormat();
  auto args = getArgs();
  unsigned next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%')
      continue;
    size_t start = i++;
    if (i < format.size() && format[i] == '%')
      continue;
    while (i < format.size() && StringRef("-+ #0").contains(format[i]))
      ++i;
    while (i < format.size() && (llvm::isDigit(format[i]) || format[i] == '.'))
      ++i;
    while (i < format.size() && StringRef("hlzjt").contains(format[i]))
      ++i;
    if (i >= format.size())
      return emitOpError() << "format ends inside the conversion at offset "
                           << start;
    if (format[i] == '*')
      return emitOpError() << "'*' widths are not supported (offset "
                           << start << ")";
    PrintfOperand kind = classifyConversion(format[i]);
    if (kind == PrintfOperand::None)
      return emitOpError() << "unsupported conversion '%" << format[i]
                           << "' at offset " << start;
    if (next >= args.size())
      return emitOpError() << "conversion at offset " << start
                           << " has no operand (" << args.size()
                           << " given)";
    Type type = args[next].getType();
    bool isFloat = isa<FloatType>(type);
    if ((kind == PrintfOperand::Float) != isFloat)
      return emitOpError() << "conversion '%" << format[i] << "' at offset "
                           << start << " does not match operand #" << next
                           << " of type " << type;
    ++next;
  }
  if (next != args.size())
    return emitOpError() << "format has " << next << " conversions but "
                         << args.size() << " operands are given";
  return success();
}

LogicalResult ArgIOp::verify() { return verifyHostCode(*this); }
LogicalResult WTimeOp::verify() { return verifyHostCode(*this); }
LogicalResult RandSeedOp::verify() { return verifyHostCode(*this); }
LogicalResult RandU32Op::verify() { return verifyHostCode(*this); }

//===----------------------------------------------------------------------===//
// List operations (host level)
//===----------------------------------------------------------------------===//

/// The element type of a rank-1 list.
static Type getListElementType(Value list) {
  return cast<MemRefType>(list.getType()).getElementType();
}

/// Checks that the lists `first` and `second` (named for the message) have
/// the same element type.
static LogicalResult verifySameElementType(Operation *op, Value first,
                                           StringRef firstName, Value second,
                                           StringRef secondName) {
  Type a = getListElementType(first), b = getListElementType(second);
  if (a == b)
    return success();
  return op->emitOpError() << "element type of " << secondName << " (" << b
                           << ") must be the element type of " << firstName
                           << " (" << a << ")";
}

/// Checks a list reduction or scan: host code, its result of the element
/// type of `values`, and a combining kind that applies to it.
static LogicalResult verifyListCombine(Operation *op, CombiningKind kind,
                                       Value values, Type result) {
  if (failed(verifyHostCode(op)))
    return failure();
  Type element = getListElementType(values);
  if (result != element)
    return op->emitOpError() << "result type " << result
                             << " must be the element type of the values ("
                             << element << ")";
  return verifyCombiningKind(op, kind, element);
}

LogicalResult ListReduceOp::verify() {
  return verifyListCombine(*this, getKind(), getValues(),
                           getResult().getType());
}

LogicalResult ListScanOp::verify() {
  if (failed(verifySameElementType(*this, getValues(), "the values",
                                   getScanned(), "the scanned list")))
    return failure();
  return verifyListCombine(*this, getKind(), getValues(),
                           getTotal().getType());
}

LogicalResult ListSortIdxOp::verify() {
  if (failed(verifyHostCode(*this)))
    return failure();
  if (!getSorted())
    return success();
  return verifySameElementType(*this, getKeys(), "the keys", getSorted(),
                               "the sorted keys");
}

LogicalResult ListCompactOp::verify() {
  if (failed(verifyHostCode(*this)))
    return failure();
  return verifySameElementType(*this, getValues(), "the values", getList(),
                               "the list");
}

LogicalResult ListSplitOp::verify() {
  if (failed(verifyHostCode(*this)))
    return failure();
  return verifySameElementType(*this, getValues(), "the values", getList(),
                               "the list");
}

LogicalResult ListExpandOp::verify() {
  if (failed(verifyHostCode(*this)))
    return failure();
  return verifySameElementType(*this, getCounts(), "the counts",
                               getChildren(), "the children");
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" {
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Pgpu, pgpu);
}
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Pgpu, pgpu, mlir::pgpu::PgpuDialect)
