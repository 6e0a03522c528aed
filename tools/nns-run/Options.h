//===- Options.h - nns-run command line -------------------------*- C++ -*-===//
//
// The options of nns-run and their parsing; a wrong option exits with a message.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_OPTIONS_H
#define NNSC_TOOLS_NNSRUN_OPTIONS_H

#include "nnsc/Runtime/Engine/SamplingParams.h"
#include "nnsc/Session/EngineOptions.h"

#include "PromptsFile.h"

#include <optional>
#include <string>
#include <vector>

namespace nnsrun {

/// The engine's options (nnsc/Session/EngineOptions.h: model, dtype, weights, device, threads,
/// seed, ranks, scheduler; threads 0 until given: 2, or the cores split over the ranks), then
/// nns-run's.
struct Options : nnsc::session::EngineOptions {
  Options() { model = NNSC_DEFAULT_MODEL; }

  std::vector<Prompt> prompts;
  bool chat = false;
  nnsc::SamplingParams sampling;
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
