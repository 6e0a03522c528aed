//===- PagedAttentionBench.cpp - CPU paged attention throughput -*- C++ -*-===//
//
// Times the CPU paged kernels at SmolLM2-135M's attention shape (9 heads, 3 KV heads,
// head_dim 64, 16-token blocks) on the batches the engine runs: the intervention workload
// (200 prompts of 16-64 tokens, then decode at contexts of about 40-80) and the throughput
// workload of bench/model_bench.py (64 requests, prompts and outputs of 32-256 tokens), plus
// single long sequences. Sequences sit on shuffled cache blocks, as after a while of serving.
// Decode reports its K/V read bandwidth next to the machine's copy bandwidth measured in the
// same run; prefill reports the useful (causal) GFLOP/s.
//
//   nnsc-bench-attention [iterations [filter]]     (threads: OMP_NUM_THREADS)
//
// runs the cases whose "phase dtype" prefix (e.g. "decode Float") contains `filter`.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Attention/PagedAttention.h"
#include "nnsc/Runtime/Kernels/ThreadPool.h"

#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

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

/// Caches of `layers` layers holding sequences of the given lengths on shuffled blocks.
struct Setup {
  std::vector<torch::Tensor> kCache, vCache;
  torch::Tensor blockTables, contextLens;
};

Setup makeSetup(const std::vector<int64_t> &lengths, torch::ScalarType dtype, int layers = 1) {
  int64_t width = 0, total = 0;
  for (int64_t len : lengths) {
    width = std::max(width, (len + kBlockSize - 1) / kBlockSize);
    total += (len + kBlockSize - 1) / kBlockSize;
  }
  std::vector<int32_t> ids(total);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(0));
  auto numSeqs = static_cast<int64_t>(lengths.size());
  std::vector<int32_t> table(numSeqs * width, 0);
  size_t next = 0;
  for (int64_t i = 0; i < numSeqs; ++i)
    for (int64_t j = 0; j * kBlockSize < lengths[i]; ++j)
      table[i * width + j] = ids[next++];
  Setup s;
  auto opts = torch::TensorOptions().dtype(dtype);
  for (int l = 0; l < layers; ++l) {
    s.kCache.push_back(torch::randn({total, kBlockSize, kKvHeads, kDim}, opts));
    s.vCache.push_back(torch::randn({total, kBlockSize, kKvHeads, kDim}, opts));
  }
  s.blockTables = torch::tensor(table, torch::kInt32).view({numSeqs, width});
  std::vector<int32_t> lens(lengths.begin(), lengths.end());
  s.contextLens = torch::tensor(lens, torch::kInt32);
  return s;
}

/// `n` lengths drawn uniformly from [lo, hi] with a fixed seed.
std::vector<int64_t> lengthsBetween(int64_t n, int64_t lo, int64_t hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> len(lo, hi);
  std::vector<int64_t> out(n);
  for (int64_t &l : out)
    l = len(rng);
  return out;
}

double copyBandwidth() {
  torch::Tensor src = torch::randn({64 << 20}); // 256 MiB
  torch::Tensor dst = torch::empty_like(src);
  double t = secondsPerCall([&] { dst.copy_(src); }, 5);
  return 2.0 * src.nbytes() / t / 1e9; // read + write
}

std::string filter;

bool selected(const char *phase, torch::ScalarType dtype) {
  return (std::string(phase) + " " + c10::toString(dtype)).find(filter) != std::string::npos;
}

