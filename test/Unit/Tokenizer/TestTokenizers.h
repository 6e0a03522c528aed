//===- TestTokenizers.h - Small tokenizer.json builders for unit tests -*- C++ -*-===//

#ifndef NNSC_TEST_UNIT_TOKENIZER_TESTTOKENIZERS_H
#define NNSC_TEST_UNIT_TOKENIZER_TESTTOKENIZERS_H

#include "nnsc/Runtime/Tokenizer/ByteLevel.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace nnsc::tokenizer::testing {

/// A byte-level tokenizer.json whose vocabulary is the 256 byte characters (ids 0..255) plus
/// the merges given as pairs of raw strings, and the ChatML special tokens after them.
inline nlohmann::json
byteLevelJson(const std::vector<std::pair<std::string, std::string>> &merges) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[byteLevelEncode(std::string(1, static_cast<char>(b)))] = b;
  nlohmann::json mergeList = nlohmann::json::array();
  for (const auto &[l, r] : merges) {
    std::string left = byteLevelEncode(l), right = byteLevelEncode(r);
    if (!vocab.contains(left + right))
      vocab[left + right] = vocab.size();
    mergeList.push_back(left + " " + right);
  }
  nlohmann::json added = nlohmann::json::array();
  for (const char *special : {"<|im_start|>", "<|im_end|>"}) {
    int id = static_cast<int>(vocab.size() + added.size());
    added.push_back({{"id", id}, {"content", special}, {"special", true}, {"normalized", false}});
  }
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", mergeList}}},
          {"added_tokens", added},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"decoder", {{"type", "ByteLevel"}}}};
}

/// A SentencePiece-style tokenizer.json (Llama 2 layout) with byte fallback over `pieces`.
inline nlohmann::json
sentencePieceJson(const std::vector<std::string> &pieces,
                  const std::vector<std::pair<std::string, std::string>> &merges) {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = vocab.size();
  }
  for (const std::string &piece : pieces)
    vocab[piece] = vocab.size();
  nlohmann::json mergeList = nlohmann::json::array();
  for (const auto &[l, r] : merges)
    mergeList.push_back({l, r});
  const std::string meta = "\xE2\x96\x81";
  return {{"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", mergeList},
            {"unk_token", "<unk>"},
            {"byte_fallback", true},
            {"fuse_unk", true}}},
          {"added_tokens",
           {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
            {{"id", 1}, {"content", "<s>"}, {"special", true}},
            {{"id", 2}, {"content", "</s>"}, {"special", true}}}},
          {"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", meta}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}}}}},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", meta}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single",
             {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}}};
}

/// Loads `json`, failing the test with the loader's message if it is rejected.
inline std::unique_ptr<Tokenizer> load(const nlohmann::json &json) {
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::fromJsonText(json.dump(), "", error);
  EXPECT_TRUE(tokenizer) << error;
  return tokenizer;
}

} // namespace nnsc::tokenizer::testing

#endif // NNSC_TEST_UNIT_TOKENIZER_TESTTOKENIZERS_H
