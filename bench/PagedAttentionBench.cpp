//===- PagedAttentionBench.cpp - CPU paged attention throughput -*- C++ -*-===//
//
// Times the CPU paged kernels at SmolLM2-135M's attention shape (9 heads, 3 KV heads,
// head_dim 64, 16-token blocks) against LibTorch's scaled_dot_product_attention on the same
// K/V laid out contiguously, and reports decode's K/V read bandwidth next to the machine's
// copy bandwidth measured in the same run.
//
//   nnsc-bench-attention [iterations]
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"

#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>

namespace {

constexpr int64_t kHeads = 9, kKvHeads = 3, kDim = 64, kBlockSize = 16;

template <typename Fn> double secondsPerCall(Fn fn, int iterations) {
  fn(); // warm up
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i)
    fn();
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / iterations;
}

/// A cache holding `numSeqs` sequences of `length` tokens on shuffled blocks.
struct Setup {
  torch::Tensor kCache, vCache, blockTables, contextLens;
  torch::Tensor kFlat, vFlat; // [numSeqs, kvHeads, length, dim] for the LibTorch baseline
};

Setup makeSetup(int64_t numSeqs, int64_t length, torch::ScalarType dtype) {
  int64_t perSeq = (length + kBlockSize - 1) / kBlockSize;
  std::vector<int32_t> ids(numSeqs * perSeq);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(0));
  Setup s;
  auto opts = torch::TensorOptions().dtype(dtype);
  s.kCache = torch::randn({numSeqs * perSeq, kBlockSize, kKvHeads, kDim}, opts);
  s.vCache = torch::randn({numSeqs * perSeq, kBlockSize, kKvHeads, kDim}, opts);
  s.blockTables = torch::tensor(ids, torch::kInt32).view({numSeqs, perSeq});
  s.contextLens = torch::full({numSeqs}, length, torch::kInt32);
  auto flat = [&](const torch::Tensor &cache) {
    return cache.index_select(0, s.blockTables.flatten().to(torch::kInt64))
        .view({numSeqs, perSeq * kBlockSize, kKvHeads, kDim})
        .slice(1, 0, length)
        .permute({0, 2, 1, 3})
        .contiguous();
  };
  s.kFlat = flat(s.kCache);
  s.vFlat = flat(s.vCache);
  return s;
}

double copyBandwidth() {
  torch::Tensor src = torch::randn({64 << 20}); // 256 MiB
  torch::Tensor dst = torch::empty_like(src);
  double t = secondsPerCall([&] { dst.copy_(src); }, 5);
  return 2.0 * src.nbytes() / t / 1e9; // read + write
}

void benchDecode(int64_t numSeqs, int64_t length, torch::ScalarType dtype, int iterations) {
  Setup s = makeSetup(numSeqs, length, dtype);
  torch::Tensor q = torch::randn({numSeqs, kHeads, kDim}, torch::TensorOptions().dtype(dtype));
  double scale = 1.0 / std::sqrt(double(kDim));
  double ours = secondsPerCall(
      [&] { nnsc::decodeAttention(q, s.kCache, s.vCache, s.contextLens, s.blockTables, scale); },
      iterations);
  torch::Tensor q4 = q.view({numSeqs, kKvHeads, kHeads / kKvHeads, 1, kDim}); // GQA as batched
  double torchTime = secondsPerCall(
      [&] {
        at::scaled_dot_product_attention(
            q4, s.kFlat.unsqueeze(2).expand({-1, -1, kHeads / kKvHeads, -1, -1}),
            s.vFlat.unsqueeze(2).expand({-1, -1, kHeads / kKvHeads, -1, -1}));
      },
      iterations);
  double kvBytes = 2.0 * numSeqs * length * kKvHeads * kDim * c10::elementSize(dtype);
  std::printf("decode  %-8s seqs %3lld ctx %5lld: %8.1f us  (%5.1f GB/s K/V read)  "
              "LibTorch SDPA on contiguous K/V %8.1f us\n",
              c10::toString(dtype), (long long)numSeqs, (long long)length, ours * 1e6,
              kvBytes / ours / 1e9, torchTime * 1e6);
}

void benchPrefill(int64_t numSeqs, int64_t length, torch::ScalarType dtype, int iterations) {
  Setup s = makeSetup(numSeqs, length, dtype);
  torch::Tensor q =
      torch::randn({numSeqs * length, kHeads, kDim}, torch::TensorOptions().dtype(dtype));
  nnsc::AttentionMetadata meta;
  meta.isPrefill = true;
  meta.cuSeqlensQ = torch::arange(0, (numSeqs + 1) * length, length, torch::kInt32);
  meta.cuSeqlensK = meta.cuSeqlensQ.clone();
  meta.blockTables = s.blockTables;
  double scale = 1.0 / std::sqrt(double(kDim));
  double ours = secondsPerCall([&] { nnsc::prefillAttention(q, s.kCache, s.vCache, meta, scale); },
                               iterations);
  torch::Tensor qb = q.view({numSeqs, length, kKvHeads, kHeads / kKvHeads, kDim})
                         .permute({0, 2, 3, 1, 4})
                         .contiguous();
  torch::Tensor kb = s.kFlat.unsqueeze(2).expand({-1, -1, kHeads / kKvHeads, -1, -1});
  torch::Tensor vb = s.vFlat.unsqueeze(2).expand({-1, -1, kHeads / kKvHeads, -1, -1});
  double torchTime = secondsPerCall(
      [&] { at::scaled_dot_product_attention(qb, kb, vb, {}, 0.0, /*is_causal=*/true); },
      iterations);
  // Causal: about half of the QK^T and PV products.
  double flops = 2.0 * 2.0 * numSeqs * kHeads * kDim * length * (length + 1) / 2.0;
  std::printf("prefill %-8s seqs %3lld len %5lld: %8.1f us  (%5.1f GFLOP/s)  "
              "LibTorch SDPA (causal, contiguous) %8.1f us\n",
              c10::toString(dtype), (long long)numSeqs, (long long)length, ours * 1e6,
              flops / ours / 1e9, torchTime * 1e6);
}

} // namespace

int main(int argc, char **argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  std::printf("threads %d, copy bandwidth %.1f GB/s\n", at::get_num_threads(), copyBandwidth());
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    benchDecode(1, 512, dtype, iterations);
    benchDecode(1, 2048, dtype, iterations);
    benchDecode(64, 256, dtype, iterations);
    benchPrefill(1, 512, dtype, iterations);
    benchPrefill(8, 256, dtype, iterations);
  }
  return 0;
}
