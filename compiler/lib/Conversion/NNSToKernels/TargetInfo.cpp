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
  auto dims = b.getDictionaryAttr({
      b.getNamedAttr("hidden", b.getI64IntegerAttr(config.hidden)),
      b.getNamedAttr("intermediate", b.getI64IntegerAttr(config.intermediate)),
      b.getNamedAttr("layers", b.getI64IntegerAttr(config.layers)),
      b.getNamedAttr("heads", b.getI64IntegerAttr(config.heads)),
      b.getNamedAttr("kv_heads", b.getI64IntegerAttr(config.kvHeads)),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(config.headDim)),
      b.getNamedAttr("vocab", b.getI64IntegerAttr(config.vocab)),
  });
  module->setAttr(
      kTargetAttr,
      b.getDictionaryAttr({
          b.getNamedAttr("source_hash", b.getStringAttr(llvm::toHex(digest, /*LowerCase=*/true))),
          b.getNamedAttr("arch", b.getStringAttr(schema::archKindName(config.arch))),
          b.getNamedAttr("schema_hash", IntegerAttr::get(IntegerType::get(module.getContext(), 64,
                                                                          IntegerType::Unsigned),
                                                         config.schemaHash())),
          b.getNamedAttr("dims", dims),
          b.getNamedAttr("modules", modules.getDictionary(module.getContext())),
      }));
  return success();
}

} // namespace nnsc::kernels
