//===- BundleHook.cpp - a bundle trace as a site hook -----------*- C++ -*-===//

#include "nnsc/Runtime/Bundle/BundleHook.h"

namespace nnsc {

BundleHook::BundleHook(std::shared_ptr<const Bundle> bundle, const BundleTrace &trace,
                       std::shared_ptr<const CausalLM> model)
    : bundle(std::move(bundle)), traceDesc(trace), model(std::move(model)) {
  runtime.ctx = this;
  runtime.call_module = &BundleHook::callModule;
  runtime.report_error = &BundleHook::reportError;
  runtime.save = &BundleHook::save;
  runtime.stop = &BundleHook::stop;
  runtime.finish = &BundleHook::finish;
}

void BundleHook::bindSites(HookTable &table) {
  for (const BundleSite &site : traceDesc.sites)
    table.bind(site.site, shared_from_this());
}

void BundleHook::attach(int64_t id, std::shared_ptr<BundleRequest> request) {
  requests[id] = std::move(request);
}

void BundleHook::run(int site, torch::Tensor &value, std::span<const TokenGroup> groups) {
  const BundleSite *entry = traceDesc.findSite(site);
  if (!entry || !entry->kernel)
    return;
  std::vector<nnsc_group> batch;
  std::vector<BundleRequest *> members;
  current.clear();
  for (const TokenGroup &g : groups) {
    auto it = requests.find(g.request);
    if (it == requests.end())
      continue;
    BundleRequest &r = *it->second;
    if (r.error() || (entry->phase == NNSC_PHASE_FORWARD && r.stopped(g.step, g.firstPosition)))
      continue;
    current[&r] = {g.step, g.firstPosition};
    batch.push_back({g.tokenStart, g.tokenCount, g.firstPosition, g.step, r.invoke(), r.frame(),
                     r.params(), &r});
    members.push_back(&r);
  }
  if (batch.empty())
    return;
  if (!toABIDtype(value.scalar_type()) || value.dim() > NNSC_MAX_RANK) {
    for (BundleRequest *r : members)
      r->fail("site '" + entry->path + "' has a value the bundle ABI cannot describe");
    return;
  }
  nnsc_tensor view = viewOf(value);
  int32_t rc = entry->kernel(&view, batch.data(), int32_t(batch.size()), &runtime);
  if (rc != 0)
    for (BundleRequest *r : members)
      r->fail("the bundle's kernel for site '" + entry->path + "' failed (code " +
              std::to_string(rc) + ")");
}

int32_t BundleHook::callModule(void *ctx, int32_t module, const nnsc_tensor *input,
                               nnsc_tensor *output) {
  auto *self = static_cast<BundleHook *>(ctx);
  try {
    torch::Tensor in = tensorOf(*input).to(self->model->dtype());
    torch::Tensor out = self->model->applyModule(module, in);
    torch::Tensor dest = tensorOf(*output);
    if (!dest.sizes().equals(out.sizes()))
      return 1;
    dest.copy_(out);
    return 0;
  } catch (const std::exception &) {
    return 1;
  }
}

void BundleHook::reportError(void *, void *request, const char *message) {
  static_cast<BundleRequest *>(request)->fail(message ? message : "error");
}

void BundleHook::save(void *ctx, void *request, int32_t index, int64_t step,
                      const nnsc_tensor *value) {
  (void)ctx;
  auto *r = static_cast<BundleRequest *>(request);
  if (value->rank < 0 || value->rank > NNSC_MAX_RANK) {
    r->fail("a save has rank " + std::to_string(value->rank));
    return;
  }
  if (std::optional<std::string> error = r->save(index, step, tensorOf(*value)))
    r->fail(*error);
}

void BundleHook::stop(void *ctx, void *request) {
  auto *self = static_cast<BundleHook *>(ctx);
  auto *r = static_cast<BundleRequest *>(request);
  auto it = self->current.find(r);
  if (it != self->current.end())
    r->stop(it->second.first, it->second.second);
}

void BundleHook::finish(void *, void *request) { static_cast<BundleRequest *>(request)->finish(); }

} // namespace nnsc
