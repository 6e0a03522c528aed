//===- ABILayoutTest.cpp - the compiler's ABI layout vs the C header ------===//
//
// ABILayout.h (used by ABIBuilder) and ManifestEmitter's LLVM struct types must describe the
// structures of BundleABI.h exactly; this compiles the real header as C++ and compares.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Target/Bundle/ABILayout.h"
#include "nnsc/Bundle/BundleABI.h"
#include "nnsc/Target/Bundle/ManifestEmitter.h"
#include "nnsc/Target/CPU/CPUTarget.h"

#include "llvm/IR/DataLayout.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace {

namespace layout = nnsc::abi;
namespace cpu = nnsc::cpu;
namespace bundle = nnsc::bundle;

TEST(ABILayout, VersionAndConstantsMatchHeader) {
  EXPECT_EQ(layout::kVersion, NNSC_BUNDLE_ABI_VERSION);
  EXPECT_STREQ(layout::kQuerySymbol, NNSC_BUNDLE_QUERY_SYMBOL);
  EXPECT_EQ(layout::kMaxRank, NNSC_MAX_RANK);
  EXPECT_EQ(layout::kDimTokens, NNSC_DIM_TOKENS);
  EXPECT_EQ(static_cast<int>(layout::DType::F32), NNSC_DTYPE_F32);
  EXPECT_EQ(static_cast<int>(layout::DType::BF16), NNSC_DTYPE_BF16);
  EXPECT_EQ(static_cast<int>(layout::DType::F16), NNSC_DTYPE_F16);
  EXPECT_EQ(static_cast<int>(layout::DType::I64), NNSC_DTYPE_I64);
  EXPECT_EQ(static_cast<int>(layout::DType::Bool), NNSC_DTYPE_BOOL);
  EXPECT_EQ(static_cast<int>(layout::Phase::Forward), NNSC_PHASE_FORWARD);
  EXPECT_EQ(static_cast<int>(layout::Phase::Logits), NNSC_PHASE_LOGITS);
  EXPECT_EQ(static_cast<int>(layout::Phase::Samples), NNSC_PHASE_SAMPLES);
  EXPECT_EQ(static_cast<int>(layout::Phase::Result), NNSC_PHASE_RESULT);
  EXPECT_EQ(layout::kAccessRead, NNSC_ACCESS_READ);
  EXPECT_EQ(layout::kAccessWrite, NNSC_ACCESS_WRITE);
  EXPECT_EQ(layout::kAccessSkip, NNSC_ACCESS_SKIP);
  EXPECT_EQ(layout::kSavePerStep, NNSC_SAVE_PER_STEP);
  EXPECT_EQ(layout::kTraceReadsPrompt, NNSC_TRACE_READS_PROMPT);
  EXPECT_EQ(layout::kTraceWritesPrompt, NNSC_TRACE_WRITES_PROMPT);
  EXPECT_EQ(layout::kTraceStops, NNSC_TRACE_STOPS);
}

TEST(ABILayout, InvocationStructOffsets) {
  EXPECT_EQ(layout::tensor::kData, offsetof(nnsc_tensor, data));
  EXPECT_EQ(layout::tensor::kDtype, offsetof(nnsc_tensor, dtype));
  EXPECT_EQ(layout::tensor::kRank, offsetof(nnsc_tensor, rank));
  EXPECT_EQ(layout::tensor::kShape, offsetof(nnsc_tensor, shape));
  EXPECT_EQ(layout::tensor::kStrides, offsetof(nnsc_tensor, strides));
  EXPECT_EQ(layout::tensor::kSize, sizeof(nnsc_tensor));

  EXPECT_EQ(layout::group::kRow, offsetof(nnsc_group, row));
  EXPECT_EQ(layout::group::kRows, offsetof(nnsc_group, rows));
  EXPECT_EQ(layout::group::kPosition, offsetof(nnsc_group, position));
  EXPECT_EQ(layout::group::kStep, offsetof(nnsc_group, step));
  EXPECT_EQ(layout::group::kInvoke, offsetof(nnsc_group, invoke));
  EXPECT_EQ(layout::group::kFrame, offsetof(nnsc_group, frame));
  EXPECT_EQ(layout::group::kParams, offsetof(nnsc_group, params));
  EXPECT_EQ(layout::group::kRequest, offsetof(nnsc_group, request));
  EXPECT_EQ(layout::group::kSize, sizeof(nnsc_group));

  EXPECT_EQ(layout::runtime::kCtx, offsetof(nnsc_runtime, ctx));
  EXPECT_EQ(layout::runtime::kCallModule, offsetof(nnsc_runtime, call_module));
  EXPECT_EQ(layout::runtime::kReportError, offsetof(nnsc_runtime, report_error));
  EXPECT_EQ(layout::runtime::kSave, offsetof(nnsc_runtime, save));
  EXPECT_EQ(layout::runtime::kStop, offsetof(nnsc_runtime, stop));
  EXPECT_EQ(layout::runtime::kFinish, offsetof(nnsc_runtime, finish));
  EXPECT_EQ(layout::runtime::kSkip, offsetof(nnsc_runtime, skip));
  EXPECT_EQ(layout::runtime::kSize, sizeof(nnsc_runtime));
}

