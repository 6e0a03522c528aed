//===- nns-run.cpp - run prompts through the engine -------------*- C++ -*-===//
//
// Loads a model (GGUF or Hugging Face directory), queues the prompts as requests of one
// LLMEngine and runs them with continuous batching. One prompt streams its text as it is
// generated; several print their completions in order. Statistics go to stderr.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Models/ModelWeights.h"
#include "nnsc/Runtime/Models/SafetensorsWriter.h"
#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"
#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Support/GGUFFile.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

using namespace nnsc;
namespace fs = std::filesystem;

namespace {

struct Prompt {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
  /// A per-request --max-tokens from the prompts file.
  std::optional<int64_t> maxTokens;
};

struct Options {
  std::string model = NNSC_DEFAULT_MODEL;
  std::vector<Prompt> prompts;
  bool chat = false;
  SamplingParams sampling;
  std::string dtype = "fp32";
  int threads = 2;
  uint64_t seed = 0;
  SchedulerConfig scheduler;
  bool json = false;
  std::string dumpLogits;
  /// Sites to save ("all": every forward-pass site) and sites to scale in place.
  std::vector<std::string> capture;
  std::vector<std::pair<std::string, double>> scale;
  std::string save;
  bool quiet = false;
};

/// Site values saved by --capture: rows of every step, per site and request.
struct Captures {
  std::map<std::string, std::vector<torch::Tensor>> rows;
  /// Sequence number of each site's first firing (its place in firing order).
  std::map<std::string, int64_t> order;
  int64_t fired = 0;
};

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "nns-run: error: " << message << "\n";
  std::exit(1);
}

void usage() {
  std::cout <<
      R"(USAGE: nns-run [options]

Runs prompts through the paged-attention engine with continuous batching.

  --model PATH               .gguf file or Hugging Face model directory (default: SmolLM2-135M)
  --prompt TEXT              a prompt (repeatable)
  --prompt-ids 1,2,3         a prompt given as token ids (repeatable)
  --prompts FILE.jsonl       one request per line: {"prompt": ...} or {"ids": [...]},
                             optionally with "max_tokens"
  --chat                     wrap each text prompt in the model's chat template
  --max-tokens N             completion tokens per request (default 64)
  --temperature T            0 is greedy (default 0)
  --top-k K, --top-p P, --seed S, --ignore-eos
  --dtype fp32|bf16          compute dtype (default fp32)
  --threads N                intra-op threads (default 2)
  --max-num-seqs N, --max-num-batched-tokens N, --max-model-len N,
  --num-blocks N, --block-size N, --no-prefix-caching
  --capture SITE             save a site's rows of every step (repeatable; 'all': every
                             forward-pass site) to the --save file as '<site>.<i>'
  --scale SITE=F             multiply a site's value by F (replacing it) for every request
  --save FILE                safetensors file for --capture
  --json                     print one JSON object per request instead of text
  --dump-logits FILE         save every sampled step's logits as safetensors ('logits.<i>')
  --quiet                    no progress or statistics on stderr
)";
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
        throw std::invalid_argument(item);
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

void readJsonl(const std::string &path, std::vector<Prompt> &prompts) {
  std::ifstream in(path);
  if (!in)
    fail("cannot read '" + path + "'");
  std::string line;
  for (int lineNo = 1; std::getline(in, line); ++lineNo) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    std::string where = path + ":" + std::to_string(lineNo) + ": ";
    if (j.is_discarded() || !j.is_object())
      fail(where + "not a JSON object");
    Prompt p;
    if (j.contains("prompt") && j["prompt"].is_string()) {
      p.text = j["prompt"].get<std::string>();
    } else if (j.contains("ids") && j["ids"].is_array()) {
      for (const auto &id : j["ids"]) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0)
          fail(where + "'ids' must hold non-negative integers");
        p.ids.push_back(id.get<int32_t>());
      }
      if (p.ids.empty())
        fail(where + "'ids' is empty");
    } else {
      fail(where + "needs a string 'prompt' or an array 'ids'");
    }
    if (j.contains("max_tokens")) {
      if (!j["max_tokens"].is_number_integer())
        fail(where + "'max_tokens' must be an integer");
      p.maxTokens = j["max_tokens"].get<int64_t>();
    }
    prompts.push_back(std::move(p));
  }
}

