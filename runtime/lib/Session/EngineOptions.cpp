//===- EngineOptions.cpp - an engine's options, for every front door ------===//

#include "nnsc/Session/EngineOptions.h"

#include "nnsc/Runtime/Support/Error.h"

#include <charconv>
#include <sstream>

namespace nnsc::session {

namespace {

/// The integer value of `arg`, at least `min`.
int64_t integerOf(const std::string &arg, const std::string &v, int64_t min) {
  int64_t n = 0;
  const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (error != std::errc() || end != v.data() + v.size() || n < min)
    throw InvalidInput(arg + " needs an integer >= " + std::to_string(min) + ", got '" + v + "'");
  return n;
}

/// `v` when it is one of `choices` ("fp32 or bf16").
std::string choiceOf(const std::string &arg, const std::string &v,
                     std::initializer_list<const char *> choices) {
  std::string list;
  size_t i = 0;
  for (const char *c : choices) {
    if (v == c)
      return v;
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(c);
    ++i;
  }
  throw InvalidInput(arg + " must be " + list + ", got '" + v + "'");
}

} // namespace

bool parseEngineFlag(const std::string &arg, const std::function<std::string()> &value,
                     EngineOptions &o) {
  SchedulerConfig &s = o.scheduler;
  if (arg == "--model")
    o.model = value();
  else if (arg == "--dtype")
    o.dtype = choiceOf(arg, value(), {"fp32", "bf16"});
  else if (arg == "--weights")
    o.weights = choiceOf(arg, value(), {"packed", "blocks"});
  else if (arg == "--device")
    o.device = choiceOf(arg, value(), {"cpu", "cuda"});
  else if (arg == "--threads")
    o.threads = int(integerOf(arg, value(), 1));
  else if (arg == "--seed")
    o.seed = uint64_t(integerOf(arg, value(), 0));
  else if (arg == "--tensor-parallel-size") {
    const int64_t n = integerOf(arg, value(), 1);
    if (n > 256)
      throw InvalidInput("--tensor-parallel-size must be between 1 and 256, got " +
                         std::to_string(n));
    o.tensorParallelSize = int(n);
  } else if (arg == "--max-num-seqs")
    s.maxNumSeqs = integerOf(arg, value(), 1);
  else if (arg == "--max-num-batched-tokens")
    s.maxNumBatchedTokens = integerOf(arg, value(), 1);
  else if (arg == "--max-model-len")
    s.maxModelLen = integerOf(arg, value(), 1);
  else if (arg == "--num-blocks")
    s.numBlocks = integerOf(arg, value(), 1);
  else if (arg == "--block-size")
    s.blockSize = integerOf(arg, value(), 1);
  else if (arg == "--no-prefix-caching")
    s.enablePrefixCaching = false;
  else
    return false;
  return true;
}

std::string engineFlagsUsage() {
  const EngineOptions d;
  std::ostringstream out;
  out << "  --model PATH               .gguf file or Hugging Face model directory (default: "
         "the\n"
         "                             bundled SmolLM2-135M)\n"
      << "  --dtype fp32|bf16          compute dtype (default " << d.dtype << ")\n"
      << "  --weights packed|blocks    a GGUF file's weights in memory (default " << d.weights
      << "): its blocks\n"
         "                             plus a packed copy for prefill, or its blocks only "
         "(prefill\n"
         "                             widens tiles: under half the memory, prefill up to 1.15x "
         "slower)\n"
      << "  --device cpu|cuda          model backend (default " << d.device
      << "); cuda needs a build with nvcc and a\n"
         "                             GPU, and bundles compiled with --target=cuda\n"
      << "  --threads N                intra-op threads (default 2)\n"
      << "  --seed N                   sampler seed for requests without their own (default "
      << d.seed << ")\n"
      << "  --max-num-seqs N           sequences per step (default " << d.scheduler.maxNumSeqs
      << ")\n"
      << "  --max-num-batched-tokens N tokens per step (default " << d.scheduler.maxNumBatchedTokens
      << ")\n"
      << "  --max-model-len N          context per sequence (default " << d.scheduler.maxModelLen
      << ", at most the model's)\n"
      << "  --num-blocks N, --block-size N   the paged KV cache (default " << d.scheduler.numBlocks
      << " blocks of " << d.scheduler.blockSize << " tokens)\n"
      << "  --no-prefix-caching        compute every prompt in full\n"
      << "  --tensor-parallel-size N   split the model over N ranks (processes, CPU, Gloo): "
         "started here,\n"
         "                             or joined through RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT "
         "when\n"
         "                             RANK is set (docs/Distributed.md). N must divide the "
         "heads; each\n"
         "                             rank's --threads default is the cores split over the "
         "ranks.\n";
  return out.str();
}

std::unique_ptr<LLMEngine> startEngine(const LoadedModel &loaded, SchedulerConfig scheduler,
                                       uint64_t seed) {
  scheduler.eosTokenIds = loaded.eosTokenIds;
  if (const int64_t positions = loaded.backend->config().maxPositions; positions > 0)
    scheduler.maxModelLen = std::min(scheduler.maxModelLen, positions);
  return std::make_unique<LLMEngine>(loaded.backend, scheduler, seed);
}

} // namespace nnsc::session
