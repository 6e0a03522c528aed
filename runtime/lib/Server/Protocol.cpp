//===- Protocol.cpp - OpenAI-compatible request bodies --------------------===//

#include "nnsc/Server/Protocol.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nnsc::server {

using json = nlohmann::json;

json ApiError::body() const {
  json error = {{"message", message},
                {"type", type},
                {"param", param.empty() ? json(nullptr) : json(param)},
                {"code", code.empty() ? json(nullptr) : json(code)}};
  return {{"error", error}};
}

ApiError invalidField(const std::string &param, const std::string &message) {
  ApiError e;
  e.param = param;
  e.message = message;
  return e;
}

namespace {

/// True for an object whose "type" is the string "text". (json::value("type", "") would throw
/// for a "type" of another JSON type, which the server answered with a 500; found by
/// fuzz-request.)
bool hasTextType(const json &v) {
  if (!v.is_object())
    return false;
  auto it = v.find("type");
  return it != v.end() && it->is_string() && it->get<std::string>() == "text";
}

/// Reads the optional fields of a body, remembering the first error.
class Fields {
public:
  Fields(const json &body, ApiError &error) : body(body), error(error) {}

  bool failed() const { return bad; }
  void fail(const std::string &param, const std::string &message) {
    if (!bad)
      error = invalidField(param, message);
    bad = true;
  }
  /// The field, or null when absent or JSON null.
  const json *get(const char *name) const {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<bool> boolean(const char *name) {
    const json *v = get(name);
    if (!v)
      return std::nullopt;
    if (!v->is_boolean()) {
      fail(name, std::string("'") + name + "' must be a boolean");
      return std::nullopt;
    }
    return v->get<bool>();
  }
  std::optional<double> number(const char *name, double lo, double hi, const char *range) {
    const json *v = get(name);
    if (!v)
      return std::nullopt;
    if (!v->is_number()) {
      fail(name, std::string("'") + name + "' must be a number");
      return std::nullopt;
    }
    double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) {
      fail(name, std::string("'") + name + "' must be " + range + ", got " + v->dump());
      return std::nullopt;
    }
    return x;
  }
  std::optional<int64_t> integer(const char *name, int64_t lo, int64_t hi, const char *range) {
    const json *v = get(name);
    if (!v)
      return std::nullopt;
    if (!v->is_number_integer()) {
      fail(name, std::string("'") + name + "' must be an integer");
      return std::nullopt;
    }
    int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)
                    ? INT64_MAX
                    : v->get<int64_t>();
    if (x < lo || x > hi) {
      fail(name, std::string("'") + name + "' must be " + range + ", got " + v->dump());
      return std::nullopt;
    }
    return x;
  }

private:
  const json &body;
  ApiError &error;
  bool bad = false;
};

