//===- ModelLoader.h - a model, its backend and its tokenizer ---*- C++ -*-===//
//
// What every front end of the runtime loads before it can take requests (nns-run, nns-serve,
// the Python package): the weights of a GGUF file or Hugging Face directory on the chosen
// backend, the tokenizer that ships with them, and the tokens that end generation.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_MODELLOADER_H
#define NNSC_RUNTIME_BACKEND_MODELLOADER_H

#include "nnsc/Runtime/Backend/ModelBackend.h"
#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Models/CausalLM.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnsc {

/// How to load a model.
struct ModelLoadOptions {
  std::string path;
  /// "fp32" or "bf16": the dtype weights are widened to.
  std::string dtype = "fp32";
  /// "cpu" or "cuda".
  std::string device = "cpu";
  /// Called with (tensors loaded, tensors in total) while the weights load.
  std::function<void(int64_t, int64_t)> progress;
  /// This process's rank when the model is split over ranks (tensor parallelism), or
  /// nothing: it loads only its shard of the weights and joins the others, with Gloo on the
  /// CPU and NCCL on CUDA device localRank.
  std::optional<DistributedOptions> distributed;
  /// The forms a GGUF file's weights keep on the CPU (docs/Engine.md, "Memory"): "packed"
  /// (its blocks, and oneDNN's packed copy of each projection for prefill and batches over
  /// the quantized row limit) or "blocks" (its blocks only: those products dequantize tiles).
  std::string weights = "packed";
};

/// A loaded model, ready to run.
struct LoadedModel {
  /// The CPU model; null on the CUDA backend (every backend's model is backend->causalLM()).
  std::shared_ptr<CausalLM> model;
  std::shared_ptr<ModelBackend> backend;
  /// Null when the model ships no tokenizer (prompts then come as token ids).
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  /// The tokens that end generation: the tokenizer's end-of-sequence token, or config.json's
  /// eos_token_id for a directory without a tokenizer.
  std::vector<int32_t> eosTokenIds;
};

/// Loads the model `options` describes. Throws ModelLoadError for a bad model file,
/// BackendError for a backend that cannot run here, InvalidInput for a split the
/// model does not allow, DistributedError when the ranks cannot meet and std::runtime_error
/// for a bad tokenizer, each with a message naming the file and what is wrong.
LoadedModel loadModel(const ModelLoadOptions &options);

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_MODELLOADER_H
