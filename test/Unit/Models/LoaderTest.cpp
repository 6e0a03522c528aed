//===- LoaderTest.cpp - safetensors, GGUF names, hook dispatch --*- C++ -*-===//

#include "nnsc/Runtime/Hooks/HookDispatch.h"
#include "nnsc/Runtime/Models/GGUFWeights.h"
#include "nnsc/Runtime/Models/SafetensorsFile.h"
#include "nnsc/Runtime/Models/SafetensorsWriter.h"

#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace nnsc;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("nnsc-loader-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

TEST(Safetensors, RoundTripsWhatTheWriterWrites) {
  std::string path = tempPath("ok.safetensors");
  torch::Tensor a = torch::arange(6, torch::kFloat32).view({2, 3});
  torch::Tensor b = torch::arange(4, torch::kInt64);
  writeSafetensors(path, {{"a", a}, {"b", b}});
  std::string error;
  auto file = SafetensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  const SafetensorInfo *info = file->find("a");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->dtype, "F32");
  EXPECT_EQ(info->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(0, std::memcmp(info->data, a.data_ptr(), 24));
  EXPECT_EQ(file->find("b")->dtype, "I64");
  std::filesystem::remove(path);
}

TEST(Safetensors, RejectsTruncatedAndCorruptFiles) {
  std::string path = tempPath("bad.safetensors");
  writeSafetensors(path, {{"a", torch::ones({64})}});
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto rewrite = [&](const std::string &content) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    std::string error;
    EXPECT_FALSE(SafetensorsFile::open(path, error));
    return error;
  };
  EXPECT_NE(rewrite(bytes.substr(0, 5)).find("truncated safetensors file"), std::string::npos);
  EXPECT_NE(rewrite(bytes.substr(0, bytes.size() - 4)).find("outside the"), std::string::npos);
  std::string corrupt = bytes;
  corrupt[8] = '[';
  EXPECT_NE(rewrite(corrupt).find("corrupt safetensors header"), std::string::npos);
  std::string huge = bytes;
  huge[7] = char(0x7f);
  EXPECT_NE(rewrite(huge).find("does not fit"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Safetensors, RefusesShapesWhoseSizeOverflows) {
  // Found by fuzz-safetensors (test/Fuzz/corpus/fuzz-safetensors/crash-shape-*): the element
  // count overflowed int64_t (undefined behaviour), and a dimension past INT64_MAX read as -1.
  std::string path = tempPath("shape.safetensors");
  auto refusal = [&](const std::string &header, size_t dataBytes) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
      bytes[i] = char((header.size() >> (8 * i)) & 0xff);
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << bytes << header << std::string(dataBytes, 'x');
    std::string error;
    EXPECT_FALSE(SafetensorsFile::open(path, error));
    return error.substr(error.find("tensor '"));
  };
  EXPECT_EQ(refusal(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 0],
                     "data_offsets": [0, 0]}})",
                    0),
            "tensor 'a' has an impossible shape (more than 2^63 bytes)");
  EXPECT_EQ(refusal(R"({"a": {"dtype": "F32", "shape": [18446744073709551615],
                     "data_offsets": [0, 4]}})",
                    4),
            "tensor 'a' has a shape entry that is not a non-negative integer");
  EXPECT_EQ(refusal(R"({"a": {"dtype": "F32", "shape": [2, 0],
                     "data_offsets": [0, 4]}})",
                    4),
            "tensor 'a' has 4 bytes of data, its shape needs 0");
  std::filesystem::remove(path);
}

TEST(GGUFNames, MapsTransformersNamesToLlamaCpp) {
  EXPECT_EQ(ggufTensorName("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(ggufTensorName("model.layers.12.self_attn.o_proj.weight"), "blk.12.attn_output.weight");
  EXPECT_EQ(ggufTensorName("model.layers.0.self_attn.q_proj.bias"), "blk.0.attn_q.bias");
  EXPECT_EQ(ggufTensorName("model.layers.3.post_attention_layernorm.weight"),
            "blk.3.ffn_norm.weight");
  EXPECT_EQ(ggufTensorName("model.layers.1.self_attn.k_norm.weight"), "blk.1.attn_k_norm.weight");
  EXPECT_EQ(ggufTensorName("lm_head.weight"), "output.weight");
  EXPECT_EQ(ggufTensorName("model.layers.1.mlp.experts.weight"), std::nullopt);
}

TEST(HookDispatch, OneCallPerHookWithTheGroupsOfItsRequests) {
  schema::ModelConfig c;
  c.hidden = 8, c.intermediate = 16, c.layers = 1, c.heads = 2, c.kvHeads = 1, c.headDim = 4;
  c.vocab = 10;
  schema::Architecture arch(c);
  int site = arch.findSite("model.layers.0.mlp.output");
  std::vector<std::vector<int64_t>> calls;
  auto shared = makeSiteHook([&](int s, torch::Tensor &, std::span<const TokenGroup> groups) {
    EXPECT_EQ(s, site);
    std::vector<int64_t> starts;
    for (const TokenGroup &g : groups)
      starts.push_back(g.tokenStart);
    calls.push_back(starts);
  });
  HookTable a(arch), b(arch), none(arch);
  a.bind("model.layers.0.mlp.output", shared);
  b.bind(site, shared);
  EXPECT_TRUE(a.bindsForward());
  EXPECT_NE(a.cacheSalt(), b.cacheSalt());
  EXPECT_THROW(a.bind("model.layers.7.mlp.output", shared), nnsc::InvalidInput);

  HookDispatch d(int(arch.sites().size()));
  d.add(a, {0, 3, 0, 10, 0}, std::nullopt);
  d.add(none, {3, 2, 0, 11, 0}, std::nullopt);
  d.add(b, {5, 4, 1, 12, 7}, std::nullopt);
  EXPECT_TRUE(d.bound(site));
  EXPECT_FALSE(d.bound(site - 1));
  torch::Tensor value = torch::zeros({9, 8});
  d.fire(site, value);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], (std::vector<int64_t>{0, 5}));
}

} // namespace
