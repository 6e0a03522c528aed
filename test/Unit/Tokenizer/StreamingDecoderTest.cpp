//===- StreamingDecoderTest.cpp - Characters split across tokens ----------===//

#include "TestTokenizers.h"

#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"

using namespace nnsc::tokenizer;
using namespace nnsc::tokenizer::testing;

namespace {
const std::string Euro = "\xE2\x82\xAC";         // U+20AC, three bytes
const std::string Grinning = "\xF0\x9F\x98\x80"; // U+1F600, four bytes

std::vector<std::string> stream(const Tokenizer &tokenizer, const std::vector<int32_t> &ids) {
  StreamingDecoder decoder(tokenizer, /*skipSpecial=*/false);
  std::vector<std::string> pieces;
  for (int32_t id : ids)
    pieces.push_back(decoder.step(id));
  pieces.push_back(decoder.flush());
  return pieces;
}

TEST(StreamingDecoder, ByteLevelHoldsBackSplitCharacters) {
  // No merges: every byte is its own token.
  auto tokenizer = load(byteLevelJson({}));
  std::vector<int32_t> ids = tokenizer->encode("a" + Euro + Grinning + "b", false);
  ASSERT_EQ(ids.size(), 9u);
  EXPECT_EQ(stream(*tokenizer, ids),
            (std::vector<std::string>{"a", "", "", Euro, "", "", "", Grinning, "b", ""}));
}

TEST(StreamingDecoder, ByteFallbackHoldsBackSplitCharacters) {
  const std::string meta = "\xE2\x96\x81";
  auto tokenizer = load(sentencePieceJson({meta, "a", meta + "a", "b"}, {{meta, "a"}}));
  std::vector<int32_t> ids = tokenizer->encode("a" + Euro + "b", true);
  // <s> ▁a <0xE2> <0x82> <0xAC> b
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ(stream(*tokenizer, ids),
            (std::vector<std::string>{"<s>", " a", "", "", Euro, "b", ""}));
}

TEST(StreamingDecoder, FlushReleasesAnIncompleteTail) {
  auto tokenizer = load(byteLevelJson({}));
  std::vector<int32_t> ids = tokenizer->encode("x" + Euro, false);
  ids.pop_back();
  EXPECT_EQ(stream(*tokenizer, ids), (std::vector<std::string>{"x", "", "", "\xEF\xBF\xBD"}));
}

TEST(StreamingDecoder, ConcatenationEqualsDecode) {
  auto tokenizer = load(byteLevelJson({{"h", "e"}, {"he", "l"}, {"l", "o"}, {" ", "w"}}));
  std::string text = "hello world <|im_start|>" + Grinning + Euro + " \xC3\xA9t\xC3\xA9";
  std::vector<int32_t> ids = tokenizer->encode(text, false);
  std::string joined;
  for (const std::string &piece : stream(*tokenizer, ids))
    joined += piece;
  EXPECT_EQ(joined, tokenizer->decode(ids, false));
  EXPECT_EQ(joined, text);
}
} // namespace
