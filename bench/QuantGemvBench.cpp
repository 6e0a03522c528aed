//===- QuantGemvBench.cpp - Quantized GEMV vs the widened weights per batch -*- C++ -*-===//
//
// Where the quantized decode path stops paying: for each batch of M activation rows, the time
// of one decoder layer's four products plus lm_head on the model file's own blocks
// (quantizedLinear) against the same products on the widened fp32 or bf16 weights
// (nnsc::linear: the AVX-512 GEMV kernels where the CPU has them up to GemvMaxRows rows,
// oneDNN with packed weights otherwise), measured alternately so both see the same machine
// state. Each cell is the best of --repeat rounds; a round runs the products until 50 ms have
// passed. Also prints GB/s of blocks read at M = 1, and a pass over the whole model's blocks
// at M = 1 packed as the loader packs them against separate allocations.
//
// With --row-invariant the quantized side runs in the batch-invariant mode's order (every row
// in the exact form; widened tiles from 12 rows on AVX2, 16 on AVX-512, in both orders) and M goes
// on to 512: the mode's products against what the default order runs above the row limit.
//
// It compares kernels, not the engine's paths: the one layer's weights, called again and again,
// stay in the caches (a decode step streams every layer's from memory), and the lm_head has
// most of the weights. bench/quant_crossover.py places the row limit end to end.
//
//   nnsc-bench-quant-gemv MODEL.gguf [--threads N] [--repeat R] [--dtype fp32|bf16]
//                         [--row-invariant]
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Layers/Linear.h"
#include "nnsc/Runtime/Layers/OneDnnLinear.h"
#include "nnsc/Runtime/Layers/ProductOrder.h"
#include "nnsc/Runtime/Models/ModelWeights.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace {

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

/// One decode step's products at M = 1 over every layer and lm_head, which stream the whole
/// model's blocks (more than the caches hold): as the loader packs them (one ordered region on
/// huge pages, packQuantized) and as separate allocations of 4 KiB pages (each matrix cloned).
/// Fastest pass of many (short passes dodge the other tenants of a shared machine), and the
/// median, what a decode step typically gets.
void streamWholeModel(const nnsc::ModelWeights &w, torch::ScalarType dtype, int repeat) {
  std::vector<const nnsc::QuantizedMatrix *> packed;
  for (const nnsc::LayerWeights &l : w.layers)
    for (const nnsc::QuantizedMatrix *m : {&l.qkvQuant, &l.oQuant, &l.gateUpQuant, &l.downQuant})
      packed.push_back(m);
  packed.push_back(&w.lmHeadQuant);
  std::vector<nnsc::QuantizedMatrix> separate;
  int64_t bytes = 0;
  for (const nnsc::QuantizedMatrix *m : packed) {
    separate.push_back(*m);
    separate.back().blocks = m->blocks.clone();
    bytes += m->bytes();
  }
  std::vector<torch::Tensor> inputs;
  for (const nnsc::QuantizedMatrix *m : packed)
    inputs.push_back(torch::randn({1, m->cols}).to(dtype));
  std::vector<double> seconds[2];
  using Clock = std::chrono::steady_clock;
  for (int pass = 0; pass < 40 * repeat; ++pass)
    for (int layout = 0; layout < 2; ++layout) {
      const auto start = Clock::now();
      for (size_t i = 0; i < packed.size(); ++i)
        nnsc::quantizedLinear(inputs[i], layout ? separate[i] : *packed[i]);
      seconds[layout].push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
  std::printf("whole model at M=1 (%.1f MB of blocks), fastest and median of %d passes:\n",
              double(bytes) / 1e6, 40 * repeat);
  for (int layout = 0; layout < 2; ++layout) {
    std::vector<double> &s = seconds[layout];
    std::sort(s.begin(), s.end());
    const double best = s.front(), median = s[s.size() / 2];
    std::printf("  %-34s %7.3f ms  %6.2f GB/s   median %7.3f ms  %6.2f GB/s\n",
                layout ? "separate allocations (4 KiB pages)" : "packed (one region, huge pages)",
                best * 1e3, double(bytes) / best / 1e9, median * 1e3, double(bytes) / median / 1e9);
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: nnsc-bench-quant-gemv MODEL.gguf [--threads N] [--repeat R] "
                         "[--dtype fp32|bf16] [--row-invariant]\n");
    return 2;
  }
  const std::string model = argv[1];
  int threads = 2, repeat = 5;
  torch::ScalarType dtype = torch::kFloat32;
  bool rowInvariant = false;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc)
      dtype = std::strcmp(argv[++i], "bf16") ? torch::kFloat32 : torch::kBFloat16;
    else if (!std::strcmp(argv[i], "--row-invariant"))
      rowInvariant = true;
    else {
      std::fprintf(stderr, "nnsc-bench-quant-gemv: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  // Every batch size here runs the quantized kernels, whatever the engine's crossover.
  setenv("NNSC_QUANT_DECODE", "1024", 1);
  at::set_num_threads(threads);
  c10::InferenceMode guard;
  nnsc::ModelWeights w =
      nnsc::ModelWeights::load(model, dtype, {}, nnsc::ProjectionForms::WidenedAndBlocks);
  const nnsc::LayerWeights &l = w.layers[0];
  struct Product {
    const char *name;
    torch::Tensor dense;
    nnsc::QuantizedMatrix quant;
  };
  const Product products[] = {{"qkv", l.qkv, l.qkvQuant},
                              {"o", l.o, l.oQuant},
                              {"gate_up", l.gateUp, l.gateUpQuant},
                              {"down", l.down, l.downQuant},
                              {"lm_head", w.lmHead, w.lmHeadQuant}};
  for (const Product &p : products) {
    if (!p.quant.defined()) {
      std::fprintf(stderr, "nnsc-bench-quant-gemv: %s has no quantized blocks\n", p.name);
      return 1;
    }
    nnsc::oneDnnPack(p.dense);
  }
  std::printf("threads %d, %s, best of %d; ms for the layer's 4 products + lm_head%s\n", threads,
              dtype == torch::kFloat32 ? "fp32" : "bf16", repeat,
              rowInvariant ? "; quantized in the row-invariant order" : "");
  std::printf("%4s %12s %12s %8s\n", "M", "quantized", "widened", "ratio");
  std::vector<int64_t> batches = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  if (rowInvariant)
    batches.insert(batches.end(), {48, 64, 128, 512});
  for (int64_t m : batches) {
    std::vector<torch::Tensor> inputs;
    for (const Product &p : products)
      inputs.push_back(torch::randn({m, p.dense.size(1)}).to(dtype));
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < repeat; ++r)
      for (int quant = 1; quant >= 0; --quant) {
        const double s = secondsPerCall([&] {
          for (size_t i = 0; i < std::size(products); ++i) {
            if (quant) {
              const nnsc::ScopedProductOrder order(rowInvariant ? nnsc::ProductOrder::RowInvariant
                                                                : nnsc::productOrder());
              nnsc::quantizedLinear(inputs[i], products[i].quant);
            } else {
              nnsc::linear(inputs[i], products[i].dense);
            }
          }
        });
        best[quant] = std::min(best[quant], s);
      }
    std::printf("%4ld %12.3f %12.3f %8.2f\n", long(m), best[1] * 1e3, best[0] * 1e3,
                best[0] / best[1]);
    if (m == 1) {
      int64_t bytes = 0;
      for (const Product &p : products)
        bytes += p.quant.bytes();
      std::printf("     M=1 quantized: %.2f GB/s of blocks\n", double(bytes) / best[1] / 1e9);
    }
  }
  streamWholeModel(w, dtype, repeat);
  return 0;
}
