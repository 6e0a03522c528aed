//===- SamplerTest.cpp - Greedy, seeded and filtered sampling ---*- C++ -*-===//

#include "nnsc/Runtime/Engine/Sampler.h"

#include "nnsc/Runtime/Support/Error.h"

#include <gtest/gtest.h>

#include <set>

namespace {

using nnsc::Sampler;
using nnsc::SamplingParams;
using nnsc::SamplingRow;
using nnsc::TokenLogprobs;
using nnsc::tokenLogprobs;

std::vector<int32_t> sampleOne(Sampler &sampler, const torch::Tensor &row,
                               const SamplingParams &params, int64_t step) {
  SamplingRow r{&params, step};
  return sampler.sample(row.unsqueeze(0), std::span<const SamplingRow>(&r, 1));
}

TEST(Sampler, GreedyIsArgmax) {
  torch::manual_seed(0);
  Sampler sampler(1);
  torch::Tensor logits = torch::randn({6, 1000});
  SamplingParams greedy{.temperature = 0.0f};
  SamplingParams greedyFiltered{.temperature = 0.0f, .topK = 3, .topP = 0.1f};
  std::vector<SamplingRow> rows;
  for (int i = 0; i < 6; ++i)
    rows.push_back({i % 2 ? &greedy : &greedyFiltered, i});
  std::vector<int32_t> got = sampler.sample(logits, rows);
  torch::Tensor want = logits.argmax(1);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(got[i], want[i].item<int64_t>()) << "row " << i;

  // Ties go to the lowest id.
  torch::Tensor tie = torch::zeros({1, 10});
  tie[0][7] = 1.0f;
  tie[0][3] = 1.0f;
  EXPECT_EQ(sampleOne(sampler, tie[0], greedy, 0)[0], 3);

  // bfloat16 logits give the same answer.
  torch::Tensor bf = logits.to(torch::kBFloat16);
  std::vector<int32_t> gotBf = sampler.sample(bf, rows);
  torch::Tensor wantBf = bf.to(torch::kFloat32).argmax(1);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(gotBf[i], wantBf[i].item<int64_t>()) << "row " << i;
}

/// The vectorized argmax against a scalar scan on vocabularies with ties across vector lanes,
/// the maximum in the tail, infinities and NaNs.
TEST(Sampler, GreedyMatchesAScalarScan) {
  auto scalar = [](const torch::Tensor &row) {
    const float *x = row.data_ptr<float>();
    int64_t best = 0;
    for (int64_t i = 1; i < row.numel(); ++i)
      if (x[i] > x[best])
        best = i;
    return best;
  };
  Sampler sampler(0);
  SamplingParams greedy{.temperature = 0.0f};
  torch::manual_seed(3);
  for (int64_t vocab : {15, 16, 17, 49152, 49157}) {
    std::vector<torch::Tensor> cases;
    torch::Tensor r = torch::randn({vocab});
    cases.push_back(r.clone());
    torch::Tensor coarse = torch::randint(0, 4, {vocab}).to(torch::kFloat32); // many ties
    cases.push_back(coarse);
    torch::Tensor tail = r.clone();
    tail[vocab - 1] = 100.0f;
    cases.push_back(tail);
    torch::Tensor withNaN = r.clone();
    withNaN[vocab / 2] = NAN;
    cases.push_back(withNaN);
    torch::Tensor withInf = r.clone();
    withInf[vocab / 3] = INFINITY;
    withInf[vocab - 1] = INFINITY;
    cases.push_back(withInf);
    torch::Tensor nanFirst = r.clone();
    nanFirst[0] = NAN;
    cases.push_back(nanFirst);
    for (size_t c = 0; c < cases.size(); ++c)
      EXPECT_EQ(sampleOne(sampler, cases[c], greedy, 0)[0], scalar(cases[c]))
          << "vocab " << vocab << ", case " << c;
  }
}

TEST(Sampler, SeedGivesTheSameTokensInAnyBatch) {
  torch::manual_seed(1);
  torch::Tensor target = torch::randn({500});
  SamplingParams seeded{.temperature = 1.0f, .topP = 0.9f, .seed = 42};
  SamplingParams unseeded{.temperature = 1.0f};
  std::vector<int32_t> alone;
  for (int64_t step = 0; step < 20; ++step) {
    Sampler sampler(step); // the sampler's own seed must not matter
    alone.push_back(sampleOne(sampler, target, seeded, step)[0]);
  }
  // Different steps draw differently (a fixed draw would make every token the same).
  EXPECT_GT(std::set<int32_t>(alone.begin(), alone.end()).size(), 1u);

  Sampler sampler(99);
  for (int64_t step = 0; step < 20; ++step) {
    int64_t position = step % 5;
    torch::Tensor batch = torch::randn({5, 500});
    batch[position] = target;
    std::vector<SamplingRow> rows(5, SamplingRow{&unseeded, 0});
    rows[position] = {&seeded, step};
    std::vector<int32_t> got = sampler.sample(batch, rows);
    EXPECT_EQ(got[position], alone[step]) << "step " << step;
  }

  SamplingParams otherSeed = seeded;
  otherSeed.seed = 43;
  std::vector<int32_t> other;
  for (int64_t step = 0; step < 20; ++step)
    other.push_back(sampleOne(sampler, target, otherSeed, step)[0]);
  EXPECT_NE(other, alone);
}

TEST(Sampler, TopKRestrictsSupport) {
  torch::manual_seed(2);
  torch::Tensor logits = torch::randn({300}) * 0.5;
  SamplingParams params{.temperature = 2.0f, .topK = 5, .seed = 7};
  torch::Tensor top = std::get<1>(logits.topk(5));
  std::set<int64_t> allowed;
  for (int i = 0; i < 5; ++i)
    allowed.insert(top[i].item<int64_t>());
  Sampler sampler(0);
  std::set<int64_t> seen;
  for (int64_t step = 0; step < 400; ++step) {
    int32_t t = sampleOne(sampler, logits, params, step)[0];
    EXPECT_TRUE(allowed.count(t)) << "token " << t << " outside the top 5";
    seen.insert(t);
  }
  EXPECT_EQ(seen, allowed); // every allowed token is reachable at temperature 2

  SamplingParams topOne{.temperature = 1.0f, .topK = 1, .seed = 7};
  EXPECT_EQ(sampleOne(sampler, logits, topOne, 3)[0], logits.argmax().item<int64_t>());
}

TEST(Sampler, TopPRestrictsSupport) {
  torch::manual_seed(3);
  for (float topP : {0.3f, 0.75f, 0.95f}) {
    torch::Tensor logits = torch::randn({2000}) * 2.0;
    // The reference nucleus: the smallest set of most likely tokens with mass >= top_p.
    auto [sorted, ids] = torch::softmax(logits, 0, torch::kFloat64).sort(0, /*descending=*/true);
    torch::Tensor cumulative = sorted.cumsum(0);
    int64_t size = (cumulative < topP).sum().item<int64_t>() + 1;
    std::set<int64_t> nucleus;
    for (int64_t i = 0; i < size; ++i)
      nucleus.insert(ids[i].item<int64_t>());

    SamplingParams params{.temperature = 1.0f, .topP = topP, .seed = 11};
    Sampler sampler(0);
    std::set<int64_t> seen;
    for (int64_t step = 0; step < 500; ++step) {
      int32_t t = sampleOne(sampler, logits, params, step)[0];
      EXPECT_TRUE(nucleus.count(t)) << "top_p " << topP << ": token " << t;
      seen.insert(t);
    }
    // The draw reaches deep into the nucleus, not only its head.
    EXPECT_GT(seen.size(), std::min<size_t>(nucleus.size() / 2, 20)) << "top_p " << topP;
  }
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  torch::Tensor logits = torch::tensor({1.0f, 2.0f, 0.5f, -1.0f});
  for (float temperature : {1.0f, 0.5f}) {
    SamplingParams params{.temperature = temperature, .seed = 5};
    torch::Tensor want = torch::softmax(logits / temperature, 0);
    std::vector<int64_t> counts(4);
    constexpr int64_t kDraws = 20000;
    Sampler sampler(0);
    std::vector<SamplingRow> rows;
    for (int64_t step = 0; step < kDraws; ++step)
      rows.push_back({&params, step});
    for (int32_t t : sampler.sample(logits.unsqueeze(0).expand({kDraws, 4}), rows))
      ++counts[t];
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(static_cast<double>(counts[i]) / kDraws, want[i].item<double>(), 0.015)
          << "temperature " << temperature << ", token " << i;
  }
}

TEST(Sampler, RejectsBadInput) {
  Sampler sampler(0);
  torch::Tensor logits = torch::randn({1, 10});
  SamplingParams bad{.topP = 1.5f};
  try {
    sampleOne(sampler, logits[0], bad, 0);
    FAIL() << "expected an error for top_p 1.5";
  } catch (const nnsc::InvalidInput &e) {
    EXPECT_NE(std::string(e.what()).find("'top_p' must be in (0, 1]"), std::string::npos)
        << e.what();
  }
  SamplingParams negativeTemperature{.temperature = -1.0f};
  EXPECT_THROW(sampleOne(sampler, logits[0], negativeTemperature, 0), nnsc::InvalidInput);
  SamplingParams negativeTopK{.topK = -2};
  EXPECT_THROW(sampleOne(sampler, logits[0], negativeTopK, 0), nnsc::InvalidInput);

  SamplingParams ok;
  std::vector<SamplingRow> two(2, SamplingRow{&ok, 0});
  try {
    sampler.sample(logits, two);
    FAIL() << "expected a row-count error";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("logits has 1 rows for 2 sampling rows"),
              std::string::npos)
        << e.what();
  }
  torch::Tensor allInf = torch::full({10}, -INFINITY);
  try {
    sampleOne(sampler, allInf, ok, 0);
    FAIL() << "expected a no-finite-value error";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("logits row 0 has no finite value"), std::string::npos)
        << e.what();
  }
  torch::Tensor secondRowNaN = torch::randn({3, 40});
  secondRowNaN[1].fill_(NAN);
  std::vector<SamplingRow> three(3, SamplingRow{&ok, 0});
  try {
    sampler.sample(secondRowNaN, three);
    FAIL() << "expected a no-finite-value error";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("logits row 1 has no finite value"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(sampleOne(sampler, torch::arange(10), ok, 0), c10::Error);
}

} // namespace

