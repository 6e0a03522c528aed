//===- CudaBackendTest.cpp - the CUDA backend against the CPU backend -----===//
//
// Every CUDA kernel (RMSNorm, RoPE, KV store, varlen prefill and decode attention, with and
// without absent K/V positions, fp32 and bf16) against its CPU counterpart on the same inputs, and
// a whole tiny model run by the engine on both backends: same greedy tokens, logits within fp32
// tolerance (bf16: within 8 units in the last place of the row's largest logit). Needs a GPU:
// without one every test skips, saying so.
//
//===----------------------------------------------------------------------===//

#include "TinyModel.h"

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Backend/CudaBackend.h"
#include "nnsc/Runtime/Backend/CudaKernels.h"
#include "nnsc/Runtime/Backend/DeviceBackend.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace nnsc;

namespace {

class CudaBackendTest : public ::testing::TestWithParam<torch::ScalarType> {
protected:
  void SetUp() override {
    std::string reason;
    if (cudaDeviceCount(reason) == 0)
      GTEST_SKIP() << "no CUDA device: " << reason;
    torch::manual_seed(1);
  }
  torch::ScalarType dtype() const { return GetParam(); }
  double tolerance() const { return dtype() == torch::kBFloat16 ? 2e-2 : 1e-4; }
  torch::Tensor random(std::vector<int64_t> shape) const { return torch::randn(shape).to(dtype()); }
  static torch::Tensor cuda(const torch::Tensor &t) { return t.to(torch::kCUDA); }
  void expectClose(const torch::Tensor &gpu, const torch::Tensor &cpu, const char *what) const {
    torch::Tensor got = gpu.to(torch::kCPU).to(torch::kFloat32);
    torch::Tensor want = cpu.to(torch::kFloat32);
    ASSERT_EQ(got.sizes(), want.sizes()) << what;
    EXPECT_TRUE(torch::allclose(got, want, tolerance(), tolerance()))
        << what << ": max diff " << (got - want).abs().max().item<float>();
  }
};

/// A step over sequences with `cached[i]` tokens already in the cache and `queries[i]` new
/// ones, blocks of 4 tokens handed out in a scrambled order; `all` maps every position
/// (cached and new) of every sequence to its slot, for filling the cache.
struct Step {
  AttentionMetadata meta;
  torch::Tensor allSlots;
  /// Each sequence's positions (cached and new), and the cache's slots.
  std::vector<int64_t> lengths;
  int64_t numSlots;
};

Step makeStep(const std::vector<int64_t> &cached, const std::vector<int64_t> &queries, bool prefill,
              int64_t blockSize = 4, int32_t numBlocks = 97) {
  std::vector<Sequence> seqs;
  std::vector<int64_t> allSlots;
  int32_t nextBlock = 0;
  for (size_t i = 0; i < cached.size(); ++i) {
    const int64_t total = cached[i] + queries[i];
    Sequence seq(int64_t(i), std::vector<int32_t>(size_t(total), 1), SamplingParams{});
    seq.numCachedTokens = cached[i];
    seq.numScheduledTokens = queries[i];
    for (int64_t b = 0; b * blockSize < total; ++b)
      seq.blockTable.push_back((nextBlock++ * 7) % numBlocks);
    for (int64_t p = 0; p < total; ++p)
      allSlots.push_back(seq.blockTable[size_t(p / blockSize)] * blockSize + p % blockSize);
    seqs.push_back(std::move(seq));
  }
  ScheduledBatch batch;
  batch.isPrefill = prefill;
  for (Sequence &seq : seqs)
    batch.seqs.push_back(&seq);
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < cached.size(); ++i)
    lengths.push_back(cached[i] + queries[i]);
  return {AttentionMetadata::fromBatch(batch, blockSize), torch::tensor(allSlots),
          std::move(lengths), int64_t(numBlocks) * blockSize};
}

