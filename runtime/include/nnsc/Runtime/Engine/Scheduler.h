//===- Scheduler.h - Continuous batching with chunked prefill ---*- C++ -*-===//
//
// nano-vllm's scheduler: a step is either a prefill batch (new prompts, and chunks of prompts
// too long for one step's token budget) or a decode batch (one token for every running
// sequence). Prefill has priority. When a decode step runs out of KV blocks, the most
// recently admitted sequence is preempted by recompute: its blocks are freed and it goes back
// to the front of the waiting queue (its cached prefix usually survives in the prefix cache).
// A sequence whose hooks keep state (Sequence::restartOnPreemption) restarts from its prompt
// instead, its generated tokens dropped, so it ends as it would have without preemption.
// The prompts of a multi-invoke request form a gang (Sequence::gang): admitted together with
// their whole prompts in one step (never chunked) and preempted together, so every forward
// pass holds all of its running members or none. A member whose own part ends (its hooks cut
// it, `stop()` in its invoke, or its max_tokens) is parked while the others run on; any other
// end (a stop token, finish(), the context length) finishes the whole gang, parked members
// included, and so does the end of its last running member.
// Works on Sequence bookkeeping only; never touches tensors.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_ENGINE_SCHEDULER_H
#define NNSC_RUNTIME_ENGINE_SCHEDULER_H

#include "nnsc/Runtime/Engine/BlockManager.h"
#include "nnsc/Runtime/Engine/Sequence.h"

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_set>
#include <vector>

namespace nnsc {

/// Limits of the scheduler and the size of the KV cache it manages.
struct SchedulerConfig {
  /// Most sequences running (holding KV blocks) at once.
  int64_t maxNumSeqs = 256;
  /// Most tokens computed in one step (the sum of the chunks of a prefill batch).
  int64_t maxNumBatchedTokens = 8192;
  /// Context length: prompts longer than this are rejected, generation stops at it.
  int64_t maxModelLen = 2048;
  /// KV cache size in blocks and tokens per block.
  int64_t numBlocks = 1024;
  int64_t blockSize = 16;
  bool enablePrefixCaching = true;
  /// Tokens that end generation unless a request sets ignoreEos.
  std::vector<int32_t> eosTokenIds;
};

/// The sequences of one step. For each, the step computes positions
/// [numCachedTokens, numCachedTokens + numScheduledTokens).
struct ScheduledBatch {
  std::vector<Sequence *> seqs;
  /// Prefill batches have chunks of any length; decode batches one token per sequence.
  bool isPrefill = false;
  /// Sequences preempted while this batch was scheduled that restarted from their prompt
  /// (Sequence::restartOnPreemption); their hooks must forget them before the batch runs.
  std::vector<Sequence *> restarted;

  bool empty() const { return seqs.empty(); }
  /// Total tokens computed this step (rows of the flat [tokens, hidden] batch).
  int64_t numTokens() const;
  /// Sequences whose chunk ends at their last token and so need a sampled token, in batch
  /// order; the last chunk row of each is the one whose logits are sampled.
  std::vector<Sequence *> samplingSeqs() const;
};

/// Waiting and running queues over a BlockManager.
class Scheduler {
public:
  /// Throws InvalidInput for impossible limits, including a KV cache too small to
  /// hold a single sequence of maxModelLen tokens.
  explicit Scheduler(const SchedulerConfig &config);

  /// Queues `seq` (which must stay alive until it finishes). Throws InvalidInput if
  /// its sampling params are impossible, its prompt is longer than maxModelLen, or it
  /// was added before.
  void add(Sequence *seq);
  /// Queues the sequences of one multi-invoke request as a gang, in invoke order. Throws
  /// InvalidInput as add() does, and when the gang could never be scheduled whole
  /// (more sequences than maxNumSeqs, or more prompt tokens than maxNumBatchedTokens).
  void addGang(const std::vector<Sequence *> &seqs);
  /// Ends `seq` (waiting or running) and the rest of its gang now, between steps: their
  /// blocks are freed and their finish reason is FinishReason::Abort. Returns the sequences
  /// it ended; none when `seq` already finished.
  std::vector<Sequence *> abort(Sequence &seq);
  /// True when no sequence is waiting or running.
  bool isFinished() const { return waiting.empty() && running.empty(); }
  /// Picks the next step's batch; empty only when isFinished().
  ScheduledBatch schedule();
  /// Records a step's results: advances numCachedTokens, registers newly computed blocks in
  /// the prefix cache, appends `sampled` (one token per batch.samplingSeqs(), in order; none
  /// for max_tokens 0) and finishes sequences that hit a stop token, max_tokens or
  /// maxModelLen, or whose `endAfterStep` is set (their blocks are freed; gang members may be
  /// parked instead, see above). Returns the sequences that finished. Throws InvalidInput if
  /// `sampled` has the wrong length.
  std::vector<Sequence *> postprocess(const ScheduledBatch &batch,
                                      std::span<const int32_t> sampled);

  const SchedulerConfig &config() const { return cfg; }
  const BlockManager &blockManager() const { return blocks; }
  int64_t numWaiting() const { return static_cast<int64_t>(waiting.size()); }
  int64_t numRunning() const { return static_cast<int64_t>(running.size()); }
  /// How many preemptions happened so far (for statistics and tests).
  int64_t numPreemptions() const { return preemptions; }

private:
  ScheduledBatch schedulePrefill();
  ScheduledBatch scheduleDecode();
  /// Throws InvalidInput when `seq` cannot be added (see add()).
  void check(const Sequence *seq) const;
  void preempt(Sequence *seq, ScheduledBatch &batch);
  /// Admits the gang at the front of `waiting` whole into `batch`, or nothing (false).
  bool admitGang(const std::vector<Sequence *> &gang, int64_t &budget, ScheduledBatch &batch);
  /// `seq` alone, or the members of its gang that are neither parked nor finished.
  static std::vector<Sequence *> unitOf(Sequence &seq);
  /// A parked member of a preempted gang back to the front of `waiting`, from its prompt.
  void unpark(Sequence *seq, ScheduledBatch &batch);
  /// Finishes `seq` (its finishReason set): frees its blocks, appends it to `finished`.
  void end(Sequence *seq, std::vector<Sequence *> &finished);
  bool isStopToken(const Sequence &seq, int32_t token) const;

  SchedulerConfig cfg;
  BlockManager blocks;
  std::deque<Sequence *> waiting;
  std::deque<Sequence *> running;
  /// Every sequence added and not finished, to refuse adding one twice.
  std::unordered_set<const Sequence *> active;
  int64_t preemptions = 0;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_ENGINE_SCHEDULER_H
