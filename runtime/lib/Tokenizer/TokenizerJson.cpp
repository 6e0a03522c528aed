//===- TokenizerJson.cpp - Building a Tokenizer from tokenizer.json -------===//
//
// Reads the subset of the `tokenizers` serialization that BPE language models use. Anything
// outside it (another model type, a Unicode normalizer, a regex we do not implement) is an
// error naming the component and its JSON path, never a silent approximation.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace nnsc::tokenizer {

namespace {
using Json = nlohmann::json;

/// Thrown inside the loader and turned into the `error` message at its entry points.
struct LoadError {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) { throw LoadError{message}; }

const Json &field(const Json &object, const char *key, const std::string &path) {
  if (!object.is_object())
    fail("'" + path + "' is not an object");
  auto it = object.find(key);
  if (it == object.end())
    fail("'" + path + "." + key + "' is missing");
  return *it;
}

std::string getString(const Json &object, const char *key, const std::string &path) {
  const Json &value = field(object, key, path);
  if (!value.is_string())
    fail("'" + path + "." + key + "' must be a string");
  return value.get<std::string>();
}

bool getBool(const Json &object, const char *key, const std::string &path, bool fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null())
    return fallback;
  if (!it->is_boolean())
    fail("'" + path + "." + key + "' must be a boolean");
  return it->get<bool>();
}

int64_t getInt(const Json &value, const std::string &path) {
  if (!value.is_number_integer())
    fail("'" + path + "' must be an integer");
  return value.get<int64_t>();
}

int32_t getId(const Json &value, const std::string &path) {
  int64_t id = getInt(value, path);
  if (id < 0 || id > INT32_MAX)
    fail("'" + path + "' is not a valid token id: " + std::to_string(id));
  return static_cast<int32_t>(id);
}

std::string typeOf(const Json &object, const std::string &path) {
  return getString(object, "type", path);
}

/// A `{"String": "..."}` pattern; regex patterns are only accepted where we implement them.
std::string stringPattern(const Json &object, const std::string &path) {
  const Json &pattern = field(object, "pattern", path);
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
    return pattern["String"].get<std::string>();
  fail("'" + path + ".pattern' must be {\"String\": ...}; regex patterns are not supported here");
}

PrependScheme prependScheme(const Json &object, const std::string &path) {
  if (auto it = object.find("prepend_scheme"); it != object.end() && !it->is_null()) {
    std::string scheme = it->is_string() ? it->get<std::string>() : "";
    if (scheme == "always")
      return PrependScheme::Always;
    if (scheme == "first")
      return PrependScheme::First;
    if (scheme == "never")
      return PrependScheme::Never;
    fail("'" + path + ".prepend_scheme' must be \"always\", \"first\" or \"never\"");
  }
  // Files written before prepend_scheme existed carry a boolean.
  return getBool(object, "add_prefix_space", path, true) ? PrependScheme::Always
                                                         : PrependScheme::Never;
}

std::string metaspaceReplacement(const Json &object, const std::string &path) {
  std::string replacement = getString(object, "replacement", path);
  if (replacement.empty())
    fail("'" + path + ".replacement' must not be empty");
  return replacement;
}

void addNormalizer(const Json &object, const std::string &path, Normalizer &out) {
  if (object.is_null())
    return;
  std::string type = typeOf(object, path);
  if (type == "Sequence") {
    const Json &list = field(object, "normalizers", path);
    if (!list.is_array())
      fail("'" + path + ".normalizers' must be an array");
    for (size_t i = 0; i < list.size(); ++i)
      addNormalizer(list[i], path + ".normalizers[" + std::to_string(i) + "]", out);
  } else if (type == "Prepend") {
    out.addPrepend(getString(object, "prepend", path));
  } else if (type == "Replace") {
    std::string pattern = stringPattern(object, path);
    if (pattern.empty())
      fail("'" + path + ".pattern' must not be empty");
    out.addReplace(pattern, getString(object, "content", path));
  } else {
    fail("unsupported normalizer '" + type + "' at '" + path +
         "' (supported: Sequence, Prepend, Replace)");
  }
}

