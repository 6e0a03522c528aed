//===- RequestStream.cpp - one request between engine and HTTP ------------===//

#include "nnsc/Server/RequestStream.h"

#include <algorithm>

namespace nnsc::server {

namespace {

/// Whether `name` is "<base>.<digits>" with `base` in `bases`.
bool isPerStepName(const std::string &name, const std::set<std::string> &bases) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size())
    return false;
  if (!std::all_of(name.begin() + long(dot) + 1, name.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return bases.count(name.substr(0, dot)) != 0;
}

} // namespace

RequestStream::RequestStream(Config config) : cfg(std::move(config)), choices(cfg.numChoices) {
  for (const std::string &stop : cfg.stopStrings)
    longestStop = std::max(longestStop, stop.size());
  if (cfg.bundle)
    for (const BundleSave &save : cfg.bundle->trace().saves)
      if (save.perStep)
        perStepNames.insert(save.name);
  if (cfg.tokenizer)
    for (Choice &c : choices)
      c.decoder.emplace(*cfg.tokenizer, /*skipSpecial=*/true);
}

void RequestStream::start(std::vector<int64_t> ids) {
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t i = 0; i < ids.size() && i < choices.size(); ++i)
    choices[i].id = ids[i];
  started = true;
  changed.notify_all();
}

void RequestStream::reject(const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex);
  error = message;
  started = done = hasNews = true;
  changed.notify_all();
}

void RequestStream::failEngine(const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!error)
    error = message;
  started = done = hasNews = true;
  changed.notify_all();
}

RequestStream::Choice *RequestStream::choiceOf(int64_t id) {
  for (Choice &c : choices)
    if (c.id == id)
      return &c;
  return nullptr;
}

bool RequestStream::token(int64_t id, int32_t token, const std::optional<TokenLogprobs> &logprobs) {
  std::lock_guard<std::mutex> lock(mutex);
  Choice *c = choiceOf(id);
  if (!c || c->finishReason)
    return false;
  c->tokens.push_back(token);
  if (logprobs)
    c->logprobs.push_back(*logprobs);
  hasNews = true;
  changed.notify_all();
  if (!c->decoder)
    return false;
  const size_t before = c->text.size();
  c->text += c->decoder->step(token);
  if (cfg.stopStrings.empty())
    return false;
  // A stop string ending in the new text starts at most longestStop - 1 bytes before it.
  const size_t from = before >= longestStop ? before - longestStop + 1 : 0;
  size_t cut = std::string::npos;
  for (const std::string &stop : cfg.stopStrings)
    if (!stop.empty())
      cut = std::min(cut, c->text.find(stop, from));
  if (cut == std::string::npos)
    return false;
  c->text.resize(cut);
  c->stoppedByString = true;
  c->finishReason = "stop";
  return true;
}

void RequestStream::finished(const RequestResult &result) {
  std::lock_guard<std::mutex> lock(mutex);
  Choice *c = choiceOf(result.request);
  if (!c)
    return;
  c->promptTokens = int64_t(result.promptTokens.size());
  // The engine's tokens are authoritative: a pass cut short drops its step's token, and a
  // restarted request generated its tokens again.
  if (c->tokens != result.completionTokens) {
    c->tokens = result.completionTokens;
    c->sentTokens = std::min(c->sentTokens, c->tokens.size());
    if (c->logprobs.size() > c->tokens.size())
      c->logprobs.resize(c->tokens.size());
    if (cfg.tokenizer && !c->stoppedByString) {
      c->text = cfg.tokenizer->decode(c->tokens, /*skipSpecial=*/true);
      c->sentText = std::min(c->sentText, c->text.size());
    }
  } else if (c->decoder && !c->stoppedByString) {
    c->text += c->decoder->flush();
  }
  if (!c->finishReason)
    c->finishReason = finishReasonName(result.finishReason);
  if (cfg.bundle && cfg.bundle->error())
    error = *cfg.bundle->error();
  for (const std::shared_ptr<BundleRequest> &edit : cfg.edits)
    if (edit->error() && !error)
      error = "the server's edit failed: " + *edit->error();
  if (allFinished()) {
    if (cfg.bundle)
      collectSaves(/*all=*/true);
    done = true;
  }
  hasNews = true;
  changed.notify_all();
}

void RequestStream::stepDone() {
  if (!cfg.bundle || !cfg.streamStepSaves || perStepNames.empty())
    return;
  std::lock_guard<std::mutex> lock(mutex);
  if (done)
    return;
  size_t before = pendingSaves.size();
  collectSaves(/*all=*/false);
  if (pendingSaves.size() != before) {
    hasNews = true;
    changed.notify_all();
  }
}

void RequestStream::collectSaves(bool all) {
  for (auto &[name, value] : cfg.bundle->saves()) {
    if (sentSaves.count(name) || (!all && !isPerStepName(name, perStepNames)))
      continue;
    // A per-step save handed out early is copied: a restarted request may write it again.
    pendingSaves[name] = all ? value : value.clone();
    sentSaves.insert(name);
  }
}

bool RequestStream::allFinished() const {
  return std::all_of(choices.begin(), choices.end(), [](const Choice &c) {
    return c.finishReason.has_value() && c.promptTokens > 0;
  });
}

size_t RequestStream::sendable(const Choice &c) const {
  if (c.finishReason || longestStop <= 1)
    return c.text.size();
  size_t n = c.text.size() >= longestStop - 1 ? c.text.size() - (longestStop - 1) : 0;
  while (n > 0 && n < c.text.size() && (uint8_t(c.text[n]) & 0xC0) == 0x80)
    --n;
  return n;
}

bool RequestStream::waitStarted(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex);
  return changed.wait_for(lock, timeout, [this] { return started; });
}

std::optional<StreamUpdate> RequestStream::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex);
  if (!changed.wait_for(lock, timeout, [this] { return hasNews; }))
    return std::nullopt;
  hasNews = false;
  StreamUpdate update;
  for (size_t i = 0; i < choices.size(); ++i) {
    Choice &c = choices[i];
    ChoiceDelta delta;
    delta.index = i;
    size_t n = sendable(c);
    if (n > c.sentText) {
      delta.text = c.text.substr(c.sentText, n - c.sentText);
      c.sentText = n;
    }
    delta.tokens.assign(c.tokens.begin() + long(c.sentTokens), c.tokens.end());
    if (c.logprobs.size() > c.sentTokens)
      delta.logprobs.assign(c.logprobs.begin() + long(c.sentTokens), c.logprobs.end());
    c.sentTokens = c.tokens.size();
    // The finish reason goes out once the choice's engine sequence has ended.
    if (c.finishReason && c.promptTokens > 0 && !c.finishSent) {
      delta.finishReason = c.finishReason;
      c.finishSent = true;
    }
    if (!delta.text.empty() || !delta.tokens.empty() || delta.finishReason)
      update.choices.push_back(std::move(delta));
  }
  update.saves = std::move(pendingSaves);
  pendingSaves.clear();
  update.done = done;
  update.error = error;
  return update;
}

std::vector<int64_t> RequestStream::ids() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<int64_t> out;
  for (const Choice &c : choices)
    out.push_back(c.id);
  return out;
}

bool RequestStream::isDone() const {
  std::lock_guard<std::mutex> lock(mutex);
  return done;
}

std::pair<int64_t, int64_t> RequestStream::usage() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::pair<int64_t, int64_t> counts{0, 0};
  for (const Choice &c : choices) {
    counts.first += c.promptTokens;
    counts.second += int64_t(c.tokens.size());
  }
  return counts;
}

} // namespace nnsc::server
