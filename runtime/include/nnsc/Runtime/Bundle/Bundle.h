//===- Bundle.h - a loaded, checked bundle ----------------------*- C++ -*-===//
//
// The runtime's view of a bundle (BundleABI.h) after BundleLoader accepted it for a model:
// its traces with their params, saves and per-site kernels, as C++ values. The Bundle owns
// the dlopen handle; the kernels and default values stay valid while it lives.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_BUNDLE_H
#define NNSC_RUNTIME_BUNDLE_BUNDLE_H

#include "nnsc/Bundle/BundleABI.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nnsc {

/// "f32", "bf16", "f16", "i64", "bool" ("?" for a value outside the enum).
const char *dtypeName(nnsc_dtype dtype);
/// Bytes per element (0 for a value outside the enum).
size_t dtypeBytes(nnsc_dtype dtype);
/// "f32[576]", "i64[]", "f32[T, 576]".
std::string describeType(nnsc_dtype dtype, const std::vector<int64_t> &shape);
/// A report_error message with `{0}` and `{1}` replaced by `arg0` and `arg1` in decimal.
std::string errorMessage(const char *message, int64_t arg0, int64_t arg1);

struct BundleParam {
  std::string name;
  nnsc_dtype dtype;
  std::vector<int64_t> shape;
  /// Raw default value (dtype, shape, row-major), or null when the param is required.
  const void *defaultValue;
};

struct BundleSave {
  std::string name;
  nnsc_dtype dtype;
  /// May contain NNSC_DIM_TOKENS.
  std::vector<int64_t> shape;
  bool perStep;
};

struct BundleSite {
  /// Index in the architecture's firing order.
  int32_t site;
  std::string path;
  nnsc_phase phase;
  uint32_t access; ///< NNSC_ACCESS_*
  nnsc_site_kernel kernel;
};

struct BundleTrace {
  std::string name;
  int32_t numInvokes;
  std::vector<std::string> invokeNames;
  uint32_t flags; ///< NNSC_TRACE_*
  int64_t frameBytes;
  /// Offsets in the frame of pointers to the kernels' heap copies (freed at request end).
  std::vector<int64_t> frameHeapSlots;
  std::vector<BundleParam> params;
  std::vector<BundleSave> saves;
  /// Sorted by `site`.
  std::vector<BundleSite> sites;

  bool readsPrompt() const { return flags & NNSC_TRACE_READS_PROMPT; }
  bool writesPrompt() const { return flags & NNSC_TRACE_WRITES_PROMPT; }
  bool mayStop() const { return flags & NNSC_TRACE_STOPS; }
  /// The entry for schema site `site`, or null when the trace does not touch it.
  const BundleSite *findSite(int32_t site) const;
};

/// A bundle loaded from a shared object and checked against a model.
class Bundle {
public:
  Bundle(void *handle, const nnsc_bundle *raw, std::vector<BundleTrace> traces);
  ~Bundle();
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;

  const std::string &sourceHash() const { return source; }
  const std::vector<BundleTrace> &traces() const { return traceList; }
  /// The trace named `name` ("" for the unnamed one), or null.
  const BundleTrace *findTrace(const std::string &name) const;
  /// The kernels' device copies when built with --target=cuda, else null.
  const nnsc_cuda_code *cuda() const { return raw->cuda; }
  /// The table as the bundle exports it.
  const nnsc_bundle &table() const { return *raw; }

private:
  void *handle;
  const nnsc_bundle *raw;
  std::string source;
  std::vector<BundleTrace> traceList;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_BUNDLE_H
