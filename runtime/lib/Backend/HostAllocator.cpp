//===- HostAllocator.cpp - Caching allocator for host tensors ---*- C++ -*-===//

#include "nnsc/Runtime/Backend/HostAllocator.h"

#include "nnsc/Runtime/Support/RuntimeOptions.h"
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

namespace nnsc {

namespace {

/// Large blocks are sized in 2 MiB steps, so a block can be reused for any request that rounds
/// to the same size. They are not madvise(MADV_HUGEPAGE)d: on this kernel that tripled the
/// system time of a serving run (huge-page faults and compaction) instead of saving it.
constexpr size_t kGranule = size_t(2) << 20;

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

/// A cached block is reused for a request when it wastes at most an eighth of itself.
bool fits(size_t block, size_t request) { return block - request <= block / 8; }

} // namespace

HostAllocator &HostAllocator::get() {
  static HostAllocator *instance = new HostAllocator(); // outlives every tensor
  return *instance;
}

c10::DataPtr HostAllocator::allocate(size_t n) {
  const c10::Device cpu(c10::DeviceType::CPU);
  if (n < kLargeBlock) {
    void *small = c10::alloc_cpu(n);
    return {small, small, &release, cpu};
  }
  const size_t size = roundUp(n, kGranule);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = freeBlocks.lower_bound(size);
    if (it != freeBlocks.end() && fits(it->first, size)) {
      void *block = it->second;
      const size_t blockSize = it->first;
      freeBlocks.erase(it);
      cached -= blockSize;
      live.emplace(block, blockSize);
      liveTotal += blockSize;
      return {block, block, &release, cpu};
    }
  }
  void *block = nullptr;
  if (posix_memalign(&block, 64, size) != 0 || !block)
    TORCH_CHECK_WITH(OutOfMemoryError, false, "HostAllocator: cannot allocate ", size,
                     " bytes of host memory");
  std::lock_guard<std::mutex> lock(mutex);
  live.emplace(block, size);
  liveTotal += size;
  return {block, block, &release, cpu};
}

void HostAllocator::release(void *ptr) {
  if (!ptr)
    return;
  HostAllocator &self = get();
  {
    std::lock_guard<std::mutex> lock(self.mutex);
    auto it = self.live.find(ptr);
    if (it != self.live.end()) {
      const size_t size = it->second;
      self.live.erase(it);
      self.liveTotal -= size;
      self.freeBlocks.emplace(size, ptr);
      self.cached += size;
      self.shrinkTo(self.cacheLimit);
      return;
    }
  }
  c10::free_cpu(ptr);
}

void HostAllocator::shrinkTo(size_t limit) {
  while (cached > limit && !freeBlocks.empty()) {
    auto largest = std::prev(freeBlocks.end());
    cached -= largest->first;
    std::free(largest->second);
    freeBlocks.erase(largest);
  }
}

void HostAllocator::setCacheLimit(size_t limit) {
  std::lock_guard<std::mutex> lock(mutex);
  cacheLimit = limit;
  shrinkTo(limit);
}

void HostAllocator::trim() {
  std::lock_guard<std::mutex> lock(mutex);
  shrinkTo(0);
}

size_t HostAllocator::cachedBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return cached;
}

size_t HostAllocator::liveBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return liveTotal;
}

HostAllocator *installHostAllocator() {
  static HostAllocator *installed = [] {
    if (RuntimeOptions::get().systemAllocator)
      return static_cast<HostAllocator *>(nullptr);
    // Priority above LibTorch's default (0), so a later default registration cannot undo it.
    c10::SetCPUAllocator(&HostAllocator::get(), /*priority=*/1);
    return &HostAllocator::get();
  }();
  return installed;
}

} // namespace nnsc
