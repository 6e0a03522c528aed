//===- Options.h - nns-run command line -------------------------*- C++ -*-===//
//
// The options of nns-run and their parsing; a wrong option exits with a message.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_OPTIONS_H
#define NNSC_TOOLS_NNSRUN_OPTIONS_H

#include "nnsc/Runtime/Engine/SamplingParams.h"
#include "nnsc/Runtime/Engine/Scheduler.h"

#include "PromptsFile.h"

#include <optional>
#include <string>
#include <vector>

namespace nnsrun {

struct Options {
  std::string model = NNSC_DEFAULT_MODEL;
  std::vector<Prompt> prompts;
  bool chat = false;
  nnsc::SamplingParams sampling;
  std::string dtype = "fp32";
  std::string weights = "packed";
  /// "cpu" or "cuda": the model backend.
  std::string device = "cpu";
  /// Intra-op threads of this process (of each rank under tensor parallelism); 0 until
  /// given: 2, or the cores split over the ranks.
  int threads = 0;
  /// --tensor-parallel-size N: ranks the model is split over (docs/Distributed.md).
  int tensorParallelSize = 1;
  uint64_t seed = 0;
  nnsc::SchedulerConfig scheduler;
  bool json = false;
  std::string dumpLogits;
  /// Sites to save ("all": every forward-pass site) and sites to scale in place.
  std::vector<std::string> capture;
  std::vector<std::pair<std::string, double>> scale;
  std::string save;
  bool quiet = false;
  bool printSchemaHash = false;
  /// --trace FILE.nns (compiled on the fly) or --bundle FILE.nnsb, the trace to bind to every
  /// bundled request, its --param specs and where the results go.
  std::string traceFile;
  std::string bundle;
  std::string traceName;
  std::vector<std::string> params;
  std::string saveDir;
  /// --edit FILE.nns|FILE.nnsb and its --edit-param specs: bound to every request first.
  std::string editFile;
  std::vector<std::string> editParams;
};

/// Prints "nns-run: error: MESSAGE" (with the rank under tensor parallelism, see
/// setErrorRank) and exits with status 1.
[[noreturn]] void fail(const std::string &message);
/// Names `rank` in fail()'s messages from now on.
void setErrorRank(int rank);

/// Parses argv; exits on a wrong option.
Options parseOptions(int argc, char **argv);

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_OPTIONS_H
