//===- BundleRun.cpp - nns-run's bundle requests and results ----*- C++ -*-===//

#include "BundleRun.h"
#include "Report.h"

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
/// compiler) into a temporary .nnsb, for the model being run (with the kernels' device copies
/// when `cuda`). Exits when nnsc fails; its diagnostics go to stderr as they are.
std::string compileTrace(const std::string &source, const std::string &model, bool cuda) {
  fs::path nnsc = fs::read_symlink("/proc/self/exe").parent_path() / "nnsc";
  if (!fs::exists(nnsc))
    fail("--trace needs the nnsc compiler next to nns-run ('" + nnsc.string() +
         "' does not exist); compile with nnsc -emit=bundle and use --bundle");
  // A path per compile: dlopen would hand back the library loaded earlier under the same name.
  static int compiled = 0;
  fs::path out = fs::temp_directory_path() / ("nns-run-" + std::to_string(getpid()) + "-" +
                                              std::to_string(compiled++) + ".nnsb");
  std::vector<std::string> args = {nnsc.string(), source, "-emit=bundle", "--model",
                                   model,         "-o",   out.string()};
  if (cuda)
    args.push_back("--target=cuda");
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

/// "'clean', 'corrupt'".
std::string joinInvokeNames(const BundleTrace &trace) {
  std::string names;
  for (const std::string &name : trace.invokeNames)
    names += (names.empty() ? "'" : ", '") + name + "'";
  return names;
}

/// Compiles (a .nns file) or loads (anything else) `file`, checks it against `model`, picks
/// trace `traceName` and binds `params` (given with option `paramFlag`); `what` prefixes
/// messages.
std::unique_ptr<BoundTrace> loadProgram(const std::string &file, bool compile,
                                        const std::string &traceName,
                                        const std::vector<std::string> &params,
                                        const std::string &paramFlag, const std::string &modelPath,
                                        const ModelBackend &backend, const std::string &what) {
  const std::shared_ptr<const CausalLM> model = backend.causalLM();
  const bool onDevice = !backend.capabilities().device.is_cpu();
  std::string path = compile ? compileTrace(file, modelPath, onDevice) : file;
  std::string error;
  std::unique_ptr<Bundle> loaded = loadBundle(path, model->architecture(), error);
  if (compile)
    fs::remove(path);
  if (!loaded)
    fail(what + "'" + file + "': " + error);
  auto bound = std::make_unique<BoundTrace>();
  bound->bundle = std::move(loaded);
  const BundleTrace *trace = bound->bundle->findTrace(traceName);
  if (!trace && traceName.empty() && bound->bundle->traces().size() == 1)
    trace = &bound->bundle->traces().front();
  if (!trace) {
    std::string names;
    for (const BundleTrace &t : bound->bundle->traces())
      names += (names.empty() ? "'" : ", '") + t.name + "'";
    fail(what + (traceName.empty()
                     ? "the bundle has several traces (" + names + "); choose one with --trace-name"
                     : "the bundle has no trace '" + traceName + "' (its traces: " + names + ")"));
  }
  std::optional<std::vector<torch::Tensor>> boundParams =
      bindParams(*trace, params, error, paramFlag);
  if (!boundParams)
    fail(what + error);
  bound->invokes = size_t(std::max(trace->numInvokes, 1));
  bound->params = std::move(*boundParams);
  std::shared_ptr<DeviceKernelLauncher> launcher;
  try {
    launcher = backend.bundleLauncher(bound->bundle);
  } catch (const std::exception &e) {
    fail(what + "'" + file + "': " + e.what());
  }
  bound->hook = std::make_shared<BundleHook>(bound->bundle, *trace, model, std::move(launcher));
  bound->model = model;
  return bound;
}

} // namespace

std::unique_ptr<BoundTrace> loadTrace(const Options &o, const ModelBackend &backend) {
  if (o.traceFile.empty() && o.bundle.empty())
    return nullptr;
  std::unique_ptr<BoundTrace> bound =
      loadProgram(o.bundle.empty() ? o.traceFile : o.bundle, o.bundle.empty(), o.traceName,
                  o.params, "--param", o.model, backend, "");
  if (bound->invokes > 1) {
    const BundleTrace &trace = bound->hook->trace();
    const std::string what = "trace '" + trace.name + "' has " + std::to_string(bound->invokes) +
                             " invokes (" + joinInvokeNames(trace) + ")";
    if (o.prompts.size() % bound->invokes != 0)
      fail(what + " and takes its prompts " + std::to_string(bound->invokes) +
           " at a time, one per invoke; got " + std::to_string(o.prompts.size()) + " prompts");
    for (const Prompt &p : o.prompts)
      if (!p.bundled)
        fail(what + "; its prompts cannot run plain (\"bundle\": false)");
  }
  bound->requests.resize(o.prompts.size());
  return bound;
}

