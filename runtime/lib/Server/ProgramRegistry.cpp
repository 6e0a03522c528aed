//===- ProgramRegistry.cpp - the programs a server can bind ---------------===//

#include "nnsc/Server/ProgramRegistry.h"

#include "nnsc/Runtime/Bundle/BundleLoader.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace nnsc::server {

namespace fs = std::filesystem;

ServedProgram::ServedProgram(std::shared_ptr<const Bundle> bundle,
                             std::shared_ptr<const CausalLM> model)
    : loaded(std::move(bundle)) {
  for (const BundleTrace &trace : loaded->traces())
    hooks[&trace] = std::make_shared<BundleHook>(loaded, trace, model);
}

const BundleTrace *ServedProgram::findTrace(const std::string &name, std::string &error) const {
  if (const BundleTrace *trace = loaded->findTrace(name))
    return trace;
  if (name.empty() && loaded->traces().size() == 1)
    return &loaded->traces().front();
  std::string names;
  for (const BundleTrace &t : loaded->traces())
    names += (names.empty() ? "'" : ", '") + t.name + "'";
  error = name.empty()
              ? "the program has several traces (" + names + "); choose one with 'nns.trace'"
              : "the program has no trace '" + name + "' (its traces: " + names + ")";
  return nullptr;
}

const std::shared_ptr<BundleHook> &ServedProgram::hook(const BundleTrace &trace) const {
  return hooks.at(&trace);
}

ProgramRegistry::ProgramRegistry(std::shared_ptr<const CausalLM> model, Compiler compiler,
                                 Metrics &metrics, size_t cacheEntries, std::string workDir)
    : model(std::move(model)), compiler(std::move(compiler)), metrics(metrics),
      capacity(std::max<size_t>(cacheEntries, 1)), workDir(std::move(workDir)) {}

bool ProgramRegistry::registerBundle(const std::string &name, const std::string &path,
                                     std::string &error) {
  std::unique_ptr<Bundle> loaded = loadBundle(path, model->architecture(), error);
  if (!loaded) {
    error = "'" + path + "': " + error;
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (bundles.count(name)) {
    error = "bundle name '" + name + "' is registered twice";
    return false;
  }
  bundles[name] = std::make_shared<ServedProgram>(std::move(loaded), model);
  return true;
}

std::shared_ptr<const ServedProgram> ProgramRegistry::loadFile(const std::string &path,
                                                               std::string &error) {
  if (fs::path(path).extension() == ".nns") {
    std::ifstream in(path);
    if (!in) {
      error = "cannot read '" + path + "'";
      return nullptr;
    }
    std::stringstream source;
    source << in.rdbuf();
    std::shared_ptr<const ServedProgram> program = compile(source.str(), error);
    if (!program)
      error = "'" + path + "' does not compile:\n" + error;
    return program;
  }
  std::unique_ptr<Bundle> loaded = loadBundle(path, model->architecture(), error);
  if (!loaded) {
    error = "'" + path + "': " + error;
    return nullptr;
  }
  return std::make_shared<ServedProgram>(std::move(loaded), model);
}

std::shared_ptr<const ServedProgram> ProgramRegistry::bundle(const std::string &name) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = bundles.find(name);
  return it == bundles.end() ? nullptr : it->second;
}

std::string ProgramRegistry::bundleNames() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::string names;
  for (const auto &[name, program] : bundles)
    names += (names.empty() ? "'" : ", '") + name + "'";
  return names.empty() ? "none" : names;
}

std::shared_ptr<const ServedProgram> ProgramRegistry::compile(const std::string &source,
                                                              std::string &error) {
  int64_t serial = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(source); it != cache.end()) {
      metrics.countCompile(/*hit=*/true);
      lru.splice(lru.end(), lru, it->second.age);
      error = it->second.diagnostics;
      return it->second.program;
    }
    serial = compiled++;
  }
  metrics.countCompile(/*hit=*/false);
  if (!compiler) {
    error = "this nns-serve was built without the compiler (a runtime-only build): it runs "
            "registered bundles only";
    return nullptr;
  }
  // A fresh path for every bundle: dlopen would hand back an earlier library of the same name.
  const fs::path path = fs::path(workDir) / ("nns-serve-" + std::to_string(getpid()) + "-" +
                                             std::to_string(serial) + ".nnsb");
  std::shared_ptr<const ServedProgram> program;
  std::string diagnostics;
  if (compiler(source, path.string(), diagnostics)) {
    std::string loadError;
    std::unique_ptr<Bundle> loaded = loadBundle(path.string(), model->architecture(), loadError);
    if (loaded)
      program = std::make_shared<ServedProgram>(std::move(loaded), model);
    else
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

} // namespace nnsc::server