AttentionMetadata toCuda(const AttentionMetadata &meta) {
  AttentionMetadata out = meta;
  for (torch::Tensor *t : {&out.cuSeqlensQ, &out.cuSeqlensK, &out.slotMapping, &out.positions,
                           &out.contextLens, &out.blockTables, &out.sampleRows})
    *t = t->to(torch::kCUDA);
  return out;
}

TEST_P(CudaBackendTest, RMSNorm) {
  torch::Tensor x = random({5, 96}), w = random({96});
  expectClose(CudaKernels::get().rmsNorm(cuda(x), cuda(w), 1e-5),
              CpuKernels::get().rmsNorm(x, w, 1e-5), "rmsNorm");
}

TEST_P(CudaBackendTest, Rope) {
  // q as CausalLM slices it out of the fused qkv rows: strided tokens.
  torch::Tensor qkv = random({6, 3 * 4 * 16});
  torch::Tensor q = qkv.narrow(1, 16, 4 * 16).view({6, 4, 16});
  torch::Tensor angles = torch::rand({6, 16}) * 6.28;
  torch::Tensor cos = angles.cos().to(dtype()), sin = angles.sin().to(dtype());
  expectClose(CudaKernels::get().rope(cuda(qkv).narrow(1, 16, 4 * 16).view({6, 4, 16}), cuda(cos),
                                      cuda(sin)),
              CpuKernels::get().rope(q, cos, sin), "rope");
}

TEST_P(CudaBackendTest, StoreKVCache) {
  Step step = makeStep({3, 0}, {2, 5}, true);
  torch::Tensor k = random({7, 2, 16}), v = random({7, 2, 16});
  torch::Tensor kc = torch::zeros({97, 4, 2, 16}, dtype()), vc = torch::zeros_like(kc);
  torch::Tensor kg = cuda(kc), vg = cuda(vc);
  CpuKernels::get().storeKVCache(k, v, kc, vc, step.meta);
  CudaKernels::get().storeKVCache(cuda(k), cuda(v), kg, vg, toCuda(step.meta));
  EXPECT_TRUE(torch::equal(kg.cpu(), kc));
  EXPECT_TRUE(torch::equal(vg.cpu(), vc));
}

/// Fills a cache [blocks, block_size, kv_heads, head_dim] with random K/V at every position of
/// the step's sequences.
void fillCache(const Step &step, torch::Tensor &kc, torch::Tensor &vc, torch::ScalarType dtype) {
  const int64_t n = step.allSlots.size(0);
  AttentionMetadata all;
  all.slotMapping = step.allSlots;
  CpuKernels::get().storeKVCache(torch::randn({n, kc.size(2), kc.size(3)}).to(dtype),
                                 torch::randn({n, kc.size(2), kc.size(3)}).to(dtype), kc, vc, all);
}

/// The absent map (KVCache::markAbsent's) of `step`'s sequences: position p of sequence i is
/// absent where absentAt(i, p).
template <typename Predicate> torch::Tensor absentMap(const Step &step, Predicate absentAt) {
  torch::Tensor map = torch::zeros({step.numSlots}, torch::kUInt8);
  const int64_t *slots = step.allSlots.data_ptr<int64_t>();
  int64_t at = 0;
  for (size_t i = 0; i < step.lengths.size(); ++i)
    for (int64_t p = 0; p < step.lengths[i]; ++p, ++at)
      if (absentAt(i, p))
        map[slots[at]] = 1;
  return map;
}

TEST_P(CudaBackendTest, PrefillAttentionWithCachedPrefixes) {
  // A prompt with a cached prefix, a fresh prompt, and a chunk of one token.
  Step step = makeStep({5, 0, 9}, {3, 7, 1}, true);
  torch::Tensor kc = torch::zeros({97, 4, 2, 16}, dtype()), vc = torch::zeros_like(kc);
  fillCache(step, kc, vc, dtype());
  torch::Tensor q = random({11, 4, 16});
  expectClose(CudaKernels::get().attention(cuda(q), cuda(kc), cuda(vc), toCuda(step.meta), 0.25),
              CpuKernels::get().attention(q, kc, vc, step.meta, 0.25), "prefill attention");
}

