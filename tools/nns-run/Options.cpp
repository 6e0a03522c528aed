//===- Options.cpp - nns-run command line -----------------------*- C++ -*-===//

#include "Options.h"

#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Session/RankLaunch.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

namespace nnsrun {

namespace {
int errorRank = -1;
} // namespace

void setErrorRank(int rank) { errorRank = rank; }

[[noreturn]] void fail(const std::string &message) {
  nnsc::session::exitWithError("nns-run", errorRank, message);
}

namespace {

/// The sampling flags with their defaults, which are SamplingParams' own (every front door's).
std::string samplingDefaults() {
  const nnsc::SamplingParams d;
  std::ostringstream out;
  out << "  --max-tokens N             completion tokens per request (default " << d.maxTokens
      << ")\n"
      << "  --temperature T            0 is greedy (default " << d.temperature << ")\n"
      << "  --top-k K, --top-p P       (default " << d.topK << ": all, " << d.topP
      << ": all), --seed S, --ignore-eos\n"
      << "  --batch-invariant          each request's saves, logits and tokens independent of the\n"
      << "                             others in its batch (docs/Engine.md, \"Batch-invariant\n"
      << "                             mode\")\n";
  return out.str();
}

void usage() {
  std::cout
      <<
      R"(USAGE: nns-run [options]

Runs prompts through the paged-attention engine with continuous batching.

  --prompt TEXT              a prompt (repeatable)
  --prompt-ids 1,2,3         a prompt given as token ids (repeatable)
  --prompts FILE.jsonl       one request per line: {"prompt": ...} or {"ids": [...]},
                             optionally with "max_tokens" (0: the prompt pass alone)
                             and "bundle": false (run plain)
  --prompts FILE.txt         one text prompt per line, as it is (by the .txt extension;
                             blank lines are skipped)
  --chat                     wrap each text prompt in the model's chat template
)" << samplingDefaults()
      << nnsc::session::engineFlagsUsage()
      << R"(  --capture SITE             save a site's rows of every step (repeatable; 'all': every
                             forward-pass site) to the --save file: '<site>.<i>' holds
                             request i's rows, prefill then one per decode step (float32;
                             integer sites keep their integer dtype), '<site>.order' the
                             site's place in firing order (an int64 scalar, 0 first)
  --scale SITE=F             multiply a site's value by F (replacing it) for every request
  --save FILE                safetensors file for --capture
  --json                     print one JSON object per request instead of text
  --dump-logits FILE         save every sampled step's logits as safetensors ('logits.<i>')
  --quiet                    no progress or statistics on stderr
  --print-schema-hash        print the model's schema hash (what a bundle must be built for)
                             and exit

Interventions (docs/Runtime.md, "Bundles in the engine"):
  --trace FILE.nns           compile a trace (in-process, for the model) and bind it to every
                             request
  --bundle FILE.nnsb         bind a compiled bundle instead
  --trace-name NAME          which trace of the bundle (default: the unnamed or only one)
  --param NAME=VALUE         a param: a number, true/false, a comma list, or
                             @FILE.safetensors[:KEY] (repeatable)
  --save-dir DIR             write each request's saves to DIR/<i>.safetensors and its prompt
                             and completion to DIR/<i>.json (i: request index in prompt order)
  --edit FILE.nns|FILE.nnsb  a persistent edit (NNsight's model.edit()): bound to every request,
                             plain or not, before the request's own program; at a site both
                             touch it runs first. Its saves are not returned.
  --edit-param NAME=VALUE    a param of the edit, as --param (repeatable)
)";
}

/// Applies an engine flag (nnsc/Session/EngineOptions.h); --seed also seeds the requests.
bool engineFlag(const std::string &arg, const std::function<std::string()> &value, Options &o) {
  try {
    if (!nnsc::session::parseEngineFlag(arg, value, o))
      return false;
  } catch (const nnsc::InvalidInput &e) {
    fail(e.what());
  }
  if (arg == "--seed")
    o.sampling.seed = o.seed;
  return true;
}

std::vector<int32_t> parseIds(const std::string &text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    std::string item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX)
        throw nnsc::InvalidInput(item);
      ids.push_back(int32_t(v));
    } catch (const std::exception &) {
      fail("--prompt-ids: '" + item + "' is not a token id");
    }
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  if (ids.empty())
    fail("--prompt-ids: no token ids given");
  return ids;
}