std::unique_ptr<BoundTrace> loadEdit(const Options &o, const ModelBackend &backend) {
  if (o.editFile.empty())
    return nullptr;
  std::unique_ptr<BoundTrace> edit =
      loadProgram(o.editFile, fs::path(o.editFile).extension() == ".nns", "", o.editParams,
                  "--edit-param", o.model, backend, "--edit ");
  if (edit->invokes > 1)
    fail("--edit '" + o.editFile + "': an edit applies to each request on its own; its trace '" +
         edit->hook->trace().name + "' has invokes");
  edit->requests.resize(o.prompts.size());
  return edit;
}

std::shared_ptr<BundleRequest> bindEdit(BoundTrace *edit, HookTable &table) {
  if (!edit)
    return nullptr;
  auto request = std::make_shared<BundleRequest>(edit->hook->trace(), edit->params);
  edit->hook->bindSites(table, *request);
  return request;
}

void attachEdit(BoundTrace *edit, int64_t id, size_t prompt,
                std::shared_ptr<BundleRequest> request) {
  if (!edit)
    return;
  edit->hook->attach(id, request);
  edit->requests[prompt] = std::move(request);
}

void addBundledRequest(BoundTrace &bound, BoundTrace *edit, LLMEngine &engine, const Prompt &prompt,
                       size_t index, const SamplingParams &params) {
  const schema::Architecture &arch = bound.model->architecture();
  if (!prompt.bundled) {
    std::shared_ptr<HookTable> table;
    std::shared_ptr<BundleRequest> editState;
    if (edit) {
      table = std::make_shared<HookTable>(arch);
      editState = bindEdit(edit, *table);
    }
    attachEdit(edit, engine.addRequest(prompt.ids, params, table), index, editState);
    return;
  }
  bound.pending.push_back(prompt.ids);
  bound.pendingParams.push_back(params);
  if (bound.pending.size() < bound.invokes)
    return;
  auto request = std::make_shared<BundleRequest>(bound.hook->trace(), bound.params);
  std::vector<std::shared_ptr<HookTable>> tables;
  std::vector<std::shared_ptr<BundleRequest>> edits;
  for (size_t k = 0; k < bound.invokes; ++k) {
    tables.push_back(std::make_shared<HookTable>(arch));
    edits.push_back(bindEdit(edit, *tables.back()));
    bound.hook->bindSites(*tables.back(), *request);
  }
  std::vector<std::vector<int32_t>> prompts = std::move(bound.pending);
  std::vector<SamplingParams> each = std::move(bound.pendingParams);
  bound.pending.clear();
  bound.pendingParams.clear();
  std::vector<int64_t> ids;
  if (bound.invokes == 1)
    ids.push_back(engine.addRequest(std::move(prompts.front()), params, tables.front()));
  else
    ids = engine.addGang(std::move(prompts), each, tables);
  for (size_t k = 0; k < ids.size(); ++k) {
    bound.hook->attach(ids[k], request, int32_t(k));
    bound.requests[index + 1 - ids.size() + k] = request;
    attachEdit(edit, ids[k], index + 1 - ids.size() + k, edits[k]);
  }
}

int reportEditErrors(const BoundTrace *edit) {
  int failed = 0;
  for (size_t i = 0; edit && i < edit->requests.size(); ++i)
    if (edit->requests[i] && edit->requests[i]->error()) {
      std::cerr << "nns-run: error: prompt " << i
                << ": the edit failed: " << *edit->requests[i]->error() << "\n";
      ++failed;
    }
  return failed;
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
    std::vector<std::string> invokes;
    if (n > 1)
      invokes = bound->hook->trace().invokeNames;
    nlohmann::json j = requestJson(i, prompts, results, first, invokes, tok);
    j["bundled"] = request != nullptr;
    if (request && request->error()) {
      j["finish_reason"] = "error";
      j["error"] = *request->error();
    }
    std::ofstream out(base + ".json");
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out)
      fail("cannot write '" + base + ".json'");
  }
  return failed;
}

} // namespace nnsrun