/// Decode over `layers` caches in turn, as a model's layers are: with 30 layers the K/V
/// no longer fits in the last-level cache and comes from memory, as in the engine. With
/// `streamed`, a layer's worth of weights (SmolLM2-135M's Q4_1 blocks, 3.2 MB) is read between
/// two calls, untimed, as the engine's projections read them: the K/V rows are then cold.
void benchDecode(const char *name, const std::vector<int64_t> &lengths, torch::ScalarType dtype,
                 int iterations, int layers = 1, bool streamed = false) {
  if (!selected("decode", dtype))
    return;
  Setup s = makeSetup(lengths, dtype, layers);
  auto numSeqs = static_cast<int64_t>(lengths.size());
  torch::Tensor q = torch::randn({numSeqs, kHeads, kDim}, torch::TensorOptions().dtype(dtype));
  double scale = 1.0 / std::sqrt(double(kDim));
  // Weights of 8 layers, so none is still cached when its turn comes again; read on this
  // thread while the pool's workers poll, as in an engine step (KeepPolling).
  std::vector<float> weights(size_t(8) * (800 << 10), 1.f);
  nnsc::kernels::ThreadPool::KeepPolling polling;
  double seconds = 0;
  float sink = 0;
  for (int i = -1; i < iterations * layers; ++i) { // i = -1 warms up
    const int layer = (i + layers) % layers;
    if (streamed)
      sink += std::accumulate(weights.begin() + (i + 8) % 8 * (800 << 10),
                              weights.begin() + ((i + 8) % 8 + 1) * (800 << 10), 0.f);
    auto start = std::chrono::steady_clock::now();
    nnsc::decodeAttention(q, s.kCache[size_t(layer)], s.vCache[size_t(layer)], s.contextLens,
                          s.blockTables, scale);
    if (i >= 0)
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  seconds /= iterations * layers;
  if (sink < 0)
    std::printf("(unreachable)\n");
  int64_t keys = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  double kvBytes = 2.0 * keys * kKvHeads * kDim * c10::elementSize(dtype);
  std::printf("decode  %-8s %-32s %9.1f us  (%5.1f GB/s K/V read)\n", c10::toString(dtype), name,
              seconds * 1e6, kvBytes / seconds / 1e9);
}

void benchPrefill(const char *name, const std::vector<int64_t> &lengths, torch::ScalarType dtype,
                  int iterations) {
  if (!selected("prefill", dtype))
    return;
  Setup s = makeSetup(lengths, dtype);
  std::vector<int32_t> cu{0};
  double flops = 0;
  for (int64_t len : lengths) {
    cu.push_back(cu.back() + static_cast<int32_t>(len));
    // Causal: QK^T and PV over the len * (len + 1) / 2 visible pairs.
    flops += 2.0 * 2.0 * kHeads * kDim * len * (len + 1) / 2.0;
  }
  torch::Tensor q = torch::randn({cu.back(), kHeads, kDim}, torch::TensorOptions().dtype(dtype));
  nnsc::AttentionMetadata meta;
  meta.isPrefill = true;
  meta.cuSeqlensQ = torch::tensor(cu, torch::kInt32);
  meta.cuSeqlensK = meta.cuSeqlensQ.clone();
  meta.blockTables = s.blockTables;
  double scale = 1.0 / std::sqrt(double(kDim));
  double seconds = secondsPerCall(
      [&] { nnsc::prefillAttention(q, s.kCache[0], s.vCache[0], meta, scale); }, iterations);
  std::printf("prefill %-8s %-32s %9.1f us  (%5.1f GFLOP/s)\n", c10::toString(dtype), name,
              seconds * 1e6, flops / seconds / 1e9);
}

} // namespace

int main(int argc, char **argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  filter = argc > 2 ? argv[2] : "";
  std::printf("threads %d, copy bandwidth %.1f GB/s\n", at::get_num_threads(), copyBandwidth());
  // Intervention workload: prompts of 16-64 tokens, decode contexts after 1-16 new tokens.
  auto prompts = lengthsBetween(200, 16, 64, 1);
  auto contexts = prompts;
  for (int64_t &c : contexts)
    c += 8;
  // Throughput workload: prompts of 32-256 tokens, decode contexts up to 256 tokens later.
  auto longPrompts = lengthsBetween(64, 32, 256, 2);
  auto longContexts = longPrompts;
  auto extra = lengthsBetween(64, 1, 256, 3);
  for (size_t i = 0; i < longContexts.size(); ++i)
    longContexts[i] += extra[i] / 2;
  for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
    benchDecode("200 seqs, ctx 24-72", contexts, dtype, iterations);
    benchDecode("200 seqs, ctx 24-72, 30 layers", contexts, dtype, iterations, 30);
    benchDecode("64 seqs, ctx 32-384", longContexts, dtype, iterations);
    benchDecode("64 seqs, ctx 32-384, 30 layers", longContexts, dtype, iterations, 30);
    // Batch-1 decode (bench/peer_bench.py): one sequence, every layer in turn.
    for (int64_t ctx : {16, 64, 72, 96, 128, 256}) {
      const std::string label = "1 seq, ctx " + std::to_string(ctx) + ", 30 layers";
      benchDecode(label.c_str(), {ctx}, dtype, iterations * 10, 30);
      benchDecode((label + ", streamed").c_str(), {ctx}, dtype, iterations * 10, 30, true);
    }
    benchDecode("1 seq, ctx 2048", {2048}, dtype, iterations);
    benchPrefill("200 seqs, 16-64 tokens", prompts, dtype, iterations);
    benchPrefill("64 seqs, 32-256 tokens", longPrompts, dtype, iterations);
    benchPrefill("1 seq, 512 tokens", {512}, dtype, iterations);
  }
  return 0;
}
