//===- ABILayout.h - byte layout of the bundle ABI structures ---*- C++ -*-===//
//
// The one place the compiler states where the fields of BundleABI.h's structures live on the
// 64-bit targets it emits code for (x86-64 SysV and NVPTX64 agree: natural alignment, 4-byte
// C enums). ABIBuilder addresses fields through these constants and ManifestEmitter lays out
// its LLVM struct types to match them; test/Unit/Bundle checks both against `offsetof` and
// `sizeof` of the real header.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_ABILAYOUT_H
#define NNSC_TARGET_BUNDLE_ABILAYOUT_H

#include <cstdint>

namespace nnsc::abi {

/// NNSC_BUNDLE_ABI_VERSION of the header this layout describes.
constexpr uint32_t kVersion = 3;
constexpr const char *kQuerySymbol = "nnsc_bundle_query";
constexpr int64_t kMaxRank = 4;
constexpr int64_t kDimTokens = -1;

/// nnsc_dtype values.
enum class DType : int32_t { F32 = 0, BF16 = 1, F16 = 2, I64 = 3, Bool = 4 };

/// nnsc_phase values.
enum class Phase : int32_t { Forward = 0, Logits = 1, Samples = 2, Result = 3 };

constexpr uint32_t kAccessRead = 1u << 0;
constexpr uint32_t kAccessWrite = 1u << 1;
constexpr uint32_t kAccessSkip = 1u << 2;
constexpr uint32_t kSavePerStep = 1u << 0;
constexpr uint32_t kTraceReadsPrompt = 1u << 0;
constexpr uint32_t kTraceWritesPrompt = 1u << 1;
constexpr uint32_t kTraceStops = 1u << 2;

/// struct nnsc_tensor
namespace tensor {
constexpr int64_t kData = 0, kDtype = 8, kRank = 12, kShape = 16, kStrides = 48, kSize = 80;
} // namespace tensor

/// struct nnsc_group
namespace group {
constexpr int64_t kRow = 0, kRows = 8, kPosition = 16, kStep = 24, kInvoke = 32, kFrame = 40,
                  kParams = 48, kRequest = 56, kSize = 64;
} // namespace group

/// struct nnsc_runtime
namespace runtime {
constexpr int64_t kCtx = 0, kCallModule = 8, kReportError = 16, kSave = 24, kStop = 32,
                  kFinish = 40, kSkip = 48, kSize = 56;
} // namespace runtime

/// struct nnsc_param_desc
namespace param_desc {
constexpr int64_t kName = 0, kDtype = 8, kRank = 12, kShape = 16, kDefaultValue = 48, kSize = 56;
} // namespace param_desc

/// struct nnsc_save_desc
namespace save_desc {
constexpr int64_t kName = 0, kDtype = 8, kRank = 12, kShape = 16, kFlags = 48, kSize = 56;
} // namespace save_desc

/// struct nnsc_site_entry
namespace site_entry {
constexpr int64_t kSite = 0, kSitePath = 8, kPhase = 16, kAccess = 20, kKernel = 24, kSize = 32;
} // namespace site_entry

/// struct nnsc_trace_desc
namespace trace_desc {
constexpr int64_t kName = 0, kNumInvokes = 8, kInvokeNames = 16, kFlags = 24, kFrameBytes = 32,
                  kNumParams = 40, kParams = 48, kNumSaves = 56, kSaves = 64, kNumSites = 72,
                  kSites = 80, kSize = 88;
} // namespace trace_desc

/// struct nnsc_bundle
namespace bundle {
constexpr int64_t kAbiVersion = 0, kSourceHash = 8, kArch = 16, kSchemaHash = 24, kHidden = 32,
                  kIntermediate = 40, kLayers = 48, kHeads = 56, kKvHeads = 64, kHeadDim = 72,
                  kVocab = 80, kNumTraces = 88, kTraces = 96, kCuda = 104, kSize = 112;
} // namespace bundle

/// struct nnsc_cuda_kernel
namespace cuda_kernel {
constexpr int64_t kHost = 0, kEntry = 8, kScratchBytes = 16, kNumCalls = 24, kSize = 32;
} // namespace cuda_kernel

/// struct nnsc_cuda_code
namespace cuda_code {
constexpr int64_t kPtx = 0, kChip = 8, kNumKernels = 16, kKernels = 24, kNumMessages = 32,
                  kMessages = 40, kSize = 48;
} // namespace cuda_code

/// nnsc_cuda_event_kind values.
enum class CUDAEvent : int32_t {
  Error = 0,
  Save = 1,
  Stop = 2,
  Finish = 3,
  CallModule = 4,
  Skip = 5
};

/// struct nnsc_cuda_event
namespace cuda_event {
constexpr int64_t kKind = 0, kIndex = 4, kRequest = 8, kStep = 16, kValue = 24, kOutput = 104,
                  kSize = 184;
} // namespace cuda_event

/// struct nnsc_cuda_status
namespace cuda_status {
constexpr int64_t kResume = 0, kModuleStatus = 4, kEvents = 8, kEventCapacity = 16, kNumEvents = 24,
                  kSink = 32, kSinkBytes = 40, kSinkUsed = 48, kModuleOutput = 56, kScratch = 64,
                  kSize = 72;
} // namespace cuda_status

/// Size in bytes of one element of `dtype`.
constexpr int64_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  }
  return 0;
}

} // namespace nnsc::abi

#endif // NNSC_TARGET_BUNDLE_ABILAYOUT_H
