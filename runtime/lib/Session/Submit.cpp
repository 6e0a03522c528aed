//===- Submit.cpp - one request into the engine, bound to its programs ----===//

#include "nnsc/Session/Submit.h"

#include "nnsc/Runtime/Support/Error.h"

namespace nnsc::session {

std::vector<int64_t> submit(LLMEngine &engine, Submission &s) {
  const size_t n = s.prompts.size();
  if (n == 0)
    throw InvalidInput("a request needs a prompt");
  if (s.sampling.size() != 1 && s.sampling.size() != n)
    throw InvalidInput("a request gives one set of sampling params, or one per prompt");
  if (s.program) {
    if (std::string why = checkInvokes(*s.program->trace, n); !why.empty())
      throw InvalidInput(why);
    if (!s.state)
      s.state = s.program->newState();
  }
  if (s.edit && s.edits.empty())
    for (size_t k = 0; k < n; ++k)
      s.edits.push_back(s.edit->newState());

  std::vector<std::shared_ptr<HookTable>> tables(n);
  if (const BoundTrace *bound = s.program ? &*s.program : s.edit ? &*s.edit : nullptr)
    for (size_t k = 0; k < n; ++k) {
      tables[k] = std::make_shared<HookTable>(bound->program->architecture());
      if (s.edit)
        s.edit->hook()->bindSites(*tables[k], *s.edits[k]);
      if (s.program)
        s.program->hook()->bindSites(*tables[k], *s.state);
    }
  if (s.bindOwn)
    for (size_t k = 0; k < n; ++k)
      s.bindOwn(tables[k], k);
  std::vector<SamplingParams> each = s.sampling;
  each.resize(n, s.sampling.front());

  std::vector<int64_t> ids;
  if (s.program && n > 1) {
    ids = engine.addGang(std::move(s.prompts), each, tables);
  } else {
    try {
      for (size_t k = 0; k < n; ++k)
        ids.push_back(engine.addRequest(std::move(s.prompts[k]), each[k], tables[k]));
    } catch (...) {
      for (int64_t id : ids)
        engine.abortRequest(id);
      throw;
    }
  }
  for (size_t k = 0; k < ids.size(); ++k) {
    if (s.edit)
      s.edit->hook()->attach(ids[k], s.edits[k]);
    if (s.program)
      s.program->hook()->attach(ids[k], s.state, int32_t(k));
  }
  return ids;
}

} // namespace nnsc::session
