//===- HostAllocatorTest.cpp - The caching host allocator -------*- C++ -*-===//

#include "nnsc/Runtime/Backend/HostAllocator.h"

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace nnsc {
namespace {

class HostAllocatorTest : public ::testing::Test {
protected:
  void SetUp() override { installHostAllocator(); }
  void TearDown() override { cache().setCacheLimit(size_t(2) << 30); }
  static HostAllocator &cache() { return HostAllocator::get(); }
};

TEST_F(HostAllocatorTest, InstalledAsLibTorchCpuAllocator) {
  EXPECT_EQ(c10::GetCPUAllocator(), &HostAllocator::get());
  torch::Tensor t = torch::empty({1 << 20}); // 4 MiB: a large block
  EXPECT_GE(cache().liveBytes(), size_t(4) << 20);
}

TEST_F(HostAllocatorTest, FreedLargeBlockIsReusedForACloseSize) {
  cache().trim();
  void *first;
  {
    torch::Tensor a = torch::empty({3, 1000, 1000}); // 12 MB: a 12 MiB block
    first = a.data_ptr();
  }
  EXPECT_GE(cache().cachedBytes(), size_t(12'000'000));
  {
    torch::Tensor same = torch::empty({3, 1000, 1000});
    EXPECT_EQ(same.data_ptr(), first);
  }
  {
    torch::Tensor slightlySmaller = torch::empty({3, 950, 1000});
    EXPECT_EQ(slightlySmaller.data_ptr(), first);
  }
  // A far smaller request gets its own block rather than wasting this one.
  torch::Tensor farSmaller = torch::empty({1 << 19});
  EXPECT_NE(farSmaller.data_ptr(), first);
  EXPECT_GE(cache().cachedBytes(), size_t(12'000'000));
}

TEST_F(HostAllocatorTest, ReusedMemoryHoldsWhatIsWrittenToIt) {
  torch::Tensor ref = torch::randn({2048, 700});
  for (int round = 0; round < 3; ++round) {
    torch::Tensor x = torch::empty_like(ref);
    x.copy_(ref);
    torch::Tensor y = x * 2 + 1;
    EXPECT_TRUE(torch::equal(y, ref * 2 + 1));
  }
}

TEST_F(HostAllocatorTest, SmallTensorsPassThrough) {
  const size_t live = cache().liveBytes();
  std::vector<torch::Tensor> small;
  for (int i = 0; i < 100; ++i)
    small.push_back(torch::full({1000}, float(i)));
  EXPECT_EQ(cache().liveBytes(), live);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(small[size_t(i)][999].item<float>(), float(i));
}

TEST_F(HostAllocatorTest, CacheLimitFreesBlocks) {
  cache().trim();
  cache().setCacheLimit(size_t(8) << 20);
  {
    std::vector<torch::Tensor> blocks;
    for (int i = 0; i < 4; ++i)
      blocks.push_back(torch::empty({1 << 20})); // 4 MiB each
  }
  EXPECT_LE(cache().cachedBytes(), size_t(8) << 20);
  cache().trim();
  EXPECT_EQ(cache().cachedBytes(), 0u);
}

TEST_F(HostAllocatorTest, ConcurrentAllocationAndRelease) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        torch::Tensor x = torch::full({(1 << 18) + 1024 * (i % 7)}, float(t));
        ASSERT_EQ(x.sum().item<double>(), double(t) * double(x.numel()));
      }
    });
  for (std::thread &th : threads)
    th.join();
}

TEST_F(HostAllocatorTest, RawInterfaceRoundTrips) {
  // oneDNN's scratchpads come through raw_allocate/raw_deallocate.
  c10::Allocator *alloc = c10::GetCPUAllocator();
  for (size_t n : {size_t(64), size_t(3) << 20}) {
    void *p = alloc->raw_allocate(n);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, n);
    alloc->raw_deallocate(p);
  }
}

} // namespace
} // namespace nnsc
