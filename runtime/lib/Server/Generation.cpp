//===- Generation.cpp - the completions and chat handlers -----------------===//
//
// A request goes: prepare (PreparedRequest.cpp) -> submit to the engine loop -> wait until
// the engine admitted or refused it -> answer, either at once with the whole result, or as
// server-sent events while it runs (a chunk per update of its RequestStream, then
// `data: [DONE]`). A streaming client that goes away is noticed by the failed write (or the
// keep-alive comment sent while nothing else is) and its request aborted.
//
//===----------------------------------------------------------------------===//

#include "Handlers.h"
#include "PreparedRequest.h"

#include "nnsc/Runtime/Models/SafetensorsWriter.h"
#include "nnsc/Server/TensorJson.h"

#include <chrono>
#include <cstdio>
#include <sys/random.h>

namespace nnsc::server {

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string randomId(const char *prefix) {
  unsigned char bytes[12] = {};
  if (getrandom(bytes, sizeof(bytes), 0) != ssize_t(sizeof(bytes)))
    std::fill(std::begin(bytes), std::end(bytes), 0);
  std::string id = prefix;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", b);
    id += hex;
  }
  return id;
}

int64_t unixTime() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json finishJson(const std::optional<std::string> &reason) {
  return reason ? json(*reason) : json(nullptr);
}

/// The text of one token, as the logprobs entries show it.
std::string tokenText(const tokenizer::Tokenizer *tok, int32_t id) {
  return tok ? tok->decode({id}, /*skipSpecial=*/false) : std::to_string(id);
}

