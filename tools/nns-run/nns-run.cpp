//===- nns-run.cpp - run prompts through the engine -------------*- C++ -*-===//
//
// Loads a model (GGUF or Hugging Face directory), queues the prompts as requests of one
// LLMEngine and runs them with continuous batching. One prompt streams its text as it is
// generated; several print their completions in order. Statistics go to stderr.
//
//===----------------------------------------------------------------------===//

#include "BundleRun.h"
#include "FlagHooks.h"
#include "Options.h"
#include "Report.h"

#include "nnsc/Runtime/Backend/BackendError.h"
#include "nnsc/Runtime/Backend/ModelLoader.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"
#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Session/RankLaunch.h"
#include "nnsc/Support/ThreadPolicy.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <unistd.h>

using namespace nnsc;
using namespace nnsrun;

namespace {

using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Loads --model on --device (this rank's shard under tensor parallelism). Progress goes on
/// one rewritten line at a terminal; a log or a pipe gets one final line only.
LoadedModel load(const Options &o, const std::optional<DistributedOptions> &ranks) {
  const Clock::time_point start = Clock::now();
  const bool progress = !o.quiet && isatty(2);
  LoadedModel loaded;
  try {
    loaded = loadModel({o.model, o.dtype, o.device,
                        [&](int64_t done, int64_t total) {
                          if (progress)
                            std::cerr << "\rloading " << o.model << ": " << done << "/" << total
                                      << std::flush;
                        },
                        ranks, o.weights});
  } catch (const std::exception &e) {
    if (progress)
      std::cerr << "\n";
    fail(dynamic_cast<const BackendError *>(&e) ? "--device " + o.device + ": " + e.what()
                                                : std::string(e.what()));
  }
  if (progress)
    std::cerr << " (" << secondsBetween(start, Clock::now()) << " s)\n";
  else if (!o.quiet)
    std::cerr << "loaded " << o.model << " in " << secondsBetween(start, Clock::now()) << " s\n";
  return loaded;
}

/// Encodes the text prompts (through the chat template with --chat) into token ids.
void tokenizePrompts(Options &o, const tokenizer::Tokenizer *tok) {
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
}

/// Steps the engine until every request is done; streams the text of `decoder`'s request.
/// Returns the finished requests in request order.
std::vector<RequestResult> runToCompletion(LLMEngine &engine, tokenizer::StreamingDecoder *decoder,
                                           RunTiming &timing) {
  std::vector<RequestResult> results;
  const Clock::time_point start = Clock::now();
  try {
    while (!engine.isFinished()) {
      std::vector<StepOutput> outputs = engine.step();
      ++timing.steps;
      if (!timing.firstToken && !outputs.empty())
        timing.firstToken = secondsBetween(start, Clock::now());
      if (decoder)
        for (const StepOutput &out : outputs)
          std::cout << decoder->step(out.token) << std::flush;
      for (RequestResult &r : engine.takeFinished())
        results.push_back(std::move(r));
    }
  } catch (const std::exception &e) {
    if (decoder)
      std::cout << "\n" << std::flush;
    fail(e.what());
  }
  timing.elapsed = secondsBetween(start, Clock::now());
  std::sort(results.begin(), results.end(),
            [](const RequestResult &a, const RequestResult &b) { return a.request < b.request; });
  return results;
}

} // namespace

int main(int argc, char **argv) {
  chooseThreadWaitPolicy(argv);
  Options o = parseOptions(argc, argv);
  // Under tensor parallelism every rank runs this same program on the same options; rank 0
  // prints and writes the results, the others only compute.
  std::optional<DistributedOptions> ranks;
  try {
    ranks = session::startTensorParallel(o.tensorParallelSize, argv);
  } catch (const InvalidInput &e) {
    fail(e.what());
  }
  if (ranks)
    setErrorRank(ranks->rank);
  const bool primary = !ranks || ranks->rank == 0;
  if (!primary)
    o.quiet = true;
  if (o.threads == 0)
    o.threads = session::defaultThreads(ranks);
  at::set_num_threads(o.threads);

  LoadedModel loaded = load(o, ranks);
  std::shared_ptr<ModelBackend> backend = loaded.backend;
  if ((!o.traceFile.empty() || !o.bundle.empty() || !o.editFile.empty()) &&
      !backend->capabilities().bundleKernels)
    fail("--device " + o.device +
         ": this backend runs no bundles (--trace, --bundle, --edit); use --device cpu");
  if (o.printSchemaHash) {
    if (primary)
      std::cout << backend->config().schemaHash() << "\n";
    return 0;
  }

  std::unique_ptr<tokenizer::Tokenizer> tok = std::move(loaded.tokenizer);
  tokenizePrompts(o, tok.get());

  // The bundle is checked and its params bound before any request runs.
  std::unique_ptr<session::ProgramRegistry> programs = makeProgramRegistry(o, backend);
  std::unique_ptr<BundledRun> bound = loadTrace(o, *programs);
  std::unique_ptr<BundledRun> edit = loadEdit(o, *programs);
  FlagHooks flagHooks(o, backend->architecture(), o.prompts.size());
  std::unique_ptr<LLMEngine> engine;
  try {
    engine = session::startEngine(loaded, o.scheduler, o.seed);
  } catch (const nnsc::InvalidInput &e) {
    fail(e.what());
  }
  queueRequests(o, *engine, bound.get(), edit.get(), flagHooks);

  // One request streams its text; several print in order when all are done.
  const bool stream = primary && o.prompts.size() == 1 && tok && !o.json;
  std::optional<tokenizer::StreamingDecoder> decoder;
  if (stream)
    decoder.emplace(*tok, /*skipSpecial=*/true);
  RunTiming timing;
  std::vector<RequestResult> results =
      runToCompletion(*engine, decoder ? &*decoder : nullptr, timing);
  if (!primary)
    return 0;
  if (stream)
    std::cout << decoder->flush() << "\n";

  std::vector<std::string> invokes;
  if (bound && bound->trace.invokes() > 1)
    invokes = bound->trace.trace->invokeNames;
  printCompletions(o, results, invokes, tok.get(), stream);
  flagHooks.write(o);
  int failed = bound ? writeResults(o.saveDir, o.prompts, results, bound.get(), tok.get()) : 0;
  failed += reportEditErrors(edit.get());
  TensorParallelGroup *tp = backend->tensorParallel();
  if (tp && !session::waitForSpawnedRanks()) {
    std::cerr << "nns-run: error: a tensor parallel rank failed\n";
    ++failed;
  }
  if (!o.quiet)
    printStatistics(results, timing, *engine, tp);
  return failed ? 1 : 0;
}
