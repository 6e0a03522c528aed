//===- OneDnnLinear.cpp - Products on oneDNN with weights packed once -*- C++ -*-===//

#include "nnsc/Runtime/Layers/OneDnnLinear.h"

#include "nnsc/Runtime/Support/RuntimeOptions.h"
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace nnsc {

namespace {

/// A weight is identified by what it reads: a view made afresh on every call (a row slice of
/// a fused matrix) is the same weight as long as it covers the same elements.
struct WeightKey {
  const void *data;
  int64_t rows, cols, rowStride;
  torch::ScalarType type;
  bool operator==(const WeightKey &o) const {
    return std::tie(data, rows, cols, rowStride, type) ==
           std::tie(o.data, o.rows, o.cols, o.rowStride, o.type);
  }
};

struct WeightKeyHash {
  size_t operator()(const WeightKey &k) const {
    size_t h = std::hash<const void *>()(k.data);
    for (int64_t v : {k.rows, k.cols, k.rowStride, int64_t(k.type)})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

struct PackedWeight {
  /// Tells when the weight's memory was freed (and might hold another weight now).
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  /// The weight's version when packed; none for inference tensors, which have no version.
  std::optional<uint32_t> version;
  torch::Tensor packed;
};

std::optional<uint32_t> versionOf(const torch::Tensor &t) {
  if (t.is_inference())
    return std::nullopt;
  return t._version();
}

class PackCache {
public:
  static PackCache &shared() {
    static PackCache cache;
    return cache;
  }

  torch::Tensor get(const torch::Tensor &weight) {
    return get(
        {weight.data_ptr(), weight.size(0), weight.size(1), weight.stride(0), weight.scalar_type()},
        weight.storage(), versionOf(weight), [&] { return weight; });
  }

  /// The packed copy of `quant`'s weights in `dtype`, packed from quant.widen() on first use.
  torch::Tensor get(const QuantizedMatrix &quant, torch::ScalarType dtype) {
    return get({quant.blocks.data_ptr(), quant.rows(), quant.cols, quant.blocks.stride(0), dtype},
               quant.blocks.storage(), std::nullopt, [&] { return quant.widen(dtype); });
  }

private:
  /// The entry of `key` if it is current (its storage alive, at `version`), else one packed now
  /// from widen(); `storage` tells when the weight is freed.
  template <typename Widen>
  torch::Tensor get(const WeightKey &key, const c10::Storage &storage,
                    std::optional<uint32_t> version, const Widen &widen) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = entries.find(key);
      if (it != entries.end() && !it->second.storage.expired() && it->second.version == version)
        return it->second.packed;
    }
    // Packing reads the whole weight; do it outside the lock. Two threads packing the same
    // weight at once store equal results.
    static const c10::OperatorHandle reorder =
        c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_reorder_linear_weight", "");
    torch::jit::Stack stack{widen().contiguous(), c10::IValue()};
    reorder.callBoxed(&stack);
    torch::Tensor packed = stack[0].toTensor();
    std::lock_guard<std::mutex> lock(mutex);
    dropFreed();
    entries.insert_or_assign(key, PackedWeight{storage.getWeakStorageImpl(), version, packed});
    return packed;
  }

public:
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    dropFreed();
    return entries.size();
  }

private:
  /// Packed copies of weights whose memory is gone would only hold memory.
  void dropFreed() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.storage.expired() ? entries.erase(it) : std::next(it);
  }

  std::mutex mutex;
  std::unordered_map<WeightKey, PackedWeight, WeightKeyHash> entries;
};

/// The op, or none when this LibTorch was built without oneDNN.
std::optional<c10::OperatorHandle> findOp(const char *name, const char *overload) {
  return c10::Dispatcher::singleton().findSchema({name, overload});
}

/// NNSC_GEMM=libtorch sends every product to at::linear (RuntimeOptions).
bool libTorchGemmRequested() { return RuntimeOptions::get().libTorchGemm; }

/// oneDNN serves products only on CPUs with AVX-512 (BW, VL, DQ): its bf16 path needs it
/// (_reorder_linear_weight refuses bf16 weights elsewhere; LibTorch's mkldnn_bf16_device_check,
/// whose AVX-NE-CONVERT case is not checked here), and on an AVX2-only CPU (a Zen 3) its fp32
/// products were measured six times further from a float64 reference than at::linear's
/// (layer 29's MLP output of a massive-activation token: max abs 0.110 vs 0.017; parity
/// program 21 failed), so such CPUs take at::linear for both dtypes.
bool cpuServesOneDnn() {
#if defined(__x86_64__)
  static const bool supported = __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl") &&
                                __builtin_cpu_supports("avx512dq");
  return supported;
#else
  return false;
#endif
}

} // namespace

bool oneDnnServes(torch::ScalarType dtype) {
  static const bool registered =
      findOp("mkldnn::_linear_pointwise", "") && findOp("mkldnn::_linear_pointwise", "binary") &&
      findOp("mkldnn::_reorder_linear_weight", "") && !libTorchGemmRequested();
  return registered && cpuServesOneDnn() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16);
}

