//===- Bundle.cpp - a loaded, checked bundle ------------------------------===//

#include "nnsc/Runtime/Bundle/Bundle.h"

#include <dlfcn.h>

namespace nnsc {

const char *dtypeName(nnsc_dtype dtype) {
  switch (dtype) {
  case NNSC_DTYPE_F32:
    return "f32";
  case NNSC_DTYPE_BF16:
    return "bf16";
  case NNSC_DTYPE_F16:
    return "f16";
  case NNSC_DTYPE_I64:
    return "i64";
  case NNSC_DTYPE_BOOL:
    return "bool";
  }
  return "?";
}

size_t dtypeBytes(nnsc_dtype dtype) {
  switch (dtype) {
  case NNSC_DTYPE_F32:
    return 4;
  case NNSC_DTYPE_BF16:
  case NNSC_DTYPE_F16:
    return 2;
  case NNSC_DTYPE_I64:
    return 8;
  case NNSC_DTYPE_BOOL:
    return 1;
  }
  return 0;
}

std::string errorMessage(const char *message, int64_t arg0, int64_t arg1) {
  std::string text = message ? message : "error";
  const std::string args[2] = {std::to_string(arg0), std::to_string(arg1)};
  for (int i = 0; i < 2; ++i) {
    const std::string placeholder = "{" + std::to_string(i) + "}";
    for (size_t at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + args[i].size()))
      text.replace(at, placeholder.size(), args[i]);
  }
  return text;
}

std::string describeType(nnsc_dtype dtype, const std::vector<int64_t> &shape) {
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") +
         (shape[i] == NNSC_DIM_TOKENS ? std::string("T") : std::to_string(shape[i]));
  return s + "]";
}

const BundleSite *BundleTrace::findSite(int32_t site) const {
  for (const BundleSite &entry : sites)
    if (entry.site == site)
      return &entry;
  return nullptr;
}

Bundle::Bundle(void *handle, const nnsc_bundle *raw, std::vector<BundleTrace> traces)
    : handle(handle), raw(raw), source(raw->source_hash), traceList(std::move(traces)) {}

Bundle::~Bundle() {
  if (handle)
    dlclose(handle);
}

const BundleTrace *Bundle::findTrace(const std::string &name) const {
  for (const BundleTrace &trace : traceList)
    if (trace.name == name)
      return &trace;
  return nullptr;
}

} // namespace nnsc
