//===- nns-tokenize.cpp - the tokenizer on the command line ---------------===//
//
// Loads a tokenizer from a tokenizer.json or a GGUF file and, for every line of a JSONL file
// of strings, prints one JSON object: the ids, the decoded text with and without special
// tokens, and the pieces a streaming decoder emits for those ids. With --chat it renders a
// conversation through the model's chat template instead. The lit tests compare this output
// with Hugging Face `tokenizers` and `transformers`.
//
// `nns-tokenize decode --save FILE.safetensors` turns saved token ids (argmax saves, `result`,
// nns-run's --save-dir files) back into text: one JSON object per integer tensor.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Models/SafetensorsFile.h"
#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"
#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Runtime/Tokenizer/Unicode.h"
#include "nnsc/Support/GGUFFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using nnsc::tokenizer::ChatMessage;
using nnsc::tokenizer::ChatTemplate;
using nnsc::tokenizer::StreamingDecoder;
using nnsc::tokenizer::Tokenizer;
using Json = nlohmann::json;

namespace {
int usage() {
  std::cerr << "usage: nns-tokenize (--json tokenizer.json | --gguf model.gguf)\n"
               "                    (--lines strings.jsonl [--add-special] | --chat chat.json)\n"
               "       nns-tokenize decode --save FILE.safetensors [--key NAME]... [--model PATH]\n"
               "         prints, per integer tensor of FILE (every one, or each --key NAME), one\n"
               "         JSON object: key, shape, ids, tokens (each id's text) and text (all ids\n"
               "         decoded, special tokens left out); in natural order (x.2 before x.10).\n"
               "         --model: a .gguf file, a tokenizer.json or a Hugging Face directory\n"
               "         (default: the bundled SmolLM2-135M); --gguf/--json as above.\n";
  return 2;
}

int die(const std::string &message) {
  std::cerr << "nns-tokenize: error: " << message << "\n";
  return 1;
}

Json encodeLine(const Tokenizer &tokenizer, const std::string &text, bool addSpecial) {
  std::vector<int32_t> ids = tokenizer.encode(text, addSpecial);
  StreamingDecoder stream(tokenizer, /*skipSpecial=*/false);
  Json pieces = Json::array();
  bool piecesValid = true;
  auto emit = [&](const std::string &piece) {
    if (piece.empty())
      return;
    piecesValid = piecesValid && nnsc::tokenizer::isValidUtf8(piece);
    pieces.push_back(piece);
  };
  for (int32_t id : ids)
    emit(stream.step(id));
  emit(stream.flush());
  Json out;
  out["ids"] = ids;
  out["text"] = tokenizer.decode(ids, /*skipSpecial=*/false);
  out["text_skip"] = tokenizer.decode(ids, /*skipSpecial=*/true);
  out["stream"] = std::move(pieces);
  out["stream_valid"] = piecesValid;
  return out;
}
/// Orders the numbers inside names by value: "top.2" before "top.10".
bool naturalLess(const std::string &a, const std::string &b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(uint8_t(a[ie])))
        ++ie;
      while (je < b.size() && std::isdigit(uint8_t(b[je])))
        ++je;
      // Equal values with different leading zeros fall back to the plain order below.
      std::string_view x = std::string_view(a).substr(i, ie - i),
                       y = std::string_view(b).substr(j, je - j);
      x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
      y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size())
        return x.size() < y.size();
      if (x != y)
        return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j])
        return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

/// The ids of an integer tensor (I64 or I32), or nullopt for another dtype.
std::optional<std::vector<int64_t>> integerValues(const nnsc::SafetensorInfo &t) {
  std::vector<int64_t> ids(size_t(t.numElements()));
  if (t.dtype == "I64") {
    std::memcpy(ids.data(), t.data, ids.size() * sizeof(int64_t));
  } else if (t.dtype == "I32") {
    for (size_t i = 0; i < ids.size(); ++i) {
      int32_t v;
      std::memcpy(&v, t.data + i * sizeof v, sizeof v);
      ids[i] = v;
    }
  } else {
    return std::nullopt;
  }
  return ids;
}

/// Loads the tokenizer of --model: a GGUF file, a tokenizer.json, or a directory holding one.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string &model, std::string &error,
                                         std::unique_ptr<nnsc::gguf::GGUFFile> &gguf) {
  namespace fs = std::filesystem;
  if (fs::is_directory(model))
    return Tokenizer::fromJsonFile((fs::path(model) / "tokenizer.json").string(), error);
  if (fs::path(model).extension() == ".json")
    return Tokenizer::fromJsonFile(model, error);
  gguf = nnsc::gguf::GGUFFile::open(model, error);
  return gguf ? Tokenizer::fromGGUF(*gguf, error) : nullptr;
}

