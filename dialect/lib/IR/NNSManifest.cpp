//===- NNSManifest.cpp - the bundle manifest attributes ---------*- C++ -*-===//
//
// The verifiers of the manifest attributes (NNSManifest.td) and the bracketed-list syntax their
// list parameters use.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Dialect/NNS/NNSDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace nnsc::nns {
namespace {

/// `[a, b, ...]`, `[]` when empty.
template <typename T> FailureOr<SmallVector<T>> parseBracketedList(AsmParser &parser) {
  SmallVector<T> elements;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() -> ParseResult {
        FailureOr<T> element = FieldParser<T>::parse(parser);
        if (failed(element))
          return failure();
        elements.push_back(std::move(*element));
        return success();
      }))
    return failure();
  return elements;
}

template <typename T> void printBracketedList(AsmPrinter &printer, ArrayRef<T> elements) {
  printer << '[';
  llvm::interleaveComma(elements, printer, [&](const T &element) {
    if constexpr (std::is_base_of_v<Attribute, T>)
      printer.printAttribute(element);
    else
      printer << element;
  });
  printer << ']';
}

/// The ABI's element types (nnsc_dtype): f32, bf16, f16, i64 and i1 for bool.
bool isABIElementType(Type type) {
  return type.isF32() || type.isBF16() || type.isF16() || type.isSignlessInteger(64) ||
         type.isSignlessInteger(1);
}

/// The ABI's limit on ranks (NNSC_MAX_RANK).
constexpr int64_t kMaxRank = 4;

LogicalResult verifyValueType(function_ref<InFlightDiagnostic()> emitError, StringRef what,
                              StringRef name, RankedTensorType type, bool allowTokens) {
  if (!isABIElementType(type.getElementType()))
    return emitError() << what << " '" << name << "' has element type " << type.getElementType()
                       << " (expected f32, bf16, f16, i64 or i1)";
  if (type.getRank() > kMaxRank)
    return emitError() << what << " '" << name << "' has rank " << type.getRank()
                       << ", more than the ABI's " << kMaxRank;
  for (int64_t dim : type.getShape()) {
    if (ShapedType::isDynamic(dim) ? allowTokens : dim > 0)
      continue;
    return emitError() << what << " '" << name << "' has type " << type << " (dimensions must be "
                       << (allowTokens ? "> 0 or ? for the tokens)" : "> 0)");
  }
  return success();
}

/// Rejects a flag listed twice.
template <typename Flag>
LogicalResult verifyFlagSet(function_ref<InFlightDiagnostic()> emitError, StringRef what,
                            ArrayRef<Flag> flags) {
  for (auto [index, flag] : llvm::enumerate(flags))
    if (llvm::is_contained(flags.take_front(index), flag))
      return emitError() << what << " lists '" << stringifyEnum(flag) << "' twice";
  return success();
}

/// Rejects a name used twice among `attrs` (each with getName()).
template <typename AttrT>
LogicalResult verifyUniqueNames(function_ref<InFlightDiagnostic()> emitError, StringRef what,
                                ArrayRef<AttrT> attrs) {
  llvm::StringSet<> names;
  for (AttrT attr : attrs)
    if (!names.insert(attr.getName()).second)
      return emitError() << "duplicate " << what << " '" << attr.getName() << "'";
  return success();
}

} // namespace

LogicalResult ModelDimsAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t hidden,
                                    int64_t intermediate, int64_t layers, int64_t heads,
                                    int64_t kvHeads, int64_t headDim, int64_t vocab) {
  std::pair<StringRef, int64_t> dims[] = {
      {"hidden", hidden},    {"intermediate", intermediate}, {"layers", layers}, {"heads", heads},
      {"kv_heads", kvHeads}, {"head_dim", headDim},          {"vocab", vocab}};
  for (auto [name, value] : dims)
    if (value < 1)
      return emitError() << "model dimension '" << name << "' must be at least 1, got " << value;
  return success();
}

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef, StringRef,
                                 uint64_t, ModelDimsAttr, DictionaryAttr modules) {
  for (NamedAttribute module : modules) {
    auto index = dyn_cast<IntegerAttr>(module.getValue());
    if (!index || index.getInt() < 0)
      return emitError() << "module '" << module.getName().getValue()
                         << "' must map to its schema index, got " << module.getValue();
  }
  return success();
}

