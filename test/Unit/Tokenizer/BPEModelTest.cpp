//===- BPEModelTest.cpp - Merge order, byte fallback, unknown tokens ------===//

#include "nnsc/Runtime/Tokenizer/BPEModel.h"

#include <gtest/gtest.h>

using namespace nnsc::tokenizer;

namespace {
using Vocab = std::vector<std::pair<std::string, int32_t>>;
using Merges = std::vector<std::pair<std::string, std::string>>;

std::unique_ptr<BPEModel> build(const Vocab &vocab, const Merges &merges,
                                BPEModel::Options options = {}) {
  std::string error;
  std::unique_ptr<BPEModel> model = BPEModel::create(vocab, merges, options, error);
  EXPECT_TRUE(model) << error;
  return model;
}

std::vector<int32_t> tokenize(const BPEModel &model, std::string_view word) {
  std::vector<int32_t> ids;
  model.tokenize(word, ids);
  return ids;
}

const Vocab Abc = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"aa", 6}};

TEST(BPEModel, LowestRankMergesFirst) {
  // (b, c) outranks (a, b): "abc" becomes a + bc, and no merge joins those.
  auto model = build(Abc, {{"b", "c"}, {"a", "b"}});
  EXPECT_EQ(tokenize(*model, "abc"), (std::vector<int32_t>{0, 4}));
  // The other order builds "ab" first, then "abc" from it.
  model = build(Abc, {{"a", "b"}, {"b", "c"}, {"ab", "c"}});
  EXPECT_EQ(tokenize(*model, "abc"), (std::vector<int32_t>{5}));
}

TEST(BPEModel, EqualRanksMergeLeftmostFirst) {
  auto model = build(Abc, {{"a", "a"}});
  EXPECT_EQ(tokenize(*model, "aaa"), (std::vector<int32_t>{6, 0}));
  EXPECT_EQ(tokenize(*model, "aaaa"), (std::vector<int32_t>{6, 6}));
}

TEST(BPEModel, IgnoreMergesEmitsWholeVocabularyWords) {
  BPEModel::Options options;
  options.ignoreMerges = true;
  // Without merges "abc" could only be spelled letter by letter.
  auto model = build(Abc, {}, options);
  EXPECT_EQ(tokenize(*model, "abc"), (std::vector<int32_t>{5}));
  EXPECT_EQ(tokenize(*model, "cab"), (std::vector<int32_t>{2, 0, 1}));
}

TEST(BPEModel, ByteFallbackSpellsUnknownCharactersAsBytes) {
  Vocab vocab = {{"<unk>", 0}, {"a", 1}, {"<0xE2>", 2}, {"<0x82>", 3}, {"<0xAC>", 4}};
  BPEModel::Options options;
  options.byteFallback = true;
  options.unknownId = 0;
  auto model = build(vocab, {}, options);
  // U+20AC EURO SIGN is E2 82 AC.
  EXPECT_EQ(tokenize(*model, "a\xE2\x82\xAC"), (std::vector<int32_t>{1, 2, 3, 4}));
  // U+00E9 needs <0xC3>, which is missing: the character becomes <unk>.
  EXPECT_EQ(tokenize(*model, "\xC3\xA9"
                             "a"),
            (std::vector<int32_t>{0, 1}));
}

TEST(BPEModel, UnknownCharactersFuseOrDrop) {
  Vocab vocab = {{"<unk>", 0}, {"a", 1}};
  BPEModel::Options options;
  options.unknownId = 0;
  auto model = build(vocab, {}, options);
  EXPECT_EQ(tokenize(*model, "xya"), (std::vector<int32_t>{0, 0, 1}));
  options.fuseUnknown = true;
  model = build(vocab, {}, options);
  EXPECT_EQ(tokenize(*model, "xya"), (std::vector<int32_t>{0, 1}));
  // Without an unknown token `tokenizers` drops the character.
  model = build(vocab, {});
  EXPECT_EQ(tokenize(*model, "xya"), (std::vector<int32_t>{1}));
}

TEST(BPEModel, RejectsMergesOutsideTheVocabulary) {
  std::string error;
  EXPECT_FALSE(BPEModel::create(Abc, {{"c", "a"}}, {}, error));
  EXPECT_EQ(error, "merge 0 ('c' 'a') uses 'ca', which is not in the vocabulary");
  EXPECT_FALSE(BPEModel::create({{"a", 0}, {"b", 0}}, {}, {}, error));
  EXPECT_EQ(error, "tokens 'a' and 'b' share id 0");
  BPEModel::Options options;
  options.unknownId = 9;
  EXPECT_FALSE(BPEModel::create(Abc, {}, options, error));
  EXPECT_EQ(error, "unknown-token id 9 is not in the vocabulary");
}

TEST(BPEModel, MergesGivenByIdsRankInListOrder) {
  // What a GGUF loader derives from a vocabulary without merges: (b, c) outranks (a, b).
  std::string error;
  auto model = BPEModel::createWithMergeIds(Abc, {{1, 2, 4}, {0, 1, 3}}, {}, error);
  ASSERT_TRUE(model) << error;
  EXPECT_EQ(tokenize(*model, "abc"), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(tokenize(*model, "abab"), (std::vector<int32_t>{3, 3}));
  EXPECT_FALSE(BPEModel::createWithMergeIds(Abc, {{0, 1, 3}, {0, 9, 5}}, {}, error));
  EXPECT_EQ(error, "merge 1 uses id 9, which no token has");
}

TEST(BPEModel, IdsMayHaveGapsWithoutATableOfTheLargestId) {
  // As in `tokenizers`, whose vocabulary is a hash map. A fuzzed tokenizer.json with one id of
  // 277440761 once made the id -> token table 8.9 GB (test/Fuzz/corpus/fuzz-tokenizer-json).
  std::string error;
  auto model = BPEModel::create({{"a", 0}, {"b", 277440761}, {"ab", 7}}, {{"a", "b"}}, {}, error);
  ASSERT_TRUE(model) << error;
  EXPECT_EQ(model->size(), 277440762u);
  EXPECT_EQ(*model->idToToken(277440761), "b");
  EXPECT_EQ(model->idToToken(1), nullptr);
  EXPECT_EQ(model->idToToken(-1), nullptr);
  EXPECT_EQ(tokenize(*model, "abb"), (std::vector<int32_t>{7, 277440761}));
  // The largest id there is: one past it does not overflow int32_t (UBSan would say so).
  model = BPEModel::create({{"a", 2147483647}}, {}, {}, error);
  ASSERT_TRUE(model) << error;
  EXPECT_EQ(model->size(), 2147483648u);
}
} // namespace
