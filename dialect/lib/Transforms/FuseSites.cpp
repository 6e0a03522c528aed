//===- FuseSites.cpp - nns-fuse-sites -------------------------------------===//

#include "ScheduleUtils.h"
#include "SiteRuns.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

using namespace mlir;

namespace nnsc::nns {
#define GEN_PASS_DEF_NNSFUSESITES
#include "nnsc/Dialect/NNS/Passes.h.inc"

namespace {

/// Path, phase and access of one site as a trace uses it.
struct SiteUse {
  std::string path;
  Phase phase = Phase::Forward;
  bool read = false, write = false, skip = false;
};

/// The frame slot holding `value`, or -1.
int64_t frameOffset(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return -1;
  auto offsets = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(kFrameAttr);
  return offsets ? offsets[result.getResultNumber()] : -1;
}

bool guardIncludesPrefill(Attribute guard) {
  auto range = dyn_cast_or_null<DenseI64ArrayAttr>(guard);
  return !range || range[0] == 0;
}

/// Builds the kernel of one site of one trace by copying the ops assigned to it.
class KernelBuilder {
public:
  KernelBuilder(KernelOp kernel, int64_t site, const SiteRuns &runs)
      : kernel(kernel), site(site), runs(runs) {}

  /// Copies the trace's ops of this site; its top-level caches go last, since a cache records
  /// the value the model continues with, after every write of the program there.
  void copyTrace(TraceOp trace, OpBuilder &builder) {
    invokeNames = trace->getAttrOfType<ArrayAttr>(kInvokesAttr);
    SmallVector<Operation *> caches;
    copyBlock(trace.getBody().front(), builder, &caches);
    for (Operation *cache : caches)
      builder.clone(*cache);
  }

  void copyBlock(Block &source, OpBuilder &builder,
                 SmallVectorImpl<Operation *> *caches = nullptr) {
    for (Operation &op : source) {
      if (isa<YieldOp>(op))
        continue;
      if (caches && isa<CacheOp>(op)) {
        if (siteOf(&op) == site)
          caches->push_back(&op);
        continue;
      }
      if (auto ifOp = dyn_cast<IfOp>(op)) {
        if (containsSite(ifOp))
          copyIf(ifOp, builder);
        continue;
      }
      if (siteOf(&op) != site)
        continue;
      // Operands are mapped for this op alone: the same value may reach other ops of the
      // kernel through another run's frame load.
      IRMapping operands;
      for (Value operand : op.getOperands())
        operands.map(operand, lookup(operand, &op, builder));
      Operation *copy = builder.clone(op, operands);
      mapping.map(op.getResults(), copy->getResults());
      copy->removeAttr(kFrameAttr);
      storeResults(&op, copy, builder);
    }
  }

private:
  bool containsSite(IfOp ifOp) {
    return ifOp
        ->walk([&](Operation *op) {
          return !isa<IfOp, YieldOp>(op) && siteOf(op) == site ? WalkResult::interrupt()
                                                               : WalkResult::advance();
        })
        .wasInterrupted();
  }

  void copyIf(IfOp ifOp, OpBuilder &builder) {
    bool producesResults = siteOf(ifOp) == site;
    Value condition = lookup(ifOp.getCondition(), ifOp, builder);
    TypeRange types = producesResults ? TypeRange(ifOp.getResultTypes()) : TypeRange();
    auto copy = IfOp::create(builder, ifOp.getLoc(), types, condition);
    copy->setDiscardableAttrs(ifOp->getDiscardableAttrDictionary());
    copy->removeAttr(kFrameAttr);
    for (auto [from, to] : llvm::zip(ifOp->getRegions(), copy->getRegions())) {
      if (from.empty())
        continue;
      // Not builder.createBlock: the ops after the `if` still go after it, not into the branch.
      Block *block = to.empty() ? &to.emplaceBlock() : &to.front();
      OpBuilder inner = OpBuilder::atBlockBegin(block);
      if (!block->empty())
        inner.setInsertionPoint(block->getTerminator());
      copyBlock(from.front(), inner);
      SmallVector<Value> yielded;
      if (producesResults)
        for (Value v : cast<YieldOp>(from.front().getTerminator()).getValues())
          yielded.push_back(lookup(v, ifOp, inner));
      if (block->empty() || !isa<YieldOp>(block->back()))
        YieldOp::create(inner, ifOp.getLoc(), yielded);
    }
    mapping.map(ifOp.getResults(), copy.getResults());
    if (producesResults)
      storeResults(ifOp, copy, builder);
  }