LogicalResult ParamDescAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                                    RankedTensorType type, DenseElementsAttr defaultValue) {
  if (failed(verifyValueType(emitError, "param", name, type, /*allowTokens=*/false)))
    return failure();
  if (defaultValue && defaultValue.getType() != type)
    return emitError() << "param '" << name << "' has type " << type << " but its default is "
                       << defaultValue.getType();
  return success();
}

LogicalResult SaveDescAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                                   RankedTensorType type, ArrayRef<SaveFlag> flags) {
  if (failed(verifyValueType(emitError, "save", name, type, /*allowTokens=*/true)))
    return failure();
  return verifyFlagSet(emitError, ("save '" + name + "'").str(), flags);
}

LogicalResult SiteEntryAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t site,
                                    StringRef path, Phase, ArrayRef<SiteAccess> access,
                                    FlatSymbolRefAttr) {
  if (site < 0)
    return emitError() << "site index " << site << " of '" << path << "' is negative";
  if (access.empty())
    return emitError() << "site " << site << " ('" << path << "') must read, write or skip";
  return verifyFlagSet(emitError, ("site " + llvm::Twine(site) + " access").str(), access);
}

LogicalResult TraceDescAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                                    ArrayRef<StringAttr> invokeNames, ArrayRef<TraceFlag> flags,
                                    int64_t frameBytes, ArrayRef<int64_t> frameHeapSlots,
                                    ArrayRef<ParamDescAttr> params, ArrayRef<SaveDescAttr> saves,
                                    ArrayRef<SiteEntryAttr> sites) {
  std::string what = ("trace '" + name + "'").str();
  if (failed(verifyFlagSet(emitError, what, flags)))
    return failure();
  if (frameBytes < 0)
    return emitError() << what << " has a frame of " << frameBytes << " bytes";
  for (auto [index, offset] : llvm::enumerate(frameHeapSlots)) {
    if (offset % 8 != 0)
      return emitError() << what << ": frame heap slot " << offset << " is not 8-aligned";
    if (offset < 0 || offset > frameBytes - 8)
      return emitError() << what << ": frame heap slot " << offset
                         << " is not a pointer inside the frame of " << frameBytes << " bytes";
    if (index > 0 && offset <= frameHeapSlots[index - 1])
      return emitError() << what << ": frame heap slot " << offset << " follows "
                         << frameHeapSlots[index - 1] << " (offsets ascend)";
  }
  if (failed(verifyUniqueNames(emitError, "param", params)) ||
      failed(verifyUniqueNames(emitError, "save", saves)))
    return failure();
  for (size_t i = 1; i < sites.size(); ++i)
    if (sites[i].getSite() <= sites[i - 1].getSite())
      return emitError() << what << ": site " << sites[i].getSite() << " follows site "
                         << sites[i - 1].getSite()
                         << " (entries ascend by site index without repeats)";
  return success();
}

LogicalResult ManifestAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef,
                                   StringRef, uint64_t, ModelDimsAttr,
                                   ArrayRef<TraceDescAttr> traces) {
  return verifyUniqueNames(emitError, "trace", traces);
}

} // namespace nnsc::nns

#define GET_ATTRDEF_CLASSES
#include "nnsc/Dialect/NNS/NNSManifest.cpp.inc"

void nnsc::nns::NNSDialect::registerManifestAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "nnsc/Dialect/NNS/NNSManifest.cpp.inc"
      >();
}
