//===- NNSDialect.cpp - nns dialect -----------------------------*- C++ -*-===//

#include "nnsc/Dialect/NNS/NNSDialect.h"
#include "nnsc/Dialect/NNS/NNSOps.h"

#include "llvm/Support/TypeName.h"

#include <optional>
#include <utility>

using namespace mlir;
using namespace nnsc::nns;

#include "nnsc/Dialect/NNS/NNSOpsDialect.cpp.inc"

void NNSDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "nnsc/Dialect/NNS/NNSOps.cpp.inc"
      >();
  registerManifestAttributes();
}

namespace {

/// For the attribute `Helper` declares: nullopt when `attr` is another one; otherwise the
/// declared type's name when `attr` has a different type, or an empty string.
template <typename Helper> std::optional<StringRef> typeMismatch(NamedAttribute attr) {
  if (attr.getName().getValue() != Helper::getNameStr())
    return std::nullopt;
  using Declared = decltype(std::declval<Helper &>().getAttr(nullptr));
  return isa<Declared>(attr.getValue()) ? StringRef() : llvm::getTypeName<Declared>();
}

template <typename... Helpers> std::optional<StringRef> typeMismatchAny(NamedAttribute attr) {
  std::optional<StringRef> result;
  ((result = result ? result : typeMismatch<Helpers>(attr)), ...);
  return result;
}

} // namespace

LogicalResult NNSDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  std::optional<StringRef> expected =
      typeMismatchAny<AtAttrHelper, GuardAttrHelper, PerStepAttrHelper, InvokeAttrHelper,
                      InvokesAttrHelper, FrameAttrHelper, FrameBytesAttrHelper, FrameHeapAttrHelper,
                      StoredGuardAttrHelper, StoredInvokeAttrHelper, SaveIndexAttrHelper,
                      TracesAttrHelper, TargetAttrHelper, ManifestAttrHelper>(attr);
  if (!expected)
    return op->emitError() << "unknown attribute '" << attr.getName().getValue()
                           << "' (the nns dialect declares its attributes in NNSDialect.td)";
  if (!expected->empty())
    return op->emitError() << "attribute '" << attr.getName().getValue() << "' must be "
                           << *expected << ", got " << attr.getValue();
  if (attr.getName().getValue() == TracesAttrHelper::getNameStr())
    for (Attribute trace : cast<ArrayAttr>(attr.getValue()))
      if (!isa<TraceDescAttr>(trace))
        return op->emitError() << "attribute '" << attr.getName().getValue()
                               << "' must list #nns.trace_desc, got " << trace;
  return success();
}
