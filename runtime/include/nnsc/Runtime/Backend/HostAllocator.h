//===- HostAllocator.h - Caching allocator for host tensors -----*- C++ -*-===//
//
// A forward pass allocates the same large activations layer after layer and step after step
// (a prefill of 8,000 tokens makes 100 MB gate/up products). Through malloc each of them is a
// fresh mmap: the kernel faults in and zeroes every page and unmaps it on free, which cost
// about 2 million page faults in a 10 s serving run. The CPU backend installs this allocator as
// LibTorch's CPU allocator instead: blocks of at least `kLargeBlock` bytes are kept on free
// and handed out again (best fit); smaller requests go to c10's own alloc_cpu/free_cpu.
// Freed blocks beyond `cacheLimit` bytes go back to the system, largest first.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BACKEND_HOSTALLOCATOR_H
#define NNSC_RUNTIME_BACKEND_HOSTALLOCATOR_H

#include <c10/core/Allocator.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

namespace nnsc {

/// LibTorch CPU allocator that caches large blocks for reuse.
class HostAllocator final : public c10::Allocator {
public:
  /// Requests of at least this many bytes are served from (and returned to) the cache.
  static constexpr size_t kLargeBlock = size_t(1) << 20;

  /// The process's one instance (the deleter of its blocks is a plain function, so it finds
  /// the cache through this). Not installed until installHostAllocator().
  static HostAllocator &get();

  c10::DataPtr allocate(size_t n) override;
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void *dest, const void *src, size_t count) const override {
    default_copy_data(dest, src, count);
  }

  /// Bytes held in freed blocks, and bytes of large blocks handed out and not yet freed.
  size_t cachedBytes() const;
  size_t liveBytes() const;

  /// Keeps at most `limit` bytes of freed blocks (default 2 GiB), freeing the rest now.
  void setCacheLimit(size_t limit);
  /// Frees every cached block (the limit stays).
  void trim();

private:
  HostAllocator() = default;
  static void release(void *ptr);
  void shrinkTo(size_t limit);

  size_t cacheLimit = size_t(2) << 30;
  mutable std::mutex mutex;
  std::multimap<size_t, void *> freeBlocks; // size -> block
  std::unordered_map<void *, size_t> live;  // block -> size
  size_t cached = 0, liveTotal = 0;
};

/// The process's host allocator; the first call installs it as LibTorch's CPU allocator
/// (unless NNSC_HOST_ALLOCATOR=system, which keeps LibTorch's own for A/B measurements).
HostAllocator *installHostAllocator();

} // namespace nnsc

#endif // NNSC_RUNTIME_BACKEND_HOSTALLOCATOR_H
