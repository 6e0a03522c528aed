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

SmallVector<SiteAccess> KernelOp::getAccessFlags() {
  SmallVector<SiteAccess> flags;
  for (auto access : getAccess().getAsRange<SiteAccessAttr>())
    flags.push_back(access.getValue());
  return flags;
}

/// A kernel becomes its trace's manifest entry for the site (nns-lower-to-kernels), so it is
/// held to that entry's rules: a non-negative site, a non-empty access set without repeats.
/// getSite() is unsigned (I64Attr's accessor); the attribute's signed value is checked.
LogicalResult KernelOp::verify() {
  return SiteEntryAttr::verify([&] { return emitOpError(); }, getSiteAttr().getInt(), getPath(),
                               getPhase(), getAccessFlags(),
                               FlatSymbolRefAttr::get(getSymNameAttr()));
}

/// `[read, write]`: a kernel's access set as bare keywords.
ParseResult parseSiteAccessList(OpAsmParser &parser, ArrayAttr &access) {
  SmallVector<Attribute> flags;
  auto parseOne = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef name;
    if (parser.parseKeyword(&name))
      return failure();
    std::optional<SiteAccess> flag = symbolizeSiteAccess(name);
    if (!flag)
      return parser.emitError(loc, "unknown access '")
             << name << "' (expected read, write or skip)";
    flags.push_back(SiteAccessAttr::get(parser.getContext(), *flag));
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, parseOne))
    return failure();
  access = parser.getBuilder().getArrayAttr(flags);
  return success();
}

void printSiteAccessList(OpAsmPrinter &printer, KernelOp, ArrayAttr access) {
  printer << '[';
  llvm::interleaveComma(access.getAsRange<SiteAccessAttr>(), printer, [&](SiteAccessAttr flag) {
    printer << stringifySiteAccess(flag.getValue());
  });
  printer << ']';
}

} // namespace nnsc::nns
