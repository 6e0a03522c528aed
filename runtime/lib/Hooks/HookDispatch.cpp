//===- HookDispatch.cpp - the bound sites of one step -----------*- C++ -*-===//

#include "nnsc/Runtime/Hooks/HookDispatch.h"

#include "nnsc/Runtime/Models/PhaseProfile.h"

namespace nnsc {

void HookDispatch::add(const HookTable &table, const TokenGroup &rows,
                       std::optional<TokenGroup> sampled) {
  for (int site = 0; site < table.numSites(); ++site) {
    const std::vector<std::shared_ptr<SiteHook>> &hooks = table.at(site);
    for (size_t rank = 0; rank < hooks.size(); ++rank) {
      mask[size_t(site)] = 1;
      entries[size_t(site)].push_back({hooks[rank].get(), int(rank), rows, sampled});
      maxRank = std::max(maxRank, int(rank));
      any = true;
    }
  }
}

bool HookDispatch::anyBound(int first, int last) const {
  for (int site = first; site <= last; ++site)
    if (mask[size_t(site)])
      return true;
  return false;
}

std::vector<TokenGroup> HookDispatch::skippedRows(int site) const {
  std::vector<TokenGroup> rows;
  for (const Entry &e : entries[size_t(site)])
    if (e.hook->skipped(site, e.rows.request))
      rows.push_back(e.rows);
  return rows;
}

void HookDispatch::fireGroups(int site, torch::Tensor &value, bool sampledRows) const {
  ScopedPhase phase(Phase::Hooks);
  // One call per distinct hook, with the groups of all its requests, in batch order; the
  // first hooks of the requests' tables (their edits) before the second (their programs).
  const std::vector<Entry> &list = entries[size_t(site)];
  std::vector<bool> done(list.size(), false);
  std::vector<TokenGroup> groups;
  for (int rank = 0; rank <= maxRank; ++rank)
    for (size_t i = 0; i < list.size(); ++i) {
      if (done[i] || list[i].rank != rank)
        continue;
      groups.clear();
      for (size_t j = i; j < list.size(); ++j) {
        if (done[j] || list[j].hook != list[i].hook || list[j].rank != rank)
          continue;
        done[j] = true;
        if (!sampledRows)
          groups.push_back(list[j].rows);
        else if (list[j].sampled)
          groups.push_back(*list[j].sampled);
      }
      if (!groups.empty())
        list[i].hook->run(site, value, groups);
    }
}

} // namespace nnsc