/// A prompt of token ids: a non-empty list of non-negative integers.
std::optional<std::vector<int32_t>> tokenList(const json &v) {
  if (!v.is_array() || v.empty())
    return std::nullopt;
  std::vector<int32_t> ids;
  for (const json &t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return std::nullopt;
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  return ids;
}

void parsePrompt(const json &prompt, GenerationRequest &r, Fields &f) {
  const char *kShape =
      "'prompt' must be a string, a list of strings, a list of token ids or a list of such lists";
  if (prompt.is_string()) {
    r.textPrompts.push_back(prompt.get<std::string>());
    return;
  }
  if (!prompt.is_array() || prompt.empty())
    return f.fail("prompt", kShape);
  if (prompt[0].is_number_integer()) {
    std::optional<std::vector<int32_t>> ids = tokenList(prompt);
    if (!ids)
      return f.fail("prompt", "a token-id prompt must be a non-empty list of token ids");
    r.idPrompts.push_back(std::move(*ids));
    return;
  }
  for (const json &item : prompt) {
    if (item.is_string() && r.idPrompts.empty()) {
      r.textPrompts.push_back(item.get<std::string>());
    } else if (item.is_array() && r.textPrompts.empty()) {
      std::optional<std::vector<int32_t>> ids = tokenList(item);
      if (!ids)
        return f.fail("prompt", "a token-id prompt must be a non-empty list of token ids");
      r.idPrompts.push_back(std::move(*ids));
    } else {
      return f.fail("prompt", kShape);
    }
  }
}

void parseMessages(const json &messages, GenerationRequest &r, Fields &f) {
  if (!messages.is_array() || messages.empty())
    return f.fail("messages", "'messages' must be a non-empty list of messages");
  for (const json &m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return f.fail("messages", "each message needs a string 'role'");
    std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer")
      return f.fail("messages", "message role must be system, developer, user or assistant, got '" +
                                    role + "'");
    if (role == "developer")
      role = "system";
    std::string content;
    const json *c = m.contains("content") ? &m["content"] : nullptr;
    if (c && c->is_string()) {
      content = c->get<std::string>();
    } else if (c && c->is_array()) {
      // Content parts: only text parts can be given to a text model.
      for (const json &part : *c) {
        if (!hasTextType(part) || !part.contains("text") || !part["text"].is_string())
          return f.fail("messages", "only text content parts ({\"type\": \"text\", \"text\": "
                                    "...}) are supported");
        content += part["text"].get<std::string>();
      }
    } else if (!(c && c->is_null() && role == "assistant")) {
      return f.fail("messages", "each message needs 'content' as a string or a list of text parts");
    }
    r.messages.push_back({role, content});
  }
}

void parseIntervention(const json &nns, GenerationRequest &r, Fields &f) {
  if (!nns.is_object())
    return f.fail("nns", "'nns' must be an object");
  InterventionSpec spec;
  for (const auto &[key, value] : nns.items()) {
    if (key == "program" || key == "bundle" || key == "trace") {
      if (!value.is_string())
        return f.fail("nns." + key, "'nns." + key + "' must be a string");
      if (key == "program")
        spec.program = value.get<std::string>();
      else if (key == "bundle")
        spec.bundle = value.get<std::string>();
      else
        spec.trace = value.get<std::string>();
    } else if (key == "params") {
      if (!value.is_object())
        return f.fail("nns.params", "'nns.params' must be an object of name: value");
      for (const auto &[name, v] : value.items())
        spec.params.emplace_back(name, v);
    } else if (key == "saves_format") {
      if (value != "json" && value != "safetensors")
        return f.fail("nns.saves_format", "'nns.saves_format' must be \"json\" or \"safetensors\"");
      spec.savesFormat = value == "json" ? InterventionSpec::SavesFormat::Json
                                         : InterventionSpec::SavesFormat::Safetensors;
    } else if (key == "saves_transport") {
      if (value != "auto" && value != "inline" && value != "handle")
        return f.fail("nns.saves_transport",
                      "'nns.saves_transport' must be \"auto\", \"inline\" or \"handle\"");
      spec.savesTransport = value == "auto"     ? InterventionSpec::SavesTransport::Auto
                            : value == "inline" ? InterventionSpec::SavesTransport::Inline
                                                : InterventionSpec::SavesTransport::Handle;
    } else {
      return f.fail("nns." + key, "unknown field 'nns." + key +
                                      "' (known: program, bundle, trace, params, saves_format, "
                                      "saves_transport)");
    }
  }
  if (spec.program.has_value() == spec.bundle.has_value())
    return f.fail("nns", "'nns' needs exactly one of 'program' (.nns source) and 'bundle' (the "
                         "name of a registered bundle)");
  r.nns = std::move(spec);
}

/// Fields a client may send that this server cannot honour, refused rather than ignored.
void refuseUnsupported(const json &body, Fields &f) {
  if (auto n = f.integer("n", 1, 1, "1 (one choice per prompt)"))
    (void)n;
  if (auto b = f.integer("best_of", 1, 1, "1"))
    (void)b;
  if (f.boolean("echo").value_or(false))
    f.fail("echo", "'echo' is not supported");
  for (const char *penalty : {"presence_penalty", "frequency_penalty", "repetition_penalty"})
    if (const json *v = f.get(penalty)) {
      const double neutral = std::string(penalty) == "repetition_penalty" ? 1.0 : 0.0;
      if (!v->is_number() || v->get<double>() != neutral)
        f.fail(penalty, std::string("'") + penalty + "' is not supported (only its neutral value)");
    }
  if (const json *v = f.get("logit_bias"); v && !(v->is_object() && v->empty()))
    f.fail("logit_bias", "'logit_bias' is not supported; ban tokens with an nns program instead "
                         "(logits[t] = -1e9)");
  if (f.get("suffix"))
    f.fail("suffix", "'suffix' is not supported");
  if (const json *v = f.get("tools"); v && !(v->is_array() && v->empty()))
    f.fail("tools", "'tools' is not supported");
  if (const json *v = f.get("response_format"); v && !hasTextType(*v))
    f.fail("response_format", "only the \"text\" response format is supported");
  (void)body;
}

} // namespace

