//===- nns-serve.cpp - the OpenAI-compatible intervention server -*- C++ -*-===//
//
// Loads one model, starts the engine loop and the HTTP server (runtime/lib/Server), and wires
// in the compiler (nnsc/Driver/CompileSource.h) so requests may carry program source. Stops
// cleanly on SIGINT/SIGTERM. See docs/Server.md.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#ifdef NNSC_HAVE_COMPILER
#include "nnsc/Driver/CompileSource.h"
#endif
#include "nnsc/Runtime/Backend/BackendError.h"
#include "nnsc/Runtime/Backend/ModelLoader.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Server/OpenAIServer.h"
#include "nnsc/Server/RankFollower.h"
#include "nnsc/Session/RankLaunch.h"
#include "nnsc/Support/ThreadPolicy.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <unistd.h>

using namespace nnsc;
using namespace nnsserve;

namespace {

server::OpenAIServer *running = nullptr;

void onSignal(int) {
  if (running)
    running->stop();
}

} // namespace

int main(int argc, char **argv) {
  chooseThreadWaitPolicy(argv);
  Options o = parseOptions(argc, argv);
  // Under tensor parallelism every rank runs this program on the same options; rank 0 serves
  // HTTP, the others follow its engine (docs/Distributed.md, "Serving").
  std::optional<DistributedOptions> ranks;
  try {
    ranks = session::startTensorParallel(o.tensorParallelSize, argv);
  } catch (const InvalidInput &e) {
    fail(e.what());
  }
  const bool follower = ranks && ranks->rank != 0;
  if (ranks)
    setErrorRank(ranks->rank);
  if (o.threads == 0)
    o.threads = session::defaultThreads(ranks);
  at::set_num_threads(o.threads);

  LoadedModel loaded;
  const bool terminal = isatty(2) && !follower; // the other ranks report errors only
  auto loadStart = std::chrono::steady_clock::now();
  try {
    // Progress on one rewritten line at a terminal; a log gets the final line only.
    loaded = loadModel({o.model, o.dtype, o.device,
                        [&](int64_t done, int64_t total) {
                          if (terminal)
                            std::cerr << "\rnns-serve: loading " << o.model << ": " << done << "/"
                                      << total << std::flush;
                        },
                        ranks, o.weights});
  } catch (const std::exception &e) {
    if (terminal)
      std::cerr << "\n";
    fail(dynamic_cast<const BackendError *>(&e) ? "--device " + o.device + ": " + e.what()
                                                : std::string(e.what()));
  }
  if (!follower)
    std::cerr << (terminal ? "\n" : "") << "nns-serve: loaded " << o.model << " in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - loadStart).count()
              << " s\n";
  if ((!o.bundles.empty() || !o.editFile.empty()) && !loaded.backend->capabilities().bundleKernels)
    fail("--device " + o.device +
         ": this backend runs no bundles (--bundle, --edit); use --device cpu");
  if (o.device != "cpu") {
    // Program source compiles in-process for the CPU; a device runs bundles compiled for it.
    if (!o.editFile.empty() && std::filesystem::path(o.editFile).extension() == ".nns")
      fail("--edit '" + o.editFile + "': on --device " + o.device +
           " give a bundle compiled with nnsc --target=" + o.device + " (FILE.nnsb)");
    if (o.server.allowPrograms)
      std::cerr << "nns-serve: --device " << o.device
                << ": requests' program source is off (it compiles for the CPU); registered "
                   "bundles compiled with nnsc --target="
                << o.device << " run\n";
    o.server.allowPrograms = false;
  }

  std::unique_ptr<tokenizer::ChatTemplate> chat;
  if (loaded.tokenizer && !loaded.tokenizer->chatTemplate().empty()) {
    std::string error;
    chat = tokenizer::ChatTemplate::create(loaded.tokenizer->chatTemplate(), error);
    if (!chat)
      std::cerr << "nns-serve: warning: /v1/chat/completions is off: " << error << "\n";
  }

  server::Metrics metrics;
  std::error_code ec;
  const std::filesystem::path workDir = std::filesystem::temp_directory_path(ec);
  session::ProgramRegistry::Compiler compiler;
#ifdef NNSC_HAVE_COMPILER
  driver::SourceCompileOptions compileOptions;
  compileOptions.maxSourceBytes = o.server.maxProgramBytes;
  compiler = driver::programCompiler(loaded.model->architecture(), compileOptions);
#else
  // A runtime-only build (NNSC_RUNTIME_ONLY) has no compiler: registered bundles only.
  o.server.allowPrograms = false;
#endif
  session::ProgramRegistry programs(loaded.backend, std::move(compiler), o.compileCacheEntries,
                                    workDir.string());
  for (const auto &[name, path] : o.bundles) {
    std::string error;
    if (!programs.registerBundle(name, path, error))
      fail("--bundle " + name + ": " + error);
  }
  std::optional<session::BoundTrace> edit;
  if (!o.editFile.empty()) {
    try {
      edit =
          session::bindFile(programs, o.editFile, "", "an edit binds the only trace of its program",
                            o.editParams, "--edit-param");
    } catch (const nnsc::InvalidInput &e) {
      fail(std::string("--edit ") + e.what());
    }
    if (std::string why = session::checkEdit(*edit); !why.empty())
      fail("--edit '" + o.editFile + "': " + why);
  }
  server::SaveHandleStore saves(o.savesStoreBytes, std::chrono::seconds(o.savesTtlSeconds));

  std::unique_ptr<LLMEngine> engine;
  try {
    engine = session::startEngine(loaded, o.scheduler, o.seed);
  } catch (const nnsc::InvalidInput &e) {
    fail(e.what());
  }
  std::shared_ptr<server::RankLink> link;
  if (ranks)
    link = std::make_shared<server::RankLink>(*loaded.backend->tensorParallel(), programs);
  if (follower) {
    try {
      server::followRankZero(*engine, *link, edit, o.server.maxSaveBytes);
    } catch (const std::exception &e) {
      fail("rank 0 is gone or sent what this rank cannot run: " + std::string(e.what()));
    }
    return 0;
  }
  const int64_t maxModelLen = engine->getScheduler().config().maxModelLen;
  server::EngineLoop loop(std::move(engine), metrics, link);
  server::ServedModel served{loaded.model, loaded.tokenizer.get(),         chat.get(),
                             maxModelLen,  loaded.backend->config().vocab, std::move(edit)};
  server::OpenAIServer http(o.server, served, loop, programs, saves, metrics);
  std::string error;
  if (!http.bind(error))
    fail(error);
  running = &http;
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  std::cerr << "nns-serve: serving '" << o.server.servedModelName << "' on http://" << o.server.host
            << ":" << http.port() << std::endl;
  if (o.server.workbench)
    std::cerr << "nns-serve: workbench: open http://" << o.server.host << ":" << http.port()
              << "/ in a browser" << std::endl;
  http.serve();
  running = nullptr;
  std::cerr << "nns-serve: stopped\n";
  return 0;
}