  /// Frame accesses run under the step guard and invoke of the op they serve.
  template <typename OpTy> OpTy markContext(OpTy op, Operation *served) {
    Operation *top = topLevelOp(served);
    for (StringRef name : {kGuardAttr, kInvokeAttr})
      if (Attribute attr = top->getAttr(name))
        op->setAttr(name, attr);
    return op;
  }

  /// A load checks that the slot holds this step's value (docs/Compiler.md, "Values never
  /// computed"): it needs the step guard of the store and, for the error, its invoke's name.
  void markStored(FrameLoadOp load, Operation *def) {
    Operation *top = topLevelOp(def);
    if (Attribute guard = top->getAttr(kGuardAttr))
      load->setAttr(kStoredGuardAttr, guard);
    if (auto invoke = top->getAttrOfType<IntegerAttr>(kInvokeAttr))
      load->setAttr(kStoredInvokeAttr, invokeNames[invoke.getInt()]);
  }

  /// Keeps the results of `original` (copied as `copy`) that later site events need.
  void storeResults(Operation *original, Operation *copy, OpBuilder &builder) {
    for (auto [from, to] : llvm::zip(original->getResults(), copy->getResults())) {
      int64_t offset = frameOffset(from);
      if (offset >= 0)
        markContext(FrameStoreOp::create(builder, original->getLoc(), to, offset), original);
    }
  }

  /// The value of `value` for `user` inside this kernel: the copy made here when it runs in
  /// the same run, a recomputation of site-independent values, or a frame load (one per run
  /// and block).
  Value lookup(Value value, Operation *user, OpBuilder &builder) {
    Operation *def = value.getDefiningOp();
    assert(def && "trace values are op results once loops and invokes are inlined");
    if (siteOf(def) < 0)
      return recompute(def, value);
    int64_t offset = frameOffset(value);
    if (runs.sameRun(def, user)) {
      Value mapped = mapping.lookupOrNull(value);
      assert(mapped && "a value used in its own run is copied before its use");
      return mapped;
    }
    assert(offset >= 0 && "nns-allocate-frame gives a slot to every value leaving its run");
    auto key = std::make_tuple(value, builder.getInsertionBlock(), runs.runOf(user, site));
    auto it = loads.find(key);
    if (it != loads.end())
      return it->second;
    auto load =
        markContext(FrameLoadOp::create(builder, def->getLoc(), value.getType(), offset), user);
    markStored(load, def);
    Value loaded = load;
    loads[key] = loaded;
    return loaded;
  }

  /// Site-independent values (constants, params, the step) are computed again at the start of
  /// the kernel, where they dominate every use.
  Value recompute(Operation *def, Value value) {
    if (Value mapped = mapping.lookupOrNull(value))
      return mapped;
    OpBuilder builder(kernel.getContext());
    Block &body = kernel.getBody().front();
    if (lastRecomputed)
      builder.setInsertionPointAfter(lastRecomputed);
    else
      builder.setInsertionPointToStart(&body);
    for (Value operand : def->getOperands())
      recompute(operand.getDefiningOp(), operand);
    if (lastRecomputed)
      builder.setInsertionPointAfter(lastRecomputed);
    else
      builder.setInsertionPointToStart(&body);
    Operation *copy = builder.clone(*def, mapping);
    copy->removeAttr(kGuardAttr);
    copy->removeAttr(kInvokeAttr);
    lastRecomputed = copy;
    return mapping.lookup(value);
  }

