//===- CollectiveBench.cpp - latency of tensor parallelism's collectives --===//
//
// One rank of a group: run WORLD_SIZE copies with RANK, MASTER_PORT set (bench/tp_bench.py
// does). Times TensorParallelGroup's all-reduce of one residual row block and all-gather, as
// the forward pass calls them, on the Gloo group; rank 0 prints microseconds per call.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"

#include <chrono>
#include <cstdio>

int main() {
  std::optional<nnsc::DistributedOptions> options = nnsc::DistributedOptions::fromEnvironment();
  if (!options) {
    std::fprintf(stderr, "nnsc-bench-collectives: set RANK, WORLD_SIZE and MASTER_PORT\n");
    return 1;
  }
  at::set_num_threads(1);
  auto group = nnsc::TensorParallelGroup::connect(*options);
  for (int64_t rows : {1, 64}) {
    torch::Tensor x = torch::ones({rows, 576}); // SmolLM2's hidden size
    auto time = [&](const char *what, auto &&op) {
      for (int i = 0; i < 50; ++i)
        op();
      const int calls = 1000;
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i)
        op();
      double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count() /
          calls;
      if (group->rank() == 0)
        std::printf("%d ranks, %s of [%lld, 576] fp32: %.1f us\n", group->size(), what,
                    static_cast<long long>(rows), us);
    };
    time("all_reduce", [&] { group->allReduce(x); });
    time("all_gather", [&] { group->allGather(x); });
  }
  return 0;
}
