//===- TokenizerJsonTest.cpp - Loading, special tokens, bad input ---------===//

#include "TestTokenizers.h"

using namespace nnsc::tokenizer;
using namespace nnsc::tokenizer::testing;
using Json = nlohmann::json;

namespace {
std::string loadError(const Json &json, std::string_view config = "") {
  std::string error;
  EXPECT_FALSE(Tokenizer::fromJsonText(json.dump(), config, error));
  return error;
}

TEST(TokenizerJson, SpecialTokensSplitBeforePreTokenization) {
  auto tokenizer = load(byteLevelJson({}));
  int32_t start = *tokenizer->tokenToId("<|im_start|>");
  int32_t end = *tokenizer->tokenToId("<|im_end|>");
  std::vector<int32_t> ids = tokenizer->encode("x<|im_start|><|im_end|>y", false);
  EXPECT_EQ(ids, (std::vector<int32_t>{'x', start, end, 'y'}));
  EXPECT_TRUE(tokenizer->isSpecial(start));
  EXPECT_EQ(tokenizer->decode(ids, /*skipSpecial=*/false), "x<|im_start|><|im_end|>y");
  EXPECT_EQ(tokenizer->decode(ids, /*skipSpecial=*/true), "xy");
  // A partial special token is ordinary text.
  EXPECT_EQ(tokenizer->encode("<|im_start", false).size(), 10u);
}

TEST(TokenizerJson, AddedTokensMatchLeftmostLongestAndStrip) {
  Json json = byteLevelJson({});
  json["added_tokens"].push_back(
      {{"id", 300}, {"content", "<a>"}, {"special", true}, {"rstrip", true}});
  json["added_tokens"].push_back(
      {{"id", 301}, {"content", "<a><b>"}, {"special", false}, {"normalized", false}});
  json["added_tokens"].push_back(
      {{"id", 302}, {"content", "<c>"}, {"special", true}, {"lstrip", true}});
  auto tokenizer = load(json);
  EXPECT_EQ(tokenizer->encode("<a><b><a>  x  <c>", false),
            (std::vector<int32_t>{301, 300, 'x', 302}));
  EXPECT_FALSE(tokenizer->isSpecial(301));
  EXPECT_EQ(tokenizer->vocabSize(), 303u);
}

TEST(TokenizerJson, SentencePiecePrependsAndAddsBos) {
  const std::string meta = "\xE2\x96\x81";
  auto tokenizer = load(sentencePieceJson({meta, "a", meta + "a", "b"}, {{meta, "a"}}));
  std::vector<int32_t> ids = tokenizer->encode("a b", true);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, *tokenizer->tokenToId(meta + "a"),
                                       *tokenizer->tokenToId(meta), *tokenizer->tokenToId("b")}));
  EXPECT_EQ(tokenizer->decode(ids, true), "a b");
  EXPECT_EQ(*tokenizer->idToToken(1), "<s>");
  EXPECT_FALSE(tokenizer->idToToken(100000));
}

TEST(TokenizerJson, ConfigSuppliesSpecialIdsAndTemplate) {
  std::string error;
  auto tokenizer = Tokenizer::fromJsonText(
      byteLevelJson({}).dump(),
      R"({"bos_token": "<|im_start|>", "eos_token": {"content": "<|im_end|>"},
          "chat_template": "{{ x }}"})",
      error);
  ASSERT_TRUE(tokenizer) << error;
  EXPECT_EQ(tokenizer->specialIds().bos, tokenizer->tokenToId("<|im_start|>"));
  EXPECT_EQ(tokenizer->specialIds().eos, tokenizer->tokenToId("<|im_end|>"));
  EXPECT_FALSE(tokenizer->specialIds().pad);
  EXPECT_EQ(tokenizer->chatTemplate(), "{{ x }}");
}

TEST(TokenizerJson, MalformedInputNamesTheProblem) {
  EXPECT_EQ(loadError(Json::parse("[1]")), "tokenizer.json must hold an object");
  std::string error;
  EXPECT_FALSE(Tokenizer::fromJsonText("{\"model\": ", "", error));
  EXPECT_EQ(error, "tokenizer.json is not valid JSON");
  EXPECT_EQ(loadError(Json::object()), "'tokenizer.model' is missing");

  Json json = byteLevelJson({});
  json["model"].erase("vocab");
  EXPECT_EQ(loadError(json), "'model.vocab' is missing");

  json = byteLevelJson({});
  json["model"]["merges"] = Json::array({"a"});
  EXPECT_EQ(loadError(json), "'model.merges[0]' must be two tokens separated by one space, "
                             "got 'a'");

  json = byteLevelJson({});
  json["model"]["vocab"]["zz"] = "seven";
  EXPECT_EQ(loadError(json), "'model.vocab.zz' must be an integer");

  json = byteLevelJson({});
  json["model"]["unk_token"] = "<nope>";
  EXPECT_EQ(loadError(json), "'model.unk_token' '<nope>' is not in the vocabulary");

  json = byteLevelJson({});
  json["added_tokens"][0].erase("content");
  EXPECT_EQ(loadError(json), "'added_tokens[0].content' is missing");

  EXPECT_EQ(loadError(byteLevelJson({}), R"({"bos_token": "<bos>"})"),
            "'tokenizer_config.json' bos_token '<bos>' is not in the vocabulary");
}

TEST(TokenizerJson, UnsupportedComponentsAreNamed) {
  Json json = byteLevelJson({});
  json["normalizer"] = {{"type", "NFC"}};
  EXPECT_EQ(loadError(json), "unsupported normalizer 'NFC' at 'normalizer' (supported: "
                             "Sequence, Prepend, Replace)");

  json = byteLevelJson({});
  json["pre_tokenizer"] = {{"type", "Split"},
                           {"pattern", {{"Regex", "\\w+"}}},
                           {"behavior", "Isolated"},
                           {"invert", false}};
  EXPECT_EQ(loadError(json), "unsupported split regex at 'pre_tokenizer.pattern': \\w+ "
                             "(supported: the GPT-2, Llama 3 and Qwen2 patterns)");

  json = byteLevelJson({});
  json["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "WordPiece"}}}}};
  EXPECT_EQ(loadError(json), "unsupported decoder 'WordPiece' at 'decoder.decoders[0]' "
                             "(supported: Sequence, ByteLevel, Metaspace, Replace, "
                             "ByteFallback, Fuse, Strip)");

  json = byteLevelJson({});
  json["model"]["dropout"] = 0.1;
  EXPECT_EQ(loadError(json), "unsupported 'model.dropout': BPE dropout makes encoding random");
}

TEST(TokenizerJson, MissingFileIsReported) {
  std::string error;
  EXPECT_FALSE(Tokenizer::fromJsonFile("/nonexistent/tokenizer.json", error));
  EXPECT_EQ(error, "cannot read '/nonexistent/tokenizer.json'");
}
} // namespace
