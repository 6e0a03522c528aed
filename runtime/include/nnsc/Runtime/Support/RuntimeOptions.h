//===- RuntimeOptions.h - the runtime's environment switches ----*- C++ -*-===//
//
// Every `NNSC_*` environment variable the runtime honours, read in one place, once per
// process, and checked: a value it does not understand is an InvalidInput naming the variable.
// They are switches for comparing kernels and lanes on one build and machine (A/B runs) and
// for profiling; the defaults are what the runtime does without them. docs/Engine.md,
// "Environment switches", lists them in one table.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_SUPPORT_RUNTIMEOPTIONS_H
#define NNSC_RUNTIME_SUPPORT_RUNTIMEOPTIONS_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace nnsc {

struct RuntimeOptions {
  /// NNSC_ROW_LANE=on|off: unhooked decode layers on the raw-row lane where it serves.
  bool rowLane = true;
  /// NNSC_GEMM=onednn|libtorch: dense products through oneDNN where the CPU serves it, or
  /// every one through at::linear.
  bool libTorchGemm = false;
  /// NNSC_QUANT_DECODE=on|off|N: the most rows a product runs on quantized blocks (off: 0);
  /// none (on) takes the built-in crossovers.
  std::optional<int64_t> quantDecodeMaxRows;
  /// NNSC_QUANT_AVX512=0: the quantized GEMV stays on its AVX2 kernels.
  bool quantAvx512 = true;
  /// NNSC_QUANT_BF16DOT=0: bf16 decode stays on the widening AVX-512 kernels.
  bool quantBf16Dot = true;
  /// NNSC_ATTENTION_BF16DOT=0: bf16 attention stays off `vdpbf16ps`.
  bool attentionBf16Dot = true;
  /// NNSC_HOST_ALLOCATOR=system: LibTorch's own CPU allocator instead of HostAllocator.
  bool systemAllocator = false;
  /// NNSC_CUDA_PREFILL=simt: bf16 prefill attention stays off the tensor-core kernel.
  bool cudaPrefillSimt = false;
  /// NNSC_PROFILE (any value): the phase profile of every engine step, printed at exit.
  bool profile = false;
  /// NNSC_DIST_TIMEOUT=SECONDS: how long a tensor-parallel collective waits.
  std::optional<int64_t> distTimeoutSeconds;

  /// The options `lookup` gives (a variable's value, or null when unset). Throws
  /// InvalidInput naming the variable and the values it takes.
  static RuntimeOptions parse(const std::function<const char *(const char *)> &lookup);
  /// parse() of this process's environment.
  static RuntimeOptions fromEnvironment();
  /// This process's options: fromEnvironment() on first use, the same object after.
  static const RuntimeOptions &get();
};

} // namespace nnsc

#endif // NNSC_RUNTIME_SUPPORT_RUNTIMEOPTIONS_H