TEST(TokenLogprobs, MatchLibTorchsLogSoftmax) {
  torch::manual_seed(3);
  torch::Tensor logits = torch::randn({3, 1000}) * 6;
  logits[1][17] = logits[1][18] = 40; // a tie among the top: the lower id first
  torch::Tensor reference = torch::log_softmax(logits.to(torch::kFloat64), -1);
  for (int64_t r = 0; r < 3; ++r) {
    torch::Tensor row = logits[r].contiguous();
    const int32_t token = int32_t(r * 100 + 5);
    TokenLogprobs got = tokenLogprobs(row.data_ptr<float>(), 1000, token, 5);
    EXPECT_NEAR(got.logprob, reference[r][token].item<double>(), 1e-5);
    ASSERT_EQ(got.top.size(), 5u);
    auto [values, ids] = reference[r].topk(5);
    for (int64_t k = 0; k < 5; ++k) {
      EXPECT_NEAR(got.top[size_t(k)].second, values[k].item<double>(), 1e-5);
      if (r != 1)
        EXPECT_EQ(got.top[size_t(k)].first, ids[k].item<int64_t>());
    }
  }
  TokenLogprobs tied = tokenLogprobs(logits[1].contiguous().data_ptr<float>(), 1000, 0, 2);
  EXPECT_EQ(tied.top[0].first, 17);
  EXPECT_EQ(tied.top[1].first, 18);
  EXPECT_TRUE(tokenLogprobs(logits[0].contiguous().data_ptr<float>(), 1000, 0, 0).top.empty());
}
