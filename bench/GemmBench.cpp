//===- GemmBench.cpp - nnsc::linear vs at::linear at the model's shapes -*- C++ -*-===//
//
// GFLOP/s of nnsc::linear (GEMV kernels up to GemvMaxRows rows, oneDNN with packed weights
// above) and of LibTorch's at::linear (MKL sgemm for fp32, oneDNN for bf16) on SmolLM2-135M's
// projection shapes, measured alternately so both see the same machine state. Each cell is
// the best of --repeat rounds; a round runs the product until 50 ms have passed. A second
// table compares the two bf16 GEMV kernels (vdpbf16ps and widening to fp32) on one thread at
// batch 1, in GB/s of weights read: whether the kernel keeps up with memory.
//
//   nnsc-bench-gemm [--threads N] [--repeat R]
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/Gemv.h"
#include "nnsc/Runtime/Layers/Linear.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace {

/// Seconds per call of `f`, over as many calls as fit in 50 ms (at least one).
double secondsPerCall(const std::function<void()> &f) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int calls = 0;
  double elapsed = 0;
  do {
    f();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < 0.05);
  return elapsed / calls;
}

} // namespace

int main(int argc, char **argv) {
  int threads = 2;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "nnsc-bench-gemm: unknown argument '%s'\n"
                   "usage: nnsc-bench-gemm [--threads N] [--repeat R]\n",
                   argv[i]);
      return 2;
    }
  }
  if (threads < 1 || repeat < 1) {
    std::fprintf(stderr, "nnsc-bench-gemm: --threads and --repeat must be at least 1\n");
    return 2;
  }
  at::set_num_threads(threads);
  torch::NoGradGuard noGrad;
  // {in, out}: q/k/v (576 -> 960 fused in the model, 576 -> 576 for q), gate/up, down, lm_head.
  const int64_t shapes[][2] = {{576, 576}, {576, 1536}, {1536, 576}, {576, 49152}};
  std::printf("threads %d, best of %d rounds; GFLOP/s\n", threads, repeat);
  std::printf("%-5s %5s %6s %6s %10s %10s %6s\n", "dtype", "rows", "in", "out", "nnsc",
              "at::linear", "ratio");
  for (auto dtype : {torch::kFloat32, torch::kBFloat16})
    for (const auto &shape : shapes)
      for (int64_t rows : {1, 8, 64, 512}) {
        const int64_t in = shape[0], out = shape[1];
        torch::Tensor x = torch::randn({rows, in}).to(dtype);
        torch::Tensor w = torch::randn({out, in}).to(dtype);
        double best[2] = {1e30, 1e30};
        for (int r = 0; r < repeat; ++r) {
          best[0] = std::min(best[0], secondsPerCall([&] { nnsc::linear(x, w); }));
          best[1] = std::min(best[1], secondsPerCall([&] { at::linear(x, w); }));
        }
        const double flops = 2.0 * double(rows) * double(in) * double(out);
        std::printf("%-5s %5lld %6lld %6lld %10.1f %10.1f %6.2f\n",
                    dtype == torch::kFloat32 ? "fp32" : "bf16", (long long)rows, (long long)in,
                    (long long)out, flops / best[0] / 1e9, flops / best[1] / 1e9,
                    best[1] / best[0]);
        std::fflush(stdout);
      }
  if (!nnsc::kernels::gemvBF16DotSupported()) {
    std::printf("\nno AVX512-BF16: no bf16 GEMV kernel comparison\n");
    return 0;
  }
  std::printf("\nbf16 GEMV, batch 1, one thread; GB/s of weights\n");
  std::printf("%6s %6s %10s %10s %6s\n", "in", "out", "vdpbf16ps", "widen", "ratio");
  for (const auto &shape : shapes) {
    const int64_t in = shape[0], out = shape[1];
    torch::Tensor x = torch::randn({1, in}).to(torch::kBFloat16);
    torch::Tensor w = torch::randn({out, in}).to(torch::kBFloat16);
    torch::Tensor y = torch::empty({1, out}, x.options());
    nnsc::kernels::GemvArgs<uint16_t> a;
    a.w = static_cast<const uint16_t *>(w.data_ptr());
    a.x = static_cast<const uint16_t *>(x.data_ptr());
    a.y = static_cast<uint16_t *>(y.data_ptr());
    a.rows = out;
    a.cols = in;
    a.batch = 1;
    a.xStride = in;
    a.yStride = out;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < repeat; ++r) {
      best[0] = std::min(best[0], secondsPerCall([&] { nnsc::kernels::gemvBF16Dot(a, 0, out); }));
      best[1] = std::min(best[1], secondsPerCall([&] { nnsc::kernels::gemvBF16(a, 0, out); }));
    }
    const double bytes = 2.0 * double(in) * double(out);
    std::printf("%6lld %6lld %10.1f %10.1f %6.2f\n", (long long)in, (long long)out,
                bytes / best[0] / 1e9, bytes / best[1] / 1e9, best[1] / best[0]);
  }
  return 0;
}
