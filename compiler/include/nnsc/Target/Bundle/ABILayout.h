//===- ABILayout.h - byte layout of the bundle ABI structures ---*- C++ -*-===//
//
// Where the fields of BundleABI.h's structures live, for the code the compiler emits:
// ABIBuilder addresses fields through these constants and ManifestEmitter lays out its LLVM
// struct types to match them (test/Unit/Bundle/ABILayoutTest.cpp checks the struct types).
// Nothing here is written by hand: every offset, size and enum value is taken from the
// runtime's header itself (offsetof, sizeof), so the header is the one statement of the
// contract. That holds for the targets because the host computing these is LP64 like both of
// them (x86-64 SysV and NVPTX64: natural alignment, 4-byte C enums), asserted below.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TARGET_BUNDLE_ABILAYOUT_H
#define NNSC_TARGET_BUNDLE_ABILAYOUT_H

#include "nnsc/Bundle/BundleABI.h"

#include <cstddef>
#include <cstdint>

namespace nnsc::abi {

static_assert(sizeof(void *) == 8 && sizeof(nnsc_dtype) == 4 && alignof(int64_t) == 8,
              "the bundle layout is taken from this host's; it must be LP64 like the targets");

constexpr uint32_t kVersion = NNSC_BUNDLE_ABI_VERSION;
constexpr const char *kQuerySymbol = NNSC_BUNDLE_QUERY_SYMBOL;
constexpr int64_t kMaxRank = NNSC_MAX_RANK;
constexpr int64_t kDimTokens = NNSC_DIM_TOKENS;

/// nnsc_dtype values.
enum class DType : int32_t {
  F32 = NNSC_DTYPE_F32,
  BF16 = NNSC_DTYPE_BF16,
  F16 = NNSC_DTYPE_F16,
  I64 = NNSC_DTYPE_I64,
  Bool = NNSC_DTYPE_BOOL
};

/// nnsc_phase values.
enum class Phase : int32_t {
  Forward = NNSC_PHASE_FORWARD,
  Logits = NNSC_PHASE_LOGITS,
  Samples = NNSC_PHASE_SAMPLES,
  Result = NNSC_PHASE_RESULT
};

constexpr uint32_t kAccessRead = NNSC_ACCESS_READ;
constexpr uint32_t kAccessWrite = NNSC_ACCESS_WRITE;
constexpr uint32_t kAccessSkip = NNSC_ACCESS_SKIP;
constexpr uint32_t kSavePerStep = NNSC_SAVE_PER_STEP;
constexpr uint32_t kTraceReadsPrompt = NNSC_TRACE_READS_PROMPT;
constexpr uint32_t kTraceWritesPrompt = NNSC_TRACE_WRITES_PROMPT;
constexpr uint32_t kTraceStops = NNSC_TRACE_STOPS;

/// struct nnsc_tensor
namespace tensor {
constexpr int64_t kData = offsetof(nnsc_tensor, data), kDtype = offsetof(nnsc_tensor, dtype),
                  kRank = offsetof(nnsc_tensor, rank), kShape = offsetof(nnsc_tensor, shape),
                  kStrides = offsetof(nnsc_tensor, strides), kSize = sizeof(nnsc_tensor);
} // namespace tensor

/// struct nnsc_group
namespace group {
constexpr int64_t kRow = offsetof(nnsc_group, row), kRows = offsetof(nnsc_group, rows),
                  kPosition = offsetof(nnsc_group, position), kStep = offsetof(nnsc_group, step),
                  kInvoke = offsetof(nnsc_group, invoke), kFrame = offsetof(nnsc_group, frame),
                  kParams = offsetof(nnsc_group, params), kRequest = offsetof(nnsc_group, request),
                  kSize = sizeof(nnsc_group);
} // namespace group

/// struct nnsc_runtime
namespace runtime {
constexpr int64_t kCtx = offsetof(nnsc_runtime, ctx),
                  kCallModule = offsetof(nnsc_runtime, call_module),
                  kReportError = offsetof(nnsc_runtime, report_error),
                  kSave = offsetof(nnsc_runtime, save), kStop = offsetof(nnsc_runtime, stop),
                  kFinish = offsetof(nnsc_runtime, finish), kSkip = offsetof(nnsc_runtime, skip),
                  kSize = sizeof(nnsc_runtime);
} // namespace runtime

/// struct nnsc_param_desc
namespace param_desc {
constexpr int64_t kName = offsetof(nnsc_param_desc, name),
                  kDtype = offsetof(nnsc_param_desc, dtype),
                  kRank = offsetof(nnsc_param_desc, rank),
                  kShape = offsetof(nnsc_param_desc, shape),
                  kDefaultValue = offsetof(nnsc_param_desc, default_value),
                  kSize = sizeof(nnsc_param_desc);
} // namespace param_desc

/// struct nnsc_save_desc
namespace save_desc {
constexpr int64_t kName = offsetof(nnsc_save_desc, name), kDtype = offsetof(nnsc_save_desc, dtype),
                  kRank = offsetof(nnsc_save_desc, rank), kShape = offsetof(nnsc_save_desc, shape),
                  kFlags = offsetof(nnsc_save_desc, flags), kSize = sizeof(nnsc_save_desc);
} // namespace save_desc

/// struct nnsc_site_entry
namespace site_entry {
constexpr int64_t kSite = offsetof(nnsc_site_entry, site),
                  kSitePath = offsetof(nnsc_site_entry, site_path),
                  kPhase = offsetof(nnsc_site_entry, phase),
                  kAccess = offsetof(nnsc_site_entry, access),
                  kKernel = offsetof(nnsc_site_entry, kernel), kSize = sizeof(nnsc_site_entry);
} // namespace site_entry

/// struct nnsc_trace_desc
namespace trace_desc {
constexpr int64_t kName = offsetof(nnsc_trace_desc, name),
                  kNumInvokes = offsetof(nnsc_trace_desc, num_invokes),
                  kInvokeNames = offsetof(nnsc_trace_desc, invoke_names),
                  kFlags = offsetof(nnsc_trace_desc, flags),
                  kFrameBytes = offsetof(nnsc_trace_desc, frame_bytes),
                  kNumFrameHeapSlots = offsetof(nnsc_trace_desc, num_frame_heap_slots),
                  kFrameHeapSlots = offsetof(nnsc_trace_desc, frame_heap_slots),
                  kNumParams = offsetof(nnsc_trace_desc, num_params),
                  kParams = offsetof(nnsc_trace_desc, params),
                  kNumSaves = offsetof(nnsc_trace_desc, num_saves),
                  kSaves = offsetof(nnsc_trace_desc, saves),
                  kNumSites = offsetof(nnsc_trace_desc, num_sites),
                  kSites = offsetof(nnsc_trace_desc, sites), kSize = sizeof(nnsc_trace_desc);
} // namespace trace_desc

/// struct nnsc_bundle
namespace bundle {
constexpr int64_t kAbiVersion = offsetof(nnsc_bundle, abi_version),
                  kSourceHash = offsetof(nnsc_bundle, source_hash),
                  kArch = offsetof(nnsc_bundle, arch),
                  kSchemaHash = offsetof(nnsc_bundle, schema_hash),
                  kHidden = offsetof(nnsc_bundle, hidden),
                  kIntermediate = offsetof(nnsc_bundle, intermediate),
                  kLayers = offsetof(nnsc_bundle, layers), kHeads = offsetof(nnsc_bundle, heads),
                  kKvHeads = offsetof(nnsc_bundle, kv_heads),
                  kHeadDim = offsetof(nnsc_bundle, head_dim), kVocab = offsetof(nnsc_bundle, vocab),
                  kNumTraces = offsetof(nnsc_bundle, num_traces),
                  kTraces = offsetof(nnsc_bundle, traces), kCuda = offsetof(nnsc_bundle, cuda),
                  kSize = sizeof(nnsc_bundle);
} // namespace bundle

/// struct nnsc_cuda_kernel
namespace cuda_kernel {
constexpr int64_t kHost = offsetof(nnsc_cuda_kernel, host),
                  kEntry = offsetof(nnsc_cuda_kernel, entry),
                  kScratchBytes = offsetof(nnsc_cuda_kernel, scratch_bytes),
                  kNumCalls = offsetof(nnsc_cuda_kernel, num_calls),
                  kSize = sizeof(nnsc_cuda_kernel);
} // namespace cuda_kernel

/// struct nnsc_cuda_code
namespace cuda_code {
constexpr int64_t kPtx = offsetof(nnsc_cuda_code, ptx), kChip = offsetof(nnsc_cuda_code, chip),
                  kNumKernels = offsetof(nnsc_cuda_code, num_kernels),
                  kKernels = offsetof(nnsc_cuda_code, kernels),
                  kNumMessages = offsetof(nnsc_cuda_code, num_messages),
                  kMessages = offsetof(nnsc_cuda_code, messages), kSize = sizeof(nnsc_cuda_code);
} // namespace cuda_code

/// nnsc_cuda_event_kind values.
enum class CUDAEvent : int32_t {
  Error = NNSC_CUDA_EVENT_ERROR,
  Save = NNSC_CUDA_EVENT_SAVE,
  Stop = NNSC_CUDA_EVENT_STOP,
  Finish = NNSC_CUDA_EVENT_FINISH,
  CallModule = NNSC_CUDA_EVENT_CALL_MODULE,
  Skip = NNSC_CUDA_EVENT_SKIP
};

/// struct nnsc_cuda_event
namespace cuda_event {
constexpr int64_t kKind = offsetof(nnsc_cuda_event, kind),
                  kIndex = offsetof(nnsc_cuda_event, index),
                  kRequest = offsetof(nnsc_cuda_event, request),
                  kStep = offsetof(nnsc_cuda_event, step),
                  kValue = offsetof(nnsc_cuda_event, value),
                  kOutput = offsetof(nnsc_cuda_event, output),
                  kErrorArgs = offsetof(nnsc_cuda_event, error_args),
                  kSize = sizeof(nnsc_cuda_event);
} // namespace cuda_event

/// struct nnsc_cuda_status
namespace cuda_status {
constexpr int64_t kResume = offsetof(nnsc_cuda_status, resume),
                  kModuleStatus = offsetof(nnsc_cuda_status, module_status),
                  kEvents = offsetof(nnsc_cuda_status, events),
                  kEventCapacity = offsetof(nnsc_cuda_status, event_capacity),
                  kNumEvents = offsetof(nnsc_cuda_status, num_events),
                  kSink = offsetof(nnsc_cuda_status, sink),
                  kSinkBytes = offsetof(nnsc_cuda_status, sink_bytes),
                  kSinkUsed = offsetof(nnsc_cuda_status, sink_used),
                  kModuleOutput = offsetof(nnsc_cuda_status, module_output),
                  kScratch = offsetof(nnsc_cuda_status, scratch), kSize = sizeof(nnsc_cuda_status);
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