TEST(ABILayout, ManifestStructOffsets) {
  EXPECT_EQ(layout::param_desc::kName, offsetof(nnsc_param_desc, name));
  EXPECT_EQ(layout::param_desc::kDtype, offsetof(nnsc_param_desc, dtype));
  EXPECT_EQ(layout::param_desc::kRank, offsetof(nnsc_param_desc, rank));
  EXPECT_EQ(layout::param_desc::kShape, offsetof(nnsc_param_desc, shape));
  EXPECT_EQ(layout::param_desc::kDefaultValue, offsetof(nnsc_param_desc, default_value));
  EXPECT_EQ(layout::param_desc::kSize, sizeof(nnsc_param_desc));

  EXPECT_EQ(layout::save_desc::kName, offsetof(nnsc_save_desc, name));
  EXPECT_EQ(layout::save_desc::kDtype, offsetof(nnsc_save_desc, dtype));
  EXPECT_EQ(layout::save_desc::kRank, offsetof(nnsc_save_desc, rank));
  EXPECT_EQ(layout::save_desc::kShape, offsetof(nnsc_save_desc, shape));
  EXPECT_EQ(layout::save_desc::kFlags, offsetof(nnsc_save_desc, flags));
  EXPECT_EQ(layout::save_desc::kSize, sizeof(nnsc_save_desc));

  EXPECT_EQ(layout::site_entry::kSite, offsetof(nnsc_site_entry, site));
  EXPECT_EQ(layout::site_entry::kSitePath, offsetof(nnsc_site_entry, site_path));
  EXPECT_EQ(layout::site_entry::kPhase, offsetof(nnsc_site_entry, phase));
  EXPECT_EQ(layout::site_entry::kAccess, offsetof(nnsc_site_entry, access));
  EXPECT_EQ(layout::site_entry::kKernel, offsetof(nnsc_site_entry, kernel));
  EXPECT_EQ(layout::site_entry::kSize, sizeof(nnsc_site_entry));

  EXPECT_EQ(layout::trace_desc::kName, offsetof(nnsc_trace_desc, name));
  EXPECT_EQ(layout::trace_desc::kNumInvokes, offsetof(nnsc_trace_desc, num_invokes));
  EXPECT_EQ(layout::trace_desc::kInvokeNames, offsetof(nnsc_trace_desc, invoke_names));
  EXPECT_EQ(layout::trace_desc::kFlags, offsetof(nnsc_trace_desc, flags));
  EXPECT_EQ(layout::trace_desc::kFrameBytes, offsetof(nnsc_trace_desc, frame_bytes));
  EXPECT_EQ(layout::trace_desc::kNumParams, offsetof(nnsc_trace_desc, num_params));
  EXPECT_EQ(layout::trace_desc::kParams, offsetof(nnsc_trace_desc, params));
  EXPECT_EQ(layout::trace_desc::kNumSaves, offsetof(nnsc_trace_desc, num_saves));
  EXPECT_EQ(layout::trace_desc::kSaves, offsetof(nnsc_trace_desc, saves));
  EXPECT_EQ(layout::trace_desc::kNumSites, offsetof(nnsc_trace_desc, num_sites));
  EXPECT_EQ(layout::trace_desc::kSites, offsetof(nnsc_trace_desc, sites));
  EXPECT_EQ(layout::trace_desc::kSize, sizeof(nnsc_trace_desc));

  EXPECT_EQ(layout::bundle::kAbiVersion, offsetof(nnsc_bundle, abi_version));
  EXPECT_EQ(layout::bundle::kSourceHash, offsetof(nnsc_bundle, source_hash));
  EXPECT_EQ(layout::bundle::kArch, offsetof(nnsc_bundle, arch));
  EXPECT_EQ(layout::bundle::kSchemaHash, offsetof(nnsc_bundle, schema_hash));
  EXPECT_EQ(layout::bundle::kHidden, offsetof(nnsc_bundle, hidden));
  EXPECT_EQ(layout::bundle::kIntermediate, offsetof(nnsc_bundle, intermediate));
  EXPECT_EQ(layout::bundle::kLayers, offsetof(nnsc_bundle, layers));
  EXPECT_EQ(layout::bundle::kHeads, offsetof(nnsc_bundle, heads));
  EXPECT_EQ(layout::bundle::kKvHeads, offsetof(nnsc_bundle, kv_heads));
  EXPECT_EQ(layout::bundle::kHeadDim, offsetof(nnsc_bundle, head_dim));
  EXPECT_EQ(layout::bundle::kVocab, offsetof(nnsc_bundle, vocab));
  EXPECT_EQ(layout::bundle::kNumTraces, offsetof(nnsc_bundle, num_traces));
  EXPECT_EQ(layout::bundle::kTraces, offsetof(nnsc_bundle, traces));
  EXPECT_EQ(layout::bundle::kCuda, offsetof(nnsc_bundle, cuda));
  EXPECT_EQ(layout::bundle::kSize, sizeof(nnsc_bundle));
}