void addPreTokenizer(const Json &object, const std::string &path, PreTokenizer &out) {
  if (object.is_null())
    return;
  std::string type = typeOf(object, path);
  if (type == "Sequence") {
    const Json &list = field(object, "pretokenizers", path);
    if (!list.is_array())
      fail("'" + path + ".pretokenizers' must be an array");
    for (size_t i = 0; i < list.size(); ++i)
      addPreTokenizer(list[i], path + ".pretokenizers[" + std::to_string(i) + "]", out);
  } else if (type == "ByteLevel") {
    out.addByteLevel(getBool(object, "add_prefix_space", path, true),
                     getBool(object, "use_regex", path, true));
  } else if (type == "Digits") {
    out.addDigits(getBool(object, "individual_digits", path, false));
  } else if (type == "Metaspace") {
    out.addMetaspace(metaspaceReplacement(object, path), prependScheme(object, path),
                     getBool(object, "split", path, true));
  } else if (type == "Split") {
    const Json &pattern = field(object, "pattern", path);
    if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
      fail("'" + path + ".pattern' must be {\"Regex\": ...}");
    std::string regex = pattern["Regex"].get<std::string>();
    std::optional<SplitPattern> known = recognizeSplitPattern(regex);
    if (!known)
      fail("unsupported split regex at '" + path + ".pattern': " + regex +
           " (supported: the GPT-2, Llama 3 and Qwen2 patterns)");
    if (getString(object, "behavior", path) != "Isolated" || getBool(object, "invert", path, false))
      fail("unsupported split at '" + path + "': only behavior 'Isolated' without invert");
    out.addSplit(*known);
  } else {
    fail("unsupported pre-tokenizer '" + type + "' at '" + path +
         "' (supported: Sequence, ByteLevel, Split, Digits, Metaspace)");
  }
}

void addDecoder(const Json &object, const std::string &path, Decoder &out) {
  if (object.is_null())
    return;
  std::string type = typeOf(object, path);
  if (type == "Sequence") {
    const Json &list = field(object, "decoders", path);
    if (!list.is_array())
      fail("'" + path + ".decoders' must be an array");
    for (size_t i = 0; i < list.size(); ++i)
      addDecoder(list[i], path + ".decoders[" + std::to_string(i) + "]", out);
  } else if (type == "ByteLevel") {
    out.addByteLevel();
  } else if (type == "Metaspace") {
    out.addMetaspace(metaspaceReplacement(object, path), prependScheme(object, path));
  } else if (type == "Replace") {
    std::string pattern = stringPattern(object, path);
    if (pattern.empty())
      fail("'" + path + ".pattern' must not be empty");
    out.addReplace(pattern, getString(object, "content", path));
  } else if (type == "ByteFallback") {
    out.addByteFallback();
  } else if (type == "Fuse") {
    out.addFuse();
  } else if (type == "Strip") {
    int64_t start = getInt(field(object, "start", path), path + ".start");
    int64_t stop = getInt(field(object, "stop", path), path + ".stop");
    if (start < 0 || stop < 0)
      fail("'" + path + "' has a negative strip count");
    out.addStrip(getString(object, "content", path), static_cast<size_t>(start),
                 static_cast<size_t>(stop));
  } else {
    fail("unsupported decoder '" + type + "' at '" + path +
         "' (supported: Sequence, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip)");
  }
}

/// `[token, id]` as BertProcessing and RobertaProcessing store cls/sep.
int32_t processorTokenId(const Json &object, const char *key, const std::string &path) {
  const Json &pair = field(object, key, path);
  if (!pair.is_array() || pair.size() != 2)
    fail("'" + path + "." + key + "' must be [token, id]");
  return getId(pair[1], path + "." + key + "[1]");
}

