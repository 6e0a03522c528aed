//===- PreparedRequest.cpp - a request ready for the engine ---------------===//

#include "PreparedRequest.h"

#include "nnsc/Runtime/Bundle/BundleParams.h"
#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Server/TensorJson.h"
#include "nnsc/Session/Submit.h"

namespace nnsc::server {

namespace {

using json = nlohmann::json;

/// Finds or compiles the request's program and picks its trace.
bool resolveProgram(OpenAIServer &server, const InterventionSpec &spec, PreparedRequest &p,
                    ApiError &error) {
  const ServerOptions &opts = server.options();
  std::string message;
  if (spec.bundle) {
    p.bound.program = server.programs().bundle(*spec.bundle);
    if (!p.bound.program) {
      error = invalidField("nns.bundle", "no bundle '" + *spec.bundle +
                                             "' is registered (registered: " +
                                             server.programs().bundleNames() + ")");
      error.code = "unknown_bundle";
      return false;
    }
  } else {
    if (!opts.allowPrograms) {
      error = invalidField("nns.program",
                           "this server runs registered bundles only (started with --no-programs, "
                           "or built without the compiler); name one with 'nns.bundle'");
      error.code = "programs_disabled";
      return false;
    }
    if (spec.program->size() > opts.maxProgramBytes) {
      error = invalidField("nns.program", "the program is " + std::to_string(spec.program->size()) +
                                              " bytes, more than the limit of " +
                                              std::to_string(opts.maxProgramBytes) +
                                              " (--max-program-bytes)");
      error.code = "program_too_large";
      return false;
    }
    p.bound.program = server.programs().compile(*spec.program, message);
    if (!p.bound.program) {
      error = invalidField("nns.program", "the program does not compile:\n" + message);
      error.code = "compile_error";
      return false;
    }
  }
  p.bound.trace = p.bound.program->findTrace(spec.trace, "choose one with 'nns.trace'", message);
  if (!p.bound.trace) {
    error = invalidField("nns.trace", message);
    return false;
  }
  return true;
}

bool bindParams(const OpenAIServer &server, const InterventionSpec &spec, PreparedRequest &p,
                ApiError &error) {
  std::vector<NamedParam> given;
  size_t budget = server.options().maxParamsBytes;
  std::string message;
  for (const auto &[name, value] : spec.params) {
    std::optional<torch::Tensor> t = tensorFromJson(value, budget, message);
    if (!t) {
      error = invalidField("nns.params", "param '" + name + "': " + message);
      return false;
    }
    budget -= std::min(budget, size_t(t->numel()) * t->element_size());
    given.emplace_back(name, *t);
  }
  std::optional<std::vector<torch::Tensor>> bound = bindParamValues(
      *p.bound.trace, given,
      [](const std::string &name) { return "give it in 'nns.params' as \"" + name + "\""; },
      message);
  if (!bound) {
    error = invalidField("nns.params", message);
    return false;
  }
  p.bound.params = std::move(*bound);
  return true;
}

bool tokenize(OpenAIServer &server, PreparedRequest &p, ApiError &error) {
  const ServedModel &m = server.served();
  const GenerationRequest &r = p.request;
  if (r.chat) {
    if (!m.tokenizer || !m.chatTemplate) {
      error = invalidField("messages", "the served model has no chat template; use "
                                       "/v1/completions");
      return false;
    }
    std::string text = m.chatTemplate->render(r.messages, /*addGenerationPrompt=*/true);
    p.prompts.push_back(m.tokenizer->encode(text, /*addSpecial=*/false));
  } else if (!r.textPrompts.empty()) {
    if (!m.tokenizer) {
      error = invalidField("prompt", "the served model has no tokenizer; send token ids");
      return false;
    }
    for (const std::string &text : r.textPrompts)
      p.prompts.push_back(m.tokenizer->encode(text, /*addSpecial=*/true));
  } else {
    p.prompts = r.idPrompts;
  }
  const char *field = r.chat ? "messages" : "prompt";
  for (const std::vector<int32_t> &prompt : p.prompts) {
    if (prompt.empty()) {
      error = invalidField(field, "the prompt has no tokens");
      return false;
    }
    for (int32_t id : prompt)
      if (id >= m.vocab) {
        error = invalidField(field, "token id " + std::to_string(id) +
                                        " is outside the vocabulary [0, " +
                                        std::to_string(m.vocab) + ")");
        return false;
      }
    const int64_t length = int64_t(prompt.size());
    if (length >= m.maxModelLen) {
      error = invalidField(field, "the prompt has " + std::to_string(length) +
                                      " tokens; this model's context is " +
                                      std::to_string(m.maxModelLen) +
                                      " tokens, which must also hold at least one generated "
                                      "token");
      error.code = "context_length_exceeded";
      return false;
    }
    if (r.maxTokensGiven && length + r.sampling.maxTokens > m.maxModelLen) {
      error =
          invalidField("max_tokens", "this model's context is " + std::to_string(m.maxModelLen) +
                                         " tokens, but the prompt has " + std::to_string(length) +
                                         " and max_tokens asks for " +
                                         std::to_string(r.sampling.maxTokens) + " more");
      error.code = "context_length_exceeded";
      return false;
    }
  }
  return true;
}

} // namespace

std::optional<PreparedRequest> prepareRequest(OpenAIServer &server, const std::string &body,
                                              bool chat, ApiError &error) {
  json parsed;
  try {
    parsed = json::parse(body);
  } catch (const json::parse_error &e) {
    error = invalidField("", std::string("the request body is not valid JSON: ") + e.what());
    return std::nullopt;
  }
  PreparedRequest p;
  std::optional<GenerationRequest> request = parseGenerationRequest(parsed, chat, error);
  if (!request)
    return std::nullopt;
  p.request = std::move(*request);
  const GenerationRequest &r = p.request;
  if (r.model != server.options().servedModelName) {
    error = invalidField("model", "the model '" + r.model +
                                      "' does not exist; this server "
                                      "serves '" +
                                      server.options().servedModelName + "'");
    error.status = 404;
    error.type = "NotFoundError";
    error.code = "model_not_found";
    return std::nullopt;
  }
  if (r.nns) {
    if (!resolveProgram(server, *r.nns, p, error) || !bindParams(server, *r.nns, p, error))
      return std::nullopt;
  }
  if (!tokenize(server, p, error))
    return std::nullopt;
  if (p.hasProgram())
    if (std::string why = session::checkInvokes(*p.bound.trace, p.prompts.size()); !why.empty()) {
      error = invalidField(r.chat ? "messages" : "prompt", why);
      return std::nullopt;
    }
  p.sampling = r.sampling;
  p.sampling.batchInvariant = r.sampling.batchInvariant || server.options().batchInvariant;
  if (!r.maxTokensGiven) {
    // OpenAI's default for completions; for chat, vLLM's: what is left of the context.
    size_t longest = 0;
    for (const std::vector<int32_t> &prompt : p.prompts)
      longest = std::max(longest, prompt.size());
    p.sampling.maxTokens = r.chat ? server.served().maxModelLen - int64_t(longest) : 16;
  }
  try {
    p.sampling.validate();
  } catch (const InvalidInput &e) {
    error = invalidField("", e.what());
    return std::nullopt;
  }
  return p;
}

RequestStates newRequestStates(const ForwardedRequest &request,
                               const std::optional<session::BoundTrace> &edit,
                               size_t maxSaveBytes) {
  RequestStates states;
  if (request.bound.program) {
    states.bundle = request.bound.newState();
    states.bundle->setSaveLimit(maxSaveBytes);
  }
  if (edit)
    for (size_t k = 0; k < request.prompts.size(); ++k)
      states.edits.push_back(edit->newState());
  return states;
}

EngineLoop::Admit admitRequest(ForwardedRequest request,
                               const std::optional<session::BoundTrace> &edit,
                               const RequestStates &states) {
  session::Submission s;
  s.prompts = std::move(request.prompts);
  s.sampling = {request.sampling};
  if (request.bound.program)
    s.program = std::move(request.bound);
  s.state = states.bundle;
  s.edit = edit;
  s.edits = states.edits;
  return [s = std::move(s)](LLMEngine &engine) mutable { return session::submit(engine, s); };
}

} // namespace nnsc::server