Options parseOptions(int argc, char **argv) {
  Options o;
  o.sampling.temperature = 0;
  o.sampling.maxTokens = 64;
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
      if (d != double(int64_t(d)))
        fail(arg + " needs an integer");
      return int64_t(d);
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else if (arg == "--model") {
      o.model = value();
    } else if (arg == "--prompt") {
      o.prompts.push_back({value(), {}});
    } else if (arg == "--prompt-ids") {
      o.prompts.push_back({std::nullopt, parseIds(value())});
    } else if (arg == "--prompts") {
      readJsonl(value(), o.prompts);
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
    } else if (arg == "--seed") {
      o.seed = uint64_t(integer());
      o.sampling.seed = o.seed;
    } else if (arg == "--ignore-eos") {
      o.sampling.ignoreEos = true;
    } else if (arg == "--dtype") {
      o.dtype = value();
      if (o.dtype != "fp32" && o.dtype != "bf16")
        fail("--dtype must be fp32 or bf16, got '" + o.dtype + "'");
    } else if (arg == "--threads") {
      o.threads = int(integer());
      if (o.threads < 1)
        fail("--threads must be at least 1");
    } else if (arg == "--max-num-seqs") {
      o.scheduler.maxNumSeqs = integer();
    } else if (arg == "--max-num-batched-tokens") {
      o.scheduler.maxNumBatchedTokens = integer();
    } else if (arg == "--max-model-len") {
      o.scheduler.maxModelLen = integer();
    } else if (arg == "--num-blocks") {
      o.scheduler.numBlocks = integer();
    } else if (arg == "--block-size") {
      o.scheduler.blockSize = integer();
    } else if (arg == "--no-prefix-caching") {
      o.scheduler.enablePrefixCaching = false;
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
    } else if (arg == "--quiet") {
      o.quiet = true;
    } else {
      fail("unknown option '" + arg + "' (see --help)");
    }
  }
  if (o.prompts.empty())
    fail("no prompt given (use --prompt, --prompt-ids or --prompts)");
  if (!o.capture.empty() && o.save.empty())
    fail("--capture needs --save FILE");
  try {
    o.sampling.validate();
  } catch (const std::invalid_argument &e) {
    fail(e.what());
  }
  return o;
}

/// The tokenizer that ships with the model: GGUF metadata or tokenizer.json in the directory.
std::unique_ptr<tokenizer::Tokenizer> loadTokenizer(const std::string &model) {
  std::string error;
  if (fs::is_directory(model)) {
    fs::path json = fs::path(model) / "tokenizer.json";
    if (!fs::exists(json))
      return nullptr;
    auto tok = tokenizer::Tokenizer::fromJsonFile(json.string(), error);
    if (!tok)
      fail(error);
    return tok;
  }
  auto file = gguf::GGUFFile::open(model, error);
  if (!file)
    fail(error);
  if (!file->getStringArray("tokenizer.ggml.tokens"))
    return nullptr;
  auto tok = tokenizer::Tokenizer::fromGGUF(*file, error);
  if (!tok)
    fail(error);
  return tok;
}

