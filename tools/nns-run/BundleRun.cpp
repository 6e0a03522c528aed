//===- BundleRun.cpp - nns-run's bundle requests and results ----*- C++ -*-===//

#include "BundleRun.h"

#include "nnsc/Runtime/Bundle/BundleLoader.h"
#include "nnsc/Runtime/Bundle/BundleParams.h"
#include "nnsc/Runtime/Models/SafetensorsWriter.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace nnsrun {

namespace fs = std::filesystem;
using namespace nnsc;

namespace {

/// Compiles FILE.nns with the nnsc installed next to nns-run (the runtime does not link the
/// compiler) into a temporary .nnsb, for the model being run. Exits when nnsc fails; its
/// diagnostics go to stderr as they are.
std::string compileTrace(const std::string &source, const std::string &model) {
  fs::path nnsc = fs::read_symlink("/proc/self/exe").parent_path() / "nnsc";
  if (!fs::exists(nnsc))
    fail("--trace needs the nnsc compiler next to nns-run ('" + nnsc.string() +
         "' does not exist); compile with nnsc -emit=bundle and use --bundle");
  fs::path out = fs::temp_directory_path() / ("nns-run-" + std::to_string(getpid()) + ".nnsb");
  std::vector<std::string> args = {nnsc.string(), source, "-emit=bundle", "--model",
                                   model,         "-o",   out.string()};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    fail("cannot run '" + nnsc.string() + "'");
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("'" + source + "' did not compile (see nnsc's diagnostics above)");
  return out.string();
}

} // namespace

std::unique_ptr<BoundTrace> loadTrace(const Options &o,
                                      const std::shared_ptr<const CausalLM> &model) {
  if (o.traceFile.empty() && o.bundle.empty())
    return nullptr;
  // Site kernels read and write the site values as the f32 their manifest was compiled for.
  if (model->dtype() != torch::kFloat32)
    fail("bundles run on fp32 models; drop --dtype " + o.dtype);
  std::string path = o.bundle.empty() ? compileTrace(o.traceFile, o.model) : o.bundle;
  std::string error;
  std::unique_ptr<Bundle> loaded = loadBundle(path, model->architecture(), error);
  if (!o.traceFile.empty())
    fs::remove(path);
  if (!loaded)
    fail("'" + (o.bundle.empty() ? o.traceFile : o.bundle) + "': " + error);
  auto bound = std::make_unique<BoundTrace>();
  bound->bundle = std::move(loaded);
  const BundleTrace *trace = bound->bundle->findTrace(o.traceName);
  if (!trace && o.traceName.empty() && bound->bundle->traces().size() == 1)
    trace = &bound->bundle->traces().front();
  if (!trace) {
    std::string names;
    for (const BundleTrace &t : bound->bundle->traces())
      names += (names.empty() ? "'" : ", '") + t.name + "'";
    fail(o.traceName.empty()
             ? "the bundle has several traces (" + names + "); choose one with --trace-name"
             : "the bundle has no trace '" + o.traceName + "' (its traces: " + names + ")");
  }
  std::optional<std::vector<torch::Tensor>> params = bindParams(*trace, o.params, error);
  if (!params)
    fail(error);
  if (trace->numInvokes > 1)
    fail("trace '" + trace->name + "' has " + std::to_string(trace->numInvokes) +
         " invokes; nns-run runs traces whose invokes apply to each prompt alone");
  bound->params = std::move(*params);
  bound->hook = std::make_shared<BundleHook>(bound->bundle, *trace, model);
  bound->requests.resize(o.prompts.size());
  return bound;
}

void addBundledRequest(BoundTrace &bound, LLMEngine &engine, const Prompt &prompt, size_t index,
                       const SamplingParams &params) {
  std::shared_ptr<HookTable> table;
  if (prompt.bundled) {
    table = std::make_shared<HookTable>(engine.getRunner().backend().architecture());
    bound.hook->bindSites(*table);
  }
  int64_t id = engine.addRequest(prompt.ids, params, table);
  if (prompt.bundled) {
    auto request = std::make_shared<BundleRequest>(bound.hook->trace(), bound.params);
    bound.hook->attach(id, request);
    bound.requests[index] = std::move(request);
  }
}

int writeResults(const std::string &dir, const std::vector<Prompt> &prompts,
                 const std::vector<RequestResult> &results, const BoundTrace *bound,
                 const tokenizer::Tokenizer *tok) {
  std::error_code ec;
  if (!dir.empty()) {
    fs::create_directories(dir, ec);
    if (ec)
      fail("--save-dir: cannot create '" + dir + "': " + ec.message());
  }
  int failed = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestResult &r = results[i];
    const BundleRequest *request = bound ? bound->requests[i].get() : nullptr;
    if (request && request->error()) {
      std::cerr << "nns-run: error: request " << i << ": " << *request->error() << "\n";
      ++failed;
    }
    if (dir.empty())
      continue;
    std::map<std::string, torch::Tensor> saves;
    if (request)
      saves = request->saves();
    std::string base = (fs::path(dir) / std::to_string(i)).string();
    writeSafetensors(base + ".safetensors", saves);
    nlohmann::json j = {
        {"request", i},
        {"prompt_ids", r.promptTokens},
        {"ids", r.completionTokens},
        {"bundled", request != nullptr},
        {"finish_reason", r.finishReason == FinishReason::Stop ? "stop" : "length"}};
    if (prompts[i].text)
      j["prompt"] = *prompts[i].text;
    if (tok)
      j["text"] = tok->decode(r.completionTokens, true);
    if (request && request->error())
      j["error"] = *request->error();
    std::ofstream out(base + ".json");
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out)
      fail("cannot write '" + base + ".json'");
  }
  return failed;
}

} // namespace nnsrun
