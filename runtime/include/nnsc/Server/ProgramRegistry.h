//===- ProgramRegistry.h - the programs a server can bind -------*- C++ -*-===//
//
// Where nns-serve finds the program a request names: bundles registered at start
// (`--bundle NAME=FILE.nnsb`, checked against the served model then), and programs sent as
// source, compiled in-process for the served model and cached. The cache is keyed by the
// source text itself (exact, no hash to collide) for the one model the server serves; it
// keeps failed compiles too, so a bad program sent again costs a lookup, and it is bounded
// (least recently used entries go first). The compiler is injected as a function, so the
// runtime's server library never links the compiler (the nns-serve tool does).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_PROGRAMREGISTRY_H
#define NNSC_SERVER_PROGRAMREGISTRY_H

#include "nnsc/Runtime/Bundle/BundleHook.h"
#include "nnsc/Server/Metrics.h"

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace nnsc::server {

/// A loaded bundle and one hook per trace, shared by every request that binds it.
class ServedProgram {
public:
  ServedProgram(std::shared_ptr<const Bundle> bundle, std::shared_ptr<const CausalLM> model);

  const Bundle &bundle() const { return *loaded; }
  /// The trace `name` ("" for the only trace, or the unnamed one); null with `error` naming
  /// the traces there are.
  const BundleTrace *findTrace(const std::string &name, std::string &error) const;
  /// The hook that runs `trace` (a trace of this program).
  const std::shared_ptr<BundleHook> &hook(const BundleTrace &trace) const;

private:
  std::shared_ptr<const Bundle> loaded;
  std::map<const BundleTrace *, std::shared_ptr<BundleHook>> hooks;
};

class ProgramRegistry {
public:
  /// Compiles `source` into a bundle at `outputPath`; false with the compiler's diagnostics.
  /// Empty in a build without the compiler.
  using Compiler = std::function<bool(const std::string &source, const std::string &outputPath,
                                      std::string &diagnostics)>;

  /// `workDir` holds compiled bundles between compiling and loading them.
  ProgramRegistry(std::shared_ptr<const CausalLM> model, Compiler compiler, Metrics &metrics,
                  size_t cacheEntries, std::string workDir);

  /// Loads FILE.nnsb as `name`; false with `error` when it cannot be loaded or was built for
  /// another model.
  bool registerBundle(const std::string &name, const std::string &path, std::string &error);
  /// The program in FILE: compiled when it is `.nns` source, else loaded as a bundle (the
  /// server's --edit); null with `error`.
  std::shared_ptr<const ServedProgram> loadFile(const std::string &path, std::string &error);
  /// The registered bundle `name`, or null.
  std::shared_ptr<const ServedProgram> bundle(const std::string &name) const;
  /// "'a', 'b'", or "none".
  std::string bundleNames() const;

  /// The program compiled from `source` (from the cache when it was compiled before); null
  /// with the diagnostics in `error` when it does not compile.
  std::shared_ptr<const ServedProgram> compile(const std::string &source, std::string &error);

private:
  struct Compiled {
    std::shared_ptr<const ServedProgram> program;
    std::string diagnostics;
    std::list<std::string>::iterator age;
  };

  std::shared_ptr<const CausalLM> model;
  Compiler compiler;
  Metrics &metrics;
  size_t capacity;
  std::string workDir;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<const ServedProgram>> bundles;
  std::unordered_map<std::string, Compiled> cache;
  /// Cached sources, least recently used first.
  std::list<std::string> lru;
  int64_t compiled = 0;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_PROGRAMREGISTRY_H
