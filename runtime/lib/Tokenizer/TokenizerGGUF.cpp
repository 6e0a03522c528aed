//===- TokenizerGGUF.cpp - Building a Tokenizer from GGUF metadata --------===//
//
// Maps llama.cpp's `tokenizer.ggml.*` keys onto the same pipeline a Hugging Face
// tokenizer.json describes: "gpt2" is byte-level BPE whose pre-tokenizer follows
// `tokenizer.ggml.pre`, "llama" is SentencePiece-style BPE with byte fallback, whose merges
// come from `tokenizer.ggml.merges` or are derived from the vocabulary as transformers does:
// ranked by token score, or for Gemma by token position (docs/Tokenizer.md).
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include "nnsc/Support/GGUFFile.h"

#include "nnsc/Runtime/Tokenizer/Unicode.h"

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

/// True for the architectures transformers builds with its Gemma SentencePiece builder.
bool isGemma(const std::string &architecture) {
  return architecture == "gemma" || architecture == "gemma2" || architecture == "gemma3";
}

/// Python's `str.isspace`: Rust's `char::is_whitespace` plus U+001C..U+001F.
bool isPythonSpace(uint32_t cp) { return isWhitespace(cp) || (cp >= 0x1C && cp <= 0x1F); }

/// Gemma files store the tokens of two or more spaces as spaces; its tokenizer spells them
/// with U+2581, one per character. transformers respells every token that is all whitespace
/// and holds a space. Returns false if `token` is left as it is.
bool respellWhitespace(const std::string &token, std::string &spelled) {
  bool hasSpace = false;
  size_t chars = 0;
  for (size_t pos = 0; pos < token.size(); ++chars) {
    DecodedChar c = decodeUtf8(token, pos);
    if (!isPythonSpace(c.cp))
      return false;
    hasSpace = hasSpace || c.cp == ' ';
    pos += c.length;
  }
  if (!hasSpace)
    return false;
  spelled.clear();
  for (size_t i = 0; i < chars; ++i)
    spelled += Metaspace;
  return true;
}

size_t countChars(std::string_view text) {
  size_t chars = 0;
  for (char c : text)
    chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return chars;
}

/// Token text -> id for the merge derivation: open addressing over a flat array of (hash tag,
/// id), a few MB that stay in cache, where a node-based map costs several cache misses per
/// lookup (about 1 s for Gemma's two million lookups).
class TokenIndex {
public:
  explicit TokenIndex(const std::vector<std::string_view> &tokens) : tokens(tokens) {
    size_t capacity = 16;
    while (capacity < 2 * tokens.size())
      capacity *= 2;
    slots.assign(capacity, Slot{0, -1});
    mask = capacity - 1;
  }
  /// Inserts `tokens[id]`; returns false if the same text is already there.
  bool insert(int32_t id) {
    uint64_t h = hash(tokens[id]);
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      if (slots[i].id < 0) {
        slots[i] = {static_cast<uint32_t>(h >> 32), id};
        return true;
      }
      if (slots[i].tag == static_cast<uint32_t>(h >> 32) && tokens[slots[i].id] == tokens[id])
        return false;
    }
  }
  /// The id of `text`, or -1.
  int32_t find(std::string_view text) const {
    uint64_t h = hash(text);
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      if (slots[i].id < 0)
        return -1;
      if (slots[i].tag == static_cast<uint32_t>(h >> 32) && tokens[slots[i].id] == text)
        return slots[i].id;
    }
  }

private:
  struct Slot {
    uint32_t tag;
    int32_t id;
  };
  static uint64_t hash(std::string_view text) {
    // FNV-1a, then a multiply so that the low bits (the slot) depend on every byte.
    uint64_t h = 1469598103934665603ull;
    for (char c : text)
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
  }
  const std::vector<std::string_view> &tokens;
  std::vector<Slot> slots;
  size_t mask;
};

