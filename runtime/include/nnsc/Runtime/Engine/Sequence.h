//===- Sequence.h - One request's tokens and KV bookkeeping -----*- C++ -*-===//
//
// A request as the scheduler sees it: its tokens (prompt then completion), its sampling
// parameters, and the state the Scheduler and BlockManager keep for it (status, block table,
// how many of its tokens already have K/V in the paged cache). No tensors.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_SEQUENCE_H
#define NNSC_RUNTIME_ENGINE_SEQUENCE_H

#include "nnsc/Runtime/Engine/SamplingParams.h"

#include <cstdint>
#include <span>
#include <vector>

namespace nnsc {

/// Where a sequence is in its life: queued, admitted (has KV blocks), parked, or done. A
/// member of a gang is parked when its own part ended (its hooks cut it: `stop()` in its
/// invoke; or it reached its max_tokens) while others of its gang run on: it holds no blocks,
/// is in no batch, keeps its finish reason, and finishes with the last of its gang (or, if it
/// restarts on preemption, restarts with the gang).
enum class SequenceStatus { Waiting, Running, Parked, Finished };

/// Why a finished sequence stopped.
enum class FinishReason {
  /// Not finished.
  None,
  /// It produced the end-of-sequence token or one of its stop tokens.
  Stop,
  /// It reached max_tokens or the model's context length.
  Length,
  /// Its intervention cut it short during a step (`stop()`, or a failed kernel); the token
  /// of that step is not kept.
  Cut,
  /// Its caller gave up on it (LLMEngine::abortRequest: a client that went away, a stop
  /// string matched); it ended between steps and its blocks were freed at once.
  Abort,
};

/// The OpenAI API's name of `reason`: "stop" (Stop, and Cut: the intervention ended it as a
/// stop token would), "length", "abort"; "none" while the sequence runs.
const char *finishReasonName(FinishReason reason);

/// One request. Token positions are 0-based over prompt and completion together; the K/V of
/// positions [0, numCachedTokens) are in the paged cache, in the blocks of `blockTable` (logical
/// block i holds positions [i * blockSize, (i + 1) * blockSize)).
class Sequence {
public:
  /// Throws InvalidInput for an empty prompt or a negative token id. Sequences with
  /// different `cacheSalt` never share prefix-cache blocks.
  Sequence(int64_t id, std::vector<int32_t> promptTokenIds, SamplingParams sampling = {},
           uint64_t cacheSalt = 0);

  int64_t id() const { return seqId; }
  int64_t numTokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t numPromptTokens() const { return numPrompt; }
  int64_t numCompletionTokens() const { return numTokens() - numPrompt; }
  /// Prompt then completion.
  std::span<const int32_t> tokenIds() const { return tokens; }
  std::span<const int32_t> promptTokenIds() const {
    return std::span<const int32_t>(tokens).first(numPrompt);
  }
  std::span<const int32_t> completionTokenIds() const {
    return std::span<const int32_t>(tokens).subspan(numPrompt);
  }
  int32_t lastToken() const { return tokens.back(); }
  const SamplingParams &samplingParams() const { return params; }
  uint64_t cacheSalt() const { return salt; }
  bool isFinished() const { return status == SequenceStatus::Finished; }

  /// Number of logical blocks needed to hold every current token.
  int64_t numBlocks(int64_t blockSize) const { return (numTokens() + blockSize - 1) / blockSize; }
  /// Tokens of logical block `index` (the last one may be partial).
  std::span<const int32_t> blockTokens(int64_t index, int64_t blockSize) const;
  /// Tokens whose K/V is not in the cache yet.
  int64_t numUncomputedTokens() const { return numTokens() - numCachedTokens; }
  /// True when the chunk scheduled for this step ends at the last token, so the step's
  /// forward pass must produce logits (and a sampled token) for this sequence.
  bool samplesThisStep() const {
    return numScheduledTokens > 0 && numCachedTokens + numScheduledTokens == numTokens();
  }

  /// Appends a generated token (called by Scheduler::postprocess).
  void appendToken(int32_t token) { tokens.push_back(token); }
  /// Drops every generated token, so the sequence starts again from its prompt (a preempted
  /// sequence with `restartOnPreemption`; its K/V must already be freed).
  void restartFromPrompt();

  // State owned by the Scheduler and the BlockManager; read by the model runner.

  SequenceStatus status = SequenceStatus::Waiting;
  FinishReason finishReason = FinishReason::None;
  /// Set by the engine before postprocess when a hook ends the request with this step: Stop
  /// keeps the step's sampled token (`finish()`, like a stop token), Cut drops it.
  FinishReason endAfterStep = FinishReason::None;
  /// Physical KV block ids, one per logical block.
  std::vector<int32_t> blockTable;
  /// Positions [0, numCachedTokens) have K/V in the cache (prefix hits and earlier steps).
  int64_t numCachedTokens = 0;
  /// Positions [numCachedTokens, numCachedTokens + numScheduledTokens) are computed this step.
  int64_t numScheduledTokens = 0;
  /// False makes the block manager ignore prefix-cache hits for this sequence, so its whole
  /// prompt is computed (a request whose intervention reads prompt positions needs that).
  bool allowPrefixHits = true;
  /// True computes the prompt in one step, never in chunks: the request's hooks read or write
  /// prompt positions, and a chunk holds only some of them (its `[-1]` is not the prompt's last
  /// token, its mean not the prompt's). Such a prompt waits for a step with room for all of it,
  /// or goes alone past the step's token budget.
  bool prefillWhole = false;
  /// False keeps blocks holding generated tokens out of the prefix cache: the request shares
  /// the plain cache for its prompt, but an intervention may change its later K/V.
  bool cacheCompletion = true;
  /// The sequences of a multi-invoke request, this one included, in invoke order; empty for
  /// a sequence of its own. The scheduler admits and preempts them together, so they are in
  /// the same forward passes; a member whose own part ends early is parked (SequenceStatus),
  /// and the others finish together.
  std::vector<Sequence *> gang;
  /// True makes preemption restart the sequence from its prompt (restartFromPrompt) instead
  /// of resuming it by recomputing its generated tokens: its hooks keep per-request state
  /// that recomputed positions would corrupt.
  bool restartOnPreemption = false;
  /// How many times preemption restarted the sequence.
  int64_t numRestarts = 0;
  /// Chained hashes of the full blocks, filled lazily by the BlockManager; they depend only on
  /// the tokens and the salt, so they stay valid across preemption.
  std::vector<uint64_t> blockHashes;

private:
  int64_t seqId;
  std::vector<int32_t> tokens;
  int64_t numPrompt;
  SamplingParams params;
  uint64_t salt;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_SEQUENCE_H
