//===- LowerToKernels.cpp - nns-lower-to-kernels --------------------------===//

#include "KernelEmitter.h"

#include "nnsc/Conversion/Passes.h"
#include "nnsc/Conversion/TargetInfo.h"
#include "nnsc/Dialect/NNS/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace nnsc {
#define GEN_PASS_DEF_NNSLOWERTOKERNELS
#include "nnsc/Conversion/Passes.h.inc"

namespace {

/// One `nns.kernel` to a func.func of the bundle ABI (KernelEmitter), recording its manifest
/// entry under its trace. The emitter builds through the conversion's rewriter.
struct LowerKernel : OpConversionPattern<nns::KernelOp> {
  LowerKernel(MLIRContext *ctx, const kernels::KernelContext &context,
              llvm::StringMap<SmallVector<nns::SiteEntryAttr>> &sites)
      : OpConversionPattern(ctx), context(context), sites(sites) {}

  LogicalResult matchAndRewrite(nns::KernelOp kernel, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto module = kernel->getParentOfType<ModuleOp>();
    func::FuncOp func =
        bundle::ABIBuilder::createKernel(rewriter, module, kernel.getLoc(), kernel.getSymName());
    kernels::KernelEmitter emitter(rewriter, func, kernel, context);
    if (failed(emitter.emit()))
      return failure(); // the emitter reported why
    sites[kernel.getTrace()].push_back(nns::SiteEntryAttr::get(
        getContext(), kernel.getSite(), kernel.getPath(), kernel.getPhase(),
        kernel.getAccessFlags(), FlatSymbolRefAttr::get(func.getSymNameAttr())));
    rewriter.eraseOp(kernel);
    return success();
  }

  const kernels::KernelContext &context;
  llvm::StringMap<SmallVector<nns::SiteEntryAttr>> &sites;
};

/// Params live on in the manifest (built before the conversion) and the groups' param tables.
struct EraseParam : OpConversionPattern<nns::ParamOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nns::ParamOp param, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(param);
    return success();
  }
};

struct LowerToKernels : impl::NNSLowerToKernelsBase<LowerToKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module->getAttrOfType<nns::TargetAttr>(kernels::kTargetAttr);
    auto traces = module->getAttrOfType<ArrayAttr>(nns::kTracesAttr);
    if (!target || !traces) {
      module.emitError() << "nns-lower-to-kernels needs '" << kernels::kTargetAttr << "' and '"
                         << nns::kTracesAttr << "' (run the scheduling passes and give a model)";
      return signalPassFailure();
    }
    kernels::KernelContext context;
    SmallVector<nns::ParamDescAttr> params;
    for (auto param : module.getOps<nns::ParamOp>()) {
      context.paramIndex[param.getSymName()] = params.size();
      auto defaultValue = dyn_cast_or_null<DenseElementsAttr>(param.getDefaultValueAttr());
      if (param.getDefaultValueAttr() && !defaultValue) {
        param.emitError() << "a param's default must be dense elements";
        return signalPassFailure();
      }
      auto emitErrorOnParam = [&] { return param.emitError(); };
      auto desc = nns::ParamDescAttr::getChecked(
          function_ref<InFlightDiagnostic()>(emitErrorOnParam), &getContext(), param.getSymName(),
          cast<RankedTensorType>(param.getParamType()), defaultValue);
      if (!desc)
        return signalPassFailure();
      params.push_back(desc);
    }
    for (NamedAttribute entry : target.getModules())
      context.moduleIndex[entry.getName()] = cast<IntegerAttr>(entry.getValue()).getInt();

    // Every nns op goes: kernels become functions, params are erased (their manifest entries
    // are above). What no pattern lowers is reported by the conversion ("failed to legalize
    // operation 'nns.trace'": the scheduling passes did not run).
    llvm::StringMap<SmallVector<nns::SiteEntryAttr>> sites;
    ConversionTarget legality(getContext());
    legality.addIllegalDialect<nns::NNSDialect>();
    legality.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerKernel>(&getContext(), context, sites);
    patterns.add<EraseParam>(&getContext());
    if (failed(applyFullConversion(module, legality, std::move(patterns))))
      return signalPassFailure();
    // Site order within a trace (the manifest's; the fuse pass creates kernels in that order).
    for (auto &entry : sites)
      llvm::stable_sort(entry.second, [](nns::SiteEntryAttr a, nns::SiteEntryAttr b) {
        return a.getSite() < b.getSite();
      });

    // nns-fuse-sites described each trace but its params and sites. The manifest is built
    // checked: what the verifiers refuse is this pass's error, not a malformed bundle.
    auto emitErrorOnModule = [&] { return module.emitError() << "nns-lower-to-kernels: "; };
    function_ref<InFlightDiagnostic()> emitError = emitErrorOnModule;
    SmallVector<nns::TraceDescAttr> traceDescs;
    for (auto trace : traces.getAsRange<nns::TraceDescAttr>()) {
      // "main" is the unnamed trace's symbol; the manifest names it "".
      bool unnamed = trace.getName() == "main" && traces.size() == 1;
      auto desc = nns::TraceDescAttr::getChecked(
          emitError, &getContext(), unnamed ? "" : trace.getName(), trace.getInvokeNames(),
          trace.getFlags(), trace.getFrameBytes(), trace.getFrameHeapSlots(),
          ArrayRef<nns::ParamDescAttr>(params), trace.getSaves(),
          ArrayRef<nns::SiteEntryAttr>(sites[trace.getName()]));
      if (!desc)
        return signalPassFailure();
      traceDescs.push_back(desc);
    }
    auto manifest = nns::ManifestAttr::getChecked(
        emitError, &getContext(), target.getSourceHash(), target.getArch(), target.getSchemaHash(),
        target.getDims(), ArrayRef<nns::TraceDescAttr>(traceDescs));
    if (!manifest)
      return signalPassFailure();
    module->setAttr(nns::kManifestAttr, manifest);
    module->removeAttr(kernels::kTargetAttr);
    module->removeAttr(nns::kTracesAttr);
  }
};

} // namespace
} // namespace nnsc
