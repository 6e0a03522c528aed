//===- NNSScheduleOps.cpp - verifiers of scheduled nns IR -----------------===//

#include "nnsc/Dialect/NNS/NNSOps.h"

using namespace mlir;

namespace nnsc::nns {

/// Frame slots are 8-byte aligned so that every element type can be stored at any slot.
static LogicalResult verifyFrameOffset(Operation *op, int64_t offset) {
  if (offset < 0 || offset % 8 != 0)
    return op->emitOpError("frame offset must be a non-negative multiple of 8, got ") << offset;
  return success();
}

LogicalResult FrameLoadOp::verify() { return verifyFrameOffset(*this, getOffset()); }

LogicalResult FrameStoreOp::verify() { return verifyFrameOffset(*this, getOffset()); }

LogicalResult KernelOp::verify() {
  if (getSite() < 0)
    return emitOpError("site order must be non-negative, got ") << getSite();
  for (Attribute access : getAccess()) {
    StringRef name = cast<StringAttr>(access).getValue();
    if (name != "read" && name != "write" && name != "skip")
      return emitOpError("unknown access '") << name << "' (expected read, write or skip)";
  }
  return success();
}

} // namespace nnsc::nns