/// eos_token_id of a Hugging Face config.json (an integer or a list), for models without a
/// tokenizer.
std::vector<int32_t> configEosIds(const std::string &model) {
  std::vector<int32_t> ids;
  std::ifstream in(fs::path(model) / "config.json");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("eos_token_id"))
    return ids;
  const auto &e = j["eos_token_id"];
  if (e.is_number_integer())
    ids.push_back(e.get<int32_t>());
  else if (e.is_array())
    for (const auto &v : e)
      if (v.is_number_integer())
        ids.push_back(v.get<int32_t>());
  return ids;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  at::set_num_threads(o.threads);
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };

  auto loadStart = Clock::now();
  std::shared_ptr<CausalLM> model;
  try {
    ModelWeights weights = ModelWeights::load(
        o.model, o.dtype == "bf16" ? torch::kBFloat16 : torch::kFloat32,
        [&](int64_t done, int64_t total) {
          if (!o.quiet)
            std::cerr << "\rloading " << o.model << ": " << done << "/" << total << std::flush;
        });
    model = std::make_shared<CausalLM>(std::move(weights));
  } catch (const ModelLoadError &e) {
    if (!o.quiet)
      std::cerr << "\n";
    fail(e.what());
  }
  if (!o.quiet)
    std::cerr << " (" << seconds(loadStart, Clock::now()) << " s)\n";

  std::unique_ptr<tokenizer::Tokenizer> tok = loadTokenizer(o.model);
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

  o.scheduler.eosTokenIds.clear();
  if (tok && tok->specialIds().eos)
    o.scheduler.eosTokenIds.push_back(*tok->specialIds().eos);
  else if (fs::is_directory(o.model))
    o.scheduler.eosTokenIds = configEosIds(o.model);
  if (model->config().maxPositions > 0)
    o.scheduler.maxModelLen = std::min(o.scheduler.maxModelLen, model->config().maxPositions);

  std::unique_ptr<LLMEngine> engine;
  std::vector<std::vector<torch::Tensor>> logits(o.prompts.size());
  const schema::Architecture &arch = model->architecture();
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
    addHook(siteIndex(path), makeSiteHook([factor](int, torch::Tensor &value,
                                                                  std::span<const TokenGroup> groups) {
      for (const TokenGroup &g : groups)
        value.narrow(0, g.tokenStart, g.tokenCount).mul_(factor);
    }));
  std::vector<int> captured;
  for (const std::string &path : o.capture) {
    if (path != "all") {
      captured.push_back(siteIndex(path));
      continue;
    }
    for (const schema::Site &site : arch.sites())
      if (site.phase == schema::Phase::Forward)
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
    engine = std::make_unique<LLMEngine>(model, o.scheduler, o.seed);
    for (size_t i = 0; i < o.prompts.size(); ++i) {
      std::shared_ptr<HookTable> hooks;
      if (!siteHooks.empty())
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
        engine->addRequest(o.prompts[i].ids, params, hooks);
      } catch (const std::invalid_argument &e) {
        fail("prompt " + std::to_string(i) + ": " + e.what());
      }
    }
  } catch (const std::invalid_argument &e) {
    fail(e.what());
  }

  // One request streams its text; several print in order when all are done.
  const bool stream = o.prompts.size() == 1 && tok && !o.json;
  std::optional<tokenizer::StreamingDecoder> decoder;
  if (stream)
    decoder.emplace(*tok, /*skipSpecial=*/true);
  auto runStart = Clock::now();
  std::vector<RequestResult> results;
  std::optional<double> firstToken;
  while (!engine->isFinished()) {
    std::vector<StepOutput> outputs = engine->step();
    if (!firstToken && !outputs.empty())
      firstToken = seconds(runStart, Clock::now());
    for (const StepOutput &out : outputs)
      if (stream) {
        std::cout << decoder->step(out.token) << std::flush;
      }
    for (RequestResult &r : engine->takeFinished())
      results.push_back(std::move(r));
  }
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
      nlohmann::json j = {{"request", r.request},
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
  if (!o.quiet)
    std::cerr << "requests " << results.size() << ", prompt tokens " << promptTokens
              << ", generated " << generated << " in " << elapsed << " s: "
              << (elapsed > 0 ? double(generated) / elapsed : 0.0) << " tok/s"
              << ", prefix cache hit tokens "
              << engine->getScheduler().blockManager().numHitTokens() << "\n"
              << "first token after " << firstToken.value_or(0.0) << " s, then "
              << (elapsed > firstToken.value_or(0.0)
                      ? double(generated - int64_t(results.size())) /
                            (elapsed - firstToken.value_or(0.0))
                      : 0.0)
              << " tok/s\n";
  return 0;
}
