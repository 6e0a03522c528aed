//===- Report.h - nns-run's completions and statistics ----------*- C++ -*-===//
//
// The completions on stdout (--json lines, or "=== request N" and the text) and the
// statistics lines on stderr, whose wording bench/nnsrun.py reads.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_REPORT_H
#define NNSC_TOOLS_NNSRUN_REPORT_H

#include "Options.h"

#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

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

/// Prints every result in request order: with --json one JSON object per line, else
/// "=== request N" and the text, except for the request whose text was streamed.
void printCompletions(const Options &o, const std::vector<nnsc::RequestResult> &results,
                      const nnsc::tokenizer::Tokenizer *tok, bool streamed);

/// The statistics lines: requests, prompt and generated tokens, rates (none for what was not
/// measured), preemptions, prefix cache hits, time to the first token and, under tensor
/// parallelism, rank 0's time in collectives.
void printStatistics(const std::vector<nnsc::RequestResult> &results, const RunTiming &timing,
                     const nnsc::LLMEngine &engine, const nnsc::TensorParallelGroup *tp);

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_REPORT_H
