//===- HookTable.h - one request's bound sites ------------------*- C++ -*-===//
//
// The sites a request binds and the hooks each one calls, in binding order: a persistent edit
// is bound before the request's own program, so at a site both touch the edit runs first and
// the program sees the edited value. A request without a table (or with an empty one) costs
// nothing beyond the per-site "is anything bound" test of the batch.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_HOOKS_HOOKTABLE_H
#define NNSC_RUNTIME_HOOKS_HOOKTABLE_H

#include "nnsc/Runtime/Hooks/SiteHook.h"
#include "nnsc/Schema/Architecture.h"

#include <optional>
#include <vector>

namespace nnsc {

/// Site index -> hooks, for one request.
class HookTable {
public:
  explicit HookTable(const schema::Architecture &arch);

  /// Binds `hook` to the site at `path` ("model.layers.3.mlp.output", "logits"), after the
  /// hooks already bound there (binding the same hook twice binds it once); throws
  /// InvalidInput for an unknown site.
  void bind(const std::string &path, std::shared_ptr<SiteHook> hook);
  void bind(int site, std::shared_ptr<SiteHook> hook);

  /// The hooks of `site`, in the order they run.
  const std::vector<std::shared_ptr<SiteHook>> &at(int site) const { return hooks[site]; }
  int numSites() const { return int(hooks.size()); }
  /// Whether any forward-pass site is bound.
  bool bindsForward() const { return forward; }
  /// Sets the prefix-cache policy from what the binder knows of its hooks: whether the
  /// request may skip prompt positions found in the cache, the salt its K/V is cached under
  /// (0: shared with plain requests), and whether blocks holding generated tokens may be
  /// cached. A second binder (an edit and a program) narrows the first's policy: hits and
  /// completion caching only if both allow them, and a salt of both salts.
  void setCachePolicy(bool allowPrefixHits, uint64_t cacheSalt, bool cacheCompletion);
  /// Without a policy set, a table binding forward sites computes its whole prompt (its
  /// hooks may need every prompt row) under a salt unique to the table (K/V computed under
  /// its hooks is never reused by others); other tables behave as plain requests.
  bool allowsPrefixHits() const { return policy ? policy->prefixHits : !forward; }
  uint64_t cacheSalt() const { return policy ? policy->salt : forward ? salt : 0; }
  bool cachesCompletion() const { return policy ? policy->completion : true; }
  /// The strongest verdict of the table's hooks on `request` after a step (EndNow over
  /// FinishAfterStep over Continue).
  HookVerdict verdict(int64_t request) const;
  /// Whether one of the table's hooks restarts its requests on preemption.
  bool restartsOnPreemption() const;
  /// Tells every hook of the table that `request` restarts from its prompt.
  void restart(int64_t request) const;
  /// Tells every hook of the table that `request` has ended (SiteHook::release).
  void release(int64_t request) const;

private:
  const schema::Architecture &arch;
  std::vector<std::vector<std::shared_ptr<SiteHook>>> hooks;
  /// Each bound hook once, for verdict().
  std::vector<std::shared_ptr<SiteHook>> distinct;
  bool forward = false;
  uint64_t salt;
  struct CachePolicy {
    bool prefixHits;
    uint64_t salt;
    bool completion;
  };
  /// Set by setCachePolicy.
  std::optional<CachePolicy> policy;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_HOOKS_HOOKTABLE_H