bool oneDnnLinearApplies(const torch::Tensor &in, const torch::Tensor &weight) {
  return oneDnnServes(in.scalar_type()) && weight.scalar_type() == in.scalar_type() &&
         in.device().is_cpu() && weight.device().is_cpu() && in.layout() == torch::kStrided &&
         weight.layout() == torch::kStrided && weight.dim() == 2 && weight.stride(1) == 1;
}

namespace {

/// The most bytes of widened weights tiledProduct multiplies at a time: every layer
/// projection of a small model in one product (SmolLM2's largest, gate_up, is 7 MB in fp32),
/// a large lm_head in a few. Each product's output columns are copied into place.
constexpr int64_t TileBytes = int64_t(16) << 20;

/// Rows of a tile one thread widens at a time.
constexpr int64_t WidenChunkRows = 64;

/// in @ w^T (+ bias), or acc + in @ w^T, with w packed by PackCache or a plain [n, k] weight
/// (which oneDNN multiplies without packing it).
torch::Tensor productWithPacked(const torch::Tensor &in, const torch::Tensor &packed,
                                const torch::Tensor &bias, const torch::Tensor &acc) {
  static const std::optional<c10::OperatorHandle> plain = findOp("mkldnn::_linear_pointwise", "");
  static const std::optional<c10::OperatorHandle> add =
      findOp("mkldnn::_linear_pointwise", "binary");
  c10::IValue biasValue = bias.defined() ? c10::IValue(bias.contiguous()) : c10::IValue();
  torch::jit::Stack stack;
  if (acc.defined()) {
    TORCH_CHECK(!bias.defined(), "oneDnnLinear: a bias with an accumulator is not supported");
    stack = {in.contiguous(), acc.contiguous(), packed, biasValue, std::string("add")};
    add->callBoxed(&stack);
  } else {
    stack = {in.contiguous(),
             packed,
             biasValue,
             std::string("none"),
             c10::List<std::optional<at::Scalar>>(),
             c10::IValue()};
    plain->callBoxed(&stack);
  }
  return stack[0].toTensor();
}

/// oneDnnLinearQuantized() for a tiled matrix: tiles widened from the blocks, no packed copy.
torch::Tensor tiledProduct(const torch::Tensor &in, const QuantizedMatrix &quant,
                           const torch::Tensor &bias, const torch::Tensor &acc) {
  const int64_t rows = quant.rows(), cols = quant.cols;
  const torch::ScalarType dtype = in.scalar_type();
  const int64_t rowBytes = cols * int64_t(c10::elementSize(dtype));
  const int64_t tileRows = std::clamp<int64_t>(TileBytes / rowBytes, 1, rows);
  // One tile's memory per thread, reused: a fresh allocation this large would be mapped and
  // zeroed page by page on every product.
  thread_local torch::Tensor buffer;
  if (!buffer.defined() || buffer.scalar_type() != dtype || buffer.numel() < tileRows * cols)
    buffer = torch::empty({tileRows * cols}, in.options());
  auto product = [&](int64_t begin, int64_t count, const torch::Tensor &tileAcc) {
    const torch::Tensor tile = buffer.narrow(0, 0, count * cols).view({count, cols});
    auto *out = static_cast<uint8_t *>(tile.data_ptr());
    at::parallel_for(0, count, WidenChunkRows, [&](int64_t first, int64_t last) {
      quant.widenRows(begin + first, last - first, dtype, out + first * rowBytes);
    });
    return productWithPacked(in, tile, bias.defined() ? bias.narrow(0, begin, count) : bias,
                             tileAcc);
  };
  if (tileRows == rows)
    return product(0, rows, acc);
  torch::Tensor y = torch::empty({in.size(0), rows}, in.options());
  for (int64_t begin = 0; begin < rows; begin += tileRows) {
    const int64_t count = std::min(tileRows, rows - begin);
    y.narrow(1, begin, count)
        .copy_(product(begin, count, acc.defined() ? acc.narrow(1, begin, count) : acc));
  }
  return y;
}

} // namespace

torch::Tensor oneDnnLinear(const torch::Tensor &in, const torch::Tensor &weight,
                           const torch::Tensor &bias, const torch::Tensor &acc) {
  return productWithPacked(in, PackCache::shared().get(weight), bias, acc);
}

torch::Tensor oneDnnLinearQuantized(const torch::Tensor &in, const QuantizedMatrix &quant,
                                    const torch::Tensor &bias, const torch::Tensor &acc) {
  if (quant.tiled)
    return tiledProduct(in, quant, bias, acc);
  return productWithPacked(in, PackCache::shared().get(quant, in.scalar_type()), bias, acc);
}

void oneDnnPackQuantized(const QuantizedMatrix &quant, torch::ScalarType dtype) {
  if (quant.defined() && !quant.tiled && oneDnnServes(dtype))
    PackCache::shared().get(quant, dtype);
}

void oneDnnPack(const torch::Tensor &weight) {
  if (weight.defined() && weight.dim() == 2 && oneDnnLinearApplies(weight, weight))
    PackCache::shared().get(weight);
}

size_t oneDnnPackedWeights() { return PackCache::shared().size(); }

} // namespace nnsc
