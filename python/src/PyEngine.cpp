//===- PyEngine.cpp - the continuous-batching engine for Python -*- C++ -*-===//

#include "PyEngine.h"
#include "TensorConvert.h"

#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Session/EngineOptions.h"
#include "nnsc/Session/Submit.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <stdexcept>

namespace nb = nanobind;

namespace nnsc::python {

PyEngine::PyEngine(PyModel &m, SchedulerConfig config, uint64_t seed)
    : engine(session::startEngine(m.loaded, std::move(config), seed)) {}

std::shared_ptr<PyRequest> PyEngine::add(std::vector<std::vector<int32_t>> prompts,
                                         const SamplingParams &sampling, PyBundle *bundle,
                                         const std::string &traceName,
                                         const std::vector<NamedParam> &params) {
  session::Submission s;
  s.prompts = std::move(prompts);
  s.sampling = {sampling};
  if (!bundle) {
    if (s.prompts.size() != 1)
      throw nnsc::InvalidInput("a request without a program takes one prompt, got " +
                               std::to_string(s.prompts.size()));
    if (!params.empty())
      throw nnsc::InvalidInput("params are given but there is no program to take them");
  } else {
    session::BoundTrace bound;
    bound.program = bundle->program;
    std::string error;
    bound.trace = bound.program->findTrace(traceName, "choose one with trace=NAME", error);
    if (!bound.trace)
      throw nnsc::InvalidInput(error);
    std::optional<std::vector<torch::Tensor>> values = bindParamValues(
        *bound.trace, params,
        [](const std::string &name) { return "give it with params={'" + name + "': VALUE}"; },
        error);
    if (!values)
      throw nnsc::InvalidInput(error);
    bound.params = std::move(*values);
    s.program = std::move(bound);
  }
  auto request = std::make_shared<PyRequest>();
  request->ids = session::submit(*engine, s);
  if (bundle)
    request->bundle = bundle->program->sharedBundle();
  request->state = std::move(s.state);
  return request;
}

std::pair<std::vector<RequestResult>, int64_t> PyEngine::run(double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<RequestResult> done;
  int64_t sampled = 0;
  while (!engine->isFinished()) {
    sampled += int64_t(engine->step().size());
    for (RequestResult &r : engine->takeFinished())
      done.push_back(std::move(r));
    if (std::chrono::duration<double>(Clock::now() - start).count() >= seconds)
      break;
  }
  for (RequestResult &r : engine->takeFinished()) // aborted between calls
    done.push_back(std::move(r));
  return {std::move(done), sampled};
}

namespace {

SamplingParams samplingParams(float temperature, int64_t topK, float topP,
                              std::optional<uint64_t> seed, int64_t maxTokens, bool ignoreEos,
                              std::vector<int32_t> stopTokenIds, bool batchInvariant) {
  SamplingParams p;
  p.temperature = temperature;
  p.topK = topK;
  p.topP = topP;
  p.seed = seed;
  p.maxTokens = maxTokens;
  p.ignoreEos = ignoreEos;
  p.stopTokenIds = std::move(stopTokenIds);
  p.batchInvariant = batchInvariant;
  p.validate();
  return p;
}

} // namespace

void bindEngine(nb::module_ &m) {
  m.def(
      "defaults",
      []() {
        const SamplingParams sampling;
        const SchedulerConfig scheduler;
        nb::dict s, e;
        s["temperature"] = sampling.temperature;
        s["top_k"] = sampling.topK;
        s["top_p"] = sampling.topP;
        s["max_tokens"] = sampling.maxTokens;
        s["ignore_eos"] = sampling.ignoreEos;
        s["batch_invariant"] = sampling.batchInvariant;
        e["max_num_seqs"] = scheduler.maxNumSeqs;
        e["max_num_batched_tokens"] = scheduler.maxNumBatchedTokens;
        e["max_model_len"] = scheduler.maxModelLen;
        e["num_blocks"] = scheduler.numBlocks;
        e["block_size"] = scheduler.blockSize;
        e["enable_prefix_caching"] = scheduler.enablePrefixCaching;
        nb::dict out;
        out["sampling"] = s;
        out["scheduler"] = e;
        return out;
      },
      "The C++ defaults every front door shares: {'sampling': SamplingParams' fields, "
      "'scheduler': SchedulerConfig's}.");
  nb::class_<PyRequest>(m, "Request")
      .def_ro("ids", &PyRequest::ids)
      .def_prop_ro("error",
                   [](const PyRequest &r) -> std::optional<std::string> {
                     return r.state ? r.state->error() : std::nullopt;
                   })
      .def("saves", [](std::shared_ptr<PyRequest> r) {
        nb::dict out;
        if (!r->state)
          return out;
        for (const auto &[name, tensor] : r->state->saves())
          out[nb::str(name.c_str())] = toTorch(tensor, r);
        return out;
      });

  nb::class_<PyEngine>(m, "Engine")
      .def(
          "__init__",
          [](PyEngine *self, PyModel &model, int64_t maxNumSeqs, int64_t maxNumBatchedTokens,
             int64_t maxModelLen, int64_t numBlocks, int64_t blockSize, bool prefixCaching,
             uint64_t seed) {
            SchedulerConfig c;
            c.maxNumSeqs = maxNumSeqs;
            c.maxNumBatchedTokens = maxNumBatchedTokens;
            c.maxModelLen = maxModelLen;
            c.numBlocks = numBlocks;
            c.blockSize = blockSize;
            c.enablePrefixCaching = prefixCaching;
            new (self) PyEngine(model, c, seed);
          },
          nb::arg("model"), nb::arg("max_num_seqs"), nb::arg("max_num_batched_tokens"),
          nb::arg("max_model_len"), nb::arg("num_blocks"), nb::arg("block_size"),
          nb::arg("enable_prefix_caching"), nb::arg("seed"), nb::keep_alive<1, 2>())
      .def(
          "add",
          [](PyEngine &e, std::vector<std::vector<int32_t>> prompts, PyBundle *bundle,
             const std::string &trace, const std::vector<std::pair<std::string, InArray>> &params,
             float temperature, int64_t topK, float topP, std::optional<uint64_t> seed,
             int64_t maxTokens, bool ignoreEos, std::vector<int32_t> stopTokenIds,
             bool batchInvariant) {
            std::vector<NamedParam> named;
            for (const auto &[name, value] : params)
              named.emplace_back(name, toTensor(value));
            SamplingParams sampling =
                samplingParams(temperature, topK, topP, seed, maxTokens, ignoreEos,
                               std::move(stopTokenIds), batchInvariant);
            return e.add(std::move(prompts), sampling, bundle, trace, named);
          },
          nb::arg("prompts"), nb::arg("bundle").none(), nb::arg("trace"), nb::arg("params"),
          nb::arg("temperature"), nb::arg("top_k"), nb::arg("top_p"), nb::arg("seed").none(),
          nb::arg("max_tokens"), nb::arg("ignore_eos"), nb::arg("stop_token_ids"),
          nb::arg("batch_invariant"))
      .def(
          "run",
          [](PyEngine &e, double seconds) {
            std::pair<std::vector<RequestResult>, int64_t> r;
            {
              nb::gil_scoped_release release;
              r = e.run(seconds);
            }
            nb::list finished;
            for (const RequestResult &x : r.first)
              finished.append(nb::make_tuple(x.request, x.promptTokens, x.completionTokens,
                                             finishReasonName(x.finishReason)));
            return nb::make_tuple(finished, r.second);
          },
          nb::arg("seconds"),
          "Runs engine steps without the GIL for up to `seconds` (or until every request is "
          "done); returns ([(id, prompt_ids, completion_ids, finish_reason)], tokens_sampled).")
      .def("abort", &PyEngine::abort, nb::arg("id"))
      .def_prop_ro("finished", &PyEngine::finished)
      .def_prop_ro("max_model_len", [](const PyEngine &e) { return e.config().maxModelLen; });
}

} // namespace nnsc::python
