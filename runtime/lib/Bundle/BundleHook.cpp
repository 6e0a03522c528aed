//===- BundleHook.cpp - a bundle trace as a site hook -----------*- C++ -*-===//

#include "nnsc/Runtime/Bundle/BundleHook.h"

namespace nnsc {

BundleHook::BundleHook(std::shared_ptr<const Bundle> bundle, const BundleTrace &trace,
                       std::shared_ptr<const CausalLM> model,
                       std::shared_ptr<DeviceKernelLauncher> launcher)
    : bundle(std::move(bundle)), traceDesc(trace), model(std::move(model)),
      launcher(std::move(launcher)) {
  runtime.ctx = this;
  runtime.call_module = &BundleHook::callModule;
  runtime.report_error = &BundleHook::reportError;
  runtime.save = &BundleHook::save;
  runtime.stop = &BundleHook::stop;
  runtime.finish = &BundleHook::finish;
  runtime.skip = &BundleHook::skip;
}

namespace {
/// FNV-1a over `bytes`, continuing from `hash`.
uint64_t mix(uint64_t hash, const void *bytes, size_t size) {
  const auto *p = static_cast<const unsigned char *>(bytes);
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}
} // namespace

void BundleHook::bindSites(HookTable &table, const BundleRequest &request) {
  for (const BundleSite &site : traceDesc.sites)
    table.bind(site.site, shared_from_this());
  uint64_t salt = 0;
  if (traceDesc.writesPrompt()) {
    // Two requests get the same salt exactly when their prompt K/V is computed the same way.
    salt = 0xcbf29ce484222325ull;
    salt = mix(salt, bundle->sourceHash().data(), bundle->sourceHash().size() + 1);
    salt = mix(salt, traceDesc.name.data(), traceDesc.name.size() + 1);
    for (const torch::Tensor &param : request.paramTensors())
      salt = mix(salt, param.data_ptr(), size_t(param.nbytes()));
    salt |= 1; // never the plain requests' 0
  }
  // Generated positions of a trace that writes forward sites may hold intervened K/V; only
  // its prompt blocks are known to be plain (or salted).
  bool writesForward = false;
  for (const BundleSite &site : traceDesc.sites)
    writesForward |=
        site.phase == NNSC_PHASE_FORWARD && (site.access & (NNSC_ACCESS_WRITE | NNSC_ACCESS_SKIP));
  table.setCachePolicy(/*allowPrefixHits=*/!traceDesc.readsPrompt(), salt,
                       /*cacheCompletion=*/!writesForward || salt != 0);
}

void BundleHook::attach(int64_t id, std::shared_ptr<BundleRequest> request, int32_t invoke) {
  requests[id] = {std::move(request), invoke};
}

bool BundleHook::skipped(int site, int64_t request) const {
  auto it = requests.find(request);
  return it != requests.end() && it->second.skippedAt == site;
}

void BundleHook::run(int site, torch::Tensor &value, std::span<const TokenGroup> groups) {
  const BundleSite *entry = traceDesc.findSite(site);
  if (!entry || !entry->kernel)
    return;
  std::vector<nnsc_group> batch;
  std::vector<BundleRequest *> members;
  for (const TokenGroup &g : groups) {
    auto it = requests.find(g.request);
    if (it == requests.end())
      continue;
    Attached &a = it->second;
    a.skippedAt = -1; // until the kernel reports a skip at this firing
    if (!a.request->live(a.invoke))
      continue;
    BundleRequest &r = *a.request;
    batch.push_back(
        {g.tokenStart, g.tokenCount, g.firstPosition, g.step, a.invoke, r.frame(), r.params(), &a});
    members.push_back(&r);
  }
  currentSite = site;
  if (batch.empty())
    return;
  if (!toABIDtype(value.scalar_type()) || value.dim() > NNSC_MAX_RANK) {
    for (BundleRequest *r : members)
      r->fail("site '" + entry->path + "' has a value the bundle ABI cannot describe");
    return;
  }
  // Kernels are compiled for f32 site values; reduced-precision models convert here.
  const bool convert = value.is_floating_point() && value.scalar_type() != torch::kFloat32;
  torch::Tensor site32 = convert ? value.to(torch::kFloat32) : value;
  nnsc_tensor view = viewOf(site32);
  std::string failure;
  if (!site32.is_cpu()) {
    if (!launcher)
      failure = "its value is on " + site32.device().str() + " and no launcher runs it there";
    else
      failure = launcher->run(traceDesc, *entry, view, batch, runtime);
    for (BundleRequest *r : members)
      r->noteDeviceFrame(launcher);
  } else if (int32_t rc = entry->kernel(&view, batch.data(), int32_t(batch.size()), &runtime)) {
    failure = "code " + std::to_string(rc);
  }
  if (!failure.empty()) {
    for (BundleRequest *r : members)
      r->fail("the bundle's kernel for site '" + entry->path + "' failed (" + failure + ")");
    return;
  }
  if (convert && (entry->access & (NNSC_ACCESS_WRITE | NNSC_ACCESS_SKIP)))
    value.copy_(site32);
}

HookVerdict BundleHook::verdict(int64_t request) const {
  auto it = requests.find(request);
  if (it == requests.end())
    return HookVerdict::Continue;
  const BundleRequest &r = *it->second.request;
  if (!r.live(it->second.invoke))
    return HookVerdict::EndNow;
  return r.finished() ? HookVerdict::FinishAfterStep : HookVerdict::Continue;
}

void BundleHook::restart(int64_t request) {
  if (auto it = requests.find(request); it != requests.end())
    it->second.request->restart();
}

void BundleHook::release(int64_t request) {
  auto it = requests.find(request);
  if (it == requests.end())
    return;
  std::shared_ptr<BundleRequest> released = std::move(it->second.request);
  requests.erase(it);
  // Once the request's last sequence (one per invoke) has ended, no kernel reads its frame
  // again: its heap copies go now, not when the caller drops the request with its saves.
  for (const auto &[id, attached] : requests)
    if (attached.request == released)
      return;
  released->releaseFrameHeap();
}

int32_t BundleHook::callModule(void *ctx, int32_t module, const nnsc_tensor *input,
                               nnsc_tensor *output) {
  auto *self = static_cast<BundleHook *>(ctx);
  try {
    // On a device backend the input comes from the host copy of the kernel's sink.
    torch::Tensor in = tensorOf(*input).to(self->model->device(), self->model->dtype());
    torch::Tensor out = self->model->applyModule(module, in);
    torch::Tensor dest = tensorOf(*output);
    if (!dest.sizes().equals(out.sizes())) {
      self->moduleError = "the module's output has shape " + c10::str(out.sizes()) +
                          " but the kernel expected " + c10::str(dest.sizes());
      return 1;
    }
    dest.copy_(out);
    return 0;
  } catch (const c10::Error &e) {
    self->moduleError = e.msg();
  } catch (const std::exception &e) {
    self->moduleError = e.what();
  }
  return 1;
}

void BundleHook::reportError(void *ctx, void *request, const char *message, int64_t arg0,
                             int64_t arg1) {
  auto *self = static_cast<BundleHook *>(ctx);
  std::string text = errorMessage(message, arg0, arg1);
  // call_module has no request to fail: its reason waits for the kernel's report.
  if (!self->moduleError.empty()) {
    text += ": " + self->moduleError;
    self->moduleError.clear();
  }
  requestOf(request).fail(text);
}

void BundleHook::save(void *ctx, void *request, int32_t index, int64_t step,
                      const nnsc_tensor *value) {
  (void)ctx;
  BundleRequest *r = &requestOf(request);
  if (std::optional<std::string> error = r->save(index, step, *value))
    r->fail(*error);
}

void BundleHook::stop(void *, void *request) {
  // The handle is one sequence's: stop() ends that invoke's prompt, not its whole request.
  auto *sequence = static_cast<Attached *>(request);
  sequence->request->stop(sequence->invoke);
}

void BundleHook::finish(void *, void *request) { requestOf(request).finish(); }

void BundleHook::skip(void *ctx, void *request) {
  static_cast<Attached *>(request)->skippedAt = static_cast<BundleHook *>(ctx)->currentSite;
}

} // namespace nnsc
