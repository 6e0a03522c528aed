//===- Options.h - nns-serve command line -----------------------*- C++ -*-===//
//
// The options of nns-serve and their parsing; a wrong option exits with a message.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSSERVE_OPTIONS_H
#define NNSC_TOOLS_NNSSERVE_OPTIONS_H

#include "nnsc/Server/OpenAIServer.h"
#include "nnsc/Session/EngineOptions.h"

#include <string>
#include <utility>
#include <vector>

namespace nnsserve {

/// The engine's options (nnsc/Session/EngineOptions.h), then the server's.
struct Options : nnsc::session::EngineOptions {
  /// threads stays 0 until given: 2, or the cores split over the ranks (nns-serve.cpp).
  Options() { model = NNSC_DEFAULT_MODEL; }

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

/// Prints "nns-serve: error: MESSAGE" (naming the rank after setErrorRank) and exits with
/// status 1.
[[noreturn]] void fail(const std::string &message);
/// Names `rank` in fail()'s messages from now on.
void setErrorRank(int rank);

/// Parses argv; exits on a wrong option.
Options parseOptions(int argc, char **argv);

} // namespace nnsserve

#endif // NNSC_TOOLS_NNSSERVE_OPTIONS_H
