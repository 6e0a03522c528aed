//===- LowerToKernels.cpp - nns-lower-to-kernels --------------------------===//

#include "KernelEmitter.h"

#include "nnsc/Conversion/Passes.h"
#include "nnsc/Conversion/TargetInfo.h"
#include "nnsc/Dialect/NNS/Passes.h"
#include "nnsc/Target/Bundle/Manifest.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace nnsc {
#define GEN_PASS_DEF_NNSLOWERTOKERNELS
#include "nnsc/Conversion/Passes.h.inc"

namespace {

StringRef dtypeName(Type element) {
  if (element.isF32())
    return "f32";
  if (element.isInteger(1))
    return "bool";
  return "i64";
}

/// Shape in the manifest's convention: the token dimension is -1.
DenseI64ArrayAttr manifestShape(Builder &b, RankedTensorType type) {
  SmallVector<int64_t> shape;
  for (int64_t size : type.getShape())
    shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
  return b.getDenseI64ArrayAttr(shape);
}

StringRef phaseName(nns::Phase phase) { return nns::stringifyPhase(phase); }

/// One `nns.kernel` to a func.func of the bundle ABI (KernelEmitter), recording its manifest
/// entry under its trace. The emitter builds through the conversion's rewriter.
struct LowerKernel : OpConversionPattern<nns::KernelOp> {
  LowerKernel(MLIRContext *ctx, const kernels::KernelContext &context,
              llvm::StringMap<SmallVector<Attribute>> &sites)
      : OpConversionPattern(ctx), context(context), sites(sites) {}

  LogicalResult matchAndRewrite(nns::KernelOp kernel, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto module = kernel->getParentOfType<ModuleOp>();
    func::FuncOp func =
        bundle::ABIBuilder::createKernel(rewriter, module, kernel.getLoc(), kernel.getSymName());
    kernels::KernelEmitter emitter(rewriter, func, kernel, context);
    if (failed(emitter.emit()))
      return failure(); // the emitter reported why
    sites[kernel.getTrace()].push_back(rewriter.getDictionaryAttr({
        rewriter.getNamedAttr("site", rewriter.getI64IntegerAttr(kernel.getSite())),
        rewriter.getNamedAttr("path", kernel.getPathAttr()),
        rewriter.getNamedAttr("phase", rewriter.getStringAttr(phaseName(kernel.getPhase()))),
        rewriter.getNamedAttr("access", kernel.getAccess()),
        rewriter.getNamedAttr("kernel", FlatSymbolRefAttr::get(func.getSymNameAttr())),
    }));
    rewriter.eraseOp(kernel);
    return success();
  }

  const kernels::KernelContext &context;
  llvm::StringMap<SmallVector<Attribute>> &sites;
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
    OpBuilder builder(&getContext());
    auto target = module->getAttrOfType<DictionaryAttr>(kernels::kTargetAttr);
    auto traces = module->getAttrOfType<ArrayAttr>(nns::kTracesAttr);
    if (!target || !traces) {
      module.emitError() << "nns-lower-to-kernels needs '" << kernels::kTargetAttr << "' and '"
                         << nns::kTracesAttr << "' (run the scheduling passes and give a model)";
      return signalPassFailure();
    }
    kernels::KernelContext context;
    SmallVector<Attribute> params;
    for (auto param : module.getOps<nns::ParamOp>()) {
      context.paramIndex[param.getSymName()] = params.size();
      auto type = cast<RankedTensorType>(param.getParamType());
      SmallVector<NamedAttribute> fields{
          builder.getNamedAttr("name", param.getSymNameAttr()),
          builder.getNamedAttr("dtype", builder.getStringAttr(dtypeName(type.getElementType()))),
          builder.getNamedAttr("shape", manifestShape(builder, type))};
      if (auto value = param.getDefaultValueAttr())
        fields.push_back(builder.getNamedAttr("default", value));
      params.push_back(builder.getDictionaryAttr(fields));
    }
    if (auto modules = target.getAs<DictionaryAttr>("modules"))
      for (NamedAttribute entry : modules)
        context.moduleIndex[entry.getName()] = cast<IntegerAttr>(entry.getValue()).getInt();

    // Every nns op goes: kernels become functions, params are erased (their manifest entries
    // are above). What no pattern lowers is reported by the conversion ("failed to legalize
    // operation 'nns.trace'": the scheduling passes did not run).
    llvm::StringMap<SmallVector<Attribute>> sites;
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
      llvm::stable_sort(entry.second, [](Attribute a, Attribute b) {
        auto site = [](Attribute d) {
          return cast<DictionaryAttr>(d).getAs<IntegerAttr>("site").getInt();
        };
        return site(a) < site(b);
      });

    SmallVector<Attribute> traceDescs;
    for (auto trace : traces.getAsRange<DictionaryAttr>()) {
      auto name = trace.getAs<StringAttr>("name");
      auto invokes = trace.getAs<ArrayAttr>("invokes");
      SmallVector<Attribute> saves;
      for (auto save : trace.getAs<ArrayAttr>("saves").getAsRange<DictionaryAttr>()) {
        auto type = cast<RankedTensorType>(save.getAs<TypeAttr>("type").getValue());
        bool perStep = save.getAs<BoolAttr>("per_step").getValue();
        saves.push_back(builder.getDictionaryAttr({
            builder.getNamedAttr("name", save.get("name")),
            builder.getNamedAttr("dtype", builder.getStringAttr(dtypeName(type.getElementType()))),
            builder.getNamedAttr("shape", manifestShape(builder, type)),
            builder.getNamedAttr("flags", perStep ? builder.getStrArrayAttr({"per_step"})
                                                  : builder.getArrayAttr({})),
        }));
      }
      // "main" is the unnamed trace's symbol; the manifest names it "".
      bool unnamed = name.getValue() == "main" && traces.size() == 1;
      traceDescs.push_back(builder.getDictionaryAttr({
          builder.getNamedAttr("name", builder.getStringAttr(unnamed ? "" : name.getValue())),
          builder.getNamedAttr("num_invokes", builder.getI64IntegerAttr(invokes.size())),
          builder.getNamedAttr("invoke_names", invokes),
          builder.getNamedAttr("flags", trace.get("flags")),
          builder.getNamedAttr("frame_bytes", trace.get("frame_bytes")),
          builder.getNamedAttr("frame_heap_slots", trace.get("frame_heap_slots")),
          builder.getNamedAttr("params", builder.getArrayAttr(params)),
          builder.getNamedAttr("saves", builder.getArrayAttr(saves)),
          builder.getNamedAttr("sites", builder.getArrayAttr(sites[name.getValue()])),
      }));
    }
    module->setAttr(bundle::kManifestAttrName,
                    builder.getDictionaryAttr({
                        builder.getNamedAttr("source_hash", target.get("source_hash")),
                        builder.getNamedAttr("arch", target.get("arch")),
                        builder.getNamedAttr("schema_hash", target.get("schema_hash")),
                        builder.getNamedAttr("dims", target.get("dims")),
                        builder.getNamedAttr("traces", builder.getArrayAttr(traceDescs)),
                    }));
    module->removeAttr(kernels::kTargetAttr);
    module->removeAttr(nns::kTracesAttr);
  }
};

} // namespace
} // namespace nnsc
