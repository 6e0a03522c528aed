//===- Report.cpp - nns-run's completions and statistics --------*- C++ -*-===//

#include "Report.h"

#include <nlohmann/json.hpp>

#include <iostream>

using namespace nnsc;

namespace nnsrun {

void printCompletions(const Options &o, const std::vector<RequestResult> &results,
                      const tokenizer::Tokenizer *tok, bool streamed) {
  for (const RequestResult &r : results) {
    std::string text = tok ? tok->decode(r.completionTokens, true) : std::string();
    if (o.json) {
      nlohmann::json j = {
          {"request", r.request},
          {"prompt_ids", r.promptTokens},
          {"ids", r.completionTokens},
          {"finish_reason", r.finishReason == FinishReason::Stop ? "stop" : "length"}};
      if (tok)
        j["text"] = text;
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else if (!streamed) {
      std::cout << "=== request " << r.request << "\n" << text << "\n";
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