TEST(ABILayout, CUDAOffsetsMatchHeader) {
  EXPECT_EQ(layout::cuda_kernel::kHost, offsetof(nnsc_cuda_kernel, host));
  EXPECT_EQ(layout::cuda_kernel::kEntry, offsetof(nnsc_cuda_kernel, entry));
  EXPECT_EQ(layout::cuda_kernel::kScratchBytes, offsetof(nnsc_cuda_kernel, scratch_bytes));
  EXPECT_EQ(layout::cuda_kernel::kNumCalls, offsetof(nnsc_cuda_kernel, num_calls));
  EXPECT_EQ(layout::cuda_kernel::kSize, sizeof(nnsc_cuda_kernel));

  EXPECT_EQ(layout::cuda_code::kPtx, offsetof(nnsc_cuda_code, ptx));
  EXPECT_EQ(layout::cuda_code::kChip, offsetof(nnsc_cuda_code, chip));
  EXPECT_EQ(layout::cuda_code::kNumKernels, offsetof(nnsc_cuda_code, num_kernels));
  EXPECT_EQ(layout::cuda_code::kKernels, offsetof(nnsc_cuda_code, kernels));
  EXPECT_EQ(layout::cuda_code::kNumMessages, offsetof(nnsc_cuda_code, num_messages));
  EXPECT_EQ(layout::cuda_code::kMessages, offsetof(nnsc_cuda_code, messages));
  EXPECT_EQ(layout::cuda_code::kSize, sizeof(nnsc_cuda_code));

  EXPECT_EQ(static_cast<int32_t>(layout::CUDAEvent::Error), NNSC_CUDA_EVENT_ERROR);
  EXPECT_EQ(static_cast<int32_t>(layout::CUDAEvent::Save), NNSC_CUDA_EVENT_SAVE);
  EXPECT_EQ(static_cast<int32_t>(layout::CUDAEvent::Stop), NNSC_CUDA_EVENT_STOP);
  EXPECT_EQ(static_cast<int32_t>(layout::CUDAEvent::Finish), NNSC_CUDA_EVENT_FINISH);
  EXPECT_EQ(static_cast<int32_t>(layout::CUDAEvent::Skip), NNSC_CUDA_EVENT_SKIP);
  EXPECT_EQ(static_cast<int32_t>(layout::CUDAEvent::CallModule), NNSC_CUDA_EVENT_CALL_MODULE);
  EXPECT_EQ(layout::cuda_event::kKind, offsetof(nnsc_cuda_event, kind));
  EXPECT_EQ(layout::cuda_event::kIndex, offsetof(nnsc_cuda_event, index));
  EXPECT_EQ(layout::cuda_event::kRequest, offsetof(nnsc_cuda_event, request));
  EXPECT_EQ(layout::cuda_event::kStep, offsetof(nnsc_cuda_event, step));
  EXPECT_EQ(layout::cuda_event::kValue, offsetof(nnsc_cuda_event, value));
  EXPECT_EQ(layout::cuda_event::kOutput, offsetof(nnsc_cuda_event, output));
  EXPECT_EQ(layout::cuda_event::kSize, sizeof(nnsc_cuda_event));

  EXPECT_EQ(layout::cuda_status::kResume, offsetof(nnsc_cuda_status, resume));
  EXPECT_EQ(layout::cuda_status::kModuleStatus, offsetof(nnsc_cuda_status, module_status));
  EXPECT_EQ(layout::cuda_status::kEvents, offsetof(nnsc_cuda_status, events));
  EXPECT_EQ(layout::cuda_status::kEventCapacity, offsetof(nnsc_cuda_status, event_capacity));
  EXPECT_EQ(layout::cuda_status::kNumEvents, offsetof(nnsc_cuda_status, num_events));
  EXPECT_EQ(layout::cuda_status::kSink, offsetof(nnsc_cuda_status, sink));
  EXPECT_EQ(layout::cuda_status::kSinkBytes, offsetof(nnsc_cuda_status, sink_bytes));
  EXPECT_EQ(layout::cuda_status::kSinkUsed, offsetof(nnsc_cuda_status, sink_used));
  EXPECT_EQ(layout::cuda_status::kModuleOutput, offsetof(nnsc_cuda_status, module_output));
  EXPECT_EQ(layout::cuda_status::kScratch, offsetof(nnsc_cuda_status, scratch));
  EXPECT_EQ(layout::cuda_status::kSize, sizeof(nnsc_cuda_status));
}

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

TEST(ABILayout, ManifestEmitterTypesMatchHeader) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = cpu::createTargetMachine({}, error);
  ASSERT_TRUE(machine) << error;
  llvm::DataLayout layout = machine->createDataLayout();
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
  EXPECT_EQ(offsets(layout, types.traceDesc),
            (std::vector<uint64_t>{
                offsetof(nnsc_trace_desc, name), offsetof(nnsc_trace_desc, num_invokes),
                offsetof(nnsc_trace_desc, invoke_names), offsetof(nnsc_trace_desc, flags),
                offsetof(nnsc_trace_desc, frame_bytes), offsetof(nnsc_trace_desc, num_params),
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

} // namespace
