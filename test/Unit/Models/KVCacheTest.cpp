//===- KVCacheTest.cpp - the CPU cache reads as zeros, backed on use -*- C++ -*-===//

#include "nnsc/Runtime/Models/KVCache.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

using namespace nnsc;

namespace {

schema::ModelConfig smallConfig() {
  schema::ModelConfig c;
  c.layers = 2;
  c.kvHeads = 3;
  c.headDim = 64;
  return c;
}

/// Pages of `t`'s memory that are resident (mincore).
size_t residentPages(const torch::Tensor &t) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  size_t bytes = size_t(t.numel()) * t.element_size();
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  EXPECT_EQ(::mincore(t.data_ptr(), bytes, resident.data()), 0);
  size_t n = 0;
  for (unsigned char r : resident)
    n += r & 1;
  return n;
}

TEST(KVCache, CpuCacheReadsAsZerosAndIsBackedOnlyWhereWritten) {
  // 256 blocks of 16 tokens: 3 MB per layer and tensor.
  KVCache cache(smallConfig(), 256, 16, torch::kFloat32);
  ASSERT_EQ(cache.k.size(), 2u);
  ASSERT_EQ(cache.v.size(), 2u);
  EXPECT_EQ(cache.k[0].sizes(), (std::vector<int64_t>{256, 16, 3, 64}));
  EXPECT_EQ(residentPages(cache.k[1]), 0u) << "a fresh cache should take no memory";

  // One block written: only its pages become resident.
  cache.k[1][7].fill_(2.5f);
  size_t blockPages = size_t(16 * 3 * 64 * 4) / size_t(::sysconf(_SC_PAGESIZE));
  EXPECT_GE(residentPages(cache.k[1]), blockPages);
  EXPECT_LE(residentPages(cache.k[1]), blockPages + 2);

  // Every element reads as zero except what was written, as torch::zeros would.
  EXPECT_EQ(cache.k[1].sum().item<double>(), 2.5 * 16 * 3 * 64);
  EXPECT_EQ(cache.v[0].abs().max().item<float>(), 0.0f);
}

TEST(KVCache, CpuCacheInTheComputeDtype) {
  KVCache cache(smallConfig(), 4, 16, torch::kBFloat16);
  EXPECT_EQ(cache.v[1].scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(cache.v[1].is_contiguous());
  EXPECT_EQ(cache.v[1].abs().max().item<float>(), 0.0f);
}

} // namespace
