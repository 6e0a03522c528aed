//===- TensorJsonTest.cpp - tensors in JSON bodies ------------------------===//

#include "nnsc/Server/TensorJson.h"

#include <gtest/gtest.h>

using namespace nnsc::server;
using json = nlohmann::json;

namespace {

TEST(TensorJson, Base64RoundTripsEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i)
    bytes.push_back(char(i * 37));
  for (size_t n = 0; n < bytes.size(); n += 7) {
    std::string part = bytes.substr(0, n);
    EXPECT_EQ(base64Decode(base64Encode(part)), part) << n;
  }
  EXPECT_EQ(base64Encode("Man"), "TWFu");
  EXPECT_EQ(base64Encode("Ma"), "TWE=");
  EXPECT_FALSE(base64Decode("TW!u"));
  EXPECT_FALSE(base64Decode("T"));
}

TEST(TensorJson, TensorRoundTripsThroughItsObject) {
  torch::Tensor t = torch::randn({3, 5});
  json j = tensorToJson(t);
  EXPECT_EQ(j["dtype"], "float32");
  EXPECT_EQ(j["shape"], json({3, 5}));
  std::string error;
  std::optional<torch::Tensor> back = tensorFromJson(j, 1 << 20, error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(torch::equal(*back, t));
  torch::Tensor b = torch::tensor({true, false, true});
  EXPECT_TRUE(torch::equal(*tensorFromJson(tensorToJson(b), 64, error), b));
}

TEST(TensorJson, NestedListsAndScalars) {
  std::string error;
  std::optional<torch::Tensor> t = tensorFromJson(json{{1, 2}, {3, 4.5}}, 1024, error);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*t)[1][1].item<double>(), 4.5);
  EXPECT_EQ(tensorFromJson(json(7), 1024, error)->dim(), 0);
  EXPECT_EQ(tensorFromJson(json(true), 1024, error)->item<double>(), 1.0);
}

TEST(TensorJson, MalformedValuesSayWhatIsWrong) {
  auto errorOf = [](const json &v, size_t limit = 1 << 20) {
    std::string error;
    EXPECT_FALSE(tensorFromJson(v, limit, error)) << v.dump();
    return error;
  };
  EXPECT_EQ(errorOf(json{{1, 2}, {3}}),
            "nested lists are not rectangular (a list of 1 where 2 was expected)");
  EXPECT_EQ(errorOf(json{"a"}), "expected a number, a bool or a list of them, got string");
  EXPECT_EQ(errorOf({{"dtype", "float32"}, {"shape", {2}}}),
            "a tensor object needs \"dtype\", \"shape\" and \"data\"; \"data\" is missing");
  EXPECT_EQ(errorOf({{"dtype", "complex"}, {"shape", {2}}, {"data", ""}}),
            "\"dtype\" must be one of float32, float64, bfloat16, float16, int64, int32, bool");
  EXPECT_EQ(errorOf({{"dtype", "float32"}, {"shape", {2}}, {"data", "AAAA"}}),
            "\"data\" has 3 bytes but dtype float32 and shape need 8");
  EXPECT_EQ(errorOf({{"dtype", "float32"}, {"shape", {-1}}, {"data", ""}}),
            "\"shape\" must be a list of non-negative integer sizes");
  EXPECT_EQ(errorOf({{"dtype", "float32"}, {"shape", {1000}}, {"data", ""}}, 100),
            "the tensor has 4000 bytes, more than the limit of 100");
  EXPECT_EQ(errorOf(json(std::vector<int>(100, 1)), 16), "the value has more than 4 elements");
}

} // namespace
