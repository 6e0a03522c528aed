//===- TargetInfo.cpp - what a bundle is compiled for ---------------------===//

#include "nnsc/Conversion/TargetInfo.h"

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

using namespace mlir;

namespace nnsc::kernels {

LogicalResult annotateTarget(ModuleOp module, const schema::Architecture &arch, StringRef source) {
  Builder b(module.getContext());
  const schema::ModelConfig &config = arch.config();
  std::array<uint8_t, 32> digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(source));
  NamedAttrList modules;
  WalkResult walk = module.walk([&](nns::CallModuleOp call) {
    int index = arch.findModule(call.getModule().str());
    if (index < 0) {
      call.emitError() << "module '" << call.getModule() << "' is not in the model";
      return WalkResult::interrupt();
    }
    modules.set(call.getModuleAttr(), b.getI32IntegerAttr(index));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  auto dims = nns::ModelDimsAttr::get(module.getContext(), config.hidden, config.intermediate,
                                      config.layers, config.heads, config.kvHeads, config.headDim,
                                      config.vocab);
  module->setAttr(kTargetAttr,
                  nns::TargetAttr::get(module.getContext(), llvm::toHex(digest, /*LowerCase=*/true),
                                       schema::archKindName(config.arch), config.schemaHash(), dims,
                                       modules.getDictionary(module.getContext())));
  return success();
}

} // namespace nnsc::kernels