  KernelOp kernel;
  int64_t site;
  const SiteRuns &runs;
  ArrayAttr invokeNames;
  IRMapping mapping;
  llvm::DenseMap<std::tuple<Value, Block *, int64_t>, Value> loads;
  Operation *lastRecomputed = nullptr;
};

struct FuseSites : impl::NNSFuseSitesBase<FuseSites> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder builder(&getContext());
    SmallVector<Attribute> traces;
    for (auto trace : llvm::make_early_inc_range(module.getOps<TraceOp>())) {
      TraceDescAttr desc = describeTrace(trace, builder);
      if (!desc)
        return signalPassFailure();
      traces.push_back(desc);
      std::map<int64_t, SiteUse> sites = collectSites(trace);
      SiteRuns runs(trace);
      for (auto &[site, use] : sites) {
        SmallVector<Attribute> access;
        for (auto [used, flag] :
             {std::pair{use.read, SiteAccess::Read}, std::pair{use.write, SiteAccess::Write},
              std::pair{use.skip, SiteAccess::Skip}})
          if (used)
            access.push_back(SiteAccessAttr::get(&getContext(), flag));
        builder.setInsertionPointToEnd(module.getBody());
        auto kernel = KernelOp::create(
            builder, trace.getLoc(), (trace.getSymName() + "_" + llvm::Twine(site)).str(),
            trace.getSymName(), site, use.path, use.phase, builder.getArrayAttr(access));
        OpBuilder inner = OpBuilder::atBlockBegin(builder.createBlock(&kernel.getBody()));
        KernelBuilder(kernel, site, runs).copyTrace(trace, inner);
      }
      trace.erase();
    }
    module->setAttr(kTracesAttr, builder.getArrayAttr(traces));
  }

  std::map<int64_t, SiteUse> collectSites(TraceOp trace) {
    std::map<int64_t, SiteUse> sites;
    auto note = [&](int64_t order, StringRef path, Phase phase) -> SiteUse & {
      SiteUse &use = sites[order];
      use.path = path.str();
      use.phase = phase;
      return use;
    };
    trace.walk([&](Operation *op) {
      if (auto read = dyn_cast<SiteReadOp>(op))
        note(read.getOrder(), read.getPath(), read.getPhase()).read = true;
      else if (auto cache = dyn_cast<CacheOp>(op))
        note(cache.getOrder(), cache.getPath(), cache.getPhase()).read = true;
      else if (auto write = dyn_cast<SiteWriteOp>(op))
        note(write.getOrder(), write.getPath(), write.getPhase()).write = true;
      else if (auto update = dyn_cast<SiteUpdateOp>(op)) {
        SiteUse &use = note(update.getOrder(), update.getPath(), update.getPhase());
        use.read = use.write = true;
      } else if (auto skip = dyn_cast<SkipOp>(op)) {
        SiteUse &use =
            note(skip.getInputOrder(), (skip.getModule() + ".input").str(), Phase::Forward);
        use.write = use.skip = true;
      }
    });
    // Work computed from earlier sites that runs at a site nothing else touches (a save at
    // the last site, `stop`) still needs that site: it is read.
    trace.walk([&](Operation *op) {
      int64_t site = siteOf(op);
      if (site >= 0 && !sites.count(site))
        op->emitError("internal: op assigned to site ") << site << " that the trace never names";
    });
    return sites;
  }

