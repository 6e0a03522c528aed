//===- Report.cpp - nns-run's completions and statistics --------*- C++ -*-===//

#include "Report.h"

#include <nlohmann/json.hpp>

#include <iostream>

using namespace nnsc;

namespace nnsrun {

namespace {

nlohmann::json promptJson(const Prompt &prompt, const RequestResult &r,
                          const tokenizer::Tokenizer *tok) {
  nlohmann::json j = {{"prompt_ids", r.promptTokens},
                      {"ids", r.completionTokens},
                      {"finish_reason", finishReasonName(r.finishReason)}};
  if (prompt.text)
    j["prompt"] = *prompt.text;
  if (tok)
    j["text"] = tok->decode(r.completionTokens, true);
  return j;
}

} // namespace

nlohmann::json requestJson(size_t index, const std::vector<Prompt> &prompts,
                           const std::vector<RequestResult> &results, size_t first,
                           const std::vector<std::string> &invokes,
                           const tokenizer::Tokenizer *tok) {
  const size_t n = std::max<size_t>(invokes.size(), 1);
  nlohmann::json j = promptJson(prompts[first + n - 1], results[first + n - 1], tok);
  j["request"] = index;
  if (invokes.empty())
    return j;
  j["invokes"] = nlohmann::json::array();
  for (size_t k = 0; k < n; ++k) {
    nlohmann::json invoke = promptJson(prompts[first + k], results[first + k], tok);
    invoke["name"] = invokes[k];
    j["invokes"].push_back(std::move(invoke));
  }
  return j;
}

void printCompletions(const Options &o, const std::vector<RequestResult> &results,
                      const std::vector<std::string> &invokes, const tokenizer::Tokenizer *tok,
                      bool streamed) {
  const size_t n = std::max<size_t>(invokes.size(), 1);
  for (size_t first = 0, i = 0; first + n <= results.size(); first += n, ++i) {
    if (o.json) {
      std::cout << requestJson(i, o.prompts, results, first, invokes, tok)
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
      continue;
    }
    if (streamed)
      continue;
    std::cout << "=== request " << i << "\n";
    for (size_t k = 0; k < n; ++k) {
      if (!invokes.empty())
        std::cout << "--- invoke " << invokes[k] << "\n";
      std::cout << (tok ? tok->decode(results[first + k].completionTokens, true) : std::string())
                << "\n";
    }
  }
}

void printStatistics(const std::vector<RequestResult> &results, const RunTiming &timing,
                     const LLMEngine &engine, const TensorParallelGroup *tp) {
  int64_t generated = 0, promptTokens = 0, afterFirst = 0;
  for (const RequestResult &r : results) {
    generated += int64_t(r.completionTokens.size());
    promptTokens += int64_t(r.promptTokens.size());
    afterFirst += std::max<int64_t>(int64_t(r.completionTokens.size()) - 1, 0);
  }
  const double elapsed = timing.elapsed;
  std::cerr << "requests " << results.size() << ", prompt tokens " << promptTokens << ", generated "
            << generated << " in " << elapsed << " s";
  // Rates only for what was measured: a run that generated nothing (every request stopped in
  // its prefill, e.g. a probe) has no throughput, and no decode rate without a second token.
  if (generated == 0 || !timing.firstToken)
    std::cerr << ": no tokens generated";
  else
    std::cerr << ": " << double(generated) / elapsed << " tok/s";
  std::cerr << ", preemptions " << engine.getScheduler().numPreemptions()
            << ", prefix cache hit tokens " << engine.getScheduler().blockManager().numHitTokens()
            << "\n";
  if (timing.firstToken && generated > 0) {
    std::cerr << "first token after " << *timing.firstToken << " s";
    if (afterFirst > 0 && elapsed > *timing.firstToken)
      std::cerr << ", then " << double(afterFirst) / (elapsed - *timing.firstToken) << " tok/s";
    std::cerr << "\n";
  }
  if (tp) {
    const CommStats &comm = tp->stats();
    std::cerr << "tensor parallel: " << tp->size() << " ranks, rank 0 spent " << comm.seconds
              << " s in " << comm.collectives << " collectives (" << double(comm.bytes) / 1e6
              << " MB) over " << timing.steps
              << " steps: " << (timing.steps ? 1e3 * comm.seconds / double(timing.steps) : 0.0)
              << " ms per step\n";
  }
}

} // namespace nnsrun
