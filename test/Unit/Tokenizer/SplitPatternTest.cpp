//===- SplitPatternTest.cpp - Hand-written pre-tokenization regexes -------===//

#include "nnsc/Runtime/Tokenizer/SplitPattern.h"

#include <gtest/gtest.h>

#include <string>

using namespace nnsc::tokenizer;

namespace {
std::vector<std::string> split(SplitPattern pattern, std::string_view text) {
  std::vector<std::string> pieces;
  for (auto [begin, end] : findSplitMatches(pattern, text))
    pieces.emplace_back(text.substr(begin, end - begin));
  return pieces;
}

using Pieces = std::vector<std::string>;

TEST(SplitPattern, RecognizesOnlyTheExactRegexes) {
  for (SplitPattern p : {SplitPattern::GPT2, SplitPattern::Llama3, SplitPattern::Qwen2})
    EXPECT_EQ(recognizeSplitPattern(splitPatternRegex(p)), p);
  EXPECT_FALSE(recognizeSplitPattern(R"(\s+|\S+)"));
}

TEST(SplitPattern, GPT2KeepsOneSpaceForTheNextWord) {
  EXPECT_EQ(split(SplitPattern::GPT2, "Hello   world  "), (Pieces{"Hello", "  ", " world", "  "}));
  EXPECT_EQ(split(SplitPattern::GPT2, "it's I'LL 12345!!"),
            (Pieces{"it", "'s", " I", "'", "LL", " 12345", "!!"}));
}

TEST(SplitPattern, Llama3GroupsDigitsByThreeAndIgnoresContractionCase) {
  EXPECT_EQ(split(SplitPattern::Llama3, "I'LL pay 1234567"),
            (Pieces{"I", "'LL", " pay", " ", "123", "456", "7"}));
  EXPECT_EQ(split(SplitPattern::Qwen2, "x 123"), (Pieces{"x", " ", "1", "2", "3"}));
  // U+017F LATIN SMALL LETTER LONG S case-folds to 's'.
  EXPECT_EQ(split(SplitPattern::Llama3, "x'\xC5\xBF"), (Pieces{"x", "'\xC5\xBF"}));
}

TEST(SplitPattern, Llama3KeepsLineBreaksTogether) {
  EXPECT_EQ(split(SplitPattern::Llama3, "a \n\n  b"), (Pieces{"a", " \n\n", " ", " b"}));
  EXPECT_EQ(split(SplitPattern::Llama3, "x;\n\ny"), (Pieces{"x", ";\n\n", "y"}));
  EXPECT_EQ(split(SplitPattern::Llama3, "\tword"), (Pieces{"\tword"}));
}
} // namespace
