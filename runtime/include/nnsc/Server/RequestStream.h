//===- RequestStream.h - one request between engine and HTTP ----*- C++ -*-===//
//
// The channel between the engine loop thread, which feeds a request's tokens, saves and end
// into it, and the HTTP thread that answers the request, which takes what is new. A request
// has one or more choices, each one engine sequence: the prompts of an OpenAI batch, or the
// invokes of a multi-invoke trace. Text is decoded here as tokens arrive, and stop strings
// are matched here (vLLM's detokenizer does the same); text that may still become a stop
// string is held back from streaming until it cannot.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_REQUESTSTREAM_H
#define NNSC_SERVER_REQUESTSTREAM_H

#include "nnsc/Runtime/Bundle/BundleRequest.h"
#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nnsc::server {

/// What changed for one choice since the last take().
struct ChoiceDelta {
  size_t index = 0;
  std::string text;
  std::vector<int32_t> tokens;
  /// One per token of `tokens` when the request asked for log-probabilities.
  std::vector<TokenLogprobs> logprobs;
  /// "stop", "length" or "abort" once the choice has ended.
  std::optional<std::string> finishReason;
};

/// What take() hands the HTTP thread.
struct StreamUpdate {
  std::vector<ChoiceDelta> choices;
  /// Saves that became complete since the last take(): per-step saves after their step
  /// (only for requests that stream them), every other save when the request ends.
  std::map<std::string, torch::Tensor> saves;
  bool done = false;
  /// Set when the request failed: rejected by the engine, or its program failed at run time.
  std::optional<std::string> error;
};

class RequestStream {
public:
  struct Config {
    /// Null for a model without a tokenizer (text stays empty).
    const tokenizer::Tokenizer *tokenizer = nullptr;
    size_t numChoices = 1;
    std::vector<std::string> stopStrings;
    /// The request's program state; null for a plain request.
    std::shared_ptr<BundleRequest> bundle;
    /// Hand per-step saves out after their step instead of at the end.
    bool streamStepSaves = false;
    /// The state of the server's persistent edit, one per choice (none without an edit); its
    /// saves are not returned, its failure is the request's.
    std::vector<std::shared_ptr<BundleRequest>> edits;
  };
  explicit RequestStream(Config config);

  // The engine thread.

  /// The engine admitted the request under these sequence ids, one per choice.
  void start(std::vector<int64_t> ids);
  /// The engine refused the request (`message` says why); it ends here.
  void reject(const std::string &message);
  /// A token for sequence `id`, with its log-probabilities when asked for. True when it
  /// completed a stop string: the caller aborts the request (its later tokens are not wanted).
  bool token(int64_t id, int32_t token, const std::optional<TokenLogprobs> &logprobs = {});
  /// Sequence `id` has ended.
  void finished(const RequestResult &result);
  /// A step that ran the request is done: publishes its per-step saves.
  void stepDone();
  /// The engine failed as a whole; the request ends with `message`.
  void failEngine(const std::string &message);

  // The HTTP thread.

  /// Waits at most `timeout` for the request to be admitted or refused; true once it is.
  bool waitStarted(std::chrono::milliseconds timeout);
  /// Everything new since the last take(), waiting at most `timeout` for something; nullopt
  /// when nothing came.
  std::optional<StreamUpdate> take(std::chrono::milliseconds timeout);

  std::vector<int64_t> ids() const;
  bool isDone() const;
  /// Prompt and completion token counts so far (the usage block).
  std::pair<int64_t, int64_t> usage() const;
  const std::shared_ptr<BundleRequest> &bundle() const { return cfg.bundle; }

private:
  struct Choice {
    int64_t id = -1;
    std::optional<tokenizer::StreamingDecoder> decoder;
    std::string text;
    size_t sentText = 0;
    std::vector<int32_t> tokens;
    std::vector<TokenLogprobs> logprobs;
    size_t sentTokens = 0;
    int64_t promptTokens = 0;
    bool stoppedByString = false;
    std::optional<std::string> finishReason;
    bool finishSent = false;
  };
  Choice *choiceOf(int64_t id);
  /// Bytes of `c.text` that can be sent: all once it ended, else all but what could still
  /// grow into a stop string (cut back to a UTF-8 boundary).
  size_t sendable(const Choice &c) const;
  bool allFinished() const;
  /// Moves the request's saves not handed out yet into `pending` (`all`: every save, else only
  /// per-step saves).
  void collectSaves(bool all);

  Config cfg;
  size_t longestStop = 0;
  /// Names of the trace's per-step saves.
  std::set<std::string> perStepNames;
  mutable std::mutex mutex;
  std::condition_variable changed;
  bool started = false;
  bool done = false;
  bool hasNews = false;
  std::optional<std::string> error;
  std::vector<Choice> choices;
  std::set<std::string> sentSaves;
  std::map<std::string, torch::Tensor> pendingSaves;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_REQUESTSTREAM_H
