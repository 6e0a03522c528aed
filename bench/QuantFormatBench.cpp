//===- QuantFormatBench.cpp - The quantized GEMV per block format -*- C++ -*-===//
//
// One thread, one kernel call at a time (quantGemv with the best instruction set), every block
// format the kernels read, on matrices that stay in L2 or L3 (576 x 1536, SmolLM2's down_proj;
// 3072 x 576, its gate_up, 32-weight formats only: a K-quant needs 256 columns) and on one
// that comes from memory (4096 x 4096, a 7B model's projection), at 1 and 4 activation rows:
// what each format's kernel computes per second. Bytes are 0x3c throughout (fp16 scales 1.06,
// quants 3 and 12): the kernels take no data-dependent path.
// Each cell is the best of 5 rounds of at least 50 ms. With --dtype bf16 the activations and
// outputs are bf16 (the vdpbf16ps kernels where the CPU has them).
//
//   nnsc-bench-quant-formats [--dtype fp32|bf16]
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Kernels/QuantGemv.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using nnsc::kernels::QuantFormat;

template <typename T> double secondsPerCall(const nnsc::kernels::QuantGemvArgs<T> &a) {
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto start = Clock::now();
    int calls = 0;
    double elapsed = 0;
    do {
      nnsc::kernels::quantGemv(a, 0, a.rows);
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < 0.05);
    best = std::min(best, elapsed / calls);
  }
  return best;
}

/// Every format and shape with activations of type T (float, or bf16 bits as uint16_t).
template <typename T> void benchAll(T half) {
  std::printf("%-11s %-5s %5s %10s %8s %12s\n", "shape", "fmt", "rows", "us", "GB/s", "Gweights/s");
  const int64_t shapes[][2] = {{576, 1536}, {3072, 576}, {4096, 4096}};
  for (const auto &shape : shapes)
    for (QuantFormat format :
         {QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1,
          QuantFormat::Q8_0, QuantFormat::IQ4_NL, QuantFormat::Q2_K, QuantFormat::Q3_K,
          QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_XS})
      for (int64_t batch : {1, 4}) {
        const int64_t rows = shape[0], cols = shape[1];
        if (cols % nnsc::kernels::quantBlockWeights(format) != 0)
          continue; // a K-quant on 576 columns: files fall back to a 32-weight format
        const int64_t rowBytes = cols / nnsc::kernels::quantBlockWeights(format) *
                                 nnsc::kernels::quantBlockBytes(format);
        std::vector<uint8_t> w(size_t(rows * rowBytes), 0x3c);
        std::vector<T> x(size_t(batch * cols), half);
        std::vector<T> y(size_t(batch * rows));
        nnsc::kernels::QuantGemvArgs<T> a;
        a.format = format;
        a.w = w.data();
        a.rowBytes = rowBytes;
        a.x = x.data();
        a.y = y.data();
        a.rows = rows;
        a.cols = cols;
        a.batch = batch;
        a.xStride = cols;
        a.yStride = rows;
        const double seconds = secondsPerCall(a);
        std::printf("%5ldx%-5ld %-5s %5ld %10.1f %8.2f %12.2f\n", long(rows), long(cols),
                    nnsc::kernels::quantFormatName(format), long(batch), seconds * 1e6,
                    double(rows * rowBytes) / seconds / 1e9, double(rows * cols) / seconds / 1e9);
      }
}

} // namespace

int main(int argc, char **argv) {
  const bool bf16 = argc == 3 && !std::strcmp(argv[1], "--dtype") && !std::strcmp(argv[2], "bf16");
  if (argc != 1 &&
      !(argc == 3 && !std::strcmp(argv[1], "--dtype") && (bf16 || !std::strcmp(argv[2], "fp32")))) {
    std::fprintf(stderr, "usage: nnsc-bench-quant-formats [--dtype fp32|bf16]\n");
    return 2;
  }
  std::printf("one thread, %s activations, best of 5\n", bf16 ? "bf16" : "fp32");
  if (bf16)
    benchAll<uint16_t>(0x3f00); // 0.5
  else
    benchAll<float>(0.5f);
  return 0;
}
