//===- ReadBandwidth.cpp - streaming read bandwidth -------------*- C++ -*-===//
//
// The decode roofline's denominator: sums a buffer much larger than the caches with
// at::parallel_for on the same thread count the engine uses, and prints the best GB/s.
//
//   nnsc-bench-bandwidth [--threads N] [--mib M] [--repeat R]
//
//===----------------------------------------------------------------------===//

#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

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
  const int64_t n = mib * 1024 * 1024 / int64_t(sizeof(float));
  std::vector<float> data(size_t(n), 1.0f);
  double best = 0, sink = 0;
  for (int r = 0; r < repeat; ++r) {
    std::vector<double> partial(size_t(threads) * 8, 0.0);
    auto start = std::chrono::steady_clock::now();
    at::parallel_for(0, n, n / threads + 1, [&](int64_t begin, int64_t end) {
      // Eight independent accumulators keep the loop bound by loads, not by add latency.
      float acc[16] = {};
      int64_t i = begin;
      for (; i + 16 <= end; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; ++j)
          acc[j] += data[size_t(i + j)];
      double total = 0;
      for (; i < end; ++i)
        total += data[size_t(i)];
      for (float a : acc)
        total += a;
      partial[size_t(at::get_thread_num()) * 8] += total;
    });
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (double p : partial)
      sink += p;
    best = std::max(best, double(n) * sizeof(float) / seconds / 1e9);
  }
  std::printf("read bandwidth: %.2f GB/s (best of %d passes over %lld MiB, %d threads)\n", best,
              repeat, static_cast<long long>(mib), threads);
  return sink == 0 ? 1 : 0;
}
