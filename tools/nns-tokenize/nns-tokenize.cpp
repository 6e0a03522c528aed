//===- nns-tokenize.cpp - Tokenizer driver for tests ----------------------===//
//
// Loads a tokenizer from a tokenizer.json or a GGUF file and, for every line of a JSONL file
// of strings, prints one JSON object: the ids, the decoded text with and without special
// tokens, and the pieces a streaming decoder emits for those ids. With --chat it renders a
// conversation through the model's chat template instead. The lit tests compare this output
// with Hugging Face `tokenizers` and `transformers`.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Tokenizer/ChatTemplate.h"
#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Runtime/Tokenizer/Unicode.h"
#include "nnsc/Support/GGUFFile.h"

#include <nlohmann/json.hpp>

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
               "                    (--lines strings.jsonl [--add-special] | --chat chat.json)\n";
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
int run(int argc, char **argv) {
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
