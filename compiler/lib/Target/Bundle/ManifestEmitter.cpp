//===- ManifestEmitter.cpp - the manifest as LLVM constants ---------------===//

#include "nnsc/Target/Bundle/ManifestEmitter.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Support/Endian.h"

namespace nnsc::bundle {

ManifestTypes ManifestTypes::get(llvm::LLVMContext &context) {
  auto *ptr = llvm::PointerType::get(context, 0);
  auto *i32 = llvm::Type::getInt32Ty(context);
  auto *i64 = llvm::Type::getInt64Ty(context);
  auto *shape = llvm::ArrayType::get(i64, abi::kMaxRank);
  auto named = [&](llvm::StringRef name, llvm::ArrayRef<llvm::Type *> fields) {
    if (llvm::StructType *type = llvm::StructType::getTypeByName(context, name))
      return type;
    return llvm::StructType::create(context, fields, name);
  };
  ManifestTypes types;
  types.paramDesc = named("nnsc_param_desc", {ptr, i32, i32, shape, ptr});
  types.saveDesc = named("nnsc_save_desc", {ptr, i32, i32, shape, i32});
  types.siteEntry = named("nnsc_site_entry", {i32, ptr, i32, i32, ptr});
  types.traceDesc =
      named("nnsc_trace_desc", {ptr, i32, ptr, i32, i64, i32, ptr, i32, ptr, i32, ptr, i32, ptr});
  types.bundle =
      named("nnsc_bundle", {i32, ptr, ptr, i64, i64, i64, i64, i64, i64, i64, i64, i32, ptr, ptr});
  types.cudaKernel = named("nnsc_cuda_kernel", {ptr, ptr, i64, i32});
  types.cudaCode = named("nnsc_cuda_code", {ptr, ptr, i32, ptr, i32, ptr});
  return types;
}

namespace {

/// Builds the constant tables of one module; every global is private and constant.
class Emitter {
public:
  explicit Emitter(llvm::Module &module)
      : module(module), context(module.getContext()), types(ManifestTypes::get(context)),
        ptr(llvm::PointerType::get(context, 0)), i32(llvm::Type::getInt32Ty(context)),
        i64(llvm::Type::getInt64Ty(context)) {}

  llvm::Constant *bundle(nns::ManifestAttr manifest, const DeviceCode *device);

private:
  llvm::Constant *string(llvm::StringRef text, const llvm::Twine &name);
  llvm::Constant *global(llvm::Constant *init, const llvm::Twine &name);
  /// A private constant array of `elements` of `type`, or null when empty.
  llvm::Constant *table(llvm::Type *type, llvm::ArrayRef<llvm::Constant *> elements,
                        const llvm::Twine &name);
  llvm::Constant *shape(llvm::ArrayRef<int64_t> dims);
  llvm::Constant *defaultValue(nns::ParamDescAttr param, const llvm::Twine &name);
  llvm::Constant *trace(nns::TraceDescAttr trace, unsigned index);
  llvm::Constant *cudaCode(const DeviceCode &device);
  llvm::Constant *c32(int64_t v) { return llvm::ConstantInt::get(i32, v); }
  llvm::Constant *c64(int64_t v) { return llvm::ConstantInt::get(i64, v); }

