//===- UnicodeTest.cpp - Categories and UTF-8 handling --------------------===//

#include "nnsc/Runtime/Tokenizer/Unicode.h"
#include "nnsc/Runtime/Tokenizer/ByteLevel.h"

#include <gtest/gtest.h>

using namespace nnsc::tokenizer;

namespace {
TEST(Unicode, Categories) {
  EXPECT_TRUE(isLetter(U'a'));
  EXPECT_TRUE(isLetter(0x65E5)); // CJK
  EXPECT_FALSE(isLetter(U'1'));
  EXPECT_TRUE(isNumber(0x0663)); // ARABIC-INDIC DIGIT THREE
  EXPECT_TRUE(isNumber(0x00BD)); // VULGAR FRACTION ONE HALF (No)
  EXPECT_TRUE(isWhitespace(0x3000));
  EXPECT_TRUE(isWhitespace(0x0085));
  EXPECT_FALSE(isWhitespace(0x200B)); // ZERO WIDTH SPACE is Cf
  EXPECT_EQ(category(0x1F600), Category::So);
  EXPECT_EQ(category(0x110000), Category::Cn);
}

TEST(Unicode, CompletePrefixHoldsBackOnlyTruncatedSequences) {
  EXPECT_EQ(completeUtf8Prefix("a\xE2\x82"), 1u);
  EXPECT_EQ(completeUtf8Prefix("a\xF0"), 1u);
  EXPECT_EQ(completeUtf8Prefix("a\xE2\x82\xAC"), 4u);
  // Bytes that can never start a sequence are not waited for.
  EXPECT_EQ(completeUtf8Prefix("a\xFF"), 2u);
  EXPECT_EQ(completeUtf8Prefix("a\xE2"
                               "b"),
            3u);
}

TEST(Unicode, LossyConversionReplacesMaximalInvalidSubparts) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(toValidUtf8Lossy("a\xE2\x82"
                             "b"),
            "a" + fffd + "b");
  EXPECT_EQ(toValidUtf8Lossy("\xC0\x80"), fffd + fffd);
  EXPECT_EQ(toValidUtf8Lossy("\xED\xA0\x80"), fffd + fffd + fffd); // a surrogate
  EXPECT_TRUE(isValidUtf8("\xF0\x9F\x98\x80"));
  EXPECT_FALSE(isValidUtf8("\xF0\x9F\x98"));
}

TEST(ByteLevel, MapRoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b)
    all.push_back(static_cast<char>(b));
  std::string decoded;
  appendByteLevelDecoded(byteLevelEncode(all), decoded);
  EXPECT_EQ(decoded, all);
  EXPECT_EQ(byteLevelEncode(" "), "\xC4\xA0"); // 'Ġ'
  // A token with an unmapped character is taken verbatim.
  decoded.clear();
  appendByteLevelDecoded("<|x y|>", decoded);
  EXPECT_EQ(decoded, "<|x y|>");
}
} // namespace
