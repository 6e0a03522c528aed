//===- NNSOps.cpp - nns dialect operations ----------------------*- C++ -*-===//

#include "nnsc/Dialect/NNS/NNSOps.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace nnsc::nns;

/// Special sites that are not module paths.
static bool isSpecialSite(StringRef site) {
  return site == "logits" || site == "samples" || site == "result";
}

LogicalResult SiteReadOp::verify() {
  StringRef site = getSite();
  if (isSpecialSite(site))
    return success();
  SmallVector<StringRef> parts;
  site.split(parts, '.');
  if (parts.size() < 2 || llvm::any_of(parts, [](StringRef p) { return p.empty(); }))
    return emitOpError("site '") << site
                                 << "' is not a dotted module path ending in an accessor";
  StringRef accessor = parts.back();
  if (accessor != "output" && accessor != "input")
    return emitOpError("site '") << site << "' has accessor '" << accessor
                                 << "'; expected 'output' or 'input'";
  return success();
}

LogicalResult SaveOp::verify() {
  if (getName().empty())
    return emitOpError("save name must not be empty");
  return success();
}

#define GET_OP_CLASSES
#include "nnsc/Dialect/NNS/NNSOps.cpp.inc"
