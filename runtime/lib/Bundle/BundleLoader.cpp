//===- BundleLoader.cpp - dlopen and check a bundle -----------------------===//

#include "nnsc/Runtime/Bundle/BundleLoader.h"

#include <dlfcn.h>

#include <set>
#include <sstream>

namespace nnsc {
namespace {

/// Reads a table the bundle exports, checking its own consistency on the way: the runtime
/// indexes these arrays, so null tables or out-of-range counts are refused, not trusted.
class TableReader {
public:
  TableReader(const schema::Architecture &architecture, std::string &error)
      : architecture(architecture), error(error) {}

  bool readModel(const nnsc_bundle &bundle);
  std::optional<BundleTrace> readTrace(const nnsc_trace_desc &desc, int32_t index);
  bool readCuda(const nnsc_cuda_code &cuda, const std::vector<BundleTrace> &traces);

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }
  bool checkDim(const char *name, int64_t built, int64_t model);
  bool checkShape(const std::string &what, int32_t rank, const int64_t *shape, bool allowTokens);

  const schema::Architecture &architecture;
  std::string &error;
};

bool TableReader::checkDim(const char *name, int64_t built, int64_t model) {
  if (built == model)
    return true;
  std::ostringstream message;
  message << "bundle was built for " << name << "=" << built << " but the model has " << name << "="
          << model;
  return fail(message.str());
}

bool TableReader::checkShape(const std::string &what, int32_t rank, const int64_t *shape,
                             bool allowTokens) {
  if (rank < 0 || rank > NNSC_MAX_RANK)
    return fail(what + " has rank " + std::to_string(rank) + " (at most " +
                std::to_string(NNSC_MAX_RANK) + ")");
  for (int32_t d = 0; d < rank; ++d)
    if (shape[d] <= 0 && !(allowTokens && shape[d] == NNSC_DIM_TOKENS))
      return fail(what + " has invalid dimension " + std::to_string(shape[d]));
  return true;
}

bool TableReader::readModel(const nnsc_bundle &bundle) {
  if (bundle.abi_version != NNSC_BUNDLE_ABI_VERSION)
    return fail("bundle ABI version " + std::to_string(bundle.abi_version) +
                " but this runtime reads version " + std::to_string(NNSC_BUNDLE_ABI_VERSION) +
                ": rebuild the bundle from its source with this nnsc");
  if (!bundle.arch || !bundle.source_hash)
    return fail("bundle has no architecture or source hash");
  const schema::ModelConfig &config = architecture.config();
  std::string arch = schema::archKindName(config.arch);
  if (arch != bundle.arch)
    return fail("bundle was built for arch=" + std::string(bundle.arch) +
                " but the model has arch=" + arch);
  if (!checkDim("hidden", bundle.hidden, config.hidden) ||
      !checkDim("intermediate", bundle.intermediate, config.intermediate) ||
      !checkDim("layers", bundle.layers, config.layers) ||
      !checkDim("heads", bundle.heads, config.heads) ||
      !checkDim("kv_heads", bundle.kv_heads, config.kvHeads) ||
      !checkDim("head_dim", bundle.head_dim, config.headDim) ||
      !checkDim("vocab", bundle.vocab, config.vocab))
    return false;
  if (bundle.schema_hash != config.schemaHash()) {
    std::ostringstream message;
    message << "bundle was built for schema_hash=" << bundle.schema_hash
            << " but the model has schema_hash=" << config.schemaHash()
            << " (same dimensions: the site schema of '" << arch << "' changed)";
    return fail(message.str());
  }
  if (bundle.num_traces < 0 || (bundle.num_traces > 0 && !bundle.traces))
    return fail("bundle has a malformed trace table");
  return true;
}

std::optional<BundleTrace> TableReader::readTrace(const nnsc_trace_desc &desc, int32_t index) {
  std::string where = "trace " + std::to_string(index);
  if (!desc.name || desc.num_invokes < 0 || desc.frame_bytes < 0 || desc.num_params < 0 ||
      desc.num_saves < 0 || desc.num_sites < 0 || (desc.num_invokes && !desc.invoke_names) ||
      desc.num_frame_heap_slots < 0 || (desc.num_frame_heap_slots && !desc.frame_heap_slots) ||
      (desc.num_params && !desc.params) || (desc.num_saves && !desc.saves) ||
      (desc.num_sites && !desc.sites)) {
    fail(where + " has a malformed table");
    return std::nullopt;
  }
  where = "trace '" + std::string(desc.name) + "'";
  BundleTrace trace{desc.name, desc.num_invokes, {}, desc.flags, desc.frame_bytes, {}, {}, {}, {}};
  for (int32_t i = 0; i < desc.num_frame_heap_slots; ++i) {
    const int64_t offset = desc.frame_heap_slots[i];
    const int64_t previous = i ? desc.frame_heap_slots[i - 1] : -1;
    if (offset <= previous || offset % 8 || offset > desc.frame_bytes - 8) {
      fail(where + " has frame heap slot " + std::to_string(offset) +
           ", not an ascending, 8-aligned pointer inside its frame of " +
           std::to_string(desc.frame_bytes) + " bytes");
      return std::nullopt;
    }
    trace.frameHeapSlots.push_back(offset);
  }
  for (int32_t i = 0; i < desc.num_invokes; ++i)
    trace.invokeNames.emplace_back(desc.invoke_names[i] ? desc.invoke_names[i] : "");
  for (int32_t i = 0; i < desc.num_params; ++i) {
    const nnsc_param_desc &param = desc.params[i];
    if (!param.name ||
        !checkShape(where + " param " + std::to_string(i), param.rank, param.shape, false))
      return std::nullopt;
    trace.params.push_back({param.name, param.dtype,
                            std::vector<int64_t>(param.shape, param.shape + param.rank),
                            param.default_value});
  }
  for (int32_t i = 0; i < desc.num_saves; ++i) {
    const nnsc_save_desc &save = desc.saves[i];
    if (!save.name ||
        !checkShape(where + " save " + std::to_string(i), save.rank, save.shape, true))
      return std::nullopt;
    trace.saves.push_back({save.name, save.dtype,
                           std::vector<int64_t>(save.shape, save.shape + save.rank),
                           (save.flags & NNSC_SAVE_PER_STEP) != 0});
  }
  const std::vector<schema::Site> &sites = architecture.sites();
  for (int32_t i = 0; i < desc.num_sites; ++i) {
    const nnsc_site_entry &entry = desc.sites[i];
    std::string at = where + " site entry " + std::to_string(i);
    std::string path = entry.site_path ? entry.site_path : "";
    if (entry.site < 0 || entry.site >= static_cast<int32_t>(sites.size())) {
      fail(at + " is site " + std::to_string(entry.site) + " '" + path + "' but the model has " +
           std::to_string(sites.size()) + " sites");
      return std::nullopt;
    }
    if (sites[entry.site].path != path) {
      fail(at + " is site " + std::to_string(entry.site) + " '" + path + "' but the model's site " +
           std::to_string(entry.site) + " is '" + sites[entry.site].path + "'");
      return std::nullopt;
    }
    if (!entry.kernel) {
      fail(at + " ('" + path + "') has no kernel");
      return std::nullopt;
    }
    if (i > 0 && desc.sites[i - 1].site >= entry.site) {
      fail(at + " ('" + path + "') is out of firing order");
      return std::nullopt;
    }
    trace.sites.push_back({entry.site, path, entry.phase, entry.access, entry.kernel});
  }
  return trace;
}

/// The device copies: one per distinct site kernel, each naming the host kernel it copies.
bool TableReader::readCuda(const nnsc_cuda_code &cuda, const std::vector<BundleTrace> &traces) {
  if (!cuda.ptx || !cuda.chip || cuda.num_kernels < 0 || cuda.num_messages < 0 ||
      (cuda.num_kernels && !cuda.kernels) || (cuda.num_messages && !cuda.messages))
    return fail("bundle has a malformed CUDA table");
  for (int32_t i = 0; i < cuda.num_messages; ++i)
    if (!cuda.messages[i])
      return fail("bundle's CUDA message " + std::to_string(i) + " is null");
  std::set<nnsc_site_kernel> copied;
  for (int32_t i = 0; i < cuda.num_kernels; ++i) {
    const nnsc_cuda_kernel &kernel = cuda.kernels[i];
    if (!kernel.entry || kernel.scratch_bytes < 0 || kernel.num_calls < 0)
      return fail("bundle's CUDA kernel " + std::to_string(i) + " is malformed");
    copied.insert(kernel.host);
  }
  for (const BundleTrace &trace : traces)
    for (const BundleSite &site : trace.sites)
      if (!copied.count(site.kernel))
        return fail("trace '" + trace.name + "' site '" + site.path +
                    "' has no CUDA kernel in a bundle built for CUDA");
  return true;
}

} // namespace