  llvm::Module &module;
  llvm::LLVMContext &context;
  ManifestTypes types;
  llvm::PointerType *ptr;
  llvm::IntegerType *i32, *i64;
};

llvm::Constant *Emitter::global(llvm::Constant *init, const llvm::Twine &name) {
  auto *var = new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::PrivateLinkage, init, name);
  var->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return var;
}

llvm::Constant *Emitter::string(llvm::StringRef text, const llvm::Twine &name) {
  return global(llvm::ConstantDataArray::getString(context, text), name);
}

llvm::Constant *Emitter::table(llvm::Type *type, llvm::ArrayRef<llvm::Constant *> elements,
                               const llvm::Twine &name) {
  if (elements.empty())
    return llvm::ConstantPointerNull::get(ptr);
  auto *arrayType = llvm::ArrayType::get(type, elements.size());
  return global(llvm::ConstantArray::get(arrayType, elements), name);
}

llvm::Constant *Emitter::shape(llvm::ArrayRef<int64_t> dims) {
  llvm::SmallVector<llvm::Constant *, 4> values;
  for (int64_t d = 0; d < abi::kMaxRank; ++d)
    values.push_back(c64(d < static_cast<int64_t>(dims.size()) ? dims[d] : 0));
  return llvm::ConstantArray::get(llvm::ArrayType::get(i64, abi::kMaxRank), values);
}

/// The default as raw little-endian bytes of the ABI dtype (row-major, `bool` one byte each).
llvm::Constant *Emitter::defaultValue(nns::ParamDescAttr param, const llvm::Twine &name) {
  mlir::DenseElementsAttr value = param.getDefaultValue();
  if (!value)
    return llvm::ConstantPointerNull::get(ptr);
  mlir::Type elementType = value.getElementType();
  int64_t width = abi::dtypeSize(dtypeOf(elementType));
  std::vector<uint8_t> bytes;
  auto push = [&](uint64_t bits) {
    for (int64_t b = 0; b < width; ++b)
      bytes.push_back(static_cast<uint8_t>(bits >> (8 * b)));
  };
  if (llvm::isa<mlir::FloatType>(elementType)) {
    for (const llvm::APFloat &element : value.getValues<llvm::APFloat>())
      push(element.bitcastToAPInt().getZExtValue());
  } else {
    for (const llvm::APInt &element : value.getValues<llvm::APInt>())
      push(element.getZExtValue());
  }
  auto *data = llvm::ConstantDataArray::get(context, llvm::ArrayRef<uint8_t>(bytes));
  auto *var = llvm::cast<llvm::GlobalVariable>(global(data, name));
  var->setAlignment(llvm::Align(8));
  return var;
}

llvm::Constant *Emitter::trace(nns::TraceDescAttr trace, unsigned index) {
  std::string prefix = "nnsc_trace" + std::to_string(index);
  llvm::SmallVector<llvm::Constant *> invokeNames, heapSlots, params, saves, sites;
  for (auto [i, name] : llvm::enumerate(trace.getInvokeNames()))
    invokeNames.push_back(string(name.getValue(), prefix + ".invoke" + llvm::Twine(i)));
  for (int64_t offset : trace.getFrameHeapSlots())
    heapSlots.push_back(c64(offset));
  for (auto [i, param] : llvm::enumerate(trace.getParams()))
    params.push_back(llvm::ConstantStruct::get(
        types.paramDesc, {string(param.getName(), prefix + ".param" + llvm::Twine(i)),
                          c32(static_cast<int32_t>(dtypeOf(param.getType().getElementType()))),
                          c32(param.getType().getRank()), shape(abiShape(param.getType())),
                          defaultValue(param, prefix + ".default" + llvm::Twine(i))}));
  for (auto [i, save] : llvm::enumerate(trace.getSaves()))
    saves.push_back(llvm::ConstantStruct::get(
        types.saveDesc, {string(save.getName(), prefix + ".save" + llvm::Twine(i)),
                         c32(static_cast<int32_t>(dtypeOf(save.getType().getElementType()))),
                         c32(save.getType().getRank()), shape(abiShape(save.getType())),
                         c32(abiFlags(save.getFlags()))}));
  for (auto [i, site] : llvm::enumerate(trace.getSites())) {
    llvm::Function *kernel = module.getFunction(site.getKernel().getValue());
    assert(kernel && "the manifest's kernels are verified before emission");
    kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
    sites.push_back(llvm::ConstantStruct::get(
        types.siteEntry,
        {c32(site.getSite()), string(site.getPath(), prefix + ".site" + llvm::Twine(i)),
         c32(static_cast<int32_t>(abiPhase(site.getPhase()))), c32(abiFlags(site.getAccess())),
         kernel}));
  }
  return llvm::ConstantStruct::get(
      types.traceDesc,
      {string(trace.getName(), prefix + ".name"), c32(trace.getInvokeNames().size()),
       table(ptr, invokeNames, prefix + ".invoke_names"), c32(abiFlags(trace.getFlags())),
       c64(trace.getFrameBytes()), c32(trace.getFrameHeapSlots().size()),
       table(i64, heapSlots, prefix + ".frame_heap_slots"), c32(trace.getParams().size()),
       table(types.paramDesc, params, prefix + ".params"), c32(trace.getSaves().size()),
       table(types.saveDesc, saves, prefix + ".saves"), c32(trace.getSites().size()),
       table(types.siteEntry, sites, prefix + ".sites")});
}

llvm::Constant *Emitter::cudaCode(const DeviceCode &device) {
  llvm::SmallVector<llvm::Constant *> kernels, messages;
  for (auto [i, kernel] : llvm::enumerate(device.kernels)) {
    llvm::Function *host = module.getFunction(kernel.hostKernel);
    assert(host && "every device kernel copies a host kernel of the bundle");
    kernels.push_back(llvm::ConstantStruct::get(
        types.cudaKernel, {host, string(kernel.entry, "nnsc_cuda_entry" + llvm::Twine(i)),
                           c64(kernel.scratchBytes), c32(kernel.numCalls)}));
  }
  for (auto [i, message] : llvm::enumerate(device.messages))
    messages.push_back(string(message, "nnsc_cuda_message" + llvm::Twine(i)));
  return global(llvm::ConstantStruct::get(
                    types.cudaCode,
                    {string(device.ptx, "nnsc_ptx"), string(device.chip, "nnsc_cuda_chip"),
                     c32(kernels.size()), table(types.cudaKernel, kernels, "nnsc_cuda_kernels"),
                     c32(messages.size()), table(ptr, messages, "nnsc_cuda_messages")}),
                "nnsc_cuda_code");
}

llvm::Constant *Emitter::bundle(nns::ManifestAttr manifest, const DeviceCode *device) {
  llvm::SmallVector<llvm::Constant *> traces;
  for (auto [i, desc] : llvm::enumerate(manifest.getTraces()))
    traces.push_back(trace(desc, i));
  llvm::Constant *cuda = device ? cudaCode(*device) : llvm::ConstantPointerNull::get(ptr);
  nns::ModelDimsAttr dims = manifest.getDims();
  llvm::Constant *init = llvm::ConstantStruct::get(
      types.bundle,
      {c32(abi::kVersion), string(manifest.getSourceHash(), "nnsc_source_hash"),
       string(manifest.getArch(), "nnsc_arch"), c64(static_cast<int64_t>(manifest.getSchemaHash())),
       c64(dims.getHidden()), c64(dims.getIntermediate()), c64(dims.getLayers()),
       c64(dims.getHeads()), c64(dims.getKvHeads()), c64(dims.getHeadDim()), c64(dims.getVocab()),
       c32(manifest.getTraces().size()), table(types.traceDesc, traces, "nnsc_trace_descs"), cuda});
  return global(init, "nnsc_bundle");
}

} // namespace

void emitManifest(llvm::Module &module, nns::ManifestAttr manifest, const DeviceCode *device) {
  llvm::Constant *bundle = Emitter(module).bundle(manifest, device);
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::PointerType::get(context, 0), false);
  auto *query =
      llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, abi::kQuerySymbol, module);
  query->setVisibility(llvm::GlobalValue::DefaultVisibility);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", query));
  builder.CreateRet(bundle);
}

} // namespace nnsc::bundle
