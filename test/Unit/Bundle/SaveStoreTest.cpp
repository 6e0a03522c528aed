//===- SaveStoreTest.cpp - a request's saved values -------------*- C++ -*-===//

#include "nnsc/Runtime/Bundle/SaveStore.h"
#include "nnsc/Runtime/Bundle/BundleRequest.h"

#include <gtest/gtest.h>

namespace {

using nnsc::SaveStore;
using nnsc::viewOf;

TEST(SaveStore, ValuesAreCopiesInKeyOrder) {
  SaveStore store;
  torch::Tensor a = torch::randn({3, 5});
  torch::Tensor b = torch::arange(7, torch::kInt64);
  store.put({1, 0}, viewOf(a));
  store.put({0, -1}, viewOf(b));
  a.zero_(); // the store holds copies
  torch::Tensor a0 = torch::randn({3, 5});
  store.put({1, 1}, viewOf(a0));
  auto values = store.values();
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0].first, (SaveStore::Key{0, -1}));
  EXPECT_TRUE(values[0].second.equal(torch::arange(7, torch::kInt64)));
  EXPECT_EQ(values[1].first, (SaveStore::Key{1, 0}));
  EXPECT_FALSE(values[1].second.equal(a)); // not the zeroed tensor
  EXPECT_EQ(values[1].second.sizes(), a.sizes());
  EXPECT_TRUE(values[2].second.equal(a0));
}

TEST(SaveStore, EveryDtypeAndRank) {
  SaveStore store;
  std::vector<torch::Tensor> inputs = {torch::randn({4}).to(torch::kBFloat16),
                                       torch::randn({2, 3}).to(torch::kFloat16),
                                       torch::randn({2, 1, 3, 2}) > 0,
                                       torch::tensor(3.5f),
                                       torch::zeros({0, 576}),
                                       torch::randint(-9, 9, {5, 3}, torch::kInt64)};
  for (size_t i = 0; i < inputs.size(); ++i)
    store.put({int32_t(i), 0}, viewOf(inputs[i]));
  auto values = store.values();
  ASSERT_EQ(values.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(values[i].second.scalar_type(), inputs[i].scalar_type()) << i;
    EXPECT_TRUE(values[i].second.equal(inputs[i])) << i;
  }
}

TEST(SaveStore, StridedValuesAreGathered) {
  SaveStore store;
  torch::Tensor base = torch::randn({6, 8});
  torch::Tensor transposed = base.t();           // [8, 6], column-major
  torch::Tensor columns = base.narrow(1, 2, 3);  // rows with a gap between them
  torch::Tensor every2 = base.slice(0, 0, 6, 2); // every other row
  store.put({0, 0}, viewOf(transposed));
  store.put({1, 0}, viewOf(columns));
  store.put({2, 0}, viewOf(every2));
  auto values = store.values();
  EXPECT_TRUE(values[0].second.equal(transposed));
  EXPECT_TRUE(values[1].second.equal(columns));
  EXPECT_TRUE(values[2].second.equal(every2));
  for (auto &[key, value] : values)
    EXPECT_TRUE(value.is_contiguous());
}

TEST(SaveStore, ManyValuesOverManyBlocksStayIntact) {
  // A capture of every layer at every step: 30 layers x 40 steps of a row, and prompt-sized
  // values bigger than a block.
  SaveStore store;
  std::map<SaveStore::Key, torch::Tensor> want;
  for (int64_t step = 0; step < 40; ++step)
    for (int32_t layer = 0; layer < 30; ++layer) {
      const int64_t rows = step == 0 ? 2000 : 1; // 2000 x 576 x 4 bytes > 4 MiB
      torch::Tensor v = torch::randn({rows, 576});
      store.put({layer, step}, viewOf(v));
      want[{layer, step}] = v;
    }
  auto values = store.values();
  ASSERT_EQ(values.size(), want.size());
  for (auto &[key, value] : values)
    ASSERT_TRUE(value.equal(want.at(key))) << key.first << "." << key.second;
}

TEST(SaveStore, ReplacingAKeyKeepsOneValue) {
  SaveStore store;
  store.put({0, -1}, viewOf(torch::ones({4})));
  store.put({0, -1}, viewOf(torch::full({4}, 2.0f))); // same size: written in place
  store.put({1, -1}, viewOf(torch::ones({2})));
  store.put({1, -1}, viewOf(torch::full({3}, 5.0f))); // another size
  auto values = store.values();
  ASSERT_EQ(values.size(), 2u);
  EXPECT_TRUE(values[0].second.equal(torch::full({4}, 2.0f)));
  EXPECT_TRUE(values[1].second.equal(torch::full({3}, 5.0f)));
}

TEST(SaveStore, ClearForgetsButHandedOutValuesStay) {
  SaveStore store;
  torch::Tensor v = torch::randn({16, 16});
  store.put({0, 0}, viewOf(v));
  torch::Tensor out = store.values()[0].second;
  store.clear();
  EXPECT_EQ(store.size(), 0u);
  store.put({0, 0}, viewOf(torch::zeros({16, 16})));
  EXPECT_TRUE(out.equal(v));
  EXPECT_TRUE(store.values()[0].second.equal(torch::zeros({16, 16})));
}

} // namespace
