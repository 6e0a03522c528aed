//===- ParamsFuzzer.cpp - fuzz inline param values (--param NAME=VALUE) ---===//
//
// The first byte picks the param's declaration (dtype and shape, from a small set that covers
// scalars, vectors, matrices and every dtype); the rest is VALUE. An accepted value has
// exactly the param's element count, integral values for i64 and bool, and 0/1 for bool.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Bundle/ParamText.h"

#include <cmath>

namespace {

nnsc::BundleParam declaration(uint8_t pick) {
  static const nnsc_dtype dtypes[] = {NNSC_DTYPE_F32, NNSC_DTYPE_BF16, NNSC_DTYPE_F16,
                                      NNSC_DTYPE_I64, NNSC_DTYPE_BOOL};
  static const std::vector<int64_t> shapes[] = {{}, {1}, {3}, {2, 2}, {576}, {0}, {2, 0, 3}};
  nnsc::BundleParam p;
  p.name = "p";
  p.dtype = dtypes[pick % 5];
  p.shape = shapes[(pick / 5) % 7];
  p.defaultValue = nullptr;
  return p;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  nnsc::BundleParam p = declaration(data[0]);
  std::string_view text(reinterpret_cast<const char *>(data + 1), size - 1);
  std::string error;
  std::optional<std::vector<double>> values = nnsc::parseParamText(p, text, error);
  if (!values)
    return 0;
  int64_t n = 1;
  for (int64_t d : p.shape)
    n *= d;
  if (int64_t(values->size()) != n)
    __builtin_trap();
  for (double v : *values) {
    if ((p.dtype == NNSC_DTYPE_I64 || p.dtype == NNSC_DTYPE_BOOL) && v != std::trunc(v))
      __builtin_trap();
    if (p.dtype == NNSC_DTYPE_BOOL && v != 0 && v != 1)
      __builtin_trap();
  }
  return 0;
}