/// `nns-tokenize decode ...`: saved token ids back into text.
int decodeSaves(int argc, char **argv) {
  std::string savePath, model = NNSC_DEFAULT_MODEL;
  std::vector<std::string> keys;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc)
      return usage();
    std::string value = argv[++i];
    if (arg == "--save")
      savePath = value;
    else if (arg == "--key")
      keys.push_back(value);
    else if (arg == "--model" || arg == "--gguf" || arg == "--json")
      model = value;
    else
      return usage();
  }
  if (savePath.empty())
    return die("decode needs --save FILE.safetensors");
  std::string error;
  std::unique_ptr<nnsc::SafetensorsFile> file = nnsc::SafetensorsFile::open(savePath, error);
  if (!file)
    return die(error);
  std::vector<std::string> names;
  for (const auto &[name, info] : file->tensors())
    names.push_back(name);
  std::sort(names.begin(), names.end(), naturalLess);
  auto list = [&](auto &&keep) {
    std::string out;
    for (const std::string &name : names)
      if (keep(*file->find(name)))
        out += (out.empty() ? "'" : ", '") + name + "'";
    return out.empty() ? std::string("none") : out;
  };
  auto isInteger = [](const nnsc::SafetensorInfo &t) {
    return t.dtype == "I64" || t.dtype == "I32";
  };
  if (keys.empty()) {
    for (const std::string &name : names)
      if (isInteger(*file->find(name)))
        keys.push_back(name);
    if (keys.empty())
      return die("'" + savePath + "' holds no integer tensors (token ids); its tensors: " +
                 list([](const nnsc::SafetensorInfo &) { return true; }));
  }
  std::unique_ptr<nnsc::gguf::GGUFFile> gguf;
  std::unique_ptr<Tokenizer> tokenizer = loadTokenizer(model, error, gguf);
  if (!tokenizer)
    return die(error);
  const int64_t vocab = int64_t(tokenizer->vocabSize());
  for (const std::string &key : keys) {
    const nnsc::SafetensorInfo *t = file->find(key);
    if (!t)
      return die("no tensor '" + key + "' in '" + savePath +
                 "' (its integer tensors: " + list(isInteger) + ")");
    std::optional<std::vector<int64_t>> values = integerValues(*t);
    if (!values)
      return die("'" + key + "' holds " + t->dtype + " values, not token ids (integers)");
    std::vector<int32_t> ids;
    Json tokens = Json::array();
    for (int64_t v : *values) {
      if (v < 0 || v >= vocab)
        return die("'" + key + "' holds " + std::to_string(v) + ", outside the vocabulary [0, " +
                   std::to_string(vocab) + ")");
      ids.push_back(int32_t(v));
      tokens.push_back(tokenizer->decode({int32_t(v)}, /*skipSpecial=*/false));
    }
    Json out = {{"key", key},
                {"shape", t->shape},
                {"ids", ids},
                {"tokens", std::move(tokens)},
                {"text", tokenizer->decode(ids, /*skipSpecial=*/true)}};
    std::cout << out.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  }
  return 0;
}

int run(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "decode")
    return decodeSaves(argc, argv);
  std::string jsonPath, ggufPath, linesPath, chatPath;
  bool addSpecial = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string &into) {
      if (i + 1 >= argc)
        return false;
      into = argv[++i];
      return true;
    };
    bool ok = true;
    if (arg == "--json")
      ok = value(jsonPath);
    else if (arg == "--gguf")
      ok = value(ggufPath);
    else if (arg == "--lines")
      ok = value(linesPath);
    else if (arg == "--chat")
      ok = value(chatPath);
    else if (arg == "--add-special")
      addSpecial = true;
    else
      ok = false;
    if (!ok)
      return usage();
  }
  if (jsonPath.empty() == ggufPath.empty() || linesPath.empty() == chatPath.empty())
    return usage();

  std::string error;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<nnsc::gguf::GGUFFile> gguf;
  if (!jsonPath.empty()) {
    tokenizer = Tokenizer::fromJsonFile(jsonPath, error);
  } else {
    gguf = nnsc::gguf::GGUFFile::open(ggufPath, error);
    if (gguf)
      tokenizer = Tokenizer::fromGGUF(*gguf, error);
  }
  if (!tokenizer)
    return die(error);

  if (!chatPath.empty()) {
    std::ifstream in(chatPath);
    Json chat = Json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (chat.is_discarded() || !chat.is_object() || !chat.contains("messages"))
      return die("'" + chatPath + "' must hold {\"messages\": [...], ...}");
    std::unique_ptr<ChatTemplate> chatTemplate =
        ChatTemplate::create(tokenizer->chatTemplate(), error);
    if (!chatTemplate)
      return die(error);
    std::vector<ChatMessage> messages;
    for (const Json &m : chat["messages"])
      messages.push_back({m.value("role", ""), m.value("content", "")});
    std::cout
        << Json(chatTemplate->render(messages, chat.value("add_generation_prompt", false))).dump()
        << "\n";
    return 0;
  }

  std::ifstream in(linesPath);
  if (!in)
    return die("cannot read '" + linesPath + "'");
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    Json text = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (text.is_discarded() || !text.is_string())
      return die(linesPath + ":" + std::to_string(number) + ": not a JSON string");
    std::cout << encodeLine(*tokenizer, text.get<std::string>(), addSpecial)
                     .dump(-1, ' ', false, Json::error_handler_t::replace)
              << "\n";
  }
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    return die(e.what());
  }
}
