//===- ProgramRunner.cpp - replays a program case through a bundle --------===//

#include "ProgramRunner.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace nnsc::difftest {

namespace {

/// Kernels and the reference compute in a different order (fused reductions, exp/log
/// approximations), so floats agree to a relative 1e-3; integers and bools exactly.
bool agree(const torch::Tensor &got, const torch::Tensor &want) {
  if (!got.sizes().equals(want.sizes()))
    return false;
  if (want.is_floating_point())
    return got.is_floating_point() &&
           torch::allclose(got.to(torch::kFloat32), want, 1e-3, 1e-3, /*equal_nan=*/true);
  return !got.is_floating_point() && torch::equal(got.to(want.scalar_type()), want);
}

std::string describe(const torch::Tensor &t) {
  std::ostringstream os;
  os << t.scalar_type() << t.sizes();
  torch::Tensor flat = t.flatten();
  os << " [";
  for (int64_t i = 0; i < std::min<int64_t>(flat.numel(), 4); ++i)
    os << (i ? ", " : "") << flat[i].item<double>();
  os << (flat.numel() > 4 ? ", ...]" : "]");
  return os.str();
}

/// Where a site tensor differs: the first differing row, and the group it belongs to.
std::string firstDifference(const torch::Tensor &got, const torch::Tensor &want,
                            const CaseCall &call) {
  if (!got.sizes().equals(want.sizes()))
    return "shape " + describe(got) + " vs " + describe(want);
  for (int64_t row = 0; row < want.size(0); ++row) {
    if (agree(got[row], want[row]))
      continue;
    std::string owner = "a padding row";
    for (const CaseGroup &g : call.groups)
      if (row >= g.row && row < g.row + g.rows)
        owner = "request " + std::to_string(g.request) + " (step " + std::to_string(g.step) +
                ", invoke " + std::to_string(g.invoke) + ")";
    return "row " + std::to_string(row) + " of " + owner + ": got " + describe(got[row]) +
           ", want " + describe(want[row]);
  }
  return "no row differs";
}

} // namespace

std::vector<torch::Tensor> ProgramRunner::bindParams(const BundleTrace &trace,
                                                     const CaseRequest &request) {
  std::vector<torch::Tensor> out;
  for (const BundleParam &p : trace.params) {
    auto it = request.params.find(p.name);
    if (it != request.params.end()) {
      out.push_back(it->second);
      continue;
    }
    if (!p.defaultValue) {
      problems.push_back("request " + std::to_string(request.id) + ": no value for param '" +
                         p.name + "', which has no default");
      out.push_back(torch::zeros(p.shape, toTorchDtype(p.dtype)));
      continue;
    }
    torch::Tensor value = torch::empty(p.shape, toTorchDtype(p.dtype));
    std::memcpy(value.data_ptr(), p.defaultValue, size_t(value.nbytes()));
    out.push_back(value);
  }
  return out;
}

std::vector<std::string> ProgramRunner::run(const ProgramCase &program) {
  const BundleTrace *trace = bundle.findTrace(program.trace);
  if (!trace)
    return {"the bundle has no trace '" + program.trace + "'"};
  for (const CaseRequest &r : program.requests) {
    auto request = std::make_unique<Request>();
    request->id = r.id;
    request->state = std::make_unique<BundleRequest>(*trace, bindParams(*trace, r));
    requests.push_back(std::move(request));
  }
  for (size_t tick = 0; tick < program.ticks.size(); ++tick) {
    // The engine fires sites in the architecture's order; the trace lists its sites so.
    std::vector<const CaseCall *> calls;
    for (const CaseCall &call : program.ticks[tick])
      calls.push_back(&call);
    auto rank = [&](const CaseCall *c) {
      for (size_t i = 0; i < trace->sites.size(); ++i)
        if (trace->sites[i].path == c->site)
          return int64_t(i);
      return int64_t(trace->sites.size());
    };
    std::stable_sort(calls.begin(), calls.end(),
                     [&](const CaseCall *a, const CaseCall *b) { return rank(a) < rank(b); });
    for (const BundleSite &site : trace->sites)
      if (site.kernel &&
          std::none_of(calls.begin(), calls.end(),
                       [&](const CaseCall *c) { return c->site == site.path; }) &&
          !program.ticks[tick].empty())
        problems.push_back("tick " + std::to_string(tick) + ": the trace has a kernel for '" +
                           site.path + "' but the case gives that site no value");
    for (const CaseCall *call : calls)
      runCall(*trace, *call, "tick " + std::to_string(tick) + " site '" + call->site + "'");
  }
  compareResults(program);
  return problems;
}

