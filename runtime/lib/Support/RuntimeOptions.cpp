//===- RuntimeOptions.cpp - the runtime's environment switches ------------===//

#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include "nnsc/Runtime/Support/Error.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

namespace nnsc {

namespace {

/// Reads the variables of one RuntimeOptions, each checked against the values it takes.
class EnvironmentReader {
public:
  explicit EnvironmentReader(const std::function<const char *(const char *)> &lookup)
      : lookup(lookup) {}

  /// The value of `name` if set (and not empty), one of `choices`.
  std::optional<std::string> choice(const char *name, std::initializer_list<const char *> choices) {
    const char *raw = lookup(name);
    if (!raw || !*raw)
      return std::nullopt;
    std::string list;
    for (const char *c : choices) {
      if (raw == std::string(c))
        return std::string(raw);
      list += (list.empty() ? "" : ", ") + std::string(c);
    }
    throw InvalidInput(std::string(name) + " must be one of " + list + ", got '" + raw + "'");
  }

  /// A count of `name` (`min` at least), or nullopt when unset or one of `words`.
  std::optional<int64_t> count(const char *name, int64_t min) {
    const char *raw = lookup(name);
    if (!raw || !*raw)
      return std::nullopt;
    const std::string v(raw);
    int64_t n = 0;
    const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (error != std::errc() || end != v.data() + v.size() || n < min)
      throw InvalidInput(std::string(name) + " must be a whole number >= " + std::to_string(min) +
                         ", got '" + v + "'");
    return n;
  }

  bool isSet(const char *name) { return lookup(name) != nullptr; }

private:
  const std::function<const char *(const char *)> &lookup;
};

} // namespace

RuntimeOptions RuntimeOptions::parse(const std::function<const char *(const char *)> &lookup) {
  EnvironmentReader env(lookup);
  RuntimeOptions o;
  o.rowLane = env.choice("NNSC_ROW_LANE", {"on", "off"}).value_or("on") == "on";
  o.libTorchGemm = env.choice("NNSC_GEMM", {"onednn", "libtorch"}).value_or("") == "libtorch";
  const char *decode = lookup("NNSC_QUANT_DECODE");
  if (decode && std::string(decode) == "off")
    o.quantDecodeMaxRows = 0;
  else if (!(decode && std::string(decode) == "on")) {
    try {
      o.quantDecodeMaxRows = env.count("NNSC_QUANT_DECODE", 0);
    } catch (const InvalidInput &) {
      throw InvalidInput(std::string("NNSC_QUANT_DECODE must be on, off or a row count, got '") +
                         decode + "'");
    }
  }
  o.quantAvx512 = env.choice("NNSC_QUANT_AVX512", {"0", "1"}).value_or("1") == "1";
  o.quantBf16Dot = env.choice("NNSC_QUANT_BF16DOT", {"0", "1"}).value_or("1") == "1";
  o.attentionBf16Dot = env.choice("NNSC_ATTENTION_BF16DOT", {"0", "1"}).value_or("1") == "1";
  o.systemAllocator =
      env.choice("NNSC_HOST_ALLOCATOR", {"nnsc", "system"}).value_or("nnsc") == "system";
  o.cudaPrefillSimt = env.choice("NNSC_CUDA_PREFILL", {"auto", "simt"}).value_or("auto") == "simt";
  o.profile = env.isSet("NNSC_PROFILE");
  o.distTimeoutSeconds = env.count("NNSC_DIST_TIMEOUT", 1);
  return o;
}

RuntimeOptions RuntimeOptions::fromEnvironment() {
  return parse([](const char *name) { return std::getenv(name); });
}

const RuntimeOptions &RuntimeOptions::get() {
  static const RuntimeOptions options = fromEnvironment();
  return options;
}

} // namespace nnsc
