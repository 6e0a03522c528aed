//===- TokenizerGGUF.cpp - Building a Tokenizer from GGUF metadata --------===//
//
// Maps llama.cpp's `tokenizer.ggml.*` keys onto the same pipeline a Hugging Face
// tokenizer.json describes: "gpt2" is byte-level BPE whose pre-tokenizer follows
// `tokenizer.ggml.pre`, "llama" is SentencePiece-style BPE with byte fallback, whose merges
// come from `tokenizer.ggml.merges` or, as in SentencePiece, from the token scores.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include "nnsc/Support/GGUFFile.h"

#include <algorithm>
#include <map>

namespace nnsc::tokenizer {

namespace {
/// llama.cpp's token types.
enum TokenType : int64_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

constexpr const char *Metaspace = "\xE2\x96\x81"; // U+2581, SentencePiece's space

/// Configures the byte-level pre-tokenizer for a `tokenizer.ggml.pre` value.
bool configureByteLevel(const std::string &pre, PreTokenizer &preTokenizer,
                        BPEModel::Options &options) {
  enum class Kind { GPT2, Llama3, Qwen2, StarCoder };
  static const std::map<std::string, Kind> kinds = {
      {"default", Kind::GPT2},     {"gpt2", Kind::GPT2},           {"llama-bpe", Kind::Llama3},
      {"llama3", Kind::Llama3},    {"llama-v3", Kind::Llama3},     {"qwen2", Kind::Qwen2},
      {"smollm", Kind::StarCoder}, {"starcoder", Kind::StarCoder}, {"refact", Kind::StarCoder},
  };
  auto it = kinds.find(pre);
  if (it == kinds.end())
    return false;
  switch (it->second) {
  case Kind::GPT2:
    preTokenizer.addByteLevel(/*addPrefixSpace=*/false, /*useRegex=*/true);
    break;
  case Kind::Llama3:
    preTokenizer.addSplit(SplitPattern::Llama3);
    preTokenizer.addByteLevel(/*addPrefixSpace=*/false, /*useRegex=*/false);
    // Llama 3's tokenizer.json sets ignore_merges.
    options.ignoreMerges = true;
    break;
  case Kind::Qwen2:
    preTokenizer.addSplit(SplitPattern::Qwen2);
    preTokenizer.addByteLevel(/*addPrefixSpace=*/false, /*useRegex=*/false);
    break;
  case Kind::StarCoder:
    // llama.cpp's "\p{N}" split, i.e. the Digits(individual_digits) step of SmolLM2's and
    // StarCoder's tokenizer.json, before the GPT-2 regex.
    preTokenizer.addDigits(/*individual=*/true);
    preTokenizer.addByteLevel(/*addPrefixSpace=*/false, /*useRegex=*/true);
    break;
  }
  return true;
}

/// SentencePiece BPE merges from scores, ordered as transformers' SentencePieceExtractor
/// orders them: every split of a token into two tokens, by the token's score (highest first),
/// ties in vocabulary order and then by the ids of the two halves.
std::vector<std::pair<std::string, std::string>>
mergesFromScores(const std::vector<std::string> &tokens, const std::vector<double> &scores,
                 const std::map<std::string, int32_t, std::less<>> &ids) {
  struct Candidate {
    double score;
    int32_t left, right;
  };
  std::vector<Candidate> candidates;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string &token = tokens[t];
    std::vector<Candidate> local;
    for (size_t cut = 1; cut < token.size(); ++cut) {
      if ((static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80)
        continue;
      auto l = ids.find(std::string_view(token).substr(0, cut));
      auto r = ids.find(std::string_view(token).substr(cut));
      if (l != ids.end() && r != ids.end())
        local.push_back({scores[t], l->second, r->second});
    }
    std::sort(local.begin(), local.end(), [](const Candidate &a, const Candidate &b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    candidates.insert(candidates.end(), local.begin(), local.end());
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate &a, const Candidate &b) { return a.score > b.score; });
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(candidates.size());
  for (const Candidate &c : candidates)
    merges.emplace_back(tokens[c.left], tokens[c.right]);
  return merges;
}

std::optional<int32_t> optionalId(const gguf::GGUFFile &file, const char *key, size_t vocabSize,
                                  std::string &error) {
  std::optional<int64_t> id = file.getInt(key);
  if (!id)
    return std::nullopt;
  if (*id < 0 || static_cast<size_t>(*id) >= vocabSize) {
    // llama.cpp writes -1 (as uint32 max) for "none" in some files.
    if (*id == 0xFFFFFFFF || *id == -1)
      return std::nullopt;
    error = std::string("'") + key + "' = " + std::to_string(*id) +
            " is outside the vocabulary of " + std::to_string(vocabSize) + " tokens";
  }
  return static_cast<int32_t>(*id);
}
} // namespace

std::unique_ptr<Tokenizer> Tokenizer::fromGGUF(const gguf::GGUFFile &file, std::string &error) {
  auto fail = [&](const std::string &message) {
    error = file.path() + ": " + message;
    return nullptr;
  };
  std::optional<std::string> modelName = file.getString("tokenizer.ggml.model");
  if (!modelName)
    return fail("'tokenizer.ggml.model' is missing (the file carries no tokenizer)");
  if (*modelName != "gpt2" && *modelName != "llama")
    return fail("unsupported tokenizer model '" + *modelName +
                "' in 'tokenizer.ggml.model' (supported: gpt2, llama)");
  bool byteLevel = *modelName == "gpt2";

  const std::vector<std::string> *tokens = file.getStringArray("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty())
    return fail("'tokenizer.ggml.tokens' is missing or not a non-empty string array");
  const std::vector<int64_t> *types = file.getIntArray("tokenizer.ggml.token_type");
  if (types && types->size() != tokens->size())
    return fail("'tokenizer.ggml.token_type' has " + std::to_string(types->size()) +
                " entries for " + std::to_string(tokens->size()) + " tokens");

  TokenizerParts parts;
  BPEModel::Options options;
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::map<std::string, int32_t, std::less<>> ids;
  vocab.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    vocab.emplace_back((*tokens)[i], static_cast<int32_t>(i));
    if (!ids.emplace((*tokens)[i], static_cast<int32_t>(i)).second)
      return fail("token '" + (*tokens)[i] + "' appears twice in 'tokenizer.ggml.tokens'");
    int64_t type = types ? (*types)[i] : Normal;
    if (type == Control || type == Unknown || type == UserDefined)
      parts.addedVocabulary.add(
          {(*tokens)[i], static_cast<int32_t>(i), /*special=*/type != UserDefined});
  }

  std::vector<std::pair<std::string, std::string>> merges;
  if (const std::vector<std::string> *mergeList = file.getStringArray("tokenizer.ggml.merges")) {
    merges.reserve(mergeList->size());
    for (size_t i = 0; i < mergeList->size(); ++i) {
      const std::string &m = (*mergeList)[i];
      size_t space = m.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == m.size())
        return fail("'tokenizer.ggml.merges'[" + std::to_string(i) +
                    "] is not two tokens separated by a space: '" + m + "'");
      merges.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
  } else if (byteLevel) {
    return fail("'tokenizer.ggml.merges' is missing (required for the gpt2 tokenizer model)");
  } else {
    const std::vector<double> *scores = file.getFloatArray("tokenizer.ggml.scores");
    if (!scores || scores->size() != tokens->size())
      return fail("the llama tokenizer needs 'tokenizer.ggml.merges' or one "
                  "'tokenizer.ggml.scores' entry per token");
    merges = mergesFromScores(*tokens, *scores, ids);
  }

  std::string idError;
  parts.specialIds.bos = optionalId(file, "tokenizer.ggml.bos_token_id", tokens->size(), idError);
  parts.specialIds.eos = optionalId(file, "tokenizer.ggml.eos_token_id", tokens->size(), idError);
  parts.specialIds.unk =
      optionalId(file, "tokenizer.ggml.unknown_token_id", tokens->size(), idError);
  parts.specialIds.pad =
      optionalId(file, "tokenizer.ggml.padding_token_id", tokens->size(), idError);
  if (!idError.empty())
    return fail(idError);

  if (byteLevel) {
    std::string pre = file.getString("tokenizer.ggml.pre").value_or("default");
    if (!configureByteLevel(pre, parts.preTokenizer, options))
      return fail("unsupported pre-tokenizer '" + pre +
                  "' in 'tokenizer.ggml.pre' (supported: default, gpt2, llama-bpe, llama3, "
                  "qwen2, smollm, starcoder, refact)");
    parts.decoder.addByteLevel();
  } else {
    // transformers converts these vocabularies to a Metaspace pre-tokenizer that prepends
    // the space to the start of the text only (not after special tokens).
    bool addSpacePrefix = file.getInt("tokenizer.ggml.add_space_prefix").value_or(1) != 0;
    PrependScheme scheme = addSpacePrefix ? PrependScheme::First : PrependScheme::Never;
    parts.preTokenizer.addMetaspace(Metaspace, scheme, /*split=*/false);
    options.byteFallback = true;
    options.fuseUnknown = true;
    options.unknownId = parts.specialIds.unk.value_or(0);
    parts.decoder.addReplace(Metaspace, " ");
    parts.decoder.addByteFallback();
    parts.decoder.addFuse();
    if (addSpacePrefix)
      parts.decoder.addStrip(" ", 1, 0);
  }

  std::string modelError;
  parts.model = BPEModel::create(vocab, merges, options, modelError);
  if (!parts.model)
    return fail(modelError);

  // llama.cpp adds BOS by default for SentencePiece vocabularies only.
  bool addBos = file.getInt("tokenizer.ggml.add_bos_token").value_or(!byteLevel) != 0;
  bool addEos = file.getInt("tokenizer.ggml.add_eos_token").value_or(0) != 0;
  if (addBos) {
    if (!parts.specialIds.bos)
      return fail("'tokenizer.ggml.add_bos_token' is set but there is no bos_token_id");
    parts.prefixIds.push_back(*parts.specialIds.bos);
  }
  if (addEos) {
    if (!parts.specialIds.eos)
      return fail("'tokenizer.ggml.add_eos_token' is set but there is no eos_token_id");
    parts.suffixIds.push_back(*parts.specialIds.eos);
  }
  parts.chatTemplate = file.getString("tokenizer.chat_template").value_or("");
  return std::make_unique<Tokenizer>(std::move(parts));
}

} // namespace nnsc::tokenizer
