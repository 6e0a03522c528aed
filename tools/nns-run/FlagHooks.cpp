//===- FlagHooks.cpp - nns-run's own site hooks -----------------*- C++ -*-===//

#include "FlagHooks.h"

#include "nnsc/Runtime/Models/SafetensorsWriter.h"

using namespace nnsc;

namespace nnsrun {

FlagHooks::FlagHooks(const Options &o, const schema::Architecture &arch, size_t numPrompts)
    : arch(arch), dumpLogits(!o.dumpLogits.empty()), logits(numPrompts) {
  auto siteIndex = [&](const std::string &path) {
    int site = arch.findSite(path);
    if (site < 0)
      fail("no site '" + path + "' in this model (see nnsc --print-sites)");
    return site;
  };
  for (const auto &[path, factor] : o.scale)
    add(siteIndex(path),
        makeSiteHook([factor](int, torch::Tensor &value, std::span<const TokenGroup> groups) {
          for (const TokenGroup &g : groups)
            value.narrow(0, g.tokenStart, g.tokenCount).mul_(factor);
        }));
  std::vector<int> captured;
  for (const std::string &path : o.capture) {
    if (path != "all") {
      captured.push_back(siteIndex(path));
      continue;
    }
    // Module inputs and outputs; attention patterns only by name (they take the layer off
    // the fused attention kernel, and their rows are as wide as the context).
    for (const schema::Site &site : arch.sites())
      if (site.phase == schema::Phase::Forward && site.kind != schema::SiteKind::Pattern)
        captured.push_back(site.order);
  }
  for (int site : captured)
    add(site,
        makeSiteHook([this](int index, torch::Tensor &value, std::span<const TokenGroup> groups) {
          const std::string &path = this->arch.sites()[size_t(index)].path;
          firstFiring.emplace(path, fired++);
          for (const TokenGroup &g : groups)
            capturedRows[path + "." + std::to_string(g.request)].push_back(
                value.narrow(0, g.tokenStart, g.tokenCount)
                    .to(value.is_floating_point() ? torch::kFloat32 : value.scalar_type(), false,
                        true));
        }));
}

void FlagHooks::add(int site, std::shared_ptr<SiteHook> hook) {
  std::shared_ptr<SiteHook> &slot = siteHooks[site];
  if (!slot) {
    slot = std::move(hook);
    return;
  }
  slot = makeSiteHook([first = slot, second = std::move(hook)](int index, torch::Tensor &value,
                                                               std::span<const TokenGroup> groups) {
    first->run(index, value, groups);
    second->run(index, value, groups);
  });
}

void FlagHooks::bind(std::shared_ptr<HookTable> &table, size_t prompt) {
  if (!table && (!siteHooks.empty() || dumpLogits))
    table = std::make_shared<HookTable>(arch);
  for (const auto &[site, hook] : siteHooks)
    table->bind(site, hook);
  if (dumpLogits)
    table->bind("logits", makeSiteHook([this, prompt](int, torch::Tensor &value,
                                                      std::span<const TokenGroup> groups) {
                  for (const TokenGroup &g : groups)
                    logits[prompt].push_back(value.narrow(0, g.tokenStart, g.tokenCount).clone());
                }));
}

void FlagHooks::write(const Options &o) const {
  if (dumpLogits) {
    std::map<std::string, torch::Tensor> tensors;
    for (size_t i = 0; i < logits.size(); ++i)
      if (!logits[i].empty())
        tensors["logits." + std::to_string(i)] = torch::cat(logits[i]);
    writeSafetensors(o.dumpLogits, tensors);
  }
  if (!o.save.empty()) {
    std::map<std::string, torch::Tensor> tensors;
    for (const auto &[name, parts] : capturedRows)
      tensors[name] = torch::cat(parts);
    for (const auto &[path, order] : firstFiring)
      tensors[path + ".order"] = torch::tensor(order, torch::kInt64);
    writeSafetensors(o.save, tensors);
  }
}

} // namespace nnsrun
