//===- EngineOptions.h - an engine's options, for every front door -*- C++ -*-===//
//
// What nns-run and nns-serve take on their command lines to load a model and start an engine
// over it, parsed in one place, with the defaults stated once (SchedulerConfig's and these
// fields' initializers; the Python package reads them through `_nnsc.defaults()`), and the
// engine started on a loaded model with the scheduler fitted to it.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SESSION_ENGINEOPTIONS_H
#define NNSC_SESSION_ENGINEOPTIONS_H

#include "nnsc/Runtime/Backend/ModelLoader.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"

#include <functional>
#include <memory>
#include <string>

namespace nnsc::session {

struct EngineOptions {
  /// .gguf file or Hugging Face directory; the tools default it to the bundled model.
  std::string model;
  /// "fp32" or "bf16".
  std::string dtype = "fp32";
  /// "packed" or "blocks": a GGUF file's weights in memory.
  std::string weights = "packed";
  /// "cpu" or "cuda": the model backend.
  std::string device = "cpu";
  /// Intra-op threads; 0 until given (each door has its default).
  int threads = 0;
  /// Ranks the model is split over (RankLaunch.h starts or joins them).
  int tensorParallelSize = 1;
  /// The sampler's seed for requests without their own.
  uint64_t seed = 0;
  SchedulerConfig scheduler;
};

/// Applies command-line flag `arg` (`--dtype`, `--max-num-seqs`, ...) to `o`, taking its value
/// from `value()` when it has one; false when `arg` is not an engine flag. Throws InvalidInput
/// naming the flag and what is wrong with its value.
bool parseEngineFlag(const std::string &arg, const std::function<std::string()> &value,
                     EngineOptions &o);

/// The usage lines of the engine flags, with their defaults.
std::string engineFlagsUsage();

/// An engine over `loaded` with `scheduler` fitted to the model (its end-of-sequence tokens,
/// its context) and the sampler seeded with `seed`. Throws InvalidInput for an impossible
/// scheduler config.
std::unique_ptr<LLMEngine> startEngine(const LoadedModel &loaded, SchedulerConfig scheduler,
                                       uint64_t seed);

} // namespace nnsc::session

#endif // NNSC_SESSION_ENGINEOPTIONS_H