TEST_P(CudaBackendTest, PrefillAttentionTiles) {
  // The tiled kernel's head dims, 4 query heads on 2 KV heads. Rows: a cached prefix of 70
  // then 150 queries (three query tiles, the last partial; key tiles that straddle the prefix),
  // one query alone, exactly one query tile, 130 queries after a prefix of 33, and 65 after 5.
  // The unwritten slots of the cache hold NaN: a key that is not there must not reach a sum.
  const std::vector<int64_t> cached{70, 0, 0, 33, 5}, queries{150, 1, 64, 130, 65};
  Step step = makeStep(cached, queries, true, /*blockSize=*/16, /*numBlocks=*/61);
  for (int64_t dim : {32, 64, 96, 128}) {
    SCOPED_TRACE("head_dim " + std::to_string(dim));
    torch::Tensor kc = torch::full({61, 16, 2, dim}, NAN, dtype()), vc = kc.clone();
    fillCache(step, kc, vc, dtype());
    torch::Tensor q = random({410, 4, dim});
    const double scale = 1.0 / std::sqrt(double(dim));
    expectClose(CudaKernels::get().attention(cuda(q), cuda(kc), cuda(vc), toCuda(step.meta), scale),
                CpuKernels::get().attention(q, kc, vc, step.meta, scale),
                "tiled prefill attention");
    // Absent positions: every third of sequence 0, all of sequences 1 and 4 (their rows get
    // zeros), the first 40 of sequence 3 (its first 7 rows see no key, the others skip a
    // whole key tile).
    torch::Tensor absent = absentMap(step, [](size_t i, int64_t p) {
      return (i == 0 && p % 3 == 1) || i == 1 || i == 4 || (i == 3 && p < 40);
    });
    expectClose(
        CudaKernels::get().attention(cuda(q), cuda(kc), cuda(vc), toCuda(step.meta), scale, absent),
        CpuKernels::get().attention(q, kc, vc, step.meta, scale, absent),
        "tiled prefill attention, absent positions");
  }
}

TEST_P(CudaBackendTest, DecodeAttention) {
  // Contexts shorter than, equal to and longer than the kernel's 128-key chunk.
  Step step = makeStep({6, 127, 200}, {1, 1, 1}, false);
  torch::Tensor kc = torch::zeros({97, 4, 2, 16}, dtype()), vc = torch::zeros_like(kc);
  fillCache(step, kc, vc, dtype());
  torch::Tensor q = random({3, 4, 16});
  expectClose(CudaKernels::get().attention(cuda(q), cuda(kc), cuda(vc), toCuda(step.meta), 0.25),
              CpuKernels::get().attention(q, kc, vc, step.meta, 0.25), "decode attention");
}

TEST_P(CudaBackendTest, AttentionLeavesOutAbsentPositions) {
  // Rows of a skipped layer leave no K/V (leaveNoKV): the CPU kernels drop them from the
  // softmax and give a query that sees no key zeros. Decode: sequence 1's first 130 positions
  // are absent, so its whole first 128-key chunk sees nothing.
  for (bool prefill : {true, false}) {
    std::vector<int64_t> cached =
        prefill ? std::vector<int64_t>{5, 0, 9} : std::vector<int64_t>{6, 140, 30};
    std::vector<int64_t> queries =
        prefill ? std::vector<int64_t>{3, 7, 1} : std::vector<int64_t>{1, 1, 1};
    Step step = makeStep(cached, queries, prefill);
    // Sequence 0 has every third position absent, sequence 1 its first few, sequence 2 all.
    const int64_t leading = prefill ? 4 : 130;
    torch::Tensor absent = absentMap(step, [&](size_t i, int64_t p) {
      return (i == 0 && p % 3 == 1) || (i == 1 && p < leading) || i == 2;
    });
    torch::Tensor kc = torch::zeros({97, 4, 2, 16}, dtype()), vc = torch::zeros_like(kc);
    fillCache(step, kc, vc, dtype());
    torch::Tensor q = random({prefill ? 11 : 3, 4, 16});
    torch::Tensor want = CpuKernels::get().attention(q, kc, vc, step.meta, 0.25, absent);
    expectClose(
        CudaKernels::get().attention(cuda(q), cuda(kc), cuda(vc), toCuda(step.meta), 0.25, absent),
        want,
        prefill ? "prefill attention, absent positions" : "decode attention, absent positions");
    // Sequence 2 sees no key at all.
    const int64_t last = prefill ? 10 : 2;
    EXPECT_EQ(want[last].abs().max().item<float>(), 0.f);
  }
}

