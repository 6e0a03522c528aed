//===- ProgramRegistry.h - the programs a model can run ---------*- C++ -*-===//
//
// Where every front door gets its programs: bundles loaded from files, bundles registered
// under a name (nns-serve's `--bundle NAME=FILE.nnsb`), and programs given as source, compiled
// in-process for the model and cached. The cache is keyed by the source text itself (exact,
// no hash to collide); it keeps failed compiles too, so a bad program sent again costs a
// lookup, and it is bounded (least recently used entries go first). The compiler is injected
// as a function, so the runtime never links the compiler (the tools and the Python extension
// do); without one, only bundles load.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SESSION_PROGRAMREGISTRY_H
#define NNSC_SESSION_PROGRAMREGISTRY_H

#include "nnsc/Session/Program.h"

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace nnsc::session {

class ProgramRegistry {
public:
  /// Compiles `source` (named `bufferName` in diagnostics) into a bundle at `outputPath`;
  /// false with the compiler's diagnostics.
  using Compiler = std::function<bool(const std::string &source, const std::string &bufferName,
                                      const std::string &outputPath, std::string &diagnostics)>;

  /// Compile-cache lookups so far.
  struct CacheCounts {
    int64_t hits = 0;
    int64_t misses = 0;
  };

  /// `compiler` may be empty (a build without it: bundles only); `workDir` holds compiled
  /// bundles between compiling and loading them.
  ProgramRegistry(std::shared_ptr<const ModelBackend> backend, Compiler compiler,
                  size_t cacheEntries, std::string workDir);

  bool canCompile() const { return bool(compiler); }

  /// Loads FILE.nnsb as `name`; false with `error` when it cannot be loaded or was built for
  /// another model.
  bool registerBundle(const std::string &name, const std::string &path, std::string &error);
  /// The registered bundle `name`, or null.
  std::shared_ptr<const Program> bundle(const std::string &name) const;
  /// "'a', 'b'", or "none".
  std::string bundleNames() const;

  /// The program in FILE: compiled when it is `.nns` source, else loaded as a bundle; null
  /// with `error` naming the file.
  std::shared_ptr<const Program> loadFile(const std::string &path, std::string &error);
  /// The program compiled from `source` (from the cache when it was compiled before); null
  /// with the diagnostics in `error` (the source named `bufferName`) when it does not compile.
  std::shared_ptr<const Program> compile(const std::string &source, std::string &error,
                                         const std::string &bufferName = "program.nns");

  /// The program whose bundle file holds `bytes` (Program::fileBytes of a program loaded
  /// elsewhere); null with `error` when it cannot be loaded. Not cached.
  std::shared_ptr<const Program> loadBytes(const std::string &bytes, std::string &error);

  CacheCounts cacheCounts() const;

private:
  struct Compiled {
    std::shared_ptr<const Program> program;
    std::string diagnostics;
    std::list<std::string>::iterator age;
  };

  std::shared_ptr<const ModelBackend> backend;
  Compiler compiler;
  size_t capacity;
  std::string workDir;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Program>> bundles;
  std::unordered_map<std::string, Compiled> cache;
  /// Cached sources, least recently used first.
  std::list<std::string> lru;
  CacheCounts counts;
  int64_t compiled = 0;

  /// A fresh path in workDir for a bundle file: dlopen would hand back an earlier library of
  /// the same name.
  std::string freshBundlePath();
};

/// Loads (or compiles) the program in `path` from `registry`, picks trace `traceName` (see
/// Program::findTrace for `chooseWith`) and binds `paramSpecs` ("NAME=VALUE",
/// given with option `paramFlag`). Throws InvalidInput naming what is wrong.
BoundTrace bindFile(ProgramRegistry &registry, const std::string &path,
                    const std::string &traceName, const std::string &chooseWith,
                    const std::vector<std::string> &paramSpecs, const std::string &paramFlag);

} // namespace nnsc::session

#endif // NNSC_SESSION_PROGRAMREGISTRY_H
