//===- ParamText.h - a param value written inline ---------------*- C++ -*-===//
//
// The VALUE of `--param NAME=VALUE` when it is not a file: one number per element of the
// param, row-major, comma separated (`true`/`false` also for a bool param). Plain C++ without
// torch, so that the fuzz target (test/Fuzz/ParamsFuzzer.cpp) can run it on anything.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_PARAMTEXT_H
#define NNSC_RUNTIME_BUNDLE_PARAMTEXT_H

#include "nnsc/Runtime/Bundle/Bundle.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnsc {

/// At most this many values in one inline VALUE (a longer list belongs in a safetensors file,
/// `@FILE`): the count is checked before anything of that size is allocated.
constexpr size_t kMaxInlineParamValues = size_t(1) << 20;

/// The values of `text` for `param`, as doubles in row-major order: exactly the param's
/// element count, integral for i64 and bool, 0/1 (or false/true) for bool. Returns nullopt and
/// sets `error` naming the param, its type and the item that is wrong.
std::optional<std::vector<double>> parseParamText(const BundleParam &param, std::string_view text,
                                                  std::string &error);

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_PARAMTEXT_H
