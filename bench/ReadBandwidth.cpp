//===- ReadBandwidth.cpp - streaming read bandwidth -------------*- C++ -*-===//
//
// The decode roofline's denominator: the fastest the machine reads a buffer much larger than
// the caches, with at::parallel_for on the same thread count the engine uses. Four ways, each
// the best of R passes: on 4 KiB pages and on transparent huge pages (madvise), with the
// hardware prefetchers alone and with a software prefetch 1 KiB ahead of each thread's loads,
// as the quantized kernels read the weights. The roofline takes the best of the four: a probe
// slower than the engine's own kernels would flatter every ratio against it (on a Zen 5 VM
// the plain 4 KiB read gave 45-49 GB/s, huge pages with prefetch 52.5, and the engine's bf16
// products alone streamed the model at 51.4).
//
//   nnsc-bench-bandwidth [--threads N] [--mib M] [--repeat R]
//
// The last line is "read bandwidth: X GB/s (...)": what bench/peer_bench.py reads.
//
//===----------------------------------------------------------------------===//

#include <ATen/Parallel.h>

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace {

constexpr size_t HugePage = size_t(2) << 20;
constexpr int64_t PrefetchFloats = 1024 / int64_t(sizeof(float)); // 1 KiB ahead

/// `bytes` of anonymous memory from a 2 MiB boundary, on huge pages if `huge` (a request the
/// kernel may decline: madvise-only THP is the common setting), filled so every page exists
/// and no two pages are alike (a hypervisor that merges identical pages would serve a
/// buffer of one repeated page from its caches: one probe here once read 83 GB/s).
class Buffer {
public:
  Buffer(size_t bytes, bool huge) : length(bytes + HugePage) {
    base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
      throw std::bad_alloc();
    auto *start = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(base) + HugePage - 1) /
                                           HugePage * HugePage);
    ::madvise(start, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    data = reinterpret_cast<float *>(start);
    for (size_t i = 0; i < bytes / sizeof(float); ++i)
      data[i] = float(i % 4099);
  }
  ~Buffer() { ::munmap(base, length); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  float *data;

private:
  void *base;
  size_t length;
};

/// The best GB/s of `repeat` passes summing data[0, n) split over the threads.
template <bool Prefetch>
double bestPass(const float *data, int64_t n, int threads, int repeat, double &sink) {
  double best = 0;
  for (int r = 0; r < repeat; ++r) {
    std::vector<double> partial(size_t(threads) * 8, 0.0);
    const auto start = std::chrono::steady_clock::now();
    at::parallel_for(0, n, n / threads + 1, [&](int64_t begin, int64_t end) {
      // 64 independent accumulators (4 vectors) keep the loop bound by loads, not by add
      // latency; 256 bytes per iteration, each of its 4 lines prefetched 1 KiB ahead.
      float acc[64] = {};
      int64_t i = begin;
      for (; i + 64 <= end; i += 64) {
        if constexpr (Prefetch)
          for (int line = 0; line < 64; line += 16)
            __builtin_prefetch(data + i + line + PrefetchFloats);
#pragma omp simd
        for (int j = 0; j < 64; ++j)
          acc[j] += data[i + j];
      }
      double total = 0;
      for (; i < end; ++i)
        total += data[i];
      for (float a : acc)
        total += a;
      partial[size_t(at::get_thread_num()) * 8] += total;
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (double p : partial)
      sink += p;
    best = std::max(best, double(n) * sizeof(float) / seconds / 1e9);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int threads = 2;
  int64_t mib = 1024;
  int repeat = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--mib"))
      mib = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::atoi(argv[i + 1]);
  }
  at::set_num_threads(threads);
  const size_t bytes = size_t(mib) << 20;
  const int64_t n = int64_t(bytes / sizeof(float));
  double best = 0, sink = 0;
  for (bool huge : {false, true}) {
    const Buffer buffer(bytes, huge);
    for (bool prefetch : {false, true}) {
      const double rate = prefetch ? bestPass<true>(buffer.data, n, threads, repeat, sink)
                                   : bestPass<false>(buffer.data, n, threads, repeat, sink);
      std::printf("  %-15s %-26s %6.2f GB/s\n", huge ? "huge pages" : "4 KiB pages",
                  prefetch ? "software prefetch 1 KiB" : "hardware prefetch only", rate);
      best = std::max(best, rate);
    }
  }
  std::printf("read bandwidth: %.2f GB/s (best of 4 ways x %d passes over %lld MiB, %d threads)\n",
              best, repeat, static_cast<long long>(mib), threads);
  return sink == 0 ? 1 : 0;
}
