//===- RuntimeOptionsTest.cpp - the NNSC_* switches, read once ------------===//

#include "nnsc/Runtime/Support/RuntimeOptions.h"
#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using nnsc::InvalidInput;
using nnsc::RuntimeOptions;

namespace {

/// The options of an environment holding exactly `vars`.
RuntimeOptions parse(const std::map<std::string, std::string> &vars) {
  return RuntimeOptions::parse([&](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

/// The message of the InvalidInput that parsing `vars` throws, or "" when it throws none.
std::string errorOf(const std::map<std::string, std::string> &vars) {
  try {
    parse(vars);
  } catch (const InvalidInput &e) {
    return e.what();
  }
  return "";
}

TEST(RuntimeOptions, UnsetMeansTheDefaults) {
  RuntimeOptions o = parse({});
  RuntimeOptions d;
  EXPECT_EQ(o.rowLane, d.rowLane);
  EXPECT_TRUE(o.rowLane);
  EXPECT_FALSE(o.libTorchGemm);
  EXPECT_FALSE(o.quantDecodeMaxRows.has_value());
  EXPECT_TRUE(o.quantAvx512);
  EXPECT_TRUE(o.quantBf16Dot);
  EXPECT_TRUE(o.attentionBf16Dot);
  EXPECT_FALSE(o.systemAllocator);
  EXPECT_FALSE(o.cudaPrefillSimt);
  EXPECT_FALSE(o.profile);
  EXPECT_FALSE(o.distTimeoutSeconds.has_value());
}

TEST(RuntimeOptions, EachSwitchIsRead) {
  RuntimeOptions o = parse({{"NNSC_ROW_LANE", "off"},
                            {"NNSC_GEMM", "libtorch"},
                            {"NNSC_QUANT_DECODE", "16"},
                            {"NNSC_QUANT_AVX512", "0"},
                            {"NNSC_QUANT_BF16DOT", "0"},
                            {"NNSC_ATTENTION_BF16DOT", "0"},
                            {"NNSC_HOST_ALLOCATOR", "system"},
                            {"NNSC_CUDA_PREFILL", "simt"},
                            {"NNSC_PROFILE", "1"},
                            {"NNSC_DIST_TIMEOUT", "30"}});
  EXPECT_FALSE(o.rowLane);
  EXPECT_TRUE(o.libTorchGemm);
  EXPECT_EQ(o.quantDecodeMaxRows, 16);
  EXPECT_FALSE(o.quantAvx512);
  EXPECT_FALSE(o.quantBf16Dot);
  EXPECT_FALSE(o.attentionBf16Dot);
  EXPECT_TRUE(o.systemAllocator);
  EXPECT_TRUE(o.cudaPrefillSimt);
  EXPECT_TRUE(o.profile);
  EXPECT_EQ(o.distTimeoutSeconds, 30);
}

TEST(RuntimeOptions, QuantDecodeTakesOnOffOrARowCount) {
  EXPECT_FALSE(parse({{"NNSC_QUANT_DECODE", "on"}}).quantDecodeMaxRows.has_value());
  EXPECT_EQ(parse({{"NNSC_QUANT_DECODE", "off"}}).quantDecodeMaxRows, 0);
  EXPECT_EQ(parse({{"NNSC_QUANT_DECODE", "0"}}).quantDecodeMaxRows, 0);
  EXPECT_EQ(errorOf({{"NNSC_QUANT_DECODE", "-3"}}),
            "NNSC_QUANT_DECODE must be on, off or a row count, got '-3'");
  EXPECT_EQ(errorOf({{"NNSC_QUANT_DECODE", "16x"}}),
            "NNSC_QUANT_DECODE must be on, off or a row count, got '16x'");
}

TEST(RuntimeOptions, AValueOutsideTheChoicesNamesTheVariable) {
  EXPECT_EQ(errorOf({{"NNSC_ROW_LANE", "maybe"}}),
            "NNSC_ROW_LANE must be one of on, off, got 'maybe'");
  EXPECT_EQ(errorOf({{"NNSC_GEMM", "mkl"}}),
            "NNSC_GEMM must be one of onednn, libtorch, got 'mkl'");
  EXPECT_EQ(errorOf({{"NNSC_QUANT_AVX512", "no"}}),
            "NNSC_QUANT_AVX512 must be one of 0, 1, got 'no'");
  EXPECT_EQ(errorOf({{"NNSC_DIST_TIMEOUT", "0"}}),
            "NNSC_DIST_TIMEOUT must be a whole number >= 1, got '0'");
}

TEST(RuntimeOptions, AnEmptyValueIsUnset) {
  EXPECT_TRUE(parse({{"NNSC_ROW_LANE", ""}}).rowLane);
  EXPECT_FALSE(parse({{"NNSC_DIST_TIMEOUT", ""}}).distTimeoutSeconds.has_value());
}

} // namespace
