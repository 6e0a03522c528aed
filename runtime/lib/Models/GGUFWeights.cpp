//===- GGUFWeights.cpp - weights from a GGUF file ---------------*- C++ -*-===//

#include "nnsc/Runtime/Models/GGUFWeights.h"

#include "nnsc/Runtime/Kernels/Dequantize.h"

#include <cstring>
#include <optional>
#include <regex>

namespace nnsc {

std::optional<std::string> ggufTensorName(const std::string &hfName, schema::ArchKind arch) {
  static const std::pair<const char *, const char *> kGlobal[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  for (const auto &[hf, gg] : kGlobal)
    if (hfName == hf)
      return std::string(gg);
  static const std::pair<const char *, const char *> kLayer[] = {
      {"input_layernorm", "attn_norm"},    {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"}, {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
  };
  // Gemma's norms around each block (llama.cpp's convert_hf_to_gguf Gemma3Model).
  static const std::pair<const char *, const char *> kSandwichNorms[] = {
      {"post_attention_layernorm", "post_attention_norm"},
      {"pre_feedforward_layernorm", "ffn_norm"},
      {"post_feedforward_layernorm", "post_ffw_norm"},
  };
  static const std::regex kPattern(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(hfName, m, kPattern))
    return std::nullopt;
  if (schema::familyTraits(arch).sandwichNorms)
    for (const auto &[hf, gg] : kSandwichNorms)
      if (m[2] == hf)
        return "blk." + m[1].str() + "." + gg + "." + m[3].str();
  for (const auto &[hf, gg] : kLayer)
    if (m[2] == hf)
      return "blk." + m[1].str() + "." + gg + "." + m[3].str();
  return std::nullopt;
}

namespace {

/// The block format of a GGUF tensor type, if it is one the kernels read.
std::optional<kernels::QuantFormat> quantFormatOf(uint32_t type) {
  switch (static_cast<gguf::TensorType>(type)) {
  case gguf::TensorType::Q4_0:
    return kernels::QuantFormat::Q4_0;
  case gguf::TensorType::Q4_1:
    return kernels::QuantFormat::Q4_1;
  case gguf::TensorType::Q5_0:
    return kernels::QuantFormat::Q5_0;
  case gguf::TensorType::Q5_1:
    return kernels::QuantFormat::Q5_1;
  case gguf::TensorType::Q8_0:
    return kernels::QuantFormat::Q8_0;
  case gguf::TensorType::Q2_K:
    return kernels::QuantFormat::Q2_K;
  case gguf::TensorType::Q3_K:
    return kernels::QuantFormat::Q3_K;
  case gguf::TensorType::Q4_K:
    return kernels::QuantFormat::Q4_K;
  case gguf::TensorType::Q5_K:
    return kernels::QuantFormat::Q5_K;
  case gguf::TensorType::Q6_K:
    return kernels::QuantFormat::Q6_K;
  case gguf::TensorType::IQ4_NL:
    return kernels::QuantFormat::IQ4_NL;
  case gguf::TensorType::IQ4_XS:
    return kernels::QuantFormat::IQ4_XS;
  default:
    return std::nullopt;
  }
}

} // namespace

torch::Tensor dequantizeGGUFTensor(const gguf::GGUFFile &file, const gguf::TensorInfo &info) {
  std::vector<int64_t> shape(info.dims.rbegin(), info.dims.rend());
  const uint8_t *src = file.tensorData(info);
  const int64_t n = info.numElements();
  torch::Tensor out = torch::empty(shape, torch::kFloat32);
  float *dst = out.data_ptr<float>();
  if (const std::optional<kernels::QuantFormat> format = quantFormatOf(info.type)) {
    kernels::dequantize(*format, src, dst, n);
    return out;
  }
  switch (static_cast<gguf::TensorType>(info.type)) {
  case gguf::TensorType::F32:
    std::memcpy(dst, src, size_t(n) * sizeof(float));
    break;
  case gguf::TensorType::F16:
    kernels::dequantizeF16(src, dst, n);
    break;
  case gguf::TensorType::BF16:
    kernels::dequantizeBF16(src, dst, n);
    break;
  default:
    throw ModelLoadError("'" + file.path() + "': tensor '" + info.name + "' has type " +
                         gguf::tensorTypeName(info.type) +
                         ", which is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, "
                         "Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)");
  }
  return out;
}

GGUFWeightSource::GGUFWeightSource(const gguf::GGUFFile &file, const schema::ModelConfig &config)
    : file(file), config(config),
      permutedQK(file.getString("general.architecture").value_or("") == "llama") {}

/// Inverse of llama.cpp's convert_hf_to_gguf permute(): rows of each head go from the
/// interleaved (pairs) order back to transformers' half-split order.
static torch::Tensor unpermuteRows(const torch::Tensor &w, int64_t heads) {
  const int64_t rows = w.size(0);
  std::vector<int64_t> split = {heads, rows / heads / 2, 2};
  for (int64_t d = 1; d < w.dim(); ++d)
    split.push_back(w.size(d));
  return w.reshape(split).transpose(1, 2).reshape(w.sizes()).contiguous();
}

const gguf::TensorInfo *GGUFWeightSource::find(const std::string &hfName,
                                               const std::vector<int64_t> &shape,
                                               bool optional) const {
  std::optional<std::string> name = ggufTensorName(hfName, config.arch);
  const gguf::TensorInfo *info = name ? file.findTensor(*name) : nullptr;
  if (!info) {
    if (optional)
      return nullptr;
    throw ModelLoadError("'" + file.path() + "': missing tensor '" + name.value_or(hfName) + "' (" +
                         hfName + ")");
  }
  std::vector<int64_t> actual(info->dims.rbegin(), info->dims.rend());
  if (actual != shape)
    throw ModelLoadError("'" + file.path() + "': tensor '" + info->name + "' has shape " +
                         formatShape(actual) + ", expected " + formatShape(shape));
  return info;
}

torch::Tensor GGUFWeightSource::unpermute(const gguf::TensorInfo &info, torch::Tensor t) const {
  if (!permutedQK)
    return t;
  if (info.name.find(".attn_q.") != std::string::npos)
    return unpermuteRows(t, config.heads);
  if (info.name.find(".attn_k.") != std::string::npos)
    return unpermuteRows(t, config.kvHeads);
  return t;
}

torch::Tensor GGUFWeightSource::get(const std::string &hfName, const std::vector<int64_t> &shape,
                                    torch::ScalarType dtype, bool optional) {
  const gguf::TensorInfo *info = find(hfName, shape, optional);
  if (!info)
    return {};
  torch::Tensor t = unpermute(*info, dequantizeGGUFTensor(file, *info)).to(dtype).contiguous();
  file.releaseTensorData(*info); // copied: its pages need not stay resident while loading
  return t;
}

QuantizedMatrix GGUFWeightSource::getQuantized(const std::string &hfName,
                                               const std::vector<int64_t> &shape) {
  const gguf::TensorInfo *info = find(hfName, shape, /*optional=*/true);
  if (!info || shape.size() != 2)
    return {};
  const std::optional<kernels::QuantFormat> quant = quantFormatOf(info->type);
  if (!quant)
    return {};
  const kernels::QuantFormat format = *quant;
  const int64_t blockWeights = kernels::quantBlockWeights(format);
  const int64_t rowBytes = shape[1] / blockWeights * kernels::quantBlockBytes(format);
  if (shape[1] % blockWeights != 0 || int64_t(info->size) != shape[0] * rowBytes)
    return {};
  // Split straight from the mapped file (fromGgmlBlocks copies; nothing writes the view).
  const torch::Tensor blocks = torch::from_blob(const_cast<uint8_t *>(file.tensorData(*info)),
                                                {shape[0], rowBytes}, torch::kUInt8);
  QuantizedMatrix m = QuantizedMatrix::fromGgmlBlocks(format, unpermute(*info, blocks), shape[1]);
  file.releaseTensorData(*info);
  return m;
}

} // namespace nnsc
