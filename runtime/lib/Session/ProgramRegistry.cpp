//===- ProgramRegistry.cpp - the programs a model can run -----------------===//

#include "nnsc/Session/ProgramRegistry.h"

#include "nnsc/Runtime/Bundle/BundleParams.h"
#include "nnsc/Runtime/Support/Error.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace nnsc::session {

namespace fs = std::filesystem;

ProgramRegistry::ProgramRegistry(std::shared_ptr<const ModelBackend> backend, Compiler compiler,
                                 size_t cacheEntries, std::string workDir)
    : backend(std::move(backend)), compiler(std::move(compiler)),
      capacity(std::max<size_t>(cacheEntries, 1)), workDir(std::move(workDir)) {}

bool ProgramRegistry::registerBundle(const std::string &name, const std::string &path,
                                     std::string &error) {
  std::shared_ptr<const Program> program = Program::load(path, *backend, error);
  if (!program)
    return false;
  std::lock_guard<std::mutex> lock(mutex);
  if (bundles.count(name)) {
    error = "bundle name '" + name + "' is registered twice";
    return false;
  }
  bundles[name] = std::move(program);
  return true;
}

std::shared_ptr<const Program> ProgramRegistry::bundle(const std::string &name) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = bundles.find(name);
  return it == bundles.end() ? nullptr : it->second;
}

std::string ProgramRegistry::bundleNames() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<std::string> names;
  for (const auto &[name, program] : bundles)
    names.push_back(name);
  return names.empty() ? "none" : quotedList(names);
}

std::shared_ptr<const Program> ProgramRegistry::loadFile(const std::string &path,
                                                         std::string &error) {
  if (fs::path(path).extension() != ".nns")
    return Program::load(path, *backend, error);
  std::ifstream in(path);
  if (!in) {
    error = "cannot read '" + path + "'";
    return nullptr;
  }
  std::stringstream source;
  source << in.rdbuf();
  std::shared_ptr<const Program> program = compile(source.str(), error, path);
  if (!program)
    error = "'" + path + "' does not compile:\n" + error;
  return program;
}

std::shared_ptr<const Program> ProgramRegistry::compile(const std::string &source,
                                                        std::string &error,
                                                        const std::string &bufferName) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(source); it != cache.end()) {
      ++counts.hits;
      lru.splice(lru.end(), lru, it->second.age);
      error = it->second.diagnostics;
      return it->second.program;
    }
    ++counts.misses;
  }
  if (!compiler) {
    error = "this build has no compiler (a runtime-only build): it runs bundles only";
    return nullptr;
  }
  const fs::path path = freshBundlePath();
  std::shared_ptr<const Program> program;
  std::string diagnostics;
  if (compiler(source, bufferName, path.string(), diagnostics)) {
    std::string loadError;
    program = Program::load(path.string(), *backend, loadError);
    if (!program)
      diagnostics = "the compiled program does not load: " + loadError;
  }
  std::error_code ec;
  fs::remove(path, ec);

  std::lock_guard<std::mutex> lock(mutex);
  if (!cache.count(source)) {
    while (cache.size() >= capacity) {
      cache.erase(lru.front());
      lru.pop_front();
    }
    lru.push_back(source);
    cache[source] = {program, diagnostics, std::prev(lru.end())};
  }
  error = diagnostics;
  return program;
}

std::string ProgramRegistry::freshBundlePath() {
  int64_t serial = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    serial = compiled++;
  }
  return (fs::path(workDir) /
          ("nnsc-program-" + std::to_string(getpid()) + "-" + std::to_string(serial) + ".nnsb"))
      .string();
}

std::shared_ptr<const Program> ProgramRegistry::loadBytes(const std::string &bytes,
                                                          std::string &error) {
  const std::string path = freshBundlePath();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) {
      error = "cannot write '" + path + "'";
      return nullptr;
    }
  }
  std::shared_ptr<const Program> program = Program::load(path, *backend, error);
  std::error_code ec;
  fs::remove(path, ec);
  return program;
}

ProgramRegistry::CacheCounts ProgramRegistry::cacheCounts() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counts;
}

BoundTrace bindFile(ProgramRegistry &registry, const std::string &path,
                    const std::string &traceName, const std::string &chooseWith,
                    const std::vector<std::string> &paramSpecs, const std::string &paramFlag) {
  std::string error;
  BoundTrace bound;
  bound.program = registry.loadFile(path, error);
  if (!bound.program)
    throw InvalidInput(error);
  bound.trace = bound.program->findTrace(traceName, chooseWith, error);
  if (!bound.trace)
    throw InvalidInput("'" + path + "': " + error);
  std::optional<std::vector<torch::Tensor>> params =
      bindParams(*bound.trace, paramSpecs, error, paramFlag);
  if (!params)
    throw InvalidInput(error);
  bound.params = std::move(*params);
  return bound;
}

} // namespace nnsc::session