void addPostProcessor(const Json &object, const std::string &path, TokenizerParts &parts) {
  if (object.is_null())
    return;
  std::string type = typeOf(object, path);
  if (type == "Sequence") {
    const Json &list = field(object, "processors", path);
    if (!list.is_array())
      fail("'" + path + ".processors' must be an array");
    for (size_t i = 0; i < list.size(); ++i)
      addPostProcessor(list[i], path + ".processors[" + std::to_string(i) + "]", parts);
  } else if (type == "ByteLevel") {
    // Only adjusts offsets, which we do not report.
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    parts.prefixIds.push_back(processorTokenId(object, "cls", path));
    parts.suffixIds.push_back(processorTokenId(object, "sep", path));
  } else if (type == "TemplateProcessing") {
    const Json &single = field(object, "single", path);
    const Json &special = field(object, "special_tokens", path);
    if (!single.is_array())
      fail("'" + path + ".single' must be an array");
    bool seenSequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      std::string itemPath = path + ".single[" + std::to_string(i) + "]";
      const Json &item = single[i];
      if (item.is_object() && item.contains("Sequence")) {
        seenSequence = true;
        continue;
      }
      const Json &piece = field(item, "SpecialToken", itemPath);
      std::string name = getString(piece, "id", itemPath + ".SpecialToken");
      const Json &entry = field(special, name.c_str(), path + ".special_tokens");
      const Json &ids = field(entry, "ids", path + ".special_tokens." + name);
      if (!ids.is_array())
        fail("'" + path + ".special_tokens." + name + ".ids' must be an array");
      for (size_t j = 0; j < ids.size(); ++j)
        (seenSequence ? parts.suffixIds : parts.prefixIds)
            .push_back(getId(ids[j], path + ".special_tokens." + name + ".ids"));
    }
  } else {
    fail("unsupported post-processor '" + type + "' at '" + path +
         "' (supported: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, "
         "Sequence)");
  }
}

std::unique_ptr<BPEModel> buildModel(const Json &model) {
  const std::string path = "model";
  if (model.contains("type") && typeOf(model, path) != "BPE")
    fail("unsupported model type '" + typeOf(model, path) + "' (only BPE is implemented)");
  const Json &vocabJson = field(model, "vocab", path);
  if (!vocabJson.is_object())
    fail("'model.vocab' must be an object mapping tokens to ids");
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(vocabJson.size());
  for (auto it = vocabJson.begin(); it != vocabJson.end(); ++it)
    vocab.emplace_back(it.key(), getId(it.value(), "model.vocab." + it.key()));

  const Json &mergesJson = field(model, "merges", path);
  if (!mergesJson.is_array())
    fail("'model.merges' must be an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(mergesJson.size());
  for (size_t i = 0; i < mergesJson.size(); ++i) {
    const Json &m = mergesJson[i];
    std::string where = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      std::string text = m.get<std::string>();
      size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        fail("'" + where + "' must be two tokens separated by one space, got '" + text + "'");
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail("'" + where + "' must be \"a b\" or [\"a\", \"b\"]");
    }
  }

  for (const char *affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(affix);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      fail(std::string("unsupported 'model.") + affix + "' (only empty is implemented)");
  }
  if (auto it = model.find("dropout");
      it != model.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0.0))
    fail("unsupported 'model.dropout': BPE dropout makes encoding random");

  BPEModel::Options options;
  options.byteFallback = getBool(model, "byte_fallback", path, false);
  options.fuseUnknown = getBool(model, "fuse_unk", path, false);
  options.ignoreMerges = getBool(model, "ignore_merges", path, false);
  if (auto it = model.find("unk_token"); it != model.end() && !it->is_null()) {
    if (!it->is_string())
      fail("'model.unk_token' must be a string");
    std::string unk = it->get<std::string>();
    auto found = std::find_if(vocab.begin(), vocab.end(),
                              [&](const auto &entry) { return entry.first == unk; });
    if (found == vocab.end())
      fail("'model.unk_token' '" + unk + "' is not in the vocabulary");
    options.unknownId = found->second;
  }
  std::string error;
  std::unique_ptr<BPEModel> bpe = BPEModel::create(vocab, merges, options, error);
  if (!bpe)
    fail("'model': " + error);
  return bpe;
}

void addAddedTokens(const Json &list, AddedVocabulary &out) {
  if (list.is_null())
    return;
  if (!list.is_array())
    fail("'added_tokens' must be an array");
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = "added_tokens[" + std::to_string(i) + "]";
    const Json &entry = list[i];
    AddedToken token;
    token.id = getId(field(entry, "id", path), path + ".id");
    token.content = getString(entry, "content", path);
    token.special = getBool(entry, "special", path, false);
    token.normalized = getBool(entry, "normalized", path, !token.special);
    token.lstrip = getBool(entry, "lstrip", path, false);
    token.rstrip = getBool(entry, "rstrip", path, false);
    if (getBool(entry, "single_word", path, false))
      fail("unsupported '" + path + ".single_word' = true");
    if (!out.add(token))
      fail("'" + path + "' ('" + token.content + "') is empty or repeats another added token");
  }
}

