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

/// "stop" (a stop token, finish() or stop()), "length", or "error" for a failed request.
const char *finishReasonName(FinishReason reason, const BundleRequest *request) {
  if (request && request->error())
    return "error";
  return reason == FinishReason::Length ? "length" : "stop";
}

/// "'clean', 'corrupt'".
std::string joinInvokeNames(const BundleTrace &trace) {
  std::string names;
  for (const std::string &name : trace.invokeNames)
    names += (names.empty() ? "'" : ", '") + name + "'";
  return names;
}

/// The JSON of one prompt's run.
nlohmann::json promptJson(const Prompt &prompt, const RequestResult &r,
                          const tokenizer::Tokenizer *tok) {
  nlohmann::json j = {{"prompt_ids", r.promptTokens}, {"ids", r.completionTokens}};
  if (prompt.text)
    j["prompt"] = *prompt.text;
  if (tok)
    j["text"] = tok->decode(r.completionTokens, true);
  return j;
}

} // namespace

std::unique_ptr<BoundTrace> loadTrace(const Options &o,
                                      const std::shared_ptr<const CausalLM> &model) {
  if (o.traceFile.empty() && o.bundle.empty())
    return nullptr;
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
  bound->invokes = size_t(std::max(trace->numInvokes, 1));
  if (bound->invokes > 1) {
    const std::string what = "trace '" + trace->name + "' has " +
                             std::to_string(bound->invokes) + " invokes (" +
                             joinInvokeNames(*trace) + ")";
    if (o.prompts.size() % bound->invokes != 0)
      fail(what + " and takes its prompts " + std::to_string(bound->invokes) +
           " at a time, one per invoke; got " + std::to_string(o.prompts.size()) + " prompts");
    for (const Prompt &p : o.prompts)
      if (!p.bundled)
        fail(what + "; its prompts cannot run plain (\"bundle\": false)");
  }
  bound->params = std::move(*params);
  bound->hook = std::make_shared<BundleHook>(bound->bundle, *trace, model);
  bound->model = model;
  bound->requests.resize(o.prompts.size());
  return bound;
}

void addBundledRequest(BoundTrace &bound, LLMEngine &engine, const Prompt &prompt, size_t index,
                       const SamplingParams &params) {
  const schema::Architecture &arch = bound.model->architecture();
  if (!prompt.bundled) {
    engine.addRequest(prompt.ids, params);
    return;
  }
  bound.pending.push_back(prompt.ids);
  if (bound.pending.size() < bound.invokes)
    return;
  auto request = std::make_shared<BundleRequest>(bound.hook->trace(), bound.params);
  std::vector<std::shared_ptr<HookTable>> tables;
  for (size_t k = 0; k < bound.invokes; ++k) {
    tables.push_back(std::make_shared<HookTable>(arch));
    bound.hook->bindSites(*tables.back(), *request);
  }
  std::vector<std::vector<int32_t>> prompts = std::move(bound.pending);
  bound.pending.clear();
  std::vector<int64_t> ids;
  if (bound.invokes == 1)
    ids.push_back(engine.addRequest(std::move(prompts.front()), params, tables.front()));
  else
    ids = engine.addGang(std::move(prompts), params, tables);
  for (size_t k = 0; k < ids.size(); ++k) {
    bound.hook->attach(ids[k], request, int32_t(k));
    bound.requests[index + 1 - ids.size() + k] = request;
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
  const size_t n = bound ? bound->invokes : 1;
  int failed = 0;
  for (size_t first = 0, i = 0; first < results.size(); first += n, ++i) {
    const RequestResult &r = results[first];
    const BundleRequest *request = bound ? bound->requests[first].get() : nullptr;
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
    nlohmann::json j = {{"request", i},
                        {"bundled", request != nullptr},
                        {"finish_reason", finishReasonName(r.finishReason, request)}};
    if (n == 1) {
      j.update(promptJson(prompts[first], r, tok));
    } else {
      // One entry per invoke, in invoke order; all ran the same steps.
      j["invokes"] = nlohmann::json::array();
      for (size_t k = 0; k < n; ++k) {
        nlohmann::json invoke = promptJson(prompts[first + k], results[first + k], tok);
        invoke["name"] = request->trace().invokeNames[k];
        j["invokes"].push_back(invoke);
      }
    }
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