/// OpenAI's `logprobs` of a choice: completions' {tokens, token_logprobs, top_logprobs,
/// text_offset} (offsets from `offset`), or chat's {content: [{token, logprob, bytes,
/// top_logprobs}]}.
json logprobsJson(const tokenizer::Tokenizer *tok, bool chat, const std::vector<int32_t> &tokens,
                  const std::vector<TokenLogprobs> &logprobs, size_t offset = 0) {
  auto bytes = [](const std::string &s) {
    std::vector<int> values;
    for (char c : s)
      values.push_back(int(uint8_t(c)));
    return values;
  };
  if (chat) {
    json content = json::array();
    for (size_t i = 0; i < logprobs.size() && i < tokens.size(); ++i) {
      std::string text = tokenText(tok, tokens[i]);
      json top = json::array();
      for (const auto &[id, lp] : logprobs[i].top) {
        std::string alt = tokenText(tok, id);
        top.push_back({{"token", alt}, {"logprob", lp}, {"bytes", bytes(alt)}});
      }
      content.push_back({{"token", text},
                         {"logprob", logprobs[i].logprob},
                         {"bytes", bytes(text)},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
  }
  json texts = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
  for (size_t i = 0; i < logprobs.size() && i < tokens.size(); ++i) {
    std::string text = tokenText(tok, tokens[i]);
    texts.push_back(text);
    values.push_back(logprobs[i].logprob);
    json top = json::object();
    for (const auto &[id, lp] : logprobs[i].top)
      top[tokenText(tok, id)] = lp;
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += text.size();
  }
  return {{"tokens", std::move(texts)},
          {"token_logprobs", std::move(values)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

/// Names the invoke choice `i` ran as, when the prompts are the invokes of one request.
void addInvokeName(const PreparedRequest &p, size_t i, json &choice) {
  if (p.hasProgram() && p.bound.invokes() > 1 && i < p.bound.trace->invokeNames.size())
    choice["invoke"] = p.bound.trace->invokeNames[i];
}

/// Puts `saves` into `nns`: inline as tensors or as one base64 safetensors file, or behind a
/// handle when asked or (with `mayUseHandle`) when they are larger than the inline limit.
bool encodeSaves(OpenAIServer &server, const InterventionSpec &spec,
                 const std::map<std::string, torch::Tensor> &saves, bool mayUseHandle, json &nns,
                 ApiError &error) {
  size_t bytes = 0;
  for (const auto &[name, t] : saves)
    bytes += size_t(t.numel()) * t.element_size();
  using Transport = InterventionSpec::SavesTransport;
  const bool handle = spec.savesTransport == Transport::Handle ||
                      (mayUseHandle && spec.savesTransport == Transport::Auto &&
                       bytes > server.options().inlineSaveBytes);
  if (handle) {
    std::string message;
    std::optional<std::string> id = server.saveStore().put(serializeSafetensors(saves), message);
    if (!id) {
      error = invalidField("nns.saves_transport", message);
      error.status = 507;
      error.type = "server_error";
      error.code = "saves_store_full";
      return false;
    }
    nns["saves_handle"] = {{"id", *id},
                           {"url", "/v1/nns/saves/" + *id},
                           {"bytes", bytes},
                           {"expires_in", server.saveStore().timeToLive().count()}};
    return true;
  }
  if (spec.savesFormat == InterventionSpec::SavesFormat::Safetensors) {
    nns["saves_safetensors"] = base64Encode(serializeSafetensors(saves));
    return true;
  }
  json out = json::object();
  for (const auto &[name, t] : saves)
    out[name] = tensorToJson(t);
  nns["saves"] = std::move(out);
  return true;
}

/// What a request produced, gathered from its updates.
struct Collected {
  std::vector<std::string> text;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<TokenLogprobs>> logprobs;
  std::vector<std::optional<std::string>> finish;
  std::map<std::string, torch::Tensor> saves;
  std::optional<std::string> error;

  explicit Collected(size_t n) : text(n), tokens(n), logprobs(n), finish(n) {}
  void add(StreamUpdate &u) {
    for (ChoiceDelta &d : u.choices) {
      text[d.index] += d.text;
      tokens[d.index].insert(tokens[d.index].end(), d.tokens.begin(), d.tokens.end());
      logprobs[d.index].insert(logprobs[d.index].end(), d.logprobs.begin(), d.logprobs.end());
      if (d.finishReason)
        finish[d.index] = d.finishReason;
    }
    saves.merge(u.saves);
    if (u.error)
      error = u.error;
  }
};

json usageJson(const PreparedRequest &p, const std::vector<std::vector<int32_t>> &tokens) {
  int64_t prompt = 0, completion = 0;
  for (const std::vector<int32_t> &ids : p.prompts)
    prompt += int64_t(ids.size());
  for (const std::vector<int32_t> &ids : tokens)
    completion += int64_t(ids.size());
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

ApiError runtimeError(const std::string &message) {
  ApiError e =
      invalidField("nns.program", "the request's program failed while running: " + message);
  e.code = "program_failed";
  return e;
}

void respondWhole(OpenAIServer &server, const PreparedRequest &p,
                  const std::shared_ptr<RequestStream> &stream, httplib::Response &res) {
  Collected c(p.prompts.size());
  while (true) {
    std::optional<StreamUpdate> u = stream->take(200ms);
    if (!u)
      continue;
    c.add(*u);
    if (u->done)
      break;
  }
  const bool anyToken = std::any_of(c.tokens.begin(), c.tokens.end(),
                                    [](const std::vector<int32_t> &t) { return !t.empty(); });
  if (c.error) {
    sendError(server.metricsSink(), res,
              p.hasProgram() && (anyToken || stream->bundle()->error())
                  ? runtimeError(*c.error)
                  : invalidField("", *c.error));
    return;
  }
  const GenerationRequest &r = p.request;
  json choices = json::array();
  for (size_t i = 0; i < p.prompts.size(); ++i) {
    json choice = {{"index", i},
                   {"logprobs", r.sampling.logprobs < 0
                                    ? json(nullptr)
                                    : logprobsJson(server.served().tokenizer, r.chat, c.tokens[i],
                                                   c.logprobs[i])},
                   {"finish_reason", finishJson(c.finish[i])}};
    if (r.chat)
      choice["message"] = {{"role", "assistant"}, {"content", c.text[i]}};
    else
      choice["text"] = c.text[i];
    if (r.returnTokenIds) {
      choice["token_ids"] = c.tokens[i];
      choice["prompt_token_ids"] = p.prompts[i];
    }
    addInvokeName(p, i, choice);
    choices.push_back(std::move(choice));
  }
  json body = {{"id", randomId(r.chat ? "chatcmpl-" : "cmpl-")},
               {"object", r.chat ? "chat.completion" : "text_completion"},
               {"created", unixTime()},
               {"model", server.options().servedModelName},
               {"choices", std::move(choices)},
               {"usage", usageJson(p, c.tokens)}};
  if (r.nns) {
    json nns = json::object();
    ApiError error;
    if (!encodeSaves(server, *r.nns, c.saves, /*mayUseHandle=*/true, nns, error)) {
      sendError(server.metricsSink(), res, error);
      return;
    }
    body["nns"] = std::move(nns);
  }
  const json &usage = body["usage"];
  server.metricsSink().addTokens(usage["prompt_tokens"], usage["completion_tokens"]);
  server.metricsSink().countRequest("success");
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

/// The state of one server-sent-event response, shared by httplib's provider calls.
class EventStream {
public:
  EventStream(OpenAIServer &server, PreparedRequest prepared, std::shared_ptr<RequestStream> stream)
      : server(server), p(std::move(prepared)), stream(std::move(stream)),
        id(randomId(p.request.chat ? "chatcmpl-" : "cmpl-")), created(unixTime()),
        tokens(p.prompts.size()), lastWrite(std::chrono::steady_clock::now()) {}

  /// One provider call: sends what is new. False when the client is gone.
  bool pump(httplib::DataSink &sink) {
    if (ended) {
      sink.done();
      return true;
    }
    std::optional<StreamUpdate> u = stream->take(250ms);
    if (!u) {
      if (std::chrono::steady_clock::now() - lastWrite < 2s)
        return true;
      return write(sink, ": keep-alive\n\n");
    }
    for (ChoiceDelta &d : u->choices)
      tokens[d.index].insert(tokens[d.index].end(), d.tokens.begin(), d.tokens.end());
    if (u->error) {
      ApiError e = p.hasProgram() ? runtimeError(*u->error) : invalidField("", *u->error);
      if (!write(sink, "data: " + e.body().dump() + "\n\n"))
        return false;
    }
    if (!sendChunks(sink, *u))
      return false;
    if (!u->done)
      return true;
    if (p.request.includeUsage) {
      json chunk = base();
      chunk["choices"] = json::array();
      chunk["usage"] = usageJson(p, tokens);
      if (!write(sink, event(chunk)))
        return false;
    }
    if (!write(sink, "data: [DONE]\n\n"))
      return false;
    json usage = usageJson(p, tokens);
    server.metricsSink().addTokens(usage["prompt_tokens"], usage["completion_tokens"]);
    server.metricsSink().countRequest(u->error ? "error_4xx" : "success");
    ended = true;
    sink.done();
    return true;
  }

  /// httplib is done with the response; `success` false when the connection failed.
  void release(bool success) {
    if (ended || (success && stream->isDone()))
      return;
    server.engine().abort(stream);
    server.metricsSink().countRequest("aborted");
  }

private:
  json base() const {
    return {{"id", id},
            {"object", p.request.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created},
            {"model", server.options().servedModelName}};
  }
  static std::string event(const json &chunk) {
    return "data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  }
  bool write(httplib::DataSink &sink, const std::string &text) {
    lastWrite = std::chrono::steady_clock::now();
    return sink.write(text.data(), text.size());
  }

  json choiceJson(const ChoiceDelta &d) {
    json choice = {{"index", d.index},
                   {"logprobs", p.request.sampling.logprobs < 0
                                    ? json(nullptr)
                                    : logprobsJson(server.served().tokenizer, p.request.chat,
                                                   d.tokens, d.logprobs)},
                   {"finish_reason", finishJson(d.finishReason)}};
    if (p.request.chat) {
      json delta = json::object();
      if (!roleSent[d.index]) {
        delta["role"] = "assistant";
        roleSent[d.index] = true;
      }
      if (!d.text.empty() || !d.finishReason)
        delta["content"] = d.text;
      choice["delta"] = std::move(delta);
    } else {
      choice["text"] = d.text;
    }
    if (p.request.returnTokenIds)
      choice["token_ids"] = d.tokens;
    addInvokeName(p, d.index, choice);
    return choice;
  }

  bool sendChunks(httplib::DataSink &sink, StreamUpdate &u) {
    json nns;
    if (p.request.nns && (!u.saves.empty() || u.done)) {
      ApiError error;
      nns = json::object();
      if (!encodeSaves(server, *p.request.nns, u.saves, /*mayUseHandle=*/u.done, nns, error))
        return write(sink, "data: " + error.body().dump() + "\n\n");
    }
    if (u.choices.empty() && nns.is_null())
      return true;
    // One chunk per choice, as OpenAI sends them; saves ride on the first.
    std::vector<json> chunks;
    for (const ChoiceDelta &d : u.choices) {
      json chunk = base();
      chunk["choices"] = json::array({choiceJson(d)});
      chunks.push_back(std::move(chunk));
    }
    if (chunks.empty()) {
      chunks.push_back(base());
      chunks.back()["choices"] = json::array();
    }
    if (!nns.is_null())
      chunks.front()["nns"] = std::move(nns);
    for (const json &chunk : chunks)
      if (!write(sink, event(chunk)))
        return false;
    return true;
  }

  OpenAIServer &server;
  PreparedRequest p;
  std::shared_ptr<RequestStream> stream;
  std::string id;
  int64_t created;
  std::vector<std::vector<int32_t>> tokens;
  std::map<size_t, bool> roleSent;
  std::chrono::steady_clock::time_point lastWrite;
  bool ended = false;
};

} // namespace

void handleGeneration(OpenAIServer &server, const httplib::Request &req, httplib::Response &res,
                      bool chat) {
  ApiError error;
  std::optional<PreparedRequest> prepared = prepareRequest(server, req.body, chat, error);
  if (!prepared)
    return sendError(server.metricsSink(), res, error);
  if (std::string failure = server.engine().failure(); !failure.empty()) {
    ApiError down;
    down.status = 503;
    down.type = "server_error";
    down.code = "rank_failed";
    down.message = failure;
    return sendError(server.metricsSink(), res, down);
  }
  if (server.engine().numQueued() >= server.options().maxQueued) {
    ApiError busy;
    busy.status = 503;
    busy.type = "server_error";
    busy.code = "server_busy";
    busy.message = "the server has " + std::to_string(server.options().maxQueued) +
                   " requests waiting (--max-queued); retry later";
    res.set_header("Retry-After", "1");
    server.metricsSink().countRequest("rejected_busy");
    res.status = busy.status;
    res.set_content(busy.body().dump(), "application/json");
    return;
  }
  const PreparedRequest &p = *prepared;
  using Transport = InterventionSpec::SavesTransport;
  const RequestStates states =
      newRequestStates(p, server.served().edit, server.options().maxSaveBytes);
  RequestStream::Config config;
  config.tokenizer = server.served().tokenizer;
  config.numChoices = p.prompts.size();
  config.stopStrings = p.request.stop;
  config.bundle = states.bundle;
  config.streamStepSaves =
      p.request.stream && p.request.nns && p.request.nns->savesTransport != Transport::Handle;
  config.edits = states.edits;
  auto stream = std::make_shared<RequestStream>(std::move(config));
  const ForwardedRequest &request = p;
  server.engine().submit(stream, admitRequest(request, server.served().edit, states), request);
  while (!stream->waitStarted(1s)) {
  }
  if (!p.request.stream)
    return respondWhole(server, p, stream, res);

  // A refusal by the engine still gets a proper status before any event is sent.
  if (stream->isDone() && stream->ids().front() < 0) {
    std::optional<StreamUpdate> u = stream->take(0ms);
    return sendError(server.metricsSink(), res,
                     invalidField("", u && u->error ? *u->error : "the engine refused it"));
  }
  auto events = std::make_shared<EventStream>(server, std::move(*prepared), stream);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [events](size_t, httplib::DataSink &sink) { return events->pump(sink); },
      [events](bool success) { events->release(success); });
}

} // namespace nnsc::server
