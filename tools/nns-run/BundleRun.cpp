//===- BundleRun.cpp - nns-run's requests, bound to their programs --------===//

#include "BundleRun.h"
#include "Report.h"

#ifdef NNSC_HAVE_COMPILER
#include "nnsc/Driver/CompileSource.h"
#endif
#include "nnsc/Runtime/Models/SafetensorsWriter.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Session/Submit.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace nnsrun {

namespace fs = std::filesystem;
using namespace nnsc;

std::unique_ptr<session::ProgramRegistry>
makeProgramRegistry(const Options &o, std::shared_ptr<const ModelBackend> backend) {
  session::ProgramRegistry::Compiler compiler;
#ifdef NNSC_HAVE_COMPILER
  driver::SourceCompileOptions options;
  options.cuda = o.device == "cuda";
  compiler = driver::programCompiler(backend->architecture(), options);
#endif
  std::error_code ec;
  return std::make_unique<session::ProgramRegistry>(std::move(backend), std::move(compiler),
                                                    /*cacheEntries=*/2,
                                                    fs::temp_directory_path(ec).string());
}

namespace {

/// `file` bound by `bindFile`; exits with `what` and the message when anything is wrong.
std::unique_ptr<BundledRun> bindOrExit(session::ProgramRegistry &programs, const std::string &file,
                                       const std::string &traceName, const std::string &chooseWith,
                                       const std::vector<std::string> &params,
                                       const std::string &paramFlag, const std::string &what,
                                       size_t prompts) {
  if (fs::path(file).extension() == ".nns" && !programs.canCompile())
    fail(what + "'" + file +
         "': this build has no compiler; compile with nnsc -emit=bundle and use --bundle");
  auto run = std::make_unique<BundledRun>();
  try {
    run->trace = session::bindFile(programs, file, traceName, chooseWith, params, paramFlag);
  } catch (const InvalidInput &e) {
    fail(what + e.what());
  }
  run->requests.resize(prompts);
  return run;
}

} // namespace

std::unique_ptr<BundledRun> loadTrace(const Options &o, session::ProgramRegistry &programs) {
  if (o.traceFile.empty() && o.bundle.empty())
    return nullptr;
  std::unique_ptr<BundledRun> run =
      bindOrExit(programs, o.bundle.empty() ? o.traceFile : o.bundle, o.traceName,
                 "choose one with --trace-name", o.params, "--param", "", o.prompts.size());
  const size_t n = run->trace.invokes();
  if (n > 1) {
    for (const Prompt &p : o.prompts)
      if (!p.bundled)
        fail("trace '" + run->trace.trace->name + "' has " + std::to_string(n) + " invokes (" +
             session::quotedList(run->trace.trace->invokeNames) +
             "); its prompts cannot run plain (\"bundle\": false)");
    if (const size_t left = o.prompts.size() % n)
      fail("the last request (prompt " + std::to_string(o.prompts.size() - left) +
           " on): " + session::checkInvokes(*run->trace.trace, left));
  }
  return run;
}

std::unique_ptr<BundledRun> loadEdit(const Options &o, session::ProgramRegistry &programs) {
  if (o.editFile.empty())
    return nullptr;
  std::unique_ptr<BundledRun> edit =
      bindOrExit(programs, o.editFile, "", "an edit binds the only trace of its program",
                 o.editParams, "--edit-param", "--edit ", o.prompts.size());
  if (std::string why = session::checkEdit(edit->trace); !why.empty())
    fail("--edit '" + o.editFile + "': " + why);
  return edit;
}

void queueRequests(const Options &o, LLMEngine &engine, BundledRun *bound, BundledRun *edit,
                   FlagHooks &flagHooks) {
  const size_t invokes = bound ? bound->trace.invokes() : 1;
  for (size_t first = 0; first < o.prompts.size();) {
    // A bundled request takes the next `invokes` prompts; a plain one (or a prompt with
    // "bundle": false) one.
    const bool bundled = bound && o.prompts[first].bundled;
    const size_t n = bundled ? invokes : 1;
    session::Submission s;
    for (size_t i = first; i < first + n; ++i) {
      SamplingParams params = o.sampling;
      params.maxTokens = o.prompts[i].maxTokens.value_or(o.sampling.maxTokens);
      s.prompts.push_back(o.prompts[i].ids);
      s.sampling.push_back(params);
    }
    if (bundled)
      s.program = bound->trace;
    if (edit)
      s.edit = edit->trace;
    if (!bound)
      s.bindOwn = [&flagHooks, first](std::shared_ptr<HookTable> &table, size_t k) {
        flagHooks.bind(table, first + k);
      };
    try {
      session::submit(engine, s);
    } catch (const InvalidInput &e) {
      fail((n == 1 ? "prompt " + std::to_string(first)
                   : "prompts " + std::to_string(first) + "-" + std::to_string(first + n - 1)) +
           ": " + e.what());
    }
    for (size_t k = 0; k < n; ++k) {
      if (bundled)
        bound->requests[first + k] = s.state;
      if (edit)
        edit->requests[first + k] = s.edits[k];
    }
    first += n;
  }
}

int reportEditErrors(const BundledRun *edit) {
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
                 const std::vector<RequestResult> &results, const BundledRun *bound,
                 const tokenizer::Tokenizer *tok) {
  std::error_code ec;
  if (!dir.empty()) {
    fs::create_directories(dir, ec);
    if (ec)
      fail("--save-dir: cannot create '" + dir + "': " + ec.message());
  }
  const size_t n = bound ? bound->trace.invokes() : 1;
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
      invokes = bound->trace.trace->invokeNames;
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
