//===- Report.h - nns-run's completions and statistics ----------*- C++ -*-===//
//
// The completions on stdout (--json lines, or "=== request N" and the text) and the
// statistics lines on stderr, whose wording bench/nnsrun.py reads. A request of a multi-invoke
// trace is one record: each invoke's run under "invokes", and the last invoke's at the top
// level (the invoke that reads the others' values, whose text is the experiment's result), as
// in --save-dir's <i>.json and Python's Result.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_REPORT_H
#define NNSC_TOOLS_NNSRUN_REPORT_H

#include "Options.h"

#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

namespace nnsrun {

/// How the engine loop went: seconds from the first step to the last, to the first token
/// (none if no step produced one) and the number of steps.
struct RunTiming {
  double elapsed = 0;
  std::optional<double> firstToken;
  int64_t steps = 0;
};

/// The JSON of request `index`, whose prompts ran as `results[first]` and on, one per name of
/// `invokes` (one prompt when `invokes` is empty): "request", "prompt_ids", "ids", "text" (with
/// a tokenizer), "prompt" (a text prompt) and "finish_reason" of the (last) prompt, and with
/// invokes the same of each under "invokes", in invoke order, with its "name".
nlohmann::json requestJson(size_t index, const std::vector<Prompt> &prompts,
                           const std::vector<nnsc::RequestResult> &results, size_t first,
                           const std::vector<std::string> &invokes,
                           const nnsc::tokenizer::Tokenizer *tok);

/// Prints every request in order: with --json one JSON object per line (requestJson), else
/// "=== request N" and the text (each invoke's after "--- invoke NAME"), except for the
/// request whose text was streamed. `invokes`: the trace's invoke names when it has several.
void printCompletions(const Options &o, const std::vector<nnsc::RequestResult> &results,
                      const std::vector<std::string> &invokes,
                      const nnsc::tokenizer::Tokenizer *tok, bool streamed);

/// The statistics lines: requests, prompt and generated tokens, rates (none for what was not
/// measured), preemptions, prefix cache hits, time to the first token and, under tensor
/// parallelism, rank 0's time in collectives.
void printStatistics(const std::vector<nnsc::RequestResult> &results, const RunTiming &timing,
                     const nnsc::LLMEngine &engine, const nnsc::TensorParallelGroup *tp);

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_REPORT_H
