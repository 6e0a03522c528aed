//===- Options.h - nns-serve command line -----------------------*- C++ -*-===//
//
// The options of nns-serve and their parsing; a wrong option exits with a message.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSSERVE_OPTIONS_H
#define NNSC_TOOLS_NNSSERVE_OPTIONS_H

#include "nnsc/Runtime/Engine/Scheduler.h"
#include "nnsc/Server/OpenAIServer.h"

#include <string>
#include <utility>
#include <vector>

namespace nnsserve {

struct Options {
  std::string model = NNSC_DEFAULT_MODEL;
  std::string dtype = "fp32";
  std::string weights = "packed";
  /// --device cpu|cuda: the model backend.
  std::string device = "cpu";
  int threads = 2;
  uint64_t seed = 0;
  nnsc::SchedulerConfig scheduler;
  nnsc::server::ServerOptions server;
  /// --bundle NAME=FILE.nnsb, registered at start.
  std::vector<std::pair<std::string, std::string>> bundles;
  /// --edit FILE.nns|FILE.nnsb and its --edit-param specs: bound to every request first.
  std::string editFile;
  std::vector<std::string> editParams;
  size_t compileCacheEntries = 256;
  size_t savesStoreBytes = 2ull << 30;
  int64_t savesTtlSeconds = 600;
};

/// Prints "nns-serve: error: MESSAGE" and exits with status 1.
[[noreturn]] void fail(const std::string &message);

/// Parses argv; exits on a wrong option.
Options parseOptions(int argc, char **argv);

} // namespace nnsserve

#endif // NNSC_TOOLS_NNSSERVE_OPTIONS_H