TEST_P(CudaBackendTest, TinyModelMatchesTheCpuBackend) {
  SchedulerConfig config;
  config.numBlocks = 32;
  config.blockSize = 16;
  config.maxModelLen = 128;
  SamplingParams params;
  params.temperature = 0;
  params.maxTokens = 8;
  params.ignoreEos = true;
  const std::vector<std::vector<int32_t>> prompts = {
      {3, 17, 42}, {5, 9, 60, 11, 2, 8, 33, 70, 1, 4, 19, 27, 50, 12, 6, 40, 41}, {7}};
  auto run = [&](std::shared_ptr<ModelBackend> backend, std::vector<torch::Tensor> &logits) {
    auto table = std::make_shared<HookTable>(backend->architecture());
    table->bind("logits",
                makeSiteHook([&](int, torch::Tensor &value, std::span<const TokenGroup> groups) {
                  for (const TokenGroup &g : groups)
                    logits.push_back(value.narrow(0, g.tokenStart, 1).clone());
                }));
    LLMEngine engine(std::move(backend), config);
    for (const std::vector<int32_t> &p : prompts)
      engine.addRequest(p, params, table);
    std::vector<std::vector<int32_t>> tokens;
    for (const RequestResult &r : engine.runToCompletion())
      tokens.push_back(r.completionTokens);
    return tokens;
  };
  std::vector<torch::Tensor> cpuLogits, gpuLogits;
  auto cpu =
      run(makeCpuBackend(std::make_shared<CausalLM>(test::tinyWeights(dtype()), CpuKernels::get())),
          cpuLogits);
  auto gpu = run(makeCudaBackend(test::tinyWeights(dtype())), gpuLogits);
  EXPECT_EQ(gpu, cpu);
  ASSERT_EQ(gpuLogits.size(), cpuLogits.size());
  // Both engines schedule identically, so the i-th logits row is the same request and step.
  for (size_t i = 0; i < cpuLogits.size(); ++i) {
    if (dtype() == torch::kFloat32) {
      expectClose(gpuLogits[i], cpuLogits[i], "logits");
      continue;
    }
    // bf16: every layer's products round to 8 significant bits, and cuBLAS and the CPU GEMMs
    // sum in different orders, so whole-model logits agree to a few units in the last place
    // of the row's largest logit (measured on an H200: at most 5.5), not to a fixed
    // 2e-2.
    torch::Tensor got = gpuLogits[i].to(torch::kCPU).to(torch::kFloat32);
    torch::Tensor want = cpuLogits[i].to(torch::kFloat32);
    const double largest = want.abs().max().item<double>();
    const double ulp = std::ldexp(1.0, std::ilogb(largest) - 7);
    const double diff = (got - want).abs().max().item<double>();
    EXPECT_LE(diff, 8 * ulp) << "logits row " << i << ": max diff " << diff << ", largest "
                             << largest << ", bf16 ulp there " << ulp;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaBackendTest,
                         ::testing::Values(torch::kFloat32, torch::kBFloat16),
                         [](const ::testing::TestParamInfo<torch::ScalarType> &info) {
                           return std::string(info.param == torch::kFloat32 ? "fp32" : "bf16");
                         });

} // namespace
