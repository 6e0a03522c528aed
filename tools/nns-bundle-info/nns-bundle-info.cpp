//===- nns-bundle-info.cpp - print a bundle's manifest ----------*- C++ -*-===//
//
// Loads a .nnsb with dlopen, calls nnsc_bundle_query and prints the manifest one fact per line
// in a stable form for FileCheck. Only BundleABI.h and the loader library (no torch, no
// MLIR): this is what the runtime sees.
//
//   nns-bundle-info BUNDLE.nnsb [--ptx]
//
//===----------------------------------------------------------------------===//

#include "nnsc/Bundle/BundleABI.h"
#include "nnsc/Runtime/Bundle/Bundle.h"

#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

const char *phaseName(nnsc_phase phase) {
  switch (phase) {
  case NNSC_PHASE_FORWARD:
    return "forward";
  case NNSC_PHASE_LOGITS:
    return "logits";
  case NNSC_PHASE_SAMPLES:
    return "samples";
  case NNSC_PHASE_RESULT:
    return "result";
  }
  return "?";
}

/// "f32[T, 576]"
std::string typeString(nnsc_dtype dtype, int32_t rank, const int64_t *shape) {
  std::string text = nnsc::dtypeName(dtype);
  text += "[";
  for (int32_t d = 0; d < rank; ++d) {
    if (d)
      text += ", ";
    text += shape[d] == NNSC_DIM_TOKENS ? "T" : std::to_string(shape[d]);
  }
  return text + "]";
}

/// Comma-separated names of the set bits of `flags`, or "none".
std::string flagString(uint32_t flags, const char *const *names, const uint32_t *bits, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    if (!(flags & bits[i]))
      continue;
    if (!text.empty())
      text += ",";
    text += names[i];
  }
  return text.empty() ? "none" : text;
}

int64_t numElements(int32_t rank, const int64_t *shape) {
  int64_t count = 1;
  for (int32_t d = 0; d < rank; ++d)
    count *= shape[d];
  return count;
}

/// The first elements of a default value: "[0.5, 0.5, 0.5, 0.5, ...]".
std::string defaultString(const nnsc_param_desc &param) {
  if (!param.default_value)
    return "required";
  int64_t count = numElements(param.rank, param.shape);
  const int64_t shown = 4;
  std::string text = "[";
  char buffer[64];
  for (int64_t i = 0; i < count && i < shown; ++i) {
    if (i)
      text += ", ";
    switch (param.dtype) {
    case NNSC_DTYPE_F32: {
      float value;
      std::memcpy(&value, static_cast<const char *>(param.default_value) + 4 * i, 4);
      std::snprintf(buffer, sizeof(buffer), "%g", value);
      break;
    }
    case NNSC_DTYPE_I64: {
      int64_t value;
      std::memcpy(&value, static_cast<const char *>(param.default_value) + 8 * i, 8);
      std::snprintf(buffer, sizeof(buffer), "%" PRId64, value);
      break;
    }
    case NNSC_DTYPE_BOOL:
      std::snprintf(buffer, sizeof(buffer), "%s",
                    static_cast<const uint8_t *>(param.default_value)[i] ? "true" : "false");
      break;
    case NNSC_DTYPE_BF16:
    case NNSC_DTYPE_F16: {
      uint16_t bits;
      std::memcpy(&bits, static_cast<const char *>(param.default_value) + 2 * i, 2);
      std::snprintf(buffer, sizeof(buffer), "0x%04x", bits);
      break;
    }
    }
    text += buffer;
  }
  if (count > shown)
    text += ", ...";
  return text + "]";
}

void printTrace(int index, const nnsc_trace_desc &trace) {
  static const char *const traceFlagNames[] = {"reads_prompt", "writes_prompt", "stops"};
  static const uint32_t traceFlagBits[] = {NNSC_TRACE_READS_PROMPT, NNSC_TRACE_WRITES_PROMPT,
                                           NNSC_TRACE_STOPS};
  static const char *const accessNames[] = {"read", "write", "skip"};
  static const uint32_t accessBits[] = {NNSC_ACCESS_READ, NNSC_ACCESS_WRITE, NNSC_ACCESS_SKIP};

  std::printf("trace %d '%s' invokes=%d flags=%s frame_bytes=%" PRId64 "\n", index, trace.name,
              trace.num_invokes, flagString(trace.flags, traceFlagNames, traceFlagBits, 3).c_str(),
              trace.frame_bytes);
  if (trace.num_frame_heap_slots > 0) {
    std::printf("  frame heap slots at");
    for (int32_t i = 0; i < trace.num_frame_heap_slots; ++i)
      std::printf(" %" PRId64, trace.frame_heap_slots[i]);
    std::printf("\n");
  }
  for (int32_t i = 0; i < trace.num_invokes; ++i)
    std::printf("  invoke %d '%s'\n", i, trace.invoke_names[i]);
  for (int32_t i = 0; i < trace.num_params; ++i) {
    const nnsc_param_desc &param = trace.params[i];
    std::printf("  param %d '%s' %s default=%s\n", i, param.name,
                typeString(param.dtype, param.rank, param.shape).c_str(),
                defaultString(param).c_str());
  }
  for (int32_t i = 0; i < trace.num_saves; ++i) {
    const nnsc_save_desc &save = trace.saves[i];
    std::printf("  save %d '%s' %s%s\n", i, save.name,
                typeString(save.dtype, save.rank, save.shape).c_str(),
                (save.flags & NNSC_SAVE_PER_STEP) ? " per_step" : "");
  }
  for (int32_t i = 0; i < trace.num_sites; ++i) {
    const nnsc_site_entry &site = trace.sites[i];
    std::printf("  site %d '%s' phase=%s access=%s kernel=%s\n", site.site, site.site_path,
                phaseName(site.phase), flagString(site.access, accessNames, accessBits, 3).c_str(),
                site.kernel ? "yes" : "null");
  }
}

