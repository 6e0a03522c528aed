//===- ABILayoutTest.cpp - the compiler's ABI layout vs the C header ------===//
//
// ABILayout.h takes every offset from BundleABI.h (offsetof on this host), so the constants
// need no test of their own. What can still disagree with the header is ManifestEmitter's
// LLVM struct types, laid out by each target's data layout: this compares them, under the
// x86-64 and the NVPTX64 layouts, with offsetof/sizeof of the real header compiled as C++.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Target/Bundle/ABILayout.h"
#include "nnsc/Bundle/BundleABI.h"
#include "nnsc/Target/Bundle/ManifestEmitter.h"
#include "nnsc/Target/CPU/CPUTarget.h"

#include "llvm/IR/DataLayout.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace {

namespace cpu = nnsc::cpu;
namespace bundle = nnsc::bundle;

/// Field offsets of an LLVM struct type under the host's data layout, for comparison with
/// offsetof on the header.
std::vector<uint64_t> offsets(const llvm::DataLayout &layout, llvm::StructType *type) {
  const llvm::StructLayout *structLayout = layout.getStructLayout(type);
  std::vector<uint64_t> result;
  for (unsigned i = 0; i < type->getNumElements(); ++i)
    result.push_back(structLayout->getElementOffset(i));
  result.push_back(structLayout->getSizeInBytes());
  return result;
}

/// The data layouts the bundle's code is emitted for: the host CPU's and NVPTX64's.
std::vector<std::pair<std::string, llvm::DataLayout>> targetLayouts() {
  std::vector<std::pair<std::string, llvm::DataLayout>> layouts;
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = cpu::createTargetMachine({}, error);
  EXPECT_TRUE(machine) << error;
  if (machine)
    layouts.emplace_back("x86-64", machine->createDataLayout());
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  const llvm::Triple triple("nvptx64-nvidia-cuda");
  const llvm::Target *nvptx = llvm::TargetRegistry::lookupTarget(triple, error);
  EXPECT_TRUE(nvptx) << error;
  if (nvptx) {
    std::unique_ptr<llvm::TargetMachine> device(
        nvptx->createTargetMachine(triple, "sm_90", "", {}, std::nullopt));
    layouts.emplace_back("nvptx64", device->createDataLayout());
  }
  return layouts;
}

/// ManifestEmitter's struct types under `layout` against the header.
void expectManifestTypesMatchHeader(const llvm::DataLayout &layout) {
  llvm::LLVMContext context;
  bundle::ManifestTypes types = bundle::ManifestTypes::get(context);

  EXPECT_EQ(
      offsets(layout, types.paramDesc),
      (std::vector<uint64_t>{offsetof(nnsc_param_desc, name), offsetof(nnsc_param_desc, dtype),
                             offsetof(nnsc_param_desc, rank), offsetof(nnsc_param_desc, shape),
                             offsetof(nnsc_param_desc, default_value), sizeof(nnsc_param_desc)}));
  EXPECT_EQ(offsets(layout, types.saveDesc),
            (std::vector<uint64_t>{offsetof(nnsc_save_desc, name), offsetof(nnsc_save_desc, dtype),
                                   offsetof(nnsc_save_desc, rank), offsetof(nnsc_save_desc, shape),
                                   offsetof(nnsc_save_desc, flags), sizeof(nnsc_save_desc)}));
  EXPECT_EQ(
      offsets(layout, types.siteEntry),
      (std::vector<uint64_t>{offsetof(nnsc_site_entry, site), offsetof(nnsc_site_entry, site_path),
                             offsetof(nnsc_site_entry, phase), offsetof(nnsc_site_entry, access),
                             offsetof(nnsc_site_entry, kernel), sizeof(nnsc_site_entry)}));
  EXPECT_EQ(
      offsets(layout, types.traceDesc),
      (std::vector<uint64_t>{
          offsetof(nnsc_trace_desc, name), offsetof(nnsc_trace_desc, num_invokes),
          offsetof(nnsc_trace_desc, invoke_names), offsetof(nnsc_trace_desc, flags),
          offsetof(nnsc_trace_desc, frame_bytes), offsetof(nnsc_trace_desc, num_frame_heap_slots),
          offsetof(nnsc_trace_desc, frame_heap_slots), offsetof(nnsc_trace_desc, num_params),
          offsetof(nnsc_trace_desc, params), offsetof(nnsc_trace_desc, num_saves),
          offsetof(nnsc_trace_desc, saves), offsetof(nnsc_trace_desc, num_sites),
          offsetof(nnsc_trace_desc, sites), sizeof(nnsc_trace_desc)}));
  EXPECT_EQ(offsets(layout, types.bundle),
            (std::vector<uint64_t>{
                offsetof(nnsc_bundle, abi_version), offsetof(nnsc_bundle, source_hash),
                offsetof(nnsc_bundle, arch), offsetof(nnsc_bundle, schema_hash),
                offsetof(nnsc_bundle, hidden), offsetof(nnsc_bundle, intermediate),
                offsetof(nnsc_bundle, layers), offsetof(nnsc_bundle, heads),
                offsetof(nnsc_bundle, kv_heads), offsetof(nnsc_bundle, head_dim),
                offsetof(nnsc_bundle, vocab), offsetof(nnsc_bundle, num_traces),
                offsetof(nnsc_bundle, traces), offsetof(nnsc_bundle, cuda), sizeof(nnsc_bundle)}));
  EXPECT_EQ(
      offsets(layout, types.cudaKernel),
      (std::vector<uint64_t>{offsetof(nnsc_cuda_kernel, host), offsetof(nnsc_cuda_kernel, entry),
                             offsetof(nnsc_cuda_kernel, scratch_bytes),
                             offsetof(nnsc_cuda_kernel, num_calls), sizeof(nnsc_cuda_kernel)}));
  EXPECT_EQ(offsets(layout, types.cudaCode),
            (std::vector<uint64_t>{offsetof(nnsc_cuda_code, ptx), offsetof(nnsc_cuda_code, chip),
                                   offsetof(nnsc_cuda_code, num_kernels),
                                   offsetof(nnsc_cuda_code, kernels),
                                   offsetof(nnsc_cuda_code, num_messages),
                                   offsetof(nnsc_cuda_code, messages), sizeof(nnsc_cuda_code)}));
}

TEST(ABILayout, ManifestEmitterTypesMatchHeader) {
  for (const auto &[name, layout] : targetLayouts()) {
    SCOPED_TRACE(name);
    expectManifestTypesMatchHeader(layout);
  }
}

} // namespace