  /// The trace's manifest entry (name, invokes, frame size and heap slots, flags, saves) without
  /// its params and sites, which nns-lower-to-kernels adds; null after an error (a save the
  /// bundle ABI cannot describe).
  TraceDescAttr describeTrace(TraceOp trace, OpBuilder &builder) {
    bool readsPrompt = false, writesPrompt = false, stops = false, failed = false;
    SmallVector<SaveDescAttr> saves;
    int64_t saveIndex = 0;
    trace.walk([&](Operation *op) {
      if (op == trace.getOperation())
        return;
      Attribute guard = topLevelOp(op)->getAttr(kGuardAttr);
      bool prefill = guardIncludesPrefill(guard);
      auto forward = [&](Phase phase) { return prefill && phase == Phase::Forward; };
      if (auto read = dyn_cast<SiteReadOp>(op))
        readsPrompt |= forward(read.getPhase());
      if (auto cache = dyn_cast<CacheOp>(op))
        readsPrompt |= forward(cache.getPhase());
      if (auto write = dyn_cast<SiteWriteOp>(op))
        writesPrompt |= forward(write.getPhase());
      if (auto update = dyn_cast<SiteUpdateOp>(op)) {
        readsPrompt |= forward(update.getPhase());
        writesPrompt |= forward(update.getPhase());
      }
      if (isa<SkipOp>(op))
        writesPrompt |= prefill;
      stops |= isa<StopOp>(op);
      RankedTensorType type;
      StringRef name;
      if (auto save = dyn_cast<SaveOp>(op)) {
        type = save.getValue().getType();
        name = save.getName();
      } else if (auto cache = dyn_cast<CacheOp>(op)) {
        type = cast<RankedTensorType>(cache.getSiteType());
        name = cache.getPath();
      } else {
        return;
      }
      SmallVector<SaveFlag> saveFlags;
      if (op->hasAttr(kPerStepAttr))
        saveFlags.push_back(SaveFlag::PerStep);
      op->setAttr(kSaveIndexAttr, builder.getI64IntegerAttr(saveIndex++));
      auto emitError = [&] { return op->emitError(); };
      auto save =
          SaveDescAttr::getChecked(function_ref<InFlightDiagnostic()>(emitError),
                                   builder.getContext(), name, type, ArrayRef<SaveFlag>(saveFlags));
      failed |= !save;
      saves.push_back(save);
    });
    if (failed)
      return nullptr;
    SmallVector<TraceFlag> flags;
    if (readsPrompt)
      flags.push_back(TraceFlag::ReadsPrompt);
    if (writesPrompt)
      flags.push_back(TraceFlag::WritesPrompt);
    if (stops)
      flags.push_back(TraceFlag::Stops);
    // Set by nns-order-invokes and nns-allocate-frame (absent: no invokes, no frame).
    SmallVector<StringAttr> invokeNames;
    if (auto invokes = trace->getAttrOfType<ArrayAttr>(kInvokesAttr))
      invokeNames = llvm::to_vector(invokes.getAsRange<StringAttr>());
    auto frameBytes = trace->getAttrOfType<IntegerAttr>(kFrameBytesAttr);
    auto heapSlots = trace->getAttrOfType<DenseI64ArrayAttr>(kFrameHeapAttr);
    auto emitError = [&] { return trace.emitError(); };
    return TraceDescAttr::getChecked(
        function_ref<InFlightDiagnostic()>(emitError), builder.getContext(), trace.getSymName(),
        ArrayRef<StringAttr>(invokeNames), ArrayRef<TraceFlag>(flags),
        frameBytes ? frameBytes.getInt() : 0,
        heapSlots ? heapSlots.asArrayRef() : ArrayRef<int64_t>(), ArrayRef<ParamDescAttr>(),
        ArrayRef<SaveDescAttr>(saves), ArrayRef<SiteEntryAttr>());
  }
};

} // namespace

void buildSchedulePipeline(OpPassManager &pm) {
  pm.addPass(createNNSAssignSites());
  pm.addPass(createNNSStepGuards());
  pm.addPass(createNNSOrderInvokes());
  pm.addPass(createNNSAllocateFrame());
  pm.addPass(createNNSFuseSites());
}

} // namespace nnsc::nns