void ProgramRunner::runCall(const BundleTrace &trace, const CaseCall &call,
                            const std::string &where) {
  const BundleSite *entry = nullptr;
  for (const BundleSite &site : trace.sites)
    if (site.path == call.site)
      entry = &site;
  torch::Tensor value = call.value.clone();
  if (entry && entry->kernel) {
    std::vector<nnsc_group> groups;
    for (const CaseGroup &g : call.groups) {
      auto it = std::find_if(requests.begin(), requests.end(),
                             [&](const auto &r) { return r->id == g.request; });
      if (it == requests.end()) {
        problems.push_back(where + ": group of unknown request " + std::to_string(g.request));
        return;
      }
      Request &r = **it;
      // As BundleHook: a failed request is out; a stopped one is out of this forward pass.
      if (r.state->error() ||
          (entry->phase == NNSC_PHASE_FORWARD && r.stoppedStep && *r.stoppedStep == g.step))
        continue;
      r.step = g.step;
      groups.push_back(
          {g.row, g.rows, g.position, g.step, g.invoke, r.state->frame(), r.state->params(), &r});
    }
    if (!groups.empty()) {
      nnsc_runtime runtime{this,
                           &ProgramRunner::callModule,
                           &ProgramRunner::reportError,
                           &ProgramRunner::save,
                           &ProgramRunner::stop,
                           &ProgramRunner::finish,
                           &ProgramRunner::skip};
      nnsc_tensor view = viewOf(value);
      if (int32_t rc = entry->kernel(&view, groups.data(), int32_t(groups.size()), &runtime))
        problems.push_back(where + ": the kernel returned " + std::to_string(rc));
    }
  }
  if (!agree(value, call.want))
    problems.push_back(where + ": " + firstDifference(value, call.want, call));
}

void ProgramRunner::compareResults(const ProgramCase &program) {
  if (failedModuleCalls)
    problems.push_back(std::to_string(failedModuleCalls) + " module calls failed");
  for (const auto &r : requests) {
    const std::optional<std::string> &error = r->state->error();
    auto expected = program.errors.find(r->id);
    if (expected == program.errors.end()) {
      if (error)
        problems.push_back("request " + std::to_string(r->id) + " failed: " + *error);
    } else if (!error) {
      problems.push_back("request " + std::to_string(r->id) + " did not fail (expected '" +
                         expected->second + "')");
    } else if (error->find(expected->second) == std::string::npos) {
      problems.push_back("request " + std::to_string(r->id) + " failed with '" + *error +
                         "', expected '" + expected->second + "'");
    }
    for (const auto &[name, value] : r->state->saves()) {
      auto want = program.saves.find({r->id, name});
      if (want == program.saves.end())
        problems.push_back("request " + std::to_string(r->id) + " saved '" + name +
                           "', which the reference does not");
      else if (!agree(value, want->second))
        problems.push_back("request " + std::to_string(r->id) + " save '" + name + "': got " +
                           describe(value) + ", want " + describe(want->second));
    }
  }
  for (const auto &[key, value] : program.saves) {
    auto it = std::find_if(requests.begin(), requests.end(),
                           [&](const auto &r) { return r->id == key.first; });
    if (it == requests.end() || !(*it)->state->saves().count(key.second))
      problems.push_back("request " + std::to_string(key.first) + " did not save '" + key.second +
                         "'");
  }
  auto comparePairs = [&](const char *what, const std::set<std::pair<int64_t, int64_t>> &got,
                          const std::set<std::pair<int64_t, int64_t>> &want) {
    for (const auto &[request, step] : got)
      if (!want.count({request, step}))
        problems.push_back(std::string(what) + "() called for request " + std::to_string(request) +
                           " at step " + std::to_string(step) + ", which the reference does not");
    for (const auto &[request, step] : want)
      if (!got.count({request, step}))
        problems.push_back(std::string(what) + "() not called for request " +
                           std::to_string(request) + " at step " + std::to_string(step));
  };
  comparePairs("stop", stops, program.stops);
  comparePairs("finish", finishes, program.finishes);
}

int32_t ProgramRunner::callModule(void *ctx, int32_t module, const nnsc_tensor *input,
                                  nnsc_tensor *output) {
  auto *self = static_cast<ProgramRunner *>(ctx);
  try {
    torch::Tensor out = self->model.applyModule(module, tensorOf(*input));
    torch::Tensor dest = tensorOf(*output);
    if (dest.sizes().equals(out.sizes())) {
      dest.copy_(out);
      return 0;
    }
  } catch (const std::exception &) {
  }
  ++self->failedModuleCalls;
  return 1;
}

void ProgramRunner::reportError(void *, void *request, const char *message, int64_t arg0,
                                int64_t arg1) {
  static_cast<Request *>(request)->state->fail(errorMessage(message, arg0, arg1));
}

void ProgramRunner::save(void *, void *request, int32_t index, int64_t step,
                         const nnsc_tensor *value) {
  auto *r = static_cast<Request *>(request);
  if (std::optional<std::string> error = r->state->save(index, step, *value))
    r->state->fail(*error);
}

void ProgramRunner::stop(void *ctx, void *request) {
  auto *r = static_cast<Request *>(request);
  r->stoppedStep = r->step;
  static_cast<ProgramRunner *>(ctx)->stops.insert({r->id, r->step});
}

void ProgramRunner::finish(void *ctx, void *request) {
  auto *r = static_cast<Request *>(request);
  r->state->finish();
  static_cast<ProgramRunner *>(ctx)->finishes.insert({r->id, r->step});
}

} // namespace nnsc::difftest
