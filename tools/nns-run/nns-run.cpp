//===- nns-run.cpp - run prompts through the engine -------------*- C++ -*-===//
//
// Loads a model (GGUF or Hugging Face directory), queues the prompts as requests of one
// LLMEngine and runs them with continuous batching. One prompt streams its text as it is
// generated; several print their completions in order. Statistics go to stderr.
//
//===----------------------------------------------------------------------===//

#include "BundleRun.h"
#include "Options.h"
#include "TensorParallelLaunch.h"

#include "nnsc/Runtime/Backend/BackendError.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Models/ModelLoader.h"
#include "nnsc/Runtime/Models/SafetensorsWriter.h"
#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"
#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Support/ThreadPolicy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>
#include <unistd.h>

using namespace nnsc;
using namespace nnsrun;

namespace {

/// Site values saved by --capture: rows of every step, per site and request.
struct Captures {
  std::map<std::string, std::vector<torch::Tensor>> rows;
  /// Sequence number of each site's first firing (its place in firing order).
  std::map<std::string, int64_t> order;
  int64_t fired = 0;
};

} // namespace

int main(int argc, char **argv) {
  chooseThreadWaitPolicy(argv);
  Options o = parseOptions(argc, argv);
  // Under tensor parallelism every rank runs this same program on the same options; rank 0
  // prints and writes the results, the others only compute.
  std::optional<DistributedOptions> ranks = startTensorParallel(o.tensorParallelSize, argv);
  const bool primary = !ranks || ranks->rank == 0;
  if (!primary)
    o.quiet = true;
  if (o.threads == 0)
    o.threads =
        ranks ? std::max(1, int(std::thread::hardware_concurrency()) / ranks->worldSize) : 2;
  at::set_num_threads(o.threads);
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };

  auto loadStart = Clock::now();
  LoadedModel loaded;
  // Progress on one rewritten line at a terminal; a log or a pipe gets one final line only.
  const bool progress = !o.quiet && isatty(2);
  try {
    loaded = loadModel({o.model, o.dtype, o.device,
                        [&](int64_t done, int64_t total) {
                          if (progress)
                            std::cerr << "\rloading " << o.model << ": " << done << "/" << total
                                      << std::flush;
                        },
                        ranks});
  } catch (const BackendError &e) {
    if (progress)
      std::cerr << "\n";
    fail("--device " + o.device + ": " + e.what());
  } catch (const std::exception &e) {
    if (progress)
      std::cerr << "\n";
    fail(e.what());
  }
  std::shared_ptr<ModelBackend> backend = loaded.backend;
  TensorParallelGroup *tp = backend->tensorParallel();
  if (progress)
    std::cerr << " (" << seconds(loadStart, Clock::now()) << " s)\n";
  else if (!o.quiet)
    std::cerr << "loaded " << o.model << " in " << seconds(loadStart, Clock::now()) << " s\n";
  if ((!o.traceFile.empty() || !o.bundle.empty() || !o.editFile.empty()) &&
      !backend->capabilities().bundleKernels)
    fail("--device " + o.device +
         ": this backend runs no bundles (--trace, --bundle, --edit); use --device cpu");

  if (o.printSchemaHash) {
    if (!primary)
      return 0;
    std::cout << backend->config().schemaHash() << "\n";
    return 0;
  }

  std::unique_ptr<tokenizer::Tokenizer> tok = std::move(loaded.tokenizer);
  std::unique_ptr<tokenizer::ChatTemplate> chat;
  if (o.chat) {
    if (!tok || tok->chatTemplate().empty())
      fail("--chat: the model has no chat template");
    std::string error;
    chat = tokenizer::ChatTemplate::create(tok->chatTemplate(), error);
    if (!chat)
      fail("--chat: " + error);
  }
  for (Prompt &p : o.prompts) {
    if (!p.text)
      continue;
    if (!tok)
      fail("the model has no tokenizer; give prompts as token ids (--prompt-ids)");
    std::string text = chat ? chat->render({{"user", *p.text}}, true) : *p.text;
    p.ids = tok->encode(text, /*addSpecial=*/!chat);
  }

  o.scheduler.eosTokenIds = loaded.eosTokenIds;
  if (backend->config().maxPositions > 0)
    o.scheduler.maxModelLen = std::min(o.scheduler.maxModelLen, backend->config().maxPositions);

  // The bundle is checked and its params bound before any request runs.
  std::unique_ptr<BoundTrace> bound = loadTrace(o, *backend);
  std::unique_ptr<BoundTrace> edit = loadEdit(o, *backend);

  std::unique_ptr<LLMEngine> engine;
  std::vector<std::vector<torch::Tensor>> logits(o.prompts.size());
  const schema::Architecture &arch = backend->architecture();
  Captures captures;
  // One hook per site: the --scale factors first, then the capture (which so sees the
  // replaced value, as a transformers hook registered after the replacing one does).
  std::map<int, std::shared_ptr<SiteHook>> siteHooks;
  auto addHook = [&](int site, std::shared_ptr<SiteHook> hook) {
    std::shared_ptr<SiteHook> &slot = siteHooks[site];
    if (!slot) {
      slot = std::move(hook);
      return;
    }
    slot = makeSiteHook([first = slot, second = std::move(hook)](
                            int index, torch::Tensor &value, std::span<const TokenGroup> groups) {
      first->run(index, value, groups);
      second->run(index, value, groups);
    });
  };
  auto siteIndex = [&](const std::string &path) {
    int site = arch.findSite(path);
    if (site < 0)
      fail("no site '" + path + "' in this model (see nnsc --print-sites)");
    return site;
  };
  for (const auto &[path, factor] : o.scale)
    addHook(siteIndex(path),
            makeSiteHook([factor](int, torch::Tensor &value, std::span<const TokenGroup> groups) {
              for (const TokenGroup &g : groups)
                value.narrow(0, g.tokenStart, g.tokenCount).mul_(factor);
            }));
  std::vector<int> captured;
  for (const std::string &path : o.capture) {
    if (path != "all") {
      captured.push_back(siteIndex(path));
      continue;
    }
    // Module inputs and outputs; attention patterns only by name (they take the layer off
    // the fused attention kernel, and their rows are as wide as the context).
    for (const schema::Site &site : arch.sites())
      if (site.phase == schema::Phase::Forward && site.kind != schema::SiteKind::Pattern)
        captured.push_back(site.order);
  }
  for (int site : captured)
    addHook(site, makeSiteHook([&captures, &arch](int index, torch::Tensor &value,
                                                  std::span<const TokenGroup> groups) {
              const std::string &path = arch.sites()[size_t(index)].path;
              captures.order.emplace(path, captures.fired++);
              for (const TokenGroup &g : groups)
                captures.rows[path + "." + std::to_string(g.request)].push_back(
                    value.narrow(0, g.tokenStart, g.tokenCount).to(torch::kFloat32, false, true));
            }));
  try {
    engine = std::make_unique<LLMEngine>(backend, o.scheduler, o.seed);
    for (size_t i = 0; bound && i < o.prompts.size(); ++i) {
      SamplingParams params = o.sampling;
      params.maxTokens = o.prompts[i].maxTokens.value_or(o.sampling.maxTokens);
      try {
        addBundledRequest(*bound, edit.get(), *engine, o.prompts[i], i, params);
      } catch (const std::invalid_argument &e) {
        fail("prompt " + std::to_string(i) + ": " + e.what());
      }
    }
    for (size_t i = 0; !bound && i < o.prompts.size(); ++i) {
      std::shared_ptr<HookTable> hooks;
      std::shared_ptr<BundleRequest> editState;
      if (edit) {
        hooks = std::make_shared<HookTable>(arch);
        editState = bindEdit(edit.get(), *hooks);
      }
      if (!siteHooks.empty() && !hooks)
        hooks = std::make_shared<HookTable>(arch);
      for (const auto &[site, hook] : siteHooks)
        hooks->bind(site, hook);
      if (!o.dumpLogits.empty()) {
        if (!hooks)
          hooks = std::make_shared<HookTable>(arch);
        hooks->bind("logits", makeSiteHook([&logits, i](int, torch::Tensor &value,
                                                        std::span<const TokenGroup> groups) {
                      for (const TokenGroup &g : groups)
                        logits[i].push_back(value.narrow(0, g.tokenStart, g.tokenCount).clone());
                    }));
      }
      SamplingParams params = o.sampling;
      params.maxTokens = o.prompts[i].maxTokens.value_or(o.sampling.maxTokens);
      try {
        attachEdit(edit.get(), engine->addRequest(o.prompts[i].ids, params, hooks), i, editState);
      } catch (const std::invalid_argument &e) {
        fail("prompt " + std::to_string(i) + ": " + e.what());
      }
    }
  } catch (const std::invalid_argument &e) {
    fail(e.what());
  }

  // One request streams its text; several print in order when all are done.
  const bool stream = primary && o.prompts.size() == 1 && tok && !o.json;
  std::optional<tokenizer::StreamingDecoder> decoder;
  if (stream)
    decoder.emplace(*tok, /*skipSpecial=*/true);
  auto runStart = Clock::now();
  std::vector<RequestResult> results;
  std::optional<double> firstToken;
  int64_t steps = 0;
  try {
    while (!engine->isFinished()) {
      std::vector<StepOutput> outputs = engine->step();
      ++steps;
      if (!firstToken && !outputs.empty())
        firstToken = seconds(runStart, Clock::now());
      for (const StepOutput &out : outputs)
        if (stream) {
          std::cout << decoder->step(out.token) << std::flush;
        }
      for (RequestResult &r : engine->takeFinished())
        results.push_back(std::move(r));
    }
  } catch (const std::exception &e) {
    if (stream)
      std::cout << "\n" << std::flush;
    fail(e.what());
  }
  if (!primary)
    return 0;
  double elapsed = seconds(runStart, Clock::now());
  std::sort(results.begin(), results.end(),
            [](const RequestResult &a, const RequestResult &b) { return a.request < b.request; });
  if (stream)
    std::cout << decoder->flush() << "\n";

  int64_t generated = 0, promptTokens = 0;
  for (const RequestResult &r : results) {
    generated += int64_t(r.completionTokens.size());
    promptTokens += int64_t(r.promptTokens.size());
    std::string text = tok ? tok->decode(r.completionTokens, true) : std::string();
    if (o.json) {
      nlohmann::json j = {
          {"request", r.request},
          {"prompt_ids", r.promptTokens},
          {"ids", r.completionTokens},
          {"finish_reason", r.finishReason == FinishReason::Stop ? "stop" : "length"}};
      if (tok)
        j["text"] = text;
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else if (!stream) {
      std::cout << "=== request " << r.request << "\n" << text << "\n";
    }
  }
  if (!o.dumpLogits.empty()) {
    std::map<std::string, torch::Tensor> tensors;
    for (size_t i = 0; i < logits.size(); ++i)
      if (!logits[i].empty())
        tensors["logits." + std::to_string(i)] = torch::cat(logits[i]);
    writeSafetensors(o.dumpLogits, tensors);
  }
  if (!o.save.empty()) {
    std::map<std::string, torch::Tensor> tensors;
    for (const auto &[name, parts] : captures.rows)
      tensors[name] = torch::cat(parts);
    for (const auto &[path, order] : captures.order)
      tensors[path + ".order"] = torch::tensor(order, torch::kInt64);
    writeSafetensors(o.save, tensors);
  }
  int failed = bound ? writeResults(o.saveDir, o.prompts, results, bound.get(), tok.get()) : 0;
  failed += reportEditErrors(edit.get());
  if (tp && !waitForSpawnedRanks()) {
    std::cerr << "nns-run: error: a tensor parallel rank failed\n";
    ++failed;
  }
  if (!o.quiet) {
    std::cerr << "requests " << results.size() << ", prompt tokens " << promptTokens
              << ", generated " << generated << " in " << elapsed << " s";
    // Rates only for what was measured: a run that generated nothing (every request stopped
    // in its prefill, e.g. a probe) has no throughput, and no decode rate without a second
    // token.
    int64_t afterFirst = 0;
    for (const RequestResult &r : results)
      afterFirst += std::max<int64_t>(int64_t(r.completionTokens.size()) - 1, 0);
    if (generated == 0 || !firstToken)
      std::cerr << ": no tokens generated";
    else
      std::cerr << ": " << double(generated) / elapsed << " tok/s";
    std::cerr << ", preemptions " << engine->getScheduler().numPreemptions()
              << ", prefix cache hit tokens "
              << engine->getScheduler().blockManager().numHitTokens() << "\n";
    if (firstToken && generated > 0) {
      std::cerr << "first token after " << *firstToken << " s";
      if (afterFirst > 0 && elapsed > *firstToken)
        std::cerr << ", then " << double(afterFirst) / (elapsed - *firstToken) << " tok/s";
      std::cerr << "\n";
    }
    if (tp) {
      const CommStats &comm = tp->stats();
      std::cerr << "tensor parallel: " << tp->size() << " ranks, rank 0 spent " << comm.seconds
                << " s in " << comm.collectives << " collectives (" << double(comm.bytes) / 1e6
                << " MB) over " << steps
                << " steps: " << (steps ? 1e3 * comm.seconds / double(steps) : 0.0)
                << " ms per step\n";
    }
  }
  return failed ? 1 : 0;
}
