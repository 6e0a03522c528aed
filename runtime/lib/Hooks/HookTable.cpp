//===- HookTable.cpp - one request's bound sites ----------------*- C++ -*-===//

#include "nnsc/Runtime/Hooks/HookTable.h"

#include "nnsc/Runtime/Support/Error.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace nnsc {

namespace {
class FunctionHook : public SiteHook {
public:
  explicit FunctionHook(SiteFn fn) : fn(std::move(fn)) {}
  void run(int site, torch::Tensor &value, std::span<const TokenGroup> groups) override {
    fn(site, value, groups);
  }

private:
  SiteFn fn;
};
} // namespace

std::shared_ptr<SiteHook> makeSiteHook(SiteFn fn) {
  return std::make_shared<FunctionHook>(std::move(fn));
}

static uint64_t nextSalt() {
  static std::atomic<uint64_t> counter{0};
  // Odd multiples of a large constant: never 0 (the salt of requests without hooks).
  return (++counter) * 0x9e3779b97f4a7c15ull | 1;
}

HookTable::HookTable(const schema::Architecture &arch)
    : arch(arch), hooks(arch.sites().size()), salt(nextSalt()) {}

void HookTable::bind(const std::string &path, std::shared_ptr<SiteHook> hook) {
  int site = arch.findSite(path);
  if (site < 0)
    throw InvalidInput("no site '" + path + "' in this model");
  bind(site, std::move(hook));
}

void HookTable::bind(int site, std::shared_ptr<SiteHook> hook) {
  if (site < 0 || site >= numSites())
    throw InvalidInput("site index " + std::to_string(site) + " out of range");
  if (arch.sites()[size_t(site)].phase == schema::Phase::Forward)
    forward = true;
  if (!hook)
    return;
  if (std::find(distinct.begin(), distinct.end(), hook) == distinct.end())
    distinct.push_back(hook);
  std::vector<std::shared_ptr<SiteHook>> &list = hooks[size_t(site)];
  if (std::find(list.begin(), list.end(), hook) == list.end())
    list.push_back(std::move(hook));
}

void HookTable::setCachePolicy(bool allowPrefixHits, uint64_t cacheSalt, bool cacheCompletion) {
  if (!policy) {
    policy = CachePolicy{allowPrefixHits, cacheSalt, cacheCompletion};
    return;
  }
  policy->prefixHits &= allowPrefixHits;
  policy->completion &= cacheCompletion;
  if (cacheSalt)
    policy->salt = policy->salt ? (policy->salt * 0x100000001b3ull ^ cacheSalt) | 1 : cacheSalt;
}

HookVerdict HookTable::verdict(int64_t request) const {
  HookVerdict strongest = HookVerdict::Continue;
  for (const std::shared_ptr<SiteHook> &hook : distinct)
    strongest = std::max(strongest, hook->verdict(request));
  return strongest;
}

bool HookTable::restartsOnPreemption() const {
  return std::any_of(distinct.begin(), distinct.end(), [](const std::shared_ptr<SiteHook> &hook) {
    return hook->restartsOnPreemption();
  });
}

void HookTable::restart(int64_t request) const {
  for (const std::shared_ptr<SiteHook> &hook : distinct)
    hook->restart(request);
}

void HookTable::release(int64_t request) const {
  for (const std::shared_ptr<SiteHook> &hook : distinct)
    hook->release(request);
}

} // namespace nnsc