/// A token named in tokenizer_config.json: a string or an AddedToken object.
std::optional<std::string> configToken(const Json &config, const char *key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return std::nullopt;
  if (it->is_string())
    return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail("'tokenizer_config.json' field '" + std::string(key) + "' must be a string or {content}");
}

void readConfig(const Json &config, TokenizerParts &parts) {
  if (!config.is_object())
    fail("'tokenizer_config.json' must hold an object");
  auto idOf = [&](const char *key) -> std::optional<int32_t> {
    std::optional<std::string> name = configToken(config, key);
    if (!name)
      return std::nullopt;
    std::optional<int32_t> id;
    if (const AddedToken *added = parts.addedVocabulary.findByContent(*name))
      id = added->id;
    else
      id = parts.model->tokenToId(*name);
    if (!id)
      fail("'tokenizer_config.json' " + std::string(key) + " '" + *name +
           "' is not in the vocabulary");
    return id;
  };
  parts.specialIds.bos = idOf("bos_token");
  parts.specialIds.eos = idOf("eos_token");
  parts.specialIds.unk = idOf("unk_token");
  parts.specialIds.pad = idOf("pad_token");
  if (auto it = config.find("chat_template"); it != config.end() && !it->is_null()) {
    if (it->is_string()) {
      parts.chatTemplate = it->get<std::string>();
    } else if (it->is_array()) {
      // Named templates: the "default" one is what apply_chat_template uses.
      for (const Json &named : *it)
        if (named.is_object() && named.value("name", "") == "default" &&
            named.contains("template") && named["template"].is_string())
          parts.chatTemplate = named["template"].get<std::string>();
    } else {
      fail("'tokenizer_config.json' chat_template must be a string");
    }
  }
}

Json parseJson(std::string_view text, const char *what) {
  Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    fail(std::string(what) + " is not valid JSON");
  return json;
}

std::optional<std::string> readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
} // namespace

std::unique_ptr<Tokenizer> Tokenizer::fromJsonText(std::string_view tokenizerJson,
                                                   std::string_view configJson,
                                                   std::string &error) {
  try {
    Json json = parseJson(tokenizerJson, "tokenizer.json");
    if (!json.is_object())
      fail("tokenizer.json must hold an object");
    TokenizerParts parts;
    parts.model = buildModel(field(json, "model", "tokenizer"));
    addAddedTokens(json.value("added_tokens", Json()), parts.addedVocabulary);
    addNormalizer(json.value("normalizer", Json()), "normalizer", parts.normalizer);
    addPreTokenizer(json.value("pre_tokenizer", Json()), "pre_tokenizer", parts.preTokenizer);
    addDecoder(json.value("decoder", Json()), "decoder", parts.decoder);
    addPostProcessor(json.value("post_processor", Json()), "post_processor", parts);
    if (!configJson.empty()) {
      readConfig(parseJson(configJson, "tokenizer_config.json"), parts);
    }
    return std::make_unique<Tokenizer>(std::move(parts));
  } catch (const LoadError &e) {
    error = e.message;
  } catch (const nlohmann::json::exception &e) {
    error = std::string("malformed tokenizer.json: ") + e.what();
  }
  return nullptr;
}

std::unique_ptr<Tokenizer> Tokenizer::fromJsonFile(const std::string &path, std::string &error) {
  std::optional<std::string> text = readFile(path);
  if (!text) {
    error = "cannot read '" + path + "'";
    return nullptr;
  }
  std::filesystem::path configPath =
      std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::string config = readFile(configPath).value_or("");
  std::unique_ptr<Tokenizer> tokenizer = fromJsonText(*text, config, error);
  if (!tokenizer) {
    error = path + ": " + error;
    return nullptr;
  }
  // transformers >= 4.43 saves the template in its own file, which takes precedence.
  if (std::optional<std::string> chatTemplate =
          readFile(std::filesystem::path(path).parent_path() / "chat_template.jinja"))
    tokenizer->parts.chatTemplate = std::move(*chatTemplate);
  return tokenizer;
}

} // namespace nnsc::tokenizer