/// The device copies: one line per kernel, with what its launches need.
void printCuda(const nnsc_cuda_code &cuda) {
  std::printf("ptx: %zu bytes\n", std::strlen(cuda.ptx));
  std::printf("cuda: chip=%s kernels=%d messages=%d\n", cuda.chip, cuda.num_kernels,
              cuda.num_messages);
  for (int32_t i = 0; i < cuda.num_kernels; ++i)
    std::printf("  cuda kernel %d '%s' scratch_bytes=%" PRId64 " module_calls=%d\n", i,
                cuda.kernels[i].entry, cuda.kernels[i].scratch_bytes, cuda.kernels[i].num_calls);
  for (int32_t i = 0; i < cuda.num_messages; ++i)
    std::printf("  cuda message %d '%s'\n", i, cuda.messages[i]);
}

} // namespace

int main(int argc, char **argv) {
  const char *path = nullptr;
  bool printPtx = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ptx") == 0)
      printPtx = true;
    else if (!path && argv[i][0] != '-')
      path = argv[i];
    else {
      std::fprintf(stderr, "nns-bundle-info: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!path) {
    std::fprintf(stderr, "usage: nns-bundle-info BUNDLE.nnsb [--ptx]\n");
    return 2;
  }
  // dlopen searches the library path for names without a slash; a bundle is always a file.
  std::string file = std::strchr(path, '/') ? path : std::string("./") + path;
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "nns-bundle-info: cannot load '%s': %s\n", path, dlerror());
    return 1;
  }
  auto query = reinterpret_cast<nnsc_bundle_query_fn>(dlsym(handle, NNSC_BUNDLE_QUERY_SYMBOL));
  if (!query) {
    std::fprintf(stderr, "nns-bundle-info: '%s' is not a bundle: no '%s' symbol\n", path,
                 NNSC_BUNDLE_QUERY_SYMBOL);
    return 1;
  }
  const nnsc_bundle *bundle = query();
  // The tables' layout is only known for this version; reading another one could crash.
  if (bundle->abi_version != NNSC_BUNDLE_ABI_VERSION) {
    std::fprintf(stderr,
                 "nns-bundle-info: '%s' has bundle ABI version %u but this tool reads version "
                 "%u: rebuild the bundle from its source with this nnsc\n",
                 path, bundle->abi_version, NNSC_BUNDLE_ABI_VERSION);
    return 1;
  }
  if (printPtx) {
    if (!bundle->cuda) {
      std::fprintf(stderr, "nns-bundle-info: '%s' carries no PTX (built for --target=cpu)\n", path);
      return 1;
    }
    std::fputs(bundle->cuda->ptx, stdout);
    return 0;
  }
  std::printf("abi_version: %u\n", bundle->abi_version);
  std::printf("source_hash: %s\n", bundle->source_hash);
  std::printf("arch: %s\n", bundle->arch);
  std::printf("schema_hash: %" PRIu64 "\n", bundle->schema_hash);
  std::printf("dims: hidden=%" PRId64 " intermediate=%" PRId64 " layers=%" PRId64 " heads=%" PRId64
              " kv_heads=%" PRId64 " head_dim=%" PRId64 " vocab=%" PRId64 "\n",
              bundle->hidden, bundle->intermediate, bundle->layers, bundle->heads, bundle->kv_heads,
              bundle->head_dim, bundle->vocab);
  if (bundle->cuda)
    printCuda(*bundle->cuda);
  else
    std::printf("ptx: none\n");
  std::printf("traces: %d\n", bundle->num_traces);
  for (int32_t i = 0; i < bundle->num_traces; ++i)
    printTrace(i, bundle->traces[i]);
  return 0;
}
