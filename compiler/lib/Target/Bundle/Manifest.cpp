//===- Manifest.cpp - reading and verifying nnsc.manifest -----------------===//

#include "ManifestReader.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"

#include <set>

using namespace mlir;

namespace nnsc::bundle {

std::optional<ParamDesc> ManifestReader::readParam(Attribute attr, const std::string &where) {
  std::optional<DictionaryAttr> dict = asDict(attr, where);
  if (!dict)
    return std::nullopt;
  ParamDesc param;
  std::optional<std::string> name = getString(*dict, where, "name");
  std::optional<abi::DType> dtype = name ? getDType(*dict, where) : std::nullopt;
  std::optional<std::vector<int64_t>> shape =
      dtype ? getShape(*dict, where, /*allowTokens=*/false) : std::nullopt;
  if (!shape)
    return std::nullopt;
  param.name = *name;
  param.dtype = *dtype;
  param.shape = *shape;
  if (Attribute value = dict->get("default")) {
    auto dense = dyn_cast<DenseElementsAttr>(value);
    if (!dense) {
      error(field(where, "default")) << "expected dense elements, got " << value;
      return std::nullopt;
    }
    auto type = cast<ShapedType>(dense.getType());
    Type elementType = type.getElementType();
    bool dtypeMatches = false;
    switch (param.dtype) {
    case abi::DType::F32:
      dtypeMatches = elementType.isF32();
      break;
    case abi::DType::BF16:
      dtypeMatches = elementType.isBF16();
      break;
    case abi::DType::F16:
      dtypeMatches = elementType.isF16();
      break;
    case abi::DType::I64:
      dtypeMatches = elementType.isSignlessInteger(64);
      break;
    case abi::DType::Bool:
      dtypeMatches = elementType.isSignlessInteger(1);
      break;
    }
    if (!dtypeMatches || type.getShape() != llvm::ArrayRef<int64_t>(param.shape)) {
      error(field(where, "default")) << "type " << type << " does not match the param's dtype "
                                     << "and shape";
      return std::nullopt;
    }
    param.defaultValue = dense;
  }
  return param;
}

std::optional<SaveDesc> ManifestReader::readSave(Attribute attr, const std::string &where) {
  std::optional<DictionaryAttr> dict = asDict(attr, where);
  if (!dict)
    return std::nullopt;
  std::optional<std::string> name = getString(*dict, where, "name");
  std::optional<abi::DType> dtype = name ? getDType(*dict, where) : std::nullopt;
  std::optional<std::vector<int64_t>> shape =
      dtype ? getShape(*dict, where, /*allowTokens=*/true) : std::nullopt;
  std::optional<uint32_t> flags =
      shape ? getFlags(*dict, where, "flags", {{"per_step", abi::kSavePerStep}}) : std::nullopt;
  if (!flags)
    return std::nullopt;
  return SaveDesc{*name, *dtype, *shape, *flags};
}

std::optional<SiteEntry> ManifestReader::readSite(Attribute attr, const std::string &where) {
  std::optional<DictionaryAttr> dict = asDict(attr, where);
  if (!dict)
    return std::nullopt;
  std::optional<int64_t> site = getInt(*dict, where, "site", 0);
  std::optional<std::string> path = site ? getString(*dict, where, "path") : std::nullopt;
  std::optional<std::string> phaseName = path ? getString(*dict, where, "phase") : std::nullopt;
  if (!phaseName)
    return std::nullopt;
  std::optional<abi::Phase> phase = llvm::StringSwitch<std::optional<abi::Phase>>(*phaseName)
                                        .Case("forward", abi::Phase::Forward)
                                        .Case("logits", abi::Phase::Logits)
                                        .Case("samples", abi::Phase::Samples)
                                        .Case("result", abi::Phase::Result)
                                        .Default(std::nullopt);
  if (!phase) {
    error(field(where, "phase")) << "unknown phase '" << *phaseName
                                 << "' (expected forward, logits, samples or result)";
    return std::nullopt;
  }
  std::optional<uint32_t> access = getFlags(
      *dict, where, "access",
      {{"read", abi::kAccessRead}, {"write", abi::kAccessWrite}, {"skip", abi::kAccessSkip}});
  if (!access)
    return std::nullopt;
  if (*access == 0) {
    error(field(where, "access")) << "a site entry must read, write or skip";
    return std::nullopt;
  }
  Attribute kernelAttr = require(*dict, where, "kernel");
  if (!kernelAttr)
    return std::nullopt;
  auto kernel = dyn_cast<FlatSymbolRefAttr>(kernelAttr);
  if (!kernel) {
    error(field(where, "kernel")) << "expected a symbol reference, got " << kernelAttr;
    return std::nullopt;
  }
  auto func =
      dyn_cast_or_null<FunctionOpInterface>(SymbolTable::lookupSymbolIn(module, kernel.getAttr()));
  if (!func || func.isExternal()) {
    error(field(where, "kernel")) << "no kernel function " << kernel << " in the module";
    return std::nullopt;
  }
  if (!hasKernelSignature(func)) {
    error(field(where, "kernel")) << "kernel " << kernel << " has type " << func.getFunctionType()
                                  << ", expected (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32";
    return std::nullopt;
  }
  return SiteEntry{static_cast<int32_t>(*site), *path, *phase, *access, kernel.getValue().str()};
}

std::optional<TraceDesc> ManifestReader::readTrace(Attribute attr, const std::string &where) {
  std::optional<DictionaryAttr> dict = asDict(attr, where);
  if (!dict)
    return std::nullopt;
  TraceDesc trace;
  std::optional<std::string> name = getString(*dict, where, "name");
  std::optional<int64_t> numInvokes = name ? getInt(*dict, where, "num_invokes", 0) : std::nullopt;
  std::optional<ArrayAttr> invokeNames =
      numInvokes ? getArray(*dict, where, "invoke_names") : std::nullopt;
  if (!invokeNames)
    return std::nullopt;
  trace.name = *name;
  trace.numInvokes = static_cast<int32_t>(*numInvokes);
  if (static_cast<int64_t>(invokeNames->size()) != *numInvokes) {
    error(field(where, "invoke_names"))
        << "has " << invokeNames->size() << " names for " << *numInvokes << " invokes";
    return std::nullopt;
  }
  for (auto [index, attr] : llvm::enumerate(*invokeNames)) {
    auto str = dyn_cast<StringAttr>(attr);
    if (!str) {
      error(element(where, "invoke_names", index)) << "expected a string, got " << attr;
      return std::nullopt;
    }
    trace.invokeNames.push_back(str.getValue().str());
  }
  std::optional<uint32_t> flags = getFlags(*dict, where, "flags",
                                           {{"reads_prompt", abi::kTraceReadsPrompt},
                                            {"writes_prompt", abi::kTraceWritesPrompt},
                                            {"stops", abi::kTraceStops}});
  std::optional<int64_t> frameBytes = flags ? getInt(*dict, where, "frame_bytes", 0) : std::nullopt;
  std::optional<std::vector<int64_t>> heapSlots =
      frameBytes ? getFrameHeapSlots(*dict, where, *frameBytes) : std::nullopt;
  std::optional<ArrayAttr> params = heapSlots ? getArray(*dict, where, "params") : std::nullopt;
  std::optional<ArrayAttr> saves = params ? getArray(*dict, where, "saves") : std::nullopt;
  std::optional<ArrayAttr> sites = saves ? getArray(*dict, where, "sites") : std::nullopt;
  if (!sites)
    return std::nullopt;
  trace.flags = *flags;
  trace.frameBytes = *frameBytes;
  trace.frameHeapSlots = std::move(*heapSlots);

  std::set<std::string> names;
  for (auto [index, attr] : llvm::enumerate(*params)) {
    std::string at = element(where, "params", index);
    std::optional<ParamDesc> param = readParam(attr, at);
    if (!param)
      return std::nullopt;
    if (!names.insert(param->name).second) {
      error(field(at, "name")) << "duplicate param '" << param->name << "'";
      return std::nullopt;
    }
    trace.params.push_back(std::move(*param));
  }
  names.clear();
  for (auto [index, attr] : llvm::enumerate(*saves)) {
    std::string at = element(where, "saves", index);
    std::optional<SaveDesc> save = readSave(attr, at);
    if (!save)
      return std::nullopt;
    if (!names.insert(save->name).second) {
      error(field(at, "name")) << "duplicate save '" << save->name << "'";
      return std::nullopt;
    }
    trace.saves.push_back(std::move(*save));
  }
  for (auto [index, attr] : llvm::enumerate(*sites)) {
    std::string at = element(where, "sites", index);
    std::optional<SiteEntry> site = readSite(attr, at);
    if (!site)
      return std::nullopt;
    if (!trace.sites.empty() && trace.sites.back().site >= site->site) {
      error(field(at, "site")) << "site " << site->site << " follows site "
                               << trace.sites.back().site
                               << ": entries must be sorted by site index without repeats";
      return std::nullopt;
    }
    trace.sites.push_back(std::move(*site));
  }
  return trace;
}

std::optional<Manifest> ManifestReader::read(DictionaryAttr root) {
  Manifest manifest;
  std::optional<std::string> sourceHash = getString(root, "", "source_hash");
  std::optional<std::string> arch = sourceHash ? getString(root, "", "arch") : std::nullopt;
  if (!arch)
    return std::nullopt;
  manifest.sourceHash = *sourceHash;
  manifest.arch = *arch;

  Attribute hashAttr = require(root, "", "schema_hash");
  if (!hashAttr)
    return std::nullopt;
  auto hash = dyn_cast<IntegerAttr>(hashAttr);
  if (!hash || !hash.getType().isUnsignedInteger(64)) {
    error("schema_hash") << "expected a ui64 integer, got " << hashAttr;
    return std::nullopt;
  }
  manifest.schemaHash = hash.getValue().getZExtValue();

  Attribute dimsAttr = require(root, "", "dims");
  if (!dimsAttr)
    return std::nullopt;
  std::optional<DictionaryAttr> dims = asDict(dimsAttr, "dims");
  if (!dims)
    return std::nullopt;
  std::pair<StringRef, int64_t *> dimFields[] = {
      {"hidden", &manifest.hidden},    {"intermediate", &manifest.intermediate},
      {"layers", &manifest.layers},    {"heads", &manifest.heads},
      {"kv_heads", &manifest.kvHeads}, {"head_dim", &manifest.headDim},
      {"vocab", &manifest.vocab}};
  for (auto [name, slot] : dimFields) {
    std::optional<int64_t> value = getInt(*dims, "dims", name, 1);
    if (!value)
      return std::nullopt;
    *slot = *value;
  }

  std::optional<ArrayAttr> traces = getArray(root, "", "traces");
  if (!traces)
    return std::nullopt;
  std::set<std::string> names;
  for (auto [index, attr] : llvm::enumerate(*traces)) {
    std::string at = element("", "traces", index);
    std::optional<TraceDesc> trace = readTrace(attr, at);
    if (!trace)
      return std::nullopt;
    if (!names.insert(trace->name).second) {
      error(field(at, "name")) << "duplicate trace '" << trace->name << "'";
      return std::nullopt;
    }
    manifest.traces.push_back(std::move(*trace));
  }
  return manifest;
}

bool hasKernelSignature(FunctionOpInterface func) {
  auto type = dyn_cast<FunctionType>(func.getFunctionType());
  if (!type || type.getNumInputs() != 4 || type.getNumResults() != 1)
    return false;
  auto isPtr = [](Type t) { return isa<LLVM::LLVMPointerType>(t); };
  return isPtr(type.getInput(0)) && isPtr(type.getInput(1)) &&
         type.getInput(2).isSignlessInteger(32) && isPtr(type.getInput(3)) &&
         type.getResult(0).isSignlessInteger(32);
}

std::optional<Manifest> parseManifest(ModuleOp module) {
  Attribute attr = module->getAttr(kManifestAttrName);
  if (!attr) {
    module.emitError() << "missing module attribute '" << kManifestAttrName
                       << "' (kernel-level IR carries the bundle manifest there)";
    return std::nullopt;
  }
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict) {
    module.emitError() << "'" << kManifestAttrName << "' must be a dictionary, got " << attr;
    return std::nullopt;
  }
  return ManifestReader(module).read(dict);
}

} // namespace nnsc::bundle