void readPromptsFile(const std::string &path, std::vector<Prompt> &prompts) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot read '" + path + "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (isPlainPromptsFile(path)) {
    parsePlainPrompts(text, prompts);
    return;
  }
  std::string error;
  if (!parsePromptsText(text, path, prompts, error))
    fail(error);
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
    auto number = [&]() -> double {
      std::string v = value();
      try {
        size_t used = 0;
        double d = std::stod(v, &used);
        if (used == v.size())
          return d;
      } catch (const std::exception &) {
      }
      fail(arg + ": '" + v + "' is not a number");
    };
    auto integer = [&]() -> int64_t {
      double d = number();
      // Range first: converting a double outside int64_t's range is undefined behaviour.
      if (!(d >= -9.2e18 && d <= 9.2e18) || d != double(int64_t(d)))
        fail(arg + " needs an integer");
      return int64_t(d);
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else if (engineFlag(arg, value, o)) {
      continue;
    } else if (arg == "--prompt") {
      o.prompts.push_back({value(), {}});
    } else if (arg == "--prompt-ids") {
      o.prompts.push_back({std::nullopt, parseIds(value())});
    } else if (arg == "--prompts") {
      readPromptsFile(value(), o.prompts);
    } else if (arg == "--chat") {
      o.chat = true;
    } else if (arg == "--max-tokens") {
      o.sampling.maxTokens = integer();
    } else if (arg == "--temperature") {
      o.sampling.temperature = float(number());
    } else if (arg == "--top-k") {
      o.sampling.topK = integer();
    } else if (arg == "--top-p") {
      o.sampling.topP = float(number());
    } else if (arg == "--ignore-eos") {
      o.sampling.ignoreEos = true;
    } else if (arg == "--batch-invariant") {
      o.sampling.batchInvariant = true;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--dump-logits") {
      o.dumpLogits = value();
    } else if (arg == "--capture") {
      o.capture.push_back(value());
    } else if (arg == "--scale") {
      std::string v = value();
      size_t eq = v.rfind('=');
      if (eq == std::string::npos)
        fail("--scale needs SITE=FACTOR, got '" + v + "'");
      try {
        o.scale.emplace_back(v.substr(0, eq), std::stod(v.substr(eq + 1)));
      } catch (const std::exception &) {
        fail("--scale: '" + v.substr(eq + 1) + "' is not a number");
      }
    } else if (arg == "--save") {
      o.save = value();
    } else if (arg == "--print-schema-hash") {
      o.printSchemaHash = true;
    } else if (arg == "--trace") {
      o.traceFile = value();
    } else if (arg == "--bundle") {
      o.bundle = value();
    } else if (arg == "--trace-name") {
      o.traceName = value();
    } else if (arg == "--param") {
      o.params.push_back(value());
    } else if (arg == "--save-dir") {
      o.saveDir = value();
    } else if (arg == "--edit") {
      o.editFile = value();
    } else if (arg == "--edit-param") {
      o.editParams.push_back(value());
    } else if (arg == "--quiet") {
      o.quiet = true;
    } else {
      fail("unknown option '" + arg + "' (see --help)");
    }
  }
  if (o.prompts.empty() && !o.printSchemaHash)
    fail("no prompt given (use --prompt, --prompt-ids or --prompts)");
  if (!o.capture.empty() && o.save.empty())
    fail("--capture needs --save FILE");
  if (!o.traceFile.empty() && !o.bundle.empty())
    fail("give either --trace or --bundle, not both");
  const bool bound = !o.traceFile.empty() || !o.bundle.empty();
  if (!bound && (!o.params.empty() || !o.traceName.empty() || !o.saveDir.empty()))
    fail(std::string(!o.params.empty()      ? "--param"
                     : !o.traceName.empty() ? "--trace-name"
                                            : "--save-dir") +
         " needs --trace or --bundle");
  if (o.editFile.empty() && !o.editParams.empty())
    fail("--edit-param needs --edit");
  if ((bound || !o.editFile.empty()) && (!o.capture.empty() || !o.scale.empty()))
    fail("--capture and --scale cannot be combined with --trace, --bundle or --edit");
  try {
    o.sampling.validate();
  } catch (const nnsc::InvalidInput &e) {
    fail(e.what());
  }
  return o;
}

} // namespace nnsrun