std::optional<GenerationRequest> parseGenerationRequest(const json &body, bool chat,
                                                        ApiError &error) {
  if (!body.is_object()) {
    error = invalidField("", "the request body must be a JSON object");
    return std::nullopt;
  }
  Fields f(body, error);
  GenerationRequest r;
  r.chat = chat;
  if (const json *model = f.get("model")) {
    if (!model->is_string())
      f.fail("model", "'model' must be a string");
    else
      r.model = model->get<std::string>();
  }
  if (chat) {
    if (const json *messages = f.get("messages"))
      parseMessages(*messages, r, f);
    else
      f.fail("messages", "'messages' is required");
  } else {
    if (const json *prompt = f.get("prompt"))
      parsePrompt(*prompt, r, f);
    else
      f.fail("prompt", "'prompt' is required");
  }
  refuseUnsupported(body, f);
  // OpenAI's newer name for chat; vLLM accepts both.
  const char *maxName =
      chat && f.get("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (auto v = f.integer(maxName, 1, 1 << 30, "a positive integer")) {
    r.sampling.maxTokens = *v;
    r.maxTokensGiven = true;
  }
  if (auto v = f.number("temperature", 0, 100, "in [0, 100]"))
    r.sampling.temperature = float(*v);
  if (auto v = f.number("top_p", 1e-9, 1, "in (0, 1]"))
    r.sampling.topP = float(*v);
  if (auto v = f.integer("top_k", -1, 1 << 30, "-1 (all) or a non-negative integer"))
    r.sampling.topK = *v < 0 ? 0 : *v;
  if (const json *seed = f.get("seed")) {
    if (!seed->is_number_integer())
      f.fail("seed", "'seed' must be an integer");
    else
      r.sampling.seed =
          seed->is_number_unsigned() ? seed->get<uint64_t>() : uint64_t(seed->get<int64_t>());
  }
  r.sampling.ignoreEos = f.boolean("ignore_eos").value_or(false);
  r.sampling.batchInvariant = f.boolean("batch_invariant").value_or(false);
  if (const json *stop = f.get("stop")) {
    if (stop->is_string()) {
      r.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= 16) {
      for (const json &s : *stop) {
        if (!s.is_string() || s.get<std::string>().empty()) {
          f.fail("stop", "'stop' must be a non-empty string or a list of up to 16 of them");
          break;
        }
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      f.fail("stop", "'stop' must be a non-empty string or a list of up to 16 of them");
    }
  }
  if (const json *ids = f.get("stop_token_ids")) {
    std::optional<std::vector<int32_t>> list = tokenList(*ids);
    if (!list)
      f.fail("stop_token_ids", "'stop_token_ids' must be a list of token ids");
    else
      r.sampling.stopTokenIds = std::move(*list);
  }
  r.stream = f.boolean("stream").value_or(false);
  if (const json *options = f.get("stream_options")) {
    if (!options->is_object())
      f.fail("stream_options", "'stream_options' must be an object");
    else if (options->contains("include_usage") && !(*options)["include_usage"].is_boolean())
      f.fail("stream_options", "'stream_options.include_usage' must be a boolean");
    else
      r.includeUsage = options->value("include_usage", false);
  }
  r.returnTokenIds = f.boolean("return_token_ids").value_or(false);
  // Completions: logprobs = how many alternatives (OpenAI allows 5; vLLM and we, 20). Chat:
  // logprobs = true, top_logprobs = how many alternatives.
  if (chat) {
    if (f.boolean("logprobs").value_or(false))
      r.sampling.logprobs = int32_t(f.integer("top_logprobs", 0, 20, "in [0, 20]").value_or(0));
    else if (f.get("top_logprobs"))
      f.fail("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  } else if (auto k = f.integer("logprobs", 0, 20, "in [0, 20]")) {
    r.sampling.logprobs = int32_t(*k);
  }
  if (const json *nns = f.get("nns"))
    parseIntervention(*nns, r, f);
  if (f.failed())
    return std::nullopt;
  return r;
}

std::optional<TokenizeRequest> parseTokenizeRequest(const json &body, bool detokenize,
                                                    int64_t vocab, ApiError &error) {
  if (!body.is_object()) {
    error = invalidField("", "the request body must be a JSON object");
    return std::nullopt;
  }
  const char *input = detokenize ? "ids" : "text";
  const char *flag = detokenize ? "skip_special_tokens" : "add_special_tokens";
  for (const auto &[key, value] : body.items())
    if (key != input && key != flag && key != "return_tokens") {
      error = invalidField(key, "unknown field '" + key + "' (known: " + input + ", " + flag +
                                    ", return_tokens)");
      return std::nullopt;
    }
  Fields f(body, error);
  TokenizeRequest r;
  r.special = f.boolean(flag).value_or(true);
  r.returnTokens = f.boolean("return_tokens").value_or(false);
  const json *v = f.get(input);
  if (!v) {
    f.fail(input, std::string("'") + input + "' is required");
  } else if (!detokenize) {
    if (!v->is_string())
      f.fail(input, "'text' must be a string");
    else
      r.text = v->get<std::string>();
  } else {
    std::optional<std::vector<int32_t>> ids =
        v->is_array() && v->empty() ? std::optional(std::vector<int32_t>()) : tokenList(*v);
    if (!ids)
      f.fail(input, "'ids' must be a list of token ids (non-negative integers)");
    else if (auto out =
                 std::find_if(ids->begin(), ids->end(), [&](int32_t id) { return id >= vocab; });
             out != ids->end())
      f.fail(input, "token id " + std::to_string(*out) + " is outside the vocabulary [0, " +
                        std::to_string(vocab) + ")");
    else
      r.ids = std::move(*ids);
  }
  if (f.failed())
    return std::nullopt;
  return r;
}

} // namespace nnsc::server
