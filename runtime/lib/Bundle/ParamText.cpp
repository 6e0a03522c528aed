//===- ParamText.cpp - a param value written inline -----------------------===//

#include "nnsc/Runtime/Bundle/ParamText.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace nnsc {

namespace {

/// The element count of `shape`, or nullopt when it is negative or overflows.
std::optional<uint64_t> elementCount(const std::vector<int64_t> &shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > UINT64_MAX / uint64_t(d)))
      return std::nullopt;
    n *= uint64_t(d);
  }
  return n;
}

/// `item` as a number: the whole item must be read (strtod's syntax, no trailing text).
std::optional<double> parseNumber(const std::string &item) {
  if (item.empty())
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(item.c_str(), &end);
  // A number too large for a double (1e400) is refused, not read as infinity.
  if (end != item.c_str() + item.size() || (errno == ERANGE && std::isinf(v)))
    return std::nullopt;
  return v;
}

/// True for a finite double with no fractional part that an int64_t holds.
bool isInt64(double v) {
  return std::isfinite(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0 &&
         v == std::trunc(v);
}

} // namespace

std::optional<std::vector<double>> parseParamText(const BundleParam &p, std::string_view text,
                                                  std::string &error) {
  const std::optional<uint64_t> count = elementCount(p.shape);
  if (!count) {
    error = "param '" + p.name + "' has an invalid shape " + describeType(p.dtype, p.shape);
    return std::nullopt;
  }
  const bool integral = p.dtype == NNSC_DTYPE_I64 || p.dtype == NNSC_DTYPE_BOOL;
  std::vector<double> values;
  size_t pos = 0, items = 0;
  while (true) {
    size_t end = text.find(',', pos);
    if (++items > kMaxInlineParamValues) {
      error = "param '" + p.name + "' is " + describeType(p.dtype, p.shape) + ": more than " +
              std::to_string(kMaxInlineParamValues) +
              " values inline; give large values as @FILE.safetensors";
      return std::nullopt;
    }
    std::string item(
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (p.dtype == NNSC_DTYPE_BOOL && (item == "true" || item == "false")) {
      values.push_back(item == "true" ? 1 : 0);
    } else {
      std::optional<double> v = parseNumber(item);
      if (!v || (integral && !isInt64(*v)) || (p.dtype == NNSC_DTYPE_BOOL && *v != 0 && *v != 1)) {
        error = "param '" + p.name + "' is " + describeType(p.dtype, p.shape) + ": '" + item +
                "' is not " +
                (p.dtype == NNSC_DTYPE_BOOL ? "true or false"
                 : integral                 ? "an integer"
                                            : "a number");
        return std::nullopt;
      }
      values.push_back(*v);
    }
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  if (values.size() != *count) {
    error = "param '" + p.name + "' is " + describeType(p.dtype, p.shape) + " and needs " +
            std::to_string(*count) + " value" + (*count == 1 ? "" : "s") + ", got " +
            std::to_string(values.size());
    return std::nullopt;
  }
  return values;
}

} // namespace nnsc
