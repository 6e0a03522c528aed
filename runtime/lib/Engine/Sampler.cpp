//===- Sampler.cpp - Token sampling from logits -----------------*- C++ -*-===//

#include "nnsc/Runtime/Engine/Sampler.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace nnsc {

namespace {

/// SplitMix64's output function: a bijective avalanche mix of a 64-bit counter.
uint64_t splitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double toUniform(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

/// Lowest index of the largest value; NaNs never win unless x[0] is one (as a scalar scan
/// with `>` picks). Two vector passes (the max, then its first index) instead of one scan
/// whose every compare waits on the last: a 49,152-word vocabulary in microseconds.
int32_t argmax(const float *x, int64_t n) {
  if (std::isnan(x[0]))
    return 0;
  float best = x[0];
#pragma omp simd reduction(max : best)
  for (int64_t i = 1; i < n; ++i)
    best = x[i] > best ? x[i] : best;
  int64_t i = 0;
  while (x[i] != best)
    ++i;
  return static_cast<int32_t>(i);
}

/// Whether the row has a value that is neither infinite nor NaN.
bool anyFinite(const float *x, int64_t n) {
  int finite = 0;
#pragma omp simd reduction(| : finite)
  for (int64_t i = 0; i < n; ++i)
    finite |= std::fabs(x[i]) <= std::numeric_limits<float>::max();
  return finite != 0;
}

/// First index whose running sum of weight(i) exceeds target; the last positive one if
/// rounding leaves the target unreached.
template <typename Ids, typename Weight>
int32_t inverseCdf(const Ids &ids, int64_t count, double target, Weight weight) {
  double cumulative = 0.0;
  int32_t last = ids(0);
  for (int64_t j = 0; j < count; ++j) {
    double w = weight(ids(j));
    if (w <= 0.0)
      continue;
    last = ids(j);
    cumulative += w;
    if (cumulative > target)
      return last;
  }
  return last;
}

int32_t sampleRow(const float *logits, int64_t vocab, const SamplingParams &params, double u,
                  std::vector<int32_t> &order) {
  if (params.temperature == 0.0f)
    return argmax(logits, vocab);
  const double invTemperature = 1.0 / params.temperature;
  if (!std::isfinite(invTemperature)) // a denormal temperature is greedy in all but name
    return argmax(logits, vocab);
  const float maxLogit = *std::max_element(logits, logits + vocab);
  auto weight = [&](int32_t i) { return std::exp((logits[i] - maxLogit) * invTemperature); };

  const int64_t topK = params.topK > 0 ? std::min(params.topK, vocab) : vocab;
  if (topK == vocab && params.topP >= 1.0f) {
    double total = 0.0;
    for (int64_t i = 0; i < vocab; ++i)
      total += weight(static_cast<int32_t>(i));
    return inverseCdf([](int64_t j) { return static_cast<int32_t>(j); }, vocab, u * total, weight);
  }

  // Candidates in descending order (ties to the lower id). Top-p usually keeps only the head
  // of the distribution, so sort a head and widen it only if its mass falls short.
  auto before = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  order.resize(vocab);
  double total = 0.0;
  int64_t head = topK;
  if (topK == vocab) {
    for (int64_t i = 0; i < vocab; ++i)
      total += weight(static_cast<int32_t>(i));
    head = std::min<int64_t>(vocab, 256);
  }
  while (true) {
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + head, order.end(), before);
    if (topK < vocab) {
      total = 0.0;
      for (int64_t j = 0; j < topK; ++j)
        total += weight(order[j]);
    }
    // Smallest prefix whose mass reaches top_p (at least one token).
    double needed = static_cast<double>(params.topP) * total;
    double mass = 0.0;
    int64_t kept = 0;
    while (kept < head && (kept == 0 || mass < needed))
      mass += weight(order[kept++]);
    if (mass >= needed || head == topK || head == vocab)
      return inverseCdf([&](int64_t j) { return order[j]; }, kept, u * mass, weight);
    head = std::min(vocab, head * 8);
  }
}

} // namespace

Sampler::Sampler(uint64_t seed) : generator(seed) {}

double Sampler::seededUniform(uint64_t seed, int64_t step) {
  return toUniform(splitMix(splitMix(seed) ^ static_cast<uint64_t>(step)));
}

std::vector<int32_t> Sampler::sample(const torch::Tensor &logits,
                                     std::span<const SamplingRow> rows) {
  TORCH_CHECK(logits.dim() == 2, "sampler: logits must be [rows, vocab], got ", logits.sizes());
  TORCH_CHECK(logits.size(0) == static_cast<int64_t>(rows.size()), "sampler: logits has ",
              logits.size(0), " rows for ", rows.size(), " sampling rows");
  TORCH_CHECK(logits.size(1) > 0, "sampler: logits has an empty vocabulary");
  TORCH_CHECK(logits.is_floating_point(), "sampler: logits must be floating point, got ",
              logits.scalar_type());
  for (const SamplingRow &row : rows)
    row.params->validate();

  torch::Tensor x = logits.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t vocab = x.size(1);
  const float *data = x.data_ptr<float>();
  std::vector<char> finite(rows.size());
  at::parallel_for(0, x.size(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      finite[size_t(r)] = anyFinite(data + r * vocab, vocab);
  });
  for (size_t r = 0; r < rows.size(); ++r)
    TORCH_CHECK(finite[r], "sampler: logits row ", r, " has no finite value");
  // Draws happen here, in row order, so unseeded requests stay reproducible for a fixed
  // sampler seed; seeded ones ignore the generator.
  std::vector<double> draws(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const SamplingParams &params = *rows[r].params;
    draws[r] = params.seed ? seededUniform(*params.seed, rows[r].step) : toUniform(generator());
  }
  std::vector<int32_t> tokens(rows.size());
  at::parallel_for(0, x.size(0), 1, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> order;
    for (int64_t r = begin; r < end; ++r)
      tokens[r] = sampleRow(data + r * vocab, vocab, *rows[r].params, draws[r], order);
  });
  return tokens;
}

TokenLogprobs tokenLogprobs(const float *row, int64_t vocab, int32_t token, int32_t k) {
  // Two passes in double: the maximum, then the log of the shifted exponentials' sum.
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < vocab; ++i)
    max = std::max(max, row[i]);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += std::exp(double(row[i]) - double(max));
  const double logSum = double(max) + std::log(sum);
  TokenLogprobs out;
  out.logprob = float(double(row[token]) - logSum);
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  const size_t n = size_t(std::min<int64_t>(k, vocab));
  std::partial_sort(ids.begin(), ids.begin() + long(n), ids.end(), [row](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  for (size_t i = 0; i < n; ++i)
    out.top.emplace_back(ids[i], float(double(row[ids[i]]) - logSum));
  return out;
}

std::vector<int32_t> Sampler::sample(const torch::Tensor &logits, std::span<Sequence *const> seqs) {
  std::vector<SamplingRow> rows;
  rows.reserve(seqs.size());
  for (const Sequence *seq : seqs)
    rows.push_back({&seq->samplingParams(), seq->numCompletionTokens()});
  return sample(logits, rows);
}

} // namespace nnsc
