//===- Manifest.cpp - the manifest's kernels and ABI values ---------------===//

#include "nnsc/Target/Bundle/Manifest.h"

#include "nnsc/Dialect/NNS/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace nnsc::bundle {

// The manifest's flag and phase enums (NNSAttrs.td) carry the ABI's values.
static_assert(uint32_t(nns::TraceFlag::ReadsPrompt) == abi::kTraceReadsPrompt &&
              uint32_t(nns::TraceFlag::WritesPrompt) == abi::kTraceWritesPrompt &&
              uint32_t(nns::TraceFlag::Stops) == abi::kTraceStops);
static_assert(uint32_t(nns::SaveFlag::PerStep) == abi::kSavePerStep);
static_assert(uint32_t(nns::SiteAccess::Read) == abi::kAccessRead &&
              uint32_t(nns::SiteAccess::Write) == abi::kAccessWrite &&
              uint32_t(nns::SiteAccess::Skip) == abi::kAccessSkip);
static_assert(int32_t(nns::Phase::Forward) == int32_t(abi::Phase::Forward) &&
              int32_t(nns::Phase::Logits) == int32_t(abi::Phase::Logits) &&
              int32_t(nns::Phase::Samples) == int32_t(abi::Phase::Samples) &&
              int32_t(nns::Phase::Result) == int32_t(abi::Phase::Result));

bool hasKernelSignature(FunctionOpInterface func) {
  auto type = dyn_cast<FunctionType>(func.getFunctionType());
  if (!type || type.getNumInputs() != 4 || type.getNumResults() != 1)
    return false;
  auto isPtr = [](Type t) { return isa<LLVM::LLVMPointerType>(t); };
  return isPtr(type.getInput(0)) && isPtr(type.getInput(1)) &&
         type.getInput(2).isSignlessInteger(32) && isPtr(type.getInput(3)) &&
         type.getResult(0).isSignlessInteger(32);
}

FailureOr<nns::ManifestAttr> getManifest(ModuleOp module) {
  // The nns dialect's verifier has checked that the attribute, when present, is a manifest.
  auto manifest = module->getAttrOfType<nns::ManifestAttr>(nns::kManifestAttr);
  if (!manifest)
    return module.emitError() << "missing module attribute '" << nns::kManifestAttr
                              << "' (kernel-level IR carries the bundle manifest there)";
  for (nns::TraceDescAttr trace : manifest.getTraces()) {
    for (nns::SiteEntryAttr site : trace.getSites()) {
      auto error = [&] {
        return module.emitError() << nns::kManifestAttr << ": trace '" << trace.getName()
                                  << "' site " << site.getSite() << " ('" << site.getPath()
                                  << "'): ";
      };
      auto func = dyn_cast_or_null<FunctionOpInterface>(
          SymbolTable::lookupSymbolIn(module, site.getKernel().getAttr()));
      if (!func || func.isExternal())
        return error() << "no kernel function " << site.getKernel() << " in the module";
      if (!hasKernelSignature(func))
        return error() << "kernel " << site.getKernel() << " has type " << func.getFunctionType()
                       << ", expected (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32";
    }
  }
  return manifest;
}

abi::DType dtypeOf(Type elementType) {
  if (elementType.isF32())
    return abi::DType::F32;
  if (elementType.isBF16())
    return abi::DType::BF16;
  if (elementType.isF16())
    return abi::DType::F16;
  if (elementType.isSignlessInteger(1))
    return abi::DType::Bool;
  assert(elementType.isSignlessInteger(64) && "the manifest's verifier admits no other type");
  return abi::DType::I64;
}

SmallVector<int64_t, 4> abiShape(RankedTensorType type) {
  SmallVector<int64_t, 4> shape;
  for (int64_t dim : type.getShape())
    shape.push_back(ShapedType::isDynamic(dim) ? abi::kDimTokens : dim);
  return shape;
}

abi::Phase abiPhase(nns::Phase phase) { return static_cast<abi::Phase>(phase); }

} // namespace nnsc::bundle