std::optional<std::vector<BundleTrace>> checkBundle(const nnsc_bundle &bundle,
                                                    const schema::Architecture &architecture,
                                                    std::string &error) {
  TableReader reader(architecture, error);
  if (!reader.readModel(bundle))
    return std::nullopt;
  std::vector<BundleTrace> traces;
  for (int32_t i = 0; i < bundle.num_traces; ++i) {
    std::optional<BundleTrace> trace = reader.readTrace(bundle.traces[i], i);
    if (!trace)
      return std::nullopt;
    traces.push_back(std::move(*trace));
  }
  if (bundle.cuda && !reader.readCuda(*bundle.cuda, traces))
    return std::nullopt;
  return traces;
}

std::unique_ptr<Bundle> loadBundle(const std::string &path,
                                   const schema::Architecture &architecture, std::string &error) {
  // dlopen searches the library path for names without a slash; a bundle is always a file.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = "cannot load bundle '" + path + "': " + dlerror();
    return nullptr;
  }
  auto query = reinterpret_cast<nnsc_bundle_query_fn>(dlsym(handle, NNSC_BUNDLE_QUERY_SYMBOL));
  const nnsc_bundle *raw = query ? query() : nullptr;
  if (!raw) {
    error = "'" + path + "' is not a bundle: it exports no '" NNSC_BUNDLE_QUERY_SYMBOL "'";
    dlclose(handle);
    return nullptr;
  }
  std::optional<std::vector<BundleTrace>> traces = checkBundle(*raw, architecture, error);
  if (!traces) {
    error = "bundle '" + path + "': " + error;
    dlclose(handle);
    return nullptr;
  }
  return std::make_unique<Bundle>(handle, raw, std::move(*traces));
}

} // namespace nnsc