/// The merges a vocabulary without a merge list implies, as transformers' `generate_merges`
/// derives them: every split of a token into two tokens, ordered by the token's `priority`
/// (highest first), then by the length in characters of the left and of the right half
/// (longest first), then by vocabulary order and the ids of the halves (the order of a stable
/// sort). Gemma's 262,144 tokens take two million lookups and give 514,906 merges.
std::vector<BPEModel::MergeIds> deriveMerges(const std::vector<std::string_view> &tokens,
                                             const std::vector<double> &priority,
                                             const TokenIndex &ids) {
  struct Candidate {
    double priority;
    uint32_t leftChars, rightChars;
    BPEModel::MergeIds merge;
  };
  std::vector<Candidate> candidates;
  for (size_t t = 0; t < tokens.size(); ++t) {
    std::string_view token = tokens[t];
    size_t chars = countChars(token);
    size_t leftChars = 0;
    for (size_t cut = 1; cut < token.size(); ++cut) {
      if ((static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80)
        continue;
      ++leftChars;
      int32_t left = ids.find(token.substr(0, cut));
      if (left < 0)
        continue;
      int32_t right = ids.find(token.substr(cut));
      if (right < 0)
        continue;
      candidates.push_back({priority[t],
                            static_cast<uint32_t>(leftChars),
                            static_cast<uint32_t>(chars - leftChars),
                            {left, right, static_cast<int32_t>(t)}});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate &a, const Candidate &b) {
    if (a.priority != b.priority)
      return a.priority > b.priority;
    if (a.leftChars != b.leftChars)
      return a.leftChars > b.leftChars;
    if (a.rightChars != b.rightChars)
      return a.rightChars > b.rightChars;
    if (a.merge.merged != b.merge.merged)
      return a.merge.merged < b.merge.merged;
    return a.merge.left != b.merge.left ? a.merge.left < b.merge.left
                                        : a.merge.right < b.merge.right;
  });
  std::vector<BPEModel::MergeIds> merges;
  merges.reserve(candidates.size());
  for (const Candidate &c : candidates)
    merges.push_back(c.merge);
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
  const std::vector<std::string> *mergeList = file.getStringArray("tokenizer.ggml.merges");
  if (byteLevel && !mergeList)
    return fail("'tokenizer.ggml.merges' is missing (required for the gpt2 tokenizer model)");
  // transformers picks its SentencePiece builder by architecture; Gemma's differs (below).
  bool gemma = !byteLevel && isGemma(file.getString("general.architecture").value_or(""));

  TokenizerParts parts;
  BPEModel::Options options;
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    std::string spelled;
    bool respelled = gemma && respellWhitespace((*tokens)[i], spelled);
    if (respelled)
      vocab.emplace_back(std::move(spelled), static_cast<int32_t>(i));
    else
      vocab.emplace_back((*tokens)[i], static_cast<int32_t>(i));
    int64_t type = types ? (*types)[i] : Normal;
    // transformers adds a user-defined token only if the model vocabulary holds it as the
    // file spells it, which leaves out Gemma's respelled runs of spaces.
    if (type == Control || type == Unknown || (type == UserDefined && !respelled))
      parts.addedVocabulary.add(
          {(*tokens)[i], static_cast<int32_t>(i), /*special=*/type != UserDefined});
  }
  // The model's spelling of each token, for the duplicate check and for deriving merges.
  std::vector<std::string_view> spellings;
  spellings.reserve(vocab.size());
  for (const auto &entry : vocab)
    spellings.push_back(entry.first);
  TokenIndex ids(spellings);
  for (size_t i = 0; i < spellings.size(); ++i)
    if (!ids.insert(static_cast<int32_t>(i)))
      return fail("token '" + std::string(spellings[i]) +
                  "' appears twice in 'tokenizer.ggml.tokens'");

  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<BPEModel::MergeIds> derivedMerges;
  if (mergeList) {
    merges.reserve(mergeList->size());
    for (size_t i = 0; i < mergeList->size(); ++i) {
      const std::string &m = (*mergeList)[i];
      size_t space = m.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == m.size())
        return fail("'tokenizer.ggml.merges'[" + std::to_string(i) +
                    "] is not two tokens separated by a space: '" + m + "'");
      merges.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
  } else if (gemma) {
    // Gemma's scores do not follow its merge order; transformers ranks by position instead.
    std::vector<double> position(spellings.size());
    for (size_t i = 0; i < position.size(); ++i)
      position[i] = -static_cast<double>(i);
    derivedMerges = deriveMerges(spellings, position, ids);
  } else {
    const std::vector<double> *scores = file.getFloatArray("tokenizer.ggml.scores");
    if (!scores)
      return fail("the llama tokenizer has neither 'tokenizer.ggml.merges' nor "
                  "'tokenizer.ggml.scores' (one of them is needed to order its merges)");
    if (scores->size() != tokens->size())
      return fail("'tokenizer.ggml.scores' has " + std::to_string(scores->size()) +
                  " entries for " + std::to_string(tokens->size()) + " tokens");
    derivedMerges = deriveMerges(spellings, *scores, ids);
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
    options.byteFallback = true;
    options.fuseUnknown = true;
    options.unknownId = parts.specialIds.unk.value_or(0);
    bool addSpacePrefix = false;
    if (gemma) {
      // GemmaTokenizer: spaces become U+2581 and nothing is prepended, whatever
      // `add_space_prefix` says. Its Split(" ") pre-tokenizer never sees a space after that
      // normalizer, so every segment between added tokens is one word.
      parts.normalizer.addReplace(" ", Metaspace);
    } else {
      // transformers converts these vocabularies to a Metaspace pre-tokenizer that prepends
      // the space to the start of the text only (not after special tokens).
      addSpacePrefix = file.getInt("tokenizer.ggml.add_space_prefix").value_or(1) != 0;
      PrependScheme scheme = addSpacePrefix ? PrependScheme::First : PrependScheme::Never;
      parts.preTokenizer.addMetaspace(Metaspace, scheme, /*split=*/false);
    }
    parts.decoder.addReplace(Metaspace, " ");
    parts.decoder.addByteFallback();
    parts.decoder.addFuse();
    if (addSpacePrefix)
      parts.decoder.addStrip(" ", 1, 0);
  }

  std::string modelError;
  parts.model = mergeList ? BPEModel::create(vocab, merges, options, modelError)
                          : BPEModel::createWithMergeIds(vocab, derivedMerges, options, modelError);
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
