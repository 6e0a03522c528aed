//===- Options.cpp - nns-serve command line -------------------------------===//

#include "Options.h"

#include "nnsc/Runtime/Engine/SamplingParams.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Session/RankLaunch.h"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>

namespace nnsserve {

namespace {
int errorRank = -1;
} // namespace

void setErrorRank(int rank) { errorRank = rank; }

void fail(const std::string &message) {
  nnsc::session::exitWithError("nns-serve", errorRank, message);
}

namespace {

/// A request's sampling fields default to SamplingParams' values, as in every front door.
std::string samplingDefaults() {
  const nnsc::SamplingParams d;
  std::ostringstream out;
  out << "\nSampling: a request's fields default to temperature " << d.temperature
      << " (greedy), max_tokens " << d.maxTokens << ", top_k " << d.topK << ", top_p " << d.topP
      << ",\nas in nns-run and nnsc.LLM (vLLM and OpenAI default to temperature 1; send it)\n";
  return out.str();
}

/// Applies an engine flag (nnsc/Session/EngineOptions.h).
bool engineFlag(const std::string &arg, const std::function<std::string()> &value, Options &o) {
  try {
    return nnsc::session::parseEngineFlag(arg, value, o);
  } catch (const nnsc::InvalidInput &e) {
    fail(e.what());
  }
}

void usage() {
  std::cout
      << R"(usage: nns-serve [options]

An OpenAI-compatible server (docs/Server.md) where each request may carry an nns program
("nns": {"program": SOURCE} or {"bundle": NAME}) and gets its saves back.

Model and engine (as nns-run):
  --served-model-name NAME   the name requests use (default: the model file's name)
)" << nnsc::session::engineFlagsUsage()
      << R"(  On --device cuda, requests run without program source (it compiles for the CPU): plain
  generation, --bundle files compiled with nnsc --target=cuda, --edit bundles.

Serving:
  --host ADDR                address to listen on (default 127.0.0.1)
  --port N                   port (default 8000; 0 picks a free one, printed at start)
  --api-key KEY              require 'Authorization: Bearer KEY'
  --bundle NAME=FILE.nnsb    register a bundle requests can name (repeatable); refused at
                             start if it was built for another model
  --no-programs              accept registered bundles only, never program source
  --no-workbench             do not serve the browser workbench at / (docs/Server.md)
  --batch-invariant          every request's saves, logits and tokens independent of the
                             other requests in its batch, as "batch_invariant": true asks
                             per request (docs/Engine.md, "Batch-invariant mode")
  --edit FILE.nns|FILE.nnsb  a persistent edit (NNsight's model.edit()): bound to every
                             request before its own program (it runs first where both touch a
                             site); its saves are not returned
  --edit-param NAME=VALUE    a param of the edit, as nns-run's --param (repeatable)
  --max-queued N             waiting requests before new ones get 503 (default 256)
  --http-threads N           HTTP worker threads (default 64)

Limits (bytes):
  --max-body-bytes N         request body (default 16 MiB)
  --max-program-bytes N      program source (default 64 KiB)
  --max-params-bytes N       param values of one request (default 8 MiB)
  --max-save-bytes N         saves of one request (default 1 GiB)
  --inline-save-bytes N      saves up to N go inline in JSON, larger behind a handle (8 MiB)
  --saves-store-bytes N      memory for saves behind handles (default 2 GiB)
  --saves-ttl SECONDS        how long a handle lives (default 600)
  --compile-cache N          compiled programs kept (default 256)
)" << samplingDefaults();
}

} // namespace

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fail(arg + " needs a value");
      return argv[++i];
    };
    auto integer = [&](int64_t lo) -> int64_t {
      std::string v = value();
      try {
        size_t used = 0;
        long long n = std::stoll(v, &used);
        if (used == v.size() && n >= lo)
          return n;
      } catch (const std::exception &) {
      }
      fail(arg + " needs an integer >= " + std::to_string(lo) + ", got '" + v + "'");
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else if (engineFlag(arg, value, o)) {
      continue;
    } else if (arg == "--served-model-name") {
      o.server.servedModelName = value();
    } else if (arg == "--host") {
      o.server.host = value();
    } else if (arg == "--port") {
      o.server.port = int(integer(0));
      if (o.server.port > 65535)
        fail("--port must be at most 65535");
    } else if (arg == "--api-key") {
      o.server.apiKey = value();
      if (o.server.apiKey.empty())
        fail("--api-key must not be empty");
    } else if (arg == "--bundle") {
      std::string v = value();
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        fail("--bundle needs NAME=FILE.nnsb, got '" + v + "'");
      o.bundles.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (arg == "--edit") {
      o.editFile = value();
    } else if (arg == "--edit-param") {
      o.editParams.push_back(value());
    } else if (arg == "--no-programs") {
      o.server.allowPrograms = false;
    } else if (arg == "--no-workbench") {
      o.server.workbench = false;
    } else if (arg == "--batch-invariant") {
      o.server.batchInvariant = true;
    } else if (arg == "--max-queued") {
      o.server.maxQueued = integer(1);
    } else if (arg == "--http-threads") {
      o.server.httpThreads = int(integer(2));
    } else if (arg == "--max-body-bytes") {
      o.server.maxBodyBytes = size_t(integer(1));
    } else if (arg == "--max-program-bytes") {
      o.server.maxProgramBytes = size_t(integer(1));
    } else if (arg == "--max-params-bytes") {
      o.server.maxParamsBytes = size_t(integer(1));
    } else if (arg == "--max-save-bytes") {
      o.server.maxSaveBytes = size_t(integer(1));
    } else if (arg == "--inline-save-bytes") {
      o.server.inlineSaveBytes = size_t(integer(0));
    } else if (arg == "--saves-store-bytes") {
      o.savesStoreBytes = size_t(integer(1));
    } else if (arg == "--saves-ttl") {
      o.savesTtlSeconds = integer(1);
    } else if (arg == "--compile-cache") {
      o.compileCacheEntries = size_t(integer(1));
    } else {
      fail("unknown option '" + arg + "' (see --help)");
    }
  }
  if (o.editFile.empty() && !o.editParams.empty())
    fail("--edit-param needs --edit");
  if (o.server.servedModelName.empty()) {
    std::filesystem::path p(o.model);
    o.server.servedModelName =
        (p.has_extension() && p.extension() == ".gguf" ? p.stem() : p.filename()).string();
    if (o.server.servedModelName.empty())
      o.server.servedModelName = o.model;
  }
  return o;
}

} // namespace nnsserve
