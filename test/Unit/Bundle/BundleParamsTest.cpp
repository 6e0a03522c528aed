//===- BundleParamsTest.cpp - --param binding and request saves -----------===//
//
// bindParams against a trace described like a loaded bundle's: defaults, inline scalars and
// lists, safetensors files, and the error for every kind of wrong value; BundleRequest's
// checks of what kernels save.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Bundle/BundleParams.h"
#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Models/SafetensorsWriter.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace nnsc;

namespace {

const float kVecDefault[4] = {0.5f, 0.5f, 0.5f, 0.5f};

BundleTrace makeTrace() {
  BundleTrace t;
  t.name = "patch";
  t.numInvokes = 0;
  t.flags = 0;
  t.frameBytes = 16;
  t.params = {{"vec", NNSC_DTYPE_F32, {4}, kVecDefault},
              {"k", NNSC_DTYPE_I64, {}, nullptr},
              {"on", NNSC_DTYPE_BOOL, {2}, nullptr}};
  t.saves = {{"h", NNSC_DTYPE_F32, {4}, true},
             {"all", NNSC_DTYPE_F32, {NNSC_DIM_TOKENS, 4}, false}};
  return t;
}

std::string bindError(const std::vector<std::string> &specs) {
  BundleTrace t = makeTrace();
  std::string error;
  EXPECT_FALSE(bindParams(t, specs, error).has_value());
  return error;
}

TEST(BundleParams, DefaultsAndInlineValues) {
  BundleTrace t = makeTrace();
  std::string error;
  auto params = bindParams(t, {"k=7", "on=true,0"}, error);
  ASSERT_TRUE(params) << error;
  ASSERT_EQ(params->size(), 3u);
  EXPECT_TRUE(torch::equal((*params)[0], torch::full({4}, 0.5f)));
  EXPECT_EQ((*params)[1].scalar_type(), torch::kInt64);
  EXPECT_EQ((*params)[1].dim(), 0);
  EXPECT_EQ((*params)[1].item<int64_t>(), 7);
  EXPECT_TRUE(torch::equal((*params)[2], torch::tensor({true, false})));

  params = bindParams(t, {"vec=1,-2,3.5,4e-1", "k=-3", "on=0,1"}, error);
  ASSERT_TRUE(params) << error;
  EXPECT_TRUE(torch::equal((*params)[0], torch::tensor({1.f, -2.f, 3.5f, 0.4f})));
}

TEST(BundleParams, SafetensorsFiles) {
  std::filesystem::path dir = testing::TempDir();
  std::string one = (dir / "one.safetensors").string(), two = (dir / "two.safetensors").string();
  torch::Tensor v = torch::arange(4, torch::kBFloat16);
  writeSafetensors(one, {{"anything", v}});
  writeSafetensors(two, {{"vec", v * 2}, {"other", v * 3}, {"wide", torch::zeros({5})}});
  BundleTrace t = makeTrace();
  std::string error;
  for (auto [spec, factor] : std::vector<std::pair<std::string, double>>{
           {"vec=@" + one, 1}, {"vec=@" + two, 2}, {"vec=@" + two + ":other", 3}}) {
    auto params = bindParams(t, {spec, "k=1", "on=1,1"}, error);
    ASSERT_TRUE(params) << spec << ": " << error;
    EXPECT_EQ((*params)[0].scalar_type(), torch::kFloat32) << spec;
    EXPECT_TRUE(torch::equal((*params)[0], (v * factor).to(torch::kFloat32))) << spec;
  }
  EXPECT_EQ(bindError({"vec=@" + two + ":missing", "k=1", "on=1,1"}),
            "param 'vec': '" + two + "' has no tensor 'missing'");
  EXPECT_EQ(bindError({"vec=@" + two + ":wide", "k=1", "on=1,1"}),
            "param 'vec' is f32[4] but tensor 'wide' in '" + two + "' has shape [5]");
  EXPECT_NE(bindError({"vec=@" + (dir / "absent.safetensors").string(), "k=1", "on=1,1"})
                .find("param 'vec': "),
            std::string::npos);
}

TEST(BundleParams, Errors) {
  EXPECT_EQ(bindError({"on=1,1"}),
            "param 'k' (i64[]) has no default; give it with --param k=VALUE");
  EXPECT_EQ(bindError({"k=1", "on=1,1", "scale=2"}),
            "the trace has no param 'scale' (its params: vec, k, on)");
  EXPECT_EQ(bindError({"k=1", "k=2", "on=1,1"}), "param 'k' is given twice");
  EXPECT_EQ(bindError({"k=1.5", "on=1,1"}), "param 'k' is i64[]: '1.5' is not an integer");
  EXPECT_EQ(bindError({"k=1", "on=1,2"}), "param 'on' is bool[2]: '2' is not true or false");
  EXPECT_EQ(bindError({"k=1", "on=1,1", "vec=1,2"}),
            "param 'vec' is f32[4] and needs 4 values, got 2");
  EXPECT_EQ(bindError({"k=1", "on=1,1", "vec=1,x,3,4"}),
            "param 'vec' is f32[4]: 'x' is not a number");
  EXPECT_EQ(bindError({"k"}), "--param needs NAME=VALUE, got 'k'");
  // Values outside int64_t and double are refused, not converted (undefined behaviour).
  EXPECT_EQ(bindError({"k=1e300", "on=1,1"}), "param 'k' is i64[]: '1e300' is not an integer");
  EXPECT_EQ(bindError({"k=1", "on=1,1", "vec=1,2,3,1e400"}),
            "param 'vec' is f32[4]: '1e400' is not a number");
  // A value list longer than any inline param is refused before it is stored.
  std::string many = "vec=0";
  for (int i = 0; i < (1 << 20); ++i)
    many += ",0";
  EXPECT_EQ(bindError({"k=1", "on=1,1", many}),
            "param 'vec' is f32[4]: more than 1048576 values inline; give large values as "
            "@FILE.safetensors");
}

TEST(BundleRequest, FrameParamsAndSaves) {
  BundleTrace t = makeTrace();
  std::string error;
  auto params = bindParams(t, {"k=3", "on=0,1"}, error);
  ASSERT_TRUE(params) << error;
  BundleRequest r(t, *params);
  ASSERT_NE(r.frame(), nullptr);
  EXPECT_EQ(static_cast<const uint8_t *>(r.frame())[15], 0);
  EXPECT_EQ(r.params()[1].dtype, NNSC_DTYPE_I64);
  EXPECT_EQ(*static_cast<const int64_t *>(r.params()[1].data), 3);

  EXPECT_FALSE(r.save(0, 2, viewOf(torch::ones({4}))));
  EXPECT_FALSE(r.save(1, 0, viewOf(torch::ones({3, 4}))));
  EXPECT_EQ(r.save(0, 0, viewOf(torch::ones({5}))).value_or(""),
            "save 'h' is declared f32[4] but the kernel saved f32[5]");
  EXPECT_EQ(r.save(1, 0, viewOf(torch::ones({3, 4}, torch::kInt64))).value_or(""),
            "save 'all' is declared f32[T, 4] but the kernel saved i64[3, 4]");
  EXPECT_EQ(r.save(2, 0, viewOf(torch::ones({4}))).value_or(""), "save index 2 out of range");
  std::vector<std::string> names;
  for (const auto &[name, value] : r.saves())
    names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"all", "h.2"}));

  r.fail("first");
  r.fail("second");
  EXPECT_EQ(r.error().value_or(""), "first");
}

} // namespace
