//===- BundleParams.h - params of a trace from the command line -*- C++ -*-===//
//
// `--param NAME=VALUE` where VALUE is a number, `true`/`false`, a comma list (row-major, one
// value per element) or `@FILE.safetensors[:KEY]` (KEY defaults to the file's only tensor, or
// to NAME). Every param of the trace must be given or have a default; each value must have
// the param's exact element count or shape. Nothing runs when one is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_BUNDLEPARAMS_H
#define NNSC_RUNTIME_BUNDLE_BUNDLEPARAMS_H

#include "nnsc/Runtime/Bundle/Bundle.h"

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nnsc {

/// The params of `trace` in its param order, from `specs` ("NAME=VALUE") and the defaults.
/// Returns nullopt and sets `error` naming the param and what is wrong (`flag` is the option
/// that gives params, for the message about a missing one).
std::optional<std::vector<torch::Tensor>> bindParams(const BundleTrace &trace,
                                                     const std::vector<std::string> &specs,
                                                     std::string &error,
                                                     const std::string &flag = "--param");

/// A param value given by name, in any numeric or bool dtype.
using NamedParam = std::pair<std::string, torch::Tensor>;

/// The params of `trace` in its param order, from `given` and the defaults: each value must
/// have the param's exact shape, and integral values for an i64 or bool param. `howToGive`
/// completes the message for a missing param ("give it with --param k=VALUE"). Returns
/// nullopt and sets `error` naming the param and what is wrong.
std::optional<std::vector<torch::Tensor>>
bindParamValues(const BundleTrace &trace, const std::vector<NamedParam> &given,
                const std::function<std::string(const std::string &)> &howToGive,
                std::string &error);

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_BUNDLEPARAMS_H
