//===- HookDispatch.h - the bound sites of one step -------------*- C++ -*-===//
//
// Collects the hook tables of a step's requests into a per-site mask and per-site lists of
// (hook, token groups). The model asks bound(site) before materializing anything for a site,
// so an unbound site costs one branch.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_HOOKS_HOOKDISPATCH_H
#define NNSC_RUNTIME_HOOKS_HOOKDISPATCH_H

#include "nnsc/Runtime/Hooks/HookTable.h"

#include <optional>
#include <vector>

namespace nnsc {

/// The hooks to call in one step.
class HookDispatch {
public:
  explicit HookDispatch(int numSites) : mask(size_t(numSites), 0), entries(size_t(numSites)) {}

  /// Adds a request of the step: its rows in the flat batch, and its row among the sampled
  /// rows if it samples this step.
  void add(const HookTable &table, const TokenGroup &rows, std::optional<TokenGroup> sampled);

  bool bound(int site) const { return mask[size_t(site)] != 0; }
  /// Whether any site in [first, last] is bound.
  bool anyBound(int first, int last) const;
  bool empty() const { return !any; }

  /// Calls the hooks of a token-level site with the flat batch value.
  void fire(int site, torch::Tensor &value) const { fireGroups(site, value, false); }
  /// Calls the hooks of a site whose value holds the sampled rows only (lm_head, logits,
  /// samples).
  void fireSampled(int site, torch::Tensor &value) const { fireGroups(site, value, true); }
  /// The rows whose hooks replaced the module whose input site is `site` when it last fired
  /// (SiteHook::skipped).
  std::vector<TokenGroup> skippedRows(int site) const;

private:
  struct Entry {
    SiteHook *hook;
    /// Its place among its request's hooks of the site (0 runs first).
    int rank;
    TokenGroup rows;
    std::optional<TokenGroup> sampled;
  };
  void fireGroups(int site, torch::Tensor &value, bool sampledRows) const;

  std::vector<uint8_t> mask;
  std::vector<std::vector<Entry>> entries;
  int maxRank = 0;
  bool any = false;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_HOOKS_HOOKDISPATCH_H
