//===- ModelLoader.cpp - a model, its backend and its tokenizer -----------===//

#include "nnsc/Runtime/Backend/ModelLoader.h"

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Backend/CudaBackendLoader.h"
#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Models/ModelWeights.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Support/GGUFFile.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace nnsc {

namespace fs = std::filesystem;

namespace {

/// The tokenizer that ships with the model: GGUF metadata or tokenizer.json in the directory.
std::unique_ptr<tokenizer::Tokenizer> loadTokenizer(const std::string &model) {
  std::string error;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  if (fs::is_directory(model)) {
    fs::path json = fs::path(model) / "tokenizer.json";
    if (!fs::exists(json))
      return nullptr;
    tok = tokenizer::Tokenizer::fromJsonFile(json.string(), error);
  } else {
    auto file = gguf::GGUFFile::open(model, error);
    if (!file)
      throw std::runtime_error(error);
    if (!file->getStringArray("tokenizer.ggml.tokens"))
      return nullptr;
    tok = tokenizer::Tokenizer::fromGGUF(*file, error);
  }
  if (!tok)
    throw std::runtime_error(error);
  return tok;
}

/// eos_token_id of a Hugging Face config.json (an integer or a list), for models without a
/// tokenizer.
std::vector<int32_t> configEosIds(const std::string &model) {
  std::vector<int32_t> ids;
  std::ifstream in(fs::path(model) / "config.json");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("eos_token_id"))
    return ids;
  const auto &e = j["eos_token_id"];
  if (e.is_number_integer())
    ids.push_back(e.get<int32_t>());
  else if (e.is_array())
    for (const auto &v : e)
      if (v.is_number_integer())
        ids.push_back(v.get<int32_t>());
  return ids;
}

/// `forms` without the packed copies ("blocks"): BlocksOnly where the default keeps blocks.
ProjectionForms blocksOnly(ProjectionForms forms) {
  return forms == ProjectionForms::BlocksAndPacked ? ProjectionForms::BlocksOnly : forms;
}

} // namespace

LoadedModel loadModel(const ModelLoadOptions &options) {
  if (options.dtype != "fp32" && options.dtype != "bf16")
    throw InvalidInput("dtype must be fp32 or bf16, got '" + options.dtype + "'");
  if (options.device != "cpu" && options.device != "cuda")
    throw InvalidInput("device must be cpu or cuda, got '" + options.device + "'");
  if (options.weights != "packed" && options.weights != "blocks")
    throw InvalidInput("weights must be packed or blocks, got '" + options.weights + "'");
  const DistributedOptions *ranks =
      options.distributed && options.distributed->worldSize > 1 ? &*options.distributed : nullptr;
  // On the CPU the ranks meet before loading, so that one rank's failure ends the others'
  // wait at once; the CUDA backend library creates its NCCL group with the backend.
  std::shared_ptr<TensorParallelGroup> gloo;
  if (ranks && options.device == "cpu")
    gloo = TensorParallelGroup::connect(*ranks);
  LoadedModel loaded;
  ModelWeights weights = ModelWeights::load(
      options.path, options.dtype == "bf16" ? torch::kBFloat16 : torch::kFloat32,
      options.progress ? options.progress : [](int64_t, int64_t) {},
      // The CUDA backend drops the blocks (its kernels read widened weights).
      options.device == "cuda"      ? ProjectionForms::Widened
      : options.weights == "blocks" ? blocksOnly(defaultProjectionForms())
                                    : defaultProjectionForms(),
      ranks ? ShardRank{ranks->rank, ranks->worldSize} : ShardRank{});
  if (options.device == "cuda") {
    loaded.backend = loadCudaBackend(std::move(weights), ranks ? ranks->localRank : 0, ranks);
  } else {
    loaded.model = std::make_shared<CausalLM>(std::move(weights), CpuKernels::get(), gloo);
    loaded.backend = makeCpuBackend(loaded.model);
  }
  loaded.tokenizer = loadTokenizer(options.path);
  if (loaded.tokenizer && loaded.tokenizer->specialIds().eos)
    loaded.eosTokenIds.push_back(*loaded.tokenizer->specialIds().eos);
  else if (fs::is_directory(options.path))
    loaded.eosTokenIds = configEosIds(options.path);
  return loaded;
}

} // namespace nnsc
