//===- RandomSource.h - random model weights for unit tests -----*- C++ -*-===//
//
// Shared by the unit tests that build a tiny model in memory (Backend, Bundle): no file, no
// reference implementation, weights drawn from torch's seeded generator.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_UNIT_SUPPORT_RANDOMSOURCE_H
#define NNSC_TEST_UNIT_SUPPORT_RANDOMSOURCE_H

#include "nnsc/Runtime/Models/ModelWeights.h"

namespace nnsc::test {

/// Random weights of the requested shapes (optional tensors absent): norms near 1, the rest
/// small, so logits stay in a range where fp32 comparisons are meaningful.
class RandomSource : public WeightSource {
public:
  torch::Tensor get(const std::string &, const std::vector<int64_t> &shape, torch::ScalarType dtype,
                    bool optional) override {
    if (optional)
      return {};
    return (torch::randn(shape) * 0.2 + (shape.size() == 1 ? 1.0 : 0.0)).to(dtype);
  }
  int64_t size() const override { return 0; }
};

} // namespace nnsc::test

#endif // NNSC_TEST_UNIT_SUPPORT_RANDOMSOURCE_H
